"""The main job as a user meets it: planted-truth tables through ``nrad detect`` and ``nrad fit`` + ``nrad score``.

For each table family and seed it writes a clean table (no anomalies) and a
table with planted anomalies of known cause, runs the two ways of working
exactly as a user types them, and reports per run:

* flagged: planted rows flagged / planted rows, and the false discovery
  proportion (unplanted flagged / flagged);
* first-named: share of flagged planted rows whose first ``top_features``
  column (the name before the first ``:``) is one of the row's causes;
* seconds and peak memory (MiB) of each command, end to end.

Usage::

    python benchmarks/main_job.py --rows 3000 --seeds 0,1,2 --fdr 0.1
    python benchmarks/main_job.py --rows 5000 --families transactions --seeds 0 --timing
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from nrad import synthetic

NRAD = [sys.executable, "-c", "from nrad.cli import main; main()"]
FAMILIES = {"transactions": synthetic.make_transactions}


def run(args: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run one nrad command; return (seconds, peak RSS MiB of the child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    res = subprocess.run([*NRAD, *args], cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if res.returncode != 0:
        raise RuntimeError(f"nrad {' '.join(args)} failed:\n{res.stderr}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024, res.stdout


def judge(scores: pd.DataFrame, truth: pd.DataFrame) -> dict[str, float]:
    flagged = scores["flagged"].to_numpy(dtype=bool)
    planted = np.zeros(len(scores), dtype=bool)
    planted[truth["row"].to_numpy()] = True
    first = scores["top_features"].fillna("").str.split(":").str[0]
    hits = [first.iloc[r] in causes for r, causes in zip(truth["row"], truth["causes"], strict=True)
            if flagged[r]]  # fmt: skip
    return {
        "planted": int(planted.sum()),
        "flagged": int(flagged.sum()),
        "found": int((flagged & planted).sum()),
        "recall": float((flagged & planted).sum() / max(planted.sum(), 1)),
        "fdp": float((flagged & ~planted).sum() / max(flagged.sum(), 1)),
        "first_named": float(np.mean(hits)) if hits else float("nan"),
        "auroc_top": float(
            np.mean(scores["anomaly_score"].rank(ascending=False).to_numpy()[planted] <= planted.sum())
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--anomalies", type=int, default=20)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--fdr", type=float, default=0.1)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--report", action="store_true", help="also write the HTML report (detect)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the tables and outputs here")
    args = parser.parse_args()
    rows = []
    for family in args.families.split(","):
        make = FAMILIES[family]
        for seed in [int(s) for s in args.seeds.split(",")]:
            work = args.keep or Path(tempfile.mkdtemp(prefix="nrad-main-job-"))
            work.mkdir(parents=True, exist_ok=True)
            table = make(args.rows, args.anomalies, random_state=1000 + seed)
            clean = make(args.rows, 0, random_state=2000 + seed)
            table.frame.to_csv(work / "T.csv", index=False)
            clean.frame.to_csv(work / "clean.csv", index=False)
            report = ["--report", "a.html"] if args.report else []
            t_detect, m_detect, _ = run(["detect", "T.csv", "--id-column", "txn_id", "--fdr", str(args.fdr),
                                         "--out", "a.csv", *report], work)  # fmt: skip
            t_fit, m_fit, _ = run(["fit", "clean.csv", "--id-column", "txn_id", "--model", "m.nrad"], work)
            t_score, m_score, _ = run(["score", "T.csv", "--model", "m.nrad", "--fdr", str(args.fdr),
                                       "--out", "b.csv"], work)  # fmt: skip
            for way, out, secs, mem in (("detect", "a.csv", t_detect, m_detect),
                                        ("fit+score", "b.csv", t_fit + t_score, max(m_fit, m_score))):  # fmt: skip
                row = {"family": family, "seed": seed, "way": way, **judge(pd.read_csv(work / out), table.truth),
                       "seconds": round(secs, 1), "peak_mib": round(mem)}  # fmt: skip
                rows.append(row)
                print(row, flush=True)
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False))
    print(frame.groupby("way")[["recall", "fdp", "first_named", "seconds"]].mean().to_string())


if __name__ == "__main__":
    main()
