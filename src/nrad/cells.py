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
  ``-log P(T > t)`` (per side), the Gaussian model's own surprise at the
  value: for Gaussian residuals it is exactly exponential with mean 1 at
  every threshold, so the fit has only to correct the model where the
  residuals are heavier, where a tail fitted to ``|t|`` or ``t^2 / 2``
  extrapolates from where they are not yet exponential (a value 5 sd out
  called 3 to 30 times rarer than it is).  A column bounded
  below (counts, amounts) has a short lower tail, so a negative count is
  far out even when it is only a few sd from the median.  It is also judged
  by its value in its column, with no context at all: where the tail of a
  column's in-context values is heavy, a year of 2207 in a column running
  1895-2010 is 26 sd out in its context and still p = 3e-5; in its column
  it is 200 years beyond the column's short upper tail.  A positive
  column's value in its column is read in ratios on its lower side
  (:class:`Ratios`: a price of 1 among prices of 300 and more).  A cell's
  p-value is three times the smallest of its three tests' (Bonferroni over them).
* **A category** (also a number's missing or spike indicator) is judged by
  the category model itself: the chance that a normal row, with this row's
  parent level, has a level at most as probable,
  ``P(pi(C) <= pi(c) | parent)``, with the row's own counts left out when
  it is a training row.  The smoothing that gives a level never seen its
  probability (Good-Turing's estimate of the chance of something new) is
  what makes this calibrated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from nrad.calibration import TailModel
from nrad.categories import CategoryModel
from nrad.numeric import (
    LATTICE_MIN_LEVELS,
    SHARED_MIN_ROWS,
    mostly_on_lattice,
    off_lattice,
    yeo_johnson_inverse,
)

#: A numeric column with fewer present values than this gets ranks only, no fitted tail.
MIN_CELL_VALUES = 100
#: When the cells may hold the anomalies scored (a table scored against itself), each side's fit
#: leaves out its top 1% of the rows: a few gross values per column.  Not the values of a column of
#: two (spread over the gap between them to be fitted): each is held by many rows (else the column is
#: read as a category, nrad.preprocess.RARE_FLAG_SHARE), and a cut through the top one's spread
#: would leave its own rows beyond a tail fitted to the rest: every 1 of a flag that 1.5% of the rows
#: hold was called impossible.  Their residuals given the row are trimmed as any.
CELL_TRIM = (0.01, 0.01)
#: A cell's tails may be heavier than a row's log-density (results/FDR.md lists the shapes fitted
#: on clean tables): the largest shape their fits may take.  Not more for residuals (read as a
#: Gaussian surprise, which doubles a power tail's shape): a table fitted on itself holds its
#: anomalies, and a heavier tail allowed puts the trimmed ones back into the fit (see
#: TailModel.fit), which then calls a row 15 conditional sd off its relation ordinary.
CELL_MAX_SHAPE = 0.5
#: A residual's tail is never lighter than its Gaussian's (scale 1 of the surprise): where the
#: training rows' residuals are all near 0 (a relation that holds exactly, to the last rounding),
#: a fitted tail would shrink to their spread and call a row a fraction of a conditional sd off
#: its relation an outlier.
RESIDUAL_MIN_SCALE = 1.0
#: A lattice column (counts, ratings, scores) has a wall at its most extreme value (0 visits, a
#: rating of 5 of 5) when that value holds at least this share of its values (or at least
#: ``WALL_MIN_ROWS`` and more than the ``CAP_VALUES`` values inward hold on average, beyond chance
#: at ``WALL_LEVEL``: a cap, which piles up at itself what would lie beyond it, 16 of 3,000 scores
#: at 100 and 3, 1 and 7 at 97 to 99) ...
WALL_SHARE = 0.01
#: ... and at least this many values: in a small table a thin tail's extreme value holds 1% by
#: chance (a count of mean 40 whose smallest value, 28, two of 150 rows hold), and the next
#: value beyond it (27) is no error; a count's 0 needs no more ...
WALL_MIN_ROWS = 10
#: ... and at least this share of the next value's (the values pile up there instead of thinning
#: out: a binomial's rare 3 of 5, which a 4 follows now and then, is no wall); a count's 0 is a
#: wall whatever the next (counts are never negative) ...
WALL_RATIO = 0.5
#: ... as long as at most this share of its values lie beyond it (a table fitted on itself holds
#: its errors), and no value beyond it that ``SHARED_MIN_ROWS`` rows hold (a value that many rows
#: share is the column's, not as many errors: 15 of 30,000 houses with three bathrooms and one
#: bedroom, past "bedrooms at least bathrooms - 1", which 0.1% of a large table allows): a value
#: beyond the wall (a negative count) is outside the column's support ...
BEYOND_WALL = 0.001
#: ... and so few lie beyond it that, were the values to go on thinning out past it as they do up
#: to it, a Poisson count would fall that low with at most this chance (a count's 0 needs no
#: more).  Thinning out from 18 rows at 5 transit days to 10 at 6, 5.6 rows would lie at 7: none
#: in 150 rows is no evidence of a wall (chance 0.4%), and the next table's 7 was called impossible.
WALL_LEVEL = 1e-3
#: A cap's count is held against the mean count of this many values inward of it (see
#: ``WALL_SHARE``): one next value alone is too few rows to read a pile against ...
CAP_VALUES = 3
#: ... and is at least this many times that mean: a cap piles up at itself what would lie beyond it,
#: a mass like the values' own near it, where a value a little more popular than its neighbours (293
#: of 53,940 diamonds at 0.23 carat, 240 on average at 0.24 to 0.26) passes the Poisson test in a
#: large table and is no bound.
CAP_RATIO = 2.0
#: A low wall one step above a 0 that is a column's least value expects this share of the rows a
#: steady thinning (of at most a half) would put at 0 (see :func:`_lattice_walls`): half a cell,
#: and a density that rises from 0 in proportion (an eighth of the first step's rows there).
ZERO_CELL_SHARE = 0.25
#: A column at least 0 (all but ``BEYOND_WALL`` of its values) has a wall at 0 when its smallest
#: value at least 0 is at least this share of its median: 0 lies beyond its lower tail, not in
#: it.  A column whose values run down to near 0 (a measurement of mean 50 and sd 15, negative
#: in one row of a thousand) has no wall there: its rare negative values are ordinary.
ZERO_WALL_GAP = 0.25
#: A lattice column of at most this many distinct values, each a step from the next (scores, ratings,
#: small counts), holds no value off its lattice: one is outside its support (a mean imputed into a
#: column of scores, 1.721 among 1 to 4; 2.5 children).  A column of more values is a measurement at
#: a precision, and a value between its steps is a finer one.
LATTICE_RULE_LEVELS = 20
#: A column holds times of day written HHMM (a departure at 1359, the next minute 1400) when its
#: values are whole, from 0 to 2400, their last two digits stay below 60 in all but ``BEYOND_WALL``
#: of its rows, and were those digits any multiple of their step (every 5 minutes, every 15) its
#: distinct values would reach 60 to 99 that rarely with chance at most ``WALL_LEVEL``: a value whose last
#: two digits are 60 or more (1375) or past 2400 (2575) is no time of day, and lies within the
#: column's range and between its values, where no tail sees it.  At least this many values ...
CLOCK_MIN_ROWS = 50
#: ... of at least this many distinct minutes (a half-hour timetable's 0 and 30 are too few to
#: tell from codes that end so) ...
CLOCK_MIN_MINUTES = 3
#: ... over at least this many hours (a column of numbers below 100 ends below 60 by its range, and
#: treatment codes 0 to 311 by their digits).
CLOCK_MIN_HOURS = 6
#: Pairs of lattice columns whose difference is searched for walls (a bound one column never passes
#: given the other: a customer's years as a customer never above their age less 18): at most this
#: many lattice columns (the pairs grow as their square) ...
MAX_PAIR_COLUMNS = 64
#: A difference's wall is kept when so few rows lie beyond it, against how many would were the
#: two columns unrelated, that a Poisson count falls that low with at most this chance (small:
#: thousands of pairs are searched in a wide table).
PAIR_WALL_LEVEL = 1e-6
#: A difference's wall is a pile: at least as many rows at it as at the next value inward.  A bound
#: met piles rows up at it (remodelled in the year built, customers since their 18th birthday);
#: two columns that only rise together thin out towards their difference's edge (rooms less
#: bathrooms: 15 rows at 1, 23 at 2), and a new house with as many bathrooms as rooms is rare,
#: not impossible.
PAIR_PILE_RATIO = 1.0
#: ... or no pile, but an edge so sharp that, were the differences to go on thinning out past it as
#: they do up to it, so few rows would lie beyond with at most this chance: a bound that binds
#: without piling rows up (hired at 18 or later: 329 rows at 18, 332 at 19, none below).  The
#: rooms less bathrooms above (15 at 1 after 23 at 2) would put 9.8 rows at 0, and none there has
#: chance 6e-5: a thinning edge, no bound.
PAIR_EDGE_LEVEL = 1e-9
#: ... and a bound is met across the columns' values: the rows at a difference's wall hold at
#: least this many values of the first column (remodelled in the year built: 1952, 1961, 2003).
#: A pile of one pair of values is the two columns' own extremes meeting: 13 of 150 invoices of
#: one item on 14 days' terms made "quantity is at least payment terms - 13" a wall, and a
#: wholesale order of 40 items on 60 days' terms impossible.  Nor may one value hold nearly all of
#: the pile (``PAIR_PILE_SHARE``): in 30,000 weather records the dry days of the lowest station
#: (10 m) made "elevation at least snow + 10" a wall that 2 rows of 1,207 met elsewhere by chance,
#: and nine snowy days at stations of 10 to 39 m were called impossible; households whose adults
#: all work pile up at "employed at most adults" half of them with one adult, a bound met.
PAIR_PILE_VALUES = 3
PAIR_PILE_SHARE = 0.9
#: An order between two columns (the day's lowest at most its highest, a gust at least the wind's
#: speed, passengers at most the seats) is a wall of their difference at 0 where all but
#: ``BEYOND_WALL`` of the rows keep it, and the columns paired at random would break it in at
#: least this many rows ...
ORDER_MIN_EXPECTED = 100
#: ... and in more than this many times as many as do: the columns' own ranges overlap, and the
#: order is kept by each row's pair, not by one column's values lying below the other's (a
#: count of executions below a count of arrests, in a few counties above it) ...
ORDER_RATIO = 100.0
#: ... and the rows keep it with a margin: all but ``BEYOND_WALL`` of them further from it than this
#: share of their median distance (the lowest 0.4 degrees or more below the highest, the gust 3
#: km/h or more above the speed).  An order many rows come close to is a tendency that a few
#: cross (a parcel's weight in kg at most its volume in litres: 1.5% of them within 5% of
#: the median margin, and 1 in 3,000 heavier than water), no bound.
ORDER_MARGIN = 0.05
#: Two continuous columns keep an order to this share of their typical size (rounding of their
#: transforms; no real difference is so small).
ORDER_TOLERANCE = 1e-9
#: A cell whose weighted p-value is at most this decides its row alone.  When several do (a
#: broken relation: the birth year and the age of one row), the row names the one whose value is
#: also unusual in its context (a birth year 200 years off, beside an ordinary age).
DECISIVE = 1e-6
#: Share of a row's p-value weight that goes to its cells; the rest to the row-level tests.
CELL_WEIGHT = 0.5
#: Of the cells' share, what the categories' tests get when there are numbers too (split equally
#: among them; the numbers' tests share the rest).  A category's p-value cannot go much below the
#: chance of a level never seen, about 1 / (2n), while Benjamini-Hochberg with k flags needs
#: about q k / n over the test's weight: a category alone can flag a row only with a weight near
#: 5 / k, which no even split gives, so most of the weight goes where it can be used.
CATEGORY_SHARE = 0.2


#: Each numeric cell's value in context and in its column at the low and the high edge of its
#: lattice cell: ``(values_low, values_high, columns_low, columns_high)``, each (n, p).
Edges = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


#: A numeric column whose training values are all above 0, the smallest of them at least this many
#: steps of its lattice (any, when it has none), has its lowest values read in ratios (:class:`Ratios`):
#: a count of 1 or 2 is no ratio to 0 ...
RATIO_MIN_STEPS = 5
#: ... where the smallest value is this quantile of the training values (a table fitted on itself
#: holds its placeholders: a price of 1 among 3,000 of 300 and more) ...
RATIO_QUANTILE = 0.01
#: ... and the values between it and the same quantile from the top span at least this factor: a
#: quantity that varies by ratios.  Exam scores of 25 to 98 thin out towards their lowest as a
#: Gaussian does, far from 0; read in ratios that tail was extrapolated a hundred times too steeply
#: and ordinary low scores were flagged.
RATIO_SPAN = 10.0
#: ... when every training value is above 0: a column that holds a few zeros (a cancelled taxi
#: trip's distance, 9 of 3,000) is no ratio at its zeros, and read so, each 0 stood a thousand
#: times below the shortest trip and was flagged.  A new value at or below 0 is read as this share
#: of the smallest training value (one halving below it).
RATIO_FLOOR = 0.5


@dataclass(frozen=True)
class Ratios:
    """The numeric columns whose value in its column is read in ratios on its lower side.

    A positive quantity's spread is a matter of ratios at its low end: a car
    listed at 1 euro where the cheapest of 3,000 asked 300 is 300 times below
    anything seen, and a placeholder; read on a linear scale it lies a few
    hundred euros below the cheapest, closer than the dearest cars are to
    each other, and its column's lower tail calls it ordinary.  So is an
    amount of 0.01 beside amounts of 5 to 5,000 read as shaped (the shape
    ``log1p(x / s)`` flattens every value below ``s``).  For such a column
    the lower side of the value-in-column test reads ``-log x`` in the
    table's units: the same ranks as ``-y`` among the training values, and a
    tail that extrapolates in ratios.  Its upper side is unchanged (an age
    of 140 is far in years, not much in ratios).  Only where the smallest
    training value is well away from 0 in steps of the column's lattice
    (``RATIO_MIN_STEPS``): a count's 1 is no ratio to its 0; and only where
    the values span a factor (``RATIO_SPAN``): a column that thins out far
    from 0 as a Gaussian does is no ratio either.
    """

    #: Per feature: the shape's magnitude and exponent (:class:`nrad.numeric.NumericModel`), NaN
    #: where the column is not read in ratios ...
    magnitude: np.ndarray
    exponent: np.ndarray
    #: ... and where a value at or below 0 is read (``RATIO_FLOOR`` times the smallest training value).
    floor: np.ndarray

    @classmethod
    def fit(
        cls, units: np.ndarray, magnitude: np.ndarray, exponent: np.ndarray, spacing: np.ndarray
    ) -> Ratios | None:
        """From the training rows' numbers in the table's units (``units``, n x p, NaN absent or at a
        spike), the numeric model's per-feature ``magnitude`` and ``exponent``, and its lattice
        ``spacing`` (0: continuous); None when no column is read in ratios.  A column of fewer than
        ``MIN_CELL_VALUES`` values (whose tails are ranks only) is not, nor one that holds a value at
        or below 0."""
        # The smallest values a 1% trim leaves: a table fitted on itself holds its placeholders.
        p = units.shape[1]
        least, smallest, largest = np.full(p, np.nan), np.full(p, np.nan), np.full(p, np.nan)
        for j in range(p):
            seen = units[:, j][np.isfinite(units[:, j])]
            if len(seen) >= MIN_CELL_VALUES:
                least[j] = seen.min()
                smallest[j], largest[j] = np.quantile(seen, [RATIO_QUANTILE, 1.0 - RATIO_QUANTILE])
        with np.errstate(invalid="ignore"):
            read = (least > 0) & (smallest >= RATIO_MIN_STEPS * spacing) & (largest >= RATIO_SPAN * smallest)
        if not read.any():
            return None
        nan = np.full(len(read), np.nan)
        return cls(
            np.where(read, magnitude, nan),
            np.where(read, exponent, nan),
            np.where(read, RATIO_FLOOR * least, nan),
        )

    def low(self, j: int, c: np.ndarray) -> np.ndarray:
        """The lower side's statistic of column ``j``'s shaped values ``c``: ``-c``, or ``-log`` of
        the value in the table's units (NaN stays NaN)."""
        if not np.isfinite(self.magnitude[j]):
            return -np.asarray(c, dtype=np.float64)
        x = self.magnitude[j] * yeo_johnson_inverse(c, self.exponent[j])
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return np.where(np.isnan(x), np.nan, -np.log(np.where(x > 0, x, self.floor[j])))

    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        return {
            f"{prefix}magnitude": self.magnitude,
            f"{prefix}exponent": self.exponent,
            f"{prefix}floor": self.floor,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str, p: int) -> Ratios | None:
        """None where the file holds none (a model file of version 22 or before reads every column's
        lower side as shaped)."""
        if f"{prefix}magnitude" not in arrays:
            return None
        parts = [
            np.asarray(arrays[f"{prefix}{name}"], dtype=np.float64)
            for name in ("magnitude", "exponent", "floor")
        ]
        if any(part.shape != (p,) for part in parts):
            raise ValueError(f"cell ratios have shapes {[part.shape for part in parts]}, expected ({p},)")
        return cls(*parts)


@dataclass
class NumericCellTests:
    """Per numeric feature, three tests of each cell, each with a tail per side (upper, lower):
    its residual given the row's other numbers (``upper``, ``lower``), its value given its
    context (``value_upper``, ``value_lower``) and its value in its column (``column_upper``,
    ``column_lower``; see the module docstring)."""

    upper: list[TailModel]
    lower: list[TailModel]
    value_upper: list[TailModel]
    value_lower: list[TailModel]
    column_upper: list[TailModel]
    column_lower: list[TailModel]
    #: The columns whose lowest values are read in ratios (None: none).
    ratios: Ratios | None = None

    @classmethod
    def fit(
        cls,
        residuals: np.ndarray,
        values: np.ndarray,
        columns: np.ndarray,
        trim: tuple[float, float] | None = None,
        levels: np.ndarray | None = None,
        shared: np.ndarray | None = None,
        few: np.ndarray | None = None,
        bands: np.ndarray | None = None,
        in_context: np.ndarray | None = None,
        ratios: Ratios | None = None,
    ) -> NumericCellTests:
        """From (n, p) out-of-fold residuals of the training rows, their (n, p) values in context
        and their (n, p) values as the columns hold them, shaped (NaN where the cell is absent);
        ``trim``: see :meth:`nrad.calibration.TailModel.fit`.  ``levels`` (p, bool): the columns
        of two values, spread over the gap between them (:func:`nrad.gaussian.spread_levels`),
        whose values are tested untrimmed (see :data:`CELL_TRIM`).  ``shared`` (n, p, bool): the
        cells whose value many rows of the column hold (:func:`nrad.numeric.shared_values`), which a trimmed
        value test never leaves out, nor a residual test in the columns ``few`` (p, bool; see
        :func:`few_valued`).  ``bands`` (n, p, bool): the cells of a band (:func:`far_bands`),
        whose rows' cells no test leaves out, in any column.  ``in_context`` (n, p, bool): the
        cells whose value many rows of their context share
        (:meth:`nrad.numeric.NumericModel.shared_in_context`), which the value-in-context test
        never leaves out instead of ``shared`` (None: ``shared``).  ``ratios``: the columns whose
        value in its column is read in ratios on its lower side (:class:`Ratios`)."""
        # A residual's surprise is exponential where the model holds: its tail takes the posterior
        # mean shape, not the average of the shapes' p-values (see TailModel.fit).  A value many
        # rows share is still tested against the rest of its row (an age of 21 is common, and
        # wrong beside a balance only the oldest customers hold) but in a column of a few values,
        # whose rare far one the robust Gaussian, fitted on the rows most alike, cannot read.
        kept = None if shared is None or few is None else shared & few[None, :]
        in_context = shared if in_context is None else in_context
        if bands is not None:
            # A band's rows are read among themselves (see far_bands): no test leaves their cells
            # out, in any column (the models read none of a row of 100 items, its total, its weight).
            held = np.repeat(bands.any(axis=1, keepdims=True), residuals.shape[1], axis=1)
            kept = held if kept is None else kept | held
            shared = held if shared is None else shared | held
            in_context = held if in_context is None else in_context | held
        upper, lower = _side_tails(
            residuals, _surprise, trim, CELL_MAX_SHAPE, RESIDUAL_MIN_SCALE, mean_shape=True, kept=kept
        )
        value_upper, value_lower = _side_tails(
            values, np.asarray, trim, CELL_MAX_SHAPE, untrimmed=levels, kept=in_context
        )
        column_upper, column_lower = _side_tails(
            columns, np.asarray, trim, CELL_MAX_SHAPE, untrimmed=levels, kept=shared,
            lows=None if ratios is None else ratios.low,
        )  # fmt: skip
        return cls(upper, lower, value_upper, value_lower, column_upper, column_lower, ratios)

    def column_low(self, j: int, c: np.ndarray) -> np.ndarray:
        """The lower side's statistic of values ``c`` (shaped) in column ``j``: ``-c``, or where the
        column is read in ratios, ``-log`` of the value in the table's units (:class:`Ratios`)."""
        return -c if self.ratios is None else self.ratios.low(j, c)

    @property
    def n_features(self) -> int:
        return len(self.upper)

    def p_values(self, residuals: np.ndarray, values: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """(n, p) p-value of each cell (NaN where absent: not tested): the smallest of its three
        tests' two-sided p-values, times three (Bonferroni over the three)."""
        return np.exp(self.log_p_values(residuals, values, columns))

    def log_p_values(
        self, residuals: np.ndarray, values: np.ndarray, columns: np.ndarray, edges: Edges | None = None
    ) -> np.ndarray:
        """Natural logs of :meth:`p_values` (finite where they underflow); ``edges``: see
        :meth:`log_p_parts`."""
        parts = self.log_p_parts(residuals, values, columns, edges)
        return np.minimum(np.log(len(parts)) + np.minimum.reduce(parts), 0.0)

    def log_p_parts(
        self, residuals: np.ndarray, values: np.ndarray, columns: np.ndarray, edges: Edges | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n, p) log two-sided p-values of each cell's three tests: its residual given the row, its
        value in context, its value in its column (NaN where the cell is absent).  ``edges``: the
        values in context and in the column at the low and the high edge of each cell's lattice
        cell (``values_low, values_high, columns_low, columns_high``), where the count floor of
        the upper and of the lower side reads the calibration values (None: at the values)."""
        parts = tuple(np.full(residuals.shape, np.nan) for _ in range(3))
        for j in range(self.n_features):
            t, r, c = residuals[:, j], values[:, j], columns[:, j]
            seen = np.isfinite(t) & np.isfinite(r) & np.isfinite(c)
            if seen.any():
                parts[0][seen, j] = _two_sided(
                    self.upper[j], self.lower[j], _surprise(t[seen]), _surprise(-t[seen])
                )
                at = (None,) * 4 if edges is None else tuple(edge[seen, j] for edge in edges)
                parts[1][seen, j] = _two_sided(
                    self.value_upper[j], self.value_lower[j], r[seen], -r[seen], at[0], _negated(at[1])
                )
                high_edge = None if at[3] is None else self.column_low(j, at[3])
                parts[2][seen, j] = _two_sided(
                    self.column_upper[j], self.column_lower[j], c[seen], self.column_low(j, c[seen]), at[2],
                    high_edge,
                )  # fmt: skip
        return parts

    def left_out(self, residuals: np.ndarray, values: np.ndarray, columns: np.ndarray) -> np.ndarray:
        """(n, p) True where a cell is among those its column's tails left out of their fit (the
        top scores of a trimmed fit, :meth:`nrad.calibration.TailModel.fit`): the values that stand
        beyond what the rest of the column allows, in any of the three tests, on either side."""
        out = np.zeros(residuals.shape, dtype=bool)
        for j in range(self.n_features):
            low = self.column_low(j, columns[:, j])
            sides = (
                (self.upper[j], _surprise(residuals[:, j])), (self.lower[j], _surprise(-residuals[:, j])),
                (self.value_upper[j], values[:, j]), (self.value_lower[j], -values[:, j]),
                (self.column_upper[j], columns[:, j]), (self.column_lower[j], low),
            )  # fmt: skip
            for tail, statistic in sides:
                out[:, j] |= tail.left_out(statistic)
        return out

    def to_state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta: dict[str, Any] = {"n_features": self.n_features}
        arrays: dict[str, np.ndarray] = {}
        for side in _SIDES:
            meta[side] = []
            for j, tail in enumerate(getattr(self, side)):
                part, tensors = tail.to_state(f"{prefix}{side}.{j}.")
                meta[side].append(part)
                arrays.update(tensors)
        if self.ratios is not None:
            arrays.update(self.ratios.to_arrays(f"{prefix}ratios."))
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str) -> NumericCellTests:
        p = int(meta["n_features"])
        sides = {
            side: [TailModel.from_state(meta[side][j], arrays, f"{prefix}{side}.{j}.") for j in range(p)]
            for side in _SIDES
        }
        return cls(**sides, ratios=Ratios.from_arrays(arrays, f"{prefix}ratios.", p))


_SIDES = ("upper", "lower", "value_upper", "value_lower", "column_upper", "column_lower")


#: A category level is a segment when it holds at least this many training rows and at least this
#: share of them hold what marks it: a value of a numeric column that the column's in-sample tails
#: leave out (:meth:`NumericCellTests.left_out`), or a robust distance that stands apart
#: (:func:`nrad.table._is_segment`).
SEGMENT_MIN_ROWS = SHARED_MIN_ROWS
SEGMENT_SHARE = 0.5


def levels_mostly_held(held: np.ndarray, column: np.ndarray) -> np.ndarray:
    """The codes of ``column`` (one categorical feature's codes, n) whose levels hold at least
    ``SEGMENT_MIN_ROWS`` rows, at least ``SEGMENT_SHARE`` of them ``held`` (n, bool)."""
    levels, inverse, counts = np.unique(column, return_inverse=True, return_counts=True)
    share = np.bincount(inverse, weights=held.astype(float), minlength=len(levels)) / counts
    return levels[(counts >= SEGMENT_MIN_ROWS) & (share >= SEGMENT_SHARE)]


@dataclass
class CellSegments:
    """Category levels whose rows share a value far out in a numeric column: backups to one
    server, each hundreds of times the bytes of other flows; a service billed only in bulk.

    Such a value is the level's trait, not a cell's error: most rows of the level hold it (at
    least ``SEGMENT_SHARE`` of ``SEGMENT_MIN_ROWS`` or more), and a table that has them has them
    in every sample.  Read against the rest of the column they stand beyond its tails, and a table
    scored against itself, whose tails leave its top values out of their fit, flagged every one.
    Their cells are not tested in that column: they do not calibrate its tails (the other rows'
    extremes, a wrapped byte counter, are read against the rest), and their own values there are
    not judged by the column's tails.  Their rows train the flows and the other members (a far
    value of theirs is no reason to leave a row out, :func:`nrad.table.fit_table`), and are still
    read as a whole (the density, the anomaly score, the robust distance) and in their other
    columns.  A broken batch is no segment: it is a small part of its line's and shift's rows
    (research/notes.md, section 45).
    """

    #: Per segment: the numeric feature, the categorical feature and the level's code.
    feature: np.ndarray
    category: np.ndarray
    code: np.ndarray

    @classmethod
    def find(cls, left_out: np.ndarray, codes: np.ndarray) -> CellSegments | None:
        """The segments of the training rows' cells ``left_out`` (n, p; see
        :meth:`NumericCellTests.left_out`) among the levels of their categorical features
        ``codes`` (n, categorical features); None if there is none."""
        found: list[tuple[int, int, int]] = []
        for j in np.flatnonzero(left_out.sum(axis=0) >= SEGMENT_MIN_ROWS * SEGMENT_SHARE):
            for c in range(codes.shape[1]):
                found += [(int(j), c, int(code)) for code in levels_mostly_held(left_out[:, j], codes[:, c])]
        if not found:
            return None
        feature, category, code = (np.asarray(x, dtype=np.int64) for x in zip(*found, strict=True))
        return cls(feature, category, code)

    def mask(self, codes: np.ndarray, p: int) -> np.ndarray:
        """(n, p) True where a row's cell in a numeric feature lies in one of its segments
        (``codes``: the rows' categorical codes, n x categorical features)."""
        out = np.zeros((len(codes), p), dtype=bool)
        for j, c, code in zip(self.feature, self.category, self.code, strict=True):
            out[:, j] |= codes[:, c] == code
        return out

    def to_state(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}{name}": getattr(self, name) for name in ("feature", "category", "code")}

    @classmethod
    def from_state(
        cls, arrays: dict[str, np.ndarray], prefix: str, p: int, n_codes: list[int]
    ) -> CellSegments:
        feature, category, code = (
            np.asarray(arrays[f"{prefix}{name}"], dtype=np.int64).reshape(-1)
            for name in ("feature", "category", "code")
        )
        if not len(feature) == len(category) == len(code):
            raise ValueError("cell segments must have a category and a code per feature")
        if ((feature < 0) | (feature >= p)).any() or ((category < 0) | (category >= len(n_codes))).any():
            raise ValueError(f"cell segments must name numeric features 0 to {p - 1} and categorical ones")
        if ((code < 0) | (code > np.asarray(n_codes, dtype=np.int64)[category])).any():
            raise ValueError("cell segments must name levels of their categorical features")
        return cls(feature, category, code)


@dataclass
class Bands:
    """The bands of numeric columns that a table vouches for (:func:`far_bands`): per band its
    numeric feature, its side (+1 above the rest of the column, -1 below) and where it begins
    (``bound``, in the table's units: above its gap to the column's other values, see
    :func:`_band_start`); and the partner column whose far values go with it (``partner``, -1:
    none), on its side from its bound (``partner_side``, ``partner_bound``).

    A row's cell lies in a band when its value is at or beyond the band's
    bound and an exact relation its row keeps vouches for it
    (:meth:`nrad.identities.Identities.kept`), or its value in the partner
    column lies at or beyond the partner's bound: new rows are read as the
    training rows were, a stay of four weeks whose tax and total are its
    four weeks' as one of the band, a stay typed as 40 nights (its tax and
    total those of 4) not; a ranch of 300 hectares with its 200 head of
    cattle as one of the ranches, 300 hectares typed for 3 beside 4 cows not.
    """

    feature: np.ndarray
    side: np.ndarray
    bound: np.ndarray
    partner: np.ndarray | None = None
    partner_side: np.ndarray | None = None
    partner_bound: np.ndarray | None = None

    def mask(self, values: np.ndarray, vouched: np.ndarray) -> np.ndarray:
        """(n, p) True where a row's cell lies in a band: ``values`` (n, p) in the table's units,
        ``vouched`` (n, p) the cells an identity their row keeps vouches for."""
        out = np.zeros(values.shape, dtype=bool)
        partners = self._partners()
        with np.errstate(invalid="ignore"):
            for j, side, bound, (k, k_side, k_bound) in zip(
                self.feature, self.side, self.bound, partners, strict=True
            ):
                why = vouched[:, j] if k < 0 else vouched[:, j] | (k_side * values[:, k] >= k_side * k_bound)
                out[:, j] |= (side * values[:, j] >= side * bound) & why
        return out

    def partnered(self, values: np.ndarray, vouched: np.ndarray) -> np.ndarray:
        """(n, p) the cells of :meth:`mask` in a band with a partner column: read among the band's
        rows alone, they calibrate none of their column's tests for new rows (a farm's hectares
        typed as square metres, 25,000 where ranches end at 400, is far beyond the farms' tail,
        and not beyond one that the ranches' 400 drew out)."""
        partners = np.array([k >= 0 for k, _, _ in self._partners()], dtype=bool)
        if not partners.any():
            return np.zeros(values.shape, dtype=bool)
        return Bands(
            self.feature[partners], self.side[partners], self.bound[partners],
            *(x if x is None else x[partners] for x in (self.partner, self.partner_side, self.partner_bound)),
        ).mask(values, vouched)  # fmt: skip

    def _partners(self) -> list[tuple[int, int, float]]:
        if self.partner is None:
            return [(-1, 1, 0.0)] * len(self.feature)
        assert self.partner_side is not None and self.partner_bound is not None
        return list(
            zip(self.partner.tolist(), self.partner_side.tolist(), self.partner_bound.tolist(), strict=True)
        )

    def to_state(self, prefix: str) -> dict[str, np.ndarray]:
        partners = np.asarray(self._partners(), dtype=np.float64).reshape(-1, 3)
        return {
            **{f"{prefix}{name}": np.asarray(getattr(self, name)) for name in ("feature", "side", "bound")},
            f"{prefix}partner": partners[:, 0].astype(np.int64),
            f"{prefix}partner_side": partners[:, 1].astype(np.int64),
            f"{prefix}partner_bound": partners[:, 2],
        }

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], prefix: str, p: int) -> Bands:
        feature = np.asarray(arrays[f"{prefix}feature"], dtype=np.int64).reshape(-1)
        side = np.asarray(arrays[f"{prefix}side"], dtype=np.int64).reshape(-1)
        bound = np.asarray(arrays[f"{prefix}bound"], dtype=np.float64).reshape(-1)
        if not len(feature) == len(side) == len(bound) or not np.isfinite(bound).all():
            raise ValueError("bands must have a side and a finite bound per feature")
        if ((feature < 0) | (feature >= p)).any() or not np.isin(side, (-1, 1)).all():
            raise ValueError(f"bands must name numeric features 0 to {p - 1}, each on side -1 or +1")
        if f"{prefix}partner" not in arrays:  # a file of version 17 to 24: no partners
            return cls(feature, side, bound)
        partner = np.asarray(arrays[f"{prefix}partner"], dtype=np.int64).reshape(-1)
        partner_side = np.asarray(arrays[f"{prefix}partner_side"], dtype=np.int64).reshape(-1)
        partner_bound = np.asarray(arrays[f"{prefix}partner_bound"], dtype=np.float64).reshape(-1)
        if not len(partner) == len(partner_side) == len(partner_bound) == len(feature):
            raise ValueError("bands must have a partner, its side and its bound per feature")
        if ((partner < -1) | (partner >= p)).any() or not np.isin(partner_side, (-1, 1)).all():
            raise ValueError(f"band partners must be numeric features 0 to {p - 1} or -1, on side -1 or +1")
        if not np.isfinite(partner_bound).all():
            raise ValueError("band partners must have finite bounds")
        return cls(feature, side, bound, partner, partner_side, partner_bound)


def far_bands(
    tests: NumericCellTests,
    columns: np.ndarray,
    vouched: np.ndarray,
    values: np.ndarray,
    off: np.ndarray | None = None,
    shared: np.ndarray | None = None,
) -> Bands | None:
    """The bands of the training rows' cells: ``SEGMENT_MIN_ROWS`` or more cells on one side of a
    column that the column's own in-sample tail leaves out (``tests`` fitted trimmed to the values
    ``columns``, :meth:`NumericCellTests.left_out`), each ``vouched`` for by an exact relation its
    row keeps (:meth:`nrad.identities.Identities.kept`), the band beginning at its gap to the
    column's other values (:func:`_band_start`); ``values``: the cells in the table's units;
    ``off`` (n, p) aside.  None: no band.

    ``shared`` (n, p): the cells whose value many rows of the column hold, which a trimmed tail
    never leaves out.  In a large table each of a band's values is such a value (30,000 bookings
    hold 15 to 26 stays of each length from 21 to 28 nights), and a side of a column whose tail
    left nothing out is read from its top ``CELL_TRIM`` share instead: the band is those of its
    shared cells beyond their widest gap above the column's median.

    Stays of three to four weeks that 18 of 3,000 hotel bookings hold, where
    the rest stay one to fifteen nights, lie beyond any tail the other stays
    allow, each length held by one or two rows: no value many rows share
    marks them (:func:`nrad.numeric.shared_values`), nor a category.  But the table
    vouches for each: its city tax is the hotel's fee times its guests
    times those nights, and its total those nights times the rate plus the
    tax, to the cent.  A typed error breaks such a relation; many values
    beyond a column's tail that keep them are the column's second mode, as
    the non-zero values of a column that is 0 in most rows are.  Many errors
    of one kind that no relation vouches for (a column's amounts typed thirty
    times too high in 20 rows) are no band.  A band's rows are read
    among themselves: their cells are kept in every column's tests (as a
    value many rows share is, :meth:`NumericCellTests.fit`) and not tested in
    the band's column (the table vouches for them), and they are a level the
    row scores' tails read apart (:func:`nrad.evidence.level_shifts`): a row of
    the band that stands out among its rows still stands out.
    """
    found: list[tuple[int, int, float, int, int, float]] = []
    ranked: dict[tuple[int, int], np.ndarray] = {}  # each column's sorted values, read once
    for j in range(tests.n_features):
        for side, tail in ((1, tests.column_upper[j]), (-1, tests.column_lower[j])):
            statistic = columns[:, j] if side > 0 else tests.column_low(j, columns[:, j])
            left = tail.left_out(statistic)
            top = shared is not None and not left.any()
            if top:
                assert shared is not None
                finite = np.isfinite(statistic)
                if not finite.any():
                    continue
                cut = np.quantile(statistic[finite], 1.0 - CELL_TRIM[0])
                left = shared[:, j] & finite & (np.where(finite, statistic, -np.inf) >= cut)
            if off is not None:
                left &= ~off[:, j]
            held = left & vouched[:, j]
            if held.sum() >= SEGMENT_MIN_ROWS:
                start = _band_start(side * values[:, j], held, within=top)
                if np.isfinite(start):
                    found.append((j, side, float(side * start), -1, 1, 0.0))
                continue
            if top or not left.any():
                continue
            # The tail leaves out the far end of a second mode, not all of it: the mode begins where
            # the gap does (_band_start), and its rows are those the partner is sought for.
            with np.errstate(invalid="ignore"):
                mode = side * values[:, j] >= _band_start(side * values[:, j], left)
            partner = _partner(mode if off is None else mode & ~off[:, j], j, values, columns[:, j], ranked)
            if partner is not None:
                k, k_side, rows = partner
                start = side * _gap_middle(side * values[:, j], rows)
                found.append((j, side, start, k, k_side, k_side * _gap_middle(k_side * values[:, k], rows)))
    if not found:
        return None
    feature, side, bound, partner, partner_side, partner_bound = (
        np.asarray(x) for x in zip(*found, strict=True)
    )
    return Bands(
        feature.astype(np.int64), side.astype(np.int64), bound.astype(np.float64),
        partner.astype(np.int64), partner_side.astype(np.int64), partner_bound.astype(np.float64),
    )  # fmt: skip


#: Rows of a band vouched for by a partner column: at least this many (an error typed into one
#: column of a row leaves the row's other columns where they were; two of a kind in a table of
#: 20 errors, each in a column of its own, make no pair) ...
PARTNER_MIN_ROWS = 5
#: ... among the column's far values whose rows hold the partner's far values as well: those in
#: twice as many of the partner's farthest rows on one side, more than chance puts there at this
#: level (hypergeometric) ...
PARTNER_LEVEL = 1e-6
#: ... and spread over their column at least this share of the column's other values' spread
#: (interquartile ranges of the shaped values): one run of a miscalibrated machine is tight, a
#: second mode of the table is not.
PARTNER_SPREAD = 0.25
#: ... between two columns that the column's other rows do not follow each other in (their rank
#: correlation at most this): where they do, as a flow's packets and bytes do in every row, the
#: far values of one hold the other's by that relation alone, and a transfer exfiltrating data is
#: as far in both as the big transfers are.
PARTNER_MAX_CORRELATION = 0.5
#: ... and a band of a few rows: at most this share of the table's rows (what a column's trimmed
#: tail may leave out, ``CELL_TRIM``).  The small flows below a gap in bytes, 1,123 of 3,000 on
#: ports below 283, are the column's bulk, not a second kind of row, and bytes written in
#: kilobytes hid among them.
PARTNER_MAX_SHARE = CELL_TRIM[0]


def _partner(
    left: np.ndarray,
    j: int,
    values: np.ndarray,
    column: np.ndarray,
    ranked: dict[tuple[int, int], np.ndarray] | None = None,
) -> tuple[int, int, np.ndarray] | None:
    """The partner of the far values ``left`` (n, bool) of column ``j``: the other column whose
    farthest rows on one side hold them beyond chance (``PARTNER_LEVEL``; ``values``: the table's
    units), its side, and the rows of the band (``left`` held there); None: no partner, or the
    rows are too few (``PARTNER_MIN_ROWS``), too many (``PARTNER_MAX_SHARE``) or too tight
    (``PARTNER_SPREAD``; ``column``: column ``j``'s shaped values; ``ranked``: the columns' sorted
    signed values by (column, side), filled as they are read), or the two columns follow each other
    in the other rows (``PARTNER_MAX_CORRELATION``).

    Ranches of 50 to 400 hectares, 8 to 13 in a survey of 3,000 households
    whose farms hold 0 to 6, are beyond any tail the other farms allow, and
    no relation vouches for them; but each keeps its 40 to 300 head of
    cattle where the others keep 0 to 9, and 5 of them among the 16 rows of
    the largest herds is a one-in-a-billion chance for rows drawn at random.
    Errors typed into one cell leave the row's other cells as they were."""
    from scipy.stats import hypergeom

    rows = np.flatnonzero(left)
    too_many = len(rows) > PARTNER_MAX_SHARE * len(column)
    if len(rows) < PARTNER_MIN_ROWS or too_many or not _spread_enough(column, left):
        return None
    ranked = {} if ranked is None else ranked
    best: tuple[float, int, int, np.ndarray] | None = None
    for k in range(values.shape[1]):
        if k == j:
            continue
        for k_side in (1, -1):
            if (k, k_side) not in ranked:
                x = k_side * values[:, k]
                ranked[(k, k_side)] = np.sort(x[np.isfinite(x)])
            order = ranked[(k, k_side)]
            top = min(2 * len(rows), len(order))
            if top < PARTNER_MIN_ROWS:
                continue
            # Ties at the cut count as far (a count's value many rows hold is no rank among them),
            # but not a value at or below the column's median (a column mostly at one value).
            cut = max(float(order[-top]), float(np.nextafter(np.median(order), np.inf)))
            with np.errstate(invalid="ignore"):
                held = rows[k_side * values[rows, k] >= cut]
            if len(held) < PARTNER_MIN_ROWS:
                continue
            n_far = len(order) - int(np.searchsorted(order, cut, side="left"))
            chance = float(hypergeom.sf(len(held) - 1, len(order), n_far, len(rows)))
            better = best is None or chance < best[0]
            if chance <= PARTNER_LEVEL and better and _unrelated(values, j, k, left):
                best = (chance, k, k_side, held)
    if best is None:
        return None
    _, k, k_side, held = best
    band = np.zeros(len(left), dtype=bool)
    band[held] = True
    return k, k_side, band


def _unrelated(values: np.ndarray, j: int, k: int, mode: np.ndarray) -> bool:
    """Whether columns ``j`` and ``k`` of ``values`` (the table's units) follow each other so
    little in the rows outside ``mode`` (their far mode) that the mode's holding the far values of
    both tells of a second kind of row (``PARTNER_MAX_CORRELATION``): so a household's land and its
    herd, rank correlation 0.42 among the farms; not a flow's packets and bytes, 0.96."""
    from scipy.stats import spearmanr

    rest = ~mode & np.isfinite(values[:, j]) & np.isfinite(values[:, k])
    if rest.sum() < 3:
        return False
    rho = float(spearmanr(values[rest, j], values[rest, k])[0])
    return bool(np.isfinite(rho) and abs(rho) <= PARTNER_MAX_CORRELATION)


def _gap_middle(x: np.ndarray, held: np.ndarray) -> float:
    """The middle of the gap below the band ``held`` of the values ``x`` (signed so that the band
    lies above; see :func:`_band_start`): a partner band's bound for new rows, which a new ranch
    of 54 hectares, where the training ranches began at 64 and the farms ended at 6, reaches."""
    start = _band_start(x, held)
    below = x[np.isfinite(x) & (x < start)]
    return float(start if not len(below) else (start + np.max(below)) / 2.0)


def _spread_enough(column: np.ndarray, rows: np.ndarray) -> bool:
    """Whether the values of ``rows`` spread over ``column`` (shaped values, NaN absent) at least
    ``PARTNER_SPREAD`` of what its other values spread (interquartile ranges)."""
    inside, rest = column[rows], column[~rows]
    inside, rest = inside[np.isfinite(inside)], rest[np.isfinite(rest)]
    if len(inside) < PARTNER_MIN_ROWS or len(rest) < PARTNER_MIN_ROWS:
        return False
    from scipy.stats import iqr

    return float(iqr(inside)) >= PARTNER_SPREAD * float(iqr(rest))


#: A band read from a column's top share (see far_bands) begins at a gap this many times the usual
#: spacing of the column's values between its median and the band.
BAND_GAP_RATIO = 3.0


def _band_start(x: np.ndarray, held: np.ndarray, within: bool = False) -> float:
    """Where a band of the values ``x`` (a column's, signed so that the band lies above the rest)
    begins: above the widest gap between the column's median and the least of the band's cells
    ``held``.

    The column's trimmed tail leaves out the far end of a second mode, not all of it: of 39
    wholesale orders of 60 to 120 items, where other orders hold 1 to 8, it left out those of 72
    and more, and the 11 of 60 to 71, as far from the other orders and vouched for as well, were
    flagged.  A band is a mode apart from the bulk: it begins where the gap does.  ``within``:
    the cells ``held`` are the column's top share, not its far end (see :func:`far_bands`): the
    gap is looked for up to the farthest of them, and the band is the held cells beyond it (NaN:
    no gap apart, fewer than ``SEGMENT_MIN_ROWS`` held cells beyond it, or more rows beyond it
    than that share)."""
    seen = x[np.isfinite(x)]
    least = float(np.min(x[held]))
    upto = float(np.max(x[held])) if within else least
    between = np.unique(seen[(seen >= np.median(seen)) & (seen <= upto)])
    if len(between) < 2:
        start = least
    else:
        gaps = np.diff(between)
        start = float(between[int(np.argmax(gaps)) + 1])
        # Read from the top share, the values must stand apart: a gap several times the values'
        # usual spacing (stays of 21 nights and more after 16, in steps of one; not 6 adults after 5).
        apart = gaps.max() >= BAND_GAP_RATIO * np.median(gaps)
        if within and (not apart or np.sum(held & (x >= start)) < SEGMENT_MIN_ROWS):
            return np.nan
    if within:
        # Read from the top share, a band is no more rows than that share (a column's commonest
        # value at its edge, 556 stays of one night of 3,000, is no band).  Values back from their
        # transforms differ in the last digits (2.0000000000000004): the band's start is read so.
        near = start - 1e-9 * max(1.0, abs(start))
        if np.sum(x >= near) > CELL_TRIM[0] * len(x):
            return np.nan
    return start


def few_valued(numbers: np.ndarray) -> np.ndarray:
    """(p,) True for a column of at most ``LATTICE_RULE_LEVELS`` distinct values (``numbers`` as
    the table holds them, NaN absent): prices on a few steps, ratings, small counts."""
    return np.array([len(np.unique(x[np.isfinite(x)])) <= LATTICE_RULE_LEVELS for x in numbers.T], dtype=bool)


def _side_tails(
    stats: np.ndarray,
    statistic: Any,
    trim: tuple[float, float] | None,
    max_shape: float,
    min_scale: float = 0.0,
    mean_shape: bool = False,
    untrimmed: np.ndarray | None = None,
    kept: np.ndarray | None = None,
    lows: Callable[[int, np.ndarray], np.ndarray] | None = None,
) -> tuple[list[TailModel], list[TailModel]]:
    """Per column of ``stats``, the tails of ``statistic(t)`` (upper side) and ``statistic(-t)``;
    ``mean_shape``: see :meth:`nrad.calibration.TailModel.fit`; ``untrimmed`` (bool per column):
    the columns fitted without ``trim``; ``kept`` (bool, as ``stats``): cells a trim never leaves
    out (nor any cell of a lower score on that side); ``lows(j, t)``: the lower side's statistic
    of column ``j`` in place of ``-t`` (:meth:`Ratios.low`)."""
    upper, lower = [], []
    for j in range(stats.shape[1]):
        seen = stats[:, j][np.isfinite(stats[:, j])]
        seen = seen if len(seen) else np.zeros(1)
        high, low = statistic(seen), statistic(-seen if lows is None else lows(j, seen))
        if len(seen) < MIN_CELL_VALUES:
            # Too few values (a spike's other values, a column mostly missing) to fit a tail to:
            # ranks only, which never go below 1 / (n + 1).
            upper.append(_ranks_only(high))
            lower.append(_ranks_only(low))
            continue
        side_trim = None if untrimmed is not None and untrimmed[j] else trim
        held = None if kept is None else kept[:, j][np.isfinite(stats[:, j])]
        keep_high, keep_low = (
            (None, None) if held is None or not held.any() else (high[held].max(), low[held].max())
        )
        upper.append(TailModel.fit(high, side_trim, max_shape, min_scale, mean_shape, keep_high))
        lower.append(TailModel.fit(low, side_trim, max_shape, min_scale, mean_shape, keep_low))
    return upper, lower


def _two_sided(
    upper: TailModel,
    lower: TailModel,
    high: np.ndarray,
    low: np.ndarray,
    count_high: np.ndarray | None = None,
    count_low: np.ndarray | None = None,
) -> np.ndarray:
    """log of twice the smaller one-sided p-value (at most 1); ``count_high``, ``count_low``: where
    each side's count floor reads (:meth:`nrad.calibration.TailModel.log_p_values`)."""
    one_sided = np.minimum(upper.log_p_values(high, count_high), lower.log_p_values(low, count_low))
    return np.minimum(np.log(2.0) + one_sided, 0.0)


def _negated(values: np.ndarray | None) -> np.ndarray | None:
    return None if values is None else -values


@dataclass
class Walls:
    """Per numeric feature, the walls of its values (NaN: none): values beyond them are outside
    the column's support (a lattice column's, see ``WALL_SHARE``; 0, see ``ZERO_WALL_GAP``).

    Counts, ratings and capped scores pile up at their bounds, and a value
    one step beyond (-1 visits, a rating of 6 of 5) is no further out in
    standard deviations than many ordinary ones: no tail model can call it
    impossible, and exchangeability alone cannot call it rarer than one row
    in the table.  Its assumption is stated instead: where a lattice
    column's values pile up at an extreme value and (almost) none lie
    beyond, that value bounds the column, and a value beyond it has
    p-value 0.

    So does 0 bound a column whose values are (almost) all at least 0 and
    stay well away from it (``ZERO_WALL_GAP``): concentrations, battery
    levels, years.  A negative value there (a -1 written for "not measured",
    a battery at -5%) is no number the column can hold, but a tail fitted to
    the column's smallest values puts it only a few of their spacings
    further out.

    And the steps of a lattice column of a few values bound it between its
    walls (``LATTICE_RULE_LEVELS``): a value off them (a score of 1.721, a
    mean imputed into a column of scores 1 to 4) lies within the range of the
    column, where no tail can see it.
    """

    low: np.ndarray
    high: np.ndarray
    #: Half the lattice spacing: a value beyond a wall by less is on the wall.
    half_step: np.ndarray
    #: (k, 2) pairs of features ``(j, l)`` whose difference ``x_j - x_l`` has a wall, and its walls
    #: and half lattice spacing (NaN: none on that side).
    pairs: np.ndarray | None = None
    pair_low: np.ndarray | None = None
    pair_high: np.ndarray | None = None
    pair_half_step: np.ndarray | None = None
    #: Per feature, a value on its lattice when it holds no value off it (NaN: none; the lattice's
    #: spacing is twice ``half_step``).
    lattice_base: np.ndarray | None = None
    #: Per feature, whether its values are times of day written HHMM (see ``CLOCK_MIN_ROWS``; None:
    #: none is).
    clock: np.ndarray | None = None
    #: The walls that new rows are read against (:meth:`for_new_rows`): per feature and per pair,
    #: the farthest training value at or beyond each wall (None: the walls themselves).
    seen_low: np.ndarray | None = None
    seen_high: np.ndarray | None = None
    pair_seen_low: np.ndarray | None = None
    pair_seen_high: np.ndarray | None = None

    @classmethod
    def fit(cls, values: np.ndarray, spacing: np.ndarray) -> Walls:
        """From (n, p) training values in the table's units (NaN where missing) and each feature's
        lattice spacing (0: continuous, no lattice walls)."""
        p = values.shape[1]
        low, high, base = np.full(p, np.nan), np.full(p, np.nan), np.full(p, np.nan)
        for j in range(p):
            x = values[:, j][np.isfinite(values[:, j])]
            if len(x) < MIN_CELL_VALUES:
                continue
            base[j] = _lattice_base(x, float(spacing[j]))
            positive = x[x >= 0]
            if (
                len(x) - len(positive) <= BEYOND_WALL * len(x)
                and not _shared(x[x < 0])
                and len(positive)
                and positive.min() >= ZERO_WALL_GAP * np.median(positive) > 0
            ):
                low[j] = 0.0
            if not spacing[j] > 0:
                continue
            lattice_low, high[j] = _lattice_walls(x, zero_is_a_wall=True)
            low[j] = lattice_low if np.isfinite(lattice_low) else low[j]
        half = np.asarray(spacing, dtype=np.float64) / 2.0
        clock = np.array([_is_clock(values[:, j][np.isfinite(values[:, j])]) for j in range(p)], dtype=bool)
        pairs, pair_low, pair_high, pair_half = _pair_walls(values, spacing)
        diff = values[:, pairs[:, 0]] - values[:, pairs[:, 1]]
        return cls(
            low, high, half, pairs, pair_low, pair_high, pair_half, lattice_base=base, clock=clock,
            seen_low=_farthest(low, values, -1), seen_high=_farthest(high, values, 1),
            pair_seen_low=_farthest(pair_low, diff, -1), pair_seen_high=_farthest(pair_high, diff, 1),
        )  # fmt: skip

    def for_new_rows(self) -> Walls:
        """The walls new rows are read against: each moved out to the farthest training value at or
        beyond it.

        In sample, a wall may have a few rows beyond it (``BEYOND_WALL``): the
        table holds its errors.  A model fitted on rows believed normal and
        scoring new ones has seen those values held by normal rows: 2 of 3,000
        clean rows held a count of 0 where 44 held 1 and 85 held 2, the count
        thinning out fast enough to pass for a wall at 1, and every 0 of the
        next clean table had p-value 0.
        """
        if self.seen_low is None or self.seen_high is None:
            return self  # a model file of format 17 or before
        pair_low = self.pair_low if self.pair_seen_low is None else self.pair_seen_low
        pair_high = self.pair_high if self.pair_seen_high is None else self.pair_seen_high
        return replace(self, low=self.seen_low, high=self.seen_high, pair_low=pair_low, pair_high=pair_high)

    def beyond(self, values: np.ndarray) -> np.ndarray:
        """(n, p) True where a value lies beyond its column's wall or off its lattice, or beyond a wall
        of its difference with another column (both cells then; NaN values: False)."""
        return self.own_beyond(values) | self.pair_cells(values)

    def own_beyond(self, values: np.ndarray) -> np.ndarray:
        """(n, p) True where a value lies beyond its own column's wall or off its lattice."""
        return (self.sides(values) != 0) | self.off_lattice(values)

    def pair_cells(self, values: np.ndarray) -> np.ndarray:
        """(n, p) True at both cells of each wall of a difference a row's values lie beyond."""
        out = np.zeros(values.shape, dtype=bool)
        rows, which = np.nonzero(self.pair_sides(values))
        if self.pairs is not None:
            out[rows, self.pairs[which, 0]] = True
            out[rows, self.pairs[which, 1]] = True
        return out

    def sides(self, values: np.ndarray) -> np.ndarray:
        """(n, p) -1 where a value lies below its column's low wall, +1 above its high one, else 0."""
        with np.errstate(invalid="ignore"):
            below = values < self.low - self.half_step
            above = values > self.high + self.half_step
        return above.astype(np.int8) - below.astype(np.int8)

    def off_lattice(self, values: np.ndarray) -> np.ndarray:
        """(n, p) True where a value lies off its column's lattice (see ``LATTICE_RULE_LEVELS``)."""
        out = np.zeros(values.shape, dtype=bool)
        for j in np.flatnonzero(self.clock if self.clock is not None else []):
            out[:, j] = off_clock(values[:, j])
        if self.lattice_base is None:
            return out
        for j in np.flatnonzero(np.isfinite(self.lattice_base) & (self.half_step > 0)):
            out[:, j] = off_lattice(values[:, j], float(self.lattice_base[j]), 2.0 * float(self.half_step[j]))
        return out

    def pair_sides(self, values: np.ndarray) -> np.ndarray:
        """(n, pairs) -1 where a row's difference ``x_j - x_l`` of a pair lies below its low wall, +1
        above its high one, else 0 (NaN values: 0)."""
        if self.pairs is None or not len(self.pairs):
            return np.zeros((len(values), 0), dtype=np.int8)
        low, high, half = self.pair_low, self.pair_high, self.pair_half_step
        assert low is not None and high is not None and half is not None
        diff = values[:, self.pairs[:, 0]] - values[:, self.pairs[:, 1]]
        with np.errstate(invalid="ignore"):
            return (diff > high + half).astype(np.int8) - (diff < low - half).astype(np.int8)

    def to_state(self, prefix: str) -> dict[str, np.ndarray]:
        new = self.for_new_rows()
        return {
            f"{prefix}low": self.low, f"{prefix}high": self.high, f"{prefix}half_step": self.half_step,
            f"{prefix}pairs": (np.zeros((0, 2)) if self.pairs is None else self.pairs).astype(np.int64),
            f"{prefix}pair_low": _or_empty(self.pair_low),
            f"{prefix}pair_high": _or_empty(self.pair_high),
            f"{prefix}pair_half_step": _or_empty(self.pair_half_step),
            f"{prefix}lattice_base": np.full(len(self.low), np.nan) if self.lattice_base is None
            else self.lattice_base,
            f"{prefix}clock": np.zeros(len(self.low)) if self.clock is None
            else self.clock.astype(np.float64),
            **{f"{prefix}{name}": _or_empty(getattr(new, wall)) for name, wall in _SEEN.items()},
        }  # fmt: skip

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], prefix: str, p: int) -> Walls:
        got = [
            np.asarray(arrays[f"{prefix}{name}"], dtype=np.float64).reshape(-1)
            for name in ("low", "high", "half_step")
        ]
        if any(len(a) != p for a in got):
            raise ValueError(f"walls must have one entry per numeric feature ({p})")
        pairs = np.asarray(arrays[f"{prefix}pairs"], dtype=np.int64).reshape(-1, 2)
        sides = [
            np.asarray(arrays[f"{prefix}{name}"], dtype=np.float64).reshape(-1)
            for name in ("pair_low", "pair_high", "pair_half_step")
        ]
        named = ((pairs >= 0) & (pairs < p)).all()
        if any(len(a) != len(pairs) for a in sides) or not named:
            raise ValueError(f"pair walls must name features 0 to {p - 1}, with one wall entry per pair")
        # Files of format version 15 and before hold no lattice bases: no value is off a lattice.
        base = arrays.get(f"{prefix}lattice_base")
        base = np.full(p, np.nan) if base is None else np.asarray(base, dtype=np.float64).reshape(-1)
        if len(base) != p:
            raise ValueError(f"walls must have one lattice base per numeric feature ({p})")
        # Files of format version 20 and before hold no clocks: no column is read as one.
        clock = arrays.get(f"{prefix}clock")
        clock = np.zeros(p, dtype=bool) if clock is None else np.asarray(clock).reshape(-1) != 0
        if len(clock) != p:
            raise ValueError(f"walls must say of each numeric feature ({p}) whether it is a clock")
        walls = cls(*got, pairs, *sides, lattice_base=base, clock=clock)
        # Files of format version 17 and before hold no seen values: new rows read the walls.
        if f"{prefix}seen_low" not in arrays:
            return walls
        seen = {name: np.asarray(arrays[f"{prefix}{name}"], dtype=np.float64).reshape(-1) for name in _SEEN}
        for name, wall in _SEEN.items():
            values, bound = seen[name], _or_empty(getattr(walls, wall))
            side = -1 if wall.endswith("low") else 1
            # Where a wall stands, what was seen lies at or beyond it; where none stands, nothing.
            with np.errstate(invalid="ignore"):
                inside = (side * (values - bound) < 0).any()
            if len(values) != len(bound) or (np.isnan(values) != np.isnan(bound)).any() or inside:
                raise ValueError(f"walls' {name} must lie at or beyond its {wall} walls, NaN without one")
        return replace(walls, **seen)


#: The fields of the farthest training values beyond the walls (as a model file names them too),
#: and the walls they stand beyond.
_SEEN = {"seen_low": "low", "seen_high": "high", "pair_seen_low": "pair_low", "pair_seen_high": "pair_high"}


def _or_empty(values: np.ndarray | None) -> np.ndarray:
    """``values``, or no values for a part the walls do not have (no pairs)."""
    return np.zeros(0) if values is None else values


def _farthest(walls: np.ndarray, values: np.ndarray, side: int) -> np.ndarray:
    """Per column of ``values`` (NaN where missing), the farthest value at or beyond its wall on
    ``side`` (-1: below, +1: above), the wall itself where none lies beyond (NaN: no wall)."""
    if not values.shape[1]:
        return walls.copy()
    finite = np.isfinite(values)
    extreme = side * np.max(np.where(finite, side * values, -np.inf), axis=0)
    farther = np.isfinite(extreme) & (side * (extreme - walls) > 0)
    return np.where(farther, extreme, walls)


def _is_clock(x: np.ndarray) -> bool:
    """Whether the finite values ``x`` are times of day written HHMM (see ``CLOCK_MIN_ROWS``)."""
    if len(x) < CLOCK_MIN_ROWS:
        return False
    off = off_clock(x)
    if off.sum() > BEYOND_WALL * len(x):
        return False
    on = np.round(x[~off])
    minutes, hours = (on % 100).astype(np.int64), on // 100
    if len(np.unique(minutes)) < CLOCK_MIN_MINUTES or len(np.unique(hours)) < CLOCK_MIN_HOURS:
        return False
    # The minutes' steps (5: at 0, 5, ..., 55); were the last two digits any multiple of it, this
    # share of them would lie at 60 to 99.  Counted over distinct values: rows repeating one value
    # are no more evidence than it (a column 0 in 2,990 of 3,000 rows and ten values else).
    step = int(np.gcd.reduce(minutes))
    share = float(np.mean(np.arange(0, 100, step) >= 60))
    distinct = np.unique(np.round(x))
    from scipy.stats import binom

    below = binom.cdf(int(off_clock(distinct).sum()), len(distinct), share)
    return share > 0 and bool(below <= WALL_LEVEL)


def off_clock(x: np.ndarray) -> np.ndarray:
    """True where a value is no time of day written HHMM (its last two digits 60 or more, past
    2400, negative or not whole; NaN: False).  Values in the table's units carry the rounding of
    their transforms (1355.0000000000002): whole to a millionth."""
    whole = np.round(x)
    with np.errstate(invalid="ignore"):
        fraction = np.abs(x - whole) > 1e-6 * np.maximum(np.abs(x), 1.0)
        return np.isfinite(x) & ((whole % 100 >= 60) | (whole > 2400) | (whole < 0) | fraction)


def _lattice_base(x: np.ndarray, spacing: float) -> float:
    """A value on the lattice of the training values ``x`` when no value may lie off it (NaN: the
    rule does not hold): at most ``LATTICE_RULE_LEVELS`` distinct values, each a step from the next
    (scores 1 to 4, counts 0 to 7).  Codes with gaps between them (payment terms of 0, 14, 30 and 60
    days, on the lattice of 2) say nothing of the values between."""
    seen, counts = np.unique(x, return_counts=True)
    if not spacing > 0 or len(seen) > LATTICE_RULE_LEVELS:
        return np.nan
    base = float(seen[np.argmax(counts)])  # the most common value lies on the lattice
    on = seen[~off_lattice(seen, base, spacing)]
    # The spacing is read from a spike's other values (speeds of 95, 110 and 140 beside a spike at
    # 85: a step of 15 that the spike is off).  A lattice that the values do not lie on, but for
    # the few ``lattice_spacing`` allows, is none: read from the spike alone, every other value
    # of such a column was "between the steps" and 3,442 of 4,654 rows of a real table got p = 0.
    if not mostly_on_lattice(seen, counts, base, spacing) or len(on) < LATTICE_MIN_LEVELS:
        return np.nan
    return base if np.allclose(np.diff(on), spacing, rtol=1e-6, atol=0.0) else np.nan


def _lattice_walls(
    x: np.ndarray, zero_is_a_wall: bool, ratio: float = WALL_RATIO, sharp: float | None = None
) -> tuple[float, float]:
    """(low, high) walls of lattice values ``x`` (NaN: none): see ``WALL_SHARE`` and the next
    constants.  ``zero_is_a_wall``: a pile at 0 (a count's) is a lower wall whatever its size
    against the next value, and needs no ``WALL_MIN_ROWS``.  ``ratio``: a wall holds at least
    this share of the next value's count.  ``sharp``: a value is a wall without that share too
    where so few rows lie beyond it that thinning out as the values do up to it would leave
    that few with at most this chance (:func:`_none_beyond` at this level)."""
    levels, counts = np.unique(x, return_counts=True)
    allowed = BEYOND_WALL * len(x)
    below, above = np.cumsum(counts) - counts, np.cumsum(counts[::-1])[::-1] - counts
    zero = (levels == 0) if zero_is_a_wall else np.zeros(len(levels), dtype=bool)
    piled = (counts >= WALL_SHARE * len(x)) & ((counts >= WALL_MIN_ROWS) | zero)
    inner_up = np.r_[counts[1:], 0]  # the next value towards the middle, from below ...
    inner_down = np.r_[0, counts[:-1]]  # ... and from above
    # A cap piles up what lies beyond it at itself: more rows than the next values inward hold, by
    # more than chance, is a pile whatever its share (16 of 3,000 scores at 100; 3, 1 and 7 at 97
    # to 99).
    piled_up = piled | (counts >= WALL_MIN_ROWS) & _capped(counts, _inward_mean(counts, 1))
    piled_down = piled | (counts >= WALL_MIN_ROWS) & _capped(counts, _inward_mean(counts, -1))
    edge_up = (counts >= ratio * inner_up) & _none_beyond(counts, inner_up, below)
    # A quantity at least 0 that thins out towards 0 holds a few zeros: written to its lattice, 0
    # is half a cell, and a density that rises from 0 in proportion (a wind speed's) puts an
    # eighth of the first step's rows there, where a steady thinning would put up to all of
    # them: from the first step above a 0 that is the column's least, a quarter of a thinning
    # of at most a half is expected beyond.  Such a column is still at least 0: its wall is then
    # 0 itself (a speed of -1 km/h is none).
    # (Only where some row holds 0: a column of codes from 1, months or ratings, holds none, and
    # its 0 is no value it takes.)
    to_zero = zero_is_a_wall and len(levels) > 2 and levels[0] == 0 and bool(edge_up[1])
    if to_zero:
        halving = np.maximum(inner_up[1:2], 2 * counts[1:2])  # a thinning of at most a half
        edge_up[1] = _none_beyond(counts[1:2], halving, below[1:2], share=ZERO_CELL_SHARE)[0]
        to_zero = not edge_up[1] and bool(piled_up[1]) and below[1] <= allowed
    edge_down = (counts >= ratio * inner_down) & _none_beyond(counts, inner_down, above)
    if sharp is not None:
        edge_up |= _none_beyond(counts, inner_up, below, sharp)
        edge_down |= _none_beyond(counts, inner_down, above, sharp)
    # No value that many rows hold lies beyond a wall: it is the column's (see BEYOND_WALL).
    shared = counts >= SHARED_MIN_ROWS
    shared_below = np.r_[False, np.logical_or.accumulate(shared)[:-1]]
    shared_above = np.r_[np.logical_or.accumulate(shared[::-1])[::-1][1:], False]
    lows = np.flatnonzero(piled_up & (below <= allowed) & (edge_up | zero) & ~shared_below)
    highs = np.flatnonzero(piled_down & (above <= allowed) & edge_down & ~shared_above)
    low = 0.0 if to_zero else float(levels[lows[0]]) if len(lows) else np.nan
    return low, float(levels[highs[-1]]) if len(highs) else np.nan


def _shared(x: np.ndarray) -> bool:
    """Whether ``SHARED_MIN_ROWS`` or more of the values ``x`` are one value."""
    return bool(len(x) >= SHARED_MIN_ROWS and np.unique(x, return_counts=True)[1].max() >= SHARED_MIN_ROWS)


def _inward_mean(counts: np.ndarray, step: int, k: int = CAP_VALUES) -> np.ndarray:
    """Per value of a lattice column, the mean count of the ``k`` values next to it inward (``step``
    1: above it, for a low wall; -1: below it, for a high one; 0 where there are none)."""
    padded = np.r_[np.zeros(k), counts, np.zeros(k)]
    shifted = [padded[k + step * i : k + step * i + len(counts)] for i in range(1, k + 1)]
    return np.mean(shifted, axis=0)


def _capped(counts: np.ndarray, inner: np.ndarray, level: float = WALL_LEVEL) -> np.ndarray:
    """Per value of a lattice column: whether it holds ``CAP_RATIO`` times the rows the values inward
    of it hold (``inner``, their mean count), and so many that a Poisson count of that mean would
    reach it with chance at most ``level``: the values beyond a cap, put at it."""
    from scipy.stats import poisson

    return (counts >= CAP_RATIO * inner) & (poisson.sf(counts - 1, np.maximum(inner, 1)) <= level)


def _none_beyond(
    counts: np.ndarray,
    inner: np.ndarray,
    beyond: np.ndarray,
    level: float = WALL_LEVEL,
    share: np.ndarray | float = 1.0,
) -> np.ndarray:
    """Per value of a lattice column: whether as few rows as ``beyond`` it would lie there with
    chance at most ``level`` were the values to thin out past it as from the next value inward
    to it (``inner`` rows there, ``counts`` at it: ``counts * min(counts / inner, 1)`` expected at
    the next value out, a Poisson count; ``share`` of that, per value, where the next value out
    holds less than a full cell: see ``ZERO_CELL_SHARE``)."""
    from scipy.stats import poisson

    expected = share * counts * np.minimum(counts / np.maximum(inner, 1), 1.0)
    return poisson.cdf(beyond, expected) <= level


def _pair_walls(
    values: np.ndarray, spacing: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Walls of the differences of pairs of lattice columns: (pairs, low, high, half spacing).

    A bound that one column keeps given another (a remodelling year never before the building
    year, a customer's years as a customer never above their age less 18) is a wall of their
    difference: the rows that meet the bound pile up at it, exactly, and none lie beyond.  A
    value past it (22 years a customer at 25) is no further out than many ordinary ones in
    either column, nor off a straight relation by much.  Only lattice columns (years, counts,
    amounts in cents): their differences repeat exactly where a bound binds, so a pile is a
    bound met, where two continuous columns' differences never repeat.  Differences of columns
    that share no lattice (0.1 and 0.25) are skipped; so are tables of more than
    ``MAX_PAIR_COLUMNS`` lattice columns.

    Two unrelated columns have walls of their difference too: the sale's year less the number
    of half baths is never above 2010, because no year is above 2010 and no count below 0.  Such
    a bound says nothing the columns' own ranges do not, and a new table whose years run to
    2011 would be flagged against it.  A wall is kept only where the columns, paired at random
    (independent, with the same values), would put many more rows beyond it than do lie there
    (``PAIR_WALL_LEVEL``): then the rows that keep to it do so because of each other.
    """
    lattice = np.flatnonzero(np.asarray(spacing) > 0)
    pairs, lows, highs, steps = [], [], [], []
    if 2 <= len(lattice) <= MAX_PAIR_COLUMNS:
        for a, j in enumerate(lattice):
            for k in lattice[a + 1 :]:
                step = float(min(spacing[j], spacing[k]))
                ratio = max(spacing[j], spacing[k]) / step
                if abs(ratio - round(ratio)) > 1e-6 * ratio:
                    continue
                both = np.isfinite(values[:, j]) & np.isfinite(values[:, k])
                if both.sum() < MIN_CELL_VALUES:
                    continue
                x, y = values[both, j], values[both, k]
                # On the finer lattice: rounding error of the subtraction would split a pile.
                diff = np.round((x - y) / step) * step
                low, high = _lattice_walls(diff, False, PAIR_PILE_RATIO, PAIR_EDGE_LEVEL)
                low, high = (_met_across(x, diff, bound) for bound in (low, high))
                if not _kept_by_relation(x, y, diff, low - step / 2.0, below=True):
                    low = np.nan
                if not _kept_by_relation(x, y, diff, high + step / 2.0, below=False):
                    high = np.nan
                if np.isfinite(low) or np.isfinite(high):
                    pairs.append((j, k)), lows.append(low), highs.append(high), steps.append(step / 2.0)
    for j, k, low, high, half in _order_walls(values, spacing, {tuple(p) for p in pairs}):
        pairs.append((j, k)), lows.append(low), highs.append(high), steps.append(half)
    as_array = lambda v: np.asarray(v, dtype=np.float64)  # noqa: E731
    return np.asarray(pairs, dtype=np.int64).reshape(-1, 2), as_array(lows), as_array(highs), as_array(steps)


def _order_walls(
    values: np.ndarray, spacing: np.ndarray, taken: set[tuple[int, int]]
) -> list[tuple[int, int, float, float, float]]:
    """Orders between columns as walls of their difference at 0: (j, k, low, high, half spacing) per
    pair of features not in ``taken`` (see ``ORDER_MIN_EXPECTED``).

    The walls above need a pile at the bound; an order needs none: the day's lowest temperature
    stays several degrees below its highest, yet one above it (the two swapped) is no weather.
    What says the order is the table's, not the columns' ranges, is how often the columns paired
    at random would break it, against how rarely the rows do.  Columns of numbers alike in most
    rows (a copy) say nothing of an order; at most ``MAX_PAIR_COLUMNS`` columns are searched."""
    found: list[tuple[int, int, float, float, float]] = []
    p = values.shape[1]
    if not 2 <= p <= MAX_PAIR_COLUMNS:
        return found
    for j in range(p):
        for k in range(j + 1, p):
            if (j, k) in taken:
                continue
            both = np.isfinite(values[:, j]) & np.isfinite(values[:, k])
            if both.sum() < MIN_CELL_VALUES:
                continue
            x, y = values[both, j], values[both, k]
            if np.mean(x == y) > 0.5:
                continue
            lattice = [float(h) for h in (spacing[j], spacing[k]) if h > 0]
            # Continuous columns' values come back from their transforms with rounding in the last
            # digits (11.600000000000001 against 11.6): equal values keep the order.
            scale = max(float(np.median(np.abs(x))), float(np.median(np.abs(y))))
            half = min(lattice) / 2.0 if len(lattice) == 2 else ORDER_TOLERANCE * scale
            # x - y at most 0 (x below y), or at least 0 (x above y)
            high = 0.0 if _ordered(x, y, half) else np.nan
            low = 0.0 if _ordered(y, x, half) else np.nan
            if np.isfinite(low) or np.isfinite(high):
                found.append((j, k, low, high, half))
    return found


def _ordered(x: np.ndarray, y: np.ndarray, half: float) -> bool:
    """Whether ``x`` is at most ``y`` (to ``half`` a lattice step) in all but ``BEYOND_WALL`` of the
    rows, with a margin (``ORDER_MARGIN``), where the two paired at random would break it in
    ``ORDER_MIN_EXPECTED`` rows or more, ``ORDER_RATIO`` times as many as do."""
    beyond = x > y + half
    seen = int(np.sum(beyond))
    margin = (y - x)[~beyond]
    if seen > BEYOND_WALL * len(x) or _shared((x - y)[beyond]) or not len(margin):
        return False
    if np.sum(margin <= ORDER_MARGIN * np.median(margin)) > BEYOND_WALL * len(x):
        return False
    xs = np.sort(x)
    expected = float((len(xs) - np.searchsorted(xs, y + half, side="right")).sum()) / len(x)
    return expected >= ORDER_MIN_EXPECTED and expected >= ORDER_RATIO * seen


def _met_across(x: np.ndarray, diff: np.ndarray, bound: float) -> float:
    """``bound`` if the rows whose difference ``diff`` lies at it hold ``PAIR_PILE_VALUES`` values of
    ``x`` or more, none of them ``PAIR_PILE_SHARE`` of those rows, else NaN (see ``PAIR_PILE_VALUES``)."""
    if not np.isfinite(bound):
        return np.nan
    counts = np.unique(x[diff == bound], return_counts=True)[1]
    if len(counts) < PAIR_PILE_VALUES or counts.max() > PAIR_PILE_SHARE * counts.sum():
        return np.nan
    return bound


def _kept_by_relation(x: np.ndarray, y: np.ndarray, diff: np.ndarray, bound: float, below: bool) -> bool:
    """Whether fewer rows' ``x - y`` (``diff``) lie below (``below``) or above ``bound`` than the
    columns paired at random would put there, at level ``PAIR_WALL_LEVEL`` (False for a NaN bound).

    Paired at random, the expected count is ``(1/n) sum_i #{k: x_k - y_i < bound}``."""
    from scipy.stats import poisson

    if not np.isfinite(bound):
        return False
    xs = np.sort(x)
    if below:
        expected = np.searchsorted(xs, bound + y, side="left").sum() / len(x)
        seen = int((diff < bound).sum())
    else:
        expected = (len(xs) - np.searchsorted(xs, bound + y, side="right")).sum() / len(x)
        seen = int((diff > bound).sum())
    return bool(poisson.cdf(seen, expected) <= PAIR_WALL_LEVEL)


def _ranks_only(scores: np.ndarray) -> TailModel:
    """Conformal p-values of a few scores, no tail (see ``MIN_CELL_VALUES``)."""
    return TailModel.ranks_only(scores)


def _surprise(t: np.ndarray) -> np.ndarray:
    """``-log P(T > t)`` for a standard normal ``T``: exponential with mean 1 if the residuals are
    Gaussian, so a fitted tail of shape 0 and scale 1 is that model, and the fit corrects it where
    the residuals are not (heavier: a shape above 0 or a larger scale)."""
    from scipy.special import log_ndtr

    return -log_ndtr(-np.asarray(t, dtype=np.float64))


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
        # The levels are ordered by the counts every row was fitted with, the mass taken from the
        # row's own (left-out) reading: left out, a row's level loses one count that levels as
        # frequent keep, so ordered by the left-out reading each of 500 equally frequent levels
        # would be the rarest for its own rows (p = 1/500 for every row, all flagged together).
        order = probs if own is None else np.exp(model.log_term(j, candidates, parents)).reshape(n, k)
        mine = order[np.arange(n), codes[:, j]]
        # A tolerance so that levels as probable as this one (ties) count as "at most as probable".
        out[:, j] = np.minimum((probs * (order <= mine[:, None] * (1 + 1e-9))).sum(axis=1), 1.0)
    return out
