"""Distance from each row to its k-th nearest reference row: exact, by matrix products.

The fused score's neighbour member (:mod:`nrad.fusion`) measures, per
fold, each row's distance to its 5th nearest of up to 4,096 reference
rows.  Written here instead of calling scikit-learn's brute-force search
because

* scoring calls it from several threads at once, and scikit-learn's
  search is not made for that: each call limits BLAS to one thread for
  the whole process and restores it on return, so concurrent calls undo
  each other's limit (OpenBLAS then warns that it runs threads inside an
  OpenMP loop and "may hang"), and scikit-learn has an open bug report of
  wrong results from concurrent calls;
* a row's result must not depend on its batch (streamed, Dask and
  in-memory scores are identical): the rows go through the products in
  the scoring kernel's padded, feature-major blocks (:mod:`nrad.kernel`);
* on one thread per batch, as the scoring threads run it, it is faster
  than scikit-learn's search (benchmarks/scale.py compares them).

The search: for a block of rows, ``|r|^2 / 2 - r.z`` ranks the reference
rows ``r`` as the distance to ``z`` does (one matrix product).  The
reference rows are taken in groups of ``GROUP``; the k nearest rows lie in
the k groups whose minima are smallest.  (If a group holding one of the k
nearest is not among them, those k groups' minima are k rows no farther
than that one, so the k-th distance is reached within them.)  Only those
groups' rows are then ranked, and the distances to the k found are
computed directly, row by row, in full precision.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from nrad.kernel import feature_major_blocks

#: Reference rows per group of the search.
GROUP = 64
#: Rows per block: the block's (reference rows x rows) products stay near a core's cache (larger
#: blocks spill it and run slower a row).
BLOCK_ROWS = 96


class NeighbourSearch:
    """Distance to the ``k``-th nearest of ``reference``'s rows (``k`` at most their count).

    Parameters
    ----------
    reference : ndarray of shape (n_reference, n_features)
        The rows distances are measured to.
    k : int
        Which nearest: 1 is the nearest; more than ``n_reference`` means the farthest.
    """

    def __init__(self, reference: np.ndarray, k: int) -> None:
        n, d = reference.shape
        self.k = min(k, n)
        # Padded to whole groups with rows at infinity (never among the nearest).
        rows = torch.zeros(n + (-n % GROUP), d, dtype=torch.float64)
        rows[:n] = torch.as_tensor(reference, dtype=torch.float64)
        half_norms = 0.5 * rows.pow(2).sum(dim=1)
        half_norms[n:] = float("inf")
        self.rows, self.half_norms = rows, half_norms[:, None].contiguous()
        self.groups = min(self.k, len(rows) // GROUP)

    def kth_distance(self, z: Tensor) -> Tensor:
        """The distance from each row of row-major ``z`` (float64) to its k-th nearest reference row."""
        if len(z) == 0:
            return z.new_zeros(0)
        parts = [self._block(block) for block in feature_major_blocks(z, BLOCK_ROWS)]
        return torch.cat(parts).narrow(0, 0, len(z))

    def _block(self, zb: Tensor) -> Tensor:
        """The k-th nearest distance of the feature-major rows ``zb``."""
        n = zb.shape[1]
        rank = torch.addmm(self.half_norms, self.rows, zb, alpha=-1).view(-1, GROUP, n)
        groups = torch.topk(rank.amin(dim=1), self.groups, dim=0, largest=False, sorted=False).indices
        candidates = rank.gather(0, groups[:, None, :].expand(-1, GROUP, -1)).view(-1, n)
        found = torch.topk(candidates, self.k, dim=0, largest=False, sorted=False).indices
        nearest = groups.gather(0, found // GROUP) * GROUP + found % GROUP  # (k, rows)
        diff = self.rows[nearest.T] - zb.T[:, None, :]
        return diff.pow_(2).sum(dim=2).sqrt_().amax(dim=1)
