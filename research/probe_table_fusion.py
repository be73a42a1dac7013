"""The table model's score fused with k-NN and IForest scores, cross-fitted as its flows are (probe).

Exploratory, before building the fusion into the command line.  Fits the
table model's density (``nrad.table.fit_table(..., detector="nrde")``) on a
protocol split and scores the test rows as ``default`` does (in-sample,
out of fold, when they are the training rows).  Then, with the model's own
cross-fitting folds, one k-NN (distance to the 5th nearest row, PyOD's
default) and one IsolationForest (100 trees) per fold are fitted on the
rows outside the fold; a training row is scored by its fold's models, a new
row by the mean over folds.  Variants:

``default``      the density alone (results/runs.csv: ``table-nrde``, ``default`` until it was fused)
``fuse-z``       + k-NN + IForest on the numbers the flows read (context
                 standardized, tail-weighted, soft-clipped, missing filled)
``fuse-x``       + k-NN + IForest on the protocol-scaled columns
``fuse-z-knn``   + k-NN alone on the flows' numbers

Each member's score is standardized by the median and IQR of its
out-of-fold training-row scores; the fused score is the sum.

    python research/probe_table_fusion.py --data-dir DATA --datasets cardio,glass \
        --settings transductive,vanilla --seed 0 --out /tmp/table_fusion.csv
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from probe_common import append_rows, pending_splits, probe_parser
from sklearn.ensemble import IsolationForest
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestNeighbors

from nrad.table import TableModel, fit_table

K = 5


def frame(X: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])


def flow_numbers(model: TableModel, X: np.ndarray, folds: np.ndarray | None) -> np.ndarray:
    prep = model.prepare(frame(X))
    return model.score_prepared(prep, folds)[1]


def cross_fitted(
    train: np.ndarray, test: np.ndarray | None, folds: np.ndarray, seed: int
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(k-NN, IForest) out-of-fold scores of the training rows, and of ``test`` (mean over folds)."""
    n_folds = int(folds.max()) + 1
    knn_train, if_train = np.empty(len(train)), np.empty(len(train))
    knn_test, if_test = [], []
    for k in range(n_folds):
        ref = train[folds != k]
        nn = NearestNeighbors(n_neighbors=min(K, len(ref))).fit(ref)
        forest = IsolationForest(random_state=seed + k).fit(ref)
        mine = folds == k
        knn_train[mine] = nn.kneighbors(train[mine])[0][:, -1]
        if_train[mine] = -forest.score_samples(train[mine])
        if test is not None:
            knn_test.append(nn.kneighbors(test)[0][:, -1])
            if_test.append(-forest.score_samples(test))
    if test is None:
        return (knn_train, if_train), (knn_train, if_train)
    return (knn_train, if_train), (np.mean(knn_test, axis=0), np.mean(if_test, axis=0))


def standardized(train: np.ndarray, test: np.ndarray) -> np.ndarray:
    low, mid, high = np.percentile(train, [25, 50, 75])
    return (test - mid) / (high - low if high > low else max(float(train.std()), 1e-12))


def main() -> None:
    parser = probe_parser(__doc__, settings="transductive,vanilla")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, setting, X_train, X_test, y_test in pending_splits(args):
        model = fit_table(frame(X_train), random_state=args.seed, detector="nrde")
        folds = model.folds
        in_sample = setting == "transductive"
        dens_train = model.score_rows(frame(X_train), in_sample=True)[0]["anomaly_score"].to_numpy()
        dens_test = (
            dens_train if in_sample else model.score_rows(frame(X_test))[0]["anomaly_score"].to_numpy()
        )
        z_train = flow_numbers(model, X_train, folds)
        z_test = None if in_sample else flow_numbers(model, X_test, None)
        x_test = None if in_sample else X_test
        parts = {"dens": standardized(dens_train, dens_test)}
        for space, tr, te in (("z", z_train, z_test), ("x", X_train, x_test)):
            (knn_tr, if_tr), (knn_te, if_te) = cross_fitted(tr, te, folds, args.seed)
            parts[f"knn-{space}"] = standardized(knn_tr, knn_te)
            parts[f"if-{space}"] = standardized(if_tr, if_te)
        variants = {
            "default": parts["dens"],
            "fuse-z": parts["dens"] + parts["knn-z"] + parts["if-z"],
            "fuse-x": parts["dens"] + parts["knn-x"] + parts["if-x"],
            "fuse-z-knn": parts["dens"] + parts["knn-z"],
        }
        rows = [
            {"dataset": name, "setting": setting, "seed": args.seed, "variant": v,
             "auroc": roc_auc_score(y_test, s)}
            for v, s in variants.items()
        ]  # fmt: skip
        append_rows(args.out, rows)


if __name__ == "__main__":
    main()
