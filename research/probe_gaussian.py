"""Is NRDE's flow more than a Gaussian on a dataset? (accuracy study diagnostic)

Exploratory.  For each dataset, in ``vanilla`` and ``noisy-gauss-0.5``
(seed 0, the benchmark protocol), prints the test AUROC of the Mahalanobis
distance under the training rows' Gaussian: over all principal components,
over the components that carry 90% and 99% of the variance, and with
variance-domain Wiener weights ``1 - lambda_min / lambda_i`` (the smallest
eigenvalue taken as the noise floor); and of the mean distance to the 5
nearest training rows.  Compare with NRDE's AUROC in results/runs.csv: a
flow that scores like the full Mahalanobis distance has learnt little
beyond the Gaussian.

    python research/probe_gaussian.py --data-dir ../shared/datasets/adbench --datasets letter,glass
"""

from __future__ import annotations

import numpy as np
from probe_common import probe_parser, protocol_splits
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestNeighbors


def scores(X_train: np.ndarray, X_test: np.ndarray) -> dict[str, np.ndarray]:
    mean = X_train.mean(axis=0)
    eigval, eigvec = np.linalg.eigh(np.cov(X_train - mean, rowvar=False))
    eigval, eigvec = eigval[::-1], eigvec[:, ::-1]
    energy = (X_test - mean) @ eigvec
    energy = energy**2 / np.maximum(eigval, 1e-12)
    share = np.cumsum(eigval) / eigval.sum()
    out = {"maha_all": energy.sum(axis=1)}
    for level in (0.9, 0.99):
        k = int(np.searchsorted(share, level)) + 1
        out[f"maha_{level:g}"] = energy[:, :k].sum(axis=1)
    wiener = np.clip(1.0 - eigval.min() / np.maximum(eigval, 1e-12), 0.0, 1.0)
    out["maha_wiener"] = (energy * wiener).sum(axis=1)
    nn = NearestNeighbors(n_neighbors=min(5, len(X_train))).fit(X_train)
    out["knn"] = nn.kneighbors(X_test)[0].mean(axis=1)
    return out


def main() -> None:
    parser = probe_parser(__doc__)
    args = parser.parse_args()
    for name, setting, X_train, X_test, y_test in protocol_splits(
        args.data_dir, args.datasets, args.settings
    ):
        aurocs = {k: round(roc_auc_score(y_test, v), 3) for k, v in scores(X_train, X_test).items()}
        print(name, setting, aurocs, flush=True)


if __name__ == "__main__":
    main()
