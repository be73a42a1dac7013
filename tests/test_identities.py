"""Identities: exact relations between numeric columns, found, kept, and broken."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nrad.explain import first_feature
from nrad.identities import Identities
from nrad.table import fit_table

FX = {"EUR": 1.0, "GBP": 1.17, "USD": 0.92}


def _invoices(n: int, seed: int) -> pd.DataFrame:
    """Invoices whose columns are computed from each other and written to cents: gross = net + vat,
    vat = net x the country's rate, the euro total = gross x the currency's rate; a noisy cost."""
    rng = np.random.default_rng(seed)
    country = rng.choice(["DE", "FR", "UK", "US"], n)
    rate = pd.Series(country).map({"DE": 0.19, "FR": 0.2, "UK": 0.2, "US": 0.0}).to_numpy()
    currency = pd.Series(country).map({"DE": "EUR", "FR": "EUR", "UK": "GBP", "US": "USD"}).to_numpy()
    net = np.round(np.exp(rng.normal(4, 0.5, n)), 2)
    vat = np.round(net * rate, 2)
    gross = np.round(net + vat, 2)
    return pd.DataFrame(
        {
            "country": country,
            "currency": currency,
            "net": net,
            "vat": vat,
            "gross": gross,
            "gross_eur": np.round(gross * pd.Series(currency).map(FX).to_numpy(), 2),
            # A relation with a 2% spread: no identity, whatever its strength.
            "cost": np.round(5 + 0.1 * net * np.exp(rng.normal(0, 0.02, n)), 2),
            "items": rng.integers(1, 9, n),
        }
    )


def _fit(df: pd.DataFrame) -> tuple[Identities, np.ndarray, np.ndarray, list[str]]:
    model = fit_table(df, random_state=0, max_epochs=2)
    prep = model.prepare(df)
    values = model.raw_values(prep)
    codes = prep.codes[:, : len(model.schema.categorical_names)]
    assert model.identities is not None
    return model.identities, values, codes, model.schema.numeric_names


def test_exact_relations_are_found_and_noisy_ones_are_not() -> None:
    """gross = net + vat over all rows, the euro total per currency; the cost, 2% off its relation
    to the net, and the item count are in no identity.  A clean table breaks none of them."""
    df = _invoices(1500, 0)
    ids, values, codes, names = _fit(df)
    described = set()
    for k in range(ids.n_identities):
        columns = sorted(names[j] for j in np.flatnonzero(ids._involved(k)))
        described.add((tuple(columns), ids.feature[k] >= 0))
    assert (("gross", "net", "vat"), False) in described
    assert any("gross_eur" in cols and per_level for cols, per_level in described)
    assert not any("cost" in cols or "items" in cols for cols, _ in described)
    numeric, levels = ids.broken(values, codes)
    assert not numeric.any() and not levels.any()


def test_a_row_that_breaks_an_identity_is_blamed_on_the_cell_or_the_level() -> None:
    """A gross with a digit too many breaks gross = net + vat: the gross is blamed (the net, kept by
    the identities it is in within its country, is cleared; the vat may not be).  A pound invoice whose euro total is its pound total keeps
    the euro's identity: its currency is blamed.  A row off by less than its rounding breaks
    nothing; nor does a row whose broken cell is missing."""
    df = _invoices(1500, 1)
    typo, fx, rounding = 3, int(np.flatnonzero(df["currency"] == "GBP")[0]), 7
    df.loc[typo, "gross"] = round(df.loc[typo, "gross"] * 10, 2)
    df.loc[fx, "gross_eur"] = df.loc[fx, "gross"]
    df.loc[rounding, "gross_eur"] = round(df.loc[rounding, "gross_eur"] + 0.01, 2)
    ids, values, codes, names = _fit(df)
    numeric, levels = ids.broken(values, codes)
    assert "gross" in {names[j] for j in np.flatnonzero(numeric[typo])} <= {"gross", "vat"}
    assert levels[fx].tolist() == [False, True]
    assert {names[j] for j in np.flatnonzero(numeric[fx])} <= {"gross_eur"}
    assert not (numeric | levels.any(axis=1, keepdims=True))[np.r_[rounding, 10:1500]].any()
    values[typo, names.index("gross")] = np.nan  # the broken cell missing: nothing to blame
    assert not ids.broken(values, codes)[0][typo].any()


def test_identities_survive_the_model_file(tmp_path: Path) -> None:
    from nrad.model_file import load_model, save_model

    df = _invoices(800, 2)
    model = fit_table(df, random_state=0, max_epochs=2)
    save_model(model, tmp_path / "m.nrad")
    back = load_model(tmp_path / "m.nrad")
    assert model.identities is not None and back.identities is not None
    assert back.identities.n_identities == model.identities.n_identities > 0
    bad = df.copy()
    bad.loc[5, "gross"] = bad.loc[5, "gross"] * 10
    prep = model.prepare(bad)
    codes = prep.codes[:, :2]
    for a, b in zip(model.identities.broken(model.raw_values(prep), codes),
                    back.identities.broken(back.raw_values(prep), codes), strict=True):  # fmt: skip
        assert (a == b).all()


@pytest.mark.parametrize("kind", ["gross", "fx"])
def test_a_broken_identity_flags_its_row_and_names_its_cause(kind: str) -> None:
    """``nrad detect`` on an invoice table with one row breaking identities: a gross 1.5 times
    the net plus the vat (and its euro copy), or a pound invoice not converted to euros.  Neither row holds a value
    out of place; each is flagged, named by the gross, or by the euro total or its currency."""
    df = _invoices(1500, 3)
    row = int(np.flatnonzero(df["currency"] == "GBP")[4])
    if kind == "gross":
        df.loc[row, "gross"] = round(df.loc[row, "gross"] * 1.5, 2)
    else:
        df.loc[row, "gross_eur"] = df.loc[row, "gross"]
    model = fit_table(df, random_state=0, max_epochs=20)
    scored, _ = model.score(df, fdr=0.1, in_sample=True)
    assert scored.loc[row, "flagged"]
    named = first_feature(scored.loc[row, "top_features"])
    assert (named == "gross") if kind == "gross" else (named in ("gross_eur", "currency"))
    assert scored["flagged"].sum() <= 2  # the row, and at most one other
