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


def _planted_rows(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=k, replace=False)) if k else np.zeros(0, dtype=int)
