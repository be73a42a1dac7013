"""The robust Gaussian (nrad.gaussian): a cluster of bad rows stays outside, cells are judged given the rest."""

import numpy as np
import pytest

from nrad.gaussian import Relations, RobustGaussian


def _correlated(n: int, rng: np.random.Generator) -> np.ndarray:
    base = rng.normal(size=(n, 1))
    return np.hstack(
        [base + 0.3 * rng.normal(size=(n, 1)), base + 0.3 * rng.normal(size=(n, 1)), rng.normal(size=(n, 2))]
    )


def test_a_fifth_of_the_rows_in_one_cluster_stays_outside_the_fit() -> None:
    rng = np.random.default_rng(0)
    normal = _correlated(400, rng)
    cluster = rng.normal(0, 0.1, size=(100, 4)) + np.array([4.0, -4.0, 0.0, 0.0])  # breaks the relation
    z = np.vstack([normal, cluster])
    d = RobustGaussian.fit(z).distance(z)
    assert d[400:].min() > np.quantile(d[:400], 0.99)
    classical = 0.5 * np.einsum("ij,jk,ik->i", z - z.mean(0), np.linalg.inv(np.cov(z.T)), z - z.mean(0))
    assert classical[400:].min() < np.quantile(classical[:400], 0.99)  # the plain estimate is masked


def test_cell_residuals_match_the_gaussian_conditional() -> None:
    rng = np.random.default_rng(1)
    z = _correlated(5000, rng)
    g = RobustGaussian.fit(z)
    cov = np.linalg.inv(g.precision)
    row = np.array([[1.0, -1.0, 0.5, 0.2]])
    t = g.cell_residuals(row, row)[0]
    for j in range(4):
        o = [k for k in range(4) if k != j]
        mean = g.location[j] + cov[j, o] @ np.linalg.solve(cov[np.ix_(o, o)], row[0, o] - g.location[o])
        sd = np.sqrt(cov[j, j] - cov[j, o] @ np.linalg.solve(cov[np.ix_(o, o)], cov[o, j]))
        assert t[j] == pytest.approx((row[0, j] - mean) / sd, rel=1e-6)


def test_a_far_value_stays_far_and_does_not_push_its_neighbours_off() -> None:
    rng = np.random.default_rng(2)
    z = _correlated(3000, rng)
    g = RobustGaussian.fit(z)
    row = np.array([[100.0, 0.0, 0.0, 0.0]])
    clipped = np.clip(row, -8, 8)  # what the flows read; the cell itself is judged unclipped
    t = g.cell_residuals(clipped, row)[0]
    assert t[0] > 100  # 100 sd out: its residual is not capped by any clip
    assert abs(t[1]) < 25 and abs(t[3]) < 1  # the predictors enter clipped to 4 sd


def test_fill_is_the_conditional_mean_and_a_two_valued_column_keeps_a_finite_precision() -> None:
    rng = np.random.default_rng(3)
    z = _correlated(3000, rng)
    g = RobustGaussian.fit(z)
    row = np.array([[1.5, np.nan, 0.0, 0.0]])
    filled = g.fill(row)[0]
    cov = np.linalg.inv(g.precision)
    o = [0, 2, 3]
    want = g.location[1] + cov[1, o] @ np.linalg.solve(cov[np.ix_(o, o)], row[0, o] - g.location[o])
    assert filled[1] == pytest.approx(want, rel=1e-6)
    kitchens = np.where(rng.random(3000) < 0.96, 0.0, 1.0)  # constant in any 75% subset
    g2 = RobustGaussian.fit(np.column_stack([z, kitchens]))
    assert np.diag(g2.precision)[-1] < 1e5


def test_state_round_trip_and_refusal() -> None:
    z = _correlated(500, np.random.default_rng(4))
    g = RobustGaussian.fit(z)
    meta, arrays = g.to_state("g.")
    back = RobustGaussian.from_state(meta, arrays, "g.", 4)
    np.testing.assert_array_equal(back.distance(z), g.distance(z))
    with pytest.raises(ValueError, match="4 features"):
        RobustGaussian.from_state(meta, {**arrays, "g.precision": np.eye(3)}, "g.", 4)


def test_a_column_seen_in_few_rows_is_left_out_of_the_distance() -> None:
    # A pool area: absent (its spike) in all but 12 rows.  Its cells are filled with the same value
    # elsewhere, which must not make a pool of ordinary size thousands of nats away.
    rng = np.random.default_rng(5)
    z = _correlated(3000, rng)
    pool = np.full(3000, np.nan)
    pool[:12] = rng.normal(0, 1, 12)
    seen = np.column_stack([np.ones((3000, 4), dtype=bool), ~np.isnan(pool)])
    filled = np.column_stack([z, np.nan_to_num(pool)])
    g = RobustGaussian.fit(filled, observed=seen)
    assert g.sparse is not None and g.sparse.tolist() == [False] * 4 + [True]
    row = np.r_[z[20], 3.0][None]
    assert g.distance(row)[0] == pytest.approx(g.distance(np.r_[z[20], g.location[4]][None])[0])
    meta, arrays = g.to_state("g.")
    assert RobustGaussian.from_state(meta, arrays, "g.", 5).sparse.tolist() == g.sparse.tolist()


def test_in_a_small_table_no_column_is_sparse() -> None:
    # 60 rows, every cell seen: each column is seen in fewer than MIN_OBSERVED rows, yet none is
    # sparse, and a far row is far (a 75-row table once had every distance 0).
    rng = np.random.default_rng(3)
    z = rng.normal(size=(60, 4))
    z[0] = 8.0
    g = RobustGaussian.fit(z, np.ones(z.shape, dtype=bool))
    assert g.sparse is None
    d = g.distance(z)
    assert d[0] > 50 and np.median(d[1:]) < 5


def _age_and_birth_year(n: int, rng: np.random.Generator) -> np.ndarray:
    """A skewed age and the birth year that follows it exactly (up to a year), with a third column."""
    age = np.clip(rng.gamma(6.0, 9.0, n), 18, 99).round()
    birth = 2023 - age - (rng.random(n) < 0.5) + rng.uniform(-0.5, 0.5, n)
    return np.column_stack([age + rng.uniform(-0.5, 0.5, n), birth, rng.normal(size=n)])


def test_relations_hold_out_to_the_oldest_row_and_find_a_contradiction() -> None:
    rng = np.random.default_rng(5)
    y = _age_and_birth_year(3000, rng)
    folds = np.arange(3000) % 3
    relations = Relations.fit(y, folds, np.ones(3000, dtype=bool), seed=0)
    oldest = np.argsort(y[:, 0])[-20:]
    t = relations.residuals(relations.gaussians[0], relations.standardize(y))
    # The oldest rows are as far along the relation as anyone, and on it.
    assert np.abs(t[oldest, :2]).max() < 5.0
    wrong = y[:1].copy()
    wrong[0, 0], wrong[0, 1] = 30.0, 1953.0  # 40 years off each other, both values typical
    t_wrong = relations.residuals(relations.gaussians[0], relations.standardize(wrong))
    assert np.abs(t_wrong[0, :2]).min() > 6.0
    assert abs(t_wrong[0, 2]) < 3.0  # the unrelated column is not pushed off


def test_a_wild_predictor_enters_no_further_than_its_training_values() -> None:
    rng = np.random.default_rng(6)
    y = _age_and_birth_year(2000, rng)
    relations = Relations.fit(y, np.arange(2000) % 2, np.ones(2000, dtype=bool), seed=0)
    wild = y[:1].copy()
    wild[0, 1] += 200.0  # a year typo
    t = relations.residuals(relations.gaussians[0], relations.standardize(wild))
    assert abs(t[0, 1]) > 1.5 * abs(t[0, 0])  # the typo's own cell takes the most blame


def test_relations_state_round_trip_and_refusal() -> None:
    rng = np.random.default_rng(7)
    y = _age_and_birth_year(600, rng)
    y[rng.random(y.shape) < 0.05] = np.nan
    relations = Relations.fit(y, np.arange(600) % 2, np.ones(600, dtype=bool), seed=1)
    meta, arrays = relations.to_state("r.")
    back = Relations.from_state(meta, arrays, "r.", 3)
    u = relations.standardize(y)
    for a, b in zip(relations.gaussians, back.gaussians, strict=True):
        np.testing.assert_array_equal(relations.residuals(a, u), back.residuals(b, u))
    arrays["r.scale"] = np.array([1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="positive"):
        Relations.from_state(meta, arrays, "r.", 3)


def test_mostly_absent_columns_do_not_make_an_independent_one_look_predicted() -> None:
    """Two columns seen in a tenth and a sixth of the rows, and one seen in half, all
    independent: the half-seen column's residual stays its own deviation."""
    rng = np.random.default_rng(8)
    n = 3000
    y = rng.normal(size=(n, 5))
    y[:, 1] = y[:, 0] + 0.1 * rng.normal(size=n)  # one true relation
    y[rng.random(n) < 0.9, 2] = np.nan
    y[rng.random(n) < 0.85, 3] = np.nan
    y[rng.random(n) < 0.5, 4] = np.nan
    relations = Relations.fit(y, np.arange(n) % 3, np.ones(n, dtype=bool), seed=0)
    t = relations.residuals(relations.gaussians[0], relations.standardize(y))
    seen = np.isfinite(y[:, 4])
    np.testing.assert_allclose(np.nanstd(t[seen, 4]), np.nanstd(relations.standardize(y)[seen, 4]), rtol=0.15)
    assert np.nanmax(np.abs(t[:, 4])) < 6.0


def test_a_column_at_its_centre_in_most_rows_does_not_blind_the_relations() -> None:
    # Payment terms read in context: 0 (up to rounding noise) in most rows, spread in the rest.
    # Its MAD is that noise; read as a scale, it put the column's other values 1e15 out.
    rng = np.random.default_rng(8)
    n = 2000
    net = rng.normal(0, 1, n)
    gross = 1.2 * net + rng.normal(0, 0.01, n)
    terms = np.where(rng.random(n) < 0.6, rng.normal(0, 1e-16, n), rng.normal(0.5, 0.2, n))
    y = np.column_stack([net, gross, terms])
    relations = Relations.fit(y, np.arange(n) % 3, np.ones(n, dtype=bool), seed=0)
    assert relations.scale[2] > 0.01
    wrong = y[:1].copy()
    wrong[0, 1] = 1.2 * wrong[0, 0] + 0.5  # off the relation by 50 of its sd, inside the column
    t = relations.residuals(relations.gaussians[0], relations.standardize(wrong))
    assert abs(t[0, 1]) > 8.0  # the shrinkage's share of the variances makes it 13 sd, not 50


def test_a_drawn_fill_has_the_conditional_mean_and_spread() -> None:
    """Filled with an ``rng``, a missing cell is a draw from its conditional Gaussian: for unit
    variances and correlation 0.8, given x1 = 1 the second cell has mean 0.8 and sd 0.6 (the
    mean fill gives 0.8 every time, and the first cell, present, is kept)."""
    cov = np.array([[1.0, 0.8], [0.8, 1.0]])
    gauss = RobustGaussian(np.zeros(2), np.linalg.inv(cov), float(np.log(np.linalg.det(cov))))
    z = np.tile([1.0, np.nan], (20_000, 1))
    assert np.allclose(gauss.fill(z)[:, 1], 0.8)
    drawn = gauss.fill(z, rng=np.random.default_rng(0))
    assert np.all(drawn[:, 0] == 1.0)
    assert drawn[:, 1].mean() == pytest.approx(0.8, abs=0.02)
    assert drawn[:, 1].std() == pytest.approx(0.6, abs=0.02)
