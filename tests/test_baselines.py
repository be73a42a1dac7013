"""Own baselines (ICL, NeuTraL-AD, DTE-NP) and the registry."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from nrad.bench.registry import REGISTRY, fit_and_score, get_method

EXPECTED = {
    "nrde", "vanilla-flow", "iforest", "knn", "lof", "ocsvm", "ecod", "copod", "hbos", "pca", "gmm",
    "kde", "loda", "cblof", "mcd", "deepsvdd", "autoencoder", "icl", "neutral", "dte-np",
}  # fmt: skip


def test_registry_has_every_method() -> None:
    assert EXPECTED <= set(REGISTRY)


@pytest.mark.parametrize("name", ["icl", "neutral", "dte-np"])
def test_own_baselines_find_obvious_outliers(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from nrad.bench import deep

    monkeypatch.setattr(deep, "MAX_STEPS", 150)
    rng = np.random.default_rng(0)
    latent = rng.normal(size=(600, 2))
    X = np.hstack([latent, latent @ rng.normal(size=(2, 6)) + 0.05 * rng.normal(size=(600, 6))])
    X_test = np.vstack([X[500:], rng.normal(size=(20, 8)) * 3])
    y = np.r_[np.zeros(100), np.ones(20)]
    scores, fit_s, score_s = fit_and_score(get_method(name), 0, X[:500], X_test)
    assert scores.shape == (120,) and np.isfinite(scores).all() and fit_s >= 0
    assert roc_auc_score(y, scores) > 0.8


def test_icl_window_rule() -> None:
    from nrad.bench.deep import ICL

    assert [ICL.window_size(d) for d in (6, 40, 100, 200, 300, 1555)] == [2, 2, 10, 50, 100, 1155]
