"""A wide table fitted and scored on itself: seconds of ``fit_table`` and of in-sample ``score``.

Rows from 10 latent factors and noise, the first fifth of the columns rounded counts, 30% of
the cells set to 0 or to one other value.  Run under ``/usr/bin/time -f "%e s %M KB"`` for the
peak memory.

Usage::

    python research/probe_wide_table.py --rows 1966 --cols 1555
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from nrad.table import fit_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1966)
    parser.add_argument("--cols", type=int, default=1555)
    args = parser.parse_args()
    n, p = args.rows, args.cols
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 10)) @ rng.normal(size=(10, p)) + rng.normal(size=(n, p)) * 0.5
    X[:, : p // 5] = np.round(np.abs(X[:, : p // 5]))
    X[rng.random((n, p)) < 0.3] = np.where(rng.random() < 0.5, 0, X[0, 0])
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(p)])
    start = time.time()
    model = fit_table(frame)
    fitted = time.time()
    scored = model.score(frame, in_sample=True)[0]
    print(f"{n} x {p}: fit {fitted - start:.1f} s, score in sample {time.time() - fitted:.1f} s, "
          f"flagged {int(scored['flagged'].sum())}")  # fmt: skip


if __name__ == "__main__":
    main()
