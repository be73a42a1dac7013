"""A detector for real tables: fitted schema + NRDE + calibration, in one object.

This is what the command line runs: ``fit_table`` learns the preprocessing
and the detector from the training table; ``TableModel.score`` returns one
row per input row, in input order, with ``anomaly_score``, ``p_value``,
``flagged`` and ``top_features``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nrad.calibration import benjamini_hochberg, check_level, conformal_p_values, top_fraction
from nrad.detector import NRDE
from nrad.errors import NradError
from nrad.preprocess import MISSING_COUNT, TableSchema, fit_schema, transform_table, transform_with_missing

#: Training rows held out for conformal calibration by default.
CALIBRATION_FRACTION = 0.2
#: Fewest training rows fit_table accepts.
MIN_ROWS = 10
#: Features named in ``top_features``.
TOP_FEATURES = 3


@dataclass
class TableModel:
    """A fitted preprocessing schema and detector, plus what identifies rows."""

    schema: TableSchema
    detector: NRDE
    id_column: str | None = None
    ignore: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def features(self, df: pd.DataFrame, what: str = "data") -> tuple[np.ndarray, dict[str, int]]:
        """The float matrix the detector sees (id and ignored columns removed)."""
        X, counts, _ = self.features_with_missing(df, what)
        return X, counts

    def features_with_missing(
        self, df: pd.DataFrame, what: str = "data"
    ) -> tuple[np.ndarray, dict[str, int], np.ndarray]:
        """:meth:`features`, plus the missing-cell mask of :func:`transform_with_missing`."""
        df = as_pandas(df)
        # Ignored columns may be absent at scoring time; the id column may not.
        present = [c for c in self.ignore if c in df.columns]
        return transform_with_missing(self.schema, _drop(df, self.id_column, present, what), what)

    def score(
        self,
        df: pd.DataFrame,
        fdr: float | None = None,
        contamination: float | None = None,
        explain: bool = True,
        what: str = "data",
    ) -> tuple[pd.DataFrame, dict[str, int]]:
        """Score every row; flag by BH at ``fdr`` (default 0.05) or the top ``contamination`` share."""
        if fdr is not None and contamination is not None:
            raise NradError("give either fdr or contamination, not both")
        out, counts = self.score_rows(df, explain, what)
        scores, p = out["anomaly_score"].to_numpy(), out["p_value"].to_numpy()
        if contamination is not None:
            flags = top_fraction(scores, contamination)
        else:
            flags = benjamini_hochberg(p, 0.05 if fdr is None else check_level(fdr, "fdr"))
        out.insert(out.columns.get_loc("p_value") + 1, "flagged", flags)
        return out, counts

    def score_rows(
        self, df: pd.DataFrame, explain: bool = True, what: str = "data"
    ) -> tuple[pd.DataFrame, dict[str, int]]:
        """Per-row results that need no other row: id, anomaly_score, p_value, top_features.

        Flagging needs all rows (BH, top share); :meth:`score` adds it, and
        :mod:`nrad.stream` adds it after a streamed pass.
        """
        df = as_pandas(df)
        X, counts, missing = self.features_with_missing(df, what)
        scores = self.detector.anomaly_score(X)
        out = pd.DataFrame(index=df.index)
        if self.id_column is not None:
            out[self.id_column] = df[self.id_column]  # same index: keeps the column's dtype
        out["anomaly_score"] = scores
        calib = self.detector.calibration_scores_
        # From the scores already computed: p_values(X) would run the flow again.
        out["p_value"] = conformal_p_values(calib, scores) if len(calib) else np.full(len(X), np.nan)
        if explain:
            out["top_features"] = self.top_features(X, missing=missing)
        return out.reset_index(drop=True), counts

    def explain(self, df: pd.DataFrame, what: str = "data") -> pd.DataFrame:
        """Each row's contribution per input column (the numbers behind ``top_features``).

        One row per input row, in input order; the id column first when the
        model has one.  A row's contributions add up to its anomaly score
        minus that of the reference row (see :meth:`contributions`).
        """
        df = as_pandas(df)
        X, _, missing = self.features_with_missing(df, what)
        out = self.contributions(X, missing)
        if self.id_column is not None:
            out.insert(0, self.id_column, df[self.id_column].to_numpy())
        return out

    def contributions(self, X: np.ndarray, missing: np.ndarray | None = None) -> pd.DataFrame:
        """Contributions summed per input column (one-hot levels add up to their column).

        Integrated gradients from the training mean, except that the
        reference row has no missing cells (``__n_missing__`` = 0): a
        complete row is the natural reference for missingness, so the count
        contributes nothing to a complete row.  Given ``missing`` (the mask
        of :meth:`features_with_missing`), a row's ``__n_missing__``
        contribution is shared equally among its missing columns, and the
        column is dropped: a missing merchant is one fact, told by the
        merchant column, not split over ``merchant`` and ``__n_missing__``
        (where the two parts can be large and of opposite sign).  Each row's
        contributions still add up to its score minus the reference's.
        """
        baseline = self.detector.mean_.copy()
        if self.schema.add_missing_count:
            baseline[-1] = 0.0
        return self.by_column(self.detector.explain(X, baseline=baseline), missing)

    def by_column(self, contrib: np.ndarray, missing: np.ndarray | None = None) -> pd.DataFrame:
        """Per-feature contributions summed per input column, ``__n_missing__`` credited as
        :meth:`contributions` says (kept as its own column when ``missing`` is None)."""
        frame = pd.DataFrame(contrib, columns=self.schema.source_column())
        by_column = frame.T.groupby(level=0, sort=False).sum().T
        if missing is None or not self.schema.add_missing_count:
            return by_column
        return _credit_missing_count(by_column, missing, [c.name for c in self.schema.columns])

    def top_features(
        self, X: np.ndarray, k: int = TOP_FEATURES, missing: np.ndarray | None = None
    ) -> list[str]:
        """``"col:+1.23; col2:-0.40; ..."`` — the k columns with the largest |contribution|."""
        contrib = self.contributions(X, missing)
        values, names = contrib.to_numpy(), np.asarray(contrib.columns)
        order = np.argsort(-np.abs(values), axis=1, kind="stable")[:, :k]
        return ["; ".join(f"{names[j]}:{values[i, j]:+.2f}" for j in row) for i, row in enumerate(order)]


def _credit_missing_count(by_column: pd.DataFrame, missing: np.ndarray, columns: list[str]) -> pd.DataFrame:
    """Move each row's ``__n_missing__`` contribution to its missing columns, in equal shares."""
    count = missing.sum(axis=1)
    share = np.divide(by_column[MISSING_COUNT].to_numpy(), count, out=np.zeros(len(count)), where=count > 0)
    out = by_column.drop(columns=MISSING_COUNT)
    out[columns] += missing * share[:, None]
    return out


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


def fit_table(
    df: pd.DataFrame,
    id_column: str | None = None,
    ignore: Sequence[str] = (),
    random_state: int = 0,
    calibration_fraction: float = CALIBRATION_FRACTION,
    verbose: bool = False,
    what: str = "training data",
    **nrde_params: Any,
) -> TableModel:
    """Learn the schema from ``df`` (pandas or polars) and fit NRDE on it.

    ``calibration_fraction`` of the rows is held out for conformal p-values
    (skipped when that would be fewer than 10 rows).
    """
    features = _drop(as_pandas(df), id_column, ignore, what)
    if 0 < len(features) < MIN_ROWS:
        raise NradError(f"{what} has {len(features)} rows; NRDE needs at least {MIN_ROWS} to fit")
    schema = fit_schema(features)
    X, counts = transform_table(schema, features, what)
    frac = calibration_fraction if len(X) * calibration_fraction >= 10 else 0.0
    detector = NRDE(random_state=random_state, calibration_fraction=frac, verbose=verbose, **nrde_params).fit(
        X
    )
    info = {"n_train_rows": len(X), "preprocess_counts": {**schema.counts, **counts}}
    return TableModel(schema, detector, id_column, list(ignore), info)
