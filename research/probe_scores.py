"""Compare pure-density estimators on one fitted NRDE flow (accuracy study probe).

Fits NRDE once per (dataset, setting, seed) under the benchmark protocol and
scores the test rows with several estimators that share the flow, so the
comparison isolates the estimator.  Prints one CSV row per run and a mean
AUROC table.  Exploratory: the committed figures for decisions come from
``nrad bench`` (research/results/ABLATION.md).

    python research/probe_scores.py --data-dir ../shared/datasets/adbench \
        --datasets cardio,letter --settings vanilla,noisy-gauss-0.5 --out /tmp/probe.csv
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch
from probe_common import append_rows, probe_parser, protocol_splits
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestNeighbors

from nrad.nrde import NRDE

K = 5


def knn_score(train: np.ndarray, test: np.ndarray, k: int = K) -> np.ndarray:
    nn = NearestNeighbors(n_neighbors=min(k, len(train))).fit(train)
    return nn.kneighbors(test)[0].mean(axis=1)


def wiener(norms: np.ndarray, flat_only: bool) -> np.ndarray:
    """Wiener weights ``1 - floor^2 / norm^2`` with the floor at the weakest source."""
    floor = norms.min()
    if flat_only and np.sum(norms <= 2.0 * floor) < 2:
        return np.ones_like(norms)
    return np.clip(1.0 - floor**2 / norms**2, 0.0, 1.0)


def scores(model: NRDE, X_train: np.ndarray, X_test: np.ndarray) -> dict[str, np.ndarray]:
    z_tr = model._standardize(X_train).numpy()
    z_te = model._standardize(X_test).numpy()
    s_tr, s_te = model.transform(X_train), model.transform(X_test)
    norms = np.exp(model.source_influence_)
    out = {
        "flow": model.anomaly_score(X_test),
        "knn_x": knn_score(z_tr, z_te),
        "knn_s": knn_score(s_tr, s_te),
        "knn_u": knn_score(s_tr * norms, s_te * norms),
    }
    for name, flat in (("knn_uw", False), ("knn_uw_flat", True)):
        w = wiener(norms, flat) * norms
        out[name] = knn_score(s_tr * w, s_te * w)
    # Pure-source estimate in pure-whitened units: E[pure_i | x] / sd(pure_i)
    # = s_i sqrt(1 - floor^2 / norm_i^2) (Gaussian noise of sd `floor` per source).
    w = np.sqrt(wiener(norms, True))
    out["knn_sw_flat"] = knn_score(s_tr * w, s_te * w)
    # Soft split inside the flow's own density: each source's latent energy
    # weighted by its Wiener gain, the log-determinant kept whole.
    energy, logdet = flow_terms(model, X_test)
    for name, w in (("flow_w_flat", wiener(norms, True)), ("flow_w_floor", floor_weights(norms))):
        out[name] = 0.5 * (energy * w).sum(axis=1) - logdet
    # Ensemble of the flow density and k-NN in standardized x, each put on a
    # common scale by the robust z of its own training-row scores (k-NN on
    # training rows leave-one-out, so a row is not its own neighbour).
    flow_tr, knn_tr = model.anomaly_score(X_train), knn_loo(z_tr)
    out["ens_rz"] = 0.5 * (robust_z(flow_tr, out["flow"]) + robust_z(knn_tr, out["knn_x"]))
    return out


def knn_loo(train: np.ndarray, k: int = K) -> np.ndarray:
    """Mean distance of each training row to its k nearest other training rows."""
    nn = NearestNeighbors(n_neighbors=min(k + 1, len(train))).fit(train)
    return nn.kneighbors(train)[0][:, 1:].mean(axis=1)


def robust_z(ref: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``(x - median(ref)) / IQR(ref)``; the IQR floored so a constant reference cannot divide by 0."""
    q1, med, q3 = np.quantile(ref, [0.25, 0.5, 0.75])
    return (x - med) / max(q3 - q1, 1e-12 * max(1.0, abs(med)))


def floor_weights(norms: np.ndarray, flat: float = 2.0) -> np.ndarray:
    """Wiener gains ``1 - floor^2 / norm^2`` with the floor at the flat group's mean energy.

    The flat group: the sources within ``flat`` x of the weakest; with fewer
    than 2 there is no floor and every gain is 1.
    """
    group = norms[norms <= flat * norms.min()]
    if len(group) < 2:
        return np.ones_like(norms)
    return np.clip(1.0 - np.mean(group**2) / norms**2, 0.0, 1.0)


def flow_terms(model: NRDE, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-source latent energy ``s_i^2`` and the forward log-determinant, per row."""
    z = model._standardize(X)
    with torch.inference_mode():
        s, logdet = model.flow_(z)
    return (s * s).numpy(), logdet.numpy()


def main() -> None:
    parser = probe_parser(__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows: list[dict] = []
    done = set()
    if args.out.exists():
        prev = pd.read_csv(args.out)
        rows = prev.to_dict("records")
        done = set(zip(prev.dataset, prev.setting, strict=True))
    splits = protocol_splits(args.data_dir, args.datasets, args.settings, args.seed, skip=done)
    for name, setting, X_tr, X_te, y_test in splits:
        model = NRDE(random_state=args.seed).fit(X_tr)
        key = dict(dataset=name, setting=setting, seed=args.seed)
        new = [
            {**key, "variant": variant, "auroc": roc_auc_score(y_test, sc)}
            for variant, sc in scores(model, X_tr, X_te).items()
        ]
        rows += new
        append_rows(args.out, new)
    table = pd.DataFrame(rows).pivot_table(index="variant", columns="setting", values="auroc", aggfunc="mean")
    print(table.round(3).to_string())


if __name__ == "__main__":
    main()
