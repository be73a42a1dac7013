"""Tables larger than memory: a one-pass uniform sample to fit on, and streamed scoring.

Both read the file in batches (:func:`nrad.io.iter_table`), so peak memory is
a few batches whatever the number of rows.

Scoring needs one global fact before any row can be flagged: the flag
rule's cutoff (:mod:`nrad.flags`) depends on every row.  So scoring runs in
two steps: (1) each batch is scored and its results appended to a spill
file beside the output; (2) the rule's cutoff is read off the spill's
column for it (row group by row group) and the spill is copied to a temp
output with ``flagged`` added, then renamed.  The flagged rows (and the top
rows) are explained in step 2: the input is read a second time beside the
spill, and only those rows are transformed again.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nrad.errors import NradError
from nrad.flags import Cutoff, FlagRule
from nrad.io import atomic_path, count_rows, iter_table, read_table
from nrad.results import RESULT_COLUMNS, check_explain, rows_to_explain, strongest, strongest_first
from nrad.table import TableModel

#: Rows per batch read from the input (and per Parquet row group written).
BATCH_ROWS = 65_536
#: Streamed batches in flight per scoring thread: 2, so each worker has its
#: next batch while the caller writes a finished one (with 1, a worker idled
#: during every write; docs/scaling.md has the before/after timing).
IN_FLIGHT_PER_THREAD = 2
#: Default fit budget: files with more rows are fitted on a uniform sample this large.
SAMPLE_ROWS = 200_000

# -- fitting on a sample ---------------------------------------------------


@dataclass(frozen=True)
class Sample:
    """A uniform random sample of a table's rows (all rows if the table is small enough)."""

    frame: pd.DataFrame
    rows_in_file: int
    seed: int

    @property
    def info(self) -> dict[str, int | bool]:
        return {
            "rows_in_file": self.rows_in_file,
            "rows_sampled": len(self.frame),
            "sampled": len(self.frame) < self.rows_in_file,
            "seed": self.seed,
        }


def sample_table(path: str | Path, max_rows: int, seed: int, batch_rows: int = BATCH_ROWS) -> Sample:
    """Read ``path`` whole if it has at most ``max_rows`` rows, else a uniform sample of ``max_rows``.

    The sample is drawn in one streaming pass by bottom-k reservoir sampling:
    every row gets an independent uniform key from a generator seeded with
    ``seed``, and the reservoir keeps the ``max_rows`` rows with the smallest
    keys (every subset of that size is equally likely).  Unlike Algorithm R
    it works batch-at-a-time with vectorized numpy and needs no per-row
    Python loop.  The sample is returned in file order.
    """
    if max_rows < 1:
        raise NradError(f"the sample size must be at least 1 row, got {max_rows}")
    known = count_rows(path)
    if known is not None and known <= max_rows:
        return Sample(read_table(path), known, seed)
    rng = np.random.default_rng(seed)
    kept: pd.DataFrame | None = None
    kept_keys = np.empty(0)
    seen = 0
    for frame in iter_table(path, batch_rows):
        frame = frame.set_axis(pd.RangeIndex(seen, seen + len(frame)))
        keys = rng.random(len(frame))
        seen += len(frame)
        merged = frame if kept is None else pd.concat([kept, frame])
        all_keys = np.concatenate([kept_keys, keys])
        if len(all_keys) > max_rows:
            keep = np.sort(np.argpartition(all_keys, max_rows - 1)[:max_rows])
            merged, all_keys = merged.iloc[keep], all_keys[keep]
        kept, kept_keys = merged, all_keys
    if kept is None:
        raise NradError(f"{path} has no rows (only a header?)")
    return Sample(kept.sort_index().reset_index(drop=True), seen, seed)


# -- streamed scoring --------------------------------------------------------


@dataclass
class StreamOutcome:
    """What a streamed scoring run produced (the rows themselves are in ``out``)."""

    n_rows: int
    n_flagged: int
    top: pd.DataFrame
    counts: dict[str, int]


def score_file(
    model: TableModel,
    data: str | Path,
    out: str | Path,
    rule: FlagRule,
    explain: str = "flagged",
    batch_rows: int = BATCH_ROWS,
    with_input: bool = False,
) -> StreamOutcome:
    """Score DATA batch by batch and write OUT (CSV or Parquet) in input order.

    Columns and values are those of :meth:`TableModel.score` on the whole
    table (``with_input``: the input's columns first).  OUT appears only when
    complete (temp file, then rename).
    """
    out = Path(out)
    model.require_p_values(rule)
    check_explain(explain)
    out.parent.mkdir(parents=True, exist_ok=True)
    spill_dir = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.spill."))
    try:
        spill = spill_dir / "scored.parquet"
        n_rows, top, counts = _score_to_spill(model, data, spill, explain == "all", batch_rows, with_input)
        cutoff = rule.cutoff(
            n_rows, lambda: (part[rule.column].to_numpy() for part in _spill_batches(spill, [rule.column]))
        )
        describe = None
        if explain == "flagged":
            describe = _describer(model, data, batch_rows, set(top.index.tolist()))
        n_flagged, top_flags = _write_flagged(spill, out, rule, cutoff, describe, set(top.index.tolist()))
    finally:
        shutil.rmtree(spill_dir, ignore_errors=True)
    top = top.iloc[strongest_first(top)]
    top.insert(top.columns.get_loc("p_value") + 1, "flagged", [top_flags[i] for i in top.index])
    if explain == "flagged":
        words, reason = model.describe(_rows_at(data, top.index, batch_rows))
        top = top.assign(top_features=words, reason=reason)
    return StreamOutcome(n_rows, n_flagged, top, counts)


def _describer(
    model: TableModel, data: str | Path, batch_rows: int, top_rows: set[int]
) -> Callable[[pd.DataFrame, np.ndarray, int], tuple[list[str], list[str]]]:
    """Explanations for a spill part's flagged rows and the run's top rows, read again from DATA.

    The input is read a second time, batch by batch alongside the spill
    (both are in input order); only rows to be explained are transformed.
    """
    rows = _input_rows(data, batch_rows)

    def describe(part: pd.DataFrame, flags: np.ndarray, start: int) -> tuple[list[str], list[str]]:
        frame = rows(len(part))
        chosen = rows_to_explain(flags, [i - start for i in top_rows if start <= i < start + len(part)])
        top, reason = [""] * len(part), [""] * len(part)
        if chosen.size:
            got_top, got_reason = model.describe(frame, rows=chosen, what=f"{data} (rows from {start + 1})")
            for k, i in enumerate(chosen):
                top[i], reason[i] = got_top[k], got_reason[k]
        return top, reason

    return describe


def _input_rows(data: str | Path, batch_rows: int) -> Callable[[int], pd.DataFrame]:
    """A reader that hands out the next ``n`` input rows at each call."""
    batches = iter_table(data, batch_rows)
    buffer: list[pd.DataFrame] = []
    held = 0

    def take(n: int) -> pd.DataFrame:
        nonlocal held
        while held < n:
            frame = next(batches)
            buffer.append(frame)
            held += len(frame)
        whole = pd.concat(buffer, ignore_index=True) if len(buffer) > 1 else buffer[0].reset_index(drop=True)
        buffer.clear()
        rest = whole.iloc[n:]
        if len(rest):
            buffer.append(rest)
        held = len(rest)
        return whole.iloc[:n]

    return take


def _rows_at(data: str | Path, positions: Any, batch_rows: int) -> pd.DataFrame:
    """The input rows at these positions, in that order (one more pass over DATA)."""
    wanted = sorted(int(i) for i in positions)
    found: dict[int, pd.DataFrame] = {}
    start = 0
    for frame in iter_table(data, batch_rows):
        for i in wanted:
            if start <= i < start + len(frame):
                found[i] = frame.iloc[[i - start]]
        start += len(frame)
        if wanted and start > wanted[-1]:
            break
    return pd.concat([found[int(i)] for i in positions], ignore_index=True)


def even_batch_rows(n_rows: int | None, batch_rows: int, workers: int) -> int:
    """Rows per batch that split ``n_rows`` into equal batches, of at most ``batch_rows``, whose
    count is a multiple of ``workers`` (``batch_rows`` when ``n_rows`` is unknown, as for CSV).

    Batches are scored ``workers`` at a time; with a short last batch, the
    other workers would idle while one scores its whole batch.
    """
    if not n_rows or workers <= 1:
        return batch_rows
    batches = workers * math.ceil(n_rows / (workers * batch_rows))
    return math.ceil(n_rows / batches)


def _score_to_spill(
    model: TableModel,
    data: str | Path,
    spill: Path,
    explain: bool,
    batch_rows: int,
    with_input: bool = False,
) -> tuple[int, pd.DataFrame, dict[str, int]]:
    """Pass 1: score every batch into the spill; keep the rows with the strongest evidence."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch

    counts: dict[str, int] = {}
    top = pd.DataFrame()
    writer = None
    start = 0

    def finish(part: pd.DataFrame) -> pa.Table:
        # On the batch's own thread (Arrow releases the GIL), so the writing thread only writes.
        return pa.Table.from_pandas(part, preserve_index=False)

    rows = even_batch_rows(count_rows(data), batch_rows, torch.get_num_threads())
    batches = scored_batches(model, prefetch(iter_table(data, rows)), explain, data, finish, with_input)
    try:
        for part, part_counts, table in batches:
            for key, value in part_counts.items():
                counts[key] = counts.get(key, 0) + value
            if writer is None:
                writer = pq.ParquetWriter(spill, table.schema)
            table = _conform(table, writer.schema, data, start)
            writer.write_table(table)
            results = part[[c for c in part.columns if c in (model.id_column, *RESULT_COLUMNS)]]
            top = _merge_top(top, results.set_axis(pd.RangeIndex(start, start + len(part))))
            start += len(part)
    finally:
        batches.close()  # now, not when collected: stops the workers, restores torch's threads
        if writer is not None:
            writer.close()
    if writer is None:
        raise NradError(f"{data} has no rows (only a header?)")
    return start, top, counts


def scored_batches(
    model: TableModel,
    frames: Iterator[pd.DataFrame],
    explain: bool,
    data: str | Path,
    finish: Callable[[pd.DataFrame], Any] = lambda part: None,
    with_input: bool = False,
) -> Iterator[tuple[pd.DataFrame, dict[str, int], Any]]:
    """``model.score_rows`` of each batch and ``finish`` of its result, in input order, n at a time.

    n is torch's thread count; each batch runs on its own Python thread with
    one torch thread, so the schema transform, the p-values and the flow all
    run n-wide (torch, Arrow and NumPy release the GIL) instead of only the
    flow's ops being split n ways (benchmarks/scale.py measures the gain).
    Up to 2n batches are in flight, so that the n workers stay busy while
    the caller handles a finished batch.  Scores do not depend on the
    thread count.  An error in a batch is raised when that batch's turn
    comes, after every batch before it.
    """
    from collections import deque

    import torch

    from nrad.threads import one_blas_thread, torch_thread_pool

    def score(frame: pd.DataFrame, start: int) -> tuple[pd.DataFrame, dict[str, int], Any]:
        what = f"{data} (rows {start + 1}-{start + len(frame)})"
        part, counts = model.score_rows(frame, explain=explain, what=what, with_input=with_input)
        return part, counts, finish(part)

    threads = torch.get_num_threads()
    start = 0
    with one_blas_thread(), torch_thread_pool("nrad-score") as pool:
        if pool is None:
            for frame in frames:
                yield score(frame, start)
                start += len(frame)
            return
        pending: deque[Any] = deque()
        for frame in frames:
            pending.append(pool.submit(score, frame, start))
            start += len(frame)
            if len(pending) >= IN_FLIGHT_PER_THREAD * threads:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def prefetch(batches: Iterator[pd.DataFrame], depth: int = 2) -> Iterator[pd.DataFrame]:
    """Read the next batches in a background thread while this one is scored.

    Parquet decoding and CSV parsing release the GIL, so reading overlaps
    with the flow's forward pass; at most ``depth`` batches wait in memory.
    Errors raised by the reader are re-raised here, in order.
    """
    import queue
    import threading

    slots: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():  # the consumer may have stopped: never block forever
            try:
                slots.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for batch in batches:
                if not put(("batch", batch)):
                    return
            put(("end", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            put(("error", exc))

    reader = threading.Thread(target=read, name="nrad-prefetch", daemon=True)
    reader.start()
    try:
        while True:
            kind, item = slots.get()
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item
    finally:
        stop.set()
        reader.join(timeout=5)


def _conform(table: Any, schema: Any, data: str | Path, start: int) -> Any:
    """Cast a batch to the first batch's schema (CSV chunks infer types independently)."""
    import pyarrow as pa

    if table.schema.equals(schema):
        return table
    try:
        return table.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise NradError(
            f"{data}: from row {start + 1} on, the id column has a different type than in the first rows "
            f"({exc}); make the id column one type (e.g. all text)"
        ) from exc


def _merge_top(top: pd.DataFrame, part: pd.DataFrame) -> pd.DataFrame:
    """The run's rows so far with the strongest evidence (:func:`nrad.table.strongest_first`)."""
    both = part if top.empty else pd.concat([top, part])
    return strongest(both)


def _spill_batches(spill: Path, columns: list[str] | None = None) -> Iterator[pd.DataFrame]:
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(spill, pre_buffer=False)
    for i in range(pf.num_row_groups):
        yield pf.read_row_group(i, columns=columns).to_pandas()


def _write_flagged(
    spill: Path,
    out: Path,
    rule: FlagRule,
    cutoff: Cutoff,
    describe: Callable[[pd.DataFrame, np.ndarray, int], tuple[list[str], list[str]]] | None = None,
    watch: set[int] = frozenset(),  # type: ignore[assignment]
) -> tuple[int, dict[int, bool]]:
    """Pass 2: copy the spill to OUT (CSV or Parquet by suffix) with ``flagged`` by ``rule`` (and,
    with ``describe``, the explanations of the rows it picks) added; return how many rows are
    flagged, and the flags of the rows in ``watch`` (positions)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n_flagged, start, watched = 0, 0, {}
    parquet = out.suffix.lower() in (".parquet", ".pq")
    with atomic_path(out) as tmp:
        writer = None
        try:
            for i, part in enumerate(_spill_batches(spill)):
                flags = rule.apply(part[rule.column].to_numpy(), cutoff, i)
                n_flagged += int(flags.sum())
                watched.update({r: bool(flags[r - start]) for r in watch if start <= r < start + len(part)})
                part.insert(part.columns.get_loc("p_value") + 1, "flagged", flags)
                if describe is not None:
                    part["top_features"], part["reason"] = describe(part, flags, start)
                start += len(part)
                if parquet:
                    table = pa.Table.from_pandas(part, preserve_index=False)
                    writer = writer or pq.ParquetWriter(tmp, table.schema)
                    writer.write_table(table)
                else:
                    part.to_csv(tmp, mode="w" if i == 0 else "a", header=i == 0, index=False)
        finally:
            if writer is not None:
                writer.close()
    return n_flagged, watched
