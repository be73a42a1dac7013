"""Hostile input, one row per case: every case is handled (documented) or refused clearly.

Each data case runs through the library (``nrad.workflow.detect``) and the
command line (``nrad detect``, in-process): a handled case gives finite
scores for every row; a refused case raises ``NradError`` in the library and
exits with code 2, a one-paragraph message and no traceback in the CLI.
docs/reliability.md lists the same cases.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nrad.errors import NradError
from nrad.flags import FlagRule
from nrad.workflow import detect, fit_model, score_data

FAST = {"max_epochs": 2}


def _csv(text: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "data.csv"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return path

    return make


def _frame(
    build: Callable[[np.random.Generator], pd.DataFrame], parquet: bool = False
) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        df = build(np.random.default_rng(0))
        path = folder / ("data.parquet" if parquet else "data.csv")
        if parquet:
            df.to_parquet(path)
        else:
            df.to_csv(path, index=False)
        return path

    return make


def _normal(n: int = 60, d: int = 3) -> Callable[[np.random.Generator], pd.DataFrame]:
    return lambda rng: pd.DataFrame(rng.normal(size=(n, d)), columns=[f"c{j}" for j in range(d)])


def _with(
    base: Callable, **edits: Callable[[pd.DataFrame], None]
) -> Callable[[np.random.Generator], pd.DataFrame]:
    def build(rng: np.random.Generator) -> pd.DataFrame:
        df = base(rng)
        for edit in edits.values():
            edit(df)
        return df

    return build


def _set(col: str, rows: list[int], values: list[object]) -> Callable[[pd.DataFrame], None]:
    def edit(df: pd.DataFrame) -> None:
        df[col] = df[col].astype(object)
        for r, v in zip(rows, values, strict=True):
            df.loc[r, col] = v

    return edit


# (case id, file maker, None if handled else a regex of the refusal message)
CASES: list[tuple[str, Callable[[Path], Path], str | None]] = [
    ("empty file", _csv(""), "is empty"),
    ("header only", _csv("a,b\n"), "has 0 rows"),
    ("one row", _csv("a,b\n1,2\n"), "needs at least 10 rows"),
    ("one column", _frame(_normal(60, 1)), None),
    ("all-NaN column", _frame(_with(_normal(), nan=lambda df: df.insert(0, "empty", np.nan))), None),
    ("NaN and +-inf", _frame(_with(_normal(), x=_set("c0", [1, 2, 3], [np.nan, np.inf, -np.inf]))), None),
    ("numbers with a few strings", _frame(_with(_normal(), x=_set("c1", [4, 5, 6], ["n/a", "?", "1,5"]))), None),
    ("mixed types", _frame(_with(_normal(), x=lambda df: df.insert(0, "mix", ["a", 1, 2.5, "b"] * 15))), None),
    ("duplicate column names", _csv("a,b,a\n" + "1,2,3\n" * 20), "duplicate column names: a"),
    ("duplicate rows", _frame(lambda rng: pd.DataFrame(np.tile(rng.normal(size=(5, 3)), (12, 1)))), None),
    ("1e300 and tiny variance", _frame(_with(_normal(), x=_set("c0", [0], [1e300]),
                                             t=lambda df: df.insert(0, "tiny", 1 + 1e-300 * np.arange(60)))), None),
    ("60 rows x 40 columns", _frame(_normal(60, 40)), None),
    ("60 rows x 300 columns", _frame(_normal(60, 300)), None),
    ("an id column, not named", _frame(_with(_normal(), i=lambda df: df.insert(0, "key", [f"k{i}" for i in range(60)]))),
     None),
    ("non-UTF-8 bytes", _csv(b"a,b\n" + b"1,2\n" * 5 + b"\xff\xfe,3\n"), "not UTF-8"),
    ("ragged rows", _csv("a,b\n1,2\n3,4,5\n6,7\n"), "not a well-formed CSV"),
    ("nested Parquet columns", _frame(lambda rng: pd.DataFrame({"a": rng.normal(size=20), "b": [[1, 2]] * 20}),
                                      parquet=True), "nested columns"),
    ("non-existent path", lambda folder: folder / "nope.csv", "does not exist"),
]  # fmt: skip


def _run_cli(args: list[str], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    from nrad.cli import main

    old = sys.argv
    sys.argv = ["nrad", *args]
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = old
    return code, capsys.readouterr().err


@pytest.mark.parametrize(("case", "make", "refusal"), CASES, ids=[c[0] for c in CASES])
def test_data_case(
    case: str, make: Callable, refusal: str | None, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = make(tmp_path)
    out = tmp_path / "scores.csv"
    if refusal is None:
        outcome = detect(path, out=out, contamination=0.1, **FAST)
        assert np.isfinite(outcome.scored["anomaly_score"]).all()
        assert len(pd.read_csv(out)) == len(outcome.scored)
    else:
        with pytest.raises(NradError, match=refusal):
            detect(path, out=out, contamination=0.1, **FAST)
        assert not out.exists()
    out.unlink(missing_ok=True)
    code, err = _run_cli(
        ["detect", str(path), "--out", str(out), "--contamination", "0.1", "--max-epochs", "2"], capsys
    )
    assert code == (0 if refusal is None else 2), err
    assert "Traceback" not in err
    if refusal is not None:
        assert pytest.importorskip("re").search(refusal, err), err


@pytest.fixture(scope="module")
def model_and_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, pd.DataFrame]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=80), "b": rng.normal(size=80), "cat": rng.choice(["x", "y"], 80)})
    path = tmp_path_factory.mktemp("m") / "train.csv"
    df.to_csv(path, index=False)
    return fit_model(path, max_epochs=2), df


SCORING_CASES = [
    ("missing column", lambda df: df.drop(columns=["b"]), "lacks columns the model was trained on: b"),
    ("extra column", lambda df: df.assign(z=1), None),
    ("reordered columns", lambda df: df[["cat", "b", "a"]], None),
    ("wrong dtype: text in a numeric column", lambda df: df.assign(a=["oops"] * len(df)), None),
    ("wrong dtype: numbers in a categorical column", lambda df: df.assign(cat=np.arange(len(df))), None),
]


@pytest.mark.parametrize(("case", "change", "refusal"), SCORING_CASES, ids=[c[0] for c in SCORING_CASES])
def test_scoring_case(case: str, change: Callable, refusal: str | None, model_and_data: tuple) -> None:
    model, df = model_and_data
    if refusal is None:
        outcome = score_data(model, change(df.copy()), rule=FlagRule.of(contamination=0.1))
        assert np.isfinite(outcome.scored["anomaly_score"]).all()
        if case in ("reordered columns", "extra column"):
            np.testing.assert_array_equal(
                outcome.scored["anomaly_score"],
                score_data(model, df, rule=FlagRule.of(contamination=0.1)).scored["anomaly_score"],
            )
            if case == "extra column":
                assert any("left out: z" in note for note in outcome.notes)
        else:
            assert sum(outcome.counts.values()) > 0  # repaired and counted
    else:
        with pytest.raises(NradError, match=refusal):
            score_data(model, change(df.copy()))


@pytest.mark.parametrize("flag", ["--fdr", "--contamination"])
@pytest.mark.parametrize("value", ["0", "1", "1.5", "-0.2"])
def test_levels_out_of_range(flag: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = _frame(_normal())(tmp_path)
    code, err = _run_cli(["detect", str(path), flag, value, "--max-epochs", "1"], capsys)
    assert code == 2 and "between 0 and 1" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("n_numeric", "rows", "width"), [(0, 500, 0), (4, 39, 0), (4, 60, 4), (200, 300, 128), (200, 150, 70)]
)
def test_flow_width_follows_the_rows_each_flow_gets(n_numeric: int, rows: int, width: int) -> None:
    from nrad.table import flow_width

    assert flow_width(n_numeric, rows) == width


def test_too_few_rows_are_refused_naming_the_rows_needed() -> None:
    from nrad.table import MIN_TABLE_ROWS, fit_table

    with pytest.raises(NradError, match=f"at least {MIN_TABLE_ROWS} rows"):
        fit_table(pd.DataFrame({"a": np.arange(5.0), "b": np.arange(5.0) ** 2}))
