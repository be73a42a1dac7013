"""Do rows holding a flag's rarer value get flagged when a table is scored against itself?

Clean tables of ``--rows`` rows: two related normal columns, a gamma column, a category, and a 0/1
column whose 1 holds ``--shares`` of the rows (a diagnosis, a promotion used); with ``--wild``, one
row's gamma value is set 30 times its column's median as well (a row a model must still flag, and
which changes what the density's in-sample tail leaves out).  Each table is scored as ``nrad
detect`` scores it (fitted on itself, Benjamini-Hochberg at ``--fdr``); the probe prints how many
rows were flagged, how many of them hold a 1, and whether the wild row was.

    python research/probe_flag_share.py --rows 5000 --shares 0.015,0.03 --seeds 0-4 --wild
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from nrad.bench.runner import parse_seeds
from nrad.table import fit_table


def table(rows: int, share: float, seed: int, wild: bool) -> pd.DataFrame:
    """The clean table, with row 7's gamma value wild when ``wild``."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=rows)
    df = pd.DataFrame({
        "a": a,
        "b": a + rng.normal(size=rows),
        "c": rng.gamma(2, size=rows),
        "flag": (rng.random(rows) < share).astype(int),
        "g": rng.choice(["x", "y", "z"], rows),
    })  # fmt: skip
    if wild:
        df.loc[7, "c"] = 30 * float(df["c"].median())
    return df


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--shares", default="0.015,0.03")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--fdr", type=float, default=0.1)
    parser.add_argument("--wild", action="store_true", help="plant one wild value as well")
    args = parser.parse_args()
    print("share seed rows_with_1 flagged flagged_with_1 wild_flagged")
    for share in (float(s) for s in args.shares.split(",")):
        for seed in parse_seeds(args.seeds):
            df = table(args.rows, share, seed, args.wild)
            model = fit_table(df, random_state=0)
            scored, _ = model.score(df, fdr=args.fdr, in_sample=True, explain="none")
            flagged = scored["flagged"].to_numpy()
            ones = df["flag"].to_numpy() == 1
            wild = bool(flagged[7]) if args.wild else "-"
            print(share, seed, int(ones.sum()), int(flagged.sum()), int((flagged & ones).sum()), wild, flush=True)


if __name__ == "__main__":
    main()
