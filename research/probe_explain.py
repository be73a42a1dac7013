"""How explanations behave on a longer-trained fit (research/notes.md, section 10).

Exploratory.  Writes docs/usage.md's two example tables (400 transactions
each, from ``tests/test_product.py::messy_csv``, seeds 1 and 2), fits
``fit_table`` on the first with ``patience_steps`` 0 (the default) and 500,
and for each fit prints: epochs run and the scores of the paths' starts;
the median over rows of the summed absolute per-column contributions and
the planted anomaly's (last row) top three columns, for the shipped
explanation (``TableModel.contributions``: integrated gradients from the
training mean with no missing cells, 16 steps, the missing-cell count
credited to the missing columns), integrated gradients from ``g(0)`` and
along a straight path in source space (64 steps); per-column occlusion;
and exact Shapley values over the input columns (absent columns from the
complete training row with the median score, the missing-cell count that
of the present columns, so every coalition is a row that can occur).
Also the missing-merchant row's (row 4) top three under the shipped
explanation and under Shapley.

    python research/probe_explain.py
"""

from __future__ import annotations

import itertools
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from nrad.nrde import NRDE
from nrad.sources import pure_log_density
from nrad.table import fit_table

PLANTED, MISSING_MERCHANT = 399, 4


def integrated_gradients(det: NRDE, Z: torch.Tensor, start: torch.Tensor, n: int = 64) -> np.ndarray:
    """IG along the straight path from ``start`` to each row (standardized units)."""
    t = ((torch.arange(n, dtype=torch.float64) + 0.5) / n)[:, None, None]
    delta = Z - start
    path = (start + t * delta[None]).reshape(-1, Z.shape[1]).requires_grad_(True)
    (grad,) = torch.autograd.grad(-pure_log_density(det.flow_, path, ()).sum(), path)
    return (grad.reshape(n, *Z.shape).mean(0) * delta).numpy()


def source_path(det: NRDE, Z: torch.Tensor, n: int = 64) -> np.ndarray:
    """Path integral along ``g(t f(x))``, t from 0 to 1 (midpoint gradients times steps)."""
    with torch.no_grad():
        s, _ = det.flow_(Z)
        t = (torch.arange(n + 1, dtype=torch.float64) / n)[:, None, None]
        xs = det.flow_.generate((t * s[None]).reshape(-1, Z.shape[1])).reshape(n + 1, *Z.shape)
    mid = (0.5 * (xs[1:] + xs[:-1])).reshape(-1, Z.shape[1]).requires_grad_(True)
    (grad,) = torch.autograd.grad(-pure_log_density(det.flow_, mid, ()).sum(), mid)
    return (grad.reshape(n, *Z.shape) * (xs[1:] - xs[:-1])).sum(0).numpy()


def occlusion(
    det: NRDE, X: np.ndarray, missing: np.ndarray, ref: np.ndarray, cols: np.ndarray, groups: list[str]
) -> np.ndarray:
    """Drop in score when one column takes the complete row ``ref``'s value (and is no longer missing)."""
    score = det.anomaly_score(X)
    out = []
    for k, g in enumerate(groups):
        Xo = X.copy()
        Xo[:, cols == g] = ref[cols == g]
        Xo[:, -1] -= missing[:, k]
        out.append(score - det.anomaly_score(Xo))
    return np.stack(out, axis=1)


def shapley(
    det: NRDE, x: np.ndarray, missing: np.ndarray, ref: np.ndarray, cols: np.ndarray, groups: list[str]
) -> np.ndarray:
    """Exact Shapley values of the score over column groups, absent groups from the complete row ``ref``.

    The missing-cell count (the last feature) is that of the present columns.
    """
    masks = list(itertools.product([0, 1], repeat=len(groups)))
    rows = []
    for mask in masks:
        z = ref.copy()
        for k, g in enumerate(groups):
            if mask[k]:
                z[cols == g] = x[cols == g]
        z[-1] = np.dot(mask, missing)
        rows.append(z)
    value = dict(zip(masks, det.anomaly_score(np.array(rows)), strict=True))
    G, phi = len(groups), np.zeros(len(groups))
    for mask in masks:
        size = sum(mask)
        for k in (k for k in range(G) if not mask[k]):
            weight = math.factorial(size) * math.factorial(G - size - 1) / math.factorial(G)
            phi[k] += weight * (value[mask[:k] + (1,) + mask[k + 1 :]] - value[mask])
    return phi


def top3(values: np.ndarray, groups: list[str]) -> str:
    order = np.argsort(-np.abs(values))[:3]
    return ", ".join(f"{groups[k]} {values[k]:+.1f}" for k in order)


def report(patience_steps: int, train: pd.DataFrame, data: pd.DataFrame) -> None:
    model = fit_table(train, id_column="txn_id", ignore=["label"], patience_steps=patience_steps)
    det, cols = model.detector, np.array(model.schema.source_column())
    groups = [c.name for c in model.schema.columns]
    X, _, missing = model.features_with_missing(data, "data")
    X_train, _, missing_train = model.features_with_missing(train, "training data")
    complete = X_train[missing_train.sum(axis=1) == 0]
    ref = complete[np.argsort(det.anomaly_score(complete))[len(complete) // 2]]
    Z = det._standardize(X)
    with torch.no_grad():
        g0 = det.flow_.generate(torch.zeros(1, Z.shape[1], dtype=torch.float64))
    mean_score = det.anomaly_score(det.mean_[None])[0]
    with torch.no_grad():
        g0_score = float(-pure_log_density(det.flow_, g0, ())[0])
    print(
        f"patience_steps={patience_steps}: {det.n_epochs_} epochs; score of the training mean "
        f"{mean_score:.2f}, of g(0) {g0_score:.2f}, median row {np.median(det.anomaly_score(X)):.2f}"
    )
    variants = {
        "shipped (IG from the training mean)": model.contributions(X, missing)[groups].to_numpy(),
        "IG from g(0)": model.by_column(integrated_gradients(det, Z, g0), missing)[groups].to_numpy(),
        "IG along a source-space path": model.by_column(source_path(det, Z), missing)[groups].to_numpy(),
        "occlusion": occlusion(det, X, missing, ref, cols, groups),
    }
    for name, contrib in variants.items():
        median = np.median(np.abs(contrib).sum(axis=1))
        print(f"  {name}: median sum |c| {median:.1f}; planted: {top3(contrib[PLANTED], groups)}")
    shipped = variants["shipped (IG from the training mean)"]
    print(f"  shipped, row {MISSING_MERCHANT}: {top3(shipped[MISSING_MERCHANT], groups)}")
    for row in (PLANTED, MISSING_MERCHANT):
        phi = shapley(det, X[row], missing[row], ref, cols, groups)
        print(f"  Shapley, row {row}: {top3(phi, groups)}")


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_product import messy_csv

    with tempfile.TemporaryDirectory() as tmp:
        train = pd.read_csv(messy_csv(Path(tmp) / "normal.csv", seed=1))
        data = pd.read_csv(messy_csv(Path(tmp) / "transactions.csv", seed=2))
    for patience_steps in (0, 500):
        report(patience_steps, train, data)


if __name__ == "__main__":
    main()
