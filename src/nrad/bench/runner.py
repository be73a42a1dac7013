"""Run the benchmark grid: one worker process per run, a real time limit, resumable CSV.

Each (dataset, setting, seed, method) runs in its own process so that a run
past its time limit is really stopped (killed), and a crash takes down only
that run.  Results are appended to the CSV and flushed one row at a time, so
an interrupted grid loses at most the runs in progress and a re-run resumes.
"""

from __future__ import annotations

import csv
import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from nrad.bench.datasets import dataset_paths, load_dataset
from nrad.bench.registry import fit_and_score, get_method
from nrad.bench.settings import SETTINGS, make_split
from nrad.errors import NradError


def parse_seeds(text: str) -> list[int]:
    """Seeds from ``"0,1,2"`` or a range ``"0-4"`` (both ends included)."""
    text = text.strip()
    try:
        if "-" in text.lstrip("-"):
            lo, hi = text.split("-", 1)
            return list(range(int(lo), int(hi) + 1))
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise NradError(f"seeds must look like 0,1,2 or 0-4, got {text!r}") from None


FIELDS = (
    "dataset", "setting", "seed", "method", "n_train", "n_test", "d",
    "auroc", "auprc", "fit_s", "score_s", "status", "error",
)  # fmt: skip


@dataclass(frozen=True)
class RunKey:
    """One cell of the grid."""

    dataset: str
    setting: str
    seed: int
    method: str


def run_one(path: Path, key: RunKey) -> dict[str, Any]:
    """Fit and score one method on one split; never raises (errors become status=failed)."""
    row: dict[str, Any] = {**key.__dict__, "status": "failed", "error": ""}
    try:
        split = make_split(load_dataset(path), key.setting, key.seed)
        row.update(n_train=len(split.X_train), n_test=len(split.X_test), d=split.X_train.shape[1])
        method = get_method(key.method)
        scores, fit_s, score_s = fit_and_score(method, key.seed, split.X_train, split.X_test)
        row.update(fit_s=fit_s, score_s=score_s)
        if not np.all(np.isfinite(scores)):
            raise ValueError(f"{int((~np.isfinite(scores)).sum())} non-finite scores")
        row.update(
            auroc=roc_auc_score(split.y_test, scores),
            auprc=average_precision_score(split.y_test, scores),
            status="ok",
        )
    except Exception as exc:  # noqa: BLE001 - a failed run is a result, not a crash
        row["error"] = f"{type(exc).__name__}: {exc}"[:500]
        row["traceback"] = traceback.format_exc()
    return row


def _worker(path: Path, key: RunKey, threads: int, conn: Any) -> None:
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    with threadpool_limits(threads):
        row = run_one(path, key)
    row.pop("traceback", None)
    conn.send(row)
    conn.close()


def completed_keys(out: Path) -> set[RunKey]:
    """Runs already in the CSV (any status), so a re-run skips them."""
    if not out.exists():
        return set()
    _repair_tail(out)
    with out.open(newline="") as f:
        return {
            RunKey(r["dataset"], r["setting"], int(r["seed"]), r["method"])
            for r in csv.DictReader(f)
            if r.get("status") in ("ok", "failed", "timeout")
        }


def _repair_tail(out: Path) -> None:
    """Drop a half-written last line left by a killed run of the harness."""
    data = out.read_bytes()
    if data and not data.endswith(b"\n"):
        out.write_bytes(data[: data.rfind(b"\n") + 1])


def plan(
    data_dir: str | Path,
    settings: Iterable[str],
    methods: Iterable[str],
    seeds: Iterable[int],
    datasets: Iterable[str] | None = None,
) -> list[tuple[Path, RunKey]]:
    """Every run, seed-major (all of seed 0 first), then setting, dataset, method."""
    paths = dataset_paths(data_dir)
    if datasets is not None:
        missing = sorted(set(datasets) - set(paths))
        if missing:
            raise NradError(f"datasets not in {data_dir}: {', '.join(missing)}")
        paths = {k: v for k, v in paths.items() if k in set(datasets)}
    settings, methods, seeds = list(settings), list(methods), list(seeds)
    for s in settings:
        if s not in SETTINGS:
            raise NradError(f"unknown setting {s!r}; choose from {', '.join(SETTINGS)}")
    for m in methods:
        get_method(m)
    return [
        (paths[name], RunKey(name, setting, seed, method))
        for seed in seeds
        for setting in settings
        for name in paths
        for method in methods
    ]


def run_grid(
    data_dir: str | Path,
    settings: Iterable[str],
    methods: Iterable[str],
    seeds: Iterable[int],
    out: str | Path,
    jobs: int = 1,
    time_limit: float = 1800.0,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    datasets: Iterable[str] | None = None,
) -> int:
    """Run every missing run of the grid; return how many ran."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = completed_keys(out)
    todo = [(p, k) for p, k in plan(data_dir, settings, methods, seeds, datasets) if k not in done]
    threads = max(1, (os.cpu_count() or 1) // max(jobs, 1))
    new_file = not out.exists() or out.stat().st_size == 0
    with out.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        if new_file:
            writer.writeheader()
            f.flush()
        for row in _execute(todo, jobs, time_limit, threads):
            writer.writerow(row)
            f.flush()
            os.fsync(f.fileno())
            if on_result:
                on_result(row)
    return len(todo)


def _execute(
    todo: list[tuple[Path, RunKey]], jobs: int, time_limit: float, threads: int
) -> Iterator[dict[str, Any]]:
    ctx = mp.get_context("fork")
    pending = list(reversed(todo))
    active: list[tuple[Any, Any, RunKey, float]] = []
    try:
        while pending or active:
            while pending and len(active) < jobs:
                path, key = pending.pop()
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(path, key, threads, send), daemon=True)
                proc.start()
                send.close()
                active.append((proc, recv, key, time.monotonic()))
            time.sleep(0.05)
            still = []
            for proc, recv, key, started in active:
                row = _collect(proc, recv, key, started, time_limit)
                if row is None:
                    still.append((proc, recv, key, started))
                else:
                    yield row
            active = still
    finally:
        for proc, *_ in active:
            proc.kill()


def _collect(proc: Any, recv: Any, key: RunKey, started: float, time_limit: float) -> dict[str, Any] | None:
    """The finished run's row, a timeout/crash row, or None while it runs."""
    if recv.poll():
        try:
            row = recv.recv()
        except EOFError:
            row = {**key.__dict__, "status": "failed", "error": f"worker died (exit code {proc.exitcode})"}
        proc.join()
        return row
    if not proc.is_alive():
        proc.join()
        return {**key.__dict__, "status": "failed", "error": f"worker died (exit code {proc.exitcode})"}
    if time.monotonic() - started > time_limit:
        proc.kill()
        proc.join()
        return {**key.__dict__, "status": "timeout", "error": f"stopped after {time_limit:g} s"}
    return None
