"""Do two versions of the code give the same p-values and flags?  For changes meant to be exact.

``--dump F`` fits the table model on planted tables of every family
(``nrad.synthetic.FAMILIES``, 3,000 rows, seed 7; in sample, and fitted on
a clean twin, seed 8), four clean generators of ``benchmarks/fdr.py`` and a
300-row table, and saves each table's p-values.  Run it once per version
(``PYTHONPATH`` naming that version's ``src``), then ``--compare OLD NEW``
prints per table the largest difference of log p-values and whether
Benjamini-Hochberg at q = 0.1 flags the same rows.

Usage::

    PYTHONPATH=OLD/src python research/probe_same_flags.py --dump old.npz --benchmarks OLD/benchmarks
    PYTHONPATH=src python research/probe_same_flags.py --dump new.npz --benchmarks benchmarks
    python research/probe_same_flags.py --compare old.npz new.npz
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def dump(path: str, benchmarks: str) -> None:
    sys.path.insert(0, benchmarks)
    import fdr  # benchmarks/fdr.py: its clean generators

    from nrad.synthetic import FAMILIES
    from nrad.table import fit_table

    tables = [(f, lambda f=f: FAMILIES[f](3000, 20, random_state=7).frame,
               lambda f=f: FAMILIES[f](3000, 0, random_state=8).frame) for f in FAMILIES]  # fmt: skip
    nulls = ("heavy", "discrete", "wide", "gaussian")
    tables += [(g, lambda g=g: fdr.NULLS[g](3000, 3), None) for g in nulls]
    tables += [("transactions300", lambda: FAMILIES["transactions"](300, 10, random_state=5).frame, None)]
    out = {}
    for name, make, clean in tables:
        df = make()
        id_column = df.columns[0] if "id" in df.columns[0].lower() else None
        start = time.time()
        model = fit_table(df, id_column=id_column, random_state=0)
        out[f"{name}/detect"] = model.score(df, in_sample=True, explain="none")[0]["p_value"].to_numpy()
        if clean is not None:
            model = fit_table(clean(), id_column=id_column, random_state=0)
            out[f"{name}/fit"] = model.score(df, explain="none")[0]["p_value"].to_numpy()
        print(f"{name}: {time.time() - start:.1f} s", flush=True)
    np.savez(path, **out)


def bh(p: np.ndarray, q: float = 0.1) -> np.ndarray:
    order = np.sort(p)
    passed = np.flatnonzero(order <= q * np.arange(1, len(p) + 1) / len(p))
    return p <= order[passed[-1]] if len(passed) else np.zeros(len(p), dtype=bool)


def compare(old_path: str, new_path: str) -> None:
    old, new = np.load(old_path), np.load(new_path)
    for key in old.files:
        a, b = old[key], new[key]
        diff = np.max(np.abs(np.log(np.maximum(a, 1e-300)) - np.log(np.maximum(b, 1e-300))))
        fa, fb = bh(a), bh(b)
        print(f"{key:24s} largest |log p difference| {diff:.1e}; flags {fa.sum()} and {fb.sum()}, "
              f"{'the same rows' if np.array_equal(fa, fb) else 'DIFFERENT rows'}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump", help="save this version's p-values here")
    parser.add_argument("--benchmarks", default="benchmarks", help="this version's benchmarks folder")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.dump:
        dump(args.dump, args.benchmarks)
    if args.compare:
        compare(*args.compare)


if __name__ == "__main__":
    main()
