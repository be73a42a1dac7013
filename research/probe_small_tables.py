"""Small tables, written before looking at any result: do four kinds of error get flagged at 150
and 300 rows, and does anything else?

A workshop log per table: machine and shift (categories), a temperature that depends on the
machine, a pressure that follows the temperature (1.8 times it, conditional sd 1.5), a count
of parts (Poisson, mean 40), the defects among them (5%), a duration (log-normal).  Four rows
per table are planted: a duration 20 times its value, more defects than parts, a pressure 8
conditional sd off its relation, a negative count of parts.  Both ways of working: ``detect``
(fitted on the table itself) and ``fit`` (fitted on a clean twin, then the table scored), at
q = 0.1.  A third, clean table per seed is scored the same way: every flag on it is false.

Usage::

    python research/probe_small_tables.py --seeds 0-4 --out small.csv
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from nrad.table import fit_table

KINDS = ("duration_x20", "defects_above_parts", "pressure_8sd", "negative_parts")


def workshop(n: int, seed: int, planted: bool = True) -> tuple[pd.DataFrame, dict[int, str]]:
    """One table of ``n`` runs and, if ``planted``, the planted rows and their kinds."""
    rng = np.random.default_rng(seed)
    machine = rng.choice(["A", "B", "C", "D"], n)
    shift = rng.choice(["early", "late", "night"], n)
    offset = np.select([machine == "A", machine == "B", machine == "C"], [0.0, 4.0, -3.0], 2.0)
    temperature = 60 + offset + rng.normal(0, 3, n)
    pressure = 1.8 * temperature + rng.normal(0, 1.5, n)
    parts = rng.poisson(40, n)
    frame = pd.DataFrame({
        "run": [f"R{i:04d}" for i in range(n)], "machine": machine, "shift": shift,
        "temperature": temperature.round(2), "pressure": pressure.round(2), "parts": parts,
        "defects": rng.binomial(parts, 0.05), "duration_min": np.exp(rng.normal(3.5, 0.35, n)).round(1),
    })  # fmt: skip
    truth: dict[int, str] = {}
    if planted:
        rows = [int(r) for r in rng.choice(n, len(KINDS), replace=False)]
        frame.loc[rows[0], "duration_min"] = round(20 * frame.loc[rows[0], "duration_min"], 1)
        frame.loc[rows[1], "defects"] = frame.loc[rows[1], "parts"] + 15
        frame.loc[rows[2], "pressure"] = round(frame.loc[rows[2], "pressure"] + 12.0 * rng.choice([-1, 1]), 2)
        frame.loc[rows[3], "parts"] = -40
        truth = dict(zip(rows, KINDS, strict=True))
    return frame, truth


def one_seed(n: int, seed: int) -> list[dict[str, object]]:
    table, truth = workshop(n, 100 + seed)
    twin, _ = workshop(n, 200 + seed, planted=False)
    clean, _ = workshop(n, 300 + seed, planted=False)
    out: list[dict[str, object]] = []
    for way in ("detect", "fit"):
        start = time.perf_counter()
        if way == "detect":
            scored, _ = fit_table(table, id_column="run", random_state=seed).score(table, fdr=0.1, in_sample=True)
            null, _ = fit_table(clean, id_column="run", random_state=seed).score(clean, fdr=0.1, in_sample=True)
        else:
            model = fit_table(twin, id_column="run", random_state=seed)
            scored, _ = model.score(table, fdr=0.1)
            null, _ = model.score(clean, fdr=0.1)
        flagged = set(np.flatnonzero(scored["flagged"].to_numpy()))
        rank = scored["anomaly_score"].rank(ascending=False).to_numpy()
        for row, kind in truth.items():
            first = str(scored["top_features"].iloc[row]).split(" ")[0]
            out.append({"rows": n, "seed": seed, "way": way, "kind": kind, "flagged": int(row in flagged),
                        "p": float(scored["p_value"].iloc[row]), "rank": int(rank[row]), "first": first})  # fmt: skip
        out.append({"rows": n, "seed": seed, "way": way, "kind": "(other rows flagged)",
                    "flagged": len(flagged - set(truth))})  # fmt: skip
        out.append({"rows": n, "seed": seed, "way": way, "kind": "(clean table: rows flagged)",
                    "flagged": int(null["flagged"].sum()), "p": float(null["p_value"].min())})  # fmt: skip
        print(f"{n} rows, seed {seed}, {way}: {time.perf_counter() - start:.1f} s", flush=True)
    return out


def main() -> None:
    from nrad.bench.runner import parse_seeds

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--rows", default="150,300")
    parser.add_argument("--out", default=None, help="write every row of the result here (CSV)")
    args = parser.parse_args()
    got = pd.DataFrame([r for n in args.rows.split(",") for s in parse_seeds(args.seeds) for r in one_seed(int(n), s)])
    if args.out:
        got.to_csv(args.out, index=False)
    pd.set_option("display.width", 200)
    planted = got[got["kind"].isin(KINDS)]
    print(planted.groupby(["rows", "way", "kind"]).agg(flagged=("flagged", "sum"), tables=("flagged", "size"),
                                                      median_p=("p", "median"), median_rank=("rank", "median"),
                                                      named_first=("first", lambda f: ", ".join(sorted(set(f))))).to_string())  # fmt: skip
    other = got[~got["kind"].isin(KINDS)]
    print(other.groupby(["rows", "way", "kind"]).agg(rows_flagged=("flagged", "sum"),
                                                    tables_with_any=("flagged", lambda f: int((f > 0).sum())),
                                                    tables=("flagged", "size")).to_string())  # fmt: skip


if __name__ == "__main__":
    main()
