"""What explanations cost, one flow call per column and pair against several per call.

On benchmarks/scale.py's table (5 latent factors, 20 columns, 54 related pairs), one fitted
model, the same rows explained two ways in one process, alternating: ``old`` (module constants
set for the run, research only: a flow call per column and per pair, the scoring kernel built per
call, every related pair for every row) and ``new`` (as shipped).  Prints the seconds and whether
``top_features`` agree.

Usage::

    python research/probe_explain_cost.py --rows 20000 --explain 20
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

import nrad.explain as explain
from nrad.kernel import ScoringKernel
from nrad.table import fit_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from scale import write_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20_000, help="rows the model is fitted on")
    parser.add_argument("--explain", type=int, default=20, help="rows explained")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "table.parquet"
        write_table(path, args.rows, 20, 0)
        frame = pq.read_table(path).to_pandas()
    model = fit_table(frame, random_state=0)
    print(f"{args.rows:,} rows x 20 columns, {len(model.numeric.related)} related pairs")
    rows = frame.iloc[: args.explain]
    model.score_rows(rows.iloc[:5], explain=True)  # warm-up
    shipped = explain.TRIAL_CELLS, explain.PAIR_CANDIDATES, ScoringKernel.__dict__["of"]
    ways = {
        "old": (1, 10**9, classmethod(lambda cls, flow: cls(flow))),
        "new": shipped,
    }
    named = {}
    for _ in range(args.repeats):
        for name, (cells, candidates, kernel_of) in ways.items():
            explain.TRIAL_CELLS, explain.PAIR_CANDIDATES = cells, candidates
            ScoringKernel.of = kernel_of
            start = time.perf_counter()
            named[name] = model.score_rows(rows, explain=True)[0]["top_features"].tolist()
            print(f"{name}: {time.perf_counter() - start:.2f} s for {args.explain} rows explained", flush=True)
    explain.TRIAL_CELLS, explain.PAIR_CANDIDATES, ScoringKernel.of = shipped
    same = np.mean([a == b for a, b in zip(named["old"], named["new"], strict=True)])
    print(f"same top_features: {same:.3f}")


if __name__ == "__main__":
    main()
