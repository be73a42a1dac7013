"""nrad.encoding: each number's indicator (present, at its spike, missing) and the input checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nrad.encoding import PRESENT, SPIKE, as_pandas, drop_columns, indicator_labels
from nrad.errors import NradError
from nrad.preprocess import MISSING, OTHER
from nrad.table import fit_table


def test_indicator_codes_say_present_spike_or_missing() -> None:
    rng = np.random.default_rng(0)
    n = 300
    refund = np.where(rng.random(n) < 0.6, 0.0, rng.gamma(2.0, 30.0, n))  # a spike at 0
    refund[:5] = np.nan
    df = pd.DataFrame({"refund": refund, "amount": rng.normal(100, 10, n), "kind": rng.choice(list("ab"), n)})
    model = fit_table(df, random_state=0, max_epochs=2)
    labels = dict(zip(["refund", "amount"], indicator_labels(model.schema), strict=True))
    assert labels["refund"][:2] == ["present", "0"]
    assert labels["amount"] == ["present", OTHER, MISSING]
    prep = model.prepare(df)
    refund_codes = prep.codes[:, len(model.schema.categorical_names)]
    missing_code = len(labels["refund"]) - 1
    assert (refund_codes[:5] == missing_code).all()
    assert (refund_codes[5:][refund[5:] == 0] == SPIKE).all()
    assert (refund_codes[5:][refund[5:] > 0] == PRESENT).all()


def test_only_dataframes_are_accepted() -> None:
    with pytest.raises(NradError, match="pandas or polars DataFrame, got list"):
        as_pandas([[1, 2]])


def test_dropping_a_column_that_is_not_there_names_it() -> None:
    df = pd.DataFrame({"a": [1], "b": [2]})
    assert list(drop_columns(df, "a", [], "data").columns) == ["b"]
    with pytest.raises(NradError, match="data has no column named 'c'"):
        drop_columns(df, "a", ["c"], "data")
