"""What each part of the fused score gives on the benchmark tables: the density's parts and the
fused score with a member left out, with the flows trained as before or as now.

For each table (one seed, one setting) the table model is fitted as ``nrad detect`` fits it
(``detector="fused"``) and the AUROC is printed of

* ``base``: the fused score as shipped (density + neighbours + isolation + robust distance,
  each standardized by its training rows' median and IQR);
* ``dens``: the density member alone; ``flow``: the flows' part of it;
* ``notail``, ``dens_notail``: the same without the tail weight's terms;
* ``nodist``, ``notail_nodist``: the fused score without the robust distance.

The per-row parts are saved (``--dump DIR``) for other fusions offline.

Variants (module attributes replaced for the run; research only):
``base`` as the code is; ``tol``: the flows stop with NRDE's default tolerance (1e-4);
``fill``: the flows train on absent cells filled at their conditional means (the robust
Gaussians' fill, as scoring fills them) instead of the hot deck; ``nodq``: no dequantization of
lattice columns.  ``tol`` and ``fill`` replace what the table model did before its flows were
trained on drawn fills with NRDE's tolerance (research/notes.md section 34); on the code after
that change they change nothing, and ``base`` is the shipped model.

Usage::

    python research/probe_density_parts.py --data-dir data/adbench --datasets all \
        --setting vanilla --variant tol+fill --seeds 0 --dump DIR
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score

import nrad.table as T
from nrad.bench.datasets import dataset_paths, load_dataset
from nrad.bench.registry import _table_detector
from nrad.bench.settings import make_split
from nrad.nrde import NRDE


def apply(variant: str) -> None:
    parts = variant.split("+")
    if "tol" in parts:
        T.NRDE = lambda **kw: NRDE(**{**kw, "tol": 1e-4})
    if "fill" in parts:
        fit_gaussians = T._fit_gaussians

        def filled(
            model: T.TableModel, hot_decked: np.ndarray, absent: np.ndarray, inside: np.ndarray, seed: int
        ) -> list[Any]:
            gaussians = fit_gaussians(model, hot_decked, absent, inside, seed)
            model.gaussians = gaussians
            hot_decked[:] = model.fill(absent.copy(), model.folds)  # the array the flows train on
            return gaussians

        T._fit_gaussians = filled
    if "nodq" in parts:
        T.dequantize = lambda values, cell, rng: values


def parts_of(
    model: T.TableModel, prep: Any, folds: np.ndarray | None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The density's parts per row and the other members (``folds``: in sample)."""
    raw = model.numeric.standardize(prep.y, prep.codes)
    z, clip = model.numeric.soft_clip(raw)
    clip, tail = np.nan_to_num(clip), model.numeric.tail_terms(raw)
    missing = np.isnan(z)
    z = model.fill(z, folds)
    tail = tail + model.filled_terms(z, missing)
    own = prep.own_codes if folds is not None else None
    cat = -model.categories.log_terms(prep.codes, leave_out=own).sum(axis=1)
    parts = {"cat": cat, "flow": model.flow_score(z, folds), "clip": clip.sum(1), "tail": tail.sum(1)}
    return parts, model.members(z, folds)


def standardized(train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Each column of ``test`` minus the median of ``train``'s over its IQR (the fusion's scale)."""
    q1, med, q3 = np.percentile(train, [25, 50, 75], axis=0)
    return (test - med) / np.maximum(q3 - q1, 1e-12)


def fused(
    y: np.ndarray,
    dens_tr: np.ndarray,
    dens_te: np.ndarray,
    members_tr: np.ndarray,
    members_te: np.ndarray,
    use: tuple[int, ...] = (0, 1, 2, 3),
) -> float:
    train, test = np.column_stack([dens_tr, members_tr]), np.column_stack([dens_te, members_te])
    return float(roc_auc_score(y, standardized(train, test)[:, list(use)].sum(1)))


def run(path: object, name: str, setting: str, seed: int, variant: str, dump: str | None) -> str:
    start = time.perf_counter()
    split = make_split(load_dataset(path), setting, seed)
    det = _table_detector(seed, "fused").fit(split.X_train)
    model = det.model_
    train = model.prepare(det._check(split.X_train))
    in_sample = split.X_test.shape == split.X_train.shape and np.array_equal(
        split.X_test, split.X_train, equal_nan=True
    )
    ptr, mtr = parts_of(model, train, model.folds)
    pte, mte = (ptr, mtr) if in_sample else parts_of(model, model.prepare(det._check(split.X_test)), None)
    y = split.y_test
    if dump:
        os.makedirs(dump, exist_ok=True)
        per_row = {**{f"tr_{k}": v for k, v in ptr.items()}, **{f"te_{k}": v for k, v in pte.items()}}
        np.savez(f"{dump}/{name}_{seed}.npz", y=y, mtr=mtr, mte=mte, **per_row)
    full = lambda p: p["cat"] + p["flow"] + p["clip"] + p["tail"]  # noqa: E731
    notail = lambda p: p["cat"] + p["flow"] + p["clip"]  # noqa: E731
    out = {
        "base": fused(y, full(ptr), full(pte), mtr, mte),
        "dens": roc_auc_score(y, full(pte)),
        "flow": roc_auc_score(y, pte["flow"]),
        "notail": fused(y, notail(ptr), notail(pte), mtr, mte),
        "dens_notail": roc_auc_score(y, notail(pte)),
        "nodist": fused(y, full(ptr), full(pte), mtr, mte, (0, 1, 2)),
        "notail_nodist": fused(y, notail(ptr), notail(pte), mtr, mte, (0, 1, 2)),
    }
    figures = " ".join(f"{k}={v:.4f}" for k, v in out.items())
    return f"{name} {setting} {variant} {seed} {figures} {time.perf_counter() - start:.0f}s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--datasets", default="all")
    parser.add_argument("--setting", default="vanilla")
    parser.add_argument("--variant", default="base")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--dump", default=None, help="folder for each table's per-row parts (.npz)")
    args = parser.parse_args()
    apply(args.variant)
    paths = dataset_paths(args.data_dir)
    names = sorted(paths) if args.datasets == "all" else args.datasets.split(",")
    for name in names:
        for seed in map(int, args.seeds.split(",")):
            print(run(paths[name], name, args.setting, seed, args.variant, args.dump), flush=True)


if __name__ == "__main__":
    main()
