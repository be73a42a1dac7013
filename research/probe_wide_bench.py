"""Wide numeric datasets of the shapes users bring (embeddings, bag-of-words counts), for ``nrad bench``.

Writes ``.npz`` files (``X``, ``y``) into a folder, so that the benchmark
harness fits the table model (``default``) and NRDE alone (``nrde``) on them
under the protocol of docs/benchmark.md, and records each fit's seconds:

* ``wide_embed_10000x503``: 10,000 rows from 20 latent factors through a
  random non-linear map, with Gaussian noise; 3% anomalies whose latent
  factors are shifted 4 sd along a random direction;
* ``wide_counts_1966x1555``: 1,966 rows of sparse Poisson counts (95% zeros),
  rates from 12 topics; 3% anomalies drawn from a topic no normal row uses;
* ``wide_embed_452x257``: as the first, 452 rows.

Usage::

    python research/probe_wide_bench.py --out DIR
    nrad bench --data-dir DIR --settings vanilla --methods default,nrde --seeds 0 --out runs.csv
    nrad bench report runs.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ANOMALY_SHARE = 0.03


def embeddings(n: int, p: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rows from 20 latent factors through a random one-hidden-layer map, plus noise."""
    latent = rng.normal(size=(n, 20))
    y = (rng.random(n) < ANOMALY_SHARE).astype(np.int64)
    direction = rng.normal(size=20)
    latent[y == 1] += 4.0 * direction / np.linalg.norm(direction)
    hidden = np.tanh(latent @ rng.normal(size=(20, 64)) / np.sqrt(20))
    X = hidden @ rng.normal(size=(64, p)) / 8.0 + 0.3 * rng.normal(size=(n, p))
    return X, y


def counts(n: int, p: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sparse counts from topic mixtures; anomalies from a topic no normal row draws on."""
    topics = rng.gamma(0.05, 1.0, size=(13, p))
    topics /= topics.sum(axis=1, keepdims=True)
    y = (rng.random(n) < ANOMALY_SHARE).astype(np.int64)
    mix = rng.dirichlet(np.full(12, 0.3), size=n)
    rates = mix @ topics[:12]
    rates[y == 1] = 0.5 * rates[y == 1] + 0.5 * topics[12]
    length = rng.poisson(80, size=(n, 1))
    return rng.poisson(rates * length).astype(np.float64), y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the .npz files")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name, (X, y) in {
        "wide_embed_10000x503": embeddings(10000, 503, rng),
        "wide_counts_1966x1555": counts(1966, 1555, rng),
        "wide_embed_452x257": embeddings(452, 257, rng),
    }.items():
        np.savez(args.out / f"{name}.npz", X=X, y=y)
        print(f"{name}: {X.shape[0]} x {X.shape[1]}, {int(y.sum())} anomalies, "
              f"{float((X == 0).mean()):.0%} zeros")  # fmt: skip


if __name__ == "__main__":
    main()
