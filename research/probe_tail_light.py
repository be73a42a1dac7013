"""What the residual tails' shape reading gives at the far end: averaged, the posterior mean, light.

A cell's residual is read as its Gaussian surprise ``-log P(T > t)``
(:mod:`nrad.cells`), exactly exponential when the residuals are Gaussian.
Its tail (:class:`nrad.calibration.TailModel`, trimmed as in a table scored
against itself) has a generalized Pareto shape in ``[0, CELL_MAX_SHAPE]``,
read three ways: the p-values averaged over the shapes' posterior
(``averaged``), the posterior mean shape alone (``mean``, what the cells
use), and "shape 0 unless a likelihood-ratio test rejects it" (``light``).
For residuals drawn from known laws (Gaussian, Gaussian of the wrong scale,
Student t with 20, 10 and 5 degrees of freedom, a scale mixture), this
prints log10 of the fitted tail's p-value at 4, 5, 7 and 10 sd beside the
true one: the median over ``--draws`` samples of 3,000 values, and the
smallest (the most anti-conservative draw).

Usage::

    python research/probe_tail_light.py --draws 20
"""

from __future__ import annotations

import argparse
import functools

import numpy as np
from scipy import stats

import nrad.calibration as calibration
from nrad.calibration import TailModel
from nrad.cells import CELL_MAX_SHAPE, CELL_TRIM, RESIDUAL_MIN_SCALE, _surprise

AT = np.array([4.0, 5.0, 7.0, 10.0])


def fit(x: np.ndarray, reading: str) -> TailModel:
    shipped = calibration.shape_posterior
    if reading == "light":
        calibration.shape_posterior = functools.partial(shipped, prefer_light=True)
    try:
        return TailModel.fit(_surprise(x), CELL_TRIM, CELL_MAX_SHAPE, RESIDUAL_MIN_SCALE, reading == "mean")
    finally:
        calibration.shape_posterior = shipped


def laws(rng: np.random.Generator) -> dict:
    """name: (draw n values, survival function)."""
    return {
        "Gaussian": (lambda n: rng.normal(size=n), stats.norm.sf),
        "Gaussian x 1.1": (lambda n: 1.1 * rng.normal(size=n), lambda t: stats.norm.sf(t / 1.1)),
        "t, 20 df": (lambda n: rng.standard_t(20, size=n), lambda t: stats.t.sf(t, 20)),
        "t, 10 df": (lambda n: rng.standard_t(10, size=n), lambda t: stats.t.sf(t, 10)),
        "t, 5 df": (lambda n: rng.standard_t(5, size=n), lambda t: stats.t.sf(t, 5)),
        "90% sd 1, 10% sd 1.8": (
            lambda n: rng.normal(size=n) * np.where(rng.random(n) < 0.9, 1.0, 1.8),
            lambda t: 0.9 * stats.norm.sf(t) + 0.1 * stats.norm.sf(t / 1.8),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--values", type=int, default=3000)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    heads = " | ".join(f"{t:g} sd" for t in AT)
    print(f"log10 p, median over {args.draws} draws of {args.values:,} values (the smallest in brackets)\n")
    print(f"| residuals | reading | {heads} |")
    print("|---|---|" + "---|" * len(AT))
    for name, (draw, sf) in laws(rng).items():
        print(f"| {name} | true | " + " | ".join(f"{v:.2f}" for v in np.log10(sf(AT))) + " |")
        got = {reading: [] for reading in ("averaged", "mean", "light")}
        for _ in range(args.draws):
            x = draw(args.values)
            for reading, values in got.items():
                values.append(fit(x, reading).log_p_values(_surprise(AT)) / np.log(10))
        for reading, values in got.items():
            mid, low = np.median(values, axis=0), np.min(values, axis=0)
            cells = " | ".join(f"{m:.2f} ({lo:.2f})" for m, lo in zip(mid, low, strict=True))
            print(f"| {name} | {reading} | {cells} |")


if __name__ == "__main__":
    main()
