"""NumPy's BLAS on its default threads against one thread, for the table model's own linear algebra.

The table model makes thousands of small least-squares fits and products (an
identity searched per numeric column, a tail per cell); ``nrad.threads.one_blas_thread``
runs them on one BLAS thread.  This times, in one process, each piece both
ways, in rounds that alternate the two:

* ``lstsq``: one least-squares fit of 4,845 x 17 (an identity's fit on a wide
  table's training rows), milliseconds;
* ``identities``: :meth:`nrad.identities.Identities.fit` on a 503-column
  numeric table (``probe_wide_bench.embeddings``, 4,845 rows), seconds;
* ``fit_table``: the whole table model on that table and on a 5,000 x 10
  transactions table (``nrad.synthetic``), seconds.  ``fit_table`` runs on
  one BLAS thread; for the default side the probe replaces that context with
  one that does nothing.

``--busy`` runs a CPU-bound process beside it, as a user's laptop does.
``--same DIR --datasets A,B`` instead fits the table model both ways on each
``.npz`` dataset (``X``) and scores it in sample: the largest difference of
the scores, and each way's AUROC (``y``).

    python research/probe_blas_threads.py --rounds 2
    python research/probe_blas_threads.py --rounds 2 --busy
    python research/probe_blas_threads.py --same DIR --datasets 6_cardio,18_Ionosphere,42_WBC
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_wide_bench import embeddings  # noqa: E402
from timing import busy  # noqa: E402

import nrad.threads as threads  # noqa: E402
from nrad.identities import Identities  # noqa: E402
from nrad.synthetic import make_transactions  # noqa: E402
from nrad.table import fit_table  # noqa: E402


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


@contextlib.contextmanager
def blas(one: bool) -> Iterator[None]:
    """One BLAS thread (as the product runs), or the library's default threads everywhere."""
    if one:
        with threadpool_limits(1, user_api="blas"):
            yield
        return
    product = threads.one_blas_thread
    threads.one_blas_thread = _nothing  # the decorated entry points look it up when called
    try:
        yield
    finally:
        threads.one_blas_thread = product


def seconds(fn: Callable[[], object], repeat: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def same_scores(data_dir: Path, names: list[str]) -> None:
    """Fit and score each dataset both ways; print how far the scores are apart."""
    from sklearn.metrics import roc_auc_score

    for name in names:
        data = np.load(data_dir / f"{name}.npz")
        frame = pd.DataFrame(data["X"], columns=[f"x{i}" for i in range(data["X"].shape[1])])
        scores = {}
        for one in (True, False):
            with blas(one):
                model = fit_table(frame, random_state=0)
                scored = model.score(frame, fdr=0.1, in_sample=True, explain="none")[0]
            scores[one] = scored["anomaly_score"].to_numpy()
        auroc = [roc_auc_score(data["y"], scores[one]) for one in (True, False)]
        print(f"{name}: largest score difference {np.abs(scores[True] - scores[False]).max():.3g}, "
              f"AUROC one thread {auroc[0]:.6f}, default {auroc[1]:.6f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--busy", action="store_true", help="a CPU-bound process beside")
    parser.add_argument("--same", type=Path, default=None, help="a folder of .npz datasets")
    parser.add_argument("--datasets", default="", help="with --same: dataset names, comma-separated")
    args = parser.parse_args()
    if args.same is not None:
        same_scores(args.same, [d for d in args.datasets.split(",") if d])
        return
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4845, 17))
    y = rng.normal(size=4845)
    wide = embeddings(4845, 503, np.random.default_rng(1))[0]
    no_codes = np.zeros((len(wide), 0), dtype=np.int64)
    frames = {
        "503 columns": pd.DataFrame(wide, columns=[f"c{i}" for i in range(wide.shape[1])]),
        "5,000 x 10": make_transactions(5000, 0, random_state=8).frame,
    }
    pieces: dict[str, Callable[[], float]] = {
        "lstsq 4,845 x 17 (ms)": lambda: 1000 * seconds(lambda: np.linalg.lstsq(X, y, rcond=None), 50),
        "identities, 503 columns (s)": lambda: seconds(lambda: Identities.fit(wide, no_codes, [])),
        **{
            f"fit_table, {k} (s)": (lambda f=f: seconds(lambda: fit_table(f, random_state=0)))
            for k, f in frames.items()
        },
    }
    other = multiprocessing.Process(target=busy, daemon=True) if args.busy else None
    if other is not None:
        other.start()
    rows = []
    try:
        for r in range(args.rounds):
            for name, piece in pieces.items():
                for one in (r % 2 == 0, r % 2 == 1):  # alternate which goes first
                    with blas(one):
                        side = "one thread" if one else "default"
                        rows.append({"piece": name, "blas": side, "value": piece()})
                    print(rows[-1], flush=True)
    finally:
        if other is not None:
            other.terminate()
    table = pd.DataFrame(rows).groupby(["piece", "blas"], sort=False)["value"].median().unstack()
    table["default / one"] = table["default"] / table["one thread"]
    print(f"\nmedians over {args.rounds} rounds{', beside a busy process' if args.busy else ''}:")
    print(table.round(2).to_string())


if __name__ == "__main__":
    main()
