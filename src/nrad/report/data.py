"""Everything the report shows, gathered from a model and its scores."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nrad.results import strongest_first, with_row_numbers
from nrad.table import TableModel

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
    #: What one unit of anomaly_score is.
    units: str = ""


def build_report_data(
    model: TableModel,
    scored: pd.DataFrame,
    counts: dict[str, int],
    rule: str,
    title: str = "nrad anomaly report",
    labels: np.ndarray | None = None,
    notes: list[str] | None = None,
    in_sample: bool = False,
) -> ReportData:
    flagged = scored[scored["flagged"]]
    flagged = flagged.iloc[strongest_first(flagged)]
    threshold = float(flagged["anomaly_score"].min()) if len(flagged) else None
    columns = model.columns_summary()
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
        influence=np.asarray(model.detectors[0].source_influence_) if model.detectors else np.zeros(0),
        noise_sources=[int(i) for i in model.detectors[0].noise_sources_] if model.detectors else [],
        labels=labels,
        notes=list(notes or []),
        units=model.score_units(in_sample),
    )
