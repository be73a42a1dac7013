"""The command line: help, demo, datasets, exit codes."""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

NRAD = [sys.executable, "-c", "from nrad.cli import main; main()"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*NRAD, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize(
    "cmd", [[], ["demo"], ["bench"], ["bench", "report"], ["datasets", "list"], ["datasets", "fetch"]]
)
def test_help_on_every_command(cmd: list[str]) -> None:
    res = run(*cmd, "--help")
    assert res.returncode == 0 and "Usage" in res.stdout


def test_demo_prints_auroc_and_writes_top_rows(tmp_path: Path) -> None:
    res = run("demo", "--out", "top.csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "AUROC" in res.stdout
    top = pd.read_csv(tmp_path / "top.csv")
    assert len(top) == 10 and top["anomaly_score"].is_monotonic_decreasing
    auroc = float(res.stdout.split("AUROC")[1].split()[0])
    assert auroc > 0.8  # cardio is easy for density methods (IForest ~0.93)


def test_bad_data_dir_is_exit_code_2_without_traceback(tmp_path: Path) -> None:
    res = run("bench", "--data-dir", str(tmp_path / "nope"), "--out", str(tmp_path / "r.csv"))
    assert res.returncode == 2
    assert "does not exist" in res.stderr and "Traceback" not in res.stderr


def test_unknown_method_is_exit_code_2(tmp_path: Path) -> None:
    np.savez(tmp_path / "1_a.npz", X=np.zeros((4, 2)), y=np.array([0, 0, 0, 1]))
    res = run("bench", "--data-dir", str(tmp_path), "--methods", "nope", "--out", str(tmp_path / "r.csv"))
    assert res.returncode == 2 and "unknown method" in res.stderr


def test_datasets_list(tmp_path: Path) -> None:
    np.savez(tmp_path / "7_small.npz", X=np.zeros((8, 3)), y=np.array([0] * 6 + [1] * 2))
    res = run("datasets", "list", str(tmp_path))
    assert res.returncode == 0 and "small" in res.stdout and "0.250" in res.stdout


@pytest.fixture()
def local_server(tmp_path: Path) -> Iterator[str]:
    served = tmp_path / "served"
    served.mkdir()
    np.savez(served / "6_cardio.npz", X=np.ones((5, 2)), y=np.array([0, 0, 0, 0, 1]))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_fetch_downloads_from_a_server(tmp_path: Path, local_server: str) -> None:
    to = tmp_path / "data"
    res = run("datasets", "fetch", "--to", str(to), "--base-url", local_server, "--names", "6_cardio")
    assert res.returncode == 0, res.stderr
    with np.load(to / "6_cardio.npz") as f:
        assert f["X"].shape == (5, 2)
    missing = run("datasets", "fetch", "--to", str(to), "--base-url", local_server, "--names", "1_ALOI")
    assert missing.returncode == 2 and "could not download" in missing.stderr
    assert not (to / "1_ALOI.npz").exists()


def test_a_failed_fetch_leaves_no_empty_folder(tmp_path: Path, local_server: str) -> None:
    to = tmp_path / "new-folder"
    res = run("datasets", "fetch", "--to", str(to), "--base-url", local_server, "--names", "1_ALOI")
    assert res.returncode == 2 and "could not download" in res.stderr
    assert not to.exists()


def _installed() -> list[str]:
    """The console script pip installed beside this Python (what a user types), or the module."""
    script = Path(sys.executable).with_name("nrad")
    return [str(script)] if script.exists() else NRAD


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["detct"], "No such command 'detct'"),
        (["detect"], "Missing argument"),
        (["detect", "x.csv", "--id", "t"], "No such option: --id. Did you mean --id-column?"),
        (["detect", "x.csv", "--idx", "t"], "No such option: --idx"),
        (["detect", "x.csv", "--fdr", "abc"], "Invalid value for '--fdr'"),
        (["score", "x.csv"], "Missing option '--model'"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    res = subprocess.run([*_installed(), *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "--help" in lines[0], res.stderr
    assert "Traceback" not in res.stderr + res.stdout


def test_version() -> None:
    from nrad import __version__

    res = subprocess.run([*_installed(), "--version"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.strip() == f"nrad {__version__}"
