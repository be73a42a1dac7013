"""Threads for nrad's numeric work: n Python threads with one torch thread each.

The flow's layers are narrow (64 units): splitting each small op over
torch's intra-op threads costs more in synchronization than it gains, and
beside another busy process a second intra-op thread waits for a core it
does not get.  So training runs on one torch thread, and scoring runs
``n`` independent pieces (chunks, batches) at once on ``n`` Python threads
with one torch thread each, ``n`` being torch's thread count (torch, Arrow
and NumPy release the GIL).  Written here, not taken from a library:
torch's thread count is one process-wide setting that must be lowered and
restored around the pool.

NumPy's BLAS runs on one thread too while the table model fits and scores
(:func:`one_blas_thread`): its linear algebra is thousands of small
products and least-squares fits (an identity searched per column, a tail
per cell), each too small to split, and split they wait for a core that
another busy process holds (``research/probe_blas_threads.py`` times both).
One thread also sums in one order on every machine, so the same seed gives
the same scores whatever the core count.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import torch

from nrad.kernel import ROW_MULTIPLE

#: Rows per chunk when scoring (chunks run in parallel, one per torch thread): four of the
#: scoring kernel's blocks.  A row's score does not depend on it.
SCORE_CHUNK = 8064


@contextlib.contextmanager
def one_torch_thread() -> Iterator[int]:
    """Set torch to one intra-op thread; yield the count it had; restore it after (per process)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield threads
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def torch_thread_pool(name: str, tasks: int | None = None) -> Iterator[ThreadPoolExecutor | None]:
    """A pool of ``min(torch's thread count, tasks)`` threads, torch on one thread meanwhile.

    Yields None when that is one thread or fewer: the caller then runs the
    work inline, the same way, torch on one thread still (a row's score never
    depends on the pool).
    """
    n = torch.get_num_threads() if tasks is None else min(torch.get_num_threads(), tasks)
    if n <= 1:
        # One task runs inline, and on one torch thread too: a 300-row table's one chunk, its ops
        # split over two threads, took 2.2 s beside a busy process where one thread takes 0.03 s.
        with one_torch_thread():
            yield None
        return
    with one_torch_thread(), ThreadPoolExecutor(n, thread_name_prefix=name) as pool:
        yield pool


def map_chunks(
    Z: torch.Tensor,
    fn: Callable[[torch.Tensor], torch.Tensor],
    chunk: int = SCORE_CHUNK,
    parallel: bool = True,
) -> np.ndarray:
    """Apply ``fn`` to row chunks without autograd, one chunk per torch thread at a time; float64 out.

    Chunks hold ``chunk`` rows, fewer when that leaves a thread idle
    (explanations score a few thousand trial rows per call).  ``fn`` must
    score each row on its own (``ScoringKernel`` does, to the bit), so the
    result depends neither on the chunks nor on how the caller batched its
    rows (streamed, Dask, in memory).
    """
    n = Z.shape[0]
    if n == 0:
        return np.zeros(0)
    per_thread = -(-n // torch.get_num_threads())
    size = min(chunk, -(-per_thread // ROW_MULTIPLE) * ROW_MULTIPLE)  # no padding but the last
    parts = run_chunks([Z[i : i + size] for i in range(0, n, size)], fn, parallel=parallel)
    return torch.cat(parts).numpy().astype(np.float64, copy=False)


def run_chunks(
    chunks: list[torch.Tensor],
    fn: Callable[[torch.Tensor], torch.Tensor],
    grad: bool = False,
    parallel: bool = True,
) -> list[torch.Tensor]:
    """``[fn(c) for c in chunks]``, in inference mode unless ``grad``, chunks in parallel.

    With torch set to n > 1 threads, n chunks run at once on n Python
    threads with one torch thread each (torch releases the GIL inside its
    ops), instead of one chunk at a time with every op split n ways: the
    flow's layers are narrow (64 units), so splitting each small op costs
    more in synchronization than it gains (benchmarks/scale.py
    compares the two).  Every chunk is computed the same way either way: a
    row's score does not depend on the thread count.
    """

    def run(chunk: torch.Tensor) -> torch.Tensor:
        # Grad and inference modes are per thread: set them in the worker.
        with contextlib.nullcontext() if grad else torch.inference_mode():
            return fn(chunk)

    if not parallel:  # one chunk at a time, each op split over torch's threads
        return [run(c) for c in chunks]
    with torch_thread_pool("nrad-chunks", len(chunks)) as pool:
        return [run(c) for c in chunks] if pool is None else list(pool.map(run, chunks))


_F = TypeVar("_F", bound=Callable[..., Any])
_blas_lock = threading.Lock()
_blas_users = 0
_blas_limits: Any = None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """NumPy's BLAS on one thread while a caller in the main thread is inside (see the module
    docstring); nested calls keep it, and the outermost one restores what it was.

    threadpoolctl's limit is one process-wide setting, restored on exit to what it was on
    entry: worker threads that each set and restored it (batches scored at once by
    :mod:`nrad.stream`) would restore one another's, and the last to leave could leave it at
    one thread for good.  So only the main thread sets it; workers run under the main
    thread's (:func:`nrad.stream.scored_batches` holds it while its workers score).
    """
    global _blas_users, _blas_limits
    from threadpoolctl import threadpool_limits

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _blas_lock:
        if _blas_users == 0:
            _blas_limits = threadpool_limits(1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limits.restore_original_limits()
                _blas_limits = None


def on_one_blas_thread(fn: _F) -> _F:
    """``fn`` run inside :func:`one_blas_thread`."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with one_blas_thread():
            return fn(*args, **kwargs)

    return wrapped  # type: ignore[return-value]
