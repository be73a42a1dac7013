"""The planted families hold what their docstrings say: clean rows keep the relations, planted rows
break them, and the same seed gives the same table."""

from __future__ import annotations

import numpy as np

from nrad.synthetic import EMPLOYEE_KINDS, FLOW_KINDS, make_employees, make_network_flows


def test_flows_keep_their_bounds_except_where_planted() -> None:
    table = make_network_flows(3000, 24, random_state=5)
    df, truth = table.frame, table.truth
    planted = np.zeros(len(df), dtype=bool)
    planted[truth["row"].to_numpy()] = True
    clean = df[~planted]
    header = np.where(clean["protocol"] == "TCP", 40, 28)
    assert (clean["bytes"] >= header * clean["packets"]).all()
    assert (clean["bytes"] <= 1500 * clean["packets"]).all()
    assert clean["dst_port"].between(0, 65535).all() and clean["src_port"].between(0, 65535).all()
    assert (clean.loc[clean["protocol"] == "ICMP", "dst_port"] == 0).all()
    assert (clean["duration_ms"].dropna() >= 0).all()
    assert set(truth["kind"]) == set(FLOW_KINDS)
    for kind, column, broken in (
        ("bytes_in_kilobytes", "bytes", lambda row: row["bytes"] < 40 * row["packets"]),
        ("port_out_of_range", "dst_port", lambda row: row["dst_port"] > 65535),
        ("negative_duration", "duration_ms", lambda row: row["duration_ms"] < 0),
        ("epoch_timestamp", "start", lambda row: row["start"].startswith("1970")),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert all(broken(df.loc[r]) for r in rows), kind
        assert all(column in causes for causes in truth.loc[truth["kind"] == kind, "causes"])
    # the rare legitimate backups are not planted, and are far beyond the other flows' bytes
    assert len(table.rare) and not planted[table.rare].any()
    assert df.loc[table.rare, "bytes"].min() > df.loc[~planted, "bytes"].drop(table.rare).quantile(0.99)


def test_flows_are_the_same_for_the_same_seed() -> None:
    a, b = make_network_flows(500, 8, random_state=3), make_network_flows(500, 8, random_state=3)
    assert a.frame.equals(b.frame) and a.truth.equals(b.truth)
    assert not a.frame.equals(make_network_flows(500, 8, random_state=4).frame)


def test_employees_keep_their_relations_except_where_planted() -> None:
    table = make_employees(3000, 30, random_state=5)
    df, truth = table.frame, table.truth
    planted = np.zeros(len(df), dtype=bool)
    planted[truth["row"].to_numpy()] = True
    clean = df[~planted]
    titles = ["associate", "analyst", "senior", "lead", "manager", "director"]
    assert (clean["title"] == [titles[level - 1] for level in clean["job_level"]]).all()
    assert (clean["years_of_service"] == 2024 - clean["hire_year"]).all()
    assert (clean["hire_year"] >= clean["birth_year"] + 18).all()
    assert np.allclose(clean["monthly_pay"], clean["salary"] * clean["fte"] / 12, rtol=1e-4, atol=0.5)
    assert (clean["bonus"] < clean["salary"]).all() and (clean["sick_days"].dropna() >= 0).all()
    assert clean["rating"].dropna().between(1, 5).all() and (clean["hours_per_week"] <= 45).all()
    assert (clean.loc[clean["job_level"] >= 5, "overtime_hours"] == 0).all()
    assert set(truth["kind"]) == set(EMPLOYEE_KINDS)
    for kind, broken in (
        ("hired_as_child", lambda row: row["hire_year"] < row["birth_year"] + 18),
        ("bonus_over_salary", lambda row: row["bonus"] > row["salary"]),
        ("hours_extra_digit", lambda row: row["hours_per_week"] == 400),
        ("part_time_paid_full", lambda row: row["monthly_pay"] > row["salary"] * row["fte"] / 12 * 1.5),
        ("rating_off_scale", lambda row: row["rating"] in (0, 10)),
        ("negative_sick_days", lambda row: row["sick_days"] < 0),
        ("overtime_for_director", lambda row: row["job_level"] == 6 and row["overtime_hours"] >= 20),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert all(broken(df.loc[r]) for r in rows), kind
    # the interns are rare (10 hours at level 1) and not planted
    assert len(table.rare) and not planted[table.rare].any()
    assert (df.loc[table.rare, "hours_per_week"] == 10).all() and (df.loc[table.rare, "job_level"] == 1).all()


def test_employees_are_the_same_for_the_same_seed() -> None:
    a, b = make_employees(500, 10, random_state=3), make_employees(500, 10, random_state=3)
    assert a.frame.equals(b.frame) and a.truth.equals(b.truth)
    assert not a.frame.equals(make_employees(500, 10, random_state=4).frame)
