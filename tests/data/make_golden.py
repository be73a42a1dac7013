"""Writes the golden outputs tests/test_behaviour.py compares with: what the table model gives on
two committed tables, in memory, both ways of working.  Re-run only on purpose (a change meant to
alter scores or flags), and say so in the commit:

    python tests/data/make_golden.py
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def golden_runs() -> dict[str, pd.DataFrame]:
    """The runs whose outputs are kept: name -> scored frame (results columns only)."""
    from nrad.table import fit_table

    out = {}
    table = pd.read_csv(ROOT / "examples" / "transactions.csv")
    model = fit_table(table, id_column="txn_id", random_state=0)
    out["transactions_detect"] = model.score(table, fdr=0.1, in_sample=True)[0]
    out["transactions_new_rows"] = model.score(table.iloc[::7], contamination=0.05)[0]
    wide = pd.read_csv(HERE / "golden_wide.csv")
    model = fit_table(wide, id_column="sample_id", random_state=1)
    out["wide_detect"] = model.score(wide, fdr=0.1, in_sample=True)[0]
    return out


def main() -> None:
    from nrad.synthetic import make_lab_panel

    make_lab_panel(500, 10, random_state=3).frame.iloc[:, :40].to_csv(HERE / "golden_wide.csv", index=False)
    for name, frame in golden_runs().items():
        frame.to_csv(HERE / f"golden_{name}.csv", index=False)


if __name__ == "__main__":
    main()
