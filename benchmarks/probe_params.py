"""NRDE with other constructor parameters, and the variant chosen by held-out likelihood (issue 7 probe).

Exploratory.  Fits NRDE once per variant (``name=value,...`` groups of
constructor parameters; ``default`` is NRDE's defaults) per (dataset,
setting), seed 0, under the benchmark protocol, and adds a ``select``
variant that keeps, per (dataset, setting), the variant whose flow has the
lowest NLL on the clean validation rows: model selection decided from
training rows alone.  With too few validation rows for early stopping,
``select`` keeps ``default``.  Appends ``dataset,setting,seed,variant,auroc,
val_nll`` rows to ``--out`` and skips (dataset, setting) pairs already there.

    python benchmarks/probe_params.py --data-dir ../shared/datasets/adbench \\
        --datasets glass,letter --variants "default;n_transforms=2" --out /tmp/params.csv
"""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Any

import torch
from probe_common import append_rows, pending_splits, probe_parser, select_by_validation
from sklearn.metrics import roc_auc_score

from nrad.detector import NRDE


def parse_variant(text: str) -> dict[str, Any]:
    """``"n_transforms=2,hidden_units=32"`` -> keyword arguments; ``"default"`` -> none."""
    if text == "default":
        return {}
    pairs = (item.split("=", 1) for item in text.split(","))
    return {key.strip(): ast.literal_eval(value.strip()) for key, value in pairs}


def run(X_train: Any, X_test: Any, y_test: Any, name: str, params: dict[str, Any]) -> dict[str, Any]:
    model = NRDE(random_state=0, **params).fit(X_train)
    auroc = roc_auc_score(y_test, model.anomaly_score(X_test))
    return dict(variant=name, auroc=auroc, val_nll=min(model.validation_loss_curve_, default=math.nan))


def main() -> None:
    parser = probe_parser(__doc__)
    parser.add_argument("--variants", default="default;n_transforms=2;n_transforms=4,hidden_units=32")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    variants = {name: parse_variant(name) for name in args.variants.split(";")}
    for name, setting, X_train, X_test, y_test in pending_splits(args):
        rows = [run(X_train, X_test, y_test, v, p) for v, p in variants.items()]
        default = next((r for r in rows if r["variant"] == "default"), rows[0])
        best = select_by_validation(rows, default)
        rows = [
            dict(dataset=name, setting=setting, seed=0, **r) for r in [*rows, {**best, "variant": "select"}]
        ]
        append_rows(args.out, rows)


if __name__ == "__main__":
    main()
