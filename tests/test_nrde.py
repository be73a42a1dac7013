"""The NRDE estimator: scikit-learn contract and API."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.utils.estimator_checks import parametrize_with_checks

from nrad import NRDE

FAST = {"max_epochs": 5, "n_transforms": 2, "hidden_units": 8, "random_state": 0}
SMALL = {"n_transforms": 2, "hidden_units": 8}


@parametrize_with_checks([NRDE(**FAST)])
def test_sklearn_contract(estimator: NRDE, check: object) -> None:
    check(estimator)


@pytest.fixture(scope="module")
def fitted() -> tuple[NRDE, np.ndarray]:
    X = np.random.default_rng(0).normal(size=(300, 4))
    return NRDE(max_epochs=20, random_state=0).fit(X), X


def test_score_conventions(fitted: tuple[NRDE, np.ndarray]) -> None:
    det, X = fitted
    np.testing.assert_allclose(det.score_samples(X), det.log_density(X))
    np.testing.assert_allclose(det.anomaly_score(X), -det.log_density(X))
    np.testing.assert_allclose(det.decision_function(X), det.score_samples(X) - det.offset_)
    pred = det.predict(X)
    assert set(np.unique(pred)) <= {-1, 1}
    assert abs((pred == -1).mean() - det.contamination) < 0.02
    assert det.anomaly_score(X).dtype == np.float64


def test_learned_attributes(fitted: tuple[NRDE, np.ndarray]) -> None:
    det, X = fitted
    assert det.transform(X).shape == X.shape
    assert det.source_influence_.shape == (4,)
    assert sorted(np.r_[det.pure_sources_, det.noise_sources_].tolist()) == [0, 1, 2, 3]
    assert det.n_features_in_ == 4


def test_far_rows_score_higher(fitted: tuple[NRDE, np.ndarray]) -> None:
    det, X = fitted
    far = np.full((1, 4), 6.0)
    assert det.anomaly_score(far)[0] > np.quantile(det.anomaly_score(X), 0.99)


def test_same_seed_same_scores_and_no_global_rng_use() -> None:
    X = np.random.default_rng(1).normal(size=(200, 3))
    state = torch.random.get_rng_state()
    a = NRDE(max_epochs=5, random_state=3).fit(X).anomaly_score(X)
    assert torch.equal(torch.random.get_rng_state(), state)
    b = NRDE(max_epochs=5, random_state=3).fit(X).anomaly_score(X)
    np.testing.assert_array_equal(a, b)
    c = NRDE(max_epochs=5, random_state=4).fit(X).anomaly_score(X)
    assert not np.array_equal(a, c)


def test_scores_do_not_depend_on_batching(fitted: tuple[NRDE, np.ndarray]) -> None:
    det, X = fitted
    full = det.anomaly_score(X)
    parts = np.concatenate([det.anomaly_score(X[i : i + 7]) for i in range(0, len(X), 7)])
    np.testing.assert_allclose(parts, full, rtol=1e-12, atol=1e-12)


def test_whitening_does_not_depend_on_the_blas_thread_count() -> None:
    # At d = 100 a 2-thread BLAS sums the covariance in another order
    # (1e-12 apart), which training amplifies into a different fit.
    from threadpoolctl import threadpool_limits

    from nrad.nrde import _pca_whitening

    rng = np.random.default_rng(0)
    Z = rng.normal(size=(2000, 100)) @ rng.normal(size=(100, 100))
    with threadpool_limits(1):
        one = _pca_whitening(Z, 0.05)
    with threadpool_limits(2):
        two = _pca_whitening(Z, 0.05)
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("n_pure", [None, 2], ids=["no-noise-sources", "two-noise-sources"])
def test_chunks_in_parallel_equal_chunks_one_at_a_time(n_pure: int | None, monkeypatch: object) -> None:
    import nrad.nrde as detector

    X = np.random.default_rng(1).normal(size=(500, 4))
    det = NRDE(max_epochs=3, n_pure_sources=n_pure, random_state=0).fit(X)
    assert len(det.noise_sources_) == (0 if n_pure is None else 2)
    monkeypatch.setattr(detector, "SCORE_CHUNK", 64)  # 8 chunks
    before = torch.get_num_threads()
    got = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        got[threads] = (det.anomaly_score(X), det.transform(X), det.explain(X[:100]))
        assert torch.get_num_threads() == threads  # restored after the parallel run
    torch.set_num_threads(before)
    for a, b in zip(got[1], got[2], strict=True):
        np.testing.assert_array_equal(a, b)


def test_dataframe_feature_names() -> None:
    df = pd.DataFrame(np.random.default_rng(0).normal(size=(100, 3)), columns=["a", "b", "c"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "X does not have valid feature names"
        det = NRDE(max_epochs=3, random_state=0, calibration_fraction=0.2).fit(df)
        det.anomaly_score(df)
    assert list(det.feature_names_in_) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="feature names"):
        det.anomaly_score(df[["c", "b", "a"]])


def test_wrong_feature_count_is_value_error(fitted: tuple[NRDE, np.ndarray]) -> None:
    det, _ = fitted
    with pytest.raises(ValueError, match="features"):
        det.anomaly_score(np.zeros((3, 5)))


def test_vanilla_flow_is_a_constructor_option() -> None:
    X = np.random.default_rng(0).normal(size=(100, 3))
    det = NRDE(penalty_weight=0.0, n_pure_sources="all", max_epochs=3, random_state=0).fit(X)
    assert det.noise_sources_.size == 0
    s = torch.as_tensor((X - det.mean_) / det.scale_)
    with torch.inference_mode():
        np.testing.assert_allclose(det.log_density(X), det.flow_.log_prob(s).numpy())


def _stale_epochs_at_stop(curve: list[float]) -> int:
    """Epochs after the last improvement (by the fit's 1e-4 rule) when training stopped."""
    best, last_better = np.inf, 0
    for epoch, loss in enumerate(curve):
        if loss < best - 1e-4:
            best, last_better = loss, epoch
    return len(curve) - 1 - last_better


def test_early_stopping_holds_out_rows() -> None:
    X = np.random.default_rng(0).normal(size=(1000, 2))
    det = NRDE(max_epochs=200, n_iter_no_change=2, random_state=0).fit(X)
    assert len(det.validation_loss_curve_) == det.n_epochs_ < 200
    assert _stale_epochs_at_stop(det.validation_loss_curve_) == 2


def test_patience_is_at_least_patience_steps() -> None:
    # 270 training rows in batches of 64 are 5 steps per epoch: 60 steps of
    # patience are 12 epochs, more than n_iter_no_change's 3.
    X = np.random.default_rng(1).normal(size=(300, 2))
    det = NRDE(max_epochs=500, n_iter_no_change=3, patience_steps=60, batch_size=64, random_state=0, **SMALL)
    det.fit(X)
    assert det.n_epochs_ < 500
    assert _stale_epochs_at_stop(det.validation_loss_curve_) == 12
