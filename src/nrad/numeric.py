"""Numeric features -> what the flow sees: shape-normalized, read given their category, clipped softly.

Per numeric feature ``j`` (see docs/method.md, section "Tables"):

1. **Shape.**  ``y = YJ(x / s)``: a Yeo-Johnson power transform, fitted by
   maximum likelihood (scikit-learn's ``PowerTransformer``) on the training
   values divided by a small typical magnitude ``s``; it removes skew.  Its
   exponent is kept in ``[0, 2]``, where the transform is unbounded on both
   sides: an exponent below 0 (what log-normal amounts ask for) maps every
   large value below a ceiling, and a 30x amount would no longer look
   extreme.
2. **Context.**  If a categorical feature explains a significant share of
   ``y``'s variance (one-way ANOVA, p < 1e-3, adjusted eta^2 >= 0.05), the
   one explaining most is ``j``'s *parent*, and ``z = (y - mu_c) / sigma_c``
   with the level's location and scale, shrunk towards the pooled ones by empirical
   Bayes (a level seen a few times borrows from all rows).  So an amount is
   read against its merchant's usual amounts.  A row whose parent level is
   *other* (rare or never seen: a new merchant) is read against the next
   most informative feature, its *fallback* (the merchant's category), or
   against all rows if there is none.  Without a parent the residual is
   ``y`` standardized.  Location and scale are the level's median and
   median absolute deviation, so a few wild rows of a level (a table fitted
   on itself holds its anomalies) do not set what is typical for it.  Last,
   ``z = sinh(delta asinh(residual))``, the sinh-arcsinh transform (Jones &
   Pewsey, Biometrika 2009): a tail weight ``delta`` in ``[MIN_TAIL_WEIGHT,
   1]``, fitted by maximum likelihood to the residuals, pulls symmetric heavy
   tails (Student t with 2 degrees of freedom) in towards Gaussian ones,
   which a flow with a Gaussian base can follow; ``delta = 1`` leaves the
   residuals as they are.  (A feature read from fewer than ``FEW_VALUES``
   training values is read by its predictive tail first: :func:`_predictive`; a new
   row's value read against a level, by the spread a new value has given how many
   values set that level: :func:`_level_predictive`.)
   It is fitted to residuals, not to the column:
   the amounts of 50 merchants together look heavy-tailed, one merchant's
   amounts do not.  The score adds its log-Jacobian (:meth:`NumericModel.tail_terms`),
   so the transform helps the flow learn without pulling far values in.
3. **Soft clip.**  Beyond ``b_j`` (1.25 times the 99.5th percentile of the
   training ``|z|``, at least ``MIN_CLIP`` = 8) ``z`` is replaced by ``b_j + asinh(|z| - b_j)``:
   far values are compressed (a typo of 1e6 lands a few units past the
   training range instead of thousands of sd away, where a flow's density,
   and every number built on it, means nothing), the flow still sees every
   training row, and the score adds the compression's log-Jacobian,
   ``log sqrt(1 + (|z| - b_j)^2)``, so that further out is still more
   anomalous (the score stays a density of ``z``).

Missing cells stay NaN here: training fills them with a random training
value of the feature (hot-deck), scoring with the row's best value (see
:mod:`nrad.table`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from sklearn.preprocessing import PowerTransformer

#: A parent category must explain at least this share of variance (adjusted eta^2) ...
MIN_ETA2 = 0.05
#: ... and its ANOVA F-test must reject "no effect" at this level.
PARENT_P_VALUE = 1e-3
#: Pseudo-rows of the pooled sd that each level's sd is shrunk with.
SD_PRIOR_ROWS = 10.0
#: A level whose values pile up at one value, or two neighbouring ones (a geriatric ward's ages
#: floored at 70, and the two birth years each of those ages gives), in at least this share of
#: its rows has a spike: its spread is read from its other values, as the column's own spike is
#: kept apart (``nrad.preprocess.SPIKE_SHARE``) ...
LEVEL_SPIKE_SHARE = 0.5
#: ... if the values next to the pile hold at most this share of the least of the pile's (a
#: point mass stands out from its neighbours; a small count's 1s and 2s do not).
LEVEL_PILE_RATIO = 0.25
#: The soft clip starts at CLIP_MARGIN times this quantile of the training |z| (a high
#: quantile, not the maximum, so that a few anomalies among the training rows are beyond it) ...
CLIP_QUANTILE = 0.995
CLIP_MARGIN = 1.25
#: ... but never closer than this many sd.
MIN_CLIP = 8.0
#: The typical magnitude a column is divided by is at least this share of its largest |value|.
MIN_RELATIVE_MAGNITUDE = 1e-12
#: A non-negative column whose 99th percentile is this many times its median gets the shape transform.
SKEW_RATIO = 4.0
#: Lattices with fewer levels (0/1 flags) are not dequantized (see :func:`lattice_spacing`).
LATTICE_MIN_LEVELS = 3
#: A column's values lie on a lattice when all but at most this share of them do (and at least one
#: may not): a mean imputed into one row of a column of scores (1.721 among 1, 2, 3 and 4) is an
#: error in one cell, not a sign that the column is continuous.  Read as continuous, its scores were
#: atoms the flows piled unbounded density on, and every row of a rare score was flagged.
OFF_LATTICE_SHARE = 0.001
#: The shape transform is fitted on the values between these quantiles.
CENTRAL = (0.01, 0.99)
#: Typical values (location, scale, quantiles) come from rows within this many robust sd.
BULK_SD = 8.0
#: ... of the column's median, or of their own level's in a level of at least this many rows.
LEVEL_BULK_ROWS = 10
#: Overflowing transforms are held at this size (a value of 1e300 must not become inf).
HUGE = 1e300
#: Smallest sinh-arcsinh tail weight (1: no change; 0.25 turns t_1 tails into near-Gaussian ones).
MIN_TAIL_WEIGHT = 0.25
#: The tail weight is fitted on the values between these quantiles that lie within BULK_SD robust
#: sd of the median or that many rows share (shared_values): a few wild values among the
#: training rows must not decide how heavy the tails are, nor more of them than the quantiles leave
#: out (40 amounts with a lost decimal point among 3,000, all on one side, set a tail weight of 0.33
#: that pulled them in to where the clean amounts lie, and no member saw them); but the values of a
#: count or a term that many rows hold (payment terms of 14 days where most are 0) are the column's,
#: however narrow the bulk its commonest value leaves.
TAIL_FIT = (0.01, 0.99)
#: A value that at least this many rows of its column hold is the column's, not as many errors
#: (shared_values); a category level of as many rows can be a segment (nrad.cells).
SHARED_MIN_ROWS = 10
#: Numeric features whose z correlate at least this much are repaired as a pair too (explanations).
RELATED = 0.5
#: Columns whose pair correlations are computed at once (a block times all columns in memory).
PAIR_BLOCK = 256
#: A feature with fewer training values than this (a zero-inflated column's values off its spike, a
#: column missing in most rows) is read by its predictive distribution (see :func:`_predictive`).
FEW_VALUES = 30
#: Quantiles of each feature's training z kept as its typical values
#: (candidates when filling a missing cell or asking what would be typical).
GRID = 16


@dataclass
class NumericModel:
    """Fitted per-feature shape, context and clip (see the module docstring)."""

    #: Per feature: magnitude ``s``, Yeo-Johnson exponent, soft-clip bound ``b``.
    magnitude: np.ndarray
    exponent: np.ndarray
    clip: np.ndarray
    #: Per feature: weight ``delta`` of the tail transform of its residuals.
    tail_weight: np.ndarray
    #: Per feature: index of the parent categorical feature, -1 for none.
    parent: np.ndarray
    #: Per feature: location and scale of ``y`` per parent code (one entry without a parent).
    location: list[np.ndarray]
    scale: list[np.ndarray]
    #: Per feature: the context of rows whose parent code is *other*: a second
    #: categorical feature (-1: all rows) with its location and scale per code.
    fallback: np.ndarray
    fallback_location: list[np.ndarray]
    fallback_scale: list[np.ndarray]
    #: (p, GRID) quantiles of each feature's training z.
    grid: np.ndarray
    #: Per feature: the lattice spacing of its training values (0: continuous); dequantized when training.
    discrete: np.ndarray
    #: (k, 2) pairs of features whose training z correlate by at least RELATED
    #: (explanations repair them together too).
    related: np.ndarray
    #: Per feature: how many training values it was read from (present, off its spike).
    n_values: np.ndarray
    #: Per feature: how many training values each parent code's (and fallback code's) spread was
    #: read from (None: a model file that did not keep them; new rows are then read as training
    #: rows are).
    level_rows: list[np.ndarray] | None = None
    fallback_rows: list[np.ndarray] | None = None

    @classmethod
    def fit(
        cls,
        numeric: np.ndarray,
        codes: np.ndarray,
        n_codes: list[int],
        rng: np.random.Generator,
        shared: np.ndarray | None = None,
    ) -> NumericModel:
        """Fit on training rows (``numeric`` NaN where missing); ``rng`` draws the dequantization.
        ``shared``: :func:`shared_values` of ``numeric``, when already computed."""
        p = numeric.shape[1]
        discrete = np.array([lattice_spacing(numeric[:, j]) for j in range(p)], dtype=np.float64)
        exact = numeric  # before dequantization: a level's spike is one value here
        shared = shared_values(exact) if shared is None else shared
        numeric = dequantize(numeric, discrete, rng)
        magnitude, exponent, tail_weight = np.ones(p), np.ones(p), np.ones(p)
        n_values = np.isfinite(numeric).sum(axis=0).astype(np.int64)
        contexts, rows, clip, grid = [], [], np.full(p, MIN_CLIP), np.zeros((p, GRID))
        zs = np.full(numeric.shape, np.nan)
        for j in range(p):
            seen = np.isfinite(numeric[:, j])
            x = numeric[seen, j]
            magnitude[j] = _magnitude(x)
            exponent[j] = _exponent(_central(x / magnitude[j], CENTRAL))
            y = yeo_johnson(x / magnitude[j], exponent[j])
            # Statistics from the bulk: a few wild values (a table fitted on
            # itself holds its anomalies) must not set what is typical.
            bulk = _bulk(y)
            if not bulk.all():
                bulk |= _level_bulk(y, codes[seen], n_codes, ~bulk)
            *context, level_rows, fallback_rows = _contexts(
                y[bulk], codes[seen][bulk], n_codes, exact[seen, j][bulk]
            )
            contexts.append(tuple(context))
            rows.append((level_rows, fallback_rows))
            residual = _predictive(_standardize_one(y, codes[seen], *contexts[-1]), int(n_values[j]))
            # The tail weight is a property of the residuals given the context:
            # amounts of 50 merchants look heavy-tailed together, not within one.
            tail_weight[j] = _tail_weight(_central(residual, TAIL_FIT, _bulk(residual) | shared[seen, j]))
            z = _sinh_arcsinh(residual, tail_weight[j])
            zs[seen, j] = z
            if len(z):
                clip[j] = max(MIN_CLIP, CLIP_MARGIN * float(np.quantile(np.abs(z), CLIP_QUANTILE)))
                grid[j] = np.quantile(z[bulk], (np.arange(GRID) + 0.5) / GRID)
        parent, location, scale, fallback, fallback_location, fallback_scale = (
            (list(part) for part in zip(*contexts, strict=True)) if p else ([], [], [], [], [], [])
        )
        as_int = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
        return cls(
            magnitude, exponent, clip, tail_weight, as_int(parent), location, scale,
            as_int(fallback), fallback_location, fallback_scale, grid, discrete, related_pairs(zs), n_values,
            [r for r, _ in rows], [f for _, f in rows],
        )  # fmt: skip

    @property
    def n_features(self) -> int:
        return len(self.magnitude)

    def shape(self, numeric: np.ndarray) -> np.ndarray:
        """Step 1 for every feature: ``y`` (NaN stays NaN)."""
        out = np.empty_like(numeric, dtype=np.float64)
        for j in range(self.n_features):
            out[:, j] = yeo_johnson(numeric[:, j] / self.magnitude[j], self.exponent[j])
        return out

    def unshape(self, j: int, y: np.ndarray) -> np.ndarray:
        """Inverse of step 1 for feature ``j``: values in the table's units (overflow: inf)."""
        return self.magnitude[j] * yeo_johnson_inverse(y, self.exponent[j])

    def standardize(self, y: np.ndarray, codes: np.ndarray, new_rows: bool = False) -> np.ndarray:
        """Step 2: ``z`` given each row's codes, its tails weighted (NaN stays NaN); ``new_rows``:
        see :meth:`residuals`."""
        r = self.residuals(y, codes, new_rows)
        z = np.empty_like(r)
        for j in range(self.n_features):
            with np.errstate(over="ignore"):
                z[:, j] = _sinh_arcsinh(r[:, j], self.tail_weight[j])
        return _finite(z)

    def residuals(self, y: np.ndarray, codes: np.ndarray, new_rows: bool = False) -> np.ndarray:
        """Step 2 before the tail weight: each value's robust distance from what is typical in its
        context, ``r = (y - mu_c) / sigma_c`` (NaN stays NaN).  Not compressed: a year 200 years
        off stays as far off as it is, which ``z`` (its tails pulled in) does not keep.

        ``new_rows``: the rows were not among the training rows, and a value read against a
        category level is scaled to the spread a new value has given the values that level's
        location and spread were read from (:func:`_level_predictive`)."""
        r = np.empty_like(y, dtype=np.float64)
        for j in range(self.n_features):
            r[:, j] = _predictive(_standardize_one(y[:, j], codes, *self._context(j)), int(self.n_values[j]))
            if new_rows and self.level_rows is not None and self.fallback_rows is not None:
                if self.parent[j] >= 0 and self.n_values[j] >= FEW_VALUES:
                    # How many training values the row's location and spread were read from.
                    rows = _per_row(
                        codes, self.parent[j], self.level_rows[j], self.fallback[j], self.fallback_rows[j]
                    )
                    r[:, j] = _level_predictive(r[:, j], rows)
        return _finite(r)

    def shared_in_context(self, numbers: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """(n, p) True where a cell's value (``numbers`` as the table holds them, NaN absent) is
        held by at least ``SHARED_MIN_ROWS`` rows of its context: of its parent level (or fallback
        level), of the column where it has none (:func:`shared_values`).

        A value is tested in its context, and what many rows of the column share may be rare
        there: every level of a job is held by hundreds of employees, and a level of 2 beside
        the title of a director by two; shared column-wide, those two were never left out of the
        in-context tail that should have found them."""
        out = shared_values(numbers)
        for j in np.flatnonzero(self.parent >= 0):
            # Each row's context as residuals read it (_per_row): its parent level, or its fallback
            # level for rows of the parent's "other", numbered apart.
            n_levels = len(self.location[j])
            key = _per_row(
                codes, int(self.parent[j]), np.arange(n_levels), int(self.fallback[j]),
                n_levels + np.arange(len(self.fallback_location[j])),
            )  # fmt: skip
            seen = np.isfinite(numbers[:, j])
            if not seen.any():
                continue
            pairs = np.column_stack([key[seen], numbers[seen, j]])
            _, inverse, counts = np.unique(pairs, axis=0, return_inverse=True, return_counts=True)
            out[seen, j] = counts[inverse.ravel()] >= SHARED_MIN_ROWS
        return out

    def context(self, j: int, codes: np.ndarray) -> tuple[int, int]:
        """(categorical feature, its code) that feature ``j`` of a row with ``codes`` is read against;
        (-1, 0) for all rows."""
        if self.parent[j] < 0:
            return -1, 0
        code = int(codes[self.parent[j]])
        if code != len(self.location[j]) - 2:
            return int(self.parent[j]), code
        if self.fallback[j] < 0:
            return -1, 0
        return int(self.fallback[j]), int(codes[self.fallback[j]])

    def _context(self, j: int) -> tuple[Any, ...]:
        return (self.parent[j], self.location[j], self.scale[j],
                self.fallback[j], self.fallback_location[j], self.fallback_scale[j])  # fmt: skip

    def tail_terms(self, z: np.ndarray) -> np.ndarray:
        """Each cell's added score for the tail weight: ``-log T'(r)`` of ``z = T(r)`` (0 where NaN).

        ``T(r) = sinh(delta asinh r)`` pulls a heavy tail in, which the flow
        needs; scored in ``z`` alone, a value far out in that tail would look
        near-typical (on a table fitted on itself whose anomalies are what
        makes the tail heavy, they all would).  With this term the score is a
        density of the residual ``r``, as the soft clip's term keeps it one of
        ``z``: ``log T'(r) = log delta + log cosh(delta a) - log cosh(a)`` with
        ``a = asinh r = asinh(z) / delta``.  The constant ``log delta`` is left
        out, so the term is 0 at the centre and grows like
        ``(1 - delta) log |r|``.
        """
        return _tail_terms(z, self.tail_weight)

    def column_tail_terms(self, j: int, z: np.ndarray) -> np.ndarray:
        """:meth:`tail_terms` of values ``z`` of feature ``j`` alone (candidate values, say)."""
        return _tail_terms(z, self.tail_weight[j])

    def soft_clip(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Step 3: compressed ``z`` and each cell's added score (NaN where ``z`` is NaN)."""
        excess = np.maximum(np.abs(z) - self.clip, 0.0)
        clipped = np.where(excess > 0, np.sign(z) * (self.clip + np.arcsinh(excess)), z)
        # log sqrt(1 + e^2), without squaring e (1e300 would overflow).
        with np.errstate(divide="ignore", invalid="ignore"):
            return clipped, 0.5 * np.logaddexp(0.0, 2.0 * np.log(excess))

    def to_original(self, j: int, z: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Values of feature ``j`` in the table's units for ``z``, in the context of a row's ``codes``."""
        return self.unshape(j, self.to_shaped(j, z, codes))

    def to_shaped(self, j: int, z: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """``y`` (step 1's output) of feature ``j`` for ``z``, in the context of a row's ``codes``."""
        feature, code = self.context(j, codes)
        if feature < 0:
            loc, sc = (self.location[j][0], self.scale[j][0]) if self.parent[j] < 0 else (
                self.fallback_location[j][0], self.fallback_scale[j][0])  # fmt: skip
        elif feature == self.parent[j]:
            loc, sc = self.location[j][code], self.scale[j][code]
        else:
            loc, sc = self.fallback_location[j][code], self.fallback_scale[j][code]
        residual = np.sinh(np.arcsinh(np.asarray(z, dtype=np.float64)) / self.tail_weight[j])
        return loc + sc * _predictive_inverse(residual, int(self.n_values[j]))

    # -- the model file ----------------------------------------------------

    def to_state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {
            f"{prefix}magnitude": self.magnitude,
            f"{prefix}exponent": self.exponent,
            f"{prefix}clip": self.clip,
            f"{prefix}tail_weight": self.tail_weight,
            f"{prefix}parent": self.parent.astype(np.int64),
            f"{prefix}fallback": self.fallback.astype(np.int64),
            f"{prefix}grid": self.grid,
            f"{prefix}discrete": self.discrete.astype(np.float64),
            f"{prefix}related": self.related.astype(np.int64).reshape(-1, 2),
            f"{prefix}n_values": self.n_values.astype(np.int64),
        }
        for j in range(self.n_features):
            arrays[f"{prefix}location.{j}"] = self.location[j]
            arrays[f"{prefix}scale.{j}"] = self.scale[j]
            arrays[f"{prefix}fallback_location.{j}"] = self.fallback_location[j]
            arrays[f"{prefix}fallback_scale.{j}"] = self.fallback_scale[j]
            if self.level_rows is not None and self.fallback_rows is not None:
                arrays[f"{prefix}level_rows.{j}"] = self.level_rows[j]
                arrays[f"{prefix}fallback_rows.{j}"] = self.fallback_rows[j]
        return {"n_features": self.n_features}, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str) -> NumericModel:
        p = int(meta["n_features"])
        got = cls(
            magnitude=np.asarray(arrays[f"{prefix}magnitude"], dtype=np.float64),
            exponent=np.asarray(arrays[f"{prefix}exponent"], dtype=np.float64),
            clip=np.asarray(arrays[f"{prefix}clip"], dtype=np.float64),
            tail_weight=np.asarray(arrays[f"{prefix}tail_weight"], dtype=np.float64),
            parent=np.asarray(arrays[f"{prefix}parent"], dtype=np.int64),
            location=[np.asarray(arrays[f"{prefix}location.{j}"], dtype=np.float64) for j in range(p)],
            scale=[np.asarray(arrays[f"{prefix}scale.{j}"], dtype=np.float64) for j in range(p)],
            fallback=np.asarray(arrays[f"{prefix}fallback"], dtype=np.int64),
            fallback_location=[
                np.asarray(arrays[f"{prefix}fallback_location.{j}"], dtype=np.float64) for j in range(p)
            ],
            fallback_scale=[
                np.asarray(arrays[f"{prefix}fallback_scale.{j}"], dtype=np.float64) for j in range(p)
            ],
            grid=np.asarray(arrays[f"{prefix}grid"], dtype=np.float64),
            discrete=np.asarray(arrays[f"{prefix}discrete"], dtype=np.float64),
            related=np.asarray(arrays[f"{prefix}related"], dtype=np.int64).reshape(-1, 2),
            n_values=np.asarray(arrays[f"{prefix}n_values"], dtype=np.int64).reshape(-1),
        )
        if p and f"{prefix}level_rows.0" in arrays:  # kept from format version 11 on
            got.level_rows, got.fallback_rows = (
                [np.asarray(arrays[f"{prefix}{name}.{j}"], dtype=np.float64) for j in range(p)]
                for name in ("level_rows", "fallback_rows")
            )
            for j in range(p):
                if got.level_rows[j].shape != got.location[j].shape or (
                    got.fallback_rows[j].shape != got.fallback_location[j].shape
                ):
                    raise ValueError(f"numeric model feature {j}: one count per level expected")
        names = ("magnitude", "exponent", "clip", "tail_weight", "parent", "fallback", "discrete", "n_values")
        for name in names:
            if getattr(got, name).shape != (p,):
                shape = getattr(got, name).shape
                raise ValueError(f"numeric model {name} has shape {shape}, expected ({p},)")
        if got.grid.shape != (p, GRID):
            raise ValueError(f"numeric model grid has shape {got.grid.shape}, expected ({p}, {GRID})")
        return got


def yeo_johnson(x: np.ndarray, exponent: float) -> np.ndarray:
    """The Yeo-Johnson transform (scipy's), NaN kept, overflow held at +-``HUGE``."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full_like(x, np.nan)
    seen = np.isfinite(x)
    if seen.any():
        with np.errstate(over="ignore"):
            out[seen] = stats.yeojohnson(x[seen], lmbda=exponent)
    return _finite(out)


def _finite(values: np.ndarray) -> np.ndarray:
    """+-inf from an overflow becomes +-``HUGE`` (still far beyond any clip); NaN stays NaN."""
    return np.nan_to_num(values, nan=np.nan, posinf=HUGE, neginf=-HUGE)


def yeo_johnson_inverse(y: np.ndarray, exponent: float) -> np.ndarray:
    """Inverse of :func:`yeo_johnson` (scipy has none); overflow becomes inf."""
    y = np.asarray(y, dtype=np.float64)
    lam = float(exponent)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        pos = np.expm1(y) if lam == 0 else np.power(np.maximum(y * lam + 1.0, 0.0), 1.0 / lam) - 1.0
        neg = (
            -np.expm1(-y)
            if lam == 2
            else 1.0 - np.power(np.maximum(1.0 - (2.0 - lam) * y, 0.0), 1.0 / (2.0 - lam))
        )
    return np.where(y >= 0, pos, neg)


def dequantize(numeric: np.ndarray, cell: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Training values of lattice features plus uniform noise over their cell, ``[-h/2, h/2)``.

    A flow fitted to values on a lattice (counts, ratings, prices in cents)
    piles its density onto them (a count of 1 and one of 2, nothing
    between); spread over its cell, each value's probability becomes a
    density the flow can learn (Theis et al. 2016).  Scoring reads the
    values as they are, at their cell's centre.  ``cell``: the lattice
    spacing ``h`` of each feature, 0 for a continuous one.
    """
    if not (cell > 0).any():
        return numeric
    noise = rng.uniform(-0.5, 0.5, size=numeric.shape)
    return numeric + noise * cell[None, :]


def lattice_spacing(x: np.ndarray, whole_numbers: bool = True) -> float:
    """The spacing ``h`` of a lattice the values lie on, or 0 when they are continuous.

    Values lie on a lattice when they repeat (fewer distinct values than half
    the rows) and every gap between neighbouring distinct values is a whole
    multiple of the smallest gap (within 1e-6): integers, counts, ratings,
    also after scaling (a z-scored count), and prices in cents; or when every
    value is a whole number (codes: the greatest common divisor of the gaps;
    ``whole_numbers=False`` leaves this out: evenly spaced values only).  A two-valued
    flag is not treated as one: spread uniformly over one wide cell it tells
    the flow nothing, and benchmark tables of binary features lost AUROC
    dequantized (docs/method.md).  A few values off the lattice (``OFF_LATTICE_SHARE``)
    leave it a lattice: the lattice is then read from the values that repeat, and the others
    must lie on it but those few (:func:`off_lattice` finds them).
    """
    values = x[np.isfinite(x)]
    seen, counts = np.unique(values, return_counts=True)
    if seen.size > max(values.size // 2, 1):
        return 0.0
    h = _spacing(seen, whole_numbers)
    if h > 0:
        return h
    repeated = seen[counts > 1]
    h = _spacing(repeated, whole_numbers)
    if h > 0 and mostly_on_lattice(seen, counts, float(repeated[0]), h):
        return h
    return 0.0


def mostly_on_lattice(seen: np.ndarray, counts: np.ndarray, base: float, h: float) -> bool:
    """Whether the values (distinct ``seen``, each held ``counts`` times) lie on the lattice
    ``base + k h`` but for the few ``OFF_LATTICE_SHARE`` allows (at least one)."""
    off = off_lattice(seen, base, h)
    return int(counts[off].sum()) <= max(1, int(OFF_LATTICE_SHARE * counts.sum()))


def _spacing(seen: np.ndarray, whole_numbers: bool) -> float:
    """The lattice spacing of the sorted distinct values ``seen`` (0: none; see :func:`lattice_spacing`)."""
    if seen.size < LATTICE_MIN_LEVELS:
        return 0.0
    gaps = np.diff(seen)
    h = float(gaps.min())
    # A step below 1e-12 of the values' size is not a lattice (and gaps / h would overflow).
    if not h > MIN_RELATIVE_MAGNITUDE * float(np.abs(seen).max()):
        return 0.0
    ratio = gaps / h
    if np.all(np.abs(ratio - np.round(ratio)) <= 1e-6 * np.maximum(ratio, 1.0)):
        return h
    # Whole numbers whose gaps are no multiples of the smallest (codes such as ports: 443 and 445,
    # then 873) lie on the integers' lattice, or a coarser one: the greatest common divisor of the
    # gaps.  Left continuous, each code was a point the flow piled unbounded density on.
    if whole_numbers and float(np.abs(seen).max()) < 2.0**53 and np.all(seen == np.round(seen)):
        return float(np.gcd.reduce(gaps.astype(np.int64)))
    return 0.0


def off_lattice(x: np.ndarray, base: float, h: float) -> np.ndarray:
    """True where a value of ``x`` lies off the lattice ``base + k h`` (within 1e-6 of a step, as
    :func:`lattice_spacing` reads one; NaN: False)."""
    with np.errstate(invalid="ignore"):
        steps = (np.asarray(x, dtype=np.float64) - base) / h
        return np.abs(steps - np.round(steps)) > 1e-6 * np.maximum(np.abs(steps), 1.0)


def _magnitude(x: np.ndarray) -> float:
    """A small typical size of the values (5th percentile of the nonzero magnitudes).

    The power transform is fitted to ``x / s``: with ``s`` at the low end of
    the values, ``log1p(x / s)`` (exponent 0) is close to ``log(x)`` for
    nearly all of them, as a log-normal column needs; at the median it would
    flatten every value below the median.
    """
    nonzero = np.abs(x[x != 0])
    if not len(nonzero):
        return 1.0
    # Never below 1e-12 of the largest value: 25088 / 3e-303 overflows to inf.
    m = max(float(np.quantile(nonzero, 0.05)), float(nonzero.max()) * MIN_RELATIVE_MAGNITUDE)
    return m if np.isfinite(m) and m > 0 else 1.0


def _central(x: np.ndarray, quantiles: tuple[float, float], bulk: np.ndarray | None = None) -> np.ndarray:
    """The values of ``x`` between its ``quantiles`` (all of them when fewer than 50), and only those
    of ``bulk`` (bool, as ``x``) if given."""
    if len(x) < 50:
        return x
    lo, hi = np.quantile(x, quantiles)
    inside = (x >= lo) & (x <= hi)
    return x[inside if bulk is None else inside & bulk]


def shared_values(numbers: np.ndarray) -> np.ndarray:
    """(n, p) True where a cell's value (``numbers`` as the table holds them, NaN absent) is held
    by at least ``SHARED_MIN_ROWS`` rows of its column.

    A price that 99 of 13,705 purchases paid (0.17 where the rest paid 0.59
    to 0.70) is the column's, not 99 errors: in sample a value test's trim,
    which leaves out a side's top 1% as possible anomalies, would leave out
    exactly the rarer prices and call each of them impossible.  Such cells
    are never left out (:meth:`nrad.calibration.TailModel.fit`, ``keep_at``);
    a column of two values is the case where both values are held so.
    """
    out = np.zeros(numbers.shape, dtype=bool)
    for j in range(numbers.shape[1]):
        seen = np.isfinite(numbers[:, j])
        _, inverse, counts = np.unique(numbers[seen, j], return_inverse=True, return_counts=True)
        out[seen, j] = counts[inverse] >= SHARED_MIN_ROWS
    return out


def related_pairs(z: np.ndarray) -> np.ndarray:
    """Pairs ``(j, k)``, ``j < k``, whose z correlate by at least ``RELATED`` in absolute value.

    Rank (Spearman) correlation over the rows where both are present: a few
    wild values decide nothing, and 1e300 cannot overflow a sum of squares.
    Each column is ranked once over its own present cells and the pairwise
    sums come from matrix products, a block of columns at a time: a table of
    10,000 columns has 50 million pairs, too many to rank one by one.
    """
    present = np.isfinite(z)
    ranks = np.zeros(z.shape, dtype=np.float64)
    for j in range(z.shape[1]):
        column = stats.rankdata(z[present[:, j], j])
        ranks[present[:, j], j] = column - column.mean() if column.size else column
    seen = present.astype(np.float64)
    squares = ranks * ranks
    pairs = []
    for start in range(0, z.shape[1], PAIR_BLOCK):
        block = slice(start, start + PAIR_BLOCK)
        a, seen_a = ranks[:, block], seen[:, block]
        count = seen_a.T @ seen
        with np.errstate(invalid="ignore", divide="ignore"):
            # Means, variances and covariance of each pair's ranks over the rows where both are present.
            mean_a, mean_b = (a.T @ seen) / count, seen_a.T @ ranks / count
            var_a = (a * a).T @ seen / count - mean_a**2
            var_b = seen_a.T @ squares / count - mean_b**2
            r = (a.T @ ranks / count - mean_a * mean_b) / np.sqrt(var_a * var_b)
        tiny = 1e-9 * (count**2)  # a constant column's rank variance is 0 up to rounding
        related = (count > 10) & (var_a > tiny) & (var_b > tiny) & (np.abs(r) >= RELATED)
        j, k = np.nonzero(related)
        j = j + start
        pairs.append(np.column_stack([j, k])[j < k])
    return np.concatenate(pairs, axis=0).astype(np.int64) if pairs else np.zeros((0, 2), np.int64)


def _predictive(r: np.ndarray, m: int) -> np.ndarray:
    """Standardized residuals of a feature read from ``m`` training values, as the Gaussian value
    of the same tail probability under the predictive distribution of a new value (unchanged
    from ``FEW_VALUES`` values on).

    A location and a spread from a few values (a zero-inflated column's six values off 0) are
    uncertain, and a new value several of their spreads out is no rarer than that uncertainty
    makes it: for Gaussian values of unknown mean and variance, ``r / sqrt(1 + 1/m)`` follows a
    Student t with ``m - 1`` degrees of freedom (here with the robust spread in place of the sd).
    Read as it is, a value of 5,402 where six values ran 435 to 980 was 15 spreads out, 108
    nats, and flagged; as the Gaussian value of its predictive tail probability it is 4.1.
    Odd and monotone, so it keeps the order of the values and the side they are on.
    """
    if m >= FEW_VALUES:
        return r
    from scipy import special, stats

    dof = max(m - 1, 1)
    t = np.asarray(r, dtype=np.float64) / np.sqrt(1.0 + 1.0 / max(m, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        # From the far side's log tail probability: exact far out, where the probabilities underflow.
        z = -special.ndtri_exp(stats.t.logsf(np.abs(t), dof))
    return np.where(np.isnan(t), np.nan, np.sign(t) * np.maximum(z, 0.0))


def _level_predictive(r: np.ndarray, m: np.ndarray) -> np.ndarray:
    """A new row's standardized residuals ``r`` against category levels whose spreads were read from
    ``m`` training values each, scaled to the spread a new value's residual has.

    A training row helped set its level's median and spread; a new row did
    not, and both are uncertain where the level is small.  A level's spread
    is its own over ``m`` values, shrunk towards the pooled one with
    ``SD_PRIOR_ROWS`` pseudo-values: ``nu = m - 1 + SD_PRIOR_ROWS`` degrees
    of freedom.  A new value's residual then has variance ``(1 + 1/m) nu /
    (nu - 2)`` (the location's error, and the mean of ``sigma^2 / s^2``),
    and is divided by its square root: the variance of the Student t that
    the predictive distribution is, with a Gaussian's tails: the t's own
    tails would pull a gross value in to a few Gaussian sd (research notes,
    section 40).  The tails calibrated on the training rows' residuals then
    hold for new rows of small levels too.
    """
    m = np.maximum(np.asarray(m, dtype=np.float64), 1.0)
    dof = m - 1.0 + SD_PRIOR_ROWS
    return np.asarray(r, dtype=np.float64) / np.sqrt((1.0 + 1.0 / m) * dof / (dof - 2.0))


def _predictive_inverse(z: np.ndarray, m: int) -> np.ndarray:
    """The standardized residual whose :func:`_predictive` value is ``z``."""
    if m >= FEW_VALUES:
        return z
    from scipy import special, stats

    dof = max(m - 1, 1)
    z = np.asarray(z, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = stats.t.isf(np.exp(special.log_ndtr(-np.abs(z))), dof)
    return np.sign(z) * np.nan_to_num(t, posinf=HUGE) * np.sqrt(1.0 + 1.0 / max(m, 1))


def _sinh_arcsinh(r: np.ndarray, weight: float) -> np.ndarray:
    """``sinh(delta asinh(r))`` of standardized residuals (identity for ``delta = 1``)."""
    r = np.asarray(r, dtype=np.float64)
    return r if weight == 1.0 else np.sinh(weight * np.arcsinh(r))


def _tail_terms(z: np.ndarray, weight: np.ndarray | float) -> np.ndarray:
    a = np.arcsinh(z) / weight
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(_log_cosh(a) - _log_cosh(weight * a))


def _log_cosh(a: np.ndarray) -> np.ndarray:
    """``log cosh(a)`` without overflow (``a`` up to ~1e308 / 2)."""
    a = np.abs(a)
    return a + np.log1p(np.exp(-2.0 * a)) - np.log(2.0)


def _tail_weight(u: np.ndarray) -> float:
    """Maximum-likelihood ``delta`` of ``sinh(delta asinh(u)) ~ N(mu, sigma^2)`` (``u`` standardized).

    The log-likelihood, with ``mu`` and ``sigma`` at their estimates, is
    ``-n/2 log sigma^2 + sum log(delta cosh(delta asinh u) / sqrt(1 + u^2))``;
    one bounded scalar search over ``delta`` (scipy).
    """
    from scipy.optimize import minimize_scalar

    spread = float(np.var(u)) if len(u) else 0.0
    # Degenerate spreads (1e300 with a tiny variance) would put log(0) or inf into the search.
    if len(u) < 50 or not (np.isfinite(spread) and 1e-280 < spread < 1e280):
        return 1.0
    a = np.arcsinh(u)
    log_jacobian_u = -0.5 * np.log1p(u**2)

    def negative_log_likelihood(delta: float) -> float:
        t = np.sinh(delta * a)
        return 0.5 * len(u) * np.log(np.var(t)) - float(
            np.sum(np.log(delta * np.cosh(delta * a)) + log_jacobian_u)
        )

    best = minimize_scalar(negative_log_likelihood, bounds=(MIN_TAIL_WEIGHT, 1.0), method="bounded")
    # Only a clear gain moves delta off 1: light-tailed columns are left as they are.
    if negative_log_likelihood(1.0) - best.fun < 2.0:
        return 1.0
    return float(best.x)


def _bulk(y: np.ndarray, if_no_spread: bool = True) -> np.ndarray:
    """Rows within ``BULK_SD`` robust sd (median absolute deviation) of the median; where the
    MAD is 0, every row or none (``if_no_spread``)."""
    if len(y) == 0:
        return np.zeros(0, dtype=bool)
    med = np.median(y)
    mad = 1.4826 * np.median(np.abs(y - med))
    if not mad > 0:
        return np.full(len(y), if_no_spread)
    return np.abs(y - med) <= BULK_SD * mad


def _level_bulk(y: np.ndarray, codes: np.ndarray, n_codes: list[int], outside: np.ndarray) -> np.ndarray:
    """Rows within ``BULK_SD`` robust sd of their own level's median, in a level of at least
    ``LEVEL_BULK_ROWS`` rows whose values vary (any categorical feature; not the pooled "other").
    Only levels holding a row of ``outside`` (the rows beyond the column's bulk) are read: the
    others' rows are in the bulk anyway, and a wide table has thousands of levels.

    A small level of large values (13 industrial meters among 500 homes) lies beyond the column's
    bulk, all but its smallest values: read from those alone, its typical consumption was a fifth
    of its spread, and every other industrial meter was flagged.  Its own spread says what is
    typical for it.  A level constant off the column's bulk (every US invoice's VAT rate of 0) has
    no spread to judge by, and stays out (research/notes.md, section 26).
    """
    inside = np.zeros(len(y), dtype=bool)
    for f in range(codes.shape[1]):
        level = codes[:, f]
        for code in np.unique(level[outside]):
            rows = level == code
            if code != n_codes[f] - 2 and rows.sum() >= LEVEL_BULK_ROWS:
                inside[rows] |= _bulk(y[rows], if_no_spread=False)
    return inside


def _exponent(x: np.ndarray) -> float:
    """The Yeo-Johnson exponent for a multiplicative column, 1 (no transform) for any other.

    A column is multiplicative when its values are at least 0 and its 99th
    percentile is at least ``SKEW_RATIO`` times its median: amounts, balances,
    counts, durations, whose spread grows with their level and whose natural
    scale is logarithmic.  Other columns are left as they are: a power transform
    fitted for normality on a table that holds its anomalies pulls exactly
    those in (a transductive benchmark table lost much of its AUROC with a
    transform of every column; docs/method.md).
    """
    if len(x) < 3 or np.ptp(x) == 0 or x.min() < 0:
        return 1.0
    median, high = np.quantile(x, [0.5, 0.99])
    if not high >= SKEW_RATIO * max(median, np.finfo(float).tiny):
        return 1.0
    with warnings.catch_warnings():
        # Near-constant columns make the likelihood flat; any exponent will do.
        warnings.simplefilter("ignore")
        try:
            lam = float(PowerTransformer(standardize=False).fit(x[:, None]).lambdas_[0])
        except (ValueError, FloatingPointError):
            return 1.0
    return float(np.clip(lam, 0.0, 2.0)) if np.isfinite(lam) else 1.0


def _contexts(y: np.ndarray, codes: np.ndarray, n_codes: list[int], exact: np.ndarray) -> tuple[Any, ...]:
    """(parent, location, scale, fallback, fallback location, fallback scale) of one feature.

    The two categorical features that explain most of ``y`` (see the module
    docstring); -1 and the pooled mean and sd where there is none.  ``exact``:
    the values before dequantization (see :func:`_level_median_mad`).
    """
    n = len(y)
    center = float(np.median(y)) if n else 0.0
    spread = 1.4826 * float(np.median(np.abs(y - center))) if n else 1.0
    for candidate in (spread, float(np.std(y)) if n > 1 else 0.0, 1.0):
        if candidate > 1e-12:
            spread = candidate
            break
    pooled = (-1, np.array([center]), np.array([spread]), np.array([float(n)]))
    found = []
    for f in np.flatnonzero(_maybe_parents(y, codes, n_codes)):
        got = _level_effects(y, codes[:, f], n_codes[f], exact)
        if got is not None and got[0] >= MIN_ETA2:
            found.append((got[0], f, got[1], got[2], got[3]))
    found.sort(key=lambda t: -t[0])
    ranked = [(f, loc, sc, rows) for _, f, loc, sc, rows in found[:2]] + [pooled, pooled]
    first, second = ranked[0], ranked[1]
    for f, loc, sc, rows in (first, second):
        if f >= 0:
            # The "other" code pools rare and unseen levels: it has no level of
            # its own (its rows use the fallback), so learn nothing for it:
            # three rows of a new merchant must not set what is typical for it.
            loc[n_codes[f] - 2], sc[n_codes[f] - 2], rows[n_codes[f] - 2] = pooled[1][0], pooled[2][0], n
    return (*first[:3], *second[:3], first[3], second[3])


#: A categorical feature whose one-way ANOVA p-value, computed for all features at once, is at least
#: this many times ``PARENT_P_VALUE`` is no parent (far from the level, whatever the rounding).
PARENT_PREFILTER = 10.0


def _maybe_parents(y: np.ndarray, codes: np.ndarray, n_codes: list[int]) -> np.ndarray:
    """Which categorical features may be a parent of ``y`` (see :func:`_contexts`): all of them
    but those whose ANOVA F-test is far from rejecting "no effect".

    The exact test is :func:`_level_effects`'s, one feature at a time; here the sums per level of
    every feature come from one ``bincount``, so that a wide table (a missing or spike indicator
    per column: thousands of features for each of thousands of columns) runs the exact test only
    where it may pass.  A feature whose within-level spread is 0 here (rounding) is kept: the
    exact test decides it.
    """
    n, q = codes.shape
    if n == 0 or q == 0:
        return np.zeros(q, dtype=bool)
    offsets = np.r_[0, np.cumsum(n_codes)].astype(np.int64)
    index = (codes + offsets[:-1]).ravel()
    centred = y - y.mean()
    count = np.bincount(index, minlength=offsets[-1]).astype(np.float64)
    total = np.bincount(index, weights=np.repeat(centred, q), minlength=offsets[-1])
    per_level = np.divide(total**2, count, out=np.zeros_like(total), where=count > 0)
    ss_between = np.add.reduceat(per_level, offsets[:-1])
    used = np.add.reduceat((count > 0).astype(np.float64), offsets[:-1])
    ss_within = float(np.sum(centred**2)) - ss_between
    valid = (used >= 2) & (n - used >= 2)
    spread = valid & (ss_within > 0)
    p_value = np.zeros(q)
    if spread.any():
        f_stat = (ss_between[spread] / (used[spread] - 1)) / (ss_within[spread] / (n - used[spread]))
        p_value[spread] = stats.f.sf(f_stat, used[spread] - 1, n - used[spread])
    return valid & (p_value < PARENT_PREFILTER * PARENT_P_VALUE)


def _standardize_one(
    y: np.ndarray,
    codes: np.ndarray,
    parent: int,
    location: np.ndarray,
    scale: np.ndarray,
    fallback: int,
    fallback_location: np.ndarray,
    fallback_scale: np.ndarray,
) -> np.ndarray:
    if parent < 0:
        return (y - location[0]) / scale[0]
    loc = _per_row(codes, parent, location, fallback, fallback_location)
    return (y - loc) / _per_row(codes, parent, scale, fallback, fallback_scale)


def _per_row(
    codes: np.ndarray, parent: int, per_code: np.ndarray, fallback: int, fallback_per_code: np.ndarray
) -> np.ndarray:
    """Per row, the entry of ``per_code`` (one per parent code) for its parent code, or of
    ``fallback_per_code`` for its fallback code when the parent code is *other* (its first entry
    when there is no fallback feature)."""
    level = codes[:, parent]
    out = per_code[level]
    other = level == len(per_code) - 2
    if other.any():
        back = codes[other, fallback] if fallback >= 0 else np.zeros(int(other.sum()), dtype=np.int64)
        out[other] = fallback_per_code[back]
    return out


def _level_effects(
    y: np.ndarray, level: np.ndarray, k: int, exact: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray] | None:
    """Adjusted eta^2 of ``level`` on ``y``, shrunk per-level (mean, sd) and the number of values
    each level's sd was read from, or None if not significant.

    ``exact``: the values before dequantization (see :func:`_level_median_mad`)."""
    n = len(y)
    count = np.bincount(level, minlength=k).astype(np.float64)
    used = int((count > 0).sum())
    if used < 2 or n - used < 2:
        return None
    total = np.bincount(level, weights=y, minlength=k)
    mean = np.divide(total, count, out=np.zeros(k), where=count > 0)
    grand = float(y.mean())
    ss_between = float(np.sum(count * (mean - grand) ** 2))
    resid = y - mean[level]
    ss_within = float(np.sum(resid**2))
    ms_between, ms_within = ss_between / (used - 1), ss_within / (n - used)
    if ms_within <= 0:
        return None
    if stats.f.sf(ms_between / ms_within, used - 1, n - used) >= PARENT_P_VALUE:
        return None
    eta2 = 1.0 - ms_within / (float(np.sum((y - grand) ** 2)) / (n - 1))
    # Empirical Bayes (one-way random effects, method of moments): each level's
    # mean is pulled towards the grand mean by kappa = within / between variance.
    n0 = (n - float(np.sum(count**2)) / n) / (used - 1)
    between = max((ms_between - ms_within) / n0, 1e-12)
    kappa = ms_within / between
    # Robust level statistics (median, MAD) shrunk the same way.
    median, mad, spread_rows = _level_median_mad(y, level, k, exact)
    grand_median = float(np.median(y))
    location = (count * median + kappa * grand_median) / (count + kappa)
    pooled = 1.4826 * float(np.median(np.abs(y - median[level])))
    pooled = pooled if pooled > 1e-12 else np.sqrt(ms_within)
    sd = 1.4826 * mad
    log_sd = np.where((spread_rows > 1) & (sd > 0), np.log(np.maximum(sd, 1e-6 * pooled)), np.log(pooled))
    weight = np.maximum(spread_rows - 1, 0)
    scale = np.exp((weight * log_sd + SD_PRIOR_ROWS * np.log(pooled)) / (weight + SD_PRIOR_ROWS))
    # A level with no spread of its own (unused, or all its values at its own spike) is read with
    # the pooled spread, which all n values set.
    return eta2, location, scale, np.where(spread_rows > 0, spread_rows, float(n)).astype(np.float64)


def _level_median_mad(
    y: np.ndarray, level: np.ndarray, k: int, exact: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per level code: median of ``y``, median absolute deviation from it, and the number of
    values that deviation was read from (0 for unused codes).

    A level with a spike (:func:`_level_spike`, read on ``exact``, the values
    before dequantization) has its deviation read from its other values: the
    MAD of a spike is the width of its dequantization cell, and would put the
    level's ordinary other values (a geriatric ward's 90-year-olds beside its
    many 70s) tens of sd out.
    """
    order = np.lexsort((y, level))
    sorted_y, sorted_exact, sorted_level = y[order], exact[order], level[order]
    bounds = np.searchsorted(sorted_level, np.arange(k + 1))
    median, mad, rows = np.zeros(k), np.zeros(k), np.zeros(k)
    for code in range(k):
        part = sorted_y[bounds[code] : bounds[code + 1]]
        if not part.size:
            continue
        median[code] = np.median(part)
        part = part[~_level_spike(sorted_exact[bounds[code] : bounds[code + 1]])]
        rows[code] = part.size
        mad[code] = np.median(np.abs(part - median[code])) if part.size else 0.0
    return median, mad, rows


def _level_spike(values: np.ndarray) -> np.ndarray:
    """Which of one level's ``values`` are its spike (see ``LEVEL_SPIKE_SHARE``): its most
    frequent value, with the neighbouring value if that holds at least half as many."""
    distinct, counts = np.unique(values, return_counts=True)
    top = int(counts.argmax())
    pile = [top]
    for side in (top - 1, top + 1):
        if 0 <= side < len(counts) and 2 * counts[side] >= counts[top] and len(pile) == 1:
            pile.append(side)
    low, high = min(pile), max(pile)
    beside = counts[[i for i in (low - 1, high + 1) if 0 <= i < len(counts)]]
    piled = counts[low : high + 1].sum() >= LEVEL_SPIKE_SHARE * len(values) and np.all(
        beside <= LEVEL_PILE_RATIO * counts[low : high + 1].min()
    )
    if not piled or len(values) <= 1:
        return np.zeros(len(values), bool)
    return np.isin(values, distinct[low : high + 1])
