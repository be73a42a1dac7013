"""What a scored table holds, whichever way it was scored (in memory, streamed, on Dask).

The result columns (``RESULT_COLUMNS``) after the input's own, the rows to
explain (the flagged ones and the strongest, :func:`rows_to_explain`), the
order a summary shows them in (:func:`strongest_first`), and what a run
reports (:class:`Outcome`, :func:`notes_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nrad.errors import NradError
from nrad.flags import FlagRule
from nrad.preprocess import KEY_GROUPS

if TYPE_CHECKING:
    from nrad.table import TableModel

#: What to explain: the flagged and top rows (default), every row, or none.
EXPLAIN_MODES = ("flagged", "all", "none")
#: Besides the flagged rows, the top rows by evidence are explained (what a summary shows).
EXPLAIN_TOP = 10


def check_explain(explain: str) -> str:
    """``explain`` if it is one of ``EXPLAIN_MODES``."""
    if explain not in EXPLAIN_MODES:
        raise NradError(f"explain must be one of {', '.join(EXPLAIN_MODES)}, got {explain!r}")
    return explain


def rows_to_explain(flags: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Positions of the rows to explain: the flagged ones (``flags``, a chunk's) and the rows at
    ``top`` (positions in the chunk of the run's ``EXPLAIN_TOP`` strongest rows), in order."""
    chosen = np.asarray(flags, dtype=bool).copy()
    chosen[np.asarray(top, dtype=np.int64)] = True
    return np.flatnonzero(chosen)


def strongest_first(scored: pd.DataFrame) -> np.ndarray:
    """Row positions by evidence: smallest p-value first (what the flags follow), then highest score.

    A row with one impossible cell can have a typical score and a tiny p-value: it comes first.
    """
    score = scored["anomaly_score"].to_numpy(dtype=np.float64)
    p = scored["p_value"].to_numpy(dtype=np.float64) if "p_value" in scored else np.zeros(len(score))
    return np.lexsort((-score, np.nan_to_num(p, nan=1.0)))


def strongest(scored: pd.DataFrame, k: int = EXPLAIN_TOP) -> pd.DataFrame:
    """The ``k`` rows with the strongest evidence (:func:`strongest_first`), strongest first."""
    return scored.iloc[strongest_first(scored)[:k]]


def as_strong_as(scored: pd.DataFrame, weakest: pd.Series) -> np.ndarray:
    """Which rows have evidence at least as strong as the row ``weakest`` (where chunks cannot be
    told apart by position: a Dask partition's rows)."""
    p = np.nan_to_num(scored["p_value"].to_numpy(dtype=np.float64), nan=1.0)
    s = scored["anomaly_score"].to_numpy(dtype=np.float64)
    p_w, s_w = float(np.nan_to_num(weakest["p_value"], nan=1.0)), float(weakest["anomaly_score"])
    return (p < p_w) | ((p == p_w) & (s >= s_w))


#: The columns a scored table gets (after the id column), in order.
RESULT_COLUMNS = ("anomaly_score", "p_value", "flagged", "top_features", "reason")


def beside_input(df: pd.DataFrame, results: pd.DataFrame, id_column: str | None) -> pd.DataFrame:
    """The input's columns, then the result columns (the id column once, as the input has it).

    An input column already named like a result column is renamed ``<name> (input)``, so that
    the results' names always mean the results.
    """
    results = results.drop(columns=[id_column] if id_column in results.columns else [])
    clash = {c: f"{c} (input)" for c in results.columns if c in df.columns}
    return pd.concat([df.rename(columns=clash), results.set_axis(df.index)], axis=1)


def with_row_numbers(rows: pd.DataFrame) -> pd.DataFrame:
    """A ``row`` column first: input positions counted from 1, like the data lines of the file."""
    return rows.set_axis(rows.index + 1).reset_index(names="row")


@dataclass(frozen=True)
class Outcome:
    """What a run produced."""

    scored: pd.DataFrame
    counts: dict[str, int]
    rule: str
    written: list[Path] = field(default_factory=list)
    auroc: float | None = None
    notes: list[str] = field(default_factory=list)
    #: Rows scored and flagged; ``scored`` then holds only the top rows (streamed runs).
    n_rows: int | None = None
    n_flagged: int | None = None
    #: Whether ``scored``'s index is the input row position (not so for Dask partitions).
    row_numbers: bool = True
    #: What one unit of anomaly_score is (``TableModel.score_units``).
    units: str = ""


def notes_for(model: TableModel) -> list[str]:
    """What the user should know about how the model read the table."""
    notes = []
    if model.info.get("id_detected"):
        notes.append(f"{model.id_column} has a different value in every row: read as the row id, not a "
                     "feature (give --id-column to choose another)")  # fmt: skip
    others = [c for c in model.info.get("identifiers", []) if c != model.id_column]
    if others:
        notes.append(f"left out as identifiers (keys, not measurements: a different value in every row, or "
                     f"whole numbers named like a key, most of them distinct or of {KEY_GROUPS} values or "
                     f"more): {', '.join(others)}; give --feature NAME to keep one as a feature")  # fmt: skip
    notes += [c.note for c in model.schema.columns if c.note]
    notes += _segment_notes(model)
    return notes


def _segment_notes(model: TableModel) -> list[str]:
    """One note per category level whose rows share values far out in numeric columns
    (:class:`nrad.cells.CellSegments`): which columns, and that their cells are not tested alone."""
    segments = model.cell_segments
    if segments is None:
        return []
    schema = model.schema
    numeric = np.asarray(schema.names)[np.asarray(schema.numeric_sources, dtype=int)]
    by_level: dict[tuple[int, int], list[str]] = {}
    for j, c, code in zip(segments.feature, segments.category, segments.code, strict=True):
        columns = by_level.setdefault((int(c), int(code)), [])
        if numeric[j] not in columns:
            columns.append(str(numeric[j]))
    notes = []
    for (c, code), columns in by_level.items():
        labels = schema.categorical_labels[c]
        level = labels[code] if code < len(labels) else "a rare level"
        name = schema.categorical_names[c]
        notes.append(f"most rows with {name} = {level} hold values of {', '.join(columns)} far beyond"
                     " the other rows': read as that level's trait, not as errors (those cells are "
                     "not tested alone; the rows still are)")  # fmt: skip
    return notes


#: Flags on at least this share of the rows a model scores (and at least ``SHIFT_MIN_ROWS`` of them)
#: say the table differs from the training rows as a whole, not row by row (:func:`shift_note`).
SHIFT_SHARE = 0.2
SHIFT_MIN_ROWS = 20


def shift_note(rule: FlagRule, n_rows: int, n_flagged: int, top_features: pd.Series) -> list[str]:
    """When a model flags a large share of the rows it scores by their p-values (a top share of the
    scores flags what it is asked to): the column most of the strongest rows name first, and what
    to do about it.

    Rows of a later year (model years 2015 to 2023 fitted, the next year's cars scored), another
    source or another unit lie beyond the training rows together: every one of them is unusual
    against the training rows, and Benjamini-Hochberg flags them all (1,000 of 1,000 cars).  Each
    flag is right as a test and useless to a person, who needs to hear what changed.
    ``top_features``: the flagged rows', or the strongest rows' (a streamed run keeps those).
    """
    if rule.kind != "fdr" or n_flagged < max(SHIFT_MIN_ROWS, SHIFT_SHARE * n_rows):
        return []
    from nrad.explain import first_feature

    first = top_features.fillna("").astype(str).map(first_feature)
    first = first[first != ""]
    if first.empty:
        return []
    column = str(first.value_counts().index[0])
    return [f"{n_flagged:,} of {n_rows:,} rows flagged, the strongest mostly for {column}: so many flags say "
            "the table differs from the training rows as a whole (a later period, another source or "
            f"unit), not row by row. Compare its {column} with the training rows'; fit the model again "
            f"on rows like these, or without the column (nrad fit ... --ignore {column})"]  # fmt: skip


def nothing_flagged_note(rule: FlagRule, p_values: np.ndarray, n_rows: int, n_flagged: int) -> list[str]:
    """When Benjamini-Hochberg flags nothing: what a flag needs at this table size, and the FDR at
    which the strongest rows would be flagged.

    ``p_values``: every row's, or only the strongest rows' (a streamed run keeps those; see
    :meth:`nrad.flags.FlagRule.level_that_flags`).
    """
    level = rule.level_that_flags(p_values, n_rows)
    if level is None or n_flagged:
        return []
    smallest = float(np.nanmin(p_values))
    needs = f"at {n_rows:,} rows a row needs a p-value of at most {rule.level / n_rows:.2g} to be flagged"
    if level >= 1:
        return [f"nothing flagged at FDR {rule.level:g}: {needs}, and no row comes near (smallest p-value "
                f"{smallest:.2g}); the table may be too small for flags"]  # fmt: skip
    return [f"nothing flagged at FDR {rule.level:g}: {needs} (the smallest here: {smallest:.2g}); "
            f"--fdr {level:.2g} would flag the strongest rows"]  # fmt: skip
