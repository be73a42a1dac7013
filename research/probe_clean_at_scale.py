"""Why a clean table is flagged: each flagged row's channels, the table built as benchmarks/fdr.py builds it.

A clean table of ``--rows`` rows from one of benchmarks/fdr.py's null
generators, fitted on itself (``detect``) or on its clean twin (``fit``),
exactly as the benchmark does: for every row flagged at q = 0.1 (and the
top three), the p-value of each channel (row score, density, robust
distance, the smallest numeric cell, the smallest categorical cell), the
combined p-value and what decided it, then the first five such rows.

Usage::

    python research/probe_clean_at_scale.py --generator trips --mode detect --seed 2 --rows 30000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_channels import channels  # noqa: E402

from nrad.flags import bh_cutoff  # noqa: E402
from nrad.table import fit_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--generator", default="trips")
    parser.add_argument("--mode", choices=("detect", "fit"), default="detect")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", type=int, default=30000)
    args = parser.parse_args()
    saved, sys.argv = sys.argv, sys.argv[:1]
    import fdr  # the benchmark's generators and seeds

    sys.argv = saved
    data = fdr.NULLS[args.generator](args.rows, 10_000 + args.seed)
    clean = fdr.NULLS[args.generator](args.rows, 20_000 + args.seed)
    model = fit_table(data if args.mode == "detect" else clean, random_state=args.seed)
    got = channels(model, data, args.mode == "detect")
    cut = bh_cutoff(got["p"].to_numpy(), len(got), 0.1)
    got["flagged"] = got["p"] <= cut
    pd.set_option("display.width", 250)
    print(f"{args.generator} {args.mode} seed {args.seed}, {args.rows} rows: BH cutoff at q = 0.1 {cut:.3g}, "
          f"{int(got['flagged'].sum())} flagged")
    shown = got[got["flagged"] | (got["rank"] <= 3)].sort_values("p")
    print(shown.to_string(float_format=lambda v: f"{v:.3g}"))
    for i in shown.index[:5]:
        print(data.loc[i].to_dict())


if __name__ == "__main__":
    main()
