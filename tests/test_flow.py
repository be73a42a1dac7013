"""Invariants of every bijection: inverse, log-det against autograd, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from nrad.flow import AffineCoupling, CouplingFlow, LULinear


def _coupling(dim: int) -> nn.Module:
    layer = AffineCoupling(np.random.default_rng(1).permutation(dim), hidden=8)
    for p in layer.parameters():  # leave the identity init: make the test bite
        nn.init.normal_(p, std=0.3)
    return layer


def _lu(dim: int) -> nn.Module:
    return LULinear(np.random.default_rng(2).normal(size=(dim, dim)))


def _flow(dim: int) -> nn.Module:
    flow = CouplingFlow(dim, 3, 8, np.random.default_rng(3), linear_init=np.eye(dim) * 2.0)
    for p in flow.parameters():
        p.data.add_(0.2 * torch.randn_like(p))
    return flow


BIJECTIONS = {"coupling": _coupling, "lu_linear": _lu, "flow": _flow}


@pytest.mark.parametrize("make", BIJECTIONS.values(), ids=BIJECTIONS.keys())
@pytest.mark.parametrize("dim", [1, 2, 5])
def test_inverse_undoes_forward(make: object, dim: int) -> None:
    layer = make(dim).double()
    x = torch.randn(16, dim, dtype=torch.float64)
    y, ld = layer(x)
    x_back, ld_inv = layer.inverse(y)
    torch.testing.assert_close(x_back, x, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(ld_inv, -ld, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("make", BIJECTIONS.values(), ids=BIJECTIONS.keys())
@pytest.mark.parametrize("dim", [1, 3, 6])
def test_logdet_matches_autograd_jacobian(make: object, dim: int) -> None:
    layer = make(dim).double()
    x = torch.randn(4, dim, dtype=torch.float64)
    _, ld = layer(x)
    for i in range(4):
        jac = torch.autograd.functional.jacobian(lambda v: layer(v[None])[0][0], x[i])
        torch.testing.assert_close(ld[i], torch.linalg.slogdet(jac)[1], rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("make", BIJECTIONS.values(), ids=BIJECTIONS.keys())
def test_gradients_reach_every_parameter(make: object) -> None:
    layer = make(4)
    x = torch.randn(32, 4)
    y, ld = layer(x)
    (y.pow(2).sum() - ld.sum()).backward()
    for name, p in layer.named_parameters():
        if p.numel() == 0:
            continue
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_flow_log_prob_is_normalized_in_1d() -> None:
    flow = _flow(1).double()
    grid = torch.linspace(-30, 30, 60001, dtype=torch.float64)[:, None]
    with torch.no_grad():
        mass = torch.trapezoid(flow.log_prob(grid).exp(), grid[:, 0])
    assert abs(float(mass) - 1.0) < 1e-3
