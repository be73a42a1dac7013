"""The command line's jobs as library functions (nrad.workflow), and what a user gets back."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nrad
from nrad.synthetic import make_transactions
from nrad.workflow import detect, fit_model, score_model_file


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    frame = make_transactions(600, 6, random_state=3).frame
    path = tmp_path_factory.mktemp("w") / "t.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_scores_file_holds_the_input_columns_then_the_results(
    table: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    path, frame = table
    detect(path, out=tmp_path / "o.csv", fdr=0.1, max_epochs=3)
    out = pd.read_csv(tmp_path / "o.csv")
    assert list(out.columns) == [
        *frame.columns,
        "anomaly_score",
        "p_value",
        "flagged",
        "top_features",
        "reason",
    ]
    assert (out["txn_id"] == frame["txn_id"]).all()
    detect(path, out=tmp_path / "r.csv", fdr=0.1, max_epochs=3, with_input=False)
    assert list(pd.read_csv(tmp_path / "r.csv").columns)[:3] == ["txn_id", "anomaly_score", "p_value"]


def test_streamed_scores_file_holds_the_input_columns_too(
    table: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    path, frame = table
    fit_model(path, id_column="txn_id", max_epochs=3, model_path=tmp_path / "m.nrad")
    memory = score_model_file(tmp_path / "m.nrad", path, out=tmp_path / "a.csv", report=tmp_path / "a.html")
    streamed = score_model_file(tmp_path / "m.nrad", path, out=tmp_path / "b.csv", batch_rows=128)
    a, b = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    assert list(a.columns) == list(b.columns) and list(a.columns)[: frame.shape[1]] == list(frame.columns)
    np.testing.assert_array_equal(a["p_value"], b["p_value"])
    assert memory.n_rows is None and streamed.n_rows == len(frame)


def test_extra_columns_are_left_out_and_named(table: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    path, frame = table
    model = fit_model(path, id_column="txn_id", max_epochs=3)
    more = frame.assign(comment="x", label=0)
    from nrad.flags import FlagRule
    from nrad.workflow import score_data

    outcome = score_data(model, more, rule=FlagRule.of(0.1))
    assert any("left out: comment, label" in note for note in outcome.notes)


def test_score_keeps_the_index_so_join_lines_rows_up(table: tuple[Path, pd.DataFrame]) -> None:
    _, frame = table
    model = nrad.fit_table(frame, id_column="txn_id", max_epochs=3)
    sample = frame.sample(50, random_state=0)
    scored, _ = model.score(sample, fdr=0.1, explain="none")
    assert scored.index.equals(sample.index)
    joined = sample.join(scored.drop(columns=["txn_id"]))
    assert joined["anomaly_score"].notna().all()


def test_dir_of_the_package_shows_its_names() -> None:
    assert {"NRDE", "TableDetector", "fit_table", "__version__"} <= set(dir(nrad))
    assert not [name for name in dir(nrad) if name[0].isupper() and name not in nrad.__all__]  # no stray imports


def test_table_detector_decision_function_has_scikit_learns_sign(table: tuple[Path, pd.DataFrame]) -> None:
    _, frame = table
    det = nrad.TableDetector(max_epochs=3, fdr=0.1).fit(frame)
    values = det.decision_function(frame)
    p = det.p_values(frame)
    assert values.shape == (len(frame),)
    assert np.all((values < 0) == (p < 0.1))
    flagged = det.predict(frame) == -1
    assert np.all(values[flagged] < 0)  # every flagged row has a negative value
    np.testing.assert_allclose(det.decision_function(frame.iloc[:50]), values[:50])  # a row's own value


def test_a_scored_table_flagged_as_a_whole_says_which_column_changed(tmp_path: Path) -> None:
    # Fitted on cars of model years 2015 to 2023 and scoring the next year's: every row lies beyond the
    # training rows' years and is flagged.  The flags are each right and together useless; the run says
    # what changed, both ways the scores are read (streamed to --out, and in memory for a report).
    rng = np.random.default_rng(0)

    def listings(years: np.ndarray, n: int) -> pd.DataFrame:
        year = rng.choice(years, n)
        return pd.DataFrame({"id": np.arange(n), "model_year": year,
                             "price": np.round(20000 * np.exp(-0.1 * (2025 - year) + rng.normal(0, 0.2, n)), -1),
                             "make": rng.choice(list("abcde"), n)})  # fmt: skip

    listings(np.arange(2015, 2024), 600).to_csv(tmp_path / "a.csv", index=False)
    listings(np.array([2024]), 300).to_csv(tmp_path / "b.csv", index=False)
    model = tmp_path / "m.nrad"
    fit_model(tmp_path / "a.csv", id_column="id", max_epochs=20, model_path=model)
    for report in (None, tmp_path / "r.html"):
        outcome = score_model_file(model, tmp_path / "b.csv", out=tmp_path / "o.csv", report=report, fdr=0.1)
        (note,) = [n for n in outcome.notes if "rows flagged, the strongest mostly for" in n]
        assert re.match(r"\d+ of 300 rows flagged, the strongest mostly for model_year: ", note)
        assert note.endswith("(nrad fit ... --ignore model_year)")
    # Asked for a top share of the scores, the run flags that share: no such note.
    top = score_model_file(model, tmp_path / "b.csv", out=tmp_path / "o.csv", contamination=0.5)
    assert not any("the strongest mostly for" in n for n in top.notes)
    # The same table fitted on itself is one table, not two: no such note.
    alone = detect(tmp_path / "b.csv", out=tmp_path / "d.csv", id_column="id", fdr=0.1, max_epochs=20)
    assert not any("the strongest mostly for" in n for n in alone.notes)
