"""Where NRDE's fit spends its time, by phase, on the tables of benchmarks/plain_flow.py.

Usage: python benchmarks/fit_profile.py --data-dir data/adbench [--params "batch_size=512,..."]

Times each phase of ``NRDE.fit`` by wrapping, from outside, the functions
that do it (the product has no hooks for this): the PCA start, the forward
pass and likelihood of the training steps, the IMA penalty on the steps
that evaluate it, backward passes, Adam steps, validation passes, the
source influence, and scoring the training rows at the end (``offset_``).
"Other" is the rest of the fit (batching, noise, state copies, Python).
``--params`` fits NRDE with other parameters (``name=value`` pairs), for a
before / after comparison in one run.  The protocol's ``vanilla`` split,
seed 0, scaled as ``nrad bench`` scales it.  Run on a quiet machine.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from nrde_params import parse_params

import nrad.nrde
import nrad.training
from nrad.bench.datasets import dataset_paths, load_dataset
from nrad.bench.settings import make_split
from nrad.nrde import NRDE
from nrad.preprocess import ProtocolScaler

DATASETS = "cardio,satellite,letter,ALOI"
PHASES = ("pca start", "forward + NLL", "penalty", "backward", "adam", "validation", "influence",
          "score training rows")  # fmt: skip


def _timer(totals: dict[str, float], counts: dict[str, int], phase: str, fn: Callable[..., Any]) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[phase] += time.perf_counter() - start
            counts[phase] += 1

    return wrapped


@contextmanager
def timed_phases(totals: dict[str, float], counts: dict[str, int]) -> Iterator[None]:
    """Wrap the fit's phases (module attributes restored afterwards)."""
    targets = [
        (nrad.nrde, "_pca_whitening", "pca start"),
        (nrad.training.StackedFlows, "penalty", "penalty"),
        (nrad.training.StackedFlows, "forward", "forward + NLL"),
        (torch.Tensor, "backward", "backward"),
        (nrad.training.Adam, "step", "adam"),
        (nrad.training.StackedFlows, "log_prob", "validation"),
        (nrad.nrde, "source_influence", "influence"),
        (NRDE, "_log_density_standardized", "score training rows"),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    try:
        for owner, name, phase in targets:
            setattr(owner, name, _timer(totals, counts, phase, getattr(owner, name)))
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--datasets", default=DATASETS)
    parser.add_argument("--params", help="NRDE parameters, name=value[,name=value]")
    args = parser.parse_args()
    params = parse_params(args.params)
    paths = dataset_paths(args.data_dir)
    print(f"NRDE {params or 'defaults'}; seconds per phase (share of the fit)")
    grand: dict[str, float] = defaultdict(float)
    for name in args.datasets.split(","):
        split = make_split(load_dataset(paths[name]), "vanilla", 0)
        X = ProtocolScaler().fit(split.X_train).transform(split.X_train)
        totals: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        with timed_phases(totals, counts):
            start = time.perf_counter()
            det = NRDE(random_state=0, **params).fit(X)
            total = time.perf_counter() - start
        # Validation runs the forward pass too: forward + NLL is what is left of it.
        totals["forward + NLL"] -= totals["validation"]
        totals["other"] = total - sum(totals[p] for p in PHASES)
        steps = counts["adam"]
        print(f"{name} ({X.shape[0]} x {X.shape[1]}): fit {total:.2f} s, {det.n_epochs_} epochs, "
              f"{steps} steps ({1000 * total / max(steps, 1):.2f} ms per step), "
              f"{counts['penalty']} with the penalty")  # fmt: skip
        for phase in (*PHASES, "other"):
            print(f"    {phase:<20} {totals[phase]:7.2f} s  {100 * totals[phase] / total:5.1f}%")
            grand[phase] += totals[phase]
        grand["total"] += total
    print(f"all: fit {grand['total']:.2f} s; " + ", ".join(
        f"{p} {100 * grand[p] / grand['total']:.0f}%" for p in (*PHASES, "other")))  # fmt: skip


if __name__ == "__main__":
    main()
