"""How rows are flagged: one rule, decided once, applied alike in memory, streamed and on Dask.

A rule (:class:`FlagRule`) is Benjamini-Hochberg at a false discovery rate
over the rows' p-values, or the top share of the anomaly scores: exactly
``ceil(c n)`` rows, rows tied at the cut taken in row order.  Every way of
scoring reaches it in two steps:

1. ``rule.cutoff(n_rows, chunks)``: the cutoff, from the rule's column
   (:attr:`FlagRule.column`) of every row, handed over as a sequence of
   chunks in row order that can be read again (one chunk in memory, a
   spill's row groups when streaming, a Dask frame's partitions);
2. ``rule.apply(values, cutoff, chunk)``: one chunk's flags (chunks may be
   flagged in any order, or at once).

Benjamini-Hochberg's cutoff needs only the p-values at most the level
(:func:`bh_cutoff`), a share of the rows; the top share needs the k-th
largest score, found in a few passes over the chunks in bounded memory
(:func:`kth_largest`), and how many rows tied at it each chunk takes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from nrad.errors import NradError

#: The false discovery rate used when neither an FDR nor a contamination is given.
DEFAULT_FDR = 0.05

Chunks = Callable[[], Iterable[np.ndarray]]


@dataclass(frozen=True)
class Cutoff:
    """Where a rule cuts: flag ``p <= value`` (FDR), or ``score > value`` plus, per chunk, its first
    ``ties[chunk]`` rows whose score equals ``value`` (top share)."""

    value: float
    ties: tuple[int, ...] = ()


@dataclass(frozen=True)
class FlagRule:
    """How rows are flagged: Benjamini-Hochberg at an FDR, or the top share of scores."""

    kind: str  # "fdr" | "top"
    level: float

    @classmethod
    def of(cls, fdr: float | None = None, contamination: float | None = None) -> FlagRule:
        """``fdr`` or ``contamination``, not both; neither: BH at ``DEFAULT_FDR``.  Levels lie in (0, 1)."""
        if fdr is not None and contamination is not None:
            raise NradError("give either an fdr or a contamination, not both")
        if contamination is not None:
            return cls("top", check_level(contamination, "contamination"))
        return cls("fdr", check_level(DEFAULT_FDR if fdr is None else fdr, "fdr"))

    @property
    def column(self) -> str:
        """The scored column the rule reads."""
        return "anomaly_score" if self.kind == "top" else "p_value"

    def describe(self) -> str:
        if self.kind == "top":
            return f"top {self.level:.2%} of scores"
        return f"Benjamini-Hochberg on p-values, FDR {self.level:g}"

    def cutoff(self, n_rows: int, chunks: Chunks) -> Cutoff:
        """The cutoff over ``n_rows`` rows whose :attr:`column` ``chunks()`` yields, in row order."""
        if self.kind == "fdr":
            # Only p-values at most the level can be flagged: they decide the cutoff alone (a share
            # ``level`` of the normal rows is kept, not every p-value).
            kept = [v[v <= self.level] for v in (np.asarray(c, dtype=np.float64) for c in chunks())]
            return Cutoff(bh_cutoff(np.concatenate(kept) if kept else np.zeros(0), n_rows, self.level))
        k = int(np.ceil(self.level * n_rows))
        if k == 0:
            return Cutoff(np.inf)  # nothing to flag: no pass over the chunks (apply reads no ties)
        kth = kth_largest(lambda: (np.asarray(v, dtype=np.float64) for v in chunks()), k)
        tied = [(int((v > kth).sum()), int((v == kth).sum())) for v in chunks()]
        left = k - sum(above for above, _ in tied)
        ties = []
        for _, count in tied:
            ties.append(min(count, max(left, 0)))
            left -= ties[-1]
        return Cutoff(kth, tuple(ties))

    def apply(self, values: np.ndarray, cutoff: Cutoff, chunk: int = 0) -> np.ndarray:
        """Flags of one chunk's :attr:`column` values (chunk: its place among the cutoff's chunks)."""
        v = np.asarray(values, dtype=np.float64)
        if self.kind == "fdr":
            return v <= cutoff.value
        flags = v > cutoff.value
        flags[np.flatnonzero(v == cutoff.value)[: cutoff.ties[chunk] if cutoff.ties else 0]] = True
        return flags

    def level_that_flags(self, p_values: np.ndarray, n_rows: int) -> float | None:
        """The smallest FDR at which Benjamini-Hochberg over ``n_rows`` rows flags the strongest
        of ``p_values`` (every row's, or only the strongest rows'): ``min_k n p_(k) / k``, a
        minimum that over fewer rows is still a level that flags them.  None for a top share, or
        without p-values."""
        p = np.sort(np.asarray(p_values, dtype=np.float64))
        p = p[np.isfinite(p)]
        if self.kind != "fdr" or not len(p) or n_rows == 0:
            return None
        return float(np.min(p * n_rows / np.arange(1, len(p) + 1)))

    def flags(self, values: np.ndarray) -> np.ndarray:
        """Flags of all rows at once (in memory)."""
        values = np.asarray(values, dtype=np.float64)
        return self.apply(values, self.cutoff(len(values), lambda: [values]))


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


def kth_largest(
    chunks: Callable[[], Iterator[np.ndarray]], k: int, bins: int = 4096, exact_max: int = 1 << 20
) -> float:
    """The k-th largest value (1-based) of a stream that can be replayed, in O(bins + exact_max) memory.

    Each round histograms the values still in the candidate interval into
    ``bins`` equal bins and keeps the bin holding the k-th largest; once at
    most ``exact_max`` candidates remain they are gathered and selected
    exactly.  Two passes per round; a round narrows the interval ``bins``-fold.
    """
    lo, hi, hi_closed, need = -np.inf, np.inf, True, k

    def inside(v: np.ndarray) -> np.ndarray:
        return (v >= lo) & ((v < hi) | (hi_closed & (v == hi)))

    while True:
        n, vmin, vmax = 0, np.inf, -np.inf
        for c in chunks():
            v = c[inside(c)]
            if v.size:
                n, vmin, vmax = n + v.size, min(vmin, v.min()), max(vmax, v.max())
        if n < need:
            raise ValueError(f"asked for the {k}-th largest of fewer values")
        if vmin == vmax:
            return float(vmin)
        if n <= exact_max:
            v = np.concatenate([c[inside(c)] for c in chunks()])
            return float(np.partition(v, v.size - need)[v.size - need])
        edges = np.linspace(vmin, vmax, bins + 1)
        hist = np.zeros(bins, dtype=np.int64)
        for c in chunks():
            v = c[inside(c)]
            hist += np.bincount(
                np.clip(np.searchsorted(edges, v, side="right") - 1, 0, bins - 1), minlength=bins
            )
        from_top = np.cumsum(hist[::-1])
        b = int(np.searchsorted(from_top, need))  # first top-bin count reaching `need`
        j = bins - 1 - b
        need -= int(from_top[b - 1]) if b > 0 else 0
        lo, hi, hi_closed = edges[j], edges[j + 1], j == bins - 1
