"""The methods a benchmark can run, by name.  Add your own with :func:`register`.

Every method is built fresh per run from ``(seed, n_features)``, wrapped in
the protocol's scaler (fitted on the training rows only), and scored with a
method that returns higher = more anomalous.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.neighbors import NearestNeighbors
from sklearn.pipeline import make_pipeline

from nrad.errors import NradError
from nrad.extras import require
from nrad.preprocess import ProtocolScaler

#: Epoch cap for PyOD's deep models (their defaults run 100 epochs of batch 32).
DEEP_EPOCHS = 20


@dataclass(frozen=True)
class Method:
    """A named detector: how to build it and which method scores (higher = anomalous)."""

    name: str
    build: Callable[[int, int], Any]
    score: str = "decision_function"
    note: str = ""


REGISTRY: dict[str, Method] = {}


def register(
    name: str, build: Callable[[int, int], Any], score: str = "decision_function", note: str = ""
) -> None:
    """Add a method: ``build(seed, n_features)`` returns an unfitted detector with
    ``fit(X, y=None)`` and a ``score`` method giving higher = more anomalous."""
    REGISTRY[name] = Method(name, build, score, note)


def get_method(name: str) -> Method:
    if name not in REGISTRY:
        raise NradError(f"unknown method {name!r}; known: {', '.join(REGISTRY)}")
    return REGISTRY[name]


def fit_and_score(
    method: Method, seed: int, X_train: np.ndarray, X_test: np.ndarray
) -> tuple[np.ndarray, float, float]:
    """Fit ``method`` on scaled training rows; return (scores on ``X_test``, fit s, score s)."""
    model = make_pipeline(ProtocolScaler(), method.build(seed, X_train.shape[1]))
    start = time.perf_counter()
    model.fit(X_train)
    fitted = time.perf_counter()
    scores = getattr(model[-1], method.score)(model[0].transform(X_test))
    return np.asarray(scores, dtype=np.float64), fitted - start, time.perf_counter() - fitted


class DTENonParametric:
    """DTE-NP (Livernoche et al., ICLR 2024), the non-parametric diffusion-time estimator.

    For a row ``x`` and a training row ``x_i``, the posterior of the diffusion
    variance that would turn ``x_i`` into ``x`` is inverse-gamma with shape
    ``d/2 - 1`` and scale ``||x - x_i||^2 / 2``; its mean is
    ``||x - x_i||^2 / (d - 4)``.  The score averages it over the ``k``
    nearest training rows (denominator floored at 1 for ``d <= 4``).
    """

    def __init__(self, n_neighbors: int = 5) -> None:
        self.n_neighbors = n_neighbors

    def fit(self, X: np.ndarray, y: Any = None) -> DTENonParametric:
        self.nn_ = NearestNeighbors(n_neighbors=min(self.n_neighbors, len(X))).fit(X)
        self.dim_ = X.shape[1]
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        dist, _ = self.nn_.kneighbors(X)
        return (dist**2).mean(axis=1) / max(self.dim_ - 4, 1)


def _pyod(cls_path: str, **kwargs: Any) -> Callable[[int, int], Any]:
    def build(seed: int, n_features: int) -> Any:
        module, cls = cls_path.rsplit(".", 1)
        klass = getattr(require(module, "bench"), cls)
        params = dict(kwargs)
        if "random_state" in klass.__init__.__code__.co_varnames:
            params["random_state"] = seed
        if "n_features" in klass.__init__.__code__.co_varnames:
            params["n_features"] = n_features
        return klass(**params)

    return build


def _nrde(**kwargs: Any) -> Callable[[int, int], Any]:
    def build(seed: int, n_features: int) -> Any:
        from nrad.nrde import NRDE

        return NRDE(random_state=seed, **kwargs)

    return build


register("nrde", _nrde(), score="anomaly_score", note="NRDE defaults")


def _table_detector(seed: int, detector: str, source_split: bool = False) -> Any:
    """Exactly what ``nrad detect`` runs, on a numeric array (the columns become a table)."""
    from nrad.estimator import TableDetector

    class TableOnArrays(TableDetector):
        """Rows that are the fitted ones (the ``transductive`` setting: ``nrad detect`` without
        ``--train``) get their out-of-fold scores, as the command line scores a table fitted on
        itself; other rows are new rows."""

        def fit(self, X: np.ndarray, y: Any = None) -> TableOnArrays:
            self.X_ = np.asarray(X, dtype=np.float64)
            return super().fit(self.X_)

        def transductive_score(self, X: np.ndarray) -> np.ndarray:
            X = np.asarray(X, dtype=np.float64)
            if X.shape == self.X_.shape and np.array_equal(X, self.X_, equal_nan=True):
                return self.decision_scores_
            return self.anomaly_score(X)

    return TableOnArrays(detector=detector, random_state=seed, source_split=source_split)


register(
    "default",
    lambda seed, d: _table_detector(seed, "fused"),
    score="transductive_score",
    note="what nrad detect runs: the table model's density (category model, the numbers' conditional "
    "model, cross-fitted NRDE flows) fused with cross-fitted k-NN, isolation and robust-distance scores",
)
register(
    "table-nrde",
    lambda seed, d: _table_detector(seed, "nrde"),
    score="transductive_score",
    note="nrad detect --detector nrde: the table model's density alone",
)
register(
    "default-split",
    lambda seed, d: _table_detector(seed, "fused", source_split=True),
    score="transductive_score",
    note="nrad detect --source-split: the default with NRDE's pure / noise split of the flows' sources",
)
register(
    "vanilla-flow",
    _nrde(penalty_weight=0.0, n_pure_sources="all"),
    score="anomaly_score",
    note="the same flow, no IMA penalty, no source split",
)
for _name, _path in {
    "iforest": "pyod.models.iforest.IForest",
    "knn": "pyod.models.knn.KNN",
    "lof": "pyod.models.lof.LOF",
    "ocsvm": "pyod.models.ocsvm.OCSVM",
    "ecod": "pyod.models.ecod.ECOD",
    "copod": "pyod.models.copod.COPOD",
    "hbos": "pyod.models.hbos.HBOS",
    "pca": "pyod.models.pca.PCA",
    "gmm": "pyod.models.gmm.GMM",
    "kde": "pyod.models.kde.KDE",
    "loda": "pyod.models.loda.LODA",
    "cblof": "pyod.models.cblof.CBLOF",
    "mcd": "pyod.models.mcd.MCD",
}.items():
    register(_name, _pyod(_path), note="PyOD defaults")
register(
    "deepsvdd",
    _pyod("pyod.models.deep_svdd.DeepSVDD", epochs=DEEP_EPOCHS, verbose=0),
    note=f"PyOD defaults, epochs capped at {DEEP_EPOCHS}",
)
register(
    "autoencoder",
    _pyod("pyod.models.auto_encoder.AutoEncoder", verbose=0),
    note="PyOD defaults (10 epochs)",
)
register("dte-np", lambda seed, d: DTENonParametric(), note="k = 5, as in the paper")


class ScoreFusion:
    """Several detectors' scores, each standardized by its training rows, summed.

    Members differ in what they call unusual (NRDE: low density under one
    global flow; k-NN: far from the nearest rows; IForest: isolated by few
    random axis cuts), so their errors differ, which is what score fusion
    exploits (Aggarwal & Sathe, *Outlier Ensembles*, 2017).  Each member's
    score is put on a common scale without labels: minus the median, over
    the interquartile range, of its scores of the training rows (the median
    and IQR move little when a few of those rows are anomalies, as in the
    contaminated and transductive settings).  The fused score is the sum.
    """

    def __init__(self, members: tuple[str, ...], random_state: int = 0) -> None:
        self.members = members
        self.random_state = random_state

    def fit(self, X: np.ndarray, y: Any = None) -> ScoreFusion:
        X = np.asarray(X, dtype=np.float64)
        self.fitted_, self.center_, self.spread_ = [], [], []
        for name in self.members:
            method = get_method(name)
            model = method.build(self.random_state, X.shape[1]).fit(X)
            train = np.asarray(getattr(model, method.score)(X), dtype=np.float64)
            low, median, high = np.percentile(train, [25, 50, 75])
            self.fitted_.append((model, method.score))
            self.center_.append(median)
            # A member whose training scores do not spread (ties) counts on the scale of its sd.
            self.spread_.append(high - low if high > low else max(float(train.std()), 1e-12))
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        parts = zip(self.fitted_, self.center_, self.spread_, strict=True)
        return sum((np.asarray(getattr(m, s)(X), dtype=np.float64) - c) / w for (m, s), c, w in parts)


for _members in (("nrde", "knn", "iforest"), ("nrde", "knn")):
    register(
        "+".join(_members),
        lambda seed, d, members=_members: ScoreFusion(members, random_state=seed),
        note="sum of the members' scores, each minus its training rows' median, over their IQR",
    )


def _deep(cls_name: str) -> Callable[[int, int], Any]:
    def build(seed: int, n_features: int) -> Any:
        from nrad.bench import deep

        return getattr(deep, cls_name)(random_state=seed)

    return build


register("icl", _deep("ICL"), note="own implementation (bench/deep.py), 100 epochs or 3,000 steps")
register("neutral", _deep("NeuTraLAD"), note="own implementation (bench/deep.py), 100 epochs or 3,000 steps")
