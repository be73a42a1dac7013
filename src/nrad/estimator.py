"""``TableDetector``: what ``nrad detect`` runs, as a scikit-learn estimator.

For a user who works in scikit-learn's terms: ``fit(X)`` on a DataFrame
(numbers, categories, dates, missing cells) or a numeric array, then
``anomaly_score`` / ``score_samples`` / ``p_values`` / ``predict`` on any
rows.  Rows that are the fitted table itself (same values, same order) are
scored in-sample, each by the members that did not see it, and flagged with
self-calibrated p-values, exactly as ``nrad detect`` without ``--train``
does; so ``fit_predict(X)`` is that command's ``flagged`` column.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OutlierMixin
from sklearn.utils.validation import check_is_fitted

from nrad.calibration import check_level
from nrad.table import DEFAULT_FDR, DETECTORS, TableModel, as_pandas, fit_table


class TableDetector(OutlierMixin, BaseEstimator):
    """The table model (:func:`nrad.fit_table`) with scikit-learn's conventions.

    Parameters
    ----------
    detector : {"fused", "nrde"}, default="fused"
        ``"fused"``: the density fused with neighbour and isolation scores
        (what the command line uses); ``"nrde"``: the density alone.
    fdr : float, default=0.05
        False discovery rate of ``predict`` (Benjamini-Hochberg over the rows given).
    id_column : str or None, default=None
        Column that identifies rows (kept out of the features).
    random_state : int, default=0
        Seed of the fit; the same seed gives the same scores.
    max_epochs : int or None, default=None
        Cap on the flows' training epochs (None: automatic).

    Attributes
    ----------
    model_ : TableModel
        The fitted table model (save it with :func:`nrad.model_file.save_model`).
    decision_scores_ : ndarray of shape (n_samples,)
        Out-of-fold anomaly scores of the training rows (higher = more anomalous), as PyOD names them.
    n_features_in_ : int
        Columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Their names (for an array: ``x0``, ``x1``, ...).
    """

    def __init__(
        self,
        detector: str = "fused",
        fdr: float = DEFAULT_FDR,
        id_column: str | None = None,
        random_state: int = 0,
        max_epochs: int | None = None,
    ) -> None:
        self.detector = detector
        self.fdr = fdr
        self.id_column = id_column
        self.random_state = random_state
        self.max_epochs = max_epochs

    def fit(self, X: Any, y: Any = None) -> TableDetector:
        """Fit the table model on ``X`` (DataFrame or 2-D array; ``y`` is ignored)."""
        if self.detector not in DETECTORS:
            raise ValueError(f"detector must be one of {', '.join(DETECTORS)}, got {self.detector!r}")
        check_level(self.fdr, "fdr")
        frame = _frame(X)
        params = {} if self.max_epochs is None else {"max_epochs": self.max_epochs}
        self.model_: TableModel = fit_table(
            frame, self.id_column, random_state=self.random_state, detector=self.detector, **params
        )
        self.n_features_in_ = frame.shape[1]
        self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        self._fingerprint = _fingerprint(frame)
        self.decision_scores_ = self._scored(frame, in_sample=True)["anomaly_score"].to_numpy()
        return self

    def anomaly_score(self, X: Any) -> np.ndarray:
        """Anomaly score per row (higher = more anomalous; in-sample for the fitted table itself)."""
        frame = self._check(X)
        return self._scored(frame, self._is_fitted_table(frame))["anomaly_score"].to_numpy()

    def score_samples(self, X: Any) -> np.ndarray:
        """Minus :meth:`anomaly_score` (scikit-learn's sign: lower = more abnormal)."""
        return -self.anomaly_score(X)

    def p_values(self, X: Any) -> np.ndarray:
        """How often a normal row scores at least this high (see docs/usage.md)."""
        frame = self._check(X)
        return self._scored(frame, self._is_fitted_table(frame))["p_value"].to_numpy()

    def predict(self, X: Any) -> np.ndarray:
        """-1 for rows flagged by Benjamini-Hochberg at ``fdr`` among the rows given, +1 for the others."""
        frame = self._check(X)
        in_sample = self._is_fitted_table(frame)
        scored, _ = self.model_.score(frame, fdr=self.fdr, explain="none", in_sample=in_sample)
        return np.where(scored["flagged"].to_numpy(dtype=bool), -1, 1)

    def _scored(self, frame: pd.DataFrame, in_sample: bool) -> pd.DataFrame:
        return self.model_.score_rows(frame, in_sample=in_sample)[0]

    def _check(self, X: Any) -> pd.DataFrame:
        check_is_fitted(self, "model_")
        # An array takes the fitted column names; a DataFrame's columns are checked by the model.
        return _frame(X, self.feature_names_in_)

    def _is_fitted_table(self, frame: pd.DataFrame) -> bool:
        return len(frame) == len(self._fingerprint) and np.array_equal(_fingerprint(frame), self._fingerprint)


def _frame(X: Any, names: np.ndarray | None = None) -> pd.DataFrame:
    """A DataFrame of ``X``: itself (pandas or polars), or a 2-D array with columns ``x0, x1, ...``."""
    if isinstance(X, pd.DataFrame) or hasattr(X, "to_pandas"):  # pandas or polars
        return as_pandas(X)
    array = np.asarray(X)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-D array or a DataFrame, got an array of shape {array.shape}")
    columns = list(names) if names is not None else [f"x{j}" for j in range(array.shape[1])]
    if len(columns) != array.shape[1]:
        raise ValueError(f"X has {array.shape[1]} columns, the detector was fitted on {len(columns)}")
    return pd.DataFrame(array, columns=columns)


def _fingerprint(frame: pd.DataFrame) -> np.ndarray:
    """One hash per row (values and column order, not the index): how the fitted table is recognized."""
    return pd.util.hash_pandas_object(frame, index=False).to_numpy()
