"""Many errors of one kind in one column: how many are flagged as their share of the table grows?

A clean table (``--family transactions``: ``nrad.synthetic.make_transactions``; ``orders``: the
web-shop orders of ``research/probe_far_bands.py`` without wholesale rows, and without the rows of
its ten planted errors), then ``--counts`` rows whose value of one column (amount; total) is
multiplied by ``--factors`` (100: a decimal point lost; 10: a digit too many), each table scored as
``nrad detect`` scores it (fitted on itself, Benjamini-Hochberg at ``--fdr``).  Printed per table:
the planted rows flagged and the other rows flagged.

    python research/probe_one_column_errors.py --family transactions --factors 100,10 \\
        --counts 10,20,40,60,90 --seeds 0-2
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from probe_far_bands import flags, orders

from nrad.bench.runner import parse_seeds
from nrad.synthetic import make_transactions

COLUMNS = {"transactions": "amount", "orders": "total"}


def clean(family: str, rows: int, seed: int) -> pd.DataFrame:
    if family == "transactions":
        return make_transactions(rows, 0, random_state=seed).frame
    frame, _, errors = orders(rows, 0.0, seed)
    return frame[~errors].reset_index(drop=True)


def plant(
    frame: pd.DataFrame, column: str, count: int, factor: float, seed: int
) -> tuple[pd.DataFrame, np.ndarray]:
    """``count`` present cells of ``column`` (drawn with ``seed``) multiplied by ``factor``."""
    frame = frame.copy()
    rng = np.random.default_rng(100 + seed)
    present = np.flatnonzero(frame[column].notna().to_numpy())
    rows = rng.choice(present, size=count, replace=False)
    frame.loc[rows, column] = (frame.loc[rows, column] * factor).round(2)
    planted = np.zeros(len(frame), dtype=bool)
    planted[rows] = True
    return frame, planted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", choices=tuple(COLUMNS), default="transactions")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--factors", default="100,10")
    parser.add_argument("--counts", default="10,20,40,60,90")
    parser.add_argument("--seeds", default="0-2")
    parser.add_argument("--fdr", type=float, default=0.1)
    args = parser.parse_args()
    print("family factor count seed planted_flagged other_flags")
    for factor in (float(f) for f in args.factors.split(",")):
        for count in (int(c) for c in args.counts.split(",")):
            for seed in parse_seeds(args.seeds):
                base = clean(args.family, args.rows, seed)
                frame, planted = plant(base, COLUMNS[args.family], count, factor, seed)
                got = flags(frame, args.fdr)
                counts = int((got & planted).sum()), int((got & ~planted).sum())
                print(args.family, f"{factor:g}", count, seed, *counts, flush=True)


if __name__ == "__main__":
    main()
