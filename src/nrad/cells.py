"""Tests of single cells: how unusual each value is given the rest of its row.

A row's density is a sum over its columns, so in a wide table one
impossible cell (a year of 2207) drowns in the tens of nats by which
ordinary rows differ.  Each cell is therefore also tested on its own, and
the row's p-value combines its row-level test with its cells' tests
(:func:`nrad.calibration.combine`, weighted Bonferroni: valid whatever the
dependence between them).

* **A number** is judged by its residual ``t`` given the row's other numbers
  under the robust Gaussian model (:meth:`nrad.gaussian.RobustGaussian.cell_residuals`:
  conditional sd, the cell itself unclipped so that a value far beyond
  everything seen stays far).  The residuals of the training rows (each
  scored by the fold model that did not see it) calibrate two tails per
  column, one per side (:class:`nrad.calibration.TailModel`), and the cell's
  p-value is twice the smaller side's.  The tails are fitted to
  ``t |t| / 2``, the cell's own negative log-density in nats under the
  Gaussian model (signed by the side): for Gaussian residuals its tail is
  exactly exponential, where ``|t|`` itself would make an exponential tail
  call a value 5 sd out 30 times less rare than it is.  A column bounded
  below (counts, amounts) has a short lower tail, so a negative count is
  far out even when it is only a few sd from the median.
* **A category** (also a number's missing or spike indicator) is judged by
  the category model itself: the chance that a normal row, with this row's
  parent level, has a level at most as probable,
  ``P(pi(C) <= pi(c) | parent)``, with the row's own counts left out when
  it is a training row.  The smoothing that gives a level never seen its
  probability (Good-Turing's estimate of the chance of something new) is
  what makes this calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nrad.calibration import TailModel
from nrad.categories import CategoryModel

#: When the residuals may hold the anomalies scored (a table scored against itself), each side's
#: fit leaves out its top 1% of the rows: a few gross values per column.  Not more above a gap: a
#: block of rows sharing a legitimate value (4% of houses with two kitchens) makes a gap in the
#: residuals' tail too (nrad.calibration.gap_trim).
CELL_TRIM = (0.01, 0.01)
#: Share of a row's p-value weight that goes to its cells (split equally among them); the rest to
#: the row-level test.
CELL_WEIGHT = 0.5


@dataclass
class NumericCellTests:
    """Per numeric feature, the two tails of its calibration residuals (upper: ``t``, lower: ``-t``)."""

    upper: list[TailModel]
    lower: list[TailModel]

    @classmethod
    def fit(cls, residuals: np.ndarray, trim: tuple[float, float] | None = None) -> NumericCellTests:
        """From (n, p) out-of-fold residuals of the training rows (NaN where the cell is missing);
        ``trim``: see :meth:`nrad.calibration.TailModel.fit`."""
        upper, lower = [], []
        for j in range(residuals.shape[1]):
            seen = _nats(residuals[:, j][np.isfinite(residuals[:, j])])
            seen = seen if len(seen) else np.zeros(1)
            upper.append(TailModel.fit(seen, trim))
            lower.append(TailModel.fit(-seen, trim))
        return cls(upper, lower)

    @property
    def n_features(self) -> int:
        return len(self.upper)

    def p_values(self, residuals: np.ndarray) -> np.ndarray:
        """(n, p) two-sided p-values of residuals (NaN where the residual is NaN: not tested)."""
        out = np.full(residuals.shape, np.nan)
        for j in range(self.n_features):
            t = _nats(residuals[:, j])
            seen = np.isfinite(t)
            if seen.any():
                sides = np.minimum(self.upper[j].p_values(t[seen]), self.lower[j].p_values(-t[seen]))
                out[seen, j] = np.minimum(2.0 * sides, 1.0)
        return out

    def to_state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta: dict[str, Any] = {"n_features": self.n_features, "upper": [], "lower": []}
        arrays: dict[str, np.ndarray] = {}
        for side in ("upper", "lower"):
            for j, tail in enumerate(getattr(self, side)):
                part, tensors = tail.to_state(f"{prefix}{side}.{j}.")
                meta[side].append(part)
                arrays.update(tensors)
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str) -> NumericCellTests:
        p = int(meta["n_features"])
        sides = {
            side: [TailModel.from_state(meta[side][j], arrays, f"{prefix}{side}.{j}.") for j in range(p)]
            for side in ("upper", "lower")
        }
        return cls(sides["upper"], sides["lower"])


def _nats(t: np.ndarray) -> np.ndarray:
    """``t |t| / 2``: a residual's Gaussian negative log-density, signed by its side."""
    return 0.5 * t * np.abs(t)


def category_p_values(
    model: CategoryModel, codes: np.ndarray, leave_out: np.ndarray | None = None
) -> np.ndarray:
    """(n, q) p-value of each code: ``P(pi(C) <= pi(c))`` under ``p(c_j | c_parent(j))``.

    ``leave_out``: the codes the rows had when they trained the model (their
    counts are taken out first, as in :meth:`CategoryModel.log_terms`).
    """
    codes = np.asarray(codes, dtype=np.int64)
    n, q = codes.shape
    out = np.ones((n, q))
    for j in range(q):
        k = model.n_codes[j]
        parent = model.parent[j]
        candidates = np.tile(np.arange(k), n)
        parents = None if parent < 0 else np.repeat(codes[:, parent], k)
        own = None if leave_out is None else np.repeat(leave_out[:, j], k)
        own_parent = None if leave_out is None or parent < 0 else np.repeat(leave_out[:, parent], k)
        probs = np.exp(model.log_term(j, candidates, parents, own, own_parent)).reshape(n, k)
        probs = probs / probs.sum(axis=1, keepdims=True)
        mine = probs[np.arange(n), codes[:, j]]
        # A tolerance so that levels as probable as this one (ties) count as "at most as probable".
        out[:, j] = np.minimum((probs * (probs <= mine[:, None] * (1 + 1e-9))).sum(axis=1), 1.0)
    return out
