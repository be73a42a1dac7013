"""Scale benchmark: stream-score a large Parquet table, single process vs Dask.

Prints figures; it is not a test.  Steps, all in one run so that ratios
compare like with like:

1. write a synthetic Parquet table (default 5,000,000 rows x 20 numeric
   columns: 5 latent factors through a fixed nonlinear map plus noise, 0.1%
   anomalies), in row groups of 100,000 rows, never holding it whole;
2. ``nrad fit`` on it (the default 200,000-row reservoir sample), and
   ``nrad fit --detector nrde`` (the flows' density alone);
3. measure this CPU's float64 matmul GFLOP/s with torch (2048^3, best of 5)
   and count the flows' FLOPs per scored row with
   ``torch.utils.flop_counter.FlopCounterMode`` on the scoring kernel, one
   block of rows per flow (matmuls only: 2 x multiply-adds; a new row is
   scored by every cross-fitted flow; padding rows not counted), plus the
   neighbour search's matrix product (2 x reference rows x columns per fold,
   counted by hand); the upper bound on
   rows/s is their ratio (elementwise work such as tanh/exp, the search's
   selection and the isolation trees are left out, so it is generous);
4. time the flows' score by the layers' autograd (training) form, as
   scoring ran before the feature-major kernel; the kernel (rows already in
   memory) per chunk size, and against scoring one chunk at a time on all
   torch threads; then the fused score's members;
5. ``nrad score DATA --out OUT.parquet --no-explain`` in a child process,
   with each model: wall time -> rows/s, and its peak RSS (the child's own
   high-water mark, ``VmHWM``);
6. ``nrad score ... --engine dask`` (its own LocalCluster: the default one
   worker with 2 threads, and ``--processes``, 2 worker processes x 1
   thread): rows/s including cluster start, the ratio to step 5 (the
   default model), and whether the outputs are identical to step 5's;
7. the same library calls on an already running LocalCluster of each kind.

Run on an idle machine (torch's threads spin when another job holds a core):

    python benchmarks/scale.py                 # 5M rows
    python benchmarks/scale.py --rows 20000000 --workdir /big/disk
    python benchmarks/scale.py --reuse /tmp/nrad-scale-XXXX   # kept by --keep: no new fits
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# The child writes its own peak RSS (KiB) to a file on exit: VmHWM from
# /proc/self/status, the high-water mark of this program's memory.  Not
# getrusage: its ru_maxrss survives exec, so a child forked from this
# benchmark (gigabytes of rows in memory) reported the benchmark's peak;
# RUSAGE_CHILDREN would be the max over all earlier children.
CHILD = """
import re, resource, sys
from nrad.cli import main
rss_path, sys.argv = sys.argv[1], ["nrad", *sys.argv[2:]]
try:
    main()
finally:
    try:
        status = open("/proc/self/status").read()
        peak = re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)
    except OSError:  # not Linux
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    open(rss_path, "w").write(str(peak))
"""


def write_table(path: Path, rows: int, cols: int, seed: int, group: int = 100_000) -> None:
    """Synthetic rows: 5 latent factors, a fixed nonlinear map to ``cols`` columns, noise."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(5, cols))
    writer = None
    for start in range(0, rows, group):
        n = min(group, rows - start)
        z = rng.normal(size=(n, 5))
        x = np.tanh(z @ mix) + 0.3 * (z @ mix) + 0.1 * rng.normal(size=(n, cols))
        anomalous = rng.random(n) < 0.001
        x[anomalous] += rng.normal(scale=3.0, size=(anomalous.sum(), cols))
        table = pa.table({f"x{j}": x[:, j] for j in range(cols)})
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    writer.close()


def matmul_gflops(dtype: object, size: int = 2048, repeats: int = 5) -> float:
    import torch

    a = torch.randn(size, size, dtype=dtype)
    b = torch.randn(size, size, dtype=dtype)
    a @ b  # warm-up
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def numeric_rows(model: object, frame: object) -> np.ndarray:
    """The numbers the model's flows and members read (``z``), for in-memory kernel timings."""
    prep = model.prepare(frame)
    z, _ = model.numeric_z(prep.y, prep.codes)
    return model.fill(z)


def flow_flops_per_row(model: object, z: np.ndarray) -> float:
    """Matmul FLOPs per row of the flows' score (all cross-fitting flows: a new row is scored by each).

    Counted on exactly one of the scoring kernel's blocks per flow, so that no
    padding row is counted as work.
    """
    from torch.utils.flop_counter import FlopCounterMode

    from nrad.kernel import ScoringKernel, block_rows

    total = 0.0
    for det in model.detectors:
        noise = tuple(int(i) for i in det.noise_sources_)
        rows = block_rows(len(noise))
        counter = FlopCounterMode(display=False)
        with counter:
            ScoringKernel(det.flow_).pure_log_density(det._standardize(z[:rows]), noise, det.latent_tail)
        total += counter.get_total_flops() / rows
    return total


def autograd_form_rows_per_s(model: object, z: np.ndarray) -> float:
    """The flows' score by the training (autograd) form of the layers, chunks in parallel as in
    the product: what scoring ran before the feature-major kernel."""
    from nrad.sources import pure_log_density
    from nrad.threads import map_chunks

    def score(det: object, rows: np.ndarray) -> np.ndarray:
        noise, tail = tuple(int(i) for i in det.noise_sources_), det.latent_tail
        return map_chunks(det._standardize(rows), lambda x: pure_log_density(det.flow_, x, noise, tail))

    score(model.detectors[0], z[:2016])  # warm-up
    start = time.perf_counter()
    for det in model.detectors:
        score(det, z)
    return len(z) / (time.perf_counter() - start)


def neighbour_flops_per_row(model: object) -> float:
    """Matmul FLOPs per row of the neighbour search: 2 x reference rows x d per fold (brute force,
    one matrix product, nrad.neighbours; counted by hand: the 64-row groups, the selection and the
    direct distances are not in the bound)."""
    if model.fusion is None:
        return 0.0
    return float(sum(2 * ref.shape[0] * ref.shape[1] for ref in model.fusion.references))


def flows_score(model: object, z: np.ndarray, chunk: int, parallel: bool = True) -> None:
    """Score ``z`` by each of the model's flows as the product does (threads.map_chunks), with the
    given chunk size; ``parallel=False``: one chunk at a time, each op split over torch's threads."""
    from nrad.kernel import ScoringKernel
    from nrad.threads import map_chunks

    u = model.flow_input(z)
    for det in model.detectors:
        noise, kernel = tuple(int(i) for i in det.noise_sources_), ScoringKernel(det.flow_)
        map_chunks(
            det._standardize(u),
            lambda x, k=kernel, n=noise, t=det.latent_tail: k.pure_log_density(x, n, t),
            chunk,
            parallel,
        )


def op_profile(model: object, z: np.ndarray, top: int = 5) -> str:
    """Where the flows' scoring kernel spends its time: torch profiler, 5 chunks, serially."""
    from torch.profiler import ProfilerActivity, profile

    from nrad.threads import SCORE_CHUNK

    flows_score(model, z[:SCORE_CHUNK], SCORE_CHUNK, parallel=False)  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        flows_score(model, z[: 5 * SCORE_CHUNK], SCORE_CHUNK, parallel=False)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    return ", ".join(f"{e.key} {e.self_cpu_time_total / total:.0%}" for e in events[:top])


def kernel_rows_per_s(model: object, z: np.ndarray, chunk: int, serial: bool = False) -> float:
    """The flows' scoring rows/s, rows in memory; ``serial``: one chunk at a time, each op on all threads."""
    flows_score(model, z[:chunk], chunk, not serial)  # warm-up
    start = time.perf_counter()
    flows_score(model, z, chunk, not serial)
    return len(z) / (time.perf_counter() - start)


def members_rows_per_s(model: object, z: np.ndarray) -> tuple[float, float]:
    """Rows/s of the flows plus the fused members (neighbour, isolation), rows in memory; and the
    share of that time in the neighbour search."""
    start = time.perf_counter()
    model.flow_score(z)
    flows = time.perf_counter() - start
    start = time.perf_counter()
    model.fusion.members(z)
    members = time.perf_counter() - start
    start = time.perf_counter()
    for k in range(len(model.fusion.references)):
        model.fusion._neighbour_distance(k, z)
    search = time.perf_counter() - start
    return len(z) / (flows + members), search / (flows + members)


def compiled_kernel_rows_per_s(model: object, z: np.ndarray, chunk: int = 2016) -> tuple[float, ...]:
    """One flow's full log density (no noise-source products) under ``torch.compile`` (inductor,
    CPU) against the feature-major kernel's, both on one thread, full chunks only.

    Returns (compile seconds, compiled rows/s, kernel rows/s, largest absolute difference).
    """
    import torch

    from nrad.kernel import ScoringKernel
    from nrad.threads import one_torch_thread

    detector = model.detectors[0]
    flow = detector.flow_
    kernel = ScoringKernel(flow)
    Z = detector._standardize(z)
    Z = Z[: len(Z) // chunk * chunk]
    compiled = torch.compile(flow.log_prob, dynamic=False)
    with torch.inference_mode(), one_torch_thread():
        start = time.perf_counter()
        compiled(Z[:chunk])
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        out = torch.cat([compiled(Z[i : i + chunk]) for i in range(0, len(Z), chunk)])
        rate = len(Z) / (time.perf_counter() - start)
        start = time.perf_counter()
        eager = torch.cat([kernel.pure_log_density(Z[i : i + chunk], ()) for i in range(0, len(Z), chunk)])
        kernel_rate = len(Z) / (time.perf_counter() - start)
    return compile_s, rate, kernel_rate, float((out - eager).abs().max())


def explain_cost(model: object, data: Path, rows: int) -> tuple[float, float]:
    """Seconds for ``score_rows`` on ``rows`` rows without and with explanations."""
    import pyarrow.parquet as pq

    frame = pq.ParquetFile(data).read_row_group(0).to_pandas().iloc[:rows]
    model.score_rows(frame.iloc[:100], explain=True)  # warm-up
    times = []
    for explain in (False, True):
        start = time.perf_counter()
        model.score_rows(frame, explain=explain)
        times.append(time.perf_counter() - start)
    return times[0], times[1]


def run_child(args: list[str], cwd: Path) -> tuple[float, float]:
    """Run ``nrad ARGS``; return (wall seconds, the child's peak RSS in GiB)."""
    rss_file = cwd / "rss.txt"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", CHILD, str(rss_file), *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    wall = time.perf_counter() - start
    return wall, int(rss_file.read_text()) / 2**20


def dask_library_run(work: Path, processes: bool) -> tuple[float, float]:
    """Score, flag and write with nrad.distributed on a LocalCluster started beforehand.

    Returns (cluster start + worker preparation seconds, scoring seconds):
    the steady-state figure a user with a running cluster sees.  The cluster
    is 2 single-thread worker processes, or one worker with 2 threads.
    """
    import logging

    import dask
    import dask.dataframe as dd
    import torch
    from distributed import Client, LocalCluster

    from nrad import distributed
    from nrad.workflow import load

    model = load(work / "m.nrad")
    threads = torch.get_num_threads()
    start = time.perf_counter()
    shape = dict(n_workers=2, threads_per_worker=1) if processes else dict(n_workers=1, threads_per_worker=2)
    with LocalCluster(**shape, processes=processes, dashboard_address="127.0.0.1:0",
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:  # fmt: skip
        distributed.prepare_workers(client)
        started = time.perf_counter()
        ddf = distributed.read_data(work / "data.parquet")
        distributed.score(ddf, model).to_parquet(work / "lib_scored", write_index=False)
        scored = dd.read_parquet(work / "lib_scored")
        flagged = distributed.flag(scored, model, contamination=0.001)
        dask.compute(flagged.to_parquet(work / "lib_final", write_index=False, compute=False))
        done = time.perf_counter()
    torch.set_num_threads(threads)  # a threaded worker set this process to 1
    for name in ("lib_scored", "lib_final"):
        shutil.rmtree(work / name)
    return started - start, done - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--cols", type=int, default=20)
    parser.add_argument("--workdir", type=Path, default=None, help="Scratch folder (default: a temp dir).")
    parser.add_argument("--keep", action="store_true", help="Keep the scratch folder (and its m.nrad).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--explain-rows", type=int, default=200, help="Rows for the explanation cost.")
    parser.add_argument("--skip-dask", action="store_true", help="Stop after the single-process runs.")
    parser.add_argument(
        "--reuse", type=Path, default=None,
        help="A scratch folder an earlier run kept (--keep): its table and models are used as they are.",
    )  # fmt: skip
    args = parser.parse_args()
    work = args.reuse or Path(tempfile.mkdtemp(prefix="nrad-scale-", dir=args.workdir))
    try:
        report(work, args)
    finally:
        if not args.keep and args.reuse is None:
            shutil.rmtree(work, ignore_errors=True)


def fit_models(work: Path, args: argparse.Namespace) -> None:
    """Write the table and fit both models on it (each in a child process)."""
    start = time.perf_counter()
    write_table(work / "data.parquet", args.rows, args.cols, args.seed)
    size = (work / "data.parquet").stat().st_size / 2**30
    print(f"table: {args.rows:,} rows x {args.cols} columns, {size:.2f} GiB Parquet, "
          f"written in {time.perf_counter() - start:.0f} s")  # fmt: skip
    for name, extra in (("m.nrad", []), ("m_nrde.nrad", ["--detector", "nrde"])):
        fit_s, fit_rss = run_child(
            ["fit", "data.parquet", "--model", name, "--seed", str(args.seed), *extra], work
        )
        label = " ".join(["nrad fit", *extra])
        print(f"{label} (200,000-row reservoir sample): {fit_s:.0f} s, peak RSS {fit_rss:.2f} GiB")


def report(work: Path, args: argparse.Namespace) -> None:
    import pandas as pd
    import pyarrow.parquet as pq
    import torch

    from nrad.workflow import load

    print(f"machine: {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads")
    if args.reuse is not None:
        args.rows = pq.ParquetFile(work / "data.parquet").metadata.num_rows
        print(f"table and models reused from an earlier run ({args.rows:,} rows; not fitted again)")
    else:
        fit_models(work, args)
    model = load(work / "m.nrad")
    z = numeric_rows(model, pq.ParquetFile(work / "data.parquet").read_row_group(0).to_pandas())
    z = np.tile(z, (4, 1))  # 400,000 rows in memory for the kernel timings
    f64 = matmul_gflops(torch.float64)
    f32 = matmul_gflops(torch.float32)
    flows = flow_flops_per_row(model, z)
    search = neighbour_flops_per_row(model)
    bound, fused_bound = f64 * 1e9 / flows, f64 * 1e9 / (flows + search)
    n_flows = len(model.detectors)
    print(f"matmul: {f64:.1f} GFLOP/s float64, {f32:.1f} GFLOP/s float32 (2048^3, best of 5)")
    print(f"model: {n_flows} cross-fitted flows, {flows:,.0f} matmul FLOPs per row together (float64, "
          f"{len(model.detectors[0].noise_sources_)} noise sources) -> bound {bound:,.0f} rows/s; "
          f"with the neighbour search ({search:,.0f} more) {fused_bound:,.0f} rows/s")  # fmt: skip
    before = autograd_form_rows_per_s(model, z[:100_000])
    print(f"flows' score by the autograd (training) form of the layers, rows in memory: {before:,.0f} rows/s "
          f"({before / bound:.0%} of bound)")  # fmt: skip
    kernel = {chunk: kernel_rows_per_s(model, z, chunk) for chunk in (2016, 8064, 32256)}
    print("flows' scoring kernel (feature-major), rows in memory: " + ", ".join(
        f"chunk {c}: {r:,.0f} rows/s ({r / bound:.0%} of bound)" for c, r in kernel.items()))  # fmt: skip
    serial = kernel_rows_per_s(model, z, 8064, serial=True)
    print(f"  (chunks run {torch.get_num_threads()} at a time, one torch thread each; one chunk at a time "
          f"with each op on {torch.get_num_threads()} threads instead: {serial:,.0f} rows/s, "
          f"{serial / bound:.0%} of bound)")  # fmt: skip
    print("flows' kernel time by op (self CPU): " + op_profile(model, z))
    fused, search_share = members_rows_per_s(model, z[:100_000])
    print(
        f"fused score (flows + neighbour + isolation), rows in memory: {fused:,.0f} rows/s "
        f"({fused / fused_bound:.0%} of its bound); the neighbour search {search_share:.0%} of the time"
    )
    compile_s, compiled, eager, diff = compiled_kernel_rows_per_s(model, z)
    print(f"one flow's full log density on one thread (no noise-source products), chunk 2016: "
          f"torch.compile (inductor) {compiled:,.0f} rows/s after {compile_s:.0f} s compiling, "
          f"the kernel {eager:,.0f} rows/s; max |diff| {diff:.1e}")  # fmt: skip
    del z
    plain, explained = explain_cost(model, work / "data.parquet", args.explain_rows)
    print(f"explanations (top_features, {args.explain_rows:,} rows): {explained:.2f} s vs {plain:.2f} s "
          f"without, {explained / plain:.0f}x")  # fmt: skip

    models = (("m_nrde.nrad", "--detector nrde", bound), ("m.nrad", "fused", fused_bound))
    for name, what, rate_bound in models:
        single_s, single_rss = run_child(
            ["score", "data.parquet", "--model", name, "--out", "single.parquet", "--no-explain",
             "--contamination", "0.001"], work)  # fmt: skip
        single = args.rows / single_s
        print(f"single process (nrad score, streamed Parquet in and out; {what} model): {single_s:.1f} s, "
              f"{single:,.0f} rows/s ({single / rate_bound:.0%} of its FLOP bound), "
              f"peak RSS {single_rss:.2f} GiB")  # fmt: skip

    if args.skip_dask:
        return
    a = pd.read_parquet(work / "single.parquet", columns=["anomaly_score", "flagged"])
    kinds = (("1 worker x 2 threads, the default", []), ("2 worker processes x 1 thread", ["--processes"]))
    for label, extra in kinds:
        out = "dask_out" + "_".join(extra)
        dask_s, _ = run_child(
            ["score", "data.parquet", "--model", "m.nrad", "--out", out, "--no-explain", "--engine", "dask",
             "--workers", "2", "--contamination", "0.001", *extra], work)  # fmt: skip
        b = pd.read_parquet(work / out, columns=["anomaly_score", "flagged"])
        same, flags = (len(a) == len(b) and bool((a[c].to_numpy() == b[c].to_numpy()).all())
                       for c in ("anomaly_score", "flagged"))  # fmt: skip
        shutil.rmtree(work / out)
        rate = args.rows / dask_s
        print(f"dask LocalCluster ({label}; nrad score --engine dask, incl. cluster start): {dask_s:.1f} s, "
              f"{rate:,.0f} rows/s, {rate / single:.0%} of single-process; identical scores: {same}; "
              f"same flags: {flags}")  # fmt: skip
    for label, processes in (("1 worker x 2 threads", False), ("2 worker processes x 1 thread", True)):
        start_s, steady_s = dask_library_run(work, processes)
        steady = args.rows / steady_s
        print(f"dask, library calls on a running LocalCluster ({label}; start {start_s:.1f} s not counted): "
              f"{steady_s:.1f} s, {steady:,.0f} rows/s, {steady / single:.0%} of single-process")  # fmt: skip


if __name__ == "__main__":
    main()
