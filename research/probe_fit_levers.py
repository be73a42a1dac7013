"""Which levers shorten NRDE's fit, and what they do to its AUROC (the tables of benchmarks/plain_flow.py).

For the protocol's ``vanilla`` split (seed 0) of each dataset, fits NRDE
with its defaults and with each lever, and prints fit seconds and test
AUROC.  Two levers are module constants of :mod:`nrad.nrde`, set by
this probe (not product options): ``PENALTY_EVERY`` (the IMA penalty on
every k-th step, weighted by k) and ``STEP_BUDGET`` (gradient steps the
automatic epoch count aims at; 2,500 was the default before 1,000); the
third is the ``batch_size`` parameter.  Run on a quiet machine; levers
compare within one run (this machine's speed drifts by ~10% between runs).

    python research/probe_fit_levers.py --data-dir data/adbench
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from probe_common import protocol_splits
from sklearn.metrics import roc_auc_score

import nrad.nrde
from nrad.nrde import NRDE

LEVERS: dict[str, dict[str, int]] = {
    "defaults": {},
    "penalty every 8": {"PENALTY_EVERY": 8},
    "batch 512": {"batch_size": 512},
    "step budget 2500": {"STEP_BUDGET": 2500},
}
CONSTANTS = ("PENALTY_EVERY", "STEP_BUDGET")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", default="cardio,satellite,letter,ALOI")
    args = parser.parse_args()
    splits = list(protocol_splits(args.data_dir, args.datasets, "vanilla", 0))
    # The first fit in a process imports ~1 s of torch modules (torch.optim): paid here, not by a lever.
    NRDE(random_state=0, max_epochs=1).fit(splits[0][2])
    defaults = {constant: getattr(nrad.nrde, constant) for constant in CONSTANTS}
    for name, lever in LEVERS.items():
        for constant, value in defaults.items():
            setattr(nrad.nrde, constant, lever.get(constant, value))
        params = {k: v for k, v in lever.items() if k not in CONSTANTS}
        total, cells = 0.0, []
        try:
            for dataset, _, X_train, X_test, y_test in splits:
                start = time.perf_counter()
                det = NRDE(random_state=0, **params).fit(X_train)
                seconds = time.perf_counter() - start
                total += seconds
                auroc = roc_auc_score(y_test, det.anomaly_score(X_test))
                cells.append(f"{dataset} {seconds:5.1f} s {auroc:.3f}")
        finally:
            for constant, value in defaults.items():
                setattr(nrad.nrde, constant, value)
        print(f"{name:<18} total {total:5.1f} s | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
