"""nrad.stream: sampling a table larger than memory to fit, and scoring it in batches.

Streamed scoring must give exactly the rows, scores, p-values and flags of
in-memory scoring; interrupted runs must leave no output file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scoring_tables import assert_same_rows, data, model, read, table  # noqa: F401  (data, model: fixtures)

from nrad.errors import NradError
from nrad.flags import FlagRule
from nrad.model_file import load_model, save_model
from nrad.stream import even_batch_rows, sample_table, score_file
from nrad.table import TableModel
from nrad.workflow import fit_model

NRAD = [sys.executable, "-c", "from nrad.cli import main; main()"]

# -- sampling ----------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_sample_is_exact_size_in_file_order_and_seeded(tmp_path: Path, suffix: str) -> None:
    df = table(5000, 0)
    path = tmp_path / f"t{suffix}"
    df.to_csv(path, index=False) if suffix == ".csv" else df.to_parquet(path, row_group_size=700)
    a = sample_table(path, 800, seed=1, batch_rows=333)
    b = sample_table(path, 800, seed=1, batch_rows=333)
    c = sample_table(path, 800, seed=2, batch_rows=333)
    assert len(a.frame) == 800 and a.rows_in_file == 5000 and a.info["sampled"]
    rows = a.frame["id"].str[1:].astype(int)
    assert rows.is_monotonic_increasing and rows.is_unique
    pd.testing.assert_frame_equal(a.frame, df.iloc[rows.to_numpy()].reset_index(drop=True), check_dtype=False)
    assert a.frame["id"].tolist() == b.frame["id"].tolist()
    assert a.frame["id"].tolist() != c.frame["id"].tolist()


def test_sample_is_uniform_over_the_file(tmp_path: Path) -> None:
    """Every row is kept with probability k/n, early and late rows alike (a broken
    reservoir favours one end); 400 seeds, inclusion counts per tenth of the file."""
    pd.DataFrame({"v": np.arange(200)}).to_csv(tmp_path / "t.csv", index=False)
    hits = np.zeros(200)
    for seed in range(400):
        hits[sample_table(tmp_path / "t.csv", 20, seed, batch_rows=30).frame["v"].to_numpy()] += 1
    per_tenth = hits.reshape(10, 20).sum(axis=1)  # expected 400 * 20 * 20 / 200 = 800 each
    assert np.all(np.abs(per_tenth - 800) < 5 * np.sqrt(800)), per_tenth


def test_small_file_is_read_whole(tmp_path: Path) -> None:
    table(50, 0).to_parquet(tmp_path / "t.parquet")
    s = sample_table(tmp_path / "t.parquet", 100, seed=0)
    assert len(s.frame) == 50 and not s.info["sampled"]


def test_fit_on_sample_records_it_in_the_manifest(tmp_path: Path) -> None:
    table(3000, 0).to_csv(tmp_path / "train.csv", index=False)
    fitted = fit_model(tmp_path / "train.csv", "id", random_state=4, max_epochs=2, sample_rows=500)
    save_model(fitted, tmp_path / "m.nrad")
    with zipfile.ZipFile(tmp_path / "m.nrad") as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["info"]["sample"] == {
        "rows_in_file": 3000,
        "rows_sampled": 500,
        "sampled": True,
        "seed": 4,
    }
    assert manifest["info"]["n_train_rows"] == 500


# -- streamed scoring ------------------------------------------------------


@pytest.mark.parametrize("src", [".csv", ".parquet", "dir"])
@pytest.mark.parametrize("dst", [".csv", ".parquet"])
def test_streamed_scores_equal_in_memory_scores(
    tmp_path: Path, model: TableModel, data: pd.DataFrame, src: str, dst: str
) -> None:
    if src == "dir":
        path = tmp_path / "parts"
        path.mkdir()
        # 12 unpadded names, as Dask and Spark write them: part.10 must come after part.9.
        for i, start in enumerate(range(0, len(data), 250)):
            data.iloc[start : start + 250].to_parquet(path / f"part.{i}.parquet")
    else:
        path = tmp_path / f"in{src}"
        data.to_csv(path, index=False) if src == ".csv" else data.to_parquet(path, row_group_size=450)
    explain = "flagged" if src == dst == ".csv" else "none"  # explanations cost: check them once
    ref, _ = model.score(data, explain=explain)
    out = tmp_path / f"out{dst}"
    outcome = score_file(model, path, out, FlagRule.of(), batch_rows=256, explain=explain)
    got = read(out).fillna({"top_features": "", "reason": ""}) if explain != "none" else read(out)
    assert_same_rows(got, ref)
    if explain != "none":
        assert got["top_features"].tolist() == ref["top_features"].tolist()
        assert got["reason"].tolist() == ref["reason"].tolist()
    assert outcome.n_rows == 3000 and outcome.n_flagged == int(ref["flagged"].sum()) >= 150
    # The summary's top rows carry the same flags as the rows written.
    assert outcome.top["flagged"].tolist() == ref["flagged"].iloc[outcome.top.index].tolist()


def test_streamed_contamination_flags_the_same_rows(
    tmp_path: Path, model: TableModel, data: pd.DataFrame
) -> None:
    data.to_parquet(tmp_path / "in.parquet")
    ref, _ = model.score(data, contamination=0.07, explain="none")
    outcome = score_file(model, tmp_path / "in.parquet", tmp_path / "o.csv", FlagRule.of(contamination=0.07),
                         explain="none", batch_rows=100)  # fmt: skip
    got = read(tmp_path / "o.csv")
    assert_same_rows(got, ref)
    assert outcome.top["flagged"].tolist() == ref["flagged"].iloc[outcome.top.index].tolist()
    assert "top_features" not in got.columns and got["flagged"].sum() == np.ceil(0.07 * 3000)


@pytest.mark.parametrize(
    ("n_rows", "workers", "expected"),
    [
        (1_000_000, 2, 62_500),  # 16 batches of 62,500, not 15 of 65,536 and one of 16,960
        (1_000_000, 1, 65_536),  # one worker: nothing to balance
        (100_000, 4, 25_000),
        (10, 2, 5),
        (None, 2, 65_536),  # CSV: the row count is unknown
        (0, 2, 65_536),
    ],
)
def test_batches_split_the_rows_evenly_over_the_workers(
    n_rows: int | None, workers: int, expected: int
) -> None:
    rows = even_batch_rows(n_rows, 65_536, workers)
    assert rows == expected
    if n_rows:
        batches = -(-n_rows // rows)
        assert rows <= 65_536 and batches % workers == 0 or batches < workers


def test_a_failure_mid_stream_leaves_no_output_and_no_spill(
    tmp_path: Path, model: TableModel, data: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    data.to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "out.csv").write_text("previous results\n")
    calls = {"n": 0}
    original = TableModel.score_rows

    def failing(self: TableModel, *args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 3:
            raise NradError("disk full (simulated)")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(TableModel, "score_rows", failing)
    with pytest.raises(NradError, match="simulated"):
        score_file(model, tmp_path / "in.csv", tmp_path / "out.csv", FlagRule.of(), batch_rows=500)
    assert (tmp_path / "out.csv").read_text() == "previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out.csv"]


@pytest.mark.slow
def test_sigkill_while_streaming_leaves_no_file_under_the_final_name(
    tmp_path: Path, model: TableModel
) -> None:
    save_model(model, tmp_path / "m.nrad")
    big = pd.concat([table(20_000, s) for s in range(3)], ignore_index=True)
    big.to_csv(tmp_path / "big.csv", index=False)
    cmd = [*NRAD, "score", "big.csv", "--model", "m.nrad", "--out", "out.parquet", "--batch-rows", "2000"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    # Kill once the spill has its first batches: the run is mid-stream.
    while proc.poll() is None and time.monotonic() < deadline:
        spills = list(tmp_path.glob(".out.parquet.spill.*/scored.parquet"))
        if spills and spills[0].stat().st_size > 0:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "out.parquet").exists()


def test_score_command_streams_and_fit_command_samples(tmp_path: Path) -> None:
    table(4000, 0).to_parquet(tmp_path / "train.parquet", row_group_size=1000)
    fit = subprocess.run([*NRAD, "fit", "train.parquet", "--model", "m.nrad", "--id-column", "id",
                          "--sample-rows", "600", "--max-epochs", "2"],
                         cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert fit.returncode == 0, fit.stderr
    assert "fitted on 600 rows (a uniform sample of 4000, seed 0)" in fit.stdout
    table(2500, 5, anomalies=30).to_csv(tmp_path / "new.csv", index=False)
    res = subprocess.run([*NRAD, "score", "new.csv", "--model", "m.nrad", "--out", "s.csv", "--no-explain", "--results-only",
                          "--batch-rows", "400"], cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = pd.read_csv(tmp_path / "s.csv")
    ref, _ = load_model(tmp_path / "m.nrad").score(table(2500, 5, anomalies=30), explain="none")
    assert_same_rows(got, ref)
    assert f"2500 rows scored, {int(ref['flagged'].sum())} flagged" in res.stdout
