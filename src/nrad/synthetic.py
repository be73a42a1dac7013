"""Synthetic tables built from known sources, to check NRDE's claims.

``x = g_true(s_P, s_N)``: a few pure sources drive a smooth nonlinear
manifold through every feature; weak noise sources move the rows off that
manifold along fixed orthogonal directions.  Anomalies differ from normal
rows only in their pure sources, so their true pure-data density is known.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SourceData:
    """A synthetic table with its ground truth."""

    X: np.ndarray
    y: np.ndarray
    pure_sources: np.ndarray
    noise_sources: np.ndarray
    pure_log_density: np.ndarray


def make_source_data(
    n_normal: int = 2000,
    n_anomalies: int = 100,
    n_pure: int = 2,
    n_noise: int = 6,
    noise_scale: float = 0.05,
    anomaly_shift: float = 2.5,
    random_state: int = 0,
) -> SourceData:
    """Rows ``x = A warp(s_P) + noise_scale * B s_N``, ``B`` orthonormal and orthogonal to ``A``.

    Normal rows have ``s_P ~ N(0, I)``; anomalies have ``s_P = u * r`` with a
    random direction ``u`` and radius ``r = anomaly_shift + |N(0, 0.5)|``, so
    they lie in the tails of the pure sources while their noise sources stay
    standard normal.  ``pure_log_density`` is ``sum log N(s_P)`` (the
    density of the pure sources; monotone in the pure-data density up to the
    smooth warp's Jacobian).
    """
    rng = np.random.default_rng(random_state)
    d = n_pure + n_noise
    mix_pure = rng.normal(size=(d, n_pure))
    # Unit-variance features (what standardization sees), and noise along an
    # orthonormal basis of the complement of the pure directions, so the
    # noise is isotropic in the standardized space NRDE works in.
    mix_pure /= np.sqrt((mix_pure**2).sum(axis=1, keepdims=True) * 1.1)
    q, _ = np.linalg.qr(np.hstack([mix_pure, rng.normal(size=(d, n_noise))]))
    mix_noise = q[:, n_pure:]
    s_normal = rng.normal(size=(n_normal, n_pure))
    u = rng.normal(size=(n_anomalies, n_pure))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    s_anom = u * (anomaly_shift + np.abs(rng.normal(scale=0.5, size=(n_anomalies, 1))))
    s_pure = np.vstack([s_normal, s_anom])
    s_noise = rng.normal(size=(n_normal + n_anomalies, n_noise))
    # Smooth, invertible warp of the pure sources: a curved manifold, not a plane.
    warped = s_pure + 0.3 * np.tanh(s_pure[:, ::-1])
    X = warped @ mix_pure.T + noise_scale * s_noise @ mix_noise.T
    y = np.r_[np.zeros(n_normal, dtype=int), np.ones(n_anomalies, dtype=int)]
    log_density = -0.5 * (s_pure**2).sum(axis=1) - 0.5 * n_pure * np.log(2 * np.pi)
    return SourceData(X, y, np.arange(n_pure), np.arange(n_pure, d), log_density)
