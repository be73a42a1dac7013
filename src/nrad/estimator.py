"""``TableDetector``: what ``nrad detect`` runs, as a scikit-learn estimator.

For a user who works in scikit-learn's terms: ``fit(X)`` on a DataFrame
(numbers, categories, dates, missing cells) or a numeric array, then
``anomaly_score`` / ``score_samples`` / ``p_values`` / ``predict`` on new
rows.  ``fit_predict(X)`` scores the fitted rows themselves, each by the
members that did not see it, exactly as ``nrad detect`` without ``--train``
does: it is that command's ``flagged`` column; ``decision_scores_`` holds
those rows' scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OutlierMixin
from sklearn.utils.validation import check_array, check_is_fitted

from nrad.encoding import as_pandas
from nrad.flags import DEFAULT_FDR, FlagRule
from nrad.table import DETECTORS, TableModel, fit_table


class TableDetector(OutlierMixin, BaseEstimator):
    """The table model (:func:`nrad.fit_table`) with scikit-learn's conventions.

    Parameters
    ----------
    detector : {"fused", "nrde"}, default="fused"
        ``"fused"``: the density fused with neighbour, isolation and
        robust-distance scores (new rows: with neighbour scores alone; what the
        command line uses); ``"nrde"``: the density alone.
    fdr : float, default=0.05
        False discovery rate of ``predict`` (Benjamini-Hochberg over the rows given).
    id_column : str or None, default=None
        Column that identifies rows (kept out of the features).
    random_state : int, default=0
        Seed of the fit; the same seed gives the same scores.
    max_epochs : int or None, default=None
        Cap on the flows' training epochs (None: automatic).
    source_split : bool, default=False
        Split the flows' sources into pure and noise and score the pure data's density, as
        :class:`nrad.NRDE` does (the paper's method); by default every source is kept.

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

    Notes
    -----
    ``check_estimator`` passes but for checks that fit tables narrower than
    the table model accepts (10 + 2 per numeric column rows for each
    cross-fitted flow; the error names the rows needed) and checks that
    expect a share of rows flagged on small clean data (Benjamini-Hochberg
    flags none without evidence); tests/test_estimator.py names them.
    """

    def __init__(
        self,
        detector: str = "fused",
        fdr: float = DEFAULT_FDR,
        id_column: str | None = None,
        random_state: int = 0,
        max_epochs: int | None = None,
        source_split: bool = False,
    ) -> None:
        self.detector = detector
        self.fdr = fdr
        self.id_column = id_column
        self.random_state = random_state
        self.max_epochs = max_epochs
        self.source_split = source_split

    def fit(self, X: Any, y: Any = None) -> TableDetector:
        """Fit the table model on ``X`` (DataFrame or 2-D array; ``y`` is ignored)."""
        if self.detector not in DETECTORS:
            raise ValueError(f"detector must be one of {', '.join(DETECTORS)}, got {self.detector!r}")
        FlagRule.of(self.fdr)  # a level outside (0, 1) fails before the fit
        frame = _frame(X)
        params = {} if self.max_epochs is None else {"max_epochs": self.max_epochs}
        self.model_: TableModel = fit_table(
            frame,
            self.id_column,
            random_state=self.random_state,
            detector=self.detector,
            source_split=self.source_split,
            **params,
        )
        self.n_features_in_ = frame.shape[1]
        self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        scored = self.model_.score_rows(frame, in_sample=True)[0]
        self.decision_scores_ = scored["anomaly_score"].to_numpy()
        self.training_p_values_ = scored["p_value"].to_numpy()
        return self

    def fit_predict(self, X: Any, y: Any = None) -> np.ndarray:
        """Fit on ``X`` and flag its own rows, each scored by the members that did not see it:
        ``nrad detect``'s ``flagged`` column (-1 flagged, +1 not)."""
        self.fit(X)
        # The training rows' p-values were computed by fit: flag them without a second pass.
        return np.where(FlagRule.of(self.fdr).flags(self.training_p_values_), -1, 1)

    def anomaly_score(self, X: Any) -> np.ndarray:
        """Anomaly score per row, the rows read as new ones (higher = more anomalous)."""
        return self._scored(X)["anomaly_score"].to_numpy()

    def score_samples(self, X: Any) -> np.ndarray:
        """Minus :meth:`anomaly_score` (scikit-learn's sign: lower = more abnormal)."""
        return -self.anomaly_score(X)

    def decision_function(self, X: Any) -> np.ndarray:
        """``log10`` of each row's p-value over ``fdr``: scikit-learn's sign (lower = more abnormal).

        Negative for every row :meth:`predict` can flag (Benjamini-Hochberg flags
        only rows whose p-value is below ``fdr``); whether it does depends on the
        other rows given, which a row's own value does not.
        """
        p = np.maximum(self.p_values(X), 1e-300)
        return np.log10(p) - np.log10(self.fdr)

    def p_values(self, X: Any) -> np.ndarray:
        """How often a normal row scores at least this high (see docs/usage.md)."""
        return self._scored(X)["p_value"].to_numpy()

    def predict(self, X: Any) -> np.ndarray:
        """-1 for rows flagged by Benjamini-Hochberg at ``fdr`` among the rows given, +1 for the others."""
        frame = self._check(X)
        scored, _ = self.model_.score(frame, fdr=self.fdr, explain="none")
        return np.where(scored["flagged"].to_numpy(dtype=bool), -1, 1)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a missing cell: the model reads that it is missing
        return tags

    def _scored(self, X: Any) -> pd.DataFrame:
        frame = self._check(X)  # before model_ is read: an unfitted detector says so
        return self.model_.score_rows(frame)[0]

    def _check(self, X: Any) -> pd.DataFrame:
        check_is_fitted(self, "model_")
        # An array takes the fitted column names; a DataFrame's columns are checked by the model.
        return _frame(X, self.feature_names_in_)


def _frame(X: Any, names: np.ndarray | None = None) -> pd.DataFrame:
    """A DataFrame of ``X``: itself (pandas or polars), or a 2-D array with columns ``x0, x1, ...``.

    Arrays go through scikit-learn's ``check_array`` (its messages for 1-D, sparse, empty or
    infinite input); NaN is a missing cell, which the model reads.
    """
    if isinstance(X, pd.DataFrame) or hasattr(X, "to_pandas"):  # pandas or polars
        return as_pandas(X)
    array = check_array(X, dtype=None, ensure_all_finite="allow-nan")
    if array.dtype == object:  # strings are categories; anything else is a mistake to name
        cell_types = (str, int, float, np.generic, type(None))
        for j in range(array.shape[1]):
            odd = next((v for v in array[:, j] if not isinstance(v, cell_types)), None)
            if odd is not None:
                raise TypeError(
                    f"argument must be a string or a number: column {j} holds a {type(odd).__name__}"
                )
    columns = list(names) if names is not None else [f"x{j}" for j in range(array.shape[1])]
    if len(columns) != array.shape[1]:
        raise ValueError(f"X has {array.shape[1]} columns, the detector was fitted on {len(columns)}")
    return pd.DataFrame(array, columns=columns)
