"""Explanations rank the features where an anomaly was planted first."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nrad import NRDE
from nrad.preprocess import MISSING_COUNT
from nrad.table import fit_table


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


def test_missing_count_is_credited_to_the_missing_columns() -> None:
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    df["kind"] = rng.choice(["x", "y"], size=300)
    df.loc[rng.choice(300, 30, replace=False), "b"] = np.nan
    df.loc[[5, 7], "kind"] = None
    df.loc[7, "c"] = np.nan
    model = fit_table(df, max_epochs=5)
    X, _, missing = model.features_with_missing(df)
    assert missing.shape == (300, 4) and missing.sum() == 33
    raw = model.contributions(X)  # __n_missing__ kept as its own column
    credited = model.contributions(X, missing)
    assert MISSING_COUNT in raw.columns and MISSING_COUNT not in credited.columns
    complete = missing.sum(axis=1) == 0
    # The reference row has no missing cells, so the count adds nothing to a complete row ...
    np.testing.assert_array_equal(raw.loc[complete, MISSING_COUNT], 0.0)
    # ... and a row's count contribution goes to its missing columns in equal shares.
    share = raw[MISSING_COUNT] / np.maximum(missing.sum(axis=1), 1)
    for k, name in enumerate(["a", "b", "c", "kind"]):
        np.testing.assert_allclose(credited[name], raw[name] + missing[:, k] * share)
    np.testing.assert_allclose(credited.sum(axis=1), raw.sum(axis=1))
    scored, _ = model.score_rows(df)
    assert not scored["top_features"].str.contains(MISSING_COUNT).any()


def test_table_explain_gives_every_column_for_every_row() -> None:
    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.normal(size=(200, 2)), columns=["a", "b"])
    df["id"] = [f"r{i}" for i in range(200)]
    df.loc[[1, 2], "a"] = np.nan
    model = fit_table(df, id_column="id", max_epochs=5)
    got = model.explain(df.iloc[:5])
    assert list(got.columns) == ["id", "a", "b"] and got["id"].tolist() == ["r0", "r1", "r2", "r3", "r4"]
    # Each row adds up to its score minus the reference's (training mean, no missing cells).
    reference = model.detector.mean_.copy()
    reference[-1] = 0.0
    X, _ = model.features(df.iloc[:5])
    gap = model.detector.anomaly_score(X) - model.detector.anomaly_score(reference[None])[0]
    np.testing.assert_allclose(got[["a", "b"]].sum(axis=1), gap, rtol=1e-2, atol=1e-2)
    scored, _ = model.score_rows(df.iloc[:5])
    first = scored["top_features"].str.split(":").str[0]
    assert first.tolist() == got[["a", "b"]].abs().idxmax(axis=1).tolist()
