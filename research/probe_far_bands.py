"""Rows beyond a column's tail: a rare legitimate group, or many errors of one kind?

Two planted families, each table scored as ``nrad detect`` scores it (fitted on itself,
Benjamini-Hochberg at ``--fdr``).

``--family orders`` (written for this probe): ``--rows`` web-shop orders (items, unit price by
product line, the exact total, weight and a shipping fee that follow from them, region, payment)
of which a share ``--shares`` are wholesale orders of 60 to 120 items, legitimate and consistent
(total, weight and fee follow), marked by no column; and 10 planted errors (a total typed 100
times, a weight in grams, a unit price missing a digit, a negative item count, a fee of another
region).  Printed: wholesale rows, how many of them were flagged, errors flagged, other flags.

``--family one-kind``: transactions tables (``nrad.synthetic.make_transactions``) whose planted
rows are all of one kind (``--kind``), ``--counts`` of them: how many are flagged as the count of
one column's errors grows.

    python research/probe_far_bands.py --family orders --rows 3000 --shares 0.003,0.006,0.012 --seeds 0-2
    python research/probe_far_bands.py --family one-kind --kind huge_amount --counts 5,10,20,40 --seeds 0-2
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from nrad.bench.runner import parse_seeds
from nrad.synthetic import make_transactions
from nrad.table import fit_table

LINES = {
    "books": (12.0, 0.4, 0.5),
    "kitchen": (35.0, 0.5, 1.8),
    "garden": (60.0, 0.6, 4.0),
    "toys": (20.0, 0.4, 0.7),
}
FEES = {"north": 4.9, "south": 5.9, "islands": 12.5}
ERRORS = (
    "total_typed_100x",
    "weight_in_grams",
    "price_missing_digit",
    "negative_items",
    "fee_of_other_region",
)


def orders(rows: int, share: float, seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The table, which rows are wholesale orders, which rows hold a planted error."""
    rng = np.random.default_rng(seed)
    line = rng.choice(list(LINES), rows, p=[0.4, 0.25, 0.15, 0.2])
    base, spread, kg = (np.array([LINES[x][i] for x in line]) for i in range(3))
    price = np.round(base * np.exp(rng.normal(0, spread)), 2)
    items = 1 + rng.poisson(1.2, rows)
    wholesale = rng.random(rows) < share
    items = np.where(wholesale, rng.integers(60, 121, rows), items)
    region = rng.choice(list(FEES), rows, p=[0.55, 0.4, 0.05])
    weight = np.round(items * kg * np.exp(rng.normal(0, 0.1, rows)), 2)
    fee = np.round(np.array([FEES[r] for r in region]) + 0.8 * np.floor(weight / 5), 2)
    df = pd.DataFrame(
        {
            "order_id": [f"O{seed:02d}{i:06d}" for i in range(rows)],
            "line": line,
            "region": region,
            "payment": rng.choice(["card", "paypal", "invoice"], rows, p=[0.6, 0.3, 0.1]),
            "items": items,
            "unit_price": price,
            "total": np.round(items * price, 2),
            "weight_kg": weight,
            "shipping_fee": fee,
        }
    )
    planted = np.zeros(rows, dtype=bool)
    for k, row in enumerate(rng.choice(np.flatnonzero(~wholesale), size=10, replace=False)):
        kind = ERRORS[k % len(ERRORS)]
        if kind == "total_typed_100x":
            df.loc[row, "total"] = round(100 * float(df.loc[row, "total"]), 2)
        elif kind == "weight_in_grams":
            df.loc[row, "weight_kg"] = round(1000 * float(df.loc[row, "weight_kg"]), 2)
        elif kind == "price_missing_digit":
            df.loc[row, "unit_price"] = round(float(df.loc[row, "unit_price"]) / 10, 2)
        elif kind == "negative_items":
            df.loc[row, "items"] = -int(df.loc[row, "items"])
        else:
            other = "islands" if df.loc[row, "region"] != "islands" else "north"
            df.loc[row, "region"] = other
        planted[row] = True
    return df, wholesale, planted


def flags(df: pd.DataFrame, fdr: float) -> np.ndarray:
    model = fit_table(df, id_column=df.columns[0], random_state=0)
    scored, _ = model.score(df, fdr=fdr, in_sample=True, explain="none")
    return scored["flagged"].to_numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", choices=("orders", "one-kind"), default="orders")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--shares", default="0.003,0.006,0.012")
    parser.add_argument("--kind", default="huge_amount")
    parser.add_argument("--counts", default="5,10,20,40")
    parser.add_argument("--seeds", default="0-2")
    parser.add_argument("--fdr", type=float, default=0.1)
    args = parser.parse_args()
    if args.family == "orders":
        print("seed share wholesale wholesale_flagged errors_flagged_of_10 other_flags")
        for share in (float(s) for s in args.shares.split(",")):
            for seed in parse_seeds(args.seeds):
                df, wholesale, planted = orders(args.rows, share, seed)
                got = flags(df, args.fdr)
                counts = [wholesale.sum(), (got & wholesale).sum(), (got & planted).sum()]
                other = (got & ~wholesale & ~planted).sum()
                print(seed, share, *(int(c) for c in counts), int(other), flush=True)
        return
    print("seed kind planted planted_flagged other_flags")
    for count in (int(c) for c in args.counts.split(",")):
        for seed in parse_seeds(args.seeds):
            table = make_transactions(args.rows, count, random_state=seed, kinds=(args.kind,))
            planted = np.zeros(len(table.frame), dtype=bool)
            planted[table.truth["row"].to_numpy()] = True
            got = flags(table.frame, args.fdr)
            print(seed, args.kind, count, int((got & planted).sum()), int((got & ~planted).sum()), flush=True)


if __name__ == "__main__":
    main()
