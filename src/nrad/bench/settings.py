"""The settings of the benchmark protocol (docs/benchmark.md): how each run's train and scored rows are made.

Every split and every noise draw depends only on (dataset, setting, seed),
so all methods see the same rows.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import train_test_split

from nrad.bench.datasets import MAX_ROWS, Dataset
from nrad.errors import NradError

SETTINGS = (
    "vanilla",
    "contaminated-1",
    "contaminated-5",
    "noisy-gauss-0.1",
    "noisy-gauss-0.3",
    "noisy-gauss-0.5",
    "noisy-irrelevant-0.25",
    "noisy-irrelevant-0.5",
    "transductive",
)


@dataclass(frozen=True)
class Split:
    """Rows a detector is fitted on and rows it is scored on (with their labels)."""

    X_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    train_index: np.ndarray
    test_index: np.ndarray


def run_rng(dataset: str, setting: str, seed: int, purpose: str) -> np.random.Generator:
    """A generator fixed by (dataset, setting, seed, purpose) alone."""
    key = zlib.crc32(f"{dataset}|{setting}|{purpose}".encode())
    return np.random.default_rng([seed, key])


def subsample(data: Dataset, seed: int) -> Dataset:
    """Stratified random subsample to ``MAX_ROWS`` rows, drawn with the run's seed."""
    if len(data.y) <= MAX_ROWS:
        return data
    stratify = data.y if 0 < data.y.sum() < len(data.y) and min(np.bincount(data.y)) >= 2 else None
    idx, _ = train_test_split(
        np.arange(len(data.y)), train_size=MAX_ROWS, stratify=stratify, random_state=seed
    )
    idx = np.sort(idx)
    return Dataset(data.name, data.X[idx], data.y[idx])


def make_split(data: Dataset, setting: str, seed: int) -> Split:
    """Train / scored rows for one run of ``setting`` (see BENCHMARK.md)."""
    if setting not in SETTINGS:
        raise NradError(f"unknown setting {setting!r}; choose from {', '.join(SETTINGS)}")
    data = subsample(data, seed)
    X, y = data.X, data.y
    if setting == "transductive":
        idx = np.arange(len(y))
        return Split(X, X, y, idx, idx)
    train, test = _vanilla_indices(data, seed)
    if setting.startswith("contaminated-"):
        train, test = _contaminate(data, train, test, float(setting.rsplit("-", 1)[1]), seed)
    elif setting.startswith("noisy-gauss-"):
        X = _gauss_noise(data, float(setting.rsplit("-", 1)[1]), seed)
    elif setting.startswith("noisy-irrelevant-"):
        X = _irrelevant_columns(data, float(setting.rsplit("-", 1)[1]), seed)
    return Split(X[train], X[test], y[test], train, test)


def _vanilla_indices(data: Dataset, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = run_rng(data.name, "vanilla", seed, "split")
    normal = np.flatnonzero(data.y == 0)
    train = np.sort(rng.permutation(normal)[: len(normal) // 2])
    test = np.setdiff1d(np.arange(len(data.y)), train)
    return train, test


def _contaminate(
    data: Dataset, train: np.ndarray, test: np.ndarray, percent: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Move k anomalies into training so they make up ``percent``% (at most half of all anomalies)."""
    rng = run_rng(data.name, f"contaminated-{percent:g}", seed, "anomalies")
    anomalies = np.flatnonzero(data.y == 1)
    k = min(round(percent / (100.0 - percent) * len(train)), len(anomalies) // 2)
    moved = rng.permutation(anomalies)[:k]
    return np.sort(np.r_[train, moved]), np.setdiff1d(test, moved)


def _gauss_noise(data: Dataset, level: float, seed: int) -> np.ndarray:
    rng = run_rng(data.name, f"noisy-gauss-{level:g}", seed, "noise")
    sd = data.X.std(axis=0)
    return data.X + rng.normal(size=data.X.shape) * (level * sd)


def _irrelevant_columns(data: Dataset, fraction: float, seed: int) -> np.ndarray:
    """Append uniform columns so they make up ``fraction`` of all columns."""
    rng = run_rng(data.name, f"noisy-irrelevant-{fraction:g}", seed, "noise")
    d = data.X.shape[1]
    n_new = round(fraction * d / (1.0 - fraction))
    source = rng.integers(0, d, size=n_new)
    lo, hi = data.X.min(axis=0)[source], data.X.max(axis=0)[source]
    return np.hstack([data.X, rng.uniform(lo, hi, size=(len(data.y), n_new))])
