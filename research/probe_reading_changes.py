"""Which tables hold a column whose steps rule (``nrad.cells.Walls.lattice_base``) read a lattice
the column's values are not on, or a column of whole numbers named like a key that repeats, of
many values (an identifier now, a number before)?

The steps rule takes the lattice spacing the numeric model reads, which for a column with a spike
comes from the values off the spike (speeds of 95, 110 and 140 beside a spike at 85: a step of 15).
Its base was the column's most common value, and the check that the values lie on steps from it
looked only at the values that did: from a spike off the others' lattice it found one value on
it, passed, and put every other value of the column between steps (p = 0).  The rule now asks that
all but the few values ``lattice_spacing`` allows lie on the lattice.  This lists, per table, the
columns where the two readings differ and how many of its rows the first put between steps; a
table with none is scored as before.  Then the keys of many values (``nrad.preprocess.KEY_GROUPS``:
named like a key, whole numbers, fewer than half distinct), listed as ``(column, "key")``.  Covers the
clean-table generators of ``benchmarks/fdr.py`` (both tables of a run), the planted families of
``benchmarks/main_job.py`` (planted and clean), the tables of ``benchmarks/real_tables.py``
(``--real``) and, with ``--data-dir``, the ADBench training splits in ``transductive`` and
``vanilla``.

Usage::

    python research/probe_reading_changes.py --rows 150,500,3000 --seeds 0-19 --real --data-dir DATA
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmark_tables import list_findings  # noqa: E402

from nrad.cells import LATTICE_RULE_LEVELS, MIN_CELL_VALUES, _lattice_base  # noqa: E402
from nrad.numeric import lattice_spacing, off_lattice  # noqa: E402
from nrad.preprocess import REPEATED_KEY_SHARE, _repeated_key, encode, fit_schema  # noqa: E402


def first_reading(x: np.ndarray, spacing: float) -> float:
    """The steps rule's base as first written (looking only at the values on the lattice)."""
    seen, counts = np.unique(x, return_counts=True)
    if not spacing > 0 or len(seen) > LATTICE_RULE_LEVELS:
        return np.nan
    base = float(seen[np.argmax(counts)])
    on = seen[~off_lattice(seen, base, spacing)]
    return base if np.allclose(np.diff(on), spacing, rtol=1e-6, atol=0.0) else np.nan


def _new_key(col: pd.Series) -> bool:
    """A key by its many values alone (``KEY_GROUPS``): fewer than half its values distinct."""
    return _repeated_key(col) and col.nunique() < REPEATED_KEY_SHARE * col.notna().sum()


def differing(frame: pd.DataFrame) -> list[tuple[str, int | str]]:
    """(column, rows the first reading put between steps) where the two readings differ, then
    (column, "key") for each repeated key."""
    keys: list[tuple[str, int | str]] = [(str(c), "key") for c in frame.columns if _new_key(frame[c])]
    frame = frame.drop(columns=[c for c, _ in keys])
    schema = fit_schema(frame)
    enc = encode(schema, frame)
    names = [schema.columns[j].name for j in schema.numeric_sources]
    out = []
    for j, name in enumerate(names):
        spike = schema.columns[schema.numeric_sources[j]].spike
        spacing = lattice_spacing(enc.numeric[:, j])  # as the numeric model reads it: spike cells NaN
        raw = enc.numeric[:, j].copy()
        if spike is not None and enc.at_spike is not None:
            raw[enc.at_spike[:, j]] = spike
        x = raw[np.isfinite(raw)]
        if len(x) < MIN_CELL_VALUES:
            continue
        old, new = first_reading(x, spacing), _lattice_base(x, spacing)
        if not (np.isnan(old) and np.isnan(new)) and old != new:
            between = int(off_lattice(x, old, spacing).sum()) if np.isfinite(old) else 0
            out.append((name, between))
    return out + keys


HEADER = "(column, rows put between steps) of the columns whose steps rule the fix changes; (column, key)"


def main() -> None:
    list_findings(__doc__, HEADER, differing)


if __name__ == "__main__":
    main()
