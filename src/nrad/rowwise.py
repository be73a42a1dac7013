"""Products whose every row is computed alone: a row scores the same whatever rows it is scored with.

A matrix product through BLAS sums a row's terms in an order that depends on
the tile the row falls in and on how many rows the product is given (one row
goes through a matrix-vector kernel): the same row scored alone, in a
stream's batch or with the whole table differs in its last bits, and
streamed, Dask and in-memory scoring would no longer give identical scores.
``np.einsum`` without ``optimize`` never calls BLAS; its loops sum each row's
terms in one order whatever the batch (tests/test_rowwise.py checks slices of
every size against the whole).  The scoring path's products go through here;
fitting, which sees its rows once, uses BLAS.
"""

from __future__ import annotations

import numpy as np


def rows_times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for a 2-D ``a`` (one row per table row) and a 1-D or 2-D ``b``, each row alone."""
    return np.einsum("ij,j->i" if np.ndim(b) == 1 else "ij,jk->ik", a, b)
