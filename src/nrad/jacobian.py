"""Jacobian columns of the generator and the identifiability penalty.

Column ``i`` of the generator's Jacobian ``J_g(s) = dg/ds`` is the direction
(and size) in which source ``i`` moves the data.  We get it with one
Jacobian-vector product ``J_g e_i``: a coupling flow's inverse costs the
same as its forward pass, so ``k`` columns cost ``k`` passes and never a
``d x d`` inverse.

The penalty is the IMA contrast (Gresele et al., NeurIPS 2021)::

    C(s) = sum_i log ||J_g[:, i]|| - log |det J_g|  >= 0,

zero exactly when the columns are orthogonal (Hadamard's inequality).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from nrad.flow import CouplingFlow


def generator_columns(
    flow: CouplingFlow, s: Tensor, index: Sequence[int] | Tensor, tape: list | None = None
) -> Tensor:
    """Columns ``J_g[:, i]`` at each row of ``s`` for the sources in ``index``.

    One Jacobian-vector product through the coupling layers for all
    columns at once (``CouplingFlow.nonlinear_inverse_jvp``: each layer's
    values once per row, its tangent ops on ``len(index)`` tangents per
    row), then the data-side linear layer applied to the tangents directly:
    it is linear, so that *is* its Jacobian action, and it avoids pushing
    tangents through two triangular solves of size d (slow for d ~ 2,000).
    ``tape``: what ``flow.forward(x, tape)`` recorded for the rows whose
    sources are ``s`` (see ``CouplingFlow.nonlinear_inverse_jvp``).

    Returns
    -------
    Tensor of shape ``(len(index), n_rows, dim)``.
    """
    index = torch.as_tensor(index, dtype=torch.long)
    k, (n, d) = len(index), s.shape
    tangent = s.new_zeros(k, n, d)
    tangent[torch.arange(k), :, index] = 1.0
    columns = flow.nonlinear_inverse_jvp(s, tangent, tape)
    return flow.linear_inverse(columns.reshape(k * n, d)).reshape(k, n, d)


def log_column_norms(
    flow: CouplingFlow, s: Tensor, index: Sequence[int] | Tensor, chunk: int = 64, tape: list | None = None
) -> Tensor:
    """``log ||J_g[:, i]||`` for ``i`` in ``index``; shape ``(n_rows, len(index))``.

    Columns are taken ``chunk`` at a time so wide data (d in the thousands)
    does not hold ``d`` copies of the activations at once.
    """
    index = torch.as_tensor(index, dtype=torch.long)
    parts = []
    for start in range(0, len(index), chunk):
        cols = generator_columns(flow, s, index[start : start + chunk], tape)
        parts.append(0.5 * torch.log(cols.pow(2).sum(dim=-1) + 1e-30).T)
    if not parts:
        return s.new_zeros(s.shape[0], 0)
    return torch.cat(parts, dim=1)


def probed_log_column_norms(
    flow: CouplingFlow, s: Tensor, n_probes: int, generator: torch.Generator
) -> Tensor:
    """Estimate every ``log ||J_g[:, i]||`` at once from random probes; shape ``(n_rows, dim)``.

    ``||J_g e_i||^2 = E_v[(v^T J_g e_i)^2]`` for ``v ~ N(0, I)``, and one
    reverse-mode pass gives ``v^T J_g`` for all ``i`` together: ``n_probes``
    passes instead of ``dim``.  Used for source influence on wide data, where
    it is averaged over rows (relative error of one row's squared norm is
    about ``sqrt(2 / n_probes)``).
    """
    with torch.inference_mode(False), torch.enable_grad():
        s = s.clone().requires_grad_(True)
        x = flow.generate(s)
        total = torch.zeros_like(s)
        for _ in range(n_probes):
            v = torch.randn(x.shape, generator=generator, dtype=x.dtype)
            (row,) = torch.autograd.grad(x, s, grad_outputs=v, retain_graph=True)
            total += row.detach() ** 2
    return 0.5 * torch.log(total / n_probes + 1e-30)


def ima_penalty(
    flow: CouplingFlow,
    s: Tensor,
    logdet_forward: Tensor,
    n_columns: int,
    generator: torch.Generator,
    tape: list | None = None,
) -> Tensor:
    """Per-row IMA contrast, exact or estimated from sampled columns.

    ``log|det J_g(s)| = -log|det J_f(x)|`` comes free from the forward pass.
    When ``dim > n_columns`` the sum over columns is estimated from
    ``n_columns`` columns drawn without replacement, scaled by
    ``dim / n_columns``: an unbiased estimate of the sum, at a fixed cost per
    step whatever the width of the data.
    """
    dim = s.shape[1]
    if dim <= n_columns:
        index = torch.arange(dim)
        scale = 1.0
    else:
        index = torch.randperm(dim, generator=generator)[:n_columns]
        scale = dim / n_columns
    log_norms = log_column_norms(flow, s, index, chunk=max(len(index), 1), tape=tape)
    return scale * log_norms.sum(dim=1) + logdet_forward
