"""Benchmark harness: split generators, resume, report."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from nrad.bench.datasets import Dataset, dataset_paths, load_dataset
from nrad.bench.runner import completed_keys, run_grid
from nrad.bench.settings import SETTINGS, make_split
from nrad.bench.summary import average_ranks, write_report


def _dataset(n: int = 400, d: int = 5, rate: float = 0.1, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < rate).astype(int)
    X = rng.normal(size=(n, d)) * (1 + 4 * y[:, None]) + rng.normal(size=d) * 10
    return Dataset("toy", X, y)


@pytest.mark.parametrize("setting", SETTINGS)
def test_same_seed_same_rows_and_no_training_row_scored(setting: str) -> None:
    data = _dataset()
    a, b = make_split(data, setting, 1), make_split(data, setting, 1)
    np.testing.assert_array_equal(a.X_train, b.X_train)
    np.testing.assert_array_equal(a.X_test, b.X_test)
    if setting != "transductive":  # transductive below 10,000 rows uses every row
        assert not np.array_equal(a.X_train, make_split(data, setting, 2).X_train)
        assert not set(a.train_index) & set(a.test_index)
        assert len(a.train_index) + len(a.test_index) == len(data.y)


def test_vanilla_trains_on_half_the_normal_rows() -> None:
    data = _dataset()
    split = make_split(data, "vanilla", 0)
    assert (data.y[split.train_index] == 0).all()
    assert len(split.train_index) == (data.y == 0).sum() // 2
    assert split.y_test.sum() == data.y.sum()


@pytest.mark.parametrize("percent", [1, 5])
def test_contamination_ratio(percent: int) -> None:
    data = _dataset(n=2000, rate=0.2)
    split = make_split(data, f"contaminated-{percent}", 0)
    vanilla = make_split(data, "vanilla", 0)
    k = (data.y[split.train_index] == 1).sum()
    assert k == round(percent / (100 - percent) * len(vanilla.train_index))
    assert abs(k / len(split.train_index) - percent / 100) < 0.002
    assert set(vanilla.train_index) <= set(split.train_index)


def test_contamination_takes_at_most_half_the_anomalies() -> None:
    data = _dataset(n=2000, rate=0.01)
    split = make_split(data, "contaminated-5", 0)
    assert (data.y[split.train_index] == 1).sum() == data.y.sum() // 2


@pytest.mark.parametrize("level", [0.1, 0.5])
def test_gauss_noise_level(level: float) -> None:
    data = _dataset(n=20000, rate=0.0)
    split = make_split(data, f"noisy-gauss-{level}", 0)
    clean = make_split(data, "vanilla", 0)
    added = split.X_train - clean.X_train
    np.testing.assert_allclose(added.std(axis=0), level * data.X.std(axis=0), rtol=0.05)


@pytest.mark.parametrize("fraction", [0.25, 0.5])
def test_irrelevant_columns(fraction: float) -> None:
    data = _dataset(d=6)
    split = make_split(data, f"noisy-irrelevant-{fraction}", 0)
    n_new = split.X_train.shape[1] - 6
    assert n_new / split.X_train.shape[1] == pytest.approx(fraction, abs=0.05)
    np.testing.assert_array_equal(split.X_train[:, :6], make_split(data, "vanilla", 0).X_train)
    assert split.X_train[:, 6:].min() >= data.X.min() and split.X_train[:, 6:].max() <= data.X.max()


def test_large_datasets_are_subsampled_stratified() -> None:
    data = _dataset(n=25000, rate=0.05)
    split = make_split(data, "transductive", 0)
    assert len(split.y_test) == 10000
    assert split.y_test.mean() == pytest.approx(data.y.mean(), abs=0.001)


def _write_npz(folder: Path, name: str, data: Dataset) -> None:
    np.savez(folder / f"{name}.npz", X=data.X, y=data.y)


def test_grid_resumes_and_reports(tmp_path: Path) -> None:
    _write_npz(tmp_path, "1_toyA", _dataset(seed=1))
    _write_npz(tmp_path, "2_toyB", _dataset(seed=2))
    assert list(dataset_paths(tmp_path)) == ["toyA", "toyB"]
    out = tmp_path / "runs.csv"
    n = run_grid(tmp_path, ["vanilla"], ["iforest", "knn"], [0], out, jobs=2, time_limit=120)
    assert n == 4
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert {r["status"] for r in rows} == {"ok"}
    assert all(float(r["auroc"]) > 0.8 for r in rows)
    # A half-written last line (killed harness) is dropped, and only missing runs re-run.
    with out.open("a") as f:
        f.write("toyB,vanilla,0,hbos,3")
    assert run_grid(tmp_path, ["vanilla"], ["iforest", "knn", "hbos"], [0], out) == 2
    assert len(completed_keys(out)) == 6
    files = write_report(out, tmp_path / "RESULTS.md")
    text = (tmp_path / "RESULTS.md").read_text()
    assert "## vanilla" in text and "toyA" in text and all(p.exists() for p in files)


def test_time_limit_really_stops_a_run(tmp_path: Path) -> None:
    from nrad.bench import registry

    class Sleeper:
        def fit(self, X: np.ndarray, y: object = None) -> Sleeper:
            import time

            time.sleep(60)
            return self

    registry.register("sleeper", lambda seed, d: Sleeper())
    _write_npz(tmp_path, "toy", _dataset())
    out = tmp_path / "runs.csv"
    run_grid(tmp_path, ["vanilla"], ["sleeper"], [0], out, time_limit=1.0)
    with out.open() as f:
        (row,) = list(csv.DictReader(f))
    assert row["status"] == "timeout"
    del registry.REGISTRY["sleeper"]


def test_failed_run_gets_worst_rank() -> None:
    import pandas as pd

    table = pd.DataFrame({"a": [0.9, 0.8], "b": [0.7, np.nan], "c": [0.6, 0.5]})
    ranks = average_ranks(table)
    assert ranks["b"] == pytest.approx((2 + 3) / 2)
    assert ranks["a"] == 1.0


def test_load_dataset_drops_nan_rows(tmp_path: Path) -> None:
    X = np.ones((4, 2))
    X[1, 0] = np.nan
    np.savez(tmp_path / "3_nan.npz", X=X, y=np.array([0, 1, 0, 1]))
    data = load_dataset(tmp_path / "3_nan.npz")
    assert data.name == "nan" and data.X.shape == (3, 2) and data.X.dtype == np.float64


def test_report_leaves_out_methods_still_missing_runs() -> None:
    import pandas as pd

    from nrad.bench.summary import complete_view, setting_summary

    rows = [
        {
            "dataset": d,
            "setting": "vanilla",
            "seed": 0,
            "method": m,
            "auroc": a,
            "auprc": a,
            "fit_s": 1.0,
            "status": "ok",
        }
        for d in ("a", "b")
        for m, a in (("x", 0.9), ("y", 0.8))
    ] + [
        {
            "dataset": "a",
            "setting": "vanilla",
            "seed": 0,
            "method": "z",
            "auroc": 1.0,
            "auprc": 1.0,
            "fit_s": 1.0,
            "status": "ok",
        },
        {
            "dataset": "a",
            "setting": "vanilla",
            "seed": 1,
            "method": "x",
            "auroc": 0.1,
            "auprc": 0.1,
            "fit_s": 1.0,
            "status": "ok",
        },
    ]
    runs = pd.DataFrame(rows)
    sub, left_out = complete_view(runs, "vanilla")
    assert left_out == {"z": "1 of 2 runs"} and set(sub["seed"]) == {0}
    table = setting_summary(runs, "vanilla")
    assert list(table.index) == ["x", "y"] and table.loc["x", "mean AUROC"] == pytest.approx(0.9)


def test_report_can_show_only_some_seeds(tmp_path: Path) -> None:
    """Seed 1 finished for x only: by default x alone is ranked; with seeds=[0] both are."""
    import pandas as pd

    rows = [
        {"dataset": d, "setting": "vanilla", "seed": s, "method": m, "n_train": 10, "n_test": 10, "d": 2,
         "auroc": a, "auprc": a, "fit_s": 1.0, "score_s": 0.1, "status": "ok", "error": ""}
        for d in ("a", "b")
        for m, a, seeds in (("x", 0.9, (0, 1)), ("y", 0.8, (0,)))
        for s in seeds
    ]  # fmt: skip
    pd.DataFrame(rows).to_csv(tmp_path / "runs.csv", index=False)
    write_report(tmp_path / "runs.csv", tmp_path / "all.md")
    write_report(tmp_path / "runs.csv", tmp_path / "seed0.md", seeds=[0])
    every, seed0 = (tmp_path / "all.md").read_text(), (tmp_path / "seed0.md").read_text()
    assert "| y " not in every.split("## vanilla")[1].split("##")[0]
    assert "| y " in seed0.split("## vanilla")[1].split("##")[0]
    assert "Seeds shown: 0. The CSV holds 2 more runs" in seed0


def test_seeds_are_a_list_or_a_range() -> None:
    from nrad.bench.runner import parse_seeds
    from nrad.errors import NradError

    assert (
        parse_seeds("0,1,2") == [0, 1, 2] and parse_seeds("0-4") == [0, 1, 2, 3, 4] and parse_seeds("") == []
    )
    with pytest.raises(NradError, match="0-4"):
        parse_seeds("a-b")


BENCHMARKS = sorted(p for p in (Path(__file__).parent.parent / "benchmarks").glob("*.py"))


@pytest.mark.parametrize(
    "script", [p for p in BENCHMARKS if p.name != "nrde_params.py"], ids=lambda p: p.name
)
def test_benchmark_scripts_start(script: Path) -> None:
    """Every committed benchmark script imports and parses its arguments (a moved helper broke one once)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


class _Distance:
    """A toy detector: distance from the training mean, times ``scale``."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def fit(self, X: np.ndarray, y: object = None) -> _Distance:
        self.mean_ = X.mean(axis=0)
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return self.scale * np.linalg.norm(X - self.mean_, axis=1)


def test_fusion_puts_members_on_one_scale() -> None:
    """Each member counts by its training rows' median and IQR, not by the units of its score."""
    from nrad.bench.registry import REGISTRY, ScoreFusion, register

    register("toy-1", lambda seed, d: _Distance(1.0))
    register("toy-1000", lambda seed, d: _Distance(1000.0))
    try:
        rng = np.random.default_rng(0)
        X, new = rng.normal(size=(400, 3)), rng.normal(size=(50, 3)) * 3
        one = ScoreFusion(("toy-1",)).fit(X).decision_function(new)
        both = ScoreFusion(("toy-1", "toy-1000")).fit(X).decision_function(new)
        np.testing.assert_allclose(both, 2 * one, rtol=1e-9)
        assert {"nrde+knn+iforest", "nrde+knn"} <= set(REGISTRY)
    finally:
        del REGISTRY["toy-1"], REGISTRY["toy-1000"]
