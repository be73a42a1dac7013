"""The density score fused with a neighbour score and an isolation score (what ``nrad detect`` runs).

The table model's density (NRDE's flows, the category model and the
numeric model's terms: :mod:`nrad.table`) calls a row unusual when the model of the
whole table finds it unlikely.  Two other families call a row unusual for
other reasons: far from its nearest rows (k-NN: local structure a global
flow smooths over) and isolated by few random axis-parallel cuts
(isolation forest).  Their errors differ, which is what score fusion
exploits (Aggarwal & Sathe, *Outlier Ensembles*, 2017); derived and
measured in docs/method.md, section 12.

Each member is cross-fitted as the flows are: per fold, a k-NN reference
set and a forest from the training rows outside the fold; a training row is
scored by its own fold's members (so no row is its own neighbour).  A new
row is no training row: its neighbours are sought among every reference row
at once (the folds keep a training row from being its own neighbour, and a
new row cannot be), so its k-th nearest is as near as the training table
allows; a fold holds a half to four fifths of it.  The tails its p-values
are read from are fitted to the training rows' own distance to their k-th
nearest *other* row among the same rows (leave one out), so a new normal
row and a training row are measured alike.  Both members read the numbers
the flows read (each column standardized in its context, tails weighted,
far values softly clipped, missing cells filled), so columns in different
units weigh alike.

Each member's score is put on a common scale without labels: minus the
median, over the interquartile range, of its out-of-fold scores of the
training rows (a few anomalies among those rows move neither).  The fused
score is the sum of the members (with the table model's robust distance,
four; a new row, not in the training table, sums ``NEW_ROW_MEMBERS``): 0
for a row typical by all of them, and each unit one IQR of typical rows'
scores of one member.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.ensemble import IsolationForest

from nrad.neighbours import NeighbourSearch

#: The members, in the order of ``center`` and ``spread``: the density, the two fitted here, and
#: the robust Gaussian distance (:mod:`nrad.gaussian`, which the table model holds).
MEMBERS = ("density", "neighbours", "isolation", "robust distance")
#: The members that score rows which are not in the training table.  The isolation forest and the
#: robust distance are there for a table scored against itself: its anomalies are among the rows
#: the other members learn from, and a cluster of them vouches for each of its rows as neighbours
#: (masking), which subsampled trees and a robust fit resist.  A new row is not among the rows
#: learnt from, so nothing of its own masks it, and the two coarser members only blur the density
#: and the neighbours (docs/method.md, section 12).
NEW_ROW_MEMBERS = ("density", "neighbours")
#: A row's neighbour score is its distance to the K-th nearest reference row (PyOD's KNN default).
N_NEIGHBORS = 5
#: Neighbour distances below this (duplicate rows) count as this (their log stays finite).
MIN_DISTANCE = 1e-6
#: Trees per fold's isolation forest (scikit-learn's default).
N_TREES = 100
#: Reference rows per fold for the neighbour score, at most (a random subset beyond).  Scoring a
#: row costs a distance to each of them, 2 x 4,096 x d multiply-adds with two folds: about the
#: flows' own cost per row at d = 10.  Subsampled references cost k-NN little and can help it
#: (Zimek et al., "Subsampling for efficient and effective unsupervised outlier detection
#: ensembles", KDD 2013): the density and isolation members see every row anyway.
MAX_REFERENCE_ROWS = 4096


@dataclass
class IsolationTrees:
    """An isolation forest as plain arrays: fitted by scikit-learn, scored here.

    Written by hand because a scikit-learn forest can only be saved as
    serialized Python objects, which a model file must never hold; the
    arrays are what the model file stores, and :meth:`score` reproduces
    ``-IsolationForest.score_samples`` (a test checks it).  Nodes of all
    trees are concatenated; ``feature`` is -1 at a leaf, whose
    ``leaf_depth`` is its depth plus the expected path length of the
    training rows that reached it.
    """

    feature: np.ndarray  # (nodes,) int64, -1 at leaves
    threshold: np.ndarray  # (nodes,) float64
    left: np.ndarray  # (nodes,) int64, index into the concatenated nodes
    right: np.ndarray
    leaf_depth: np.ndarray  # (nodes,) float64
    roots: np.ndarray  # (trees,) int64
    #: Expected path length of the rows each tree was grown on (the score's normalizer).
    normalizer: float
    #: Width of the rows scored.
    n_features: int
    _trees: list | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def fit(cls, X: np.ndarray, random_state: int) -> IsolationTrees:
        forest = IsolationForest(n_estimators=N_TREES, random_state=random_state).fit(X)
        parts, offset = [], 0
        for tree, features in zip(forest.estimators_, forest.estimators_features_, strict=True):
            t = tree.tree_
            leaf = t.children_left < 0
            depth = _node_depths(t.children_left, t.children_right)
            parts.append((
                np.where(leaf, -1, np.asarray(features)[np.maximum(t.feature, 0)]),
                t.threshold.astype(np.float64),
                np.where(leaf, -1, t.children_left + offset),
                np.where(leaf, -1, t.children_right + offset),
                np.where(leaf, depth + _expected_path(t.n_node_samples), 0.0),
                offset,
            ))  # fmt: skip
            offset += t.node_count
        feature, threshold, left, right, leaf_depth, roots = (list(p) for p in zip(*parts, strict=True))
        return cls(
            np.concatenate(feature).astype(np.int64), np.concatenate(threshold),
            np.concatenate(left).astype(np.int64), np.concatenate(right).astype(np.int64),
            np.concatenate(leaf_depth), np.asarray(roots, dtype=np.int64),
            float(_expected_path(np.array([forest.max_samples_]))[0]), X.shape[1],
        )  # fmt: skip

    def score(self, X: np.ndarray) -> np.ndarray:
        """Isolation score per row, in (0, 1]: higher = isolated sooner = more anomalous."""
        # scikit-learn's trees compare float32 copies of the rows; so do we, to give its scores.
        X = np.ascontiguousarray(X, dtype=np.float32)
        try:
            trees = self._compiled()
        except (ImportError, AttributeError, TypeError, ValueError):  # another scikit-learn's internals
            depth = self.leaf_depth[self._walk(X)].mean(axis=1)
        else:
            depth = np.zeros(len(X))
            for tree, root in zip(trees, self.roots, strict=True):
                depth += self.leaf_depth[tree.apply(X) + root]
            depth /= len(trees)
        return 2.0 ** (-depth / self.normalizer) if self.normalizer > 0 else np.ones(len(X))

    def _compiled(self) -> list:
        """scikit-learn ``Tree`` objects built from the arrays (its compiled ``apply`` walks many times
        faster than :meth:`_walk`); rebuilt once per object, never stored."""
        if self._trees is None:
            from sklearn.tree._tree import NODE_DTYPE, Tree

            ends = np.r_[self.roots[1:], len(self.feature)]
            trees = []
            for root, end in zip(self.roots, ends, strict=True):
                leaf = self.feature[root:end] < 0
                nodes = np.zeros(end - root, dtype=NODE_DTYPE)
                nodes["feature"] = np.where(leaf, -2, self.feature[root:end])
                nodes["threshold"] = np.where(leaf, -2.0, self.threshold[root:end])
                nodes["left_child"] = np.where(leaf, -1, self.left[root:end] - root)
                nodes["right_child"] = np.where(leaf, -1, self.right[root:end] - root)
                nodes["n_node_samples"] = 1
                tree = Tree(self.n_features, np.array([1], dtype=np.intp), 1)
                tree.__setstate__({
                    "max_depth": int(end - root), "node_count": int(end - root), "nodes": nodes,
                    "values": np.zeros((end - root, 1, 1)),
                })  # fmt: skip
                trees.append(tree)
            self._trees = trees
        return self._trees

    def _walk(self, X: np.ndarray) -> np.ndarray:
        """(n, trees) leaf each row reaches in each tree, in numpy, one level per step (a fallback)."""
        X = X.astype(np.float64)
        node = np.broadcast_to(self.roots, (len(X), len(self.roots))).copy()
        rows = np.arange(len(X))[:, None]
        while True:
            feature = self.feature[node]
            inner = feature >= 0
            if not inner.any():
                return node
            go_left = X[rows, np.maximum(feature, 0)] <= self.threshold[node]
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)

    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        names = ("feature", "threshold", "left", "right", "leaf_depth", "roots")
        out = {f"{prefix}{a}": getattr(self, a) for a in names}
        out[f"{prefix}normalizer"] = np.array([self.normalizer])
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str, n_features: int) -> IsolationTrees:
        def get(name: str, dtype: type) -> np.ndarray:
            return np.asarray(arrays[f"{prefix}{name}"], dtype=dtype)

        trees = cls(
            get("feature", np.int64), get("threshold", np.float64), get("left", np.int64),
            get("right", np.int64), get("leaf_depth", np.float64), get("roots", np.int64),
            float(get("normalizer", np.float64).reshape(-1)[0]), n_features,
        )  # fmt: skip
        trees.check()
        return trees

    def check(self) -> None:
        """Refuse arrays that would index outside the nodes or the row, or loop (a damaged file)."""
        n = len(self.feature)
        if not all(len(a) == n for a in (self.threshold, self.left, self.right, self.leaf_depth)):
            raise ValueError("isolation forest arrays differ in length")
        inner = np.flatnonzero(self.feature >= 0)
        if np.any(self.feature >= self.n_features) or np.any(self.roots < 0) or np.any(self.roots >= n):
            raise ValueError("isolation forest nodes point outside the forest or the row")
        if len(self.roots) == 0 or self.roots[0] != 0 or np.any(np.diff(self.roots) <= 0):
            raise ValueError("isolation forest roots must start at 0 and increase")
        # Children come after their parent (scikit-learn's depth-first layout), so no path loops,
        # and stay inside their own tree (the compiled walk trusts its node indices).
        tree_end = np.r_[self.roots[1:], n][np.searchsorted(self.roots, inner, side="right") - 1]
        for child in (self.left[inner], self.right[inner]):
            if np.any(child <= inner) or np.any(child >= tree_end):
                raise ValueError("isolation forest nodes do not form trees")


@dataclass
class Fusion:
    """Cross-fitted neighbour and isolation members and the scale of all three (see module docstring)."""

    #: Per fold, the rows its neighbour score measures distances to (the flows' numbers).
    references: list[np.ndarray]
    forests: list[IsolationTrees]
    #: Per member (``MEMBERS``): the median and IQR of its out-of-fold training-row scores.
    center: np.ndarray
    spread: np.ndarray
    #: The folds' reference rows, each once, as (fold, row of its references) pairs: what new rows'
    #: neighbours are sought among (None in a model file of format 18 or before, whose new rows take
    #: the mean over the folds' references, as its tails were fitted).  Pairs, not the rows again: a
    #: row outside one fold is in every other fold's references already.
    everyone_index: np.ndarray | None = None
    _searches: list[NeighbourSearch] | None = field(default=None, init=False, repr=False, compare=False)
    #: Searches among ``everyone`` for the k-th and the (k+1)-th nearest (built once, never saved).
    _among_all: dict[int, NeighbourSearch] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    #: At fit only: which of the rows fitted on are among ``everyone`` (never saved).
    _in_everyone: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def everyone(self) -> np.ndarray | None:
        """The rows of :attr:`everyone_index` (None without it)."""
        if self.everyone_index is None:
            return None
        fold, row = self.everyone_index.T
        out = np.empty((len(fold), self.references[0].shape[1]))
        for k, reference in enumerate(self.references):
            out[fold == k] = reference[row[fold == k]]
        return out

    @classmethod
    def fit(cls, z: np.ndarray, folds: np.ndarray, usable: np.ndarray, random_state: int) -> Fusion:
        """Members for each fold from the ``usable`` rows outside it (scale set by :meth:`calibrate`)."""
        rng = np.random.default_rng(random_state)
        references, forests, chosen = [], [], []
        for k in range(int(folds.max()) + 1):
            rows = np.flatnonzero((folds != k) & usable)
            if len(rows) > MAX_REFERENCE_ROWS:
                rows = np.sort(rng.choice(rows, MAX_REFERENCE_ROWS, replace=False))
            references.append(np.ascontiguousarray(z[rows]))
            forests.append(IsolationTrees.fit(z[rows], random_state + k))
            chosen.append(rows)
        fusion = cls(references, forests, np.zeros(len(MEMBERS)), np.ones(len(MEMBERS)), _once_each(chosen))
        fusion._in_everyone = np.zeros(len(z), dtype=bool)
        fusion._in_everyone[np.concatenate(chosen)] = True
        return fusion

    def members(self, z: np.ndarray, folds: np.ndarray | None = None) -> np.ndarray:
        """(n, 2) neighbour and isolation scores: each row's own fold's members when ``folds`` is
        given (the training rows, in-sample), else the mean over folds (new rows)."""
        out = np.empty((len(z), 2))
        if len(z) == 0:  # an empty batch (scikit-learn's search refuses zero rows)
            return out
        if folds is None:
            return np.mean([self._fold_members(k, z) for k in range(len(self.forests))], axis=0)
        for k in range(len(self.forests)):
            rows = folds == k
            if rows.any():
                out[rows] = self._fold_members(k, z[rows])
        return out

    def neighbours(self, z: np.ndarray) -> np.ndarray:
        """New rows' neighbour scores: the log distance to the k-th nearest of every reference row
        (a file without them: the mean over folds, as :meth:`members` gives it)."""
        if len(z) == 0:
            return np.empty(0)
        if self.everyone_index is None:
            return np.mean([self._log_distance(k, z) for k in range(len(self.references))], axis=0)
        return self._log_among_all(z, N_NEIGHBORS)

    def training_neighbours(self, z: np.ndarray) -> np.ndarray:
        """The rows this fusion was fitted on (``z``, as given to :meth:`fit`), measured as new rows
        are: the log distance to the k-th nearest of every reference row other than the row itself
        (the calibration scores of :meth:`neighbours`)."""
        if self._in_everyone is None or len(z) != len(self._in_everyone):
            raise ValueError("training_neighbours reads the rows the fusion was fitted on, at fit")
        own = self._in_everyone
        out = np.empty(len(z))
        if own.any():
            # A row among the reference rows is its own nearest, at distance 0: the next k are others.
            out[own] = self._log_among_all(z[own], N_NEIGHBORS + 1)
        if (~own).any():
            out[~own] = self._log_among_all(z[~own], N_NEIGHBORS)
        return out

    def _log_among_all(self, z: np.ndarray, k: int) -> np.ndarray:
        """Log distance of each row to its ``k``-th nearest of ``everyone`` (see :meth:`_log_distance`)."""
        if k not in self._among_all:
            everyone = self.everyone
            assert everyone is not None
            self._among_all[k] = NeighbourSearch(everyone, k)
        return _log_of(_kth_distance(self._among_all[k], z))

    def _fold_members(self, k: int, z: np.ndarray) -> np.ndarray:
        return np.column_stack([self._log_distance(k, z), self.forests[k].score(z)])

    def _log_distance(self, k: int, z: np.ndarray) -> np.ndarray:
        # The neighbour score on a log scale: d log r_k is the k-NN density estimate's own
        # negative log-density (up to a constant), the density member's unit, and its tail is
        # exponential where the raw distance's is heavy (on heavy-tailed columns),
        # which the p-values' tail model needs (nrad.calibration).
        return _log_of(self._neighbour_distance(k, z))

    def _neighbour_distance(self, k: int, z: np.ndarray) -> np.ndarray:
        """Distance of each row to its ``N_NEIGHBORS``-th nearest reference row of fold ``k``
        (:mod:`nrad.neighbours`: exact, and each row's on its own)."""
        if self._searches is None:  # built from the stored rows once per object, never saved
            self._searches = [NeighbourSearch(ref, N_NEIGHBORS) for ref in self.references]
        return _kth_distance(self._searches[k], z)

    def calibrate(self, density: np.ndarray, members: np.ndarray) -> None:
        """Set each member's scale from the out-of-fold scores of the training rows (``members``:
        the other members' scores, one column each, in ``MEMBERS`` order)."""
        for m, scores in enumerate([density, *members.T]):
            low, mid, high = np.percentile(scores, [25, 50, 75])
            self.center[m] = mid
            # A member whose training scores barely spread (ties) counts on the scale of its sd.
            self.spread[m] = high - low if high > low else max(float(np.std(scores)), 1e-12)

    def combine(self, density: np.ndarray, members: np.ndarray, new_rows: bool = False) -> np.ndarray:
        """The fused score: the sum of the members' standardized scores (``NEW_ROW_MEMBERS`` only
        for ``new_rows``: rows that are not in the training table)."""
        parts = (np.column_stack([density, members]) - self.center) / self.spread
        if new_rows:
            parts = parts[:, [MEMBERS.index(m) for m in NEW_ROW_MEMBERS]]
        return parts.sum(axis=1)

    def to_state(self, prefix: str) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
        """(JSON-able scale, arrays) for the model file."""
        arrays: dict[str, np.ndarray] = {}
        for k, (ref, forest) in enumerate(zip(self.references, self.forests, strict=True)):
            arrays[f"{prefix}reference{k}"] = ref
            arrays.update(forest.to_arrays(f"{prefix}forest{k}."))
        if self.everyone_index is not None:
            arrays[f"{prefix}everyone"] = self.everyone_index
        return {"center": self.center.tolist(), "spread": self.spread.tolist()}, arrays

    @classmethod
    def from_state(
        cls, meta: dict[str, list[float]], arrays: dict[str, np.ndarray], prefix: str, n_folds: int, d: int
    ) -> Fusion:
        """Rebuild from :meth:`to_state`; refuse arrays that do not fit ``n_folds`` folds of ``d`` numbers."""
        references = [np.asarray(arrays[f"{prefix}reference{k}"], dtype=np.float64) for k in range(n_folds)]
        if any(r.ndim != 2 or r.shape[1] != d or len(r) == 0 for r in references):
            raise ValueError(
                f"fusion reference rows do not have the {d} numeric features of the numeric model"
            )
        forests = [IsolationTrees.from_arrays(arrays, f"{prefix}forest{k}.", d) for k in range(n_folds)]
        center, spread = (np.asarray(meta[a], dtype=np.float64) for a in ("center", "spread"))
        if center.shape != (len(MEMBERS),) or spread.shape != (len(MEMBERS),) or np.any(spread <= 0):
            raise ValueError("fusion scale must give a centre and a positive spread per member")
        index = arrays.get(f"{prefix}everyone")
        if index is not None:
            index = np.asarray(index, dtype=np.int64)
            sizes = np.array([len(r) for r in references])
            if (
                index.ndim != 2 or index.shape[1] != 2 or len(index) == 0
                or np.any(index < 0) or np.any(index[:, 0] >= n_folds)
                or np.any(index[:, 1] >= sizes[np.minimum(index[:, 0], n_folds - 1)])
            ):  # fmt: skip
                raise ValueError("fusion's rows for new rows must name a fold and a row of its references")
        return cls(references, forests, center, spread, index)


def _kth_distance(search: NeighbourSearch, z: np.ndarray) -> np.ndarray:
    """Each row's distance to its k-th nearest row of ``search``, the rows in chunks across the
    scoring threads (:func:`nrad.threads.map_chunks`)."""
    import torch

    from nrad.threads import map_chunks

    return map_chunks(torch.as_tensor(z, dtype=torch.float64), search.kth_distance)


def _log_of(distance: np.ndarray) -> np.ndarray:
    """The neighbour score of a distance: its log, duplicates' 0 counted as ``MIN_DISTANCE``."""
    return np.log(np.maximum(distance, MIN_DISTANCE))


def _once_each(chosen: list[np.ndarray]) -> np.ndarray:
    """(m, 2) (fold, position in that fold's sorted ``chosen`` rows) of each row any fold chose,
    once: the first fold that holds it."""
    union = np.unique(np.concatenate(chosen))
    fold, where = np.full(len(union), -1), np.zeros(len(union), dtype=np.int64)
    for k, rows in enumerate(chosen):
        at = np.minimum(np.searchsorted(rows, union), len(rows) - 1)
        new = (fold < 0) & (rows[at] == union)
        fold[new], where[new] = k, at[new]
    return np.column_stack([fold, where]).astype(np.int64)


def _node_depths(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Depth of every node of one tree (root 0); children follow their parent in the arrays."""
    depth = np.zeros(len(left))
    for node in range(len(left)):
        if left[node] >= 0:
            depth[left[node]] = depth[right[node]] = depth[node] + 1
    return depth


def _expected_path(n: np.ndarray) -> np.ndarray:
    """Average path length of an unsuccessful search in a binary tree of ``n`` rows (Liu et al., 2008)."""
    n = np.asarray(n, dtype=np.float64)
    out = np.zeros_like(n)
    out[n == 2] = 1.0
    big = n > 2
    out[big] = 2.0 * (np.log(n[big] - 1.0) + np.euler_gamma) - 2.0 * (n[big] - 1.0) / n[big]
    return out
