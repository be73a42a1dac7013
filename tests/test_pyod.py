"""nrad.pyod.NRDE behaves as a PyOD detector (higher score = more anomalous, labels 0/1)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

pytest.importorskip("pyod")

from nrad.pyod import NRDE  # noqa: E402


@pytest.fixture(scope="module")
def planted() -> tuple[np.ndarray, np.ndarray, NRDE]:
    rng = np.random.default_rng(0)
    normal = rng.normal(size=(380, 4)) @ rng.normal(size=(4, 4))
    outliers = rng.uniform(-8, 8, size=(20, 4))
    X = np.vstack([normal, outliers])
    y = np.r_[np.zeros(380, int), np.ones(20, int)]
    return X, y, NRDE(contamination=0.05, max_epochs=30, random_state=0).fit(X)


def test_fitted_attributes_have_pyods_meaning(planted: tuple[np.ndarray, np.ndarray, NRDE]) -> None:
    X, y, det = planted
    assert det.decision_scores_.shape == (len(X),)
    assert set(np.unique(det.labels_)) <= {0, 1}
    assert det.labels_.sum() == pytest.approx(0.05 * len(X), abs=1)
    assert np.array_equal(det.labels_, (det.decision_scores_ > det.threshold_).astype(int))
    assert roc_auc_score(y, det.decision_function(X)) > 0.9
    assert roc_auc_score(y, det.decision_scores_) > 0.9


def test_predict_and_predict_proba(planted: tuple[np.ndarray, np.ndarray, NRDE]) -> None:
    X, y, det = planted
    labels = det.predict(X)
    assert set(np.unique(labels)) <= {0, 1}
    assert np.array_equal(labels, det.labels_)
    proba = det.predict_proba(X)
    assert proba.shape == (len(X), 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert roc_auc_score(y, proba[:, 1]) > 0.9


def test_combines_with_other_pyod_detectors(planted: tuple[np.ndarray, np.ndarray, NRDE]) -> None:
    from pyod.models.knn import KNN
    from pyod.utils.utility import standardizer
    from sklearn.base import clone

    X, y, det = planted
    # PyOD's way of combining detectors: standardize each decision_function, then average.
    scores = standardizer(np.column_stack([det.decision_function(X), KNN().fit(X).decision_function(X)]))
    assert roc_auc_score(y, scores.mean(axis=1)) > 0.9
    # Model selection clones detectors through get_params / set_params.
    copy = clone(det).set_params(max_epochs=5)
    assert copy.get_params()["contamination"] == 0.05 and copy.max_epochs == 5
