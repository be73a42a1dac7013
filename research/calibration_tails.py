"""Which tail model should turn calibration scores into p-values?  Compared offline on dumped scores.

``benchmarks/fdr.py --dump DIR`` saves, for every run, the calibration
scores, the scores of the table being flagged and which of its rows were
planted.  This script applies candidate tail models to exactly those scores
(no refitting) and reports, per generator and way of working, the share of
clean tables where Benjamini-Hochberg flags anything (must stay <= q) and
the share of planted anomalies found.

    python research/calibration_tails.py DIR
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from nrad.calibration import conformal_ranks
from nrad.flags import benjamini_hochberg

LEVELS = (0.01, 0.05, 0.1)


def tail_p(calib: np.ndarray, scores: np.ndarray, share: float, censor: float, shapes: np.ndarray,
           prior: np.ndarray) -> np.ndarray:  # fmt: skip
    """Conformal body, generalized Pareto tail averaged over ``shapes`` (posterior with ``prior``)."""
    calib = np.sort(calib)
    n = calib.size
    k = int(min(max(round(share * n), min(30, n - 1)), 2000))
    u = calib[n - k - 1]
    excess = calib[n - k :] - u
    n_cens = min(int(np.ceil(censor * n)), k // 2)
    seen = excess[: excess.size - n_cens]
    level = seen[-1]
    body = (1.0 + conformal_ranks(calib, scores)) / (n + 1.0)
    logliks, scales = [], []
    for xi in shapes:

        def nll(log_scale: float, xi: float = float(xi)) -> float:
            s = np.exp(log_scale)
            if xi == 0:
                return seen.size * log_scale + (seen.sum() + n_cens * level) / s
            return (seen.size * log_scale + (1 / xi + 1) * np.log1p(xi * seen / s).sum()
                    + n_cens / xi * np.log1p(xi * level / s))  # fmt: skip

        res = minimize_scalar(nll, bounds=(np.log(1e-3), np.log(100.0)), method="bounded")
        logliks.append(-res.fun)
        scales.append(np.exp(res.x))
    w = np.exp(np.array(logliks) - max(logliks)) * prior
    w /= w.sum()
    x = np.maximum(scores - u, 0.0)
    surv = np.zeros_like(x)
    for xi, s, wi in zip(shapes, scales, w, strict=True):
        surv += wi * (np.exp(-x / s) if xi == 0 else (1 + xi * x / s) ** (-1 / xi))
    return np.where(scores > u, k / (n + 1.0) * surv, body)


def lomax_p(calib: np.ndarray, scores: np.ndarray, share: float, censor: float) -> np.ndarray:
    calib = np.sort(calib)
    n = calib.size
    k = int(min(max(round(share * n), min(30, n - 1)), 2000))
    u = calib[n - k - 1]
    excess = calib[n - k :] - u
    n_cens = min(int(np.ceil(censor * n)), k // 2)
    seen = excess[: excess.size - n_cens]
    exposure = seen.sum() + n_cens * seen[-1]
    body = (1.0 + conformal_ranks(calib, scores)) / (n + 1.0)
    x = np.maximum(scores - u, 0.0)
    return np.where(scores > u, k / (n + 1.0) * np.exp(-seen.size * np.log1p(x / exposure)), body)


def iterative(fit: Callable, calib: np.ndarray, scores: np.ndarray, censor: float, level: float = 0.2,
              rounds: int = 3) -> np.ndarray:  # fmt: skip
    """Censor the calibration scores that the calibration flags itself (BH at ``level``), refit."""
    n = calib.size
    for _ in range(rounds):
        own = fit(calib, calib, censor)
        flagged = int(benjamini_hochberg(own, level).sum())
        wanted = max(censor, (flagged + 1) / n)
        if wanted <= censor + 1e-12:
            break
        censor = wanted
    return fit(calib, scores, censor)


GRID = np.linspace(0, 0.5, 11)
CANDIDATES = {
    "lomax 90/2": lambda c, s, mode: lomax_p(c, s, 0.1, 0.02),
    "lomax 90/fit0": lambda c, s, mode: lomax_p(c, s, 0.1, 0.0 if mode == "fit" else 0.02),
    "xi flat 90/2": lambda c, s, mode: tail_p(c, s, 0.1, 0.02, GRID, np.ones_like(GRID)),
    "xi exp0.1 90/2": lambda c, s, mode: tail_p(c, s, 0.1, 0.02, GRID, np.exp(-GRID / 0.1)),
    "xi exp0.05 90/2": lambda c, s, mode: tail_p(c, s, 0.1, 0.02, GRID, np.exp(-GRID / 0.05)),
    "xi flat 90/fit0": lambda c, s, mode: tail_p(
        c, s, 0.1, 0.0 if mode == "fit" else 0.02, GRID, np.ones_like(GRID)
    ),
    "xi exp0.1 90/fit0": lambda c, s, mode: tail_p(
        c, s, 0.1, 0.0 if mode == "fit" else 0.02, GRID, np.exp(-GRID / 0.1)
    ),
    "xi flat 95/1": lambda c, s, mode: tail_p(c, s, 0.05, 0.01, GRID, np.ones_like(GRID)),
    "xi flat 95/0.5": lambda c, s, mode: tail_p(c, s, 0.05, 0.005, GRID, np.ones_like(GRID)),
    "xi flat 97.5/1": lambda c, s, mode: tail_p(c, s, 0.025, 0.01, GRID, np.ones_like(GRID)),
    "xi exp0.2 95/1": lambda c, s, mode: tail_p(c, s, 0.05, 0.01, GRID, np.exp(-GRID / 0.2)),
    "xi flat1 95/1": lambda c, s, mode: tail_p(c, s, 0.05, 0.01, np.linspace(0, 1, 21), np.ones(21)),
    "lomax 95/1": lambda c, s, mode: lomax_p(c, s, 0.05, 0.01),
    "xi flat 90/2 it": lambda c, s, mode: iterative(
        lambda cc, ss, cen: tail_p(cc, ss, 0.1, cen, GRID, np.ones_like(GRID)), c, s, 0.02
    ),
    "xi flat 95/1 it": lambda c, s, mode: iterative(
        lambda cc, ss, cen: tail_p(cc, ss, 0.05, cen, GRID, np.ones_like(GRID)), c, s, 0.01
    ),
    "xi exp0.1 95/1": lambda c, s, mode: tail_p(c, s, 0.05, 0.01, GRID, np.exp(-GRID / 0.1)),
}


def evaluate(folder: Path, names: list[str]) -> pd.DataFrame:
    rows = []
    for path in sorted(folder.glob("*.npz")):
        kind, generator, mode, seed = path.stem.split("-")
        run = np.load(path)
        for name in names:
            p = CANDIDATES[name](run["calibration"], run["scores"], mode)
            row = {"candidate": name, "kind": kind, "generator": generator, "mode": mode, "seed": int(seed)}
            truth = run["truth"].astype(bool)
            for q in LEVELS:
                flags = benjamini_hochberg(p, q)
                row[f"any_{q}"] = float(flags.any()) if kind == "clean" else np.nan
                row[f"found_{q}"] = (
                    (flags & truth).sum() / max(truth.sum(), 1) if kind == "planted" else np.nan
                )
                row[f"fdp_{q}"] = (flags & ~truth).sum() / max(flags.sum(), 1)
            rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    folder = Path(sys.argv[1])
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else list(CANDIDATES)
    runs = evaluate(folder, names)
    clean = (
        runs[runs.kind == "clean"]
        .groupby(["candidate", "mode", "generator"])[[f"any_{q}" for q in LEVELS]]
        .mean()
    )
    print("clean tables: share flagging anything (the FDR; must stay <= q)")
    print(clean.unstack("generator").round(2).to_string())
    planted = (
        runs[runs.kind == "planted"]
        .groupby(["candidate", "mode"])[[f"found_{q}" for q in LEVELS] + [f"fdp_{q}" for q in LEVELS]]
        .mean()
    )
    print("\nplanted tables: share of planted anomalies flagged, and FDP")
    print(planted.round(3).to_string())
    worst = (
        runs[runs.kind == "clean"]
        .groupby(["candidate", "mode", "generator"])[[f"any_{q}" for q in LEVELS]]
        .mean()
    )
    print("\nworst generator per candidate (FDR / q):")
    ratio = pd.concat({q: worst[f"any_{q}"] / q for q in LEVELS}, axis=1).groupby("candidate").max()
    print(ratio.round(2).to_string())


if __name__ == "__main__":
    main()
