"""Everything the report shows, gathered from a model and its scores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from nrad.table import TableModel, with_row_numbers

#: Flagged rows listed in the report (the highest scores first).
MAX_TABLE_ROWS = 200


@dataclass(frozen=True)
class ReportData:
    title: str
    n_rows: int
    n_flagged: int
    rule: str
    scores: np.ndarray
    threshold: float | None
    flagged_table: pd.DataFrame
    columns: list[dict[str, str]]
    dropped: dict[str, str]
    counts: dict[str, int]
    influence: np.ndarray
    noise_sources: list[int]
    labels: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)


def build_report_data(
    model: TableModel,
    scored: pd.DataFrame,
    counts: dict[str, int],
    rule: str,
    title: str = "nrad anomaly report",
    labels: np.ndarray | None = None,
    notes: list[str] | None = None,
) -> ReportData:
    flagged = scored[scored["flagged"]].sort_values("anomaly_score", ascending=False)
    threshold = float(flagged["anomaly_score"].min()) if len(flagged) else None
    columns = [{"name": c.name, "handling": _describe(c)} for c in model.schema.columns]
    return ReportData(
        title=title,
        n_rows=len(scored),
        n_flagged=int(scored["flagged"].sum()),
        rule=rule,
        scores=scored["anomaly_score"].to_numpy(),
        threshold=threshold,
        flagged_table=with_row_numbers(flagged.head(MAX_TABLE_ROWS)),
        columns=columns,
        dropped=model.schema.dropped,
        counts=counts,
        influence=np.asarray(model.detector.source_influence_),
        noise_sources=[int(i) for i in model.detector.noise_sources_],
        labels=labels,
        notes=list(notes or []),
    )


def _describe(plan: Any) -> str:
    if plan.kind == "onehot":
        return f"categorical, one-hot ({len(plan.levels)} levels)"
    if plan.kind == "frequency":
        return f"categorical, frequency-encoded ({len(plan.levels)} levels)"
    if plan.kind == "datetime":
        return "datetime, expanded to month/day/weekday/hour"
    if plan.kind == "numeric":
        return f"numeric, missing -> median {plan.fill:.4g}"
    return plan.kind
