"""What the accuracy-study probes share: the protocol's scaled splits, and result rows on disk."""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from nrad.bench.datasets import dataset_paths, load_dataset
from nrad.bench.settings import make_split
from nrad.preprocess import ProtocolScaler


def probe_parser(doc: str, settings: str = "vanilla,noisy-gauss-0.5") -> argparse.ArgumentParser:
    """The arguments every probe takes (--data-dir, --datasets, --settings); add the probe's own."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", required=True)
    parser.add_argument("--settings", default=settings)
    return parser


def protocol_splits(
    data_dir: Path, datasets: str, settings: str, seed: int = 0, skip: set[tuple[str, str]] | None = None
) -> Iterator[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]:
    """``(dataset, setting, X_train, X_test, y_test)`` under the benchmark protocol.

    Scaled as ``nrad bench`` scales them.  ``datasets`` and ``settings`` are
    comma-separated; pairs in ``skip`` are left out.
    """
    paths = dataset_paths(data_dir)
    for name in datasets.split(","):
        data = None
        for setting in settings.split(","):
            if skip and (name, setting) in skip:
                continue
            data = load_dataset(paths[name]) if data is None else data
            split = make_split(data, setting, seed)
            scaler = ProtocolScaler().fit(split.X_train)
            yield name, setting, scaler.transform(split.X_train), scaler.transform(split.X_test), split.y_test


def pending_splits(args: argparse.Namespace) -> Iterator[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`protocol_splits` of a probe's arguments, without the pairs already in ``args.out``
    (for the probe's ``--seed`` if it has one, else seed 0)."""
    seed = getattr(args, "seed", 0)
    return protocol_splits(args.data_dir, args.datasets, args.settings, seed, skip=done_pairs(args.out, seed))


def select_by_validation(rows: list[dict[str, Any]], default: dict[str, Any]) -> dict[str, Any]:
    """The row whose flow had the lowest held-out NLL (``val_nll``): model selection from training
    rows alone; ``default`` when no fit had a validation part (too few rows)."""
    finite = [r for r in rows if math.isfinite(r["val_nll"])]
    return min(finite, key=lambda r: r["val_nll"]) if finite else default


def done_pairs(out: Path, seed: int = 0) -> set[tuple[str, str]]:
    """(dataset, setting) pairs of ``seed`` already in a probe's CSV, so a re-run resumes."""
    if not out.exists():
        return set()
    with out.open(newline="") as fh:
        return {(row["dataset"], row["setting"]) for row in csv.DictReader(fh) if int(row["seed"]) == seed}


def append_rows(out: Path, rows: list[dict[str, Any]]) -> None:
    """Append one (dataset, setting)'s rows (header first on a new file) and print their AUROCs."""
    summary = {row["variant"]: round(row["auroc"], 3) for row in rows}
    print(rows[0]["dataset"], rows[0]["setting"], summary, file=sys.stderr, flush=True)
    write_header = not out.exists()
    with out.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        if write_header:
            writer.writeheader()
        writer.writerows(rows)
