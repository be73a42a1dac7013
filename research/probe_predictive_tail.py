"""Is a fitted tail's p-value calibrated when its scale is estimated from few excesses?

Calibrates :class:`nrad.calibration.TailModel` on ``n`` exponential scores (a table's
out-of-fold scores whose tail is what the model says), scores one fresh exponential score, and
counts how often its p-value is at most ``alpha``: a calibrated p-value does so with chance
``alpha``.  Beside the product's p-value (the shape averaged over ``[0, max_shape]``, each shape
with its most likely scale: the scale plugged in as known), the predictive one recomputed from
the same fitted tail: each shape widened by ``1 / m`` for ``m`` fitted excesses, which is what an
exponential tail whose rate has its Jeffreys posterior predicts (a Lomax tail).

Usage::

    python research/probe_predictive_tail.py --rows 40,150 --repeats 3000
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.special import logsumexp

from nrad.calibration import TailModel, gpd_log_survival


def predictive_p(tail: TailModel, score: float) -> float:
    """The tail's p-value of ``score`` with each shape widened by ``1 / m`` (above the threshold)."""
    if tail.n_tail == 0 or score <= tail.threshold:
        return float(tail.p_values(np.array([score]))[0])
    widen = 1.0 / max(tail.n_tail - tail.n_trimmed, 1)
    excess = np.array([score - tail.threshold])
    fitted = zip(tail.shapes, tail.scales, tail.weights, strict=True)
    parts = [np.log(w) + gpd_log_survival(excess, xi + widen, sigma) for xi, sigma, w in fitted if w > 0]
    log_p = np.log(tail.lift) + np.log(tail.n_tail / (tail.n + 1.0)) + logsumexp(parts, axis=0)
    return float(np.exp(min(float(log_p[0]), 0.0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="40,150")
    parser.add_argument("--repeats", type=int, default=3000)
    parser.add_argument("--max-shape", type=float, default=0.1)
    args = parser.parse_args()
    alphas = (0.02, 0.005, 0.001)
    print(f"share of fresh exponential scores with p <= alpha ({args.repeats} repeats)")
    print("rows | p-value | " + " | ".join(f"alpha {a}" for a in alphas))
    for n in (int(r) for r in args.rows.split(",")):
        rng = np.random.default_rng(n)
        plug, pred = [], []
        for _ in range(args.repeats):
            tail = TailModel.fit(rng.standard_exponential(n), max_shape=args.max_shape)
            score = float(rng.standard_exponential())
            plug.append(float(tail.p_values(np.array([score]))[0]))
            pred.append(predictive_p(tail, score))
        for name, p in (("plug-in (product)", np.array(plug)), ("predictive", np.array(pred))):
            print(f"{n} | {name} | " + " | ".join(f"{(p <= a).mean():.4f}" for a in alphas))


if __name__ == "__main__":
    main()
