"""What a missing cell's fill costs a row's density when the row's other cells fix its value.

A row's missing numeric cells are filled at their conditional mean given the row's present
numbers under the robust Gaussian (``TableModel.fill``) before the flows score it.  Where a
near-exact relation fixes the missing value (a weight given the height and the BMI), a fill off
that relation is charged by the flows as if the row broke it.  On a clean patients table (as
``benchmarks/fdr.py`` builds it, fitted on itself) this prints, for the rows given, the density
score in nats as scored, and with the missing weight written in as ``bmi * height^2``; the fill's
z beside that value's; and the table's median and 99.99% quantile of the density score.

Usage::

    python research/probe_missing_fill.py --rows 30000 --seed 2 --ids 27393,2623,5827
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from nrad.table import fit_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import fdr  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=30000)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--ids", default="27393,2623,5827", help="row positions with a missing weight")
    args = parser.parse_args()
    torch.set_num_threads(1)
    df = fdr.NULLS["patients"](args.rows, 10_000 + args.seed)
    rows = [int(r) for r in args.ids.split(",")]
    model = fit_table(df, random_state=args.seed)
    folds = model.training_folds(len(df))
    prep = model.prepare(df, "data")
    as_scored = model.density_prepared(prep, folds)[0]
    written = df.copy()
    for r in rows:
        written.loc[r, "weight_kg"] = round(df.loc[r, "bmi"] * (df.loc[r, "height_cm"] / 100) ** 2, 1)
    prep_written = model.prepare(written, "data")
    with_weight = model.density_prepared(prep_written, folds)[0]
    j = model.schema.numeric_names.index("weight_kg")
    filled = model.fill(model.numeric_z(prep.y, prep.codes)[0], folds)[rows, j]
    relation = model.numeric_z(prep_written.y, prep_written.codes)[0][rows, j]
    print(f"density score, median {np.median(as_scored):.2f}, 99.99% {np.quantile(as_scored, 0.9999):.2f}")
    for k, r in enumerate(rows):
        print(
            f"row {r}: height {df.loc[r, 'height_cm']}, bmi {df.loc[r, 'bmi']}, weight missing; "
            f"density {as_scored[r]:.2f} as scored, {with_weight[r]:.2f} with weight "
            f"{written.loc[r, 'weight_kg']}; weight z filled {filled[k]:.2f}, "
            f"by the relation {relation[k]:.2f}"
        )


if __name__ == "__main__":
    main()
