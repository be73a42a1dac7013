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
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nrad.errors import NradError
from nrad.extras import require
from nrad.flags import FlagRule
from nrad.model_file import model_from_bytes, model_to_bytes
from nrad.results import Outcome, as_strong_as, check_explain, notes_for, rows_to_explain, strongest
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
    ``explain=True``, ``top_features`` and ``reason``.  Add ``flagged`` with
    :func:`flag`.

    With a ``dask.distributed`` client active, the model is scattered once to
    all workers; otherwise it is embedded once in the task graph.
    """
    shipped, digest = _ship(model)
    meta = _meta(model, ddf._meta, explain)
    return ddf.map_partitions(_score_partition, shipped, digest, explain, meta=meta, align_dataframes=False)


def _ship(model: TableModel) -> tuple[Any, str]:
    import dask

    payload = model_to_bytes(model)
    digest = hashlib.sha256(payload).hexdigest()
    client = _current_client()
    if client is not None:
        return client.scatter(payload, broadcast=True, hash=False), digest
    return dask.delayed(payload, pure=True), digest


def flag(
    scored: Any,
    model: TableModel,
    fdr: float | None = None,
    contamination: float | None = None,
    rule: FlagRule | None = None,
) -> Any:
    """Add ``flagged`` by the flag rule (:class:`nrad.flags.FlagRule`: BH at ``fdr``, default 0.05,
    or the top ``contamination`` share; or a ``rule`` already made), exactly as in memory.

    Computes the cutoff now, partition by partition in order (persist ``scored``
    first to avoid scoring twice), and returns a lazy frame.
    """
    rule = FlagRule.of(fdr, contamination) if rule is None else rule
    model.require_p_values(rule)
    column = scored[rule.column]
    (n,) = _compute(column.shape[0])
    parts = column.to_delayed()
    cutoff = rule.cutoff(int(n), lambda: (np.asarray(_compute(part)[0]) for part in parts))

    def mark(part: pd.DataFrame, partition_info: dict[str, Any] | None = None) -> pd.DataFrame:
        chunk = partition_info["number"] if partition_info else 0
        return part.assign(flagged=rule.apply(part[rule.column].to_numpy(), cutoff, chunk))

    meta = scored._meta.assign(flagged=pd.Series([], dtype=bool))
    return scored.map_partitions(mark, meta=meta)


def _compute(*things: Any) -> tuple[Any, ...]:
    import dask

    return dask.compute(*things)


def score_to_parquet(
    model: TableModel,
    data: str | Path,
    out: str | Path,
    rule: FlagRule,
    explain: str = "flagged",
    scheduler: str | None = None,
    n_workers: int = 2,
    processes: bool = False,
) -> Any:
    """The ``nrad score --engine dask`` command: DATA -> a Parquet dataset directory OUT.

    Scores are written once to a scratch dataset beside OUT, the cutoff is
    computed from it, and the flagged dataset (with the flagged and top rows
    explained, by default) is written to a temp directory renamed to OUT at
    the end (an interrupted run leaves no OUT).

    Without ``scheduler`` a LocalCluster is started: by default one worker
    with ``n_workers`` threads in this process, because the work (Arrow
    decoding, torch, Parquet writing) releases the GIL and threads skip the
    worker start-up (importing torch again per process) and the copies
    between processes (``benchmarks/scale.py`` compares both); ``processes=True``
    starts ``n_workers`` single-thread worker processes instead.
    """
    require("dask.dataframe", "dask")
    require("distributed", "dask")
    import dask
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    check_explain(explain)
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
            score(ddf, model, explain == "all").to_parquet(
                scratch / "scored", write_index=False, name_function=_part_name
            )
            scored = dd.read_parquet(scratch / "scored")
            flagged = flag(scored, model, rule=rule)
            cols = list(flagged.columns)
            cols.insert(cols.index("p_value") + 1, cols.pop(cols.index("flagged")))
            flagged = flagged[cols]
            if explain == "flagged":
                weakest = _strongest(flagged).iloc[-1]
                flagged = _explain_flagged(ddf, flagged, model, weakest)
            # Pass 2: write the flagged dataset and count/rank in the same read.
            write = flagged.to_parquet(
                scratch / "final", write_index=False, compute=False, name_function=_part_name
            )
            _, n_rows, n_flagged = dask.compute(write, flagged.shape[0], flagged["flagged"].sum())
            n_rows, n_flagged = int(n_rows), int(n_flagged)
            top = _strongest(dd.read_parquet(scratch / "final"))
        os.chmod(scratch / "final", 0o777 & ~_umask())
        (scratch / "final").rename(out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if cluster is not None:
            cluster.close()
        _restore_torch_threads(torch_threads)
    # Partition indexes restart per file or block: there are no global row numbers to show.
    return Outcome(top.reset_index(drop=True), {}, rule.describe(), [out], None, notes_for(model), n_rows,
                   n_flagged, row_numbers=False, units=model.score_units())  # fmt: skip


def _strongest(scored: Any) -> pd.DataFrame:
    """The run's ``EXPLAIN_TOP`` rows with the strongest evidence: each partition's, then theirs."""
    (parts,) = _compute(scored.map_partitions(strongest, meta=scored._meta))
    return strongest(parts)


def _explain_flagged(ddf: Any, flagged: Any, model: TableModel, weakest: pd.Series) -> Any:
    """Explanations of the flagged rows and of the top rows (evidence at least as strong as the
    ``EXPLAIN_TOP``-th strongest row's), per partition."""
    import dask.dataframe as dd

    shipped, digest = _ship(model)
    meta = flagged._meta.assign(top_features=pd.Series([], dtype="str"), reason=pd.Series([], dtype="str"))
    return dd.map_partitions(_explain_partition, ddf, flagged, shipped, digest, weakest, meta=meta,
                             align_dataframes=False)  # fmt: skip


def _explain_partition(
    data: pd.DataFrame, scored: pd.DataFrame, payload: bytes, digest: str, weakest: pd.Series
) -> pd.DataFrame:
    model = _model(payload, digest)
    scored = scored.reset_index(drop=True)
    rows = rows_to_explain(scored["flagged"].to_numpy(), np.flatnonzero(as_strong_as(scored, weakest)))
    top, reason = [""] * len(scored), [""] * len(scored)
    if rows.size:
        got_top, got_reason = model.describe(data.reset_index(drop=True), rows=rows, what="partition")
        for k, i in enumerate(rows):
            top[i], reason[i] = got_top[k], got_reason[k]
    return scored.assign(top_features=top, reason=reason)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
    from nrad.io import csv_delimiter, grouped_thousands

    delimiter = csv_delimiter(data)
    # Counts written 45.011 in a file of decimal commas are read as the one-machine reader reads
    # them (nrad.io.grouped_thousands): as text, their points taken out in each partition.
    grouped = grouped_thousands(data, delimiter)
    ddf = dd.read_csv(
        data, sep=delimiter, blocksize=BLOCKSIZE, assume_missing=True, dtype=dict.fromkeys(grouped, "object")
    )
    if not grouped:
        return ddf
    meta = ddf._meta.astype(dict.fromkeys(grouped, "float64"))
    return ddf.map_partitions(_ungrouped, grouped, str(data), meta=meta)


def _ungrouped(part: pd.DataFrame, grouped: list[str], name: str) -> pd.DataFrame:
    """A partition's ``grouped`` columns as numbers, their points out; a value that is no such
    number stops the run with its column and value named (a partition's dtype cannot differ from
    the others', so it cannot stay text as the one-machine reader leaves it)."""
    out = part.copy()
    for c in grouped:
        text = out[c].astype("string").str.strip()
        values = pd.to_numeric(text.str.replace(".", "", regex=False), errors="coerce")
        bad = text.notna() & values.isna()
        if bad.any():
            raise NradError(
                f"{name}: column {c!r} writes its numbers with points between thousands (45.011), "
                f"but holds {text[bad].iloc[0]!r}; correct that value, or read the file with "
                "--engine local, which keeps such a column as text"
            )
        out[c] = values.astype("float64")
    return out


def _current_client() -> Any:
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def prepare_workers(client: Any) -> dict[str, bool]:
    """One torch thread per task, nrad imported on every worker now, and the heap reused.

    Dask runs one task per worker thread; torch's own thread pool on top
    would oversubscribe the cores (the setting is per process, so it also
    holds for a worker with several threads).  Importing nrad (torch, scikit-learn,
    pandas: seconds) here, on all workers at once, keeps it out of the first
    partition's task.  Returns, per worker, whether its heap settings were
    restored (:func:`_reuse_heap`).
    """

    def prepare() -> bool:
        import torch

        import nrad.distributed  # noqa: F401

        torch.set_num_threads(1)
        return _reuse_heap()

    return client.run(prepare)


#: glibc's ``mallopt`` parameters, and the values its dynamic rule reaches on its own.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD, _TRIM_THRESHOLD = 32 << 20, 64 << 20


def _reuse_heap() -> bool:
    """Undo ``MALLOC_TRIM_THRESHOLD_`` in this process (glibc only); True if it was set and undone.

    Dask's nanny starts worker processes with ``MALLOC_TRIM_THRESHOLD_=65536``
    (its ``distributed.nanny.pre-spawn-environ``).  Setting it also stops
    glibc from raising its mmap threshold, so every allocation over 128 KiB
    is mapped fresh and unmapped when freed: the scoring kernel's MB-sized
    intermediates then page-fault on every op, several times slower
    (benchmarks/scale.py shows it).  The thresholds are set where
    glibc's own rule takes them (32 MiB mmap, twice that trim).  By hand,
    through ctypes: no library exposes ``mallopt``, and the variable is read
    only when the process starts.
    """
    import ctypes
    import ctypes.util

    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return False
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):  # not glibc
        return False
    if mallopt is None:
        return False
    mapped = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    return bool(mapped) and bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))


def _model(payload: bytes, digest: str) -> TableModel:
    """The model shipped as ``payload``, loaded once per worker process."""
    with _LOAD_LOCK:
        model = _LOADED.get(digest)
        if model is None:
            model = model_from_bytes(payload, name=f"model {digest[:12]}")
            if len(_LOADED) >= _MAX_LOADED:
                _LOADED.pop(next(iter(_LOADED)))
            _LOADED[digest] = model
    return model


def _score_partition(part: pd.DataFrame, payload: bytes, digest: str, explain: bool) -> pd.DataFrame:
    model = _model(payload, digest)
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
        cols["reason"] = pd.Series([], dtype="str", index=index)
    return pd.DataFrame(cols, index=index)
