"""NRDE's fit against a plain normalizing flow a user would reach for instead, same rows, one run.

Usage: python benchmarks/plain_flow.py --data-dir data/adbench [--busy]

The plain flow is zuko's masked autoregressive flow (MAF): 5 transforms,
hidden layers 128 x 128, Adam (learning rate 1e-3), batches of 512, early
stopping on a random 10% hold-out (patience 20 epochs, best weights kept),
float32, torch's default threads.  NRDE runs with its defaults.  The
first optimizer built in a process imports ~1 s of torch modules; that is
paid before either is timed.  Both get
the same rows: the benchmark protocol's ``vanilla`` split (seed 0), scaled
as ``nrad bench`` scales them; both score the split's test rows (AUROC).

Prints, per dataset, both fit times and AUROCs, then the sums and the
ratio NRDE / MAF.  ``--busy`` fits NRDE a second time beside one CPU-bound
process (a busy loop in another process) and prints its slowdown.
``--params`` fits NRDE with other parameters (``name=value`` pairs).  Needs
the ``bench`` extra (zuko); run on an otherwise quiet machine.
"""

from __future__ import annotations

import argparse
import copy
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from nrde_params import parse_params
from sklearn.metrics import roc_auc_score

from nrad.bench.datasets import dataset_paths, load_dataset
from nrad.bench.settings import make_split
from nrad.extras import require
from nrad.nrde import NRDE
from nrad.preprocess import ProtocolScaler

DATASETS = "cardio,satellite,letter,ALOI"
SEED = 0


def fit_maf(X: np.ndarray, seed: int, patience: int = 20, max_epochs: int = 1000) -> torch.nn.Module:
    """zuko MAF trained to the best held-out log-likelihood (the configuration in the module docstring)."""
    zuko = require("zuko", "bench")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(X))
    n_val = max(1, len(X) // 10)
    val = torch.as_tensor(X[order[:n_val]], dtype=torch.float32)
    train = torch.as_tensor(X[order[n_val:]], dtype=torch.float32)
    flow = zuko.flows.MAF(features=X.shape[1], transforms=5, hidden_features=(128, 128))
    opt = torch.optim.Adam(flow.parameters(), lr=1e-3)
    best, best_state, stale = np.inf, copy.deepcopy(flow.state_dict()), 0
    for _ in range(max_epochs):
        flow.train()
        for batch in torch.randperm(len(train)).split(512):
            loss = -flow().log_prob(train[batch]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        flow.eval()
        with torch.no_grad():
            val_nll = float(-flow().log_prob(val).mean())
        if val_nll < best - 1e-4:
            best, best_state, stale = val_nll, copy.deepcopy(flow.state_dict()), 0
        else:
            stale += 1
            if stale >= patience:
                break
    flow.load_state_dict(best_state)
    return flow


def maf_scores(flow: torch.nn.Module, X: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return -flow().log_prob(torch.as_tensor(X, dtype=torch.float32)).double().numpy()


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def _spin() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", default=DATASETS)
    parser.add_argument("--busy", action="store_true", help="also fit NRDE beside a CPU-bound process")
    parser.add_argument("--params", help="NRDE parameters, name=value[,name=value]")
    args = parser.parse_args()
    params = parse_params(args.params)
    paths = dataset_paths(args.data_dir)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; vanilla split, seed {SEED}; "
          f"NRDE {params or 'defaults'}")  # fmt: skip
    header = f"{'dataset':<10} {'rows x d':>10} {'NRDE s':>8} {'AUROC':>6} {'MAF s':>8} {'AUROC':>6}"
    print(header + ("  NRDE busy s  slowdown" if args.busy else ""), flush=True)
    # Both fits use torch.optim.Adam, and the first optimizer a process builds imports
    # torch._dynamo (~1 s): paid here, so neither is charged for it (a fresh `nrad fit` pays it).
    torch.optim.Adam([torch.zeros(1, requires_grad=True)])
    totals = np.zeros(3)
    for name in args.datasets.split(","):
        split = make_split(load_dataset(paths[name]), "vanilla", SEED)
        scaler = ProtocolScaler().fit(split.X_train)
        X_train, X_test = scaler.transform(split.X_train), scaler.transform(split.X_test)
        nrde, nrde_s = timed(NRDE(random_state=SEED, **params).fit, X_train)
        maf, maf_s = timed(fit_maf, X_train, SEED)
        line = (
            f"{name:<10} {f'{len(X_train)}x{X_train.shape[1]}':>10} {nrde_s:8.1f} "
            f"{roc_auc_score(split.y_test, nrde.anomaly_score(X_test)):6.3f} {maf_s:8.1f} "
            f"{roc_auc_score(split.y_test, maf_scores(maf, X_test)):6.3f}"
        )
        totals += (nrde_s, maf_s, 0.0)
        if args.busy:
            spinner = multiprocessing.get_context("spawn").Process(target=_spin, daemon=True)
            spinner.start()
            try:
                _, busy_s = timed(NRDE(random_state=SEED, **params).fit, X_train)
            finally:
                spinner.terminate()
                spinner.join()
            totals[2] += busy_s
            line += f"  {busy_s:11.1f}  {busy_s / nrde_s:7.2f}x"
        print(line, flush=True)
    print(f"sum: NRDE {totals[0]:.1f} s, MAF {totals[1]:.1f} s, ratio NRDE / MAF {totals[0] / totals[1]:.2f}")
    if args.busy:
        print(f"NRDE beside a busy process: {totals[2]:.1f} s, {totals[2] / totals[0]:.2f}x its quiet time")


if __name__ == "__main__":
    main()
