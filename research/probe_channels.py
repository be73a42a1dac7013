"""Which channel decides a row's p-value: the row score, the robust distance, or one of its cells?

For a planted-truth table (``nrad.synthetic.FAMILIES``) fitted on itself
(``detect``) or on a clean twin (``fit``), prints for every planted row and
every false flag at q = 0.1 the p-value of each channel (row score, robust
distance, the smallest numeric cell, the smallest categorical cell), the
combined p-value and the BH cutoff, so that a missed or a false flag can be
traced to the channel and its tail.

Usage::

    python research/probe_channels.py --family transactions --seed 0 --mode detect
    python research/probe_channels.py --csv ames.csv --id-column rownames --backoff marginal
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from nrad.categories import BACKOFFS, CategoryModel
from nrad.cells import category_p_values
from nrad.evidence import row_p_values
from nrad.flags import bh_cutoff
from nrad.synthetic import FAMILIES
from nrad.table import fit_table


def channels(model, df: pd.DataFrame, in_sample: bool) -> pd.DataFrame:
    prep = model.prepare(df)
    folds = model.training_folds(len(df)) if in_sample else None
    scores, z, _ = model.score_prepared(prep, folds)
    distance = model.distance_statistic(z, folds)
    residuals = model.cell_residuals(prep, folds)
    values = model.cell_values(prep)
    tails = model.own_tails if in_sample else model.tails
    p_row = tails.row.p_values(scores)
    density = model.density_prepared(prep, folds)[0]
    p_density = tails.density.p_values(density) if tails.density is not None else np.full(len(df), np.nan)
    p_dist = tails.distance.p_values(distance)
    p_cells = tails.cells.p_values(residuals, values, prep.y) if tails.cells is not None else np.ones((len(df), 0))
    tested = model.tested_codes()
    p_cats = category_p_values(model.categories, prep.codes, prep.own_codes if in_sample else None)[:, tested]
    combined, which = row_p_values(model, prep, scores, z, folds)
    names = np.asarray(model.schema.names)
    num_cols = np.asarray(model.schema.numeric_sources)
    cat_cols = model.cell_columns()[p_cells.shape[1] :]
    out = pd.DataFrame(
        {
            "score": scores,
            "rank": pd.Series(scores).rank(ascending=False, method="min").to_numpy().astype(int),
            "p_row": p_row,
            "p_dens": p_density,
            "p_dist": p_dist,
            "p_cell": np.nanmin(p_cells, axis=1) if p_cells.shape[1] else np.nan,
            "cell": names[num_cols[np.nanargmin(np.nan_to_num(p_cells, nan=2.0), axis=1)]]
            if p_cells.shape[1]
            else "",
            "p_cat": p_cats.min(axis=1) if p_cats.shape[1] else np.nan,
            "cat": names[cat_cols[p_cats.argmin(axis=1)]] if p_cats.shape[1] else "",
            "p": combined,
            "decided": [names[c] if c >= 0 else "row" for c in which],
        }
    )
    return out


def _category_backoff(backoff: str) -> None:
    """Every category model fitted from here on shares new pairs by ``backoff`` (the model
    attribute that files of format 11 and before read as "marginal")."""
    fit = CategoryModel.fit.__func__

    def fit_with(cls: type[CategoryModel], *args: object, **kwargs: object) -> CategoryModel:
        model = fit(cls, *args, **kwargs)
        model.backoff = backoff
        return model

    CategoryModel.fit = classmethod(fit_with)  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="transactions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mode", choices=("detect", "fit"), default="detect")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--anomalies", type=int, default=20)
    parser.add_argument("--fdr", type=float, default=0.1)
    parser.add_argument("--csv", default=None, help="a table of your own instead (detect only)")
    parser.add_argument("--id-column", default=None)
    parser.add_argument("--rows-of", default="", help="with --csv: ids of rows to show (comma-separated)")
    parser.add_argument(
        "--backoff",
        choices=BACKOFFS,
        default=CategoryModel.backoff,
        help="how the category model shares a pair never seen among the child's codes",
    )
    args = parser.parse_args()
    _category_backoff(args.backoff)
    pd.set_option("display.width", 200)
    if args.csv:
        from nrad.io import read_table

        frame = read_table(args.csv)
        model = fit_table(frame, id_column=args.id_column, random_state=0)
        got = channels(model, frame, True)
        cut = bh_cutoff(got["p"].to_numpy(), len(got), args.fdr)
        got["flagged"] = got["p"] <= cut
        ids = frame[args.id_column].astype(str).to_numpy() if args.id_column else np.arange(len(frame)).astype(str)
        got.insert(0, "id", ids)
        print(f"BH cutoff at q = {args.fdr}: {cut:.3g} ({int(got['flagged'].sum())} flagged)")
        show = got["flagged"] | got["id"].isin(args.rows_of.split(",")) | (got["rank"] <= 10)
        print(got[show].sort_values("p").to_string(float_format=lambda v: f"{v:.3g}"))
        return
    make = FAMILIES.get(args.family)
    if args.family == "issue-kinds":  # the four kinds of benchmarks/main_job.py
        kinds = ("impossible_age", "huge_amount", "huge_quantity", "age_balance")
        make = lambda n, k, random_state: FAMILIES["transactions"](n, k, random_state=random_state, kinds=kinds)  # noqa: E731
    table = make(args.rows, args.anomalies, random_state=1000 + args.seed)
    clean = make(args.rows, 0, random_state=2000 + args.seed).frame
    model = fit_table(table.frame if args.mode == "detect" else clean, random_state=0)
    got = channels(model, table.frame, args.mode == "detect")
    cut = bh_cutoff(got["p"].to_numpy(), len(got), args.fdr)
    got["flagged"] = got["p"] <= cut
    truth = table.truth.set_index("row")
    got["kind"] = ""
    got.loc[truth.index, "kind"] = truth["kind"]
    print(f"BH cutoff at q = {args.fdr}: {cut:.3g} ({int(got['flagged'].sum())} flagged)")
    for name, tail in (("new rows", model.tails.row), ("in sample", model.own_tails.row)):
        print(f"row tail ({name}): threshold {tail.threshold:.3g}, shapes {tail.shapes}, "
              f"scales {np.round(tail.scales, 3)}, lift {tail.lift:.3g}, trimmed {tail.n_trimmed}")
    shown = got[(got["kind"] != "") | got["flagged"]].sort_values("p")
    print(shown.to_string(float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
