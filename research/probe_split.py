"""Source-split rules and the IMA penalty, ablated on the same fits (accuracy study probe).

Exploratory.  Per (dataset, setting), seed 0, under the benchmark protocol:
fits ``NRDE(random_state=0)`` (the default: IMA penalty, noise-floor split)
and ``NRDE(random_state=0, penalty_weight=0)`` (no penalty, same split
rule), then rescores the test rows of the penalized fit with other splits
of its sources (the flow and the source influences stay the same; only
``noise_sources_`` changes, so the comparison isolates the split rule):

- ``floor``: the default noise-floor rule (equal to results/runs.csv's ``nrde``);
- ``all``: no split, the flow's own density (IMA penalty, no split);
- ``energy90``: pure = the most influential sources holding 90% of the summed
  squared column norms (the issue's first probe);
- ``gap``: the largest gap in log influence, if at least log 3, without the
  floor rule's flatness and count conditions;
- ``drop1``: the single weakest source is noise;
- ``half``: the ceil(d/2) most influential sources are pure;
- ``no_penalty``: the unpenalized fit with the default rule (what the split
  does without IMA).

Appends ``dataset,setting,seed,variant,auroc,n_noise`` rows; pairs already in
``--out`` are skipped.

    python research/probe_split.py --data-dir ../shared/datasets/adbench \
        --datasets glass,letter --settings vanilla,noisy-gauss-0.5 --out /tmp/split.csv
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from probe_common import append_rows, pending_splits, probe_parser
from sklearn.metrics import roc_auc_score

from nrad.nrde import NRDE


def n_pure(influence: np.ndarray, rule: str) -> int:
    """How many of the most influential sources a rule keeps as pure."""
    d = len(influence)
    desc = np.sort(influence)[::-1]
    if rule == "all":
        return d
    if rule == "energy90":
        share = np.cumsum(np.exp(2.0 * desc)) / np.exp(2.0 * desc).sum()
        return int(np.searchsorted(share, 0.9) + 1)
    if rule == "gap":
        gaps = desc[:-1] - desc[1:]
        return int(np.argmax(gaps) + 1) if d > 1 and gaps.max() >= math.log(3.0) else d
    if rule == "drop1":
        return max(d - 1, 1)
    if rule == "half":
        return math.ceil(d / 2)
    raise ValueError(rule)


def rescored(model: NRDE, X_test: np.ndarray, k: int) -> np.ndarray:
    """The model's anomaly score with its ``k`` most influential sources pure."""
    order = np.argsort(-model.source_influence_, kind="stable")
    default = model.noise_sources_
    model.noise_sources_ = np.sort(order[k:]).astype(np.int64)
    try:
        return model.anomaly_score(X_test)
    finally:
        model.noise_sources_ = default


def main() -> None:
    parser = probe_parser(
        __doc__, settings="vanilla,transductive,contaminated-5,noisy-gauss-0.5,noisy-irrelevant-0.5"
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, setting, X_train, X_test, y_test in pending_splits(args):
        key = dict(dataset=name, setting=setting, seed=0)
        model = NRDE(random_state=0).fit(X_train)
        rows = [dict(key, variant="floor", auroc=roc_auc_score(y_test, model.anomaly_score(X_test)),
                     n_noise=len(model.noise_sources_))]  # fmt: skip
        for rule in ("all", "energy90", "gap", "drop1", "half"):
            k = n_pure(model.source_influence_, rule)
            score = rescored(model, X_test, k)
            rows.append(
                dict(key, variant=rule, auroc=roc_auc_score(y_test, score), n_noise=X_train.shape[1] - k)
            )
        plain = NRDE(random_state=0, penalty_weight=0.0).fit(X_train)
        rows.append(dict(key, variant="no_penalty", auroc=roc_auc_score(y_test, plain.anomaly_score(X_test)),
                         n_noise=len(plain.noise_sources_)))  # fmt: skip
        append_rows(args.out, rows)


if __name__ == "__main__":
    main()
