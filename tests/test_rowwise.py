"""Products on the scoring path: each row's result is the same whatever rows it is computed with."""

from __future__ import annotations

import numpy as np
import pytest

from nrad.rowwise import rows_times


@pytest.mark.parametrize("columns", [1, 5, 13, 64, 128])
def test_a_row_comes_out_the_same_alone_in_a_batch_and_in_the_whole(columns: int) -> None:
    rng = np.random.default_rng(columns)
    a = rng.normal(size=(600, columns + 3))[:, 2 : 2 + columns]  # a strided view, as the scoring path makes
    matrix, vector = rng.normal(size=(columns, 7)), rng.normal(size=columns)
    whole, whole_vector = rows_times(a, matrix), rows_times(a, vector)
    np.testing.assert_allclose(whole, a @ matrix, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(whole_vector, a @ vector, rtol=1e-12, atol=1e-12)
    for size in (1, 2, 3, 7, 96, 128, 333):
        for start in (0, 5, 100):
            rows = slice(start, start + size)
            np.testing.assert_array_equal(rows_times(a[rows], matrix), whole[rows])
            np.testing.assert_array_equal(rows_times(np.ascontiguousarray(a[rows]), matrix), whole[rows])
            np.testing.assert_array_equal(rows_times(a[rows], vector), whole_vector[rows])
