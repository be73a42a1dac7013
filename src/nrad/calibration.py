"""Scores in, decisions out: p-values with a fitted tail, Benjamini-Hochberg flags, thresholds.

A p-value says how often a *normal* row scores at least this high.  It is
read off calibration scores: scores of normal rows the detector was not
fitted on (held-out training rows), or, when the table is scored by a model
fitted on itself, the table's own scores.

* **Body** (a score below the calibration set's top ``TAIL_SHARE``): the
  conformal p-value ``(1 + #{c_i >= s}) / (n + 1)`` (Bates et al., Ann.
  Statist. 2023).  Exact for exchangeable rows, but it can never go below
  ``1 / (n + 1)``, so with 600 calibration rows Benjamini-Hochberg over
  3,000 rows could not flag fewer than ~100 of them.
* **Tail** (above the threshold ``u``, the 90th percentile): peaks over
  threshold (Pickands 1975; SPOT, Siffer et al., KDD 2017).  Excesses over
  a high threshold follow a generalized Pareto distribution
  ``S(x) = (1 + xi x / sigma)^(-1/xi)``, so
  ``p(s) = (k / (n + 1)) S(s - u)`` with ``k`` calibration scores above ``u``.
  The shape ``xi`` is what decides a p-value far out, and the calibration
  scores pin it down poorly (a standard error near 0.1 from 300 excesses;
  0.2 instead of 0 moves a far p-value 100-fold).  So it is not fixed or
  estimated but averaged: over a grid of shapes in ``[0, 0.5]``, each with
  its maximum-likelihood scale and weighted by its likelihood (a flat prior;
  docs/method.md, section "Flags", derives it).  Shapes below 0 would put
  an end point on the tail beyond which every score had ``p = 0``.  The top
  ``CENSOR_SHARE`` of the calibration scores enter the fit only as "at least
  this large" (right-censored): a few anomalies among them (a table scored
  by a model fitted on itself holds its own anomalies) move the fitted tail
  by their count, not by how extreme they are, so an anomaly cannot
  calibrate itself away.

Benjamini-Hochberg on these p-values bounds the false discovery rate at
``q`` as far as the tail model holds; ``benchmarks/fdr.py`` measures it on
tables with no anomalies (docs/method.md, section "Flags").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nrad.errors import NradError

#: Share of the calibration scores above the tail threshold ...
TAIL_SHARE = 0.1
#: ... but at least this many of them (all but one when there are fewer) ...
MIN_TAIL = 30
#: ... and at most this many.
MAX_TAIL = 2000
#: Share of the calibration scores (top ones) that enter the tail fit censored.
CENSOR_SHARE = 0.02
#: Fewer calibration scores than this: conformal p-values only.
MIN_CALIBRATION = 10
#: Self-calibrated flagging refits the tail without the flagged rows at most this many times.
MAX_RECALIBRATIONS = 10
#: The tail shapes averaged over (flat prior): exponential (0) to heavy (0.5).
SHAPES = np.linspace(0.0, 0.5, 11)


@dataclass(frozen=True)
class TailModel:
    """Calibration scores with a generalized Pareto tail averaged over its shape (module docstring)."""

    #: Sorted calibration scores.
    scores: np.ndarray
    #: Tail threshold ``u`` and the number ``k`` of calibration scores above it (0: no tail).
    threshold: float
    n_tail: int
    #: The shapes averaged over, each one's scale and posterior weight.
    shapes: np.ndarray
    scales: np.ndarray
    weights: np.ndarray

    @classmethod
    def fit(cls, scores: np.ndarray) -> TailModel:
        calib = np.sort(np.asarray(scores, dtype=np.float64))
        n = calib.size
        if n == 0:
            raise NradError("no calibration scores: fit with calibration rows to get p-values")
        k = int(min(max(round(TAIL_SHARE * n), min(MIN_TAIL, n - 1)), MAX_TAIL))
        none = cls(calib, np.inf, 0, np.zeros(0), np.zeros(0), np.zeros(0))
        if n < MIN_CALIBRATION or k < 1:
            return none
        threshold = float(calib[n - k - 1])
        n_censored = min(int(np.ceil(CENSOR_SHARE * n)), k // 2)
        fitted = shape_posterior(calib[n - k :] - threshold, n_censored)
        if fitted is None:
            return none
        return cls(calib, threshold, k, *fitted)

    def p_values(self, scores: np.ndarray) -> np.ndarray:
        """p-value of each score (higher score = more anomalous)."""
        s = np.asarray(scores, dtype=np.float64)
        n = self.scores.size
        body = (1.0 + conformal_ranks(self.scores, s)) / (n + 1.0)
        if self.n_tail == 0:
            return body
        excess = np.maximum(s - self.threshold, 0.0)
        parts = zip(self.shapes, self.scales, self.weights, strict=True)
        survival = sum(w * gpd_survival(excess, xi, sigma) for xi, sigma, w in parts)
        return np.where(s > self.threshold, self.n_tail / (n + 1.0) * survival, body)


def self_calibrated_flags(
    scores: np.ndarray, fdr: float, p_values: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """p-values and BH flags of rows that are their own calibration set, calibrated on the rows not flagged.

    When a table is scored by a model fitted on itself, its own (cross-fitted)
    scores calibrate its p-values, and its anomalies are among them: counted as
    tail mass of normal rows, 20 anomalies in 3,000 rows made the fitted tail
    heavier (mean shape 0.30 instead of 0.09) and every p-value several times
    too large.  As in SPOT (Siffer et al., KDD 2017), where a value that
    raises an alarm does not update the tail, the flagged rows leave the
    calibration and the flags are recomputed until they no longer change (at
    most ``MAX_RECALIBRATIONS`` times).  A table with no anomalies is
    unaffected unless the first pass flags something, so the chance of
    flagging anything in it, its false discovery rate, is that of one pass.
    ``p_values``: the first pass's, against all the scores, when the caller
    has them already.
    """
    scores = np.asarray(scores, dtype=np.float64)
    p = TailModel.fit(scores).p_values(scores) if p_values is None else np.asarray(p_values, dtype=np.float64)
    flags = benjamini_hochberg(p, fdr)
    for _ in range(MAX_RECALIBRATIONS):
        if not flags.any() or flags.all():
            break
        p = TailModel.fit(scores[~flags]).p_values(scores)
        again = benjamini_hochberg(p, fdr)
        if np.array_equal(again, flags):
            break
        flags = again
    return p, flags


def gpd_survival(x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """``P(X > x)`` of a generalized Pareto distribution with shape >= 0 (exponential at 0)."""
    if shape == 0:
        return np.exp(-x / scale)
    return np.exp(-np.log1p(shape * x / scale) / shape)


def shape_posterior(excess: np.ndarray, n_censored: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Shapes on ``SHAPES``, each with its maximum-likelihood scale and posterior weight (flat prior).

    The top ``n_censored`` excesses are right-censored at the largest
    uncensored one ``c``: their likelihood is ``S(c)``.  The weight of a
    shape is its profile likelihood (the scale at its maximum), normalized:
    a Laplace-type approximation of the posterior under flat priors.  None
    when the excesses have no spread to fit.
    """
    from scipy.optimize import minimize_scalar

    excess = np.sort(np.asarray(excess, dtype=np.float64))
    seen = excess[: excess.size - n_censored]
    if seen.size < 2 or seen[-1] <= 0:
        return None
    level = float(seen[-1])
    mean = float(seen.mean()) + n_censored * level / seen.size
    scales, logliks = [], []
    for xi in SHAPES:

        def nll(log_scale: float, xi: float = float(xi)) -> float:
            sigma = np.exp(log_scale)
            if xi == 0:
                return seen.size * log_scale + (seen.sum() + n_censored * level) / sigma
            return float(seen.size * log_scale + (1.0 / xi + 1.0) * np.log1p(xi * seen / sigma).sum()
                         + n_censored / xi * np.log1p(xi * level / sigma))  # fmt: skip

        found = minimize_scalar(nll, bounds=(np.log(mean) - 8.0, np.log(mean) + 3.0), method="bounded")
        scales.append(float(np.exp(found.x)))
        logliks.append(-float(found.fun))
    weights = np.exp(np.asarray(logliks) - max(logliks))
    return SHAPES.copy(), np.asarray(scales), weights / weights.sum()


def conformal_p_values(calibration_scores: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Plain conformal p-values ``(1 + #{c_i >= s}) / (n + 1)`` (no tail model)."""
    n = np.asarray(calibration_scores).size
    if n == 0:
        raise NradError("no calibration scores: fit with calibration rows to get p-values")
    return (1.0 + conformal_ranks(np.sort(calibration_scores), scores)) / (n + 1.0)


def conformal_ranks(sorted_calibration: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``#{i : c_i >= s}`` per score, from the sorted calibration scores (one binary search per row)."""
    calib = np.asarray(sorted_calibration, dtype=np.float64)
    return calib.size - np.searchsorted(calib, np.asarray(scores, dtype=np.float64), side="left")


def check_level(value: float, name: str) -> float:
    """A level such as fdr or contamination must lie in (0, 1)."""
    if not (isinstance(value, int | float) and 0.0 < float(value) < 1.0):
        raise NradError(f"{name} must be a number between 0 and 1 (exclusive), got {value!r}")
    return float(value)


def benjamini_hochberg(p_values: np.ndarray, fdr: float) -> np.ndarray:
    """Boolean flags: rows rejected by Benjamini-Hochberg at level ``fdr``."""
    p = np.asarray(p_values, dtype=np.float64)
    return p <= bh_cutoff(p[p <= check_level(fdr, "fdr")], p.size, fdr)


def bh_cutoff(candidates: np.ndarray, m: int, fdr: float) -> float:
    """Benjamini-Hochberg cutoff over ``m`` p-values, from those of them that are ``<= fdr``.

    BH flags the ``k`` smallest p-values for the largest ``k`` with
    ``p_(k) <= fdr * k / m``; as ``k <= m``, no p-value above ``fdr`` can
    qualify, so the ones at most ``fdr`` decide alone.  That is what lets a
    streamed or distributed run keep only those (a share ``fdr`` of the normal
    rows) instead of every p-value.  A row is flagged iff its p-value is
    ``<=`` the returned cutoff (``-inf``: none).
    """
    fdr = check_level(fdr, "fdr")
    p = np.sort(np.asarray(candidates, dtype=np.float64))
    if p.size == 0 or m == 0:
        return -np.inf
    passed = p <= fdr * np.arange(1, p.size + 1) / m
    return float(p[np.flatnonzero(passed)[-1]]) if passed.any() else -np.inf


def top_fraction(scores: np.ndarray, contamination: float) -> np.ndarray:
    """Boolean flags: the ``contamination`` share of rows with the highest scores."""
    contamination = check_level(contamination, "contamination")
    scores = np.asarray(scores, dtype=np.float64)
    k = int(np.ceil(contamination * scores.size))
    flags = np.zeros(scores.size, dtype=bool)
    if k:
        flags[np.argsort(-scores, kind="stable")[:k]] = True
    return flags
