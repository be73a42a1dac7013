"""nrad.table: the table model fitted on a DataFrame, scoring and flagging its rows."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from nrad.errors import NradError
from nrad.flags import FlagRule
from nrad.results import RESULT_COLUMNS
from nrad.table import (
    CROSS_FIT_FOLDS,
    FOLD_BANDS,
    MIN_TABLE_ROWS,
    TableModel,
    _a_cluster,
    check_rows,
    cross_fit_folds,
    fit_table,
)


def frame(n: int, seed: int, bad: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    df = pd.DataFrame({
        "id": [f"r{i}" for i in range(n)],
        "x": x,
        "y": 2 * x + rng.normal(0, 0.1, n),  # y follows x
        "kind": rng.choice(["a", "b", "c"], n),
    })  # fmt: skip
    df.loc[: bad - 1, "y"] = -2 * df.loc[: bad - 1, "x"] + 3  # the relation broken, each value typical
    return df


@pytest.fixture(scope="module")
def model() -> TableModel:
    return fit_table(frame(1500, 0), id_column="id", random_state=0, max_epochs=5)


def test_score_keeps_the_index_and_adds_the_result_columns(model: TableModel) -> None:
    df = frame(200, 1).set_axis(np.arange(200) + 1000)
    out, counts = model.score(df)
    assert out.index.equals(df.index)
    assert list(out.columns) == ["id", *RESULT_COLUMNS]
    assert out["id"].tolist() == df["id"].tolist()
    assert ((out["p_value"] > 0) & (out["p_value"] <= 1)).all()
    assert isinstance(counts, dict)


def test_a_broken_relation_ranks_first_and_is_flagged(model: TableModel) -> None:
    out, _ = model.score(frame(400, 2, bad=5), fdr=0.1)
    top = out["anomaly_score"].rank(ascending=False) <= 5
    assert top.iloc[:5].all()
    assert out["flagged"].iloc[:5].all()
    assert out["flagged"].iloc[5:].sum() <= 2


def test_a_contamination_flags_exactly_that_share(model: TableModel) -> None:
    out, _ = model.score(frame(300, 3), contamination=0.05)
    assert out["flagged"].sum() == 15


def test_the_rule_given_is_the_rule_applied(model: TableModel) -> None:
    df = frame(300, 4, bad=3)
    rule = FlagRule.of(fdr=0.2)
    by_rule, _ = model.score(df, rule=rule)
    by_level, _ = model.score(df, fdr=0.2)
    pd.testing.assert_series_equal(by_rule["flagged"], by_level["flagged"])
    np.testing.assert_array_equal(by_rule["flagged"], rule.flags(by_rule["p_value"].to_numpy()))


def test_explain_modes(model: TableModel) -> None:
    df = frame(100, 5, bad=2)
    none, _ = model.score(df, explain="none")
    assert "reason" not in none.columns
    flagged, _ = model.score(df, explain="flagged")
    every, _ = model.score(df, explain="all")
    chosen = flagged["top_features"] != ""
    # The flagged rows and the strongest few are explained, and as "all" explains them.
    assert flagged["flagged"].sum() >= 2 and 2 <= chosen.sum() < len(df)
    assert (chosen | ~flagged["flagged"]).all()
    pd.testing.assert_series_equal(flagged["reason"][chosen], every["reason"][chosen])
    assert (every["top_features"] != "").sum() > chosen.sum()


def test_many_rows_are_explained_in_chunks_with_a_line_after_each(
    model: TableModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    df = frame(300, 6, bad=8)
    whole, _ = model.score(df, fdr=0.1)
    monkeypatch.setattr("nrad.table.EXPLAIN_CHUNK", 4)
    said: list[str] = []
    chunked, _ = model.score(df, fdr=0.1, progress=said.append)
    explained = int((whole["top_features"] != "").sum())
    assert explained > 8
    pd.testing.assert_frame_equal(chunked, whole)
    assert said[0] == f"explaining {explained} rows"
    assert said[-1] == f"explained {explained} of {explained} rows"
    assert len(said) == 1 + -(-explained // 4)


def test_in_sample_scores_each_row_by_flows_that_did_not_see_it(model: TableModel) -> None:
    df = frame(1500, 0)
    own, _ = model.score_rows(df, in_sample=True)
    new, _ = model.score_rows(df)
    # Out-of-fold scores differ from the mean over folds, row by row.
    assert not np.allclose(own["anomaly_score"], new["anomaly_score"])
    assert np.corrcoef(own["anomaly_score"], new["anomaly_score"])[0, 1] > 0.8


def test_folds_by_table_size() -> None:
    for limit, folds in FOLD_BANDS:
        assert cross_fit_folds(limit - 1) == folds
    assert cross_fit_folds(10**6) == CROSS_FIT_FOLDS


def test_too_few_rows_are_refused_with_the_reason() -> None:
    with pytest.raises(NradError, match=f"at least {MIN_TABLE_ROWS} rows"):
        check_rows(MIN_TABLE_ROWS - 1, "data.csv")


@pytest.mark.parametrize("rows, columns", [(30, 50), (90, 150)])
def test_a_table_with_fewer_rows_than_columns_is_fitted(rows: int, columns: int) -> None:
    """Embeddings and word counts come wider than they are long: the table model fits them (a
    shrunk scatter below MAX_CELL_FEATURES numbers, principal components above), and a row off
    the factors the others follow ranks first."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(rows, 4)) @ rng.normal(size=(4, columns)) + 0.3 * rng.normal(size=(rows, columns))
    X[7] = rng.normal(size=columns) * 3.0
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(columns)])
    out, _ = fit_table(df, random_state=0).score(df, in_sample=True, explain="none")
    assert np.isfinite(out["anomaly_score"]).all() and out["p_value"].between(0, 1).all()
    assert int(np.argmax(out["anomaly_score"].to_numpy())) == 7


def test_a_model_without_calibration_refuses_an_fdr(model: TableModel) -> None:
    uncalibrated = copy.copy(model)
    uncalibrated.tails = None
    with pytest.raises(NradError, match="no calibration rows.*contamination"):
        uncalibrated.score(frame(40, 6), fdr=0.1)
    out, _ = uncalibrated.score(frame(40, 6), contamination=0.1, explain="none")
    assert out["flagged"].sum() == 4


def test_an_exact_relation_read_per_category_holds_for_its_farthest_rows() -> None:
    """An age and the birth year that follows it, in a table where one ward holds only the old (its
    ages read in context are far more spread out than the others'): the oldest rows are on the
    relation, not off it; a birth year that contradicts its age is flagged, naming one of the two."""
    rng = np.random.default_rng(3)
    n = 2000
    ward = rng.choice(["medicine", "surgery", "geriatric"], n, p=[0.5, 0.4, 0.1])
    age = np.clip(rng.gamma(6.0, 9.0, n), 18, 99).round()
    age = np.where(ward == "geriatric", np.maximum(age, 70), age)
    df = pd.DataFrame({"ward": ward, "age": age.astype(int), "birth_year": (2023 - age - (rng.random(n) < 0.5)).astype(int),
                       "weight": rng.normal(75, 12, n).round(1)})  # fmt: skip
    df.loc[7, ["age", "birth_year"]] = [35, 1950]  # 38 years apart, each value typical
    model = fit_table(df, random_state=0, max_epochs=5)
    out, _ = model.score(df, fdr=0.1, in_sample=True, explain="flagged")
    assert out["flagged"].iloc[7]
    assert out["top_features"].iloc[7].split(" (")[0] in ("age", "birth_year")
    oldest = np.argsort(-df["age"].to_numpy())[:30]
    assert not out["flagged"].iloc[oldest].any()


def test_a_broken_batch_fitted_on_itself_does_not_teach_the_flows_its_mode() -> None:
    # Twenty tight rows off the factors' plane (one miscalibrated run): the robust Gaussian sees them
    # stand apart, so they train neither the flows nor the neighbour members, and the density
    # scores them as what they are.  Trained on, they were a mode the flows learned as normal.
    from nrad.synthetic import make_batch_measurements

    table = make_batch_measurements(3000, 20, random_state=1000)
    model = fit_table(table.frame, id_column="part_id", random_state=0, detector="nrde")
    scored, _ = model.score(table.frame, fdr=0.1, explain="none", in_sample=True)
    planted = scored.iloc[table.truth["row"]]
    assert planted["flagged"].sum() >= 12  # 4 of 20 when they trained the flows
    assert scored["flagged"].sum() - planted["flagged"].sum() <= 2


@pytest.mark.slow
def test_a_broken_batch_of_five_percent_of_the_rows_is_flagged_whole() -> None:
    """A miscalibrated run of 150 parts in 3,000 stands apart in the robust distance, tight: the
    in-sample tails left out its top 2% only, fitted the other 90 as their tail and put every one
    back (none flagged).  No in-sample row tail is fitted to such a cluster now."""
    from nrad.synthetic import make_batch_measurements

    table = make_batch_measurements(3000, 150, random_state=1000)
    model = fit_table(table.frame, id_column="part_id", random_state=0)
    scored, _ = model.score(table.frame, fdr=0.1, explain="none", in_sample=True)
    planted = scored.iloc[table.truth["row"]]
    assert planted["flagged"].sum() >= 135
    assert scored["flagged"].sum() - planted["flagged"].sum() <= 5


def test_a_segment_standing_apart_is_no_cluster_of_anomalies() -> None:
    """Clean invoices: every US invoice charges no VAT (a rate of 0 where the others charge 19 to
    21), so the robust Gaussian leaves the US rows out and they stand apart by a gap.  They are a
    whole level of `country`, not a broken batch: fitted on itself, the table flags nothing.  Read
    as a cluster of anomalies, over a hundred of 500 rows were flagged."""
    from nrad.synthetic import make_invoices

    frame = make_invoices(500, 0, random_state=1000).frame
    model = fit_table(frame, id_column="invoice_id", random_state=0, max_epochs=5)
    scored, _ = model.score(frame, fdr=0.1, explain="none", in_sample=True)
    assert scored["flagged"].sum() <= 2


def test_rows_sharing_a_rare_count_are_no_gap_in_the_distances_tail() -> None:
    """A count of returns out of 5 (binomial, p = 0.1): the few rows with 3 or more tie in robust
    distance, and read as they are, the ties made a gap that an exponential tail would not, and the
    in-sample tail left them out as a cluster (35 of 500 rows flagged).  Calibrated on the
    dequantized values, as the Gaussians were fitted, they are the tail's own top."""
    rng = np.random.default_rng(10_000)
    n = 500
    region = rng.integers(0, 6, n)
    frame = pd.DataFrame(
        {
            "region": [f"r{k}" for k in region],
            "items": rng.poisson(2 + region),
            "returns": rng.binomial(5, 0.1, n),
            "rating": rng.integers(1, 6, n),
        }
    )
    model = fit_table(frame, random_state=0, max_epochs=5)
    assert model.own_tails is not None and model.own_tails.distance is not None
    assert model.own_tails.distance.n_trimmed <= 0.02 * n


def test_a_small_level_of_large_values_is_read_by_its_own_spread() -> None:
    """Fifteen industrial meters among 500 homes: their consumption lies beyond the column's bulk,
    all but the smallest.  Read from those alone, what is typical for the level was a fraction
    of its spread, and the other industrial meters were flagged."""
    rng = np.random.default_rng(7)
    n = 500
    industrial = np.arange(n) < 15
    kwh = np.where(industrial, rng.lognormal(9.6, 0.5, n), rng.lognormal(5.5, 0.4, n)).round()
    frame = pd.DataFrame(
        {
            "tariff": np.where(industrial, "industrial", rng.choice(["basic", "green", "night"], n)),
            "kwh": kwh,
            "days": rng.integers(28, 33, n),
            "bill": (kwh * 0.3 + rng.normal(0, 2, n)).round(2),
        }
    )
    model = fit_table(frame, random_state=0, max_epochs=5)
    scored, _ = model.score(frame, fdr=0.1, explain="none", in_sample=True)
    assert scored["flagged"].iloc[:15].sum() <= 1


def test_a_rare_value_of_a_column_zero_in_all_other_rows_is_not_flagged() -> None:
    """A small table of houses: a pool's area is 0 in all but two and a porch's in all but one.
    Read as numbers, those rows each cost hundreds of nats or more and were flagged (all three on
    the code before; clean tables of 150 rows in benchmarks/fdr.py).  A garage area 40 times the
    usual one still is."""
    rng = np.random.default_rng(11)
    n = 150
    living = rng.lognormal(7.2, 0.3, n).round()
    frame = pd.DataFrame(
        {
            "district": rng.choice(["north", "south", "east"], n),
            "living_area": living,
            "garage_area": (0.3 * living * rng.lognormal(0, 0.2, n)).round(),
            "rooms": np.clip(np.round(living / 250 + rng.normal(0, 0.7, n)), 2, 12),
            "pool_area": np.zeros(n),
            "porch_area": np.zeros(n),
        }
    )
    frame.loc[[20, 80], "pool_area"] = [523.0, 611.0]
    frame.loc[50, "porch_area"] = 144.0
    frame.loc[120, "garage_area"] *= 40
    model = fit_table(frame, random_state=0, max_epochs=5)
    scored, _ = model.score(frame, fdr=0.1, explain="none", in_sample=True)
    assert not scored.loc[[20, 50, 80], "flagged"].any()
    assert scored.loc[120, "flagged"]


def _houses(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    living = rng.lognormal(7.2, 0.3, n).round()
    shed = np.where(rng.random(n) < 0.04, rng.lognormal(6.5, 0.8, n).round(), 0.0)
    return pd.DataFrame(
        {
            "district": rng.choice(["north", "south", "east"], n),
            "living_area": living,
            "garage_area": (0.3 * living * rng.lognormal(0, 0.2, n)).round(),
            "rooms": np.clip(np.round(living / 250 + rng.normal(0, 0.7, n)), 2, 12),
            "shed_area": shed,
        }
    )


def test_new_values_of_a_column_seen_non_zero_three_times_are_read_by_their_predictive_tail() -> None:
    """Fitted on 150 houses of which three have a shed (the rest 0), a new table's sheds lie
    beyond those three: read against the spread of three values, three of its five sheds were
    flagged; read by the predictive tail of a value given three, none is.  A garage 40 times the
    usual still is."""
    clean, new = _houses(150, 103), _houses(150, 203)
    new.loc[0, "garage_area"] *= 40
    assert (clean["shed_area"] > 0).sum() == 3
    model = fit_table(clean, random_state=0, max_epochs=5)
    scored, _ = model.score(new, fdr=0.1, explain="none")
    sheds = new.index[new["shed_area"] > 0]
    assert len(sheds) == 5 and not scored.loc[sheds, "flagged"].any()
    assert scored.loc[0, "flagged"]


def test_rows_apart_are_a_cluster_only_when_alike() -> None:
    # A broken batch: twenty rows alike, far from the rest.  Heavy-tailed extremes: a few rows far
    # out in different directions, each nearer the bulk than the next extreme.
    from nrad.table import _a_cluster

    rng = np.random.default_rng(0)
    bulk = rng.normal(size=(2000, 4))
    batch = np.vstack([bulk, 6.0 + 0.1 * rng.normal(size=(20, 4))])
    apart = np.r_[np.zeros(2000, bool), np.ones(20, bool)]
    assert _a_cluster(apart, batch, rng)
    directions = np.eye(4)[:3] * np.array([[9.0], [-12.0], [15.0]])
    extremes = np.vstack([bulk, directions])
    apart = np.r_[np.zeros(2000, bool), np.ones(3, bool)]
    assert not _a_cluster(apart, extremes, rng)
    assert not _a_cluster(np.r_[np.zeros(2000, bool), True], np.vstack([bulk, [[20.0, 0, 0, 0]]]), rng)


def test_a_wide_tables_robust_distance_is_read_on_the_components_it_is_measured_on() -> None:
    """Above MAX_CELL_FEATURES numbers the robust Gaussian reads the principal components: its
    distance is read as a chi-square on as many dimensions, not on the table's columns.  Read on
    300 columns, a distance ordinary over 75 components is a chi-square's 1-in-10^5 for every
    row (on a 503-column table, 1-in-10^57, and 235 rows of 3,000 were flagged wrongly)."""
    rng = np.random.default_rng(6)
    rows, columns = 200, 300
    X = rng.normal(size=(rows, 6)) @ rng.normal(size=(6, columns)) + 0.5 * rng.normal(size=(rows, columns))
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(columns)])
    model = fit_table(df, random_state=0)
    prep = model.prepare(df)
    z = model.fill(model.numeric_z(prep.y, prep.codes)[0], model.folds)
    assert model.gaussian_input(z).shape[1] < columns
    # Out of fold, in 100-row folds, the distances are larger than a chi-square's (the in-sample
    # tail is fitted to them); read over 300 dimensions they were all about 0.
    assert float(np.median(model.distance_statistic(z, model.folds))) > 1.0
    out, _ = model.score(df, fdr=0.1, in_sample=True, explain="none")
    assert not out["flagged"].any()


def test_a_date_a_century_off_is_flagged_and_named() -> None:
    df = frame(600, 3)
    df["when"] = (pd.Timestamp("2024-03-01") + pd.to_timedelta(np.arange(600) % 90, "D")).strftime("%Y-%m-%d")
    df.loc[17, "when"] = "2204-03-05"
    model = fit_table(df, id_column="id", random_state=0, max_epochs=5)
    scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="flagged")
    assert scored.loc[17, "p_value"] == 0.0 and scored.loc[17, "flagged"]
    assert scored.loc[17, "top_features"].startswith("when")
    assert scored.loc[17, "reason"].startswith("when 2204-03-05 (outside the dates this column holds: 2024-03-01")
    # The same model scores rows of the following years by their weekday, as before.
    later = df.iloc[:20].assign(when="2026-07-15")
    assert not model.score(later, fdr=0.1)[0]["p_value"].eq(0.0).any()


def test_rows_apart_are_a_broken_batch_only_when_tight() -> None:
    """A broken batch is twenty parts alike: tight, far from the rest.  Twenty rows far out along
    one column but as spread in the others as any rows (stays of three weeks among stays of a few
    nights) lie nearer each other than any other row too, yet are no batch: read as one, the
    density's tail was kept light and the distance's gap trimmed, and a clean network log had 322
    rows flagged."""
    rng = np.random.default_rng(0)
    bulk = rng.normal(size=(3000, 6))
    apart = np.zeros(3020, dtype=bool)
    apart[3000:] = True
    batch = np.vstack([bulk, 5.0 + 0.1 * rng.normal(size=(20, 6))])
    spread = rng.normal(size=(20, 6))
    spread[:, 0] = 8.0 + 3.0 * rng.random(20)
    assert _a_cluster(apart, batch, np.random.default_rng(1))
    assert not _a_cluster(apart, np.vstack([bulk, spread]), np.random.default_rng(1))


def test_a_table_of_categories_alone_is_scored_and_explained() -> None:
    """No numeric column at all (country names as three sources spell them): each row is scored,
    explained, and a row that breaks the sensor's site is named by it, with no number to read."""
    from nrad.explain import first_feature

    rng = np.random.default_rng(1)
    sensor = rng.integers(0, 20, 1200)
    df = pd.DataFrame({"sensor": [f"S{s:02d}" for s in sensor], "site": [f"site{s % 4}" for s in sensor],
                       "shift": rng.choice(["early", "late", "night"], 1200)})  # fmt: skip
    df.loc[7, "site"] = f"site{(sensor[7] + 1) % 4}"
    model = fit_table(df, random_state=0, max_epochs=5)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[7, "flagged"] and first_feature(scored.loc[7, "top_features"]) == "site"
    assert scored.loc[7, "reason"].startswith("site ")


def test_a_row_that_breaks_a_dependency_between_categories_is_flagged_and_named_by_it() -> None:
    """Each sensor sits at one site.  Scored against itself, a row reporting a sensor at another
    site has that pair in its own counts, and the category model alone called it about as probable
    as the table's rare pairs; the dependency the other rows keep flags it, named by the site.  Each
    site allows its five sensors, a dependency too, which the row breaks as well."""
    from nrad.explain import first_feature

    rng = np.random.default_rng(0)
    n = 1500
    sensor = rng.integers(0, 20, n)
    site_of = np.arange(20) % 4
    df = pd.DataFrame({"sensor": [f"S{s:02d}" for s in sensor],
                       "site": [f"site{k}" for k in site_of[sensor]],
                       "temperature": np.round(10 + 3 * site_of[sensor] + rng.normal(0, 1, n), 2),
                       "battery": np.round(rng.uniform(20, 100, n), 1)})  # fmt: skip
    row = 7
    df.loc[row, "site"] = f"site{(site_of[sensor[row]] + 1) % 4}"
    model = fit_table(df, random_state=0, max_epochs=5)
    assert [(model.schema.categorical_names[d.key], model.schema.categorical_names[d.value])
            for d in model.dependencies()] == [("sensor", "site"), ("site", "sensor")]  # fmt: skip
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[row, "flagged"] and first_feature(scored.loc[row, "top_features"]) == "site"
    assert scored["flagged"].sum() == 1
    # The reason states the dependency, not how rare the site is.
    sensor_of_row, site_of_row = df.loc[row, "sensor"], f"site{site_of[sensor[row]]}"
    assert scored.loc[row, "reason"] == (
        f"site {df.loc[row, 'site']!r} (in the training rows sensor {sensor_of_row!r} goes with {site_of_row!r})"
    )


def test_a_category_that_gives_a_number_its_spike_is_a_dependency_and_a_row_that_breaks_it_is_named() -> None:
    """A cash payment carries no tip: the tip's indicator (0, or not) depends on the payment as one
    category does on another.  A cash row with a tip of ordinary size was read as one more tip."""
    rng = np.random.default_rng(3)
    n = 2000
    payment = rng.choice(["card", "cash"], size=n, p=[0.7, 0.3])
    fare = np.round(np.exp(rng.normal(2.7, 0.5, n)), 1)
    tip = np.where((payment == "card") & (rng.random(n) < 0.9), np.round(fare * rng.uniform(0.1, 0.25, n), 2), 0.0)
    df = pd.DataFrame({"payment": payment, "fare": fare, "tip": tip})
    row = int(np.flatnonzero(payment == "cash")[4])
    df.loc[row, "tip"] = round(float(fare[row]) * 0.2, 2)
    model = fit_table(df, random_state=0, max_epochs=5)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[row, "p_value"] == 0.0 and scored.loc[row, "flagged"]
    # Either cell may be the wrong one; the dependency broken is stated either way.
    assert scored.loc[row, "reason"] in (
        f"tip {df.loc[row, 'tip']:g} (in the training rows payment 'cash' goes with tip 0)",
        "payment 'cash' (in the training rows tip not 0 goes with 'card')",
    )
    assert scored["flagged"].sum() == 1


def test_trips_across_midnight_are_ordinary_and_a_dropoff_before_its_pickup_is_flagged() -> None:
    rng = np.random.default_rng(8)
    n = 1500
    start = pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 30 * 86400, n), "s")
    minutes = np.exp(rng.normal(np.log(15), 0.4, n))
    end = start + pd.to_timedelta(minutes, "min")
    df = pd.DataFrame(
        {
            "trip": [f"T{i:05d}" for i in range(n)],
            "pickup": start.strftime("%Y-%m-%d %H:%M:%S"),
            "dropoff": end.strftime("%Y-%m-%d %H:%M:%S"),
            "fare": np.round(3 + 0.5 * minutes + rng.normal(0, 0.5, n), 2),
        }
    )
    across = np.flatnonzero(start.day != end.day)
    assert len(across) > 10
    swapped = [5, 400, 900]
    df.loc[swapped, ["pickup", "dropoff"]] = df.loc[swapped, ["dropoff", "pickup"]].to_numpy()
    model = fit_table(df, id_column="trip", random_state=0, max_epochs=5)
    scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="flagged")
    assert scored.loc[swapped, "flagged"].all()
    assert scored.loc[swapped, "top_features"].str.startswith("dropoff").all()
    assert scored.loc[5, "reason"].startswith("dropoff - pickup (hours) -")
    # Read as two hours of the day, a trip from 23:50 to 00:05 broke the relation between them.
    assert not scored.loc[np.setdiff1d(across, swapped), "flagged"].any()


def test_a_date_a_decade_off_is_flagged_in_the_table_it_is_in_but_not_in_new_rows() -> None:
    df = frame(600, 3)
    df["when"] = (pd.Timestamp("2024-03-01") + pd.to_timedelta(np.arange(600) % 60, "D")).strftime("%Y-%m-%d")
    df.loc[17, "when"] = "2014-03-20"  # 2014 typed for 2024
    model = fit_table(df, id_column="id", random_state=0, max_epochs=5)
    scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="flagged")
    assert scored.loc[17, "p_value"] == 0.0 and scored.loc[17, "flagged"]
    assert scored.loc[17, "reason"].startswith("when 2014-03-20 (outside the dates this column holds: 2024-03-0")
    assert "none before 2023-03-0" in scored.loc[17, "reason"]
    assert (scored.drop(index=17)["p_value"] > 0).all()
    # New rows may come from other years: a model fitted on these months reads 2014 and 2026 by weekday.
    later = df.iloc[:20].assign(when=["2014-03-20", "2026-07-15"] * 10)
    assert not model.score(later, fdr=0.1)[0]["p_value"].eq(0.0).any()


def test_a_date_far_from_the_training_dates_and_from_the_other_rows_scored_is_flagged() -> None:
    """New rows are read against their own table's dates as well: one year typed 2031 among 200 rows
    of 2024 is outside; a table of the next year's dates, all of them later than training, is not,
    and neither is the typo among fewer rows than say what their own dates are."""
    df = frame(600, 3)
    df["when"] = (pd.Timestamp("2024-03-01") + pd.to_timedelta(np.arange(600) % 60, "D")).strftime("%Y-%m-%d")
    model = fit_table(df, id_column="id", random_state=0, max_epochs=5)
    new = frame(200, 4).assign(when=df["when"].iloc[:200].to_numpy())
    new.loc[9, "when"] = "2031-03-20"
    scored, _ = model.score(new, fdr=0.1, explain="flagged")
    assert scored.loc[9, "p_value"] == 0.0 and scored.loc[9, "flagged"]
    assert scored.loc[9, "reason"] == (
        "when 2031-03-20 (far from the dates this column holds, 2024-03-01 to 2024-04-29, "
        "and from those of the other rows scored)"
    ), scored.loc[9, "reason"]
    assert (scored.drop(index=9)["p_value"] > 0).all()
    later = pd.Timestamp("2025-06-01") + pd.to_timedelta(np.arange(200) % 90, "D")
    next_year = new.assign(when=later.strftime("%Y-%m-%d"))
    next_year.loc[9, "when"] = "2025-08-20"
    assert (model.score(next_year, fdr=0.1)[0]["p_value"] > 0).all()
    assert (model.score(new.iloc[:60], fdr=0.1)[0]["p_value"] > 0).all()
