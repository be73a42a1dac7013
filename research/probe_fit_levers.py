"""Which levers shorten NRDE's fit, and what they do to its AUROC (the tables of benchmarks/plain_flow.py).

For the protocol's ``vanilla`` split (seed 0) of each dataset, fits NRDE
with its defaults and with each lever, and prints fit seconds and test
AUROC.  The levers are module constants of :mod:`nrad.detector`, set by
this probe (not product options): ``PENALTY_EVERY`` (the IMA penalty on
every k-th step, weighted by k) and ``STEP_BUDGET`` (gradient steps the
automatic epoch count aims at); and Adam's multi-tensor (``foreach``)
update.  Run on a quiet machine.

    python research/probe_fit_levers.py --data-dir data/adbench
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

import torch
from probe_common import protocol_splits
from sklearn.metrics import roc_auc_score

import nrad.detector
from nrad.detector import NRDE

LEVERS = {
    "defaults": {},
    "adam foreach": {"foreach": True},
    "penalty every 8": {"PENALTY_EVERY": 8},
    "step budget 1000": {"STEP_BUDGET": 1000},
    "all three": {"foreach": True, "PENALTY_EVERY": 8, "STEP_BUDGET": 1000},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", default="cardio,satellite,letter,ALOI")
    args = parser.parse_args()
    splits = list(protocol_splits(args.data_dir, args.datasets, "vanilla", 0))
    # The first forward-mode pass in a process imports ~1 s of torch modules: paid here, not by a lever.
    NRDE(random_state=0, max_epochs=1).fit(splits[0][2])
    defaults = {"PENALTY_EVERY": nrad.detector.PENALTY_EVERY, "STEP_BUDGET": nrad.detector.STEP_BUDGET}
    adam = torch.optim.Adam
    for name, lever in LEVERS.items():
        for constant, value in defaults.items():
            setattr(nrad.detector, constant, lever.get(constant, value))
        torch.optim.Adam = functools.partial(adam, foreach=True) if lever.get("foreach") else adam
        total, cells = 0.0, []
        try:
            for dataset, _, X_train, X_test, y_test in splits:
                start = time.perf_counter()
                det = NRDE(random_state=0).fit(X_train)
                seconds = time.perf_counter() - start
                total += seconds
                auroc = roc_auc_score(y_test, det.anomaly_score(X_test))
                cells.append(f"{dataset} {seconds:5.1f} s {auroc:.3f}")
        finally:
            torch.optim.Adam = adam
            for constant, value in defaults.items():
                setattr(nrad.detector, constant, value)
        print(f"{name:<18} total {total:5.1f} s | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
