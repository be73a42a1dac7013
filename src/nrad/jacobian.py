"""Jacobian columns of the generator and the identifiability penalty.

Column ``i`` of the generator's Jacobian ``J_g(s) = dg/ds`` is the direction
(and size) in which source ``i`` moves the data.  We get it with one
forward-mode product ``jvp(g, s, e_i)``: a coupling flow's inverse costs the
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
from torch.func import jvp, vmap

from nrad.flow import CouplingFlow


def generator_columns(flow: CouplingFlow, s: Tensor, index: Sequence[int] | Tensor) -> Tensor:
    """Columns ``J_g[:, i]`` at each row of ``s`` for the sources in ``index``.

    Returns
    -------
    Tensor of shape ``(len(index), n_rows, dim)``.
    """
    index = torch.as_tensor(index, dtype=torch.long)
    basis = torch.zeros(len(index), s.shape[1], dtype=s.dtype)
    basis[torch.arange(len(index)), index] = 1.0

    def column(e: Tensor) -> Tensor:
        return jvp(flow.generate, (s,), (e.expand_as(s),))[1]

    return vmap(column)(basis)


def log_column_norms(
    flow: CouplingFlow, s: Tensor, index: Sequence[int] | Tensor, chunk: int = 64
) -> Tensor:
    """``log ||J_g[:, i]||`` for ``i`` in ``index``; shape ``(n_rows, len(index))``.

    Columns are taken ``chunk`` at a time so wide data (d in the thousands)
    does not hold ``d`` copies of the activations at once.
    """
    index = torch.as_tensor(index, dtype=torch.long)
    parts = []
    for start in range(0, len(index), chunk):
        cols = generator_columns(flow, s, index[start : start + chunk])
        parts.append(0.5 * torch.log(cols.pow(2).sum(dim=-1) + 1e-30).T)
    if not parts:
        return s.new_zeros(s.shape[0], 0)
    return torch.cat(parts, dim=1)


def ima_penalty(
    flow: CouplingFlow,
    s: Tensor,
    logdet_forward: Tensor,
    n_columns: int,
    generator: torch.Generator,
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
    log_norms = log_column_norms(flow, s, index, chunk=max(len(index), 1))
    return scale * log_norms.sum(dim=1) + logdet_forward
