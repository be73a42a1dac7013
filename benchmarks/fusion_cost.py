"""What the fused score costs beside the density alone: fit seconds, scoring rows/s, model file size.

Usage: python benchmarks/fusion_cost.py [--rows 20000] [--score-rows 1000000] [--cols 20]

Fits the table model twice on the same synthetic table (correlated
Gaussian numbers with a few categories; ``nrad.synthetic``), once with
``detector="fused"`` (the default) and once with ``detector="nrde"``, then
scores ``--score-rows`` rows (the table tiled) in memory with each, one
after the other in the same run, so the ratios compare like with like.
Also prints where the fused model's scoring time goes (the density and the
neighbour members, which new rows are scored by) and the model files'
sizes.  Run it on an otherwise idle machine, or pass ``--busy`` to run it
beside one CPU-bound process.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from nrad.model_file import save_model
from nrad.table import fit_table


def table(rows: int, cols: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(cols, cols)) / np.sqrt(cols)
    frame = pd.DataFrame(rng.normal(size=(rows, cols)) @ mixing, columns=[f"x{j}" for j in range(cols)])
    frame["site"] = rng.choice([f"s{k}" for k in range(8)], rows)
    frame["kind"] = rng.choice(["a", "b", "c"], rows)
    return frame


def busy_loop() -> None:
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000, help="training rows")
    parser.add_argument("--score-rows", type=int, default=1_000_000)
    parser.add_argument("--cols", type=int, default=20, help="numeric columns")
    parser.add_argument("--busy", action="store_true", help="beside one CPU-bound process")
    args = parser.parse_args()
    torch.set_num_threads(1)  # as the command line fits: one torch thread per fit
    hog = mp.get_context("fork").Process(target=busy_loop, daemon=True) if args.busy else None
    if hog is not None:
        hog.start()
    train = table(args.rows, args.cols, 0)
    big = pd.concat([table(args.rows, args.cols, 1)] * int(np.ceil(args.score_rows / args.rows)))
    big = big.iloc[: args.score_rows].reset_index(drop=True)
    print(f"table: {args.rows:,} training rows x {args.cols} numeric + 2 categorical columns; "
          f"scoring {len(big):,} rows in memory{' beside a busy process' if hog else ''}")  # fmt: skip
    rates = {}
    with tempfile.TemporaryDirectory() as tmp:
        for detector in ("nrde", "fused"):
            start = time.perf_counter()
            model = fit_table(train, random_state=0, detector=detector)
            fit_s = time.perf_counter() - start
            start = time.perf_counter()
            model.score_rows(big)
            rates[detector] = len(big) / (time.perf_counter() - start)
            size = save_model(model, Path(tmp) / f"{detector}.nrad").stat().st_size
            print(f"{detector:>6}: fit {fit_s:6.1f} s, score {rates[detector]:10,.0f} rows/s, "
                  f"model file {size / 2**20:5.1f} MiB")  # fmt: skip
        prep = model.prepare(big)
        start = time.perf_counter()
        _, z, _ = model.density_prepared(prep)
        density_s = time.perf_counter() - start
        # New rows are scored by the density and the neighbours (nrad.fusion.NEW_ROW_MEMBERS).
        start = time.perf_counter()
        model.fusion.neighbours(z)
        parts = {"neighbour": time.perf_counter() - start}
    total = density_s + sum(parts.values())
    print(f"fused / nrde scoring rows/s: {rates['fused'] / rates['nrde']:.2f}")
    print("fused scoring time by member: " + ", ".join(
        f"{n} {s:.1f} s ({s / total:.0%})" for n, s in (("density", density_s), *parts.items())))  # fmt: skip
    if hog is not None:
        hog.terminate()


if __name__ == "__main__":
    main()
