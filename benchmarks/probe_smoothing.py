"""Training-noise smoothing, fixed and chosen by held-out likelihood (issue 7 probe).

Exploratory.  Fits NRDE with several ``train_noise`` values (Gaussian noise
added to training batches: the flow then learns the data density convolved
with N(0, h^2), a kernel-smoothed density of bandwidth h in standardized
units) and adds a ``select`` variant that keeps, per fit, the h whose flow
gives the lowest NLL on the clean held-out validation rows -- likelihood
cross-validation of the bandwidth, decided from training rows alone.  With
too few validation rows for early stopping, ``select`` keeps the default.
Prints and appends ``dataset,setting,seed,variant,auroc,val_nll`` rows
(seed 0, the benchmark protocol).

    python benchmarks/probe_smoothing.py --data-dir ../shared/datasets/adbench \
        --datasets glass,letter --settings vanilla,noisy-gauss-0.5 --out /tmp/smooth.csv
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import torch
from sklearn.metrics import roc_auc_score

from nrad.bench.datasets import dataset_paths, load_dataset
from nrad.bench.settings import make_split
from nrad.detector import NRDE
from nrad.preprocess import ProtocolScaler

DEFAULT = 0.05


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", required=True)
    parser.add_argument("--settings", default="vanilla,noisy-gauss-0.5")
    parser.add_argument("--noise", default="0.05,0.15,0.3")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    noises = [float(h) for h in args.noise.split(",")]
    paths = dataset_paths(args.data_dir)
    for name in args.datasets.split(","):
        data = load_dataset(paths[name])
        for setting in args.settings.split(","):
            split = make_split(data, setting, 0)
            scaler = ProtocolScaler().fit(split.X_train)
            X_train, X_test = scaler.transform(split.X_train), scaler.transform(split.X_test)
            rows = []
            for h in noises:
                model = NRDE(train_noise=h, random_state=0).fit(X_train)
                val = min(model.validation_loss_curve_, default=math.nan)
                auroc = roc_auc_score(split.y_test, model.anomaly_score(X_test))
                rows.append(
                    dict(dataset=name, setting=setting, seed=0, variant=f"h={h:g}", auroc=auroc, val_nll=val)
                )
            finite = [r for r in rows if math.isfinite(r["val_nll"])]
            pick = min(finite, key=lambda r: r["val_nll"]) if finite else rows[noises.index(DEFAULT)]
            rows.append({**pick, "variant": "select"})
            print(
                name, setting, {r["variant"]: round(r["auroc"], 3) for r in rows}, file=sys.stderr, flush=True
            )
            write = not args.out.exists()
            with args.out.open("a", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
                if write:
                    writer.writeheader()
                writer.writerows(rows)


if __name__ == "__main__":
    main()
