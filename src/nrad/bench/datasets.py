"""Benchmark datasets: ``.npz`` files with ``X`` (n x d) and ``y`` (1 = anomaly)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nrad.errors import NradError

#: Datasets with more rows are stratified-subsampled to this many per run.
MAX_ROWS = 10_000


@dataclass(frozen=True)
class Dataset:
    """One labelled table, as the protocol loads it."""

    name: str
    X: np.ndarray
    y: np.ndarray

    @property
    def anomaly_rate(self) -> float:
        return float(self.y.mean()) if len(self.y) else 0.0


def dataset_name(path: Path) -> str:
    """ADBench files are ``<number>_<name>.npz``; the name drops the number."""
    return re.sub(r"^\d+_", "", path.stem)


def dataset_paths(data_dir: str | Path) -> dict[str, Path]:
    """Name -> path for every ``.npz`` in ``data_dir``, sorted by name."""
    folder = Path(data_dir)
    if not folder.is_dir():
        raise NradError(f"data folder {folder} does not exist or is not a folder; pass --data-dir DIR")
    paths = {dataset_name(p): p for p in folder.glob("*.npz")}
    return dict(sorted(paths.items(), key=lambda kv: kv[0].lower()))


def load_dataset(path: str | Path) -> Dataset:
    """Load ``X`` as float64 and ``y`` as int; drop rows with any NaN."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            X = np.asarray(f["X"], dtype=np.float64)
            y = np.asarray(f["y"]).astype(int).ravel()
    except (OSError, KeyError, ValueError) as exc:
        raise NradError(f"cannot read dataset {path}: {exc}. It must be an .npz with arrays X and y.") from exc
    if X.ndim != 2 or len(X) != len(y):
        raise NradError(f"dataset {path}: X must be 2-D with one label in y per row, got {X.shape}, {y.shape}")
    keep = ~np.isnan(X).any(axis=1)
    return Dataset(dataset_name(path), X[keep], y[keep])
