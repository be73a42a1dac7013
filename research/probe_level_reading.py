"""How is a new row's number read against a small category level: as a training row, by the
Student t predictive tail, or scaled to the predictive spread (what ``nrad score`` does)?

Fits the table model on a clean planted-family table (``nrad fit``'s way), then for the planted
rows of the scored twin prints, for one numeric column, the level it is read against, how many
training values that level's spread came from, and the residual three ways: as a training row
(no correction), by the t predictive tail (``m - 1 + SD_PRIOR_ROWS`` degrees of freedom, the
Gaussian value of its tail probability), and scaled (``NumericModel.residuals(new_rows=True)``).

Usage::

    python research/probe_level_reading.py --family transactions --seed 3 --column quantity
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy import special, stats

from nrad.numeric import SD_PRIOR_ROWS
from nrad.synthetic import FAMILIES
from nrad.table import fit_table


def t_reading(r: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The Gaussian value of the Student t predictive tail probability of residuals ``r``."""
    m = np.maximum(m, 1.0)
    t = r / np.sqrt(1.0 + 1.0 / m)
    z = -special.ndtri_exp(stats.t.logsf(np.abs(t), m - 1.0 + SD_PRIOR_ROWS))
    return np.sign(t) * np.maximum(z, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="transactions")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--column", default="quantity")
    args = parser.parse_args()
    make = FAMILIES[args.family]
    table = make(3000, 20, random_state=1000 + args.seed)  # as research/probe_channels.py
    clean = make(3000, 0, random_state=2000 + args.seed).frame
    model = fit_table(clean, random_state=0)
    numeric = model.numeric
    j = list(model.schema.numeric_names).index(args.column)
    parent = int(numeric.parent[j])
    if parent < 0 or numeric.level_rows is None:
        print(f"{args.column} is read against all rows: no level to correct for")
        return
    rows = table.truth["row"].to_numpy()
    prep = model.prepare(table.frame.iloc[rows])
    level = prep.codes[:, parent]
    m = numeric.level_rows[j][level]
    r = numeric.residuals(prep.y, prep.codes)[:, j]
    out = pd.DataFrame(
        {
            "row": rows,
            "kind": table.truth["kind"].to_numpy(),
            args.column: table.frame[args.column].to_numpy()[rows],
            "level": np.asarray(model.schema.categorical_labels[parent], dtype=object)[level],
            "level_rows": m,
            "as_training": r,
            "t_tail": t_reading(r, m),
            "scaled": numeric.residuals(prep.y, prep.codes, new_rows=True)[:, j],
        }
    )
    print(f"{args.column} read against {model.schema.categorical_names[parent]}")
    print(out.to_string(index=False, float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
