"""Numeric features as the flow sees them: shape, context, lattices, soft clip."""

from __future__ import annotations

import numpy as np
import pytest

from nrad.numeric import (
    NumericModel,
    dequantize,
    lattice_spacing,
    yeo_johnson,
    yeo_johnson_inverse,
)


@pytest.mark.parametrize("exponent", [0.0, 0.5, 1.0, 1.7, 2.0])
def test_yeo_johnson_inverse(exponent: float) -> None:
    x = np.linspace(-50, 500, 101)
    np.testing.assert_allclose(
        yeo_johnson_inverse(yeo_johnson(x, exponent), exponent), x, rtol=1e-9, atol=1e-9
    )


def test_lattices_are_found_and_continuous_values_are_not() -> None:
    rng = np.random.default_rng(0)
    counts = rng.poisson(3, 1000).astype(float)
    assert lattice_spacing(counts) == 1.0
    assert lattice_spacing((counts - counts.mean()) / counts.std()) == pytest.approx(1 / counts.std())
    assert lattice_spacing(np.round(rng.uniform(1, 3, 1000), 2)) == pytest.approx(0.01)  # prices in cents
    assert lattice_spacing(rng.normal(size=1000)) == 0.0
    noisy = dequantize(counts[:, None], np.array([1.0]), rng)[:, 0]
    assert np.all(np.abs(noisy - counts) <= 0.5) and lattice_spacing(noisy) == 0.0
    # A mean imputed into one row (1.721 among counts) is an error in a cell, not a finer lattice;
    # more than a few values off the lattice make the column continuous.
    assert lattice_spacing(np.r_[counts, 1.721]) == 1.0
    assert lattice_spacing(np.r_[counts, rng.uniform(0, 5, 5)]) == 0.0
    # Codes written as integers (network ports): no gap a multiple of the smallest (2, from 443 to
    # 445), but every value a whole number: the lattice of the integers.
    ports = rng.choice([0, 22, 25, 53, 80, 123, 443, 445, 873, 3389], 1000).astype(float)
    assert lattice_spacing(ports) == 1.0
    assert lattice_spacing(10 * ports) == 10.0  # the largest spacing every gap is a multiple of
    assert lattice_spacing(ports, whole_numbers=False) == 0.0  # not evenly spaced


def _amounts(rng: np.random.Generator, n: int = 3000) -> tuple[np.ndarray, np.ndarray, list[int]]:
    level = rng.normal(3.5, 1.0, size=20)
    merchant = rng.integers(0, 20, size=n)
    amount = np.exp(level[merchant] + rng.normal(0, 0.3, size=n))
    return amount[:, None], merchant[:, None], [22]


def test_an_amount_is_read_against_its_merchant() -> None:
    rng = np.random.default_rng(1)
    amount, merchant, n_codes = _amounts(rng)
    numeric = NumericModel.fit(amount, merchant, n_codes, rng)
    assert numeric.parent[0] == 0
    cheap = merchant[:, 0] == np.argmin([np.median(amount[merchant[:, 0] == m]) for m in range(20)])
    usual = np.median(amount[cheap])
    z = numeric.standardize(
        numeric.shape(np.array([[usual], [8 * usual]])), np.full((2, 1), merchant[cheap][0, 0])
    )
    assert abs(z[0, 0]) < 0.5 and z[1, 0] > 4  # 8x the merchant's usual amount


def test_a_feature_read_from_few_values_is_read_by_its_predictive_tail() -> None:
    """Six values off a spike give a spread that is itself uncertain: a new value 15 of those
    spreads out is as far as a Student t's tail makes it (about 4 Gaussian sd), not 15.  With
    thirty values or more, nothing changes.  Odd, monotone, and inverted for explanations."""
    rng = np.random.default_rng(4)
    codes = np.zeros((150, 0), dtype=np.int64)
    few = np.full((150, 1), np.nan)
    few[:6, 0] = [435.0, 437.0, 718.0, 811.0, 974.0, 980.0]
    many = rng.normal(700, 230, (150, 1))
    model_few = NumericModel.fit(few, codes, [], rng)
    model_many = NumericModel.fit(many, codes, [], rng)
    assert model_few.n_values.tolist() == [6] and model_many.n_values.tolist() == [150]
    new = np.array([[700.0], [1500.0], [5402.0], [-3000.0], [1e9]])
    r_few = model_few.residuals(model_few.shape(new), np.zeros((5, 0), dtype=np.int64))[:, 0]
    r_many = model_many.residuals(model_many.shape(new), np.zeros((5, 0), dtype=np.int64))[:, 0]
    assert np.all(np.diff(r_few[[3, 0, 1, 2, 4]]) > 0)  # order kept
    assert 3 < r_few[2] < 5 and r_few[3] < -3 and r_few[4] > 10  # far stays further
    assert r_many[2] > 15  # plenty of values: read as it is
    z = model_few.standardize(model_few.shape(new), np.zeros((5, 0), dtype=np.int64))[:, 0]
    back = model_few.to_original(0, z, np.zeros(0, dtype=np.int64))
    np.testing.assert_allclose(back[:4], new[:4, 0], rtol=1e-6)


def test_a_new_row_is_read_against_a_small_level_by_its_predictive_spread() -> None:
    """A new row did not help set its merchant's median and spread: against a merchant of six
    rows a value 5 spreads out is read as about 4.3, against one of a thousand almost as it is; the
    training rows themselves are read as before.  Odd, monotone, and far stays far."""
    rng = np.random.default_rng(6)
    merchant = np.r_[np.zeros(6), np.ones(1000), np.full(1000, 2)].astype(np.int64)[:, None]
    amount = np.exp(np.array([1.0, 3.0, 5.0])[merchant[:, 0]] + rng.normal(0, 0.3, len(merchant)))[:, None]
    numeric = NumericModel.fit(amount, merchant, [5], rng)
    assert numeric.parent[0] == 0 and numeric.level_rows is not None
    assert numeric.level_rows[0][:3].tolist() == [6, 1000, 1000]
    y = numeric.shape(amount)
    np.testing.assert_array_equal(
        numeric.residuals(y, merchant), numeric.residuals(y, merchant, new_rows=False)
    )
    r = np.array([-8.0, -5.0, 0.0, 1.0, 5.0, 8.0])
    for code, far in ((0, (4.2, 4.4, 6.8, 7.0)), (1, (4.98, 5.0, 7.97, 8.0))):
        codes = np.full((len(r), 1), code)
        level = numeric.location[0][code] + r * numeric.scale[0][code]  # r spreads from the level
        new = numeric.residuals(level[:, None], codes, new_rows=True)[:, 0]
        old = numeric.residuals(level[:, None], codes)[:, 0]
        np.testing.assert_allclose(old, r, atol=1e-9)
        assert np.all(np.diff(new) > 0) and new[2] == 0.0 and new[1] == -new[4]
        assert far[0] < new[4] < far[1] and far[2] < new[5] < far[3]
    huge = numeric.residuals(
        numeric.location[0][:1, None] + 40 * numeric.scale[0][0], np.zeros((1, 1), int), True
    )
    assert huge[0, 0] > 34  # a gross value against six rows stays gross


def test_a_level_with_no_spread_of_its_own_is_read_with_the_pooled_spread() -> None:
    """A merchant whose 40 amounts are all 10.00 has no spread of its own: its values off its
    spike are none, and its spread is the pooled one, read from every row, so a new row against it
    is read almost as a training row is."""
    rng = np.random.default_rng(7)
    merchant = np.r_[np.zeros(40), np.ones(1000), np.full(1000, 2)].astype(np.int64)[:, None]
    amount = np.exp(np.array([1.0, 3.0, 5.0])[merchant[:, 0]] + rng.normal(0, 0.3, len(merchant)))[:, None]
    amount[:40, 0] = 10.0
    numeric = NumericModel.fit(amount, merchant, [5], rng)
    assert numeric.parent[0] == 0 and numeric.level_rows is not None
    assert numeric.level_rows[0][0] == len(merchant)
    codes = np.zeros((1, 1), dtype=np.int64)
    value = numeric.location[0][:1, None] + 5 * numeric.scale[0][0]
    new, old = numeric.residuals(value, codes, True), numeric.residuals(value, codes)
    assert 4.99 < new[0, 0] <= old[0, 0]


def test_a_new_merchant_falls_back_to_the_next_context() -> None:
    rng = np.random.default_rng(2)
    amount, merchant, n_codes = _amounts(rng)
    category = (merchant % 4).astype(np.int64)
    numeric = NumericModel.fit(amount, np.hstack([merchant, category]), [22, 6], rng)
    other = n_codes[0] - 2
    assert numeric.parent[0] == 0 and numeric.fallback[0] == 1
    assert numeric.context(0, np.array([other, 3])) == (1, 3)
    assert numeric.context(0, np.array([5, 3])) == (0, 5)


def test_a_level_piled_at_one_value_is_spread_by_its_other_values() -> None:
    # A geriatric ward: ages floored at 70 (most of the ward is 70), and the birth years those
    # ages give, split over two neighbouring years.  The ward's oldest are ordinary.
    rng = np.random.default_rng(3)
    n = 3000
    ward = rng.integers(0, 5, size=n)
    age = np.clip(rng.gamma(6.0, 9.0, n), 18, 99)
    age = np.where(ward == 4, np.maximum(age, 70), age).round()
    birth_year = 2023 - age - (rng.random(n) < 0.5)
    numbers = np.column_stack([age, birth_year])
    numeric = NumericModel.fit(numbers, ward[:, None], [7], rng)
    assert numeric.parent[0] == 0 and numeric.parent[1] == 0
    oldest = (ward == 4) & (age >= 90)
    assert oldest.sum() >= 3
    r = numeric.residuals(numeric.shape(numbers[oldest]), ward[oldest][:, None])
    assert np.abs(r).max() < 6  # a spike's MAD (a fraction of a year) put them 30-80 sd out
    # A small count's ones and twos are no spike: its levels keep their own spread.
    visits = rng.poisson(np.where(ward == 4, 2.0, 6.0)).astype(float)[:, None]
    counts = NumericModel.fit(visits, ward[:, None], [7], rng)
    far = counts.residuals(counts.shape(np.array([[12.0]])), np.array([[4]]))
    assert far[0, 0] > 4


def test_soft_clip_is_monotone_and_charges_for_distance() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2000, 1))
    numeric = NumericModel.fit(x, np.zeros((2000, 0), dtype=np.int64), [], rng)
    z = np.array([[0.0], [3.0], [10.0], [100.0], [1e6]])
    clipped, terms = numeric.soft_clip(numeric.standardize(numeric.shape(z), np.zeros((5, 0), dtype=np.int64)))
    assert np.all(np.diff(clipped[:, 0]) > 0) and np.all(np.diff(terms[:, 0]) >= 0)
    assert clipped[-1, 0] < 25  # a typo of 1e6 stays a few units past the training range


def test_heavy_symmetric_tails_are_pulled_in_and_gaussian_ones_are_left() -> None:
    rng = np.random.default_rng(4)
    data = np.column_stack([rng.standard_t(2, 5000), rng.normal(size=5000)])
    numeric = NumericModel.fit(data, np.zeros((5000, 0), dtype=np.int64), [], rng)
    assert numeric.tail_weight[0] < 0.6 and numeric.tail_weight[1] == 1.0


def test_a_share_of_far_values_beyond_what_the_quantiles_leave_out_does_not_make_the_tail_heavy() -> None:
    # 1.5% of the readings 20 sd off, all on one side: more than the 1% the tail weight's quantiles
    # leave out, and each far beyond the bulk of the rest.
    rng = np.random.default_rng(5)
    readings = rng.normal(50.0, 5.0, (3000, 1))
    readings[:45] += 100.0
    numeric = NumericModel.fit(readings, np.zeros((3000, 0), dtype=np.int64), [], rng)
    assert numeric.tail_weight[0] == 1.0
    z = numeric.standardize(numeric.shape(readings), np.zeros((3000, 0), dtype=np.int64))[:, 0]
    assert z[:45].min() > 4 * np.abs(z[45:]).max()


def test_far_values_that_many_rows_share_still_set_the_tail_weight() -> None:
    # Payment terms by segment: 0 or 14 days in two segments (14 in 30% of their rows), 30 or 60
    # in the third.  The 14s lie far beyond the bulk that the 0s leave spread, and are the
    # column's all the same: cut from the tail weight's fit, they left it at 1 (no heavy tail),
    # and clean invoices of a 3,000-row table were flagged by their VAT beside them.
    rng = np.random.default_rng(7)
    segment = rng.choice(3, size=3000, p=[0.3, 0.5, 0.2])
    retail = rng.choice([0.0, 14.0], size=3000, p=[0.7, 0.3])
    terms = np.where(segment < 2, retail, rng.choice([30.0, 60.0], size=3000))[:, None]
    numeric = NumericModel.fit(terms, segment[:, None].astype(np.int64), [5], rng)
    assert numeric.parent[0] == 0 and numeric.tail_weight[0] < 0.5


def test_tail_terms_are_the_transforms_log_jacobian() -> None:
    """-log T'(r) (up to the constant -log delta) of z = T(r): the score is a density of the residual."""
    rng = np.random.default_rng(4)
    data = np.column_stack([rng.standard_t(2, 5000), rng.normal(size=5000)])
    numeric = NumericModel.fit(data, np.zeros((5000, 0), dtype=np.int64), [], rng)
    delta = numeric.tail_weight[0]
    r = np.array([0.0, 0.5, 3.0, 40.0, 1e4])
    z = np.column_stack([np.sinh(delta * np.arcsinh(r)), r])
    h = 1e-6 * np.maximum(1.0, r)
    slope = (np.sinh(delta * np.arcsinh(r + h)) - np.sinh(delta * np.arcsinh(r - h))) / (2 * h)
    terms = numeric.tail_terms(z)
    np.testing.assert_allclose(terms[:, 0], -np.log(slope) + np.log(delta), rtol=1e-5, atol=1e-6)
    assert np.all(terms[:, 1] == 0)  # delta = 1: nothing added
    # Far out, a heavy-tailed column still charges for distance: (1 - delta) log|r|, not a vanishing amount.
    assert terms[-1, 0] > (1 - delta) * np.log(1e4) - 1
    assert np.all(numeric.tail_terms(np.array([[np.nan, 1.0]])) == 0)


def test_state_round_trips() -> None:
    rng = np.random.default_rng(5)
    amount, merchant, n_codes = _amounts(rng)
    numeric = NumericModel.fit(amount, merchant, n_codes, rng)
    meta, arrays = numeric.to_state("s.")
    again = NumericModel.from_state(meta, arrays, "s.")
    y = numeric.shape(amount)
    for new_rows in (False, True):
        np.testing.assert_array_equal(
            numeric.standardize(y, merchant, new_rows),
            again.standardize(again.shape(amount), merchant, new_rows),
        )
    assert again.level_rows is not None and all(
        np.array_equal(a, b) for a, b in zip(numeric.level_rows, again.level_rows, strict=True)
    )
