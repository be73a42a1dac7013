"""TableDetector: the command line's detector with scikit-learn's habits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from nrad import TableDetector


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({"amount": rng.lognormal(3, 0.4, n), "shop": rng.choice(["a", "b", "c"], n),
                          "risk": rng.normal(size=n)})  # fmt: skip
    frame.loc[7, "amount"] = 5000.0
    return frame


@pytest.fixture(scope="module")
def fitted(table: pd.DataFrame) -> TableDetector:
    return TableDetector(max_epochs=20).fit(table)


def test_params_clone_and_learned_attributes(fitted: TableDetector) -> None:
    assert clone(fitted).get_params() == fitted.get_params()
    assert not hasattr(clone(fitted), "model_")
    assert fitted.n_features_in_ == 3 and list(fitted.feature_names_in_) == ["amount", "shop", "risk"]
    assert fitted.model_.fusion is not None


def test_the_fitted_table_is_scored_in_sample_as_detect_does(
    fitted: TableDetector, table: pd.DataFrame
) -> None:
    scored, _ = fitted.model_.score(table, fdr=0.05, explain="none", in_sample=True)
    np.testing.assert_array_equal(fitted.anomaly_score(table), scored["anomaly_score"].to_numpy())
    np.testing.assert_array_equal(fitted.decision_scores_, scored["anomaly_score"].to_numpy())
    labels = fitted.predict(table)
    np.testing.assert_array_equal(labels == -1, scored["flagged"].to_numpy())
    assert labels[7] == -1
    np.testing.assert_array_equal(fitted.score_samples(table), -fitted.anomaly_score(table))
    # Other rows (here: the same rows shuffled) are new rows, scored by every member's mean.
    shuffled = table.sample(frac=1.0, random_state=0)
    new = fitted.anomaly_score(shuffled)
    assert not np.allclose(new, fitted.anomaly_score(table)[shuffled.index])


def test_arrays_and_bad_parameters() -> None:
    X = np.random.default_rng(1).normal(size=(200, 3))
    det = TableDetector(detector="nrde", max_epochs=10, random_state=3).fit(X)
    assert list(det.feature_names_in_) == ["x0", "x1", "x2"] and det.model_.fusion is None
    np.testing.assert_array_equal(
        det.anomaly_score(X),
        TableDetector(detector="nrde", max_epochs=10, random_state=3).fit(X).anomaly_score(X),
    )
    with pytest.raises(ValueError, match="fitted on 3"):
        det.anomaly_score(X[:, :2])
    with pytest.raises(ValueError, match="detector must be one of"):
        TableDetector(detector="lof").fit(X)
    with pytest.raises(Exception, match="fdr"):
        TableDetector(fdr=2.0).fit(X)
