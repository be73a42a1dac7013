"""What tail shapes clean tables' calibration scores take: the profile behind MAX_SHAPE and CELL_MAX_SHAPE.

For each clean generator of benchmarks/fdr.py and seed, the table model is
fitted and its calibration statistics recomputed (the training rows'
out-of-fold row scores, robust distances and cell residuals, as the model
reads them); a tail is fitted to each with the shape bound lifted to 0.8,
so that the profile is the data's, not the bound's.

    python research/probe_tail_shapes.py --seeds 0,1 --out research/results/probe_tail_shapes.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import log_ndtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from fdr import NULLS  # noqa: E402

from nrad.calibration import TailModel  # noqa: E402
from nrad.table import fit_table  # noqa: E402

LIFTED = 0.8


def shapes(name: str, seed: int) -> list[dict]:
    data = NULLS[name](3000, 20_000 + seed)
    model = fit_table(data, random_state=seed)
    prep = model.prepare(data)
    scores, z, _ = model.score_prepared(prep, model.folds)
    out = [{"channel": "row score", "shape": TailModel.fit(scores, max_shape=LIFTED).shapes[0]}]
    if z.shape[1]:
        distance = model.distance_statistic(z, model.folds)
        out.append(
            {"channel": "robust distance", "shape": TailModel.fit(distance, max_shape=LIFTED).shapes[0]}
        )
        residuals = model.cell_residuals(prep, model.folds)
        for j in range(residuals.shape[1]):
            t = residuals[:, j][np.isfinite(residuals[:, j])]
            if len(t) >= 100:
                for side in (t, -t):
                    fitted = TailModel.fit(-log_ndtr(-side), max_shape=LIFTED)
                    out.append({"channel": "cell", "shape": fitted.shapes[0]})
    return [{"generator": name, "seed": seed, **row} for row in out]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    frame = pd.DataFrame(
        [row for name in NULLS for seed in map(int, args.seeds.split(",")) for row in shapes(name, seed)]
    )
    frame.to_csv(args.out, index=False)
    print(frame.groupby("channel")["shape"].describe(percentiles=[0.5, 0.9, 0.95]).round(3).to_string())


if __name__ == "__main__":
    main()
