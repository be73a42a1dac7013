"""Generator Jacobian columns and the IMA penalty."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nrad.flow import CouplingFlow
from nrad.jacobian import generator_columns, ima_penalty, log_column_norms


def _flow(dim: int, linear: np.ndarray | None = None) -> CouplingFlow:
    flow = CouplingFlow(dim, 3, 8, np.random.default_rng(0), linear_init=linear).double()
    for p in flow.parameters():
        p.data.add_(0.3 * torch.randn_like(p))
    return flow


@pytest.mark.parametrize("linear", [False, True])
def test_columns_match_autograd_jacobian_of_generator(linear: bool) -> None:
    # The columns come from a Jacobian-vector product written out by hand
    # (AffineCoupling.inverse_jvp): checked here against autograd's Jacobian.
    q, _ = np.linalg.qr(np.random.default_rng(2).normal(size=(5, 5)))
    flow = _flow(5, q * [1.0, 0.5, 2.0, 1.5, 0.7] if linear else None)
    s = torch.randn(3, 5, dtype=torch.float64)
    cols = generator_columns(flow, s, [0, 2, 4])
    for r in range(3):
        jac = torch.autograd.functional.jacobian(lambda v: flow.generate(v[None])[0], s[r])
        torch.testing.assert_close(cols[:, r, :], jac[:, [0, 2, 4]].T)


def test_penalty_gradient_matches_finite_differences() -> None:
    # The penalty trains by ordinary backward through the hand-written product.
    flow = _flow(4)
    x = torch.randn(6, 4, dtype=torch.float64)
    gen = torch.Generator()

    def penalty() -> torch.Tensor:
        s, ld = flow(x)
        return ima_penalty(flow, s, ld, n_columns=4, generator=gen.manual_seed(0)).sum()

    weight = flow.layers[0].conditioner.net[2].weight
    (grad,) = torch.autograd.grad(penalty(), weight)
    eps, (i, j) = 1e-6, (3, 5)
    with torch.no_grad():
        weight[i, j] += eps
        up = penalty()
        weight[i, j] -= 2 * eps
        down = penalty()
        weight[i, j] += eps
    torch.testing.assert_close(grad[i, j], (up - down) / (2 * eps), atol=1e-6, rtol=1e-4)


def test_penalty_is_nonnegative_when_exact_and_zero_for_orthogonal_columns() -> None:
    flow = _flow(4)
    x = torch.randn(64, 4, dtype=torch.float64)
    s, ld = flow(x)
    gen = torch.Generator().manual_seed(0)
    assert (ima_penalty(flow, s, ld, n_columns=4, generator=gen) >= -1e-9).all()
    # A pure linear map W = diag(1/sigma) Q^T has orthogonal generator columns.
    q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(4, 4)))
    linear = CouplingFlow(
        4, 0, 8, np.random.default_rng(0), linear_init=(q / [1.0, 2.0, 3.0, 4.0]).T
    ).double()
    s, ld = linear(x)
    pen = ima_penalty(linear, s, ld, n_columns=4, generator=gen)
    torch.testing.assert_close(pen, torch.zeros_like(pen), atol=1e-5, rtol=0)


def test_column_sampled_penalty_is_unbiased() -> None:
    flow = _flow(6)
    x = torch.randn(8, 6, dtype=torch.float64)
    s, ld = flow(x)
    exact = ima_penalty(flow, s, ld, n_columns=6, generator=torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1)
    estimates = torch.stack([ima_penalty(flow, s, ld, n_columns=2, generator=gen) for _ in range(3000)])
    torch.testing.assert_close(estimates.mean(0), exact, atol=0.05, rtol=0.02)


def test_chunked_column_norms_equal_unchunked() -> None:
    flow = _flow(7)
    s = torch.randn(5, 7, dtype=torch.float64)
    torch.testing.assert_close(
        log_column_norms(flow, s, range(7), chunk=2), log_column_norms(flow, s, range(7), chunk=64)
    )


def test_probed_column_norms_match_exact() -> None:
    from nrad.jacobian import probed_log_column_norms

    flow = _flow(6)
    s = torch.randn(300, 6, dtype=torch.float64)
    exact = log_column_norms(flow, s, range(6)).mean(0)
    probed = probed_log_column_norms(flow, s, 64, torch.Generator().manual_seed(0)).mean(0)
    # log of an averaged chi-square estimate is biased low by ~1/(2 * probes) per row; tolerance covers it.
    torch.testing.assert_close(probed, exact, atol=0.05, rtol=0)


@pytest.mark.parametrize("linear", [False, True])
def test_columns_from_the_forward_tape_equal_columns_computed_afresh(linear: bool) -> None:
    # Training takes the penalty's columns from what the forward pass recorded
    # (CouplingFlow.forward(x, tape)); they must be the generator's columns at s = f(x).
    flow = _flow(6, np.diag([1.0, 0.5, 2.0, 1.5, 0.7, 1.2]) if linear else None)
    x = torch.randn(10, 6, dtype=torch.float64)
    tape: list = []
    s, _ = flow(x, tape)
    rows = slice(0, 4)
    taped = generator_columns(flow, s[rows], [1, 3, 5], [tuple(v[rows] for v in values) for values in tape])
    torch.testing.assert_close(taped, generator_columns(flow, s[rows], [1, 3, 5]))
