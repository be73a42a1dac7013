"""The commands a user touches, on a messy CSV the test writes: detect, fit, score, report."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nrad.explain import first_feature

NRAD = [sys.executable, "-c", "from nrad.cli import main; main()"]


def nrad(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*NRAD, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)


def messy_csv(path: Path, n: int = 400, seed: int = 0, sep: str = ",") -> Path:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "txn_id": [f"t{i:05d}" for i in range(n)],
            "amount": rng.lognormal(3, 0.5, n).round(2).astype(object),
            "merchant": rng.choice(["grocer", "fuel", "books", "travel"], n),
            "when": pd.date_range("2024-03-01", periods=n, freq="37min").astype(str),
            "channel": "web",
            "risk": rng.normal(size=n).round(3),
            "label": 0,
        }
    )
    df.loc[3, "amount"] = "n/a"
    df.loc[4, "merchant"] = None
    df.loc[n - 1, ["amount", "risk", "label"]] = [25000.0, 8.0, 1]
    df.to_csv(path, index=False, sep=sep)
    return path


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("product")
    messy_csv(d / "train.csv", seed=1)
    messy_csv(d / "data.csv", seed=2, sep=";")
    return d


def test_detect_on_the_file_itself_keeps_order_and_id(workdir: Path) -> None:
    res = nrad("detect", "data.csv", "--id-column", "txn_id", "--label-column", "label", "--max-epochs", "30",
               "--out", "scores.csv", "--contamination", "0.01", cwd=workdir)  # fmt: skip
    assert res.returncode == 0, res.stderr
    scores = pd.read_csv(workdir / "scores.csv", keep_default_na=False)
    data = pd.read_csv(workdir / "data.csv", sep=";")
    # The input's columns, then the results (--results-only leaves the input's out).
    results = ["anomaly_score", "p_value", "flagged", "top_features", "reason"]
    assert list(scores.columns) == [c for c in data.columns if c != "label"] + results  # labels are not features
    assert scores["txn_id"].tolist() == data["txn_id"].tolist()
    assert scores["flagged"].sum() == 4
    top = scores.loc[scores["anomaly_score"].idxmax()]
    assert top["txn_id"] == data["txn_id"].iloc[-1] and top["flagged"]
    assert first_feature(top["top_features"]) in ("amount", "risk")
    # Only flagged rows and the top ten are explained by default.
    assert (scores["top_features"] != "").sum() == 10


def test_the_id_column_is_found_when_not_given(workdir: Path) -> None:
    res = nrad("detect", "data.csv", "--label-column", "label", "--max-epochs", "5", "--out", "auto.csv",
               "--contamination", "0.01", cwd=workdir)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "txn_id has a different value in every row: read as the row id" in res.stdout
    assert list(pd.read_csv(workdir / "auto.csv").columns)[0] == "txn_id"


def test_fit_then_score_with_report(workdir: Path) -> None:
    res = nrad("fit", "train.csv", "--model", "m.nrad", "--id-column", "txn_id", "--ignore", "label",
               "--max-epochs", "30", cwd=workdir)  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = nrad("score", "data.csv", "--model", "m.nrad", "--out", "s.parquet", "--report", "report.html",
               "--label-column", "label", "--contamination", "0.01", cwd=workdir)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "AUROC" in res.stdout
    assert len(pd.read_parquet(workdir / "s.parquet")) == 400
    html = (workdir / "report.html").read_text()
    assert 'id="flagged-rows"' in html and "Precision-recall" in html and "<svg" in html
    # Row numbers count from 1, as on the command line: the planted last row is row 400.
    assert "<tr><td>400</td><td>t00399</td>" in html
    assert not re.search(
        r"""(src|href)=["']?https?:|<link|@import""", html
    )  # nothing fetched from the network
    assert len(html) < 500_000


def test_mismatched_columns_exit_2_and_name_them(workdir: Path) -> None:
    nrad("fit", "train.csv", "--model", "m2.nrad", "--id-column", "txn_id", "--max-epochs", "5", cwd=workdir)
    df = pd.read_csv(workdir / "data.csv", sep=";").drop(columns=["risk"]).assign(extra=1)
    df.to_csv(workdir / "bad.csv", index=False)
    res = nrad("score", "bad.csv", "--model", "m2.nrad", cwd=workdir)
    assert res.returncode == 2
    assert "lacks columns the model was trained on: risk" in res.stderr
    assert "Traceback" not in res.stderr


def test_fdr_and_contamination_together_is_bad_usage(workdir: Path) -> None:
    res = nrad("detect", "data.csv", "--fdr", "0.1", "--contamination", "0.1", cwd=workdir)
    assert res.returncode == 2 and "not both" in res.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["detect", "t.csv", "--out", "t.csv"],
        ["detect", "t.csv", "--out", "./sub/../t.csv"],
        ["detect", "t.csv", "--train", "u.csv", "--report", "u.csv"],
        ["detect", "t.csv", "--save-model", "t.csv"],
        ["detect", "t.csv", "--out", "x.csv", "--report", "x.csv"],
        ["detect", "t.csv", "--out", "link.csv"],
        ["fit", "t.csv", "--model", "t.csv"],
        ["score", "t.csv", "--model", "m.nrad", "--out", "m.nrad"],
        ["score", "t.csv", "--model", "m.nrad", "--out", "t.csv"],
    ],
)
def test_an_output_over_an_input_is_refused_and_nothing_changes(tmp_path: Path, args: list[str]) -> None:
    messy_csv(tmp_path / "t.csv")
    messy_csv(tmp_path / "u.csv", seed=3)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.csv").symlink_to(tmp_path / "t.csv")
    (tmp_path / "m.nrad").write_bytes(b"not read")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    res = nrad(*args, cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "same file" in res.stderr and "Traceback" not in res.stderr
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


@pytest.mark.slow
@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_outputs_take_the_users_permissions(tmp_path: Path, umask: int) -> None:
    messy_csv(tmp_path / "t.csv")
    cmd = [*NRAD, "detect", "t.csv", "--max-epochs", "3", "--out", "s.csv", "--report", "r.html",
           "--save-model", "m.nrad", "--contamination", "0.05"]  # fmt: skip
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         preexec_fn=lambda: os.umask(umask))  # fmt: skip
    assert res.returncode == 0, res.stderr
    for name in ("s.csv", "r.html", "m.nrad"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask, name


def test_a_table_with_more_columns_than_rows_gets_a_result(tmp_path: Path) -> None:
    """Embeddings and word counts come wider than they are long: scored, not refused."""
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(60, 300))).add_prefix("c").to_csv(tmp_path / "wide.csv", index=False)
    res = nrad("detect", "wide.csv", "--out", "s.csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert len(pd.read_csv(tmp_path / "s.csv")) == 60


@pytest.mark.slow
@pytest.mark.skipif(
    not (shutil.which("chromium") and shutil.which("chromedriver")),
    reason="needs Debian chromium + chromium-driver (.ci/run installs them)",
)
def test_report_renders_in_headless_chromium(workdir: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    report = workdir / "report2.html"
    res = nrad("detect", "data.csv", "--train", "train.csv", "--id-column", "txn_id", "--label-column", "label",
               "--max-epochs", "30",
               "--report", report, "--contamination", "0.02", cwd=workdir)  # fmt: skip
    assert res.returncode == 0, res.stderr
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--window-size=1200,1600"):  # fmt: skip
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    try:
        driver.get(report.resolve().as_uri())
        rows = driver.find_elements(By.CSS_SELECTOR, "#flagged-rows tr")
        assert len(rows) >= 2  # header + at least one flagged row
        assert driver.find_elements(By.CSS_SELECTOR, "svg")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        shot = Path(__file__).resolve().parents[1] / "docs" / "report.png"
        if shot.parent.exists() and not shot.exists():
            driver.save_screenshot(str(shot))
    finally:
        driver.quit()


@pytest.mark.slow
def test_nrde_alone_is_one_flag_away_and_each_says_its_units(workdir: Path) -> None:
    runs = {}
    for detector in ("fused", "nrde"):
        res = nrad("detect", "data.csv", "--label-column", "label", "--max-epochs", "5", "--detector", detector,
                   "--out", f"{detector}.csv", "--contamination", "0.01", cwd=workdir)  # fmt: skip
        assert res.returncode == 0, res.stderr
        runs[detector] = (res.stdout, pd.read_csv(workdir / f"{detector}.csv")["anomaly_score"].to_numpy())
    assert "neighbour" in runs["fused"][0] and "nats" in runs["nrde"][0]
    assert not np.allclose(runs["fused"][1], runs["nrde"][1])
    res = nrad("detect", "data.csv", "--detector", "knn", cwd=workdir)
    assert res.returncode != 0 and "detector must be one of fused, nrde" in res.stderr
