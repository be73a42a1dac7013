"""Which benchmark tables hold a column read from few values: one all but one or two of whose values
are one value (read as a category), or a number with fewer than ``nrad.numeric.FEW_VALUES`` values
(read by its predictive tail)?  Tables with neither are scored exactly as before those two rules.

Covers the clean-table generators of ``benchmarks/fdr.py`` (at the sizes and seeds given), the
planted families of ``benchmarks/main_job.py`` (their planted and clean tables, 3,000 rows) and,
with ``--data-dir``, the training splits of the ADBench tables in the ``transductive`` and
``vanilla`` settings.

Usage::

    python research/probe_few_values.py --rows 150,500,3000 --seeds 0-9 --data-dir DATA
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmark_tables import benchmark_tables, report, table_arguments  # noqa: E402

from nrad.numeric import FEW_VALUES  # noqa: E402
from nrad.preprocess import encode, fit_schema  # noqa: E402


def few(frame: pd.DataFrame) -> tuple[int, int]:
    """(columns read as a category for too few values off their mode, numbers with < FEW_VALUES values)."""
    schema = fit_schema(frame)
    categories = sum("too few others to read as numbers" in (c.note or "") for c in schema.columns)
    present = np.isfinite(encode(schema, frame).numeric).sum(axis=0)
    return int(categories), int((present < FEW_VALUES).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    table_arguments(parser)
    args = parser.parse_args()
    print("(categories, numbers from few values) per table; tables with neither are not listed")
    touched = set()
    for label, tables in benchmark_tables(args):
        got = {role: few(frame) for role, frame in tables.items()}
        report(label, {role: found if any(found) else None for role, found in got.items()})
        if label.startswith("adbench") and any(any(found) for found in got.values()):
            touched.add(label.split()[1])
    print("ADBench tables touched:", ",".join(sorted(touched)))


if __name__ == "__main__":
    main()
