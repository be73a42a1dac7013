"""Synthetic tables built from known sources, to check NRDE's claims.

``x = g_true(s_P, s_N)``: a few pure sources drive a smooth nonlinear
manifold through every feature; weak noise sources move the rows off that
manifold along fixed orthogonal directions.  Anomalies differ from normal
rows only in their pure sources, so their true pure-data density is known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class SourceData:
    """A synthetic table with its ground truth."""

    X: np.ndarray
    y: np.ndarray
    pure_sources: np.ndarray
    noise_sources: np.ndarray
    pure_log_density: np.ndarray


def make_source_data(
    n_normal: int = 2000,
    n_anomalies: int = 100,
    n_pure: int = 2,
    n_noise: int = 6,
    noise_scale: float = 0.05,
    anomaly_shift: float = 2.5,
    random_state: int = 0,
) -> SourceData:
    """Rows ``x = A warp(s_P) + noise_scale * B s_N``, ``B`` orthonormal and orthogonal to ``A``.

    Normal rows have ``s_P ~ N(0, I)``; anomalies have ``s_P = u * r`` with a
    random direction ``u`` and radius ``r = anomaly_shift + |N(0, 0.5)|``, so
    they lie in the tails of the pure sources while their noise sources stay
    standard normal.  ``pure_log_density`` is ``sum log N(s_P)`` (the
    density of the pure sources; monotone in the pure-data density up to the
    smooth warp's Jacobian).
    """
    rng = np.random.default_rng(random_state)
    d = n_pure + n_noise
    mix_pure = rng.normal(size=(d, n_pure))
    # Unit-variance features (what standardization sees), and noise along an
    # orthonormal basis of the complement of the pure directions, so the
    # noise is isotropic in the standardized space NRDE works in.
    mix_pure /= np.sqrt((mix_pure**2).sum(axis=1, keepdims=True) * 1.1)
    q, _ = np.linalg.qr(np.hstack([mix_pure, rng.normal(size=(d, n_noise))]))
    mix_noise = q[:, n_pure:]
    s_normal = rng.normal(size=(n_normal, n_pure))
    u = rng.normal(size=(n_anomalies, n_pure))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    s_anom = u * (anomaly_shift + np.abs(rng.normal(scale=0.5, size=(n_anomalies, 1))))
    s_pure = np.vstack([s_normal, s_anom])
    s_noise = rng.normal(size=(n_normal + n_anomalies, n_noise))
    # Smooth, invertible warp of the pure sources: a curved manifold, not a plane.
    warped = s_pure + 0.3 * np.tanh(s_pure[:, ::-1])
    X = warped @ mix_pure.T + noise_scale * s_noise @ mix_noise.T
    y = np.r_[np.zeros(n_normal, dtype=int), np.ones(n_anomalies, dtype=int)]
    log_density = -0.5 * (s_pure**2).sum(axis=1) - 0.5 * n_pure * np.log(2 * np.pi)
    return SourceData(X, y, np.arange(n_pure), np.arange(n_pure, d), log_density)


# -- planted-truth tables ------------------------------------------------------
#
# Realistic mixed tables (ids, datetime text, categories of many levels,
# heavy tails, relations between columns, missing cells) with anomalies of
# known kind planted in known rows, each caused by known columns.  They are
# what the explanation and flag checks (tests, benchmarks/main_job.py,
# docs/usage.md) measure against.


@dataclass(frozen=True)
class PlantedTable:
    """A table and which of its rows were planted, of what kind, caused by which columns."""

    frame: Any
    #: One row per planted anomaly: ``row`` (0-based position), ``kind``, ``causes`` (tuple of columns).
    truth: Any
    #: Rows whose only oddity is a rare but legitimate value (not anomalies; None: not tracked).
    rare: Any = None

    @property
    def labels(self) -> np.ndarray:
        y = np.zeros(len(self.frame), dtype=int)
        y[self.truth["row"].to_numpy(dtype=int)] = 1
        return y


_CATEGORIES = {
    # name: (log-amount base, mean extra quantity)
    "grocery": (3.4, 3.0),
    "fuel": (3.9, 0.2),
    "electronics": (5.6, 0.4),
    "travel": (6.0, 0.8),
    "restaurant": (3.3, 1.5),
    "pharmacy": (3.0, 1.0),
    "clothing": (4.3, 1.2),
    "online": (4.0, 1.0),
}


def make_transactions(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Card transactions: id, timestamp text, 50 merchants, their category, channel,
    amount (log-normal around the merchant's own level), quantity, customer age,
    account balance (rising with age), country; missing cells in four columns.

    Planted kinds (rotated over ``kinds``) and the columns that cause them:
    ``impossible_age`` (0, 130-160 or 999: customer_age), ``huge_amount`` (30x
    the merchant's level: amount), ``huge_quantity`` (40x: quantity),
    ``age_balance`` (a young customer with an old customer's balance or the
    reverse: customer_age, account_balance), ``unseen_merchant`` (a merchant
    never in any table and 8x a merchant's usual amount: merchant, amount),
    ``amount_for_merchant`` (8x the merchant's level, inside the overall
    range: amount, merchant), ``category_mismatch`` (a category other than
    the merchant's own: merchant_category, merchant).
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    # The merchants are the same in every table (fixed seed): a clean table
    # and a table to score must share them.
    world = np.random.default_rng(12345)
    names = list(_CATEGORIES)
    merchants = np.array([f"M{i:02d}" for i in range(1, 51)])
    m_cat = world.choice(names, size=50)
    m_level = np.array([_CATEGORIES[c][0] for c in m_cat]) + world.normal(0, 0.3, 50)
    weights = 1.0 / np.arange(1, 51) ** 1.1
    m = rng.choice(50, size=n_rows, p=weights / weights.sum())
    daytime = np.where(rng.random(n_rows) < 0.6, rng.normal(13, 2.5, n_rows), rng.normal(19, 2, n_rows))
    hours = np.clip(daytime, 6, 23.9)
    days = rng.integers(0, 90, n_rows)
    when = pd.Timestamp("2024-01-01") + pd.to_timedelta(days, "D") + pd.to_timedelta(hours * 3600, "s")
    channel = rng.choice(["pos", "web", "app"], size=n_rows, p=[0.55, 0.3, 0.15])
    channel = np.where((m_cat[m] == "online") & (channel == "pos"), "web", channel)
    amount = np.exp(m_level[m] + rng.normal(0, 0.45, n_rows))
    quantity = 1 + rng.poisson(np.array([_CATEGORIES[c][1] for c in m_cat])[m])
    age = np.clip(rng.normal(44, 14, n_rows), 18, 90).round()
    balance = np.exp(7.0 + 0.045 * (age - 44) + rng.normal(0, 0.3, n_rows))
    country = rng.choice(
        ["DE", "FR", "NL", "BE", "AT", "PL"], size=n_rows, p=[0.4, 0.2, 0.15, 0.1, 0.1, 0.05]
    )
    df = pd.DataFrame(
        {
            "txn_id": [f"TX{random_state:03d}{i:06d}" for i in range(n_rows)],
            "timestamp": when.strftime("%Y-%m-%d %H:%M:%S"),
            "merchant": merchants[m].astype(object),
            "merchant_category": m_cat[m].astype(object),
            "channel": channel,
            "amount": amount.round(2),
            "quantity": quantity,
            "customer_age": age,
            "account_balance": balance.round(2),
            "country": country,
        }
    )
    truth = _plant_transactions(df, m_level[m], rng, n_anomalies, kinds)
    _knock_out(df, ["amount", "customer_age", "account_balance", "merchant"], missing_rate, rng,
               set(truth["row"]))  # fmt: skip
    return PlantedTable(df, truth)


TRANSACTION_KINDS = (
    "impossible_age",
    "huge_amount",
    "huge_quantity",
    "age_balance",
    "unseen_merchant",
    "amount_for_merchant",
    "category_mismatch",
)


def _plant_transactions(
    df: Any, level: np.ndarray, rng: np.random.Generator, n: int, kinds: tuple[str, ...] | None
) -> Any:
    import pandas as pd

    kinds = kinds or TRANSACTION_KINDS
    rows = _planted_rows(len(df), n, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "impossible_age":
            df.loc[row, "customer_age"] = float(rng.choice([0, 999, rng.integers(130, 161)]))
            causes: tuple[str, ...] = ("customer_age",)
        elif kind == "huge_amount":
            df.loc[row, "amount"] = round(30 * np.exp(level[row]), 2)
            causes = ("amount",)
        elif kind == "huge_quantity":
            df.loc[row, "quantity"] = 40 * int(df.loc[row, "quantity"])
            causes = ("quantity",)
        elif kind == "age_balance":
            young = rng.random() < 0.5
            age = float(rng.integers(19, 24) if young else rng.integers(78, 88))
            df.loc[row, "customer_age"] = age
            # the balance of a customer at the other end of the age range
            df.loc[row, "account_balance"] = round(
                float(np.exp(7.0 + 0.045 * ((84 if young else 21) - 44))), 2
            )
            causes = ("customer_age", "account_balance")
        elif kind == "unseen_merchant":
            df.loc[row, "merchant"] = str(rng.choice(["QuickCash Ltd", "M77", "GIFTCARDS24", "Z-Transfer"]))
            df.loc[row, "amount"] = round(8 * np.exp(level[row]), 2)
            causes = ("merchant", "amount")
        elif kind == "amount_for_merchant":
            df.loc[row, "amount"] = round(8 * np.exp(level[row]), 2)
            causes = ("amount", "merchant")
        elif kind == "category_mismatch":
            own = df.loc[row, "merchant_category"]
            df.loc[row, "merchant_category"] = str(rng.choice([c for c in _CATEGORIES if c != own]))
            causes = ("merchant_category", "merchant")
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    return pd.DataFrame(records, columns=["row", "kind", "causes"])


def _knock_out(df: Any, columns: list[str], rate: float, rng: np.random.Generator, keep: set[int]) -> None:
    """Blank a share ``rate`` of the cells of ``columns`` (never in planted rows)."""
    if rate <= 0:
        return
    free = np.array([i for i in range(len(df)) if i not in keep])
    for col in columns:
        rows = rng.choice(free, size=int(round(rate * len(df))), replace=False)
        df.loc[rows, col] = None if df[col].dtype == object else np.nan


SENSOR_KINDS = (
    "sentinel_temperature",
    "pressure_temperature",
    "vibration_spike",
    "wrong_site",
    "hot_for_site",
    "negative_battery",
)


def make_sensor_readings(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Sensor readings: id, time text, 30 sensors at 5 sites, temperature (the site's level plus a
    daily cycle), pressure (following temperature), vibration (log-normal), battery, status;
    missing cells in temperature, pressure and status.

    Planted kinds: ``sentinel_temperature`` (-999: temperature), ``pressure_temperature``
    (a pressure 6 sd off the one its temperature implies: pressure, temperature),
    ``vibration_spike`` (50x: vibration), ``wrong_site`` (a site other than the sensor's:
    site, sensor), ``hot_for_site`` (7 sd above the site's level, inside the overall range:
    temperature, site, sensor), ``negative_battery`` (-20 to -1: battery).
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(54321)
    sites = np.array(["north", "south", "east", "west", "hill"])
    site_level = np.array([8.0, 22.0, 14.0, 17.0, 3.0])
    sensor_site = world.integers(0, 5, size=30)
    sensor = rng.integers(0, 30, size=n_rows)
    site = sensor_site[sensor]
    hours = rng.uniform(0, 24, n_rows)
    when = (
        pd.Timestamp("2024-05-01")
        + pd.to_timedelta(rng.integers(0, 60, n_rows), "D")
        + pd.to_timedelta(hours * 3600, "s")
    )
    temperature = site_level[site] + 4.0 * np.sin((hours - 9) / 24 * 2 * np.pi) + rng.normal(0, 1.0, n_rows)
    pressure = 1013.0 - 0.8 * temperature + rng.normal(0, 0.6, n_rows)
    df = pd.DataFrame(
        {
            "reading_id": [f"R{random_state:03d}-{i:06d}" for i in range(n_rows)],
            "time": when.strftime("%Y-%m-%dT%H:%M:%S"),
            "sensor": np.array([f"S{i:02d}" for i in range(30)])[sensor].astype(object),
            "site": sites[site].astype(object),
            "temperature": temperature.round(2),
            "pressure": pressure.round(2),
            "vibration": np.exp(rng.normal(-1.0, 0.5, n_rows)).round(4),
            "battery": rng.uniform(15, 100, n_rows).round(1),
            "status": rng.choice(["ok", "warn", "maint"], size=n_rows, p=[0.95, 0.04, 0.01]).astype(object),
        }
    )
    kinds = kinds or SENSOR_KINDS
    rows = _planted_rows(len(df), n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "sentinel_temperature":
            df.loc[row, "temperature"] = -999.0
            causes: tuple[str, ...] = ("temperature",)
        elif kind == "pressure_temperature":
            df.loc[row, "pressure"] = round(float(df.loc[row, "pressure"]) + rng.choice([-1, 1]) * 6 * 0.6, 2)
            causes = ("pressure", "temperature")
        elif kind == "vibration_spike":
            df.loc[row, "vibration"] = round(50 * float(df.loc[row, "vibration"]), 4)
            causes = ("vibration",)
        elif kind == "wrong_site":
            df.loc[row, "site"] = str(rng.choice([s for s in sites if s != df.loc[row, "site"]]))
            causes = ("site", "sensor")
        elif kind == "hot_for_site":
            shift = 7.0 * np.hypot(1.0, 4.0 / np.sqrt(2))
            value = float(df.loc[row, "temperature"]) + shift
            df.loc[row, "temperature"] = round(value, 2)
            df.loc[row, "pressure"] = round(1013.0 - 0.8 * value + rng.normal(0, 0.6), 2)  # pressure follows
            causes = ("temperature", "site", "sensor")
        elif kind == "negative_battery":
            df.loc[row, "battery"] = -float(rng.integers(1, 21))
            causes = ("battery",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["temperature", "pressure", "status"], missing_rate, rng, set(rows.tolist()))
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]))


PATIENT_KINDS = (
    "height_in_metres",
    "bmi_mismatch",
    "diastolic_above_systolic",
    "glucose_extreme",
    "diagnosis_for_ward",
    "child_in_geriatrics",
)


def make_patient_records(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Patient records: id, admission date, sex, ward (6), diagnosis (depends on the ward), age
    (depends on the ward), height (cm, by sex), weight, bmi (= weight / height^2), systolic and
    diastolic pressure (related), glucose (log-normal), smoker; missing cells in weight, glucose,
    smoker.

    Planted kinds: ``height_in_metres`` (1.55-1.95 instead of cm: height_cm), ``bmi_mismatch``
    (weight doubled, bmi kept: weight_kg, bmi), ``diastolic_above_systolic`` (the two swapped
    and widened: diastolic, systolic), ``glucose_extreme`` (20x: glucose), ``diagnosis_for_ward``
    (a diagnosis never seen on the ward: diagnosis, ward), ``child_in_geriatrics`` (age 4-9 on
    the geriatric ward: age, ward).
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    wards = np.array(["cardiology", "geriatrics", "oncology", "maternity", "orthopedics", "general"])
    ward_age = np.array([64.0, 81.0, 60.0, 31.0, 50.0, 47.0])
    ward_age_sd = np.array([10.0, 6.0, 12.0, 5.0, 18.0, 18.0])
    diagnoses = {
        "cardiology": ["I20", "I21", "I25", "I48", "I50"],
        "geriatrics": ["F03", "R54", "I50", "S72", "N39"],
        "oncology": ["C18", "C34", "C50", "C61", "C91"],
        "maternity": ["O80", "O82", "O60", "O24"],
        "orthopedics": ["S72", "M16", "M17", "S82", "M54"],
        "general": ["J18", "K35", "N39", "E11", "R10", "J44"],
    }
    ward = rng.choice(6, size=n_rows, p=[0.18, 0.14, 0.14, 0.12, 0.16, 0.26])
    sex = np.where(ward == 3, "F", rng.choice(["F", "M"], size=n_rows))
    age = np.clip(rng.normal(ward_age[ward], ward_age_sd[ward]), 16, 101).round()
    height = np.where(sex == "F", rng.normal(164, 7, n_rows), rng.normal(178, 7, n_rows))
    bmi = np.exp(rng.normal(np.log(26), 0.16, n_rows))
    weight = bmi * (height / 100) ** 2
    systolic = 105 + 0.45 * age + rng.normal(0, 12, n_rows)
    diastolic = 0.45 * systolic + 20 + rng.normal(0, 6, n_rows)
    df = pd.DataFrame(
        {
            "patient_id": rng.permutation(np.arange(100000, 100000 + n_rows)).astype(str).astype(object),
            "admitted": (
                pd.Timestamp("2023-01-01") + pd.to_timedelta(rng.integers(0, 365, n_rows), "D")
            ).strftime("%d/%m/%Y"),
            "sex": sex.astype(object),
            "ward": wards[ward].astype(object),
            "diagnosis": [str(rng.choice(diagnoses[wards[w]])) for w in ward],
            "age": age.astype(int),
            "height_cm": height.round(1),
            "weight_kg": weight.round(1),
            "bmi": bmi.round(1),
            "systolic": systolic.round().astype(int),
            "diastolic": diastolic.round().astype(int),
            "glucose": np.exp(rng.normal(np.log(5.4), 0.15, n_rows)).round(1),
            "smoker": rng.choice(["no", "yes"], size=n_rows, p=[0.78, 0.22]).astype(object),
        }
    )
    kinds = kinds or PATIENT_KINDS
    rows = _planted_rows(len(df), n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "height_in_metres":
            df.loc[row, "height_cm"] = round(float(df.loc[row, "height_cm"]) / 100, 2)
            causes: tuple[str, ...] = ("height_cm",)
        elif kind == "bmi_mismatch":
            df.loc[row, "weight_kg"] = round(2 * float(df.loc[row, "weight_kg"]), 1)
            causes = ("weight_kg", "bmi")
        elif kind == "diastolic_above_systolic":
            s, d = int(df.loc[row, "systolic"]), int(df.loc[row, "diastolic"])
            df.loc[row, "systolic"], df.loc[row, "diastolic"] = d - 10, s + 10
            causes = ("diastolic", "systolic")
        elif kind == "glucose_extreme":
            df.loc[row, "glucose"] = round(20 * float(df.loc[row, "glucose"]), 1)
            causes = ("glucose",)
        elif kind == "diagnosis_for_ward":
            own = set(diagnoses[df.loc[row, "ward"]])
            df.loc[row, "diagnosis"] = str(
                rng.choice(sorted({d for v in diagnoses.values() for d in v} - own))
            )
            causes = ("diagnosis", "ward")
        elif kind == "child_in_geriatrics":
            df.loc[row, "ward"], df.loc[row, "age"] = "geriatrics", int(rng.integers(4, 10))
            df.loc[row, "diagnosis"] = str(rng.choice(diagnoses["geriatrics"]))
            causes = ("age", "ward")
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["weight_kg", "glucose", "smoker"], missing_rate, rng, set(rows.tolist()))
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]))


#: The planted-truth table families, by name (benchmarks/main_job.py, tests).
FAMILIES = {
    "transactions": make_transactions,
    "sensors": make_sensor_readings,
    "patients": make_patient_records,
}


def _unique_integers(rng: np.random.Generator, n: int, low: int, high: int) -> np.ndarray:
    """``n`` distinct random integers in ``[low, high]``, in random order (a key column)."""
    drawn = rng.integers(low, high + 1, size=2 * n + 10)
    _, first = np.unique(drawn, return_index=True)
    return drawn[np.sort(first)][:n]


def _planted_rows(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=k, replace=False)) if k else np.zeros(0, dtype=int)


def _where_possible(
    rows: np.ndarray, kinds: tuple[str, ...], can: dict[str, np.ndarray], rng: np.random.Generator
) -> None:
    """Move each planted row (in place; the ``i``-th gets kind ``kinds[i % len(kinds)]``) whose
    kind is no error there (``can[kind]`` False at it: a sea-level pressure at a coastal station)
    to a random row where it is one, not planted already."""
    for i in range(len(rows)):
        where = can.get(kinds[i % len(kinds)])
        if where is not None and not where[rows[i]]:
            rows[i] = int(rng.choice(np.setdiff1d(np.flatnonzero(where), rows)))


# -- further planted families: wide tables, relations between columns, a broken batch ------------


PROPERTY_KINDS = ("year_200_off", "times_100", "negative_count", "sentinel_value")


def make_property_records(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Property sales, 74 columns: two keys (``record_id``, ``parcel_no``), 18 categorical columns,
    54 numeric ones (years, areas that add up, counts, prices, scores; many zero-inflated: a porch,
    a pool, a miscellaneous value), missing cells where a column does not apply (no garage: no
    garage year) and at random.

    Planted, one impossible cell per row: ``year_200_off`` (a year 200 years off), ``times_100``
    (an area, a price or a consumption 100x), ``negative_count`` (a negative count),
    ``sentinel_value`` (99999 or -9999 in a measured column).  Rows whose only oddity is a rare
    but legitimate value (a pool, a miscellaneous value, low-quality area) are listed in ``rare``.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(777)
    n = n_rows
    regions = np.array(["north", "harbor", "old_town", "hills", "lakeside", "market", "airport", "west"])
    region_year = world.uniform(1925, 1995, 8)
    region_price = world.normal(0.0, 0.25, 8)
    region_dist = world.uniform(1, 25, 8)
    region = rng.choice(8, size=n, p=np.array([14, 12, 9, 13, 10, 16, 8, 18]) / 100)
    district = np.array(
        [f"{regions[r][:3].upper()}-{k}" for r, k in zip(region, rng.integers(1, 7, n), strict=True)]
    )
    ptype = rng.choice(
        ["house", "townhouse", "condo", "duplex", "cabin"], size=n, p=[0.55, 0.15, 0.15, 0.1, 0.05]
    )
    quality = np.clip(np.round(rng.normal(6, 1.4, n)), 1, 10)
    condition = np.array(["poor", "fair", "average", "good", "excellent"])[
        np.clip(np.round(quality / 2.2 + rng.normal(0, 0.6, n)).astype(int) - 1, 0, 4)
    ]
    year_built = np.clip(np.round(region_year[region] + rng.normal(0, 18, n)), 1880, 2015)
    remodelled = rng.random(n) < 0.5
    year_remodel = np.where(
        remodelled, np.round(year_built + rng.uniform(0, 1, n) * (2015 - year_built)), year_built
    )
    garage_type = rng.choice(["attached", "detached", "carport", "none"], size=n, p=[0.6, 0.25, 0.09, 0.06])
    has_garage = garage_type != "none"
    garage_year = np.where(
        rng.random(n) < 0.85, year_built, np.minimum(year_built + rng.integers(1, 40, n), 2015)
    )
    size = {"house": 7.25, "townhouse": 6.9, "condo": 6.6, "duplex": 7.1, "cabin": 6.4}
    floor1 = np.exp(np.array([size[t] for t in ptype]) + 0.08 * (quality - 6) + rng.normal(0, 0.22, n))
    two_storey = rng.random(n) < np.where(np.isin(ptype, ["condo", "cabin"]), 0.1, 0.55)
    floor2 = np.where(two_storey, floor1 * rng.uniform(0.5, 1.0, n), 0.0)
    basement = rng.choice(["full", "partial", "none"], size=n, p=[0.6, 0.2, 0.2])
    basement_area = np.where(
        basement == "none", 0.0, floor1 * np.where(basement == "full", 1.0, rng.uniform(0.3, 0.7, n))
    )
    living = floor1 + floor2
    rooms = np.maximum(np.round(living / 280 + rng.normal(0, 0.8, n)), 2)
    bedrooms = np.clip(np.round(rooms * 0.45 + rng.normal(0, 0.5, n)), 1, rooms - 1)
    bathrooms = np.clip(np.round(living / 900 + rng.normal(0, 0.4, n)), 1, 5)
    half_baths = np.where(rng.random(n) < 0.6, 0, rng.integers(1, 3, n))
    fireplaces = np.where(rng.random(n) < 0.5, 0, np.clip(np.round(rng.exponential(0.8, n)) + 1, 1, 3))
    kitchens = np.where(rng.random(n) < 0.96, 1, 2)
    garage_cars = np.where(has_garage, np.clip(np.round(rng.normal(2, 0.7, n)), 1, 4), 0)
    garage_area = np.where(has_garage, garage_cars * rng.normal(260, 25, n), 0.0)
    lot = np.exp(np.log(floor1) + 1.3 + 0.1 * region + rng.normal(0, 0.45, n))
    frontage = np.sqrt(lot) * rng.normal(0.8, 0.08, n)
    zero_or = lambda share, values: np.where(rng.random(n) < share, 0.0, values)  # noqa: E731
    porch = zero_or(0.55, rng.lognormal(3.4, 0.6, n))
    deck = zero_or(0.5, rng.lognormal(4.2, 0.5, n))
    enclosed = zero_or(0.85, rng.lognormal(4.5, 0.4, n))
    screen = zero_or(0.92, rng.lognormal(4.6, 0.3, n))
    veneer = zero_or(0.6, rng.lognormal(4.8, 0.7, n))
    pool = zero_or(0.995, rng.uniform(15, 70, n))
    misc = zero_or(0.96, np.round(rng.lognormal(6.5, 1.2, n), -1))
    low_quality = zero_or(0.985, rng.uniform(10, 60, n))
    overall = quality
    price = np.exp(
        11.2
        + 0.55 * np.log(living)
        + 0.09 * (quality - 6)
        + region_price[region]
        + 0.15 * (basement_area > 0)
        + 0.002 * (year_built - 1960)
        + rng.normal(0, 0.12, n)
    )
    price = price + 8 * pool * 100 * (pool > 0) + misc
    tax_rate = world.uniform(0.009, 0.016, 8)
    tax = price * tax_rate[region] * rng.normal(1, 0.03, n)
    insurance = price * 0.0028 * rng.normal(1, 0.08, n) + 40 * (ptype == "cabin")
    heating = rng.choice(
        ["gas", "oil", "electric", "heat_pump", "wood"], size=n, p=[0.5, 0.1, 0.2, 0.15, 0.05]
    )
    heat_factor = {"gas": 1.0, "oil": 1.15, "electric": 0.9, "heat_pump": 0.6, "wood": 1.3}
    energy = (
        (living + 0.5 * basement_area)
        * 110
        * np.array([heat_factor[h] for h in heating])
        * rng.normal(1, 0.1, n)
    )
    water = rooms * 22 * rng.normal(1, 0.15, n)
    survey = np.clip(np.round(quality[:, None] / 2 + rng.normal(0, 0.8, (n, 6))), 1, 5)
    df = pd.DataFrame(
        {
            "record_id": [f"P{random_state:03d}-{i:06d}" for i in range(n)],
            "parcel_no": _unique_integers(rng, n, 100_000_000, 999_999_999),
            "region": regions[region],
            "district": district,
            "property_type": ptype,
            "condition": condition,
            "roof": rng.choice(
                ["gable", "hip", "flat", "mansard", "shed", "gambrel"],
                size=n,
                p=[0.6, 0.25, 0.06, 0.03, 0.03, 0.03],
            ),
            "heating": heating,
            "central_air": np.where(rng.random(n) < 0.9, "Y", "N"),
            "zoning": rng.choice(["res_low", "res_high", "mixed", "rural"], size=n, p=[0.6, 0.2, 0.12, 0.08]),
            "garage_type": garage_type,
            "basement": basement,
            "exterior": rng.choice(
                ["vinyl", "wood", "brick", "stucco", "cement", "metal", "stone"],
                size=n,
                p=[0.35, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05],
            ),
            "sale_type": rng.choice(
                ["normal", "auction", "foreclosure", "estate"], size=n, p=[0.86, 0.05, 0.05, 0.04]
            ),
            "fence": rng.choice(["none", "wood", "metal"], size=n, p=[0.8, 0.15, 0.05]),
            "alley": rng.choice(["none", "gravel", "paved"], size=n, p=[0.93, 0.04, 0.03]),
            "paved_drive": rng.choice(["Y", "P", "N"], size=n, p=[0.9, 0.03, 0.07]),
            "pool_quality": np.where(pool > 0, rng.choice(["good", "fair", "excellent"], size=n), None),
            "kitchen_quality": np.array(["fair", "average", "good", "excellent"])[
                np.clip(np.round(quality / 3 + rng.normal(0, 0.5, n)).astype(int) - 1, 0, 3)
            ],
            "year_built": year_built.astype(int),
            "year_remodel": year_remodel.astype(int),
            "garage_year": np.where(has_garage, garage_year, np.nan),
            "year_sold": rng.integers(2006, 2011, n),
            "month_sold": np.clip(np.round(rng.normal(6.5, 2.5, n)), 1, 12).astype(int),
            "lot_area": lot.round(),
            "lot_frontage": frontage.round(1),
            "floor1_area": floor1.round(),
            "floor2_area": floor2.round(),
            "basement_area": basement_area.round(),
            "living_area": (floor1.round() + floor2.round()),
            "total_area": (floor1.round() + floor2.round() + basement_area.round()),
            "rooms": rooms.astype(int),
            "bedrooms": bedrooms.astype(int),
            "bathrooms": bathrooms.astype(int),
            "half_baths": half_baths,
            "fireplaces": fireplaces.astype(int),
            "kitchens": kitchens,
            "garage_cars": garage_cars.astype(int),
            "garage_area": garage_area.round(1),
            "porch_area": porch.round(),
            "deck_area": deck.round(),
            "enclosed_porch": enclosed.round(),
            "screen_porch": screen.round(),
            "veneer_area": veneer.round(),
            "pool_area": pool.round(),
            "misc_value": misc,
            "low_quality_area": low_quality.round(),
            "overall_quality": overall.astype(int),
            "price": price.round(-2),
            "tax": tax.round(2),
            "insurance": insurance.round(2),
            "energy_kwh": energy.round(),
            "water_m3": water.round(1),
            "distance_km": np.maximum(region_dist[region] + rng.normal(0, 2.5, n), 0.2).round(2),
            "elevation_m": (world.uniform(5, 400, 8)[region] + rng.normal(0, 15, n)).round(1),
            "noise_db": rng.normal(55, 7, n).round(1),
            "school_score": np.clip(np.round(rng.normal(6, 2, n)), 1, 10),
            "walk_score": np.clip(rng.normal(55, 20, n), 0, 100).round(),
            "crime_index": rng.gamma(3, 12, n).round(1),
            "days_on_market": np.ceil(rng.exponential(40, n)).astype(int),
            **{f"survey_{k + 1}": survey[:, k].astype(int) for k in range(survey.shape[1])},
        }
    )
    rare = np.flatnonzero((pool > 0) | (misc > 0) | (low_quality > 0))
    kinds = kinds or PROPERTY_KINDS
    candidates = np.setdiff1d(np.arange(n), rare)
    rows = (
        np.sort(rng.choice(candidates, size=n_anomalies, replace=False)) if n_anomalies else np.zeros(0, int)
    )
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "year_200_off":
            col = str(
                rng.choice(["year_built", "year_remodel"] + (["garage_year"] if has_garage[row] else []))
            )
            df.loc[row, col] = df.loc[row, col] + (200 if rng.random() < 0.75 else -200)
        elif kind == "times_100":
            col = str(rng.choice(["lot_area", "floor1_area", "price", "energy_kwh", "water_m3"]))
            df.loc[row, col] = df.loc[row, col] * 100
        elif kind == "negative_count":
            col = str(rng.choice(["rooms", "bedrooms", "bathrooms", "garage_cars", "kitchens"]))
            df.loc[row, col] = -int(rng.integers(1, 4))
        elif kind == "sentinel_value":
            col = str(rng.choice(["distance_km", "noise_db", "walk_score", "crime_index", "elevation_m"]))
            df.loc[row, col] = 99999.0 if rng.random() < 0.6 else -9999.0
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": (col,)})
    _knock_out(df, ["lot_frontage"], 0.15, rng, set(rows.tolist()))
    _knock_out(
        df,
        ["energy_kwh", "water_m3", "school_score", "roof", "exterior"],
        missing_rate,
        rng,
        set(rows.tolist()),
    )
    truth = pd.DataFrame(records, columns=["row", "kind", "causes"])
    return PlantedTable(df, truth, rare=np.setdiff1d(rare, rows))


SHIPMENT_KINDS = (
    "copied_height",
    "swapped_weight_height",
    "points_for_tenure",
    "cost_for_zone",
    "tenure_beyond_age",
    "grams_for_kg",
)


def make_shipments(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Parcels shipped: id, date, carrier, zone, product category; dimensions and the volume they
    make, a weight that follows volume and the category's density, the billed cost (zone tariff
    on the billing weight), the customer's age, years as a customer and loyalty points (that grow
    with those years); missing cells in four columns.

    Planted, mostly within every column's own range (the relation is what breaks):
    ``copied_height`` (a height copied from another parcel: height_cm, volume_l),
    ``swapped_weight_height`` (the two cells swapped: weight_kg, height_cm),
    ``points_for_tenure`` (another customer's points: loyalty_points, customer_years),
    ``cost_for_zone`` (billed with another zone's tariff: shipping_cost, zone),
    ``tenure_beyond_age`` (a customer longer than an adult life: customer_years, customer_age),
    ``grams_for_kg`` (the weight in grams: weight_kg).
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(4242)
    n = n_rows
    cats = ["books", "electronics", "furniture", "clothing", "food", "toys", "tools", "garden"]
    density = dict(zip(cats, world.uniform(0.15, 0.9, len(cats)), strict=True))
    size = dict(zip(cats, world.uniform(2.6, 3.8, len(cats)), strict=True))
    cat = rng.choice(cats, size=n, p=[0.16, 0.14, 0.06, 0.2, 0.1, 0.12, 0.12, 0.1])
    scale = np.array([size[c] for c in cat]) + rng.normal(0, 0.35, n)
    length = np.exp(scale + rng.normal(0.25, 0.12, n))
    width = np.exp(scale + rng.normal(0.0, 0.12, n))
    height = np.exp(scale + rng.normal(-0.35, 0.2, n))
    volume = length * width * height / 1000
    weight = volume * np.array([density[c] for c in cat]) * np.exp(rng.normal(0, 0.12, n))
    zone = rng.integers(1, 9, n)
    base, rate = world.uniform(3, 9, 9), world.uniform(0.3, 1.6, 9)
    billing = np.maximum(weight, volume / 5)
    cost = base[zone] + rate[zone] * billing * np.exp(rng.normal(0, 0.02, n))
    age = np.clip(np.round(rng.normal(45, 15, n)), 18, 90)
    years = np.round(np.minimum(rng.exponential(6, n), age - 18), 1)
    points = np.round(120 * years * np.exp(rng.normal(0, 0.12, n)) + rng.normal(0, 15, n)).clip(0)
    value = np.exp(
        np.log(weight + 0.5) * 0.4
        + world.normal(3.5, 0.6, len(cats))[[cats.index(c) for c in cat]]
        + rng.normal(0, 0.5, n)
    )
    when = pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 120, n), "D")
    df = pd.DataFrame(
        {
            "shipment_id": [f"S{random_state:03d}{i:06d}" for i in range(n)],
            "ship_date": when.strftime("%Y-%m-%d"),
            "carrier": rng.choice(
                ["fastpost", "cargoline", "bluebox", "relay"], size=n, p=[0.4, 0.3, 0.2, 0.1]
            ),
            "zone": np.array([f"Z{z}" for z in zone]),
            "category": cat,
            "length_cm": length.round(1),
            "width_cm": width.round(1),
            "height_cm": height.round(1),
            "volume_l": volume.round(2),
            "weight_kg": weight.round(2),
            "declared_value": value.round(2),
            "shipping_cost": cost.round(2),
            "transit_days": np.clip(np.round(zone / 2 + rng.normal(1, 0.7, n)), 1, 9).astype(int),
            "customer_age": age.astype(int),
            "customer_years": years,
            "loyalty_points": points.astype(int),
            "fragile": np.where(
                np.isin(cat, ["electronics", "furniture"]) | (rng.random(n) < 0.05), "yes", "no"
            ),
        }
    )
    kinds = kinds or SHIPMENT_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "copied_height":
            far = np.flatnonzero(np.abs(np.log(height / height[row])) > np.log(2.5))
            df.loc[row, "height_cm"] = round(float(height[rng.choice(far)]), 1)
            causes: tuple[str, ...] = ("height_cm", "volume_l")
        elif kind == "swapped_weight_height":
            df.loc[row, ["weight_kg", "height_cm"]] = [df.loc[row, "height_cm"], df.loc[row, "weight_kg"]]
            causes = ("weight_kg", "height_cm")
        elif kind == "points_for_tenure":
            far = np.flatnonzero(np.abs(years - years[row]) > 8)
            df.loc[row, "loyalty_points"] = int(points[rng.choice(far)])
            causes = ("loyalty_points", "customer_years")
        elif kind == "cost_for_zone":
            other = int(
                rng.choice(
                    [z for z in range(1, 9) if abs(rate[z] - rate[zone[row]]) > 0.5] or [1 + zone[row] % 8]
                )
            )
            df.loc[row, "shipping_cost"] = round(float(base[other] + rate[other] * billing[row]), 2)
            causes = ("shipping_cost", "zone")
        elif kind == "tenure_beyond_age":
            df.loc[row, "customer_age"] = int(rng.integers(19, 26))
            df.loc[row, "customer_years"] = float(rng.integers(15, 30))
            df.loc[row, "loyalty_points"] = int(round(120 * float(df.loc[row, "customer_years"])))
            causes = ("customer_years", "customer_age")
        elif kind == "grams_for_kg":
            df.loc[row, "weight_kg"] = round(float(weight[row]) * 1000, 2)
            causes = ("weight_kg",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(
        df,
        ["declared_value", "transit_days", "carrier", "customer_age"],
        missing_rate,
        rng,
        set(rows.tolist()),
    )
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]))


def make_batch_measurements(
    n_rows: int = 600,
    n_anomalies: int = 60,
    random_state: int = 0,
    missing_rate: float = 0.0,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Quality-control measurements of parts from three lines and two shifts: seven related
    measurements (three underlying factors plus noise), a line and a shift.

    Planted: ``broken_batch``, ``n_anomalies`` parts from one miscalibrated run (one line, one
    shift): their measurements shifted together, a few sd in the factors' space while each one
    stays within about 2.5 sd of its column, and tighter than normal parts (they come from one
    run).  Causes: the three measurements shifted most.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(99)
    n = n_rows
    loadings = world.normal(size=(7, 3))
    noise_sd = world.uniform(0.3, 0.6, 7)
    factors = rng.normal(size=(n, 3))
    X = factors @ loadings.T + rng.normal(size=(n, 7)) * noise_sd
    line = rng.choice(["A", "B", "C"], size=n, p=[0.4, 0.35, 0.25])
    shift = rng.choice(["day", "night"], size=n, p=[0.6, 0.4])
    rows = _planted_rows(n, n_anomalies, rng)
    causes: tuple[str, ...] = ()
    names = ["diameter", "thickness", "mass", "hardness", "roughness", "resistance", "flatness"]
    if len(rows):
        # A direction in the noise space (off the factors' plane), scaled so that no column moves
        # more than ~2.5 of its sd: inside every column's range, far from how the columns go together.
        sd = X.std(axis=0)
        direction = world.normal(size=7)
        direction -= loadings @ np.linalg.lstsq(loadings, direction, rcond=None)[0]
        centre = factors[rows].mean(axis=0) * 0 + rng.normal(0, 0.5, 3)
        shift_vec = direction / np.abs(direction / sd).max() * 2.3
        X[rows] = (
            centre @ loadings.T
            + shift_vec
            + rng.normal(size=(len(rows), 7)) * noise_sd * 0.3
            + rng.normal(size=(len(rows), 3)) @ loadings.T * 0.3
        )
        line[rows], shift[rows] = "B", "night"
        causes = tuple(np.asarray(names)[np.argsort(-np.abs(shift_vec / sd))[:3]].tolist())
    base = np.array([25.0, 4.0, 180.0, 60.0, 1.6, 12.0, 0.05])
    unit = np.array([0.08, 0.05, 2.5, 1.5, 0.12, 0.4, 0.006])
    values = base + X * unit
    df = pd.DataFrame(
        {"part_id": [f"Q{random_state:03d}-{i:05d}" for i in range(n)], "line": line, "shift": shift}
    )
    for j, name in enumerate(names):
        df[name] = values[:, j].round(4)
    _knock_out(df, names[:2], missing_rate, rng, set(rows.tolist()))
    truth = pd.DataFrame(
        [{"row": int(r), "kind": "broken_batch", "causes": causes} for r in rows],
        columns=["row", "kind", "causes"],
    )
    return PlantedTable(df, truth)


#: The families written after the first three (wide tables, relations, a broken batch).
FAMILIES.update(
    {"properties": make_property_records, "shipments": make_shipments, "batch": make_batch_measurements}
)


# -- families written to judge the flags on tables unlike the ones above ------------------------


LAB_KINDS = ("year_typo", "unit_x1000", "negative_count", "decimal_shift", "sentinel")


def make_lab_panel(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Laboratory panels, 82 columns: two keys (``sample_id``, ``patient_no``), a collection time,
    site, analyzer (following the site), sex, ward, fasting; birth year and age (which follow each
    other); height, weight and their BMI; 40 analytes driven by five physiological factors, log-normal
    on scales from 0.01 to 10,000; LDL from total cholesterol, HDL and triglycerides (Friedewald);
    counts (visits, prescriptions, allergies); zero-inflated columns (alcohol units a week, pack-years,
    ICU hours: 0 in 98% of rows, transfused units: 0 in 99.5%); bounded percentages; a pain score;
    15 yes/no conditions; analytes not ordered for some wards and cells missing at random.

    Planted, one impossible cell per row: ``year_typo`` (a birth year 200 years off),
    ``unit_x1000`` (an analyte 1,000 times its value), ``negative_count`` (a negative count),
    ``decimal_shift`` (height or weight 100 times its value), ``sentinel`` (999999 or -1 in an
    analyte).  Rows whose only oddity is a rare but legitimate value (ICU hours, transfusions)
    are listed in ``rare`` and never planted.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(4242)
    n = n_rows
    sites = np.array([f"S{k:02d}" for k in range(12)])
    site = rng.choice(12, size=n, p=world.dirichlet(np.full(12, 3.0)))
    analyzer = np.where(rng.random(n) < 0.95, world.integers(0, 4, 12)[site], rng.integers(0, 4, n))
    wards = np.array(["medicine", "surgery", "cardio", "renal", "oncology", "icu", "outpatient", "geriatric"])
    ward = rng.choice(8, size=n, p=[0.2, 0.15, 0.12, 0.08, 0.1, 0.05, 0.22, 0.08])
    sex = rng.choice(["F", "M"], size=n)
    male = sex == "M"
    collected = (
        pd.Timestamp("2023-01-01")
        + pd.to_timedelta(rng.integers(0, 365, n), "D")
        + pd.to_timedelta(np.clip(rng.normal(9.5, 2.0, n), 5, 22) * 3600, "s")
    )
    age = np.clip(rng.gamma(6.0, 9.0, n), 18, 99)
    age = np.where(wards[ward] == "geriatric", np.maximum(age, 70), age).round()
    birth_year = (2023 - age - (rng.random(n) < 0.5)).astype(int)
    height = np.where(male, rng.normal(177, 7, n), rng.normal(164, 6.5, n))
    bmi = np.exp(rng.normal(3.25, 0.17, n))
    weight = bmi * (height / 100) ** 2
    factors = rng.normal(size=(n, 5)) + np.c_[np.zeros((n, 4)), 0.02 * (age - 50)]
    loadings = world.normal(0, 1, (40, 5)) * (world.random((40, 5)) < 0.35)
    centre = world.uniform(-4.5, 9.0, 40)
    spread = world.uniform(0.12, 0.5, 40)
    analytes = np.exp(
        centre + spread * (factors @ loadings.T * 0.6 + rng.normal(size=(n, 40))) + 0.1 * male[:, None]
    )
    names = [f"lab_{k:02d}" for k in range(40)]
    hdl = np.exp(np.log(55) - 0.15 * male + 0.2 * factors[:, 3] + rng.normal(0, 0.2, n))
    trig = np.exp(np.log(130) + 0.35 * factors[:, 3] + rng.normal(0, 0.35, n))
    total = np.exp(np.log(195) + 0.15 * factors[:, 3] + rng.normal(0, 0.12, n))
    total = np.maximum(total, hdl + trig / 5 + 30)
    ldl = total - hdl - trig / 5
    conditions = {
        name: rng.random(n)
        < 1 / (1 + np.exp(-(world.normal(-1.5, 0.8) + 0.6 * factors[:, k % 5] + 0.02 * (age - 55))))
        for k, name in enumerate(
            ["diabetes", "hypertension", "ckd", "copd", "asthma", "cad", "chf", "afib", "stroke", "cancer",
             "depression", "obesity", "osteoporosis", "thyroid", "liver_disease"]
        )
    }  # fmt: skip
    icu = np.where((rng.random(n) < 0.02) | (wards[ward] == "icu") & (rng.random(n) < 0.3),
                   np.round(rng.lognormal(3.5, 1.0, n)), 0.0)  # fmt: skip
    transfused = np.where(rng.random(n) < 0.005, rng.integers(1, 9, n), 0)
    frame = {
        "sample_id": [f"L{random_state:02d}-{i:06d}" for i in range(n)],
        "patient_no": _unique_integers(rng, n, 1_000_000, 9_999_999),
        "collected": collected.strftime("%Y-%m-%d %H:%M"),
        "site": sites[site],
        "analyzer": np.array(["A100", "B220", "C-3", "DX9"])[analyzer],
        "sex": sex,
        "ward": wards[ward],
        "fasting": np.where(rng.random(n) < 0.35, "Y", "N"),
        "birth_year": birth_year,
        "age": age.astype(int),
        "height_cm": height.round(1),
        "weight_kg": weight.round(1),
        "bmi": (weight / (height / 100) ** 2).round(1),
        **{name: np.round(analytes[:, k], 3) for k, name in enumerate(names)},
        "hdl": hdl.round(),
        "triglycerides": trig.round(),
        "cholesterol": total.round(),
        "ldl": ldl.round(),
        "visits_12m": rng.poisson(np.exp(1.0 + 0.3 * factors[:, 0] + 0.01 * (age - 50))),
        "prescriptions": rng.negative_binomial(2, 2 / (2 + np.exp(1.2 + 0.015 * (age - 50)))),
        "allergies": rng.binomial(5, 0.08, n),
        "alcohol_units_week": np.where(rng.random(n) < 0.4, np.round(rng.gamma(2.0, 4.0, n)), 0.0),
        "pack_years": np.where(rng.random(n) < 0.3, np.round(rng.gamma(2.5, 8.0, n), 1), 0.0),
        "icu_hours": icu,
        "transfused_units": transfused,
        "hematocrit_pct": np.clip(
            np.where(male, 45, 40) + 3 * factors[:, 4] + rng.normal(0, 2, n), 20, 60
        ).round(1),
        "oxygen_sat_pct": np.clip(100 - rng.gamma(1.5, 1.5, n), 80, 100).round(),
        "pain_score": np.clip(np.round(rng.gamma(1.2, 2.0, n)), 0, 10).astype(int),
        **{name: np.where(flag, "yes", "no") for name, flag in conditions.items()},
    }
    df = pd.DataFrame(frame)
    # Analytes a ward does not order, and cells missing at random.
    for name in names[:12]:
        skip = np.isin(ward, world.choice(8, size=2, replace=False)) & (rng.random(n) < 0.8)
        df.loc[skip, name] = np.nan
    rare = np.flatnonzero((icu > 0) | (transfused > 0))
    kinds = kinds or LAB_KINDS
    candidates = np.setdiff1d(np.arange(n), rare)
    rows = (
        np.sort(rng.choice(candidates, size=n_anomalies, replace=False)) if n_anomalies else np.zeros(0, int)
    )
    measured = names[12:]  # never blanked by a ward
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "year_typo":
            col = "birth_year"
            df.loc[row, col] = int(df.loc[row, col]) + (200 if rng.random() < 0.5 else -200)
        elif kind == "unit_x1000":
            col = str(rng.choice(measured))
            df.loc[row, col] = float(df.loc[row, col]) * 1000
        elif kind == "negative_count":
            col = str(rng.choice(["visits_12m", "prescriptions", "allergies"]))
            df.loc[row, col] = -int(rng.integers(1, 4))
        elif kind == "decimal_shift":
            col = str(rng.choice(["height_cm", "weight_kg"]))
            df.loc[row, col] = round(float(df.loc[row, col]) * 100, 1)
        elif kind == "sentinel":
            col = str(rng.choice(measured))
            df.loc[row, col] = 999999.0 if rng.random() < 0.5 else -1.0
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": (col,)})
    keep = set(rows.tolist())
    _knock_out(df, ["weight_kg", "lab_20", "lab_31", "hematocrit_pct", "alcohol_units_week", "fasting"],
               missing_rate, rng, keep)  # fmt: skip
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


METER_KINDS = ("counter_reset", "bill_mismatch", "unit_error", "swapped_days_temperature", "wrong_tariff")


def make_meter_readings(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Electricity meter readings, 14 columns: id, read date, meter type, tariff (following the
    type), region, occupants, floor area, the previous and current counter, the consumption
    between them (their difference), billing days, mean outdoor temperature (region and season),
    the bill (the tariff's rate times consumption plus a fixed charge) and a payment method.

    Planted, each breaking a relation while its cells stay in range, or one gross value:
    ``counter_reset`` (current counter below the previous one: current_kwh, consumption_kwh),
    ``bill_mismatch`` (a bill three times what the consumption and tariff make: bill),
    ``unit_error`` (consumption and counter in Wh, 1,000 times: consumption_kwh, current_kwh),
    ``swapped_days_temperature`` (the two cells swapped: billing_days, mean_temp_c),
    ``wrong_tariff`` (a tariff of another meter type: tariff, meter_type).
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(777_000)
    n = n_rows
    types = np.array(["residential", "commercial", "industrial"])
    mtype = rng.choice(3, size=n, p=[0.75, 0.2, 0.05])
    tariffs = {0: ["R-basic", "R-green", "R-night"], 1: ["C-flat", "C-peak"], 2: ["I-bulk", "I-hv"]}
    rate = {"R-basic": 0.31, "R-green": 0.34, "R-night": 0.27, "C-flat": 0.24, "C-peak": 0.29,
            "I-bulk": 0.15, "I-hv": 0.12}  # fmt: skip
    fixed = {0: 9.5, 1: 35.0, 2: 220.0}
    tariff = np.array([str(rng.choice(tariffs[t])) for t in mtype], dtype=object)
    region = rng.choice(6, size=n)
    month = rng.integers(1, 13, n)
    season = np.cos((month - 1) / 12 * 2 * np.pi)  # 1 in January
    temp = world.uniform(6, 14, 6)[region] - 9 * season + rng.normal(0, 2.5, n)
    occupants = np.where(mtype == 0, 1 + rng.poisson(1.6, n), 0)
    area = np.exp(
        np.where(mtype == 0, 4.5 + 0.15 * occupants, np.where(mtype == 1, 6.0, 7.5)) + rng.normal(0, 0.35, n)
    )
    days = rng.integers(28, 34, n)
    base = np.where(mtype == 0, 2.2 + 1.6 * occupants, np.where(mtype == 1, 0.09, 0.25) * area)
    per_day = base * (1 + 0.03 * np.maximum(16 - temp, 0)) * np.exp(rng.normal(0, 0.25, n))
    consumption = np.round(per_day * days)
    previous = np.round(rng.uniform(1_000, 90_000, n) * np.where(mtype == 2, 20, 1))
    current = previous + consumption
    bill = np.array([rate[t] for t in tariff]) * consumption + np.array([fixed[t] for t in mtype])
    df = pd.DataFrame(
        {
            "reading_id": [f"R{random_state:02d}{i:07d}" for i in range(n)],
            "read_date": (pd.Timestamp("2023-12-31") - pd.to_timedelta(rng.integers(0, 28, n), "D")
                          + pd.to_timedelta((month - 12) * 30, "D")).strftime("%d/%m/%Y"),
            "meter_type": types[mtype],
            "tariff": tariff,
            "region": np.array(["north", "south", "east", "west", "coast", "alps"])[region],
            "occupants": occupants,
            "floor_area_m2": area.round(),
            "previous_kwh": previous,
            "current_kwh": current,
            "consumption_kwh": consumption,
            "billing_days": days,
            "mean_temp_c": temp.round(1),
            "bill": bill.round(2),
            "payment": rng.choice(
                ["direct_debit", "card", "transfer", "cash"], size=n, p=[0.6, 0.2, 0.15, 0.05]
            ),
        }
    )  # fmt: skip
    kinds = kinds or METER_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "counter_reset":
            used = float(df.loc[row, "consumption_kwh"])
            df.loc[row, "current_kwh"] = float(df.loc[row, "previous_kwh"]) - used
            df.loc[row, "consumption_kwh"] = -used
            causes: tuple[str, ...] = ("current_kwh", "consumption_kwh")
        elif kind == "bill_mismatch":
            df.loc[row, "bill"] = round(3 * float(df.loc[row, "bill"]), 2)
            causes = ("bill",)
        elif kind == "unit_error":
            used = float(df.loc[row, "consumption_kwh"])
            df.loc[row, "consumption_kwh"] = used * 1000
            df.loc[row, "current_kwh"] = float(df.loc[row, "previous_kwh"]) + used * 1000
            causes = ("consumption_kwh", "current_kwh")
        elif kind == "swapped_days_temperature":
            d, t = df.loc[row, "billing_days"], df.loc[row, "mean_temp_c"]
            df.loc[row, "billing_days"], df.loc[row, "mean_temp_c"] = int(round(abs(t))), float(d)
            causes = ("billing_days", "mean_temp_c")
        elif kind == "wrong_tariff":
            own = int(mtype[row])
            other = [t for m, ts in tariffs.items() if m != own for t in ts]
            df.loc[row, "tariff"] = str(rng.choice(other))
            causes = ("tariff", "meter_type")
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["floor_area_m2", "mean_temp_c", "payment"], missing_rate, rng, set(rows.tolist()))
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]))


#: Families written to judge the flags on tables unlike the first six (a wide laboratory table, a
#: narrow one of relations between meter readings).
FAMILIES.update({"lab_panel": make_lab_panel, "meters": make_meter_readings})


INVOICE_KINDS = ("gross_typo", "quantity_x100", "vat_not_charged", "price_in_cents", "fx_not_applied")


def make_invoices(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Invoices as an accounting system exports them, 16 columns: id, issue time (month first,
    12-hour clock), segment, country and its currency, product line, quantity, unit price,
    discount (0 in most rows), net (quantity times price less the discount), the country's VAT
    rate, the VAT, the gross, the gross in euros (at the currency's rate), payment terms, and
    whether it was paid late; net and gross written with thousands separators.  Several columns
    are exact functions of others: an error in one either breaks a relation or, entered
    upstream, carries through every column computed from it.

    Planted: ``gross_typo`` (the gross with a digit too many, its euro copy right: gross),
    ``quantity_x100`` (a quantity 100 times too large, and everything computed from it with it:
    quantity, net, vat, gross, gross_eur), ``vat_not_charged`` (no VAT where the country charges
    it, the gross equal to the net: vat, gross, vat_rate, gross_eur), ``price_in_cents`` (the unit price
    entered in cents, the net right: unit_price), ``fx_not_applied`` (the euro gross equal to the
    gross of a dollar or pound invoice: gross_eur, currency).
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(31_337)
    n = n_rows
    countries = np.array(["DE", "FR", "NL", "UK", "US", "ES"])
    currency_of = {"DE": "EUR", "FR": "EUR", "NL": "EUR", "UK": "GBP", "US": "USD", "ES": "EUR"}
    vat_of = {"DE": 19.0, "FR": 20.0, "NL": 21.0, "UK": 20.0, "US": 0.0, "ES": 21.0}
    fx = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17}
    lines = [f"line-{c}" for c in "ABCDEFGH"]
    price_level = dict(zip(lines, world.uniform(1.5, 6.0, len(lines)), strict=True))
    segment = rng.choice(["retail", "wholesale", "online"], size=n, p=[0.5, 0.2, 0.3])
    country = rng.choice(countries, size=n, p=[0.3, 0.2, 0.1, 0.15, 0.15, 0.1])
    currency = np.array([currency_of[c] for c in country])
    line = rng.choice(lines, size=n)
    wholesale = segment == "wholesale"
    quantity = np.where(wholesale, rng.integers(20, 400, n), 1 + rng.poisson(2.0, n))
    price = np.round(np.exp(np.array([price_level[x] for x in line]) + rng.normal(0, 0.25, n)), 2)
    discount = np.where(wholesale & (rng.random(n) < 0.7), rng.choice([5.0, 10.0, 15.0], n), 0.0)
    net = np.round(quantity * price * (1 - discount / 100), 2)
    vat_rate = np.array([vat_of[c] for c in country])
    vat = np.round(net * vat_rate / 100, 2)
    gross = np.round(net + vat, 2)
    gross_eur = np.round(gross * np.array([fx[c] for c in currency]), 2)
    terms = np.where(wholesale, rng.choice([30, 60], n), rng.choice([0, 14], n, p=[0.7, 0.3]))
    late = np.where(rng.random(n) < np.where(wholesale, 0.25, 0.08), "yes", "no")
    issued = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365 * 24 * 60, n), "min")
    df = pd.DataFrame(
        {
            "invoice_id": [f"INV{random_state:02d}-{i:06d}" for i in range(n)],
            "issued": issued.strftime("%m/%d/%Y %I:%M %p"),
            "segment": segment,
            "country": country,
            "currency": currency,
            "product_line": line,
            "quantity": quantity,
            "unit_price": price,
            "discount_pct": discount,
            "net": net,
            "vat_rate": vat_rate,
            "vat": vat,
            "gross": gross,
            "gross_eur": gross_eur,
            "payment_terms_days": terms,
            "paid_late": late,
        }
    )
    kinds = kinds or INVOICE_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "gross_typo":
            df.loc[row, "gross"] = round(float(df.loc[row, "gross"]) * 10, 2)
            causes: tuple[str, ...] = ("gross",)
        elif kind == "quantity_x100":
            q = int(df.loc[row, "quantity"]) * 100
            share = 1 - float(df.loc[row, "discount_pct"]) / 100
            n_ = round(q * float(df.loc[row, "unit_price"]) * share, 2)
            v = round(n_ * float(df.loc[row, "vat_rate"]) / 100, 2)
            df.loc[row, ["quantity", "net", "vat", "gross"]] = [q, n_, v, round(n_ + v, 2)]
            df.loc[row, "gross_eur"] = round((n_ + v) * fx[str(df.loc[row, "currency"])], 2)
            causes = ("quantity", "net", "vat", "gross", "gross_eur")
        elif kind == "vat_not_charged":
            if float(df.loc[row, "vat_rate"]) == 0:  # a US invoice: take a German one's place
                df.loc[row, ["country", "currency", "vat_rate"]] = ["DE", "EUR", 19.0]
            df.loc[row, "vat"] = 0.0
            df.loc[row, "gross"] = float(df.loc[row, "net"])
            df.loc[row, "gross_eur"] = round(float(df.loc[row, "net"]) * fx[str(df.loc[row, "currency"])], 2)
            causes = ("vat", "gross", "vat_rate", "gross_eur")
        elif kind == "price_in_cents":
            df.loc[row, "unit_price"] = round(float(df.loc[row, "unit_price"]) * 100, 2)
            causes = ("unit_price",)
        elif kind == "fx_not_applied":
            if df.loc[row, "currency"] == "EUR":  # a euro invoice: make it a pound one
                df.loc[row, ["country", "currency", "vat_rate"]] = ["UK", "GBP", 20.0]
                v = round(float(df.loc[row, "net"]) * 0.2, 2)
                df.loc[row, ["vat", "gross"]] = [v, round(float(df.loc[row, "net"]) + v, 2)]
            df.loc[row, "gross_eur"] = float(df.loc[row, "gross"])
            causes = ("gross_eur", "currency")
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["discount_pct", "paid_late", "payment_terms_days"], missing_rate, rng, set(rows.tolist()))
    for column in ("net", "gross"):  # as an export writes money: 1,234.50
        df[column] = [f"{v:,.2f}" for v in df[column].astype(float)]
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]))


#: A family written to judge the flags and the names on a table of exact relations (money computed
#: from money) in the forms exports write.
FAMILIES["invoices"] = make_invoices


BOOKING_KINDS = (
    "total_missing_digit",
    "over_capacity",
    "rate_in_cents",
    "zero_nights",
    "suite_at_single_price",
    "tax_for_other_hotel",
    "negative_lead_time",
    "arrival_year_typo",
)


def make_bookings(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Hotel bookings as a property-management system exports them, 16 columns: reference, arrival
    date, hotel (two city hotels, a resort, a lodge), room type and its capacity's guests (adults,
    children), nights, days booked ahead, channel, the nightly rate (the hotel's and room's base,
    the season's factor, a corporate discount), the city tax (the hotel's tax per adult and night),
    the total (nights times rate plus the tax: exact), a deposit (0 in most rows, else a fifth of
    the total), breakfast, the guest's country and whether it was cancelled.

    Planted, each an error a front desk or an interface makes: ``total_missing_digit`` (the total
    a tenth of itself: total), ``over_capacity`` (three guests more than the room holds: adults,
    room_type), ``rate_in_cents`` (the rate 100 times: rate, total), ``zero_nights`` (0 nights,
    the total kept: nights), ``suite_at_single_price`` (a single room booked as a suite at the
    single's rate: rate, room_type), ``tax_for_other_hotel`` (another hotel's city tax: city_tax,
    hotel), ``negative_lead_time`` (booked after arrival: lead_days), ``arrival_year_typo`` (the
    year typed 2204: arrival).  ``rare``: stays of three weeks or more, legitimate.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    n = n_rows
    hotels = np.array(["City Centre", "Airport", "Seaside Resort", "Mountain Lodge"])
    rooms = np.array(["single", "double", "family", "suite"])
    capacity = np.array([1, 2, 4, 3])
    base = np.array([[95, 140, 190, 320], [80, 110, 150, 240], [120, 170, 230, 410], [100, 150, 210, 350]])
    tax = np.array([2.5, 1.5, 3.0, 2.0])
    room_p = np.array([[0.35, 0.45, 0.1, 0.1], [0.5, 0.4, 0.05, 0.05], [0.05, 0.5, 0.35, 0.1],
                       [0.1, 0.5, 0.3, 0.1]])  # fmt: skip
    hotel = rng.choice(4, size=n, p=[0.35, 0.25, 0.25, 0.15])
    room = np.array([rng.choice(4, p=room_p[h]) for h in hotel])
    adults = np.array([1 if c == 1 else int(rng.integers(1, min(c, 2) + 1)) for c in capacity[room]])
    children = np.array([int(rng.integers(0, c - a + 1)) if r == 2 else 0
                         for r, c, a in zip(room, capacity[room], adults, strict=True)])  # fmt: skip
    resort = np.isin(hotel, [2, 3])
    nights = 1 + rng.poisson(np.where(resort, 5.0, 1.2))
    long_stay = rng.random(n) < 0.006
    nights = np.where(long_stay, rng.integers(21, 29, n), nights)
    arrival = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 366, n), "D")
    month = arrival.month.to_numpy()
    summer, winter = (month >= 6) & (month <= 8), (month == 12) | (month <= 2)
    season = np.where(resort, 1 + 0.4 * summer + 0.25 * winter, 1.0)
    channel = rng.choice(["web", "agency", "phone", "corporate"], size=n, p=[0.55, 0.2, 0.1, 0.15])
    discount = np.where((channel == "corporate") & ~resort, 0.85, 1.0)
    rate = np.round(base[hotel, room] * season * discount * np.exp(rng.normal(0, 0.05, n)), 2)
    city_tax = np.round(tax[hotel] * adults * nights, 2)
    total = np.round(nights * rate + city_tax, 2)
    deposit = np.where(rng.random(n) < 0.3, np.round(0.2 * total, 2), 0.0)
    df = pd.DataFrame(
        {
            "booking_ref": [f"BK{random_state:03d}{i:06d}" for i in range(n)],
            "arrival": arrival.strftime("%Y-%m-%d"),
            "hotel": hotels[hotel].astype(object),
            "room_type": rooms[room].astype(object),
            "adults": adults,
            "children": children,
            "nights": nights.astype(int),
            "lead_days": np.round(rng.exponential(np.where(resort, 70.0, 25.0))).astype(int),
            "channel": channel.astype(object),
            "rate": rate,
            "city_tax": city_tax,
            "total": total,
            "deposit": deposit,
            "breakfast": rng.choice(["yes", "no"], size=n, p=[0.6, 0.4]).astype(object),
            "country": rng.choice(
                ["DE", "NL", "FR", "UK", "US", "IT", "CH", "PL"],
                size=n,
                p=[0.35, 0.15, 0.12, 0.1, 0.08, 0.08, 0.07, 0.05],
            ).astype(object),  # fmt: skip
            "cancelled": np.where(rng.random(n) < 0.08, "yes", "no").astype(object),
        }
    )
    kinds = kinds or BOOKING_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "total_missing_digit":
            df.loc[row, "total"] = round(float(df.loc[row, "total"]) / 10, 2)
            causes: tuple[str, ...] = ("total",)
        elif kind == "over_capacity":
            if room[row] >= 2:  # make it a double
                df.loc[row, "room_type"] = "double"
                df.loc[row, "children"] = 0
            cap = 1 if df.loc[row, "room_type"] == "single" else 2
            df.loc[row, "adults"] = cap + 3
            causes = ("adults", "room_type")
        elif kind == "rate_in_cents":
            df.loc[row, "rate"] = round(float(df.loc[row, "rate"]) * 100, 2)
            causes = ("rate", "total")
        elif kind == "zero_nights":
            df.loc[row, "nights"] = 0
            causes = ("nights",)
        elif kind == "suite_at_single_price":
            df.loc[row, "room_type"] = "suite"
            df.loc[row, "rate"] = round(float(base[hotel[row], 0] * season[row] * discount[row]), 2)
            df.loc[row, "total"] = round(float(df.loc[row, "nights"]) * float(df.loc[row, "rate"])
                                         + float(df.loc[row, "city_tax"]), 2)  # fmt: skip
            causes = ("rate", "room_type")
        elif kind == "tax_for_other_hotel":
            other = int(np.argmax(np.abs(tax - tax[hotel[row]])))
            df.loc[row, "city_tax"] = round(float(tax[other] * adults[row] * nights[row]), 2)
            df.loc[row, "total"] = round(float(nights[row] * rate[row]) + float(df.loc[row, "city_tax"]), 2)
            causes = ("city_tax", "hotel")
        elif kind == "negative_lead_time":
            df.loc[row, "lead_days"] = -int(rng.integers(3, 40))
            causes = ("lead_days",)
        elif kind == "arrival_year_typo":
            df.loc[row, "arrival"] = "2204" + str(df.loc[row, "arrival"])[4:]
            causes = ("arrival",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["lead_days", "breakfast", "country", "deposit"], missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(long_stay), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


#: A family written after the others, to judge the flags on a table none of them was tuned on:
#: exact money relations, capacities, walls, an impossible date.
FAMILIES["bookings"] = make_bookings


FLOW_KINDS = (
    "bytes_in_kilobytes",
    "counter_wrap",
    "negative_duration",
    "port_out_of_range",
    "icmp_with_port",
    "exfiltration",
    "epoch_timestamp",
    "deny_with_traffic",
)

#: Services of the flows table: destination port, protocol, share of flows, mean packet size in bytes,
#: log-mean and log-sd of the packet count, and whether the destination is inside the network.
_SERVICES = (
    (443, "TCP", 0.45, 900.0, 3.0, 1.0, False),
    (80, "TCP", 0.10, 700.0, 2.5, 1.0, False),
    (53, "UDP", 0.20, 90.0, 0.2, 0.3, True),
    (123, "UDP", 0.03, 76.0, 0.0, 0.0, False),
    (22, "TCP", 0.05, 200.0, 3.5, 1.2, True),
    (25, "TCP", 0.02, 600.0, 3.0, 0.8, False),
    (3389, "TCP", 0.03, 300.0, 4.0, 1.0, True),
    (445, "TCP", 0.05, 800.0, 3.5, 1.2, True),
    (0, "ICMP", 0.07, 84.0, 0.7, 0.4, False),
)


def make_network_flows(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.03,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Network flows as a firewall exports them, 14 columns: flow id, start time, source and
    destination address (an internal host; an internal server or one of a few thousand outside
    addresses, many seen once), the source's zone (set by its subnet), source and destination
    port, protocol, TCP flags, action, packets, bytes (packets times a packet size between the
    headers' 40 bytes and the 1,500 of a frame), duration in ms and the destination's country
    (missing where the lookup failed).

    Planted, each an error an exporter makes or a flow a person would stop: ``bytes_in_kilobytes``
    (bytes a thousandth of themselves, fewer than the headers: bytes), ``counter_wrap`` (a 32-bit
    counter wrapped, 4.29e9 bytes: bytes), ``negative_duration`` (ended before it began:
    duration_ms), ``port_out_of_range`` (a port above 65,535: dst_port), ``icmp_with_port``
    (ICMP with the ports of a web flow: protocol, dst_port), ``exfiltration`` (an office host
    sending a gigabyte outside over 443: bytes, packets, duration_ms), ``epoch_timestamp`` (a
    start of 1970-01-01: start), ``deny_with_traffic`` (a denied flow that carried thousands of
    packets: action, packets, bytes).  ``rare``: backups from the data centre to the backup
    server, hundreds of megabytes each, legitimate.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(4242)
    n = n_rows
    office = [f"10.1.{s}.{h}" for s in range(5) for h in world.choice(np.arange(2, 250), 30, replace=False)]
    datacentre = [f"10.2.0.{h}" for h in range(10, 40)]
    guest = [f"10.9.{s}.{h}" for s in range(2) for h in world.choice(np.arange(2, 250), 20, replace=False)]
    hosts = np.array(office + datacentre + guest, dtype=object)
    zones = np.array(["office"] * len(office) + ["datacentre"] * len(datacentre) + ["guest"] * len(guest))
    host_p = np.r_[np.full(len(office), 0.7 / len(office)), np.full(len(datacentre), 0.2 / len(datacentre)),
                   np.full(len(guest), 0.1 / len(guest))]  # fmt: skip
    octets = world.integers(11, 223, (3000, 4))
    outside = np.array([f"{a}.{b}.{c}.{d}" for a, b, c, d in octets], dtype=object)
    outside_country = world.choice(["US", "DE", "NL", "IE", "FR", "GB", "SG"], 3000,
                                   p=[0.4, 0.2, 0.12, 0.1, 0.08, 0.06, 0.04])  # fmt: skip
    outside_p = 1.0 / np.arange(1, 3001) ** 0.9
    servers = {53: "10.2.0.53", 22: "10.2.0.22", 3389: "10.2.0.33", 445: "10.2.0.45"}

    src = rng.choice(len(hosts), size=n, p=host_p / host_p.sum())
    service = rng.choice(len(_SERVICES), size=n, p=[s[2] for s in _SERVICES])
    port = np.array([_SERVICES[s][0] for s in service])
    protocol = np.array([_SERVICES[s][1] for s in service], dtype=object)
    inside = np.array([_SERVICES[s][6] for s in service])
    far = rng.choice(3000, size=n, p=outside_p / outside_p.sum())
    server = np.array([servers.get(int(p), "10.2.0.53") for p in port], dtype=object)
    dst = np.where(inside, server, outside[far])
    country = np.where(inside, "internal", outside_country[far]).astype(object)
    log_mean, log_sd = (np.array([_SERVICES[s][i] for s in service]) for i in (4, 5))
    packets = np.maximum(1, np.round(np.exp(log_mean + rng.normal(size=n) * log_sd)))
    size = np.array([_SERVICES[s][3] for s in service]) * np.exp(rng.normal(0, 0.15, n))
    size = np.where(port == 123, 76.0, size)
    flags = np.where(protocol == "TCP", rng.choice(["SAF", "SAR", "S"], size=n, p=[0.85, 0.1, 0.05]), "-")
    action = np.where(rng.random(n) < 0.03, "deny", "allow")
    short = (flags == "S") | (action == "deny")
    packets = np.where(short, np.minimum(packets, rng.integers(1, 4, n)), packets)
    size = np.where(short & (protocol == "TCP"), 60.0, size)
    flags = np.where((action == "deny") & (protocol == "TCP"), "S", flags)
    ms_per_packet = np.where(protocol == "ICMP", 1000.0, np.where(protocol == "UDP", 15.0, 20.0))
    duration = np.round(packets * ms_per_packet * np.exp(rng.normal(0, 0.6, n)))
    # Backups: rare, huge and legitimate (from the data centre to the backup server, rsync's port).
    backup = rng.random(n) < 0.005
    src = np.where(backup, rng.choice(np.arange(len(office), len(office) + len(datacentre)), n), src)
    port = np.where(backup, 873, port)
    protocol = np.where(backup, "TCP", protocol).astype(object)
    dst = np.where(backup, "10.2.0.200", dst).astype(object)
    country = np.where(backup, "internal", country).astype(object)
    flags = np.where(backup, "SAF", flags)
    action = np.where(backup, "allow", action)
    packets = np.where(backup, np.round(np.exp(rng.normal(13.0, 0.5, n))), packets)
    size = np.where(backup, 1400.0, size)
    duration = np.where(backup, np.round(packets * 0.004 * np.exp(rng.normal(0, 0.3, n))), duration)
    bounds = (np.where(protocol == "TCP", 40.0, 28.0), 1500.0)
    nbytes = np.round(packets * np.clip(size, *bounds)).astype(np.int64)
    start = (pd.Timestamp("2024-03-04") + pd.to_timedelta(rng.integers(0, 7, n), "D")
             + pd.to_timedelta(np.clip(rng.normal(13, 3.5, n), 0, 23.99) * 3600, "s"))  # fmt: skip
    client = protocol != "ICMP"
    df = pd.DataFrame(
        {
            "flow_id": [f"F{random_state:03d}{i:07d}" for i in range(n)],
            "start": start.strftime("%Y-%m-%d %H:%M:%S"),
            "src_ip": hosts[src],
            "src_zone": zones[src].astype(object),
            "dst_ip": dst,
            "src_port": np.where(client, rng.integers(49152, 65536, n), 0),
            "dst_port": port.astype(np.int64),
            "protocol": protocol,
            "tcp_flags": flags.astype(object),
            "action": action.astype(object),
            "packets": packets.astype(np.int64),
            "bytes": nbytes,
            "duration_ms": duration,
            "dst_country": country,
        }
    )
    kinds = kinds or FLOW_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "bytes_in_kilobytes":
            df.loc[row, "bytes"] = max(int(df.loc[row, "bytes"]) // 1000, 1)
            causes: tuple[str, ...] = ("bytes",)
        elif kind == "counter_wrap":
            df.loc[row, "bytes"] = 2**32 - int(rng.integers(1, 10**6))
            causes = ("bytes",)
        elif kind == "negative_duration":
            df.loc[row, "duration_ms"] = -float(rng.integers(1000, 90000))
            causes = ("duration_ms",)
        elif kind == "port_out_of_range":
            df.loc[row, "dst_port"] = int(df.loc[row, "dst_port"]) + 65536
            causes = ("dst_port",)
        elif kind == "icmp_with_port":
            # a web flow's ports, labelled ICMP
            df.loc[row, ["protocol", "dst_port", "tcp_flags", "dst_country"]] = ["ICMP", 443, "-", "US"]
            df.loc[row, "src_port"] = int(rng.integers(49152, 65536))
            causes = ("protocol", "dst_port")
        elif kind == "exfiltration":
            p = float(np.round(np.exp(rng.normal(13.7, 0.3))))
            df.loc[row, ["src_ip", "src_zone", "dst_ip", "dst_port", "protocol", "tcp_flags", "action"]] = [
                hosts[int(rng.integers(0, len(office)))], "office", outside[int(rng.integers(0, 3000))],
                443, "TCP", "SAF", "allow"]  # fmt: skip
            df.loc[row, "packets"] = int(p)
            df.loc[row, "bytes"] = int(p * 1400)
            df.loc[row, "duration_ms"] = float(np.round(p * 0.004))
            causes = ("bytes", "packets", "duration_ms")
        elif kind == "epoch_timestamp":
            df.loc[row, "start"] = "1970-01-01 00:00:00"
            causes = ("start",)
        elif kind == "deny_with_traffic":
            df.loc[row, ["action", "protocol", "tcp_flags", "dst_port"]] = ["deny", "TCP", "SAF", 443]
            p = int(rng.integers(2000, 9000))
            df.loc[row, "packets"] = p
            df.loc[row, "bytes"] = int(p * 900)
            causes = ("action", "packets", "bytes")
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["dst_country", "duration_ms"], missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(backup), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


#: A family written after the others, on a kind of table none of them is: addresses of high
#: cardinality, ports, counters with bounds between them, a rare legitimate kind of flow.
FAMILIES["flows"] = make_network_flows


EMPLOYEE_KINDS = (
    "salary_monthly",
    "hired_as_child",
    "bonus_over_salary",
    "title_for_other_level",
    "hours_extra_digit",
    "part_time_paid_full",
    "rating_off_scale",
    "negative_sick_days",
    "overtime_for_director",
    "salary_for_other_level",
)


def make_employees(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.03,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """An HR system's export of employees, 17 columns: id, department, office, job level (1-6) and
    the title that goes with it, birth and hire years and the years of service they give (exact),
    the annual salary (log-normal by level and department, rising with service), a bonus (0 below
    level 3, else a share of the salary), weekly hours (40 for most, part time for some, 10 for a
    few interns), the full-time share those hours are, the monthly pay (salary times that share
    over 12: exact), overtime hours (0 for most and for every manager), sick days, a rating of 1 to
    5 and whether the employee works remotely; missing cells in three columns.

    Planted, each an error a person or an interface makes: ``salary_monthly`` (the monthly salary
    entered as the annual one: salary), ``hired_as_child`` (a hire year 10 years after the birth
    year, service to match: hire_year, birth_year), ``bonus_over_salary`` (a bonus 1.5 to 3 times
    the salary: bonus), ``title_for_other_level`` (the title of a level 3 or more away: title,
    job_level), ``hours_extra_digit`` (400 hours a week: hours_per_week), ``part_time_paid_full``
    (a part-timer's monthly pay at full time: monthly_pay), ``rating_off_scale`` (a rating of 0 or
    10: rating), ``negative_sick_days`` (sick_days), ``overtime_for_director`` (20-40 hours of
    overtime at level 6: overtime_hours, job_level), ``salary_for_other_level`` (a level-1 or -2
    employee paid a level-6 salary, within the column's range: salary, job_level).  The interns
    (10 hours, level 1) are rare but legitimate (``rare``).

    Written before any result on it was seen, to judge the flags on a table none of the detector's
    rules was tuned on.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(5151)
    n = n_rows
    departments = ["sales", "engineering", "support", "finance", "hr", "operations", "legal"]
    dept = rng.choice(len(departments), size=n, p=[0.22, 0.28, 0.18, 0.1, 0.06, 0.12, 0.04])
    dept_effect = world.normal(0, 0.12, len(departments))
    level = np.minimum(1 + rng.binomial(5, np.array([0.3, 0.4, 0.25, 0.4, 0.35, 0.3, 0.5])[dept]), 6)
    titles = np.array(["associate", "analyst", "senior", "lead", "manager", "director"])
    birth = rng.integers(1960, 2003, n)
    earliest = np.maximum(birth + 18, 1985)
    hire = np.minimum(earliest + np.floor(rng.exponential(6, n)).astype(int), 2024)
    service = 2024 - hire
    salary = np.exp(10.3 + 0.22 * level + dept_effect[dept] + 0.01 * service + rng.normal(0, 0.12, n))
    share = np.where(level >= 3, rng.beta(2, 12, n) * (level / 3), 0.0)
    share = np.where((level == 2) & (rng.random(n) < 0.05), rng.beta(2, 20, n), share)
    bonus = np.round(salary * share, -1)
    hours = rng.choice([40, 32, 30, 20, 45], size=n, p=[0.82, 0.06, 0.04, 0.04, 0.04])
    intern = (level == 1) & (rng.random(n) < 0.03)
    hours = np.where(intern, 10, hours)
    fte = np.round(np.minimum(hours / 40, 1.0), 3)
    monthly = np.round(salary * fte / 12, 2)
    overtime = np.where((level <= 4) & (rng.random(n) < 0.3), rng.poisson(6, n), 0)
    df = pd.DataFrame(
        {
            "employee_id": [f"E{random_state:03d}{i:05d}" for i in range(n)],
            "department": np.array(departments)[dept],
            "office": rng.choice(
                ["Berlin", "Munich", "Hamburg", "Vienna", "Zurich"], size=n, p=[0.35, 0.25, 0.2, 0.12, 0.08]
            ),
            "job_level": level,
            "title": titles[level - 1],
            "birth_year": birth,
            "hire_year": hire,
            "years_of_service": service,
            "salary": np.round(salary, 0),
            "bonus": bonus,
            "hours_per_week": hours,
            "fte": fte,
            "monthly_pay": monthly,
            "overtime_hours": overtime,
            "sick_days": rng.negative_binomial(2, 0.35, n),
            "rating": np.clip(np.round(rng.normal(3.3, 0.8, n)), 1, 5).astype(int),
            "remote": np.where(rng.random(n) < np.where(np.isin(dept, [1, 2]), 0.5, 0.15), "yes", "no"),
        }
    )
    kinds = kinds or EMPLOYEE_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "salary_monthly":
            df.loc[row, "salary"] = round(float(salary[row]) / 12, 0)
            causes: tuple[str, ...] = ("salary",)
        elif kind == "hired_as_child":
            df.loc[row, "hire_year"] = int(birth[row] + 10)
            df.loc[row, "years_of_service"] = int(2024 - birth[row] - 10)
            causes = ("hire_year", "birth_year", "years_of_service")
        elif kind == "bonus_over_salary":
            df.loc[row, "bonus"] = round(float(salary[row]) * float(rng.uniform(1.5, 3.0)), -1)
            causes = ("bonus",)
        elif kind == "title_for_other_level":
            far = [t for i, t in enumerate(titles) if abs(i + 1 - level[row]) >= 3]
            df.loc[row, "title"] = str(rng.choice(far))
            causes = ("title", "job_level")
        elif kind == "hours_extra_digit":
            df.loc[row, "hours_per_week"] = 400
            causes = ("hours_per_week",)
        elif kind == "part_time_paid_full":
            df.loc[row, ["hours_per_week", "fte"]] = [20, 0.5]
            df.loc[row, "monthly_pay"] = round(float(salary[row]) / 12, 2)
            causes = ("monthly_pay", "fte", "hours_per_week")
        elif kind == "rating_off_scale":
            df.loc[row, "rating"] = int(rng.choice([0, 10]))
            causes = ("rating",)
        elif kind == "negative_sick_days":
            df.loc[row, "sick_days"] = -int(rng.integers(2, 9))
            causes = ("sick_days",)
        elif kind == "overtime_for_director":
            df.loc[row, ["job_level", "title"]] = [6, "director"]
            df.loc[row, "salary"] = round(float(np.exp(10.3 + 0.22 * 6 + dept_effect[dept[row]])), 0)
            df.loc[row, "overtime_hours"] = int(rng.integers(20, 41))
            causes = ("overtime_hours", "job_level")
        elif kind == "salary_for_other_level":
            low = int(rng.integers(1, 3))
            df.loc[row, ["job_level", "title", "bonus"]] = [low, titles[low - 1], 0.0]
            pay = float(np.exp(10.3 + 0.22 * 6 + dept_effect[dept[row]] + 0.01 * service[row]))
            df.loc[row, "salary"] = round(pay, 0)
            df.loc[row, "monthly_pay"] = round(pay * float(fte[row]) / 12, 2)
            causes = ("salary", "job_level", "monthly_pay")
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["rating", "sick_days", "office"], missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(intern), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


FAMILIES["employees"] = make_employees


TRIP_KINDS = (
    "dropoff_before_pickup",
    "distance_extra_digits",
    "zero_distance_full_fare",
    "tip_on_cash",
    "total_digits_swapped",
    "negative_fare",
    "pickup_year_typo",
    "borough_for_other_zone",
    "meter_left_running",
    "airport_rate_short_fare",
    "tolls_without_decimal",
)

#: Pickup zones and the borough each lies in.
TAXI_ZONES = {
    "Midtown": "Manhattan",
    "Upper East Side": "Manhattan",
    "Upper West Side": "Manhattan",
    "Chelsea": "Manhattan",
    "Financial District": "Manhattan",
    "Harlem": "Manhattan",
    "SoHo": "Manhattan",
    "Williamsburg": "Brooklyn",
    "Park Slope": "Brooklyn",
    "Downtown Brooklyn": "Brooklyn",
    "Astoria": "Queens",
    "Long Island City": "Queens",
    "JFK Airport": "Queens",
    "LaGuardia Airport": "Queens",
    "Riverdale": "Bronx",
    "St. George": "Staten Island",
}


def make_taxi_trips(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """A taxi fleet's trip records as its meters export them, 17 columns: id, vendor, pickup and
    dropoff times (the dropoff after the pickup by the trip's minutes), passengers, distance in
    miles, pickup zone and the borough it lies in (exact), dropoff zone, rate code (standard, or
    the airport's flat fare), payment type, the fare (3.00 plus 2.50 a mile plus 0.50 a minute, or
    70.00 flat), the night or rush-hour extra, a 0.50 tax, the tip (a share of the fare by card,
    always 0 in cash), tolls (0, or 6.94 for a bridge) and the total (their sum plus a 1.00
    surcharge: exact); missing cells in two columns.

    Planted, each an error a meter, a driver or an export makes: ``dropoff_before_pickup`` (the two
    times swapped), ``distance_extra_digits`` (the distance 100 times too large: trip_distance),
    ``zero_distance_full_fare`` (the distance lost, 0, beside an ordinary fare: trip_distance),
    ``tip_on_cash`` (a cash trip with a tip, the total to match: tip_amount, payment_type),
    ``total_digits_swapped`` (two digits of the total swapped: total_amount), ``negative_fare``
    (fare and total negative: fare_amount, total_amount), ``pickup_year_typo`` (2042 for 2024:
    pickup_datetime), ``borough_for_other_zone`` (pickup_borough, pickup_zone),
    ``meter_left_running`` (the dropoff 10 to 14 hours after the pickup, the fare for the trip's
    minutes: dropoff_datetime), ``airport_rate_short_fare`` (the airport's rate code with a
    metered fare of a short trip: fare_amount, rate_code), ``tolls_without_decimal`` (694 for
    6.94, the total to match: tolls_amount).  Trips cancelled at the kerb (distance 0, one
    minute, the 3.00 minimum) are rare but legitimate (``rare``).

    Written before any result on it was seen, to judge the flags on a table none of the detector's
    rules was tuned on.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    n = n_rows
    zones = np.array(list(TAXI_ZONES))
    weights = np.array([14, 8, 7, 8, 7, 4, 6, 6, 4, 4, 5, 4, 5, 5, 2, 1], dtype=float)
    pickup_zone = rng.choice(zones, size=n, p=weights / weights.sum())
    dropoff_zone = rng.choice(zones, size=n, p=weights / weights.sum())
    airport = np.isin(pickup_zone, ["JFK Airport"]) & (rng.random(n) < 0.8)
    distance = np.where(airport, rng.normal(17.5, 1.5, n), np.exp(rng.normal(np.log(1.9), 0.75, n)))
    minutes = np.maximum(1.0, distance * rng.uniform(2.5, 6.0, n) + rng.exponential(2.0, n))
    cancelled = ~airport & (rng.random(n) < 0.005)
    distance = np.where(cancelled, 0.0, np.round(distance, 2))
    minutes = np.where(cancelled, 1.0, np.round(minutes, 0))
    start = (
        pd.Timestamp("2024-03-01")
        + pd.to_timedelta(rng.integers(0, 31, n), "D")
        + pd.to_timedelta(rng.integers(0, 24 * 3600, n), "s")
    )
    end = start + pd.to_timedelta(minutes * 60 + rng.integers(0, 60, n), "s")
    hour = start.hour.to_numpy()
    extra = np.where((hour >= 20) | (hour < 6), 1.0, np.where((hour >= 16) & (start.dayofweek < 5), 0.5, 0.0))
    fare = np.where(airport, 70.0, np.round(3.0 + 2.5 * distance + 0.5 * minutes, 1))
    fare = np.where(cancelled, 3.0, fare)
    payment = rng.choice(["card", "cash", "dispute"], size=n, p=[0.7, 0.28, 0.02])
    tip = np.where(payment == "card", np.round(fare * rng.uniform(0.1, 0.25, n), 2), 0.0)
    tip = np.where((payment == "card") & (rng.random(n) < 0.1), 0.0, tip)
    tolls = np.where(rng.random(n) < np.where(airport, 0.5, 0.06), 6.94, 0.0)
    total = np.round(fare + extra + 0.5 + tip + tolls + 1.0, 2)
    passengers = rng.choice([1, 2, 3, 4, 5, 6], size=n, p=[0.7, 0.15, 0.05, 0.03, 0.04, 0.03]).astype(float)
    df = pd.DataFrame(
        {
            "trip_id": [f"T{random_state:04d}{i:06d}" for i in range(n)],
            "vendor": rng.choice(["CMT", "VTS"], size=n, p=[0.4, 0.6]),
            "pickup_datetime": start.strftime("%Y-%m-%d %H:%M:%S"),
            "dropoff_datetime": end.strftime("%Y-%m-%d %H:%M:%S"),
            "passenger_count": passengers,
            "trip_distance": distance,
            "pickup_zone": pickup_zone,
            "pickup_borough": np.array([TAXI_ZONES[z] for z in pickup_zone]),
            "dropoff_zone": dropoff_zone,
            "rate_code": np.where(airport, "JFK", "standard"),
            "payment_type": payment,
            "fare_amount": fare,
            "extra": extra,
            "mta_tax": 0.5,
            "tip_amount": tip,
            "tolls_amount": tolls,
            "total_amount": total,
        }
    )
    kinds = kinds or TRIP_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "dropoff_before_pickup":
            df.loc[row, ["pickup_datetime", "dropoff_datetime"]] = [
                df.loc[row, "dropoff_datetime"],
                df.loc[row, "pickup_datetime"],
            ]
            causes: tuple[str, ...] = ("dropoff_datetime", "pickup_datetime")
        elif kind == "distance_extra_digits":
            df.loc[row, "trip_distance"] = round(float(distance[row]) * 100, 2)
            causes = ("trip_distance",)
        elif kind == "zero_distance_full_fare":
            df.loc[row, "trip_distance"] = 0.0
            causes = ("trip_distance",)
        elif kind == "tip_on_cash":
            new_tip = round(float(fare[row]) * float(rng.uniform(0.15, 0.25)), 2)
            df.loc[row, ["payment_type", "tip_amount"]] = ["cash", new_tip]
            df.loc[row, "total_amount"] = round(float(total[row] - tip[row] + new_tip), 2)
            causes = ("tip_amount", "payment_type")
        elif kind == "total_digits_swapped":
            text = f"{total[row]:.2f}"
            whole = text.split(".")[0]
            two = len(whole) >= 2 and whole[0] != whole[1]
            swapped = whole[1] + whole[0] + whole[2:] if two else "1" + whole
            df.loc[row, "total_amount"] = float(swapped + "." + text.split(".")[1])
            causes = ("total_amount",)
        elif kind == "negative_fare":
            df.loc[row, ["fare_amount", "total_amount"]] = [-float(fare[row]), -float(total[row])]
            causes = ("fare_amount", "total_amount")
        elif kind == "pickup_year_typo":
            df.loc[row, "pickup_datetime"] = "2042" + str(df.loc[row, "pickup_datetime"])[4:]
            causes = ("pickup_datetime",)
        elif kind == "borough_for_other_zone":
            others = sorted(set(TAXI_ZONES.values()) - {TAXI_ZONES[str(pickup_zone[row])]})
            df.loc[row, "pickup_borough"] = str(rng.choice(others))
            causes = ("pickup_borough", "pickup_zone")
        elif kind == "meter_left_running":
            late = start[row] + pd.to_timedelta(float(minutes[row]) + float(rng.uniform(600, 840)), "min")
            df.loc[row, "dropoff_datetime"] = late.strftime("%Y-%m-%d %H:%M:%S")
            causes = ("dropoff_datetime",)
        elif kind == "airport_rate_short_fare":
            short = round(3.0 + 2.5 * float(rng.uniform(1.0, 3.0)) + 0.5 * float(rng.uniform(8, 15)), 1)
            df.loc[row, ["rate_code", "fare_amount"]] = ["JFK", short]
            df.loc[row, "total_amount"] = round(float(total[row] - fare[row] + short), 2)
            causes = ("fare_amount", "rate_code")
        elif kind == "tolls_without_decimal":
            df.loc[row, "tolls_amount"] = 694.0
            df.loc[row, "total_amount"] = round(float(total[row] - tolls[row] + 694.0), 2)
            causes = ("tolls_amount",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["passenger_count", "dropoff_zone"], missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(cancelled), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


FAMILIES["trips"] = make_taxi_trips


GRADE_KINDS = (
    "score_over_maximum",
    "score_extra_digit",
    "letter_for_other_average",
    "total_off",
    "age_for_other_year",
    "attendance_as_fraction",
    "negative_absences",
    "passed_flipped",
    "scholarship_flipped",
    "exam_year_typo",
)


def make_exam_results(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """A school district's exam results, 16 columns: student id, school, class year (9-12) and the
    age that goes with it (year plus 5 or 6), gender, lunch plan, the exam date, three scores of 0
    to 100 (an ability shared by the three and a school effect; 100 is a ceiling some reach), their
    total and average (exact), the letter grade the average gives (A from 85, B from 70, C from 55,
    D from 40, else F), whether the student passed (all but F), a scholarship (exactly the averages
    of 90 or more), the attendance in percent and the days absent it gives (of 180); missing cells
    in two columns.

    Planted, each an error a teacher or an interface makes: ``score_over_maximum`` (a maths score
    of 105 to 130, the total, average and grades following it: math), ``score_extra_digit``
    (a science score with a 0 typed after it, the total not following: science),
    ``letter_for_other_average`` (a letter two or more grades away: grade),
    ``total_off`` (the total 10 to 30 off the three scores: total), ``age_for_other_year`` (an age
    of 24 to 30: age), ``attendance_as_fraction`` (0.93 for 93.0: attendance_pct),
    ``negative_absences`` (absences), ``passed_flipped`` (passed or failed against the grade:
    passed), ``scholarship_flipped`` (a scholarship the average does not give, or none where it
    does: scholarship), ``exam_year_typo`` (2014 for 2024: exam_date).  Students repeating a year
    (their age the year plus 7) are rare but legitimate (``rare``).

    Written before any result on it was seen, to judge the flags on a table none of the detector's
    rules was tuned on.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(4242)
    n = n_rows
    schools = np.array(
        ["Lincoln", "Roosevelt", "Jefferson", "Madison", "Franklin", "Kennedy", "Adams", "Grant"]
    )
    school = rng.choice(len(schools), size=n, p=[0.18, 0.16, 0.15, 0.13, 0.12, 0.1, 0.09, 0.07])
    effect = world.normal(0, 6, len(schools))
    year = rng.integers(9, 13, n)
    repeater = rng.random(n) < 0.01
    age = np.where(repeater, year + 7, year + 5 + (rng.random(n) < 0.35))
    ability = rng.normal(0, 1, n)
    lunch = np.where(rng.random(n) < 0.35, "reduced", "standard")

    def score(weight: float, mean: float) -> np.ndarray:
        raw = mean + effect[school] + 13 * (weight * ability + np.sqrt(1 - weight**2) * rng.normal(0, 1, n))
        raw = raw - np.where(lunch == "reduced", 4.0, 0.0)
        return np.clip(np.round(raw), 0, 100).astype(int)

    math, reading, science = score(0.8, 66), score(0.75, 70), score(0.8, 64)
    total = math + reading + science

    def letters(avg: np.ndarray) -> np.ndarray:
        return np.select([avg >= 85, avg >= 70, avg >= 55, avg >= 40], ["A", "B", "C", "D"], "F")

    average = np.round(total / 3, 1)
    grade = letters(average)
    attendance = np.round(np.clip(100 * rng.beta(30, 2, n) + 0.4 * (ability > 1), 60, 100), 1)
    absences = np.round((100 - attendance) / 100 * 180).astype(int)
    exam = pd.Timestamp("2024-05-13") + pd.to_timedelta(rng.integers(0, 40, n), "D")
    df = pd.DataFrame(
        {
            "student_id": [f"S{random_state:04d}-{i:05d}" for i in range(n)],
            "school": schools[school],
            "class_year": year,
            "age": age,
            "gender": rng.choice(["F", "M"], size=n),
            "lunch": lunch,
            "exam_date": exam.strftime("%Y-%m-%d"),
            "math": math,
            "reading": reading,
            "science": science,
            "total": total,
            "average": average,
            "grade": grade,
            "passed": np.where(grade == "F", "no", "yes"),
            "scholarship": np.where(average >= 90, "yes", "no"),
            "attendance_pct": attendance,
            "absences": absences,
        }
    )
    kinds = kinds or GRADE_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    order = ["A", "B", "C", "D", "F"]
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "score_over_maximum":
            high = int(rng.integers(105, 131))
            new_total = high + int(reading[row]) + int(science[row])
            avg = round(new_total / 3, 1)
            letter = str(letters(np.array([avg]))[0])
            df.loc[row, ["math", "total", "average", "grade"]] = [high, new_total, avg, letter]
            df.loc[row, "passed"] = "no" if letter == "F" else "yes"
            df.loc[row, "scholarship"] = "yes" if avg >= 90 else "no"
            causes: tuple[str, ...] = ("math",)
        elif kind == "score_extra_digit":
            df.loc[row, "science"] = int(science[row]) * 10 if science[row] >= 10 else 990
            causes = ("science",)
        elif kind == "letter_for_other_average":
            here = order.index(str(grade[row]))
            far = [g for i, g in enumerate(order) if abs(i - here) >= 2]
            df.loc[row, "grade"] = str(rng.choice(far))
            causes = ("grade",)
        elif kind == "total_off":
            df.loc[row, "total"] = int(total[row]) + int(rng.choice([-1, 1])) * int(rng.integers(10, 31))
            causes = ("total",)
        elif kind == "age_for_other_year":
            df.loc[row, "age"] = int(rng.integers(24, 31))
            causes = ("age",)
        elif kind == "attendance_as_fraction":
            df.loc[row, "attendance_pct"] = round(float(attendance[row]) / 100, 3)
            causes = ("attendance_pct",)
        elif kind == "negative_absences":
            df.loc[row, "absences"] = -int(rng.integers(3, 15))
            causes = ("absences",)
        elif kind == "passed_flipped":
            df.loc[row, "passed"] = "yes" if grade[row] == "F" else "no"
            causes = ("passed",)
        elif kind == "scholarship_flipped":
            df.loc[row, "scholarship"] = "no" if average[row] >= 90 else "yes"
            causes = ("scholarship",)
        elif kind == "exam_year_typo":
            df.loc[row, "exam_date"] = "2014" + str(df.loc[row, "exam_date"])[4:]
            causes = ("exam_date",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["lunch", "attendance_pct"], missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(repeater), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


FAMILIES["exams"] = make_exam_results


LOAN_KINDS = (
    "income_extra_zeros",
    "payment_for_other_term",
    "rate_for_other_grade",
    "age_impossible",
    "employment_beyond_age",
    "issued_before_application",
    "term_not_offered",
    "amount_in_cents",
    "negative_delinquencies",
    "total_not_payments",
    "score_out_of_range",
)
#: A loan grade's lowest interest rate (percent a year); a grade's rates run 2.5 points above it.
GRADE_RATES = {"A": 6.5, "B": 9.5, "C": 12.5, "D": 15.5, "E": 18.5, "F": 21.5, "G": 24.5}


def _instalment(amount: np.ndarray, rate: np.ndarray, term: np.ndarray) -> np.ndarray:
    """The monthly instalment that repays ``amount`` at ``rate`` percent a year over ``term`` months."""
    r = np.asarray(rate, dtype=float) / 1200
    return np.round(amount * r / (1 - (1 + r) ** -np.asarray(term, dtype=float)), 2)


def make_loan_applications(
    n_rows: int = 3000,
    n_anomalies: int = 22,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """A lender's issued loans, 20 columns: loan id, application and issue dates (the issue 2 to
    21 days after), the borrower's state, the loan's purpose, age (21 to 65), years employed (at
    most the age less 18), home ownership, annual income (log-normal, rounded to 100), credit score
    (560 to 850), the grade it gives (A to G, by score bands with some overlap), the interest rate
    (the grade's lowest rate plus 0 to 2.5 points in quarter steps), the term (36 or 60 months),
    the amount (a multiple of 250 up to 40,000, at most 45% of the income), the monthly instalment
    the amount, rate and term give (the annuity formula: exact to the cent, not linear), the total
    payable (instalment x term, exact), debt-to-income ratio, open accounts, delinquencies in two
    years (0 for most) and the status (charged off more often for lower grades); missing cells in
    three columns.

    Planted, each an error an applicant, a clerk or an export makes: ``income_extra_zeros`` (the
    income 100 times too large: annual_income), ``payment_for_other_term`` (the instalment of the
    other term, the total following it: monthly_payment, total_payable),
    ``rate_for_other_grade`` (a rate of a grade three or more away: interest_rate, grade),
    ``age_impossible`` (150 to 199, or 3 to 12: age), ``employment_beyond_age`` (more years
    employed than the age less 14: employment_years, age), ``issued_before_application`` (10 to
    90 days before: issue_date, application_date), ``term_not_offered`` (48, 84 or 120 months, the
    instalment of the true term: term_months), ``amount_in_cents`` (the amount 100 times too large,
    the instalment of the true amount: loan_amount), ``negative_delinquencies``
    (delinquencies_2y), ``total_not_payments`` (the total 5 to 25% off the instalments:
    total_payable), ``score_out_of_range`` (900 to 990, or 150 to 299: credit_score).  Retired
    borrowers (66 to 85, no years employed, a lower income) are rare but legitimate (``rare``).

    Written before any result on it was seen, to judge the flags on a table none of the detector's
    rules was tuned on.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    n = n_rows
    states = np.array(["CA", "TX", "NY", "FL", "IL", "PA", "OH", "GA", "NC", "MI", "NJ", "WA"])
    state_weights = np.array([16, 12, 10, 10, 6, 6, 5, 5, 5, 4, 4, 4], dtype=float)
    purposes = np.array(
        ["debt_consolidation", "credit_card", "home_improvement", "car", "medical", "small_business"]
    )
    retiree = rng.random(n) < 0.01
    age = np.where(retiree, rng.integers(66, 86, n), np.clip(np.round(rng.normal(41, 11, n)), 21, 65)).astype(
        int
    )
    employment = np.where(retiree, 0, np.minimum(np.floor(rng.gamma(2.0, 3.5, n)), age - 18)).astype(int)
    income = np.round(np.exp(rng.normal(np.log(58000), 0.45, n)) * np.where(retiree, 0.6, 1.0) / 100) * 100
    credit = np.clip(np.round(rng.normal(690, 45, n) + 1.5 * np.minimum(employment, 20)), 560, 850).astype(
        int
    )
    grade_index = np.clip(np.floor((800 - credit + rng.normal(0, 12, n)) / 30), 0, 6).astype(int)
    letters = np.array(list(GRADE_RATES))
    rate = np.round(np.array(list(GRADE_RATES.values()))[grade_index] + 0.25 * rng.integers(0, 11, n), 2)
    share = rng.uniform(0.04, 0.45, n)
    amount = np.clip(np.round(income * share / 250) * 250, 1000, 40000)
    term = np.where(rng.random(n) < 0.2 + 0.4 * (amount > 15000), 60, 36)
    payment = _instalment(amount, rate, term)
    application = pd.Timestamp("2023-01-02") + pd.to_timedelta(rng.integers(0, 540, n), "D")
    issue = application + pd.to_timedelta(rng.integers(2, 22, n), "D")
    delinquencies = np.where(rng.random(n) < 0.84, 0, 1 + rng.geometric(0.55, n) - 1)
    charged_off = rng.random(n) < 0.02 + 0.035 * grade_index
    status = np.where(charged_off, "charged_off", np.where(rng.random(n) < 0.3, "fully_paid", "current"))
    df = pd.DataFrame(
        {
            "loan_id": [f"L{random_state:03d}{i:06d}" for i in range(n)],
            "application_date": application.strftime("%Y-%m-%d"),
            "issue_date": issue.strftime("%Y-%m-%d"),
            "state": rng.choice(states, size=n, p=state_weights / state_weights.sum()),
            "purpose": rng.choice(purposes, size=n, p=[0.45, 0.2, 0.12, 0.1, 0.06, 0.07]),
            "age": age,
            "employment_years": employment,
            "home_ownership": rng.choice(["mortgage", "rent", "own"], size=n, p=[0.46, 0.42, 0.12]),
            "annual_income": income,
            "credit_score": credit,
            "grade": letters[grade_index],
            "interest_rate": rate,
            "term_months": term,
            "loan_amount": amount,
            "monthly_payment": payment,
            "total_payable": np.round(payment * term, 2),
            "dti": np.round(np.clip(rng.gamma(4.0, 4.5, n), 0, 45), 1),
            "open_accounts": 1 + rng.poisson(8, n),
            "delinquencies_2y": delinquencies,
            "status": status,
        }
    )
    kinds = kinds or LOAN_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "income_extra_zeros":
            df.loc[row, "annual_income"] = float(income[row]) * 100
            causes: tuple[str, ...] = ("annual_income",)
        elif kind == "payment_for_other_term":
            other = 96 - int(term[row])
            wrong = float(_instalment(np.array([amount[row]]), np.array([rate[row]]), np.array([other]))[0])
            df.loc[row, ["monthly_payment", "total_payable"]] = [wrong, round(wrong * int(term[row]), 2)]
            causes = ("monthly_payment", "total_payable")
        elif kind == "rate_for_other_grade":
            far = [g for g in range(7) if abs(g - int(grade_index[row])) >= 3]
            other = int(rng.choice(far))
            df.loc[row, "interest_rate"] = round(
                list(GRADE_RATES.values())[other] + 0.25 * int(rng.integers(0, 11)), 2
            )
            causes = ("interest_rate", "grade")
        elif kind == "age_impossible":
            df.loc[row, "age"] = (
                int(rng.integers(150, 200)) if rng.random() < 0.5 else int(rng.integers(3, 13))
            )
            causes = ("age",)
        elif kind == "employment_beyond_age":
            df.loc[row, "employment_years"] = int(age[row]) - int(rng.integers(2, 10))
            causes = ("employment_years", "age")
        elif kind == "issued_before_application":
            df.loc[row, "issue_date"] = (
                application[row] - pd.Timedelta(days=int(rng.integers(10, 91)))
            ).strftime("%Y-%m-%d")
            causes = ("issue_date", "application_date")
        elif kind == "term_not_offered":
            df.loc[row, "term_months"] = int(rng.choice([48, 84, 120]))
            causes = ("term_months",)
        elif kind == "amount_in_cents":
            df.loc[row, "loan_amount"] = float(amount[row]) * 100
            causes = ("loan_amount",)
        elif kind == "negative_delinquencies":
            df.loc[row, "delinquencies_2y"] = -int(rng.integers(1, 5))
            causes = ("delinquencies_2y",)
        elif kind == "total_not_payments":
            off = 1 + float(rng.choice([-1, 1])) * float(rng.uniform(0.05, 0.25))
            df.loc[row, "total_payable"] = round(float(payment[row]) * int(term[row]) * off, 2)
            causes = ("total_payable",)
        elif kind == "score_out_of_range":
            df.loc[row, "credit_score"] = (
                int(rng.integers(900, 991)) if rng.random() < 0.5 else int(rng.integers(150, 300))
            )
            causes = ("credit_score",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["dti", "home_ownership", "open_accounts"], missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(retiree), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


FAMILIES["loans"] = make_loan_applications


FLIGHT_KINDS = (
    "distance_of_other_route",
    "elapsed_below_air_time",
    "arr_delay_sign_flipped",
    "passengers_over_seats",
    "seats_of_other_aircraft",
    "aircraft_not_in_fleet",
    "fuel_extra_digit",
    "taxi_out_negative",
    "sched_dep_not_a_time",
    "cancelled_with_values",
    "year_typo",
    "air_time_in_hours",
)
#: Great-circle miles from New York (JFK) to each destination; LGA and EWR differ by a few miles.
FLIGHT_DESTINATIONS = {
    "BOS": 187, "DCA": 213, "PIT": 340, "RDU": 427, "CLT": 541, "DTW": 509, "CLE": 425, "ATL": 760,
    "ORD": 740, "MSP": 1029, "STL": 892, "MCO": 944, "TPA": 1005, "FLL": 1069, "MIA": 1089,
    "MSY": 1182, "DFW": 1391, "IAH": 1417, "DEN": 1626, "AUS": 1521, "PHX": 2153, "LAS": 2248,
    "SLC": 1990, "SAN": 2446, "LAX": 2475, "SFO": 2586, "SEA": 2422, "PDX": 2454, "SJU": 1598,
    "BTV": 266,
}  # fmt: skip
#: The seed of what every table of flights shares: the routes' distances from LGA and EWR, the
#: flight numbers.
FLIGHT_WORLD = 2024
#: Each carrier's fleet.
FLEETS = {
    "AA": ("A321", "B738", "E175"),
    "DL": ("A320", "B739", "E175", "B763"),
    "UA": ("B738", "B739", "E175", "B763"),
    "WN": ("B737", "B738"),
    "B6": ("A320", "A321", "E190"),
    "AS": ("B739", "E175"),
    "NK": ("A320", "A321"),
    "F9": ("A320", "A321"),
}
#: Seats and fuel burned per minute airborne (kg) of each aircraft type.
AIRCRAFT = {
    "A320": (150, 40), "A321": (190, 48), "B737": (143, 40), "B738": (166, 43), "B739": (179, 45),
    "E175": (76, 25), "E190": (100, 30), "B763": (211, 90),
}  # fmt: skip


def make_flights(
    n_rows: int = 3000,
    n_anomalies: int = 24,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """A year of departures from New York's three airports, 17 columns: flight id, date, carrier,
    flight number (a few per carrier and route), origin, destination, the route's distance (fixed
    per origin and destination), the scheduled departure as an HHMM integer (as airline data
    writes it), departure delay (minutes: mostly a few minutes early or late, a long right tail up
    to many hours), arrival delay (the departure delay give or take what the flight made up),
    taxi-out and air time (the distance over the speed, plus climb and descent), elapsed time
    (air time, taxi-out and taxi-in), the aircraft type (from the carrier's fleet; regional jets on
    short routes, wide bodies on long ones), its seats (fixed per type), passengers (at most the
    seats), fuel burned (the type's burn rate times the air time, give or take 5%) and whether the
    flight was cancelled (1.5%: then no delay, times, passengers or fuel); missing cells in
    taxi-out and passengers.

    Planted, each an error a system or a clerk makes: ``distance_of_other_route`` (the distance of
    a destination 500 miles or more away: distance), ``elapsed_below_air_time`` (elapsed time 10
    to 40 minutes below the air time: elapsed_time, air_time), ``arr_delay_sign_flipped`` (a late
    flight's arrival delay written early: arr_delay), ``passengers_over_seats`` (20 to 80 more
    than the seats: passengers), ``seats_of_other_aircraft`` (the seats of another type:
    seats), ``aircraft_not_in_fleet`` (a type the carrier does not fly, the seats of the true one:
    aircraft), ``fuel_extra_digit`` (the fuel 10 times: fuel_kg), ``taxi_out_negative``
    (taxi_out), ``sched_dep_not_a_time`` (minutes 60 to 99, or the hour 24 to 29:
    sched_dep_time), ``cancelled_with_values`` (marked cancelled with its delays, times and
    passengers: cancelled), ``year_typo`` (2042 for 2024: date), ``air_time_in_hours`` (the air
    time in hours: air_time).  Cancelled flights and delays over four hours are rare but
    legitimate (``rare``).

    Written before any result on it was seen, to judge the flags on a table none of the detector's
    rules was tuned on.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    n = n_rows
    carriers = np.array(list(FLEETS))
    carrier = rng.choice(carriers, size=n, p=np.array([18, 17, 20, 8, 16, 6, 8, 7]) / 100)
    origin = rng.choice(["JFK", "LGA", "EWR"], size=n, p=[0.36, 0.3, 0.34])
    dests = np.array(list(FLIGHT_DESTINATIONS))
    dest_weights = rng.gamma(2.0, 1.0, len(dests))
    dest = rng.choice(dests, size=n, p=dest_weights / dest_weights.sum())
    # a route's distance: the destination's from JFK, and a fixed few miles for the other airports
    airports = ("JFK", "LGA", "EWR")
    # The routes' distances and flight numbers are the world's, the same in every table of the
    # family (a table and its clean twin fly the same routes).
    world = np.random.default_rng(FLIGHT_WORLD)
    shift = {(o, d): (0 if o == "JFK" else int(world.integers(-25, 26))) for o in airports for d in dests}
    distance = np.array([FLIGHT_DESTINATIONS[d] + shift[(o, d)] for o, d in zip(origin, dest, strict=True)])
    numbers = {(c, o, d): world.integers(1, 3000, 3) for c in carriers for o in airports for d in dests}
    flight_number = np.array(
        [int(rng.choice(numbers[(c, o, d)])) for c, o, d in zip(carrier, origin, dest, strict=True)]
    )
    aircraft = np.empty(n, dtype=object)
    for i in range(n):
        fleet = [
            a for a in FLEETS[carrier[i]]
            if not (a in ("E175", "E190") and distance[i] > 1100) and not (a == "B763" and distance[i] < 1900)
        ]  # fmt: skip
        aircraft[i] = fleet[int(rng.integers(len(fleet)))] if fleet else FLEETS[carrier[i]][0]
    seats = np.array([AIRCRAFT[a][0] for a in aircraft])
    burn = np.array([AIRCRAFT[a][1] for a in aircraft], dtype=float)
    hours = np.array([2, 6, 8, 8, 7, 6, 6, 6, 6, 6, 7, 7, 6, 5, 4, 3, 3, 2, 2], dtype=float)
    hour = rng.choice(np.arange(5, 24), size=n, p=hours / hours.sum())
    sched_dep = hour * 100 + 5 * rng.integers(0, 12, n)
    air_time = np.maximum(np.round(distance / 8.0 + 15 + rng.normal(0, 5 + distance / 400)), 25).astype(int)
    taxi_out = np.round(8 + rng.gamma(2.0, 5.0, n) + 4 * (origin == "EWR")).astype(int)
    taxi_in = np.round(4 + rng.gamma(2.0, 2.5, n)).astype(int)
    elapsed = air_time + taxi_out + taxi_in
    late = rng.random(n) < 0.3
    dep_delay = np.where(late, np.round(rng.exponential(40, n)), np.round(rng.normal(-3, 4, n))).astype(int)
    dep_delay = np.maximum(dep_delay, -25)
    arr_delay = dep_delay + np.round(rng.normal(-6, 12, n)).astype(int)
    passengers = np.round(seats * rng.beta(8, 2, n)).astype(int)
    fuel = np.round(burn * (air_time + 0.3 * taxi_out) * rng.uniform(0.95, 1.05, n), -1)
    date = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 366, n), "D")
    cancelled = rng.random(n) < 0.015
    df = pd.DataFrame(
        {
            "flight_id": [f"F{random_state:03d}{i:06d}" for i in range(n)],
            "date": date.strftime("%Y-%m-%d"),
            "carrier": carrier,
            "flight_number": flight_number,
            "origin": origin,
            "dest": dest,
            "distance": distance,
            "sched_dep_time": sched_dep,
            "dep_delay": dep_delay.astype(float),
            "arr_delay": arr_delay.astype(float),
            "taxi_out": taxi_out.astype(float),
            "air_time": air_time.astype(float),
            "elapsed_time": elapsed.astype(float),
            "aircraft": aircraft,
            "seats": seats,
            "passengers": passengers.astype(float),
            "fuel_kg": fuel,
            "cancelled": cancelled.astype(int),
        }
    )
    flown = ["dep_delay", "arr_delay", "taxi_out", "air_time", "elapsed_time", "passengers", "fuel_kg"]
    df.loc[cancelled, flown] = np.nan
    kinds = kinds or FLIGHT_KINDS
    rows = np.sort(rng.choice(np.flatnonzero(~cancelled), size=n_anomalies, replace=False))
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        if kind == "distance_of_other_route":
            far = [d for d in dests if abs(FLIGHT_DESTINATIONS[d] - distance[row]) >= 500]
            df.loc[row, "distance"] = FLIGHT_DESTINATIONS[str(rng.choice(far))]
            causes: tuple[str, ...] = ("distance",)
        elif kind == "elapsed_below_air_time":
            df.loc[row, "elapsed_time"] = float(air_time[row] - int(rng.integers(10, 41)))
            causes = ("elapsed_time", "air_time")
        elif kind == "arr_delay_sign_flipped":
            delay = float(rng.integers(60, 240))
            df.loc[row, ["dep_delay", "arr_delay"]] = [delay + float(rng.integers(0, 15)), -delay]
            causes = ("arr_delay",)
        elif kind == "passengers_over_seats":
            df.loc[row, "passengers"] = float(seats[row] + int(rng.integers(20, 81)))
            causes = ("passengers",)
        elif kind == "seats_of_other_aircraft":
            other = [s for s, _ in AIRCRAFT.values() if abs(s - seats[row]) >= 30]
            df.loc[row, "seats"] = int(rng.choice(other))
            causes = ("seats",)
        elif kind == "aircraft_not_in_fleet":
            df.loc[row, "aircraft"] = str(rng.choice([a for a in AIRCRAFT if a not in FLEETS[carrier[row]]]))
            causes = ("aircraft",)
        elif kind == "fuel_extra_digit":
            df.loc[row, "fuel_kg"] = fuel[row] * 10
            causes = ("fuel_kg",)
        elif kind == "taxi_out_negative":
            df.loc[row, "taxi_out"] = -float(rng.integers(5, 31))
            causes = ("taxi_out",)
        elif kind == "sched_dep_not_a_time":
            if rng.random() < 0.5:
                df.loc[row, "sched_dep_time"] = int(hour[row]) * 100 + int(rng.integers(60, 100))
            else:
                df.loc[row, "sched_dep_time"] = int(rng.integers(24, 30)) * 100 + 5 * int(rng.integers(0, 12))
            causes = ("sched_dep_time",)
        elif kind == "cancelled_with_values":
            df.loc[row, "cancelled"] = 1
            causes = ("cancelled",)
        elif kind == "year_typo":
            df.loc[row, "date"] = "2042" + df.loc[row, "date"][4:]
            causes = ("date",)
        elif kind == "air_time_in_hours":
            df.loc[row, "air_time"] = round(float(air_time[row]) / 60, 1)
            causes = ("air_time",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["taxi_out", "passengers"], missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(cancelled | (dep_delay > 240)), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


FAMILIES["flights"] = make_flights


WEATHER_KINDS = (
    "min_above_max",
    "fahrenheit_max",
    "humidity_over_100",
    "gust_below_speed",
    "snow_in_heat",
    "sea_level_pressure",
    "precip_in_hundredths",
    "elevation_typo",
    "sentinel_minus_99",
    "sunshine_over_day_length",
    "mean_outside_range",
    "date_in_future",
)
#: The seed of what every table of weather shares: the stations, where they stand and their climate.
WEATHER_WORLD = 1961


def make_weather(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.02,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """Daily observations of 24 weather stations over two years, 17 columns: observation id, station,
    its climate (coastal, inland, mountain) and elevation (fixed per station), date, the day's
    highest, lowest and mean temperature (the mean halfway between the two, give or take a few
    tenths; the range narrower on rainy and coastal days), dew point (below the lowest mostly),
    relative humidity (from the dew point and the mean temperature, at most 100: humid days pile
    up there), precipitation (0 on about six days in ten, a long tail otherwise), snow (only on
    rainy days below freezing: 0 almost everywhere), wind speed and gust (the gust 1.3 to 1.9 times
    the speed), station pressure (lower with the elevation), hours of sunshine (at most the day's
    length, fewer on rainy days; three stations have no sunshine sensor: missing there) and a
    quality flag; missing cells in humidity and gust.

    Planted, each an error a sensor, a logger or a clerk makes: ``min_above_max`` (the two
    swapped: temp_min_c, temp_max_c), ``fahrenheit_max`` (the highest written in Fahrenheit:
    temp_max_c), ``humidity_over_100`` (105 to 140: humidity_pct), ``gust_below_speed`` (the gust
    half the speed: wind_gust_kmh), ``snow_in_heat`` (5 to 20 cm on a day above 20 degrees:
    snow_cm), ``sea_level_pressure`` (a mountain station's pressure reduced to sea level, as the
    coastal ones read: pressure_hpa), ``precip_in_hundredths`` (precip_mm 100 times),
    ``elevation_typo`` (the station's elevation with a digit dropped or added: elevation_m),
    ``sentinel_minus_99`` (a missing lowest written -99: temp_min_c), ``sunshine_over_day_length``
    (18 to 23 hours of sun on a winter day: sunshine_h), ``mean_outside_range`` (the mean 3 to 8
    degrees above the highest: temp_mean_c), ``date_in_future`` (2031 for 2023 or 2024: date).
    Storms (heavy rain with strong gusts), heat waves and snow days are rare but legitimate
    (``rare``).

    Written before any result on it was seen, to judge the flags on a table none of the detector's
    rules was tuned on.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(WEATHER_WORLD)
    n = n_rows
    stations = np.array([f"ST{k:02d}" for k in range(1, 25)])
    climate_of = world.choice(["coastal", "inland", "mountain"], size=24, p=[0.35, 0.45, 0.2])
    elevation_of = np.where(
        climate_of == "mountain", world.integers(900, 2400, 24), np.where(
            climate_of == "coastal", world.integers(2, 60, 24), world.integers(80, 600, 24))
    )  # fmt: skip
    latitude_of = world.uniform(34, 50, 24)
    no_sun = world.choice(24, 3, replace=False)
    k = rng.integers(0, 24, n)
    climate, elevation, latitude = climate_of[k], elevation_of[k].astype(float), latitude_of[k]
    day = rng.integers(0, 731, n)
    date = pd.Timestamp("2023-01-01") + pd.to_timedelta(day, "D")
    doy = np.asarray(date.dayofyear)
    season = np.cos(2 * np.pi * (doy - 200) / 365.25)
    base = 22 - 0.6 * (latitude - 30) - 6.5 * elevation / 1000
    inland, coastal = climate == "inland", climate == "coastal"
    amplitude = 8 + 0.3 * (latitude - 30) + np.where(inland, 4, np.where(coastal, -3, 0))
    mean = base + amplitude * season + rng.normal(0, 3.5, n)
    wet = {"coastal": 0.45, "inland": 0.32, "mountain": 0.4}
    rainy = rng.random(n) < np.array([wet[c] for c in climate])
    storm = rainy & (rng.random(n) < 0.03)
    spread = np.where(climate == "inland", 13, np.where(climate == "coastal", 7, 11)) - 3 * rainy
    spread = np.maximum(spread + rng.normal(0, 1.5, n), 1.5)
    high, low = mean + spread / 2 + rng.normal(0, 0.4, n), mean - spread / 2 + rng.normal(0, 0.4, n)
    # (the narrowest days' noise could put the lowest above the highest: no clean row does)
    t_max, t_min = np.round(np.maximum(high, low), 1), np.round(np.minimum(high, low), 1)
    # The day's mean lies between its extremes (unclipped, a narrow day's mean could pass its
    # highest, and a dew point below the mean stand above the highest: no clean row does).
    t_mean = np.clip(np.round((t_max + t_min) / 2 + rng.normal(0, 0.3, n), 1), t_min, t_max)
    # Rainy days near saturation (their humidity piles up at 100), dry days well below.
    near = np.minimum(t_mean + rng.normal(-0.5, 1.0, n), t_mean)
    dew = np.where(rainy, near, t_min - np.abs(rng.normal(1, 1.5, n)) - 3)
    dew = np.round(dew, 1)
    magnus = lambda t: np.exp(17.625 * t / (243.04 + t))  # noqa: E731
    humidity = np.minimum(np.round(100 * magnus(dew) / magnus(t_mean)), 100)
    precip = np.where(rainy, rng.gamma(0.8, 8.0, n) * np.where(storm, 5.0, 1.0), 0.0)
    precip = np.round(precip, 1)
    snow = np.where(rainy & (t_max < 1.5), np.round(precip * rng.uniform(0.6, 1.4, n)), 0.0)
    wind = np.round(rng.gamma(2.0, 6.0, n) + 5 * (climate != "inland") + 35 * storm)
    gust = np.round(wind * rng.uniform(1.3, 1.9, n) + 3)
    pressure = np.round(1013.25 * np.exp(-elevation / 8434) + rng.normal(0, 6, n) - 12 * storm, 1)
    day_length = 12 + (4 + 0.15 * (latitude - 34)) * np.cos(2 * np.pi * (doy - 172) / 365.25)
    sunshine = np.round(day_length * np.where(rainy, rng.beta(1.2, 4, n), rng.beta(4, 1.6, n)), 1)
    sunshine = np.where(np.isin(k, no_sun), np.nan, sunshine)
    df = pd.DataFrame(
        {
            "obs_id": [f"W{random_state:03d}{i:06d}" for i in range(n)],
            "station": stations[k],
            "climate": climate,
            "elevation_m": elevation,
            "date": date.strftime("%Y-%m-%d"),
            "temp_max_c": t_max,
            "temp_min_c": t_min,
            "temp_mean_c": t_mean,
            "dew_point_c": dew,
            "humidity_pct": humidity,
            "precip_mm": precip,
            "snow_cm": snow,
            "wind_speed_kmh": wind,
            "wind_gust_kmh": gust,
            "pressure_hpa": pressure,
            "sunshine_h": sunshine,
            "quality": rng.choice(["ok", "estimated"], size=n, p=[0.95, 0.05]),
        }
    )
    kinds = kinds or WEATHER_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    # A sea-level reading is an error only where the station stands high, 20 hours of sun only on
    # a winter day where a sensor reads it, snow only on a hot day: those kinds go to such rows.
    winter = np.isin(np.asarray(date.month), [11, 12, 1, 2])
    can = {
        "sea_level_pressure": climate != "coastal",
        "sunshine_over_day_length": winter & ~np.isin(k, no_sun),
        "snow_in_heat": t_max > 20,
    }
    _where_possible(rows, kinds, can, rng)
    records = []
    for i, row in enumerate(rows):
        kind = kinds[i % len(kinds)]
        if kind == "min_above_max":
            df.loc[row, ["temp_min_c", "temp_max_c"]] = [t_max[row], t_min[row]]
            causes: tuple[str, ...] = ("temp_min_c", "temp_max_c")
        elif kind == "fahrenheit_max":
            df.loc[row, "temp_max_c"] = round(float(t_max[row]) * 9 / 5 + 32, 1)
            causes = ("temp_max_c",)
        elif kind == "humidity_over_100":
            df.loc[row, "humidity_pct"] = float(rng.integers(105, 141))
            causes = ("humidity_pct",)
        elif kind == "gust_below_speed":
            speed = float(wind[row] + 20)
            df.loc[row, ["wind_speed_kmh", "wind_gust_kmh"]] = [speed, float(round(speed / 2))]
            causes = ("wind_gust_kmh",)
        elif kind == "snow_in_heat":
            df.loc[row, "snow_cm"] = float(rng.integers(5, 21))
            causes = ("snow_cm",)
        elif kind == "sea_level_pressure":
            # Reduced to sea level, as a coastal station reads: 10 to 250 hPa above its own readings.
            df.loc[row, "pressure_hpa"] = round(1013.25 + float(rng.normal(0, 6)), 1)
            causes = ("pressure_hpa",)
        elif kind == "precip_in_hundredths":
            wet_value = precip[row] if precip[row] > 0 else round(float(rng.gamma(0.8, 8.0)) + 0.5, 1)
            df.loc[row, "precip_mm"] = round(float(wet_value) * 100, 1)
            causes = ("precip_mm",)
        elif kind == "elevation_typo":
            e = int(elevation[row])
            df.loc[row, "elevation_m"] = float(e * 10 if e < 1000 else e // 10)
            causes = ("elevation_m",)
        elif kind == "sentinel_minus_99":
            df.loc[row, "temp_min_c"] = -99.0
            causes = ("temp_min_c",)
        elif kind == "sunshine_over_day_length":
            df.loc[row, "sunshine_h"] = float(rng.integers(180, 231)) / 10
            causes = ("sunshine_h",)
        elif kind == "mean_outside_range":
            df.loc[row, "temp_mean_c"] = round(float(t_max[row]) + float(rng.uniform(3, 8)), 1)
            causes = ("temp_mean_c",)
        elif kind == "date_in_future":
            df.loc[row, "date"] = "2031" + df.loc[row, "date"][4:]
            causes = ("date",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    _knock_out(df, ["humidity_pct", "wind_gust_kmh"], missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(storm | (t_max > 36) | (snow > 0)), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


FAMILIES["weather"] = make_weather


# -- a wide survey table: household members, dwelling, assets, incomes, spending ------------------

HOUSEHOLD_KINDS = (
    "year_built_200_off",
    "wage_100x",
    "negative_goats",
    "members_not_summing",
    "head_age_extra_digit",
    "food_monthly_as_yearly",
    "area_in_square_feet",
    "survey_year_swapped",
    "spouse_age_without_spouse",
    "employed_over_adults",
    "district_of_other_region",
    "clinic_sentinel_9999",
    "land_in_square_metres",
)
#: The seed of what every table of households shares: regions, districts, interviewers, weights.
HOUSEHOLD_WORLD = 1996


def _household_members(rng: np.random.Generator, n: int, urban: np.ndarray) -> dict[str, np.ndarray]:
    """Adults, children, elderly and employed members, the head's age and marital status."""
    adults = np.minimum(1 + rng.poisson(1.0, n), 6)
    children = np.minimum(rng.poisson(np.where(urban, 1.0, 1.8)), 8)
    big = rng.random(n) < 0.004  # an extended family under one roof: rare but legitimate
    adults = np.where(big, rng.integers(6, 10, n), adults)
    children = np.where(big, rng.integers(6, 10, n), children)
    head_age = np.clip(np.round(rng.normal(45, 14, n)), 18, 95).astype(int)
    elderly = rng.binomial(adults, np.where(head_age >= 65, 0.6, 0.05))
    employed = rng.binomial(adults - elderly, 0.7) + rng.binomial(elderly, 0.1)
    married = (adults >= 2) & (rng.random(n) < 0.78)
    alone = rng.choice(["single", "widowed", "divorced"], size=n, p=[0.5, 0.3, 0.2])
    marital = np.where(married, "married", alone)
    spouse_age = np.where(married, np.clip(np.round(head_age + rng.normal(-3, 5, n)), 16, 95), np.nan)
    return {"adults": adults, "children": children, "elderly": elderly, "employed": employed,
            "head_age": head_age, "marital": marital, "spouse_age": spouse_age, "big": big}  # fmt: skip


def _household_money(
    rng: np.random.Generator, n: int, urban: np.ndarray, wealth: np.ndarray, m: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Yearly incomes by source (most of them 0 in most rows) and monthly spending by item."""
    lognormal = lambda mu, sd: np.exp(mu + rng.normal(0, sd, n))  # noqa: E731
    size = m["adults"] + m["children"]
    earners = np.log(np.maximum(m["employed"], 1))
    wage = np.where(m["employed"] > 0, np.round(lognormal(9.6 + wealth + 0.5 * earners, 0.4), -1), 0)
    business = np.where(rng.random(n) < 0.25 + 0.1 * urban, np.round(lognormal(9.0 + wealth, 0.8), -1), 0)
    farm = np.where(~urban & (rng.random(n) < 0.8), np.round(lognormal(8.2 + 0.5 * wealth, 0.7), -1), 0)
    pensioned = (m["elderly"] > 0) & (rng.random(n) < 0.6)
    pension = np.where(pensioned, np.round(m["elderly"] * rng.uniform(2400, 6000, n), -1), 0)
    remittances = np.where(rng.random(n) < 0.12, np.round(lognormal(7.5, 0.8), -1), 0)
    transfers = np.where(rng.random(n) < 0.15 + 0.1 * (wealth < -0.3), 120 * rng.integers(1, 13, n), 0)
    food = np.round(lognormal(5.2 + 0.6 * np.log(size) + 0.4 * wealth, 0.25))
    housing = np.where(urban, np.round(lognormal(5.0 + 0.5 * wealth, 0.4)), np.round(lognormal(3.0, 0.5)))
    transport = np.round(lognormal(3.5 + 0.5 * wealth, 0.6))
    education = np.where(m["children"] > 0, np.round(m["children"] * lognormal(2.8 + 0.6 * wealth, 0.5)), 0)
    health = np.where(rng.random(n) < 0.45, np.round(lognormal(3.0, 1.0)), 0)
    clothing = np.round(lognormal(2.8 + 0.3 * np.log(size) + 0.4 * wealth, 0.5))
    return {"wage_income": wage, "business_income": business, "farm_income": farm,
            "pension_income": pension, "remittances": remittances, "transfers": transfers,
            "food_exp": food, "housing_exp": housing, "transport_exp": transport,
            "education_exp": education, "health_exp": health, "clothing_exp": clothing}  # fmt: skip


def make_households(
    n_rows: int = 3000,
    n_anomalies: int = 20,
    random_state: int = 0,
    missing_rate: float = 0.03,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """A household survey, 58 columns: household id, interview date, interviewer (five per region),
    region and district (40 districts, each in one region), urban or rural, the district's sampling
    weight; members (adults + children = household size; elderly and employed among the adults),
    the head's age, sex, schooling and marital status, the spouse's age (missing where there is no
    spouse); the dwelling (year built, rooms, floor area in square metres following the rooms,
    roof, water, toilet, electricity, cooking fuel); eight assets (0/1 or yes/no; a fridge, a
    television and a computer only with electricity); yearly incomes from wages, a business, a
    farm, pensions, remittances and transfers (each 0 in most rows) and their total (their sum);
    land in hectares and cattle, goats and chickens (0 in town and in many farms); monthly spending
    on food (following the household's size), housing, utilities, transport, schooling (0 without
    children), health, clothing and phones, and its total (their sum); distances to a market, a
    school and a clinic, months short of food, the interview's minutes. Missing cells in the
    distances, the year built, the floor area and the interview's minutes.

    Planted, one wrong cell each: ``year_built_200_off`` (19xx typed 21xx: year_built),
    ``wage_100x`` (two zeros too many, the total as it was: wage_income), ``negative_goats``
    (goats), ``members_not_summing`` (children one to three more than the size allows:
    n_children), ``head_age_extra_digit`` (45 typed 455: head_age), ``food_monthly_as_yearly``
    (twelve months of food, the total following: food_exp), ``area_in_square_feet``
    (floor_area_m2), ``survey_year_swapped`` (2025 typed 2052: interview_date),
    ``spouse_age_without_spouse`` (a single head's household with a spouse's age: spouse_age),
    ``employed_over_adults`` (n_employed), ``district_of_other_region`` (district),
    ``clinic_sentinel_9999`` (dist_clinic_km), ``land_in_square_metres`` (land_ha).
    Ranches (50 to 400 hectares and 40 to 300 cattle) and extended families of 12 or more are rare
    but legitimate (``rare``).

    Written before any result on it was seen, to judge the flags on a wide table none of the
    detector's rules was tuned on.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(HOUSEHOLD_WORLD)
    n = n_rows
    regions = np.array(["North", "Northeast", "East", "Central", "West", "Southwest", "South", "Coast"])
    region_of = np.repeat(np.arange(8), 5)
    urban_share, weight_of = world.uniform(0.1, 0.9, 40), np.round(world.uniform(150, 900, 40), 1)
    wealth_of = world.normal(0, 0.35, 40)
    d = rng.integers(0, 40, n)
    urban = rng.random(n) < urban_share[d]
    date = pd.Timestamp("2025-03-01") + pd.to_timedelta(rng.integers(0, 275, n), "D")
    which = rng.integers(1, 6, n)
    interviewer = np.array([f"INT{r + 1}{j}" for r, j in zip(region_of[d], which, strict=True)])
    m = _household_members(rng, n, urban)
    education = np.where(
        urban, rng.choice(4, n, p=[0.05, 0.3, 0.45, 0.2]), rng.choice(4, n, p=[0.2, 0.45, 0.3, 0.05])
    )  # fmt: skip
    wealth = wealth_of[d] + 0.5 * urban + 0.25 * (education - 1.5) + rng.normal(0, 0.5, n)
    electricity = rng.random(n) < np.where(urban, 0.98, 0.65)
    size = m["adults"] + m["children"]
    rooms = np.clip(1 + rng.poisson(0.5 + 0.45 * size), 1, 14)
    built = np.clip(np.round(2024 - rng.gamma(2.0, np.where(urban, 12, 15))), 1890, 2024)
    area = np.round(rooms * rng.uniform(9, 16, n) * np.where(urban, 1.0, 1.1))
    fuel = np.where(
        electricity & urban, rng.choice(["gas", "electric", "charcoal"], n, p=[0.5, 0.3, 0.2]),
        rng.choice(["wood", "charcoal", "gas"], n, p=[0.6, 0.3, 0.1]),
    )  # fmt: skip
    own = lambda a, b: (rng.random(n) < 1 / (1 + np.exp(-(a + b * wealth)))).astype(int)  # noqa: E731
    assets = {
        "owns_tv": own(0.5, 2.0) * electricity, "owns_fridge": own(-0.8, 2.2) * electricity,
        "owns_phone": own(2.0, 1.5), "owns_computer": own(-2.5, 2.0) * electricity,
        "owns_bicycle": own(-0.5, 0.3), "owns_motorbike": own(-1.5, 1.0), "owns_car": own(-3.2, 2.0),
    }  # fmt: skip
    money = _household_money(rng, n, urban, wealth, m)
    ranch = ~urban & (rng.random(n) < 0.005)
    farming = ~urban & (money["farm_income"] > 0)
    # (a farm holds land: at least the 0.01 hectares it is written to)
    land = np.where(farming, np.maximum(np.round(rng.gamma(1.5, 0.8, n), 2), 0.01), 0.0)
    land = np.where(ranch, np.round(rng.uniform(50, 400, n), 1), land)
    herd = rng.integers(40, 301, n)
    cattle = np.where(ranch, herd, np.where(farming & (rng.random(n) < 0.35), 1 + rng.poisson(2.5, n), 0))
    ranching = np.round(cattle * rng.uniform(300, 600, n), -1)
    money["farm_income"] = np.where(ranch, ranching, money["farm_income"])
    goats = np.where(~urban & (rng.random(n) < 0.3), 1 + rng.poisson(4, n), 0)
    chickens = np.where(rng.random(n) < np.where(urban, 0.1, 0.7), 1 + rng.poisson(12, n), 0)
    metered = np.round(np.exp(3.2 + 0.4 * wealth + rng.normal(0, 0.3, n)))
    utilities = np.where(electricity, metered, np.round(rng.uniform(2, 15, n)))
    calls = np.round(np.exp(2.3 + 0.3 * wealth + rng.normal(0, 0.4, n)))
    phone_exp = np.where(assets["owns_phone"] == 1, calls, 0)
    incomes = ["wage_income", "business_income", "farm_income", "pension_income", "remittances", "transfers"]
    spending = ["food_exp", "housing_exp"]
    far = lambda shape, town, country: np.round(rng.gamma(shape, np.where(urban, town, country)), 1)  # noqa: E731
    df = pd.DataFrame(
        {
            "hh_id": [f"H{random_state:03d}-{i:05d}" for i in range(n)],
            "interview_date": date.strftime("%Y-%m-%d"),
            "interviewer": interviewer,
            "region": regions[region_of[d]],
            "district": [f"D{k + 1:02d}" for k in d],
            "settlement": np.where(urban, "urban", "rural"),
            "weight": weight_of[d],
            "hh_size": size,
            "n_adults": m["adults"],
            "n_children": m["children"],
            "n_elderly": m["elderly"],
            "n_employed": m["employed"],
            "head_age": m["head_age"],
            "head_sex": rng.choice(["M", "F"], size=n, p=[0.72, 0.28]),
            "head_education": np.array(["none", "primary", "secondary", "tertiary"])[education],
            "head_marital": m["marital"],
            "spouse_age": m["spouse_age"],
            "year_built": built,
            "rooms": rooms,
            "floor_area_m2": area,
            "roof": np.where(
                urban,
                rng.choice(["metal", "tile", "concrete"], n, p=[0.4, 0.3, 0.3]),
                rng.choice(["metal", "thatch", "tile"], n, p=[0.55, 0.35, 0.1]),
            ),  # fmt: skip
            "water_source": np.where(
                urban,
                rng.choice(["piped", "borehole"], n, p=[0.85, 0.15]),
                rng.choice(["piped", "well", "borehole", "surface"], n, p=[0.2, 0.35, 0.35, 0.1]),
            ),  # fmt: skip
            "toilet": np.where(
                urban,
                rng.choice(["flush", "pit"], n, p=[0.8, 0.2]),
                rng.choice(["flush", "pit", "none"], n, p=[0.15, 0.7, 0.15]),
            ),  # fmt: skip
            "electricity": np.where(electricity, "yes", "no"),
            "cooking_fuel": fuel,
            **assets,
            "internet": np.where(
                (assets["owns_phone"] == 1) & (rng.random(n) < 0.3 + 0.4 * urban), "yes", "no"
            ),  # fmt: skip
            **{k: money[k] for k in incomes},
            "total_income": sum(money[k] for k in incomes),
            "land_ha": land,
            "cattle": cattle,
            "goats": goats,
            "chickens": chickens,
            **{k: money[k] for k in spending},
            "utilities_exp": utilities,
            "transport_exp": money["transport_exp"],
            "education_exp": money["education_exp"],
            "health_exp": money["health_exp"],
            "clothing_exp": money["clothing_exp"],
            "phone_exp": phone_exp,
        }
    )
    spent = ["food_exp", "housing_exp", "utilities_exp", "transport_exp", "education_exp", "health_exp",
             "clothing_exp", "phone_exp"]  # fmt: skip
    df["total_exp"] = df[spent].sum(axis=1)
    df["dist_market_km"] = far(1.5, 0.8, 4.0)
    df["dist_school_km"] = far(1.3, 0.6, 1.6)
    df["dist_clinic_km"] = far(1.5, 1.0, 5.0)
    df["months_food_short"] = np.where((wealth < -0.5) & (rng.random(n) < 0.5), rng.integers(1, 7, n), 0)
    df["interview_minutes"] = np.round(rng.gamma(8, 6, n) + 2 * size)
    kinds = kinds or HOUSEHOLD_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    # Each kind goes to a row where it is an error: goats to a household that keeps some, a spouse's
    # age to a head without one, land to a farm, wages to a household that earns them.
    can = {
        "negative_goats": df["goats"].to_numpy() > 0,
        "spouse_age_without_spouse": m["marital"] != "married",
        "land_in_square_metres": (land > 0) & ~ranch,
        "wage_100x": df["wage_income"].to_numpy() > 0,
        "year_built_200_off": built < 2000,
    }
    _where_possible(rows, kinds, can, rng)
    records = []
    for i, row in enumerate(rows):
        kind = kinds[i % len(kinds)]
        causes: tuple[str, ...]
        if kind == "year_built_200_off":
            df.loc[row, "year_built"], causes = df.loc[row, "year_built"] + 200, ("year_built",)
        elif kind == "wage_100x":
            df.loc[row, "wage_income"], causes = df.loc[row, "wage_income"] * 100, ("wage_income",)
        elif kind == "negative_goats":
            df.loc[row, "goats"], causes = -df.loc[row, "goats"], ("goats",)
        elif kind == "members_not_summing":
            df.loc[row, "n_children"] += int(rng.integers(1, 4))
            causes = ("n_children", "hh_size")
        elif kind == "head_age_extra_digit":
            age = int(df.loc[row, "head_age"])
            df.loc[row, "head_age"], causes = age * 10 + age % 10, ("head_age",)
        elif kind == "food_monthly_as_yearly":
            extra = df.loc[row, "food_exp"] * 11
            df.loc[row, ["food_exp", "total_exp"]] = df.loc[row, ["food_exp", "total_exp"]] + extra
            causes = ("food_exp", "total_exp")
        elif kind == "area_in_square_feet":
            df.loc[row, "floor_area_m2"] = float(round(area[row] * 10.764))
            causes = ("floor_area_m2",)
        elif kind == "survey_year_swapped":
            df.loc[row, "interview_date"] = "2052" + df.loc[row, "interview_date"][4:]
            causes = ("interview_date",)
        elif kind == "spouse_age_without_spouse":
            df.loc[row, "spouse_age"] = float(np.clip(round(m["head_age"][row] + rng.normal(-3, 5)), 18, 95))
            causes = ("spouse_age", "head_marital")
        elif kind == "employed_over_adults":
            df.loc[row, "n_employed"] = int(m["adults"][row]) + int(rng.integers(1, 3))
            causes = ("n_employed",)
        elif kind == "district_of_other_region":
            own_region = region_of[d[row]]
            other = rng.choice(np.flatnonzero(region_of != own_region))
            df.loc[row, "district"], causes = f"D{other + 1:02d}", ("district", "region")
        elif kind == "clinic_sentinel_9999":
            df.loc[row, "dist_clinic_km"], causes = 9999.0, ("dist_clinic_km",)
        elif kind == "land_in_square_metres":
            df.loc[row, "land_ha"], causes = float(round(land[row] * 10_000)), ("land_ha",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    blank = ["dist_market_km", "dist_school_km", "dist_clinic_km", "year_built", "floor_area_m2",
             "interview_minutes"]  # fmt: skip
    _knock_out(df, blank, missing_rate, rng, set(rows.tolist()))
    rare = np.setdiff1d(np.flatnonzero(ranch | (size >= 12)), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


FAMILIES["households"] = make_households


# -- used-car listings: a product's make and model, its age and wear, what it is sold for ---------

CAR_KINDS = (
    "mileage_extra_zero",
    "price_missing_digit",
    "year_typo",
    "engine_in_cc",
    "electric_with_engine",
    "co2_off_consumption",
    "negative_owners",
    "seats_for_other_body",
    "model_of_other_make",
    "price_placeholder",
    "odometer_rolled_back",
    "warranty_on_private_sale",
)
#: The seed of what every table of listings shares: the models on sale and what they cost new.
CAR_WORLD = 1886
#: Per make: its models as (model, body, engine litres or 0 for an electric model, price new in
#: euros).  Ferrari is the rare make.
CAR_MODELS = {
    "Volkswagen": (("Polo", "hatchback", 1.0, 19000), ("Golf", "hatchback", 1.5, 27000),
                   ("Passat", "estate", 2.0, 38000), ("Tiguan", "suv", 2.0, 36000),
                   ("ID.3", "hatchback", 0, 37000)),
    "Toyota": (("Yaris", "hatchback", 1.5, 20000), ("Corolla", "sedan", 1.8, 28000),
               ("RAV4", "suv", 2.5, 38000), ("Hilux", "pickup", 2.4, 40000)),
    "Ford": (("Fiesta", "hatchback", 1.0, 18000), ("Focus", "hatchback", 1.5, 25000),
             ("Kuga", "suv", 2.0, 33000), ("Transit", "van", 2.0, 39000), ("Mustang", "coupe", 5.0, 60000)),
    "BMW": (("1 Series", "hatchback", 1.5, 32000), ("3 Series", "sedan", 2.0, 45000),
            ("X5", "suv", 3.0, 80000), ("i4", "sedan", 0, 58000)),
    "Renault": (("Clio", "hatchback", 1.0, 18000), ("Megane", "hatchback", 1.3, 25000),
                ("Zoe", "hatchback", 0, 33000), ("Kangoo", "van", 1.5, 26000)),
    "Skoda": (("Fabia", "hatchback", 1.0, 18000), ("Octavia", "estate", 1.5, 29000),
              ("Kodiaq", "suv", 2.0, 40000)),
    "Tesla": (("Model 3", "sedan", 0, 45000), ("Model Y", "suv", 0, 50000)),
    "Mercedes": (("A-Class", "hatchback", 1.3, 34000), ("C-Class", "sedan", 2.0, 48000),
                 ("Sprinter", "van", 2.1, 45000), ("GLE", "suv", 3.0, 80000)),
    "Ferrari": (("Roma", "coupe", 3.9, 210000), ("F8", "coupe", 3.9, 260000)),
}  # fmt: skip
#: Doors and seats of each body: the choices and their chances.
CAR_BODIES = {
    "hatchback": ((3, 5), (0.3, 0.7), (5,), (1.0,)),
    "sedan": ((4,), (1.0,), (5,), (1.0,)),
    "estate": ((5,), (1.0,), (5,), (1.0,)),
    "suv": ((5,), (1.0,), (5, 7), (0.7, 0.3)),
    "pickup": ((2, 4), (0.4, 0.6), (2, 5), (0.4, 0.6)),
    "van": ((4, 5), (0.5, 0.5), (2, 3, 8, 9), (0.3, 0.3, 0.2, 0.2)),
    "coupe": ((2,), (1.0,), (2, 4), (0.5, 0.5)),
}
#: CO2 per litre of fuel burned (grams): a car's CO2 is its consumption times this, to the gram.
CO2_PER_LITRE = {"petrol": 23.1, "diesel": 26.4, "hybrid": 23.1}


def make_car_listings(
    n_rows: int = 3000,
    n_anomalies: int = 24,
    random_state: int = 0,
    missing_rate: float = 0.03,
    kinds: tuple[str, ...] | None = None,
) -> PlantedTable:
    """A used-car market's listings in 2024 and 2025, 25 columns: listing id, the date listed, the
    make and model (each model of one make; a Ferrari in about 1 row in 300), its body, doors and
    seats (set by the body), model year (most 2010-2024, a few classics of 1965-1989), mileage
    (about 14,000 km a year, a few taxis and couriers at four times that), fuel (an electric model
    is electric; others petrol, diesel or hybrid), engine litres (missing for an electric car),
    power (kW: about 60 per litre, an electric car's its own), fuel consumption (litres per 100 km,
    missing for an electric car) and CO2 (g/km: the consumption times what a litre of that fuel
    gives, to the gram; 0 for an electric car), gearbox (an electric car's automatic), colour,
    previous owners, accident damage (0/1), service history, the seller (dealer or private), the
    warranty in months (0 for a private seller), the region, the asking price (what the model
    cost new, less for age and mileage, more for a classic; to 50 euros), views and days listed;
    missing cells in five columns.

    Kinds: ``mileage_extra_zero`` (mileage_km), ``price_missing_digit`` (price_eur),
    ``year_typo`` (a year of 2105 or 1201: year), ``engine_in_cc`` (1598 for 1.6: engine_l),
    ``electric_with_engine`` (a petrol car's fuel written electric: fuel),
    ``co2_off_consumption`` (CO2 40-80% above its consumption's: co2_g_km), ``negative_owners``
    (owners), ``seats_for_other_body`` (a coupe of 9 seats, a van of 1: seats),
    ``model_of_other_make`` (model), ``price_placeholder`` (a price of 1 or 999999: price_eur),
    ``odometer_rolled_back`` (a car of 8 or more years with a two-digit mileage: mileage_km),
    ``warranty_on_private_sale`` (warranty_months).  Rare but legitimate: the classics, the
    Ferraris, the taxis' mileages.
    """
    import pandas as pd

    rng = np.random.default_rng(random_state)
    world = np.random.default_rng(CAR_WORLD)
    n = n_rows
    makes = list(CAR_MODELS)
    share = np.array([world.uniform(0.6, 1.4) for _ in makes])
    share[makes.index("Ferrari")] = 0.0
    share = 0.997 * share / share.sum()
    share[makes.index("Ferrari")] = 0.003
    make = rng.choice(makes, size=n, p=share)
    pick = np.array([int(rng.integers(0, len(CAR_MODELS[m]))) for m in make])
    spec = [CAR_MODELS[m][k] for m, k in zip(make, pick, strict=True)]
    model = np.array([s[0] for s in spec])
    body = np.array([s[1] for s in spec])
    litres = np.array([s[2] for s in spec], dtype=float)
    new_price = np.array([s[3] for s in spec], dtype=float)
    electric = litres == 0
    classic = ~electric & (make != "Tesla") & (rng.random(n) < 0.004)
    age = np.minimum(np.round(rng.gamma(2.0, 3.2, n)), 29)
    age = np.where(electric, np.minimum(age, 9), age)
    age = np.where(classic, rng.integers(36, 60, n), age).astype(int)
    listed = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")
    year = listed.year.to_numpy() - age
    heavy_use = ~classic & (rng.random(n) < 0.005)
    per_year = 14000 * np.exp(rng.normal(0, 0.35, n)) * np.where(heavy_use, 4.0, 1.0)
    per_year = np.where(classic, rng.uniform(300, 1500, n), per_year)
    mileage = np.round(np.maximum(age, 0.1) * per_year, -1)
    combustion = rng.choice(["petrol", "diesel", "hybrid"], size=n, p=[0.55, 0.33, 0.12])
    fuel = np.where(electric, "electric", combustion)
    fuel = np.where(classic, "petrol", fuel)
    engine = np.where(electric, np.nan, np.round(litres * rng.choice([0.9, 1.0, 1.0, 1.2], size=n), 1))
    motor = rng.choice([110, 150, 208, 250], size=n)
    power = np.where(electric, motor, np.round(engine * rng.normal(60, 8, n)))
    burn = np.where(fuel == "diesel", 0.85, np.where(fuel == "hybrid", 0.7, 1.0))
    litre_use = (2.5 + 2.6 * engine) * burn * rng.normal(1, 0.06, n)
    consumption = np.where(electric, np.nan, np.round(litre_use, 1))
    per_litre = np.array([CO2_PER_LITRE.get(f, 0.0) for f in fuel])
    co2 = np.where(electric, 0.0, np.round(consumption * per_litre))
    doors = np.array([rng.choice(CAR_BODIES[b][0], p=CAR_BODIES[b][1]) for b in body])
    seats = np.array([rng.choice(CAR_BODIES[b][2], p=CAR_BODIES[b][3]) for b in body])
    automatic = electric | (rng.random(n) < 0.35 + 0.03 * (10 - np.minimum(age, 10)))
    gearbox = np.where(automatic, "automatic", "manual")
    owners = np.minimum(1 + rng.poisson(age / 6.0), 9).astype(float)
    accident = (rng.random(n) < 0.06 + 0.005 * np.minimum(age, 15)).astype(int)
    dealer = rng.random(n) < np.where(age <= 8, 0.7, 0.35)
    seller = np.where(dealer, "dealer", "private")
    warranty = np.where(dealer & (age <= 8), rng.choice([12, 24], size=n, p=[0.6, 0.4]), 0)
    value = new_price * np.exp(-0.13 * age - 0.08 * np.log1p(mileage / 10000) - 0.15 * accident)
    value = np.where(classic, new_price * rng.uniform(0.8, 3.0, n), value)
    price = np.maximum(np.round(value * np.exp(rng.normal(0, 0.12, n)) / 50) * 50, 300)
    days = rng.integers(0, 120, n)
    views = np.round(np.exp(rng.normal(5.0, 0.8, n)) * (1 + days / 30))
    df = pd.DataFrame(
        {
            "listing_id": [f"L{k:07d}" for k in _unique_integers(rng, n, 1, 9_999_999)],
            "listed_date": listed.strftime("%Y-%m-%d"),
            "make": make, "model": model, "body": body,
            "doors": doors.astype(int), "seats": seats.astype(int),
            "year": year.astype(int), "mileage_km": mileage,
            "fuel": fuel, "engine_l": engine, "power_kw": power.astype(float),
            "consumption_l_100km": consumption, "co2_g_km": co2, "gearbox": gearbox,
            "colour": rng.choice(["black", "white", "grey", "silver", "blue", "red", "green", "brown"],
                                 size=n, p=[0.2, 0.2, 0.18, 0.14, 0.12, 0.08, 0.04, 0.04]),
            "owners": owners, "accident_damage": accident,
            "service_history": rng.choice(["full", "partial", "none"], size=n, p=[0.55, 0.3, 0.15]),
            "seller": seller, "warranty_months": warranty.astype(int),
            "region": rng.choice(["north", "south", "east", "west", "centre", "capital"], size=n),
            "price_eur": price, "views": views, "days_listed": days.astype(int),
        }
    )  # fmt: skip
    kinds = kinds or CAR_KINDS
    rows = _planted_rows(n, n_anomalies, rng)
    can = {
        "engine_in_cc": ~electric, "electric_with_engine": ~electric & (fuel == "petrol"),
        "co2_off_consumption": ~electric, "odometer_rolled_back": age >= 8,
        "warranty_on_private_sale": ~dealer, "price_placeholder": ~classic & (make != "Ferrari"),
    }  # fmt: skip
    _where_possible(rows, kinds, can, rng)
    records = []
    for k, row in enumerate(rows):
        kind = kinds[k % len(kinds)]
        causes: tuple[str, ...]
        if kind == "mileage_extra_zero":
            df.loc[row, "mileage_km"] = mileage[row] * 10 if mileage[row] >= 20000 else mileage[row] * 100
            causes = ("mileage_km",)
        elif kind == "price_missing_digit":
            df.loc[row, "price_eur"] = np.round(price[row] / 10)
            causes = ("price_eur",)
        elif kind == "year_typo":
            df.loc[row, "year"] = int(rng.choice([2105, 1201])) if rng.random() < 0.5 else year[row] + 90
            causes = ("year",)
        elif kind == "engine_in_cc":
            df.loc[row, "engine_l"] = float(np.round(engine[row] * 1000 - rng.integers(0, 5)))
            causes = ("engine_l",)
        elif kind == "electric_with_engine":
            df.loc[row, "fuel"] = "electric"
            causes = ("fuel",)
        elif kind == "co2_off_consumption":
            df.loc[row, "co2_g_km"] = float(np.round(co2[row] * rng.uniform(1.4, 1.8)))
            causes = ("co2_g_km",)
        elif kind == "negative_owners":
            df.loc[row, "owners"] = -float(rng.integers(1, 3))
            causes = ("owners",)
        elif kind == "seats_for_other_body":
            df.loc[row, "seats"] = 1 if body[row] in ("van", "pickup") else 9
            causes = ("seats",)
        elif kind == "model_of_other_make":
            others = [s[0] for m, ss in CAR_MODELS.items() if m not in (make[row], "Ferrari") for s in ss]
            df.loc[row, "model"] = str(rng.choice(others))
            causes = ("model",)
        elif kind == "price_placeholder":
            df.loc[row, "price_eur"] = float(rng.choice([1.0, 999999.0]))
            causes = ("price_eur",)
        elif kind == "odometer_rolled_back":
            df.loc[row, "mileage_km"] = float(rng.integers(10, 100))
            causes = ("mileage_km",)
        elif kind == "warranty_on_private_sale":
            df.loc[row, "warranty_months"] = int(rng.choice([12, 24]))
            causes = ("warranty_months",)
        else:
            raise ValueError(f"unknown anomaly kind {kind!r}")
        records.append({"row": int(row), "kind": kind, "causes": causes})
    keep = set(rows.tolist())
    _knock_out(df, ["owners", "views"], missing_rate, rng, keep)
    _knock_out(df, ["service_history", "colour"], missing_rate, rng, keep)
    _knock_out(df, ["consumption_l_100km"], missing_rate / 2, rng, keep)
    rare = np.setdiff1d(np.flatnonzero(classic | heavy_use | (make == "Ferrari")), rows)
    return PlantedTable(df, pd.DataFrame(records, columns=["row", "kind", "causes"]), rare=rare)


FAMILIES["cars"] = make_car_listings
