"""The feature-major scoring kernel: the autograd form's numbers, each row on its own."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nrad.flow import CouplingFlow
from nrad.kernel import ScoringKernel
from nrad.sources import pure_log_density

DIM = 7


def _flow(linear: bool) -> CouplingFlow:
    """A flow whose couplings are not the identity (fitted flows' last layers are not zero)."""
    rng = np.random.default_rng(0)
    init = (
        np.linalg.qr(rng.normal(size=(DIM, DIM)))[0] * [2.0, 1.0, 1.0, 0.5, 0.5, 0.2, 0.1] if linear else None
    )
    flow = CouplingFlow(DIM, 4, 16, rng, linear_init=init).double()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in flow.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return flow


def _rows(n: int, seed: int = 2) -> torch.Tensor:
    return torch.randn(n, DIM, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("linear", [False, True], ids=["couplings", "with-lu"])
@pytest.mark.parametrize("noise", [(), (3,), (0, 2, 4, 5, 6)], ids=["no-noise", "one", "five"])
@pytest.mark.parametrize("tail", [None, 2.5])
def test_kernel_equals_the_autograd_form(linear: bool, noise: tuple[int, ...], tail: float | None) -> None:
    flow = _flow(linear)
    x = 1.5 * _rows(500)
    with torch.inference_mode():
        expected = pure_log_density(flow, x, noise, tail)
        got = ScoringKernel(flow).pure_log_density(x, noise, tail)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("linear", [False, True], ids=["couplings", "with-lu"])
def test_kernel_sources_equal_the_flow(linear: bool) -> None:
    flow = _flow(linear)
    x = _rows(300)
    with torch.inference_mode():
        s, logdet = flow(x)
        got_s, got_logdet = ScoringKernel(flow).sources(x)
    torch.testing.assert_close(got_s, s, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got_logdet, logdet, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("noise", [(), (1, 5)], ids=["no-noise", "two"])
def test_a_rows_score_does_not_depend_on_the_other_rows(noise: tuple[int, ...], monkeypatch: object) -> None:
    # To the bit: batches of any size, and the same rows in another order.  Small
    # blocks so that 2,500 rows make many blocks, with partial ones at the end.
    import nrad.kernel as kernel

    monkeypatch.setattr(kernel, "BLOCK_ROWS", 384)
    monkeypatch.setattr(kernel, "TANGENT_COLUMNS", 640)
    kern = ScoringKernel(_flow(True))
    x = _rows(2500)
    with torch.inference_mode():
        full = kern.pure_log_density(x, noise)
        for batch in (7, 100, 383, 1000):
            parts = torch.cat(
                [kern.pure_log_density(x[i : i + batch], noise) for i in range(0, len(x), batch)]
            )
            assert torch.equal(parts, full), f"batches of {batch}"
        # One row at a time (the first blocks' worth: a call per row is slow).
        ones = torch.cat([kern.pure_log_density(x[i : i + 1], noise) for i in range(500)])
        assert torch.equal(ones, full[:500]), "batches of 1"
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(3))
        assert torch.equal(kern.pure_log_density(x[order], noise), full[order])


def test_no_rows() -> None:
    kern = ScoringKernel(_flow(True))
    assert kern.pure_log_density(_rows(0), (1,)).shape == (0,)
    s, logdet = kern.sources(_rows(0))
    assert s.shape == (0, DIM) and logdet.shape == (0,)


def test_a_flows_kernel_is_built_once_and_again_after_its_weights_change() -> None:
    flow = _flow(True)
    x = _rows(200)
    kern = ScoringKernel.of(flow)
    assert ScoringKernel.of(flow) is kern
    with torch.no_grad():
        for p in flow.parameters():
            p.mul_(0.9)  # in place, as an optimizer step changes them
    fresh = ScoringKernel.of(flow)
    assert fresh is not kern
    with torch.inference_mode():
        torch.testing.assert_close(
            fresh.pure_log_density(x, (2,)), pure_log_density(flow, x, (2,)), rtol=1e-12, atol=1e-10
        )
    other = _flow(True)
    other.layers[1].perm.copy_(other.layers[1].perm.flip(0))  # a permutation copied in (training does)
    before = ScoringKernel.of(other)
    other.layers[1].perm.copy_(other.layers[1].perm.flip(0))
    assert ScoringKernel.of(other) is not before
