"""Do flags keep their error rate, and what do they find?  Benjamini-Hochberg on nrad's p-values.

* **Null side**: tables with no anomalies at all, from several generators
  (the planted-truth families without their anomalies; correlated Gaussian
  numbers; heavy tails: Student t with 2 degrees of freedom, log-normal and
  Pareto columns; discrete: counts, flags and categories of 3 to 60 levels;
  ``wide``: 80 mixed columns with missing cells, zero-inflated, bounded and
  related columns).  Every flag is a false discovery, so the false discovery
  proportion of a run is 1 if anything is flagged, and its mean over runs
  (the share of runs that flag anything) must stay at or below q.  Reported
  for q = 0.01, 0.05, 0.1 with Clopper-Pearson 95% intervals, by generator
  and by table size (``--rows``: 3,000 to 1,000,000 rows).  The p-values of
  the null runs are pooled for a QQ plot (``--qq``), and the fitted tail
  shapes of each channel are reported.
* **Planted side**: the planted-truth families with 20 anomalies: share of
  them flagged at each q, and the false discovery proportion.
* **Power**: ``shift-M-S`` tables (8 related Gaussian columns and a
  category) in which a share ``S`` of the rows has one cell moved ``M``
  standard deviations: recall and false discovery proportion against how far
  out and how many.

Both ways of working are run: ``fit`` (fit on one clean table, score another:
``nrad fit`` + ``nrad score``) and ``detect`` (fit on the scored table itself,
cross-fitted: ``nrad detect`` without ``--train``).  Each run calls the
library exactly as those commands do.

Usage::

    python benchmarks/fdr.py --seeds 0-14 --jobs 2 --out results/fdr.csv --dump DIR
    python benchmarks/fdr.py --nulls gaussian,transactions --planted "" --power "" \\
        --rows 30000,300000 --seeds 0-4 --out results/fdr.csv --dump DIR
    python benchmarks/fdr.py --report results/fdr.csv --qq DIR   # results/FDR.md, results/fdr_qq.png
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
#: The power study: cells moved this many standard deviations, in this share of the rows.
MAGNITUDES = (4, 6, 8, 12, 20)
SHARES = (0.01, 0.02)


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


def wide(n: int, seed: int) -> pd.DataFrame:
    """80 columns of a clean mixed table: 24 related continuous measurements (four latent factors,
    some log-normal), 12 counts, 10 zero-inflated amounts (0 in 80-99.5% of rows), 6 percentages
    bounded in [0, 100], 4 years, 4 integer scores, 20 categories (some following others), and
    missing cells at random and where a column does not apply."""
    rng = np.random.default_rng(seed)
    world = np.random.default_rng(2024)
    factors = rng.normal(size=(n, 4))
    cols: dict[str, Any] = {}
    loadings = world.normal(size=(24, 4)) * world.uniform(0.3, 1.0, size=(24, 1))
    noise = world.uniform(0.3, 0.8, 24)
    measured = factors @ loadings.T + rng.normal(size=(n, 24)) * noise
    for j in range(24):
        cols[f"m{j}"] = np.exp(measured[:, j] * 0.5 + 3) if j % 3 == 0 else measured[:, j] * 10 + 50
    for j in range(12):
        cols[f"count{j}"] = rng.poisson(np.exp(0.3 * factors[:, j % 4] + world.uniform(0, 2.5)))
    for j in range(10):
        present = rng.random(n) < world.choice([0.005, 0.02, 0.05, 0.2])
        cols[f"extra{j}"] = np.where(present, np.round(np.exp(rng.normal(world.uniform(4, 8), 0.8, n))), 0.0)
    for j in range(6):
        cols[f"pct{j}"] = np.round(100 / (1 + np.exp(-(factors[:, j % 4] + rng.normal(0, 0.7, n)))), 1)
    base_year = np.round(1990 + 12 * factors[:, 0] + rng.normal(0, 3, n))
    cols["year_a"] = base_year
    cols["year_b"] = base_year + rng.integers(0, 15, n)
    cols["year_c"] = np.round(1970 + rng.uniform(0, 50, n))
    cols["year_d"] = np.where(rng.random(n) < 0.7, base_year, base_year + rng.integers(1, 30, n))
    for j in range(4):
        cols[f"score{j}"] = np.clip(np.round(5 + 1.5 * factors[:, j] + rng.normal(0, 1, n)), 1, 10)
    groups, sizes = [], []
    for j in range(20):
        k = int(world.integers(2, 25))
        if j % 4 == 3 and groups:  # follows an earlier category
            parent = groups[-1]
            # One code per level of the parent, seen or not: a size read off the rows would make
            # the world's draws after it differ between two tables of the same kind.
            mapping = world.integers(0, k, size=sizes[-1])
            level = np.where(rng.random(n) < 0.9, mapping[parent], rng.integers(0, k, n))
        else:
            p = world.dirichlet(np.ones(k))
            level = rng.choice(k, size=n, p=p)
        groups.append(level)
        sizes.append(k)
        cols[f"cat{j}"] = [f"c{j}_{v}" for v in level]
    df = pd.DataFrame(cols)
    for name in ("m3", "m7", "count2", "pct1", "year_c", "cat5", "cat11"):
        df.loc[rng.random(n) < 0.03, name] = np.nan
    # Does not apply: no second year without the first.
    df.loc[df["year_a"] > 2005, "year_d"] = np.nan
    return df


def family(name: str) -> Any:
    from nrad.synthetic import FAMILIES

    return lambda n, seed: FAMILIES[name](n, 0, random_state=seed).frame


NULLS = {"gaussian": gaussian, "heavy": heavy, "discrete": discrete, "wide": wide,
         **{f: family(f) for f in ("transactions", "sensors", "patients", "properties", "shipments", "batch",
                                   "lab_panel", "meters", "invoices", "bookings", "flows", "employees",
                                   "trips", "exams", "loans", "flights", "weather", "households", "cars")}}  # fmt: skip
PLANTED = ("transactions", "sensors", "patients", "properties", "shipments", "lab_panel", "meters")


def shift_table(n: int, seed: int, magnitude: float, share: float) -> tuple[pd.DataFrame, np.ndarray]:
    """The power study's table: 8 related Gaussian columns and a category; ``share`` of the rows
    with one random cell moved ``magnitude`` standard deviations of its column (up or down)."""
    frame = gaussian(n, seed)
    rng = np.random.default_rng(seed + 1)
    frame["group"] = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    truth = np.zeros(n, dtype=bool)
    rows = rng.choice(n, size=int(round(share * n)), replace=False)
    truth[rows] = True
    for r in rows:
        j = int(rng.integers(0, 8))
        column = frame.columns[j]
        frame.loc[r, column] += rng.choice([-1.0, 1.0]) * magnitude * frame[column].std()
    return frame, truth


def _shift_args(generator: str) -> tuple[float, float]:
    _, magnitude, share = generator.split("-")
    return float(magnitude), float(share)


def one_run(kind: str, generator: str, mode: str, seed: int, rows: int, dump: str | None = None) -> dict[str, Any]:
    """Fit and score one pair of tables; the counts of flags at every level, and the tails' shapes."""
    import torch

    from nrad.stream import SAMPLE_ROWS
    from nrad.synthetic import FAMILIES
    from nrad.table import fit_table

    torch.set_num_threads(1)
    start = time.perf_counter()
    if kind == "clean":
        data, truth = NULLS[generator](rows, 10_000 + seed), np.zeros(rows, dtype=bool)
        clean = NULLS[generator](rows, 20_000 + seed)
    elif kind == "power":
        magnitude, share = _shift_args(generator)
        data, truth = shift_table(rows, 50_000 + seed, magnitude, share)
        clean = shift_table(rows, 60_000 + seed, magnitude, 0.0)[0]
    else:
        table = FAMILIES[generator](rows, 20, random_state=30_000 + seed)
        data, truth = table.frame, table.labels.astype(bool)
        clean = FAMILIES[generator](rows, 0, random_state=40_000 + seed).frame
    in_sample = mode == "detect"
    if not in_sample and len(clean) > SAMPLE_ROWS:
        # `nrad fit` fits a table larger than this on a uniform sample of its rows (nrad.stream).
        clean = clean.iloc[np.sort(np.random.default_rng(seed).permutation(len(clean))[:SAMPLE_ROWS])]
    model = fit_table(data if in_sample else clean, random_state=seed)
    # Scores once; then each level's flags exactly as TableModel.score makes them.
    scored, _ = model.score_rows(data, in_sample=in_sample)
    p = scored["p_value"].to_numpy()
    if dump is not None and kind == "clean":
        np.savez_compressed(Path(dump) / f"{kind}-{generator}-{mode}-{seed}-{rows}.npz", p=np.sort(p))
    row: dict[str, Any] = {"kind": kind, "generator": generator, "mode": mode, "seed": seed,
                           "rows": len(p), "planted": int(truth.sum()), "min_p": float(np.min(p)),
                           "seconds": round(time.perf_counter() - start, 2), **_shapes(model, in_sample)}  # fmt: skip
    from nrad.flags import benjamini_hochberg

    for q in LEVELS:
        flags = benjamini_hochberg(p, q)
        row[f"flagged_{q}"] = int(flags.sum())
        row[f"false_{q}"] = int((flags & ~truth).sum())
    return row


def _shapes(model: Any, in_sample: bool) -> dict[str, float]:
    """The fitted tail shape of each channel the run's p-values were read from."""
    tails = model.own_tails if in_sample else model.tails
    cells = tails.cells
    out = {"row_shape": _shape(tails.row), "density_shape": _shape(tails.density),
           "distance_shape": _shape(tails.distance)}  # fmt: skip
    for name in ("upper", "lower", "value_upper", "value_lower", "column_upper", "column_lower"):
        shapes = [_shape(t) for t in getattr(cells, name)] if cells is not None else []
        shapes = [s for s in shapes if np.isfinite(s)]
        out[f"cell_{name}_median"] = float(np.median(shapes)) if shapes else np.nan
        out[f"cell_{name}_max"] = float(np.max(shapes)) if shapes else np.nan
    return out


def _shape(tail: Any) -> float:
    if tail is None or tail.n_tail == 0 or not len(tail.shapes):
        return float("nan")
    return float(np.sum(tail.shapes * tail.weights))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval of a proportion k / n."""
    from scipy.stats import beta

    alpha = 1.0 - level
    lo = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def _any_flags(part: pd.DataFrame, q: float) -> str:
    k, n = int((part[f"flagged_{q}"] > 0).sum()), len(part)
    lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} = {k / n:.3f} [{lo:.3f}, {hi:.3f}]"


def report(path: Path, qq: Path | None = None) -> str:
    from nrad.bench.summary import markdown_table

    runs = pd.read_csv(path, keep_default_na=False)
    runs = runs.replace("", np.nan)
    for col in runs.columns:
        if col not in ("kind", "generator", "mode"):
            runs[col] = pd.to_numeric(runs[col])
    lines = [
        "# Do flags keep their error rate, and what do they find?",
        "",
        f"Generated by `python benchmarks/fdr.py --report {path}` from {len(runs)} runs, each a table "
        "scored by nrad's table model and flagged by Benjamini-Hochberg at q = 0.01, 0.05, 0.1. `fit`: "
        "fitted on a clean table of the same kind, then another table scored (`nrad fit` + `nrad score`); "
        "`detect`: fitted on the scored table itself (`nrad detect`). On tables with no anomalies every "
        "flag is false, so the false discovery proportion of a run is 1 if anything is flagged, and the "
        "share of runs flagging anything is the false discovery rate, which must stay at or below q "
        "(intervals: Clopper-Pearson, 95%; runs are independent tables).",
    ]
    clean = runs[runs["kind"] == "clean"]
    if len(clean):
        base = clean[clean["rows"] == ROWS]
        lines += ["", f"## Clean tables of {ROWS:,} rows: share of runs with any flag", ""]
        table = []
        for (generator, mode), part in base.groupby(["generator", "mode"]):
            table.append({"generator": generator, "mode": mode, "runs": len(part),
                          **{f"any at {q}": _any_flags(part, q) for q in LEVELS}})  # fmt: skip
        for mode, part in base.groupby("mode"):
            table.append({"generator": "**all**", "mode": mode, "runs": len(part),
                          **{f"any at {q}": _any_flags(part, q) for q in LEVELS}})  # fmt: skip
        lines.append(markdown_table(pd.DataFrame(table)))
        if clean["rows"].nunique() > 1:
            lines += ["", "## Clean tables by size: share of runs with any flag", ""]
            table = []
            for (rows, mode), part in clean.groupby(["rows", "mode"]):
                gens = ", ".join(sorted(part["generator"].unique()))
                table.append({"rows": f"{rows:,}", "mode": mode, "generators": gens, "runs": len(part),
                              **{f"any at {q}": _any_flags(part, q) for q in LEVELS}})  # fmt: skip
            lines.append(markdown_table(pd.DataFrame(table)))
        lines += ["", "## Fitted tail shapes on clean tables (0: exponential)", "",
                  "The shape of the tail each channel's p-values were read from (detect: the tails "
                  "fitted without the table's top scores; each read with its scale integrated out, which "
                  "adds about one over the number of values fitted, more on a column of few values), "
                  "over the clean runs: median / 95th "
                  "percentile / largest. Cells: per run the median and the largest over the table's "
                  "columns; `residual` is the cell given the row's other numbers, `value` the cell in "
                  "its context, `in its column` the cell in its column with no context.", ""]  # fmt: skip
        shape_cols = {"row score": "row_shape", "density (nats)": "density_shape", "robust distance": "distance_shape",
                      "cell residual (median column)": ["cell_upper_median", "cell_lower_median"],
                      "cell residual (largest column)": ["cell_upper_max", "cell_lower_max"],
                      "cell value (median column)": ["cell_value_upper_median", "cell_value_lower_median"],
                      "cell value (largest column)": ["cell_value_upper_max", "cell_value_lower_max"],
                      "cell in its column (median column)": ["cell_column_upper_median", "cell_column_lower_median"],
                      "cell in its column (largest column)": ["cell_column_upper_max", "cell_column_lower_max"]}  # fmt: skip
        table = []
        for mode, part in clean.groupby("mode"):
            for label, cols in shape_cols.items():
                cols = [cols] if isinstance(cols, str) else cols
                present = [part[c] for c in cols if c in part]  # runs of an older nrad lack some
                values = pd.concat(present).dropna().to_numpy() if present else np.zeros(0)
                if len(values):
                    table.append({"mode": mode, "channel": label,
                                  "shape": f"{np.median(values):.3f} / {np.quantile(values, 0.95):.3f} / "
                                           f"{values.max():.3f}"})  # fmt: skip
        lines.append(markdown_table(pd.DataFrame(table)))
    if qq is not None:
        lines += ["", *_qq(qq, path.parent / "fdr_qq.png")]
    planted = runs[runs["kind"] == "planted"]
    if len(planted):
        lines += ["", "## Planted tables (20 planted anomalies): recall and false discovery proportion", ""]
        table = []
        for (generator, mode), part in [*planted.groupby(["generator", "mode"]),
                                        *((("**all**", m), p) for m, p in planted.groupby("mode"))]:  # fmt: skip
            entry = {"generator": generator, "mode": mode, "runs": len(part)}
            for q in LEVELS:
                found = (part[f"flagged_{q}"] - part[f"false_{q}"]) / part["planted"].clip(lower=1)
                fdp = part[f"false_{q}"] / part[f"flagged_{q}"].clip(lower=1)
                entry[f"recall {q}"] = round(float(found.mean()), 3)
                entry[f"FDP {q}"] = f"{fdp.mean():.3f} (max {fdp.max():.2f})"
            table.append(entry)
        lines.append(markdown_table(pd.DataFrame(table)))
    power = runs[runs["kind"] == "power"]
    if len(power):
        lines += ["", "## Power: one cell moved M standard deviations in a share S of the rows", "",
                  "8 related Gaussian columns and a category, 3,000 rows; at q = 0.1: recall (share of "
                  "the moved rows flagged) and mean false discovery proportion (largest).", ""]  # fmt: skip
        power = power.assign(magnitude=power["generator"].map(lambda g: _shift_args(g)[0]),
                             share=power["generator"].map(lambda g: _shift_args(g)[1]))  # fmt: skip
        table = []
        for (mode, share, magnitude), part in power.groupby(["mode", "share", "magnitude"]):
            found = (part["flagged_0.1"] - part["false_0.1"]) / part["planted"].clip(lower=1)
            fdp = part["false_0.1"] / part["flagged_0.1"].clip(lower=1)
            table.append({"mode": mode, "S": share, "M (sd)": magnitude, "runs": len(part),
                          "recall": round(float(found.mean()), 3),
                          "FDP": f"{fdp.mean():.3f} ({fdp.max():.2f})"})  # fmt: skip
        lines.append(markdown_table(pd.DataFrame(table)))
    return "\n".join(lines) + "\n"


def _qq(folder: Path, png: Path) -> list[str]:
    """Pooled p-values of the clean runs: shares below small levels, and a log-scale QQ plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nrad.io import atomic_path

    by_mode: dict[tuple[str, int], list[np.ndarray]] = {}
    for f in sorted(folder.glob("clean-*.npz")):
        _, _, mode, _, rows = f.stem.split("-")
        by_mode.setdefault((mode, int(rows)), []).append(np.load(f)["p"])
    if not by_mode:
        return []
    lines = ["## Pooled p-values of clean tables", "",
             f"Every row of every clean run in the `--dump` folder, pooled by mode and table size (a "
             f"mode or size without dumps is left out): the share of p-values at or below t must be "
             f"at most t. QQ plot: {png.name}.", ""]  # fmt: skip
    levels = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.5)
    table = []
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for (mode, rows), parts in sorted(by_mode.items()):
        p = np.sort(np.concatenate(parts))
        table.append({"mode": mode, "rows": f"{rows:,}", "tables": len(parts), "p-values": f"{len(p):,}",
                      **{f"<= {t:g}": f"{np.mean(p <= t):.2g}" for t in levels}})  # fmt: skip
        expected = (np.arange(1, len(p) + 1)) / (len(p) + 1)
        keep = np.unique(np.r_[np.arange(min(len(p), 2000)), np.linspace(0, len(p) - 1, 3000).astype(int)])
        ax.loglog(expected[keep], np.maximum(p[keep], 1e-300), ".", ms=2, label=f"{mode}, {rows:,} rows")
    ax.plot([1e-7, 1], [1e-7, 1], "k-", lw=0.8, label="uniform")
    ax.set_xlim(1e-7, 1)
    ax.set_ylim(1e-12, 1)
    ax.set_xlabel("expected (uniform) quantile")
    ax.set_ylabel("observed p-value")
    ax.set_title("clean tables: pooled p-values")
    ax.legend()
    fig.tight_layout()
    with atomic_path(png) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    from nrad.bench.summary import markdown_table

    return [*lines, markdown_table(pd.DataFrame(table))]


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
    parser.add_argument("--power", default=",".join(f"shift-{m}-{s}" for m in MAGNITUDES for s in SHARES))
    parser.add_argument("--rows", default=str(ROWS), help="table sizes, comma-separated")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("results/fdr.csv"))
    parser.add_argument("--report", type=Path, default=None, help="only summarize this CSV")
    parser.add_argument("--qq", type=Path, default=None, help="with --report: the --dump folder to pool")
    parser.add_argument("--dump", type=Path, default=None, help="save each clean run's p-values here (.npz)")
    args = parser.parse_args()
    if args.report:
        print(report(args.report, args.qq), end="")
        return
    done = set()
    if args.out.exists():
        old = pd.read_csv(args.out)
        done = set(zip(old["kind"], old["generator"], old["mode"], old["seed"], old["rows"], strict=True))
    seeds = parse_seeds(args.seeds)
    sizes = [int(r) for r in args.rows.split(",")]
    groups = (("clean", args.nulls), ("planted", args.planted), ("power", args.power))
    tasks = [(k, g, m, s, r) for r in sizes for k, gens in groups for g in filter(None, gens.split(","))
             for m in args.modes.split(",") for s in seeds if (k, g, m, s, r) not in done]  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
    new = not args.out.exists()
    pool_args = {"initializer": _warm} if args.jobs > 1 else {}
    with args.out.open("a", newline="") as fh, ProcessPoolExecutor(args.jobs, **pool_args) as pool:
        writer = None
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


if __name__ == "__main__":
    main()
