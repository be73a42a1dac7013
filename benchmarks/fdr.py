"""Do flags keep their error rate?  Benjamini-Hochberg on nrad's p-values, measured on both sides.

* **Null side**: tables with no anomalies at all, from several generators
  (the planted-truth families without their anomalies; correlated
  Gaussian numbers; heavy tails: Student t with 2 degrees of freedom,
  log-normal and Pareto columns; discrete: counts, flags and categories of
  3 to 60 levels).  Every flag is a false discovery, so the false discovery
  proportion of a run is 1 if anything is flagged, and its mean over seeds
  must stay at or below q.  Reported for q = 0.01, 0.05, 0.1 with the
  share of runs that flag anything and the mean number of rows flagged.
* **Planted side**: the planted-truth families with 20 anomalies: share of
  them flagged at each q, and the false discovery proportion.

Both ways of working are run: ``fit`` (fit on one clean table, score another:
``nrad fit`` + ``nrad score``) and ``detect`` (fit on the scored table itself,
cross-fitted: ``nrad detect`` without ``--train``).

Usage::

    python benchmarks/fdr.py --seeds 0-19 --jobs 2 --out results/fdr.csv
    python benchmarks/fdr.py --report results/fdr.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

LEVELS = (0.01, 0.05, 0.1)
ROWS = 3000


def gaussian(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mix = np.random.default_rng(7).normal(size=(8, 8))
    return pd.DataFrame(rng.normal(size=(n, 8)) @ mix, columns=[f"g{i}" for i in range(8)])


def heavy(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.standard_t(2, size=n)
    return pd.DataFrame(
        {
            "t2": base,
            "t2_related": 0.8 * base + rng.standard_t(2, size=n),
            "lognormal": np.exp(rng.normal(2.0, 1.5, n)),
            "pareto": rng.pareto(1.5, n) + 1.0,
            "normal": rng.normal(size=n),
            "group": rng.choice(["a", "b", "c", "d"], size=n, p=[0.4, 0.3, 0.2, 0.1]),
        }
    )


def discrete(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    world = np.random.default_rng(11)
    levels = 60
    weights = 1.0 / np.arange(1, levels + 1)
    store = rng.choice(levels, size=n, p=weights / weights.sum())
    region = world.integers(0, 6, size=levels)[store]
    return pd.DataFrame(
        {
            "store": [f"st{k}" for k in store],
            "region": [f"r{k}" for k in region],
            "segment": rng.choice(["x", "y", "z"], size=n),
            "items": rng.poisson(2 + region),
            "returns": rng.binomial(5, 0.1, n),
            "member": rng.random(n) < 0.3,
            "rating": rng.integers(1, 6, n),
        }
    )


def family(name: str) -> Any:
    from nrad.synthetic import FAMILIES

    return lambda n, seed: FAMILIES[name](n, 0, random_state=seed).frame


NULLS = {"gaussian": gaussian, "heavy": heavy, "discrete": discrete,
         **{f: family(f) for f in ("transactions", "sensors", "patients", "properties", "shipments", "batch")}}  # fmt: skip
PLANTED = ("transactions", "sensors", "patients", "properties", "shipments")


def one_run(kind: str, generator: str, mode: str, seed: int, dump: str | None = None) -> dict[str, Any]:
    """Fit and score one pair of tables; the counts of flags at every level."""
    import torch

    from nrad.synthetic import FAMILIES
    from nrad.table import fit_table

    torch.set_num_threads(1)
    start = time.perf_counter()
    if kind == "clean":
        data, truth = NULLS[generator](ROWS, 10_000 + seed), np.zeros(ROWS, dtype=bool)
        clean = NULLS[generator](ROWS, 20_000 + seed)
    else:
        table = FAMILIES[generator](ROWS, 20, random_state=30_000 + seed)
        data, truth = table.frame, table.labels.astype(bool)
        clean = FAMILIES[generator](ROWS, 0, random_state=40_000 + seed).frame
    model = fit_table(clean if mode == "fit" else data, random_state=seed)
    # Scores once; then each level's flags exactly as TableModel.score makes them.
    scored, _ = model.score_rows(data, in_sample=mode == "detect")
    p = scored["p_value"].to_numpy()
    if dump is not None:
        # What any calibration needs, to compare calibrations without refitting.
        np.savez(Path(dump) / f"{kind}-{generator}-{mode}-{seed}.npz", calibration=model.tail.knots,
                 scores=scored["anomaly_score"].to_numpy(), truth=truth)  # fmt: skip
    row: dict[str, Any] = {"kind": kind, "generator": generator, "mode": mode, "seed": seed,
                           "rows": len(p), "planted": int(truth.sum()), "min_p": float(np.min(p)),
                           "seconds": round(time.perf_counter() - start, 2)}  # fmt: skip
    from nrad.calibration import benjamini_hochberg

    for q in LEVELS:
        flags = benjamini_hochberg(p, q)
        row[f"flagged_{q}"] = int(flags.sum())
        row[f"false_{q}"] = int((flags & ~truth).sum())
    return row


def report(path: Path) -> str:
    from nrad.bench.summary import markdown_table

    runs = pd.read_csv(path, keep_default_na=False)
    lines = [
        "# Do flags keep their error rate?",
        "",
        f"Generated by `python benchmarks/fdr.py --report {path}` from {len(runs)} runs, each a table of "
        f"{ROWS:,} rows scored by nrad's table model and flagged by Benjamini-Hochberg at q = 0.01, 0.05, "
        "0.1. `fit`: fitted on a clean table of the same kind, then another table scored (`nrad fit` + "
        "`nrad score`); `detect`: fitted on the scored table itself (`nrad detect`). On tables with no "
        "anomalies every flag is false, so the false discovery proportion (`fdp_q`) of a run is 1 if "
        "anything is flagged and its mean over runs is the false discovery rate, which must stay at or "
        "below q; `any_q` is the share of runs flagging anything and `flagged_q` the mean number of rows "
        "flagged. On tables with 20 planted anomalies, `found_q` is the share of them flagged.",
    ]
    for kind, part in runs.groupby("kind", sort=False):
        lines.append(
            f"\n## {kind} tables ({'no anomalies' if kind == 'clean' else '20 planted anomalies'})\n"
        )
        cols = []
        for q in LEVELS:
            found = (part[f"flagged_{q}"] - part[f"false_{q}"]) / part["planted"].clip(lower=1)
            part = part.assign(**{f"fdp_{q}": part[f"false_{q}"] / part[f"flagged_{q}"].clip(lower=1),
                                  f"any_{q}": part[f"flagged_{q}"] > 0, f"found_{q}": found})  # fmt: skip
            cols += [f"fdp_{q}"] + ([f"any_{q}", f"flagged_{q}"] if kind == "clean" else [f"found_{q}"])
        table = part.groupby(["generator", "mode"])[cols].mean()
        table.insert(0, "runs", part.groupby(["generator", "mode"]).size())
        total = part.groupby("mode")[cols].mean()
        total.insert(0, "runs", part.groupby("mode").size())
        total.index = pd.MultiIndex.from_tuples([("all", m) for m in total.index])
        both = pd.concat([table, total]).round(3)
        both.index = both.index.set_names(["generator", "mode"])
        lines.append(markdown_table(both))
        if kind == "clean":
            lines += ["", "False discovery rate over all clean tables, with a 95% Wilson interval "
                      "(runs are independent tables):", ""]  # fmt: skip
            for mode, rows in part.groupby("mode"):
                cells = []
                for q in LEVELS:
                    k, n = int(rows[f"any_{q}"].sum()), len(rows)
                    lo, hi = _wilson(k, n)
                    cells.append(f"q = {q}: {k}/{n} = {k / n:.3f} [{lo:.3f}, {hi:.3f}]")
                lines.append(f"- `{mode}`: " + "; ".join(cells))
    return "\n".join(lines)


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k / n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _warm() -> None:
    """Import nrad when a worker starts: every run of one benchmark uses the same code."""
    import nrad.table  # noqa: F401


def main() -> None:
    from nrad.bench.runner import parse_seeds

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--modes", default="fit,detect")
    parser.add_argument("--nulls", default=",".join(NULLS))
    parser.add_argument("--planted", default=",".join(PLANTED))
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("results/fdr.csv"))
    parser.add_argument("--report", type=Path, default=None, help="only summarize this CSV")
    parser.add_argument("--dump", type=Path, default=None, help="also save each run's scores here (.npz)")
    args = parser.parse_args()
    if args.report:
        print(report(args.report))
        return
    done = set()
    if args.out.exists():
        old = pd.read_csv(args.out)
        done = set(zip(old["kind"], old["generator"], old["mode"], old["seed"], strict=True))
    seeds = parse_seeds(args.seeds)
    tasks = [(k, g, m, s) for k, gens in (("clean", args.nulls), ("planted", args.planted))
             for g in filter(None, gens.split(",")) for m in args.modes.split(",") for s in seeds
             if (k, g, m, s) not in done]  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new = not args.out.exists()
    pool_args = {"initializer": _warm} if args.jobs > 1 else {}
    with args.out.open("a", newline="") as fh, ProcessPoolExecutor(args.jobs, **pool_args) as pool:
        writer = None
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
        columns = [*zip(*tasks, strict=True), [str(args.dump) if args.dump else None] * len(tasks)]
        for row in pool.map(one_run, *columns) if tasks else []:
            if writer is None:
                writer = csv.DictWriter(fh, fieldnames=list(row))
                if new:
                    writer.writeheader()
            writer.writerow(row)
            fh.flush()
            os.fsync(fh.fileno())
            print(row, flush=True)
    print(report(args.out))


if __name__ == "__main__":
    main()
