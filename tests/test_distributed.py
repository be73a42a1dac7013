"""nrad.distributed: scoring on a Dask cluster gives exactly the rows, scores, p-values and flags
of in-memory scoring."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scoring_tables import assert_same_rows, data, model, read, table  # noqa: F401  (data, model: fixtures)

from nrad.flags import FlagRule
from nrad.model_file import save_model
from nrad.table import TableModel

NRAD = [sys.executable, "-c", "from nrad.cli import main; main()"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as c:  # fmt: skip
        yield c


def test_dask_scores_equal_single_process_and_ship_the_model_once(
    cluster: object, model: TableModel, data: pd.DataFrame, tmp_path: Path
) -> None:
    import dask.dataframe as dd
    from distributed import Client

    from nrad import distributed

    sub = data.iloc[:800]  # explanations are costly; 800 rows over 8 partitions suffice
    sub.to_parquet(tmp_path / "in.parquet", row_group_size=100)
    ref, _ = model.score(sub, explain="all")
    with Client(cluster) as client:
        ddf = dd.read_parquet(tmp_path / "in.parquet").repartition(npartitions=8)
        scored = distributed.score(ddf, model, explain=True).persist()
        got = distributed.flag(scored, model).compute()
        cols = list(got.columns)
        cols.insert(cols.index("p_value") + 1, cols.pop(cols.index("flagged")))
        assert_same_rows(got[cols].reset_index(drop=True), ref)
        assert got["top_features"].tolist() == ref["top_features"].tolist()
        # One payload, held by both workers (broadcast), loaded once per worker.
        held = client.run(lambda: len(__import__("nrad.distributed").distributed._LOADED))
        assert sorted(held.values()) == [1, 1]
        sizes = client.run(lambda dask_worker: len(dask_worker.data))
        assert all(n >= 1 for n in sizes.values())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_worker_processes_get_their_heap_back(cluster: object) -> None:
    # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536: every MB-sized tensor of
    # the scoring kernel was then mapped and unmapped per op (3.3x slower).  Undone per worker.
    from distributed import Client

    from nrad import distributed

    with Client(cluster) as client:
        assert set(client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).values()) == {"65536"}
        assert set(distributed.prepare_workers(client).values()) == {True}


def test_no_heap_change_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    from nrad import distributed

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    assert distributed._reuse_heap() is False


def test_score_command_on_a_dask_cluster(
    cluster: object, model: TableModel, data: pd.DataFrame, tmp_path: Path
) -> None:
    save_model(model, tmp_path / "m.nrad")
    data.to_csv(tmp_path / "in.csv", index=False)
    res = subprocess.run([*NRAD, "score", "in.csv", "--model", "m.nrad", "--out", "out", "--engine", "dask",
                          "--scheduler", cluster.scheduler_address, "--contamination", "0.05", "--no-explain"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr
    ref, _ = model.score(data, contamination=0.05, explain="none")
    got = pd.read_parquet(tmp_path / "out")
    assert_same_rows(got, ref)
    assert not list(tmp_path.glob(".out.*"))  # scratch removed


@pytest.mark.slow
@pytest.mark.parametrize("processes", [False, True], ids=["threads", "processes"])
def test_score_to_parquet_starts_its_own_local_cluster(
    processes: bool, model: TableModel, data: pd.DataFrame, tmp_path: Path
) -> None:
    import torch

    from nrad.distributed import score_to_parquet

    data.to_parquet(tmp_path / "in.parquet", row_group_size=500)
    torch.set_num_threads(2)
    explain = "none" if processes else "flagged"  # threads share one model: explanations too
    outcome = score_to_parquet(model, tmp_path / "in.parquet", tmp_path / "out", FlagRule.of(0.1), explain=explain,
                               n_workers=2, processes=processes)  # fmt: skip
    ref, _ = model.score(data, fdr=0.1, explain=explain)
    got = pd.read_parquet(tmp_path / "out")
    assert_same_rows(got, ref)
    if explain != "none":
        assert got["top_features"].tolist() == ref["top_features"].tolist()
    assert outcome.n_rows == len(data) and outcome.n_flagged == int(ref["flagged"].sum())
    # A threaded worker sets torch to one thread in this very process: restored.
    assert torch.get_num_threads() == 2
    assert not list(tmp_path.glob(".out.*"))


def test_dask_without_a_cluster_embeds_the_model_once(model: TableModel, data: pd.DataFrame) -> None:
    import dask
    import dask.dataframe as dd

    from nrad import distributed

    sub = data.iloc[:600]
    ddf = dd.from_pandas(sub, npartitions=4)
    scored = distributed.score(ddf, model)
    graph = dict(scored.__dask_graph__())
    payload_keys = [k for k in graph if str(k[0] if isinstance(k, tuple) else k).startswith("bytes-")]
    tasks = [v for k, v in graph.items() if str(k[0]).startswith("_score_partition")]
    # One node holds the model bytes; each of the 4 partition tasks refers to it.
    assert len(payload_keys) == 1 and len(tasks) == 4
    assert all(payload_keys[0] in t.dependencies for t in tasks)
    with dask.config.set(scheduler="synchronous"):
        got = distributed.flag(scored, model, contamination=0.1).compute()
    ref, _ = model.score(sub, contamination=0.1, explain="none")
    np.testing.assert_array_equal(got["anomaly_score"].to_numpy(), ref["anomaly_score"].to_numpy())
    np.testing.assert_array_equal(got["flagged"].to_numpy(), ref["flagged"].to_numpy())


def test_the_dask_reader_reads_counts_with_points_between_thousands_as_the_local_one_does(tmp_path: Path) -> None:
    """A semicolon file of decimal commas writes its counts 45.011 and 839: read by Dask as by
    ``nrad.io.read_table``, forty-five thousand and eleven; a word in such a column past the
    rows that decided so stops the run, its column and value named."""
    from nrad.distributed import read_data
    from nrad.errors import NradError
    from nrad.io import read_table

    rows = ["id;price;quantity"]
    for i in range(40):
        quantity = f"{45 + i}.{11 * i:03d}" if i % 2 else str(800 + i)
        rows.append(f"{i};{i},50;{quantity}")
    path = tmp_path / "eu.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    got = read_data(path).compute()
    assert got["quantity"].tolist() == read_table(path)["quantity"].astype(float).tolist()
    assert got["quantity"].tolist()[:4] == [800, 46_011, 802, 48_033]
    # A word past the rows that decide how the file writes its numbers (nrad.io.SNIFF_ROWS).
    path.write_text("\n".join(rows + rows[1:] * 130 + ["40;1,50;n.a."]) + "\n", encoding="utf-8")
    with pytest.raises(NradError, match=r"'quantity'.*'n\.a\.'"):
        read_data(path).compute()
