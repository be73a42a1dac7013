"""Numbers as people's files write them: is a value ten times over still flagged?

Each form writes one column of a 1,000-row table (an id, a shop, a quantity and a measurement
that follows it) the way an export or a hand-kept sheet does: with its unit ("70.5 kg", "12ms",
"20,5 °C", "300 MB" beside "4.5 GB", "1.2k"), as a time on a clock ("0:31:48", "31:48",
"13:45", "1:45 PM"), and as exports were already read (a decimal comma, a currency) as a check.
Five rows hold the measurement ten times over (a clock's time of day: twelve hours off).  The
table is written to CSV and run as ``nrad detect T.csv --id-column id --fdr 0.1`` does; printed
per form: how the column was read, the planted rows flagged, the other rows flagged, and how
many planted rows name the column first.  Then a log whose times are numbers (Unix seconds or
milliseconds, dates written 20240131, a spreadsheet's day 45322), fitted on one month and the
month two later scored (``nrad fit``, ``nrad score``): the rows flagged; and car listings of
model years 2015 to 2023 fitted, the next year's cars scored.

Usage::

    python research/probe_written_numbers.py
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from nrad import workflow
from nrad.preprocess import fit_schema

ROWS, PLANTED = 1000, (11, 222, 433, 644, 855)


def _eu(x: float) -> str:
    return f"{x:,.2f}".replace(",", "X").replace(".", ",").replace("X", ".")


def _hms(hours: float) -> str:
    s = int(round(hours * 3600))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _ms(minutes: float) -> str:
    s = int(round(minutes * 60))
    return f"{s // 60}:{s % 60:02d}"


def _ampm(hours: float) -> str:
    m = int(round(hours * 60)) % (24 * 60)
    h = m // 60
    return f"{(h - 1) % 12 + 1}:{m % 60:02d} {'AM' if h < 12 else 'PM'}"


def _sizes(mb: float) -> str:
    return f"{mb / 1000:.2f} GB" if mb >= 1000 else f"{mb:.0f} MB"


#: form -> (how one value is written, the measurement's typical size, far: the planted value).
FORMS: dict[str, tuple[Callable[[float], str], float, Callable[[float], float]]] = {
    "plain": (lambda v: f"{v:.2f}", 70.0, lambda v: 10 * v),
    "decimal comma": (_eu, 70.0, lambda v: 10 * v),
    "currency": (lambda v: f"${v:,.2f}", 700.0, lambda v: 10 * v),
    "kg": (lambda v: f"{v:.1f} kg", 70.0, lambda v: 10 * v),
    "ms, no space": (lambda v: f"{v:.1f}ms", 40.0, lambda v: 10 * v),
    "°C, decimal comma": (lambda v: f"{v:.1f} °C".replace(".", ","), 20.0, lambda v: 10 * v),
    "MB and GB": (_sizes, 600.0, lambda v: 10 * v),
    "k beside ones": (lambda v: f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}", 900.0, lambda v: 10 * v),
    "h:mm:ss duration": (_hms, 0.5, lambda v: 10 * v),
    "m:ss duration": (_ms, 30.0, lambda v: 10 * v),
    "h:mm time of day": (lambda v: f"{int(v):02d}:{int(round(v % 1 * 60)) % 60:02d}", 12.0, lambda v: v + 12),
    "AM/PM time of day": (_ampm, 12.0, lambda v: v + 12),
}


def table(form: str, seed: int) -> pd.DataFrame:
    """A shop's orders: the quantity, and the measurement (``value``) that follows it."""
    write, size, far = FORMS[form]
    rng = np.random.default_rng(seed)
    quantity = rng.integers(1, 10, ROWS)
    shop = rng.choice(["north", "south", "east", "west"], ROWS)
    if form.endswith("time of day"):  # a time of day: office hours, around noon
        value = np.clip(rng.normal(size, 1.5, ROWS), 8.0, 16.5)
    else:
        value = size * (0.5 + 0.1 * quantity) * np.exp(rng.normal(0, 0.15, ROWS))
    value[list(PLANTED)] = [far(v) for v in value[list(PLANTED)]]
    return pd.DataFrame({"id": np.arange(ROWS), "shop": shop, "quantity": quantity,
                         "value": [write(float(v)) for v in value]})  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{'form':20s} {'example':>12s}  {'read as':28s} planted flagged  others flagged  named first")
    for form in FORMS:
        df = table(form, args.seed)
        plan = next(c for c in fit_schema(df.drop(columns=["id"])).columns if c.name == "value")
        read = [f"{k} {getattr(plan, k)}" for k in ("unit", "clock") if getattr(plan, k, "")]
        how = " ".join([plan.kind, *read])
        with tempfile.TemporaryDirectory() as work:
            df.to_csv(Path(work) / "T.csv", index=False)
            workflow.detect(Path(work) / "T.csv", out=Path(work) / "o.csv", fdr=0.1, id_column="id")
            out = pd.read_csv(Path(work) / "o.csv", keep_default_na=False)
        flagged = out["flagged"].astype(str).eq("True").to_numpy()
        planted = np.zeros(ROWS, dtype=bool)
        planted[list(PLANTED)] = True
        named = out["top_features"].astype(str).str.startswith("value").to_numpy()
        found, others = int((flagged & planted).sum()), int((flagged & ~planted).sum())
        right = int((flagged & planted & named).sum())
        example = df["value"].iloc[0]
        print(f"{form:20s} {example:>12s}  {how:28s} {found:>7d} of 5  {others:>14d}  {right:>11d}")
    for written in TIME_COLUMNS:
        later_month(written, args.seed)
    next_year(args.seed)


#: How a log's numbers count time: the column's name, and the number written for Unix second ``t``.
TIME_COLUMNS: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {
    "Unix seconds": ("created_at", lambda t: t),
    "Unix milliseconds": ("created_at", lambda t: t * 1000),
    "dates YYYYMMDD": ("order_date", lambda t: pd.to_datetime(t, unit="s").strftime("%Y%m%d").astype(int)),
    "spreadsheet days": ("order_date", lambda t: t // 86400 + 25569),
}


def later_month(written: str, seed: int) -> None:
    """A log whose times are numbers (``TIME_COLUMNS``; Unix times to the minute: a few rows share
    one): fitted on one month (``nrad fit``), the month two later scored (``nrad score``), five
    amounts 40 times over."""
    rng = np.random.default_rng(seed)
    column, write = TIME_COLUMNS[written]

    def month(start: int) -> pd.DataFrame:
        return pd.DataFrame({"id": np.arange(ROWS) + start,
                             "amount": np.round(np.exp(rng.normal(4, 0.5, ROWS)), 2),
                             column: write(start + 60 * np.sort(rng.integers(0, 30 * 1440, ROWS))),
                             "merchant": rng.choice(list("abcdefgh"), ROWS)})  # fmt: skip

    later = month(1_700_000_000 + 60 * 86400)
    later.loc[list(PLANTED), "amount"] *= 40
    with tempfile.TemporaryDirectory() as work:
        month(1_700_000_000).to_csv(Path(work) / "a.csv", index=False)
        later.to_csv(Path(work) / "b.csv", index=False)
        workflow.detect(Path(work) / "b.csv", train=Path(work) / "a.csv", out=Path(work) / "o.csv", fdr=0.1,
                        id_column="id")  # fmt: skip
        out = pd.read_csv(Path(work) / "o.csv", keep_default_na=False)
    flagged = out["flagged"].astype(str).eq("True").to_numpy()
    planted = np.isin(np.arange(ROWS), PLANTED)
    found, others = int((flagged & planted).sum()), int((flagged & ~planted).sum())
    print(f"{written} ({column}), the month two later scored: planted flagged {found} of 5, "
          f"others flagged {others} of {ROWS - 5}")  # fmt: skip


def next_year(seed: int) -> None:
    """Car listings of model years 2015 to 2023 fitted (``nrad fit``), then the next year's cars
    scored (``nrad score``): a year the training rows never held, in every row."""
    rng = np.random.default_rng(seed)

    def listings(years: np.ndarray, start: int) -> pd.DataFrame:
        year = rng.choice(years, ROWS)
        price = np.round(20000 * np.exp(-0.1 * (2025 - year) + rng.normal(0, 0.2, ROWS)), -1)
        return pd.DataFrame({"id": np.arange(ROWS) + start, "model_year": year, "price": price,
                             "km": np.round(rng.gamma(3, 5000, ROWS) * (2026 - year)),
                             "make": rng.choice(list("abcde"), ROWS)})  # fmt: skip

    with tempfile.TemporaryDirectory() as work:
        listings(np.arange(2015, 2024), 0).to_csv(Path(work) / "a.csv", index=False)
        listings(np.array([2024]), ROWS).to_csv(Path(work) / "b.csv", index=False)
        workflow.detect(Path(work) / "b.csv", train=Path(work) / "a.csv", out=Path(work) / "o.csv", fdr=0.1,
                        id_column="id")  # fmt: skip
        out = pd.read_csv(Path(work) / "o.csv", keep_default_na=False)
    flagged = int(out["flagged"].astype(str).eq("True").sum())
    print(f"model years 2015-2023 fitted, the next year's cars scored: flagged {flagged} of {ROWS}")


if __name__ == "__main__":
    main()
