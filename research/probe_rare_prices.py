"""Are rows flagged for paying a rare price, when a table is scored against itself?

Clean tables of ``--rows`` purchases: two to five price columns (one per brand), each on a lattice
of cents with a few usual prices and, in promotion weeks, one or two rare low ones that 0.2% to 1.2%
of the rows pay (a week's promotion can lower several brands at once); a store, a week and a
quantity that grows when the bought brand is on promotion.  With ``--typo``, one row's price is
typed ten times too high.  Each table is scored as ``nrad detect`` scores it (fitted on itself,
Benjamini-Hochberg at ``--fdr``); the probe prints how many rows were flagged, how many of them pay
a rare price, and whether the typo was.

    python research/probe_rare_prices.py --rows 5000 --seeds 0-9 --typo
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from nrad.bench.runner import parse_seeds
from nrad.table import fit_table

TYPO_ROW = 7


def table(rows: int, seed: int, typo: bool) -> tuple[pd.DataFrame, np.ndarray]:
    """The table, and which rows pay a rare price (in any column)."""
    rng = np.random.default_rng(seed)
    brands = int(rng.integers(2, 6))
    week = rng.integers(0, 52, rows)
    df = pd.DataFrame({"store": rng.choice(["north", "south", "east", "west"], rows), "week": week})
    rare = np.zeros(rows, dtype=bool)
    for b in range(brands):
        usual = np.sort(rng.choice(np.arange(50, 120), size=int(rng.integers(3, 7)), replace=False)) / 100
        price = rng.choice(usual, rows, p=rng.dirichlet(np.full(len(usual), 2.0)))
        for low in np.sort(rng.choice(np.arange(10, 35), size=int(rng.integers(1, 3)), replace=False)) / 100:
            # A promotion week lowers the brand's price for a share of that week's purchases.
            weeks = rng.choice(52, size=int(rng.integers(1, 4)), replace=False)
            share = rng.uniform(0.002, 0.012) * 52 / len(weeks)
            on = np.isin(week, weeks) & (rng.random(rows) < min(share, 1.0))
            price = np.where(on, low, price)
            rare |= on
        df[f"price_{b}"] = price
    bought = rng.integers(0, brands, rows)
    paid = df[[f"price_{b}" for b in range(brands)]].to_numpy()[np.arange(rows), bought]
    df["choice"] = [f"brand_{b}" for b in bought]
    df["quantity"] = rng.poisson(np.where(paid < 0.4, 4.0, 1.5)) + 1
    if typo:
        df.loc[TYPO_ROW, "price_0"] = round(10 * float(df.loc[TYPO_ROW, "price_0"]), 2)
    return df, rare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--fdr", type=float, default=0.1)
    parser.add_argument("--typo", action="store_true", help="plant one price typed ten times too high")
    args = parser.parse_args()
    print("seed brands rows_paying_rare flagged flagged_paying_rare typo_flagged")
    for seed in parse_seeds(args.seeds):
        df, rare = table(args.rows, seed, args.typo)
        model = fit_table(df, random_state=0)
        scored, _ = model.score(df, fdr=args.fdr, in_sample=True, explain="none")
        flagged = scored["flagged"].to_numpy()
        typo = bool(flagged[TYPO_ROW]) if args.typo else "-"
        brands = sum(c.startswith("price_") for c in df.columns)
        print(
            seed, brands, int(rare.sum()), int(flagged.sum()), int((flagged & rare).sum()), typo, flush=True
        )


if __name__ == "__main__":
    main()
