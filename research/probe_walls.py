"""Print every single-column wall the table model finds, per table of the benchmark families and
of the clean-table generators, so that a change to the walls can be read table by table (run it
on two commits and compare the outputs).

Usage::

    python research/probe_walls.py --seeds 0-1 > walls.txt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from fdr import NULLS  # noqa: E402

from nrad.bench.runner import parse_seeds  # noqa: E402
from nrad.synthetic import FAMILIES  # noqa: E402
from nrad.table import fit_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-1")
    args = parser.parse_args()
    for name in NULLS:
        for seed in parse_seeds(args.seeds):
            tables = [("clean", NULLS[name](3000, 10_000 + seed))]
            if name in FAMILIES:
                tables.insert(0, ("planted", FAMILIES[name](3000, 20, random_state=1000 + seed).frame))
            for label, frame in tables:
                model = fit_table(frame, random_state=0, max_epochs=1)
                walls, names = model.walls, model.schema.numeric_names
                found = [
                    f"{names[j]}[{walls.low[j]:g},{walls.high[j]:g}]"
                    for j in range(len(names))
                    if np.isfinite(walls.low[j]) or np.isfinite(walls.high[j])
                ]
                print(name, label, seed, " ".join(found), flush=True)


if __name__ == "__main__":
    main()
