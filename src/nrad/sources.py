"""Source influence, the pure / noise split, and the pure-data log density.

See docs/method.md for the derivation.  In short: with (near-)orthogonal
generator columns, source ``i`` moves the data by ``||J_g[:, i]||`` per unit
of ``s_i``.  Noise sources are the ones whose influence sits far below the
rest (a gap in the sorted log-influences); the pure data are
``x_p = g(s_P, s_N = 0)`` and their density on the pure manifold is::

    log p(x_p) = sum_{i in P} log N(s_i) - sum_{i in P} log ||J_g[:, i](s~)||

with ``s~ = (s_P, 0)``.  Because ``log|det J_g| = sum_i log ||J_g[:, i]||`` for
orthogonal columns, the pure-column sum equals
``log|det J_g(s~)| - sum_{i in N} log ||J_g[:, i](s~)||``, which costs one
inverse pass plus one Jacobian-vector product per *noise* source.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from nrad.flow import CouplingFlow, base_logpdf
from nrad.jacobian import log_column_norms, probed_log_column_norms


@dataclass(frozen=True)
class SourceSplit:
    """Which sources generate the pure data and which generate noise."""

    pure: tuple[int, ...]
    noise: tuple[int, ...]


#: Above this many sources, influence is estimated from random probes
#: (PROBES reverse-mode passes) instead of one Jacobian-vector product per source.
EXACT_INFLUENCE_MAX_DIM = 128
PROBES = 64


def source_influence(flow: CouplingFlow, s: Tensor, generator: torch.Generator | None = None) -> np.ndarray:
    """Mean log column norm of the generator Jacobian per source, over rows ``s``.

    Exact (one Jacobian-vector product per source) up to ``EXACT_INFLUENCE_MAX_DIM``
    sources; above, estimated with ``PROBES`` random probes for all sources
    at once (:func:`nrad.jacobian.probed_log_column_norms`).
    """
    if s.shape[1] <= EXACT_INFLUENCE_MAX_DIM:
        log_norms = log_column_norms(flow, s, torch.arange(s.shape[1]))
    else:
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        log_norms = probed_log_column_norms(flow, s, PROBES, gen)
    return log_norms.mean(dim=0).double().numpy()


#: Noise sources must agree in influence to within this factor (column norm):
#: i.i.d. measurement noise puts a flat floor under the spectrum (the
#: probabilistic-PCA picture ``C = W W^T + sigma^2 I``), structure does not.
FLOOR_SPREAD = 2.0
#: A noise floor needs at least this many sources to be seen as flat.
MIN_NOISE_SOURCES = 2


def split_sources(influence: np.ndarray, n_pure_sources: int | str | None, split_ratio: float) -> SourceSplit:
    """Split sources into pure and noise groups from their influences alone.

    Parameters
    ----------
    influence : ndarray of shape (d,)
        Mean log column norm per source (``source_influence``).
    n_pure_sources : int, "all" or None
        ``"all"``: no noise sources.  An int ``k``: the ``k`` most influential
        sources are pure.  ``None``: the noise-floor rule below.
    split_ratio : float
        Noise-floor rule: sort sources by influence; the weakest ones are
        noise when (a) there are at least two of them, (b) they lie within a
        factor ``FLOOR_SPREAD`` of each other (a flat floor, as i.i.d. noise
        makes) and (c) a gap of at least ``split_ratio`` in column norm
        separates them from the weakest pure source.  Among qualifying cuts
        the one with the largest gap wins; with none, every source is pure.
        A lone weak direction is kept: in clean data it is usually a tight
        constraint of the normal rows, which is where anomalies show.
    """
    d = len(influence)
    order = np.argsort(-influence, kind="stable")
    if n_pure_sources == "all" or d == 1:
        k = d
    elif n_pure_sources is None:
        k = _floor_cut(influence[order], math.log(split_ratio), math.log(FLOOR_SPREAD))
    else:
        k = int(min(max(int(n_pure_sources), 1), d))
    return SourceSplit(pure=tuple(sorted(order[:k].tolist())), noise=tuple(sorted(order[k:].tolist())))


def _floor_cut(sorted_desc: np.ndarray, min_log_gap: float, max_log_spread: float) -> int:
    """Number of pure sources under the noise-floor rule (``len`` when no floor)."""
    d = len(sorted_desc)
    best_k, best_gap = d, -math.inf
    for k in range(1, d - MIN_NOISE_SOURCES + 1):
        gap = sorted_desc[k - 1] - sorted_desc[k]
        spread = sorted_desc[k] - sorted_desc[-1]
        if gap >= min_log_gap and spread <= max_log_spread and gap > best_gap:
            best_k, best_gap = k, gap
    return best_k


def pure_log_density(
    flow: CouplingFlow, x: Tensor, noise: Sequence[int], latent_tail: float | None = None
) -> Tensor:
    """Log density of each row's pure data ``x_p = g(s_P, 0)`` on the pure manifold.

    With no noise sources this is exactly the flow's log density of ``x``.
    ``latent_tail``: see :func:`nrad.flow.base_logpdf`.  Differentiable
    (explanations take its gradient); scoring uses
    :class:`nrad.kernel.ScoringKernel`, the same numbers to rounding, faster.
    """
    s, logdet_forward = flow(x)
    if len(noise) == 0:
        return base_logpdf(s, latent_tail).sum(dim=1) + logdet_forward
    noise_idx = torch.as_tensor(list(noise), dtype=torch.long)
    pure_mask = torch.ones(s.shape[1], dtype=torch.bool)
    pure_mask[noise_idx] = False
    s_pure = s.clone()
    s_pure[:, noise_idx] = 0.0
    _, logdet_generator = flow.inverse(s_pure)
    noise_log_norms = log_column_norms(flow, s_pure, noise_idx)
    latent = base_logpdf(s[:, pure_mask], latent_tail).sum(dim=1)
    return latent - logdet_generator + noise_log_norms.sum(dim=1)
