"""Other fusions of the table model's members, offline, on the per-row parts that
``research/probe_density_parts.py --dump DIR`` saves: mean AUROC over the tables of each folder.

Printed per folder: the shipped sum of the four standardized members (``F0``), the sum without
one member, density plus neighbours alone, each member alone, the neighbour member on a log
scale, the density counted twice, and the sum of the members' ranks; then (``--grid``) the
member weights on a grid (density 1; the others 0, 0.5 or 1), best first by the smaller margin
over the two targets given (one folder per target).

Usage::

    python research/fusions_offline.py DIR_VANILLA DIR_TRANSDUCTIVE --grid 0.880,0.805
"""

from __future__ import annotations

import argparse
import glob
import itertools
import os

import numpy as np
from probe_density_parts import standardized  # the fusion's scale, as the probe computed it
from sklearn.metrics import roc_auc_score


def load(folder: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per table: labels, the four members' raw test scores, and their standardized ones."""
    tables = []
    for path in sorted(glob.glob(os.path.join(folder, "*.npz"))):
        a = np.load(path)
        density_tr = a["tr_cat"] + a["tr_flow"] + a["tr_clip"] + a["tr_tail"]
        density_te = a["te_cat"] + a["te_flow"] + a["te_clip"] + a["te_tail"]
        train, test = np.column_stack([density_tr, a["mtr"]]), np.column_stack([density_te, a["mte"]])
        log_train, log_test = train.copy(), test.copy()
        log_train[:, 1] = np.log(np.maximum(train[:, 1], 1e-6))
        log_test[:, 1] = np.log(np.maximum(test[:, 1], 1e-6))
        tables.append((a["y"], test, standardized(train, test), standardized(log_train, log_test)))
    return tables


def fusions(test: np.ndarray, s: np.ndarray, log_s: np.ndarray) -> dict[str, np.ndarray]:
    ranks = sum(np.argsort(np.argsort(test[:, j])) for j in range(4))
    return {
        "F0": s.sum(1), "no_isolation": s[:, [0, 1, 3]].sum(1), "no_distance": s[:, :3].sum(1),
        "density+neighbours": s[:, :2].sum(1), "density": test[:, 0], "neighbours": test[:, 1],
        "isolation": test[:, 2], "distance": test[:, 3], "log_neighbours": log_s.sum(1),
        "density_twice": s.sum(1) + s[:, 0], "ranks": ranks,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--grid", default=None, help="targets, one per folder, e.g. 0.880,0.805")
    args = parser.parse_args()
    data = {folder: load(folder) for folder in args.folders}
    for folder, tables in data.items():
        per = [{k: roc_auc_score(y, v) for k, v in fusions(t, s, ls).items()} for y, t, s, ls in tables]
        print(folder, len(per), " ".join(f"{k}={np.mean([p[k] for p in per]):.4f}" for k in per[0]))
    if args.grid:
        targets = [float(t) for t in args.grid.split(",")]
        rows = []
        for w in itertools.product([1.0], [0, 0.5, 1], [0, 0.5, 1], [0, 0.5, 1]):
            means = [np.mean([roc_auc_score(y, s @ np.array(w)) for y, _, s, _ in data[f]]) for f in data]
            rows.append((min(m - t for m, t in zip(means, targets, strict=True)), w, means))
        for margin, w, means in sorted(rows, key=lambda r: -r[0])[:8]:
            print("weights", w, " ".join(f"{m:.4f}" for m in means), f"margin {margin:+.4f}")


if __name__ == "__main__":
    main()
