"""Cell tests (nrad.cells) and what the table model makes of them: one bad cell flags its row."""

import numpy as np
import pandas as pd
import pytest

from nrad.categories import CategoryModel
from nrad.cells import CELL_TRIM, NumericCellTests, category_p_values
from nrad.explain import first_feature
from nrad.model_file import model_from_bytes, model_to_bytes
from nrad.results import notes_for
from nrad.synthetic import make_bookings
from nrad.table import fit_table


def test_numeric_cell_p_values_are_uniform_on_new_normal_residuals() -> None:
    rng = np.random.default_rng(0)
    tests = NumericCellTests.fit(*(rng.normal(size=(5000, 2)) for _ in range(3)))
    p = tests.p_values(*(rng.normal(size=(20000, 2)) for _ in range(3)))
    for t in (0.01, 0.05, 0.2):
        assert np.mean(p <= t) <= 1.3 * t + 0.002  # three tests per cell, Bonferroni: conservative
        assert np.mean(p <= t) >= 0.3 * t
    far = tests.p_values(np.array([[20.0, -30.0]]), np.zeros((1, 2)), np.zeros((1, 2)))
    assert far.max() < 1e-10  # far values stay far
    assert tests.p_values(np.zeros((1, 2)), np.array([[30.0, -40.0]]), np.zeros((1, 2))).max() < 1e-10
    assert tests.p_values(np.zeros((1, 2)), np.zeros((1, 2)), np.array([[25.0, -25.0]])).max() < 1e-10


def test_category_p_values_are_the_mass_of_levels_no_more_probable() -> None:
    rng = np.random.default_rng(1)
    codes = rng.choice(5, size=(2000, 1), p=[0.5, 0.3, 0.15, 0.05, 0.0])
    model = CategoryModel.fit(codes, [5])
    p = category_p_values(model, np.array([[0], [3], [4]]))[:, 0]
    probs = np.exp(model.log_terms(np.arange(5)[:, None])[:, 0])
    assert p[0] == pytest.approx(1.0)
    assert p[1] == pytest.approx(probs[[3, 4]].sum(), rel=1e-6)
    assert p[2] == pytest.approx(probs[4], rel=1e-6) and p[2] < 1e-3  # never seen: Good-Turing's chance


def test_rows_read_left_out_are_not_the_rarest_of_equally_frequent_levels() -> None:
    # 300 customers of 10 rows each and one seen once (a typo), read as the rows that trained
    # the model: left out, a customer's own level has 9 rows where the others have 10, which must
    # not make it the rarest level for each of its rows.
    codes = np.r_[np.repeat(np.arange(300), 10), 300][:, None]
    model = CategoryModel.fit(codes, [301])
    p = category_p_values(model, codes, codes)[:, 0]
    assert p[:-1].min() > 0.9
    assert p[-1] < 1e-3


def _wide(n: int, rng: np.random.Generator) -> pd.DataFrame:
    base = rng.normal(size=n)
    cols = {f"m{j}": base * (j % 3) + rng.normal(size=n) for j in range(40)}
    cols["year"] = np.round(1990 + 8 * base + rng.normal(0, 2, n))
    cols["pool"] = np.where(rng.random(n) < 0.995, 0.0, rng.uniform(150, 800, n).round())
    cols["kind"] = rng.choice(["a", "b", "c"], n)
    return pd.DataFrame(cols)


@pytest.mark.slow
def test_one_impossible_cell_in_a_wide_row_is_flagged_and_named_first() -> None:
    rng = np.random.default_rng(2)
    df = _wide(2500, rng)
    bad = [10, 500, 1500]
    df.loc[bad, "year"] += 200
    model = fit_table(df, random_state=0)
    scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="none")
    assert scored.loc[bad, "flagged"].all()
    # Explained as `score` explains a flagged row (only these: a 42-column row takes a while).
    top, _ = model.describe(df, in_sample=True, rows=np.array(bad))
    assert [first_feature(t) for t in top] == ["year"] * 3
    rare = np.flatnonzero(df["pool"].to_numpy() > 0)  # a rare but legitimate value: not flagged
    assert len(rare) and not scored.loc[rare, "flagged"].any()


def test_lattice_walls_hold_where_values_pile_up_and_a_value_beyond_is_outside() -> None:
    from nrad.cells import Walls

    rng = np.random.default_rng(3)
    visits = rng.poisson(2.5, 3000).astype(float)  # 0 in 8% of rows: a wall
    rating = rng.integers(1, 6, 3000).astype(float)  # 1 to 5, each a fifth: two walls
    battery = rng.uniform(15, 100, 3000)  # a battery level, continuous, far from 0: a wall at 0 only
    balance = rng.normal(100, 80, 3000)  # negative now and then: no wall
    level = np.abs(rng.normal(50, 15, 3000))  # never negative, but down to near 0: no wall
    visits[:2] = -1.0  # a table fitted on itself holds its errors
    battery[2] = -1.0
    walls = Walls.fit(np.column_stack([visits, rating, battery, balance, level]), np.array([1.0, 1.0, 0, 0, 0]))
    assert walls.low[0] == 0 and walls.low[1] == 1 and walls.high[1] == 5
    assert np.isnan(walls.high[0]) or walls.high[0] >= visits.max() - 1  # a Poisson's top: no pile
    assert walls.low[2] == 0 and np.isnan(walls.high[2])
    assert np.isnan(walls.low[3:]).all() and np.isnan(walls.high[3:]).all()
    beyond = walls.beyond(
        np.array([[-1.0, 3.0, 5.0, -50.0, -1.0], [2.0, 6.0, 1e6, 1e4, 1e3], [0.0, 1.0, 0.0, 0.0, 0.0],
                  [0.0, 1.0, -1.0, 0.0, 0.0]])
    )  # fmt: skip
    assert beyond.tolist() == [
        [True, False, False, False, False],
        [False, True, False, False, False],
        [False, False, False, False, False],
        [False, False, True, False, False],
    ]


def test_a_small_tables_thin_count_tail_is_no_wall() -> None:
    from nrad.cells import Walls

    # 150 rows of a count of mean 40: its smallest values are held by a row or two each, and
    # the next one beyond them is ordinary, not outside the column's support.
    for seed in range(20):
        parts = np.random.default_rng(seed).poisson(40, 150).astype(float)
        walls = Walls.fit(parts[:, None], np.array([1.0]))
        assert walls.low[0] == 0 and np.isnan(walls.high[0])
        assert not walls.beyond(np.array([[parts.min() - 1], [parts.max() + 1]])).any()
    # A rating whose 5 holds a fifth of 150 rows is still bounded there, and a count's 0 is a
    # wall in a small table too.
    rng = np.random.default_rng(0)
    rating, visits = rng.integers(1, 6, 150).astype(float), rng.poisson(1.0, 150).astype(float)
    walls = Walls.fit(np.column_stack([rating, visits]), np.array([1.0, 1.0]))
    assert walls.low.tolist() == [1.0, 0.0] and walls.high[0] == 5.0


def test_a_count_thinning_out_to_its_largest_value_is_no_wall_there() -> None:
    """150 shipments' transit days: 48 rows at 3, 27 at 4, 18 at 5, 10 at 6.  The 10 rows at 6
    are 1% of the rows and more than half the 5s, but the values thin out there: about 5.6 rows
    would lie at 7 were they to go on so, and none in 150 is no evidence that 7 is impossible."""
    from nrad.cells import Walls

    days = np.repeat([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [14, 30, 48, 27, 18, 10])
    walls = Walls.fit(days[:, None], np.array([1.0]))
    assert np.isnan(walls.high[0])
    assert not walls.beyond(np.array([[7.0]])).any()
    # Twice the rows, thinning out the same: 11 rows would lie at 7; none is evidence of a wall.
    walls = Walls.fit(np.tile(days, 2)[:, None], np.array([1.0]))
    assert walls.high[0] == 6.0


def test_a_speed_that_thins_out_towards_0_has_its_wall_at_0_and_a_count_that_piles_at_1_at_1() -> None:
    """Wind speeds in whole km/h: a gamma that rises from 0 puts 28 to 33 of 3,000 rows at 1 and 1 to 8
    at 0 (half a cell, and the density small there): 0 is no value beyond a wall, -1 is.  A stay of
    at least one night, 1 held by a third of the bookings, keeps its wall with three zeros in the
    table."""
    from nrad.cells import Walls

    at_zero = 0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        inland = rng.random(3000) < 0.45
        speed = np.round(np.where(inland, rng.gamma(2.0, 6.0, 3000), 5 + rng.gamma(2.0, 6.0, 3000)))
        assert (speed == 0).sum() >= 1
        walls = Walls.fit(speed[:, None], np.array([1.0]))
        assert not walls.beyond(np.array([[0.0]]))[0, 0] and walls.low[0] != 1.0
        at_zero += walls.low[0] == 0.0 and walls.beyond(np.array([[-1.0]]))[0, 0]
        nights = 1.0 + rng.poisson(1.0, 3000)
        nights[:3] = 0
        assert Walls.fit(nights[:, None], np.array([1.0])).low[0] == 1.0
    assert at_zero >= 1  # where the step above 0 would have been a wall, 0 is


def test_a_cap_that_few_rows_reach_is_a_wall_and_a_thin_top_is_not() -> None:
    """Scores of 0 to 100 where about 0.5% of 3,000 reach 100: fewer than the 1% a wall's share
    asks, but many more than hold 99, by more than chance: the values beyond 100 were put at it."""
    from nrad.cells import Walls

    for seed in range(5):
        rng = np.random.default_rng(seed)
        raw = np.round(rng.normal(66, 13, 3000))
        capped = np.clip(raw, 0, 100)
        assert 10 <= (capped == 100).sum() < 30
        walls = Walls.fit(np.column_stack([capped, raw]), np.array([1.0, 1.0]))
        assert np.isnan(walls.high[1])
        if seed == 0:  # 10 at 100 against 4.3 on the three values below: a chance of 1%, no cap
            assert np.isnan(walls.high[0])
            continue
        assert walls.high[0] == 100.0
        assert walls.beyond(np.array([[106.0, raw.max() + 1]])).tolist() == [[True, False]]
    # A value a little more popular than its neighbours is no cap in a large table either: 293 of
    # 53,940 diamonds at 0.23 carat, 254, 212 and 253 at 0.24 to 0.26, and 40 below.
    carats = np.repeat([0.2, 0.21, 0.22, 0.23, 0.24, 0.25, 0.26, 0.3], [12, 9, 19, 293, 254, 212, 253, 52867])
    assert not Walls.fit(carats[:, None], np.array([0.01])).beyond(np.array([[0.22]])).any()
    # A pile of a few rows is no cap: 6 at the top against 2 below it.
    top = np.r_[np.round(np.random.default_rng(9).normal(50, 10, 2992)).clip(0, 79), [80.0] * 6, [79.0] * 2]
    assert np.isnan(Walls.fit(top[:, None], np.array([1.0])).high[0])


def test_times_of_day_written_hhmm_are_read_as_such_and_a_value_no_time_is_outside() -> None:
    """Departures every 5 minutes from 05:00 to 23:55 written HHMM (1355, 1400): 1375 and 2575 lie
    within the column's range and between its values, and are no time of day.  Numbers whose last
    two digits stay below 60 by their step (multiples of 50) or their range (ages) are no clock,
    nor is a column whose last two digits run to 99."""
    from nrad.cells import Walls

    rng = np.random.default_rng(5)
    departure = (rng.integers(5, 24, 3000) * 100 + 5 * rng.integers(0, 12, 3000)).astype(float)
    departure[:2] = [1375.0, 2575.0]  # two errors in the table: fewer than a thousandth of it
    fifties = 50.0 * rng.integers(2, 48, 3000)
    ages = rng.integers(18, 60, 3000).astype(float)
    counts = rng.integers(0, 2400, 3000).astype(float)
    # 0 in all but ten rows: the rows at 0 are one value, no evidence of a clock.
    spiked = np.zeros(3000)
    spiked[:10] = [149.0, 405.0, 444.0, 604.0, 611.0, 651.0, 1042.0, 1120.0, 1310.0, 2215.0]
    walls = Walls.fit(np.column_stack([departure, fifties, ages, counts, spiked]), np.ones(5))
    assert walls.clock is not None and walls.clock.tolist() == [True, False, False, False, False]
    rows = np.array([[1375.0, 150.0, 18.0, 75.0, 0.0], [2575.0, 150.0, 18.0, 75.0, 0.0],
                     [1355.0, 150.0, 18.0, 75.0, 0.0], [2400.0, 150.0, 18.0, 75.0, 0.0],
                     [1359.5, 150.0, 18.0, 75.0, 0.0]])  # fmt: skip
    assert walls.off_lattice(rows)[:, 0].tolist() == [True, True, False, False, True]
    assert not walls.off_lattice(rows)[:, 1:].any()


def test_new_rows_are_read_against_the_farthest_values_the_training_rows_held() -> None:
    """A count whose lower tail thins out fast (2 of 3,000 rows at 0, 44 at 1, 85 at 2): its two 0s
    are what a density rising from 0 puts in half a cell (see ``ZERO_CELL_SHARE``), and its wall is
    0, in sample and for new rows (a -1 is beyond).  A count at least 0 with an error below (a
    -1 among 3,000) has its wall at 0 in sample; a model fitted on those rows, read as normal,
    has seen -1 held by normal rows, and a new row's -1 is inside (a -2 is not)."""
    from nrad.cells import Walls

    counts = np.repeat([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 44, 85, 150, 272, 273, 2174])
    visits = np.repeat([-1.0, 0.0, 1.0, 2.0], [1, 1200, 1000, 799])  # a count's 0, one error below
    rating = np.repeat([1.0, 3.0, 5.0], [1000, 1000, 1000])  # no value beyond its walls
    walls = Walls.fit(np.column_stack([counts, visits, rating]), np.array([1.0, 1.0, 2.0]))
    assert walls.low.tolist() == [0.0, 0.0, 1.0] and walls.high[2] == 5.0
    rows = np.array([[0.0, -1.0, 1.0], [-1.0, -2.0, 7.0]])
    assert walls.beyond(rows).tolist() == [[False, True, False], [True, True, True]]
    new = walls.for_new_rows()
    assert new.low.tolist() == [0.0, -1.0, 1.0] and new.high.tolist() == walls.high.tolist()
    assert new.beyond(rows).tolist() == [[False, False, False], [True, True, True]]


def test_a_new_tables_count_held_by_a_few_training_rows_beyond_a_wall_is_not_flagged() -> None:
    rng = np.random.default_rng(7)

    def table(n: int) -> pd.DataFrame:
        x = rng.normal(size=n)
        count = np.repeat([0, 1, 2, 3, 4, 5, 6, 7, 8], [2, 44, 85, 150, 272, 273, 326, 318, 1530])
        return pd.DataFrame({"x": x, "y": x + rng.normal(0, 0.5, n), "count": rng.permutation(count)})

    model = fit_table(table(3000), random_state=0, max_epochs=2)
    fresh = table(3000)
    scored, _ = model.score(fresh, fdr=0.1, explain="none")
    zeros = np.flatnonzero(fresh["count"].to_numpy() == 0)
    assert scored.loc[zeros, "p_value"].min() > 1e-3
    fresh.loc[zeros[0], "count"] = -1  # never held: beyond
    scored, _ = model.score(fresh, fdr=0.1, explain="none")
    assert scored.loc[zeros[0], "p_value"] == 0 and scored.loc[zeros[0], "flagged"]
    # Read back from a model file, the new rows' walls are the same.
    again, _ = model_from_bytes(model_to_bytes(model)).score(fresh, fdr=0.1, explain="none")
    pd.testing.assert_frame_equal(scored, again)


def test_a_pile_of_one_pair_of_values_is_no_wall_of_their_difference() -> None:
    """Invoices of one to eight items on 0 or 14 days' terms, and wholesale ones of 36 to 400
    items on 30 or 60 days: quantity less terms is never below -13 in 150 rows, 21 of them there,
    all one item on 14 days' terms.  The two columns' own extremes meet there, no bound: a
    wholesale order of 40 items on 60 days' terms is no error."""
    from nrad.cells import Walls

    rng = np.random.default_rng(2)
    n = 150
    wholesale = rng.random(n) < 0.17
    quantity = np.where(wholesale, rng.integers(36, 400, n), rng.integers(1, 9, n)).astype(float)
    terms = np.where(wholesale, rng.choice([30.0, 60.0], n), rng.choice([0.0, 14.0], n, p=[0.7, 0.3]))
    on_terms = ~wholesale & (terms == 14)
    quantity[on_terms] = np.where(rng.random(on_terms.sum()) < 0.6, 1.0, 2.0)  # 21 rows at -13, 19 at -12
    walls = Walls.fit(np.column_stack([quantity, terms]), np.array([1.0, 1.0]))
    assert not walls.beyond(np.array([[40.0, 60.0]])).any()


def test_a_bound_that_binds_without_a_pile_is_a_wall_and_a_thinning_edge_is_not() -> None:
    """Hired at 18 or later: as many rows at 18 years as at 19 (no pile), none below, two errors
    hired at 10: a wall of hire year less birth year.  Rooms less bathrooms thin out towards 0
    (15 rows at 1 after 23 at 2) and stop there: no wall, a house with as many bathrooms as rooms
    is rare, not impossible."""
    from nrad.cells import Walls

    rng = np.random.default_rng(3)
    n = 3000
    birth = rng.integers(1960, 2003, n).astype(float)
    offset = rng.permutation(np.r_[np.repeat([0.0, 1.0], [140, 150]), rng.integers(2, 25, n - 290)])
    hire = birth + 18 + offset  # 140 rows at 18 years, 150 at 19: no pile
    hire[[5, 6]] = birth[[5, 6]] + 10
    baths = rng.integers(1, 4, n).astype(float)
    rooms = baths + np.r_[np.repeat([1.0, 2.0], [15, 23]), 3 + rng.binomial(8, 0.35, n - 38)]
    walls = Walls.fit(np.column_stack([birth, hire, rooms, baths]), np.ones(4))
    sides = zip(walls.pairs, walls.pair_low, walls.pair_high, strict=True)
    found = {(int(j), int(k)): (lo, hi) for (j, k), lo, hi in sides}
    assert set(found) == {(0, 1)} and found[(0, 1)][1] == -18.0
    assert walls.beyond(np.array([[1990.0, 2000.0, 3.0, 3.0]])).tolist() == [[True, True, False, False]]


def test_a_bound_one_column_keeps_given_another_is_a_wall_of_their_difference() -> None:
    """Years as a customer never above the age less 18 (they pile up there: customers since
    their 18th birthday), a remodelling year never before the building year: walls of the
    differences, which two rows with errors do not break.  Two unrelated columns bounded only by
    their own ranges (a sale's year, a number of half baths) get no such wall, however their
    extremes pile up."""
    from nrad.cells import Walls

    rng = np.random.default_rng(5)
    n = 3000
    age = np.clip(np.round(rng.normal(45, 15, n)), 18, 90)
    years = np.round(np.minimum(rng.exponential(6, n), age - 18), 1)
    built = rng.integers(1950, 2010, n).astype(float)
    remodel = np.where(rng.random(n) < 0.5, built, np.minimum(built + rng.integers(1, 40, n), 2010))
    sold = rng.integers(2006, 2011, n).astype(float)
    half_baths = rng.choice([0.0, 1.0, 2.0], n, p=[0.6, 0.38, 0.02])
    years[[3, 4]] = age[[3, 4]] - 10  # a table fitted on itself holds its errors
    values = np.column_stack([age, years, built, remodel, sold, half_baths])
    walls = Walls.fit(values, np.array([1.0, 0.1, 1.0, 1.0, 1.0, 1.0]))
    sides = zip(walls.pairs, walls.pair_low, walls.pair_high, strict=True)
    found = {(int(j), int(k)): (lo, hi) for (j, k), lo, hi in sides}
    assert set(found) == {(0, 1), (2, 3)}
    assert found[(0, 1)][0] == pytest.approx(18.0) and found[(2, 3)][1] == 0.0
    new = np.array(
        [[25.0, 7.0, 1990, 1995, 2008, 1], [25.0, 22.0, 1990, 1995, 2008, 1], [60.0, 5.0, 1990, 1985, 2008, 0]]
    )
    assert walls.beyond(new).tolist() == [
        [False] * 6,
        [True, True, False, False, False, False],
        [False, False, True, True, False, False],
    ]
    meta = walls.to_state("w.")
    back = Walls.from_state(meta, "w.", 6)
    assert (back.beyond(new) == walls.beyond(new)).all()


def test_a_value_many_rows_hold_beyond_a_bound_makes_it_no_wall() -> None:
    """Bedrooms at least bathrooms less one, in 30,000 houses: 0.1% of the rows may lie beyond a
    wall (a table fitted on itself holds its errors), but fifteen houses with three bathrooms and
    one bedrooms are a kind of house the table holds, not fifteen errors: no wall of the
    difference.  Five such houses, spread over other differences, leave the wall; so does a
    count's 0 with five negative values, and not with fifteen negative ones of one value."""
    from nrad.cells import Walls

    rng = np.random.default_rng(11)
    n = 30_000
    bedrooms = rng.integers(1, 6, n).astype(float)
    bathrooms = np.maximum(bedrooms - rng.choice([0.0, 1.0, 2.0], n), 1.0) + rng.choice([0.0, 1.0], n)
    visits = rng.poisson(3.0, n).astype(float)

    def found(odd: int, same: bool) -> tuple[float, float]:
        rooms, baths, counts = bedrooms.copy(), bathrooms.copy(), visits.copy()
        rows = rng.choice(n, odd, replace=False)
        rooms[rows], baths[rows] = 1.0, 3.0 if same else 1.0 + 2.0 + rng.integers(0, 4, odd)
        counts[rows] = -1.0 if same else -1.0 - rng.integers(0, 20, odd)
        walls = Walls.fit(np.column_stack([rooms, baths, counts]), np.ones(3))
        pair = [lo for (j, k), lo in zip(walls.pairs, walls.pair_low, strict=True) if (j, k) == (0, 1)]
        return (pair[0] if pair else np.nan), float(walls.low[2])

    assert found(15, same=True) == pytest.approx((np.nan, np.nan), nan_ok=True)
    assert found(5, same=True) == pytest.approx((-1.0, 0.0))
    assert found(15, same=False)[1] == 0.0


def test_an_order_kept_with_a_margin_is_a_wall_at_0_and_a_tendency_is_not() -> None:
    """The day's lowest a degree or more below its highest, a gust 3 km/h or more above the speed:
    walls of the differences at 0, that two days with the extremes swapped stand beyond.  A parcel's
    weight in kg below its volume in litres, which many come close to and one in 3,000 passes, is a
    tendency; a count of visits below a cholesterol level is one column's range below the other's."""
    from nrad.cells import Walls

    rng = np.random.default_rng(3)
    n = 3000
    mean = rng.normal(12, 8, n)
    spread = np.maximum(rng.normal(9, 2.5, n), 1.0)
    high, low = np.round(mean + spread / 2, 1), np.round(mean - spread / 2, 1)
    high[[5, 6]], low[[5, 6]] = low[[5, 6]], high[[5, 6]]  # swapped: a table fitted on itself holds its errors
    speed = np.round(rng.gamma(2.0, 7.0, n))
    gust = np.round(speed * rng.uniform(1.3, 1.9, n) + 3)
    volume = np.exp(rng.normal(2.5, 0.8, n))
    weight = volume * rng.uniform(0.15, 0.9, n) * np.exp(rng.normal(0, 0.12, n))
    weight[9] = volume[9] * 1.2
    visits, ldl = rng.poisson(3, n).astype(float), np.round(rng.normal(120, 30, n))
    values = np.column_stack([low, high, speed, gust, weight, volume, visits, ldl])
    walls = Walls.fit(values, np.array([0.1, 0.1, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]))
    found = {(int(j), int(k)): (lo, hi) for (j, k), lo, hi in zip(walls.pairs, walls.pair_low, walls.pair_high, strict=True)}
    assert found == {(0, 1): (pytest.approx(np.nan, nan_ok=True), 0.0), (2, 3): (pytest.approx(np.nan, nan_ok=True), 0.0)}
    beyond = np.flatnonzero(walls.pair_sides(values).any(axis=1))
    assert beyond.tolist() == [5, 6]
    # Continuous columns: a lowest equal to the mean, up to the rounding its transform leaves, keeps
    # the order.
    mean_c = (low + high) / 2 + rng.normal(0, 0.01, n)
    lows = np.minimum(low, mean_c - 0.5)
    walls = Walls.fit(np.column_stack([lows, mean_c]), np.array([0.0, 0.0]))
    assert walls.pairs.tolist() == [[0, 1]] and walls.pair_high[0] == 0.0
    tie = np.array([[11.600000000000001, 11.6], [11.7, 11.6]])
    assert walls.pair_sides(tie)[:, 0].tolist() == [0, 1]


def test_a_row_beyond_a_wall_of_two_columns_difference_is_flagged_and_the_wall_stated() -> None:
    """A remodelling year before the building year, in a table where half the houses were
    remodelled the year they were built and none before: flagged, and the reason states the
    bound the other rows keep, not how typical each year is on its own."""
    rng = np.random.default_rng(5)
    n = 2000
    built = rng.integers(1950, 2010, n).astype(float)
    remodel = np.where(rng.random(n) < 0.5, built, np.minimum(built + rng.integers(1, 40, n), 2010))
    df = pd.DataFrame({"built": built, "remodel": remodel, "area": rng.normal(1500, 300, n).round()})
    df.loc[12, ["built", "remodel"]] = [1990.0, 1985.0]
    model = fit_table(df, random_state=0, max_epochs=20)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[12, "flagged"]
    assert scored.loc[12, "reason"].endswith("(in the training rows built is at most remodel)"), scored.loc[12]


def _flagged_alone(df: pd.DataFrame, rows: list[int], column: str) -> pd.DataFrame:
    """``nrad detect`` on ``df``: the ``rows`` flagged and named by ``column`` first, few others
    flagged; the scored rows."""
    model = fit_table(df, random_state=0, max_epochs=20)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[rows, "flagged"].all()
    assert [first_feature(t) for t in scored.loc[rows, "top_features"]] == [column] * len(rows)
    assert scored["flagged"].sum() <= 3
    return scored


def test_a_negative_count_is_flagged_and_named() -> None:
    rng = np.random.default_rng(4)
    n = 2000
    age = rng.normal(50, 12, n).round()
    df = pd.DataFrame({"age": age, "visits": rng.poisson(np.exp(0.5 + 0.01 * (age - 50))),
                       "weight": rng.normal(75, 12, n).round(1), "ward": rng.choice(["a", "b"], n)})  # fmt: skip
    df.loc[[7, 900], "visits"] = -1
    scored = _flagged_alone(df, [7, 900], "visits")
    assert scored.loc[7, "reason"] == "visits -1 (below 0, where this column's values stop)"


def _scores_table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Loan applications: two scores of a few values (one mostly 2 and 1, 3 and 4 now and then),
    an income and a debt ratio."""
    return pd.DataFrame({
        "score": rng.choice([1.0, 2.0, 3.0, 4.0], size=n, p=[0.314, 0.66, 0.017, 0.009]),
        "grade": rng.choice([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], size=n, p=[0.55, 0.2, 0.05, 0.05, 0.07, 0.08]),
        "income": np.exp(rng.normal(10, 0.4, n)).round(0),
        "ratio": (0.3 + 0.05 * rng.normal(size=n)).round(3),
    })  # fmt: skip


def test_rare_scores_of_a_column_of_a_few_values_are_not_flagged() -> None:
    # 3 and 4 are held by 40 and 20 of 2,400 rows: shared values, no errors.  Read as a spike at 2
    # and a "rest" that is 1 in 92% of its rows, each of them stood tens of spreads out: 49 flags.
    df = _scores_table(2400, np.random.default_rng(0))
    model = fit_table(df, random_state=0, max_epochs=20)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored["flagged"].sum() <= 2


def test_a_value_off_the_steps_of_a_column_of_a_few_values_is_flagged_and_named() -> None:
    # A row whose missing values were filled with the columns' means: a score of 1.73 among whole
    # scores lies inside the column's range, where no tail sees it, and on no step of it.
    df = _scores_table(2400, np.random.default_rng(0))
    df.loc[7, ["score", "grade"]] = [df["score"].mean(), df["grade"].mean()]
    scored = _flagged_alone(df, [7], "score")
    assert scored.loc[7, "reason"] == f"score {df.loc[7, 'score']:.4g} (this column's values are whole numbers)"
    # A model file keeps the steps: a new row off them is flagged the same way.
    model = model_from_bytes(model_to_bytes(fit_table(df.drop(index=7), random_state=0, max_epochs=20)))
    new, _ = model.score(df.loc[[7, 8]], fdr=0.1)
    assert new["p_value"].tolist()[0] == 0.0 and new["reason"].tolist()[0].endswith("are whole numbers)")


def test_a_spike_off_the_lattice_of_the_other_values_puts_no_value_between_steps() -> None:
    # A choice experiment's offered speeds: 85 in a quarter of the rows (a spike at the column's
    # edge), else 95, 110 or 140, whose lattice (15) 85 is off; a share of stations that is 0 in
    # most rows, else 0.1, 0.3 or 0.7 (a lattice of 0.2 that 0 is off).  No value is off the steps.
    rng = np.random.default_rng(3)
    n = 2000
    df = pd.DataFrame({
        "speed": rng.choice([85.0, 95.0, 110.0, 140.0], size=n),
        "station": rng.choice([0.0, 0.1, 0.3, 0.7], size=n, p=[0.75, 0.07, 0.12, 0.06]),
        "price": np.exp(rng.normal(10, 0.3, n)).round(0),
    })  # fmt: skip
    model = fit_table(df, random_state=0, max_epochs=20)
    assert np.isnan(model.walls.lattice_base[:2]).all()
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert (scored["p_value"] > 0).all() and scored["flagged"].sum() <= 2


def test_a_negative_value_of_a_column_never_negative_is_flagged_and_named() -> None:
    # A battery level between 15 and 100%: -1 for "not read" lies a few of the lowest values'
    # spacings below them, no further out than a tail fitted to them allows.
    rng = np.random.default_rng(5)
    n = 2000
    temperature = rng.normal(15, 5, n).round(2)
    df = pd.DataFrame({"battery": rng.uniform(15, 100, n).round(1), "temperature": temperature,
                       "pressure": (1013 - 0.8 * temperature + rng.normal(0, 0.6, n)).round(2)})  # fmt: skip
    df.loc[[11, 1500], "battery"] = -1.0
    _flagged_alone(df, [11, 1500], "battery")


def test_a_value_beyond_its_whole_column_is_flagged_where_its_contexts_differ_in_spread() -> None:
    # Garage years read per house type: each type's garages were built within a few years, but a
    # tenth were rebuilt since, up to 2010, so the in-context values have a long upper tail (40 sd:
    # an old type's new garages), while the column itself ends at 2010.  A garage 200 years later
    # than its type's is 93 sd out in context, no further than that tail allows; in its column it
    # is 190 years beyond the end.
    rng = np.random.default_rng(6)
    n = 3000
    kind = rng.integers(0, 8, n)
    centre = np.array([2005.0, 2003, 1950, 1925, 1970, 1995, 1940, 2000])
    year = centre[kind] + 2 * rng.normal(size=n)
    rebuilt = rng.random(n) < 0.1
    year[rebuilt] = rng.uniform(centre[kind[rebuilt]], 2010)
    cols = {"kind": np.array(list("abcdefgh"))[kind], "year": np.minimum(year, 2010).round(2)}
    cols.update({f"m{j}": rng.normal(size=n) for j in range(30)})
    df = pd.DataFrame(cols)
    row = int(np.flatnonzero((kind == 4) & ~rebuilt)[0])
    df.loc[row, "year"] += 200
    scored = _flagged_alone(df, [row], "year")
    assert scored.loc[row, "p_value"] < 1e-8  # 5e-6 read in context alone


def test_of_a_broken_copy_the_cell_out_of_place_by_itself_is_named_and_two_wrong_copies_lead() -> None:
    # An amount and its copy in another currency.  In three rows both copies are 40 times too
    # large (a heavier residual tail for the amount), in two only the amount is: both residuals
    # are then equally far out, and only the amount is also far out in its column.
    rng = np.random.default_rng(1)
    n = 2000
    amount = np.round(np.exp(rng.normal(4, 0.6, n)), 2)
    qty = rng.integers(1, 10, n)
    df = pd.DataFrame({"amount": amount, "amount_eur": np.round(amount * 0.92, 2), "qty": qty,
                       "unit_price": np.round(amount / qty, 2), "store": rng.choice(list("ABCDE"), n),
                       "age": rng.integers(18, 80, n)})  # fmt: skip
    df.loc[[5, 50, 500], ["amount", "amount_eur"]] *= 40
    df.loc[[800, 1200], "amount"] *= 40
    model = fit_table(df, random_state=0)  # as nrad detect fits: fewer epochs blur the copies' relation
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[[800, 1200], "flagged"].all()
    assert [first_feature(t) for t in scored.loc[[800, 1200], "top_features"]] == ["amount", "amount"]
    # Both copies wrong: each alone gives back nothing, the unit price that agrees with them more
    # than either's share; the pair repaired together gives back most, and a copy leads it.
    assert scored.loc[[5, 50, 500], "flagged"].all()
    assert {first_feature(t) for t in scored.loc[[5, 50, 500], "top_features"]} <= {"amount", "amount_eur"}


def test_a_total_that_is_not_the_sum_of_its_parts_is_named_not_a_part() -> None:
    # A gross with a digit too many beside the net and VAT it should be the sum of, and its copy
    # in euros.  The net's residual (given the gross) is as far out as the gross's and may get
    # the smaller p-value; the gross is what one change mends.
    rng = np.random.default_rng(12)
    n = 2000
    net = np.round(np.exp(rng.normal(4, 1.2, n)), 2)
    currency = rng.choice(["EUR", "USD", "GBP"], n, p=[0.6, 0.25, 0.15])
    fx = np.select([currency == "USD", currency == "GBP"], [0.92, 1.17], 1.0)
    vat = np.round(net * 0.2, 2)
    gross = np.round(net + vat, 2)
    df = pd.DataFrame({"net": net, "vat": vat, "gross": gross, "gross_eur": np.round(gross * fx, 2),
                       "currency": currency, "terms": np.where(rng.random(n) < 0.6, 0, 30)})  # fmt: skip
    rows = [10, 400, 1300]
    df.loc[rows, "gross"] = (df.loc[rows, "gross"] * 10).round(2)
    model = fit_table(df, random_state=0)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[rows, "flagged"].all()
    assert [first_feature(t) for t in scored.loc[rows, "top_features"]] == ["gross"] * 3


def test_a_value_unusual_only_for_its_category_is_judged_in_its_context() -> None:
    # Amounts set by the merchant alone: no other number says anything of them, so read as shaped
    # or in the table's units their residual is their place in the whole column, where 8 times a
    # cheap merchant's usual amount is ordinary (0.3 to 0.9 sd), and the smallest over the readings
    # kept that, where in context they are 7 sd out.
    rng = np.random.default_rng(11)

    def table(n: int) -> pd.DataFrame:
        merchant = rng.integers(0, 12, n)
        level = np.linspace(2.0, 6.0, 12)
        return pd.DataFrame({
            "merchant": np.array([f"M{k:02d}" for k in range(12)])[merchant],
            "amount": np.exp(level[merchant] + 0.3 * rng.normal(size=n)).round(2),
            "age": rng.normal(45, 12, n).round(),
            "quantity": 1 + rng.poisson(2, n),
        })  # fmt: skip

    model = fit_table(table(3000), random_state=0, max_epochs=20)
    new = table(1000)
    cheap = np.flatnonzero(new["merchant"].isin(["M01", "M02", "M03"]).to_numpy())[:3]
    new.loc[cheap, "amount"] = (8 * np.exp(np.linspace(2.0, 6.0, 12)[[1, 2, 3]])).round(2)[
        new.loc[cheap, "merchant"].str[1:].astype(int).to_numpy() - 1
    ]
    prep = model.prepare(new)
    j = list(model.schema.numeric_names).index("amount")
    in_context = model.relations[0]
    assert in_context.reading == "z" and not any(r.holds[j] for r in model.relations)
    t = model.cell_residuals(prep)[:, j]
    z = model.per_fold(in_context.gaussians, in_context.residuals,
                       in_context.standardize(model.reading("z", prep.y, prep.codes, True)), None)[:, j]  # fmt: skip
    np.testing.assert_allclose(t, z)
    assert (t[cheap] > 6).all()
    scored, _ = model.score(new, fdr=0.1)
    assert scored.loc[cheap, "flagged"].all()
    assert [first_feature(f) for f in scored.loc[cheap, "top_features"]] == ["amount"] * 3
    assert scored["flagged"].sum() <= 4


def test_a_rare_flag_flags_no_row_and_a_wild_number_still_does() -> None:
    """0/1 flags as real tables hold them: one set in 6 of 2,000 rows (read as a number, each of the
    6 cost hundreds of nats and was flagged at p = 1e-14: it is read as a category), one whose share
    depends on the clinic (7 drive-through tests on a ward of 1,000).  Neither is an error, and a
    row with a wild number is still flagged."""
    rng = np.random.default_rng(0)
    n = 2000
    clinic = rng.choice(["ward", "drive-in", "lab"], n, p=[0.5, 0.3, 0.2])
    drive = (rng.random(n) < np.select([clinic == "ward", clinic == "drive-in"], [0.006, 0.95], 0.5)).astype(int)
    urgent = np.zeros(n, dtype=int)
    urgent[rng.choice(n, 6, replace=False)] = 1
    x = rng.normal(50, 10, n).round(1)
    df = pd.DataFrame({"clinic": clinic, "drive": drive, "urgent": urgent, "x": x,
                       "y": (x * 2 + rng.normal(0, 5, n)).round(1)})  # fmt: skip
    df.loc[7, "x"] = 500.0
    model = fit_table(df, random_state=0, max_epochs=20)
    kinds = {c.name: c.kind for c in model.schema.columns}
    assert kinds["urgent"] == "categorical" and kinds["drive"] == "numeric"
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    flagged = set(np.flatnonzero(scored["flagged"].to_numpy()))
    assert 7 in flagged
    assert not flagged & set(np.flatnonzero(urgent)) and not flagged & set(np.flatnonzero(drive & (clinic == "ward")))


def test_a_level_that_shares_a_far_value_is_a_segment_and_a_wild_value_elsewhere_is_flagged() -> None:
    """Backups to one server move hundreds of times the bytes of other flows: 15 of 2,000 rows,
    all to that server.  Read against the rest of the column each stood beyond its tail and was
    flagged; they are the server's trait (a segment), and a wrapped counter of 4.3e9 bytes on an
    ordinary flow is still flagged."""
    rng = np.random.default_rng(1)
    n = 2000
    server = rng.choice(["web", "dns", "mail"], n, p=[0.6, 0.3, 0.1]).astype(object)
    packets = np.round(np.exp(rng.normal(3.0, 1.0, n)))
    backup = rng.choice(n, 15, replace=False)
    server[backup] = "backup"
    packets[backup] = np.round(np.exp(rng.normal(13.0, 0.5, 15)))
    size = np.where(server == "backup", 1400.0, rng.uniform(200, 1200, n))
    df = pd.DataFrame({"server": server, "packets": packets, "bytes": np.round(packets * size),
                       "seconds": np.round(packets * 0.01 * np.exp(rng.normal(0, 0.3, n)), 2)})  # fmt: skip
    wild = int(np.setdiff1d(np.arange(n), backup)[0])
    df.loc[wild, "bytes"] = 2.0**32 - 5
    model = fit_table(df, random_state=0, max_epochs=20)
    segments = model.cell_segments
    assert segments is not None
    levels = model.schema.categorical_labels[0]
    assert {levels[c] for c in segments.code} == {"backup"}
    assert any("server = backup" in note for note in notes_for(model))
    again = model_from_bytes(model_to_bytes(model)).cell_segments
    assert again is not None and np.array_equal(again.code, segments.code)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    flagged = set(np.flatnonzero(scored["flagged"].to_numpy()))
    assert wild in flagged
    assert not flagged & set(backup.tolist())


def test_a_flag_common_in_one_level_and_rare_in_others_flags_no_row() -> None:
    """A drive-through flag per clinic as a real table of covid tests holds it: 1 in nearly every
    row of two clinics, in 43% of one, in 1-10% of the others.  Read in each clinic's context, the
    flag is 0 exactly in most rows, and a robust Gaussian fitted on those numbers had no spread along
    it: 80 rows with a 1 were flagged, 73 of them the 43% clinic's.  Spread over the gap between its
    values before it is read in context, it flags none, and a wild waiting time still is."""
    rng = np.random.default_rng(0)
    n = 4000
    levels = {"drive-in": (0.35, 0.97), "clinical lab": (0.1, 0.9), "emergency": (0.25, 0.05),
              "oncology": (0.04, 0.43), "ward a": (0.06, 0.01), "ward b": (0.06, 0.08), "ward c": (0.06, 0.1),
              "picu": (0.04, 0.05), "nicu": (0.04, 0.02)}  # fmt: skip
    weights = np.array([w for w, _ in levels.values()])
    clinic = rng.choice(list(levels), n, p=weights / weights.sum())
    drive = (rng.random(n) < np.array([levels[c][1] for c in clinic])).astype(int)
    age = np.round(rng.gamma(4, 12, n), 1)
    df = pd.DataFrame({"clinic": clinic, "drive": drive, "age": age,
                       "wait_h": np.round(np.exp(rng.normal(1 + 0.01 * age, 0.4)), 1), "day": rng.integers(1, 100, n)})  # fmt: skip
    df.loc[11, "wait_h"] = 900.0
    model = fit_table(df, random_state=0, max_epochs=20)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    flagged = np.flatnonzero(scored["flagged"].to_numpy())
    assert 11 in flagged
    assert len(flagged) <= 3, df.iloc[flagged]


def test_the_values_of_a_two_valued_column_are_not_trimmed_in_sample() -> None:
    # A 0/1 column whose 1 holds 1.5% of 5,000 rows, spread over the gap between its values to be
    # fitted (as nrad.table.fit_table does).  Trimmed at the top 1% as any column's tails are in
    # sample, the fit left out most of the 1s and called them impossible against a tail fitted to
    # the rest (p = 8e-6 on a real table of 7,874 rows, all 115 rows with a 1 flagged); read as the
    # level it is, a 1 is as rare as its share.
    rng = np.random.default_rng(0)
    flag = (rng.random(5000) < 0.015).astype(float)
    spread = flag + rng.uniform(-0.5, 0.5, flag.size)
    stats = [np.column_stack([x, rng.normal(size=flag.size)]) for x in (spread, spread, spread)]
    ones = np.column_stack([np.ones(3), np.zeros(3)])
    residuals = np.zeros((3, 2))
    levels = NumericCellTests.fit(*stats, CELL_TRIM, levels=np.array([True, False]))
    assert levels.p_values(residuals, ones, ones)[:, 0].min() > 0.01
    assert NumericCellTests.fit(*stats, CELL_TRIM).p_values(residuals, ones, ones)[:, 0].max() < 0.005


def test_prices_a_few_rows_pay_far_below_the_rest_flag_no_row_and_a_typo_still_does() -> None:
    """A price column on a few values as a real table of purchases holds it: 0.59 to 0.70 in
    nearly every row, 0.17 and 0.25 (promotions) in 0.7% and 0.3%.  Far out on their lattice, the
    flows charged those rows thousands of nats, and every one of them was flagged; they are the
    column's values, and a price typed ten times too high is still flagged."""
    rng = np.random.default_rng(0)
    n = 4000
    shares = [0.007, 0.003, 0.35, 0.2, 0.37, 0.04, 0.03]
    price = rng.choice([0.17, 0.25, 0.59, 0.65, 0.67, 0.69, 0.70], n, p=shares)
    df = pd.DataFrame({"store": rng.choice(["north", "south", "east"], n), "price": price,
                       "other": rng.choice([0.29, 0.49, 0.69, 0.89], n, p=[0.1, 0.2, 0.4, 0.3]),
                       "qty": rng.poisson(np.where(price < 0.3, 6, 2)).astype(float)})  # fmt: skip
    df.loc[5, "price"] = 6.7
    model = fit_table(df, random_state=0, max_epochs=20)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    flagged = scored["flagged"].to_numpy()
    assert flagged[5]
    assert not flagged[(df["price"] < 0.3).to_numpy()].any()
    assert flagged.sum() <= 3


def test_long_stays_that_the_tax_and_the_total_vouch_for_are_not_flagged_and_a_typo_still_is() -> None:
    """Hotel stays of one to ten nights, and in 0.8% of the rows three to four weeks, each length
    held by a few rows: beyond any tail the other stays allow, all of them were flagged in sample.
    The city tax (the hotel's fee x guests x nights) and the total (nights x rate + tax) vouch for
    each, to the cent; a stay typed as 40 nights, its tax and total those of its 4, breaks both and
    is still flagged."""
    rng = np.random.default_rng(1)
    n = 3000
    hotel = rng.choice(["centre", "airport", "resort"], n)
    guests = rng.integers(1, 4, n)
    long_stay = rng.random(n) < 0.008
    nights = np.where(long_stay, rng.integers(21, 29, n), 1 + rng.poisson(2.0, n))
    fee = pd.Series(hotel).map({"centre": 2.5, "airport": 1.5, "resort": 3.0}).to_numpy()
    rate = np.round(120 * np.exp(rng.normal(0, 0.1, n)), 2)
    tax = np.round(fee * guests * nights, 2)
    df = pd.DataFrame({"hotel": hotel, "guests": guests, "nights": nights, "rate": rate,
                       "city_tax": tax, "total": np.round(nights * rate + tax, 2)})  # fmt: skip
    typo = int(np.flatnonzero(~long_stay & (nights == 4))[0])
    df.loc[typo, "nights"] = 40
    model = fit_table(df, random_state=0, max_epochs=20)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    flagged = scored["flagged"].to_numpy()
    assert long_stay.sum() >= 20
    assert flagged[typo]
    assert not flagged[long_stay].any()


@pytest.mark.parametrize(("seed", "random_state"), [(10008, 0), (10007, 7)])
def test_long_stays_are_not_flagged_where_another_hotel_makes_half_of_them_ordinary(
    seed: int, random_state: int
) -> None:
    """Hotel bookings (nrad.synthetic's) with no errors: 26 three-to-four-week stays (seed
    10008), where most guests stay one to three nights, and at the resort up to a fortnight.  The
    row tails left out the 12 long stays of the other hotels, fewer than half of the band (the
    share a category level needs to be read apart), and all 12 were flagged; the table vouches
    for the whole band.  Read apart, a long stay of another kind than the band's others (two
    guests, a deposit) still stood out among them (seed 10007: one flagged); among a band of ``m``
    rows none is rarer than one in ``m + 1``."""
    df = make_bookings(3000, 0, random_state=seed).frame
    model = fit_table(df, id_column="booking_ref", random_state=random_state, max_epochs=20)
    scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="none")
    long_stay = (df["nights"] >= 21).to_numpy()
    assert long_stay.sum() >= 15
    assert not scored["flagged"].to_numpy()[long_stay].any()


def test_new_long_stays_are_read_among_the_bands_training_rows_and_a_typo_still_is_flagged() -> None:
    """Fitted on one table of bookings with no errors (16 to 26 long stays in each), another
    scored: its long stays of another rate or hotel than the training ones scored beyond every
    training row and were flagged (one of 19 in the second pair here).  A new stay of
    the band is read among the band's training rows (its p-value at least its rank there) and its
    nights are not tested against the other stays; a stay typed as 40 nights, its tax and total
    those of 4, keeps no identity, is in no band, and is still flagged."""
    for seed in (3, 4):
        train = make_bookings(3000, 0, random_state=20_000 + seed).frame
        model = fit_table(train, random_state=seed, max_epochs=20)
        assert model.bands is not None
        df = make_bookings(3000, 0, random_state=10_000 + seed).frame
        typo = int(np.flatnonzero((df["nights"] == 4).to_numpy())[0])
        df.loc[typo, "nights"] = 40
        scored, _ = model.score(df, fdr=0.1, explain="none")
        long_stay = (df["nights"] >= 21).to_numpy() & (np.arange(len(df)) != typo)
        assert long_stay.sum() >= 10
        assert not scored["flagged"].to_numpy()[long_stay].any(), seed
        assert scored.loc[typo, "flagged"]
    back = model_from_bytes(model_to_bytes(model))
    assert back.bands is not None
    np.testing.assert_array_equal(back.score(df, fdr=0.1, explain="none")[0]["p_value"], scored["p_value"])


def test_a_band_begins_where_its_gap_to_the_other_values_does() -> None:
    """Web-shop orders of 1 to about 8 items, and 1.2% wholesale ones of 60 to 120 whose totals
    are their items times the unit price to the cent.  The items column's trimmed tail left out
    the wholesale orders of 72 items and more, and those of 60 to 71, as far from the others and
    vouched for as well, were no band's and were flagged.  The band begins at the gap."""
    rng = np.random.default_rng(1)
    n = 3000
    wholesale = rng.random(n) < 0.012
    items = np.where(wholesale, rng.integers(60, 121, n), 1 + rng.poisson(1.2, n))
    price = np.round(20 * np.exp(rng.normal(0, 0.6, n)), 2)
    df = pd.DataFrame({"items": items, "unit_price": price, "total": np.round(items * price, 2),
                       "region": rng.choice(["north", "south"], n)})  # fmt: skip
    model = fit_table(df, random_state=0, max_epochs=20)
    assert model.bands is not None and model.bands.feature[0] == 0  # items
    assert model.bands.bound[0] == pytest.approx(items[wholesale].min())
    scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="none")
    assert wholesale.sum() >= 30
    assert scored["flagged"].to_numpy()[wholesale].sum() <= 1


def test_a_value_many_rows_share_but_few_of_its_level_is_tested_in_its_level() -> None:
    """Every job level is held by hundreds of employees, and the title that goes with each level
    reads it.  Three rows whose title is a director's and whose level is 1 or 2 hold a value the
    column shares widely and their title does not: scored against themselves, they are flagged
    and named by the level or the title."""
    rng = np.random.default_rng(11)
    n = 3000
    level = rng.integers(1, 7, n)
    titles = np.array(["associate", "analyst", "senior", "lead", "manager", "director"])
    df = pd.DataFrame(
        {
            "level": level,
            "title": titles[level - 1],
            "salary": np.round(np.exp(10.3 + 0.2 * level + rng.normal(0, 0.15, n))),
            "age": np.round(rng.normal(40, 10, n)),
        }
    )
    wrong = [10, 20, 30]
    df.loc[wrong, "title"] = "director"
    df.loc[wrong, "level"] = [1, 2, 1]
    model = fit_table(df, random_state=0, max_epochs=5)
    shared = model.numeric.shared_in_context(model.raw_values(model.prepare(df)), model.prepare(df).codes)
    column = model.schema.numeric_names.index("level")
    assert not shared[wrong, column].any() and shared[np.setdiff1d(np.arange(n), wrong), column].all()
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[wrong, "flagged"].all()
    assert {first_feature(t) for t in scored.loc[wrong, "top_features"]} <= {"level", "title"}


def test_the_value_test_leaves_out_values_rare_in_their_context_though_shared_in_the_column() -> None:
    """A table scored against itself: three values far out in their context (a level of 1 under
    a director's title), each held by hundreds of rows of the column.  Kept in the tail's fit as
    shared values they make the tail heavy enough to hide them; left out as values few rows of
    their context hold, they stand beyond it."""
    rng = np.random.default_rng(2)
    n = 3000
    values = rng.normal(size=(n, 1))
    values[[5, 6, 7], 0] = [-9.0, -8.5, -9.5]
    residuals, columns = values.copy(), values.copy()
    shared = np.ones((n, 1), dtype=bool)
    in_context = shared.copy()
    in_context[[5, 6, 7], 0] = False
    column_wide = NumericCellTests.fit(residuals, values, columns, CELL_TRIM, shared=shared)
    in_level = NumericCellTests.fit(
        residuals, values, columns, CELL_TRIM, shared=shared, in_context=in_context
    )
    far = np.array([5, 6, 7])
    low_column_wide = column_wide.log_p_parts(residuals, values, columns)[1][far, 0]
    low_in_level = in_level.log_p_parts(residuals, values, columns)[1][far, 0]
    assert (low_in_level < low_column_wide - np.log(100)).all() and (low_in_level < np.log(1e-6)).all()


def test_a_placeholder_far_below_a_positive_columns_values_is_flagged_and_named() -> None:
    # Prices of 300 and more, spread over tens of thousands: a price of 1 lies a few hundred below the
    # cheapest, closer than the dearest are to each other, and read on a linear scale its column's
    # lower tail called it ordinary (p 0.01 to 0.05).  It is 300 times below anything seen.
    rng = np.random.default_rng(3)
    n = 2000
    age = rng.integers(0, 20, n)
    df = pd.DataFrame({"age": age.astype(float), "make": rng.choice(["a", "b", "c"], n),
                       "price": np.round(300 + rng.gamma(4.0, 3000.0, n) * np.exp(-0.05 * age), -1),
                       "km": np.round(rng.gamma(3.0, 5000.0, n) * (1 + age), -1)})  # fmt: skip
    df.loc[[7, 900], "price"] = 1.0
    scored = _flagged_alone(df, [7, 900], "price")
    assert scored.loc[7, "reason"].startswith("price 1 ")
    # A model fitted on clean rows reads a new row's placeholder the same way, and so does its file.
    model = fit_table(df.drop(index=[7, 900]), random_state=0, max_epochs=20)
    assert model.tails.cells.ratios is not None
    loaded = model_from_bytes(model_to_bytes(model))
    new = df.loc[[7, 8, 900]]
    p, p_loaded = (m.score(new, fdr=0.1)[0]["p_value"].to_numpy() for m in (model, loaded))
    np.testing.assert_array_equal(p, p_loaded)
    assert p[0] < 1e-4 and p[2] < 1e-4 and p[1] > 1e-3


def test_a_few_zeros_of_a_positive_column_are_no_ratio_and_not_flagged() -> None:
    # Taxi trips of 0.3 to 20 miles and a few cancelled at the kerb (distance 0, fewer than the rows a
    # shared value needs): read in ratios, each 0 stood a thousand times below the shortest trip.
    rng = np.random.default_rng(5)
    n = 2000
    miles = np.round(np.exp(rng.normal(1.0, 0.7, n)), 2)
    df = pd.DataFrame({"miles": miles, "fare": np.round(3.0 + 2.5 * miles * rng.uniform(0.9, 1.1, n), 2),
                       "passengers": rng.integers(1, 5, n).astype(float)})  # fmt: skip
    df.loc[[3, 50, 700, 1200, 1800, 1999], ["miles", "fare"]] = [0.0, 3.0]  # the flag fall alone
    model = fit_table(df, random_state=0, max_epochs=20)
    assert model.tails.cells.ratios is None or not np.isfinite(model.tails.cells.ratios.magnitude[0])
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert not scored.loc[[3, 50, 700, 1200, 1800, 1999], "flagged"].any()


def _farms(n: int, rng: np.random.Generator, ranches: float = 0.004) -> pd.DataFrame:
    """Rural households: land in hectares (0 off a farm, 0.01 to ~6 on one), cattle (0, or 1 to 9),
    chickens; ranches of 50 to 400 hectares keep 40 to 300 head of cattle."""
    farming = rng.random(n) < 0.6
    ranch = farming & (rng.random(n) < ranches / 0.6)
    land = np.where(farming, np.maximum(np.round(rng.gamma(1.5, 0.8, n), 2), 0.01), 0.0)
    cattle = np.where(farming & (rng.random(n) < 0.4), 1 + rng.poisson(2.5, n), 0)
    land = np.where(ranch, np.round(rng.uniform(50, 400, n), 1), land)
    cattle = np.where(ranch, rng.integers(40, 301, n), cattle)
    return pd.DataFrame({"land_ha": land, "cattle": cattle, "chickens": rng.poisson(8, n),
                         "size": 1 + rng.poisson(3, n), "region": rng.choice(["a", "b", "c"], n)})  # fmt: skip


@pytest.mark.slow
def test_ranches_whose_herds_go_with_their_land_are_a_band_and_a_typed_hectare_count_is_not() -> None:
    """Eight to fourteen ranches in 3,000 households hold 50 to 400 hectares where farms hold 0 to
    6, and no relation vouches for them: beyond any tail, they were flagged.  Their herds, as far
    beyond the others', vouch for them (a partner column); a farm's hectares typed as square
    metres (10,000 times: its cattle a few) are no ranch's and are flagged, in sample and as new
    rows of a model fitted on a table of its own ranches.  A tight run of far values in two
    columns (one miscalibrated batch) is no band."""
    rng = np.random.default_rng(3)
    df = _farms(3000, rng)
    ranch = (df["land_ha"] >= 50).to_numpy()
    typo = int(np.flatnonzero((df["land_ha"].between(1, 3) & (df["cattle"] < 5)).to_numpy())[0])
    df.loc[typo, "land_ha"] *= 10_000
    model = fit_table(df, random_state=0, max_epochs=20)
    assert model.bands is not None and model.bands.partner is not None
    scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="none")
    assert ranch.sum() >= 8 and not scored["flagged"].to_numpy()[ranch].any()
    assert scored.loc[typo, "flagged"]
    model = fit_table(_farms(3000, np.random.default_rng(4)), random_state=0, max_epochs=20)
    new = _farms(3000, np.random.default_rng(7))
    new.loc[7, "land_ha"] = 25_000.0
    scored, _ = model.score(new, fdr=0.1, explain="none")
    assert not scored["flagged"].to_numpy()[(new["land_ha"] >= 50).to_numpy() & (np.arange(3000) != 7)].any()
    assert scored.loc[7, "flagged"]
    back = model_from_bytes(model_to_bytes(model))
    np.testing.assert_array_equal(back.score(new, fdr=0.1, explain="none")[0]["p_value"], scored["p_value"])
    # One run of 12 rows far out in both columns, each within a tenth of the others' spread.
    batch = _farms(3000, np.random.default_rng(5), ranches=0.0)
    run = np.arange(100, 112)
    batch.loc[run, "land_ha"] = 180 + np.random.default_rng(6).normal(0, 0.05, 12).round(2)
    batch.loc[run, "cattle"] = 150
    tight = fit_table(batch, random_state=0, max_epochs=20)
    assert tight.bands is None or tight.bands.partner is None or (tight.bands.partner < 0).all()


@pytest.mark.slow
def test_far_values_of_two_columns_that_follow_each_other_or_of_many_rows_make_no_partner_band() -> None:
    """A partner vouches for a far mode only where the two columns do not follow each other in
    the other rows and the mode is a few rows: big transfers are far in packets and bytes because
    bytes follow packets in every flow (a transfer exfiltrating data is as far in both), and a
    third of the flows below a gap in bytes, all on one port, are the column's bulk."""
    rng = np.random.default_rng(11)
    n = 3000
    packets = np.round(np.exp(rng.normal(2.5, 1.0, n)))
    big = rng.choice(n, 15, replace=False)
    packets[big] = np.round(np.exp(rng.uniform(9.0, 11.0, 15)))
    small = rng.random(n) < 0.35
    port = np.where(small, 53.0, rng.choice([80.0, 443.0, 8080.0], n))
    size = np.where(small, rng.uniform(60, 120, n), rng.uniform(500, 1500, n))
    df = pd.DataFrame({"packets": packets, "bytes": np.round(packets * size), "port": port,
                       "seconds": np.round(rng.gamma(2.0, 1.0, n), 2)})  # fmt: skip
    model = fit_table(df, random_state=0, max_epochs=20)
    assert model.bands is None or model.bands.partner is None or (model.bands.partner < 0).all()
