"""A detector for real tables: schema, category model, numeric scaler, NRDE and calibration in one object.

A row's density score is its negative log-likelihood under a model of the
whole row (docs/method.md, section "Tables")::

    score = - log p(categories)  - log p(numbers | categories)
          = - sum_j log p(c_j | c_parent(j))            (nrad.categories)
            - log p_NRDE(z) + soft-clip and tail terms  (nrad.scaler, nrad.detector)

where ``z`` are the numeric features read against their category.  Missing
numbers take the value that fits the row best among the feature's typical
values, and *that* they are missing is a category of its own (``amount``
missing in 2% of training rows costs about 4 nats).  Scores are in nats:
one nat more is a row e (2.7) times less likely.  By default
(``detector="fused"``) the anomaly score is this density score fused with a
neighbour and an isolation score of the same numbers (:mod:`nrad.fusion`),
cross-fitted like the flows; explanations read the density score.

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
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from nrad.calibration import TailModel, benjamini_hochberg, check_level, self_calibrated_flags, top_fraction
from nrad.categories import CategoryModel
from nrad.detector import NRDE, fit_together
from nrad.errors import NradError
from nrad.fusion import Fusion
from nrad.preprocess import MISSING, OTHER, TableSchema, encode, fit_schema
from nrad.scaler import NumericScaler, dequantize

#: The flows score with exponential base tails beyond this many latent sd (NRDE's latent_tail).
LATENT_TAIL = 4.0
#: A row with a numeric value this many (robust) sd from its context's typical value does not train
#: the flows (1 in 500 million for a Gaussian residual).
TRAIN_BOUND = 6.0
#: Fewest rows each cross-fitted flow is fitted on (see :func:`rows_needed`).
MIN_ROWS = 10
#: The flow needs this many rows per numeric feature (plus MIN_ROWS).
ROWS_PER_FEATURE = 2
#: Golden-section steps when filling a missing cell (each shrinks the interval by 0.618).
GOLDEN_STEPS = 14
#: Columns named in ``top_features``.
TOP_FEATURES = 3
#: Besides the flagged rows, the top rows by score are explained (what a summary shows).
EXPLAIN_TOP = 10
#: What to explain: the flagged and top rows (default), every row, or none.
EXPLAIN_MODES = ("flagged", "all", "none")
#: Flows fitted, each on the rows outside one fold (each scores the rows it did not see): by table
#: size, (below this many rows, this many folds), else CROSS_FIT_FOLDS.  Halves of a small table are
#: too small to fit (an 80-row table of 19 numeric columns was refused with 2 folds); small tables
#: fit quickly, so they get more folds and each flow sees 67% or 80% of the rows (on the benchmark's
#: 13 other tables under 2,000 rows: the same mean AUROC fitted on themselves, +-0.03 per table).
FOLD_BANDS = ((1000, 5), (2000, 3))
CROSS_FIT_FOLDS = 2
#: What a table model scores with: the density fused with neighbour and isolation scores (see
#: :mod:`nrad.fusion`; the default), or the density alone (NRDE's flows with the category model).
DETECTORS = ("fused", "nrde")
#: Codes of the missing-indicator feature added for each numeric column.
PRESENT, ABSENT = 0, 2
INDICATOR_LABELS = ["present", OTHER, MISSING]

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Prepared:
    """Rows as the model reads them."""

    #: (n, p) numeric features after the shape transform, NaN where missing.
    y: np.ndarray
    #: (n, q) category codes: categorical features, then one missing indicator per numeric column.
    codes: np.ndarray
    counts: dict[str, int]
    #: (n, n_columns) missing cells per kept input column.
    missing: np.ndarray
    #: The codes the rows had when they trained the model, if they were changed since (an
    #: explanation's repair): what in-sample scoring leaves out of the counts.  None: ``codes``.
    trained_codes: np.ndarray | None = None

    @property
    def own_codes(self) -> np.ndarray:
        return self.codes if self.trained_codes is None else self.trained_codes

    def take(self, rows: np.ndarray) -> Prepared:
        trained = None if self.trained_codes is None else self.trained_codes[rows]
        return Prepared(self.y[rows], self.codes[rows], self.counts, self.missing[rows], trained)


@dataclass
class TableModel:
    """A fitted table model (see the module docstring)."""

    schema: TableSchema
    categories: CategoryModel
    scaler: NumericScaler
    #: NRDE on the numeric features: one, or one per cross-fitting fold (none without numeric features).
    detectors: list[NRDE]
    #: Calibration scores with their fitted tail (None: no calibration rows, no p-values).
    tail: TailModel | None
    id_column: str | None = None
    ignore: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    #: The neighbour and isolation members and the fused score's scale (None: the density alone).
    fusion: Fusion | None = None
    #: Cross-fitting: the fold of each training row (its rows are scored by the flow of that
    #: fold, which did not see them).  Only for the table just fitted; not saved.
    folds: np.ndarray | None = field(default=None, repr=False)

    @property
    def score_units(self) -> str:
        """What one unit of ``anomaly_score`` is, in words (for the tables and the report)."""
        if self.fusion is None:
            return "nats: 1 more = e times rarer"
        return "density + neighbour + isolation scores, in IQRs; 0 = typical"

    # -- reading rows --------------------------------------------------------

    @property
    def indicator_features(self) -> list[int]:
        """Numeric features that get a missing indicator (those of numeric columns, not datetime hours)."""
        return [
            j for j, c in enumerate(self.schema.numeric_sources) if self.schema.columns[c].kind == "numeric"
        ]

    def prepare(self, df: Any, what: str = "data") -> Prepared:
        """Encode a table (pandas or polars) for the model; id and ignored columns are dropped."""
        df = as_pandas(df)
        present = [c for c in self.ignore if c in df.columns]  # ignored columns may be absent
        enc = encode(self.schema, _drop(df, self.id_column, present, what), what)
        indicators = np.where(np.isnan(enc.numeric[:, self.indicator_features]), ABSENT, PRESENT)
        return Prepared(
            self.scaler.shape(enc.numeric), np.hstack([enc.codes, indicators]), enc.counts, enc.missing
        )

    # -- scoring ---------------------------------------------------------------

    def score_prepared(
        self, prep: Prepared, folds: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(anomaly score per row, and as :meth:`density_prepared`, z and terms).

        The anomaly score is the density score fused with the neighbour and
        isolation scores of the same z (:mod:`nrad.fusion`), or the density
        score alone for a model fitted with ``detector="nrde"``.
        """
        density, z, terms = self.density_prepared(prep, folds)
        if self.fusion is None:
            return density, z, terms
        return self.fusion.combine(density, self.fusion.members(z, folds)), z, terms

    def density_prepared(
        self, prep: Prepared, folds: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(density score per row in nats, the numeric z the flow saw with missing cells filled,
        each cell's added score: see :meth:`numeric_z`, and the tail terms of the filled cells).

        ``folds``: the rows are the training rows themselves, in order (see
        :meth:`training_folds`): each is read with its own counts left out of
        the category model and scored by the flow that did not see it.
        """
        z, terms = self.numeric_z(prep.y, prep.codes)
        missing = np.isnan(z)
        z = self.fill_missing(z, folds)
        terms = terms + self.filled_terms(z, missing)
        numeric = self.flow_score(z, folds) + terms.sum(axis=1)
        own = prep.own_codes if folds is not None else None
        return -self.categories.log_terms(prep.codes, leave_out=own).sum(axis=1) + numeric, z, terms

    def filled_terms(self, z: np.ndarray, missing: np.ndarray) -> np.ndarray:
        """The tail terms of the values that filled the ``missing`` cells of ``z`` (0 elsewhere)."""
        return np.where(missing, self.scaler.tail_terms(z), 0.0) if missing.any() else np.zeros(z.shape)

    def training_folds(self, n_rows: int) -> np.ndarray:
        """The cross-fitting folds of the table this model was just fitted on (for in-sample scoring)."""
        if self.folds is None or len(self.folds) != n_rows:
            raise NradError(
                "in-sample scoring needs the table the model was fitted on, in the same session "
                f"({n_rows} rows given, {0 if self.folds is None else len(self.folds)} fitted)"
            )
        return self.folds

    def numeric_z(self, y: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Compressed z (NaN where missing) and each cell's added score (0 where missing): the soft
        clip's and the tail weight's log-Jacobians, so that the score is a density of the residuals."""
        raw = self.scaler.standardize(y, codes)
        z, terms = self.scaler.soft_clip(raw)
        return z, np.nan_to_num(terms) + self.scaler.tail_terms(raw)

    def flow_score(self, z: np.ndarray, folds: np.ndarray | None = None) -> np.ndarray:
        """NRDE's anomaly score of complete numeric rows (0 without numeric features).

        With several flows: each row's own fold's flow when ``folds`` is given
        (in-sample), else their mean (new rows).
        """
        if not self.detectors or z.shape[1] == 0:
            return np.zeros(len(z))
        if folds is None:
            return np.mean([d.anomaly_score(z) for d in self.detectors], axis=0)
        out = np.empty(len(z))
        for k, det in enumerate(self.detectors):
            rows = folds == k
            if rows.any():
                out[rows] = det.anomaly_score(z[rows])
        return out

    def fill_missing(self, z: np.ndarray, folds: np.ndarray | None = None) -> np.ndarray:
        """Each missing cell takes the value that fits its row best (a profile likelihood).

        One feature at a time, the others held at their values (missing ones
        start at 0, the middle of the training values): the best of the
        feature's typical values (training quantiles), then a golden-section
        search between its neighbours, so that a value tied to others by a
        tight relation (a weight given height and bmi) is found, not
        approximated by the nearest quantile.  Calibration rows and scored
        rows are filled the same way, so their scores compare.
        """
        nan = np.isnan(z)
        if not nan.any():
            return z
        z = np.where(nan, 0.0, z)
        grid = self.scaler.grid
        for j in np.flatnonzero(nan.any(axis=0)):
            rows = np.flatnonzero(nan[:, j])
            part, part_folds = z[rows], None if folds is None else folds[rows]
            at_grid = self._scores_with(part, j, np.tile(grid[j], len(rows)), part_folds)
            best = np.argmin(at_grid.reshape(len(rows), -1), axis=1)
            step = np.diff(grid[j]).max(initial=1.0)
            padded = np.r_[grid[j][0] - step, grid[j], grid[j][-1] + step]
            z[rows, j] = _golden_section(
                partial(self._scores_with, part, j, folds=part_folds), padded[best], padded[best + 2]
            )
        return z

    def _scores_with(self, z: np.ndarray, j: int, values: np.ndarray, folds: np.ndarray | None) -> np.ndarray:
        """Flow scores (plus the value's tail term) of the rows of ``z`` with feature ``j`` set to
        ``values`` (k per row, row-major)."""
        width = len(values) // len(z)
        trial = np.repeat(z, width, axis=0)
        trial[:, j] = values
        flow = self.flow_score(trial, None if folds is None else np.repeat(folds, width))
        return flow + self.scaler.column_tail_terms(j, values)

    def p_values(self, scores: np.ndarray) -> np.ndarray:
        """p-values of scores against the calibration scores (NaN without calibration)."""
        if self.tail is None:
            return np.full(len(scores), np.nan)
        return self.tail.p_values(scores)

    def score_rows(
        self, df: pd.DataFrame, explain: bool = False, what: str = "data", in_sample: bool = False
    ) -> tuple[pd.DataFrame, dict[str, int]]:
        """Per-row results that need no other row: id, anomaly_score, p_value (and, asked, explanations).

        Flagging needs all rows (BH, top share); :meth:`score` adds it, and
        :mod:`nrad.stream` adds it after a streamed pass.  ``in_sample``: ``df``
        is the table the model was fitted on (see :meth:`score_prepared`).
        """
        df = as_pandas(df)
        prep = self.prepare(df, what)
        scores = self.score_prepared(prep, self.training_folds(len(df)) if in_sample else None)[0]
        out = pd.DataFrame(index=df.index)
        if self.id_column is not None:
            out[self.id_column] = df[self.id_column]  # same index: keeps the column's dtype
        out["anomaly_score"] = scores
        out["p_value"] = self.p_values(scores)
        if explain:
            out["top_features"], out["reason"] = self.describe(df, prep=prep, in_sample=in_sample)
        return out.reset_index(drop=True), prep.counts

    def score(
        self,
        df: pd.DataFrame,
        fdr: float | None = None,
        contamination: float | None = None,
        explain: str = "flagged",
        what: str = "data",
        in_sample: bool = False,
    ) -> tuple[pd.DataFrame, dict[str, int]]:
        """Score every row and flag (BH at ``fdr``, default 0.05, or the top ``contamination`` share).

        ``explain``: ``"flagged"`` explains the flagged rows and the
        ``EXPLAIN_TOP`` highest scores (others get empty strings), ``"all"``
        every row, ``"none"`` leaves the explanation columns out.
        ``in_sample``: ``df`` is the table the model was fitted on.
        """
        check_explain(explain)
        df = as_pandas(df)
        out, counts = self.score_rows(df, explain=explain == "all", what=what, in_sample=in_sample)
        rule = flag_rule(fdr, contamination)
        if in_sample and rule.kind == "fdr":
            # The first pass's p-values are the ones score_rows read off the model's tail, which
            # was fitted on exactly these (out-of-fold) scores.
            out["p_value"], flagged = self.in_sample_flags(
                out["anomaly_score"].to_numpy(), rule.level, out["p_value"].to_numpy()
            )
        else:
            flagged = self.flags(out, fdr, contamination)
        out.insert(out.columns.get_loc("p_value") + 1, "flagged", flagged)
        if explain == "flagged":
            rows = rows_to_explain(out)
            top, reason = self.describe(df, what=what, in_sample=in_sample, rows=rows)
            out["top_features"], out["reason"] = "", ""
            out.loc[rows, "top_features"], out.loc[rows, "reason"] = top, reason
        return out, counts

    def flags(self, scored: pd.DataFrame, fdr: float | None, contamination: float | None) -> np.ndarray:
        """The flag rule, once for every way of scoring: see :func:`flag_rule`."""
        rule = flag_rule(fdr, contamination)
        if rule.kind == "top":
            return top_fraction(scored["anomaly_score"].to_numpy(), rule.level)
        self.require_p_values()
        return benjamini_hochberg(scored["p_value"].to_numpy(), rule.level)

    def in_sample_flags(
        self, scores: np.ndarray, fdr: float, p_values: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """p-values and BH flags of the training rows themselves; see ``self_calibrated_flags``."""
        self.require_p_values()
        return self_calibrated_flags(scores, fdr, p_values)

    def require_p_values(self) -> None:
        if self.tail is None:
            raise NradError(
                "this model has no calibration rows, so it cannot give p-values for --fdr; "
                "use --contamination, or refit on at least 60 rows"
            )

    # -- explanations ------------------------------------------------------------

    def explain(self, df: pd.DataFrame, what: str = "data", in_sample: bool = False) -> pd.DataFrame:
        """Each row's contribution per input column, in nats (the numbers behind ``top_features``).

        A column's contribution is how much the row's density score would drop if
        that column alone took the value that fits the row best (see
        :mod:`nrad.explain`); 0 for a column that is already typical.
        """
        from nrad.explain import repair

        df = as_pandas(df)
        folds = self.training_folds(len(df)) if in_sample else None
        result = repair(self, self.prepare(df, what), folds)
        out = pd.DataFrame(result.gains, columns=self.schema.names)
        if self.id_column is not None:
            out.insert(0, self.id_column, df[self.id_column].to_numpy())
        return out

    def describe(
        self,
        df: pd.DataFrame,
        prep: Prepared | None = None,
        what: str = "data",
        in_sample: bool = False,
        rows: np.ndarray | None = None,
        k: int = TOP_FEATURES,
    ) -> tuple[list[str], list[str]]:
        """``top_features`` (``"col:+1.2; col2:+0.4"``, nats) and ``reason`` (the first column in words).

        ``rows``: only these positions of ``df`` (default all); ``in_sample``:
        ``df`` is the table the model was just fitted on.
        """
        from nrad.explain import ranked, reasons, repair

        df = as_pandas(df)
        folds = self.training_folds(len(df)) if in_sample else None
        prep = self.prepare(df, what) if prep is None else prep
        if rows is not None:
            df, prep = df.iloc[rows], prep.take(rows)
            folds = None if folds is None else folds[rows]
        if len(df) == 0:
            return [], []
        result = repair(self, prep, folds)
        names = np.asarray(self.schema.names)
        order, gains = ranked(self, prep, result, folds, k)
        top = [
            "; ".join(f"{names[j]}:{g:+.2f}" for j, g in zip(row, row_gains, strict=True) if g > 0.005)
            for row, row_gains in zip(order, gains, strict=True)
        ]
        return top, reasons(self, df, prep, result, order[:, 0])

    # -- the columns a user sees --------------------------------------------------

    def columns_summary(self) -> list[dict[str, str]]:
        """How each kept column is read (for the report and ``nrad fit``)."""
        from nrad.explain import column_handling

        return [
            {"name": c.name, "handling": column_handling(self, i)} for i, c in enumerate(self.schema.columns)
        ]


@dataclass(frozen=True)
class FlagRule:
    """How rows are flagged: Benjamini-Hochberg at an FDR, or the top share of scores."""

    kind: str  # "fdr" | "top"
    level: float

    def describe(self) -> str:
        if self.kind == "top":
            return f"top {self.level:.2%} of scores"
        return f"Benjamini-Hochberg on p-values, FDR {self.level:g}"


#: The FDR used when neither --fdr nor --contamination is given.
DEFAULT_FDR = 0.05


def flag_rule(fdr: float | None, contamination: float | None) -> FlagRule:
    """``fdr`` or ``contamination``, not both; neither: BH at ``DEFAULT_FDR``. Levels lie in (0, 1)."""
    if fdr is not None and contamination is not None:
        raise NradError("give either --fdr or --contamination, not both")
    if contamination is not None:
        return FlagRule("top", check_level(contamination, "contamination"))
    return FlagRule("fdr", check_level(DEFAULT_FDR if fdr is None else fdr, "fdr"))


def check_explain(explain: str) -> str:
    if explain not in EXPLAIN_MODES:
        raise NradError(f"explain must be one of {', '.join(EXPLAIN_MODES)}, got {explain!r}")
    return explain


def rows_to_explain(scored: pd.DataFrame, top: int = EXPLAIN_TOP) -> np.ndarray:
    """Positions of the flagged rows and of the ``top`` highest scores, in order."""
    chosen = scored["flagged"].to_numpy(dtype=bool).copy()
    chosen[np.argsort(-scored["anomaly_score"].to_numpy(), kind="stable")[:top]] = True
    return np.flatnonzero(chosen)


def with_row_numbers(rows: pd.DataFrame) -> pd.DataFrame:
    """A ``row`` column first: input positions counted from 1, like the data lines of the file."""
    return rows.set_axis(rows.index + 1).reset_index(names="row")


def as_pandas(df: Any) -> pd.DataFrame:
    """Accept pandas or polars (anything with ``to_pandas``) DataFrames."""
    if isinstance(df, pd.DataFrame):
        return df
    if hasattr(df, "to_pandas"):
        return df.to_pandas()
    raise NradError(f"expected a pandas or polars DataFrame, got {type(df).__name__}")


def _drop(df: pd.DataFrame, id_column: str | None, ignore: Sequence[str], what: str) -> pd.DataFrame:
    wanted = ([id_column] if id_column else []) + list(ignore)
    missing = [c for c in wanted if c not in df.columns]
    if missing:
        raise NradError(
            f"{what} has no column named {', '.join(map(repr, missing))} (given as id or ignored column)"
        )
    return df.drop(columns=wanted)


# -- fitting ---------------------------------------------------------------------


def fit_table(
    df: pd.DataFrame,
    id_column: str | None = None,
    ignore: Sequence[str] = (),
    random_state: int = 0,
    verbose: bool = False,
    what: str = "training data",
    progress: Progress | None = None,
    detector: str = "fused",
    **nrde_params: Any,
) -> TableModel:
    """Learn the schema, the category model, the scaler, the flows and the calibration from ``df``.

    ``df`` may be pandas or polars.  The rows are split into
    :func:`cross_fit_folds` folds; one NRDE flow is fitted on the rows outside
    each fold, and every row is scored by the flow that did not see it.
    Those scores calibrate the p-values, so every training row calibrates,
    and the same fit serves both ways of working: new rows are scored by the
    mean of the flows (:meth:`TableModel.score`), the training table itself
    row by row by its own fold's flow (``score(..., in_sample=True)``).
    ``detector``: ``"fused"`` (default) adds cross-fitted neighbour and
    isolation members (:mod:`nrad.fusion`); ``"nrde"`` scores with the density alone.
    """
    if detector not in DETECTORS:
        raise NradError(f"detector must be one of {', '.join(DETECTORS)}, got {detector!r}")
    say = progress or (lambda _: None)
    df = as_pandas(df)
    features = _drop(df, id_column, ignore, what)
    if len(features):
        check_width(len(features), 0, what)  # too few rows for any table: say so before reading columns
    schema = fit_schema(features)
    info: dict[str, Any] = {"identifiers": schema.identifiers}
    if id_column is None and schema.identifiers:
        id_column, info["id_detected"] = schema.identifiers[0], True
    check_width(len(features), len(schema.numeric_names), what)
    enc = encode(schema, features, what)
    rng = np.random.default_rng(random_state)
    n_codes = [len(labels) for labels in schema.categorical_labels]
    scaler = NumericScaler.fit(enc.numeric, enc.codes, n_codes, rng)
    numeric_columns = [j for j, c in enumerate(schema.numeric_sources) if schema.columns[c].kind == "numeric"]
    codes = np.hstack([enc.codes, np.where(np.isnan(enc.numeric[:, numeric_columns]), ABSENT, PRESENT)])
    categories = CategoryModel.fit(codes, n_codes + [len(INDICATOR_LABELS)] * len(numeric_columns))
    info["detector"] = detector
    model = TableModel(schema, categories, scaler, [], None, id_column, list(ignore), info)
    n_folds = cross_fit_folds(len(features))
    model.folds = rng.permutation(len(features)) % n_folds
    if enc.numeric.shape[1]:
        # Dequantized values (integers spread over their unit cell) and
        # missing cells filled with random observed values train the flows;
        # scoring reads the values as they are.
        y = scaler.shape(dequantize(enc.numeric, scaler.discrete, rng))
        z = _hot_deck(model.numeric_z(y, codes)[0], rng)
        # Rows with a value far from its context's typical ones (a 30x amount,
        # an age of 999) do not train the flows: a flow fitted on a few of
        # them learns density where they cluster, and then scores the next
        # one as normal.  Clean rows almost never go that far.
        raw = scaler.standardize(y, codes)
        inside = np.all(np.isnan(raw) | (np.abs(raw) <= TRAIN_BOUND), axis=1)
        say(f"fitting {n_folds} flows on {z.shape[1]} numeric features")
        params = {"latent_tail": LATENT_TAIL, "tol": "auto", **nrde_params}
        flows = [NRDE(random_state=random_state + k, verbose=verbose, **params) for k in range(n_folds)]
        # Each flow is stopped early on the fold it does not see (the rows it will score): all
        # other rows train it, and a small table still gets a held-out set to stop on.
        train = [z[(model.folds != k) & inside] for k in range(n_folds)]
        held = [z[(model.folds == k) & inside] for k in range(n_folds)]
        model.detectors = fit_together(flows, train, validation=held)
    prep = Prepared(scaler.shape(enc.numeric), codes, enc.counts, enc.missing)
    scores, z, _ = model.density_prepared(prep, model.folds)
    if detector == "fused" and enc.numeric.shape[1]:
        say(f"fitting neighbour and isolation scores ({n_folds} folds)")
        model.fusion = Fusion.fit(z, model.folds, inside, random_state)
        members = model.fusion.members(z, model.folds)
        model.fusion.calibrate(scores, members)
        scores = model.fusion.combine(scores, members)
    model.tail = TailModel.fit(scores)
    info.update(n_train_rows=len(features), preprocess_counts={**schema.counts, **enc.counts})
    return model


def cross_fit_folds(n_rows: int) -> int:
    """How many folds (and flows) a table of ``n_rows`` rows is cross-fitted with (``FOLD_BANDS``)."""
    for limit, folds in FOLD_BANDS:
        if n_rows < limit:
            return folds
    return CROSS_FIT_FOLDS


def rows_needed(n_numeric: int) -> int:
    """Fewest training rows for a table with ``n_numeric`` numeric features.

    Each flow is fitted on the rows outside its fold, ``(k - 1) / k`` of
    them with ``k`` folds, and needs ``MIN_ROWS`` plus ``ROWS_PER_FEATURE``
    per feature.  ``k`` falls as tables grow, so the bands are tried in
    order and the first whose own rows suffice gives the answer.
    """
    per_flow = MIN_ROWS + ROWS_PER_FEATURE * n_numeric
    low = 0
    for high, folds in (*FOLD_BANDS, (np.inf, CROSS_FIT_FOLDS)):
        need = max(low, int(np.ceil(per_flow * folds / (folds - 1))))
        if need < high:
            return need
        low = int(high)
    raise AssertionError("unreachable: the last band has no upper limit")


def check_width(n_rows: int, n_numeric: int, what: str) -> None:
    """Refuse a table with too few rows for its numeric width, naming the rows needed."""
    need = rows_needed(n_numeric)
    if n_rows < need:
        width = f" for {n_numeric} numeric columns" if n_numeric else ""
        raise NradError(
            f"{what} has {n_rows} rows{width}; nrad needs at least {need} rows to fit it "
            f"({MIN_ROWS} + {ROWS_PER_FEATURE} per numeric column for each of the {cross_fit_folds(need)} "
            "cross-fitted flows, each fitted on all rows but one fold). Give more rows, or leave "
            "numeric columns out with --ignore"
        )


def _golden_section(f: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per row, the minimizer of ``f`` (vectorized over rows) on ``[lo, hi]`` to about 1e-3 of the width."""
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = lo.astype(np.float64).copy(), hi.astype(np.float64).copy()
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(GOLDEN_STEPS):
        left = fc < fd
        b, a = np.where(left, d, b), np.where(left, a, c)
        new_c, new_d = b - ratio * (b - a), a + ratio * (b - a)
        c, d = np.where(left, new_c, d), np.where(left, c, new_d)
        fc, fd = np.where(left, np.nan, fd), np.where(left, fc, np.nan)
        fresh = f(np.where(left, c, d))
        fc, fd = np.where(left, fresh, fc), np.where(left, fd, fresh)
    return (a + b) / 2.0


def _hot_deck(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Training rows' missing cells take a random observed value of their feature.

    Not the median: a spike of identical values would teach the flow a
    density peak that no real row has.
    """
    z = z.copy()
    for j in range(z.shape[1]):
        nan = np.isnan(z[:, j])
        if nan.any():
            seen = z[~nan, j]
            z[nan, j] = rng.choice(seen, size=int(nan.sum())) if len(seen) else 0.0
    return z
