"""Own implementations of two deep tabular baselines (DeepOD cannot sit beside torch 2.13).

* ICL — Shenkar & Wolf, "Anomaly Detection for Tabular Data with Internal
  Contrastive Learning", ICLR 2022.
* NeuTraL-AD — Qiu et al., "Neural Transformation Learning for Deep Anomaly
  Detection Beyond Images", ICML 2021.

Architectures and defaults follow the papers' tabular settings as packaged
in DeepOD 0.4.1 (hidden layers 100, 50; representation 128; LeakyReLU; no
bias; Adam 1e-3; batch 64; ICL with batch norm), except that training stops
after ``EPOCHS`` epochs or ``MAX_STEPS`` gradient steps, whichever comes first.
Both score a row by its contrastive loss (higher = more anomalous).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

#: DeepOD's default epochs, and a cap on gradient steps for large tables.
EPOCHS = 100
MAX_STEPS = 3000


class _FlatBatchNorm(nn.BatchNorm1d):
    """Batch norm over every leading axis (rows x windows), features last."""

    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x.reshape(-1, x.shape[-1])).reshape(x.shape)


def _mlp(
    n_in: int, hidden: list[int], n_out: int, first_act: nn.Module | None = None, batch_norm: bool = False
) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = n_in
    for i, h in enumerate(hidden):
        layers.append(nn.Linear(width, h, bias=False))
        if batch_norm:
            layers.append(_FlatBatchNorm(h))
        layers.append(first_act if (i == 0 and first_act) else nn.LeakyReLU())
        width = h
    layers.append(nn.Linear(width, n_out, bias=False))
    return nn.Sequential(*layers)


class _ContrastiveDetector:
    """Shared fit / score loop: minibatch Adam on a per-row loss."""

    def __init__(
        self, epochs: int = EPOCHS, batch_size: int = 64, lr: float = 1e-3, random_state: int = 0
    ) -> None:
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.random_state = random_state

    def _build(self, n_features: int) -> nn.Module:
        raise NotImplementedError

    def _row_loss(self, X: Tensor) -> Tensor:
        raise NotImplementedError

    def fit(self, X: np.ndarray, y: Any = None) -> _ContrastiveDetector:
        Xt = torch.as_tensor(X, dtype=torch.float32)
        with torch.random.fork_rng():
            torch.manual_seed(self.random_state)
            self.net_ = self._build(Xt.shape[1])
            opt = torch.optim.Adam(self.net_.parameters(), lr=self.lr)
            gen = torch.Generator().manual_seed(self.random_state)
            self.net_.train()
            steps_per_epoch = math.ceil(len(Xt) / self.batch_size)
            for _ in range(min(self.epochs, math.ceil(MAX_STEPS / steps_per_epoch))):
                order = torch.randperm(len(Xt), generator=gen)
                for start in range(0, len(Xt), self.batch_size):
                    loss = self._row_loss(Xt[order[start : start + self.batch_size]]).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        return self

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        Xt = torch.as_tensor(X, dtype=torch.float32)
        self.net_.eval()
        with torch.inference_mode():
            parts = [self._row_loss(Xt[i : i + 4096]) for i in range(0, len(Xt), 4096)]
        return torch.cat(parts).double().numpy()


class NeuTraLAD(_ContrastiveDetector):
    """NeuTraL-AD: K learnable residual transformations + deterministic contrastive loss.

    Each view ``x_k = x + T_k(x)`` is encoded; the loss asks each view's
    embedding to be close to the original's and far from the other views':
    ``-sum_k log[h(z_k, z) / (h(z_k, z) + sum_{l != k} h(z_k, z_l))]``,
    ``h = exp(cos / temperature)``.
    """

    def __init__(self, n_transforms: int = 11, temperature: float = 0.1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n_transforms = n_transforms
        self.temperature = temperature

    def _build(self, n_features: int) -> nn.Module:
        net = nn.Module()
        net.transforms = nn.ModuleList(_mlp(n_features, [50], n_features) for _ in range(self.n_transforms))
        net.encoder = _mlp(n_features, [100, 50], 128)
        return net

    def _row_loss(self, X: Tensor) -> Tensor:
        views = torch.stack([X] + [X + t(X) for t in self.net_.transforms], dim=1)  # n, K+1, d
        z = F.normalize(self.net_.encoder(views), dim=-1)
        sim = torch.exp(z @ z.transpose(1, 2) / self.temperature)  # n, K+1, K+1
        k1 = sim.shape[1]
        off_diag = sim.masked_fill(torch.eye(k1, dtype=torch.bool), 0.0)
        positive = sim[:, 1:, 0]
        denominator = off_diag[:, 1:].sum(dim=-1)
        K = self.n_transforms
        scale = 1.0 / abs(K * math.log(1.0 / K))
        return ((torch.log(denominator) - torch.log(positive)) * scale).sum(dim=1)


class ICL(_ContrastiveDetector):
    """ICL: match each contiguous window of ``k`` features to its complement.

    For every window ``j`` the complement (all other features) is encoded by
    ``F`` and the window by ``G``; the loss is the cross-entropy of picking
    the row's own window ``j`` among all its windows (temperature 0.01).
    """

    def __init__(self, temperature: float = 0.01, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.temperature = temperature

    @staticmethod
    def window_size(d: int) -> int:
        """The papers' rule: 2 up to 40 features, 10 up to 160, then d - 150/200/400."""
        if d <= 40:
            return 2
        if d <= 160:
            return 10
        if d <= 240:
            return d - 150
        return d - 200 if d <= 480 else d - 400

    def _build(self, n_features: int) -> nn.Module:
        if n_features < 3:
            raise ValueError("ICL needs at least 3 features")
        k = self.window_size(n_features)
        windows = np.arange(n_features - k + 1)[:, None] + np.arange(k)
        complements = np.array([np.setdiff1d(np.arange(n_features), w) for w in windows])
        net = nn.Module()
        net.register_buffer("windows", torch.as_tensor(windows))
        net.register_buffer("complements", torch.as_tensor(complements))
        net.f = _mlp(n_features - k, [100, 50], 128, first_act=nn.Tanh(), batch_norm=True)
        net.g = _mlp(k, [50, 25], 128, batch_norm=True)
        return net

    def _row_loss(self, X: Tensor) -> Tensor:
        parts = F.normalize(self.net_.g(X[:, self.net_.windows]), dim=-1)  # n, W, r
        rest = F.normalize(self.net_.f(X[:, self.net_.complements]), dim=-1)  # n, W, r
        logits = rest @ parts.transpose(1, 2) / self.temperature  # n, W (query), W (keys)
        target = torch.arange(logits.shape[1]).expand(logits.shape[0], -1)
        return F.cross_entropy(logits.transpose(1, 2), target, reduction="none").mean(dim=1)
