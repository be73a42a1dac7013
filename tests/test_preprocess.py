"""Real tables: types, identifiers, dates, missing values, unseen levels, mismatches."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nrad.errors import NradError
from nrad.preprocess import MIN_LEVEL_COUNT, TableSchema, encode, fit_schema, is_identifier


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
            "when": pd.date_range("2024-01-01", periods=n, freq="7h").astype(str),
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
        "num": "numeric", "text_num": "numeric", "flag": "categorical", "small_cat": "categorical",
        "big_cat": "categorical", "when": "datetime",
    }  # fmt: skip
    assert schema.dropped == {"constant": "constant", "empty": "all values missing"}
    assert schema.numeric_names == ["num", "text_num", "when.hour"]
    assert schema.categorical_names == ["flag", "small_cat", "big_cat", "when.weekday"]


def test_encoding_repairs_and_counts(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    enc = encode(schema, messy)
    assert enc.numeric.shape == (200, 3) and enc.codes.shape == (200, 4)
    # num NaN, text_num "n/a" and "1,5", small_cat None
    assert enc.counts["missing_cells"] == 4 and enc.counts["parse_failures"] == 1
    assert np.isnan(enc.numeric[3, 0]) and np.isnan(enc.numeric[4, 1]) and np.isnan(enc.numeric[5, 1])
    labels = schema.categorical_labels[1]
    assert labels[enc.codes[6, 1]] == "<missing>"


def test_unseen_and_rare_levels_share_the_other_code(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    new = messy.head(5).copy()
    new["small_cat"] = ["a", "zzz", "b", "zzz", "c"]
    new["big_cat"] = "never-seen"
    enc = encode(schema, new)
    assert enc.counts["unseen_levels"] == 2 + 5
    small = schema.categorical_labels[1]
    assert [small[c] for c in enc.codes[:, 1]] == ["a", "<other>", "b", "<other>", "c"]
    # A level seen once in training is not kept (its value is not stored either).
    once = messy.copy()
    once.loc[0, "small_cat"] = "singleton"
    assert "singleton" not in fit_schema(once).columns[3].levels and MIN_LEVEL_COUNT == 2


def test_identifiers_are_found_and_measurements_are_not() -> None:
    n = 100
    rng = np.random.default_rng(1)
    assert is_identifier(pd.Series([f"T{i:05d}" for i in range(n)]))
    assert is_identifier(pd.Series(rng.permutation(np.arange(5000, 5000 + n))))  # integers in sequence
    assert is_identifier(pd.Series(np.arange(n) * 7 + 3))  # rising row by row
    assert is_identifier(pd.Series([str(v) for v in rng.permutation(np.arange(n))]))  # numbers as text
    assert not is_identifier(pd.Series(rng.normal(size=n)))  # all distinct, but measurements
    assert not is_identifier(pd.Series(rng.permutation(np.arange(n)) * 3))  # distinct, not in sequence
    assert not is_identifier(pd.Series(pd.date_range("2024-01-01", periods=n, freq="h").astype(str)))
    assert not is_identifier(pd.Series([f"T{i}" for i in range(n - 1)] + ["T0"]))  # one repeat
    df = pd.DataFrame({"txn": [f"T{i}" for i in range(n)], "x": rng.normal(size=n)})
    schema = fit_schema(df)
    assert schema.identifiers == ["txn"] and schema.names == ["x"]


def test_day_first_dates_are_read_the_same_in_every_table() -> None:
    # Both tables start with a date that also reads month-first; only the format decided at fit time
    # keeps 05/03 meaning 5 March in the second table.
    days = pd.date_range("2023-01-01", periods=300, freq="D")
    train = pd.DataFrame({"when": days.strftime("%d/%m/%Y"), "x": np.arange(300.0) % 7})
    schema = fit_schema(train)
    assert schema.columns[0].kind == "datetime" and schema.columns[0].format == "%d/%m/%Y"
    later = pd.DataFrame({"when": ["05/03/2023", "27/05/2023"], "x": [1.0, 2.0]})
    enc = encode(schema, later)
    assert enc.counts["missing_cells"] == 0
    weekday = enc.codes[:, schema.categorical_names.index("when.weekday")]
    assert list(weekday) == [pd.Timestamp("2023-03-05").day_of_week, pd.Timestamp("2023-05-27").day_of_week]


def test_column_mismatch_names_the_columns(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    with pytest.raises(NradError, match="missing columns: num.*extra columns: other"):
        encode(schema, messy.drop(columns=["num"]).assign(other=1))
    a, b = encode(schema, messy), encode(schema, messy[messy.columns[::-1]])
    np.testing.assert_array_equal(a.numeric, b.numeric)  # column order does not matter
    np.testing.assert_array_equal(a.codes, b.codes)


def test_schema_round_trips_through_json(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    again = TableSchema.from_dict(json.loads(json.dumps(schema.to_dict())))
    np.testing.assert_array_equal(encode(schema, messy).numeric, encode(again, messy).numeric)
    np.testing.assert_array_equal(encode(schema, messy).codes, encode(again, messy).codes)


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
