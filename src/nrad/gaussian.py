"""A robust Gaussian model of the numbers: how far a row is, and how far each cell is from the rest.

The flows learn a table's density, including a cluster of bad rows if there
are enough of them (a broken batch, ``hbk``'s 14 planted rows among 75): a
density fitted on the rows learns where they are.  A high-breakdown
estimate of location and scatter does not: the minimum covariance
determinant (MCD; Rousseeuw 1984) fits the ``h`` rows (here 75%) whose
covariance has the smallest determinant, so a cluster of up to a quarter of
the rows stays outside it and far from it.  Computed by concentration
steps from a few deterministic starts (DetMCD, Hubert, Rousseeuw & Verdonck,
JCGS 2012) and reweighted once (rows within the 97.5% quantile of the
chi-square distance), with a small shrinkage towards the diagonal so that
wide or collinear tables stay invertible.

Written here rather than taken from scikit-learn's ``MinCovDet``: its
random-subset search takes seconds per fold where the few concentration
steps here take milliseconds, and it gives no conditional distributions of
single cells.

What the table model reads off it (``z``: the numbers as the flows read
them, each standardized in its context):

* ``distance(z)``: half the squared Mahalanobis distance, a Gaussian
  negative log-density in nats (a member of the fused score);
* ``cell_residuals(z, raw)``: per cell, how many conditional standard
  deviations the value lies from what the row's other numbers predict,
  ``t_j = (Q (w - mu))_j / sqrt(Q_jj)`` with ``Q`` the precision matrix:
  one matrix product gives every cell's residual given all the others.  The
  other cells enter clipped to ``PREDICTOR_CLIP`` (one wild value must not
  push every other cell of its row off), the cell itself unclipped (a value
  100 sd out stays 100 sd out);
* ``fill(z)``: missing cells at their conditional mean given the row's
  present ones (exact Gaussian conditioning, per pattern of missing cells).

``Relations`` holds the Gaussians the cells' residuals are read from: one
set per reading of the numbers, with little shrinkage and predictors bounded
by their training values (see its docstring and docs/method.md section 13).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from scipy import stats

from nrad.numeric import LATTICE_MIN_LEVELS
from nrad.rowwise import rows_times

#: Share of the rows the MCD fits (its breakdown point is 1 - this).
SUPPORT = 0.75
#: Concentration steps per start (each lowers the determinant; they converge in a few).
C_STEPS = 20
#: Rows kept by the reweighting step: squared distance within this chi-square quantile.
REWEIGHT_QUANTILE = 0.975
#: Shrinkage of the scatter towards the diagonal of all rows' variances: keeps a wide or collinear
#: table invertible, and a column that is constant within the fitted subset (a count that is 1
#: in 96% of rows) from getting a precision of 1e9.
SHRINKAGE = 0.05
#: Predictors enter a cell's residual clipped to this many sd.
PREDICTOR_CLIP = 4.0
#: A column seen (not absent) in fewer rows than this, and in fewer than SPARSE_SHARE of the rows,
#: is modelled as independent of the others (a spike's other values, a column mostly missing; in a
#: small table every column is seen in few rows, and none of them is sparse).
MIN_OBSERVED = 100
SPARSE_SHARE = 0.5
#: At most this many rows are used to fit (a random subset beyond).
MAX_FIT_ROWS = 20_000
#: A predictor's bound in :meth:`Relations.residuals`: this margin times the RELATION_RANK-th
#: largest absolute standardized training value of its column (a few wild values do not set it;
#: a skewed column's legitimate far values, up to twice the fifth largest, are inside it).
RELATION_RANK = 5
RELATION_MARGIN = 2.0
#: The shrinkage of the Gaussians cells' residuals are read from: small, because shrinkage bends
#: a relation towards the column's mean, so a row far along an exact relation (the highest LDL,
#: which is its total cholesterol minus the rest) would sit off it in proportion to how far out
#: it is.  Dequantized counts and rounded values keep the scatter invertible.
RELATION_SHRINKAGE = 0.001
#: The readings of the numbers a cell's residual is taken in (see TableModel.cell_residuals): as
#: the flows read them (``z``), as shaped (``y``), and in the table's units.
READINGS = ("z", "shaped", "units")
#: A column has a relation in a reading when the other columns leave it at most this share of its
#: sd there (they explain at least a fifth of its variance); a reading without one holds no
#: relation to be bent, and its residual of the column is the column's value alone.
RELATION_SD = 0.9
#: A column's MAD at most this share of its sd is read as 0 (floating-point noise), and its sd
#: standardizes it.
MAD_RESOLUTION = 1e-9


@dataclass
class RobustGaussian:
    """Location and precision of the numbers (see the module docstring)."""

    location: np.ndarray  # (p,)
    precision: np.ndarray  # (p, p)
    #: log det of the scatter, for the log-density.
    log_det: float
    #: Columns seen in few rows (``MIN_OBSERVED``, ``SPARSE_SHARE``: a spike's other values, a column
    #: mostly missing): independent of the others, and left out of the distance (None: none).
    sparse: np.ndarray | None = None

    @property
    def n_features(self) -> int:
        return len(self.location)

    @classmethod
    def fit(
        cls,
        z: np.ndarray,
        rng: np.random.Generator | None = None,
        observed: np.ndarray | None = None,
        shrinkage: float = SHRINKAGE,
    ) -> RobustGaussian:
        """Fit on complete rows ``z`` (n, p): absent cells must be filled already, and ``observed``
        says which cells were seen (the filled ones, all alike, must not make a column look
        constant: its variance floor comes from the cells seen)."""
        z = np.asarray(z, dtype=np.float64)
        n, p = z.shape
        if p == 0:
            return cls(np.zeros(0), np.zeros((0, 0)), 0.0)
        seen = np.ones(z.shape, dtype=bool) if observed is None else np.asarray(observed, dtype=bool)
        if n > MAX_FIT_ROWS:
            rng = rng or np.random.default_rng(0)
            rows = np.sort(rng.choice(n, MAX_FIT_ROWS, replace=False))
            z, seen, n = z[rows], seen[rows], MAX_FIT_ROWS
        h = max(min(n, p + 2), int(np.ceil(SUPPORT * n)))
        floor = np.array(
            [np.var(z[seen[:, j], j]) if seen[:, j].sum() > 1 else np.var(z[:, j]) for j in range(p)]
        )
        floor = np.where(floor > 0, floor, 1.0)

        def shrunk(rows: np.ndarray) -> np.ndarray:
            return _shrunk(np.cov(z[rows], rowvar=False, bias=True).reshape(p, p), floor, shrinkage)

        best = None
        for start in _starts(z):
            subset = _concentrate(z, start, h, floor, shrinkage)
            det = _log_det(shrunk(subset))
            if best is None or det < best[0]:
                best = (det, subset)
        assert best is not None
        subset = best[1]
        mean = z[subset].mean(axis=0)
        cov = shrunk(subset)
        # Consistency: an h-subset's scatter is too small for the whole distribution.
        d2 = _mahalanobis2(z, mean, np.linalg.inv(cov))
        cov *= _consistency(d2, stats.chi2.ppf(0.5, p))
        keep = _mahalanobis2(z, mean, np.linalg.inv(cov)) <= stats.chi2.ppf(REWEIGHT_QUANTILE, p)
        if keep.sum() > p + 1:
            mean = z[keep].mean(axis=0)
            cov = shrunk(keep)
            d2 = _mahalanobis2(z[keep], mean, np.linalg.inv(cov))
            # The kept rows are cut at the 97.5% quantile: rescale so their median distance is chi2's.
            cov *= _consistency(d2, stats.chi2.ppf(0.5 * REWEIGHT_QUANTILE, p))
        # A column seen in few rows (a spike's other values, one mostly missing) relates to the others
        # only through those few rows: its estimated relations are noise that would push the other
        # cells of the rows where it is seen off.  It is modelled as independent of them.
        # Its variance is that of the cells seen: the filled ones, all alike, would make a value
        # a little off the few seen ones look thousands of sd away.
        counts = seen.sum(axis=0)
        sparse = (counts < MIN_OBSERVED) & (counts < SPARSE_SHARE * len(z))
        if sparse.any():
            keep = np.diag(np.where(sparse, np.maximum(np.diag(cov), floor), np.diag(cov)))
            cov = np.where(sparse[:, None] | sparse[None, :], keep, cov)
        precision = np.linalg.inv(cov)
        return cls(mean, (precision + precision.T) / 2.0, _log_det(cov), sparse if sparse.any() else None)

    def distance(self, z: np.ndarray) -> np.ndarray:
        """Half the squared Mahalanobis distance of each complete row (nats, 0 at the centre),
        sparse columns left out: a rare value of a column seen in a few rows is its indicator's
        and its own cell test's to judge, not a distance learnt from a handful of values."""
        if self.n_features == 0:
            return np.zeros(len(z))
        z = np.array(z, dtype=np.float64)
        if self.sparse is not None:
            z[:, self.sparse] = self.location[self.sparse]
        centred = z - self.location
        # Row by row (a row's distance the same whatever rows it is scored with: nrad.rowwise).
        return 0.5 * np.einsum("ij,jk,ik->i", centred, self.precision, centred)

    def negative_log_density(self, z: np.ndarray) -> np.ndarray:
        """``-log N(z; location, scatter)`` of each complete row (nats)."""
        return self.distance(z) + 0.5 * (self.log_det + self.n_features * np.log(2.0 * np.pi))

    def cell_residuals(
        self, z: np.ndarray, raw: np.ndarray, bound: np.ndarray | float = PREDICTOR_CLIP
    ) -> np.ndarray:
        """(n, p) conditional residual of each cell given the row's other cells, in conditional sd.

        ``z``: complete rows (missing cells filled, e.g. by :meth:`fill`); ``raw``: the same
        cells unclipped (the value being judged); NaN where ``raw`` is NaN.  ``bound``: the
        predictors enter clipped to it (per column, or one for all).
        """
        if self.n_features == 0:
            return np.zeros(np.shape(raw))
        clipped = np.clip(z, -bound, bound)
        diag = np.diag(self.precision)
        own = np.where(np.isnan(raw), clipped, raw)
        t = rows_times(clipped - self.location, self.precision) + diag * (own - clipped)
        return np.where(np.isnan(raw), np.nan, t / np.sqrt(diag))

    def fill(
        self,
        z: np.ndarray,
        bound: np.ndarray | float = PREDICTOR_CLIP,
        rng: np.random.Generator | None = None,
    ) -> np.ndarray:
        """Missing cells (NaN) at their conditional mean given the row's present cells (which
        enter clipped to ``bound``, per column or one for all).  ``rng`` given: a draw from the
        conditional distribution instead (what a flow trains on: each filled cell as spread as
        the values it stands for, and related to the row's other cells as they are)."""
        z = np.array(z, dtype=np.float64)
        missing = np.isnan(z)
        if not missing.any():
            return z
        patterns, which = np.unique(missing, axis=0, return_inverse=True)
        for k, pattern in enumerate(patterns):
            if not pattern.any():
                continue
            rows = np.flatnonzero(which.ravel() == k)
            m, o = pattern, ~pattern
            # E[z_m | z_o] = mu_m - Q_mm^-1 Q_mo (z_o - mu_o)
            q_mm = self.precision[np.ix_(m, m)]
            q_mo = self.precision[np.ix_(m, o)]
            limit = np.broadcast_to(bound, (self.n_features,))[o]
            centred = np.clip(z[np.ix_(rows, o)], -limit, limit) - self.location[o]
            mean = self.location[m] - rows_times(centred, np.linalg.solve(q_mm, q_mo).T)
            if rng is not None:
                # Cov[z_m | z_o] = Q_mm^-1 = L^-T L^-1 for Q_mm = L L^T, so L^-T e has it.
                chol = np.linalg.cholesky(q_mm)
                mean = mean + np.linalg.solve(chol.T, rng.standard_normal((int(m.sum()), len(rows)))).T
            z[np.ix_(rows, m)] = mean
        return z

    def to_state(self, prefix: str) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        sparse = np.zeros(self.n_features, dtype=bool) if self.sparse is None else self.sparse
        return {"log_det": self.log_det}, {
            f"{prefix}location": self.location,
            f"{prefix}precision": self.precision,
            f"{prefix}sparse": sparse.astype(np.int64),
        }

    @classmethod
    def from_state(
        cls, meta: dict[str, float], arrays: dict[str, np.ndarray], prefix: str, p: int
    ) -> RobustGaussian:
        location = np.asarray(arrays[f"{prefix}location"], dtype=np.float64)
        precision = np.asarray(arrays[f"{prefix}precision"], dtype=np.float64)
        sparse = np.asarray(arrays.get(f"{prefix}sparse", np.zeros(p)), dtype=np.int64).astype(bool)
        if location.shape != (p,) or precision.shape != (p, p) or not np.isfinite(precision).all():
            raise ValueError(f"robust Gaussian must have {p} features and a finite precision matrix")
        if sparse.shape != (p,):
            raise ValueError(f"robust Gaussian's sparse columns must be {p} flags")
        return cls(location, precision, float(meta["log_det"]), sparse if sparse.any() else None)


def _starts(z: np.ndarray) -> list[np.ndarray]:
    """Initial h0-subsets (half the rows) from DetMCD's robust starts: Spearman and tanh correlations
    of the robustly standardized columns, and the rows nearest the coordinatewise median."""
    n, p = z.shape
    med = np.median(z, axis=0)
    mad = 1.4826 * np.median(np.abs(z - med), axis=0)
    mad = np.where(mad > 1e-12, mad, np.maximum(z.std(axis=0), 1e-12))
    u = (z - med) / mad
    h0 = max(p + 1, n // 2)
    starts = []
    for transformed in (np.tanh(u), stats.rankdata(u, axis=0) - (n + 1) / 2.0):
        corr = np.corrcoef(transformed, rowvar=False).reshape(p, p) if p > 1 else np.ones((1, 1))
        corr = np.nan_to_num(corr) + np.eye(p) * 1e-3
        # DetMCD: eigenvectors of the robust correlation, robust scales along them.
        _, vectors = np.linalg.eigh(corr)
        scores = u @ vectors
        centre = np.median(scores, axis=0)
        spread = 1.4826 * np.median(np.abs(scores - centre), axis=0)
        spread = np.where(spread > 1e-12, spread, 1.0)
        d2 = (((scores - centre) / spread) ** 2).sum(axis=1)
        starts.append(np.argsort(d2, kind="stable")[:h0])
    starts.append(np.argsort((u**2).sum(axis=1), kind="stable")[:h0])
    return starts


def _concentrate(
    z: np.ndarray, subset: np.ndarray, h: int, floor: np.ndarray, shrinkage: float
) -> np.ndarray:
    """Concentration steps: refit on the subset, keep the h rows nearest, until the subset is stable."""
    p = z.shape[1]
    current = np.sort(subset)
    for _ in range(C_STEPS):
        mean = z[current].mean(axis=0)
        cov = _shrunk(np.cov(z[current], rowvar=False, bias=True).reshape(p, p), floor, shrinkage)
        nearest = np.sort(np.argsort(_mahalanobis2(z, mean, np.linalg.inv(cov)), kind="stable")[:h])
        if len(nearest) == len(current) and np.array_equal(nearest, current):
            break
        current = nearest
    return current


def _shrunk(cov: np.ndarray, variances: np.ndarray, shrinkage: float) -> np.ndarray:
    """``(1 - shrinkage) cov + shrinkage diag(variances)``, plus a tiny ridge."""
    ridge = 1e-9 * max(float(np.mean(variances)), 1e-12)
    return (1.0 - shrinkage) * cov + np.diag(shrinkage * variances + ridge)


def _log_det(cov: np.ndarray) -> float:
    sign, value = np.linalg.slogdet(cov)
    return float(value) if sign > 0 else np.inf


def _mahalanobis2(z: np.ndarray, mean: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """Squared Mahalanobis distances while fitting: a matrix product and a row sum, which BLAS makes
    40 times faster than einsum's loops at a hundred columns (scoring reads rows one by one:
    :meth:`RobustGaussian.distance`)."""
    centred = z - mean
    return ((centred @ precision) * centred).sum(axis=1)


def _consistency(d2: np.ndarray, expected: float) -> float:
    """The factor that puts the median squared distance at chi2's; 1 where more than half the rows
    sit at the centre (a median of 0 would make the scatter singular)."""
    factor = float(np.median(d2)) / expected
    return factor if np.isfinite(factor) and factor > 1e-12 else 1.0


@dataclass
class Relations:
    """What each numeric cell's residual given the row's other numbers is read from, in one
    reading of the numbers (one of READINGS): robustly standardized over all rows, under one
    robust Gaussian per cross-fitting fold.

    A relation may be straight in one reading and bent in another: ``z``
    reads each column in its context (a location and scale per level of a
    parent category) and bends it by a tail weight of its own, so an age and
    a birth year read per ward do not follow each other there; shaping bends
    a sum of skewed columns.  The table model keeps a cell's smallest
    residual over the readings (``TableModel.cell_residuals``).
    """

    #: Per column: median and scale (MAD, or the sd where it is 0) of the training ``y``.
    center: np.ndarray
    scale: np.ndarray
    #: Per column: how far (in scales) a value enters as a predictor of the others.
    bound: np.ndarray
    #: One robust Gaussian per fold.
    gaussians: list[RobustGaussian]
    #: Which reading of the numbers it models (one of READINGS).
    reading: str = "shaped"

    @classmethod
    def fit(
        cls, y: np.ndarray, folds: np.ndarray, inside: np.ndarray, seed: int, reading: str = "shaped"
    ) -> Relations:
        """From training rows ``y`` (NaN where absent), their ``folds``, and which of them may
        train (``inside``); each fold's Gaussian from the rows outside it."""
        center = np.nanmedian(y, axis=0) if len(y) else np.zeros(y.shape[1])
        center = np.nan_to_num(center)
        mad = np.nan_to_num(np.nanmedian(np.abs(y - center), axis=0) * 1.4826)
        sd = np.nan_to_num(np.nanstd(y, axis=0))
        # A MAD that is rounding noise is 0: a column that is at its context's centre in most rows
        # (payment terms of 14 days in every retail invoice) reads 0 there up to 1e-16, and as a
        # scale that noise put its other values 1e15 out, the Gaussian's shrinkage spread that
        # variance over every column, and no cell of the table had a residual left.
        scale = np.where(mad > MAD_RESOLUTION * sd, mad, np.where(sd > 0, sd, 1.0))
        u = (y - center) / scale
        # A predictor goes as far as the training values go (a relation holds out to the oldest
        # patient); a wild value (a year 200 years off) enters no further, leaving the blame on
        # its own cell.
        far = np.array([_largest_abs(c, RELATION_RANK) for c in u.T])
        bound = np.maximum(PREDICTOR_CLIP, RELATION_MARGIN * far)
        clipped = np.clip(u, -bound, bound)
        seen = ~np.isnan(u)
        rng = np.random.default_rng(seed + 7)
        # Absent cells (missing, or at a spike: half of a fireplaces column) filled at random, and
        # no refit on them filled at their conditional means: with little shrinkage, cells put
        # on the first fit's regression planes make two mostly absent columns look related,
        # and a column independent of both would look predicted by them.  Random fills only
        # weaken a relation of the columns they are in.
        hot_decked = spread_levels(hot_deck(clipped, rng), seen, rng)
        gaussians = []
        for k in range(int(folds.max()) + 1):
            rows = (folds != k) & inside
            rng_k = np.random.default_rng(seed + k)
            gaussians.append(RobustGaussian.fit(hot_decked[rows], rng_k, seen[rows], RELATION_SHRINKAGE))
        return cls(center, scale, bound, gaussians, reading)

    @cached_property
    def sd_shares(self) -> np.ndarray:
        """(p,) each column's conditional sd given the other columns as a share of its sd, the
        largest over the folds' Gaussians (1 where a fold has no feature: nothing relates)."""
        shares = np.zeros(len(self.center))
        for gaussian in self.gaussians:
            if gaussian.n_features == 0:
                return np.ones(len(self.center))
            scatter = np.linalg.inv(gaussian.precision)
            # conditional variance 1 / precision_jj against the marginal scatter_jj
            shares = np.maximum(shares, np.sqrt(1.0 / (np.diag(gaussian.precision) * np.diag(scatter))))
        return shares

    @cached_property
    def holds(self) -> np.ndarray:
        """(p,) whether each column has a relation in this reading: its conditional sd given the
        other columns at most ``RELATION_SD`` of its sd, under every fold's Gaussian (computed
        once: every scoring batch reads it)."""
        return self.sd_shares <= RELATION_SD

    def standardize(self, y: np.ndarray) -> np.ndarray:
        """The numbers ``y`` as the Gaussians read them (NaN stays NaN)."""
        with np.errstate(invalid="ignore", over="ignore"):
            return (y - self.center) / self.scale

    def residuals(self, gaussian: RobustGaussian, u: np.ndarray) -> np.ndarray:
        """(n, p) each cell's residual given the others under one fold's ``gaussian``, in conditional
        sd (NaN where absent): absent cells enter at their conditional means, every predictor
        within its bound."""
        clipped = np.clip(u, -self.bound, self.bound)
        return gaussian.cell_residuals(gaussian.fill(clipped, self.bound), u, self.bound)

    def to_state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {f"{prefix}center": self.center, f"{prefix}scale": self.scale, f"{prefix}bound": self.bound}
        metas = []
        for k, gaussian in enumerate(self.gaussians):
            meta, parts = gaussian.to_state(f"{prefix}{k}.")
            metas.append(meta)
            arrays.update(parts)
        return {"reading": self.reading, "gaussians": metas}, arrays

    @classmethod
    def from_state(
        cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str, p: int
    ) -> Relations:
        center, scale, bound = (
            np.asarray(arrays[f"{prefix}{name}"], dtype=np.float64) for name in ("center", "scale", "bound")
        )
        for name, values in (("centers", center), ("scales", scale), ("bounds", bound)):
            if values.shape != (p,) or not np.isfinite(values).all():
                raise ValueError(f"the relations' {name} must be {p} finite numbers")
        if not ((scale > 0).all() and (bound > 0).all()):
            raise ValueError("the relations' scales and bounds must be positive")
        gaussians = [
            RobustGaussian.from_state(part, arrays, f"{prefix}{k}.", p)
            for k, part in enumerate(meta["gaussians"])
        ]
        if meta.get("reading") not in READINGS:
            raise ValueError(f"the relations' reading must be one of {', '.join(READINGS)}")
        return cls(center, scale, bound, gaussians, str(meta["reading"]))


def _largest_abs(values: np.ndarray, rank: int) -> float:
    """The ``rank``-th largest absolute finite value (the smallest one if there are fewer; 0 if none)."""
    seen = np.sort(np.abs(values[np.isfinite(values)]))
    return float(seen[-min(rank, len(seen))]) if len(seen) else 0.0


def fit_per_fold(
    hot_decked: np.ndarray,
    absent: np.ndarray,
    seen: np.ndarray,
    folds: np.ndarray,
    rows: list[np.ndarray],
    seed: int,
) -> list[RobustGaussian]:
    """Each fold's robust Gaussian from its training ``rows[k]``: first of ``hot_decked`` (absent
    cells filled at random, which weakens the columns' relations), then refitted on ``absent``
    with its absent cells at their conditional means under the first fit (one EM step, which
    gives the relations back)."""
    first = [
        RobustGaussian.fit(hot_decked[r], np.random.default_rng(seed + k), seen[r])
        for k, r in enumerate(rows)
    ]
    filled = np.array(absent, dtype=np.float64)
    if np.isnan(filled).any():
        # Each row filled by its own fold's model.
        for k, gaussian in enumerate(first):
            mine = folds == k
            filled[mine] = gaussian.fill(filled[mine])
    # Each fold's refit reads the rows outside it, filled by their own folds' models.
    return [
        RobustGaussian.fit(filled[r], np.random.default_rng(seed + k), seen[r]) for k, r in enumerate(rows)
    ]


def spread_levels(z: np.ndarray, seen: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Columns that take a few values (a 0/1 flag, 1 or 2 kitchens) spread uniformly over the gap
    between their values, for the robust Gaussian's fit only.

    The minimum covariance determinant fits the three quarters of the rows
    that are most alike; for a column that is 1 in 96% of rows they all
    have the same value, its scatter there is nil, and every row with a 2
    would be hundreds of sd away.  Spread over its cell, the 1s have the
    spread of a unit cell, and a 2 is one cell away, as far as it is.
    """
    z = z.copy()
    for j in range(z.shape[1]):
        values = np.unique(z[seen[:, j], j])
        if 1 < len(values) < LATTICE_MIN_LEVELS:
            gap = float(np.min(np.diff(values)))
            z[:, j] += rng.uniform(-gap / 2.0, gap / 2.0, len(z)) * ~np.isnan(z[:, j])
    return z


def hot_deck(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Missing cells take a random observed value of their feature (for fitting).

    Not the median: a spike of identical values would teach a flow a density
    peak that no real row has, and make a column look constant to the MCD.
    """
    z = z.copy()
    for j in range(z.shape[1]):
        nan = np.isnan(z[:, j])
        if nan.any():
            seen = z[~nan, j]
            z[nan, j] = rng.choice(seen, size=int(nan.sum())) if len(seen) else 0.0
    return z
