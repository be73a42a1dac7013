"""What costs the table model on numeric benchmark tables fitted on themselves (transductive)?

For each dataset (the benchmark protocol's ``transductive`` split, one seed)
prints the AUROC of:

* ``cross-fit``: what ``nrad detect`` runs (method ``default``): each row
  scored by the flow that did not see it;
* ``mean-of-flows``: the same model, each row scored by the mean of all its
  flows (one of which saw it);
* ``one-flow``: one NRDE flow fitted on all rows of the table model's
  scaled numbers, scoring them in-sample (plus the soft-clip and tail terms);
* ``no-tail-jacobian``: ``cross-fit`` without the tail weight's log-Jacobian
  in the score (the score before it was added: ``cross-fit`` minus
  ``NumericModel.tail_terms`` of each row);
* ``raw-nrde``: NRDE on the columns as the benchmark scales them (method ``nrde``);
* ``no-lattice``: ``cross-fit`` with lattice dequantization switched off
  (the probe sets ``nrad.numeric.LATTICE_MIN_LEVELS``; not a product option).

    python research/probe_crossfit.py --data-dir data/adbench --datasets breastw,WBC,WDBC
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from probe_common import protocol_splits
from sklearn.metrics import roc_auc_score

import nrad.numeric
from nrad.nrde import NRDE
from nrad.table import LATENT_TAIL, fit_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    # Scaled as `nrad bench` scales them, so cross-fit matches results/runs.csv's `default`.
    for name, _, X, _, y in protocol_splits(args.data_dir, args.datasets, "transductive", args.seed):
        df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
        model = fit_table(df, random_state=args.seed)
        scores = {
            "cross-fit": model.score_rows(df, in_sample=True)[0]["anomaly_score"],
            "mean-of-flows": model.score_rows(df)[0]["anomaly_score"],
        }
        prep = model.prepare(df)
        tail = model.numeric.tail_terms(model.numeric.standardize(prep.y, prep.codes)).sum(axis=1)
        scores["no-tail-jacobian"] = scores["cross-fit"] - tail
        z, clip = model.numeric_z(prep.y, prep.codes)
        z = model.fill_missing(z)
        one = NRDE(random_state=args.seed, latent_tail=LATENT_TAIL).fit(z)
        scores["one-flow"] = one.anomaly_score(z) + clip.sum(axis=1)
        scores["raw-nrde"] = NRDE(random_state=args.seed).fit(X).anomaly_score(X)
        default_levels = nrad.numeric.LATTICE_MIN_LEVELS
        nrad.numeric.LATTICE_MIN_LEVELS = 10**9
        try:
            no_lattice = fit_table(df, random_state=args.seed)
            scores["no-lattice"] = no_lattice.score_rows(df, in_sample=True)[0]["anomaly_score"]
        finally:
            nrad.numeric.LATTICE_MIN_LEVELS = default_levels
        cells = ", ".join(f"{k} {roc_auc_score(y, v):.3f}" for k, v in scores.items())
        print(f"{name} (seed {args.seed}, {len(df)} rows): {cells}", flush=True)


if __name__ == "__main__":
    main()
