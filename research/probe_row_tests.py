"""Which of a row's tests decides its p-value, for the planted rows of one main-job table.

A flagged or missed planted row's p-value is the weighted Bonferroni
combination of its row-level tests (the anomaly score, the density, the
robust distance) and its cells' tests (docs/method.md, section 13).  For
each planted row (and any ``--rows`` given) this prints whether it was
flagged at q = 0.1, its p-value and rank, and its three strongest tests:
name, raw p-value and p-value over its weight; then every false flag the same way.  With ``--cells ROWS`` it
also prints those rows' numeric cells' three tests (residual given the
row, value in context, value in its column).

    python research/probe_row_tests.py --family transactions --seed 0 --way fit
    python research/probe_row_tests.py --family sensors --seed 0 --way detect --cells 279,2340

Tables as ``benchmarks/main_job.py`` makes them (seed s: the scored table
from 1000 + s, the clean one from 2000 + s).  The tests' matrix is read by
wrapping ``nrad.evidence.combine`` for the run (the product has no hook).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import nrad.evidence as evidence
from nrad.table import fit_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import main_job  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="transactions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--way", choices=("fit", "detect"), default="fit")
    parser.add_argument("--rows", default="", help="more rows to show (0-based), comma-separated")
    parser.add_argument("--cells", default="", help="rows whose numeric cells' tests to show")
    args = parser.parse_args()
    captured: dict[str, np.ndarray] = {}
    combine = evidence.combine

    def spy(log_p: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        captured["log_p"], captured["weights"] = log_p.copy(), weights.copy()
        return combine(log_p, weights)

    evidence.combine = spy
    table = main_job.make(args.family, 3000, 20, 1000 + args.seed)
    ident = main_job.IDS[args.family]
    if args.way == "fit":
        model = fit_table(main_job.make(args.family, 3000, 0, 2000 + args.seed).frame, id_column=ident)
        scored = model.score(table.frame, fdr=0.1, explain="none")[0]
    else:
        model = fit_table(table.frame, id_column=ident)
        scored = model.score(table.frame, fdr=0.1, explain="none", in_sample=True)[0]
    log_p, weights = captured["log_p"], captured["weights"]
    n_row = len(weights) - len(model.cell_columns())
    names = ["row score", "density", "robust distance"][:n_row] + [
        model.schema.columns[c].name for c in model.cell_columns()
    ]
    flagged = scored["flagged"].to_numpy()
    print(f"{int(flagged.sum())} flagged; BH's bar for the last: p <= {0.1 * flagged.sum() / len(scored):.2g}")
    print("weights:", ", ".join(f"{n} {w:.3g}" for n, w in zip(names, weights, strict=True)))
    extra = [int(r) for r in args.rows.split(",") if r]
    shown = [(r, "(asked)") for r in extra] + list(zip(table.truth["row"], table.truth["kind"], strict=True))
    planted = set(table.truth["row"].tolist())
    shown += [(int(r), "(false flag)") for r in np.flatnonzero(flagged) if int(r) not in planted]
    score = scored["anomaly_score"].to_numpy()
    for row, kind in shown:
        weighted = log_p[row] - np.log(weights)
        best = np.argsort(weighted)[:3]
        tests = "; ".join(f"{names[k]} {np.exp(log_p[row, k]):.1e} / {np.exp(weighted[k]):.1e}" for k in best)
        print(f"{kind:<24} row {row:>5} flagged {bool(flagged[row])!s:<5} p {scored['p_value'].iloc[row]:.2e} "
              f"rank {int((score > score[row]).sum()) + 1:>5}: {tests}")  # fmt: skip
    cells = [int(r) for r in args.cells.split(",") if r]
    if cells and model.tails is not None and model.tails.cells is not None:
        prep = model.prepare(table.frame.iloc[cells])
        parts = model.tails.cells.log_p_parts(model.cell_residuals(prep), model.cell_values(prep), prep.y)
        numeric = [model.schema.columns[c].name for c in model.schema.numeric_sources]
        for i, row in enumerate(cells):
            print(f"row {row}: residual / value in context / in its column, two-sided p")
            for j, name in enumerate(numeric):
                print(f"  {name:<20} " + " / ".join(f"{np.exp(part[i, j]):.1e}" for part in parts))


if __name__ == "__main__":
    main()
