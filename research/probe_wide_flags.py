"""Flags on a wide numeric table: what ``nrad detect`` flags on embeddings of hundreds of columns.

Builds the embedding table of ``probe_wide_bench.py`` (rows from 20 latent
factors through a random non-linear map, 3% of them shifted 4 sd along a
random direction), fits the table model on it and scores it in sample, as
``nrad detect`` does, and prints how many rows are flagged at q = 0.1, how
many of them are the shifted ones, and the robust distance statistic's
median.  ``--on-columns`` reads the robust distance as a chi-square on the
table's columns instead of on the principal components the Gaussian
measures it on (the reading before they were told apart).

    python research/probe_wide_flags.py --rows 3000 --columns 503
    python research/probe_wide_flags.py --rows 3000 --columns 503 --on-columns
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_wide_bench import embeddings  # noqa: E402

from nrad.evidence import distance_statistic  # noqa: E402
from nrad.table import TableModel, fit_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--columns", type=int, default=503)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--on-columns", action="store_true", help="chi-square on the table's columns")
    args = parser.parse_args()
    if args.on_columns:
        TableModel.distance_statistic = lambda self, z, folds=None: distance_statistic(  # type: ignore[method-assign]
            self.gaussian_distance(z, folds), z.shape[1]
        )
    X, y = embeddings(args.rows, args.columns, np.random.default_rng(args.seed))
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    model = fit_table(frame, random_state=0)
    out, _ = model.score(frame, fdr=0.1, in_sample=True, explain="none")
    flagged = out["flagged"].to_numpy()
    prep = model.prepare(frame)
    z = model.fill(model.numeric_z(prep.y, prep.codes)[0], model.folds)
    statistic = model.distance_statistic(z, model.folds)
    print(
        f"{args.rows} x {args.columns} ({int(y.sum())} shifted rows), robust distance read on "
        f"{'the columns' if args.on_columns else 'the components'} (the Gaussian reads "
        f"{model.gaussian_input(z[:1]).shape[1]} components): median statistic {np.median(statistic):.3g}; "
        f"flagged at q = 0.1: {int(flagged.sum())}, of them shifted {int((flagged & (y == 1)).sum())}"
    )


if __name__ == "__main__":
    main()
