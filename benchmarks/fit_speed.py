"""Fit seconds and scoring rows/s of NRDE (defaults) and PyOD IForest, same run.

Usage: python benchmarks/fit_speed.py --data-dir data/adbench

``--variant "penalty_columns=32"`` adds NRDE with those parameters
(``name=value`` pairs) after the default on each dataset, so the two fit
times compare within one run; ``--datasets`` restricts the tables.

Prints one line per (dataset, method).  Scoring speed is measured on the
scored rows tiled to at least 100,000 rows.  "cardio-10k" is cardio resampled
to 10,000 x 21 (with 1% jitter) and fitted on all 10,000 rows, for the
10,000 x 21 fit target; the others use the protocol's vanilla split.
Run it on an otherwise idle machine: on 2 cores, a concurrent job makes
torch's threads spin and inflates NRDE's times many-fold.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from nrde_params import parse_params
from pyod.models.iforest import IForest

from nrad import NRDE
from nrad.bench.datasets import Dataset, dataset_paths, load_dataset
from nrad.bench.settings import make_split

DATASETS = ("cardio", "satellite", "shuttle", "mnist", "ALOI")


def cardio_10k(path: Path) -> Dataset:
    base = load_dataset(path)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(base.y), size=10_000)
    X = base.X[idx] + 0.01 * base.X.std(axis=0) * rng.normal(size=(10_000, base.X.shape[1]))
    return Dataset("cardio-10k", X, base.y[idx])


def measure(name: str, model: object, score: str, X_train: np.ndarray, X_test: np.ndarray) -> None:
    start = time.perf_counter()
    model.fit(X_train)
    fit_s = time.perf_counter() - start
    big = np.tile(X_test, (int(np.ceil(100_000 / len(X_test))), 1))
    start = time.perf_counter()
    getattr(model, score)(big)
    rate = len(big) / (time.perf_counter() - start)
    print(f"{name:<28} fit {fit_s:7.1f} s   score {rate:12,.0f} rows/s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--variant", help="NRDE parameters to time next to the defaults")
    parser.add_argument("--datasets", default=",".join(("cardio-10k", *DATASETS)))
    args = parser.parse_args()
    wanted = args.datasets.split(",")
    paths = dataset_paths(args.data_dir)
    print(f"torch threads: {torch.get_num_threads()}")
    runs = []
    if "cardio-10k" in wanted:
        big = cardio_10k(paths["cardio"])
        runs.append((big.name, big.X, big.X))
    for name in (n for n in wanted if n != "cardio-10k"):
        split = make_split(load_dataset(paths[name]), "vanilla", 0)
        runs.append((name, split.X_train, split.X_test))
    for name, X_train, X_test in runs:
        label = f"{name} {X_train.shape[0]}x{X_train.shape[1]}"
        measure(f"{label} nrde", NRDE(random_state=0), "anomaly_score", X_train, X_test)
        if args.variant:
            model = NRDE(random_state=0, **parse_params(args.variant))
            measure(f"{label} nrde[{args.variant}]", model, "anomaly_score", X_train, X_test)
        measure(f"{label} iforest", IForest(random_state=0), "decision_function", X_train, X_test)


if __name__ == "__main__":
    main()
