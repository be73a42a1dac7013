"""Fitting several flows at once: their weights stacked, one optimizer step for all of them.

The table model fits one flow per cross-fitting fold (2 to 5), each on its
own rows.  Fitted one after another, every gradient step pays PyTorch's
per-operation cost once per flow, and on the batches of a table (256 rows,
a few dozen features) that cost is the step: the arithmetic is small.
Stacked, flow ``k``'s weights are slice ``k`` of each tensor, the layers run
as batched matrix products over ``(flows, rows, features)``, and a step
costs about what one flow's step costs.  The flows stay independent: each
has its own rows, initial weights, early stopping and best weights; the
loss is the sum of their losses, so each flow's gradient is its own; the
gradient is clipped per flow and Adam is elementwise.  After training each
flow is an ordinary :class:`nrad.flow.CouplingFlow` again.

The layers here are a third form of ``flow.py``'s (after the kernel's); the
tests check that a stack gives every flow's own log density and penalty.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F

from nrad.errors import FitDivergedError
from nrad.flow import LOG_2PI, AffineCoupling, CouplingFlow, LULinear, _silu_slope

#: Gradient norm per flow above which a step is scaled down (as ``clip_grad_norm_`` does).
MAX_GRAD_NORM = 10.0


@dataclass(frozen=True)
class TrainConfig:
    """What every stacked flow is trained with (NRDE's training parameters)."""

    batch_size: int
    learning_rate: float
    weight_decay: float
    train_noise: float
    penalty_weight: float
    penalty_columns: int
    penalty_rows: int
    penalty_every: int
    epochs: int
    patience: int
    #: Smallest decrease of the held-out loss per feature that counts; "auto": its standard error.
    tol: float | str = 1e-4


class StackedFlows(torch.nn.Module):
    """``K`` coupling flows of one shape, their parameters stacked along a first axis.

    Built from ``K`` :class:`CouplingFlow` objects whose coupling layers share
    their permutations (the data-side LU layers may differ); :meth:`write_back`
    copies the trained weights into them.
    """

    def __init__(self, flows: Sequence[CouplingFlow]) -> None:
        super().__init__()
        first = flows[0]
        self.n_flows, self.dim = len(flows), first.dim
        self.has_linear = isinstance(first.layers[0], LULinear) if len(first.layers) else False
        couplings = [[layer for layer in f.layers if isinstance(layer, AffineCoupling)] for f in flows]
        for layers in couplings[1:]:
            for mine, theirs in zip(layers, couplings[0], strict=True):
                if not torch.equal(mine.perm, theirs.perm):
                    raise ValueError("stacked flows must share their coupling permutations")
        names = [name for name, _ in first.named_parameters()]
        self._names = names
        self.weights = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack([dict(f.named_parameters())[n].detach() for f in flows]).clone())
            for n in names
        )
        self._index = {n: i for i, n in enumerate(names)}
        self.couplings = couplings[0]
        if self.has_linear:
            lus = [f.layers[0] for f in flows]
            self.register_buffer("lu_perm", torch.stack([lu.perm for lu in lus]))
            self.register_buffer("lu_inv_perm", torch.stack([lu.inv_perm for lu in lus]))
            self.register_buffer("lu_sign", torch.stack([lu.sign for lu in lus]))
            self.register_buffer("lower_mask", lus[0].lower_mask.clone())

    def _w(self, name: str) -> Tensor:
        return self.weights[self._index[name]]

    # -- the data-side LU layer ------------------------------------------------

    def _lu_factors(self) -> tuple[Tensor, Tensor]:
        eye = torch.eye(self.dim, dtype=self.lower_mask.dtype)
        lower = self._w("layers.0.lower") * self.lower_mask + eye
        diag = torch.diag_embed(self.lu_sign * torch.exp(self._w("layers.0.log_diag")))
        upper = self._w("layers.0.upper") * self.lower_mask.T + diag
        return lower, upper

    def _lu_forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        lower, upper = self._lu_factors()
        z = torch.bmm(torch.bmm(x, upper.transpose(1, 2)), lower.transpose(1, 2))
        z = torch.gather(z, 2, self.lu_perm[:, None, :].expand_as(z))
        return z, self._w("layers.0.log_diag").sum(dim=1)[:, None].expand(x.shape[0], x.shape[1])

    def _lu_inverse(self, z: Tensor) -> Tensor:
        """The LU layer's inverse on ``(K, rows, d)``: linear, so also its action on tangents."""
        lower, upper = self._lu_factors()
        y = torch.gather(z, 2, self.lu_inv_perm[:, None, :].expand_as(z)).transpose(1, 2)
        y = torch.linalg.solve_triangular(lower, y, upper=False, unitriangular=True)
        return torch.linalg.solve_triangular(upper, y, upper=True).transpose(1, 2)

    # -- coupling layers -------------------------------------------------------

    def _linear(self, x: Tensor, name: str) -> Tensor:
        """``x W^T + b`` per flow for the stacked linear layer ``name``."""
        return torch.baddbmm(
            self._w(f"{name}.bias")[:, None, :], x, self._w(f"{name}.weight").transpose(1, 2)
        )

    def _conditioner(self, i: int, x_a: Tensor) -> tuple[Tensor, ...]:
        """``(h1, silu(h1), h2, silu(h2), out)`` of coupling ``i`` (as ``Conditioner.values``)."""
        net = self._net(i)
        h1 = self._linear(x_a, f"{net}.0")
        a1 = F.silu(h1)
        h2 = self._linear(a1, f"{net}.2")
        a2 = F.silu(h2)
        return h1, a1, h2, a2, self._linear(a2, f"{net}.4")

    def _net(self, i: int) -> str:
        return f"layers.{i + int(self.has_linear)}.conditioner.net"

    def forward(self, x: Tensor, tape: list | None = None) -> tuple[Tensor, Tensor]:
        """``(s, log|det ds/dx|)`` of every flow at its own rows: ``x`` is ``(K, rows, d)``."""
        logdet = x.new_zeros(x.shape[:2])
        if self.has_linear:
            x, logdet = self._lu_forward(x)
        for i, layer in enumerate(self.couplings):
            x = x[..., layer.perm]
            n = layer.n_cond
            x_a, x_b = x[..., :n], x[..., n:]
            *hidden, out = self._conditioner(i, x_a)
            raw, shift = out.chunk(2, dim=-1)
            squashed = torch.tanh(raw / layer.clamp)
            log_scale = layer.clamp * squashed
            y_b = x_b * torch.exp(log_scale) + shift
            if tape is not None:
                tape.append((*hidden, squashed, torch.exp(-log_scale), x_b))
            x = torch.cat([x_a, y_b], dim=-1)
            logdet = logdet + log_scale.sum(dim=-1)
        return x, logdet

    def generator_columns(self, index: Tensor, tape: list, rows: int) -> Tensor:
        """Columns ``J_g[:, i]`` (``i`` in ``index``) at the first ``rows`` taped rows: (k, K, rows, d)."""
        k = len(index)
        tangent = torch.zeros(k, self.n_flows, rows, self.dim, dtype=self.weights[0].dtype)
        tangent[torch.arange(k), :, :, index] = 1.0
        for i in reversed(range(len(self.couplings))):
            values = tuple(v[:, :rows] for v in tape[i])
            tangent = self._coupling_tangents(i, values, tangent)
        if not self.has_linear:
            return tangent
        flat = tangent.permute(1, 0, 2, 3).reshape(self.n_flows, k * rows, self.dim)
        return self._lu_inverse(flat).reshape(self.n_flows, k, rows, self.dim).permute(1, 0, 2, 3)

    def _coupling_tangents(self, i: int, values: tuple[Tensor, ...], tangents: Tensor) -> Tensor:
        """As ``AffineCoupling.tangents``, with a flows axis after the tangents' own."""
        layer = self.couplings[i]
        h1, a1, h2, a2, squashed, inv_scale, x_b = values
        w1, w2, w3 = (self._w(f"{self._net(i)}.{j}.weight").transpose(1, 2) for j in (0, 2, 4))
        t_a, t_b = tangents[..., : layer.n_cond], tangents[..., layer.n_cond :]
        dh2 = (_silu_slope(h1, a1) * (t_a @ w1)) @ w2
        d_out = (_silu_slope(h2, a2) * dh2) @ w3
        d_raw, d_shift = d_out.chunk(2, dim=-1)
        d_log_scale = d_raw * (1.0 - squashed * squashed)
        dx_b = (t_b - d_shift) * inv_scale - x_b * d_log_scale
        return torch.cat([t_a, dx_b], dim=-1)[..., layer.inv_perm]

    def penalty(
        self, s: Tensor, logdet: Tensor, tape: list, config: TrainConfig, gen: torch.Generator
    ) -> Tensor:
        """Per flow and row, the IMA contrast at the first ``penalty_rows`` rows; ``(K, rows)``.

        As :func:`nrad.jacobian.ima_penalty`: exact up to ``penalty_columns``
        features, else a column-sampled estimate scaled by ``d / penalty_columns``.
        """
        rows = min(config.penalty_rows, s.shape[1])
        if self.dim <= config.penalty_columns:
            index, scale = torch.arange(self.dim), 1.0
        else:
            index = torch.randperm(self.dim, generator=gen)[: config.penalty_columns]
            scale = self.dim / config.penalty_columns
        columns = self.generator_columns(index, tape, rows)
        log_norms = 0.5 * torch.log(columns.pow(2).sum(dim=-1) + 1e-30)
        return scale * log_norms.sum(dim=0) + logdet[:, :rows]

    def log_prob(self, x: Tensor) -> Tensor:
        s, logdet = self(x)
        return -0.5 * (s * s + LOG_2PI).sum(dim=-1) + logdet

    def snapshot(self, k: int) -> list[Tensor]:
        return [w[k].detach().clone() for w in self.weights]

    def load_snapshot(self, k: int, saved: list[Tensor]) -> None:
        with torch.no_grad():
            for w, value in zip(self.weights, saved, strict=True):
                w[k].copy_(value)

    def write_back(self, flows: Sequence[CouplingFlow]) -> None:
        """Copy each flow's trained weights into its :class:`CouplingFlow`."""
        with torch.no_grad():
            for k, flow in enumerate(flows):
                own = dict(flow.named_parameters())
                for name, w in zip(self._names, self.weights, strict=True):
                    own[name].copy_(w[k])


class Adam:
    """Adam on a list of parameters (PyTorch's fused CPU update, or the same rule in plain ops).

    Written here because constructing any ``torch.optim`` optimizer imports
    ``torch._dynamo`` on first use, a cost of seconds that every command
    which fits a model would pay; the update rule is torch's own kernel.
    """

    def __init__(self, params: Sequence[Tensor], lr: float, weight_decay: float) -> None:
        self.params = list(params)
        self.lr, self.weight_decay = lr, weight_decay
        self.betas, self.eps = (0.9, 0.999), 1e-8
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.steps = [torch.zeros((), dtype=torch.float32) for _ in self.params]
        self._fused = hasattr(torch, "_fused_adam_")

    def step(self) -> None:
        grads = [p.grad for p in self.params]
        with torch.no_grad():
            if self._fused:
                torch._foreach_add_(self.steps, 1)
                torch._fused_adam_(
                    self.params, grads, self.m, self.v, [], self.steps, amsgrad=False, lr=self.lr,
                    beta1=self.betas[0], beta2=self.betas[1], weight_decay=self.weight_decay,
                    eps=self.eps, maximize=False,
                )  # fmt: skip
                return
            b1, b2 = self.betas
            for p, g, m, v, t in zip(self.params, grads, self.m, self.v, self.steps, strict=True):
                t += 1
                g = g + self.weight_decay * p if self.weight_decay else g
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                step = float(t)
                denom = (v / (1 - b2**step)).sqrt_().add_(self.eps)
                p.addcdiv_(m, denom, value=-self.lr / (1 - b1**step))

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None


@dataclass
class TrainResult:
    """Per flow: epochs run, mean training loss and held-out loss per epoch."""

    n_epochs: list[int]
    loss_curves: list[list[float]]
    validation_curves: list[list[float]]


def train_stacked(
    flows: Sequence[CouplingFlow],
    train: Sequence[Tensor],
    validation: Sequence[Tensor | None],
    config: TrainConfig,
    gen: torch.Generator,
    lr: float,
    epochs: Callable[[int], Iterable[int]] = range,
) -> TrainResult:
    """Train ``flows`` (in place) on their own rows, each stopped early on its own held-out rows.

    ``train[k]`` and ``validation[k]`` are flow ``k``'s rows (float32); a
    flow without held-out rows runs every epoch.  Every step draws
    ``batch_size`` rows (at most the smallest training set) for each flow, in
    a random order that visits all of a flow's rows once per pass.  ``epochs``
    makes the epoch loop from the epoch count (a progress bar, say).  Raises
    :class:`FitDivergedError` when a loss is not finite.
    """
    n_flows, d = len(flows), flows[0].dim
    stack = StackedFlows(flows)
    batch = int(min(config.batch_size, min(len(t) for t in train)))
    steps_per_epoch = math.ceil(max(len(t) for t in train) / batch)
    opt = Adam(list(stack.weights), lr, config.weight_decay)
    orders = [_Order(len(t), gen) for t in train]
    val_rows, val_mask = _padded(validation, d)
    watch = [v is not None for v in validation]
    best = [stack.snapshot(k) for k in range(n_flows)]
    best_val, stale = [math.inf] * n_flows, [0] * n_flows
    stopped = [not w for w in watch]
    n_epochs = [0] * n_flows
    loss_curves: list[list[float]] = [[] for _ in range(n_flows)]
    val_curves: list[list[float]] = [[] for _ in range(n_flows)]
    step = 0
    for _ in epochs(config.epochs):
        totals = torch.zeros(n_flows, dtype=torch.float64)
        for _ in range(steps_per_epoch):
            x = torch.stack([t[o.take(batch)] for t, o in zip(train, orders, strict=True)])
            if config.train_noise > 0:
                x = x + config.train_noise * torch.randn(x.shape, generator=gen)
            penalize = step % config.penalty_every == 0 and config.penalty_weight > 0 and d > 1
            step += 1
            tape: list | None = [] if penalize else None
            s, logdet = stack(x, tape)
            loss = -(-0.5 * (s * s + LOG_2PI).sum(dim=-1) + logdet).mean(dim=1)
            if penalize:
                pen = stack.penalty(s, logdet, tape, config, gen)
                loss = loss + config.penalty_every * config.penalty_weight * pen.mean(dim=1)
            loss = loss / d
            if not bool(torch.isfinite(loss).all()):
                raise FitDivergedError("non-finite training loss")
            opt.zero_grad()
            loss.sum().backward()
            _clip_per_flow(stack.weights, MAX_GRAD_NORM)
            opt.step()
            totals += loss.detach().double()
        for k in range(n_flows):
            if not stopped[k] or not watch[k]:
                loss_curves[k].append(float(totals[k]) / steps_per_epoch)
                n_epochs[k] += 1
        if not any(watch):
            continue
        with torch.no_grad():
            per_row = -stack.log_prob(val_rows) * val_mask / d
            count = val_mask.sum(dim=1).clamp(min=1)
            val = per_row.sum(dim=1) / count
            spread = ((per_row - val[:, None]) ** 2 * val_mask).sum(dim=1) / (count - 1).clamp(min=1)
            error = (spread / count).sqrt()
        for k in range(n_flows):
            if stopped[k]:
                continue
            value = float(val[k])
            val_curves[k].append(value)
            tol = float(error[k]) if config.tol == "auto" else float(config.tol)
            if value < best_val[k] - tol:
                best[k], best_val[k], stale[k] = stack.snapshot(k), value, 0
            else:
                stale[k] += 1
                stopped[k] = stale[k] >= config.patience
        if all(stopped):
            break
    for k in range(n_flows):
        if watch[k]:
            stack.load_snapshot(k, best[k])
    stack.write_back(flows)
    return TrainResult(n_epochs, loss_curves, val_curves)


class _Order:
    """Row indices in random passes: each pass visits every row once; a take may span two passes."""

    def __init__(self, n: int, gen: torch.Generator) -> None:
        self.n, self.gen = n, gen
        self.left = torch.randperm(n, generator=gen)

    def take(self, k: int) -> Tensor:
        if len(self.left) >= k:
            out, self.left = self.left[:k], self.left[k:]
            return out
        fresh = torch.randperm(self.n, generator=self.gen)
        need = k - len(self.left)
        out, self.left = torch.cat([self.left, fresh[:need]]), fresh[need:]
        return out


def _padded(validation: Sequence[Tensor | None], d: int) -> tuple[Tensor, Tensor]:
    """Held-out rows of every flow in one ``(K, rows, d)`` tensor (zeros padding) and its row mask."""
    size = max([len(v) for v in validation if v is not None] + [1])
    rows = torch.zeros(len(validation), size, d)
    mask = torch.zeros(len(validation), size)
    for k, v in enumerate(validation):
        if v is not None and len(v):
            rows[k, : len(v)] = v
            mask[k, : len(v)] = 1.0
    return rows, mask


def _clip_per_flow(weights: Sequence[Tensor], max_norm: float) -> None:
    """Scale each flow's gradient to norm at most ``max_norm`` (``clip_grad_norm_`` per flow)."""
    grads = [w.grad for w in weights if w.grad is not None]
    if not grads:
        return
    with torch.no_grad():
        sq = torch.stack([g.pow(2).reshape(g.shape[0], -1).sum(dim=1) for g in grads]).sum(dim=0)
        coef = (max_norm / (sq.sqrt() + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.reshape(-1, *([1] * (g.dim() - 1))))


def shared_permutations(flows: Sequence[CouplingFlow]) -> None:
    """Give every flow the first one's coupling permutations (so the flows can be stacked)."""
    ref = [layer for layer in flows[0].layers if isinstance(layer, AffineCoupling)]
    for flow in flows[1:]:
        layers = [layer for layer in flow.layers if isinstance(layer, AffineCoupling)]
        for mine, theirs in zip(layers, ref, strict=True):
            mine.perm.copy_(theirs.perm)
            mine.inv_perm.copy_(theirs.inv_perm)


def as_float32(rows: np.ndarray) -> Tensor:
    return torch.as_tensor(np.ascontiguousarray(rows), dtype=torch.float32)
