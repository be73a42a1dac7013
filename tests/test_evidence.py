"""nrad.evidence: the weights of a row's tests, the robust distance's statistic, the tails' state."""

from __future__ import annotations

import numpy as np
import pytest

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
