"""Scores in, decisions out: conformal p-values, Benjamini-Hochberg flags, thresholds.

Conformal p-values (Bates, Candes, Lei, Romano & Sesia, Ann. Statist. 2023,
"Testing for outliers with conformal p-values"): with anomaly scores
``c_1..c_n`` of calibration rows that the detector never trained on,

    p(x) = (1 + #{i : c_i >= s(x)}) / (n + 1).

If the calibration rows and a new normal row are exchangeable, ``p(x)`` is a
valid p-value (``P(p <= t) <= t``), and Benjamini-Hochberg on the p-values of
many new rows controls the false discovery rate at level ``q`` (the p-values
are positively dependent through the shared calibration set, PRDS, which BH
tolerates).  In transductive use (fit and score the same unlabeled rows) the
calibration rows may include anomalies and were scored by a model fitted on
their neighbours: the guarantee is then only approximate.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import false_discovery_control

from nrad.errors import NradError


def conformal_p_values(calibration_scores: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Conformal p-values of ``scores`` (higher = more anomalous) against calibration scores."""
    n = np.asarray(calibration_scores).size
    if n == 0:
        raise NradError("no calibration scores: fit with calibration rows to get p-values")
    return (1.0 + conformal_ranks(calibration_scores, scores)) / (n + 1.0)


def check_level(value: float, name: str) -> float:
    """A level such as fdr or contamination must lie in (0, 1)."""
    if not (isinstance(value, int | float) and 0.0 < float(value) < 1.0):
        raise NradError(f"{name} must be a number between 0 and 1 (exclusive), got {value!r}")
    return float(value)


def benjamini_hochberg(p_values: np.ndarray, fdr: float) -> np.ndarray:
    """Boolean flags: rows rejected by Benjamini-Hochberg at level ``fdr``."""
    fdr = check_level(fdr, "fdr")
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return np.zeros(0, dtype=bool)
    return false_discovery_control(p, method="bh") <= fdr


def top_fraction(scores: np.ndarray, contamination: float) -> np.ndarray:
    """Boolean flags: the ``contamination`` share of rows with the highest scores."""
    contamination = check_level(contamination, "contamination")
    scores = np.asarray(scores, dtype=np.float64)
    k = int(np.ceil(contamination * scores.size))
    flags = np.zeros(scores.size, dtype=bool)
    if k:
        flags[np.argsort(-scores, kind="stable")[:k]] = True
    return flags


def conformal_ranks(calibration_scores: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``#{i : c_i >= s}`` per score, so that ``p = (1 + rank) / (n + 1)`` (integers 0..n)."""
    # Via the sorted calibration scores: one binary search per row, no per-row loop.
    calib = np.sort(np.asarray(calibration_scores, dtype=np.float64))
    return calib.size - np.searchsorted(calib, np.asarray(scores, dtype=np.float64), side="left")


def bh_cutoff_from_counts(rank_counts: np.ndarray, fdr: float) -> float:
    """Benjamini-Hochberg cutoff from a histogram of conformal p-values.

    Conformal p-values take only the ``n + 1`` values ``(1 + j) / (n + 1)``, so
    ``rank_counts[j]`` (how many rows have rank ``j``) is all BH needs: the
    decision for ``m`` rows costs O(n) memory, however large ``m`` is (this is
    what lets ``nrad score`` stream).  A row is flagged iff its p-value is
    ``<=`` the returned cutoff (``-inf``: none).  The arithmetic mirrors
    :func:`scipy.stats.false_discovery_control` (adjusted ``p_(k) * (m / k)``,
    then a running minimum from the largest p down), so the flags equal
    :func:`benjamini_hochberg` on the full vector bit for bit.
    """
    fdr = check_level(fdr, "fdr")
    counts = np.asarray(rank_counts, dtype=np.int64)
    m = int(counts.sum())
    if m == 0:
        return -np.inf
    p_values = (1.0 + np.arange(counts.size)) / counts.size
    present = counts > 0
    p, k = p_values[present], np.cumsum(counts[present])
    adjusted = np.minimum.accumulate((p * (m / k))[::-1])[::-1]
    passed = np.minimum(adjusted, 1.0) <= fdr
    return float(p[passed].max()) if passed.any() else -np.inf
