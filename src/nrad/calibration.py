"""Scores in, p-values out: calibration scores with a fitted tail, and the combination of a row's tests.

A p-value says how often a *normal* row scores at least this high.  It is
read off calibration scores: scores of normal rows the detector was not
fitted on (out-of-fold training rows), or, when the table is scored by a
model fitted on itself, the table's own out-of-fold scores.

* **Body** (below the tail threshold ``u``, the calibration scores' top
  ``TAIL_SHARE``): the conformal p-value ``(1 + #{c_i >= s}) / (n + 1)``
  (Bates et al., Ann. Statist. 2023).  Exact for exchangeable rows, but
  never below ``1 / (n + 1)``: Benjamini-Hochberg over ``n`` rows needs
  ``p <= q k / n``, which no rank can give a table scored against itself.
* **Tail**: peaks over threshold (Pickands 1975; SPOT, Siffer et al., KDD
  2017).  Excesses over a high threshold follow a generalized Pareto
  distribution ``S(x) = (1 + xi x / sigma)^(-1/xi)``, so
  ``p(s) = (k / (n + 1)) S(s - u)`` with ``k`` calibration scores above ``u``.
  The scores calibrated here are log-densities, robust z-scores of
  residuals, or sums of scores each scaled by its spread, whose tails are
  exponential or lighter (docs/method.md, section 9): the shape is averaged
  over ``[0, MAX_SHAPE]``, each shape with its maximum-likelihood scale and
  weighted by its likelihood (a flat prior), and each shape's scale
  integrated out (its posterior makes the tail heavier by about one over
  the number of excesses: :func:`_predictive`); a residual's tail takes that
  posterior's mean shape instead (``mean_shape``).  Heavier shapes are not
  admitted: a shape of 0.5 allowed for safety makes a row far beyond every
  normal one look merely unusual (p ~ 1e-5 where an exponential tail says
  1e-12).
* **Counts kept as a floor.**  Calibration scores believed normal (not
  trimmed) that lie at or above a score bound its p-value from below: with
  ``c`` of them, at least the 95% lower Poisson bound of ``c`` over
  ``n + 1``, so that a tail fitted mostly to the bulk does not call a value
  that a cluster of normal rows shares a one-in-a-million event.
* **Trimmed, not censored.**  The top calibration scores may be the
  anomalies being looked for (a table fitted on itself holds them).  They
  are left out of the tail fit, whose likelihood is the excesses' density
  *truncated* at the largest one kept (it conditions on being below it, so
  the scores left out carry no weight, not even their count).  How many
  are left out: at least ``TRIM_SHARE`` of the rows, more when the sorted
  scores have a gap an exponential tail would not make (:func:`gap_trim`):
  a cluster of anomalies standing apart is trimmed whole instead of being
  fitted as tail.

Benjamini-Hochberg on these p-values (:mod:`nrad.flags`) bounds the false
discovery rate at ``q`` as far as the tail model holds; ``benchmarks/fdr.py``
measures it on tables with no anomalies (docs/method.md, section 9).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from nrad.errors import NradError

#: Share of the calibration scores above the tail threshold ...
TAIL_SHARE = 0.1
#: ... but at least this many of them (all but one when there are fewer) ...
MIN_TAIL = 30
#: ... and at most this many.
MAX_TAIL = 2000
#: Scores that may hold the anomalies being scored (a table scored against itself) are fitted
#: without their top shares (least, most): the least always, up to the most above a gap (a cluster
#: of bad rows; see gap_trim).  At least MIN_FITTED excesses stay.  A row score: its top 2%, the
#: most anomalies a user's table is expected to hold spread along the tail; a robust distance:
#: also a cluster of up to a quarter of the rows standing apart.
SCORE_TRIM = (0.02, 0.02)
#: The heaviest shape the density score's (nats) in-sample tail may take on a table of 1,000 rows
#: or more where a cluster of rows stands apart in the robust distance: a heavier one lets the
#: table put that cluster back into its tail (a broken batch of 20 rows in 3,000 went unflagged at
#: 0.25).  Elsewhere it takes up to MAX_SHAPE: the density that flows give rows they did not see
#: is heavier-tailed on small tables and on tables with heavy-tailed columns (research/notes.md,
#: sections 26, 33 and 36).
DENSITY_MAX_SHAPE = 0.1
DISTANCE_TRIM = (0.0, 0.25)
MIN_FITTED = 10
#: A gap in the top scores trims what lies above it when an exponential tail makes one so wide
#: at most this rarely.
GAP_LEVEL = 0.01
#: Fewer calibration scores than this: conformal p-values only.
MIN_CALIBRATION = 10
#: The largest tail shape a fit may take (0: exponential), profiled on clean tables
#: (docs/method.md, section 9): a cell's residuals are heavier-tailed than a row's log-density.
MAX_SHAPE = 0.25
#: The shapes a fit chooses among, 0.025 apart.
SHAPE_STEP = 0.025
#: The fitted tail is lifted until no fitted score lies beyond it at this level (TailModel._lift),
#: the top LIFT_SKIP of the rows excepted.
LIFT_LEVEL = 0.05
LIFT_SKIP = 0.01
#: In-sample fits put a left-out score back unless the tail fitted without it calls it an outlier
#: at this level over the table (Benjamini-Hochberg at 10% over the table's rows, see
#: :func:`outliers_among`) ...
OUTLIER_LEVEL = 0.1
#: ... in at most this many rounds.
INWARD_STEPS = 5
#: Chi-square(1) 95% quantile: the likelihood ratio a shape above 0 must reach where light is preferred.
LIGHT_TAIL_TEST = 3.84
#: The conformal body is kept at this many knots at most (exact counts at each).
MAX_KNOTS = 2048


@dataclass(frozen=True)
class TailModel:
    """Calibration scores with a generalized Pareto tail averaged over its shape (module docstring)."""

    #: Sorted calibration scores (or some of them), and how many calibration scores are >= each.
    knots: np.ndarray
    at_least: np.ndarray
    #: Number of calibration scores.
    n: int
    #: Tail threshold ``u`` and the number ``k`` of calibration scores above it (0: no tail).
    threshold: float
    n_tail: int
    #: The shapes averaged over, each one's scale and posterior weight.
    shapes: np.ndarray
    scales: np.ndarray
    weights: np.ndarray
    #: Calibration scores left out of the tail fit (the top ones).
    n_trimmed: int = 0
    #: The factor (>= 1) by which the fitted tail is raised to cover the scores it was fitted on.
    lift: float = 1.0
    #: Calibration scores believed normal (fitted without trimming): a score's p-value is never
    #: below what the count of calibration scores at or above it allows (see :meth:`log_p_values`).
    floor: bool = False
    #: In sample, the largest score of the cells believed normal there (a value many rows share,
    #: ``keep_at`` of :meth:`fit`): scores up to it keep the count floor too (None: none).
    floor_to: float | None = None

    @classmethod
    def fit(
        cls,
        scores: np.ndarray,
        trim: tuple[float, float] | None = None,
        max_shape: float = MAX_SHAPE,
        min_scale: float = 0.0,
        mean_shape: bool = False,
        keep_at: float | None = None,
    ) -> TailModel:
        """Fit to calibration ``scores``.

        ``trim``: ``(least, most)`` shares of the scores to leave out of the fit
        at the top, the least always and up to the most above a gap
        (:func:`gap_trim`); for scores that may hold the anomalies being
        scored (a table scored against itself).  None: every score is fitted
        (calibration rows believed normal).  ``max_shape``: the heaviest tail allowed.
        ``min_scale``: the smallest scale allowed (the tail of a statistic that a model makes
        exponential with scale 1 may be heavier than the model's, never lighter).  ``mean_shape``:
        the tail takes the shapes' posterior mean (with its scale) instead of averaging the
        p-values over the shapes (see :func:`shape_posterior`).  ``keep_at``: with ``trim``, no
        score at or below it is left out (the scores of a value many rows share).
        """
        calib = _sorted_scores(scores)
        n = calib.size
        none = cls._ranks(calib)
        knots, at_least = none.knots, none.at_least
        usual = int(min(max(round(TAIL_SHARE * n), min(MIN_TAIL, n - 1)), MAX_TAIL))
        k = _above_atom(calib, usual)
        if n < MIN_CALIBRATION or k < 1 or (k < usual and k < MIN_FITTED):
            return none
        trimmed = 0 if trim is None else _trimmed(calib, k, trim, max_shape)
        if keep_at is not None:
            trimmed = min(trimmed, int(np.count_nonzero(calib > keep_at)))
        # Inward: a left-out score that the tail fitted without it does not call an outlier (BH at
        # OUTLIER_LEVEL over the table) is put back, and the tail refitted.  What is left out at the
        # end stands beyond any tail the other scores allow; a heavy tail's natural extremes are
        # fitted, not extrapolated over.  Who is an outlier is judged by the most likely shape;
        # the p-values then come from the shapes averaged (see shape_posterior).  Judged by the
        # shapes averaged, relations' residuals lost their outliers (docs/method.md, section 9).
        for _ in range(INWARD_STEPS if trimmed else 0):
            tail = cls._fit_below(calib, knots, at_least, k, trimmed, max_shape, min_scale, average=False)
            if tail is None:
                break
            # p falls as the score rises: the outliers are the top ones.
            outliers = outliers_among(tail.p_values(calib[n - trimmed :]), n)
            if outliers >= trimmed:
                break
            trimmed = outliers
        tail = cls._fit_below(calib, knots, at_least, k, trimmed, max_shape, min_scale, mean_shape=mean_shape)
        if tail is None:
            return none
        if trim is None:
            return replace(tail, floor=True)
        return tail if keep_at is None else replace(tail, floor_to=float(keep_at))

    @classmethod
    def ranks_only(cls, scores: np.ndarray) -> TailModel:
        """Conformal p-values of ``scores`` and no tail (a few scores, too few to fit one to)."""
        return cls._ranks(_sorted_scores(scores))

    @classmethod
    def _ranks(cls, calib: np.ndarray) -> TailModel:
        """Conformal p-values of the sorted finite scores ``calib``, no tail."""
        knots, at_least = _knots(calib)
        return cls(knots, at_least, calib.size, np.inf, 0, np.zeros(0), np.zeros(0), np.zeros(0))

    @classmethod
    def _fit_below(
        cls,
        calib: np.ndarray,
        knots: np.ndarray,
        at_least: np.ndarray,
        k: int,
        trimmed: int,
        max_shape: float,
        min_scale: float = 0.0,
        average: bool = True,
        mean_shape: bool = False,
    ) -> TailModel | None:
        """The tail fitted to the sorted ``calib`` without its top ``trimmed`` scores (None: no fit);
        ``average``: over the shapes (else the most likely one); ``mean_shape``: the shapes'
        posterior mean alone."""
        n = calib.size
        # The tail keeps its usual size below the scores left out.
        if trimmed:
            k = int(
                min(trimmed + max(round(TAIL_SHARE * (n - trimmed)), min(MIN_TAIL, n - trimmed - 1)), n - 1)
            )
        above = _above_atom(calib, k)
        if above < k and above - trimmed < MIN_FITTED:
            return None  # too few scores above an atom to fit a tail to: ranks only
        k = above
        threshold = float(calib[n - k - 1])
        top = n - trimmed
        # Truncated where the trimmed scores begin: the fit conditions on lying below the smallest
        # of them and knows nothing else of them, not even their count (a censored fit would count
        # them, so that anomalies among them would still make the tail heavier).
        cut = float(calib[top] - threshold) if trimmed else None
        fitted = shape_posterior(
            calib[n - k : top] - threshold, cut, max_shape=max_shape, average=average, mean=mean_shape
        )
        if fitted is None:
            return None
        shapes, scales, weights = fitted
        fitted = (shapes, np.maximum(scales, min_scale), weights)
        tail = cls(knots, at_least, n, threshold, k, *fitted, n_trimmed=trimmed)
        lift = tail._lift(calib, calib[n - k : top])
        return cls(knots, at_least, n, threshold, k, *fitted, n_trimmed=trimmed, lift=lift)

    def _lift(self, calib: np.ndarray, fitted: np.ndarray) -> float:
        """The factor (>= 1) by which the fitted tail must be raised to cover the fitted scores.

        A tail the model makes lighter than the scores themselves (a column
        bounded below piles its residuals up near the bound, which no
        exponential follows; a mixture's second component) must not call its
        own calibration scores improbable.  At each fitted score ``x`` with
        ``c`` calibration scores at or above it, the model's expected count
        ``(n + 1) p(x)`` must reach the one-sided 95% lower confidence bound of
        a Poisson mean given ``c`` (``chi2(0.05, 2c) / 2``); the largest
        shortfall sets the lift, kept beyond the last fitted score too.
        """
        n = calib.size
        # The trimmed scores above are not the model's to cover (they may be the anomalies), nor
        # are the top LIFT_SKIP of the rows: a few wild scores among them would lift the whole tail.
        fitted = fitted[: max(len(fitted) - int(LIFT_SKIP * n), 1)]
        count = n - np.searchsorted(calib, fitted, side="left") - self.n_trimmed
        needed = _poisson_lower_bounds(_table_size(int(count.max())))[count] / (n + 1.0)
        model = self._tail(fitted)
        return float(max(1.0, np.max(needed / np.maximum(model, 1e-300))))

    def _tail(self, s: np.ndarray) -> np.ndarray:
        """The fitted generalized Pareto tail's p-value of scores above the threshold (unlifted)."""
        return np.exp(self._log_tail(s))

    def _log_tail(self, s: np.ndarray) -> np.ndarray:
        """:meth:`_tail` in logs (a score far out keeps its order where the p-value underflows)."""
        excess = np.maximum(np.asarray(s, dtype=np.float64) - self.threshold, 0.0)
        fits = zip(self.shapes, self.scales, self.weights, strict=True)
        parts = np.array([np.log(w) + gpd_log_survival(excess, xi, sigma) for xi, sigma, w in fits if w > 0])
        # log-sum-exp over the shapes, by hand: scipy's logsumexp checks its arguments at a cost
        # larger than the sum's, and a wide table reads thousands of tails.
        top = parts.max(axis=0)
        top = np.where(np.isfinite(top), top, 0.0)
        with np.errstate(divide="ignore"):
            return np.log(self.n_tail / (self.n + 1.0)) + top + np.log(np.exp(parts - top).sum(axis=0))

    def left_out(self, scores: np.ndarray) -> np.ndarray:
        """(n,) True where a score (of the scores this tail was fitted to) is among the top
        ``n_trimmed`` its fit left out; NaN never is."""
        scores = np.asarray(scores, dtype=np.float64)
        finite = np.isfinite(scores)
        if not self.n_trimmed or finite.sum() < self.n_trimmed:
            return np.zeros(scores.shape, dtype=bool)
        cut = np.sort(scores[finite])[-self.n_trimmed]
        return finite & (scores >= cut)

    def p_values(self, scores: np.ndarray, count_at: np.ndarray | None = None) -> np.ndarray:
        """p-value of each score (higher score = more anomalous); ``count_at``: see
        :meth:`log_p_values`."""
        return np.exp(self.log_p_values(scores, count_at))

    def log_p_values(self, scores: np.ndarray, count_at: np.ndarray | None = None) -> np.ndarray:
        """Natural log of :meth:`p_values` (finite where the p-value itself underflows to 0).

        ``count_at``: where the count floor reads the calibration scores at or above each score
        (at most the score; None: at the score).  A value on a lattice ties the calibration values
        of its lattice cell, which were spread over the cell (:func:`nrad.numeric.dequantize`):
        read at the cell's inner edge, they count."""
        s = np.asarray(scores, dtype=np.float64)
        at = s if count_at is None else np.fmin(np.asarray(count_at, dtype=np.float64), s)
        # #{c >= s}: exact when every calibration score is a knot; else the count at the largest
        # knot at or below s, which is at least the true count (a p-value no smaller than exact).
        if len(self.knots) == self.n:
            count = self.n - np.searchsorted(self.knots, s, side="left").astype(np.float64)
        else:
            below = np.searchsorted(self.knots, s, side="right") - 1
            count = np.where(below >= 0, self.at_least[np.maximum(below, 0)], float(self.n))
        out = np.asarray(np.log((1.0 + count) / (self.n + 1.0)), dtype=np.float64)
        above = s > self.threshold
        if self.n_tail and above.any():
            # Only scores past the threshold are read off the tail (a mixture over shapes, the
            # costly part of scoring many rows); the rest keep their counts.
            out[above] = np.minimum(np.log(self.lift) + self._log_tail(s[above]), 0.0)
            # In sample, only the scores of cells believed normal there (a value many rows share).
            to = np.inf if self.floor else (-np.inf if self.floor_to is None else self.floor_to)
            floored = above & (at <= to)
            if floored.any():
                # Calibration rows believed normal that score at least as high are evidence the
                # tail must not overrule: ``c`` of them make the score's chance at least the 95%
                # lower confidence bound of a Poisson mean given ``c``, over ``n + 1`` (the lift's
                # bound, read at each score; the lift itself leaves the top LIFT_SKIP of the rows
                # out, and a cluster of legitimate far values there, 18 stays of three weeks in
                # 3,000 bookings, was called a one-in-a-million event).  Beyond every calibration
                # score, ``c = 0``, the tail alone speaks.
                # Counted at the first knot at or above the score (the knots are the top scores
                # themselves where tails are read): 0 beyond the largest calibration score.
                first = np.searchsorted(self.knots, at[floored], side="left")
                inside = first < len(self.knots)
                c = np.where(inside, self.at_least[np.where(inside, first, 0)], 0.0).astype(np.int64)
                bound = _poisson_lower_bounds(_table_size(int(c.max())))[c] / (self.n + 1.0)
                with np.errstate(divide="ignore"):
                    out[floored] = np.maximum(out[floored], np.log(bound))
        return out

    def to_state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON-able numbers, arrays) for the model file."""
        meta = {"n": self.n, "threshold": self.threshold, "n_tail": self.n_tail, "n_trimmed": self.n_trimmed,
                "lift": self.lift, "floor": self.floor}  # fmt: skip
        return meta, {f"{prefix}{name}": np.asarray(getattr(self, name)) for name in _ARRAYS}

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str) -> TailModel:
        """Rebuild from :meth:`to_state`; refuse arrays that cannot be a tail model."""
        got = [np.asarray(arrays[f"{prefix}{name}"], dtype=np.float64).reshape(-1) for name in _ARRAYS]
        knots, at_least, shapes, scales, weights = got
        if len(knots) == 0 or len(knots) != len(at_least) or np.any(np.diff(knots) < 0):
            raise ValueError("tail model knots must be sorted, one count each")
        if not len(shapes) == len(scales) == len(weights) or np.any(scales <= 0) or np.any(shapes < 0):
            raise ValueError("tail model needs a positive scale and a shape >= 0 per weight")
        return cls(knots, at_least, int(meta["n"]), float(meta["threshold"]), int(meta["n_tail"]),
                   shapes, scales, weights, int(meta.get("n_trimmed", 0)), float(meta.get("lift", 1.0)),
                   bool(meta.get("floor", False)))  # fmt: skip


_ARRAYS = ("knots", "at_least", "shapes", "scales", "weights")


def _trimmed(calib: np.ndarray, k: int, trim: tuple[float, float], max_shape: float) -> int:
    """How many of the top sorted scores ``calib`` a fit leaves out: the share ``trim[0]`` always,
    more (up to ``trim[1]``) above a gap (:func:`gap_trim`), and never so many that fewer than
    ``MIN_FITTED`` excesses stay in a tail of ``k``."""
    n = calib.size
    least, most = trim
    gap = 0
    if most > least:
        # The gap is looked for among twice as many top scores as may be trimmed (a quarter of the
        # rows: a cluster of up to a fifth).
        scan = int(min(n - 1, max(k, np.ceil(2 * most * n))))
        gap = gap_trim(_as_exponential(calib, scan, max_shape, int(most * n)), scan, most)
    room = n - 1 - MIN_FITTED - 1
    return int(max(min(max(gap, int(np.ceil(least * n))), room), 0))


def _above_atom(calib: np.ndarray, k: int) -> int:
    """The tail size ``k`` of the sorted scores ``calib``, less the scores tied with its threshold.

    A generalized Pareto tail is of scores strictly above its threshold.
    When the threshold falls on an atom (a column that is 0 in 97% of its
    rows, a count's most common large value), the excesses would hold a run
    of zeros, and a tail fitted to them would be as short as its zeros are
    many: the column's few other values, ordinary ones, would be called
    impossible.  The threshold stays at the atom and the tail is of the
    scores above it, however few (no tail at all when too few).
    """
    n = calib.size
    if k < 1 or k >= n or calib[n - k] != calib[n - k - 1]:
        return k
    return int(n - np.searchsorted(calib, calib[n - k - 1], side="right"))


def _sorted_scores(scores: np.ndarray) -> np.ndarray:
    """The finite calibration scores, sorted; refused when there are none."""
    calib = np.sort(np.asarray(scores, dtype=np.float64))
    calib = calib[np.isfinite(calib)]
    if calib.size == 0:
        raise NradError("no calibration scores: fit with calibration rows to get p-values")
    return calib


def _knots(calib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted scores, or ``MAX_KNOTS`` of them spread over the ranks (the top half of the knots
    the top scores themselves), with ``#{c >= knot}`` at each."""
    n = calib.size
    if n <= MAX_KNOTS:
        index = np.arange(n)
    else:
        top = MAX_KNOTS // 2
        spread = np.linspace(0, n - top - 1, MAX_KNOTS - top).round().astype(np.int64)
        # Sorted, below the top ones, repeated where the ranks are fewer than the knots: the
        # repeats dropped by comparing neighbours (np.unique's sort costs more, a thousand tails over).
        spread = spread[np.r_[True, spread[1:] != spread[:-1]]]
        index = np.r_[spread, np.arange(n - top, n)]
    knots = calib[index]
    return knots, (n - np.searchsorted(calib, knots, side="left")).astype(np.float64)


def _table_size(largest: int) -> int:
    """The power of two above ``largest``: the size of the table of bounds read for counts up to it."""
    return 1 << max(int(largest).bit_length(), 6)


@lru_cache(maxsize=32)
def _poisson_lower_bounds(size: int) -> np.ndarray:
    """For each count ``c`` in ``[0, size)``: the one-sided ``1 - LIFT_LEVEL`` lower confidence bound
    of a Poisson mean given ``c`` events, ``chi2.ppf(LIFT_LEVEL, 2 c) / 2 = gammaincinv(c,
    LIFT_LEVEL)`` (scipy's own chi-square quantile).  A table, because every tail fit reads it at
    hundreds of counts and a wide table fits thousands of tails; read-only."""
    from scipy.special import gammaincinv

    bounds = gammaincinv(np.arange(size, dtype=np.float64), LIFT_LEVEL)
    bounds[0] = 0.0  # no events: a mean of 0 is not ruled out (gammaincinv is undefined there)
    bounds.flags.writeable = False
    return bounds


def _as_exponential(calib: np.ndarray, k: int, max_shape: float, most: int) -> np.ndarray:
    """Sorted scores with the top ``k + 1`` put on the scale where their tail is exponential,
    ``-log S(x - u)``: a heavy tail's wide top spacings are its nature, not a gap, and a gap test
    (:func:`gap_trim`) must not see them as one.  The tail is fitted to the top ``k`` with the top
    ``most`` (as many as the gap test may trim) counted but not measured (right-censored), and
    with shape 0 unless the likelihood ratio finds a heavier one: the anomalies the gap test looks
    for must not make the tail heavy enough to hide them."""
    n = calib.size
    start = n - k - 1
    threshold = float(calib[start - 1]) if start > 0 else float(calib[0])
    censored = min(most, k // 2)
    excess = np.maximum(calib[start:] - threshold, 0.0)
    level = float(excess[len(excess) - censored - 1]) if censored else None
    fitted = shape_posterior(
        excess[: len(excess) - censored],
        censored=censored,
        level=level,
        max_shape=max_shape,
        prefer_light=True,
    )
    if fitted is None:
        return calib
    (shape,), (scale,), _ = fitted
    out = np.zeros_like(calib)
    out[start:] = excess / scale if shape == 0 else np.log1p(shape * excess / scale) / shape
    return out


def outliers_among(p_values: np.ndarray, n: int) -> int:
    """How many of the left-out scores (p-values of the top scores, any order) are outliers over
    ``n`` rows: Benjamini-Hochberg's discoveries at ``OUTLIER_LEVEL``.

    On a table with no anomalies BH makes any discovery with chance at most
    its level, as Bonferroni does (its false discovery rate is then its
    family-wise error rate), so clean tails are put back as often.  Where
    several scores stand out together (a cluster of bad rows), Bonferroni
    called only the farthest ones outliers: the rest were put back, made
    the refitted tail heavier, and the next round put back all of them.
    """
    p = np.sort(np.asarray(p_values, dtype=np.float64))
    passed = np.flatnonzero(p * n <= OUTLIER_LEVEL * np.arange(1, p.size + 1))
    return int(passed[-1]) + 1 if passed.size else 0


def gap_trim(calib: np.ndarray, k: int, max_trim_share: float) -> int:
    """How many of the top sorted scores ``calib`` lie above a gap, among the top ``k`` (0: none).

    Under an exponential tail of scale ``sigma`` the normalized spacings of
    the top order statistics, ``D_i = i (x_(i) - x_(i+1))`` (``x_(1)`` the
    largest), are independent exponentials of mean ``sigma`` (Renyi's
    representation), so ``D_i`` over the mean of the ``m`` spacings below it
    exceeds ``r`` with chance ``(1 + r / m)^-m`` (an F distribution).
    Scanning ``i`` from the most that may be trimmed (half of the ``k``,
    ``max_trim_share`` of the rows) down to 1, the first spacing improbable
    at ``GAP_LEVEL`` (Bonferroni over the positions scanned) shows a gap at
    or above it; the largest spacing from there up is the gap, and the
    scores above it are trimmed: a cluster of anomalies standing apart from
    the normal rows (a broken batch) is left out whole.  Anomalies spread
    along the tail leave no such gap.

    The scores below a gap are scanned again, their ranks counted from it,
    for a cluster no larger than the one above it, at the first scan's
    level: a second cluster (ten rows far out, four more between them and
    the rest) stands apart from the rest by a gap narrower than the first's,
    which the widest spacing does not find.  The first scan reaches deep
    into the tail, where the scores' body bends away from the fitted
    exponential; a second scan as deep would read that bend as gaps on
    tables with no anomalies.
    """
    n = calib.size
    most = min(int(max_trim_share * n), k // 2)
    level = GAP_LEVEL / max(most, 1)
    trimmed = _first_gap(calib, k, most, level)
    last = trimmed
    while last and trimmed < most:
        last = _first_gap(calib[: n - trimmed], k - trimmed, min(most - trimmed, last), level)
        trimmed += last
    return trimmed


def _first_gap(calib: np.ndarray, k: int, most: int, level: float) -> int:
    """How many of the top sorted scores ``calib`` lie above the widest gap of :func:`gap_trim`'s
    scan over the top ``k``, from the ``most``-th score up, each spacing tested at ``level``
    (0: no gap)."""
    most = min(most, k // 2)
    if most < 1:
        return 0
    top = calib[::-1][: k + 1]
    if np.unique(top).size < 0.9 * top.size:
        # Tied scores (a count, a few levels) are no exponential tail: their jumps are not gaps.
        return 0
    spacings = np.arange(1, k + 1) * (top[:-1] - top[1:])  # spacings[i - 1] = D_i
    after = np.cumsum(spacings[::-1])[::-1]  # after[i] = D_{i+1} + ... + D_k
    for i in range(most, 0, -1):
        m = k - i
        if spacings[i - 1] <= 0:
            continue
        ratio = spacings[i - 1] / (after[i] / m) if after[i] > 0 else np.inf
        if -m * np.log1p(ratio / m) < np.log(level):
            # Just below a cluster the normal rows' own spacings are scaled by the cluster's ranks
            # too and look wide: the widest spacing from here up is the gap.
            return int(np.argmax(spacings[:i])) + 1
    return 0


def gpd_survival(x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """``P(X > x)`` of a generalized Pareto distribution with shape >= 0 (exponential at 0)."""
    return np.exp(gpd_log_survival(x, shape, scale))


def gpd_log_survival(x: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """``log P(X > x)`` of :func:`gpd_survival`."""
    x = np.asarray(x, dtype=np.float64)
    if shape == 0:
        return -x / scale
    return -np.log1p(shape * x / scale) / shape


def shape_posterior(
    excess: np.ndarray,
    cut: float | None = None,
    censored: int = 0,
    level: float | None = None,
    max_shape: float = MAX_SHAPE,
    prefer_light: bool = False,
    average: bool = False,
    mean: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Shapes in ``[0, max_shape]`` (steps of ``SHAPE_STEP``), each with its most likely scale, and
    their weights: with ``average``, every shape weighted by its profile likelihood (a flat prior);
    else the most likely shape alone, weight 1.  ``prefer_light``: shape 0 unless a likelihood
    ratio test rejects it (a few excesses say little about the shape, and a gap test must not let
    a heavy shape fitted to them hide the gap).  ``mean`` (with ``average``): the grid shape
    nearest the posterior mean, weight 1.

    ``censored`` more excesses are known only to lie at or above ``level``;
    with a ``cut`` everything (fitted and censored) is conditioned on lying
    below it, so what lies above it (the trimmed scores) weighs nothing.
    None when the excesses have no spread to fit.
    """
    excess = np.sort(np.asarray(excess, dtype=np.float64))
    if excess.size < 2 or excess[-1] <= 0:
        return None
    shapes = np.arange(0.0, max_shape + SHAPE_STEP / 2, SHAPE_STEP)
    scales, logliks, information = _profile_scales(excess, shapes, cut, censored, level)
    best = int(np.argmax(logliks))
    if prefer_light and 2.0 * (logliks[best] - logliks[0]) < LIGHT_TAIL_TEST:
        best = 0  # a heavier shape only when the likelihood ratio test finds one (5% level)
    if average and not prefer_light:
        # A posterior over the shapes (flat prior, each with its most likely scale): a far p-value
        # depends on the shape, which a few hundred excesses pin down poorly, so it is averaged
        # over the shapes the data allow rather than read off the most likely one.
        weights = np.exp(logliks - logliks.max())
        weights /= weights.sum()
        # Each shape's scale is uncertain too; integrated out, it makes the tail heavier by about
        # 1 / (the information in the log scale): exactly so at shape 0 (see _predictive).
        predictive = _predictive(shapes, information)
        if mean:
            # Averaged p-values are set far out by the heaviest shapes the posterior still allows:
            # averaged, a Gaussian residual 10 sd out gets about 1e-8 where the truth is 1e-23 (the
            # posterior cannot go below shape 0, and a flat prior keeps weight on 0.3-0.5).  The
            # posterior mean follows a heavy tail where there is one (docs/method.md, section 9).
            best = int(np.argmin(np.abs(shapes - float(np.sum(weights * shapes)))))
            return predictive[best : best + 1].copy(), scales[best : best + 1].copy(), np.ones(1)
        return predictive, scales, weights
    return shapes[best : best + 1].copy(), scales[best : best + 1].copy(), np.ones(1)


def _predictive(shapes: np.ndarray, information: np.ndarray) -> np.ndarray:
    """The shape of each fitted tail once its scale's uncertainty is integrated out.

    At shape 0 with ``m`` excesses and a scale-free prior on the scale, the
    rate ``1 / sigma`` is a posteriori Gamma(m, m * sigma_hat), and the chance
    that a new excess exceeds ``x`` is ``(1 + x / (m sigma_hat))^(-m)``: a
    generalized Pareto tail of shape ``1 / m`` and the fitted scale (Lomax).
    Plugging the fitted scale in instead gives ``exp(-x / sigma_hat)``, which
    at 30 excesses and ``x`` 15 scales out is 3e-7 where the predictive is
    5e-6.  ``m`` is read as the information in the log scale (the
    likelihood's curvature there: ``m`` untruncated at shape 0, less when the
    fit is truncated), and the same ``1 / m`` is added at every shape (there
    it is conservative: a heavy tail's predictive keeps its shape and only
    grows by a constant).  It matters for tails fitted to a few dozen
    excesses (a table of 150 to 500 rows); at 300 excesses it adds 0.003.
    """
    return shapes + 1.0 / np.maximum(information, 1.0)


#: Newton steps on the log scale stop below this size (the scale is then known to 1e-10 of itself).
PROFILE_TOL = 1e-10
#: ... and the search gives up after this many steps (at the edge of its bracket).
PROFILE_STEPS = 100
#: The log scale is searched within this far below and above the log of the excesses' mean.
PROFILE_BRACKET = (8.0, 3.0)


def _profile_scales(
    excess: np.ndarray, shapes: np.ndarray, cut: float | None, censored: int, level: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each shape's most likely scale, its log-likelihood and the information in the log scale
    there (the likelihood's curvature; see :func:`shape_posterior`).

    Written by hand: scipy's ``minimize_scalar`` once per shape costs a few
    milliseconds of Python per tail, and a wide table fits thousands of tails
    (six per column, each refitted as its left-out scores are put back).  Here
    all shapes take Newton steps on the log scale at once, the likelihood's
    first two derivatives in closed form, inside a bracket kept by the sign of
    the slope (a step leaving it bisects instead): three to five steps.
    """
    m, total = excess.size, float(excess.sum())
    heavy = shapes > 0
    inverse = np.where(heavy, 1.0 / np.where(heavy, shapes, 1.0), 0.0)
    grid = _Likelihood(excess, m, total, shapes, heavy, inverse, cut, censored, level)
    low = np.full(shapes.size, np.log(total / m) - PROFILE_BRACKET[0])
    high = np.full(shapes.size, np.log(total / m) + PROFILE_BRACKET[1])
    log_scale = np.full(shapes.size, np.log(total / m))
    for _ in range(PROFILE_STEPS):
        slope, curvature = grid.derivatives(log_scale)
        step = np.where(curvature > 0, -slope / np.where(curvature > 0, curvature, 1.0), np.nan)
        done = np.abs(step) < PROFILE_TOL
        low, high = np.where(slope < 0, log_scale, low), np.where(slope > 0, log_scale, high)
        new = log_scale + step
        outside = ~np.isfinite(new) | (new < low) | (new > high)
        log_scale = np.where(done, log_scale, np.where(outside, (low + high) / 2.0, new))
        if done.all():
            break  # every scale stayed where the last derivatives were taken: they are the answer's
    else:
        _, curvature = grid.derivatives(log_scale)
    return np.exp(log_scale), -grid.negative(log_scale), curvature


@dataclass
class _Likelihood:
    """The generalized Pareto negative log-likelihood of ``excess`` for each of ``shapes``, as a
    function of the log scale, and its first two derivatives: the excesses' density, truncated
    at ``cut`` when given, and ``censored`` more excesses known only to lie between ``level`` and
    the cut (see :func:`shape_posterior`)."""

    excess: np.ndarray
    m: int
    total: float
    shapes: np.ndarray
    heavy: np.ndarray
    inverse: np.ndarray
    cut: float | None
    censored: int
    level: float | None

    def negative(self, log_scale: np.ndarray) -> np.ndarray:
        """The negative log-likelihood at each shape's ``log_scale``."""
        sigma = np.exp(log_scale)
        t = (self.shapes / sigma)[:, None] * self.excess[None, :]
        value = np.where(self.heavy, self.m * log_scale + (self.inverse + 1.0) * np.log1p(t).sum(axis=1),
                         self.m * log_scale + self.total / sigma)  # fmt: skip
        s_cut = self._survival(self.cut, sigma)[0] if self.cut is not None else np.zeros_like(sigma)
        if self.censored:
            assert self.level is not None
            s_level = self._survival(self.level, sigma)[0]
            value = value - self.censored * np.log(np.maximum(s_level - s_cut, 1e-300))
        if self.cut is not None:
            value = value + (self.m + self.censored) * np.log(np.maximum(1.0 - s_cut, 1e-300))
        return value

    def derivatives(self, log_scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first two derivatives of :meth:`negative` in the log scale (all the Newton steps
        need; the value's logarithms are left out)."""
        sigma = np.exp(log_scale)
        t = (self.shapes / sigma)[:, None] * self.excess[None, :]
        ratio = t / (1.0 + t)
        factor = self.inverse + 1.0
        slope = np.where(self.heavy, self.m - factor * ratio.sum(axis=1), self.m - self.total / sigma)
        curvature = np.where(self.heavy, factor * (ratio / (1.0 + t)).sum(axis=1), self.total / sigma)
        s_cut = ds_cut = dds_cut = np.zeros_like(sigma)
        if self.cut is not None:
            s_cut, ds_cut, dds_cut = self._survival(self.cut, sigma)
        if self.censored:
            assert self.level is not None
            s_level, ds_level, dds_level = self._survival(self.level, sigma)
            between = np.maximum(s_level - s_cut, 1e-300)
            d_between, dd_between = ds_level - ds_cut, dds_level - dds_cut
            slope = slope - self.censored * d_between / between
            curvature = curvature - self.censored * (dd_between * between - d_between**2) / between**2
        if self.cut is not None:
            below = np.maximum(1.0 - s_cut, 1e-300)
            rows = self.m + self.censored
            slope = slope - rows * ds_cut / below
            curvature = curvature - rows * (dds_cut * below + ds_cut**2) / below**2
        return slope, curvature

    def _survival(self, x: float, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``S(x)`` per shape and its first two derivatives in the log scale."""
        w = np.where(self.heavy, self.shapes * x / sigma, 0.0)
        log_s = np.where(self.heavy, -np.log1p(w) * self.inverse, -x / sigma)
        d1 = np.where(self.heavy, w / (1.0 + w) * self.inverse, x / sigma)
        d2 = np.where(self.heavy, -w / (1.0 + w) ** 2 * self.inverse, -x / sigma)
        s = np.exp(log_s)
        return s, s * d1, s * (d2 + d1**2)


def combine(log_p_values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted Bonferroni: ``min(1, min_j p_j / w_j)`` per row, and which ``j`` gave it.

    ``log_p_values``: (n, m) natural logs of the p-values, one column per test
    of a row (NaN: not tested), so that tests whose p-values underflow still
    compare; ``weights``: (m,), summing to at most 1.  Under the null every
    ``p_j`` is uniform or larger, so ``P(min_j p_j / w_j <= t) <= sum_j w_j t
    <= t`` whatever the tests' dependence: the combined p-value is valid
    without modelling how the row's channels relate.
    """
    with np.errstate(divide="ignore"):
        log_w = np.log(np.asarray(weights, dtype=np.float64))
    logs = np.where(np.isnan(log_p_values), np.inf, log_p_values) - log_w
    if not logs.shape[1]:
        return np.ones(len(logs)), np.zeros(len(logs), dtype=np.int64)
    which = np.argmin(logs, axis=1)
    best = logs[np.arange(len(logs)), which]
    return np.exp(np.minimum(best, 0.0)), which


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
