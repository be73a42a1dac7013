"""Fit seconds and scoring rows/s of NRDE (defaults) and PyOD IForest, same run.

Usage: python benchmarks/fit_speed.py --data-dir ../shared/datasets/adbench

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
    args = parser.parse_args()
    paths = dataset_paths(args.data_dir)
    print(f"torch threads: {torch.get_num_threads()}")
    big = cardio_10k(paths["cardio"])
    runs = [(big.name, big.X, big.X)]
    for name in DATASETS:
        split = make_split(load_dataset(paths[name]), "vanilla", 0)
        runs.append((name, split.X_train, split.X_test))
    for name, X_train, X_test in runs:
        label = f"{name} {X_train.shape[0]}x{X_train.shape[1]}"
        measure(f"{label} nrde", NRDE(random_state=0), "anomaly_score", X_train, X_test)
        measure(f"{label} iforest", IForest(random_state=0), "decision_function", X_train, X_test)


if __name__ == "__main__":
    main()
