"""Training-noise smoothing, fixed and chosen by held-out likelihood (accuracy study probe).

Exploratory.  Fits NRDE with several ``train_noise`` values (Gaussian noise
added to training batches: the flow then learns the data density convolved
with N(0, h^2), a kernel-smoothed density of bandwidth h in standardized
units) and adds a ``select`` variant that keeps, per fit, the h whose flow
gives the lowest NLL on the clean held-out validation rows -- likelihood
cross-validation of the bandwidth, decided from training rows alone.  With
too few validation rows for early stopping, ``select`` keeps the default.
Prints and appends ``dataset,setting,seed,variant,auroc,val_nll`` rows
(seed 0, the benchmark protocol); pairs already in ``--out`` are skipped.

    python research/probe_smoothing.py --data-dir ../shared/datasets/adbench \
        --datasets glass,letter --settings vanilla,noisy-gauss-0.5 --out /tmp/smooth.csv
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from probe_common import append_rows, pending_splits, probe_parser, select_by_validation
from sklearn.metrics import roc_auc_score

from nrad.nrde import NRDE

DEFAULT = 0.05


def main() -> None:
    parser = probe_parser(__doc__)
    parser.add_argument("--noise", default="0.05,0.15,0.3")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    noises = [float(h) for h in args.noise.split(",")]
    for name, setting, X_train, X_test, y_test in pending_splits(args):
        rows = []
        for h in noises:
            model = NRDE(train_noise=h, random_state=0).fit(X_train)
            val = min(model.validation_loss_curve_, default=math.nan)
            auroc = roc_auc_score(y_test, model.anomaly_score(X_test))
            rows.append(
                dict(dataset=name, setting=setting, seed=0, variant=f"h={h:g}", auroc=auroc, val_nll=val)
            )
        pick = select_by_validation(rows, rows[noises.index(DEFAULT)])
        append_rows(args.out, [*rows, {**pick, "variant": "select"}])


if __name__ == "__main__":
    main()
