"""Which tables hold a column whose spike the second-spike rule takes away, and how much of the
column that spike holds?

A spike (``nrad.preprocess.spike_value``) is refused on an even lattice when one value holds half
of the values off it.  This lists every numeric column of a table where the rule fires, with the
share of the present values the spike holds, for the clean-table generators of
``benchmarks/fdr.py``, the planted families of ``benchmarks/main_job.py`` and, with
``--data-dir``, the training splits of the ADBench tables in ``transductive`` and ``vanilla``.
A cap on the spike's share above which the rule does not fire changes exactly the columns listed
with a share at or above it.

Usage::

    python research/probe_second_spike.py --rows 150,500,3000 --seeds 0-19 --data-dir DATA
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmark_tables import list_findings  # noqa: E402

from nrad.preprocess import EDGE_SPIKE_SHARE, SPIKE_REST_LEVELS, SPIKE_SHARE, fit_schema  # noqa: E402


def refused(frame: pd.DataFrame) -> list[tuple[str, float]]:
    """(column, spike share) of each numeric column that has a spike by share and levels but none read."""
    out = []
    for plan in fit_schema(frame).columns:
        if plan.kind != "numeric" or plan.spike is not None or plan.name not in frame:
            continue
        values = pd.to_numeric(frame[plan.name], errors="coerce").dropna()
        counts = values.value_counts()
        if len(counts) - 1 < SPIKE_REST_LEVELS:
            continue
        share = counts.iloc[0] / len(values)
        at_edge = counts.index[0] in (values.min(), values.max())
        if share >= (EDGE_SPIKE_SHARE if at_edge else SPIKE_SHARE):
            out.append((plan.name, round(float(share), 3)))
    return out


HEADER = "(column, spike share) of the columns whose spike the second-spike rule refuses"


def main() -> None:
    list_findings(__doc__, HEADER, refused)


if __name__ == "__main__":
    main()
