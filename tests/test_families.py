"""The planted families hold what their docstrings say: clean rows keep the relations, planted rows
break them, and the same seed gives the same table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nrad.synthetic import (
    AIRCRAFT,
    CAR_KINDS,
    CAR_MODELS,
    CO2_PER_LITRE,
    EMPLOYEE_KINDS,
    FLEETS,
    FLIGHT_KINDS,
    FLOW_KINDS,
    GRADE_KINDS,
    GRADE_RATES,
    HOUSEHOLD_KINDS,
    LOAN_KINDS,
    TAXI_ZONES,
    TRIP_KINDS,
    WEATHER_KINDS,
    make_car_listings,
    make_employees,
    make_exam_results,
    make_flights,
    make_households,
    make_loan_applications,
    make_network_flows,
    make_taxi_trips,
    make_weather,
)


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


def test_taxi_trips_keep_their_relations_except_where_planted() -> None:
    table = make_taxi_trips(3000, 33, random_state=5)
    df, truth = table.frame, table.truth
    planted = np.zeros(len(df), dtype=bool)
    planted[truth["row"].to_numpy()] = True
    clean = df[~planted]
    start, end = pd.to_datetime(clean["pickup_datetime"]), pd.to_datetime(clean["dropoff_datetime"])
    assert (end > start).all() and ((end - start).dt.total_seconds() < 4 * 3600).all()
    parts = clean[["fare_amount", "extra", "mta_tax", "tip_amount", "tolls_amount"]].sum(axis=1) + 1.0
    assert np.allclose(clean["total_amount"], parts, atol=0.011)
    assert (clean.loc[clean["payment_type"] == "cash", "tip_amount"] == 0).all()
    assert (clean.loc[clean["rate_code"] == "JFK", "fare_amount"] == 70).all()
    assert (clean["pickup_borough"] == [TAXI_ZONES[z] for z in clean["pickup_zone"]]).all()
    assert (clean["fare_amount"] > 0).all() and clean["tolls_amount"].isin([0.0, 6.94]).all()
    assert set(truth["kind"]) == set(TRIP_KINDS)
    for kind, broken in (
        ("dropoff_before_pickup", lambda row: row["dropoff_datetime"] < row["pickup_datetime"]),
        ("distance_extra_digits", lambda row: row["trip_distance"] > 40),
        ("zero_distance_full_fare", lambda row: row["trip_distance"] == 0 and row["fare_amount"] > 3),
        ("tip_on_cash", lambda row: row["payment_type"] == "cash" and row["tip_amount"] > 0),
        ("negative_fare", lambda row: row["fare_amount"] < 0 and row["total_amount"] < 0),
        ("pickup_year_typo", lambda row: row["pickup_datetime"].startswith("2042")),
        ("borough_for_other_zone", lambda row: row["pickup_borough"] != TAXI_ZONES[row["pickup_zone"]]),
        ("airport_rate_short_fare", lambda row: row["rate_code"] == "JFK" and row["fare_amount"] < 70),
        ("tolls_without_decimal", lambda row: row["tolls_amount"] == 694),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert all(broken(df.loc[r]) for r in rows), kind
    for r in truth.loc[truth["kind"] == "total_digits_swapped", "row"]:
        parts = df.loc[r, ["fare_amount", "extra", "mta_tax", "tip_amount", "tolls_amount"]].sum() + 1.0
        assert abs(df.loc[r, "total_amount"] - parts) > 5
    # the trips cancelled at the kerb are rare, not planted, and at the minimum fare with no distance
    assert len(table.rare) and not planted[table.rare].any()
    assert (df.loc[table.rare, "trip_distance"] == 0).all() and (df.loc[table.rare, "fare_amount"] == 3).all()


def test_exam_results_keep_their_relations_except_where_planted() -> None:
    table = make_exam_results(3000, 30, random_state=5)
    df, truth = table.frame, table.truth
    planted = np.zeros(len(df), dtype=bool)
    planted[truth["row"].to_numpy()] = True
    clean = df[~planted]
    scores = clean[["math", "reading", "science"]]
    assert scores.stack().between(0, 100).all()
    assert (clean["total"] == scores.sum(axis=1)).all()
    assert np.allclose(clean["average"], (clean["total"] / 3).round(1))
    bands = np.select([clean["average"] >= t for t in (85, 70, 55, 40)], ["A", "B", "C", "D"], "F")
    assert (clean["grade"] == bands).all() and ((clean["passed"] == "no") == (clean["grade"] == "F")).all()
    assert ((clean["scholarship"] == "yes") == (clean["average"] >= 90)).all()
    assert (clean["age"] - clean["class_year"]).isin([5, 6, 7]).all()
    attendance = clean["attendance_pct"].dropna()
    assert attendance.between(60, 100).all()
    assert (clean.loc[attendance.index, "absences"] == ((100 - attendance) / 100 * 180).round()).all()
    assert set(truth["kind"]) == set(GRADE_KINDS)
    for kind, broken in (
        ("score_over_maximum", lambda row: row["math"] > 100),
        ("score_extra_digit", lambda row: row["science"] > 100),
        ("total_off", lambda row: abs(row["total"] - row["math"] - row["reading"] - row["science"]) >= 10),
        ("age_for_other_year", lambda row: row["age"] >= 24),
        ("attendance_as_fraction", lambda row: row["attendance_pct"] < 1),
        ("negative_absences", lambda row: row["absences"] < 0),
        ("passed_flipped", lambda row: (row["passed"] == "no") != (row["grade"] == "F")),
        ("scholarship_flipped", lambda row: (row["scholarship"] == "yes") != (row["average"] >= 90)),
        ("exam_year_typo", lambda row: row["exam_date"].startswith("2014")),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert all(broken(df.loc[r]) for r in rows), kind
    # the repeaters are rare (their age the year plus 7) and not planted
    assert len(table.rare) and not planted[table.rare].any()
    assert (df.loc[table.rare, "age"] - df.loc[table.rare, "class_year"] == 7).all()


def test_trips_and_exams_are_the_same_for_the_same_seed() -> None:
    for make in (make_taxi_trips, make_exam_results):
        a, b = make(500, 10, random_state=3), make(500, 10, random_state=3)
        assert a.frame.equals(b.frame) and a.truth.equals(b.truth)
        assert not a.frame.equals(make(500, 10, random_state=4).frame)


def test_loans_keep_their_relations_except_where_planted() -> None:
    table = make_loan_applications(3000, 33, random_state=5)
    df, truth = table.frame, table.truth
    planted = table.labels.astype(bool)
    clean = df[~planted]
    r = clean["interest_rate"] / 1200
    instalment = (clean["loan_amount"] * r / (1 - (1 + r) ** -clean["term_months"])).round(2)
    assert np.allclose(clean["monthly_payment"], instalment, atol=0.006)
    assert np.allclose(clean["total_payable"], (clean["monthly_payment"] * clean["term_months"]).round(2))
    lowest = clean["grade"].map(GRADE_RATES)
    assert (clean["interest_rate"] - lowest).between(0, 2.5).all()
    assert clean["term_months"].isin([36, 60]).all() and (clean["loan_amount"] % 250 == 0).all()
    assert (clean["employment_years"] <= clean["age"] - 18).all()
    days = pd.to_datetime(clean["issue_date"]) - pd.to_datetime(clean["application_date"])
    assert days.dt.days.between(2, 21).all()
    assert set(truth["kind"]) == set(LOAN_KINDS)
    for kind, broken in (
        ("income_extra_zeros", lambda row: row["annual_income"] > 5e5),
        ("age_impossible", lambda row: not 21 <= row["age"] <= 85),
        ("employment_beyond_age", lambda row: row["employment_years"] > row["age"] - 14),
        ("issued_before_application", lambda row: row["issue_date"] < row["application_date"]),
        ("term_not_offered", lambda row: row["term_months"] not in (36, 60)),
        ("amount_in_cents", lambda row: row["loan_amount"] > 40000),
        ("negative_delinquencies", lambda row: row["delinquencies_2y"] < 0),
        ("score_out_of_range", lambda row: not 560 <= row["credit_score"] <= 850),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert len(rows) and all(broken(df.loc[r]) for r in rows), kind
    # the instalment of the other term: the total follows it, the annuity formula does not
    for r in truth.loc[truth["kind"] == "payment_for_other_term", "row"]:
        row = df.loc[r]
        rate = row["interest_rate"] / 1200
        right = row["loan_amount"] * rate / (1 - (1 + rate) ** -row["term_months"])
        assert abs(row["monthly_payment"] / right - 1) > 0.2
        assert row["total_payable"] == round(row["monthly_payment"] * row["term_months"], 2)
    # the retired borrowers are rare and not planted
    assert len(table.rare) and not planted[table.rare].any()
    assert (df.loc[table.rare, "age"] >= 66).all() and (df.loc[table.rare, "employment_years"] == 0).all()


def test_loans_are_the_same_for_the_same_seed() -> None:
    a, b = make_loan_applications(500, 11, random_state=3), make_loan_applications(500, 11, random_state=3)
    assert a.frame.equals(b.frame) and a.truth.equals(b.truth)
    assert not a.frame.equals(make_loan_applications(500, 11, random_state=4).frame)


def test_flights_keep_their_relations_except_where_planted() -> None:
    table = make_flights(3000, 36, random_state=5)
    df, truth = table.frame, table.truth
    planted = table.labels.astype(bool)
    clean, flown = df[~planted], df[~planted & (df["cancelled"] == 0)]
    route = clean.groupby(["origin", "dest"])["distance"].nunique()
    assert (route == 1).all()
    assert (clean.groupby("aircraft")["seats"].nunique() == 1).all()
    for carrier, fleet in FLEETS.items():
        assert set(clean.loc[clean["carrier"] == carrier, "aircraft"]) <= set(fleet)
    assert (flown["passengers"].dropna() <= flown.loc[flown["passengers"].notna(), "seats"]).all()
    assert (flown["elapsed_time"] > flown["air_time"] + flown["taxi_out"].fillna(0)).all()
    assert ((clean["sched_dep_time"] % 100 < 60) & (clean["sched_dep_time"] < 2400)).all()
    cancelled = clean[clean["cancelled"] == 1]
    assert len(cancelled) and cancelled[["dep_delay", "air_time", "fuel_kg"]].isna().all().all()
    assert set(truth["kind"]) == set(FLIGHT_KINDS)
    for kind, broken in (
        ("elapsed_below_air_time", lambda row: row["elapsed_time"] < row["air_time"]),
        ("arr_delay_sign_flipped", lambda row: row["arr_delay"] < -50 < 50 < row["dep_delay"]),
        ("passengers_over_seats", lambda row: row["passengers"] > row["seats"]),
        ("aircraft_not_in_fleet", lambda row: row["aircraft"] not in FLEETS[row["carrier"]]),
        ("taxi_out_negative", lambda row: row["taxi_out"] < 0),
        (
            "sched_dep_not_a_time",
            lambda row: row["sched_dep_time"] % 100 >= 60 or row["sched_dep_time"] >= 2400,
        ),
        ("cancelled_with_values", lambda row: row["cancelled"] == 1 and row["air_time"] > 0),
        ("year_typo", lambda row: row["date"].startswith("2042")),
        ("air_time_in_hours", lambda row: row["air_time"] < 10),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert len(rows) and all(broken(df.loc[r]) for r in rows), kind
    for r in truth.loc[truth["kind"] == "distance_of_other_route", "row"]:
        same = clean[(clean["origin"] == df.loc[r, "origin"]) & (clean["dest"] == df.loc[r, "dest"])]
        assert abs(df.loc[r, "distance"] - same["distance"].iloc[0]) >= 450
    for r in truth.loc[truth["kind"] == "seats_of_other_aircraft", "row"]:
        assert df.loc[r, "seats"] != AIRCRAFT[df.loc[r, "aircraft"]][0]
    # the cancelled flights and the long delays are rare and not planted
    assert len(table.rare) and not planted[table.rare].any()


def test_flights_are_the_same_for_the_same_seed() -> None:
    a, b = make_flights(500, 12, random_state=3), make_flights(500, 12, random_state=3)
    assert a.frame.equals(b.frame) and a.truth.equals(b.truth)
    assert not a.frame.equals(make_flights(500, 12, random_state=4).frame)


def test_flights_fly_the_same_routes_in_every_table() -> None:
    a, b = make_flights(3000, 0, random_state=1).frame, make_flights(3000, 0, random_state=2).frame
    both = pd.concat([a, b])
    assert (both.groupby(["origin", "dest"])["distance"].nunique() == 1).all()


def test_weather_keeps_its_relations_except_where_planted() -> None:
    table = make_weather(3000, 36, random_state=5)
    df, truth = table.frame, table.truth
    planted = table.labels.astype(bool)
    clean = df[~planted]
    assert (clean.groupby("station")[["elevation_m", "climate"]].nunique() == 1).all().all()
    assert (clean["temp_min_c"] <= clean["temp_max_c"]).all()
    assert clean["temp_mean_c"].between(clean["temp_min_c"], clean["temp_max_c"]).all()
    assert (clean["dew_point_c"] <= clean["temp_mean_c"]).all()
    assert (clean["humidity_pct"].dropna() <= 100).all() and (clean["humidity_pct"] == 100).mean() > 0.05
    gusts = clean["wind_gust_kmh"].notna()
    assert (clean.loc[gusts, "wind_gust_kmh"] > clean.loc[gusts, "wind_speed_kmh"]).all()
    assert (clean.loc[clean["snow_cm"] > 0, "temp_max_c"] < 1.5).all() and (clean["snow_cm"] > 0).any()
    assert (clean["precip_mm"] == 0).mean() > 0.5 and clean["sunshine_h"].isna().any()
    assert clean["date"].str[:4].isin(["2023", "2024"]).all()
    assert set(truth["kind"]) == set(WEATHER_KINDS)
    station_of = clean.groupby("station")["elevation_m"].first()
    for kind, broken in (
        ("min_above_max", lambda row: row["temp_min_c"] > row["temp_max_c"]),
        ("fahrenheit_max", lambda row: row["temp_max_c"] > row["temp_mean_c"] + 10),
        ("humidity_over_100", lambda row: row["humidity_pct"] > 100),
        ("gust_below_speed", lambda row: row["wind_gust_kmh"] < row["wind_speed_kmh"]),
        ("snow_in_heat", lambda row: row["snow_cm"] > 0 and row["temp_max_c"] > 20),
        ("sea_level_pressure", lambda row: row["elevation_m"] >= 60 and row["pressure_hpa"] > 990),
        ("precip_in_hundredths", lambda row: row["precip_mm"] >= 10),
        ("elevation_typo", lambda row: row["elevation_m"] != station_of[row["station"]]),
        ("sentinel_minus_99", lambda row: row["temp_min_c"] == -99),
        ("sunshine_over_day_length", lambda row: row["sunshine_h"] >= 18 and row["date"][5:7] in ("11", "12", "01", "02")),
        ("mean_outside_range", lambda row: row["temp_mean_c"] > row["temp_max_c"] + 2.5),
        ("date_in_future", lambda row: row["date"].startswith("2031")),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert len(rows) and all(broken(df.loc[r]) for r in rows), kind
    # storms, heat waves and snow days are rare and not planted
    assert len(table.rare) and not planted[table.rare].any()


def test_weather_is_the_same_for_the_same_seed_and_the_stations_in_every_table() -> None:
    a, b = make_weather(500, 12, random_state=3), make_weather(500, 12, random_state=3)
    assert a.frame.equals(b.frame) and a.truth.equals(b.truth)
    other = make_weather(3000, 0, random_state=4).frame
    assert not a.frame.equals(other)
    both = pd.concat([make_weather(3000, 0, random_state=3).frame, other])
    assert (both.groupby("station")["elevation_m"].nunique() == 1).all()


def test_households_keep_their_sums_and_bounds_except_where_planted() -> None:
    table = make_households(3000, 39, random_state=5)
    df, truth = table.frame, table.truth
    planted = table.labels.astype(bool)
    clean = df[~planted]
    assert df.shape[1] == 58
    assert (clean["n_adults"] + clean["n_children"] == clean["hh_size"]).all()
    assert (clean["n_employed"] <= clean["n_adults"]).all() and (clean["n_elderly"] <= clean["n_adults"]).all()
    incomes = ["wage_income", "business_income", "farm_income", "pension_income", "remittances", "transfers"]
    assert np.allclose(clean[incomes].sum(axis=1), clean["total_income"])
    spent = [c for c in df.columns if c.endswith("_exp") and c != "total_exp"]
    assert len(spent) == 8 and np.allclose(clean[spent].sum(axis=1), clean["total_exp"])
    assert (clean.groupby("district")["region"].nunique() == 1).all()
    assert clean.loc[clean["head_marital"] != "married", "spouse_age"].isna().all()
    assert (clean[["goats", "cattle", "chickens", "land_ha"]] >= 0).all().all()
    assert ((clean["goats"] == 0).mean() > 0.5) and ((clean["land_ha"] == 0).mean() > 0.4)
    assert clean["year_built"].dropna().between(1890, 2024).all() and clean["dist_clinic_km"].isna().any()
    assert clean["interview_date"].str.startswith("2025").all()
    assert set(truth["kind"]) == set(HOUSEHOLD_KINDS)
    for kind, broken in (
        ("year_built_200_off", lambda row: row["year_built"] > 2090),
        ("wage_100x", lambda row: row["wage_income"] > row["total_income"]),
        ("negative_goats", lambda row: row["goats"] < 0),
        ("members_not_summing", lambda row: row["n_adults"] + row["n_children"] > row["hh_size"]),
        ("head_age_extra_digit", lambda row: row["head_age"] >= 180),
        ("food_monthly_as_yearly", lambda row: row["food_exp"] > 0.5 * row["total_exp"]),
        ("area_in_square_feet", lambda row: row["floor_area_m2"] > 80 * row["rooms"]),
        ("survey_year_swapped", lambda row: row["interview_date"].startswith("2052")),
        ("spouse_age_without_spouse", lambda row: row["head_marital"] != "married" and row["spouse_age"] > 0),
        ("employed_over_adults", lambda row: row["n_employed"] > row["n_adults"]),
        ("district_of_other_region", lambda row: (clean.loc[clean["district"] == row["district"], "region"] != row["region"]).all()),
        ("clinic_sentinel_9999", lambda row: row["dist_clinic_km"] == 9999),
        ("land_in_square_metres", lambda row: row["land_ha"] >= 100 and row["cattle"] < 40),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert len(rows) and all(broken(df.loc[r]) for r in rows), kind
    # ranches and extended families are rare and not planted
    assert len(table.rare) and not planted[table.rare].any()


def test_households_are_the_same_for_the_same_seed_and_districts_stay_in_their_regions() -> None:
    a, b = make_households(500, 13, random_state=3), make_households(500, 13, random_state=3)
    assert a.frame.equals(b.frame) and a.truth.equals(b.truth)
    other = make_households(3000, 0, random_state=4).frame
    assert not a.frame.equals(other)
    both = pd.concat([make_households(3000, 0, random_state=3).frame, other])
    assert (both.groupby("district")[["region", "weight"]].nunique() == 1).all().all()


def test_car_listings_keep_their_relations_except_where_planted() -> None:
    table = make_car_listings(3000, 36, random_state=5)
    df, truth = table.frame, table.truth
    planted = table.labels.astype(bool)
    clean = df[~planted]
    assert df.shape[1] == 25 and df["listing_id"].is_unique
    model_make = {s[0]: m for m, specs in CAR_MODELS.items() for s in specs}
    assert (clean["model"].map(model_make) == clean["make"]).all()
    electric = clean["fuel"] == "electric"
    assert clean.loc[electric, ["engine_l", "consumption_l_100km"]].isna().all().all()
    assert (clean.loc[electric, "co2_g_km"] == 0).all() and (clean.loc[electric, "gearbox"] == "automatic").all()
    burnt = clean[~electric].dropna(subset=["consumption_l_100km"])
    per_litre = burnt["fuel"].map(CO2_PER_LITRE)
    assert np.allclose(burnt["co2_g_km"], (burnt["consumption_l_100km"] * per_litre).round())
    assert (clean.loc[clean["seller"] == "private", "warranty_months"] == 0).all()
    assert (clean["owners"].dropna() >= 1).all() and clean["year"].between(1960, 2025).all()
    assert (clean["price_eur"] >= 300).all() and (clean["price_eur"] % 50 == 0).all()
    assert (clean.groupby("body")["doors"].max() <= 5).all() and clean["seats"].between(2, 9).all()
    assert set(truth["kind"]) == set(CAR_KINDS)
    for kind, broken in (
        ("mileage_extra_zero", lambda row: row["mileage_km"] >= 10 * 14000 * 0.3 * max(2025 - row["year"], 1)),
        ("price_missing_digit", lambda row: row["price_eur"] % 50 != 0 or row["price_eur"] < 300),
        ("year_typo", lambda row: not 1960 <= row["year"] <= 2025),
        ("engine_in_cc", lambda row: row["engine_l"] > 500),
        ("electric_with_engine", lambda row: row["fuel"] == "electric" and row["engine_l"] > 0),
        ("co2_off_consumption", lambda row: row["co2_g_km"] > 1.3 * 23.1 * row["consumption_l_100km"] * 0.99),
        ("negative_owners", lambda row: row["owners"] < 0),
        ("seats_for_other_body", lambda row: row["seats"] == 1 or (row["seats"] == 9 and row["body"] != "van")),
        ("model_of_other_make", lambda row: model_make[row["model"]] != row["make"]),
        ("price_placeholder", lambda row: row["price_eur"] in (1.0, 999999.0)),
        ("odometer_rolled_back", lambda row: row["mileage_km"] < 100 and 2025 - row["year"] >= 7),
        ("warranty_on_private_sale", lambda row: row["seller"] == "private" and row["warranty_months"] > 0),
    ):
        rows = truth.loc[truth["kind"] == kind, "row"]
        assert len(rows) and all(broken(df.loc[r]) for r in rows), kind
    # classics, Ferraris and the taxis' mileages are rare and not planted
    assert len(table.rare) and not planted[table.rare].any()
    again = make_car_listings(3000, 36, random_state=5)
    assert again.frame.equals(df) and again.truth.equals(truth)
