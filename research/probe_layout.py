"""Why the scoring kernel is feature-major, and why its blocks are padded to 96 rows.

Prints, on one torch thread (float64, 20 features, 64 hidden units):

1. a feature permutation: row-major gather ``x[:, perm]`` against
   feature-major ``index_select`` on dim 0, ns per element;
2. the conditioner's matrix products as a share of this CPU's peak
   (2048^3), row-major (``F.linear``) and feature-major (``W @ X``);
3. an in-place broadcast multiply against one that allocates;
4. position dependence: rows of a feature-major product rotated within the
   block, how many rows' results change (last bits), for block sizes that
   are and are not multiples of 96;
5. the kernel against the autograd form (``nrad.sources.pure_log_density``)
   on a random 20-feature flow with 0 and 15 noise sources, rows/s.

Usage::

    python research/probe_layout.py
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import numpy as np
import torch
from torch.nn import functional as F

from nrad.flow import CouplingFlow
from nrad.kernel import ScoringKernel
from nrad.sources import pure_log_density


def per_call(fn: Callable[[], object], repeats: int = 200) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    big = torch.randn(2048, 2048, dtype=torch.float64)
    peak = 2 * 2048**3 / min(per_call(lambda: big @ big, 3) for _ in range(3))
    print(f"float64 peak, one thread: {peak / 1e9:.1f} GFLOP/s")

    n, d = 2016, 20
    x = torch.randn(n, d, dtype=torch.float64)
    xf, perm = x.T.contiguous(), torch.randperm(d)
    gather, select = per_call(lambda: x[:, perm]), per_call(lambda: xf.index_select(0, perm))
    print(f"permutation: row-major gather {gather / x.numel() * 1e9:.2f} ns/element, "
          f"feature-major index_select {select / x.numel() * 1e9:.2f}")  # fmt: skip

    for k, m in ((10, 64), (64, 64), (64, 20)):
        w = torch.randn(m, k, dtype=torch.float64)
        rows, cols = torch.randn(n, k, dtype=torch.float64), torch.randn(k, n, dtype=torch.float64)
        flops = 2 * n * k * m
        rm, fm = per_call(partial(F.linear, rows, w)), per_call(partial(torch.mm, w, cols))
        print(f"product {k} -> {m} units, {n} rows: row-major {flops / rm / peak:.0%} of peak, "
              f"feature-major {flops / fm / peak:.0%}")  # fmt: skip

    act, slope = torch.randn(64, 15, 272, dtype=torch.float64), torch.randn(64, 1, 272, dtype=torch.float64)
    print(f"broadcast multiply (64 x 15 x 272): allocating {per_call(lambda: act * slope) * 1e6:.0f} us, "
          f"in place {per_call(lambda: act.mul_(slope)) * 1e6:.0f} us")  # fmt: skip

    w = torch.randn(64, 64, dtype=torch.float64)
    for block in (2016, 2048, 480, 512):
        cols = torch.randn(64, block, dtype=torch.float64)
        base = w @ cols
        changed = [
            int((torch.roll(w @ torch.roll(cols, r, 1), -r, 1) != base).any(0).sum()) for r in (1, 3, 8)
        ]
        print(f"feature-major product, block of {block} rows rotated by 1, 3, 8: rows changed {changed}")

    rng = np.random.default_rng(0)
    flow = CouplingFlow(d, 6, 64, rng, linear_init=np.linalg.qr(rng.normal(size=(d, d)))[0]).double()
    with torch.no_grad():
        for p in flow.parameters():
            p.add_(0.1 * torch.randn_like(p))
    kernel, rows = ScoringKernel(flow), torch.randn(8064, d, dtype=torch.float64)
    with torch.inference_mode():
        for noise in ((), tuple(range(5, 20))):
            old = per_call(partial(pure_log_density, flow, rows, noise), 3)
            new = per_call(partial(kernel.pure_log_density, rows, noise), 3)
            print(f"{len(noise)} noise sources, 8,064 rows: autograd form {len(rows) / old:,.0f} rows/s, "
                  f"kernel {len(rows) / new:,.0f} rows/s ({old / new:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
