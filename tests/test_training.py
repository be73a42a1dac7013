"""Stacked training (nrad.training): each flow of a stack is the flow it would be alone."""

import numpy as np
import pytest
import torch

from nrad.flow import CouplingFlow
from nrad.jacobian import ima_penalty
from nrad.nrde import NRDE, fit_together
from nrad.training import Adam, StackedFlows, shared_permutations


def _flows(k: int, d: int, linear: bool = True) -> list[CouplingFlow]:
    flows = []
    for i in range(k):
        rng = np.random.default_rng(i)
        init = np.linalg.qr(rng.normal(size=(d, d)))[0] * rng.uniform(0.5, 2, d) if linear else None
        flow = CouplingFlow(d, 4, 16, rng, linear_init=init)
        with torch.no_grad():  # non-zero output layers, so the couplings are not the identity
            for p in flow.parameters():
                p.add_(0.1 * torch.randn(p.shape, generator=torch.Generator().manual_seed(i)))
        flows.append(flow)
    shared_permutations(flows)
    return flows


@pytest.mark.parametrize("linear", [True, False])
def test_stack_gives_each_flow_its_own_density_and_penalty(linear: bool) -> None:
    d, n = 5, 7
    flows = _flows(3, d, linear)
    stack = StackedFlows(flows)
    x = torch.randn(3, n, d, generator=torch.Generator().manual_seed(1))
    tape: list = []
    s, logdet = stack(x, tape)

    class Config:
        penalty_rows, penalty_columns = n, d

    penalty = stack.penalty(s, logdet, tape, Config, torch.Generator())
    for k, flow in enumerate(flows):
        own_s, own_logdet = flow(x[k])
        assert torch.allclose(s[k], own_s, atol=1e-5)
        assert torch.allclose(logdet[k], own_logdet, atol=1e-5)
        own = ima_penalty(flow, own_s, own_logdet, d, torch.Generator())
        assert torch.allclose(penalty[k], own, atol=1e-4)


def test_write_back_copies_each_flows_weights() -> None:
    flows = _flows(2, 4)
    stack = StackedFlows(flows)
    with torch.no_grad():
        for w in stack.weights:
            w[1].add_(1.0)
    before = [p.detach().clone() for p in flows[0].parameters()]
    stack.write_back(flows)
    assert all(torch.equal(a, b) for a, b in zip(before, flows[0].parameters(), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(before, flows[1].parameters(), strict=True))


def test_adam_matches_torch() -> None:
    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(4))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    a, b = Adam(ours, 1e-2, 1e-5), torch.optim.Adam(theirs, lr=1e-2, weight_decay=1e-5)
    plain = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    c = Adam(plain, 1e-2, 1e-5)
    c._fused = False  # the fallback rule, where torch has no fused kernel
    for i in range(10):
        for params, opt in ((ours, a), (theirs, b), (plain, c)):
            opt.zero_grad()
            sum(((p - i) ** 2).sum() for p in params).backward()
            opt.step()
    for x, y, z in zip(ours, theirs, plain, strict=True):
        assert torch.allclose(x, y, atol=1e-6) and torch.allclose(z, y, atol=1e-6)


def test_fitted_together_is_deterministic() -> None:
    rng = np.random.default_rng(0)
    X1, X2 = rng.normal(size=(300, 3)), rng.standard_t(3, size=(300, 3))
    one = fit_together([NRDE(random_state=0, max_epochs=5), NRDE(random_state=1, max_epochs=5)], [X1, X2])
    two = fit_together([NRDE(random_state=0, max_epochs=5), NRDE(random_state=1, max_epochs=5)], [X1, X2])
    for a, b in zip(one, two, strict=True):
        assert np.array_equal(a.anomaly_score(X1), b.anomaly_score(X1))


def test_fitted_together_must_share_training_parameters() -> None:
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match="share"):
        fit_together([NRDE(max_epochs=2), NRDE(max_epochs=3)], [X, X])


def test_given_validation_rows_stop_training_early() -> None:
    rng = np.random.default_rng(0)
    X, held = rng.normal(size=(200, 3)), rng.normal(size=(60, 3))
    det = fit_together([NRDE(random_state=0)], [X], validation=[held])[0]
    assert det.validation_loss_curve_ and det.n_epochs_ < 1000
