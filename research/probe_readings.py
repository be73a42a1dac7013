"""How far a planted kind's cells lie off their relations in each reading of the numbers.

For a planted-truth family (``nrad.synthetic.FAMILIES``), fitted on its own table as ``nrad
detect`` does, prints for one column and one planted kind: each reading's residual of the planted
cells given the rest of their rows (``nrad.gaussian.READINGS``: as the flows read the numbers, as
shaped, in the table's units), whether the column has a relation in that reading, the clean rows'
residuals at their median, 99th and 99.9th percentiles, and the residual the cell tests keep (the
smallest over the readings): a planted cell is only as far as the clean rows' tail lets it be.

Usage::

    python research/probe_readings.py --family cars --seed 0 --column mileage_km --kind mileage_extra_zero
    python research/probe_readings.py --family flights --seed 0 --column fuel_kg --kind fuel_extra_digit
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from nrad.synthetic import FAMILIES
from nrad.table import fit_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from main_job import IDS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", required=True, choices=sorted(IDS))
    parser.add_argument("--seed", type=int, default=0, help="the main job's table seed (1000 + this)")
    parser.add_argument("--column", required=True)
    parser.add_argument("--kind", required=True)
    args = parser.parse_args()
    table = FAMILIES[args.family](3000, 20, random_state=1000 + args.seed)
    df = table.frame
    model = fit_table(df, id_column=IDS[args.family], random_state=0)
    prep = model.prepare(df)
    folds = model.training_folds(len(df))
    names = list(np.asarray(model.schema.names)[model.schema.numeric_sources])
    j = names.index(args.column)
    rows = table.truth.loc[table.truth["kind"] == args.kind, "row"].to_numpy()
    clean = np.setdiff1d(np.arange(len(df)), table.truth["row"].to_numpy())
    print(f"{args.column}: shape exponent {model.numeric.exponent[j]:.2f}, planted rows {rows.tolist()}")
    for relations in model.relations:
        u = relations.standardize(model.reading(relations.reading, prep.y, prep.codes, False))
        t = model.per_fold(relations.gaussians, relations.residuals, u, folds)
        q = np.nanquantile(np.abs(t[clean, j]), [0.5, 0.99, 0.999])
        held = bool(relations.holds[j])
        print(
            f"{relations.reading:7s} relation held {held!s:5s} planted {np.round(t[rows, j], 1)}"
            f"  clean |t| median / 99% / 99.9%: {q[0]:.2f} / {q[1]:.2f} / {q[2]:.2f}"
        )
    kept = model.cell_residuals(prep, folds)
    q = np.nanquantile(np.abs(kept[clean, j]), [0.99, 0.999])
    print(f"kept    planted {np.round(kept[rows, j], 2)}  clean |t| 99% / 99.9%: {q[0]:.2f} / {q[1]:.2f}")


if __name__ == "__main__":
    main()
