"""The normalizing flow: x -> sources s, its log-determinant, and its inverse.

The flow is a stack of affine coupling layers (RealNVP, Dinh et al. 2017)
separated by fixed random permutations.  ``forward`` maps standardized data
``x`` to sources ``s`` with a factorized standard-normal base density;
``inverse`` is the generator ``g = f^-1`` that maps sources back to data.

Written by hand rather than taken from zuko because NRDE needs the generator
direction as a plain, batched function that ``torch.func.jvp`` can push
tangents through (Jacobian columns of ``g`` at every training step), and a
flat, stable parameter dictionary for the safetensors model file; zuko builds
its transforms lazily per call as distributions, which makes both awkward.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import torch
from torch import Tensor, nn
from torch.nn import functional as F

LOG_2PI = math.log(2.0 * math.pi)


def standard_normal_logpdf(s: Tensor) -> Tensor:
    """Elementwise log N(s; 0, 1)."""
    return -0.5 * (s * s + LOG_2PI)


def base_logpdf(s: Tensor, tail: float | None = None) -> Tensor:
    """Elementwise log density of the base: ``N(0, 1)``, or with exponential tails beyond ``+-tail``.

    With ``tail = c`` the log density is Gaussian for ``|s| <= c`` and falls
    linearly beyond, ``-c |s| + c^2 / 2`` (up to the Gaussian's constant):
    continuous with a matching slope at ``c`` (Huber's least-favourable
    density).  Used when scoring only: a flow has seen few rows mapped
    beyond a few latent sd, and a Gaussian base would charge a row mapped to
    8 sd 32 nats; exponential tails charge it 20.
    """
    if tail is None:
        return standard_normal_logpdf(s)
    a = s.abs()
    return torch.where(a <= tail, -0.5 * s * s, -tail * a + 0.5 * tail * tail) - 0.5 * LOG_2PI


class _Linear(nn.Linear):
    """``nn.Linear`` whose parameters are left uninitialized on construction.

    Weights are drawn by ``_init_weights`` from the flow's own generator (or
    loaded from a model file); nn.Linear's default init would consume
    torch's global RNG.  Not ``nn.utils.skip_init``: its meta-device
    round trip costs a noticeable part of a second on first use in a process, paid by every
    ``nrad score`` and every Dask worker that loads a model.
    """

    def reset_parameters(self) -> None:
        pass


class Conditioner(nn.Module):
    """MLP that maps the conditioning half to (log-scale, shift) of the other half."""

    def __init__(self, n_in: int, n_out: int, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            _Linear(n_in, hidden),
            nn.SiLU(),
            _Linear(hidden, hidden),
            nn.SiLU(),
            _Linear(hidden, 2 * n_out),
        )

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        raw_scale, shift = self.values(x)[-1].chunk(2, dim=-1)
        return raw_scale, shift

    def values(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """``(h1, silu(h1), h2, silu(h2), out)``: the pre-activations are what a
        Jacobian-vector product needs.  The layers are applied as functions, not
        called as modules: on small training batches five module calls cost ~4% of a step."""
        first, _, second, _, last = self.net
        h1 = F.linear(x, first.weight, first.bias)
        a1 = F.silu(h1)
        h2 = F.linear(a1, second.weight, second.bias)
        a2 = F.silu(h2)
        return h1, a1, h2, a2, F.linear(a2, last.weight, last.bias)


class AffineCoupling(nn.Module):
    """One affine coupling layer after a fixed permutation of the features.

    ``y_a = x_a``, ``y_b = x_b * exp(c * tanh(r(x_a) / c)) + t(x_a)``: the
    log-scale is soft-clamped to ``[-c, c]`` so that one step can never blow
    up the density (why: ADBench has discrete and near-constant features).
    """

    def __init__(self, permutation: np.ndarray, hidden: int, clamp: float = 2.0) -> None:
        super().__init__()
        dim = len(permutation)
        self.n_cond = dim // 2
        self.clamp = clamp
        perm = torch.as_tensor(permutation, dtype=torch.long)
        self.register_buffer("perm", perm)
        self.register_buffer("inv_perm", torch.argsort(perm))
        self.conditioner = Conditioner(self.n_cond, dim - self.n_cond, hidden)

    def _scale_shift(self, x_a: Tensor) -> tuple[Tensor, Tensor]:
        raw, shift = self.conditioner(x_a)
        return self._squash(raw)[1], shift

    def _squash(self, raw: Tensor) -> tuple[Tensor, Tensor]:
        """``(tanh(raw / c), c tanh(raw / c))``: the soft clamp and the log-scale it gives."""
        squashed = torch.tanh(raw / self.clamp)
        return squashed, self.clamp * squashed

    def forward(self, x: Tensor, tape: list | None = None) -> tuple[Tensor, Tensor]:
        """``(y, log|det dy/dx|)``; with a ``tape`` (a list), also appends what
        :meth:`tangents` needs at these rows, so the generator's Jacobian there
        costs only the tangents' ops (the IMA penalty's training steps)."""
        x = x[:, self.perm]
        x_a, x_b = x[:, : self.n_cond], x[:, self.n_cond :]
        *hidden, out = self.conditioner.values(x_a)
        raw, shift = out.chunk(2, dim=-1)
        squashed, log_scale = self._squash(raw)
        y_b = x_b * torch.exp(log_scale) + shift
        if tape is not None:
            tape.append((*hidden, squashed, torch.exp(-log_scale), x_b))
        return torch.cat([x_a, y_b], dim=1), log_scale.sum(dim=1)

    def inverse(self, y: Tensor) -> tuple[Tensor, Tensor]:
        y_a, y_b = y[:, : self.n_cond], y[:, self.n_cond :]
        log_scale, shift = self._scale_shift(y_a)
        x_b = (y_b - shift) * torch.exp(-log_scale)
        x = torch.cat([y_a, x_b], dim=1)
        return x[:, self.inv_perm], -log_scale.sum(dim=1)

    def inverse_jvp(self, y: Tensor, tangents: Tensor) -> tuple[Tensor, Tensor]:
        """``inverse(y)`` and its Jacobian applied to each tangent; tangents of shape ``(k, n, dim)``.

        The product is written out by hand rather than left to
        ``torch.autograd.forward_ad``: there, ``F.linear`` on dual tensors
        runs a Python decomposition (and its first call imports
        ``torch._dynamo``, slow to import), and the rows must be tiled once per
        tangent.  Here the row's own values are computed once and only the
        tangents are ``k`` times wider; every op is plain and differentiable,
        so the IMA penalty built on it trains by ordinary backward.
        """
        y_a, y_b = y[:, : self.n_cond], y[:, self.n_cond :]
        *hidden, out = self.conditioner.values(y_a)
        raw, shift = out.chunk(2, dim=-1)
        squashed, log_scale = self._squash(raw)
        inv_scale = torch.exp(-log_scale)
        x_b = (y_b - shift) * inv_scale
        x = torch.cat([y_a, x_b], dim=1)[:, self.inv_perm]
        return x, self.tangents((*hidden, squashed, inv_scale, x_b), tangents)

    def tangents(self, values: tuple[Tensor, ...], tangents: Tensor) -> Tensor:
        """The inverse's Jacobian applied to ``tangents`` ``(k, n, dim)``, at the rows whose
        ``values`` (``h1, silu(h1), h2, silu(h2), tanh(raw / c), exp(-log_scale), x_b``) are given."""
        h1, a1, h2, a2, squashed, inv_scale, x_b = values
        t_a, t_b = tangents[..., : self.n_cond], tangents[..., self.n_cond :]
        first, _, second, _, last = self.conditioner.net
        # On small batches the op count is the cost: silu's derivative from the values at
        # hand in three ops, tanh's in one (``tanh_backward(t, y) = t (1 - y^2)``, differentiable).
        dh2 = (_silu_slope(h1, a1) * (t_a @ first.weight.T)) @ second.weight.T
        d_raw, d_shift = ((_silu_slope(h2, a2) * dh2) @ last.weight.T).chunk(2, dim=-1)
        d_log_scale = torch.ops.aten.tanh_backward(d_raw, squashed)  # d(c tanh(r / c)) = (1 - tanh^2) dr
        dx_b = (t_b - d_shift) * inv_scale - x_b * d_log_scale
        return torch.cat([t_a, dx_b], dim=-1)[..., self.inv_perm]


def _silu_slope(h: Tensor, silu_h: Tensor) -> Tensor:
    """``silu'(h) = sigmoid(h) (1 + h (1 - sigmoid(h))) = sigmoid(h) (1 - silu(h)) + silu(h)``."""
    return torch.addcmul(silu_h, torch.sigmoid(h), 1 - silu_h)


class LULinear(nn.Module):
    """Invertible linear map ``z = W x`` with ``W = P L U`` (Glow's LU form).

    Initialized at a given matrix (NRDE passes PCA whitening, the IMA-optimal
    linear generator for Gaussian data: its columns ``U_k sigma_k`` are
    orthogonal), then learned.  ``log|det W| = sum(log_diag)``; every map is a
    product with a triangular matrix, ``O(d^2)`` per row even for d ~ 1,500.
    """

    def __init__(self, weight: np.ndarray) -> None:
        super().__init__()
        p, lower, upper = scipy.linalg.lu(weight)
        diag = np.diag(upper)
        d = weight.shape[0]
        perm = torch.as_tensor(np.argmax(p, axis=1), dtype=torch.long)
        self.register_buffer("perm", perm)
        self.register_buffer("inv_perm", torch.argsort(perm))
        self.register_buffer("sign", torch.as_tensor(np.sign(diag), dtype=torch.float32))
        self.register_buffer("lower_mask", torch.tril(torch.ones(d, d), diagonal=-1))
        self.lower = nn.Parameter(torch.as_tensor(np.tril(lower, -1), dtype=torch.float32))
        self.upper = nn.Parameter(torch.as_tensor(np.triu(upper, 1), dtype=torch.float32))
        self.log_diag = nn.Parameter(torch.as_tensor(np.log(np.abs(diag)), dtype=torch.float32))

    def _factors(self) -> tuple[Tensor, Tensor]:
        eye = torch.eye(self.lower.shape[0], dtype=self.lower.dtype)
        lower = self.lower * self.lower_mask + eye
        upper = self.upper * self.lower_mask.T + torch.diag(self.sign * torch.exp(self.log_diag))
        return lower, upper

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        lower, upper = self._factors()
        # z = P L U x, row-wise: x @ U^T @ L^T, then rows permuted by P.  The
        # transposes are made contiguous: multiplied by a transposed view, MKL
        # rounded a row's result differently depending on the other rows of
        # the batch (1 ulp), so a row's score depended on its batch.
        z = (x @ upper.T.contiguous()) @ lower.T.contiguous()
        z = z[:, self.perm]
        return z, self.log_diag.sum().expand(x.shape[0])

    def inverse(self, z: Tensor) -> tuple[Tensor, Tensor]:
        lower, upper = self._factors()
        y = z[:, self.inv_perm]
        y = torch.linalg.solve_triangular(lower, y.T, upper=False, unitriangular=True)
        x = torch.linalg.solve_triangular(upper, y, upper=True).T
        return x, -self.log_diag.sum().expand(z.shape[0])


class CouplingFlow(nn.Module):
    """A stack of affine coupling layers with a standard-normal base.

    Parameters
    ----------
    dim : int
        Number of features (and of sources).
    n_transforms : int
        Number of coupling layers.
    hidden_units : int
        Width of each conditioner MLP.
    rng : numpy.random.Generator
        Source of the permutations and of the initial weights; the flow never
        touches torch's global random state.
    linear_init : ndarray of shape (dim, dim), optional
        Initial weight of a learnable LU linear layer applied first (on the
        data side).  ``None``: no linear layer.
    """

    def __init__(
        self,
        dim: int,
        n_transforms: int,
        hidden_units: int,
        rng: np.random.Generator,
        linear_init: np.ndarray | None = None,
    ) -> None:
        super().__init__()
        self.dim = dim
        perms = [_permutation(dim, k, rng) for k in range(n_transforms)]
        layers: list[nn.Module] = [] if linear_init is None else [LULinear(linear_init)]
        layers += [AffineCoupling(p, hidden_units) for p in perms]
        self.layers = nn.ModuleList(layers)
        _init_weights(self, rng)

    def forward(self, x: Tensor, tape: list | None = None) -> tuple[Tensor, Tensor]:
        """Map data to sources; return ``(s, log|det ds/dx|)``.

        With a ``tape`` (a list), each coupling layer appends what
        :meth:`nonlinear_inverse_jvp` needs to take the generator's Jacobian
        at these rows without running the layers again.
        """
        logdet = x.new_zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x) if tape is None or isinstance(layer, LULinear) else layer(x, tape)
            logdet = logdet + ld
        return x, logdet

    def inverse(self, s: Tensor) -> tuple[Tensor, Tensor]:
        """Generator ``g``: map sources to data; return ``(x, log|det dx/ds|)``."""
        logdet = s.new_zeros(s.shape[0])
        for layer in reversed(self.layers):
            s, ld = layer.inverse(s)
            logdet = logdet + ld
        return s, logdet

    def generate(self, s: Tensor) -> Tensor:
        """Generator ``g(s)`` alone (the function whose Jacobian columns we take)."""
        return self.inverse(s)[0]

    def nonlinear_inverse(self, s: Tensor) -> Tensor:
        """The coupling part of ``g`` (everything but the data-side linear layer)."""
        for layer in reversed(self.layers):
            if isinstance(layer, LULinear):
                break
            s, _ = layer.inverse(s)
        return s

    def nonlinear_inverse_jvp(self, s: Tensor, tangents: Tensor, tape: list | None = None) -> Tensor:
        """Jacobian of ``nonlinear_inverse`` at rows ``s`` applied to tangents ``(k, n, dim)``.

        ``tape``: what ``forward(x, tape)`` recorded for the rows ``x`` whose
        sources are ``s`` (restricted to those rows); the layers are then not run again.
        """
        couplings = [layer for layer in reversed(self.layers) if not isinstance(layer, LULinear)]
        if tape is not None:
            for layer, values in zip(couplings, reversed(tape), strict=True):
                tangents = layer.tangents(values, tangents)
            return tangents
        for layer in couplings:
            s, tangents = layer.inverse_jvp(s, tangents)
        return tangents

    def linear_inverse(self, h: Tensor) -> Tensor:
        """The data-side linear part of ``g``; being linear, it is also its own Jacobian action."""
        first = self.layers[0] if len(self.layers) else None
        return first.inverse(h)[0] if isinstance(first, LULinear) else h

    def log_prob(self, x: Tensor) -> Tensor:
        """Full log density of ``x`` under the flow."""
        s, logdet = self(x)
        return standard_normal_logpdf(s).sum(dim=1) + logdet


def _permutation(dim: int, k: int, rng: np.random.Generator) -> np.ndarray:
    # Alternate a reversal with random shuffles so every feature is
    # transformed within two layers even when dim is small.
    if k % 2 == 1:
        return np.arange(dim)[::-1].copy()
    return rng.permutation(dim)


def _init_weights(module: nn.Module, rng: np.random.Generator) -> None:
    """Kaiming-uniform init drawn from ``rng``; last conditioner layer at zero.

    Zero output layers make every coupling start as the identity, the usual
    stable start for flows.
    """
    for sub in module.modules():
        if isinstance(sub, Conditioner):
            linears = [m for m in sub.net if isinstance(m, nn.Linear)]
            for lin in linears[:-1]:
                bound = 1.0 / math.sqrt(max(lin.in_features, 1))
                w = rng.uniform(-bound, bound, size=tuple(lin.weight.shape))
                b = rng.uniform(-bound, bound, size=tuple(lin.bias.shape))
                with torch.no_grad():
                    lin.weight.copy_(torch.as_tensor(w, dtype=lin.weight.dtype))
                    lin.bias.copy_(torch.as_tensor(b, dtype=lin.bias.dtype))
            with torch.no_grad():
                linears[-1].weight.zero_()
                linears[-1].bias.zero_()
