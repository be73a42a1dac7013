"""NRDE on data built from known sources (docs/method.md, "Checks")."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from nrad import NRDE
from nrad.jacobian import generator_columns
from nrad.synthetic import SourceData, make_source_data

VANILLA = {"penalty_weight": 0.0, "n_pure_sources": "all"}
N_TRAIN = 1000


@pytest.fixture(scope="module")
def data() -> SourceData:
    return make_source_data(n_normal=2000, n_anomalies=100, n_pure=2, n_noise=6, random_state=0)


def _auroc(params: dict, X: np.ndarray, y: np.ndarray) -> tuple[float, NRDE]:
    det = NRDE(random_state=0, **params).fit(X[:N_TRAIN])
    return roc_auc_score(y[N_TRAIN:], det.anomaly_score(X[N_TRAIN:])), det


@pytest.fixture(scope="module")
def clean_runs(data: SourceData) -> dict:
    return {name: _auroc(p, data.X, data.y) for name, p in {"nrde": {}, "vanilla": VANILLA}.items()}


def test_recovers_the_pure_sources(data: SourceData, clean_runs: dict) -> None:
    det = clean_runs["nrde"][1]
    assert len(det.pure_sources_) == len(data.pure_sources)
    # The pure sources' generator columns must span the true pure plane
    # (in the standardized space the flow works in).
    Z = torch.as_tensor((data.X[:200] - det.mean_) / det.scale_)
    with torch.inference_mode():
        s, _ = det.flow_(Z)
        cols = generator_columns(det.flow_, s, det.pure_sources_.tolist()).mean(dim=1).numpy().T
    _, _, vt = np.linalg.svd(data.X[:N_TRAIN] / det.scale_ - (data.X[:N_TRAIN] / det.scale_).mean(0))
    true_plane = vt[: len(data.pure_sources)].T
    q, _ = np.linalg.qr(cols)
    cosines = np.linalg.svd(true_plane.T @ q, compute_uv=False)
    assert cosines.min() > 0.95


def test_beats_the_vanilla_flow(clean_runs: dict) -> None:
    nrde, vanilla = clean_runs["nrde"][0], clean_runs["vanilla"][0]
    assert nrde > vanilla + 0.01, (nrde, vanilla)


def test_extra_noise_hurts_nrde_less(data: SourceData, clean_runs: dict) -> None:
    rng = np.random.default_rng(1)
    noisy = data.X + 0.2 * data.X.std(axis=0) * rng.normal(size=data.X.shape)
    drop = {
        name: clean_runs[name][0] - _auroc(p, noisy, data.y)[0]
        for name, p in {"nrde": {}, "vanilla": VANILLA}.items()
    }
    assert drop["nrde"] < drop["vanilla"], drop
