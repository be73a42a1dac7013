"""Which dependencies between categorical columns the table model states, and which rows break them.

For each generator of ``benchmarks/fdr.py`` (clean tables) and each planted-truth
family (``nrad.synthetic.FAMILIES``), fits the table model as ``nrad detect``
does (on the table itself) and as ``nrad fit`` does (on a clean twin), and
prints the dependencies found (:class:`nrad.categories.Dependency`: a key
column whose levels each give one level of a value column) and how many rows
of the scored table break one: on a clean table every break would be a false
flag (p = 0); on a planted one, per kind, how many planted rows break one.

Usage::

    python research/probe_dependencies.py --seeds 0-4 --rows 3000
    python research/probe_dependencies.py --seeds 0-4 --rows 150 --planted ""
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from fdr import NULLS  # noqa: E402

from nrad.bench.runner import parse_seeds  # noqa: E402
from nrad.synthetic import FAMILIES  # noqa: E402
from nrad.table import TableModel, fit_table  # noqa: E402


def breaks(model: TableModel, table) -> tuple[list[str], np.ndarray]:  # noqa: ANN001
    """The dependencies a model states (``key -> value``) and, per row of ``table``, whether it
    breaks one."""
    names = model.schema.categorical_names
    codes = model.prepare(table).codes
    found = model.dependencies()
    broken = np.zeros(len(table), dtype=bool)
    for dependency in found:
        broken |= dependency.broken(codes)
    # Features past the categorical columns are the numbers' indicators (whether each is at its spike).
    name = lambda f: names[f] if f < len(names) else f"indicator {f - len(names)}"  # noqa: E731
    return [f"{name(d.key)} -> {name(d.value)}" for d in found], broken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-1")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--nulls", default=",".join(NULLS))
    parser.add_argument("--planted", default=",".join(FAMILIES))
    args = parser.parse_args()
    for name in filter(None, args.nulls.split(",")):
        for seed in parse_seeds(args.seeds):
            data, clean = NULLS[name](args.rows, 10_000 + seed), NULLS[name](args.rows, 20_000 + seed)
            for way, train in (("detect", data), ("fit", clean)):
                found, broken = breaks(fit_table(train, random_state=seed, max_epochs=1), data)
                found_text = ", ".join(found) or "none"
                print(f"clean {name} seed {seed} {way}: {found_text}; rows breaking one: {int(broken.sum())}")
    for name in filter(None, args.planted.split(",")):
        for seed in parse_seeds(args.seeds):
            table = FAMILIES[name](args.rows, 20, random_state=30_000 + seed)
            found, broken = breaks(fit_table(table.frame, random_state=seed, max_epochs=1), table.frame)
            planted = table.labels.astype(bool)
            kinds = {kind: f"{int(broken[rows].sum())}/{len(rows)}"
                     for kind, rows in table.truth.groupby("kind")["row"]}  # fmt: skip
            counts = f"{int(broken[planted].sum())} planted, {int(broken[~planted].sum())} others"
            found_text = ", ".join(found) or "none"
            print(f"planted {name} seed {seed} detect: {found_text}; rows breaking one: {counts}; {kinds}")


if __name__ == "__main__":
    main()
