"""Ensembles of NRDE fits that differ only in their seed (accuracy study probe).

Exploratory.  Fits ``NRDE(random_state=k)`` for k = 0 .. K-1 on the same
protocol split (seed 0) and scores the test rows with: the single fit k = 0
(``single``, equal to results/runs.csv's ``nrde`` rows), the mean of the
first m fits' anomaly scores (``mean<m>``: the geometric mean of their
pure-data densities) and the mixture of their densities (``mix<m>``:
``-log(mean_k exp(-score_k))``), for m = 3 and K.  Each row also records
the seconds spent fitting the fits it uses, so the cost is on record.
Appends ``dataset,setting,seed,variant,auroc,fit_s`` rows; pairs already in
``--out`` are skipped.

    python research/probe_ensemble.py --data-dir ../shared/datasets/adbench \
        --datasets glass,letter --settings vanilla,noisy-gauss-0.5 --out /tmp/ensemble.csv
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
from probe_common import append_rows, pending_splits, probe_parser
from scipy.special import logsumexp
from sklearn.metrics import roc_auc_score

from nrad.nrde import NRDE


def main() -> None:
    parser = probe_parser(__doc__)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, setting, X_train, X_test, y_test in pending_splits(args):
        scores, seconds = [], []
        for k in range(args.members):
            start = time.perf_counter()
            model = NRDE(random_state=k).fit(X_train)
            seconds.append(time.perf_counter() - start)
            scores.append(model.anomaly_score(X_test))
        S = np.array(scores)
        variants = {"single": (S[0], 1)}
        for m in sorted({3, args.members}):
            variants[f"mean{m}"] = (S[:m].mean(axis=0), m)
            variants[f"mix{m}"] = (-(logsumexp(-S[:m], axis=0) - np.log(m)), m)
        rows = [
            dict(dataset=name, setting=setting, seed=0, variant=variant,
                 auroc=roc_auc_score(y_test, score), fit_s=round(sum(seconds[:m]), 2))
            for variant, (score, m) in variants.items()
        ]  # fmt: skip
        append_rows(args.out, rows)


if __name__ == "__main__":
    main()
