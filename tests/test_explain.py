"""Explanations rank the features where an anomaly was planted first."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from nrad import NRDE
from nrad.explain import first_feature
from nrad.table import TableModel, fit_table


def test_planted_features_rank_first() -> None:
    rng = np.random.default_rng(0)
    latent = rng.normal(size=(1500, 3))
    mix = rng.normal(size=(3, 6))
    X = latent @ mix + 0.3 * rng.normal(size=(1500, 6))
    det = NRDE(random_state=0, max_epochs=40).fit(X[:1000])
    test = X[1000:1060].copy()
    planted = np.repeat(np.arange(6), 10)
    test[np.arange(60), planted] += 6.0 * X[:1000].std(axis=0)[planted]
    contrib = det.explain(test)
    assert contrib.shape == (60, 6)
    top = np.argmax(contrib, axis=1)
    assert np.mean(top == planted) >= 0.9, np.c_[planted, top]
    # Completeness: contributions add up to score(row) - score(training mean).
    gap = det.anomaly_score(test) - det.anomaly_score(det.mean_[None])[0]
    np.testing.assert_allclose(contrib.sum(axis=1), gap, rtol=1e-2, atol=1e-2)


def test_baseline_sets_the_reference_row() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 4)) @ rng.normal(size=(4, 4))
    det = NRDE(random_state=0, max_epochs=5).fit(X)
    rows, baseline = X[:20].copy(), X[20]
    rows[:, 2] = baseline[2]
    contrib = det.explain(rows, n_steps=64, baseline=baseline)
    # A feature at its baseline value contributes nothing; the rest add up to the score gap.
    np.testing.assert_array_equal(contrib[:, 2], 0.0)
    gap = det.anomaly_score(rows) - det.anomaly_score(baseline[None])[0]
    np.testing.assert_allclose(contrib.sum(axis=1), gap, rtol=1e-2, atol=1e-2)
    # The default baseline is the training mean.
    np.testing.assert_array_equal(det.explain(rows), det.explain(rows, baseline=det.mean_))


def _table(n: int, seed: int) -> pd.DataFrame:
    """A small mixed table: a category, an amount that depends on it, an age and a balance tied to it."""
    rng = np.random.default_rng(seed)
    shop = rng.choice(["a", "b", "c", "d"], size=n, p=[0.4, 0.3, 0.2, 0.1])
    level = pd.Series(shop).map({"a": 2.0, "b": 3.0, "c": 4.0, "d": 5.0}).to_numpy()
    age = rng.normal(45, 12, n).round()
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "shop": shop,
            "amount": np.exp(level + rng.normal(0, 0.3, n)).round(2),
            "age": age,
            "balance": np.exp(6 + 0.05 * (age - 45) + rng.normal(0, 0.2, n)).round(2),
            "channel": rng.choice(["web", "app", "pos"], size=n),
        }
    )


@pytest.fixture(scope="module")
def model() -> TableModel:
    return fit_table(_table(1500, 0), id_column="id", random_state=0, max_epochs=40)


def test_the_column_that_makes_a_row_unusual_is_named_first(model: TableModel) -> None:
    rows = _table(6, 1)
    rows.loc[0, "age"] = 160  # impossible value
    rows.loc[1, "amount"] = rows.loc[1, "amount"] * 40  # huge for its shop
    rows.loc[2, "balance"] = np.exp(
        6 + 0.05 * (85 - 45)
    )  # broken relation: a young customer's balance is old
    rows.loc[2, "age"] = 20
    rows.loc[3, "shop"] = "zzz"  # a shop never seen
    rows.loc[3, "amount"] = 400.0
    top, reason = model.describe(rows)
    first = [first_feature(t) for t in top]
    assert first[0] == "age" and first[1] == "amount" and first[2] in ("age", "balance"), top
    assert first[3] in ("shop", "amount"), top
    gains = model.explain(rows)
    assert gains.loc[0, "age"] > 5 and gains.loc[1, "amount"] > 5  # positive, in nats of the score
    assert (gains.drop(columns="id") >= 0).all().all()
    assert "160" in reason[0] and "typical" in reason[0]
    # Age is a whole number: what is typical for it is said in whole numbers, not "34.46 to 53.15".
    said = re.search(r"typical: (\S+)(?: to (\S+))?; (\S+) would fit the rest of this row\)", reason[0])
    assert said is not None, reason[0]
    assert all(v is None or re.fullmatch(r"-?\d+", v) for v in said.groups()), reason[0]


def test_columns_named_after_the_first_are_read_with_it_repaired(model: TableModel) -> None:
    """An impossible age is the row's one cause: other columns are named only with what they add once
    the age is typical (the shop, read beside an age of 160, gave back 20 nats), except the column
    related to it (balance moves with age), which keeps its share so that broken relations name both."""
    rows = _table(3, 1)
    rows.loc[0, "age"] = 160
    rows.loc[1, "amount"] = rows.loc[1, "amount"] * 40
    rows.loc[2, "balance"] = np.exp(6 + 0.05 * (85 - 45))
    rows.loc[2, "age"] = 20
    top, _ = model.describe(rows)
    # "age (92%); balance (8%)": each column's share of what the row gives back.
    named = [dict(_share(part) for part in t.split("; ")) for t in top]
    assert list(named[0])[0] == "age" and all(
        g < 15 for c, g in named[0].items() if c not in ("age", "balance")
    )
    assert list(named[1])[0] == "amount" and all(g < 15 for c, g in named[1].items() if c != "amount")
    assert {"age", "balance"} <= {c for c, g in named[2].items() if g > 20}  # a broken relation: both


def _share(part: str) -> tuple[str, float]:
    name, share = part.rsplit(" (", 1)
    return name, float(share.rstrip("%)"))


def test_contributions_are_score_drops_and_an_ordinary_row_has_small_ones(model: TableModel) -> None:
    rows = _table(200, 2)
    gains = model.explain(rows).drop(columns="id")
    # A typical row gives back a few nats at most, and the harmless 3-level channel is rarely first.
    assert float(gains.to_numpy().max(axis=1).mean()) < 4
    assert (gains.idxmax(axis=1) == "channel").mean() < 0.5
    scored, _ = model.score_rows(rows.head(5))
    prep = model.prepare(rows.head(5))
    base = model.score_prepared(prep)[0]
    np.testing.assert_allclose(scored["anomaly_score"], base)
    assert (gains.head(5).to_numpy() <= base[:, None] - base.min() + 50).all()


def test_a_missing_cell_is_explained_by_its_column(model: TableModel) -> None:
    rows = _table(3, 3)
    rows["amount"] = rows["amount"].astype(float)
    rows.loc[0, "amount"] = np.nan  # amount is never missing in training
    top, reason = model.describe(rows)
    assert first_feature(top[0]) == "amount" and "missing" in reason[0]


def test_explaining_only_the_flagged_rows_gives_the_same_strings(model: TableModel) -> None:
    rows = _table(300, 4)
    rows.loc[10, "age"] = 170
    all_rows, _ = model.score(rows, contamination=0.02, explain="all")
    some, _ = model.score(rows, contamination=0.02, explain="flagged")
    shown = some["top_features"] != ""
    assert shown.sum() >= 6  # flagged rows and the top ten
    pd.testing.assert_series_equal(all_rows.loc[shown, "top_features"], some.loc[shown, "top_features"])
    none, _ = model.score(rows, contamination=0.02, explain="none")
    assert "top_features" not in none.columns and "reason" not in none.columns


def test_a_category_whose_parent_is_a_numbers_indicator_is_explained() -> None:
    # A pool's quality is recorded only where there is a pool (pool_area not at its spike, 0), so
    # the category model reads the quality given the area's indicator (present, 0 or missing: the
    # feature with the most codes is the root): explaining the quality names that indicator in
    # words (a real table of 82 columns crashed here).
    rng = np.random.default_rng(3)
    n = 1200
    pool = rng.random(n) < 0.1
    frame = pd.DataFrame(
        {
            "pool_area": np.where(pool, rng.uniform(200, 800, n).round(), 0.0),
            "pool_qc": np.where(pool, "Gd", None),
            "size": rng.normal(1500, 300, n).round(),
        }
    )
    frame.loc[frame.index[~pool][:30], "pool_area"] = np.nan
    frame.loc[5, ["pool_area", "pool_qc"]] = [0.0, "Gd"]  # a quality without a pool
    model = fit_table(frame, random_state=0, max_epochs=5)
    qc = model.schema.categorical_names.index("pool_qc")
    assert model.categories.parent[qc] >= len(model.schema.categorical_names)  # the indicator
    top, reason = model.describe(frame, in_sample=True, rows=np.array([5]))
    assert first_feature(top[0]) == "pool_qc", top
    assert "with pool_area 0" in reason[0], reason


def test_pair_candidates_are_a_rows_largest_gains_and_farthest_values() -> None:
    from nrad.explain import PAIR_CANDIDATES, _pair_candidates

    rng = np.random.default_rng(0)
    narrow = rng.normal(size=(5, PAIR_CANDIDATES))
    assert _pair_candidates(narrow, np.zeros_like(narrow)).all()
    p = 3 * PAIR_CANDIDATES
    z, gains = rng.normal(0, 0.1, size=(2, p)), np.zeros((2, p))
    z[0, 0], gains[0, 1] = 9.0, 5.0  # far out; a gain
    z[0, 2], gains[0, 2] = 0.0, np.nan  # typical, nothing to repair
    got = _pair_candidates(z, gains)
    assert got.sum(axis=1).max() <= 2 * PAIR_CANDIDATES
    assert got[0, 0] and got[0, 1] and not got[0, 2]


def test_a_wide_tables_pairs_credited_for_candidates_only_name_the_same_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    # 14 numbers, two of them a temperature and the pressure that follows it; rows where both moved
    # together along their relation (each repaired alone breaks it), one cell 10 sd off, both.
    import nrad.explain as explain

    rng = np.random.default_rng(3)
    n = 800
    base = rng.normal(size=(n, 14))
    base[:, 1] = 2.0 * base[:, 0] + 0.1 * rng.normal(size=n)
    df = pd.DataFrame(base, columns=[f"x{j}" for j in range(14)])
    df.loc[:4, ["x0", "x1"]] += np.array([4.0, 8.0])
    df.loc[5:9, "x7"] += 10.0
    model = fit_table(df, random_state=0, max_epochs=20)
    rows = np.arange(20)
    limited = model.describe(df, in_sample=True, rows=rows)
    monkeypatch.setattr(explain, "PAIR_CANDIDATES", 14)
    every = model.describe(df, in_sample=True, rows=rows)
    assert limited == every
    assert all("x0" in top and "x1" in top for top in limited[0][:5]), limited[0][:5]
    assert all(top.startswith("x7") for top in limited[0][5:10]), limited[0][5:10]


def test_a_repair_that_is_zero_but_for_rounding_reads_zero() -> None:
    from nrad.explain import _short, _zero_below_rounding

    lo, hi, fit = _zero_below_rounding(1.13, 3.25, 8.881784197001252e-17)
    assert (lo, hi, _short(fit)) == (1.13, 3.25, "0")
    # A small value that is a real one stays: beside a range of 0.001 to 0.002, and in a range of its own size.
    assert _zero_below_rounding(0.001, 0.002, 3e-7) == (0.001, 0.002, 3e-7)
    assert _zero_below_rounding(-2e-17, 1e-16, 5e-17) == (-2e-17, 1e-16, 5e-17)


def test_a_row_a_rule_decided_names_a_cell_of_the_rule_first() -> None:
    """A total that is not the instalments times the term breaks an identity, which flags its row
    whatever its density: the row names a cell of the identity first, not a related column (the
    loan amount, the income) whose repair gives back more density."""
    from nrad.synthetic import make_loan_applications

    table = make_loan_applications(2000, 6, random_state=2, kinds=("total_not_payments",))
    model = fit_table(table.frame, id_column="loan_id", random_state=0, max_epochs=5)
    rows = table.truth["row"].to_numpy()
    scored, _ = model.score(table.frame, fdr=0.1, in_sample=True, explain="flagged")
    assert scored.loc[rows, "flagged"].all()
    identity = ("total_payable", "monthly_payment", "term_months")
    assert scored.loc[rows, "top_features"].map(first_feature).isin(identity).all()
    assert scored.loc[rows, "top_features"].str.contains("rule broken").all()
