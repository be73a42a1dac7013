"""Two gross errors change how a clean cluster of a table is read in sample: a lead.

A clean employees table (``nrad.synthetic.make_employees``, 3,000 rows, no planted rows) is
scored against itself as it is, and again with two ratings of 6 typed on its scale of 1 to 5.
For each, prints what the density's in-sample tail left out (``n_trimmed``), its threshold and
scale, the rows flagged at q = 0.1 and how many of them are part-timers (full-time share 0.5),
none of which is an error, and the two typed rows' p-values.

Usage::

    python research/probe_trim_cascade.py --seed 2001
"""

from __future__ import annotations

import argparse

import numpy as np

from nrad.synthetic import make_employees
from nrad.table import fit_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=2001)
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args()
    clean = make_employees(args.rows, 0, random_state=args.seed).frame
    typed = clean.copy()
    typed.loc[[100, 900], "rating"] = 6
    for name, df in (("clean", clean), ("two ratings of 6", typed)):
        model = fit_table(df, id_column="employee_id", random_state=0)
        scored, _ = model.score(df, fdr=0.1, in_sample=True, explain="none")
        tail = model.own_tails.density
        flagged = scored["flagged"].to_numpy(dtype=bool)
        part_time = df["fte"].to_numpy() == 0.5
        typed_p = ", ".join(f"{p:.3g}" for p in scored.loc[[100, 900], "p_value"]) if name != "clean" else ""
        print(
            f"{name}: density tail trimmed {tail.n_trimmed}, threshold {tail.threshold:.1f}, "
            f"scale {float(np.median(tail.scales)):.2f}; flagged {flagged.sum()}, "
            f"part-timers among them {int((flagged & part_time).sum())} of {int(part_time.sum())}"
            + (f"; the typed rows' p-values {typed_p}" if typed_p else "")
        )


if __name__ == "__main__":
    main()
