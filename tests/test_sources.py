"""The pure / noise split and the pure-data density."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nrad.flow import CouplingFlow, standard_normal_logpdf
from nrad.sources import pure_log_density, split_sources


@pytest.mark.parametrize(
    ("influence", "expected_noise"),
    [
        ([0.5, 0.3, -2.3, -2.4, -2.35], (2, 3, 4)),  # a flat floor far below: noise
        ([0.5, 0.3, -0.2, -0.3, 0.1], ()),  # no gap: all pure
        ([0.5, 0.3, 0.1, -2.4], ()),  # a lone weak direction is kept (a constraint)
        ([0.5, -1.0, -2.0, -3.0], ()),  # weak sources that are not flat: kept
    ],
)
def test_noise_floor_rule(influence: list[float], expected_noise: tuple[int, ...]) -> None:
    split = split_sources(np.array(influence), None, split_ratio=3.0)
    assert split.noise == expected_noise
    assert sorted(split.pure + split.noise) == list(range(len(influence)))


def test_explicit_counts() -> None:
    infl = np.array([0.1, 2.0, -1.0, 0.5])
    assert split_sources(infl, 2, 3.0).pure == (1, 3)
    assert split_sources(infl, "all", 3.0).noise == ()


def test_pure_density_without_noise_is_flow_density() -> None:
    flow = CouplingFlow(3, 2, 8, np.random.default_rng(0)).double()
    x = torch.randn(10, 3, dtype=torch.float64)
    torch.testing.assert_close(pure_log_density(flow, x, ()), flow.log_prob(x))


def test_pure_density_of_linear_orthogonal_generator() -> None:
    # g(s) = Q diag(sigma) s: the pure density is sum_P [log N(s_i) - log sigma_i],
    # whatever the noise sources do.
    sigma = np.array([2.0, 1.0, 0.1])
    q, _ = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))
    flow = CouplingFlow(3, 0, 4, np.random.default_rng(0), linear_init=(q / sigma).T).double()
    x = torch.randn(6, 3, dtype=torch.float64)
    s, _ = flow(x)
    expected = (standard_normal_logpdf(s[:, :2]) - torch.log(torch.tensor(sigma[:2]))).sum(1)
    torch.testing.assert_close(pure_log_density(flow, x, (2,)), expected)
    x_moved = x + torch.tensor(q[:, 2] * 0.1 * 3.0)  # move along the noise source only
    torch.testing.assert_close(pure_log_density(flow, x_moved, (2,)), expected)
