"""Table -> numbers and category codes: a fitted schema for real, messy tables.

Every decision is made from the training rows and kept in the schema, which
is plain JSON (``to_dict`` / ``from_dict``) so it travels in the model file.

Column handling (documented in docs/usage.md):

* identifier: text whose values are all distinct, or integers that are all
  distinct and run in sequence (consecutive, or rising row by row), are named
  like a key or are too spread out for a measurement; and whole numbers named
  like a key whose values are mostly distinct (a key that repeats: a patient's
  several samples).  Never a feature; the first all-distinct one names the
  rows when no id column is given;
* numeric: kept, missing cells stay NaN (the model scores them by its best
  value for the row, and the fact that they are missing separately); a text
  column whose non-missing values parse as numbers for at least
  ``NUMERIC_PARSE_SHARE`` of the rows is numeric (the rest, such as "n/a",
  "?" or "1,5", become missing and are counted); so is one whose numbers are
  written with a unit ("70.5 kg", "300 MB" beside "4.5 GB": ``UNIT_FAMILIES``),
  read in one unit, and one of times on a clock ("13:45", "0:31:48": :func:`clock_of`),
  read in hours or minutes.  A numeric 0/1 column stays
  numeric (a lattice to the flow, which models how it goes with the other
  numbers; 39 binary attributes of celeba were read worse as categories)
  unless its other value is rare (``RARE_FLAG_SHARE``);
* datetime (dtype, text that parses as dates, or numbers that count time in a
  column named like a time: :func:`numeric_time_format`): hour of the day (numeric,
  with minutes) and day of the week (categorical).  Absolute time, month and
  day of month are left out on purpose: data scored later would lie outside
  the training range and every new row would look anomalous.  A datetime
  column after another is also read as the time since that one (numeric, in
  hours, or days where either has no hour: a trip's minutes, a stay's days),
  which does not drift as time goes on; where that time is mostly under
  ``SHORT_AFTER_HOURS`` its hour is left out, being the earlier hour plus that
  time (read as two hours of the day it would break at midnight);
* categorical / boolean / text: codes ``0..K-1`` for the levels seen at least
  ``MIN_LEVEL_COUNT`` times in training (their values are the only raw
  values the schema keeps), code ``K`` (*other*) for levels seen fewer times
  or never, code ``K + 1`` for a missing cell;
* constant and all-missing columns: dropped and reported.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from nrad.errors import NradError
from nrad.numeric import lattice_spacing

#: Share of non-missing text values that must parse as numbers for a column to be numeric.
NUMERIC_PARSE_SHARE = 0.95
#: A text column read as a category although this share of its values are numbers gets a note.
LOOKS_NUMERIC_SHARE = 0.5
#: A level seen fewer times than this in training is pooled with unseen levels as *other*
#: (and its value is not stored): one or two rows cannot tell a level apart from a new one.
MIN_LEVEL_COUNT = 2
#: Fewest rows on which a column of distinct values is taken for an identifier.
MIN_ID_ROWS = 20
#: Text that means "missing" in real exports (compared case-insensitively, stripped).
#: What stands in a cell that holds no value (read in lower case): a spreadsheet's errors (a ratio
#: over 0 is "#DIV/0!") and the dashes reports print are no value either.
NA_TOKENS = frozenset(
    {"", "na", "n/a", "n.a.", "nan", "null", "none", "?", "-", "--", "\u2013", "\u2014", "#n/a", "#div/0!",
     "#value!", "#ref!", "#num!", "#name?", "#null!"}
)  # fmt: skip
OTHER, MISSING = "<other>", "<missing>"
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
#: A datetime column's dates lie between these quantiles of its training dates (a few sentinel
#: dates, 1900-01-01, do not set the range) ...
DATE_RANGE_QUANTILES = (0.01, 0.99)
#: ... and a date farther out than the range's own width, or than this many years, is outside the
#: column's support: a typed year a century off (2204), a system's zero date (1900-01-01,
#: 1970-01-01).  Years, not the width alone, so that a model fitted on three months scores the
#: rows of the years that follow.
DATE_MARGIN_YEARS = 10
#: The table a model was fitted on is read with a margin of this many years instead (or the range's
#: width, if more): no row of it comes from the years after training, and a year typed a decade
#: off (2014 among the exams of May 2024) lies apart from every other date it holds.
IN_SAMPLE_DATE_MARGIN_YEARS = 1
#: New rows are read against their own dates too, when they hold at least this many: a date that
#: lies as far from the training dates and from every other date of the table being scored (a
#: year typed 2031 among the days of 2023 and 2024) is outside, by the in-sample margin.  A table
#: of later dates (a model fitted on three months, scoring the next year) holds them itself, and
#: fewer rows than this say too little of their own range (its 99th percentile is their largest).
DATE_BATCH_MIN_ROWS = 100
#: A datetime column read as the time since the one before it leaves out its own hour when the median
#: of that time is under this many hours: its hour is then the earlier one's plus the time between,
#: and the two hours of the day, read side by side, would break that relation wherever a trip or a
#: shift crosses midnight.
SHORT_AFTER_HOURS = 12.0
#: The last word of a column name that says it is a key (an integer key may be shuffled).
KEY_WORDS = frozenset({"id", "key", "no", "nr", "num", "number", "pid", "uuid", "guid", "ref", "code"})
#: All-distinct integers are a key when a measurement spread as widely would share this many values.
KEY_COLLISIONS = 5.0
#: Whole numbers in a column named like a key are a key that repeats (a customer in several rows, a
#: patient's several samples) when at least this share of them are distinct: read as a measurement,
#: a sample code of 95,719 among codes of a million made its row an outlier.
REPEATED_KEY_SHARE = 0.5
#: ... or when they take at least this many values, however often each repeats (a patient's id over
#: 31 diary days, a child's over 4 yearly visits): read as a number, a patient whose id lay far from
#: the ids typical of their headache type was flagged (108 of 124 flags of a panel of 133 patients
#: named the id).  A key of fewer values (a site code of four sites) stays a feature.
KEY_GROUPS = 30
#: A numeric column has a spike (a point mass: 0 in most rows, a default value) at a value that
#: holds at least this share of its present values ...
SPIKE_SHARE = 0.5
#: ... or this share when the value is the column's smallest or largest (zero-inflated amounts) ...
EDGE_SPIKE_SHARE = 0.2
#: ... and the other values take at least this many distinct values (else it is a flag or a few levels).
SPIKE_REST_LEVELS = 3
#: A numeric column all of whose values but at most this many rows' are one value (a pool's area, 0 in
#: 148 of 150 houses) is read as a category: two values say nothing of a spread, and read as a
#: number the column is a point mass whose other values cost hundreds of nats or more each.
MAX_OFF_MODE = 2
#: A numeric column of two values (a 0/1 flag) whose other value holds less than this share of the
#: rows is read as a category too, for the same reason: the flows pile their density onto its
#: mode, and a flag set in 5 of 3,000 rows cost each of them hundreds of nats, flagged every one.
RARE_FLAG_SHARE = 0.01
#: Nor does a column of three values off any lattice, one of them in at least ``SPIKE_SHARE`` of
#: its rows (0 in 147 of 150 rows, 260 in two, 2040 in one): its spread is 0 and read as a number
#: its other values sit tens of sd out; it is read as a category too.  A count's 0, 1 and 2 lie on
#: a lattice and stay numbers.
FEW_OFF_MODE_VALUES = 3
#: ... where the other two values hold less than this share of the rows: a loan's term of 36 or
#: 60 months (62% and 38%) is spread by its two values as a two-valued number is, and one term of
#: 120 typed among 3,000 made it a category, lost the identity total = term x instalment that
#: every other row keeps, and left the row unflagged.
FEW_OFF_MODE_SHARE = 0.1


def standardization(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Training mean and sd; an sd below ``1e-12 * max(1, |mean|)`` counts as 0 and becomes 1.

    Each column is divided by its largest magnitude first, so values near
    1e300 cannot overflow the sum of squares.
    """
    big = np.max(np.abs(X), axis=0) if len(X) else np.ones(X.shape[1])
    big = np.where(np.isfinite(big) & (big > 0), big, 1.0)
    scaled = X / big
    mean = scaled.mean(axis=0) * big
    sd = scaled.std(axis=0) * big
    sd = np.where(sd < 1e-12 * np.maximum(1.0, np.abs(mean)), 1.0, sd)
    return mean, sd


class ProtocolScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """z-score with the training rows' mean and sd (the benchmark protocol's scaling rule)."""

    def fit(self, X: Any, y: Any = None) -> ProtocolScaler:
        X = validate_data(self, X, dtype=np.float64)
        self.mean_, self.scale_ = standardization(X)
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) / self.scale_


@dataclass
class ColumnPlan:
    """What the schema does with one input column."""

    name: str
    kind: str  # numeric | categorical | datetime
    #: numeric: the training median (what a typical row has).
    fill: float = 0.0
    #: categorical: levels seen at least MIN_LEVEL_COUNT times, most frequent first.
    levels: list[str] = field(default_factory=list)
    #: datetime: whether its hour of the day is read (a column of dates has none; nor one read as a
    #: short time after another, see ``SHORT_AFTER_HOURS``).
    has_hour: bool = True
    #: datetime: the strftime format of the text ("" for datetime values).
    format: str = ""
    #: datetime: the range of its training dates (ISO, see ``DATE_RANGE_QUANTILES``); [] for none.
    date_range: list[str] = field(default_factory=list)
    #: datetime: the datetime column before it in the table, that this one is read against (its time
    #: since that one: see :func:`_read_after`); "" for none.
    after: str = ""
    #: datetime with ``after``: the unit of the time since, "hours" or "days".
    after_unit: str = ""
    #: numeric: the value of its spike (see :func:`spike_value`), None without one.
    spike: float | None = None
    #: numeric text: its decimal mark (see :func:`number_format_of`).
    number_format: str = "."
    #: numeric text written with a unit ("70.5 kg"): each unit it may be written in (its family's,
    #: see ``UNIT_FAMILIES``; "" for a bare number) and that unit's size in the column's ``unit``.
    units: dict[str, float] = field(default_factory=dict)
    unit: str = ""
    #: numeric text written as a clock or a duration (see :func:`clock_of`): "h:mm", "h:mm:ss" (read
    #: in hours) or "m:ss" (in minutes); "" for none.
    clock: str = ""
    #: What the user should know about how the column was read ("" for nothing).
    note: str = ""

    def numeric_features(self) -> list[str]:
        if self.kind == "numeric":
            return [self.name]
        if self.kind == "datetime":
            return [f"{self.name}.hour"] * self.has_hour + ([self.since_name] if self.after else [])
        return []

    @property
    def since_name(self) -> str:
        """The feature of a datetime column's time since the column before it: ``"dropoff - pickup
        (hours)"``."""
        return f"{self.name} - {self.after} ({self.after_unit})"

    def categorical_features(self) -> list[tuple[str, list[str]]]:
        """(feature name, labels of its codes) for each categorical feature of the column."""
        if self.kind == "categorical":
            return [(self.name, [*self.levels, OTHER, MISSING])]
        if self.kind == "datetime":
            return [(f"{self.name}.weekday", [*WEEKDAYS, OTHER, MISSING])]
        return []


@dataclass(frozen=True)
class Encoded:
    """A table as the model sees it."""

    #: (n, p) numeric features, NaN where missing.
    numeric: np.ndarray
    #: (n, q) category codes: level index, ``K`` other, ``K + 1`` missing.
    codes: np.ndarray
    #: Repairs made: missing cells, unseen levels, parse failures.
    counts: dict[str, int]
    #: (n, n_columns) True where the row's value of that kept column was missing.
    missing: np.ndarray
    #: (n, p) True where a numeric feature is at its column's spike (its number then NaN in ``numeric``).
    at_spike: np.ndarray | None = None
    #: (n, q) True where a datetime column's date lies outside the support the training rows
    #: themselves are read against (``dates_outside(..., in_sample=True)``; False elsewhere).
    far_dates: np.ndarray | None = None
    #: (n, q) the same for new rows: outside the training dates and the table's own, by the same
    #: margin (``dates_outside(..., among=...)``, ``DATE_BATCH_MIN_ROWS``; False elsewhere).
    apart_dates: np.ndarray | None = None


@dataclass
class TableSchema:
    """The fitted preprocessing: input columns, their plans, what was dropped."""

    columns: list[ColumnPlan]
    dropped: dict[str, str]
    input_columns: list[str]
    #: Columns recognised as row identifiers (never features).
    identifiers: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def numeric_names(self) -> list[str]:
        return [f for c in self.columns for f in c.numeric_features()]

    @property
    def numeric_sources(self) -> list[int]:
        """Index (into ``columns``) of the input column of each numeric feature."""
        return [i for i, c in enumerate(self.columns) for _ in c.numeric_features()]

    @property
    def categorical_names(self) -> list[str]:
        return [name for c in self.columns for name, _ in c.categorical_features()]

    @property
    def categorical_labels(self) -> list[list[str]]:
        return [labels for c in self.columns for _, labels in c.categorical_features()]

    @property
    def categorical_sources(self) -> list[int]:
        return [i for i, c in enumerate(self.columns) for _ in c.categorical_features()]

    @property
    def names(self) -> list[str]:
        """The kept input columns, in schema order."""
        return [c.name for c in self.columns]

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": [c.__dict__ for c in self.columns],
            "dropped": self.dropped,
            "input_columns": self.input_columns,
            "identifiers": self.identifiers,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableSchema:
        try:
            cols = [ColumnPlan(**c) for c in data["columns"]]
            return cls(
                cols, dict(data["dropped"]), list(data["input_columns"]), list(data.get("identifiers", []))
            )
        except (KeyError, TypeError) as exc:
            raise NradError(f"the model's preprocessing schema is malformed: {exc}") from exc


def fit_schema(
    df: pd.DataFrame, detect_identifiers: bool = True, features: Sequence[str] = ()
) -> TableSchema:
    """Decide each column's handling from the training rows; ``features``: columns kept as
    features even if they look like identifiers."""
    _check_table(df, "training data")
    unknown = [c for c in features if c not in df.columns]
    if unknown:
        raise NradError(f"no column named {', '.join(map(repr, unknown))} (given as a feature to keep)")
    plans, dropped, identifiers = [], {}, []
    counts = {"parse_failures": 0}
    for name in df.columns:
        col = df[name]
        if detect_identifiers and name not in features and is_identifier(col):
            identifiers.append(str(name))
            continue
        plan, reason, failures = _plan_column(str(name), col)
        counts["parse_failures"] += failures
        if plan is None:
            dropped[str(name)] = reason
        else:
            plans.append(plan)
    if not plans:
        reasons = {**dropped, **dict.fromkeys(identifiers, "identifier")}
        raise NradError(
            "no usable column left: every column is constant, empty or an identifier "
            f"({', '.join(f'{k}: {v}' for k, v in reasons.items())})"
        )
    _read_after(plans, df)
    kept = [str(c) for c in df.columns if str(c) not in identifiers]
    return TableSchema(plans, dropped, kept, identifiers, counts=counts)


def _read_after(plans: list[ColumnPlan], df: pd.DataFrame) -> None:
    """Read each datetime column after the first as the time since the datetime column before it
    (in place).  A pickup and a dropoff, an admission and a discharge: what ties them is the time
    between, which two hours of the day and two weekdays state only up to midnight, and which an
    absolute time would not give a new row of next year."""
    earlier, earlier_hour = None, False
    for plan in plans:
        if plan.kind != "datetime":
            continue
        has_hour = plan.has_hour  # whether its clock varies, before it may be left out below
        if earlier is not None:
            unit = "hours" if has_hour and earlier_hour else "days"
            since = time_since(_parse_datetime(df[earlier.name], earlier.format),
                               _parse_datetime(df[plan.name], plan.format), unit)  # fmt: skip
            if np.isfinite(since).sum() >= 2 and np.nanstd(since) > 0:
                plan.after, plan.after_unit = earlier.name, unit
                if unit == "hours" and np.nanmedian(np.abs(since)) < SHORT_AFTER_HOURS:
                    plan.has_hour = False
        earlier, earlier_hour = plan, has_hour


def time_since(earlier: pd.Series, later: pd.Series, unit: str) -> np.ndarray:
    """``later - earlier`` in hours or days (NaN where either is missing)."""
    seconds = (later - earlier).dt.total_seconds().to_numpy(dtype=float, na_value=np.nan)
    return seconds / (3600.0 if unit == "hours" else 86400.0)


def is_identifier(col: pd.Series) -> bool:
    """All values distinct and present, and text (not numbers or dates) or integers that look like keys.

    Measurements are often all distinct too (amounts with cents), so numbers
    count only when they are integers that are consecutive once sorted, rise
    from row to row (a row counter, an auto-increment key), are named like a
    key (``order_id``, ``PID``, ``parcel_no``), or are too spread out to be a
    measurement: ``n`` values drawn over a span of ``s`` integers would
    share a value about ``n^2 / (2 s)`` times, and a key shares none where
    ``KEY_COLLISIONS`` were expected.
    """
    n = len(col)
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_datetime64_any_dtype(col):
        return False
    if numeric_time_format(str(col.name), col) is not None:
        return False  # times rise row by row in a log, as a key would
    if _repeated_key(col):
        return True
    if n < MIN_ID_ROWS or col.isna().any() or not col.is_unique:
        return False
    if pd.api.types.is_float_dtype(col) and bool((col % 1 == 0).all()) and bool(col.abs().max() < 2**62):
        col = col.astype(np.int64)
    if pd.api.types.is_integer_dtype(col):
        values = col.to_numpy(dtype=np.int64)
        ordered = np.sort(values)
        if np.all(np.diff(ordered) == 1) or np.all(np.diff(values) > 0) or _named_like_key(str(col.name)):
            return True
        span = float(ordered[-1]) - float(ordered[0]) + 1.0
        return n * n / (2.0 * span) >= KEY_COLLISIONS
    if pd.api.types.is_numeric_dtype(col):
        return False
    text = col.astype("string")
    if clock_of(text) is not None:
        return False  # times of day and durations are measurements, however distinct
    parsed, _ = _numeric_parse(text)
    if parsed.notna().mean() < LOOKS_NUMERIC_SHARE and isinstance(units := units_of(text), tuple):
        parsed, _ = _numeric_parse(text, None, units[0])  # measurements with their unit: "23.456 ms"
    if parsed.notna().mean() >= LOOKS_NUMERIC_SHARE:
        # Numbers, or mostly numbers with a few cells that do not read (amounts, one in six with a
        # word after it): measurements unless the numbers are keys; such a column is read as a
        # category with a note naming the cells, not left out as an identifier.
        numbers = parsed.dropna()
        return is_identifier(numbers.astype("Int64").rename(col.name)) if (numbers % 1 == 0).all() else False
    return _datetime_kind(col) is None and _looks_like_dates(col) < LOOKS_NUMERIC_SHARE


def _repeated_key(col: pd.Series) -> bool:
    """Named like a key, whole numbers (or text that reads as them) in every present cell, and at
    least ``REPEATED_KEY_SHARE`` of them distinct, or at least ``KEY_GROUPS`` values (see
    :data:`REPEATED_KEY_SHARE`)."""
    if not _named_like_key(str(col.name)):
        return False
    present = col.dropna()
    if len(present) < MIN_ID_ROWS:
        return False
    if not pd.api.types.is_numeric_dtype(present):
        parsed, _ = _numeric_parse(present.astype("string"))
        if parsed.isna().any():
            return False
        present = parsed
    values = present.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(values)) or not np.all(values == np.round(values)):
        return False
    distinct = np.unique(values).size
    return bool(distinct >= REPEATED_KEY_SHARE * values.size or distinct >= KEY_GROUPS)


def _named_like_key(name: str) -> bool:
    """``order_id``, ``OrderID``, ``PID``, ``parcel_no``, ``Ticket Number``: the last word names a key."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)
    return bool(words) and words[-1].lower() in KEY_WORDS


def encode(schema: TableSchema, df: pd.DataFrame, what: str = "data") -> Encoded:
    """Apply a fitted schema: numeric features (NaN where missing), category codes, counts."""
    _check_table(df, what)
    _check_columns(schema, df, what)
    n = len(df)
    numeric, codes, flags, spikes, far, apart = [], [], [], [], [], []
    counts = {"missing_cells": 0, "unseen_levels": 0, "parse_failures": 0}
    # Parsed once: a datetime column read after another reads that one's dates too.
    dates = {p.name: _parse_datetime(df[p.name], p.format) for p in schema.columns if p.kind == "datetime"}
    for plan in schema.columns:
        nums, cats, missing, unseen, failures = _apply(plan, df[plan.name], dates)
        if plan.spike is not None:
            nums = [v.copy() for v in nums]
        for values in nums:
            at = np.isfinite(values) & (values == plan.spike) if plan.spike is not None else np.zeros(n, bool)
            if at.any():
                values[at] = np.nan
            spikes.append(at)
        numeric += nums
        codes += cats
        if plan.kind == "datetime":
            far.append(dates_outside(plan, dates[plan.name], in_sample=True))
            apart.append(dates_outside(plan, dates[plan.name], among=dates[plan.name]))
        else:
            far += [None] * len(cats)
            apart += [None] * len(cats)
        flags.append(missing)
        counts["unseen_levels"] += unseen
        counts["parse_failures"] += failures
    missing = np.column_stack(flags) if flags else np.zeros((n, 0), dtype=bool)
    counts["missing_cells"] = int(missing.sum())
    return Encoded(
        numeric=np.column_stack(numeric).astype(np.float64) if numeric else np.zeros((n, 0)),
        codes=np.column_stack(codes).astype(np.int64) if codes else np.zeros((n, 0), dtype=np.int64),
        counts=counts,
        missing=missing,
        at_spike=np.column_stack(spikes) if spikes else np.zeros((n, 0), dtype=bool),
        far_dates=_stacked(far, n),
        apart_dates=_stacked(apart, n),
    )


def _stacked(columns: list[np.ndarray | None], n: int) -> np.ndarray:
    """(n, features) the code features' date flags side by side (None: a feature with no dates)."""
    if not columns:
        return np.zeros((n, 0), dtype=bool)
    return np.column_stack([np.zeros(n, dtype=bool) if f is None else f for f in columns])


def _check_table(df: pd.DataFrame, what: str) -> None:
    if not isinstance(df, pd.DataFrame):
        raise NradError(f"{what}: expected a table (DataFrame), got {type(df).__name__}")
    if df.shape[1] == 0:
        raise NradError(f"{what} has no columns")
    if len(df) == 0:
        raise NradError(f"{what} has no rows (only a header?)")
    dupes = df.columns[df.columns.duplicated()].tolist()
    if dupes:
        raise NradError(f"{what} has duplicate column names: {', '.join(map(str, dupes))}; rename them")


def _check_columns(schema: TableSchema, df: pd.DataFrame, what: str) -> None:
    """Every column the model reads must be there (columns it does not read are left out)."""
    have = {str(c) for c in df.columns}
    missing = sorted(set(schema.input_columns) - have)
    if missing:
        raise NradError(
            f"{what} lacks columns the model was trained on: {', '.join(missing)}. "
            "Score data with those columns (order does not matter; other columns are left out)."
        )


def extra_columns(schema: TableSchema, df: pd.DataFrame) -> list[str]:
    """Columns of ``df`` the model does not read (nor as identifiers)."""
    known = set(schema.input_columns) | set(schema.identifiers)
    return [str(c) for c in df.columns if str(c) not in known]


def _na_tokens_to_missing(col: pd.Series) -> pd.Series:
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return col
    text = col.astype("string").str.strip().str.lower()
    return col.mask(text.isin(NA_TOKENS))


def _numeric_parse(
    col: pd.Series, number_format: str | None = None, units: dict[str, float] | None = None, clock: str = ""
) -> tuple[pd.Series, int]:
    """Text -> numbers as the format says (see :func:`number_format`; None: decided from ``col``),
    each written with one of ``units`` (see :attr:`ColumnPlan.units`) if given, or as times on a
    ``clock`` (see :func:`clock_of`); NA tokens are missing, other values that do not parse (a
    unit not among them) become missing too and are counted as parse failures."""
    col = _na_tokens_to_missing(col)
    text = col.astype("string")
    if clock:
        values = read_clock(text, clock)
        return values, int((values.isna() & col.notna()).sum())
    size = None
    if units:
        text, unit = _split_units(text)
        size = unit.map(units).astype(float)
    fmt = number_format_of(text) if number_format is None else number_format
    values = pd.to_numeric(normalize_numbers(text, fmt), errors="coerce")
    if size is not None:
        values = values * size.to_numpy()
    failures = int((values.isna() & col.notna()).sum())
    return values.astype(float), failures


def number_format_of(text: pd.Series) -> str:
    """How a text column writes its numbers: ``"."`` (decimal point: 1,234.56 or 1234.56) or ``","``
    (decimal comma: 1.234,56 or 1234,56), decided from its values.

    A comma followed by other than exactly three digits (``3,5``, ``12,75``), or a point before a
    comma (``1.234,56``), or more than one point (``1.234.567``) makes the comma the decimal mark;
    otherwise the point is (``1,234`` is then one thousand two hundred and thirty-four).
    """
    sample = text.dropna().head(5000).str.replace(_DECORATION, "", regex=True)
    if sample.empty:
        return "."
    comma_decimal = sample.str.contains(r",(?!\d{3}(?:\D|$))", regex=True) & sample.str.contains(r"\d,\d")
    point_then_comma = sample.str.contains(r"\.\d{3},", regex=True)
    many_points = sample.str.count(r"\.") > 1
    votes = int((comma_decimal | point_then_comma | many_points).sum())
    point_decimal = int(sample.str.contains(r"\d\.\d{1,2}$|\d\.\d{4,}|,\d{3}\.\d", regex=True).sum())
    return "," if votes > point_decimal else "."


#: Minus signs other than the ASCII hyphen that exports write before a number.
_MINUS = "^[\u2212\u2012\u2013\ufe63\uff0d](?=[\\d.,(])"

#: A number whose minus sign follows it (no other minus before it).
_TRAILING_MINUS = r"^[^-]*\d[^-\d]*-$"

#: What exports put around a number: currency signs (``R$``, ``Rs.`` and ``A$`` too) and codes,
#: percent signs, spaces.  Not a limit's qualifier (``<5``, ``10+``): a survey's bands of hours
#: read as numbers put "<5" with 5.
_DECORATION = (
    r"(?:US|NZ|HK|[RACS])\$|\bRs\.?|[\s$€£¥₹₽₩₺₪₫฿₴₦₱%']"
    r"|\b(?:USD|EUR|GBP|CHF|JPY|CAD|AUD|NZD|SEK|NOK|DKK|PLN|CZK|HUF|INR|CNY|RMB|BRL|MXN|ZAR|RUB|TRY"
    r"|KRW|SGD|HKD|ILS|THB|IDR|MYR|PHP|AED|SAR)\b"
)

#: A unit written after a number ("70.5 kg", "12ms", "20,5 °C", "4.5 GB"): letters (after a
#: degree or micro sign), a "/" and a second unit, a power; never a digit first.
_UNIT = r"[°µμ]?[^\W\d_][^\W\d_]{0,5}(?:/[^\W\d_]{1,5})?[²³]?"
#: A number followed by a unit (what decoration is left once it is taken off).
_WITH_UNIT = re.compile(rf"^(?P<number>[-+\u2212(]?[\d.,]*\d[)]?-?)(?P<unit>{_UNIT})?$")

#: Units a spreadsheet's number format writes after its numbers (a cell formatted ``0.0 "kg"`` is
#: exported as the text "70.5 kg"), by what they measure: each unit's size in the family's first.
#: A column may mix the units of one family ("300 MB", "4.5 GB"); it is read in its most common.
#: The magnitudes of counts and money ("1.2k", "3.4M") are read beside bare numbers, in ones.
UNIT_FAMILIES: tuple[dict[str, float], ...] = (
    {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "bn": 1e9},
    {"B": 1.0, "bytes": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15,
     "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40},
    {"s": 1.0, "sec": 1.0, "secs": 1.0, "ns": 1e-9, "µs": 1e-6, "μs": 1e-6, "us": 1e-6, "ms": 1e-3,
     "min": 60.0, "mins": 60.0, "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0,
     "hours": 3600.0, "day": 86400.0, "days": 86400.0},
    {"g": 1.0, "mg": 1e-3, "kg": 1e3, "t": 1e6, "lb": 453.59237, "lbs": 453.59237, "oz": 28.349523125},
    {"m": 1.0, "mm": 1e-3, "cm": 1e-2, "km": 1e3, "in": 0.0254, "ft": 0.3048, "mi": 1609.344},
)  # fmt: skip


#: A time written on a clock: a time of day (``13:45``, ``9:24:08``, ``1:45 PM``) or a duration
#: (``0:31:48``, ``31:48``; a cell formatted ``[h]:mm:ss`` is exported so).
_CLOCK = re.compile(
    r"^(?P<h>\d{1,4}):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d(?:[.,]\d+)?))?\s*(?P<half>[AaPp]\.?\s?[Mm]\.?)?$"
)


def clock_of(text: pd.Series) -> str | None:
    """How a text column writes times on a clock, if at least ``NUMERIC_PARSE_SHARE`` of its present
    cells are such times: "h:mm:ss" (hours, minutes, seconds), "h:mm" (hours and minutes; with AM
    or PM too), or "m:ss" (two fields whose first passes 23 somewhere, or beside cells of three:
    minutes and seconds, a lap or a call); None otherwise."""
    sample = text.dropna().astype("string").str.strip().head(5000)
    parts = sample.str.extract(_CLOCK)
    if not len(sample) or parts["h"].notna().sum() < NUMERIC_PARSE_SHARE * len(sample):
        return None
    three = parts["s"].notna() | parts["h"].isna()
    if three.all():
        return "h:mm:ss"
    # Two fields: hours and minutes (a time of day), unless the first passes 23 somewhere without AM
    # or PM, or other cells have three fields ("4:30" beside "1:02:06", as video lengths are
    # written): minutes and seconds (a call, a lap), as durations of a day or more are rarer.
    past = (pd.to_numeric(parts["h"]) >= 24).any() and parts["half"].isna().all()
    return "m:ss" if past or parts["s"].notna().any() else "h:mm"


def read_clock(text: pd.Series, clock: str) -> pd.Series:
    """Clock text -> hours ("h:mm", "h:mm:ss"; "1:45 PM" is 13.75) or minutes ("m:ss"); NaN where
    a cell is no such time."""
    parts = text.astype("string").str.strip().str.extract(_CLOCK)
    first, second = pd.to_numeric(parts["h"]), pd.to_numeric(parts["m"])
    third = pd.to_numeric(parts["s"].str.replace(",", ".", regex=False))
    half = parts["half"].str.upper().str.replace(r"[.\s]", "", regex=True)
    # 12 AM is midnight and 12 PM noon; a time without AM or PM is on a 24-hour clock (or a duration).
    first = first.where(half.isna(), first % 12 + 12 * (half == "PM").fillna(False).astype(float))
    # In seconds: three fields are hours, minutes and seconds whatever the column's clock; two are
    # minutes and seconds on an "m:ss" clock, hours and minutes on the others.
    unit = 60.0 if clock == "m:ss" else 3600.0
    seconds = (first * 3600.0 + second * 60.0 + third).where(third.notna(), (first + second / 60.0) * unit)
    return (seconds / unit).astype(float)


def _split_units(text: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(the number's text, its unit: "" for a bare number, NA where the cell is no number)."""
    bare = text.str.strip().str.replace(_DECORATION, "", regex=True)
    parts = bare.str.extract(_WITH_UNIT)
    return parts["number"], parts["unit"].where(parts["number"].isna(), parts["unit"].fillna(""))


def units_of(text: pd.Series) -> tuple[dict[str, float], str] | str | None:
    """The units a text column writes its numbers in, as :attr:`ColumnPlan.units` and the unit
    they are read in; a message when its numbers carry units of different kinds; None when they
    carry none, or too few cells are numbers (``NUMERIC_PARSE_SHARE``)."""
    sample = text.dropna().head(5000)
    _, unit = _split_units(sample)
    if not len(sample) or unit.notna().sum() < NUMERIC_PARSE_SHARE * len(sample):
        return None
    counts = unit.dropna().value_counts()
    written = sorted((str(u) for u in counts.index if u), key=lambda u: (-counts[u], u))
    if not written:
        return None
    # A unit is written on most of a column's numbers (a word after a few of them is a remark:
    # "12.50 approx"); a unit of no known kind, on all but a few.
    with_unit = int(counts.sum() - counts.get("", 0)) / int(counts.sum())
    for family in UNIT_FAMILIES:
        if all(u in family for u in written) and ("" in family or with_unit >= 0.5):
            # In ones beside bare numbers (magnitudes); else in the unit most cells are written in.
            ref = "" if "" in family else written[0]
            return {u: size / family[ref] for u, size in family.items()} | {"": 1.0}, ref
    if len(written) == 1:
        return ({written[0]: 1.0, "": 1.0}, written[0]) if with_unit >= NUMERIC_PARSE_SHARE else None
    if not all(any(u in family for family in UNIT_FAMILIES) for u in written):
        return None  # letters after numbers that are no known unit may be codes ("12A", "12B": seats)
    return ", ".join(repr(u) for u in written[:5])


def normalize_numbers(text: pd.Series, number_format: str) -> pd.Series:
    """``(1.234,56 €)`` -> ``-1234.56``: decoration off, accounting negatives signed, separators out."""
    # Spreadsheets and typeset reports write the minus as U+2212 (or a dash); Python reads only "-".
    out = text.str.strip().str.replace(_MINUS, "-", regex=True)
    # Accounting negatives in brackets, and the sign after the number that SAP and mainframe
    # exports write ("1.234,56-").
    trailing = out.str.match(_TRAILING_MINUS, na=False)
    negative = out.str.match(r"^\(.*\)$", na=False) | trailing
    out = out.where(~trailing, out.str[:-1])
    out = out.str.replace(r"[()]", "", regex=True).str.replace(_DECORATION, "", regex=True)
    # Only separators that group thousands go: "1,5" in a column of decimal points stays
    # unreadable (a parse failure, counted), not fifteen.
    if number_format == ",":
        out = out.str.replace(r"(?<=\d)\.(?=\d{3}(?:\D|$))", "", regex=True)
        out = out.str.replace(",", ".", regex=False)
    else:
        out = out.str.replace(r"(?<=\d),(?=\d{3}(?:\D|$))", "", regex=True)
    return out.where(~negative, "-" + out)


#: Text that looks like a date: digits with date separators, or a month's name beside a day.
_DATE_LIKE = (
    # Not inside a longer run of dotted numbers: "10.1.3.45" (an address) holds "1.3.45".
    r"(?<![\d.])(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})(?!\d|\.\d)"
    r"|\b\d{1,2}[- ](?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*[-, ]+\d{2,4}"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2},? \d{4}"
)

#: Date formats tried besides pandas' guesses (which miss a 12-hour clock and two-digit years).
EXPORT_DATE_FORMATS = tuple(
    f"{date}{clock}"
    for date in (
        "%m/%d/%Y",
        "%d/%m/%Y",
        "%m/%d/%y",
        "%d/%m/%y",
        "%d.%m.%y",
        "%d-%b-%Y",
        "%d-%b-%y",
        "%d %b %Y",
        "%b %d, %Y",
        "%d %B %Y",
        "%B %d, %Y",
    )  # fmt: skip
    for clock in ("", " %I:%M %p", " %I:%M:%S %p", " %H:%M", " %H:%M:%S")
)


def _datetime_format(col: pd.Series) -> str | None:
    """The strftime format that parses at least ``NUMERIC_PARSE_SHARE`` of a text column, or None.

    Decided once, from the training rows, and kept in the schema: pandas
    otherwise guesses the format from each table's first value, so a table
    starting with 05/03/2023 is read month-first and one starting with
    27/05/2023 day-first, and the same column means two things.  Among the
    formats that fit the first values (day first and month first) the one
    that parses most of a sample wins.
    """
    from pandas.tseries.api import guess_datetime_format

    col = _na_tokens_to_missing(col)
    sample = col.dropna().astype(str).str.strip().head(500)
    if sample.empty or not sample.str.contains(_DATE_LIKE, case=False).all():
        return None
    with warnings.catch_warnings():
        # pandas warns when a value fits day-first and month-first alike: both are tried here.
        warnings.simplefilter("ignore", UserWarning)
        guesses = {
            guess_datetime_format(v, dayfirst=first) for v in sample.head(50) for first in (False, True)
        }
    best, best_share = None, 0.0
    # pandas' guesser knows no 12-hour clock and no two-digit year: what spreadsheets export.  Ties
    # keep the first: year-day-month last (pandas guesses it for 2024-03-08 read day first; no export
    # writes it, and a week of March read so spans seven months).
    candidates = {g for g in guesses if g} | set(EXPORT_DATE_FORMATS)
    for fmt in sorted(candidates, key=lambda f: (_year_day_month(f), f)):
        share = _parse_datetime(sample, fmt).notna().mean()
        if share > best_share:
            best, best_share = fmt, share
        if best_share == 1.0:
            break  # a later format could only tie, and a tie keeps the first: up to sixty parses saved
    if best is None or best_share < NUMERIC_PARSE_SHARE:
        return None
    parsed = _parse_datetime(col, best)
    return best if parsed.notna().sum() >= NUMERIC_PARSE_SHARE * col.notna().sum() else None


def _year_day_month(fmt: str) -> bool:
    """Whether a date format has the year first and the day before the month (``%Y-%d-%m``)."""
    y, d, m = (fmt.find(part) for part in ("%Y", "%d", "%m"))
    return -1 < y < d < m


def read_dates(plan: ColumnPlan, col: pd.Series) -> pd.Series:
    """A datetime column's values as its plan reads them (UTC; failures are NaT)."""
    return _parse_datetime(col, plan.format)


def _parse_datetime(col: pd.Series, fmt: str) -> pd.Series:
    """Parse with a fixed format ("" for a column that already holds datetimes; "epoch:s" and the
    like for numbers counted since 1970, see :func:`numeric_time_format`); failures are NaT."""
    if fmt == "epoch:excel":
        days = pd.to_numeric(col, errors="coerce")
        return pd.to_datetime(days, unit="D", origin="1899-12-30", utc=True, errors="coerce")
    if fmt.startswith("epoch:"):
        return pd.to_datetime(pd.to_numeric(col, errors="coerce"), unit=fmt[6:], utc=True, errors="coerce")
    if fmt and pd.api.types.is_numeric_dtype(col):  # dates written as numbers (20240131): their digits
        col = pd.to_numeric(col, errors="coerce").round().astype("Int64")
    if fmt == "" or pd.api.types.is_datetime64_any_dtype(col):
        return pd.to_datetime(col, utc=True, errors="coerce")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pd.to_datetime(col.astype("string").str.strip(), format=fmt, utc=True, errors="coerce")


def _datetime_kind(col: pd.Series) -> str | None:
    """ "" for a datetime column, its format for date text, None otherwise."""
    if pd.api.types.is_datetime64_any_dtype(col):
        return ""
    if col.dtype != object and not pd.api.types.is_string_dtype(col):
        return None
    return _datetime_format(col)


def _plan_column(name: str, col: pd.Series) -> tuple[ColumnPlan | None, str, int]:
    if col.isna().all():
        return None, "all values missing", 0
    if pd.api.types.is_bool_dtype(col):
        return _categorical_plan(name, col)
    if pd.api.types.is_numeric_dtype(col) and (fmt := numeric_time_format(name, col)) is not None:
        # Read as a number, a time grows with the table: every row of a later month lay beyond the
        # training rows and was flagged.
        plan, reason = _datetime_plan(name, col, fmt)
        if plan is not None:
            plan.note = f"{name}: numbers read as {_NUMERIC_TIMES[fmt]}"
        return plan, reason, 0
    if pd.api.types.is_numeric_dtype(col):
        return _numeric_plan(name, col.astype(float), 0)
    if (fmt := _datetime_kind(col)) is not None:
        return (*_datetime_plan(name, col, fmt), 0)
    cells = _na_tokens_to_missing(col)
    text = cells.astype("string")
    if (clock := clock_of(text)) is not None:
        plan, reason, failures = _numeric_plan(name, *_numeric_parse(col, clock=clock), written=col)
        if plan is not None and plan.kind == "numeric":
            plan.clock = clock
            plan.note = f"{name}: times written {clock}; read in {'minutes' if clock == 'm:ss' else 'hours'}"
        return plan, reason, failures
    fmt = number_format_of(text)
    values, failures = _numeric_parse(col, fmt)
    present = cells.notna().sum()
    units = units_of(text) if values.notna().sum() < NUMERIC_PARSE_SHARE * present else None
    if isinstance(units, tuple):
        fmt = number_format_of(_split_units(text)[0])
        values, failures = _numeric_parse(col, fmt, units[0])
    if present and values.notna().sum() >= NUMERIC_PARSE_SHARE * present:
        # Read as a category, its levels are the cells as written: what is matched when a table is scored.
        plan, reason, failures = _numeric_plan(name, values, failures, written=cells)
        if plan is not None and plan.kind == "numeric":
            plan.number_format = fmt
            if isinstance(units, tuple):
                plan.units, plan.unit = units
                plan.note = f"{name}: numbers written with their unit; read in {plan.unit or 'ones'}"
        return plan, reason, failures
    plan, reason, _ = _categorical_plan(name, cells)
    if plan is not None and isinstance(units, str):
        plan.note = (f"{name}: numbers written in units of different kinds ({units}); read as a category. "
                     "Write them in one unit, or leave the column out with --ignore")  # fmt: skip
        return plan, reason, 0
    share = values.notna().sum() / max(present, 1)
    if plan is not None and share >= LOOKS_NUMERIC_SHARE:
        examples = cells[values.isna() & cells.notna()].astype(str)
        shown = ", ".join(repr(v) for v in examples.drop_duplicates().head(3))
        plan.note = (f"{name}: {share:.0%} of its values are numbers, but not {NUMERIC_PARSE_SHARE:.0%} "
                     f"(others: {shown}); read as a category. Clean those cells, or leave the column "
                     "out with --ignore")  # fmt: skip
    elif plan is not None and (dates := _looks_like_dates(col)) >= LOOKS_NUMERIC_SHARE:
        shown = ", ".join(repr(v) for v in col.dropna().astype(str).drop_duplicates().head(3))
        plan.note = (f"{name}: {dates:.0%} of its values look like dates ({shown}), but no date format "
                     f"reads {NUMERIC_PARSE_SHARE:.0%} of them; read as a category. Write them as "
                     "2024-12-31 (or 2024-12-31 13:45), or leave the column out with --ignore")  # fmt: skip
    return plan, reason, 0


def _datetime_plan(name: str, col: pd.Series, fmt: str) -> tuple[ColumnPlan | None, str]:
    """The plan of a column of datetimes written in ``fmt`` (see :func:`_parse_datetime`)."""
    parsed = _parse_datetime(col, fmt)
    hour, weekday = _datetime_parts(parsed)
    has_hour = bool(np.nanstd(hour) > 0)
    if not has_hour and np.nanstd(weekday) == 0:
        return None, "constant (no variation in weekday or hour)"
    return ColumnPlan(name, "datetime", has_hour=has_hour, format=fmt, date_range=_date_range(parsed)), ""


#: Units a time since 1970 is counted in (Unix time, as databases and logs export it): what they are
#: called, and the values that count from 2000 to 2040 in them.
EPOCH_UNITS = {
    "s": ("seconds", 946_684_800.0, 2_208_988_800.0),
    "ms": ("milliseconds", 946_684_800e3, 2_208_988_800e3),
    "us": ("microseconds", 946_684_800e6, 2_208_988_800e6),
    "ns": ("nanoseconds", 946_684_800e9, 2_208_988_800e9),
}
#: What a numeric column's time format reads (:func:`numeric_time_format`), as a note says it.
_NUMERIC_TIMES = {
    **{
        f"epoch:{unit}": f"times ({called} since 1970, as Unix counts)"
        for unit, (called, _, _) in EPOCH_UNITS.items()
    },
    "epoch:excel": "dates (days since 1899-12-30, as spreadsheets count)",
    "%Y%m%d": "dates written YYYYMMDD",
}
#: A spreadsheet's day numbers (days since 1899-12-30) from 2000 to 2040.
EXCEL_DAYS = (36_526.0, 51_136.0)
#: Words of a column's name that say it holds times (``created_at``, ``eventTime``, ``ts``).
TIME_WORDS = frozenset(
    {"time", "timestamp", "stamp", "ts", "date", "datetime", "dt", "epoch", "unix", "at", "created",
     "updated", "modified", "when", "seen", "start", "started", "end", "ended"}
)  # fmt: skip


def numeric_time_format(name: str, col: pd.Series) -> str | None:
    """The datetime format of a numeric column that holds times (see :func:`_parse_datetime`), or
    None: Unix times ("epoch:s", "epoch:ms", "epoch:us", "epoch:ns"), dates written as 8-digit
    numbers ("%Y%m%d": 20240131) or a spreadsheet's day numbers ("epoch:excel": 45322).

    A time is told by the column's name (a word of ``TIME_WORDS``; a spreadsheet's day, by "date")
    and its values, every one of them a time from 2000 to 2040 (a date from 1900 to 2100 written
    YYYYMMDD), with spread: a constant is no time series.  A name alone says little (a ``start``
    odometer reading), and so do values alone (a phone number of ten digits is a second of 2036)."""
    words = {w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)}
    if pd.api.types.is_bool_dtype(col) or not words & TIME_WORDS:
        return None
    values = pd.to_numeric(col, errors="coerce").dropna().to_numpy(dtype=np.float64)
    if not len(values) or values.min() == values.max():
        return None
    for unit, (_, low, high) in EPOCH_UNITS.items():
        if values.min() >= low and values.max() < high:
            return f"epoch:{unit}"
    whole = bool(np.all(values == np.round(values)))
    if whole and values.min() >= 19000101 and values.max() <= 21001231:
        written = pd.Series(values.astype(np.int64)).astype(str)
        if pd.to_datetime(written, format="%Y%m%d", errors="coerce").notna().all():
            return "%Y%m%d"
    if "date" in words and values.min() >= EXCEL_DAYS[0] and values.max() < EXCEL_DAYS[1]:
        return "epoch:excel"
    return None


def _looks_like_dates(col: pd.Series) -> float:
    """Share of a column's present values that look like dates (:data:`_DATE_LIKE`)."""
    text = _na_tokens_to_missing(col).dropna().astype(str).head(5000)
    return float(text.str.contains(_DATE_LIKE, case=False).mean()) if len(text) else 0.0


def _numeric_plan(
    name: str, values: pd.Series, failures: int, written: pd.Series | None = None
) -> tuple[ColumnPlan | None, str, int]:
    """The plan of a column of numbers ``values``; ``written``: its cells as the table writes them
    (the levels if it is read as a category; ``values`` themselves when None)."""
    finite = values[np.isfinite(values)]
    if finite.empty:
        return None, "no finite values", failures
    distinct = finite.nunique()
    if distinct <= 1 and values.notna().all():
        return None, "constant", failures
    counts = finite.value_counts()
    off_mode = len(finite) - int(counts.iloc[0])
    if 0 < off_mode <= MAX_OFF_MODE and len(finite) > 2 * MAX_OFF_MODE:
        why = ", too few others to read as numbers"
    elif distinct == 2 and 0 < off_mode < RARE_FLAG_SHARE * len(finite):
        why = ", the other value too rare to read as a number"
    elif (
        distinct == FEW_OFF_MODE_VALUES
        and counts.iloc[0] >= SPIKE_SHARE * len(finite)
        and off_mode < FEW_OFF_MODE_SHARE * len(finite)
        and lattice_spacing(finite.to_numpy(), whole_numbers=False) == 0.0
    ):
        why = " and the rest take two values, no spread to read them by"
    else:
        plan = ColumnPlan(name, "numeric", fill=float(finite.median()), spike=spike_value(finite))
        return plan, "", failures
    plan, reason, _ = _categorical_plan(name, values if written is None else written)
    if plan is not None:
        mode = _as_text(counts.index[:1].to_series()).iloc[0]
        kept = len(finite) - off_mode
        plan.note = f"{name}: {kept} of its {len(finite)} values are {mode}{why}; read as a category"
    return plan, reason, failures


def spike_value(values: pd.Series) -> float | None:
    """The value of a point mass in a numeric column, or None.

    A column that is 0 in most rows and spread over real values in the
    others (a pool's area, a second floor's) is two things: whether the row
    is at the spike, a category, and the value when it is not, a number.
    Read as one number, its spike is a density peak the flows learn as near
    certainty, and every value off it costs thousands of nats.  A spike is a
    value held by ``SPIKE_SHARE`` of the present values, or ``EDGE_SPIKE_SHARE``
    when it is the smallest or largest value, with at least
    ``SPIKE_REST_LEVELS`` distinct values besides it.  On an even lattice (scores,
    counts) the values off the spike must have a spread: no one of them holds
    ``SPIKE_SHARE`` of them.  Values off the spike that are mostly one value (a
    credit score of 2 in 66% of the rows, 1 in 31%, 3 and 4 in the rest) are a
    second spike, not a spread: read by their robust spread, 0, every score of 3
    or 4 stood tens of spreads out and was flagged.  Such a column is a few
    steps of one number.  Codes off any even lattice (payment terms of 0, 14, 30
    and 60 days) keep their spike: read as one number, a code's distance to the
    others means nothing, and the relations between the numbers called the
    rarer codes of one segment far off.
    """
    counts = values.value_counts()
    if counts.empty:
        return None
    value, count = float(counts.index[0]), int(counts.iloc[0])
    share = count / len(values)
    at_edge = value in (float(values.min()), float(values.max()))
    if len(counts) - 1 < SPIKE_REST_LEVELS or share < (EDGE_SPIKE_SHARE if at_edge else SPIKE_SHARE):
        return None
    second_spike = int(counts.iloc[1]) >= SPIKE_SHARE * (len(values) - count)
    if second_spike and lattice_spacing(values.to_numpy(dtype=np.float64), whole_numbers=False) > 0:
        return None
    return value


def _categorical_plan(name: str, col: pd.Series) -> tuple[ColumnPlan | None, str, int]:
    counts = _as_text(col).value_counts(dropna=False)
    if len(counts) <= 1:
        return None, "constant", 0
    counts = counts[counts.index.notna()]
    kept = counts[counts >= MIN_LEVEL_COUNT]
    # Most frequent first, ties by name: the order does not depend on row order.
    order = sorted(kept.items(), key=lambda kv: (-kv[1], str(kv[0])))
    return ColumnPlan(name, "categorical", levels=[str(k) for k, _ in order]), "", 0


def _as_text(col: pd.Series) -> pd.Series:
    """Category values as text; numbers that are whole print without ``.0`` (1, not 1.0)."""
    if pd.api.types.is_float_dtype(col):
        col = col.map(lambda v: v if pd.isna(v) else (str(int(v)) if float(v).is_integer() else repr(v)))
    return col.astype("string")


def _datetime_parts(dt: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(hour of day with minutes, weekday 0-6) of parsed datetimes, NaN where missing."""
    hour = (dt.dt.hour + dt.dt.minute / 60.0).astype(float).to_numpy()
    return hour, dt.dt.day_of_week.astype(float).to_numpy()


def _date_range(parsed: pd.Series) -> list[str]:
    """The range of a datetime column's training dates (``DATE_RANGE_QUANTILES``), ISO; [] if none."""
    seen = parsed.dropna()
    if seen.empty:
        return []
    lo, hi = seen.quantile(list(DATE_RANGE_QUANTILES), interpolation="nearest")
    return [pd.Timestamp(lo).isoformat(), pd.Timestamp(hi).isoformat()]


def date_bounds(
    plan: ColumnPlan, in_sample: bool = False, among: pd.Series | None = None
) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The dates beyond which a value of a datetime column is outside its support (None: no bounds,
    a model file written before they were kept); ``in_sample``: for the rows the model was fitted
    on (``IN_SAMPLE_DATE_MARGIN_YEARS``); ``among``: for new rows, read against the range of these
    dates (the table being scored) as well as the training range, by the in-sample margin (None
    too where they are fewer than ``DATE_BATCH_MIN_ROWS``)."""
    if plan.kind != "datetime" or len(plan.date_range) != 2:
        return None
    lo, hi = (pd.Timestamp(v) for v in plan.date_range)
    years = IN_SAMPLE_DATE_MARGIN_YEARS if in_sample or among is not None else DATE_MARGIN_YEARS
    if among is not None:
        own = _date_range(among) if among.notna().sum() >= DATE_BATCH_MIN_ROWS else []
        if not own:
            return None
        lo, hi = min(lo, pd.Timestamp(own[0])), max(hi, pd.Timestamp(own[1]))
    margin = max(hi - lo, pd.Timedelta(days=365.25 * years))
    return lo - margin, hi + margin


def dates_outside(
    plan: ColumnPlan, parsed: pd.Series, in_sample: bool = False, among: pd.Series | None = None
) -> np.ndarray:
    """True where a parsed date lies outside its column's support (:func:`date_bounds`)."""
    bounds = date_bounds(plan, in_sample, among)
    if bounds is None:
        return np.zeros(len(parsed), dtype=bool)
    low, high = bounds
    return ((parsed < low) | (parsed > high)).fillna(False).to_numpy(dtype=bool)


def _apply(
    plan: ColumnPlan, col: pd.Series, dates: dict[str, pd.Series]
) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray, int, int]:
    """One column -> (numeric features, code features, missing flags, unseen levels, parse failures);
    ``dates``: the table's datetime columns, parsed."""
    if plan.kind == "numeric":
        if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
            values, failures = col.astype(float), 0
        else:
            values, failures = _numeric_parse(col, plan.number_format, plan.units, plan.clock)
        values = values.to_numpy(dtype=float, copy=True)
        missing = ~np.isfinite(values)
        values[missing] = np.nan
        return [values], [], missing, 0, failures
    if plan.kind == "datetime":
        parsed = dates[plan.name]
        hour, weekday = _datetime_parts(parsed)
        missing = np.isnan(weekday)
        codes = np.where(missing, len(WEEKDAYS) + 1, np.nan_to_num(weekday)).astype(np.int64)
        # A date outside the column's support has no weekday to be read by: its code is "other",
        # which the row's p-value reads as a wall (nrad.evidence).
        codes[dates_outside(plan, parsed)] = len(WEEKDAYS)
        since = [time_since(dates[plan.after], parsed, plan.after_unit)] if plan.after else []
        return ([hour] if plan.has_hour else []) + since, [codes], missing, 0, 0
    text = _as_text(_na_tokens_to_missing(col))
    missing = text.isna().to_numpy()
    index = {level: i for i, level in enumerate(plan.levels)}
    k = len(plan.levels)
    codes = text.map(index).to_numpy(dtype=float, na_value=np.nan)
    unseen = np.isnan(codes) & ~missing
    codes = np.where(missing, k + 1, np.where(unseen, k, np.nan_to_num(codes))).astype(np.int64)
    return [], [codes], missing, int(unseen.sum()), 0
