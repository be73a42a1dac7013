"""How well each reading of the numbers holds a column's relations; a planted row's residual in each.

A cell's residual given the rest of its row is read three ways (``nrad.gaussian.READINGS``: in
context, shaped, in the table's units) and the smallest kept (``TableModel.cell_residuals``).  For
one main-job table fitted on itself (seed s: ``FAMILIES[family](3000, 20, random_state=1000 + s)``,
as ``benchmarks/main_job.py`` makes it) this prints, per numeric column and reading, the
conditional sd given the other columns as a share of the column's sd (the largest over the
cross-fitting folds) and whether the reading counts for the column; then, for the planted rows of
the ``--kinds`` asked, the residual of their first cause's cell in each reading; then the 0.1% and
99.9% quantiles of the training rows' residuals of those columns.

Usage::

    python research/probe_relation_readings.py --family cars --seed 0 \\
        --kinds price_missing_digit,mileage_extra_zero
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import torch

from nrad.synthetic import FAMILIES
from nrad.table import fit_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="cars")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default="price_missing_digit,mileage_extra_zero")
    args = parser.parse_args()
    torch.set_num_threads(1)
    table = FAMILIES[args.family](3000, 20, random_state=1000 + args.seed)
    model = fit_table(table.frame, random_state=args.seed)
    names = model.schema.numeric_names
    prep = model.prepare(table.frame, "data")
    folds = model.training_folds(len(table.frame))
    shares, residuals = {}, {}
    for relations in model.relations:
        shares[relations.reading] = relations.sd_shares.round(3)
        shares[f"{relations.reading} counts"] = relations.holds if relations.reading != "z" else True
        u = relations.standardize(model.reading(relations.reading, prep.y, prep.codes, False))
        residuals[relations.reading] = model.per_fold(relations.gaussians, relations.residuals, u, folds)
    print(pd.DataFrame(shares, index=names).to_string())
    kinds = set(args.kinds.split(","))
    columns = set()
    for row, kind, causes in table.truth[["row", "kind", "causes"]].itertuples(index=False):
        if kind in kinds and causes[0] in names:
            j = names.index(causes[0])
            columns.add(j)
            read = {reading: round(float(t[row, j]), 2) for reading, t in residuals.items()}
            print(f"{kind} row {row} {causes[0]}: {read}")
    for j in sorted(columns):
        quantiles = {
            r: np.nanquantile(t[:, j], [0.001, 0.999]).round(2).tolist() for r, t in residuals.items()
        }
        print(f"{names[j]} training residuals, 0.1% and 99.9%: {quantiles}")


if __name__ == "__main__":
    main()
