"""NRDE for PyOD users: a ``pyod.models.base.BaseDetector``, PyOD's meaning of every name.

``from nrad.pyod import NRDE`` behaves like any PyOD detector: ``fit(X)``
sets ``decision_scores_`` (higher = more anomalous), ``threshold_`` (the
training scores' ``1 - contamination`` quantile) and ``labels_`` (0 inlier,
1 outlier); ``decision_function``, ``predict`` (0/1) and ``predict_proba``
follow PyOD, so it works in PyOD's combination and model-selection tools.

:class:`nrad.NRDE` is the scikit-learn estimator instead: ``predict`` gives
+1 / -1 and ``decision_function`` is negative for outliers, as for
scikit-learn's ``IsolationForest``.  Read PyOD-style, its scores are
backwards; this class is the same detector with PyOD's signs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nrad.extras import require

BaseDetector = require("pyod.models.base", "pyod").BaseDetector


class NRDE(BaseDetector):
    """Noise-robust density estimation (see :class:`nrad.NRDE` for the parameters).

    Parameters
    ----------
    contamination : float, default=0.1
        Share of outliers assumed in the training rows; sets ``threshold_``.
    n_transforms, hidden_units, penalty_weight, n_pure_sources, max_epochs, random_state, verbose
        Passed to :class:`nrad.NRDE` unchanged.

    Attributes
    ----------
    decision_scores_ : ndarray of shape (n_samples,)
        Anomaly scores of the training rows (negative log pure-data density; higher = more anomalous).
    threshold_ : float
        Scores above it are outliers.
    labels_ : ndarray of shape (n_samples,)
        0 (inlier) / 1 (outlier) for the training rows.
    detector_ : nrad.NRDE
        The fitted scikit-learn estimator.
    """

    def __init__(
        self,
        contamination: float = 0.1,
        n_transforms: int = 6,
        hidden_units: int = 64,
        penalty_weight: float = 1.0,
        n_pure_sources: Any = None,
        max_epochs: int | None = None,
        random_state: Any = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(contamination=contamination)
        self.n_transforms = n_transforms
        self.hidden_units = hidden_units
        self.penalty_weight = penalty_weight
        self.n_pure_sources = n_pure_sources
        self.max_epochs = max_epochs
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X: Any, y: Any = None) -> NRDE:
        """Fit on ``X`` (``y`` is ignored, as in PyOD's unsupervised detectors)."""
        from sklearn.utils import check_array

        from nrad.nrde import NRDE as Estimator

        X = check_array(X)
        self._set_n_classes(y)
        self.detector_ = Estimator(
            n_transforms=self.n_transforms,
            hidden_units=self.hidden_units,
            penalty_weight=self.penalty_weight,
            n_pure_sources=self.n_pure_sources,
            max_epochs=self.max_epochs,
            random_state=self.random_state,
            verbose=self.verbose,
        ).fit(X)
        self.decision_scores_ = self.detector_.anomaly_score(X)
        self._process_decision_scores()
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Anomaly scores of ``X``: higher = more anomalous (PyOD's convention)."""
        from sklearn.utils import check_array
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, ["decision_scores_", "threshold_", "labels_"])
        return self.detector_.anomaly_score(check_array(X))
