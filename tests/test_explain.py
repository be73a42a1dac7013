"""Explanations rank the features where an anomaly was planted first."""

from __future__ import annotations

import numpy as np

from nrad import NRDE


def test_planted_features_rank_first() -> None:
    rng = np.random.default_rng(0)
    latent = rng.normal(size=(1500, 3))
    mix = rng.normal(size=(3, 6))
    X = latent @ mix + 0.3 * rng.normal(size=(1500, 6))
    det = NRDE(random_state=0, max_epochs=40).fit(X[:1000])
    test = X[1000:1060].copy()
    planted = np.repeat(np.arange(6), 10)
    test[np.arange(60), planted] += 6.0 * X[:1000].std(axis=0)[planted]
    contrib = det.explain(test)
    assert contrib.shape == (60, 6)
    top = np.argmax(contrib, axis=1)
    assert np.mean(top == planted) >= 0.9, np.c_[planted, top]
    # Completeness: contributions add up to score(row) - score(training mean).
    gap = det.anomaly_score(test) - det.anomaly_score(det.mean_[None])[0]
    np.testing.assert_allclose(contrib.sum(axis=1), gap, rtol=1e-2, atol=1e-2)
