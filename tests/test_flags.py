"""The flag rule (nrad.flags): Benjamini-Hochberg and the top share, decided once, applied by chunks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from nrad.errors import NradError
from nrad.flags import FlagRule, benjamini_hochberg, bh_cutoff, kth_largest


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 2.0, float("nan")])
def test_levels_out_of_range_are_refused(bad: float) -> None:
    with pytest.raises(NradError, match="between 0 and 1"):
        FlagRule.of(fdr=bad)
    with pytest.raises(NradError, match="between 0 and 1"):
        FlagRule.of(contamination=bad)


def test_fdr_and_contamination_together_are_refused() -> None:
    with pytest.raises(NradError, match="either"):
        FlagRule.of(0.1, 0.1)
    assert FlagRule.of() == FlagRule("fdr", 0.05)


def test_bh_from_the_small_p_values_alone_equals_bh_on_all() -> None:
    rng = np.random.default_rng(2)
    for trial in range(30):
        p = np.r_[rng.uniform(size=2000), rng.uniform(0, 1e-3, size=trial)]
        for q in (0.01, 0.05, 0.2):
            want = false_discovery_control(p, method="bh") <= q
            np.testing.assert_array_equal(benjamini_hochberg(p, q), want)
            cut = bh_cutoff(p[p <= q], p.size, q)
            np.testing.assert_array_equal(p <= cut, want)


def test_the_top_share_is_exact_with_ties_taken_in_row_order_in_any_chunking() -> None:
    rng = np.random.default_rng(3)
    scores = np.round(rng.normal(size=2000), 1)  # many ties
    rule = FlagRule.of(contamination=0.07)
    want = np.zeros(scores.size, dtype=bool)
    want[np.argsort(-scores, kind="stable")[: int(np.ceil(0.07 * scores.size))]] = True
    np.testing.assert_array_equal(rule.flags(scores), want)
    for n_chunks in (1, 3, 17):
        chunks = np.array_split(scores, n_chunks)
        cutoff = rule.cutoff(scores.size, lambda chunks=chunks: iter(chunks))
        got = np.concatenate([rule.apply(c, cutoff, i) for i, c in enumerate(chunks)])
        np.testing.assert_array_equal(got, want)


def test_bh_by_chunks_equals_bh_at_once() -> None:
    rng = np.random.default_rng(4)
    p = np.r_[rng.uniform(size=3000), rng.uniform(0, 1e-4, size=40)]
    rng.shuffle(p)
    rule = FlagRule.of(0.1)
    chunks = np.array_split(p, 7)
    cutoff = rule.cutoff(p.size, lambda: iter(chunks))
    got = np.concatenate([rule.apply(c, cutoff, i) for i, c in enumerate(chunks)])
    np.testing.assert_array_equal(got, benjamini_hochberg(p, 0.1))
    np.testing.assert_array_equal(got, rule.flags(p))


def test_kth_largest_with_ties_and_several_rounds() -> None:
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.normal(size=20_000), np.full(500, 0.25), rng.standard_cauchy(size=3000)])
    rng.shuffle(values)
    chunks = lambda: iter(np.array_split(values, 17))  # noqa: E731
    for k in (1, 7, 500, 11_000, len(values)):
        expected = np.sort(values)[::-1][k - 1]
        assert kth_largest(chunks, k, bins=8, exact_max=50) == expected
