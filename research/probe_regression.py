"""Where `default` lost AUROC on a few benchmark tables: the table model with one reading switched off.

Variants (module constants set for the run; research only):
``base`` (as shipped), ``nospike`` (no numeric column read as a spike plus a number),
``nodist`` (the robust distance out of the fused score), ``nodist+nospike``.

Usage::

    python research/probe_regression.py --data-dir data/adbench --datasets optdigits,mnist,fault \
        --settings transductive,vanilla --seeds 0 --variants base,nospike
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.metrics import roc_auc_score

from nrad.bench.datasets import dataset_paths, load_dataset
from nrad.bench.registry import _table_detector
from nrad.bench.settings import make_split


def run(path: object, setting: str, seed: int, variant: str) -> float:
    import nrad.preprocess as pre
    from nrad.table import TableModel

    saved = pre.SPIKE_SHARE, pre.EDGE_SPIKE_SHARE, TableModel.members
    if "nospike" in variant:
        pre.SPIKE_SHARE = pre.EDGE_SPIKE_SHARE = 2.0
    if "nodist" in variant:
        TableModel.members = lambda self, z, folds=None: np.column_stack(  # noqa: E731
            [self.fusion.members(z, folds), np.zeros(len(z))]
        )
    try:
        split = make_split(load_dataset(path), setting, seed)
        det = _table_detector(seed, "fused").fit(split.X_train)
        return float(roc_auc_score(split.y_test, det.transductive_score(split.X_test)))
    finally:
        pre.SPIKE_SHARE, pre.EDGE_SPIKE_SHARE, TableModel.members = saved


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--datasets", default="optdigits,mnist,fault")
    parser.add_argument("--settings", default="transductive,vanilla")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--variants", default="base,nospike")
    args = parser.parse_args()
    paths = dataset_paths(args.data_dir)
    for name in args.datasets.split(","):
        for setting in args.settings.split(","):
            for seed in map(int, args.seeds.split(",")):
                for variant in args.variants.split(","):
                    start = time.perf_counter()
                    auroc = run(paths[name], setting, seed, variant)
                    print(f"{name},{setting},{seed},{variant},{auroc:.4f},{time.perf_counter() - start:.1f}", flush=True)


if __name__ == "__main__":
    main()
