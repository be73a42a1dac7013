"""A detector for real tables: schema, category model, the numbers, NRDE and calibration in one object.

A row's density score is its negative log-likelihood under a model of the
whole row (docs/method.md, section "Tables")::

    score = - log p(categories)  - log p(numbers | categories)
          = - sum_j log p(c_j | c_parent(j))            (nrad.categories)
            - log p_NRDE(z) + soft-clip and tail terms  (nrad.numeric, nrad.nrde)

where ``z`` are the numeric features read against their category.  Missing
numbers take the value that fits the row best among the feature's typical
values, and *that* they are missing is a category of its own (``amount``
missing in 2% of training rows costs about 4 nats).  Scores are in nats:
one nat more is a row e (2.7) times less likely.  By default
(``detector="fused"``) the anomaly score is this density score fused with a
neighbour, an isolation and a robust-distance score of the same numbers
(:mod:`nrad.fusion`), cross-fitted like the flows; new rows (not the
training table itself) with the neighbour score alone.  Explanations read
the density score.

``fit_table`` learns everything from a training table; ``TableModel.score``
returns one row per input row, in input order, with ``anomaly_score``,
``p_value``, ``flagged``, ``top_features`` and ``reason``.

No row judges itself.  Several flows are fitted (cross-fitting: 2 for
2,000 rows or more, each on half of the training rows; 3 or 5 for smaller
tables, where a flow needs a larger share); each training row is scored by
the flow that did not see it, with its own counts left out of the category
model (exact: they are counts).  A flow fitted on a row learns it: three planted rows among 3,000
lost 15-25 nats of their score to the flow that saw them.  These scores
calibrate the p-values (every training row, not a held-out fifth), and they
are the scores of a table scored by a model fitted on itself (``nrad detect``
without ``--train``).  New rows are scored by the mean of the flows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nrad.calibration import DISTANCE_TRIM, TailModel
from nrad.categories import CategoryModel, Dependency
from nrad.cells import (
    CELL_MAX_SHAPE,
    CELL_TRIM,
    Bands,
    CellSegments,
    Edges,
    NumericCellTests,
    Ratios,
    Walls,
    far_bands,
    few_valued,
    levels_mostly_held,
)
from nrad.encoding import (
    SPIKE,
    Prepared,
    as_pandas,
    drop_columns,
    far_dates,
    indicator_codes,
    indicator_features,
    indicator_labels,
)
from nrad.errors import NradError
from nrad.evidence import ChannelTails, distance_statistic, row_p_values
from nrad.explain import TOP_FEATURES, column_handling, describe, repair
from nrad.flags import FlagRule
from nrad.fusion import MEMBERS, NEW_ROW_MEMBERS, Fusion
from nrad.gaussian import READINGS, Relations, RobustGaussian, fit_per_fold, hot_deck, spread_levels
from nrad.identities import Identities
from nrad.nrde import NRDE, fit_together
from nrad.numeric import FEW_VALUES, NumericModel, dequantize, shared_values
from nrad.preprocess import TableSchema, encode, fit_schema
from nrad.results import EXPLAIN_TOP, beside_input, check_explain, rows_to_explain, strongest_first
from nrad.rowwise import rows_times
from nrad.threads import on_one_blas_thread

#: The flows score with exponential base tails beyond this many latent sd (NRDE's latent_tail).
LATENT_TAIL = 4.0
#: A row with a numeric value this many (robust) sd from its context's typical value does not train
#: the flows (1 in 500 million for a Gaussian residual).
TRAIN_BOUND = 6.0
#: A flow needs this many rows plus ROWS_PER_FEATURE per number it reads (see :func:`flow_width`) ...
MIN_ROWS = 10
ROWS_PER_FEATURE = 2
#: ... and at least this many rows in all: below, the numbers' density is the robust Gaussian's.
MIN_FLOW_ROWS = 40
#: The flows read at most this many numbers: a wider table's flows read its leading principal
#: components, and the rest of each row is scored by a Gaussian (probabilistic PCA).
MAX_FLOW_FEATURES = 128
#: Tables with more numbers than this get no per-cell tests and their robust Gaussian reads the
#: same components as the flows (its cost grows with the square of the width).
MAX_CELL_FEATURES = 128
#: Fewer rows than this: refused.
MIN_TABLE_ROWS = 10
#: Flows fitted, each on the rows outside one fold (each scores the rows it did not see): by table
#: size, (below this many rows, this many folds), else CROSS_FIT_FOLDS.  Halves of a small table are
#: too small to fit (an 80-row table of 19 numeric columns was refused with 2 folds); small tables
#: fit quickly, so they get more folds and each flow sees 67% or 80% of the rows (the benchmark's
#: other small tables keep their mean AUROC fitted on themselves: docs/method.md).
FOLD_BANDS = ((1000, 5), (2000, 3))
CROSS_FIT_FOLDS = 2
#: The table model's flows keep every source (no noise split): on tables the split rarely finds
#: noise, and where it split it dropped the weak directions where broken relations between
#: columns show (docs/method.md, section 14).  ``fit_table(..., source_split=True)`` (``nrad
#: detect --source-split``) brings NRDE's split back.
PURE_SOURCES = "all"
#: What a table model scores with: the density fused with neighbour and isolation scores (see
#: :mod:`nrad.fusion`; the default), or the density alone (NRDE's flows with the category model).
DETECTORS = ("fused", "nrde")
Progress = Callable[[str], None]
#: Flagged rows explained at a time, with a progress line after each chunk when there are more.
EXPLAIN_CHUNK = 500


@dataclass
class TableModel:
    """A fitted table model (see the module docstring)."""

    schema: TableSchema
    categories: CategoryModel
    numeric: NumericModel
    #: NRDE on the numeric features: one, or one per cross-fitting fold (none without numeric features).
    detectors: list[NRDE]
    #: The tails each channel's p-values are read from, for new rows (None: no calibration rows,
    #: no p-values; see :class:`ChannelTails`).
    tails: ChannelTails | None
    id_column: str | None = None
    ignore: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    #: The neighbour and isolation members and the fused score's scale (None: the density alone).
    fusion: Fusion | None = None
    #: The robust Gaussian model of the numbers, one per cross-fitting fold (none without numbers).
    gaussians: list[RobustGaussian] = field(default_factory=list)
    #: What a cell's residual given the row's other numbers is read from: one per reading of the
    #: numbers (:data:`nrad.gaussian.READINGS`; none without numbers, or with too many of them;
    #: see :class:`nrad.gaussian.Relations` and :meth:`cell_residuals`).
    relations: list[Relations] = field(default_factory=list)
    #: A wide table's flows (and, beyond MAX_CELL_FEATURES numbers, its robust Gaussian) read
    #: ``z @ basis``, its leading principal components; the rest of ``z`` costs a Gaussian of
    #: variance ``residual_variance`` per dimension.  None: the flows read ``z`` itself.
    basis: np.ndarray | None = None
    residual_variance: float = 1.0
    #: The walls of the numbers (a lattice column's bounds, a column's 0; see
    #: :class:`nrad.cells.Walls`): a value beyond one is outside the column's support (None
    #: without numbers).
    walls: Walls | None = None
    #: Exact relations between the numbers (a gross that is the net plus the VAT; see
    #: :class:`nrad.identities.Identities`): a row that breaks one holds an impossible cell (None
    #: without numbers).
    identities: Identities | None = None
    #: Category levels whose rows share a value far out in a numeric column (see
    #: :class:`nrad.cells.CellSegments`): their cells in it are not tested (None: no segment).
    cell_segments: CellSegments | None = None
    #: The bands of numeric columns the table vouches for (see :class:`nrad.cells.Bands`): their
    #: cells are not tested in their column, and their rows are read apart by the row tails (None:
    #: no band).
    bands: Bands | None = None
    #: Cross-fitting: the fold of each training row (its rows are scored by the flow of that
    #: fold, which did not see them).  Only for the table just fitted; not saved.
    folds: np.ndarray | None = field(default=None, repr=False)
    #: The tails that p-values of the training rows themselves are read from (in-sample scoring):
    #: the same channels fitted without their top scores, where the table's own anomalies are
    #: (see :class:`ChannelTails`).  Only for the table just fitted; not saved.
    own_tails: ChannelTails | None = field(default=None, repr=False)

    def score_units(self, in_sample: bool = False) -> str:
        """What one unit of ``anomaly_score`` is, in words (for the tables and the report);
        ``in_sample``: of the training rows themselves (``nrad detect``), else of new rows."""
        if self.fusion is None:
            return "nats: 1 more = e times rarer"
        members = MEMBERS if in_sample else NEW_ROW_MEMBERS
        return f"{' + '.join(members)} scores, in IQRs; 0 = typical"

    # -- reading rows --------------------------------------------------------

    @property
    def indicator_features(self) -> list[int]:
        """Numeric features that get an indicator category (see :func:`nrad.encoding.indicator_features`)."""
        return indicator_features(self.schema)

    def prepare(self, df: Any, what: str = "data") -> Prepared:
        """Encode a table (pandas or polars) for the model; id and ignored columns are dropped."""
        df = as_pandas(df)
        present = [c for c in self.ignore if c in df.columns]  # ignored columns may be absent
        enc = encode(self.schema, drop_columns(df, self.id_column, present, what), what)
        codes = np.hstack([enc.codes, indicator_codes(self.schema, enc)])
        far, apart = far_dates(enc.far_dates, codes.shape[1]), far_dates(enc.apart_dates, codes.shape[1])
        return Prepared(
            self.numeric.shape(enc.numeric), codes, enc.counts, enc.missing, far_dates=far, apart_dates=apart
        )

    # -- scoring ---------------------------------------------------------------

    def score_prepared(
        self, prep: Prepared, folds: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(anomaly score per row, and as :meth:`density_prepared`, z and terms).

        The anomaly score is the density score fused with the neighbour,
        isolation and robust-distance scores of the same z (:mod:`nrad.fusion`),
        or the density score alone for a model fitted with ``detector="nrde"``.
        """
        scores, _, z, terms = self.scores_prepared(prep, folds)
        return scores, z, terms

    def scores_prepared(
        self, prep: Prepared, folds: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(anomaly score, density score, z, terms): :meth:`score_prepared` with the density
        member's own score beside the fused one (the same for a ``detector="nrde"`` model)."""
        density, z, terms = self.density_prepared(prep, folds)
        if self.fusion is None:
            return density, density, z, terms
        if folds is not None:
            return self.fusion.combine(density, self.members(z, folds)), density, z, terms
        # New rows sum NEW_ROW_MEMBERS alone: the other members are not computed for them.
        members = np.full((len(z), len(MEMBERS) - 1), np.nan)
        members[:, MEMBERS.index("neighbours") - 1] = self.fusion.neighbours(z)
        return self.fusion.combine(density, members, new_rows=True), density, z, terms

    def members(self, z: np.ndarray, folds: np.ndarray | None = None) -> np.ndarray:
        """(n, 3) neighbour, isolation and robust-distance scores of the flows' numbers ``z``."""
        assert self.fusion is not None
        return np.column_stack([self.fusion.members(z, folds), self.gaussian_distance(z, folds)])

    def per_fold(
        self,
        parts: list[Any],
        fn: Callable[[Any, np.ndarray], np.ndarray],
        z: np.ndarray,
        folds: np.ndarray | None,
    ) -> np.ndarray:
        """``fn(part, rows)`` of each row by its own fold's part (``folds`` given: training rows, in
        sample), or the mean over the parts (new rows)."""
        if folds is None:
            return np.mean([fn(part, z) for part in parts], axis=0)
        out = None
        for k, part in enumerate(parts):
            rows = folds == k
            if rows.any():
                got = fn(part, z[rows])
                out = np.zeros((len(z), *got.shape[1:])) if out is None else out
                out[rows] = got
        return np.zeros(len(z)) if out is None else out

    def gaussian_distance(self, z: np.ndarray, folds: np.ndarray | None = None) -> np.ndarray:
        """Half the squared robust Mahalanobis distance of each row (nats; 0 without numbers)."""
        if not self.gaussians or z.shape[1] == 0:
            return np.zeros(len(z))
        return self.per_fold(self.gaussians, lambda g, rows: g.distance(rows), self.gaussian_input(z), folds)

    def distance_statistic(self, z: np.ndarray, folds: np.ndarray | None = None) -> np.ndarray:
        """Each row's robust distance as the Gaussian's own surprise at it
        (:func:`nrad.evidence.distance_statistic`), on as many dimensions as the Gaussian reads:
        a wide table's components, not its columns (a distance of 150 over 128 components is
        ordinary; over 503 columns it would be a chi-square's 1-in-10^50)."""
        return distance_statistic(self.gaussian_distance(z, folds), self.gaussian_input(z[:1]).shape[1])

    def raw_values(self, prep: Prepared) -> np.ndarray:
        """(n, p) the numbers in the table's units, a spike's cells at the spike (NaN where missing)."""
        raw = self.in_units(prep.y)
        n_cat = len(self.schema.categorical_names)
        sources = self.schema.numeric_sources  # a list built per call: once, not per column
        for k, j in enumerate(self.indicator_features):
            spike = self.schema.columns[sources[j]].spike
            if spike is not None:
                raw[prep.codes[:, n_cat + k] == SPIKE, j] = spike
        return raw

    def band_cells(
        self, prep: Prepared, raw: np.ndarray | None = None, distance: np.ndarray | None = None
    ) -> np.ndarray | None:
        """(n, p) True at the rows' cells that lie in a band the table vouches for (None: no band;
        :class:`nrad.cells.Bands`); ``raw``: the rows' :meth:`raw_values`, and ``distance`` their
        :meth:`nrad.identities.Identities.distances`, when already computed."""
        if self.bands is None or self.identities is None:
            return None
        raw = self.raw_values(prep) if raw is None else raw
        return self.bands.mask(raw, self.identities.kept(raw, prep.codes, distance))

    def cell_values(self, prep: Prepared, y: np.ndarray | None = None, new_rows: bool = False) -> np.ndarray:
        """(n, p) each numeric cell's value given its context, uncompressed (NaN where absent):
        see :meth:`nrad.numeric.NumericModel.residuals`."""
        return self.numeric.residuals(prep.y if y is None else y, prep.codes, new_rows)

    def walls_for(self, new_rows: bool) -> Walls | None:
        """The walls rows are read against: the training rows against the walls, new rows against
        the walls moved out to what the training rows held (:meth:`nrad.cells.Walls.for_new_rows`)."""
        return self.walls if self.walls is None or not new_rows else self.walls.for_new_rows()

    def lattice_edges(
        self, prep: Prepared, new_rows: bool = False, raw: np.ndarray | None = None
    ) -> Edges | None:
        """Each numeric cell's value in context and in its column (:meth:`cell_values`,
        ``prep.y``) at the low and the high edge of its lattice cell (None: no lattice column);
        ``raw``: the rows' :meth:`raw_values`, when already computed (a spike's cells, which hold
        the spike there, are absent from the cells' tests and their edges are not read).

        The cells' tests were calibrated on values spread over their lattice
        cells, as the flows were trained (:func:`nrad.numeric.dequantize`); a
        value read as it is, at its cell's centre, lies above half of the
        calibration values that hold it.  Read at the cell's edge, they count
        where the count floor asks how many calibration values lie at or
        beyond (:meth:`nrad.calibration.TailModel.log_p_values`): a port that
        one training row held got p = 6e-8 in its column, where that row's
        count allows no less than 3.4e-4.
        """
        step = self.numeric.discrete
        if not (step > 0).any() or not prep.y.shape[1]:
            return None
        units = self.in_units(prep.y) if raw is None else raw
        lattice = step[None, :] > 0
        # Off the lattice columns the values stay exactly as they are (no round trip through units).
        low = np.where(lattice, self.numeric.shape(units - step / 2), prep.y)
        high = np.where(lattice, self.numeric.shape(units + step / 2), prep.y)
        return (
            self.cell_values(prep, y=low, new_rows=new_rows),
            self.cell_values(prep, y=high, new_rows=new_rows),
            low,
            high,
        )

    def cell_residuals(
        self, prep: Prepared, folds: np.ndarray | None = None, y: np.ndarray | None = None
    ) -> np.ndarray:
        """(n, p) each numeric cell's residual given the row's other numbers (NaN where absent).

        Read three ways (:data:`nrad.gaussian.READINGS`), and the smallest residual kept: in
        ``z`` as the flows read the numbers (each in its context, its tails pulled in), on the
        numbers as shaped, and in the table's units.  A relation may be straight in any one of
        them and bent in the others (an age and a birth year read per ward bend in ``z``; an
        LDL that is the total cholesterol minus HDL and a fifth of the triglycerides bends when
        the skewed columns are shaped; a balance whose log rises with age bends at its far end
        in both of the others), and a row on it must not look off it because one reading bends
        it.  A broken relation is off in all three.  The readings without context (shaped, units)
        count only where the column has a relation in them (:meth:`nrad.gaussian.Relations.holds`):
        in one without, the residual is the column's value alone (an amount set by its merchant,
        read as shaped, is where it lies in the whole column, and 8 times a cheap merchant's usual
        amount is ordinary there), which the cell's column test already reads.  ``z`` always
        counts: a column related to nothing is read in its context.  ``y``: the numbers judged,
        if not ``prep.y`` (the training rows' dequantized values).
        """
        y = prep.y if y is None else y
        if not self.relations:
            return np.full(y.shape, np.nan)
        # The readings without context count only where they hold a relation of the column; z,
        # each value read in its context, always: a column related to nothing is read there, and
        # a column related in one reading only is not blamed there for a wild predictor (a byte
        # count of 4e9 predicting a port off its usual value) while in its context it is ordinary.
        every = np.ones(y.shape[1], dtype=bool)
        held = [every if relations.reading == "z" else relations.holds for relations in self.relations]
        smallest = np.full(y.shape, np.inf)
        for relations, kept in zip(self.relations, held, strict=True):
            if not kept.any():
                continue
            u = relations.standardize(self.reading(relations.reading, y, prep.codes, folds is None))
            t = self.per_fold(relations.gaussians, relations.residuals, u, folds)
            closer = kept[None, :] & ~(np.abs(t) >= np.abs(smallest))
            smallest = np.where(closer, t, smallest)
        return smallest

    def reading(self, name: str, y: np.ndarray, codes: np.ndarray, new_rows: bool = False) -> np.ndarray:
        """(n, p) the shaped numbers ``y`` in one of :data:`nrad.gaussian.READINGS` (absent: NaN);
        ``new_rows``: see :meth:`nrad.numeric.NumericModel.residuals`."""
        if name == "z":
            return self.numeric.standardize(y, codes, new_rows)
        return y if name == "shaped" else self.in_units(y)

    def in_units(self, y: np.ndarray) -> np.ndarray:
        """(n, p) shaped numbers ``y`` back in the table's units (absent cells, a spike's too, stay
        NaN; :meth:`raw_values` puts a spike's cells at the spike)."""
        if not y.shape[1]:  # a table of categories alone
            return np.empty(y.shape)
        return np.column_stack([self.numeric.unshape(j, y[:, j]) for j in range(y.shape[1])]).reshape(y.shape)

    def dependencies(self, new_rows: bool = False) -> list[Dependency]:
        """The functional dependencies between the table's categorical columns and its numbers'
        indicators (a sensor gives its site, a cash payment a tip of 0:
        :class:`nrad.categories.Dependency`), from the category model's counts; a datetime's weekday
        takes no part.  ``new_rows``: as new rows are read, allowing every pair a training row held."""
        schema = self.schema
        columns = np.ones(self.categories.n_features, dtype=bool)
        for f, c in enumerate(schema.categorical_sources):
            columns[f] = schema.columns[c].kind == "categorical"
        # A number's indicator keys one value per level alone: its level off the spike is a
        # few per cent of the rows, among which a category's rare levels go missing by chance, and
        # "misc_value not 0 goes with 'attached' or 'detached'" flagged a clean carport.
        set_keys = np.zeros(self.categories.n_features, dtype=bool)
        set_keys[: len(schema.categorical_names)] = True
        # A number's cell may be what a level rules out (a single head has no spouse's age).
        return self.categories.dependencies(columns, seen=new_rows, set_keys=set_keys, absences=~set_keys)

    def tested_codes(self) -> np.ndarray:
        """Which code features get a cell test: those that took more than one code in training (a
        number never missing there, say, has an indicator that cannot tell anything)."""
        return np.asarray([(c > 0).sum() > 1 for c in self.categories.counts], dtype=bool)

    def cell_columns(self) -> np.ndarray:
        """The kept input column (index into ``schema.columns``) of each cell test, in test order:
        numeric features, then code features (categorical features, then the numbers' indicators)."""
        sources = self.schema.numeric_sources
        numeric = sources if self.tails is not None and self.tails.cells is not None else []
        codes = np.asarray(self.schema.categorical_sources + [sources[j] for j in self.indicator_features])
        return np.asarray([*numeric, *codes[self.tested_codes()]], dtype=np.int64)

    def density_prepared(
        self, prep: Prepared, folds: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(density score per row in nats, the numeric z the flow saw with missing cells filled,
        each cell's added score: see :meth:`numeric_z`, and the tail terms of the filled cells).

        ``folds``: the rows are the training rows themselves, in order (see
        :meth:`training_folds`): each is read with its own counts left out of
        the category model and scored by the flow that did not see it.
        """
        z, terms = self.numeric_z(prep.y, prep.codes, new_rows=folds is None)
        missing = np.isnan(z)
        z = self.fill(z, folds)
        terms = terms + self.filled_terms(z, missing)
        numeric = self.flow_score(z, folds) + terms.sum(axis=1)
        own = prep.own_codes if folds is not None else None
        return -self.categories.log_terms(prep.codes, leave_out=own).sum(axis=1) + numeric, z, terms

    def filled_terms(self, z: np.ndarray, missing: np.ndarray) -> np.ndarray:
        """The tail terms of the values that filled the ``missing`` cells of ``z`` (0 elsewhere)."""
        return np.where(missing, self.numeric.tail_terms(z), 0.0) if missing.any() else np.zeros(z.shape)

    def training_folds(self, n_rows: int) -> np.ndarray:
        """The cross-fitting folds of the table this model was just fitted on (for in-sample scoring)."""
        if self.folds is None or len(self.folds) != n_rows:
            raise NradError(
                "in-sample scoring needs the table the model was fitted on, in the same session "
                f"({n_rows} rows given, {0 if self.folds is None else len(self.folds)} fitted)"
            )
        return self.folds

    def numeric_z(
        self, y: np.ndarray, codes: np.ndarray, new_rows: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Compressed z (NaN where missing) and each cell's added score (0 where missing): the soft
        clip's and the tail weight's log-Jacobians, so that the score is a density of the residuals.
        ``new_rows``: see :meth:`nrad.numeric.NumericModel.residuals`."""
        raw = self.numeric.standardize(y, codes, new_rows)
        z, terms = self.numeric.soft_clip(raw)
        return z, np.nan_to_num(terms) + self.numeric.tail_terms(raw)

    def flow_score(self, z: np.ndarray, folds: np.ndarray | None = None) -> np.ndarray:
        """The numbers' negative log-density (0 without numeric features): NRDE's flows (each row's
        own fold's flow when ``folds`` is given, in sample; else their mean), on the leading
        components plus the Gaussian of the rest for a wide table; the robust Gaussian's for a
        table too small for flows."""
        if z.shape[1] == 0:
            return np.zeros(len(z))
        if not self.detectors:
            if not self.gaussians:
                return np.zeros(len(z))
            return self.per_fold(
                self.gaussians, lambda g, rows: g.negative_log_density(rows), self.gaussian_input(z), folds
            )
        u = self.flow_input(z)
        score = self.per_fold(self.detectors, lambda d, rows: d.anomaly_score(rows), u, folds)
        if self.basis is not None:
            rest = z - rows_times(u, self.basis.T)
            p, q = self.basis.shape
            score = (
                score
                + 0.5 * (rest**2).sum(axis=1) / self.residual_variance
                + 0.5 * (p - q) * np.log(2 * np.pi * self.residual_variance)
            )
        return score

    def flow_input(self, z: np.ndarray) -> np.ndarray:
        """What the flows read: ``z``, or a wide table's leading components ``z @ basis``."""
        return z if self.basis is None else rows_times(z, self.basis)

    def gaussian_input(self, z: np.ndarray) -> np.ndarray:
        """What the robust Gaussian reads: ``z``, or the components when the table is too wide."""
        return z if self.basis is None or z.shape[1] <= MAX_CELL_FEATURES else rows_times(z, self.basis)

    def fill(
        self, z: np.ndarray, folds: np.ndarray | None = None, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """Each absent cell (missing, or at its column's spike) at its conditional mean given the
        row's present numbers, under the robust Gaussian of the row's fold (new rows: the mean over
        folds).  The row is charged for the cell being absent by its indicator category, not for a
        guess; calibration rows and scored rows are filled alike, so their scores compare.
        ``rng`` given (training rows, with ``folds``): a draw from the conditional distribution."""
        if not np.isnan(z).any():
            return z
        if not self.gaussians or z.shape[1] > MAX_CELL_FEATURES:
            return np.nan_to_num(z)  # the middle of the training values
        return self.per_fold(self.gaussians, lambda g, rows: g.fill(rows, rng=rng), z, folds)

    @on_one_blas_thread
    def score_rows(
        self,
        df: pd.DataFrame,
        explain: bool = False,
        what: str = "data",
        in_sample: bool = False,
        with_input: bool = False,
    ) -> tuple[pd.DataFrame, dict[str, int]]:
        """Per-row results that need no other row: id, anomaly_score, p_value (and, asked, explanations).

        Flagging needs all rows (BH, top share); :meth:`score` adds it, and
        :mod:`nrad.stream` adds it after a streamed pass.  ``in_sample``: ``df``
        is the table the model was fitted on (see :meth:`score_prepared`).
        ``with_input``: the input's columns first, then the results (see :func:`beside_input`).
        """
        df = as_pandas(df)
        prep = self.prepare(df, what)
        folds = self.training_folds(len(df)) if in_sample else None
        scores, density, z, _ = self.scores_prepared(prep, folds)
        out = pd.DataFrame(index=df.index)
        if self.id_column is not None:
            out[self.id_column] = df[self.id_column]  # same index: keeps the column's dtype
        out["anomaly_score"] = scores
        out["p_value"] = row_p_values(self, prep, scores, z, folds, density)[0]
        if explain:
            out["top_features"], out["reason"] = describe(self, df, prep=prep, in_sample=in_sample)
        if with_input:
            out = beside_input(df, out, self.id_column)
        counts = dict(prep.counts)
        if in_sample and "unseen_levels" in counts:
            # The training table's own levels are all seen: those read as "other" were seen once.
            counts["levels seen only once"] = counts.pop("unseen_levels")
        return out.reset_index(drop=True), counts

    @on_one_blas_thread
    def score(
        self,
        df: pd.DataFrame,
        fdr: float | None = None,
        contamination: float | None = None,
        explain: str = "flagged",
        what: str = "data",
        in_sample: bool = False,
        with_input: bool = False,
        rule: FlagRule | None = None,
        progress: Progress | None = None,
    ) -> tuple[pd.DataFrame, dict[str, int]]:
        """Score every row and flag (BH at ``fdr``, default 0.05, or the top ``contamination`` share;
        or by a ``rule`` already made, :class:`nrad.flags.FlagRule`).

        The result has ``df``'s index (``df.join(scored)`` puts them side by side).

        ``explain``: ``"flagged"`` (default) explains the flagged rows and the
        ``EXPLAIN_TOP`` rows with the strongest evidence (others get empty
        strings), ``"all"`` every row, ``"none"`` leaves the explanation
        columns out.  ``in_sample``: ``df`` is the table the model was fitted on.  ``progress``:
        told how the explanations go when there are many to write.
        """
        rule = FlagRule.of(fdr, contamination) if rule is None else rule
        check_explain(explain)
        self.require_p_values(rule)
        df = as_pandas(df)
        out, counts = self.score_rows(
            df, explain=explain == "all", what=what, in_sample=in_sample, with_input=with_input
        )
        out.insert(out.columns.get_loc("p_value") + 1, "flagged", rule.flags(out[rule.column].to_numpy()))
        if explain == "flagged":
            rows = rows_to_explain(out["flagged"].to_numpy(), strongest_first(out)[:EXPLAIN_TOP])
            top, reason = self._explained(df, rows, what, in_sample, progress or (lambda _: None))
            out["top_features"], out["reason"] = "", ""
            out.loc[rows, "top_features"], out.loc[rows, "reason"] = top, reason
        # The input's own index, so that df.join(scored) lines the rows up.
        return out.set_axis(df.index), counts

    def _explained(
        self, df: pd.DataFrame, rows: np.ndarray, what: str, in_sample: bool, progress: Progress
    ) -> tuple[list[str], list[str]]:
        """:func:`nrad.explain.describe` of the positions ``rows`` of ``df``, ``EXPLAIN_CHUNK`` rows
        at a time with a progress line after each when there are more: thousands of flagged rows
        of a wide table take minutes to explain, and a user is owed word that the run is alive."""
        if len(rows) <= EXPLAIN_CHUNK:
            return describe(self, df, what=what, in_sample=in_sample, rows=rows)
        prep = self.prepare(df, what)
        top: list[str] = []
        reason: list[str] = []
        progress(f"explaining {len(rows):,} rows")
        for start in range(0, len(rows), EXPLAIN_CHUNK):
            chunk_top, chunk_reason = describe(
                self, df, prep, what, in_sample, rows[start : start + EXPLAIN_CHUNK]
            )
            top += chunk_top
            reason += chunk_reason
            progress(f"explained {min(start + EXPLAIN_CHUNK, len(rows)):,} of {len(rows):,} rows")
        return top, reason

    def require_p_values(self, rule: FlagRule) -> None:
        """Refuse a rule that needs p-values when the model has none (it had no calibration rows)."""
        if rule.kind == "fdr" and self.tails is None:
            raise NradError(
                "this model has no calibration rows, so it gives no p-values to flag by a false "
                "discovery rate; flag the top share of scores (a contamination) instead, or fit it again"
            )

    # -- explanations ------------------------------------------------------------

    @on_one_blas_thread
    def explain(self, df: pd.DataFrame, what: str = "data", in_sample: bool = False) -> pd.DataFrame:
        """Each row's contribution per input column, in nats (the numbers behind ``top_features``).

        A column's contribution is how much the row's density score would drop if
        that column alone took the value that fits the row best (see
        :mod:`nrad.explain`); 0 for a column that is already typical.
        """
        df = as_pandas(df)
        folds = self.training_folds(len(df)) if in_sample else None
        result = repair(self, self.prepare(df, what), folds)
        out = pd.DataFrame(result.gains, columns=self.schema.names)
        if self.id_column is not None:
            out.insert(0, self.id_column, df[self.id_column].to_numpy())
        return out

    @on_one_blas_thread
    def describe(
        self,
        df: pd.DataFrame,
        prep: Prepared | None = None,
        what: str = "data",
        in_sample: bool = False,
        rows: np.ndarray | None = None,
        k: int = TOP_FEATURES,
    ) -> tuple[list[str], list[str]]:
        """``top_features`` and ``reason`` of the rows (see :func:`nrad.explain.describe`)."""
        return describe(self, df, prep, what, in_sample, rows, k)

    def columns_summary(self) -> list[dict[str, str]]:
        """How each kept column is read (for the report and ``nrad fit``)."""
        return [
            {"name": c.name, "handling": column_handling(self, i)} for i, c in enumerate(self.schema.columns)
        ]


@on_one_blas_thread
def fit_table(
    df: pd.DataFrame,
    id_column: str | None = None,
    ignore: Sequence[str] = (),
    random_state: int = 0,
    verbose: bool = False,
    what: str = "training data",
    progress: Progress | None = None,
    detector: str = "fused",
    keep: Sequence[str] = (),
    source_split: bool = False,
    **nrde_params: Any,
) -> TableModel:
    """Learn the schema, the category model, the numeric model, the flows and the calibration from ``df``.

    ``df`` may be pandas or polars.  The rows are split into
    :func:`cross_fit_folds` folds; one NRDE flow is fitted on the rows outside
    each fold, and every row is scored by the flow that did not see it.
    Those scores calibrate the p-values, so every training row calibrates,
    and the same fit serves both ways of working: new rows are scored by the
    mean of the flows (:meth:`TableModel.score`), the training table itself
    row by row by its own fold's flow (``score(..., in_sample=True)``).
    ``detector``: ``"fused"`` (default) adds cross-fitted neighbour and
    isolation members (:mod:`nrad.fusion`); ``"nrde"`` scores with the density alone.
    ``keep``: columns kept as features even if they look like identifiers.
    ``source_split``: the flows split their sources into pure and noise and score the pure
    data's density, as NRDE does (the paper's method); by default they keep every source
    (``PURE_SOURCES``).
    """
    if detector not in DETECTORS:
        raise NradError(f"detector must be one of {', '.join(DETECTORS)}, got {detector!r}")
    say = progress or (lambda _: None)
    df = as_pandas(df)
    features = drop_columns(df, id_column, ignore, what)
    check_rows(len(features), what)  # say so before reading columns
    schema = fit_schema(features, features=keep)
    info: dict[str, Any] = {"identifiers": schema.identifiers}
    if id_column is None:
        # The row id is an identifier with a different value in every row (a key that repeats
        # names no row).
        unique = (c for c in schema.identifiers if features[c].notna().all() and features[c].is_unique)
        id_column = next(unique, None)
        if id_column is not None:
            info["id_detected"] = True
    enc = encode(schema, features, what)
    rng = np.random.default_rng(random_state)
    n_codes = [len(labels) for labels in schema.categorical_labels]
    # The values many rows share: read by the tail weights here and by the cell tests below.
    shared = shared_values(enc.numeric)
    numeric = NumericModel.fit(enc.numeric, enc.codes, n_codes, rng, shared)
    codes = np.hstack([enc.codes, indicator_codes(schema, enc)])
    categories = CategoryModel.fit(codes, n_codes + [len(labels) for labels in indicator_labels(schema)])
    info["detector"] = detector
    info["source_split"] = bool(source_split)
    model = TableModel(schema, categories, numeric, [], None, id_column, list(ignore), info)
    n_folds = cross_fit_folds(len(features))
    model.folds = rng.permutation(len(features)) % n_folds
    far = far_dates(enc.far_dates, codes.shape[1])
    prep = Prepared(numeric.shape(enc.numeric), codes, enc.counts, enc.missing, far_dates=far)
    distances, spread, segment, batch, own_cell_tests, two_valued = None, None, False, False, None, None
    few_levels, bands, first, off, context_shared, ratios = None, None, None, None, None, None
    apart: np.ndarray | None = None
    if enc.numeric.shape[1]:
        # Dequantized values (integers spread over their unit cell) train the flows; scoring
        # reads the values as they are.  Absent cells are filled with random observed values
        # for the principal basis and the robust Gaussians, then (below) drawn from their
        # conditional distribution for the flows.
        y = numeric.shape(dequantize(enc.numeric, numeric.discrete, rng))
        absent = model.numeric_z(y, codes)[0]
        z = hot_deck(absent, rng)
        # Rows with a value far from its context's typical ones (a 30x amount,
        # an age of 999) do not train the flows: a flow fitted on a few of
        # them learns density where they cluster, and then scores the next
        # one as normal.  Clean rows almost never go that far.
        raw = numeric.standardize(y, codes)
        far = ~(np.isnan(raw) | (np.abs(raw) <= TRAIN_BOUND))
        inside = ~far.any(axis=1)
        per_flow = min(int(((model.folds != k) & inside).sum()) for k in range(n_folds))
        width = flow_width(z.shape[1], per_flow)
        if width and width < z.shape[1] or z.shape[1] > MAX_CELL_FEATURES:
            model.basis, model.residual_variance = _principal_basis(z[inside], width or MAX_FLOW_FEATURES)
        # The robust Gaussians and the relations read a column of two values (a flag) that has a
        # category as its context spread over the gap between its values before the context is
        # applied (as the calibration below reads it): read per level first, such a flag is a few
        # points (0 in most rows of every clinic, its 1 at a different place per clinic), too
        # many to be spread afterwards.  The Gaussians' subset of the most alike rows then held
        # the flag at exactly 0 and had no spread along it, and every row with a 1 where 1s are
        # few (74 of a clinic's 172, most of a ward's inpatients) lay hundreds of spreads out:
        # 260 rows of a real table of covid tests were flagged so.  A flag without a context is
        # two points, spread as before (nrad.gaussian.spread_levels).
        spread = spread_levels(y, ~np.isnan(y), np.random.default_rng(random_state + 1))
        spread_z = model.numeric_z(spread, codes)[0]
        two_valued = np.any(np.isfinite(y) & (spread != y), axis=0)  # the columns spread_levels spread
        in_context = two_valued & (numeric.parent >= 0)
        read_y = np.where(in_context, spread, y)
        model.gaussians = _fit_gaussians(
            model,
            np.where(in_context, hot_deck(spread_z, np.random.default_rng(random_state + 4)), z),
            np.where(in_context, spread_z, absent),
            inside,
            random_state,
        )
        # The flows learn absent cells (missing, or at their column's spike) drawn from their
        # conditional distribution given the row's present numbers: as spread as the values they
        # stand for (a spike column's values off the spike), and related to the row's other cells
        # as present values are.  Random observed values (the hot deck above) keep the spread but
        # break the relations, and a flow fitted on them reads every row's filled cells (their
        # conditional means, model.fill) against relations it never saw.  A column with fewer
        # than FEW_VALUES values keeps the hot deck: its values are read by their predictive
        # tail, wider than the spread of the few values a Gaussian was fitted on.
        if model.gaussians and z.shape[1] <= MAX_CELL_FEATURES:
            drawn = model.fill(absent, model.folds, np.random.default_rng(random_state + 2))
            few = numeric.n_values < FEW_VALUES
            z = np.where(few[None, :], z, drawn)
        # The training rows' robust distances, out of fold (absent cells at their conditional
        # means): they find the rows standing apart, and calibrate below.  Read on the dequantized
        # values, as the Gaussians were fitted: rows that share a rare count tie in distance, and
        # ties read as a gap that an exponential tail would not make (nrad.calibration.gap_trim).
        filled = model.fill(spread_z, model.folds)
        distances = model.distance_statistic(filled, model.folds)
        apart = _standing_apart(distances)
        # A cluster that is most of its category levels is a segment of the table (every US
        # invoice charges no VAT), not a broken batch: it trains the models, and the in-sample
        # distance tail does not leave it out.
        segment = _is_segment(apart, enc.codes)
        left_apart = apart & (not segment)
        inside &= ~left_apart
        if not segment:
            batch = _a_cluster(apart, filled, np.random.default_rng(random_state + 3))
        if z.shape[1] <= MAX_CELL_FEATURES:
            model.relations = [
                Relations.fit(model.reading(name, read_y, codes), model.folds, inside, random_state, name)
                for name in READINGS
            ]
        # Calibrated on the dequantized values (a count spread over its unit cell, a two-valued
        # column over the gap between its values), as the flows were trained: tied residuals
        # would make a count's next value, or the 4% of rows with two kitchens, look like a gap
        # in a continuous tail (nrad.calibration.gap_trim) and trim it as anomalies.
        residuals = model.cell_residuals(prep, model.folds, y=spread)
        values = model.cell_values(prep, y=spread)
        # A level most of whose rows hold a value the column's tails leave out is a segment of
        # the table (backups to one server): those cells calibrate no tail and are not tested,
        # and its rows train the flows and the other members (their far values are the level's).
        few_levels = few_valued(enc.numeric)
        context_shared = numeric.shared_in_context(enc.numeric, enc.codes)
        # A positive column's lowest values are read in ratios (a price of 1 among prices of 300 and more).
        ratios = Ratios.fit(enc.numeric, numeric.magnitude, numeric.exponent, numeric.discrete)
        first = NumericCellTests.fit(
            residuals, values, spread, CELL_TRIM, two_valued, shared, few_levels, in_context=context_shared,
            ratios=ratios,
        )  # fmt: skip
        left_out = first.left_out(residuals, values, spread)
        model.cell_segments = CellSegments.find(left_out, enc.codes)
        if model.cell_segments is not None:
            off = model.cell_segments.mask(enc.codes, residuals.shape[1])
            residuals, values = np.where(off, np.nan, residuals), np.where(off, np.nan, values)
            spread = np.where(off, np.nan, spread)
            inside |= ~np.any(far & ~off, axis=1) & ~left_apart
        cells = residuals, values
        own_cell_tests = first if model.cell_segments is None else None
        if width:
            say(f"fitting {n_folds} flows on {width} numeric features")
            params = {
                "latent_tail": LATENT_TAIL,
                "n_pure_sources": None if source_split else PURE_SOURCES,
                **nrde_params,
            }
            flows = [NRDE(random_state=random_state + k, verbose=verbose, **params) for k in range(n_folds)]
            # Each flow is stopped early on the fold it does not see (the rows it will score): all
            # other rows train it, and a small table still gets a held-out set to stop on.
            u = model.flow_input(z)
            train = [u[(model.folds != k) & inside] for k in range(n_folds)]
            held = [u[(model.folds == k) & inside] for k in range(n_folds)]
            model.detectors = fit_together(flows, train, validation=held)
    density, z, _ = model.density_prepared(prep, model.folds)
    scores, residuals, values = density, None, None
    if enc.numeric.shape[1]:
        residuals, values = cells
        in_units = model.raw_values(prep)
        model.walls = Walls.fit(in_units, numeric.discrete)
        model.identities = Identities.fit(in_units, enc.codes, n_codes, random_state)
        # A band is vouched for by the identities its rows keep: found once they are fitted.
        if first is not None:
            kept = model.identities.kept(in_units, enc.codes)
            model.bands = far_bands(first, spread, kept, in_units, off, shared)
            if model.bands is not None:
                bands = model.bands.mask(in_units, kept) & (True if off is None else ~off)
            if bands is not None and own_cell_tests is not None:
                own_cell_tests = NumericCellTests.fit(
                    residuals, values, spread, CELL_TRIM, two_valued, shared, few_levels, bands,
                    context_shared, ratios,
                )  # fmt: skip
    if detector == "fused" and enc.numeric.shape[1]:
        say(f"fitting neighbour and isolation scores ({n_folds} folds)")
        model.fusion = Fusion.fit(z, model.folds, inside, random_state)
        members = model.members(z, model.folds)
        model.fusion.calibrate(density, members)
        scores = model.fusion.combine(density, members)
    fused = model.fusion is not None
    # New rows are scored by the members of NEW_ROW_MEMBERS: their tails are those members' sum for
    # the training rows, each measured as a new row is (the density by the flow that did not see
    # it; the neighbours among every reference row but itself).
    new_scores = scores
    if fused:
        alike = members.copy()
        alike[:, MEMBERS.index("neighbours") - 1] = model.fusion.training_neighbours(z)
        new_scores = model.fusion.combine(density, alike, new_rows=True)
    calibrating = residuals, values, spread
    if bands is not None and model.bands is not None and residuals is not None:
        # A partner band's cells calibrate no test of their column for new rows (Bands.partnered).
        partnered = model.bands.partnered(in_units, kept) & bands
        calibrating = tuple(np.where(partnered, np.nan, x) for x in (residuals, values, spread))
    model.tails = ChannelTails.fit(
        new_scores,
        density if fused else None,
        distances,
        *calibrating,
        bands=bands,
        ratios=ratios,
    )
    # The table scored against itself holds its anomalies: each channel's own tail leaves its top
    # scores out (see ChannelTails.fit).  A small table (FOLD_BANDS' first band) has flows learned
    # from a few hundred rows each, whose density of unseen rows is heavier-tailed; only a cluster
    # of rows standing apart (a broken batch, _a_cluster) keeps the density's tail light.
    model.own_tails = ChannelTails.fit(
        scores,
        density if fused else None,
        distances,
        residuals,
        values,
        spread,
        in_sample=True,
        cluster=batch,
        small=len(features) < FOLD_BANDS[0][0],
        apart=batch,
        batch_rows=apart if batch else None,
        cell_tests=own_cell_tests,
        levels=two_valued,
        strata=_strata(codes, enc.numeric, two_valued, shared),
        shared=shared,
        few=few_levels,
        bands=bands,
        in_context=context_shared,
        ratios=ratios,
    )
    info.update(n_train_rows=len(features), preprocess_counts={**schema.counts, **enc.counts})
    return model


def _strata(
    codes: np.ndarray,
    numeric: np.ndarray,
    two_valued: np.ndarray | None,
    shared: np.ndarray | None = None,
) -> np.ndarray:
    """The levels a table's own row tails may read apart (nrad.evidence.level_shifts): its
    categorical features' and indicators' codes, the values of its numeric columns of two values
    (``two_valued``; a flag that 1.5% of the rows hold is a number, not a category), and the values
    many rows of a numeric column share (``shared``, :func:`nrad.numeric.shared_values`), -1 where
    absent.  The bands the table vouches for are read apart on their own terms (``bands`` of
    :meth:`nrad.evidence.ChannelTails.fit`)."""
    parts = [codes]
    if two_valued is not None and two_valued.any():
        flags = numeric[:, two_valued]
        parts.append(np.where(np.isnan(flags), -1, (flags == np.nanmax(flags, axis=0)).astype(np.int64)))
    if shared is not None:
        # Each value many rows of a numeric column share is a level of its own (a price 99 rows paid).
        for j in np.flatnonzero(shared.any(axis=0) & ~(two_valued if two_valued is not None else False)):
            _, inverse = np.unique(np.nan_to_num(numeric[:, j], nan=np.inf), return_inverse=True)
            parts.append(np.where(shared[:, j], inverse, -1)[:, None])
    return np.hstack(parts)


def cross_fit_folds(n_rows: int) -> int:
    """How many folds (and flows) a table of ``n_rows`` rows is cross-fitted with (``FOLD_BANDS``)."""
    for limit, folds in FOLD_BANDS:
        if n_rows < limit:
            return folds
    return CROSS_FIT_FOLDS


def flow_width(n_numeric: int, rows: int) -> int:
    """How many numbers the flows read, fitted on ``rows`` rows each: all of them up to
    ``MAX_FLOW_FEATURES`` when the rows allow (``MIN_ROWS`` plus ``ROWS_PER_FEATURE`` per number),
    fewer components when they do not, and 0 (no flows) below ``MIN_FLOW_ROWS`` rows."""
    if n_numeric == 0 or rows < MIN_FLOW_ROWS:
        return 0
    return int(max(min(n_numeric, MAX_FLOW_FEATURES, (rows - MIN_ROWS) // ROWS_PER_FEATURE), 1))


def check_rows(n_rows: int, what: str) -> None:
    """Refuse a table with too few rows to learn anything from (fewer than ``MIN_TABLE_ROWS``).

    A table with fewer rows than columns (embeddings, word counts) is fitted: past
    ``MAX_CELL_FEATURES`` numbers the flows and the robust Gaussian read its leading principal
    components, at most as many as its rows allow (:func:`flow_width`), and below that the
    Gaussian's scatter is shrunk towards its diagonal (:mod:`nrad.gaussian`), which keeps it
    invertible with fewer rows than columns."""
    if n_rows < MIN_TABLE_ROWS:
        raise NradError(
            f"{what} has {n_rows} rows; nrad needs at least {MIN_TABLE_ROWS} rows to learn what is "
            "typical. Give more rows"
        )


def _principal_basis(z: np.ndarray, q: int) -> tuple[np.ndarray, float]:
    """The ``q`` leading principal directions of ``z`` (p x q, orthonormal) and the mean variance of
    what they leave (the probabilistic-PCA noise variance, Tipping & Bishop 1999)."""
    centred = z - z.mean(axis=0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    q = min(q, vt.shape[0])
    variances = singular**2 / max(len(z) - 1, 1)
    rest = variances[q:]
    residual = float(rest.sum() / max(z.shape[1] - q, 1)) if len(rest) else 1e-6
    return vt[:q].T.copy(), max(residual, 1e-6)


def _standing_apart(distances: np.ndarray) -> np.ndarray:
    """Rows whose robust distance statistic (:func:`nrad.evidence.distance_statistic`, out of
    fold) the in-sample distance tail leaves out as outliers: a cluster
    standing apart from the rest by a gap, that Benjamini-Hochberg at 10% over the table confirms
    (:class:`nrad.evidence.ChannelTails`).

    They do not train the flows, the neighbour and isolation members or the
    relations: a broken batch of twenty tight rows is a mode that a flow
    fitted on it learns as normal, while the robust Gaussian (fitted on the
    majority) sees it stand apart.  On a clean table, where the tail model
    holds, BH makes such a call with chance about its level (10%), and then
    of a few top rows; on a small heavy-tailed table it can call a sixth of
    the rows apart (research notes, section 24).
    """
    tail = TailModel.fit(distances, DISTANCE_TRIM, CELL_MAX_SHAPE)
    apart = np.zeros(len(distances), dtype=bool)
    if tail.n_trimmed:
        apart[np.argsort(-np.nan_to_num(distances, nan=-np.inf), kind="stable")[: tail.n_trimmed]] = True
    return apart


#: Whether rows standing apart are a cluster is read on at most this many of them and this many
#: of the other rows (random samples).
CLUSTER_APART_ROWS = 500
CLUSTER_OTHER_ROWS = 20_000
#: A cluster is tight when its rows lie nearer each other than this share of the distance between
#: as many rows drawn from the rest of the table (the median over ``CLUSTER_DRAWS`` draws).
TIGHT_SHARE = 0.5
CLUSTER_DRAWS = 5


def _nearest_other(z: np.ndarray) -> np.ndarray:
    """Each row's distance to the nearest other row of ``z``."""
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=2).fit(z).kneighbors(z)[0][:, 1]


def _a_cluster(apart: np.ndarray, z: np.ndarray, rng: np.random.Generator) -> bool:
    """Whether the rows standing apart (``apart``, see :func:`_standing_apart`) are a tight
    cluster: in the median, each lies nearer to another of them than to any other row, and nearer
    than ``TIGHT_SHARE`` of the distance between as many rows drawn from the rest (``z``: the
    numbers the distances were read on).

    A broken batch is: its parts come from one run, alike and unlike the rest.  The few rows that
    a clean table with heavy-tailed columns has standing apart mostly are not: its extremes lie in
    different directions, each nearer the bulk than the next extreme.  Nor are errors of several
    kinds, or a rare kind of row (stays of three weeks among stays of a few nights): they may lie
    nearer each other than any other row, all far out, but as spread among themselves as the
    table's other rows.  Only a tight cluster keeps the density's in-sample tail light
    (:class:`nrad.evidence.ChannelTails`, ``apart``); natural extremes read against a light tail
    were flagged in many clean tables (research/notes.md, sections 36 and 45).
    """
    from sklearn.neighbors import NearestNeighbors

    rows, others = np.flatnonzero(apart), np.flatnonzero(~apart)
    if len(rows) < 2:
        return False
    if len(others) < 2:
        return True
    if len(rows) > CLUSTER_APART_ROWS:
        rows = rng.choice(rows, CLUSTER_APART_ROWS, replace=False)
    inner = float(np.median(_nearest_other(z[rows])))
    drawn = [
        float(np.median(_nearest_other(z[rng.choice(others, min(len(rows), len(others)), replace=False)])))
        for _ in range(CLUSTER_DRAWS)
    ]
    if len(others) > CLUSTER_OTHER_ROWS:
        others = rng.choice(others, CLUSTER_OTHER_ROWS, replace=False)
    outer = NearestNeighbors(n_neighbors=1).fit(z[others]).kneighbors(z[rows])[0][:, 0]
    return inner < float(np.median(outer)) and inner < TIGHT_SHARE * float(np.median(drawn))


def _is_segment(apart: np.ndarray, codes: np.ndarray) -> bool:
    """Whether most rows standing apart (``apart``, see :func:`_standing_apart`) belong to levels
    most of whose rows stand apart: levels (of any categorical column) of at least
    ``nrad.cells.SEGMENT_MIN_ROWS`` rows, ``SEGMENT_SHARE`` of which stand apart, holding together at least
    half of the rows apart.

    A broken batch shares its line and shift with good parts (20 of line B's 1,000 or so); a
    segment whose numbers differ (a country that charges no VAT, wholesale quantities) is most
    of its level.  The robust Gaussian, fitted on the three quarters of the rows most alike,
    leaves such segments out whatever their size, and the gap before them reads as a cluster of
    anomalies: 100 of 500 clean invoices were flagged.  The categories tell the two apart where
    the numbers cannot.
    """
    n_apart = int(apart.sum())
    if n_apart == 0 or codes.shape[1] == 0:
        return False
    in_segment = np.zeros(len(apart), dtype=bool)
    for column in codes.T:
        in_segment |= np.isin(column, levels_mostly_held(apart, column))
    return int((in_segment & apart).sum()) >= 0.5 * n_apart


def _fit_gaussians(
    model: TableModel, hot_decked: np.ndarray, absent: np.ndarray, inside: np.ndarray, seed: int
) -> list[RobustGaussian]:
    """The robust Gaussian of each fold, from the training rows outside it (as the flows), so that
    the cells' residuals and robust distances of the training rows are out of fold.

    Absent cells are first filled at random (``hot_decked``), which weakens the columns'
    relations; one more fit on the cells filled at their conditional means under the first fit
    (an EM step) gives them back.
    """
    assert model.folds is not None
    n_folds = int(model.folds.max()) + 1
    rows = [(model.folds != k) & inside for k in range(n_folds)]
    seen = ~np.isnan(absent)
    rng = np.random.default_rng(seed)
    hot_decked, absent = spread_levels(hot_decked, seen, rng), spread_levels(absent, seen, rng)
    if hot_decked.shape[1] > MAX_CELL_FEATURES:
        # Too wide for a scatter matrix per fold: the leading components, no fill to refine.
        u = model.gaussian_input(hot_decked)
        every = np.ones(u.shape, dtype=bool)
        return [
            RobustGaussian.fit(u[r], np.random.default_rng(seed + k), every[r]) for k, r in enumerate(rows)
        ]
    return fit_per_fold(hot_decked, absent, seen, model.folds, rows, seed)
