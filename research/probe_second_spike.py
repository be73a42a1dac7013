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

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fdr  # noqa: E402  (the clean-table generators)
import main_job  # noqa: E402  (the planted families)

from nrad.bench.runner import parse_seeds  # noqa: E402
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="150,500,3000")
    parser.add_argument("--seeds", default="0-9", help="of the clean tables")
    parser.add_argument("--main-seeds", default="0-4", help="of the planted families")
    parser.add_argument("--bench-seeds", default="0-2", help="of the ADBench splits")
    parser.add_argument("--data-dir", type=Path, default=None, help="ADBench .npz files")
    args = parser.parse_args()
    print("(column, spike share) of the columns whose spike the second-spike rule refuses")
    for name, make in fdr.NULLS.items():
        for rows in (int(r) for r in args.rows.split(",")):
            for seed in parse_seeds(args.seeds):
                got = [refused(make(rows, 10_000 + seed)), refused(make(rows, 20_000 + seed))]
                if any(got):
                    print(f"  fdr {name} {rows} seed {seed}: scored {got[0]}, clean twin {got[1]}")
    for name in main_job.IDS:
        for seed in parse_seeds(args.main_seeds):
            got = [refused(main_job.make(name, 3000, 20, 1000 + seed).frame),
                   refused(main_job.make(name, 3000, 0, 2000 + seed).frame)]  # fmt: skip
            if any(got):
                print(f"  main job {name} seed {seed}: planted {got[0]}, clean {got[1]}")
    if args.data_dir is None:
        return
    from nrad.bench.datasets import dataset_paths, load_dataset
    from nrad.bench.settings import make_split

    for name, path in dataset_paths(args.data_dir).items():
        data = load_dataset(path)
        for setting in ("transductive", "vanilla"):
            for seed in parse_seeds(args.bench_seeds):
                X = make_split(data, setting, seed).X_train
                got = refused(pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]))
                if got:
                    print(f"  adbench {name} {setting} seed {seed}: {got}")


if __name__ == "__main__":
    main()
