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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fdr  # noqa: E402  (the clean-table generators)

from nrad.bench.runner import parse_seeds  # noqa: E402
from nrad.numeric import FEW_VALUES  # noqa: E402
from nrad.preprocess import encode, fit_schema  # noqa: E402
from nrad.synthetic import FAMILIES  # noqa: E402


def few(frame: pd.DataFrame) -> tuple[int, int]:
    """(columns read as a category for too few values off their mode, numbers with < FEW_VALUES values)."""
    schema = fit_schema(frame)
    categories = sum("too few others to read as numbers" in (c.note or "") for c in schema.columns)
    present = np.isfinite(encode(schema, frame).numeric).sum(axis=0)
    return int(categories), int((present < FEW_VALUES).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="150,500,3000")
    parser.add_argument("--seeds", default="0-9", help="of the clean tables")
    parser.add_argument("--main-seeds", default="0-4", help="of the planted families")
    parser.add_argument("--bench-seeds", default="0-2", help="of the ADBench splits")
    parser.add_argument("--data-dir", type=Path, default=None, help="ADBench .npz files")
    args = parser.parse_args()
    seeds = parse_seeds(args.seeds)
    print("(categories, numbers from few values) per table; tables with neither are not listed")
    for name, make in fdr.NULLS.items():
        for rows in (int(r) for r in args.rows.split(",")):
            for seed in seeds:
                got = [few(make(rows, 10_000 + seed)), few(make(rows, 20_000 + seed))]
                if any(a or b for a, b in got):
                    print(f"  fdr {name} {rows} seed {seed}: scored {got[0]}, clean twin {got[1]}")
    for name, make in FAMILIES.items():
        for seed in parse_seeds(args.main_seeds):
            planted = make(3000, 20, random_state=1000 + seed).frame
            clean = make(3000, 0, random_state=2000 + seed).frame
            got = [few(planted), few(clean)]
            if any(a or b for a, b in got):
                print(f"  main job {name} seed {seed}: planted {got[0]}, clean {got[1]}")
    if args.data_dir is None:
        return
    from nrad.bench.datasets import dataset_paths, load_dataset
    from nrad.bench.settings import make_split

    touched = set()
    for name, path in dataset_paths(args.data_dir).items():
        data = load_dataset(path)
        for setting in ("transductive", "vanilla"):
            for seed in parse_seeds(args.bench_seeds):
                X = make_split(data, setting, seed).X_train
                got = few(pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]))
                if any(got):
                    touched.add(name)
                    print(f"  adbench {name} {setting} seed {seed}: {got}")
    print("ADBench tables touched:", ",".join(sorted(touched)))


if __name__ == "__main__":
    main()
