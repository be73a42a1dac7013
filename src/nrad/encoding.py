"""Rows as the table model reads them: numbers, category codes, and each number's indicator.

Every numeric column (not a datetime's hour) gets an indicator category
beside its number: the value is present, at the column's spike (a point
mass such as 0, when it has one), or missing.  That the cell is missing or
at its spike is then the category model's to judge, and the number given
that it is present is the numbers' (docs/method.md, section 7).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from nrad.errors import NradError
from nrad.preprocess import MISSING, OTHER, TableSchema

#: Codes of a number's indicator: its value is present, at the column's spike (only for a column
#: with one); the last code: the cell is missing.
PRESENT, SPIKE = 0, 1


@dataclass(frozen=True)
class Prepared:
    """Rows as the model reads them."""

    #: (n, p) numeric features after the shape transform, NaN where missing.
    y: np.ndarray
    #: (n, q) category codes: categorical features, then one indicator per numeric column.
    codes: np.ndarray
    counts: dict[str, int]
    #: (n, n_columns) missing cells per kept input column.
    missing: np.ndarray
    #: The codes the rows had when they trained the model, if they were changed since (an
    #: explanation's repair): what in-sample scoring leaves out of the counts.  None: ``codes``.
    trained_codes: np.ndarray | None = None
    #: Where the rows stand in the table they were prepared from (None: all of it, in order): a
    #: table scored against itself reads some of its rows' scores by their position
    #: (nrad.evidence.level_shifts), and an explanation reads a few of its rows.
    positions: np.ndarray | None = None
    #: (n, q) True where a datetime's date lies outside the support a table fitted on itself reads
    #: its own rows against (:func:`nrad.preprocess.dates_outside`); None: none.
    far_dates: np.ndarray | None = None
    #: (n, q) the same for new rows, read against the training dates and their own table's
    #: (:func:`nrad.preprocess.dates_outside` with ``among``); None: none.
    apart_dates: np.ndarray | None = None

    @property
    def own_codes(self) -> np.ndarray:
        return self.codes if self.trained_codes is None else self.trained_codes

    def take(self, rows: np.ndarray) -> Prepared:
        trained = None if self.trained_codes is None else self.trained_codes[rows]
        positions = np.arange(len(self.y))[rows] if self.positions is None else self.positions[rows]
        far = None if self.far_dates is None else self.far_dates[rows]
        apart = None if self.apart_dates is None else self.apart_dates[rows]
        return Prepared(
            self.y[rows], self.codes[rows], self.counts, self.missing[rows], trained, positions, far, apart
        )


def indicator_features(schema: TableSchema) -> list[int]:
    """The numeric features (positions in ``schema.numeric_sources``) that get an indicator: those
    of numeric columns, not a datetime's hour."""
    return [j for j, c in enumerate(schema.numeric_sources) if schema.columns[c].kind == "numeric"]


def indicator_labels(schema: TableSchema) -> list[list[str]]:
    """Labels of each indicator's codes: present, the spike (if the column has one), other, missing."""
    out = []
    sources = schema.numeric_sources  # a list built per call: once, not per column
    for j in indicator_features(schema):
        spike = schema.columns[sources[j]].spike
        out.append(["present", *([] if spike is None else [f"{spike:g}"]), OTHER, MISSING])
    return out


def indicator_codes(schema: TableSchema, enc: Any) -> np.ndarray:
    """(n, indicators) codes of encoded rows (see ``PRESENT``, ``SPIKE``)."""
    labels = indicator_labels(schema)
    spike = enc.at_spike if enc.at_spike is not None else np.zeros(enc.numeric.shape, dtype=bool)
    features = indicator_features(schema)
    out = np.empty((len(enc.numeric), len(features)), dtype=np.int64)
    for k, j in enumerate(features):
        absent = len(labels[k]) - 1
        out[:, k] = np.where(spike[:, j], SPIKE, np.where(np.isnan(enc.numeric[:, j]), absent, PRESENT))
    return out


def far_dates(far: np.ndarray | None, width: int) -> np.ndarray | None:
    """(n, width) the encoded rows' date flags (``Encoded.far_dates`` or ``apart_dates``) beside
    their codes and indicators (None: none)."""
    if far is None or not far.any():
        return None
    return np.hstack([far, np.zeros((len(far), width - far.shape[1]), dtype=bool)])


def as_pandas(df: Any) -> pd.DataFrame:
    """Accept pandas or polars (anything with ``to_pandas``) DataFrames."""
    if isinstance(df, pd.DataFrame):
        return df
    if hasattr(df, "to_pandas"):
        return df.to_pandas()
    raise NradError(f"expected a pandas or polars DataFrame, got {type(df).__name__}")


def drop_columns(df: pd.DataFrame, id_column: str | None, ignore: Sequence[str], what: str) -> pd.DataFrame:
    """``df`` without its id column and the columns to ignore (each must be there)."""
    wanted = ([id_column] if id_column else []) + list(ignore)
    missing = [c for c in wanted if c not in df.columns]
    if missing:
        raise NradError(
            f"{what} has no column named {', '.join(map(repr, missing))} (given as id or ignored column)"
        )
    return df.drop(columns=wanted)
