"""Which number should rank rows: the fused score, or the p-value the flags come from?

For each benchmark table (``transductive``: fitted and scored on itself,
or ``vanilla``), the table model's in-sample (or new-row) ``anomaly_score``
and ``p_value`` are both scored by AUROC against the labels, with any
parameters given to ``fit_table`` (``--params n_pure_sources=None``).

    python research/probe_flag_score.py --data-dir DATA --settings transductive,vanilla --seeds 0 \
        --out research/results/probe_flag_score.csv
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from nrad.bench.datasets import dataset_paths, load_dataset
from nrad.bench.settings import make_split
from nrad.table import fit_table


def parse(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in filter(None, text.split(",")):
        key, value = part.split("=")
        out[key] = None if value == "None" else (int(value) if value.isdigit() else value)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--settings", default="transductive")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--datasets", default="")
    parser.add_argument("--params", default="")
    parser.add_argument("--label", default="default")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    params = parse(args.params)
    paths = dataset_paths(args.data_dir)
    names = [d for d in args.datasets.split(",") if d] or sorted(paths)
    new = not args.out.exists()
    with args.out.open("a", newline="") as fh:
        writer = csv.writer(fh)
        if new:
            writer.writerow(["label", "dataset", "setting", "seed", "auroc_score", "auroc_p", "flagged", "found", "seconds"])
        for name in names:
            data = load_dataset(paths[name])
            for setting in args.settings.split(","):
                for seed in map(int, args.seeds.split(",")):
                    split = make_split(data, setting, seed)
                    cols = [f"x{j}" for j in range(split.X_train.shape[1])]
                    start = time.perf_counter()
                    try:
                        model = fit_table(pd.DataFrame(split.X_train, columns=cols), random_state=seed, **params)
                        scored, _ = model.score(pd.DataFrame(split.X_test, columns=cols), fdr=0.1, explain="none",
                                                in_sample=setting == "transductive")  # fmt: skip
                    except Exception as exc:  # a failed run is reported, not dropped
                        writer.writerow([args.label, name, setting, seed, "", "", "", "", f"failed: {exc}"[:200]])
                        continue
                    y = split.y_test
                    p = scored["p_value"].to_numpy()
                    flagged = scored["flagged"].to_numpy(dtype=bool)
                    row = [args.label, name, setting, seed, roc_auc_score(y, scored["anomaly_score"]),
                           roc_auc_score(y, -np.log(np.maximum(p, 1e-300))), int(flagged.sum()),
                           int((flagged & (y == 1)).sum()), round(time.perf_counter() - start, 1)]  # fmt: skip
                    writer.writerow(row)
                    fh.flush()
                    print(row, flush=True)


if __name__ == "__main__":
    main()
