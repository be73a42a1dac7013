"""Table -> float matrix.  For now: the protocol's standardization."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data


def standardization(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Training mean and sd; an sd below ``1e-12 * max(1, |mean|)`` counts as 0 and becomes 1."""
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    sd = np.where(sd < 1e-12 * np.maximum(1.0, np.abs(mean)), 1.0, sd)
    return mean, sd


class ProtocolScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """z-score with the training rows' mean and sd (BENCHMARK.md's scaling rule)."""

    def fit(self, X: Any, y: Any = None) -> ProtocolScaler:
        X = validate_data(self, X, dtype=np.float64)
        self.mean_, self.scale_ = standardization(X)
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) / self.scale_
