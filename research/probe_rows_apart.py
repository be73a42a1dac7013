"""Which rows stand apart in the robust distance, and are they a cluster?

For clean tables of ``benchmarks/fdr.py`` (``--nulls``) and planted tables of
``benchmarks/main_job.py`` (``--families``), fits the table model as those
benchmarks do and prints per table how many rows the robust distance calls
apart (``nrad.table._standing_apart``), whether they count as a cluster
(``nrad.table._a_cluster``: each nearer another of them than any other row, and
nearer than half the distance between as many rows drawn from the rest, in the
median), and those three median distances.  A cluster keeps the density's
in-sample tail light (docs/method.md, section 9; research/notes.md, section 36).
Read by wrapping the two functions for the run (the product has no hook).

    python research/probe_rows_apart.py --nulls heavy --families batch --seeds 0-4
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import nrad.table as table_module
from nrad.bench.runner import parse_seeds

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fdr  # noqa: E402
import main_job  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nulls", default="heavy")
    parser.add_argument("--families", default="batch")
    parser.add_argument("--seeds", default="0-4")
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args()
    seen: dict[str, object] = {}
    standing_apart, a_cluster = table_module._standing_apart, table_module._a_cluster

    def apart_spy(distances: np.ndarray) -> np.ndarray:
        seen["apart"] = out = standing_apart(distances)
        return out

    def cluster_spy(apart: np.ndarray, z: np.ndarray, rng: np.random.Generator) -> bool:
        rows, others = np.flatnonzero(apart), np.flatnonzero(~apart)
        if len(rows) >= 2 and len(others):
            inner = np.sort(np.linalg.norm(z[rows, None] - z[None, rows], axis=2), axis=1)[:, 1]
            outer = np.array([np.linalg.norm(z[others] - z[r], axis=1).min() for r in rows])
            draw = np.random.default_rng(0).choice(others, min(len(rows), len(others)), replace=False)
            drawn = table_module._nearest_other(z[draw]) if len(draw) >= 2 else np.full(1, np.nan)
            seen["distances"] = (float(np.median(inner)), float(np.median(outer)), float(np.median(drawn)))
        seen["cluster"] = out = a_cluster(apart, z, rng)
        return out

    table_module._standing_apart, table_module._a_cluster = apart_spy, cluster_spy
    tables = [("clean", name) for name in filter(None, args.nulls.split(","))]
    tables += [("planted", name) for name in filter(None, args.families.split(","))]
    for kind, name in tables:
        for seed in parse_seeds(args.seeds):
            seen.clear()
            if kind == "clean":
                table_module.fit_table(fdr.NULLS[name](args.rows, 10_000 + seed), random_state=seed)
            else:
                planted = main_job.make(name, args.rows, 20, 1000 + seed)
                table_module.fit_table(planted.frame, id_column=main_job.IDS[name])
            apart = seen.get("apart")
            count = 0 if apart is None else int(np.sum(apart))
            inner, outer, drawn = seen.get("distances", (np.nan, np.nan, np.nan))
            print(f"{kind} {name} seed {seed}: {count} rows apart, cluster {seen.get('cluster', False)}, "
                  f"median distance to the nearest other row apart {inner:.2f}, to the nearest row not "
                  f"apart {outer:.2f}, between as many other rows {drawn:.2f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
