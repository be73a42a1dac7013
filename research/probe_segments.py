"""Which clean tables hold a segment: a category level most of whose rows hold a value far out in
a numeric column (:class:`nrad.cells.CellSegments`).

Fits each clean table of ``benchmarks/fdr.py`` (the table scored and the table fitted for new rows,
3,000 rows) and prints the segments found.  A table without one is scored exactly as it was before
segments were read: only the cells of a segment are handled differently.

Usage::

    python research/probe_segments.py --nulls flows,bookings --seeds 0-2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from nrad.bench.runner import parse_seeds
from nrad.table import fit_table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import fdr  # noqa: E402


def main() -> None:
    import torch

    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nulls", default=",".join(fdr.NULLS))
    parser.add_argument("--seeds", default="0-2")
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args()
    for generator in args.nulls.split(","):
        for seed in parse_seeds(args.seeds):
            # The seeds fdr.py draws the table scored in sample and the clean table fitted with.
            for mode, base in (("detect", 10_000), ("fit", 20_000)):
                model = fit_table(fdr.NULLS[generator](args.rows, base + seed), random_state=seed)
                segments = model.cell_segments
                found = []
                if segments is not None:
                    schema = model.schema
                    numeric = np.asarray(schema.names)[np.asarray(schema.numeric_sources, dtype=int)]
                    labels = schema.categorical_labels
                    found = [
                        f"{numeric[j]} in {schema.categorical_names[c]} = {labels[c][code]}"
                        for j, c, code in zip(segments.feature, segments.category, segments.code, strict=True)
                    ]
                print(f"{generator} seed {seed} {mode}: {'; '.join(found) or 'no segment'}", flush=True)


if __name__ == "__main__":
    main()
