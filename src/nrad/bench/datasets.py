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
        raise NradError(
            f"cannot read dataset {path}: {exc}. It must be an .npz with arrays X and y."
        ) from exc
    if X.ndim != 2 or len(X) != len(y):
        raise NradError(
            f"dataset {path}: X must be 2-D with one label in y per row, got {X.shape}, {y.shape}"
        )
    keep = ~np.isnan(X).any(axis=1)
    return Dataset(dataset_name(path), X[keep], y[keep])


#: The 47 classical datasets of ADBench (Han et al., NeurIPS 2022), by file stem.
ADBENCH_CLASSICAL = (
    "1_ALOI 2_annthyroid 3_backdoor 4_breastw 5_campaign 6_cardio 7_Cardiotocography 8_celeba "
    "9_census 10_cover 11_donors 12_fault 13_fraud 14_glass 15_Hepatitis 16_http 17_InternetAds "
    "18_Ionosphere 19_landsat 20_letter 21_Lymphography 22_magic.gamma 23_mammography 24_mnist "
    "25_musk 26_optdigits 27_PageBlocks 28_pendigits 29_Pima 30_satellite 31_satimage-2 32_shuttle "
    "33_skin 34_smtp 35_SpamBase 36_speech 37_Stamps 38_thyroid 39_vertebral 40_vowels 41_Waveform "
    "42_WBC 43_WDBC 44_Wilt 45_wine 46_WPBC 47_yeast"
).split()
#: Where ADBench publishes them.
ADBENCH_URL = "https://github.com/Minqi824/ADBench/raw/main/adbench/datasets/Classical"


def fetch_datasets(
    to: str | Path, base_url: str = ADBENCH_URL, names: list[str] | None = None, timeout: float = 60.0
) -> list[Path]:
    """Download ADBench ``.npz`` files into ``to``; skip files already there.

    Each file is downloaded to a temp name, checked to hold ``X`` and ``y``
    (loaded with allow_pickle=False), and only then renamed into place.
    """
    import urllib.error
    import urllib.request

    from nrad.io import atomic_path

    folder = Path(to)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stem in names or list(ADBENCH_CLASSICAL):
        target = folder / f"{stem}.npz"
        if target.exists():
            continue
        url = f"{base_url.rstrip('/')}/{stem}.npz"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, atomic_path(target) as tmp:
                tmp.write_bytes(resp.read())
                load_dataset(tmp)
        except (urllib.error.URLError, OSError) as exc:
            if created and not any(folder.iterdir()):
                folder.rmdir()  # a failed first download leaves no empty folder behind
            raise NradError(
                f"could not download {url}: {exc}. Check the network or pass --base-url."
            ) from exc
        written.append(target)
    return written
