"""Table -> float matrix: a fitted schema for real, messy tables.

Every decision is made from the training rows and kept in the schema, which
is plain JSON (``to_dict`` / ``from_dict``) so it travels in the model file.

Column handling (documented in docs/usage.md):

* numeric: kept; a text column whose non-missing values parse as numbers for
  at least ``NUMERIC_PARSE_SHARE`` of the rows is numeric (the rest, such as
  "n/a", "?" or "1,5", become missing and are counted);
* boolean: 0 / 1;
* datetime (dtype, or text that parses as dates): month, day, day of week
  and hour.  Absolute time (year, seconds since 1970) is left out on
  purpose: data scored later would lie outside the training range and every
  new row would look anomalous;
* categorical / text: one-hot when it has at most ``MAX_ONE_HOT`` levels,
  else frequency encoding (share of training rows with that level); levels
  unseen in training become all-zero / frequency 0 and are counted;
* missing values: imputed with the training median (numeric) or treated as a
  level of their own (categorical); one extra column ``__n_missing__`` holds
  each row's count of missing cells;
* constant and all-missing columns: dropped and reported.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from nrad.errors import NradError

#: Categorical columns with at most this many levels are one-hot encoded.
MAX_ONE_HOT = 10
#: Share of non-missing text values that must parse as numbers for a column to be numeric.
NUMERIC_PARSE_SHARE = 0.95
MISSING_COUNT = "__n_missing__"
#: Text that means "missing" in real exports (compared case-insensitively, stripped).
NA_TOKENS = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "-", "--", "#n/a"})


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
    """z-score with the training rows' mean and sd (BENCHMARK.md's scaling rule)."""

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
    kind: str  # numeric | boolean | datetime | onehot | frequency
    fill: float = 0.0
    levels: list[str] = field(default_factory=list)
    freqs: list[float] = field(default_factory=list)

    def outputs(self) -> list[str]:
        if self.kind == "onehot":
            return [f"{self.name}={lvl}" for lvl in self.levels]
        if self.kind == "datetime":
            return [f"{self.name}.{part}" for part in DATETIME_PARTS]
        return [self.name]


DATETIME_PARTS = ("month", "day", "dayofweek", "hour")


@dataclass
class TableSchema:
    """The fitted preprocessing: input columns, their plans, what was dropped."""

    columns: list[ColumnPlan]
    dropped: dict[str, str]
    input_columns: list[str]
    add_missing_count: bool = True
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def feature_names(self) -> list[str]:
        names = [o for c in self.columns for o in c.outputs()]
        return names + ([MISSING_COUNT] if self.add_missing_count else [])

    def source_column(self) -> list[str]:
        """For every output feature, the input column it came from."""
        names = [c.name for c in self.columns for _ in c.outputs()]
        return names + ([MISSING_COUNT] if self.add_missing_count else [])

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": [c.__dict__ for c in self.columns],
            "dropped": self.dropped,
            "input_columns": self.input_columns,
            "add_missing_count": self.add_missing_count,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableSchema:
        try:
            cols = [ColumnPlan(**c) for c in data["columns"]]
            return cls(
                cols, dict(data["dropped"]), list(data["input_columns"]), bool(data["add_missing_count"])
            )
        except (KeyError, TypeError) as exc:
            raise NradError(f"the model's preprocessing schema is malformed: {exc}") from exc


def fit_schema(df: pd.DataFrame) -> TableSchema:
    """Decide each column's handling from the training rows."""
    _check_table(df, "training data")
    plans, dropped = [], {}
    counts = {"parse_failures": 0}
    for name in df.columns:
        col = df[name]
        plan, reason, failures = _plan_column(str(name), col)
        counts["parse_failures"] += failures
        if plan is None:
            dropped[str(name)] = reason
        else:
            plans.append(plan)
    if not plans:
        raise NradError(
            "no usable column left: every column is constant or empty "
            f"({', '.join(f'{k}: {v}' for k, v in dropped.items())})"
        )
    return TableSchema(plans, dropped, [str(c) for c in df.columns], counts=counts)


def transform_table(
    schema: TableSchema, df: pd.DataFrame, what: str = "data"
) -> tuple[np.ndarray, dict[str, int]]:
    """Apply a fitted schema; return the float matrix and counts of what was repaired."""
    X, counts, _ = transform_with_missing(schema, df, what)
    return X, counts


def transform_with_missing(
    schema: TableSchema, df: pd.DataFrame, what: str = "data"
) -> tuple[np.ndarray, dict[str, int], np.ndarray]:
    """:func:`transform_table`, plus which cells were missing.

    The third result is a boolean array of shape (n_rows, len(schema.columns)),
    True where a row's value of that kept column was missing (or did not
    parse); explanations use it to credit ``__n_missing__`` to the columns.
    """
    _check_table(df, what)
    _check_columns(schema, df, what)
    parts, counts = [], {"missing_cells": 0, "unseen_levels": 0, "parse_failures": 0}
    flags = []
    for plan in schema.columns:
        block, flag, unseen, failures = _apply(plan, df[plan.name])
        parts.append(block)
        flags.append(flag)
        counts["unseen_levels"] += unseen
        counts["parse_failures"] += failures
    missing = np.column_stack(flags).astype(bool)
    n_missing = missing.sum(axis=1).astype(np.float64)
    counts["missing_cells"] = int(n_missing.sum())
    if schema.add_missing_count:
        parts.append(n_missing[:, None])
    return np.hstack(parts).astype(np.float64), counts, missing


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
    have = {str(c) for c in df.columns}
    need = set(schema.input_columns)
    missing, extra = sorted(need - have), sorted(have - need)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns: {', '.join(missing)}")
        if extra:
            parts.append(f"extra columns: {', '.join(extra)}")
        raise NradError(
            f"{what} does not match the model's columns ({'; '.join(parts)}). "
            "Score data with the columns the model was trained on (order does not matter)."
        )


def _na_tokens_to_missing(col: pd.Series) -> pd.Series:
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return col
    text = col.astype("string").str.strip().str.lower()
    return col.mask(text.isin(NA_TOKENS))


def _numeric_parse(col: pd.Series) -> tuple[pd.Series, int]:
    """Text -> numbers; NA tokens are missing, other values that do not parse
    (e.g. "1,5") become missing too and are counted as parse failures."""
    col = _na_tokens_to_missing(col)
    values = pd.to_numeric(col, errors="coerce")
    failures = int((values.isna() & col.notna()).sum())
    return values.astype(float), failures


def _as_datetime(col: pd.Series) -> pd.Series | None:
    if pd.api.types.is_datetime64_any_dtype(col):
        return col
    if col.dtype != object and not pd.api.types.is_string_dtype(col):
        return None
    sample = col.dropna().astype(str).head(200)
    if sample.empty or not sample.str.contains(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}").all():
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = pd.to_datetime(col, errors="coerce", utc=True)
    return parsed if parsed.notna().sum() >= NUMERIC_PARSE_SHARE * col.notna().sum() else None


def _plan_column(name: str, col: pd.Series) -> tuple[ColumnPlan | None, str, int]:
    if col.isna().all():
        return None, "all values missing", 0
    if pd.api.types.is_bool_dtype(col):
        kind, values, failures = "boolean", col.astype(float), 0
    elif pd.api.types.is_numeric_dtype(col):
        kind, values, failures = "numeric", col.astype(float), 0
    elif (dt := _as_datetime(col)) is not None:
        parts = _datetime_parts(dt)
        if np.all(np.nan_to_num(np.nanstd(parts, axis=0)) == 0):
            return None, "constant (no variation in month, day, weekday or hour)", 0
        fills = np.nanmedian(parts, axis=0)
        return ColumnPlan(name, "datetime", levels=[repr(float(f)) for f in fills]), "", 0
    else:
        values, failures = _numeric_parse(col)
        present = _na_tokens_to_missing(col).notna().sum()
        if present and values.notna().sum() >= NUMERIC_PARSE_SHARE * present:
            kind = "numeric"
        else:
            return _categorical_plan(name, _na_tokens_to_missing(col))
    finite = values[np.isfinite(values)]
    if finite.empty:
        return None, "no finite values", failures
    if finite.nunique() <= 1 and values.notna().all():
        return None, "constant", failures
    return ColumnPlan(name, kind, fill=float(finite.median())), "", failures


def _categorical_plan(name: str, col: pd.Series) -> tuple[ColumnPlan | None, str, int]:
    text = col.astype("string").fillna("<missing>")
    counts = text.value_counts()
    if len(counts) <= 1:
        return None, "constant", 0
    levels = [str(v) for v in counts.index]
    if len(levels) <= MAX_ONE_HOT:
        return ColumnPlan(name, "onehot", levels=levels), "", 0
    freqs = (counts / counts.sum()).tolist()
    return ColumnPlan(name, "frequency", levels=levels, freqs=[float(f) for f in freqs]), "", 0


def _datetime_parts(dt: pd.Series) -> np.ndarray:
    dt = pd.to_datetime(dt, utc=True, errors="coerce")
    cols = [dt.dt.month, dt.dt.day, dt.dt.dayofweek, dt.dt.hour]
    return np.column_stack([c.astype(float).to_numpy() for c in cols])


def _apply(plan: ColumnPlan, col: pd.Series) -> tuple[np.ndarray, np.ndarray, int, int]:
    """One column -> (block, per-row missing flags, unseen levels, parse failures)."""
    if plan.kind in ("numeric", "boolean"):
        if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
            values, failures = col.astype(float), 0
        else:
            values, failures = _numeric_parse(col)
        values = values.to_numpy(dtype=float, copy=True)
        missing = ~np.isfinite(values)
        values[missing] = plan.fill
        return values[:, None], missing.astype(float), 0, failures
    if plan.kind == "datetime":
        parts = _datetime_parts(col)
        missing = np.isnan(parts).any(axis=1)
        fills = np.array([float(f) for f in plan.levels])
        parts = np.where(np.isnan(parts), fills, parts)
        return parts, missing.astype(float), 0, 0
    col = _na_tokens_to_missing(col)
    text = col.astype("string").fillna("<missing>")
    missing = col.isna().to_numpy().astype(float)
    known = text.isin(plan.levels)
    unseen = int((~known).sum())
    if plan.kind == "onehot":
        block = np.column_stack([(text == lvl).to_numpy(dtype=float) for lvl in plan.levels])
    else:
        freq = dict(zip(plan.levels, plan.freqs, strict=True))
        block = text.map(lambda v: freq.get(v, 0.0)).to_numpy(dtype=float)[:, None]
    return block, missing, unseen, 0
