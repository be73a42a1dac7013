"""Keep the rows of NRDE and the vanilla flow fitted with patience_steps=500 (accuracy study).

Commit 762e60e made early stopping wait at least 500 gradient steps the
default and re-ran every ``nrde`` and ``vanilla-flow`` row of
results/runs.csv with it (``nrad bench ... --methods nrde,vanilla-flow``,
all five settings seed 0, vanilla and transductive seeds 1-2); the next
commit made it the opt-in ``patience_steps`` parameter instead
(research/notes.md section 10) and restored the rows of the unchanged
default.  This copies those re-run rows out of ``--commit``'s runs.csv
into a probe CSV (``dataset,setting,seed,variant,auroc,fit_s``, variant =
method + ``-patience-steps-500``) so that research/results/ABLATION.md can set them
beside the default.  Needs git and the repository's history.  To refit
instead: check out that commit and run the ``nrad bench`` command above, or,
for NRDE at seed 0, ``python research/probe_params.py ... --variants
"default;patience_steps=500"`` at any later commit (checked: vertebral and
letter, vanilla and noisy-gauss-0.5, equal to these rows).

    python research/probe_patience.py --commit 762e60e --out research/results/probe_patience.csv
"""

from __future__ import annotations

import argparse
import io
import subprocess
from pathlib import Path

import pandas as pd

from nrad.io import atomic_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commit", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    text = subprocess.run(
        ["git", "show", f"{args.commit}:results/runs.csv"], check=True, capture_output=True, text=True
    ).stdout
    runs = pd.read_csv(io.StringIO(text))
    runs = runs[runs.method.isin(["nrde", "vanilla-flow"]) & (runs.status == "ok")]
    out = runs.assign(variant=runs.method + "-patience-steps-500")[
        ["dataset", "setting", "seed", "variant", "auroc", "fit_s"]
    ]
    with atomic_path(args.out) as tmp:
        out.to_csv(tmp, index=False)
    print(f"{len(out)} rows -> {args.out}")


if __name__ == "__main__":
    main()
