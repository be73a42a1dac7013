"""Conformal p-values and Benjamini-Hochberg: validity, FDR control, levels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from nrad import NRDE
from nrad.calibration import (
    TailModel,
    benjamini_hochberg,
    bh_cutoff,
    conformal_p_values,
    self_calibrated_flags,
    top_fraction,
)
from nrad.errors import NradError


def test_p_value_formula() -> None:
    calib = np.array([1.0, 2.0, 3.0, 4.0])
    p = conformal_p_values(calib, np.array([0.0, 2.5, 4.0, 9.0]))
    np.testing.assert_allclose(p, [5 / 5, 3 / 5, 2 / 5, 1 / 5])


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 2.0, float("nan")])
def test_levels_out_of_range_are_refused(bad: float) -> None:
    with pytest.raises(NradError, match="between 0 and 1"):
        benjamini_hochberg(np.array([0.01]), bad)
    with pytest.raises(NradError, match="between 0 and 1"):
        top_fraction(np.array([1.0]), bad)


def test_below_the_tail_p_values_are_conformal_and_above_they_keep_falling() -> None:
    rng = np.random.default_rng(0)
    calib = rng.gamma(4.0, 1.0, size=2000)
    tail = TailModel.fit(calib)
    low = np.linspace(0, tail.threshold, 50)
    np.testing.assert_allclose(tail.p_values(low), conformal_p_values(calib, low))
    high = np.linspace(tail.threshold + 1e-9, calib.max() + 40, 200)
    p = tail.p_values(high)
    assert np.all(np.diff(p) < 0) and np.all(p > 0)
    assert p[0] <= tail.n_tail / (calib.size + 1) < conformal_p_values(calib, np.array([tail.threshold]))[0]
    # Far beyond every calibration score the p-value goes far below 1 / (n + 1).
    assert p[-1] < 0.05 / (calib.size + 1)


def test_a_few_wild_calibration_scores_do_not_calibrate_the_tail_away() -> None:
    rng = np.random.default_rng(1)
    calib = rng.gamma(4.0, 1.0, size=3000)
    wild = np.r_[calib, np.full(15, 80.0)]  # 0.5% anomalies among the calibration rows
    probe = np.array([calib.max() + 8.0])
    clean_p, wild_p = TailModel.fit(calib).p_values(probe)[0], TailModel.fit(wild).p_values(probe)[0]
    assert wild_p < 10 * clean_p


def test_bh_from_the_small_p_values_alone_equals_bh_on_all() -> None:
    rng = np.random.default_rng(2)
    for trial in range(30):
        p = np.r_[rng.uniform(size=2000), rng.uniform(0, 1e-3, size=trial)]
        for q in (0.01, 0.05, 0.2):
            want = false_discovery_control(p, method="bh") <= q
            np.testing.assert_array_equal(benjamini_hochberg(p, q), want)
            cut = bh_cutoff(p[p <= q], p.size, q)
            np.testing.assert_array_equal(p <= cut, want)


def test_p_values_need_calibration_rows() -> None:
    det = NRDE(max_epochs=2, random_state=0).fit(np.random.default_rng(0).normal(size=(50, 2)))
    with pytest.raises(NradError, match="calibration_fraction"):
        det.p_values(np.zeros((1, 2)))


def _one_repetition(seed: int, q: float) -> tuple[float, np.ndarray, int]:
    """Clean training rows, a test set with 10% far anomalies; FDP and normal p-values."""
    rng = np.random.default_rng(seed)
    mix = rng.normal(size=(4, 4))
    train = rng.normal(size=(2500, 4)) @ mix
    normal = rng.normal(size=(180, 4)) @ mix
    anomalies = (rng.normal(size=(20, 4)) + 4.0 * rng.choice([-1, 1], size=(20, 4))) @ mix
    # A short fit: conformal validity does not depend on how good the model is.
    det = NRDE(max_epochs=3, calibration_fraction=0.4, random_state=seed).fit(train)
    p = det.p_values(np.vstack([normal, anomalies]))
    flags = benjamini_hochberg(p, q)
    false = flags[:180].sum()
    return false / max(flags.sum(), 1), p[:180], int(flags[180:].sum())


def test_bh_controls_fdr_and_normal_p_values_are_uniform() -> None:
    q = 0.1
    runs = [_one_repetition(seed, q) for seed in range(12)]
    fdp = np.array([r[0] for r in runs])
    # FDR = E[FDP] <= q (BH gives q * m0 / m = 0.09 here); allow 2 standard errors.
    assert fdp.mean() <= q + 2 * fdp.std(ddof=1) / np.sqrt(len(fdp)), fdp
    assert np.mean([r[2] for r in runs]) > 10  # and it finds most of the 20 anomalies
    p_normal = np.concatenate([r[1] for r in runs])
    for t in (0.1, 0.25, 0.5):
        # P(p <= t) ~ t for exchangeable rows (1,000 calibration rows: p is nearly continuous).
        assert abs(np.mean(p_normal <= t) - t) < 0.05, t


def test_self_calibrated_flags_find_more_anomalies_and_leave_a_clean_table_alone() -> None:
    rng = np.random.default_rng(4)
    normal = rng.gamma(4.0, 1.0, size=3000)  # the largest of 3,000 is near 15
    # 20 anomalies among the rows that calibrate themselves, not far beyond the normal ones.
    planted = np.r_[normal, rng.uniform(16.0, 22.0, size=20)]
    truth = np.r_[np.zeros(3000, bool), np.ones(20, bool)]
    one_pass = benjamini_hochberg(TailModel.fit(planted).p_values(planted), 0.1)
    p, flags = self_calibrated_flags(planted, 0.1)
    assert flags.sum() > one_pass.sum() and (flags & one_pass).sum() == one_pass.sum()
    assert (flags & truth).sum() >= 18 and (flags & ~truth).sum() <= 2
    assert np.all(p[flags] <= 0.1)
    # A clean table the first pass flags nothing in is left exactly as one pass leaves it.
    clean_p, clean_flags = self_calibrated_flags(normal, 0.1)
    assert not clean_flags.any()
    np.testing.assert_array_equal(clean_p, TailModel.fit(normal).p_values(normal))
