"""How large a broken batch can ``nrad detect`` flag: one tight cluster at 1% to 20% of the rows.

A table of the ``batch`` family (``nrad.synthetic.make_batch_measurements``:
seven related measurements, three lines, two shifts) with a share of its rows
from one miscalibrated run, fitted on itself with the default table model and
flagged by Benjamini-Hochberg at q = 0.1, as ``nrad detect`` does.  Prints per
share and seed: the batch rows flagged and the other rows flagged (rows
standing apart in robust distance do not train the flows; docs/method.md,
section 7).

Usage::

    python research/probe_batch_share.py --shares 0.01,0.05,0.1,0.2 --seeds 0,1
"""

from __future__ import annotations

import argparse

from nrad.synthetic import make_batch_measurements
from nrad.table import fit_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shares", default="0.01,0.02,0.05,0.1,0.2")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--fdr", type=float, default=0.1)
    args = parser.parse_args()
    print("share  seed  batch rows  flagged  other rows flagged")
    for share in (float(s) for s in args.shares.split(",")):
        for seed in (int(s) for s in args.seeds.split(",")):
            k = int(round(args.rows * share))
            table = make_batch_measurements(args.rows, k, random_state=1000 + seed)
            model = fit_table(table.frame, id_column="part_id", random_state=0)
            scored, _ = model.score(table.frame, fdr=args.fdr, explain="none", in_sample=True)
            found = int(scored["flagged"].iloc[table.truth["row"]].sum())
            other = int(scored["flagged"].sum()) - found
            print(f"{share:5.2f}  {seed:4d}  {k:10d}  {found:7d}  {other:18d}", flush=True)


if __name__ == "__main__":
    main()
