"""The tables the benchmarks build, for probes that ask how each is read.

:func:`benchmark_tables` yields every table of the FDR benchmark's clean generators (the scored
table and its clean twin of a run), of the main job's planted families (planted and clean), and
optionally of the real-tables benchmark and the ADBench training splits in ``transductive`` and
``vanilla``, each with a label that names it.  :func:`table_arguments` adds the options that
choose them to a probe's parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fdr  # noqa: E402  (the clean-table generators)
import main_job  # noqa: E402  (the planted families)

from nrad.bench.runner import parse_seeds  # noqa: E402


def table_arguments(parser: argparse.ArgumentParser) -> None:
    """--rows, --seeds, --main-seeds, --bench-seeds, --data-dir and --real."""
    parser.add_argument("--rows", default="150,500,3000", help="of the clean tables")
    parser.add_argument("--seeds", default="0-9", help="of the clean tables")
    parser.add_argument("--main-seeds", default="0-4", help="of the planted families")
    parser.add_argument("--bench-seeds", default="0-2", help="of the ADBench splits")
    parser.add_argument("--data-dir", type=Path, default=None, help="ADBench .npz files")
    parser.add_argument("--real", action="store_true", help="the tables of benchmarks/real_tables.py")


def benchmark_tables(args: argparse.Namespace) -> Iterator[tuple[str, dict[str, pd.DataFrame]]]:
    """(label, {role: table}) for each table the arguments of :func:`table_arguments` choose."""
    for name, make in fdr.NULLS.items():
        for rows in (int(r) for r in args.rows.split(",")):
            for seed in parse_seeds(args.seeds):
                yield f"fdr {name} {rows} seed {seed}", {
                    "scored": make(rows, 10_000 + seed), "clean twin": make(rows, 20_000 + seed)
                }  # fmt: skip
    for name in main_job.IDS:
        for seed in parse_seeds(args.main_seeds):
            yield (
                f"main job {name} seed {seed}",
                {
                    "planted": main_job.make(name, 3000, 20, 1000 + seed).frame,
                    "clean": main_job.make(name, 3000, 0, 2000 + seed).frame,
                },
            )
    if args.real:
        import real_tables

        for table in real_tables.TABLES:
            yield f"real table {table.package}::{table.name}", {"table": real_tables.load(table)}
    if args.data_dir is None:
        return
    from nrad.bench.datasets import dataset_paths, load_dataset
    from nrad.bench.settings import make_split

    for name, path in dataset_paths(args.data_dir).items():
        data = load_dataset(path)
        for setting in ("transductive", "vanilla"):
            for seed in parse_seeds(args.bench_seeds):
                X = make_split(data, setting, seed).X_train
                yield (
                    f"adbench {name} {setting} seed {seed}",
                    {"train": pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])},
                )


def report(label: str, got: dict[str, object]) -> None:
    """Print a table's findings per role when any role found something."""
    if any(got.values()):
        print(f"  {label}: " + ", ".join(f"{role} {found}" for role, found in got.items()), flush=True)


def list_findings(doc: str, header: str, find: Callable[[pd.DataFrame], object]) -> None:
    """A probe's command line: the tables chosen on it, and ``find``'s findings on each."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    table_arguments(parser)
    args = parser.parse_args()
    print(header)
    for label, tables in benchmark_tables(args):
        report(label, {role: find(frame) for role, frame in tables.items()})
