"""A fitted flow's scoring pass, feature-major: the same numbers as ``sources.pure_log_density``, faster.

Scoring is inference only: no autograd, no tape, and the weights never
change.  This pass holds the rows as columns, a ``(features, rows)``
matrix, instead of the training path's ``(rows, features)``.  Then

* a coupling layer's permutation copies whole contiguous rows of that
  matrix (``index_select`` on dim 0, a memory copy per feature) where the
  row-major gather moves one element at a time (on narrow tables as slow
  as a good share of the layer's matrix products);
* the conditioning half, the log-scale and the shift are contiguous
  slices of the layer's input and output, not strided views that the next
  op must copy;
* rows go through the layers in blocks of about 2,000 (``BLOCK_ROWS``), so
  a layer's activations stay in the core's cache;
* the Jacobian-vector products for noise sources run as one matrix
  product per weight over ``(noise sources x rows)`` columns, on slices of
  a block of about ``TANGENT_COLUMNS`` columns (whole chunks times many
  noise sources make activations too large for the cache); the passes
  through the layers stay on the whole block (on the slices' few rows,
  their many small ops per pass would cost more than they carry);
* values not needed again are overwritten in place, and the generator
  pass runs once, its values shared by the log-determinant and the
  tangents (the training path runs it twice).

``benchmarks/scale.py`` measures it against the training path's form
(docs/scaling.md, "Scoring kernel").  Written by hand because it is a
second form of ``flow.py``'s layers, not a general kernel:
``torch.compile`` fuses the elementwise ops, but scored fewer rows a
second than this kernel, after a compile (seconds, and a C++ compiler) in
every process that scores.  The two forms agree to rounding
(tests compare them); all scoring in the product goes through this one,
so a row's score never depends on which form ran.  Explanations need
gradients and use the autograd form.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from torch.nn import functional as F

from nrad.flow import AffineCoupling, CouplingFlow, LULinear, base_logpdf

#: Rows per block: a 64-unit activation of this many rows fits a core's L2 cache.
BLOCK_ROWS = 2016
#: With noise sources, (noise sources x rows) columns per block of tangents.
TANGENT_COLUMNS = 4096
#: Blocks hold a multiple of this many rows (padded with copies of the last row): the matrix
#: kernel computes the rows in tiles, and the rows of a last, partial tile are summed in
#: another order (a row's score would change in its last bit with its place among the rows).
ROW_MULTIPLE = 96


#: Each flow's kernel with its weights' version counters; an entry goes with its flow.
_KERNELS: weakref.WeakKeyDictionary[CouplingFlow, tuple[tuple[int, ...], ScoringKernel]] = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True)
class _Coupling:
    """One coupling layer's weights, detached, for ``W @ X`` on feature-major rows ``X``."""

    perm: Tensor
    n_cond: int
    clamp: float
    weights: tuple[Tensor, Tensor, Tensor]
    biases: tuple[Tensor, Tensor, Tensor]

    @classmethod
    def of(cls, layer: AffineCoupling) -> _Coupling:
        first, _, second, _, last = layer.conditioner.net
        linears = (first, second, last)
        return cls(
            perm=layer.perm,
            n_cond=layer.n_cond,
            clamp=layer.clamp,
            weights=tuple(lin.weight.detach().contiguous() for lin in linears),
            biases=tuple(lin.bias.detach()[:, None].contiguous() for lin in linears),
        )

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Data side to source side: ``(y, log|det|)``."""
        (w1, w2, w3), (b1, b2, b3) = self.weights, self.biases
        x = x.index_select(0, self.perm)
        x_a, x_b = x[: self.n_cond], x[self.n_cond :]
        # In place wherever a value is not needed again: every new tensor is memory
        # the next op must stream through.
        hidden = F.silu(torch.addmm(b1, w1, x_a), inplace=True)
        hidden = F.silu(torch.addmm(b2, w2, hidden), inplace=True)
        out = torch.addmm(b3, w3, hidden)
        n_b = out.shape[0] // 2
        log_scale = torch.tanh(out[:n_b] / self.clamp).mul_(self.clamp)
        y_b = torch.addcmul(out[n_b:], x_b, log_scale.exp())
        return torch.cat([x_a, y_b]), log_scale.sum(dim=0)

    def inverse(self, y: Tensor) -> tuple[Tensor, Tensor, tuple[Tensor, ...]]:
        """Source side to data side: ``(x, -log|det|, values the tangents need)``."""
        (w1, w2, w3), (b1, b2, b3) = self.weights, self.biases
        y_a, y_b = y[: self.n_cond], y[self.n_cond :]
        hidden1, slope1 = _silu_and_slope(torch.addmm(b1, w1, y_a))
        hidden2, slope2 = _silu_and_slope(torch.addmm(b2, w2, hidden1))
        out = torch.addmm(b3, w3, hidden2)
        n_b = out.shape[0] // 2
        squashed = torch.tanh(out[:n_b] / self.clamp)
        log_scale = self.clamp * squashed
        inv_scale = torch.exp(-log_scale)
        x_b = (y_b - out[n_b:]).mul_(inv_scale)
        x = self._unpermute(y_a, x_b)
        tanh_slope = squashed.mul_(squashed).neg_().add_(1)  # d(c tanh(r / c)) / dr = 1 - tanh^2
        return x, -log_scale.sum(dim=0), (slope1, slope2, tanh_slope, inv_scale, x_b)

    def tangents(self, values: Sequence[Tensor], t: Tensor) -> Tensor:
        """The inverse's Jacobian applied to tangents ``t`` of shape ``(dim, k, rows)``."""
        slope1, slope2, tanh_slope, inv_scale, x_b = (v[:, None, :] for v in values)
        (w1, w2, w3), (_, k, n) = self.weights, t.shape
        t_a, t_b = t[: self.n_cond], t[self.n_cond :]
        dh = (w1 @ t_a.reshape(self.n_cond, k * n)).view(-1, k, n).mul_(slope1)
        dh = (w2 @ dh.view(-1, k * n)).view(-1, k, n).mul_(slope2)
        d_out = (w3 @ dh.view(-1, k * n)).view(-1, k, n)
        n_b = d_out.shape[0] // 2
        d_log_scale = d_out[:n_b].mul_(tanh_slope)
        dx_b = (t_b - d_out[n_b:]).mul_(inv_scale).addcmul_(x_b, d_log_scale, value=-1.0)
        return self._unpermute(t_a, dx_b)

    def _unpermute(self, first: Tensor, second: Tensor) -> Tensor:
        """``cat([first, second])`` with the layer's permutation undone (one copy, not two)."""
        out = first.new_empty((first.shape[0] + second.shape[0], *first.shape[1:]))
        out.index_copy_(0, self.perm[: self.n_cond], first)
        return out.index_copy_(0, self.perm[self.n_cond :], second)


@dataclass(frozen=True)
class _Linear:
    """The data-side LU layer, detached: ``z = P L U x``, and its inverse as one matrix."""

    lower: Tensor
    upper: Tensor
    perm: Tensor
    inverse_matrix: Tensor
    log_det: Tensor

    @classmethod
    def of(cls, layer: LULinear) -> _Linear:
        lower, upper = (f.detach().contiguous() for f in layer._factors())
        # (P L U)^-1 once, so that the tangents' inverse is one product: two triangular solves
        # over (noise sources x rows) columns took 5% of the kernel's time, the product 1%.
        eye = torch.eye(len(lower), dtype=lower.dtype)[layer.inv_perm]
        y = torch.linalg.solve_triangular(lower, eye, upper=False, unitriangular=True)
        inverse = torch.linalg.solve_triangular(upper, y, upper=True).contiguous()
        return cls(lower, upper, layer.perm, inverse, layer.log_diag.detach().sum())

    def forward(self, x: Tensor) -> Tensor:
        return (self.lower @ (self.upper @ x)).index_select(0, self.perm)

    def inverse(self, z: Tensor) -> Tensor:
        """``x = U^-1 L^-1 P^T z`` for feature-major ``z`` (columns of any count)."""
        return self.inverse_matrix @ z


class ScoringKernel:
    """A fitted :class:`~nrad.flow.CouplingFlow`'s inference pass, feature-major.

    Parameters
    ----------
    flow : CouplingFlow
        The fitted flow; its weights are read once (detached), so build a
        new kernel after the weights change.
    """

    def __init__(self, flow: CouplingFlow) -> None:
        layers = list(flow.layers)
        self.linear = _Linear.of(layers.pop(0)) if layers and isinstance(layers[0], LULinear) else None
        self.couplings = [_Coupling.of(layer) for layer in layers]
        self.dim = flow.dim
        self.dtype = next(flow.parameters()).dtype

    @classmethod
    def of(cls, flow: CouplingFlow) -> ScoringKernel:
        """The kernel of ``flow``'s current weights, built once and kept while they stay the same.

        Explanations score a few hundred trial rows per call, thousands of
        calls per table; building a kernel (the LU layer's inverse, the
        weights' copies) took as long as scoring the rows.  A weight or
        permutation changed in place (an optimizer step, ``load_state_dict``)
        bumps its tensor's version counter, which the cache compares.
        """
        versions = tuple(t._version for t in (*flow.parameters(), *flow.buffers()))
        cached = _KERNELS.get(flow)
        if cached is None or cached[0] != versions:
            cached = (versions, cls(flow))
            _KERNELS[flow] = cached
        return cached[1]

    def sources(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``(s, log|det ds/dx|)`` of row-major ``x``; ``s`` row-major."""
        if len(x) == 0:
            return x.clone(), x.new_zeros(0)
        parts = [self._forward(block) for block in feature_major_blocks(x, block_rows(0))]
        return _cat([s for s, _ in parts], dim=1, n=len(x)).T, _cat([ld for _, ld in parts], 0, len(x))

    def pure_log_density(self, x: Tensor, noise: Sequence[int], latent_tail: float | None = None) -> Tensor:
        """:func:`nrad.sources.pure_log_density` of row-major ``x`` (rows of any count).

        With ``k`` noise sources the tangents are taken in slices of about
        ``TANGENT_COLUMNS / k`` rows, so that a slice's tangents stay in cache.
        """
        if len(x) == 0:
            return x.new_zeros(0)
        noise_idx = torch.as_tensor(list(noise), dtype=torch.long)
        parts = []
        for block in feature_major_blocks(x, BLOCK_ROWS):
            if len(noise) == 0:
                s, logdet = self._forward(block)
                parts.append(base_logpdf(s, latent_tail).sum(dim=0) + logdet)
            else:
                parts.append(self._pure_block(block, noise_idx, latent_tail))
        return _cat(parts, 0, len(x))

    def _forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        logdet = x.new_zeros(x.shape[1])
        if self.linear is not None:
            x = self.linear.forward(x)
            logdet = logdet + self.linear.log_det
        for layer in self.couplings:
            x, ld = layer.forward(x)
            logdet = logdet + ld
        return x, logdet

    def _pure_block(self, x: Tensor, noise: Tensor, latent_tail: float | None) -> Tensor:
        """Pure-data log density of feature-major rows ``x``, with noise sources ``noise``.

        The passes through the layers run on the whole block; the tangents,
        ``noise sources`` times wider, on slices of ``block_rows(k)`` rows.
        """
        s, _ = self._forward(x)
        pure = torch.ones(s.shape[0], dtype=torch.bool)
        pure[noise] = False
        latent = base_logpdf(s[pure], latent_tail).sum(dim=0)
        s_pure = s.clone()
        s_pure[noise] = 0.0
        h, logdet_generator, tape = s_pure, torch.zeros_like(latent), []
        for layer in reversed(self.couplings):
            h, ld, values = layer.inverse(h)
            logdet_generator = logdet_generator + ld
            tape.append(values)
        if self.linear is not None:
            logdet_generator = logdet_generator - self.linear.log_det
        n, rows = s.shape[1], block_rows(len(noise))
        log_norms = [
            self._log_norms(_columns(tape, start, rows), noise, min(rows, n - start))
            for start in range(0, n, rows)
        ]
        return latent - logdet_generator + torch.cat(log_norms)

    def _log_norms(self, tape: list[list[Tensor]], noise: Tensor, n: int) -> Tensor:
        """Per row of the ``n`` rows of ``tape``, the sum over noise sources of the log norm of the
        generator's derivative in that source."""
        k = len(noise)
        t = torch.zeros(self.dim, k, n, dtype=self.dtype)
        t[noise, torch.arange(k)] = 1.0
        for layer, values in zip(reversed(self.couplings), tape, strict=True):
            t = layer.tangents(values, t)
        t = t.reshape(-1, k * n)
        if self.linear is not None:
            t = self.linear.inverse(t)
        return (0.5 * torch.log(t.pow(2).sum(dim=0) + 1e-30)).view(k, n).sum(dim=0)


def block_rows(n_noise: int) -> int:
    """Rows per block (``n_noise`` = 0) or per slice of tangents for ``n_noise`` noise sources (a
    multiple of ``ROW_MULTIPLE``)."""
    rows = BLOCK_ROWS if n_noise == 0 else min(BLOCK_ROWS, TANGENT_COLUMNS // n_noise)
    return max(ROW_MULTIPLE, round(rows / ROW_MULTIPLE) * ROW_MULTIPLE)


def feature_major_blocks(x: Tensor, rows: int) -> list[Tensor]:
    """Row-major ``x`` as feature-major blocks of ``rows`` rows, the last padded to a multiple
    of ``ROW_MULTIPLE`` rows with copies of its last row."""
    blocks = []
    for start in range(0, x.shape[0], rows):
        block = x[start : start + rows]
        extra = -block.shape[0] % ROW_MULTIPLE
        blocks.append(torch.cat([block, block[-1:].expand(extra, -1)]).T.contiguous())
    return blocks


def _columns(tape: list[tuple[Tensor, ...]], start: int, rows: int) -> list[list[Tensor]]:
    """Rows ``start`` to ``start + rows`` of every value on the tape (feature-major: columns)."""
    return [[v[:, start : start + rows] for v in values] for values in tape]


def _cat(parts: list[Tensor], dim: int, n: int) -> Tensor:
    """The blocks' results joined along the rows' dimension, padding rows dropped."""
    return torch.cat(parts, dim=dim).narrow(dim, 0, n)


def _silu_and_slope(h: Tensor) -> tuple[Tensor, Tensor]:
    """``(silu(h), silu'(h))``; overwrites ``h``.  ``flow._silu_slope``'s formula, with the
    sigmoid computed once for both (the training form gets ``silu(h)`` from ``F.silu``)."""
    sig = torch.sigmoid(h)
    silu = h.mul_(sig)
    return silu, torch.addcmul(silu, sig, 1 - silu)
