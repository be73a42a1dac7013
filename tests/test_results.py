"""nrad.results: which rows are explained, in what order, and how results sit beside the input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nrad.errors import NradError
from nrad.results import (
    as_strong_as,
    beside_input,
    check_explain,
    nothing_flagged_note,
    rows_to_explain,
    strongest,
    strongest_first,
    with_row_numbers,
)


def scored() -> pd.DataFrame:
    return pd.DataFrame({"anomaly_score": [1.0, 9.0, 3.0, 5.0, 5.0], "p_value": [0.9, 0.2, 1e-6, 0.01, 0.01]})


def test_strongest_first_orders_by_p_value_then_score() -> None:
    # Row 2 has a middling score but the smallest p-value (one impossible cell): it leads.
    assert strongest_first(scored()).tolist() == [2, 3, 4, 1, 0]
    assert strongest(scored(), 2).index.tolist() == [2, 3]


def test_without_p_values_the_score_decides() -> None:
    assert strongest_first(scored().drop(columns="p_value")).tolist() == [1, 3, 4, 2, 0]


def test_as_strong_as_matches_the_order() -> None:
    frame = scored()
    order = strongest_first(frame)
    for k in range(1, len(frame) + 1):
        weakest = frame.iloc[order[k - 1]]
        chosen = np.flatnonzero(as_strong_as(frame, weakest))
        # Ties (rows 3 and 4 are equal) come in together.
        assert set(order[:k]) <= set(chosen) <= set(order[: k + 1])


def test_rows_to_explain_are_the_flagged_and_the_top_in_row_order() -> None:
    flags = np.array([False, True, False, False, True])
    assert rows_to_explain(flags, np.array([3, 1])).tolist() == [1, 3, 4]
    assert rows_to_explain(np.zeros(3, bool), np.zeros(0, int)).tolist() == []


def test_results_beside_input_rename_a_clashing_column() -> None:
    df = pd.DataFrame({"id": ["a", "b"], "p_value": [1, 2]}, index=[10, 11])
    results = pd.DataFrame({"id": ["a", "b"], "anomaly_score": [0.5, 0.7], "p_value": [0.3, 0.4]})
    out = beside_input(df, results, "id")
    assert list(out.columns) == ["id", "p_value (input)", "anomaly_score", "p_value"]
    assert out.index.tolist() == [10, 11]
    assert out["p_value"].tolist() == [0.3, 0.4]


def test_row_numbers_count_data_lines_from_one() -> None:
    assert with_row_numbers(scored().iloc[[2, 0]])["row"].tolist() == [3, 1]


def test_explain_mode_is_checked() -> None:
    assert check_explain("all") == "all"
    with pytest.raises(NradError, match="flagged, all, none"):
        check_explain("some")


def test_nothing_flagged_says_what_a_flag_needs_and_the_level_that_would_flag() -> None:
    from nrad.flags import FlagRule

    rule = FlagRule.of(fdr=0.1)
    p = np.array([0.004, 0.006, 0.5, 0.9])  # n = 40 rows: BH at 0.1 needs p <= 0.0025 for one flag
    (note,) = nothing_flagged_note(rule, p, 40, 0)
    assert "at most 0.0025" in note and "--fdr 0.12 would flag" in note  # min(40 * 0.004, 40 * 0.006 / 2)
    assert rule.flags(np.r_[p, np.ones(36)]).sum() == 0
    assert FlagRule.of(fdr=0.12).flags(np.r_[p, np.ones(36)]).sum() == 2
    assert nothing_flagged_note(rule, p, 40, 1) == []  # something was flagged
    assert nothing_flagged_note(FlagRule.of(contamination=0.1), p, 40, 0) == []
    (far,) = nothing_flagged_note(rule, np.array([0.5]), 4, 0)
    assert "too small" in far
