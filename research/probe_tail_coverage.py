"""Do the fitted tails' small p-values keep their promise on small tables?

A tail (:class:`nrad.calibration.TailModel`) fitted to ``n`` calibration
values drawn from a known law gives a new value from that law a p-value at
most ``t`` with a true chance ``rate(t)``: the law's survival at the score
where the fitted p-value reaches ``t``.  A calibrated tail keeps
``rate(t) <= t``; this prints ``rate(t) / t`` averaged over ``--draws``
samples (the chance over tables and values that a normal value gets
``p <= t``), for ``t`` = 1e-3, 1e-4 and 1e-5, at 150, 500 and 3,000 values,
for the statistics the flags read: a row's score (exponential, gamma,
log-normal nats; the row tails' settings) and a cell's residual read as a
Gaussian surprise (Gaussian, Student t with 10 and 5 degrees of freedom; the
residual tails' settings: the posterior mean shape, or with ``--residuals
averaged`` the p-values averaged over the shapes).  ``fit``: every value
fitted (a model's training rows); ``detect``: the top ones trimmed, as for
a table scored against itself.

Usage::

    python research/probe_tail_coverage.py --draws 300
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy import stats

from nrad.bench.summary import markdown_table
from nrad.calibration import MAX_SHAPE, SCORE_TRIM, TailModel
from nrad.cells import CELL_MAX_SHAPE, CELL_TRIM, RESIDUAL_MIN_SCALE, _surprise

LEVELS = np.array([1e-3, 1e-4, 1e-5])
#: True survival levels at which each fitted tail is read (its p-value there).
GRID = np.logspace(-1, -10, 181)


def laws() -> dict:
    """name: (draw n values with a generator, statistic of a value, true survival at GRID as
    values of the law, kind)."""
    gauss, t10, t5 = stats.norm, stats.t(10), stats.t(5)
    return {
        "row: exponential": (lambda r, n: r.exponential(size=n), stats.expon.isf(GRID), "row"),
        "row: gamma 3": (lambda r, n: r.gamma(3.0, size=n), stats.gamma(3.0).isf(GRID), "row"),
        "row: log-normal 0.5": (lambda r, n: r.lognormal(0, 0.5, n), stats.lognorm(0.5).isf(GRID), "row"),
        "residual: Gaussian": (lambda r, n: r.normal(size=n), gauss.isf(GRID), "residual"),
        "residual: t 10 df": (lambda r, n: r.standard_t(10, size=n), t10.isf(GRID), "residual"),
        "residual: t 5 df": (lambda r, n: r.standard_t(5, size=n), t5.isf(GRID), "residual"),
    }


def fit(values: np.ndarray, kind: str, mode: str, mean: bool) -> TailModel:
    """The tail as the product fits it (``mean``: a residual's tail by its posterior mean shape)."""
    if kind == "row":
        return TailModel.fit(values, SCORE_TRIM if mode == "detect" else None, MAX_SHAPE)
    trim = CELL_TRIM if mode == "detect" else None
    return TailModel.fit(_surprise(values), trim, CELL_MAX_SHAPE, RESIDUAL_MIN_SCALE, mean)


def rates(tail: TailModel, at: np.ndarray, kind: str) -> np.ndarray:
    """rate(t) for each level: the largest true survival on GRID whose fitted p-value is <= t."""
    log_p = tail.log_p_values(_surprise(at) if kind == "residual" else at)
    out = np.zeros(len(LEVELS))
    for i, level in enumerate(LEVELS):
        hit = np.flatnonzero(log_p <= np.log(level))
        out[i] = GRID[hit[0]] if len(hit) else 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument("--sizes", default="150,500,3000")
    parser.add_argument(
        "--residuals",
        choices=("mean", "averaged"),
        default="mean",
        help="a residual's tail by the shapes' posterior mean (as the product) or averaged",
    )
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for name, (draw, at, kind) in laws().items():
        for n in (int(s) for s in args.sizes.split(",")):
            for mode in ("fit", "detect"):
                mean = args.residuals == "mean"
                tails = (fit(draw(rng, n), kind, mode, mean) for _ in range(args.draws))
                got = np.mean([rates(tail, at, kind) for tail in tails], axis=0)
                ratios = (f"{g / t:.2f}" for g, t in zip(got, LEVELS, strict=True))
                rows.append([name, f"{n:,}", mode, *ratios])
    print(f"rate(t) / t, mean over {args.draws} samples (above 1: the tail promises more than it keeps)\n")
    columns = ["statistic", "values", "mode", *(f"{t:g}" for t in LEVELS)]
    print(markdown_table(pd.DataFrame(rows, columns=columns)))


if __name__ == "__main__":
    main()
