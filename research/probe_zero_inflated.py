"""Are the rare values of a zero-inflated count flagged, as the spike rules read it and with a cap
on the spike's share above which the second-spike rule would not apply?

A clean table of customers (income, age, spend, region) with two counts that are 0 in most rows:
complaints (0 in 95.5%, then 1 in 2.8%, 2 in 0.9%, up to 6) and returns (0 in 93%, else 1 plus a
Poisson count).  Every flag is false.  ``--cap S``: the column is read with a spike whenever its
spike holds at least S of its values (the second-spike rule of :func:`nrad.preprocess.spike_value`
off for it), the reading the benchmark tables' word and pixel counts had before that rule.

Usage::

    python research/probe_zero_inflated.py --seeds 0-9 --cap 0.9
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

import nrad.preprocess
from nrad.bench.runner import parse_seeds
from nrad.workflow import detect

ROWS = 3000


def table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    income = np.exp(rng.normal(10.5, 0.5, ROWS)).round(2)
    return pd.DataFrame(
        {
            "id": np.arange(ROWS),
            "income": income,
            "age": rng.integers(18, 80, ROWS),
            "spend": (0.1 * income * np.exp(rng.normal(0, 0.3, ROWS))).round(2),
            "region": rng.choice(list("ABCD"), ROWS),
            "complaints": rng.choice(7, ROWS, p=[0.955, 0.028, 0.009, 0.004, 0.002, 0.001, 0.001]),
            "returns": np.where(rng.random(ROWS) < 0.93, 0, 1 + rng.poisson(0.3, ROWS)),
        }
    )


def capped(cap: float) -> Callable[[pd.Series], float | None]:
    """``spike_value`` with the spike kept whenever it holds ``cap`` of the values."""
    rule = nrad.preprocess.spike_value

    def spike_value(values: pd.Series) -> float | None:
        counts = values.value_counts()
        big = len(counts) - 1 >= nrad.preprocess.SPIKE_REST_LEVELS and counts.iloc[0] >= cap * len(values)
        return float(counts.index[0]) if big else rule(values)

    return spike_value


def flags(seed: int, work: Path) -> pd.DataFrame:
    df = table(seed)
    df.to_csv(work / "t.csv", index=False)
    detect(work / "t.csv", id_column="id", fdr=0.1, out=work / "o.csv", random_state=0)
    out = pd.read_csv(work / "o.csv")
    return df[out["flagged"].astype(bool).to_numpy()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--cap", type=float, default=0.9)
    args = parser.parse_args()
    rule = nrad.preprocess.spike_value
    with tempfile.TemporaryDirectory() as tmp:
        for name, reading in (("spike rules", rule), (f"spike kept at >= {args.cap:g}", capped(args.cap))):
            nrad.preprocess.spike_value = reading
            total = counted = 0
            for seed in parse_seeds(args.seeds):
                got = flags(seed, Path(tmp))
                total += len(got)
                counted += int(((got["complaints"] >= 2) | (got["returns"] >= 2)).sum())
                pairs = zip(got["complaints"], got["returns"], strict=True)
                shown = ", ".join(f"({c}, {r})" for c, r in pairs)
                print(f"{name}: seed {seed}: {len(got)} flagged (complaints, returns): {shown}", flush=True)
            print(f"{name}: {total} flags in all, {counted} of them rows with a count of 2 or more")
    nrad.preprocess.spike_value = rule


if __name__ == "__main__":
    main()
