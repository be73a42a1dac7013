"""What flags rows of small clean tables scored against themselves (``nrad detect``), or against a
model fitted on a clean twin (``--mode fit``: ``nrad fit`` + ``nrad score``)?

For each clean-table generator of ``benchmarks/fdr.py`` at the sizes and seeds given, fits the
table model as ``benchmarks/fdr.py`` does, and for every row flagged at
q = 0.1 prints its channels' p-values (:func:`probe_channels.channels`: row score, density, robust
distance, smallest numeric cell, smallest categorical cell), the test that decided, and how many
of the table's rows share the row's rarest category level: every flag here is false.

Usage::

    python research/probe_small_false_flags.py --rows 150,500 --seeds 0-4
    python research/probe_small_false_flags.py --mode fit --nulls shipments --rows 150 --seeds 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fdr  # noqa: E402  (the clean-table generators)
from probe_channels import channels  # noqa: E402

from nrad.bench.runner import parse_seeds  # noqa: E402
from nrad.flags import benjamini_hochberg  # noqa: E402
from nrad.table import fit_table  # noqa: E402


def rarest_level(df: pd.DataFrame, row: int) -> str:
    """The row's category level that the fewest rows share, as ``column=level (count)``."""
    best = ""
    fewest = len(df) + 1
    for name in df.columns:
        col = df[name]
        if col.dtype != object or col.nunique() > 50 or pd.isna(col.iloc[row]):
            continue
        count = int((col == col.iloc[row]).sum())
        if count < fewest:
            best, fewest = f"{name}={col.iloc[row]} ({count})", count
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="150,500")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--nulls", default=",".join(fdr.NULLS))
    parser.add_argument("--mode", choices=("detect", "fit"), default="detect")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    for name in args.nulls.split(","):
        for rows in (int(r) for r in args.rows.split(",")):
            for seed in parse_seeds(args.seeds):
                df = fdr.NULLS[name](rows, 10_000 + seed)
                in_sample = args.mode == "detect"
                model = fit_table(df if in_sample else fdr.NULLS[name](rows, 20_000 + seed), random_state=seed)
                out = channels(model, df, in_sample=in_sample)
                flagged = np.flatnonzero(benjamini_hochberg(out["p"].to_numpy(), 0.1))
                if not len(flagged):
                    continue
                print(f"{name} {rows} seed {seed}: {len(flagged)} flagged")
                shown = out.iloc[flagged].assign(rarest=[rarest_level(df, r) for r in flagged])
                print(shown.drop(columns=["score"]).to_string(float_format=lambda v: f"{v:.2g}"))


if __name__ == "__main__":
    main()
