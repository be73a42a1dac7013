"""NRDE with other constructor parameters, and the variant chosen by held-out likelihood (accuracy probe).

Exploratory.  Fits NRDE once per variant (``name=value,...`` groups of
constructor parameters; ``default`` is NRDE's defaults) per (dataset,
setting) under the benchmark protocol (``--seed``, default 0: the split's
seed and NRDE's ``random_state``, as ``nrad bench`` pairs them), and adds a ``select``
variant that keeps, per (dataset, setting), the variant whose flow has the
lowest NLL on the clean validation rows: model selection decided from
training rows alone (only when ``default`` is among the variants).  With
too few validation rows for early stopping, ``select`` keeps ``default``.

Two pseudo-parameters are not NRDE's: ``penalty_warmup=K`` ramps the IMA
penalty's weight linearly from 0 to ``penalty_weight`` over the first K
gradient steps (the flow starts at PCA whitening, where the penalty is
zero, so the ramp lets likelihood bend the flow first); ``size=scaled``
sets the flow's size from the training table's shape by
:func:`scaled_size`.  Appends ``dataset,setting,seed,variant,auroc,
val_nll`` rows to ``--out`` and skips (dataset, setting) pairs already there.

    python research/probe_params.py --data-dir ../shared/datasets/adbench \\
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

from nrad.nrde import NRDE


def parse_variant(text: str) -> dict[str, Any]:
    """``"n_transforms=2,hidden_units=32"`` -> keyword arguments; ``"default"`` -> none."""
    if text == "default":
        return {}
    pairs = (item.split("=", 1) for item in text.split(","))
    return {key.strip(): _value(value.strip()) for key, value in pairs}


def _value(text: str) -> Any:
    """A Python literal, else the bare word itself (``size=scaled``)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


class WarmupNRDE(NRDE):
    """NRDE whose penalty weight ramps from 0 over the first ``warmup`` steps (probe only)."""

    warmup = 1000

    def _train(self, Z: Any, rng: Any, lr: float) -> Any:
        self._step = 0  # a retried fit ramps again
        return super()._train(Z, rng, lr)

    def _loss(self, flow: Any, batch: Any, gen: Any, penalize: bool) -> Any:
        # The parent reads self.penalty_weight; scale it for this step only.
        full, ramp = self.penalty_weight, min(1.0, self._step / self.warmup)
        self._step += 1
        self.penalty_weight = full * ramp
        try:
            return super()._loss(flow, batch, gen, penalize)
        finally:
            self.penalty_weight = full


def scaled_size(n: int, d: int) -> dict[str, int]:
    """Flow size from the table's shape: conditioner width about twice the
    features (so wide tables get no bottleneck narrower than d), 32-256;
    4 coupling layers below 1,000 training rows, 6 up to 10,000, 8 above."""
    width = int(min(256, max(32, 2 ** math.ceil(math.log2(2 * d)))))
    depth = 4 if n < 1000 else 6 if n <= 10_000 else 8
    return dict(n_transforms=depth, hidden_units=width)


def build(X_train: Any, params: dict[str, Any], seed: int = 0) -> NRDE:
    params = dict(params)
    warmup = params.pop("penalty_warmup", None)
    size = params.pop("size", None)
    if size not in (None, "scaled"):
        raise ValueError(f"size={size!r}: the only size pseudo-parameter is size=scaled")
    if size == "scaled":
        params.update(scaled_size(*X_train.shape))
    if warmup is None:
        return NRDE(random_state=seed, **params)
    model = WarmupNRDE(random_state=seed, **params)
    model.warmup = warmup
    return model


def run(
    X_train: Any, X_test: Any, y_test: Any, name: str, params: dict[str, Any], seed: int
) -> dict[str, Any]:
    model = build(X_train, params, seed).fit(X_train)
    auroc = roc_auc_score(y_test, model.anomaly_score(X_test))
    return dict(variant=name, auroc=auroc, val_nll=min(model.validation_loss_curve_, default=math.nan))


def main() -> None:
    parser = probe_parser(__doc__)
    parser.add_argument("--variants", default="default;n_transforms=2;n_transforms=4,hidden_units=32")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    variants = {name: parse_variant(name) for name in args.variants.split(";")}
    for name, setting, X_train, X_test, y_test in pending_splits(args):
        rows = [run(X_train, X_test, y_test, v, p, args.seed) for v, p in variants.items()]
        default = next((r for r in rows if r["variant"] == "default"), None)
        if default is not None:
            rows.append({**select_by_validation(rows, default), "variant": "select"})
        rows = [dict(dataset=name, setting=setting, seed=args.seed, **r) for r in rows]
        append_rows(args.out, rows)


if __name__ == "__main__":
    main()
