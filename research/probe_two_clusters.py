"""Two clusters of bad rows at two distances: are both flagged, or only the farther one?

A table of ``--rows`` rows: an id and four related numeric columns (a regression's three
predictors and its response, with noise), as ``robustbase::hbk`` is built.  Two clusters are
planted, each tight: the first of ``--first`` rows far out in the predictors with a response off
the regression (``--far`` spreads), the second of ``--second`` rows nearer (``--near`` spreads
out in the predictors, their response on the regression).  Each table is scored as ``nrad
detect`` scores it (fitted on itself, Benjamini-Hochberg at ``--fdr``).  Printed per table: the
rows flagged of each cluster and the other rows flagged.

    python research/probe_two_clusters.py --rows 75,300,3000 --first 10 --second 4 --seeds 0-4
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from probe_far_bands import flags

from nrad.bench.runner import parse_seeds


def table(
    rows: int, first: int, second: int, far: float, near: float, seed: int
) -> tuple[pd.DataFrame, np.ndarray]:
    """The table and each row's cluster (0: none, 1: the far one, 2: the near one)."""
    rng = np.random.default_rng(seed)
    mix = np.random.default_rng(11).normal(size=(3, 3))
    x = rng.normal(size=(rows, 3)) @ mix + 10.0
    spread = x.std(axis=0)
    y = x @ np.array([0.5, -0.3, 0.2]) + rng.normal(0.0, 0.5, rows)
    cluster = np.zeros(rows, dtype=int)
    chosen = rng.choice(rows, size=first + second, replace=False)
    cluster[chosen[:first]], cluster[chosen[first:]] = 1, 2
    direction = rng.normal(size=3)
    direction /= np.linalg.norm(direction)
    for label, distance in ((1, far), (2, near)):
        rows_of = cluster == label
        centre = x.mean(axis=0) + distance * spread * direction
        x[rows_of] = centre + rng.normal(0.0, 0.1, size=(rows_of.sum(), 3)) * spread
        y[rows_of] = x[rows_of] @ np.array([0.5, -0.3, 0.2]) + rng.normal(0.0, 0.5, rows_of.sum())
    y[cluster == 1] += 10.0 * 0.5  # off the regression by ten noise spreads
    frame = pd.DataFrame({"id": np.arange(1, rows + 1), "x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "y": y})
    return frame.round(2), cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="75,300,3000")
    parser.add_argument("--first", type=int, default=10)
    parser.add_argument("--second", type=int, default=4)
    parser.add_argument("--far", type=float, default=12.0)
    parser.add_argument("--near", type=float, default=5.0)
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--fdr", type=float, default=0.1)
    args = parser.parse_args()
    print("rows seed first_flagged second_flagged other_flags")
    for rows in (int(r) for r in args.rows.split(",")):
        for seed in parse_seeds(args.seeds):
            frame, cluster = table(rows, args.first, args.second, args.far, args.near, seed)
            got = flags(frame, args.fdr)
            found = [int((got & (cluster == c)).sum()) for c in (1, 2, 0)]
            print(rows, seed, f"{found[0]}/{args.first}", f"{found[1]}/{args.second}", found[2], flush=True)


if __name__ == "__main__":
    main()
