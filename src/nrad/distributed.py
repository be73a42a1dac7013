"""Scoring on a Dask cluster: ``score(ddf, model)`` and the ``--engine dask`` command.

The model travels as the bytes of its ``.nrad`` file (config JSON + safetensors,
loaded on the workers by the same safe loader as a file), scattered once to every worker
(``Client.scatter(..., broadcast=True)``); each worker process loads it once
and keeps it in a small cache keyed by the bytes' SHA-256, so partitions reuse
it.  Partitions are scored with ``map_partitions`` by the same code as
single-process scoring (:meth:`nrad.table.TableModel.score_rows`), so scores
are identical row for row.

Flagging needs every row's p-value (Benjamini-Hochberg) or every score
(``contamination``); :func:`flag` computes that global cutoff with one small
reduction and adds ``flagged`` lazily.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nrad.calibration import bh_cutoff_from_counts, check_level, conformal_ranks
from nrad.errors import NradError
from nrad.model_file import model_from_bytes, model_to_bytes
from nrad.table import TableModel

#: Models loaded in this (worker) process, by SHA-256 of their file bytes.
_LOADED: dict[str, TableModel] = {}
_MAX_LOADED = 4
#: Threads of one worker share _LOADED: load each model once, not once per thread.
_LOAD_LOCK = threading.Lock()
#: Target partition size when reading files: small enough that every worker
#: gets several partitions on one machine, large enough to amortize a task.
BLOCKSIZE = "32MiB"


def score(ddf: Any, model: TableModel, explain: bool = False) -> Any:
    """Score a Dask DataFrame lazily; returns a Dask DataFrame.

    Columns are those of :meth:`TableModel.score_rows`: the id column (if
    the model has one), ``anomaly_score``, ``p_value`` and, with
    ``explain=True``, ``top_features``.  Add ``flagged`` with :func:`flag`.

    With a ``dask.distributed`` client active, the model is scattered once to
    all workers; otherwise it is embedded once in the task graph.
    """
    import dask

    payload = model_to_bytes(model)
    digest = hashlib.sha256(payload).hexdigest()
    client = _current_client()
    if client is not None:
        shipped = client.scatter(payload, broadcast=True, hash=False)
    else:
        shipped = dask.delayed(payload, pure=True)
    meta = _meta(model, ddf._meta, explain)
    return ddf.map_partitions(_score_partition, shipped, digest, explain, meta=meta, align_dataframes=False)


def flag(scored: Any, model: TableModel, fdr: float | None = None, contamination: float | None = None) -> Any:
    """Add ``flagged`` (BH at ``fdr``, default 0.05, or the top ``contamination`` share).

    Computes the cutoff now (one pass over ``scored``: persist it first to
    avoid scoring twice) and returns a lazy frame.  With ``contamination``,
    rows tied exactly at the cutoff score are all flagged.
    """
    if fdr is not None and contamination is not None:
        raise NradError("give either fdr or contamination, not both")
    if contamination is not None:
        check_level(contamination, "contamination")
        n = int(scored.shape[0].compute())
        k = int(np.ceil(contamination * n))
        cut = float(scored["anomaly_score"].nlargest(k).min().compute()) if k else np.inf
        return scored.assign(flagged=scored["anomaly_score"] >= cut)
    calib = np.asarray(model.detector.calibration_scores_)
    if calib.size == 0:
        raise NradError("this model has no calibration rows, so no p-values for --fdr; use --contamination")
    counts = scored["anomaly_score"].map_partitions(_rank_counts, calib, meta=("counts", "object"))
    total = np.sum(np.stack(counts.compute().tolist()), axis=0)
    cutoff = bh_cutoff_from_counts(total, 0.05 if fdr is None else fdr)
    return scored.assign(flagged=scored["p_value"] <= cutoff)


def score_to_parquet(
    model: TableModel,
    data: str | Path,
    out: str | Path,
    fdr: float | None = None,
    contamination: float | None = None,
    explain: bool = True,
    scheduler: str | None = None,
    n_workers: int = 2,
    processes: bool = False,
) -> Any:
    """The ``nrad score --engine dask`` command: DATA -> a Parquet dataset directory OUT.

    Scores are written once to a scratch dataset beside OUT, the cutoff is
    computed from it, and the flagged dataset is written to a temp directory
    renamed to OUT at the end (an interrupted run leaves no OUT).

    Without ``scheduler`` a LocalCluster is started: by default one worker
    with ``n_workers`` threads in this process, because the work (Arrow
    decoding, torch, Parquet writing) releases the GIL and threads skip the
    worker start-up (importing torch again per process) and the copies
    between processes (measured by ``benchmarks/scale.py``); ``processes=True``
    starts ``n_workers`` single-thread worker processes instead.
    """
    import dask
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from nrad.workflow import Outcome, _bh_power_note, _rule

    rule = _rule(fdr, contamination)
    out = Path(out)
    if out.exists():
        raise NradError(f"{out} exists; --engine dask writes a new Parquet directory, give a new path")
    out.parent.mkdir(parents=True, exist_ok=True)
    torch_threads = _torch_threads()
    cluster = None
    if scheduler is None:
        cluster = _local_cluster(LocalCluster, n_workers, processes)
    scratch = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.dask."))
    try:
        with Client(cluster if cluster is not None else scheduler) as client:
            prepare_workers(client)
            ddf = read_data(data)
            # Pass 1: score once into a scratch dataset (flagging needs every row).
            score(ddf, model, explain).to_parquet(
                scratch / "scored", write_index=False, name_function=_part_name
            )
            scored = dd.read_parquet(scratch / "scored")
            flagged = flag(scored, model, fdr, contamination)
            cols = list(flagged.columns)
            cols.insert(cols.index("p_value") + 1, cols.pop(cols.index("flagged")))
            # Pass 2: write the flagged dataset and count/rank in the same read.
            write = flagged[cols].to_parquet(scratch / "final", write_index=False, compute=False,
                                             name_function=_part_name)  # fmt: skip
            _, n_rows, n_flagged, top = dask.compute(
                write, flagged.shape[0], flagged["flagged"].sum(), flagged.nlargest(10, "anomaly_score")
            )
            n_rows, n_flagged = int(n_rows), int(n_flagged)
        (scratch / "final").rename(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if cluster is not None:
            cluster.close()
        _restore_torch_threads(torch_threads)
    notes = _bh_power_note(model, n_rows, fdr, contamination)
    # Partition indexes restart per file or block: there are no global row numbers to show.
    return Outcome(
        top.reset_index(drop=True), {}, rule, [out], None, notes, n_rows, n_flagged, row_numbers=False
    )


def _local_cluster(local_cluster: Any, n_workers: int, processes: bool) -> Any:
    # The scheduler always serves HTTP (health, metrics; the dashboard if bokeh
    # is installed): keep it on localhost and a free port, never 0.0.0.0:8787.
    common = {"dashboard_address": "127.0.0.1:0", "silence_logs": logging.ERROR}
    if processes:
        return local_cluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                             **common)  # fmt: skip
    return local_cluster(n_workers=1, threads_per_worker=n_workers, processes=False, **common)


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _restore_torch_threads(n: int) -> None:
    # A threaded local worker runs prepare_workers in this process, which sets
    # torch to one thread; give the caller its own setting back.
    import torch

    torch.set_num_threads(n)


def _part_name(i: int) -> str:
    """Zero-padded part names: any reader that sorts file names sees input order."""
    return f"part.{i:06d}.parquet"


def read_data(data: str | Path) -> Any:
    """DATA (Parquet file or directory, or CSV) as a Dask DataFrame, as ``--engine dask`` reads it."""
    import dask.dataframe as dd

    data = Path(data)
    if not data.exists():
        raise NradError(f"file {data} does not exist")
    if data.is_dir() or data.suffix.lower() in (".parquet", ".pq"):
        # Split files into partitions of about BLOCKSIZE by row groups: by
        # default one file is one partition, which leaves all but one worker idle.
        return dd.read_parquet(data, split_row_groups="infer", blocksize=BLOCKSIZE)
    from nrad.io import _csv_delimiter

    return dd.read_csv(data, sep=_csv_delimiter(data), blocksize=BLOCKSIZE, assume_missing=True)


def _current_client() -> Any:
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def prepare_workers(client: Any) -> None:
    """One torch thread per task, and nrad imported on every worker now.

    Dask runs one task per worker thread; torch's own thread pool on top
    would oversubscribe the cores (the setting is per process, so it also
    holds for a worker with several threads).  Importing nrad (torch, scikit-learn,
    pandas: seconds) here, on all workers at once, keeps it out of the first
    partition's task.
    """

    def prepare() -> None:
        import torch

        import nrad.distributed  # noqa: F401

        torch.set_num_threads(1)

    client.run(prepare)


def _score_partition(part: pd.DataFrame, payload: bytes, digest: str, explain: bool) -> pd.DataFrame:
    with _LOAD_LOCK:
        model = _LOADED.get(digest)
        if model is None:
            model = model_from_bytes(payload, name=f"model {digest[:12]}")
            if len(_LOADED) >= _MAX_LOADED:
                _LOADED.pop(next(iter(_LOADED)))
            _LOADED[digest] = model
    if len(part) == 0:
        return _meta(model, part, explain)
    scored, _ = model.score_rows(part, explain=explain, what="partition")
    scored.index = part.index
    return scored


def _meta(model: TableModel, meta_in: pd.DataFrame, explain: bool) -> pd.DataFrame:
    """An empty frame with the columns and dtypes of ``score_rows`` for these partitions."""
    index = meta_in.index[:0]
    cols: dict[str, Any] = {}
    if model.id_column is not None:
        if model.id_column not in meta_in.columns:
            raise NradError(f"the data have no id column {model.id_column!r}")
        cols[model.id_column] = meta_in[model.id_column].iloc[:0]
    cols["anomaly_score"] = pd.Series([], dtype="float64", index=index)
    cols["p_value"] = pd.Series([], dtype="float64", index=index)
    if explain:
        cols["top_features"] = pd.Series([], dtype="str", index=index)
    return pd.DataFrame(cols, index=index)


def _rank_counts(scores: pd.Series, calib: np.ndarray) -> pd.Series:
    counts = np.bincount(conformal_ranks(calib, scores.to_numpy()), minlength=calib.size + 1)
    return pd.Series([counts], dtype="object")
