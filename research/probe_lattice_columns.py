"""Which columns of the ADBench tables are whole-number codes whose lattice ``nrad.numeric.lattice_spacing``
reads differently with and without ``whole_numbers``: the only columns whose dequantization (and so
whose scores) the whole-number lattice can change.  Tables without any are scored exactly as before.

Usage::

    python research/probe_lattice_columns.py --data-dir DATA
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from nrad.numeric import lattice_spacing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a folder of ADBench .npz files")
    args = parser.parse_args()
    files = sorted(args.data_dir.glob("*.npz"))
    changed = 0
    for path in files:
        X = np.load(path)["X"].astype(np.float64)
        for j in range(X.shape[1]):
            evenly, whole = lattice_spacing(X[:, j], whole_numbers=False), lattice_spacing(X[:, j])
            if evenly != whole:
                changed += 1
                print(f"{path.stem} column {j}: spacing {evenly:g} evenly spaced, {whole:g} as whole numbers")
    print(f"{len(files)} tables, {changed} columns whose lattice the whole-number rule changes")


if __name__ == "__main__":
    main()
