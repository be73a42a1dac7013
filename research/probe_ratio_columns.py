"""Which numeric columns of the study's tables the value-in-column test reads in ratios, and which
runs a change of that rule can alter.

``nrad.cells.Ratios`` reads a positive column's lower side in ratios.  Its rule has had two forms:
``q01``, the column's 1% quantile above 0 (at least five lattice steps, values spanning a factor 10
between the 1% quantiles), a value at or below a thousandth of ``q01`` read there; and ``all``, the
same where every training value is above 0, a value at or below 0 read at half the smallest.  A
run's cell tests are the same under both unless a column read by the first holds a training value
at or below 0, or the training or scored rows hold a value below twice the first's floor (a
dequantized lattice value may lie half a step lower).  This lists, per run of the main job
(``benchmarks/main_job.py``: tables of seed 1000 + s, clean tables 2000 + s) or of the clean-table
study (``benchmarks/fdr.py``: 10,000 + s scored, 20,000 + s clean), the columns where the rules
differ; runs not listed flag exactly alike under both.

Usage::

    python research/probe_ratio_columns.py main
    python research/probe_ratio_columns.py fdr --rows 3000 --seeds 0-9
    python research/probe_ratio_columns.py fdr --rows 3000 --seeds 10-19 \
        --nulls lab_panel,properties,wide,households
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from nrad.encoding import drop_columns
from nrad.numeric import lattice_spacing
from nrad.preprocess import encode, fit_schema

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))


def differing(train: pd.DataFrame, scored: pd.DataFrame, id_column: str | None, new_rows: bool) -> list[str]:
    """The columns whose lower side the two rules read differently for this run."""
    features = drop_columns(train, id_column, (), "training data")
    schema = fit_schema(features)
    if id_column is None:  # as fit_table: a unique key is the row id
        unique = [c for c in schema.identifiers if features[c].notna().all() and features[c].is_unique]
        if unique:
            id_column = unique[0]
            features = drop_columns(train, id_column, (), "training data")
            schema = fit_schema(features)
    units = encode(schema, features).numeric
    read = encode(schema, drop_columns(scored, id_column, (), "data")).numeric if new_rows else units
    names = [name for c in schema.columns for name in c.numeric_features()]
    out = []
    for j in range(units.shape[1]):
        seen = units[:, j][np.isfinite(units[:, j])]
        if len(seen) < 100:
            continue
        low, high = np.quantile(seen, [0.01, 0.99])
        if not (low > 0 and low >= 5 * lattice_spacing(units[:, j]) and high >= 10 * low):
            continue
        scored_values = read[:, j][np.isfinite(read[:, j])]
        if seen.min() <= 0:
            out.append(f"{names[j]} (training value at or below 0)")
        elif (scored_values < 2e-3 * low).any() or (seen < 2e-3 * low).any():
            out.append(f"{names[j]} (a value below the first rule's floor)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", choices=("main", "fdr"))
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--nulls", default="")
    args = parser.parse_args()
    first, _, last = args.seeds.partition("-")
    seeds = range(int(first), int(last or first) + 1)
    if args.study == "main":
        import main_job

        for family, ident in main_job.IDS.items():
            for seed in seeds:
                planted = main_job.make(family, args.rows, 20, 1000 + seed).frame
                clean = main_job.make(family, args.rows, 0, 2000 + seed).frame
                for way, train, new_rows in (("detect", planted, False), ("fit + score", clean, True)):
                    if columns := differing(train, planted, ident, new_rows):
                        print(family, seed, way, "; ".join(columns), flush=True)
    else:
        from fdr import NULLS

        for generator in args.nulls.split(",") if args.nulls else NULLS:
            for seed in seeds:
                data, clean = (
                    NULLS[generator](args.rows, 10_000 + seed),
                    NULLS[generator](args.rows, 20_000 + seed),
                )
                for mode, train, new_rows in (("detect", data, False), ("fit", clean, True)):
                    if columns := differing(train, data, None, new_rows):
                        print(generator, mode, seed, args.rows, "; ".join(columns), flush=True)


if __name__ == "__main__":
    main()
