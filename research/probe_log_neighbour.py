"""The fused score's neighbour member on a log scale: flags on planted tables (probe, not adopted).

Exploratory.  The fused default standardizes the raw distance to the 5th
nearest reference row; on clean rows that distance has a long right tail
(up to 14 IQRs), which competes with what only the density sees (broken
relations between columns).  The k-NN density estimate's own log-density
is ``d log r_k`` up to a constant, the density member's unit, and the log
shortens that tail.  For each planted table of ``benchmarks/main_job.py``
(same generators and seeds), the table model is fitted on the clean table
(``fit`` + ``score``), and the planted table's rows are scored with the
members as shipped and with ``log r_k`` instead of ``r_k``; each variant
is calibrated on its own out-of-fold training scores (the shipped tail
model) and flagged by Benjamini-Hochberg at q = 0.1.  Prints recall and
false discovery proportion per family and variant, and appends rows to
``--out``.

    python research/probe_log_neighbour.py --seeds 0-4 --out /tmp/log_neighbour.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from main_job import IDS, make  # noqa: E402

from nrad.calibration import TailModel  # noqa: E402
from nrad.flags import benjamini_hochberg  # noqa: E402
from nrad.table import fit_table  # noqa: E402

FAMILIES = ("issue-kinds", "transactions", "sensors", "patients")


def fused(model, prep, folds, log: bool) -> np.ndarray:  # noqa: ANN001 - probe
    density, z, _ = model.density_prepared(prep, folds)
    members = model.fusion.members(z, folds)
    if log:
        members[:, 0] = np.log(np.maximum(members[:, 0], 1e-12))
    return density, members


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    lo, hi = (int(x) for x in args.seeds.split("-"))
    rows = []
    for family in FAMILIES:
        for seed in range(lo, hi + 1):
            table = make(family, 3000, 20, 1000 + seed)
            clean = make(family, 3000, 0, 2000 + seed).frame
            model = fit_table(clean, IDS[family], random_state=0)
            train_prep = model.prepare(clean)
            test_prep = model.prepare(table.frame)
            for log in (False, True):
                dens_tr, mem_tr = fused(model, train_prep, model.folds, log)
                model.fusion.calibrate(dens_tr, mem_tr)
                calibration = model.fusion.combine(dens_tr, mem_tr)
                dens, mem = fused(model, test_prep, None, log)
                scores = model.fusion.combine(dens, mem)
                flagged = benjamini_hochberg(TailModel.fit(calibration).p_values(scores), 0.1)
                y = table.labels.astype(bool)
                rows.append({
                    "family": family, "seed": seed, "variant": "log" if log else "shipped",
                    "recall": flagged[y].mean(), "fdp": (flagged & ~y).sum() / max(flagged.sum(), 1),
                    "auroc": roc_auc_score(y, scores),
                })  # fmt: skip
            print(rows[-2], rows[-1], file=sys.stderr, flush=True)
    with args.out.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import pandas as pd

    print(pd.DataFrame(rows).groupby(["family", "variant"])[["recall", "fdp", "auroc"]].mean().round(3))


if __name__ == "__main__":
    main()
