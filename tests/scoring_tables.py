"""Tables the streamed and Dask tests share: a model fitted in memory, and rows to score with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nrad.table import TableModel, fit_table


def table(n: int, seed: int, anomalies: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    df.iloc[:anomalies, :4] += 6.0  # far out in every column: BH must flag these
    df["kind"] = rng.choice(["x", "y", "z"], size=n)
    df.insert(0, "id", [f"r{i}" for i in range(n)])
    return df


@pytest.fixture(scope="module")
def model() -> TableModel:
    return fit_table(table(2000, 1), id_column="id", random_state=0, max_epochs=3)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return table(3000, 2, anomalies=200).sample(frac=1.0, random_state=3).reset_index(drop=True)


def read(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path) if path.suffix == ".parquet" or path.is_dir() else pd.read_csv(path)


def assert_same_rows(got: pd.DataFrame, ref: pd.DataFrame) -> None:
    assert list(got.columns) == list(ref.columns)
    assert got["id"].tolist() == ref["id"].tolist()  # input order
    np.testing.assert_array_equal(got["anomaly_score"].to_numpy(), ref["anomaly_score"].to_numpy())
    np.testing.assert_array_equal(got["p_value"].to_numpy(), ref["p_value"].to_numpy())
    np.testing.assert_array_equal(got["flagged"].to_numpy(), ref["flagged"].to_numpy())
