"""Real tables: types, missing values, dropped columns, unseen levels, mismatches."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nrad.errors import NradError
from nrad.preprocess import MAX_ONE_HOT, MISSING_COUNT, TableSchema, fit_schema, transform_table


@pytest.fixture()
def messy() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame(
        {
            "num": rng.normal(size=n),
            "text_num": [str(v) for v in rng.integers(0, 100, n)],
            "flag": rng.random(n) < 0.3,
            "small_cat": rng.choice(["a", "b", "c"], n),
            "big_cat": [f"level{int(v)}" for v in rng.integers(0, 40, n)],
            "when": pd.date_range("2024-01-01", periods=n, freq="6h").astype(str),
            "constant": 7,
            "empty": np.nan,
        }
    )
    df.loc[3, "num"] = np.nan
    df.loc[4, "text_num"] = "n/a"
    df.loc[5, "text_num"] = "1,5"
    df.loc[6, "small_cat"] = None
    return df


def test_schema_decisions(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds == {
        "num": "numeric", "text_num": "numeric", "flag": "boolean", "small_cat": "onehot",
        "big_cat": "frequency", "when": "datetime",
    }  # fmt: skip
    assert schema.dropped == {"constant": "constant", "empty": "all values missing"}
    assert schema.feature_names[-1] == MISSING_COUNT


def test_transform_repairs_and_counts(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    X, counts = transform_table(schema, messy)
    assert X.shape == (200, len(schema.feature_names)) and np.isfinite(X).all()
    # num NaN, text_num "n/a" and "1,5", small_cat None
    assert counts["missing_cells"] == 4 and counts["parse_failures"] == 1
    assert X[3, -1] == 1 and X[0, -1] == 0


def test_unseen_levels_are_counted_not_fatal(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    new = messy.head(5).copy()
    new["small_cat"] = ["a", "zzz", "b", "zzz", "c"]
    new["big_cat"] = "never-seen"
    X, counts = transform_table(schema, new)
    assert counts["unseen_levels"] == 2 + 5
    onehot = [i for i, n in enumerate(schema.feature_names) if n.startswith("small_cat=")]
    assert X[1, onehot].sum() == 0


def test_column_mismatch_names_the_columns(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    with pytest.raises(NradError, match="missing columns: num.*extra columns: other"):
        transform_table(schema, messy.drop(columns=["num"]).assign(other=1))
    X1, _ = transform_table(schema, messy)
    X2, _ = transform_table(schema, messy[messy.columns[::-1]])
    np.testing.assert_array_equal(X1, X2)  # column order does not matter


def test_schema_round_trips_through_json(messy: pd.DataFrame) -> None:
    import json

    schema = fit_schema(messy)
    again = TableSchema.from_dict(json.loads(json.dumps(schema.to_dict())))
    np.testing.assert_array_equal(transform_table(schema, messy)[0], transform_table(again, messy)[0])


def test_one_hot_limit_is_documented_constant() -> None:
    assert MAX_ONE_HOT == 10


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame(), "no columns"),
        (pd.DataFrame({"a": []}), "no rows"),
        (pd.DataFrame([[1, 2]], columns=["a", "a"]), "duplicate column names: a"),
        (pd.DataFrame({"a": [1, 1], "b": [np.nan, np.nan]}), "no usable column"),
    ],
)
def test_bad_tables(frame: pd.DataFrame, message: str) -> None:
    with pytest.raises(NradError, match=message):
        fit_schema(frame)
