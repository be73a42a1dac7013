"""Two kernel rewrites that did not make scoring faster (scoring-speed probe).

Prints figures; it is not a test.  One 6-layer NRDE flow of the default
size on 20 features (weights barely trained: speed does not depend on
them), one torch thread, chunks of 8,192 rows, the three kernels timed in
turns so that load on the machine hits them alike:

- ``eager``: the flow's own forward pass (what ``nrad score`` runs);
- ``feature order``: the same maps with the state kept in one column order,
  the permutations folded into which columns condition and which are
  updated, and the last conditioner layer zero-padded to full width, so
  a coupling layer needs no gather, no split and no concatenation
  (``y = x * exp(log_scale) + shift`` with log-scale and shift 0 on the
  conditioning columns); checked equal to ``eager`` to 1e-12;
- ``float32``: ``eager`` with the flow and the rows cast to float32, against
  the float32 matmul peak (the bound moves with the dtype).

    python research/probe_kernel.py
"""

from __future__ import annotations

import copy
import time
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from nrad.flow import CouplingFlow, LULinear
from nrad.nrde import NRDE

CHUNK = 8192


def feature_order_plan(flow: CouplingFlow) -> tuple[list[tuple[Any, ...]], torch.Tensor]:
    """The flow's maps in feature order; also where each source ends up."""
    steps: list[tuple[Any, ...]] = []
    column = torch.arange(flow.dim)  # column of the state holding the flow's position j
    for layer in flow.layers:
        if isinstance(layer, LULinear):
            lower, upper = layer._factors()
            steps.append(("linear", (lower @ upper).T[:, layer.perm].contiguous(), layer.log_diag.sum()))
            continue
        column = column[layer.perm]
        d, n = flow.dim, layer.n_cond
        first, second, last = [m for m in layer.conditioner.net if isinstance(m, torch.nn.Linear)]
        k = d - n
        weight = last.weight.new_zeros(2 * d, last.weight.shape[1])
        bias = last.bias.new_zeros(2 * d)
        # Fold the soft clamp's division into the log-scale rows.
        weight[column[n:]], bias[column[n:]] = last.weight[:k] / layer.clamp, last.bias[:k] / layer.clamp
        weight[d + column[n:]], bias[d + column[n:]] = last.weight[k:], last.bias[k:]
        steps.append((
            "coupling", column[:n], first.weight.T.contiguous(), first.bias, second.weight.T.contiguous(),
            second.bias, weight.T.contiguous(), bias, layer.clamp, d,
        ))  # fmt: skip
    return steps, column


def feature_order_forward(steps: list[tuple[Any, ...]], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    logdet = x.new_zeros(x.shape[0])
    for step in steps:
        if step[0] == "linear":
            x, logdet = x @ step[1], logdet + step[2]
            continue
        _, cond, w1, b1, w2, b2, w3, b3, clamp, d = step
        h = functional.silu(torch.addmm(b1, x[:, cond], w1), inplace=True)
        h = functional.silu(torch.addmm(b2, h, w2), inplace=True)
        out = torch.addmm(b3, h, w3)
        log_scale = out[:, :d].tanh_().mul_(clamp)
        logdet = logdet + log_scale.sum(dim=1)
        x = x * log_scale.exp_() + out[:, d:]
    return x, logdet


def rows_per_s(fn: Any, repeats: int = 20) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return repeats * CHUNK / (time.perf_counter() - start)


def matmul_gflops(dtype: torch.dtype, size: int = 1024, repeats: int = 5) -> float:
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * size**3 / best / 1e9


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(CHUNK, 20)) @ rng.normal(size=(20, 20))
    model = NRDE(random_state=0, max_epochs=2).fit(X)
    flow = model.flow_
    flow32 = copy.deepcopy(flow).float()
    with torch.inference_mode():
        z = model._standardize(X)
        z32 = z.float()
        steps, column = feature_order_plan(flow)
        s_ref, ld_ref = flow(z)
        s_new, ld_new = feature_order_forward(steps, z)
        diff = max(float((s_new[:, column] - s_ref).abs().max()), float((ld_new - ld_ref).abs().max()))
        print(f"feature order vs eager: max |diff| {diff:.1e} (sources and log-determinant)")
        kernels = {
            "eager": lambda: flow(z),
            "feature order": lambda: feature_order_forward(steps, z),
            "float32": lambda: flow32(z32),
        }
        rates: dict[str, list[float]] = {name: [] for name in kernels}
        for _ in range(3):
            for name, fn in kernels.items():
                rates[name].append(rows_per_s(fn))
    best = {name: max(r) for name, r in rates.items()}
    peak64, peak32 = matmul_gflops(torch.float64), matmul_gflops(torch.float32)
    print(f"one torch thread, chunk {CHUNK}, best of 3 turns (rows/s):")
    for name, rate in best.items():
        print(f"  {name}: {rate:,.0f} ({rate / best['eager']:.2f}x eager)")
    ratio = peak32 / peak64
    print(f"matmul peak, one thread: float64 {peak64:.1f} GFLOP/s, float32 {peak32:.1f} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
