"""The command line's three jobs as library functions: detect, fit, score.

Each takes paths and plain options, returns a small result object, and
writes every output atomically.  Nothing here prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from nrad.calibration import check_level
from nrad.errors import NradError
from nrad.io import read_table, write_table
from nrad.stream import BATCH_ROWS, SAMPLE_ROWS, sample_table, score_file
from nrad.table import TableModel, fit_table


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


def _rule(fdr: float | None, contamination: float | None) -> str:
    if fdr is not None and contamination is not None:
        raise NradError("give either --fdr or --contamination, not both")
    if contamination is not None:
        return f"top {check_level(contamination, 'contamination'):.2%} of scores"
    return (
        f"Benjamini-Hochberg on conformal p-values, FDR {check_level(0.05 if fdr is None else fdr, 'fdr'):g}"
    )


def _bh_power_note(model: TableModel, m: int, fdr: float | None, contamination: float | None) -> list[str]:
    """Say so when the calibration set is too small for BH to flag a handful of rows.

    The smallest conformal p-value is 1 / (n + 1); BH at level q flags k rows
    only if that is <= q k / m, i.e. k >= m / (q (n + 1)).
    """
    if contamination is not None:
        return []
    n = len(model.detector.calibration_scores_)
    q = 0.05 if fdr is None else fdr
    k_min = int(np.ceil(m / (q * (n + 1))))
    if k_min <= 1:
        return []
    return [
        f"With {n} calibration rows the smallest possible p-value is 1/{n + 1}; Benjamini-Hochberg at "
        f"FDR {q:g} over {m} rows can only flag a group of at least {k_min} rows. To flag a few rows, "
        "fit on more normal rows (--train) or use --contamination."
    ]


def fit_model(
    train: str | Path,
    id_column: str | None = None,
    ignore: Sequence[str] = (),
    random_state: int = 0,
    verbose: bool = False,
    max_epochs: int | None = None,
    sample_rows: int = SAMPLE_ROWS,
) -> TableModel:
    """Fit a table model on TRAIN, or on a uniform sample of ``sample_rows`` rows if it is larger.

    The sample is drawn in one streaming pass (:func:`nrad.stream.sample_table`),
    so TRAIN never has to fit in memory; its size and seed are recorded in
    ``model.info["sample"]`` and so in the model file's manifest.
    """
    sample = sample_table(train, sample_rows, random_state)
    model = fit_table(
        sample.frame,
        id_column,
        ignore,
        random_state=random_state,
        verbose=verbose,
        what=str(train),
        max_epochs=max_epochs,
    )
    model.info["sample"] = sample.info
    return model


def score_table(
    model: TableModel,
    data: str | Path | pd.DataFrame,
    out: str | Path | None = None,
    report: str | Path | None = None,
    fdr: float | None = None,
    contamination: float | None = None,
    label_column: str | None = None,
    notes: Sequence[str] = (),
    explain: bool = True,
) -> Outcome:
    """Score DATA with ``model`` in memory; write scores and the report if asked."""
    rule = _rule(fdr, contamination)
    df = read_table(data) if not isinstance(data, pd.DataFrame) else data
    labels = None
    if label_column is not None:
        if label_column not in df.columns:
            raise NradError(f"{data} has no label column {label_column!r}")
        labels = pd.to_numeric(df[label_column], errors="coerce").fillna(0).to_numpy().astype(int)
        df = df.drop(columns=[label_column])
    scored, counts = model.score(df, fdr=fdr, contamination=contamination, explain=explain, what=str(data))
    notes = list(notes) + _bh_power_note(model, len(scored), fdr, contamination)
    written = []
    if out is not None:
        written.append(write_table(scored, out))
    if report is not None:
        from nrad.report import build_report_data, write_report

        data_obj = build_report_data(model, scored, counts, rule, labels=labels, notes=notes)
        written.append(write_report(data_obj, report))
    auroc = None
    if labels is not None and 0 < labels.sum() < len(labels):
        from sklearn.metrics import roc_auc_score

        auroc = float(roc_auc_score(labels, scored["anomaly_score"]))
    return Outcome(scored, counts, rule, written, auroc, notes)


def score_stream(
    model: TableModel,
    data: str | Path,
    out: str | Path,
    fdr: float | None = None,
    contamination: float | None = None,
    explain: bool = True,
    batch_rows: int = BATCH_ROWS,
) -> Outcome:
    """Score a file of any size batch by batch into OUT (see :mod:`nrad.stream`)."""
    rule = _rule(fdr, contamination)
    result = score_file(model, data, out, fdr, contamination, explain, batch_rows)
    notes = _bh_power_note(model, result.n_rows, fdr, contamination)
    return Outcome(result.top, result.counts, rule, [Path(out)], None, notes, result.n_rows, result.n_flagged)


def detect(
    data: str | Path,
    train: str | Path | None = None,
    out: str | Path | None = None,
    report: str | Path | None = None,
    fdr: float | None = None,
    contamination: float | None = None,
    save_model_to: str | Path | None = None,
    id_column: str | None = None,
    ignore: Sequence[str] = (),
    label_column: str | None = None,
    random_state: int = 0,
    verbose: bool = False,
    max_epochs: int | None = None,
) -> Outcome:
    """Fit on TRAIN (or on DATA itself: transductive) and score DATA."""
    _rule(fdr, contamination)  # fail on bad levels before the fit, not after
    data_df = read_table(data)
    extra = [label_column] if label_column else []
    if train is None:
        train_df = data_df
        notes = ["Transductive run: fitted and scored on the same rows. The calibration rows may hold "
                 "anomalies, so p-values and the FDR guarantee are only approximate."]  # fmt: skip
    else:
        train_df = read_table(train)
        notes = []
    model = fit_table(
        train_df.drop(columns=[c for c in extra if c in train_df.columns]),
        id_column, ignore, random_state=random_state, verbose=verbose, what=str(train or data),
        max_epochs=max_epochs,
    )  # fmt: skip
    outcome = score_table(model, data_df, out, report, fdr, contamination, label_column, notes)
    if save_model_to is not None:
        from nrad.model_file import save_model

        outcome.written.append(save_model(model, save_model_to))
    return outcome


def load(model_path: str | Path) -> TableModel:
    """Load a ``.nrad`` model file (lazily imported: it pulls in safetensors)."""
    from nrad.model_file import load_model

    return load_model(model_path)
