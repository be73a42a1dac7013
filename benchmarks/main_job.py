"""The main job as a user meets it: planted-truth tables through the command line, both ways of working.

For each table family and seed it writes a table with 20 planted anomalies of
known cause (``T.csv``) and a clean table of the same kind (``clean.csv``),
then runs exactly what a user types::

    nrad detect T.csv --id-column ID --fdr 0.1 --out a.csv
    nrad fit clean.csv --id-column ID --model m.nrad
    nrad score T.csv --model m.nrad --fdr 0.1 --out b.csv

and reads ``flagged`` and ``top_features`` (the column named first)
as a user would.  Per run: the share of planted rows flagged, the false
discovery proportion of the flags, the share of flagged planted rows whose
first named column is one of the row's causes, and seconds / peak memory of
each command (``/usr/bin/time``).

benchmarks/timing.py times the same commands by table size, on a quiet
machine and beside a busy process.

Usage::

    python benchmarks/main_job.py --families transactions,sensors,patients --seeds 0-4
    python benchmarks/main_job.py --summary results/main_job.csv > results/MAIN_JOB.md
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from timing import run  # the same /usr/bin/time runner (benchmarks/timing.py)

from nrad import synthetic
from nrad.explain import first_feature

#: The ways of working, as the rows of the results name them.
WAYS = ("detect", "fit + score")
IDS = {
    "transactions": "txn_id",
    "issue-kinds": "txn_id",
    "sensors": "reading_id",
    "patients": "patient_id",
    "properties": "record_id",
    "shipments": "shipment_id",
    "batch": "part_id",
    "lab_panel": "sample_id",
    "meters": "reading_id",
    "invoices": "invoice_id",
    "bookings": "booking_ref",
    "flows": "flow_id",
    "employees": "employee_id",
    "trips": "trip_id",
    "exams": "student_id",
    "loans": "loan_id",
    "flights": "flight_id",
    "weather": "obs_id",
    "households": "hh_id",
    "cars": "listing_id",
}
#: The four kinds the issue describes: an impossible age, a 30x amount, a 40x quantity, a broken relation.
ISSUE_KINDS = ("impossible_age", "huge_amount", "huge_quantity", "age_balance")


def make(family: str, rows: int, anomalies: int, seed: int) -> synthetic.PlantedTable:
    if family == "issue-kinds":
        return synthetic.make_transactions(rows, anomalies, random_state=seed, kinds=ISSUE_KINDS)
    return synthetic.FAMILIES[family](rows, anomalies, random_state=seed)


def judge(scores: pd.DataFrame, truth: pd.DataFrame, rare: Any = None) -> dict[str, Any]:
    """Flags and first named columns of a scores file against the planted truth; ``rare``: the rows
    whose only oddity is a rare but legitimate value (None: not tracked)."""
    flagged = scores["flagged"].to_numpy(dtype=bool)
    planted = np.zeros(len(scores), dtype=bool)
    planted[truth["row"].to_numpy()] = True
    first = scores["top_features"].fillna("").astype(str).map(first_feature)
    named = [
        first.iloc[r] in causes for r, causes in zip(truth["row"], truth["causes"], strict=True) if flagged[r]
    ]
    # Per kind of anomaly: "found/planted" (e.g. "2/3"), and how many flagged ones were named right.
    kinds = {
        f"kind:{kind}": f"{int(flagged[part['row']].sum())}/{len(part)}"
        for kind, part in truth.groupby("kind", sort=True)
    }
    return {
        "flagged": int(flagged.sum()),
        "found": int((flagged & planted).sum()),
        "recall": float((flagged & planted).sum() / max(planted.sum(), 1)),
        "fdp": float((flagged & ~planted).sum() / max(flagged.sum(), 1)),
        "first_named": float(np.mean(named)) if named else float("nan"),
        "named": int(np.sum(named)),
        **kinds,
        **({} if rare is None else {"rare": f"{int(flagged[np.asarray(rare, dtype=int)].sum())}/{len(rare)}"}),
    }


def one_table(
    family: str,
    seed: int,
    rows: int,
    report: bool,
    keep: Path | None,
    options: tuple[str, ...] = (),
    ways: tuple[str, ...] = WAYS,
) -> list[dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="nrad-main-job-")) if keep is None else keep / f"{family}-{seed}"
    work.mkdir(parents=True, exist_ok=True)
    try:
        table = make(family, rows, 20, 1000 + seed)
        make(family, rows, 0, 2000 + seed).frame.to_csv(work / "clean.csv", index=False)
        table.frame.to_csv(work / "T.csv", index=False)
        ident = IDS[family]
        extra = ["--report", "a.html"] if report else []
        runs = []
        if "detect" in ways:
            t_detect, m_detect = run(
                ["detect", "T.csv", "--id-column", ident, "--fdr", "0.1", "--out", "a.csv", *extra, *options],
                work,
            )
            runs.append(("detect", "a.csv", [t_detect], m_detect))
        if "fit + score" in ways:
            t_fit, m_fit = run(
                ["fit", "clean.csv", "--id-column", ident, "--model", "m.nrad", *options], work
            )
            t_score, m_score = run(
                ["score", "T.csv", "--model", "m.nrad", "--fdr", "0.1", "--out", "b.csv"], work
            )
            runs.append(("fit + score", "b.csv", [t_fit, t_score], max(m_fit, m_score)))
        out = []
        for way, name, secs, mem in runs:
            scores = pd.read_csv(work / name, keep_default_na=False)
            out.append({"family": family, "seed": seed, "way": way, **judge(scores, table.truth, table.rare),
                        "seconds": round(sum(secs), 1), "peak_mib": round(mem)})  # fmt: skip
        return out
    finally:
        if keep is None:  # the tables and outputs are read above; nothing is left behind
            shutil.rmtree(work, ignore_errors=True)


def summary(path: Path) -> str:
    """results/MAIN_JOB.md from the runs CSV: per family and way of working, then per kind of anomaly."""
    from nrad.bench.summary import markdown_table

    runs = pd.read_csv(path)
    ways = runs.groupby(["family", "way"])
    table = pd.DataFrame({
        "tables": ways.size(),
        "planted": ways["found"].size() * 20,
        "recall": ways["recall"].mean().round(3),
        "min recall": ways["recall"].min().round(2),
        "FDP": ways["fdp"].mean().round(3),
        "max FDP": ways["fdp"].max().round(2),
        "first named right": (ways["named"].sum() / ways["found"].sum().clip(lower=1)).round(3),
        "seconds": ways["seconds"].mean().round(1),
        "peak MiB": ways["peak_mib"].max(),
    })  # fmt: skip
    by_way = runs.groupby("way")
    overall = pd.DataFrame({
        "tables": by_way.size(),
        "planted": by_way["found"].size() * 20,
        "recall": (by_way["found"].sum() / (by_way["found"].size() * 20)).round(3),
        "mean FDP": by_way["fdp"].mean().round(3),
        "max FDP": by_way["fdp"].max().round(2),
        "tables with FDP > 0.2": by_way["fdp"].apply(lambda f: int((f > 0.2).sum())),
        "first named right": (by_way["named"].sum() / by_way["found"].sum().clip(lower=1)).round(3),
    })  # fmt: skip
    kinds = []
    for (family, way), part in ways:
        for col in [c for c in part.columns if c.startswith("kind:") or c == "rare"]:
            counts = part[col].dropna().astype(str).str.split("/", expand=True).astype(int)
            if len(counts):
                kind = col[5:] if col != "rare" else "(not planted: a rare but legitimate value alone)"
                kinds.append({"family": family, "way": way, "kind": kind,
                              "flagged": f"{counts[0].sum()} of {counts[1].sum()}"})  # fmt: skip
    seeds = ", ".join(map(str, sorted(runs["seed"].unique())))
    return "\n".join(
        [
            "# The main job through the command line",
            "",
            f"Generated by `python benchmarks/main_job.py --summary {path}` from {len(runs) // 2} tables "
            f"(seeds {seeds}), each 3,000 rows with 20 planted anomalies of known cause, and a clean table "
            "of "
            "the same kind. `detect`: `nrad detect T.csv --id-column ID --fdr 0.1 --out a.csv`; "
            "`fit + score`: `nrad fit clean.csv --id-column ID --model m.nrad` then "
            "`nrad score T.csv --model m.nrad --fdr 0.1 --out b.csv`. recall: share of the planted rows "
            "flagged; FDP: share of the flags that are not planted; first named right: share of the flagged "
            "planted rows whose `top_features` names one of the row's causes first. Seconds and peak memory "
            "per table (both commands for fit + score), measured beside other benchmark processes: see "
            "results/TIMING.md for the timing on a quiet machine.",
            "",
            "## All families",
            "",
            markdown_table(overall),
            "",
            "## By family",
            "",
            markdown_table(table),
            "",
            "## Per kind of anomaly (flagged, summed over seeds)",
            "",
            markdown_table(pd.DataFrame(kinds)),
            "",
        ]
    )


def main() -> None:
    from nrad.bench.runner import parse_seeds

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", default="issue-kinds,transactions,sensors,patients")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--report", action="store_true", help="detect also writes the HTML report")
    parser.add_argument(
        "--keep", type=Path, default=None, help="keep the tables and outputs under this folder"
    )
    parser.add_argument(
        "--options", default="", help="more options for nrad detect and fit, e.g. --source-split"
    )
    parser.add_argument("--out", type=Path, default=None, help="append the rows to this CSV")
    parser.add_argument(
        "--ways", default=",".join(WAYS), help="ways of working to run, comma-separated: " + ", ".join(WAYS)
    )
    parser.add_argument(
        "--summary", type=Path, default=None, help="only print the markdown summary of this CSV"
    )
    args = parser.parse_args()
    if args.summary is not None:
        print(summary(args.summary))
        return
    ways = tuple(args.ways.split(","))
    if unknown := set(ways) - set(WAYS):
        parser.error(f"unknown ways {sorted(unknown)}; choose from: {', '.join(WAYS)}")
    rows = []
    for family in args.families.split(","):
        for seed in parse_seeds(args.seeds):
            for row in one_table(
                family, seed, args.rows, args.report, args.keep, tuple(args.options.split()), ways
            ):
                rows.append(row)
                print(row, flush=True)
    frame = pd.DataFrame(rows)
    per_family = frame.groupby(["family", "way"])[["recall", "fdp", "first_named", "seconds"]].mean()
    print(per_family.round(3).to_string())
    print(
        frame.groupby("way")[["recall", "fdp", "first_named", "seconds", "peak_mib"]]
        .mean()
        .round(3)
        .to_string()
    )
    if args.out is not None:
        frame.to_csv(args.out, mode="a", header=not args.out.exists(), index=False)


if __name__ == "__main__":
    main()
