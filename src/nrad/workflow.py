"""The command line's jobs as library functions: detect, fit, score.

Each takes paths and plain options, returns a small result object, and
writes every output atomically.  Nothing here prints: progress goes to an
optional callback.  The choice of scoring engine (in memory, streamed, Dask)
is made here, from what the caller asks for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from nrad.errors import NradError
from nrad.flags import FlagRule
from nrad.io import read_table, write_table
from nrad.results import Outcome, beside_input, check_explain, notes_for, nothing_flagged_note, shift_note
from nrad.stream import BATCH_ROWS, SAMPLE_ROWS, sample_table, score_file
from nrad.table import TableModel, fit_table

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def check_paths(inputs: dict[str, str | Path | None], outputs: dict[str, str | Path | None]) -> None:
    """Refuse an output that is an input (or the model being read) or another output.

    Paths are compared after resolving symbolic links and ``..``, and, for
    files that exist, as the same file on disk (a hard link is the same
    file).  Nothing has been written when this raises.
    """
    given_in = {k: Path(v) for k, v in inputs.items() if v is not None}
    given_out = {k: Path(v) for k, v in outputs.items() if v is not None}
    for out_name, out in given_out.items():
        for in_name, src in given_in.items():
            if _same(out, src):
                raise NradError(
                    f"{out_name} {out} is the same file as {in_name} {src}; nrad never writes over "
                    f"what it reads. Choose another {out_name}"
                )
    names = list(given_out)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if _same(given_out[a], given_out[b]):
                raise NradError(f"{a} and {b} are the same file ({given_out[a]}); give each its own path")


def _same(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def fit_model(
    train: str | Path,
    id_column: str | None = None,
    ignore: Sequence[str] = (),
    random_state: int = 0,
    verbose: bool = False,
    max_epochs: int | None = None,
    sample_rows: int = SAMPLE_ROWS,
    model_path: str | Path | None = None,
    progress: Progress = _quiet,
    detector: str = "fused",
    keep: Sequence[str] = (),
    source_split: bool = False,
) -> TableModel:
    """Fit a table model on TRAIN, or on a uniform sample of ``sample_rows`` rows if it is larger.

    The sample is drawn in one streaming pass (:func:`nrad.stream.sample_table`),
    so TRAIN never has to fit in memory; its size and seed are recorded in
    ``model.info["sample"]`` and so in the model file's manifest.  With
    ``model_path`` the model is also saved there (refused if it is TRAIN).
    """
    check_paths({"training data": train}, {"--model": model_path})
    progress(f"reading {train}")
    sample = sample_table(train, sample_rows, random_state)
    model = fit_table(sample.frame, id_column, ignore, random_state=random_state, verbose=verbose,
                      what=str(train), progress=progress, max_epochs=max_epochs,
                      detector=detector, keep=keep, source_split=source_split)  # fmt: skip
    model.info["sample"] = sample.info
    if model_path is not None:
        from nrad.model_file import save_model

        save_model(model, model_path)
    return model


def score_data(
    model: TableModel,
    data: str | Path | pd.DataFrame,
    *,
    out: str | Path | None = None,
    report: str | Path | None = None,
    rule: FlagRule | None = None,
    label_column: str | None = None,
    explain: str = "flagged",
    in_sample: bool = False,
    notes: Sequence[str] = (),
    batch_rows: int = BATCH_ROWS,
    progress: Progress = _quiet,
    with_input: bool = True,
) -> Outcome:
    """Score DATA with ``model``; write scores and the report if asked.

    ``with_input``: the scores file holds the input's columns, then the results.

    A file written only to ``out`` (no report, no labels) is streamed in
    batches of ``batch_rows``: any size in constant memory, the same rows
    as scoring in memory.  Otherwise DATA is read whole.  ``rule``: how rows are
    flagged (default: Benjamini-Hochberg at the default FDR).
    """
    rule = FlagRule.of() if rule is None else rule
    check_explain(explain)
    if (
        not in_sample
        and out is not None
        and report is None
        and label_column is None
        and not isinstance(data, pd.DataFrame)
    ):
        progress(f"scoring {data} in batches of at most {batch_rows:,} rows")
        result = score_file(model, data, out, rule, explain, batch_rows, with_input)
        top_p = result.top["p_value"].to_numpy() if "p_value" in result.top else np.zeros(0)
        top_features = result.top.get("top_features", pd.Series(dtype=str))
        notes = [
            *notes,
            *notes_for(model),
            *nothing_flagged_note(rule, top_p, result.n_rows, result.n_flagged),
            *shift_note(rule, result.n_rows, result.n_flagged, top_features),
        ]
        return Outcome(result.top, result.counts, rule.describe(), [Path(out)], None, notes,
                       result.n_rows, result.n_flagged, units=model.score_units())  # fmt: skip
    df = data if isinstance(data, pd.DataFrame) else read_table(data)
    labels = None
    if label_column is not None:
        if label_column not in df.columns:
            raise NradError(f"{data} has no label column {label_column!r}")
        labels = pd.to_numeric(df[label_column], errors="coerce").fillna(0).to_numpy().astype(int)
        df = df.drop(columns=[label_column])
    from nrad.preprocess import extra_columns

    unread = [c for c in extra_columns(model.schema, df) if c not in (model.id_column, *model.ignore)]
    if unread:
        notes = [*notes, f"columns the model was not trained on, left out: {', '.join(unread)}"]
    progress(f"scoring {len(df)} rows")
    scored, counts = model.score(
        df, rule=rule, explain=explain, what=str(data), in_sample=in_sample, progress=progress
    )
    notes = [*notes, *notes_for(model)]
    if "p_value" in scored:
        n_flagged = int(scored["flagged"].sum())
        notes += nothing_flagged_note(rule, scored["p_value"].to_numpy(), len(scored), n_flagged)
        if not in_sample:  # a table read against itself cannot differ from itself as a whole
            words = scored.get("top_features", pd.Series("", index=scored.index))[scored["flagged"]]
            notes += shift_note(rule, len(scored), n_flagged, words)
    written = []
    if out is not None:
        written.append(write_table(beside_input(df, scored, model.id_column) if with_input else scored, out))
    if report is not None:
        from nrad.report import build_report_data, write_report

        progress("writing the report")
        data_obj = build_report_data(
            model, scored, counts, rule.describe(), labels=labels, notes=notes, in_sample=in_sample
        )
        written.append(write_report(data_obj, report))
    auroc = None
    if labels is not None and 0 < labels.sum() < len(labels):
        from sklearn.metrics import roc_auc_score

        auroc = float(roc_auc_score(labels, scored["anomaly_score"]))
    return Outcome(scored, counts, rule.describe(), written, auroc, notes, units=model.score_units(in_sample))


def score_model_file(
    model_path: str | Path,
    data: str | Path,
    *,
    out: str | Path | None = None,
    report: str | Path | None = None,
    fdr: float | None = None,
    contamination: float | None = None,
    label_column: str | None = None,
    explain: str = "flagged",
    engine: str = "local",
    scheduler: str | None = None,
    workers: int = 2,
    processes: bool = False,
    batch_rows: int = BATCH_ROWS,
    progress: Progress = _quiet,
    with_input: bool = True,
) -> Outcome:
    """``nrad score``: load the model, then score in memory, streamed, or on Dask (``engine="dask"``)."""
    check_paths({"data": data, "--model": model_path}, {"--out": out, "--report": report})
    rule = FlagRule.of(fdr, contamination)  # bad levels fail before anything is read
    if engine not in ("local", "dask"):
        raise NradError(f"engine must be 'local' or 'dask', got {engine!r}")
    model = load(model_path)
    if engine == "dask":
        if out is None or report is not None or label_column is not None:
            raise NradError("--engine dask needs --out and takes no --report or --label-column")
        from nrad.distributed import score_to_parquet

        return score_to_parquet(model, data, out, rule, explain, scheduler, workers, processes)
    return score_data(model, data, out=out, report=report, rule=rule,
                      label_column=label_column, explain=explain,
                      batch_rows=batch_rows, progress=progress, with_input=with_input)  # fmt: skip


def detect(
    data: str | Path,
    *,
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
    explain: str = "flagged",
    progress: Progress = _quiet,
    detector: str = "fused",
    with_input: bool = True,
    keep: Sequence[str] = (),
    source_split: bool = False,
) -> Outcome:
    """Fit on TRAIN (or on DATA itself) and score DATA.

    Without TRAIN the model is fitted on DATA and each row is scored by the
    flow that did not see it, with its own counts left out of the category
    model (see :mod:`nrad.table`): no row vouches for itself.
    """
    check_paths(
        {"data": data, "--train": train}, {"--out": out, "--report": report, "--save-model": save_model_to}
    )
    rule = FlagRule.of(fdr, contamination)  # fail on bad levels before the fit, not after
    check_explain(explain)
    progress(f"reading {data}")
    data_df = read_table(data)
    drop = [label_column] if label_column else []
    if train is None:
        train_df = data_df
        notes = ["Fitted on the scored rows themselves: each row is scored by the part of the model "
                 "that did not see it, and its p-value is read off tails fitted without the table's "
                 "top scores."]  # fmt: skip
    else:
        progress(f"reading {train}")
        train_df = read_table(train)
        notes = []
    model = fit_table(train_df.drop(columns=[c for c in drop if c in train_df.columns]), id_column, ignore,
                      random_state=random_state, verbose=verbose, what=str(train or data), progress=progress,
                      max_epochs=max_epochs, detector=detector, keep=keep,
                      source_split=source_split)  # fmt: skip
    outcome = score_data(model, data_df, out=out, report=report, rule=rule,
                         label_column=label_column, explain=explain, in_sample=train is None,
                         notes=notes, progress=progress, with_input=with_input)  # fmt: skip
    if save_model_to is not None:
        from nrad.model_file import save_model

        outcome.written.append(save_model(model, save_model_to))
    return outcome


def load(model_path: str | Path) -> TableModel:
    """Load a ``.nrad`` model file (lazily imported: it pulls in safetensors)."""
    from nrad.model_file import load_model

    return load_model(model_path)
