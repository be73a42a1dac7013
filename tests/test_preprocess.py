"""Real tables: types, identifiers, dates, missing values, unseen levels, mismatches."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nrad.errors import NradError
from nrad.preprocess import (
    MIN_LEVEL_COUNT,
    TableSchema,
    encode,
    extra_columns,
    fit_schema,
    is_identifier,
    numeric_time_format,
    read_dates,
)
from nrad.table import fit_table


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
    # num NaN, text_num "n/a", small_cat None; "1,5" among whole numbers is read with a decimal comma
    assert enc.counts["missing_cells"] == 3 and enc.counts["parse_failures"] == 0
    assert enc.numeric[5, 1] == 1.5
    assert np.isnan(enc.numeric[3, 0]) and np.isnan(enc.numeric[4, 1])
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
    assert is_identifier(pd.Series(rng.permutation(np.arange(n)) * 3))  # shuffled, too dense to be measured
    assert not is_identifier(pd.Series(rng.choice(10**6, n, replace=False)))  # distinct by chance
    assert not is_identifier(pd.Series(pd.date_range("2024-01-01", periods=n, freq="h").astype(str)))
    assert not is_identifier(pd.Series([f"T{i}" for i in range(n - 1)] + ["T0"]))  # one repeat
    df = pd.DataFrame({"txn": [f"T{i}" for i in range(n)], "x": rng.normal(size=n)})
    schema = fit_schema(df)
    assert schema.identifiers == ["txn"] and schema.names == ["x"]


def test_a_column_of_distinct_numbers_with_a_few_unreadable_cells_is_no_identifier() -> None:
    # Amounts with cents are all distinct; one in six carries a word. Left out as a key, the user's
    # amounts would be gone with a note calling them an identifier: read as a category that says why.
    n = 120
    rng = np.random.default_rng(4)
    amounts = [f"{v:.2f}" if i % 6 else f"{v:.2f} approx" for i, v in enumerate(rng.lognormal(7, 1, n))]
    times = pd.date_range("2024-01-01", periods=n, freq="37min").strftime("%Y-%m-%d %H:%M")
    stamps = [t if i % 5 else f"{t} (corrected)" for i, t in enumerate(times)]
    keys = [str(v) if i % 9 else f"{v}-B" for i, v in enumerate(rng.permutation(np.arange(n)) + 1000)]
    assert not is_identifier(pd.Series(amounts, name="amount"))
    assert not is_identifier(pd.Series(stamps, name="stamp"))
    assert is_identifier(pd.Series(keys, name="ref"))  # integers in sequence where they read: a key
    schema = fit_schema(pd.DataFrame({"amount": amounts, "stamp": stamps, "x": rng.normal(size=n)}))
    assert schema.identifiers == []
    notes = {c.name: c.note for c in schema.columns}
    assert "amount: 83% of its values are numbers" in notes["amount"]
    assert "stamp: 100% of its values look like dates" in notes["stamp"]


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


@pytest.mark.parametrize("clock", ["", " %H:%M:%S"])
def test_year_first_dates_of_one_week_are_read_year_month_day(clock: str) -> None:
    # Every day of the first week of March is at most 12, so year-day-month parses them too; no
    # export writes that order, and read so the week became seven months (8 March as 3 August).
    when = pd.Timestamp("2024-03-04") + pd.to_timedelta(np.arange(300) * 1931, "s")  # 6.7 days
    text = when.strftime(f"%Y-%m-%d{clock}")
    schema = fit_schema(pd.DataFrame({"start": text, "x": np.arange(300.0) % 7}))
    plan = schema.columns[0]
    assert plan.kind == "datetime" and plan.format == f"%Y-%m-%d{clock}"
    low, high = plan.date_range
    assert pd.Timestamp(low).month == 3 and pd.Timestamp(high).month == 3


def test_addresses_and_four_part_versions_are_no_dates() -> None:
    # "10.1.3.45" holds "1.3.45", which reads like a day, a month and a year; the note said so and
    # told the user to write the addresses as dates.
    rng = np.random.default_rng(0)
    ips = [f"10.1.{a}.{b}" for a, b in rng.integers(0, 40, (300, 2))]
    versions = [f"2.{a}.{b}.1024" for a, b in rng.integers(0, 12, (300, 2))]
    schema = fit_schema(pd.DataFrame({"src_ip": ips, "version": versions, "x": np.arange(300.0) % 7}))
    for plan in schema.columns[:2]:
        assert plan.kind == "categorical" and "date" not in plan.note, plan.note


def test_column_mismatch_names_the_columns(messy: pd.DataFrame) -> None:
    schema = fit_schema(messy)
    with pytest.raises(NradError, match="lacks columns the model was trained on: num"):
        encode(schema, messy.drop(columns=["num"]).assign(other=1))
    assert extra_columns(schema, messy.assign(other=1)) == ["other"]  # read without it
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


@pytest.mark.parametrize(
    ("values", "want"),
    [
        (["1.234,56", "12,5", "3.000.000,00"], [1234.56, 12.5, 3_000_000.0]),
        (["$1,234.50", "(1,200.00)", "45.10"], [1234.5, -1200.0, 45.1]),
        (["12%", "7.5%", "0%"], [12.0, 7.5, 0.0]),
        (["1,234", "2,500", "10,000"], [1234.0, 2500.0, 10000.0]),
        (["3,5", "4,25", "10"], [3.5, 4.25, 10.0]),
        (["1 234,56 €", "12,00 €", "7 €"], [1234.56, 12.0, 7.0]),
        (["\u2212580.94", "136.02", "\u22120.5"], [-580.94, 136.02, -0.5]),
        (["1\u202f234,56", "\u221212,00", "7,5"], [1234.56, -12.0, 7.5]),
        (["1.234,56-", "12,00", "7,50 EUR-"], [-1234.56, 12.0, -7.5]),
        (["1,234.56-", "88.10", "5-"], [-1234.56, 88.1, -5.0]),
        (["1'234.50", "-3'000.00", "12.00"], [1234.5, -3000.0, 12.0]),
        (["CAD 1,234.50", "CAD 12.00", "CAD 7.25"], [1234.5, 12.0, 7.25]),
        (["R$ 1.234,56", "R$ 12,00", "R$ 7,50"], [1234.56, 12.0, 7.5]),
        (["Rs. 1,200", "₹950", "Rs 12"], [1200.0, 950.0, 12.0]),
    ],
)
def test_numbers_as_exports_write_them_are_read_as_numbers(values: list[str], want: list[float]) -> None:
    df = pd.DataFrame({"amount": values * 10, "x": np.arange(30.0) % 7})
    schema = fit_schema(df)
    assert schema.columns[0].kind == "numeric"
    np.testing.assert_allclose(encode(schema, df).numeric[:3, 0], want)


@pytest.mark.parametrize(
    ("values", "unit", "want"),
    [
        (["70.5 kg", "68 kg", "102.3 kg"], "kg", [70.5, 68.0, 102.3]),
        (["20,5 °C", "19,0 °C", "\u22123,5 °C"], "°C", [20.5, 19.0, -3.5]),
        (["300 MB", "4.5 GB", "120 MB"], "MB", [300.0, 4500.0, 120.0]),
        (["12ms", "1.5 s", "800 ms"], "ms", [12.0, 1500.0, 800.0]),
        (["1.2k", "950", "3.4M"], "", [1200.0, 950.0, 3.4e6]),
        (["$1,234.50 USD", "12 USD", "7.25 USD"], "", [1234.5, 12.0, 7.25]),
    ],
)
def test_numbers_written_with_their_unit_are_read_as_numbers_in_one_unit(
    values: list[str], unit: str, want: list[float]
) -> None:
    # A cell formatted 0.0 "kg" is exported as the text "70.5 kg": read as a category, a weight of
    # 750 kg was one more level, never far from anything.
    df = pd.DataFrame({"size": values * 10, "x": np.arange(30.0) % 7})
    plan = fit_schema(df).columns[0]
    assert plan.kind == "numeric" and plan.unit == unit
    assert not unit or f"read in {unit}" in plan.note
    np.testing.assert_allclose(encode(fit_schema(df), df).numeric[:3, 0], want)


def test_new_rows_in_another_unit_of_the_family_are_converted_and_an_unknown_unit_is_a_failure() -> None:
    df = pd.DataFrame({"weight": [f"{70 + i % 9} kg" for i in range(40)], "x": np.arange(40.0) % 7})
    schema = TableSchema.from_dict(json.loads(json.dumps(schema_dict := fit_schema(df).to_dict())))
    assert schema_dict["columns"][0]["unit"] == "kg"  # kept in the model file, as plain JSON
    new = pd.DataFrame({"weight": ["160 lb", "80 kg", "5 m", "750"], "x": [1.0, 2.0, 3.0, 4.0]})
    enc = encode(schema, new)
    np.testing.assert_allclose(enc.numeric[[0, 1, 3], 0], [160 * 0.45359237, 80.0, 750.0])
    assert np.isnan(enc.numeric[2, 0]) and enc.counts["parse_failures"] == 1


def test_numbers_in_units_of_different_kinds_are_a_category_that_says_why_and_codes_say_nothing() -> None:
    rng = np.random.default_rng(0)
    mixed = [f"{v:.1f} {u}" for v, u in zip(rng.uniform(1, 9, 60), rng.choice(["kg", "m"], 60), strict=True)]
    seats = [f"{r}{c}" for r, c in zip(rng.integers(1, 40, 60), rng.choice(list("ABCDEF"), 60), strict=True)]
    schema = fit_schema(pd.DataFrame({"load": mixed, "seat": seats, "x": np.arange(60.0) % 7}))
    load, seat = schema.columns[:2]
    assert load.kind == "categorical" and "one unit" in load.note
    assert "'kg'" in load.note and "'m'" in load.note
    assert seat.kind == "categorical" and seat.note == ""


def test_a_weight_ten_times_over_written_with_its_unit_is_flagged_and_named() -> None:
    rng = np.random.default_rng(2)
    height = rng.normal(172, 9, 400)
    weight = 0.9 * (height - 100) + rng.normal(0, 6, 400)
    df = pd.DataFrame({"height": [f"{v:.0f} cm" for v in height], "weight": [f"{v:.1f} kg" for v in weight],
                       "age": rng.integers(18, 80, 400).astype(float)})  # fmt: skip
    df.loc[5, "weight"] = f"{10 * weight[5]:.1f} kg"
    scored, _ = fit_table(df, random_state=0, max_epochs=20).score(df, fdr=0.1, in_sample=True)
    assert scored["flagged"].tolist() == [i == 5 for i in range(400)]
    reason = scored.loc[5, "reason"]
    assert reason.startswith("weight ") and "kg would fit the rest of this row" in reason


@pytest.mark.parametrize(
    ("values", "clock", "want"),
    [
        (["07:54", "21:16", "13:30"], "h:mm", [7.9, 21.0 + 16 / 60, 13.5]),
        (["09:24:08", "0:31:48", "26:00:36"], "h:mm:ss", [9 + 24 / 60 + 8 / 3600, 0.53, 26.01]),
        (["31:48", "4:30", "1:02:06"], "m:ss", [31.8, 4.5, 62.1]),
        (["12:33 PM", "1:49 pm", "12:15 AM"], "h:mm", [12.55, 13 + 49 / 60, 0.25]),
    ],
)
def test_times_on_a_clock_are_read_as_numbers(values: list[str], clock: str, want: list[float]) -> None:
    # Times of day and durations as spreadsheets export them ("0:31:48" from a cell formatted
    # [h]:mm:ss): read as categories, a call of nine hours was one more level.
    df = pd.DataFrame({"t": values * 10, "x": np.arange(30.0) % 7})
    plan = fit_schema(df).columns[0]
    assert plan.kind == "numeric" and plan.clock == clock and plan.note.startswith(f"t: times written {clock}")
    np.testing.assert_allclose(encode(fit_schema(df), df).numeric[:3, 0], want)
    assert not is_identifier(pd.Series(values + [f"{h}:{m:02d}" for h in range(7) for m in range(60)]))


def test_a_call_of_nine_hours_among_calls_of_minutes_is_flagged_and_shown_on_the_clock() -> None:
    rng = np.random.default_rng(4)
    seconds = rng.gamma(4.0, 400.0, 500).astype(int)
    duration = [f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" for s in seconds]
    duration[9] = "9:31:48"
    df = pd.DataFrame({"duration": duration, "agent": rng.choice(["a", "b", "c"], 500)})
    scored, _ = fit_table(df, random_state=0, max_epochs=20).score(df, fdr=0.1, in_sample=True)
    assert scored["flagged"].tolist() == [i == 9 for i in range(500)]
    assert re.match(r"duration '9:31:48' \(typical: 0:\d\d:\d\d to 0:\d\d:\d\d;", scored.loc[9, "reason"])


DAYS = pd.Timestamp("2023-01-01") + pd.to_timedelta(np.sort(np.random.default_rng(0).integers(0, 700, 200)), "D")
STAMPS = 1_700_000_000 + np.sort(np.random.default_rng(0).integers(0, 30 * 86400, 200))


@pytest.mark.parametrize(
    ("name", "values", "want"),
    [("created_at", STAMPS, "epoch:s"), ("eventTime", STAMPS * 1000, "epoch:ms"),
     ("ts", STAMPS * 1_000_000, "epoch:us"), ("order_date", DAYS.strftime("%Y%m%d").astype(int), "%Y%m%d"),
     ("InvoiceDate", (DAYS - pd.Timestamp("1899-12-30")).days.to_numpy(), "epoch:excel"),
     ("phone", STAMPS, None), ("amount", STAMPS, None), ("login_count", STAMPS, None),
     ("start_km", (DAYS - pd.Timestamp("1899-12-30")).days.to_numpy(), None)],
)  # fmt: skip
def test_numbers_that_count_time_are_dates_when_the_name_says_so(
    name: str, values: np.ndarray, want: str | None
) -> None:
    col = pd.Series(values, name=name)
    assert numeric_time_format(name, col) == want
    if want:  # a log's times rise row by row, as a key's values would: a time, no key
        plan = fit_schema(pd.DataFrame({name: col, "x": np.arange(200.0) % 7})).columns[0]
        dates_only = want in ("%Y%m%d", "epoch:excel")
        assert plan.name == name and plan.kind == "datetime" and plan.has_hour != dates_only
        assert plan.note.startswith(f"{name}: numbers read as ") and not is_identifier(col)
        first = (DAYS if dates_only else pd.to_datetime(STAMPS, unit="s"))[0]
        assert read_dates(plan, col).iloc[0] == first.tz_localize("UTC")


def test_a_later_month_of_a_log_with_unix_times_is_not_flagged_for_being_later() -> None:
    # Read as a number, the time grew past every training row: all 1,500 rows of the next month
    # were flagged ("created_at 1.71e+09 (typical: 1.7e+09)").
    rng = np.random.default_rng(1)

    def month(start: int) -> pd.DataFrame:
        return pd.DataFrame({"created_at": start + np.sort(rng.integers(0, 30 * 86400, 1500)),
                             "amount": np.round(np.exp(rng.normal(4, 0.5, 1500)), 2),
                             "merchant": rng.choice(list("abcdefgh"), 1500)})  # fmt: skip

    model = fit_table(month(1_700_000_000), random_state=0, max_epochs=20)
    assert model.schema.columns[0].format == "epoch:s"
    later = month(1_700_000_000 + 60 * 86400)
    later.loc[3, "amount"] = 40 * later.loc[3, "amount"]
    scored, _ = model.score(later, fdr=0.1)
    assert scored["flagged"].tolist() == [i == 3 for i in range(1500)]


def test_distinct_measurements_with_their_unit_are_no_identifier() -> None:
    values = np.random.default_rng(1).exponential(20, 200)
    latency = pd.Series([f"{v:.3f} ms" for v in values], name="latency")
    assert latency.is_unique and not is_identifier(latency)


def test_a_european_csvs_counts_with_points_between_thousands_are_read_as_integers(tmp_path: Path) -> None:
    """A semicolon file whose prices take a decimal comma writes its counts as 45.011 and 839:
    pandas reads 45.011 as a decimal, and the column as numbers a thousand apart.  Read as the
    file writes them, in one piece and in chunks; its dates and decimals with a point stay."""
    from nrad.io import iter_table, read_table

    rows = ["id;price;quantity;when;rate"]
    for i in range(40):
        quantity = f"{45 + i}.{11 * i:03d}" if i % 2 else str(800 + i)
        rows.append(f"{i};{i},50;{quantity};{1 + i % 28:02d}.05.2024;{i % 7}.5")
    path = tmp_path / "eu.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    for df in (read_table(path), pd.concat(list(iter_table(path, 15)))):
        assert df["quantity"].tolist()[:4] == [800, 46_011, 802, 48_033]
        assert df["when"].iloc[0] == "01.05.2024" and df["rate"].iloc[1] == 1.5
    # The same counts in a file of decimal points are decimals, as most files mean them.
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join(r.replace(",", ".") for r in rows) + "\n", encoding="utf-8")
    assert read_table(plain)["quantity"].iloc[1] == 46.011


def test_a_spreadsheets_errors_and_a_reports_dashes_are_missing_cells_of_a_number() -> None:
    # A ratio over 0 exports as "#DIV/0!": in 8% of the cells it made the column a category.
    ratio = [f"{v:.3f}" for v in np.random.default_rng(0).uniform(0, 2, 100)]
    ratio[::12] = ["#DIV/0!", "#VALUE!", "\u2014", "\u2013", "n.a.", "#REF!", "#NUM!", "#NAME?", "#NULL!"]
    df = pd.DataFrame({"ratio": ratio, "x": np.arange(100.0) % 7})
    schema = fit_schema(df)
    assert schema.columns[0].kind == "numeric"
    enc = encode(schema, df)
    assert np.isnan(enc.numeric[::12, 0]).all() and enc.counts["parse_failures"] == 0


def test_a_mostly_numeric_text_column_read_as_a_category_says_why() -> None:
    values = [str(v) for v in range(70)] + ["see note"] * 20 + ["n.a."] * 10
    schema = fit_schema(pd.DataFrame({"amount": values, "x": np.arange(100.0) % 3}))
    plan = schema.columns[0]
    assert plan.kind == "categorical" and "amount" in plan.note and "'see note'" in plan.note


@pytest.mark.parametrize("text", ["27.05.2023", "27-05-2023", "27/05/2023"])
def test_day_first_dates_are_read_as_dates(text: str) -> None:
    days = pd.date_range("2023-01-01", periods=60, freq="D")
    fmt = {".": "%d.%m.%Y", "-": "%d-%m-%Y", "/": "%d/%m/%Y"}[text[2]]
    schema = fit_schema(pd.DataFrame({"when": days.strftime(fmt), "x": np.arange(60.0) % 5}))
    assert schema.columns[0].kind == "datetime" and schema.columns[0].format == fmt


@pytest.mark.parametrize(
    ("fmt", "with_clock"),
    [("%m/%d/%Y %I:%M %p", True), ("%d/%m/%Y %H:%M", True), ("%m/%d/%y", False), ("%d-%b-%Y", False),
     ("%b %d, %Y", False), ("%d %B %Y", False)],
)
def test_dates_as_spreadsheets_export_them_are_read_as_dates(fmt: str, with_clock: bool) -> None:
    # A 12-hour clock and two-digit years: pandas' format guesser reads neither.
    when = pd.date_range("2023-01-01", periods=90, freq="D") + pd.to_timedelta(np.arange(90) % 24, "h")
    text = np.asarray(when.strftime(fmt), dtype=object)
    text[::23] = "n/a"  # a missing cell as exports write it
    schema = fit_schema(pd.DataFrame({"when": text, "x": np.arange(90.0) % 5}))
    plan = schema.columns[0]
    assert plan.kind == "datetime" and plan.format == fmt and plan.has_hour == with_clock


def test_a_column_of_dates_in_mixed_formats_is_a_category_that_says_why() -> None:
    days = pd.date_range("2023-01-01", periods=30, freq="D")
    text = np.where(np.arange(30) % 2, days.strftime("%Y-%m-%d"), days.strftime("%d/%m/%Y")).repeat(2)
    plan = fit_schema(pd.DataFrame({"when": text, "x": np.arange(60.0) % 5})).columns[0]
    assert plan.kind == "categorical" and "when" in plan.note and "look like dates" in plan.note


def test_every_column_that_looks_like_a_key_is_an_identifier() -> None:
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({
        "row": np.arange(n), "PID": rng.permutation(np.arange(n) * 7919 + 10**8),
        "order_id": rng.permutation(n) * 3 + 5000, "ticket no": rng.choice(10**9, n, replace=False),
        "reading": rng.choice(10**9, n, replace=False),
        "price": rng.normal(100, 10, n).round(2), "count": rng.poisson(3, n),
    })  # fmt: skip
    schema = fit_schema(df)
    assert set(schema.identifiers) == {"row", "PID", "order_id", "ticket no"}  # "reading": a measurement
    kept = fit_schema(df, features=["ticket no"])
    assert "ticket no" in kept.names and "ticket no" not in kept.identifiers


def test_a_key_that_repeats_is_an_identifier_and_names_no_row() -> None:
    """A patient's several samples share a sample code (645 codes in 699 rows of a real table): whole
    numbers named like a key, mostly distinct, measure nothing; read as a number, a code of 95,719
    among codes of a million made its row an outlier.  A code of few values stays a feature."""
    rng = np.random.default_rng(1)
    n = 300
    codes = rng.choice(10**6, 220, replace=False) + 10**5
    df = pd.DataFrame({
        "ID": rng.choice(codes, n).astype(float), "visit no": rng.integers(1, 4, n),
        "customer_id": [str(v) for v in rng.choice(codes, n)], "size": rng.normal(5, 1, n).round(2),
        "site code": rng.choice([101, 202, 303, 404], n),
    })  # fmt: skip
    df.loc[[3, 40], "ID"] = np.nan  # a key may be missing in a few rows
    schema = fit_schema(df)
    assert set(schema.identifiers) == {"ID", "customer_id"}
    assert {"visit no", "size", "site code"} <= set(schema.names)
    model = fit_table(df.assign(key=[f"r{i}" for i in range(n)]), random_state=0, max_epochs=2)
    assert model.id_column == "key"  # the one with a different value in every row names the rows
    no_unique = fit_table(df, random_state=0, max_epochs=2)
    assert no_unique.id_column is None


def test_whole_numbers_named_like_a_key_of_many_values_are_an_identifier_however_often_they_repeat() -> None:
    """A panel: 60 patients seen 25 times each, their id a whole number.  Read as a number, an id is
    a place on an axis that means nothing (on a real panel 108 of 124 flags were named by it).
    ``features`` keeps it a number; a key of few values (a site code) stays a feature."""
    rng = np.random.default_rng(4)
    patient = np.repeat(rng.choice(1000, 60, replace=False), 25)
    df = pd.DataFrame({"id": patient, "age": (patient % 50 + 20), "pain": rng.normal(5, 1, patient.size).round(1),
                       "site code": rng.choice([101, 202, 303, 404], patient.size)})  # fmt: skip
    schema = fit_schema(df)
    assert schema.identifiers == ["id"] and schema.names == ["age", "pain", "site code"]
    assert fit_schema(df.assign(id=df["id"].astype(str))).identifiers == ["id"]  # as text too
    assert fit_schema(df, features=["id"]).columns[0].kind == "numeric"
    assert fit_schema(df.rename(columns={"id": "dose"})).identifiers == []


def test_a_column_with_two_values_off_its_mode_is_a_category() -> None:
    """0 in 148 of 150 houses and 523 and 611 in two: two values say nothing of a spread, and read
    as a number each cost hundreds of nats or more.  Read as a category with a note, whether the cells
    are numbers or text as exports write them (matched as written when a table is scored)."""
    rng = np.random.default_rng(3)
    pool = np.zeros(150)
    pool[[7, 90]] = [523.0, 611.0]
    flag = np.zeros(150)
    flag[[3, 4, 5]] = 1.0  # three rows off the mode: a number, as before
    text = pd.Series(["0"] * 150, dtype=object)
    text[[10, 20]] = ["1.234,50", "2.010,00"]
    df = pd.DataFrame({"pool": pool, "flag": flag, "text": text, "area": rng.lognormal(7, 0.3, 150)})
    schema = fit_schema(df)
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds == {"pool": "categorical", "flag": "numeric", "text": "categorical", "area": "numeric"}
    pool_plan = schema.columns[schema.names.index("pool")]
    assert pool_plan.note.startswith("pool: 148 of its 150 values are 0, too few others")
    new = df.iloc[[11, 12]].copy()
    new["pool"] = new["pool"].astype(int)  # as a clean file with no missing cell reads it
    assert encode(schema, new).counts["unseen_levels"] == 0  # 0 is the level 0, as text or number


def test_a_column_with_two_values_off_its_mode_and_no_lattice_is_a_category() -> None:
    """0 in 147 of 150 rows, 260 in two and 2040 in one: no spread to read the three by (as a
    number, its MAD is 0 and every one of them sits tens of sd out).  A count's 0, 1 and 2 lie on
    a lattice and stay a number, as does a flag of two values."""
    rng = np.random.default_rng(4)
    misc = np.zeros(150)
    misc[[55, 63, 139]] = [2040.0, 260.0, 260.0]
    count = np.zeros(150)
    count[[1, 2, 3, 4]] = [1.0, 1.0, 2.0, 1.0]
    flag = np.zeros(150)
    flag[[5, 6, 7, 8]] = 1.0
    df = pd.DataFrame({"misc": misc, "count": count, "flag": flag, "area": rng.lognormal(7, 0.3, 150)})
    schema = fit_schema(df)
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds == {"misc": "categorical", "count": "numeric", "flag": "numeric", "area": "numeric"}
    note = schema.columns[schema.names.index("misc")].note
    assert note.startswith("misc: 147 of its 150 values are 0 and the rest take two values")


def test_a_column_of_two_common_values_and_one_typed_off_them_stays_a_number() -> None:
    """A term of 36 or 60 months (62% and 38% of the rows) and one of 120 typed in two rows: the
    two common values spread the column as a two-valued number's do, and read as a category it
    would leave the relations it takes part in (total = term x instalment)."""
    rng = np.random.default_rng(5)
    term = np.where(rng.random(3000) < 0.62, 36.0, 60.0)
    term[[10, 20]] = 120.0
    df = pd.DataFrame({"term": term, "amount": rng.lognormal(9, 0.5, 3000)})
    schema = fit_schema(df)
    assert schema.columns[0].kind == "numeric" and not schema.columns[0].note
    # the same column with the two off the mode in under a tenth of the rows is a category
    term[rng.random(3000) < 0.95] = 36.0
    term[[10, 20]] = 120.0
    assert fit_schema(df.assign(term=term)).columns[0].kind == "categorical"


def test_a_spike_is_a_category_and_the_rest_a_number() -> None:
    rng = np.random.default_rng(1)
    pool = np.where(rng.random(3000) < 0.99, 0.0, rng.uniform(150, 800, 3000).round())
    df = pd.DataFrame({"pool": pool, "area": rng.lognormal(7, 0.3, 3000)})
    schema = fit_schema(df)
    assert schema.columns[0].spike == 0.0 and schema.columns[1].spike is None
    enc = encode(schema, df)
    at = enc.at_spike[:, 0]
    assert at.sum() == (pool == 0).sum() and np.isnan(enc.numeric[at, 0]).all()
    assert enc.counts["missing_cells"] == 0  # a spike is not a missing cell


def test_values_off_a_spike_that_are_mostly_one_value_are_no_spread() -> None:
    # A credit score: 2 in two thirds of the rows, 1 in most others, 3 and 4 now and then.  The
    # scores off 2 are a second spike, not a spread: the column is a few values on a lattice.
    rng = np.random.default_rng(2)
    score = rng.choice([1.0, 2.0, 3.0, 4.0], size=3000, p=[0.31, 0.66, 0.02, 0.01])
    refund = np.where(rng.random(3000) < 0.6, 0.0, rng.gamma(2.0, 30.0, 3000).round(2))
    schema = fit_schema(pd.DataFrame({"score": score, "refund": refund}))
    assert schema.columns[0].kind == "numeric" and schema.columns[0].spike is None
    assert schema.columns[1].spike == 0.0  # a spike with a spread of other values stays one
    # However much of the column the spike holds: a count of returns, 0 in 93% of the rows and
    # mostly 1 otherwise, read with a spike at 0, had its rare 3s flagged on clean tables.
    returns = np.where(rng.random(3000) < 0.93, 0.0, 1.0 + rng.poisson(0.3, 3000))
    assert fit_schema(pd.DataFrame({"returns": returns})).columns[0].spike is None
    # Codes off any even lattice (payment terms in days) keep their spike: as one number, the
    # distances between codes mean nothing.
    terms = rng.choice([0.0, 14.0, 30.0, 60.0], size=3000, p=[0.55, 0.25, 0.1, 0.1])
    assert fit_schema(pd.DataFrame({"terms": terms})).columns[0].spike == 0.0


def test_a_date_outside_its_column_s_support_has_no_weekday() -> None:
    from nrad.preprocess import WEEKDAYS, ColumnPlan, date_bounds

    days = pd.date_range("2024-01-01", periods=300, freq="D").strftime("%Y-%m-%d").tolist()
    days[5], days[6] = "2204-01-06", "1900-01-01"  # a year typed a century off, a system's zero date
    schema = fit_schema(pd.DataFrame({"when": days, "x": np.arange(300.0) % 7}))
    plan = schema.columns[0]
    assert plan.kind == "datetime" and plan.date_range[0].startswith("2024-01-0")  # the two set no range
    assert encode(schema, pd.DataFrame({"when": days, "x": 1.0})).codes[4:8, 0].tolist() == [4, 7, 7, 0]
    later = pd.DataFrame({"when": ["2026-05-01", "2033-06-30", "2040-01-01", "1970-01-01", None], "x": 1.0})
    other = len(WEEKDAYS)
    assert encode(schema, later).codes[:, 0].tolist() == [4, 3, other, other, other + 1]
    # A model file written before the range was kept reads every date by its weekday.
    old = ColumnPlan(**{**plan.__dict__, "date_range": []})
    assert date_bounds(old) is None
    sunday = pd.Timestamp("2040-01-01").dayofweek
    assert encode(TableSchema([old, schema.columns[1]], {}, ["when", "x"]), later).codes[2, 0] == sunday


def test_a_rare_flag_is_a_category_and_a_common_one_a_number() -> None:
    rng = np.random.default_rng(2)
    n = 1000
    rare = np.zeros(n)
    rare[rng.choice(n, 9, replace=False)] = 1.0  # 0.9% of the rows
    common = np.zeros(n)
    common[rng.choice(n, 10, replace=False)] = 1.0  # 1%
    schema = fit_schema(pd.DataFrame({"rare": rare, "common": common, "x": rng.normal(size=n)}))
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds == {"rare": "categorical", "common": "numeric", "x": "numeric"}
    note = schema.columns[schema.names.index("rare")].note
    assert note == "rare: 991 of its 1000 values are 0, the other value too rare to read as a number; read as a category"


def test_a_datetime_after_another_is_read_as_the_time_since_it() -> None:
    rng = np.random.default_rng(4)
    start = pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 30 * 86400, 500), "s")
    minutes = rng.uniform(5, 40, 500)
    trips = pd.DataFrame(
        {
            "pickup": start.strftime("%Y-%m-%d %H:%M:%S"),
            "dropoff": (start + pd.to_timedelta(minutes, "min")).strftime("%Y-%m-%d %H:%M:%S"),
            "fare": 3 + 0.5 * minutes,
        }
    )
    schema = fit_schema(trips)
    pickup, dropoff = schema.columns[0], schema.columns[1]
    # The dropoff's hour is the pickup's plus the minutes between: left out; those minutes are read.
    assert (pickup.after, pickup.has_hour) == ("", True)
    assert (dropoff.after, dropoff.after_unit, dropoff.has_hour) == ("pickup", "hours", False)
    assert schema.numeric_names == ["pickup.hour", "dropoff - pickup (hours)", "fare"]
    late = trips.iloc[:3].copy()
    late.loc[1, "dropoff"] = None
    late.loc[2, ["pickup", "dropoff"]] = ["2024-03-09 23:50:00", "2024-03-09 23:20:00"]
    since = encode(schema, late).numeric[:, 1]
    assert np.isclose(since[0], minutes[0] / 60, atol=1 / 3600) and np.isnan(since[1]) and since[2] == -0.5
    # Stays of days: read in days where a column has no hour, and each column keeps its own hour
    # where the time between is long (a discharge at 3 a.m. is not the admission's hour plus days).
    admitted = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 300 * 24, 500), "h")
    stays = pd.DataFrame(
        {
            "admitted": admitted.strftime("%Y-%m-%d %H:%M"),
            "discharged": (admitted + pd.to_timedelta(rng.integers(24, 240, 500), "h")).strftime("%Y-%m-%d %H:%M"),
            "billed": (admitted + pd.to_timedelta(rng.integers(20, 60, 500), "D")).strftime("%Y-%m-%d"),
        }
    )
    plans = fit_schema(stays).columns
    assert [(p.after, p.after_unit, p.has_hour) for p in plans] == [
        ("", "", True),
        ("admitted", "hours", True),
        ("discharged", "days", False),
    ]
    # A third read after the dropoff is in hours too, though the dropoff's own hour is left out.
    paid = pd.to_datetime(trips["dropoff"]) + pd.to_timedelta(rng.uniform(1, 30, 500), "D")
    third = fit_schema(trips.assign(paid=paid.dt.strftime("%Y-%m-%d %H:%M:%S"))).columns[3]
    assert (third.after, third.after_unit, third.has_hour) == ("dropoff", "hours", True)
    # One datetime column, or a second that never differs from the first by a varying time, reads no
    # time since.
    assert fit_schema(trips[["pickup", "fare"]]).columns[0].after == ""
    same = trips.assign(copy=trips["pickup"])[["pickup", "copy"]]
    assert fit_schema(same).columns[1].after == ""
