"""nrad.evidence: the weights of a row's tests, the robust distance's statistic, the tails' state."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from nrad.calibration import MAX_SHAPE, SCORE_TRIM, TailModel
from nrad.cells import CATEGORY_SHARE, CELL_WEIGHT
from nrad.evidence import ChannelTails, bonferroni_weights, distance_statistic


@pytest.mark.parametrize("numeric, categorical", [(0, 0), (5, 0), (0, 3), (4, 2)])
def test_weights_sum_to_one_and_split_as_documented(numeric: int, categorical: int) -> None:
    w = bonferroni_weights(3, numeric, categorical)
    assert w.shape == (3 + numeric + categorical,)
    assert w.sum() == pytest.approx(1.0)
    cells = w[3:].sum()
    assert cells == pytest.approx(CELL_WEIGHT if numeric + categorical else 0.0)
    if numeric and categorical:
        assert w[3 + numeric :].sum() == pytest.approx(CELL_WEIGHT * CATEGORY_SHARE)


def test_distance_statistic_is_exponential_for_gaussian_rows() -> None:
    rng = np.random.default_rng(0)
    p = 6
    half_d2 = 0.5 * (rng.normal(size=(200_000, p)) ** 2).sum(axis=1)
    s = distance_statistic(half_d2, p)
    # -log of a uniform p-value: exponential with mean 1; its upper tail too.
    assert s.mean() == pytest.approx(1.0, abs=0.01)
    assert np.mean(s > np.log(100)) == pytest.approx(0.01, rel=0.05)


def test_distance_statistic_stays_finite_and_ordered_far_out() -> None:
    # Half squared distances of 725 and more underflow the chi-square's survival: the rows
    # beyond must stay finite and in order (a wide table's rows lie that far out of a small
    # table's robust fit), and match the exact values where those are finite.
    from scipy import special, stats

    for p in (1, 5, 60, 500):
        d = np.r_[np.linspace(600, 760, 17), 1e4, 1e6, 1e200]
        s = distance_statistic(d, p)
        assert np.all(np.isfinite(s)) and np.all(np.diff(s) > 0)
        exact = -stats.chi2.logsf(2 * d, p)
        ok = np.isfinite(exact)
        np.testing.assert_allclose(s[ok], exact[ok], rtol=1e-9)
        assert s[-3] == pytest.approx(1e4 - (p / 2 - 1) * np.log(1e4) + special.gammaln(p / 2), rel=1e-5)


def test_density_tail_in_sample_is_light_only_where_a_cluster_stands_apart() -> None:
    # In sample on a large table where a cluster of rows stands apart (a broken batch), the
    # density's tail keeps near-exponential shapes: a heavier one would take the cluster back.
    # Elsewhere (rows believed normal, in sample with no cluster apart, a small table) the flows
    # give rows they did not see a heavier-tailed density, and the tail averages over the fused
    # score's shapes: scores of shape 1/3 put a good part of its weight above 0.1.
    from nrad.calibration import DENSITY_MAX_SHAPE, MAX_SHAPE

    rng = np.random.default_rng(2)
    n = 600
    density = rng.pareto(3.0, n)  # a tail of shape 1/3
    scores = rng.gumbel(size=n)
    fresh = ChannelTails.fit(scores, density, None, None, None, None, in_sample=False)
    apart = ChannelTails.fit(scores, density, None, None, None, None, in_sample=True, apart=True)
    plain = ChannelTails.fit(scores, density, None, None, None, None, in_sample=True)
    small = ChannelTails.fit(scores, density, None, None, None, None, in_sample=True, small=True, apart=True)
    assert fresh.density is not None and apart.density is not None
    assert plain.density is not None and small.density is not None

    # The shapes averaged over run up to the bound, each read with its scale integrated out (which
    # adds about one over the excesses, 60 here: a few hundredths).
    def bounded_by(tail: Any, bound: float) -> bool:
        return bool(bound < tail.shapes.max() <= bound + 0.05)

    assert bounded_by(fresh.density, MAX_SHAPE)
    assert bounded_by(apart.density, DENSITY_MAX_SHAPE)
    for heavy in (plain, small):
        assert bounded_by(heavy.density, MAX_SHAPE)
        assert heavy.density.weights[heavy.density.shapes > 0.1].sum() > 0.3
    far = np.array([density.max() * 3])
    for heavy in (fresh, plain, small):
        assert heavy.density.p_values(far)[0] > apart.density.p_values(far)[0]


def test_in_sample_row_tails_read_a_level_they_would_leave_out_against_its_own_rows() -> None:
    # A 0/1 flag that 1.5% of 3,000 rows hold, charged 10 nats by the density: the tail fitted
    # without its top 2% calls every one of its rows an outlier.  With the flag among the strata,
    # its rows are read against each other (shifted by their median's distance from the rest), and
    # a wild row is still far out; a broken batch, 20 rows of a level of 1,500, is not shifted.
    rng = np.random.default_rng(0)
    n = 3000
    flag = np.zeros(n, dtype=np.int64)
    flag[rng.choice(n, 45, replace=False)] = 1
    line = (np.arange(n) % 2).astype(np.int64)
    density = rng.exponential(size=n) + 10.0 * flag
    wild = int(np.flatnonzero(flag == 0)[0])
    density[wild] = 40.0
    scores = rng.gumbel(size=n)
    strata = np.column_stack([flag, line])

    plain = ChannelTails.fit(scores, density, None, None, None, None, in_sample=True)
    read = ChannelTails.fit(scores, density, None, None, None, None, in_sample=True, strata=strata)
    ones = flag == 1
    plain_p = plain.row_log_p_values(scores, density, None)[:, 1]
    read_p = read.row_log_p_values(scores, density, None)[:, 1]
    # Benjamini-Hochberg at 0.1 flags k rows whose p-values are at most 0.1 k / n.
    assert np.median(plain_p[ones]) < np.log(0.1 * ones.sum() / n)
    assert np.median(read_p[ones]) > np.log(0.05)
    assert read.density_shift is not None and read.row_shift is None
    assert np.all(read.density_shift[~ones] == 0)
    assert read_p[wild] < np.log(1e-6)

    batch = np.flatnonzero(line == 1)[:20]
    density = rng.exponential(size=n)
    density[batch] += 10.0
    batched = ChannelTails.fit(scores, density, None, None, None, None, in_sample=True, strata=strata)
    assert batched.density_shift is None
    assert np.all(batched.row_log_p_values(scores, density, None)[batch, 1] < np.log(0.1 * len(batch) / n))


def test_tails_round_trip_through_their_state() -> None:
    rng = np.random.default_rng(1)
    n, p = 2000, 3
    tails = ChannelTails.fit(
        rng.gumbel(size=n), rng.exponential(size=n), None, rng.standard_t(5, size=(n, p)),
        rng.normal(size=(n, p)), rng.lognormal(size=(n, p)), in_sample=True,
    )  # fmt: skip
    meta, arrays = tails.to_state()
    back = ChannelTails.from_state(meta, arrays)
    assert back.distance is None
    new = rng.gumbel(size=50) + 3, rng.exponential(size=50) * 3
    np.testing.assert_array_equal(back.row_log_p_values(*new, None), tails.row_log_p_values(*new, None))
    cells = rng.standard_t(5, size=(50, p)) * 3, rng.normal(size=(50, p)), rng.lognormal(size=(50, p)) * 2
    for a, b in zip(back.cells.log_p_parts(*cells), tails.cells.log_p_parts(*cells), strict=True):
        np.testing.assert_array_equal(a, b)


def test_in_sample_shifts_are_read_at_the_rows_positions() -> None:
    # An explanation reads a few rows of a table scored against itself: each is shifted as it was
    # in the whole table (its position there), not by the first rows' shifts.
    from nrad.encoding import Prepared

    rng = np.random.default_rng(3)
    n = 3000
    flag = np.zeros(n, dtype=np.int64)
    flag[rng.choice(n, 45, replace=False)] = 1
    density = rng.exponential(size=n) + 10.0 * flag
    scores = rng.gumbel(size=n)
    tails = ChannelTails.fit(scores, density, None, None, None, None, in_sample=True, strata=flag[:, None])
    assert tails.density_shift is not None
    whole = tails.row_log_p_values(scores, density, None)
    prep = Prepared(np.zeros((n, 1)), flag[:, None], {}, np.zeros((n, 1), dtype=bool))
    rows = np.r_[np.flatnonzero(flag)[:3], np.flatnonzero(flag == 0)[:3]]
    some = prep.take(rows).take(np.array([5, 0, 2]))
    assert some.positions is not None
    np.testing.assert_array_equal(some.positions, rows[[5, 0, 2]])
    part = tails.row_log_p_values(scores[some.positions], density[some.positions], None, some.positions)
    np.testing.assert_array_equal(part, whole[some.positions])


def test_a_level_the_density_charges_widely_is_read_among_its_own_rows() -> None:
    # A price 60 of 4,000 rows pay, far below the others on a lattice of a few values: the flows
    # charge its rows 1,000 to 4,000 nats (the other rows differ by a few).  Shifted by the level's
    # median alone, half of them stood beyond the others' tail; with their spread shrunk to the
    # others', none does.  A wild row elsewhere, and a row of the level far beyond the level's own
    # spread, are still far out.
    rng = np.random.default_rng(0)
    n = 4000
    price = np.zeros(n, dtype=np.int64)
    price[rng.choice(n, 60, replace=False)] = 1
    cheap = np.flatnonzero(price == 1)
    density = rng.exponential(size=n)
    density[cheap] += rng.uniform(1000.0, 4000.0, len(cheap))
    wild = int(np.flatnonzero(price == 0)[0])
    density[wild] = 40.0
    odd = cheap[0]
    density[odd] = 4000.0 + 30 * 1500.0
    scores = rng.gumbel(size=n)
    tails = ChannelTails.fit(scores, density, None, None, None, None, in_sample=True, strata=price[:, None])
    read = tails.row_log_p_values(scores, density, None)[:, 1]
    shifted = density - np.where(price == 1, np.median(density[cheap]) - np.median(density[price == 0]), 0.0)
    median_only = TailModel.fit(shifted, SCORE_TRIM, MAX_SHAPE).log_p_values(shifted)
    line = np.log(0.1 * 10 / n)  # Benjamini-Hochberg's line at 0.1 for 10 flags
    ordinary = np.setdiff1d(cheap, [odd])
    assert (median_only[ordinary] < line).sum() >= 10
    assert (read[ordinary] < line).sum() == 0
    assert read[wild] < np.log(1e-6) and read[odd] < np.log(1e-6)
