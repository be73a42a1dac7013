"""Scores, p-values, flags and explanations stay as they were on committed tables (golden outputs).

A change to the code's shape must not change what a user gets; a change meant to change it
re-writes the golden files (``python tests/data/make_golden.py``) in the same commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))

from make_golden import golden_runs  # noqa: E402


@pytest.fixture(scope="module")
def runs() -> dict[str, pd.DataFrame]:
    return golden_runs()


@pytest.mark.parametrize("name", ["transactions_detect", "transactions_new_rows", "wide_detect"])
def test_outputs_are_unchanged(runs: dict[str, pd.DataFrame], name: str) -> None:
    want = pd.read_csv(DATA / f"golden_{name}.csv", keep_default_na=False)
    got = runs[name].reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    # A score near 0 moves by 1e-11 nats on another processor (its floating-point sums run in
    # another order): scores agree to 1e-9 nats, p-values to 1e-8 of themselves however small (a
    # p-value of 1e-22 is read off a tail far out, where a score's last digits move its logarithm
    # by more than 1e-9).
    for col, rtol, atol in (("anomaly_score", 1e-9, 1e-9), ("p_value", 1e-8, 1e-300)):
        np.testing.assert_allclose(got[col].to_numpy(float), want[col].to_numpy(float), rtol=rtol, atol=atol)
    np.testing.assert_array_equal(got["flagged"].to_numpy(bool), want["flagged"].astype(str).eq("True").to_numpy())
    for col in ("top_features", "reason"):
        assert got[col].fillna("").astype(str).tolist() == want[col].astype(str).tolist(), col
