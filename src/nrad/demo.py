"""``nrad demo``: NRDE on the bundled cardio sample, under the benchmark's vanilla split."""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pandas as pd
from sklearn.metrics import average_precision_score, roc_auc_score

from nrad.bench.datasets import load_dataset
from nrad.bench.settings import make_split
from nrad.io import atomic_path
from nrad.nrde import NRDE


@dataclass(frozen=True)
class DemoResult:
    auroc: float
    auprc: float
    n_train: int
    n_test: int
    n_anomalies: int
    fit_seconds: float
    top: pd.DataFrame


def sample_path() -> Path:
    """The bundled ADBench ``cardio`` file (UCI Cardiotocography, via ODDS and ADBench)."""
    return Path(str(resources.files("nrad") / "data" / "cardio.npz"))


def run_demo(out: str | Path | None = None, seed: int = 0) -> DemoResult:
    """Fit on half the normal rows, score the rest; write the top 10 rows to ``out`` if given."""
    split = make_split(load_dataset(sample_path()), "vanilla", seed)
    start = time.perf_counter()
    det = NRDE(random_state=seed).fit(split.X_train)
    fit_seconds = time.perf_counter() - start
    scores = det.anomaly_score(split.X_test)
    table = pd.DataFrame(split.X_test, columns=[f"x{j}" for j in range(split.X_test.shape[1])])
    table.insert(0, "row", split.test_index)
    table.insert(1, "anomaly_score", scores)
    table.insert(2, "label", split.y_test)
    top = table.sort_values("anomaly_score", ascending=False).head(10)
    if out is not None:  # nothing written unless asked: a demo leaves the user's folder as it was
        with atomic_path(out) as tmp:
            top.to_csv(tmp, index=False)
    return DemoResult(
        auroc=float(roc_auc_score(split.y_test, scores)),
        auprc=float(average_precision_score(split.y_test, scores)),
        n_train=len(split.X_train),
        n_test=len(split.X_test),
        n_anomalies=int(split.y_test.sum()),
        fit_seconds=fit_seconds,
        top=top[["row", "anomaly_score", "label"]],
    )
