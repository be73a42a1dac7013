"""What the residual tails' shape averaging costs at the far end, and what judging them light would risk.

A cell's residual is read as its Gaussian surprise ``-log P(T > t)``
(:mod:`nrad.cells`), exactly exponential when the residuals are Gaussian.
Its tail (:class:`nrad.calibration.TailModel`, trimmed as in a table
scored against itself) averages the generalized Pareto shape over
``[0, CELL_MAX_SHAPE]``.  For residuals drawn from known distributions
(Gaussian, Gaussian of the wrong scale, Student t, a scale mixture), this
prints the fitted tail's p-value at 4 and 5 sd beside the true one (from
two million draws), for the shipped averaging and for "shape 0 unless a
likelihood-ratio test rejects it" (``prefer_light``), at 3,000 and
300,000 calibration values.

Usage::

    python research/probe_tail_light.py
"""

from __future__ import annotations

import functools

import numpy as np

import nrad.calibration as calibration
from nrad.calibration import TailModel
from nrad.cells import CELL_MAX_SHAPE, CELL_TRIM, RESIDUAL_MIN_SCALE, _surprise


def fit(x: np.ndarray, light: bool) -> TailModel:
    shipped = calibration.shape_posterior
    if light:
        calibration.shape_posterior = functools.partial(shipped, prefer_light=True)
    try:
        return TailModel.fit(_surprise(x), CELL_TRIM, CELL_MAX_SHAPE, RESIDUAL_MIN_SCALE)
    finally:
        calibration.shape_posterior = shipped


def main() -> None:
    rng = np.random.default_rng(1)
    laws = {
        "Gaussian": lambda n: rng.normal(size=n),
        "Gaussian x 1.1": lambda n: 1.1 * rng.normal(size=n),
        "t, 10 df": lambda n: rng.standard_t(10, size=n),
        "t, 5 df": lambda n: rng.standard_t(5, size=n),
        "90% sd 1, 10% sd 1.8": lambda n: rng.normal(size=n) * np.where(rng.random(n) < 0.9, 1.0, 1.8),
    }
    print("| residuals | values | tail | log10 p at 4 sd (true) | log10 p at 5 sd (true) |")
    print("|---|---|---|---|---|")
    for name, draw in laws.items():
        truth = draw(2_000_000)
        true = {t: np.log10(max(np.mean(truth > t), 1e-12)) for t in (4.0, 5.0)}
        for n in (3000, 300_000):
            x = draw(n)
            for light in (False, True):
                tail = fit(x, light)
                got = {t: tail.log_p_values(_surprise(np.array([t])))[0] / np.log(10) for t in (4.0, 5.0)}
                print(f"| {name} | {n:,} | {'light unless rejected' if light else 'averaged (shipped)'} | "
                      f"{got[4.0]:.2f} ({true[4.0]:.2f}) | {got[5.0]:.2f} ({true[5.0]:.2f}) |")  # fmt: skip


if __name__ == "__main__":
    main()
