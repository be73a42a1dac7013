"""NumPy's BLAS on one thread while the table model works, and back afterwards."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from nrad.threads import one_blas_thread


def _blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    if not _blas_threads():
        pytest.skip("NumPy reports no BLAS library to threadpoolctl")
    with threadpool_limits(2, user_api="blas"):
        yield


def test_one_thread_inside_and_the_limit_back_after(two_blas_threads: None) -> None:
    with one_blas_thread():
        assert set(_blas_threads()) == {1}
        with one_blas_thread():
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}  # still inside the outer one
    assert set(_blas_threads()) == {2}


def test_a_worker_thread_leaves_the_limit_to_the_main_thread(two_blas_threads: None) -> None:
    # Workers that each set and restored the process-wide limit would restore one another's: a
    # worker inside while the main thread is not changes nothing, and inside the main thread's
    # it does not end it when it leaves.
    seen: list[set[int]] = []

    def worker() -> None:
        with one_blas_thread():
            pass

    t = threading.Thread(target=worker)
    t.start()
    t.join(10)
    seen.append(set(_blas_threads()))
    with one_blas_thread():
        t = threading.Thread(target=worker)
        t.start()
        t.join(10)
        seen.append(set(_blas_threads()))
    seen.append(set(_blas_threads()))
    assert seen == [{2}, {1}, {2}]


def test_the_table_model_fits_and_scores_on_one_blas_thread(
    two_blas_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd

    import nrad.table as table

    seen: list[set[int]] = []
    original = table.Identities.fit.__func__

    def spy(cls: type, *args: Any, **kwargs: Any) -> Any:
        seen.append(set(_blas_threads()))
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(table.Identities, "fit", classmethod(spy))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    model = table.fit_table(frame, random_state=0)
    assert seen == [{1}]
    assert set(_blas_threads()) == {2}
    model.score(frame, fdr=0.1)
    assert set(_blas_threads()) == {2}


def test_torch_runs_on_one_thread_where_the_work_is_one_piece_and_in_the_source_influences(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The flows' narrow ops on two intra-op threads wait for a core beside a busy process: a
    single chunk scored inline, and the sources' influences after training, run on one torch
    thread, and the count is restored after."""
    import pandas as pd
    import torch

    import nrad.nrde as nrde
    from nrad.threads import run_chunks

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = run_chunks([torch.zeros(3)], lambda chunk: torch.tensor([torch.get_num_threads()]))
        assert seen[0].item() == 1 and torch.get_num_threads() == 2
        counts: list[int] = []
        original = nrde.source_influence

        def spy(*args: Any, **kwargs: Any) -> Any:
            counts.append(torch.get_num_threads())
            return original(*args, **kwargs)

        monkeypatch.setattr(nrde, "source_influence", spy)
        rng = np.random.default_rng(0)
        frame = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
        nrde.NRDE(max_epochs=2, random_state=0).fit(frame.to_numpy())
        assert counts == [1] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
