"""The k-th nearest reference distance: exact, and each row's result on its own."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nrad.neighbours import NeighbourSearch


def _brute(reference: np.ndarray, z: np.ndarray, k: int) -> np.ndarray:
    d = np.sqrt(((z[:, None, :] - reference[None, :, :]) ** 2).sum(axis=2))
    return np.sort(d, axis=1)[:, k - 1]


@pytest.mark.parametrize(
    ("n_ref", "k"),
    [(4096, 5), (1000, 5), (130, 5), (64, 5), (3, 5), (1, 1), (300, 1), (4096, 64)],
)
def test_kth_distance_equals_brute_force(n_ref: int, k: int) -> None:
    rng = np.random.default_rng(n_ref)
    # Clustered reference rows: the k nearest often share a group of the search.
    reference = rng.normal(size=(n_ref, 20)) + 4.0 * rng.integers(0, 3, size=(n_ref, 1))
    z = rng.normal(size=(500, 20)) * 2.0
    got = NeighbourSearch(reference, k).kth_distance(torch.as_tensor(z)).numpy()
    np.testing.assert_allclose(got, _brute(reference, z, min(k, n_ref)), rtol=1e-12)


def test_duplicate_reference_rows_and_exact_hits() -> None:
    rng = np.random.default_rng(1)
    reference = np.repeat(rng.normal(size=(40, 6)), 10, axis=0)  # each row 10 times
    z = np.vstack([reference[:50], rng.normal(size=(50, 6))])
    got = NeighbourSearch(reference, 5).kth_distance(torch.as_tensor(z)).numpy()
    np.testing.assert_allclose(got, _brute(reference, z, 5), rtol=1e-12, atol=1e-12)
    assert (got[:50] == 0.0).all()


@pytest.mark.slow
def test_a_rows_distance_does_not_depend_on_the_other_rows() -> None:
    rng = np.random.default_rng(2)
    search = NeighbourSearch(rng.normal(size=(4096, 20)), 5)
    z = torch.as_tensor(rng.normal(size=(2500, 20)))
    whole = search.kth_distance(z)
    for batch in (1, 7, 100, 383, 1000):
        parts = torch.cat([search.kth_distance(z[i : i + batch]) for i in range(0, len(z), batch)])
        assert torch.equal(parts, whole), f"batches of {batch}"
    order = torch.randperm(len(z), generator=torch.Generator().manual_seed(3))
    assert torch.equal(search.kth_distance(z[order]), whole[order])


def test_no_rows() -> None:
    search = NeighbourSearch(np.ones((10, 3)), 5)
    assert search.kth_distance(torch.zeros(0, 3, dtype=torch.float64)).shape == (0,)
