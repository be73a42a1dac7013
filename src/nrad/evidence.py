"""The evidence against a row: the tails its tests are read from, and their combination.

A row is tested as a whole (its anomaly score; its density score in nats,
for a fused model; its robust distance) and cell by cell (each number's
residual given the rest of the row and its value in its context, each
category's level; :mod:`nrad.cells`).  Each test's p-value is read off a
tail fitted to the training rows' own out-of-fold statistics
(:class:`ChannelTails`), and the row's p-value is the tests' weighted
Bonferroni combination (:func:`nrad.calibration.combine`), valid whatever
their dependence (docs/method.md, section 13).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nrad.calibration import (
    DENSITY_MAX_SHAPE,
    DISTANCE_TRIM,
    MAX_SHAPE,
    SCORE_TRIM,
    TailModel,
    combine,
)
from nrad.cells import (
    CATEGORY_SHARE,
    CELL_MAX_SHAPE,
    CELL_TRIM,
    CELL_WEIGHT,
    DECISIVE,
    SEGMENT_MIN_ROWS,
    Edges,
    NumericCellTests,
    Ratios,
    category_p_values,
    levels_mostly_held,
)
from nrad.encoding import Prepared
from nrad.preprocess import WEEKDAYS

if TYPE_CHECKING:
    from nrad.categories import Dependency
    from nrad.table import TableModel

#: Passes over the levels an in-sample row tail reads apart when their effects are fitted together
#: (:func:`level_shifts`; they settle in two or three where levels share rows).
LEVEL_PASSES = 20
#: A level's spread is read against that of the rows of no level when there are at least this many
#: of them (:func:`level_shifts`).
SPREAD_MIN_ROWS = 10


@dataclass(frozen=True)
class ChannelTails:
    """The tails each channel's p-values are read from: the anomaly score, the density score (in
    nats; a fused model only), the robust distance, the numeric cells.

    Fitted twice: on the training rows' out-of-fold statistics for new rows,
    and for the training rows themselves (``nrad detect``, ``in_sample``).
    Those rows hold the anomalies being looked for, and a tail fitted on
    them would be made heavy by them: each in-sample tail is fitted
    without its top scores, by a likelihood truncated where they begin, and
    puts back those that are no outliers to the rest
    (:meth:`nrad.calibration.TailModel.fit`).  The anomaly score and the
    density leave out their top 2% at first (``SCORE_TRIM``); the robust
    distance also a cluster above a gap (``DISTANCE_TRIM``: a broken batch
    that the density learns as normal stands apart there); each cell its
    top 1% (``CELL_TRIM``).  The density's tail in nats may be as heavy as
    the fused score's (``MAX_SHAPE``): the density that flows give rows
    they did not see (in sample: every row) is heavier-tailed than
    exponential on small tables and on tables with heavy-tailed columns,
    and a bound of 0.1 there flagged the top rows of a fifth of clean
    500-row tables and of many clean 3,000-row tables scored against
    themselves (research/notes.md, sections 33 and 36).  In sample it keeps
    the light bound ``DENSITY_MAX_SHAPE`` when a cluster of rows (no
    segment) stands apart in the robust distance on a table of 1,000 rows or
    more (``apart``): a broken batch that the density ranks at its top but
    not far beyond the rest would be put back into a heavier tail and go
    unflagged, while with the light bound it is flagged.

    In sample, a level most of whose rows the anomaly score's, the density's
    or the robust distance's tail leaves out is read against its own rows
    (:func:`level_shifts`): a flag that 1.5% of the rows hold, which the flows
    learn as two points and charge more than its share says; a price a few
    rows pay far out on a lattice of a few values, which the flows and the
    robust Gaussian cannot read.
    """

    row: TailModel
    density: TailModel | None
    distance: TailModel | None
    cells: NumericCellTests | None
    #: In sample only (never saved): what each training row's anomaly score, density score and
    #: robust distance lose before their tails read them (:func:`level_shifts`; None: nothing).
    row_shift: np.ndarray | None = None
    density_shift: np.ndarray | None = None
    distance_shift: np.ndarray | None = None
    #: The training rows' statistics of each band the table vouches for, per row-level channel
    #: (None: no band; see :class:`BandFloor`).
    row_bands: BandFloor | None = None
    density_bands: BandFloor | None = None
    distance_bands: BandFloor | None = None

    @classmethod
    def fit(
        cls,
        scores: np.ndarray,
        density: np.ndarray | None,
        distances: np.ndarray | None,
        residuals: np.ndarray | None,
        values: np.ndarray | None,
        columns: np.ndarray | None,
        in_sample: bool = False,
        cluster: bool = True,
        small: bool = False,
        apart: bool = False,
        cell_tests: NumericCellTests | None = None,
        levels: np.ndarray | None = None,
        strata: np.ndarray | None = None,
        shared: np.ndarray | None = None,
        few: np.ndarray | None = None,
        bands: np.ndarray | None = None,
        in_context: np.ndarray | None = None,
        ratios: Ratios | None = None,
        batch_rows: np.ndarray | None = None,
    ) -> ChannelTails:
        """From the training rows' out-of-fold statistics (None: no such channel).  ``cluster``:
        in sample, the distance's tail may leave out a tight cluster standing apart (False: only
        the top scores are left out, as a row score's).  ``small``: the statistics are a small
        table's (its flows learned from a few hundred rows).  ``apart``: a tight cluster of rows,
        no segment, stands apart in the robust distance.  ``cell_tests``: the cells' tests,
        already fitted to ``residuals``, ``values`` and ``columns`` as this fit would; ``levels``:
        the numeric columns of two values (see :meth:`NumericCellTests.fit`).  ``strata``: in
        sample, the rows' levels (n, columns; -1 none) that a row score's tail reads apart when it
        leaves most of a level's rows out (:func:`level_shifts`).  ``shared``: the cells whose value
        many rows hold (:func:`nrad.numeric.shared_values`), which no value test's trim leaves out, nor
        a residual test's in the columns ``few`` (see :meth:`NumericCellTests.fit`).  ``bands``: the
        cells of the bands the table vouches for (:class:`nrad.cells.Bands`): in sample, their rows'
        cells are kept by every cell test and each band's rows are a level the row tails read apart
        (:func:`level_shifts`); a row of a band is also read among the band's training rows
        (:class:`BandFloor`).  ``in_context``: the cells whose value many rows of their context
        share, which no value-in-context test's trim leaves out (see
        :meth:`NumericCellTests.fit`; None: ``shared``).  ``ratios``: the columns whose lowest values
        are read in ratios (:class:`nrad.cells.Ratios`).  ``batch_rows``: in sample, the rows of a
        tight cluster standing apart (``apart``): where they are more than a row score's trim
        (``SCORE_TRIM``) leaves out, no row tail is fitted to them."""
        light = in_sample and apart and not small
        trim = (lambda share: share) if in_sample else (lambda share: None)  # noqa: E731
        # A broken batch larger than a row score's trim: the trim would leave out its top rows
        # only, fit the rest of it as the tail, and put every one back (research notes, section 69).
        exclude = (
            batch_rows
            if in_sample and batch_rows is not None and batch_rows.sum() > SCORE_TRIM[0] * len(scores)
            else None
        )
        row, row_shift = _stratified(scores, trim(SCORE_TRIM), MAX_SHAPE, strata, bands, exclude)
        density_tail, density_shift = (
            (None, None)
            if density is None
            else _stratified(
                density, trim(SCORE_TRIM), DENSITY_MAX_SHAPE if light else MAX_SHAPE, strata, bands, exclude
            )
        )
        distance_tail, distance_shift = (
            (None, None)
            if distances is None
            else _stratified(
                distances,
                trim(DISTANCE_TRIM if cluster else SCORE_TRIM),
                CELL_MAX_SHAPE,
                strata,
                bands,
                exclude,
            )
        )

        def floor(statistic: np.ndarray) -> BandFloor | None:
            return None if bands is None else BandFloor.fit(statistic, bands, in_sample)

        return cls(
            row,
            density_tail,
            distance_tail,
            cell_tests
            if cell_tests is not None or residuals is None or values is None or columns is None
            else NumericCellTests.fit(
                residuals, values, columns, trim(CELL_TRIM), levels, shared, few, bands, in_context, ratios
            ),
            row_shift,
            density_shift,
            distance_shift,
            floor(scores),
            None if density is None else floor(density),
            None if distances is None else floor(distances),
        )

    def row_log_p_values(
        self,
        scores: np.ndarray,
        density: np.ndarray | None,
        distance: np.ndarray | None,
        positions: np.ndarray | None = None,
        bands: np.ndarray | None = None,
    ) -> np.ndarray:
        """(n, row-level channels) log p-values: the anomaly score, the density, the distance.
        ``positions``: where the rows stand among the training rows of in-sample tails (None: all
        of them, in order).  ``bands``: the rows' cells in the bands the table vouches for (n, p;
        :meth:`nrad.cells.Bands.mask`)."""

        def read(
            tail: TailModel, values: np.ndarray, shift: np.ndarray | None, floor: BandFloor | None
        ) -> np.ndarray:
            log_p = tail.log_p_values(_less(values, shift, positions))
            return (
                log_p
                if floor is None or bands is None
                else np.maximum(log_p, floor.log_p_values(values, bands))
            )

        out = [read(self.row, scores, self.row_shift, self.row_bands)]
        if self.density is not None and density is not None:
            out.append(read(self.density, density, self.density_shift, self.density_bands))
        if self.distance is not None and distance is not None:
            # The robust distance on its own too: a cluster of bad rows that the other members
            # learn as normal stands apart here, and its gap survives (nrad.calibration.gap_trim).
            out.append(read(self.distance, distance, self.distance_shift, self.distance_bands))
        return np.column_stack(out)

    def to_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta: dict[str, Any] = {}
        arrays: dict[str, np.ndarray] = {}
        for name in ("row", "density", "distance", "cells"):
            part = getattr(self, name)
            if part is not None:
                meta[name], tensors = part.to_state(f"tails.{name}.")
                arrays.update(tensors)
        for name in ("row_bands", "density_bands", "distance_bands"):
            floor = getattr(self, name)
            if floor is not None:
                meta[name] = True
                arrays.update(floor.to_state(f"tails.{name}."))
        return meta, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> ChannelTails:
        def tail(name: str) -> TailModel | None:
            return TailModel.from_state(meta[name], arrays, f"tails.{name}.") if name in meta else None

        row = tail("row")
        if row is None:
            raise ValueError("the channel tails have no tail of the anomaly score")
        cells = (
            NumericCellTests.from_state(meta["cells"], arrays, "tails.cells.") if "cells" in meta else None
        )

        def floor(name: str) -> BandFloor | None:
            return BandFloor.from_state(arrays, f"tails.{name}.") if name in meta else None

        return cls(
            row,
            tail("density"),
            tail("distance"),
            cells,
            row_bands=floor("row_bands"),
            density_bands=floor("density_bands"),
            distance_bands=floor("distance_bands"),
        )


@dataclass(frozen=True)
class BandFloor:
    """The training rows' statistic (a row score, the density, the robust distance) of each band
    the table vouches for (:class:`nrad.cells.Bands`): a row of a band is read among the band's
    rows too, and its p-value is at least its conformal p-value there.

    New rows are scored against tails fitted to all training rows.  A band's
    rows score far beyond the others (a stay of four weeks where most guests
    stay one to three nights: its nights, its tax and its total each far
    out), and a new one of another rate or hotel than the few the training
    rows held scored beyond them all and was flagged.  In sample the band's
    rows are read apart (:func:`level_shifts`), but a long stay of another
    kind than the band's others (two guests where most long stays are one,
    a deposit where most have none) still stood out among them, and was
    flagged in 3 of 10 clean tables.  Among a band of ``m`` rows no row is
    rarer than one in ``m + 1``; a row of the band with an error in another
    cell is still found by that cell's test, and one that breaks an identity
    by the identity.  ``in_sample``: the statistics are those of the rows
    being scored (each row is among its band's rows)."""

    #: Per band: its numeric feature, and how many training rows it holds; the statistics of its
    #: rows, sorted, one band after another.
    columns: np.ndarray
    sizes: np.ndarray
    values: np.ndarray
    in_sample: bool = False

    @classmethod
    def fit(cls, statistic: np.ndarray, bands: np.ndarray, in_sample: bool = False) -> BandFloor | None:
        """From the training rows' ``statistic`` and the cells of their bands (``bands``, n x p)."""
        columns = np.flatnonzero(bands.any(axis=0) & ~bands.all(axis=0))
        if not len(columns):
            return None
        parts = [np.sort(statistic[bands[:, j]]) for j in columns]
        sizes = np.array([len(x) for x in parts], dtype=np.int64)
        return cls(columns.astype(np.int64), sizes, np.concatenate(parts), in_sample)

    def log_p_values(self, statistic: np.ndarray, bands: np.ndarray) -> np.ndarray:
        """(n,) log of each row's conformal p-value among the training rows of its band (the most
        of its bands; -inf for a row of no band)."""
        out = np.full(len(statistic), -np.inf)
        ends = np.cumsum(self.sizes)
        for j, end, size in zip(self.columns, ends, self.sizes, strict=True):
            rows = bands[:, j]
            part = self.values[end - size : end]
            beyond = size - np.searchsorted(part, statistic[rows], side="left")
            # In sample the row is one of those at or beyond its own statistic.
            count = np.maximum(beyond, 1) if self.in_sample else 1.0 + beyond
            out[rows] = np.maximum(out[rows], np.log(count / (size + 1.0)))
        return out

    def to_state(self, prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}{name}": getattr(self, name) for name in ("columns", "sizes", "values")}

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], prefix: str) -> BandFloor:
        columns, sizes = (
            np.asarray(arrays[f"{prefix}{name}"], dtype=np.int64).reshape(-1) for name in ("columns", "sizes")
        )
        values = np.asarray(arrays[f"{prefix}values"], dtype=np.float64).reshape(-1)
        if (
            len(columns) != len(sizes)
            or (columns < 0).any()
            or (sizes < 1).any()
            or sizes.sum() != len(values)
        ):
            raise ValueError("a band floor needs a size per band and as many values as the sizes add up to")
        return cls(columns, sizes, values)


def _stratified(
    scores: np.ndarray,
    trim: tuple[float, float] | None,
    max_shape: float,
    strata: np.ndarray | None,
    bands: np.ndarray | None = None,
    exclude: np.ndarray | None = None,
) -> tuple[TailModel, np.ndarray | None]:
    """The tail of a row score, fitted with ``trim``, and what each row's score loses first (None:
    nothing) when the fit leaves most of a level's rows out, or any of a band's
    (:func:`level_shifts`).  ``exclude``: rows fitted to no tail (None: none)."""
    fitted = scores if exclude is None else np.where(exclude, np.nan, scores)
    tail = TailModel.fit(fitted, trim, max_shape)
    if trim is None or strata is None or not tail.n_trimmed:
        return tail, None
    shift = level_shifts(scores, tail.left_out(scores), strata, bands)
    if shift is None:
        return tail, None
    return TailModel.fit(fitted - shift, trim, max_shape), shift


def level_shifts(
    scores: np.ndarray, left_out: np.ndarray, strata: np.ndarray, bands: np.ndarray | None = None
) -> np.ndarray | None:
    """What each row's score loses before an in-sample tail reads it: for the rows of a level most
    of whose rows that tail ``left_out`` (:meth:`nrad.calibration.TailModel.left_out`), or of a
    band any of whose rows it leaves out, what reads them against each other (None: no such level).

    A level of ``SEGMENT_MIN_ROWS`` or more rows, ``SEGMENT_SHARE`` of them
    among the scores a table's own tail leaves out, is the table's trait, as
    a cell segment is (:class:`nrad.cells.CellSegments`): the flows learn a
    0/1 flag that 1.5% of the rows hold as two points and charge its rare one
    several nats more than its share says, and the tail fitted without those rows
    called every one of them an outlier.  A level's rows are read against
    each other instead: shifted by their median's distance from the other
    rows' (:func:`_level_effects`), and where they spread more than the other
    rows, their distances from that median shrunk to the other rows' spread
    (:func:`_level_spreads`): a row of theirs that stands out among them is
    still left out.  A broken batch is a small part of its levels' rows and
    is not read apart.  ``strata``: (n, columns) level codes, -1 where a row
    has none.

    A band of a column that the table vouches for (``bands``, (n, p) bool,
    :func:`nrad.cells.far_bands`) is its second mode whatever share of it a
    tail leaves out, and is read apart once that tail leaves out any of it:
    three-week stays in hotels where most guests stay one to three nights
    stand out, while at a resort, where guests stay up to a fortnight, they
    do not, and the half of a band that stood out was flagged as errors.
    """
    vouched = [] if bands is None else [rows for rows in bands.T if rows.any() and left_out[rows].any()]
    levels = [
        rows
        for column in strata.T
        for code in _levels_apart(scores, left_out, column)
        # no level (-1), or every row's: nothing to read it against
        if code >= 0 and not (rows := column == code).all()
    ] + [rows for rows in vouched if not rows.all()]
    if not levels:
        return None
    shift = _level_effects(scores, levels)
    outside = ~np.any(levels, axis=0)
    rest = scores - shift
    shift += rest - _level_spreads(rest, levels, outside)
    return shift if shift.any() else None


def _levels_apart(scores: np.ndarray, left_out: np.ndarray, column: np.ndarray) -> np.ndarray:
    """The codes of ``column`` (one stratum's, n) whose levels an in-sample tail reads apart (see
    :func:`level_shifts`): those most of whose rows it left out (:func:`levels_mostly_held`), and
    those of which it left out ``SEGMENT_MIN_ROWS`` rows or more whose median score lies where the
    other rows' top share of the size left out begins.

    A level larger than twice the scores left out cannot have most of its
    rows among them, however far its rows lie: the airport's flat-fare trips,
    4.4% of 30,000, their median score above the other trips' largest, and
    the 1.5% of the rows the tail left out, 449 of the airport's 1,314, were
    flagged.  Their median says the level lies apart, as a broken batch's
    level, most of whose rows are ordinary, does not."""
    codes = levels_mostly_held(left_out, column)
    share = float(left_out.mean())
    levels, inverse = np.unique(column, return_inverse=True)
    counted = np.bincount(inverse, weights=left_out.astype(np.float64), minlength=len(levels))
    extra = []
    for code in levels[(counted >= SEGMENT_MIN_ROWS) & ~np.isin(levels, codes)]:
        rows = column == code
        if rows.all():
            continue
        if np.median(scores[rows]) >= np.quantile(scores[~rows], 1.0 - share):
            extra.append(code)
    return np.concatenate([codes, np.asarray(extra, dtype=codes.dtype)]) if extra else codes


def _level_effects(scores: np.ndarray, levels: list[np.ndarray]) -> np.ndarray:
    """Each row's sum of its levels' effects, for the rows of ``levels`` (boolean masks over
    ``scores``).

    A row may hold several such levels (rare prices of three brands in one
    promotion week), whose charges add in a density: the effects are fitted
    together, each its rows' median less the other rows' once the other
    levels' effects are taken off (backfitting, as median polish fits a
    two-way table), so that a row loses the sum of its levels' effects and a
    level that only shares rows with another is not counted twice.  No effect
    is below 0: a level is never charged more than its rows score.
    """
    effects = np.zeros(len(levels))
    shift = np.zeros(len(scores))
    for _ in range(LEVEL_PASSES):
        moved = 0.0
        for i, rows in enumerate(levels):
            rest = scores - shift + effects[i] * rows
            gap = max(float(np.median(rest[rows]) - np.median(rest[~rows])), 0.0)
            shift += (gap - effects[i]) * rows
            moved = max(moved, abs(gap - effects[i]))
            effects[i] = gap
        if moved <= 1e-9 * (1.0 + float(effects.max())):
            break
    return shift


def _level_spreads(rest: np.ndarray, levels: list[np.ndarray], outside: np.ndarray) -> np.ndarray:
    """``rest`` (the scores less their levels' effects) with each level's rows' distances from the
    median of the rows ``outside`` every level shrunk by those rows' spread over the level's, where
    the level's is wider (interquartile ranges; a row of several levels: the most shrinking).

    Two rows of one rare price differ by hundreds of nats where the flows
    cannot read that price (it stands far out on a lattice of a few values),
    while the other rows differ by a few: shifted to the others' median,
    half of them still stood beyond the others' tail.
    """
    base = rest[outside]
    if len(base) < SPREAD_MIN_ROWS:
        return rest
    middle = float(np.median(base))
    spread = float(np.subtract(*np.percentile(base, [75, 25])))
    factor = np.ones(len(rest))
    for rows in levels:
        own = float(np.subtract(*np.percentile(rest[rows], [75, 25])))
        if own > spread > 0:
            factor[rows] = np.minimum(factor[rows], spread / own)
    # Rows left as they are keep their scores exactly (no shift where no level is read apart).
    return np.where(factor < 1.0, middle + (rest - middle) * factor, rest)


def _less(scores: np.ndarray, shift: np.ndarray | None, positions: np.ndarray | None) -> np.ndarray:
    """``scores`` less ``shift`` (an in-sample tail's, one per training row; None: as they are) at
    the rows' ``positions`` among the training rows (None: all of them, in order)."""
    if shift is None:
        return scores
    shift = shift if positions is None else shift[positions]
    if len(shift) != len(scores):
        raise ValueError(f"in-sample scores of {len(scores)} rows for a tail fitted on {len(shift)}")
    return scores - shift


def row_p_values(
    model: TableModel,
    prep: Prepared,
    scores: np.ndarray,
    z: np.ndarray,
    folds: np.ndarray | None = None,
    density: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(p-value of each row, and what decided it: -1 the row as a whole, else the kept input column).

    ``folds``: the rows are the training rows themselves, in order (in-sample: each read by the part
    of the model that did not see it, its p-value from the in-sample tails).

    The row is tested as a whole (its anomaly score; its density score, in
    nats, for a fused model; its robust distance) and cell by cell
    (:mod:`nrad.cells`); the row's p-value is their weighted Bonferroni
    combination (:func:`nrad.calibration.combine`): half the weight to the
    row-level tests, half shared by its cells.  ``density``: the rows'
    density scores (computed here when a fused model needs them).
    """
    if model.tails is None:
        return np.full(len(scores), np.nan), np.full(len(scores), -1)
    tails = model.own_tails if folds is not None and model.own_tails is not None else model.tails
    own = prep.own_codes if folds is not None else None
    if tails.density is not None and density is None:
        density = model.density_prepared(prep, folds)[0]
    distance = model.distance_statistic(z, folds) if tails.distance is not None else None
    cells = (
        (model.cell_residuals(prep, folds), model.cell_values(prep, new_rows=folds is None), prep.y)
        if tails.cells is not None
        else None
    )
    raw = model.raw_values(prep) if model.schema.numeric_sources else None
    edges = model.lattice_edges(prep, new_rows=folds is None, raw=raw) if cells is not None else None
    # How far each row is off each identity: read by the bands and by the identities' breaks below.
    off_identities = None
    if raw is not None and model.identities is not None and model.identities.n_identities:
        with np.errstate(invalid="ignore"):
            off_identities = model.identities.distances(raw)
    # The rows of a band the table vouches for are read among its training rows too.
    bands = None if raw is None else model.band_cells(prep, raw, off_identities)
    log_p = tails.row_log_p_values(
        scores,
        density,
        distance,
        prep.positions if folds is not None else None,
        bands,
    )
    n_rows = log_p.shape[1]
    own_walls, level_broken = None, None
    if cells is not None:
        assert tails.cells is not None and raw is not None
        cell_log_p = tails.cells.log_p_values(*cells, edges)
        if model.cell_segments is not None:
            # A segment's shared far value is its level's trait, not tested (nrad.cells.CellSegments).
            n_cat = len(model.schema.categorical_names)
            cell_log_p[model.cell_segments.mask(prep.codes[:, :n_cat], cell_log_p.shape[1])] = 0.0
        if bands is not None:
            cell_log_p[bands] = 0.0  # the table vouches for a band's values (nrad.cells.Bands)
        walls = model.walls_for(new_rows=folds is None)
        if walls is not None:
            own_walls = walls.own_beyond(raw)
            beyond = own_walls | walls.pair_cells(raw)
            cell_log_p[beyond] = -np.inf
        if model.identities is not None:
            # Which of an identity's cells is wrong the identity cannot tell: they decide the row,
            # and the naming below reads their own values (a wall's cell is named outright).
            n_cat = len(model.schema.categorical_names)
            broken, level_broken = model.identities.broken(raw, prep.codes[:, :n_cat], off_identities)
            cell_log_p[broken] = -np.inf
        log_p = np.hstack([log_p, cell_log_p])
    numeric = log_p.shape[1] - n_rows
    tested = model.tested_codes()
    categorical = int(tested.sum())
    if categorical:
        categories = np.log(category_p_values(model.categories, prep.codes, own))
        if level_broken is not None:
            categories[:, : level_broken.shape[1]][level_broken] = -np.inf
        # A date outside its column's support (a year typed a century off, a system's zero date)
        # stands beyond a wall, as a number beyond its column's does (nrad.preprocess.date_bounds).
        far = prep.far_dates if folds is not None else prep.apart_dates
        categories[outside_dates(model, prep.codes, far)] = -np.inf
        # A value that its key's level does not give (a sensor at another site) breaks a dependency
        # the table is built on, as a row breaks an identity (nrad.categories.Dependency).
        for dependency, broken in dependency_breaks(model.dependencies(new_rows=folds is None), prep.codes):
            categories[broken, dependency.value] = -np.inf
        log_p = np.hstack([log_p, categories[:, tested]])
    weights = bonferroni_weights(n_rows, numeric, categorical)
    combined, which = combine(log_p, weights)
    columns = np.r_[np.full(n_rows, -1), model.cell_columns()]
    cause = columns[which]
    if cells is not None and numeric:
        assert tails.cells is not None
        # Named outright: a cell beyond its own column's wall.  The two cells of a difference's wall
        # are named by their own values, as an identity's are: a consumption of -250 kWh (a counter
        # reset) before its bill, whichever of the two the order blames.
        cause = _name_among_decisive(
            model, tails.cells, cells, edges, own_walls, log_p, weights, n_rows, which, cause
        )
    return combined, cause


def outside_dates(model: TableModel, codes: np.ndarray, far: np.ndarray | None = None) -> np.ndarray:
    """(n, code features) True where a datetime column's date lies outside its support: its weekday
    feature then holds the code "other" (:func:`nrad.preprocess.dates_outside`); ``far``: the
    rows' :attr:`nrad.encoding.Prepared.far_dates`, for a table read against itself."""
    out = np.zeros(codes.shape, dtype=bool) if far is None else far.copy()
    schema = model.schema
    for f, c in enumerate(schema.categorical_sources):
        if schema.columns[c].kind == "datetime":
            out[:, f] |= codes[:, f] == len(WEEKDAYS)
    return out


def _name_among_decisive(
    model: TableModel,
    cell_tests: NumericCellTests,
    cells: tuple[np.ndarray, np.ndarray, np.ndarray],
    edges: Edges | None,
    beyond: np.ndarray | None,
    log_p: np.ndarray,
    weights: np.ndarray,
    n_rows: int,
    which: np.ndarray,
    cause: np.ndarray,
) -> np.ndarray:
    """Where several numeric cells each decide their row alone (``DECISIVE``), the one whose value
    is also unusual in its context or its column is named: a broken relation's two cells are both
    far from what the other predicts, but only the wrong one is out of place by itself.

    The residual tests do not decide between them unless the cells' own values do not (within
    ``NAMING_MARGIN``): the two residuals are the same broken relation read from either side, and
    their p-values differ by how heavy each column's residual tail was fitted, which errors of the
    same kind in other rows make heavier for the very column that holds them (an amount entered 40
    times too large beside its copy in another currency: summing all three tests named the copy).
    """
    p = cell_tests.n_features
    weighted = log_p[:, n_rows : n_rows + p] - np.log(weights[n_rows : n_rows + p])
    decisive = weighted <= np.log(DECISIVE)
    rows = np.flatnonzero((decisive.sum(axis=1) >= 2) & (which >= n_rows) & (which < n_rows + p))
    if not len(rows):
        return cause
    at = None if edges is None else (edges[0][rows], edges[1][rows], edges[2][rows], edges[3][rows])
    residual, *own = cell_tests.log_p_parts(*(part[rows] for part in cells), at)
    alone = np.nan_to_num(sum(own), nan=np.inf, posinf=np.inf)
    if beyond is not None:
        alone[beyond[rows]] = -np.inf
    alone = np.where(decisive[rows], alone, np.inf)
    # Cells whose own values are about as unusual as the most unusual one's: their residuals decide.
    close = alone <= alone.min(axis=1, keepdims=True) + np.log(NAMING_MARGIN)
    evidence = np.where(close, alone + np.nan_to_num(residual, nan=0.0), np.inf)
    cause = cause.copy()
    cause[rows] = np.asarray(model.schema.numeric_sources)[np.argmin(evidence, axis=1)]
    return cause


#: How much more unusual (a factor on the p-values of its value in context and in its column) a
#: decisive cell's own value must be than another's for it to be named without their residuals.
NAMING_MARGIN = 100.0


def bonferroni_weights(n_rows: int, numeric: int, categorical: int) -> np.ndarray:
    """Weights of a row's tests (they sum to 1): its row-level tests, then numeric, then categorical
    cells (see ``CELL_WEIGHT`` and ``CATEGORY_SHARE``)."""
    cells = numeric + categorical
    row = 1.0 - CELL_WEIGHT if cells else 1.0
    to_categories = CELL_WEIGHT * (CATEGORY_SHARE if numeric else 1.0) if categorical else 0.0
    to_numbers = CELL_WEIGHT - to_categories if numeric else 0.0
    return np.r_[
        np.full(n_rows, row / n_rows),
        np.full(numeric, to_numbers / max(numeric, 1)),
        np.full(categorical, to_categories / max(categorical, 1)),
    ]


def distance_statistic(distance: np.ndarray, p: int) -> np.ndarray:
    """What the robust distance's own p-value is read from: ``-log P(chi2_p > d^2)``, the Gaussian
    model's own surprise at the row (exponential with mean 1 if the numbers are Gaussian, so the
    fitted tail only corrects the model where they are not: heavier tails get a shape up to
    ``CELL_MAX_SHAPE``, as a cell's do)."""
    from scipy import special, stats

    x, k = 2.0 * np.asarray(distance, dtype=np.float64), max(p, 1)
    with np.errstate(divide="ignore"):
        log_sf = stats.chi2.logsf(x, k)
    far = ~np.isfinite(log_sf) & np.isfinite(x) & (x > k)
    if far.any():
        # scipy takes the log of a survival that has underflowed (from half a squared distance of
        # about 725 on): -inf, which would make every row that far out equal, and give p = 0 to a
        # new row beyond a calibration row.  Far out, the upper incomplete gamma's asymptotic
        # series is accurate: Q(a, y) = y^(a-1) e^-y / Gamma(a) (1 + (a-1)/y + (a-1)(a-2)/y^2 ...).
        a, y = k / 2.0, x[far] / 2.0
        series = 1.0 + (a - 1.0) / y * (1.0 + (a - 2.0) / y)
        log_sf[far] = (a - 1.0) * np.log(y) - y - special.gammaln(a) + np.log(np.maximum(series, 1e-300))
    return -log_sf


def dependency_breaks(
    dependencies: list[Dependency], codes: np.ndarray
) -> list[tuple[Dependency, np.ndarray]]:
    """Each dependency with the rows that break it (bool, n).  A row that breaks a dependency
    giving one value (the sensor's site) and the one allowing a few the other way (the site's
    sensors) breaks both with one wrong cell: it is blamed on the value the key gives alone, which
    the key decides, not on the key that only narrows where it may be."""
    breaks = [(d, d.broken(codes)) for d in dependencies]
    single = {(d.key, d.value): rows for d, rows in breaks if d.single}
    out = []
    for d, rows in breaks:
        given = None if d.single else single.get((d.value, d.key))
        out.append((d, rows & ~given if given is not None else rows))
    return out
