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
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import torch


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
    work inline, the same way (a row's score never depends on the pool).
    """
    n = torch.get_num_threads() if tasks is None else min(torch.get_num_threads(), tasks)
    if n <= 1:
        yield None
        return
    with one_torch_thread(), ThreadPoolExecutor(n, thread_name_prefix=name) as pool:
        yield pool
