"""How probable a row's categories are: a Chow-Liu tree over the category codes.

``p(c) = prod_j p(c_j | c_parent(j))`` over a forest whose edges join the
pairs of categorical features that depend on each other (Chow & Liu, 1968:
the maximum spanning tree on mutual information is the best tree-shaped
approximation of the joint).  Only pairs whose dependence is significant
(G-test, p < ``EDGE_P_VALUE``) can be joined, so independent columns stay
independent instead of being tied by noise.

Smoothing, so that what was never seen still has a probability:

* a feature's own distribution: Krichevsky-Trofimov, ``(n_v + 1/2) / (n + K/2)``
  over its ``K`` codes (levels, *other*, *missing*).  A level never seen in
  ``n`` rows costs about ``log(2 n)`` nats, a common one ``log(n / n_v)``;
* a child given its parent: interpolated absolute discounting (Ney, Essen
  & Kneser 1994), ``(max(n(a, c) - D, 0) + D T(a) p(c)) / n(a)`` with
  ``T(a)`` the number of distinct child codes seen with parent ``a``.  The
  discount is set so that the mass it frees, ``D T / n`` over all parents
  (``T`` distinct pairs), is Good-Turing's estimate of the chance that a row
  brings a pair not seen before, ``(N1 + 1/2) / n`` with ``N1`` the pairs
  seen once: ``D = (N1 + 1/2) / T``.  A relation never broken in training
  (a merchant and its category: no pair seen once) gets a tiny ``D``, so a
  new pair costs about ``log(n(a) T / ((N1 + 1/2) p_new(c)))`` nats (``p_new`` below); a loose one
  (many pairs seen once) a ``D`` near 1.  What the discount frees, the chance
  of a pair not seen before, is shared among the child codes by Good-Turing
  again: by how many of the pairs seen once have each code, KT-smoothed,
  ``p_new(c) = (N1(c) + 1/2) / (N1 + K/2)``, so that a pair never seen with
  code ``c`` has about the chance ``N1(c) / n`` that a row brings one.  A
  level seen a few times, each with another parent (a rare roof material,
  any neighbourhood), is new to almost every parent; shared by its marginal
  count (2 in 3,000) each such pair was a one-in-a-million event, and a
  real table of rare legitimate levels flagged its rows for them.  A
  relation never broken (no pair seen once: a merchant and its category)
  shares it evenly: a row that breaks it is as surprising as a new pair of
  that parent is, whichever code it brings.

Written here because no well-kept library fits a smoothed Chow-Liu tree on
integer codes; the graph work (spanning forest, tree order) is scipy's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree
from scipy.stats import binom, chi2

#: A pair of features is joined only if independence is rejected at this level.
EDGE_P_VALUE = 1e-3


@dataclass
class CategoryModel:
    """A fitted forest over categorical features (see the module docstring)."""

    #: Codes per feature.
    n_codes: list[int]
    #: Training count of each code, per feature.
    counts: list[np.ndarray]
    #: Parent feature of each feature, -1 for a root.
    parent: list[int]
    #: For each child: its joint counts with the parent, as a sparse (parent code x child code) matrix.
    joint: dict[int, sparse.csr_matrix] = field(default_factory=dict)
    #: How a pair never seen shares the mass the discount frees among the child codes: by how many
    #: of the pairs seen once have each (``"novel"``), or by their marginal counts (``"marginal"``,
    #: model files of format 11 and before).
    backoff: str = "novel"

    @classmethod
    def fit(cls, codes: np.ndarray, n_codes: list[int]) -> CategoryModel:
        """Count, choose the edges, keep the counts each edge needs."""
        codes = np.asarray(codes, dtype=np.int64)
        q = codes.shape[1]
        counts = [np.bincount(codes[:, j], minlength=n_codes[j]).astype(np.float64) for j in range(q)]
        parent = _forest(codes, n_codes, counts)
        joint = {
            j: _joint(codes[:, p], codes[:, j], n_codes[p], n_codes[j])
            for j, p in enumerate(parent)
            if p >= 0
        }
        return cls(list(n_codes), counts, parent, joint)

    @property
    def n_features(self) -> int:
        return len(self.n_codes)

    def children(self, j: int) -> list[int]:
        return [k for k, p in enumerate(self.parent) if p == j]

    def log_terms(
        self, codes: np.ndarray, leave_out: np.ndarray | None = None, features: list[int] | None = None
    ) -> np.ndarray:
        """``log p(c_j | c_parent(j))`` per row and feature; shape (n, q), or (n, len(features)) for
        those ``features`` alone.

        ``leave_out``: codes of a training row, one per row of ``codes``,
        whose counts are taken out first (leave-one-out), so that a row of
        the training table is read as if it had not been counted: a level or
        pair that only this row has is then as new as it is to the rest.
        """
        codes = np.asarray(codes, dtype=np.int64)
        features = list(range(self.n_features)) if features is None else features
        out = np.empty((len(codes), len(features)), dtype=np.float64)
        for k, j in enumerate(features):
            p = self.parent[j]
            out[:, k] = self.log_term(
                j,
                codes[:, j],
                None if p < 0 else codes[:, p],
                None if leave_out is None else leave_out[:, j],
                None if leave_out is None or p < 0 else leave_out[:, p],
            )
        return out

    def log_term(
        self,
        j: int,
        child: np.ndarray,
        parent: np.ndarray | None,
        own_child: np.ndarray | None = None,
        own_parent: np.ndarray | None = None,
    ) -> np.ndarray:
        """``log p(c_j = child | parent)`` for arrays of codes (``parent`` None for a root),
        with the counts of a row coded ``(own_child, own_parent)`` left out when given."""
        counts = self.counts[j]
        n_child = counts[child]
        total = np.full(len(child), counts.sum())
        if own_child is not None:
            n_child = n_child - (child == own_child)
            total = total - 1
        marginal = (n_child + 0.5) / (total + 0.5 * len(counts))  # Krichevsky-Trofimov
        if parent is None:
            return np.log(marginal)
        table = self.joint[j]
        discount = edge_discount(table)
        n_ac = np.asarray(table[parent, child]).ravel()
        n_a = np.asarray(table.sum(axis=1)).ravel()[parent]
        distinct = np.diff(table.indptr)[parent]  # T(a): child codes seen with parent code a
        own_count = None
        if own_child is not None and own_parent is not None:
            same_parent = parent == own_parent
            own_cell = same_parent & (child == own_child)
            own_count = np.asarray(table[own_parent, own_child]).ravel()
            # Removing the row empties its own cell if it was the only one there.
            distinct = distinct - (same_parent & (own_count == 1))
            n_ac, n_a = n_ac - own_cell, n_a - same_parent
        novel = self.backoff != "marginal"
        shared = self._novel_share(j, child, own_child, own_count) if novel else marginal
        with np.errstate(invalid="ignore", divide="ignore"):
            backed_off = (np.maximum(n_ac - discount, 0.0) + discount * distinct * shared) / n_a
        return np.log(np.where(n_a > 0, backed_off, marginal))

    def _novel_share(
        self, j: int, child: np.ndarray, own_child: np.ndarray | None, own_count: np.ndarray | None
    ) -> np.ndarray:
        """Of the pairs never seen before, the share that have each ``child`` code of feature ``j``:
        Good-Turing's by code, the pairs seen once that have it over all pairs seen once,
        KT-smoothed; with the pair of a row coded ``own_child`` left out when given, ``own_count``
        being how many training rows share that pair (a pair it was alone in is seen once no
        more; one it shared with one other row now is)."""
        table = self.joint[j]
        # N1(c): the pairs seen once with child code c (the table's entries are pair counts).
        per_code = np.bincount(table.indices[table.data == 1], minlength=table.shape[1]).astype(np.float64)
        with_child, total = per_code[child], np.full(len(child), per_code.sum())
        if own_child is not None and own_count is not None:
            change = (own_count == 2).astype(np.float64) - (own_count == 1)
            with_child = with_child + change * (child == own_child)
            total = total + change
        return (with_child + 0.5) / (total + 0.5 * len(per_code))

    def dependencies(
        self,
        features: np.ndarray,
        seen: bool = False,
        set_keys: np.ndarray | None = None,
        absences: np.ndarray | None = None,
    ) -> list[Dependency]:
        """The functional dependencies along the forest's edges among ``features`` (bool, q): see
        :class:`Dependency`; ``seen``: for new rows, each allowing every pair a training row held;
        ``set_keys`` (bool, q; None: all): the features whose levels may allow a few values;
        ``absences`` (bool, q; None: none): the features whose missing code a key's level may give
        (a number's indicator: :meth:`Dependency.find_absent`)."""
        found = []
        for j, table in self.joint.items():
            p = self.parent[j]
            if not (features[j] and features[p]):
                continue
            # Each edge both ways: a sensor gives its site (and the site, many sensors).
            for key, value, counts in ((p, j, table), (j, p, table.T.tocsr())):
                allow_sets = set_keys is None or bool(set_keys[key])
                k_key, k_value = self.n_codes[key], self.n_codes[value]
                got = Dependency.find(key, value, counts, k_key, k_value, seen, allow_sets)
                if got is None and absences is not None and absences[value]:
                    got = Dependency.find_absent(key, value, counts, k_key, k_value, seen)
                if got is not None:
                    found.append(got)
        return found

    # -- the model file ----------------------------------------------------

    def to_state(self, prefix: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """JSON-able description and named arrays (for safetensors)."""
        arrays = {f"{prefix}counts.{j}": c for j, c in enumerate(self.counts)}
        for j, table in self.joint.items():
            coo = table.tocoo()
            arrays[f"{prefix}joint.{j}"] = np.vstack([coo.row, coo.col, coo.data]).astype(np.float64)
        return {"n_codes": self.n_codes, "parent": self.parent, "backoff": self.backoff}, arrays

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray], prefix: str) -> CategoryModel:
        n_codes = [int(k) for k in meta["n_codes"]]
        parent = [int(p) for p in meta["parent"]]
        counts = [np.asarray(arrays[f"{prefix}counts.{j}"], dtype=np.float64) for j in range(len(n_codes))]
        for j, c in enumerate(counts):
            if c.shape != (n_codes[j],) or (c < 0).any():
                raise ValueError(f"category counts {j} have shape {c.shape}, expected ({n_codes[j]},)")
        joint = {}
        for j, p in enumerate(parent):
            if p < 0:
                continue
            if not 0 <= p < len(n_codes) or p == j:
                raise ValueError(f"feature {j} has parent {p}")
            rows, cols, data = np.asarray(arrays[f"{prefix}joint.{j}"], dtype=np.float64)
            joint[j] = sparse.csr_matrix(
                (data, (rows.astype(np.int64), cols.astype(np.int64))), shape=(n_codes[p], n_codes[j])
            )
        backoff = str(meta.get("backoff", "marginal"))
        if backoff not in BACKOFFS:
            raise ValueError(f"category back-off {backoff!r}, expected one of {', '.join(BACKOFFS)}")
        return cls(n_codes, counts, parent, joint, backoff)


#: The ways a pair never seen shares the discounted mass (see ``CategoryModel.backoff``).
BACKOFFS = ("novel", "marginal")


def edge_discount(table: sparse.csr_matrix) -> float:
    """Absolute discount ``(N1 + 1/2) / T`` of an edge from its (parent, child) counts (module docstring)."""
    counts = table.data[table.data > 0]
    return min((float(np.sum(counts == 1)) + 0.5) / max(counts.size, 1), 1.0)


def _joint(a: np.ndarray, b: np.ndarray, ka: int, kb: int) -> sparse.csr_matrix:
    ones = np.ones(len(a))
    table = sparse.csr_matrix((ones, (a, b)), shape=(ka, kb))
    table.sum_duplicates()
    return table


def _forest(codes: np.ndarray, n_codes: list[int], counts: list[np.ndarray]) -> list[int]:
    """Parent of each feature in the maximum spanning forest of significant dependences."""
    n, q = codes.shape
    if q < 2 or n < 2:
        return [-1] * q
    weight = _edge_weights(codes, counts)
    if not (weight > 0).any():
        return [-1] * q
    # Kruskal via scipy on costs that order edges by decreasing weight (0 = no edge).
    cost = np.where(weight > 0, weight.max() + 1.0 - weight, 0.0)
    tree = minimum_spanning_tree(sparse.csr_matrix(cost))
    tree = tree + tree.T
    parent = [-1] * q
    _, component = connected_components(tree, directed=False)
    for comp in np.unique(component):
        members = np.flatnonzero(component == comp)
        # Root at the feature with the most codes in use: its children are then
        # read given the finest category (a category given its merchant).
        root = int(members[np.argmax([(counts[m] > 0).sum() for m in members])])
        _, pred = breadth_first_order(tree, root, directed=False, return_predecessors=True)
        for m in members:
            if m != root:
                parent[int(m)] = int(pred[m])
    return parent


#: Entries of one block of the joint counts of all level pairs (a block of features' levels
#: against every feature's), at most: 16 million, 128 MB ...
PAIR_BLOCK_ENTRIES = 2**24
#: ... and of the rows' one-hot codes they are summed from, a chunk of rows at a time: 4 million.
ROW_CHUNK_ENTRIES = 2**22


def _edge_weights(codes: np.ndarray, counts: list[np.ndarray]) -> np.ndarray:
    """(q, q) weight of each pair ``a < b`` (upper triangle): the bias-corrected mutual information
    of the two features if the G-test rejects their independence (p < ``EDGE_P_VALUE``), else 0.

    All pairs at once: the joint counts of every two levels are one matrix product of the
    rows' one-hot codes (a block of features at a time), and each pair's mutual information
    is a sum over its block of that matrix.  A wide table has a missing or spike indicator
    per numeric column, and one pair at a time its forest took minutes at 1,500 columns.
    """
    n, q = codes.shape
    weight = np.zeros((q, q))
    # A feature with one level in use depends on nothing (every pair with it has no information):
    # left out, as are the thousands of indicators of a wide table's columns with no absent cell.
    varied = np.flatnonzero([(c > 0).sum() > 1 for c in counts])
    if len(varied) < 2:
        return weight
    codes, counts = codes[:, varied], [counts[j] for j in varied]
    q = len(varied)
    used = [np.flatnonzero(c > 0) for c in counts]
    sizes = np.array([len(u) for u in used])
    offsets = np.r_[0, np.cumsum(sizes)]
    width = int(offsets[-1])
    # Each feature's codes as columns of the one-hot matrix (codes not in use have none).
    columns = np.empty(codes.shape, dtype=np.int64)
    for j in range(q):
        index = np.zeros(len(counts[j]), dtype=np.int64)
        index[used[j]] = np.arange(len(used[j]))
        columns[:, j] = offsets[j] + index[codes[:, j]]
    level_counts = np.concatenate([counts[j][used[j]] for j in range(q)])
    mi = np.zeros((q, q))
    per_block = max(PAIR_BLOCK_ENTRIES // width, 1)
    chunk = max(ROW_CHUNK_ENTRIES // width, 1)
    start = 0
    while start < q:
        # Whole features per block, as many as fit in per_block levels (at least one).
        stop = max(int(np.searchsorted(offsets, offsets[start] + per_block, side="right")) - 1, start + 1)
        stop = min(stop, q)
        lo, hi = offsets[start], offsets[stop]
        joint = np.zeros((hi - lo, width))
        for first in range(0, n, chunk):  # rows a chunk at a time: a million rows stay a few MB
            part = columns[first : first + chunk]
            onehot = np.zeros((len(part), width))
            onehot[np.arange(len(part))[:, None], part] = 1.0
            joint += onehot[:, lo:hi].T @ onehot
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = joint / n * np.log(joint * n / np.outer(level_counts[lo:hi], level_counts))
        terms[joint == 0] = 0.0
        rows = np.add.reduceat(terms, offsets[start:stop] - lo, axis=0)
        mi[start:stop] = np.add.reduceat(rows, offsets[:-1], axis=1)
        start = stop
    df = np.maximum(np.outer(sizes - 1, sizes - 1), 1)
    keep = np.triu(chi2.sf(2.0 * n * mi, df) < EDGE_P_VALUE, k=1)
    weight[np.ix_(varied, varied)] = np.where(keep, np.maximum(mi - df / (2.0 * n), 1e-12), 0.0)
    return weight


#: A functional dependency (one category's level gives another's) binds the levels of its key with
#: at least this many training rows ...
DEPENDENCY_MIN_ROWS = 10
#: ... of which at most this share of the rows (pooled over the binding levels) hold another value
#: than their level's (a table fitted on itself holds its errors), each level at most
#: ``DEPENDENCY_LEVEL_OFF`` of its own ...
DEPENDENCY_MAX_OFF = 0.01
DEPENDENCY_LEVEL_OFF = 0.1
#: ... and the levels' values are not one: at least this many binding rows hold another value than
#: the most common one (a status that is "ok" in 99.5% of the rows is given by every column) ...
DEPENDENCY_MIN_MINORITY = 10
#: ... and the rows are enough to tell it from a loose relation: a relation whose values differ from
#: their key level's in ``DEPENDENCY_LOOSE`` of the rows would show as few exceptions with chance at
#: most ``DEPENDENCY_LEVEL`` (binomial).  In 150 rows, a category that 5% of the other rows share at
#: random (a parcel marked fragile whatever it holds) showed one exception, and a loose relation
#: was stated: its legitimate exceptions got p = 0.  At 150 rows nothing is stated; at 500 rows a
#: dependency without exceptions; at 1,000 up to 5; at 3,000 up to the 1% above.
DEPENDENCY_LOOSE = 0.02
DEPENDENCY_LEVEL = 1e-4
#: Where no level of the value is given, a key level may allow a few (a ward its diagnoses): those
#: it holds in at least this share of its training rows ...
DEPENDENCY_SET_SHARE = 0.05
#: ... and this many.  A pair seen fewer times is an exception, when its value is common in the
#: table (at least ``DEPENDENCY_MIN_ROWS`` rows): a value rare everywhere is a rare level, not a
#: broken relation.  A pair seen this often but in less than the share above is neither allowed
#: nor an error repeated, and then the key allows no sets: a relation whose values thin out (3% of
#: every merchant's rows at a second category, which a small merchant shows once or twice) is
#: loose, not a dependency with exceptions.  Each level's exceptions are held to
#: ``DEPENDENCY_LOOSE`` of its rows (not ``DEPENDENCY_LEVEL_OFF``): 4 of 124 fair-quality garages
#: finished, where most are not, is what a loose relation shows, and a large level allowing every
#: value must not make the small one's few exceptions look rare over the whole table.
DEPENDENCY_SET_ROWS = 3
#: A key level allows a set only from this many rows on: a value it holds in
#: ``DEPENDENCY_SET_SHARE`` of its rows is then missing from them with chance at most 1%
#: (0.95^90).  In 37 rows a value that level holds now and then (its category random in a tenth of
#: the rows) was never seen, the level was read as excluding it, and a clean table scored against
#: those 500 training rows had its row with that pair flagged (p = 0).
DEPENDENCY_SET_MIN_ROWS = 90


@dataclass
class Dependency:
    """A dependency between two categorical features: each level of the ``key`` (with
    ``DEPENDENCY_MIN_ROWS`` training rows or more) gives one level of the ``value`` (a sensor its
    site, a merchant its category), or allows a few (a ward its diagnoses), in all but
    ``DEPENDENCY_MAX_OFF`` of the rows.

    The category model's smoothing gives a pair never seen a small chance,
    the chance that a row brings a new pair (Good-Turing), and no smaller: a
    sensor reported at another site, in a table scored against itself, has
    that pair in its own counts and is about as probable as the table's other
    rare pairs (p near 1e-3).  As an exact relation between numbers is an
    identity (:mod:`nrad.identities`), a dependency that the table keeps in
    all but 1% of its rows is stated as one its columns are built on: a row
    whose value its key level does not allow breaks it, and its value gets
    p-value 0.  Only the columns' own levels are read: a key level pooled as
    rare or missing binds nothing, and a missing value breaks nothing.
    """

    key: int
    value: int
    #: (key code x value code) True where the pair is allowed; a key code whose row is all False
    #: binds nothing.
    allowed: sparse.csr_matrix
    #: Per code of the key: whether its level binds.
    binding: np.ndarray
    #: The value's code for a missing cell (its last).
    missing: int
    #: Per code of the value: allowed under every binding level (a set's rare, pooled and unseen
    #: levels); None: no such code.
    free: np.ndarray | None = None

    @property
    def single(self) -> bool:
        """Whether every binding level gives one value (else some allow a few)."""
        return bool((self.gives[self.binding] >= 0).all())

    @property
    def gives(self) -> np.ndarray:
        """Per code of the key: the one value code it allows (-1: it binds nothing or allows more)."""
        one = (np.asarray(self.allowed.sum(axis=1)).ravel() == 1) & (self.free is None or not self.free.any())
        first = np.asarray(self.allowed.argmax(axis=1)).ravel()
        return np.where(self.binding & one, first, -1)

    @classmethod
    def find(
        cls,
        key: int,
        value: int,
        counts: sparse.csr_matrix,
        k_key: int,
        k_value: int,
        seen: bool = False,
        allow_sets: bool = True,
    ) -> Dependency | None:
        """From the (key code x value code) training counts, ``k_key`` and ``k_value`` codes (the
        last two of each: rare levels pooled, and missing); None if the dependency does not hold.
        One value per key level first (a level whose rows often hold another gives none); else a
        few per level of ``DEPENDENCY_SET_MIN_ROWS`` rows or more (``DEPENDENCY_SET_ROWS``).
        ``seen``: the dependency new rows are read against, which allows every pair the training
        rows held (read as normal, as :meth:`nrad.cells.Walls.for_new_rows` reads their values).
        ``allow_sets``: whether the key's levels may allow a few values (else one value alone)."""
        # The key's own levels; the value's present codes (its own levels and the rare ones pooled).
        # Sparse throughout: two columns of thousands of levels each would not fit dense.
        present = sparse.csr_matrix(counts, dtype=np.float64)[: k_key - 2, : k_value - 1]
        rows = np.asarray(present.sum(axis=1)).ravel()
        binding = rows >= DEPENDENCY_MIN_ROWS
        if binding.sum() < 2:
            return None
        levels = present[:, : k_value - 2].tocsr()
        top = np.asarray(levels.argmax(axis=1)).ravel()
        one = sparse.csr_matrix(
            (np.ones(int(binding.sum())), (np.flatnonzero(binding), top[binding])), shape=levels.shape
        )
        # A level whose rows hold another value than its own in DEPENDENCY_MIN_ROWS rows or more
        # gives none: they are a minority of that level, not its errors (3% of the analysts paid a
        # bonus, where associates never are), however large the level (87 of a level's 11,564 rows
        # of 30,000, spread over six values, where 2% would have allowed 231 as errors); the other
        # levels may still give theirs.
        off = rows - np.asarray(levels.multiply(one).sum(axis=1)).ravel()
        gives = binding & (off < DEPENDENCY_MIN_ROWS)
        one = sparse.diags(gives.astype(np.float64)) @ one
        # Rows of levels whose most common value is the table's most common: the one value given
        # must tell something (a status "ok" in 99.5% of the rows is given by every column).
        minority = rows[gives].sum() - np.bincount(top[gives], weights=rows[gives]).max(initial=0)
        no_free = np.zeros(levels.shape[1], dtype=bool)
        if (
            gives.sum() >= 2
            and _holds(levels, one, no_free, rows, gives, DEPENDENCY_LEVEL_OFF)
            and minority >= DEPENDENCY_MIN_MINORITY
        ):
            return cls._of(key, value, _with_seen(one, levels, seen), None, gives, k_key, k_value)
        # A set is read with the pooled rare and unseen levels of the value as one more column,
        # allowed everywhere: a district too rare to be learned (or never seen in the training
        # rows) is a rare level, not a broken relation.  One value given is broken by them, as by
        # any other value.
        # Every level of DEPENDENCY_MIN_ROWS rows or more is read for what the relation is (a pair
        # that repeats in a small level but thins out makes it loose; its exceptions count), and
        # only those of DEPENDENCY_SET_MIN_ROWS rows or more bind: fewer rows cannot tell what a
        # level excludes.
        if not allow_sets:
            return None
        sets = _allowed_sets(present, binding)
        if sets is not None:
            # As above: a level that DEPENDENCY_MIN_ROWS rows break binds nothing.
            binding = binding & (rows - _kept(present, *sets) < DEPENDENCY_MIN_ROWS)
        if (
            sets is None
            or binding.sum() < 2
            or not _holds(present, *sets, rows, binding, DEPENDENCY_LOOSE, _excluding(*sets, binding))
        ):
            return None
        binding = binding & (rows >= DEPENDENCY_SET_MIN_ROWS)
        if binding.sum() < 2 or _excluded(present, *sets, rows, binding) < DEPENDENCY_MIN_MINORITY:
            return None  # allows nearly everything (two yes/no columns), and states nothing
        allowed, free = sets
        return cls._of(key, value, _with_seen(allowed, present, seen), free, binding, k_key, k_value)

    @classmethod
    def find_absent(
        cls, key: int, value: int, counts: sparse.csr_matrix, k_key: int, k_value: int, seen: bool = False
    ) -> Dependency | None:
        """The key levels whose rows leave the value absent (its missing code, the last), as a
        dependency that a present value breaks; from the (key code x value code) training counts
        as :meth:`find` reads them.  None unless the rows of some key level hold the value.

        A number's cell that a category rules out (a single head of household has no spouse's
        age, a cancelled flight no departure time) is missing in every row of those levels, and
        present in the others' rows: a present one is as much a broken relation as a sensor at
        another site.  A level binds where ``DEPENDENCY_MIN_ROWS`` or more rows hold it and all
        but ``DEPENDENCY_LEVEL_OFF`` of them leave the value absent, held to ``DEPENDENCY_MAX_OFF``
        and the binomial test of :meth:`find` over those levels; the levels that do not bind must
        hold the value in most of their rows, ``DEPENDENCY_MIN_MINORITY`` or more: a column missing
        almost everywhere (a note kept in 1% of the rows) is absent in every level, and its
        present cells are what it holds, not exceptions.  A missing cell still breaks nothing."""
        levels = sparse.csr_matrix(counts, dtype=np.float64)[: k_key - 2, :].tocsr()
        rows = np.asarray(levels.sum(axis=1)).ravel()
        absent = np.asarray(levels[:, k_value - 1].todense()).ravel()
        enough = rows >= DEPENDENCY_MIN_ROWS
        mostly_absent = enough & (rows - absent <= DEPENDENCY_LEVEL_OFF * rows)
        # A level whose rows hold the value in DEPENDENCY_MIN_ROWS rows or more binds nothing (see
        # find), nor is it one of the levels that hold the value.
        binding = mostly_absent & (rows - absent < DEPENDENCY_MIN_ROWS)
        others = enough & ~mostly_absent
        held = rows[others] - absent[others]
        if not binding.any() or held.sum() < DEPENDENCY_MIN_MINORITY or held.sum() < 0.5 * rows[others].sum():
            return None
        off, n = float((rows - absent)[binding].sum()), float(rows[binding].sum())
        if not (off <= DEPENDENCY_MAX_OFF * n and binom.cdf(off, n, DEPENDENCY_LOOSE) <= DEPENDENCY_LEVEL):
            return None
        where = np.flatnonzero(binding)
        allowed = sparse.csr_matrix(
            (np.ones(len(where)), (where, np.full(len(where), k_value - 1))), shape=levels.shape
        )
        return cls._of(key, value, _with_seen(allowed, levels, seen), None, binding, k_key, k_value)

    @classmethod
    def _of(
        cls,
        key: int,
        value: int,
        allowed: sparse.csr_matrix,
        free: np.ndarray | None,
        binding: np.ndarray,
        k_key: int,
        k_value: int,
    ) -> Dependency:
        """The dependency with ``allowed`` pairs and ``free`` values read over the key's and the
        value's own codes, widened to all their codes (the rare, pooled and missing ones bind and
        allow nothing unless ``free`` says so)."""
        pairs = allowed.tocoo()
        full = sparse.csr_matrix(
            (np.ones(pairs.nnz, dtype=bool), (pairs.row, pairs.col)), shape=(k_key, k_value)
        )
        if free is not None:
            free = np.r_[free, np.zeros(k_value - len(free), dtype=bool)]
        return cls(key, value, full, np.r_[binding, False, False], k_value - 1, free)

    def broken(self, codes: np.ndarray) -> np.ndarray:
        """(n,) True where a row's value is not one its key's level allows (a missing value:
        False)."""
        key, value = codes[:, self.key], codes[:, self.value]
        kept = np.asarray(self.allowed[key, value]).ravel()
        if self.free is not None:
            kept |= self.free[value]
        return self.binding[key] & ~kept & (value != self.missing)


def _with_seen(allowed: sparse.csr_matrix, levels: sparse.csr_matrix, seen: bool) -> sparse.csr_matrix:
    """``allowed`` and, if ``seen``, every pair of ``levels`` a training row held."""
    if not seen:
        return allowed
    return ((allowed + (levels > 0).astype(np.float64)) > 0).astype(np.float64).tocsr()


def _allowed_sets(
    levels: sparse.csr_matrix, binding: np.ndarray
) -> tuple[sparse.csr_matrix, np.ndarray] | None:
    """Per binding key level, the common value levels it holds in ``DEPENDENCY_SET_SHARE`` of its
    rows and ``DEPENDENCY_SET_ROWS`` or more; and the value levels too rare in the table to be an
    exception, the last column (the pooled rare and unseen levels) among them, which every level
    allows wherever they turn up (None: a pair is neither allowed nor an exception)."""
    counts = levels.tocoo()
    free = np.asarray(levels.sum(axis=0)).ravel() < DEPENDENCY_MIN_ROWS
    free[-1] = True
    share = counts.data / np.asarray(levels.sum(axis=1)).ravel()[counts.row]
    repeated = counts.data >= DEPENDENCY_SET_ROWS
    judged = binding[counts.row] & ~free[counts.col]
    keep = judged & repeated & (share >= DEPENDENCY_SET_SHARE)
    if (judged & repeated & ~keep).any():
        return None
    allowed = sparse.csr_matrix(
        (np.ones(int(keep.sum())), (counts.row[keep], counts.col[keep])), shape=levels.shape
    )
    return allowed, free


def _excluding(allowed: sparse.csr_matrix, free: np.ndarray, binding: np.ndarray) -> np.ndarray:
    """The binding key levels that exclude a value: those ``allowed`` (with the ``free`` values)
    leaves some common value out of.  Only their rows could break the set dependency, so only
    they are evidence that it holds: a level allowing every value has no exceptions whatever the
    relation, and counting its rows made two charged-off loans in 204 of grade A (a rate of 1%,
    not 0) look like a rule with two errors among 3,000 rows."""
    kept = np.asarray(allowed[:, np.flatnonzero(~free)].sum(axis=1)).ravel()
    return binding & (kept < int((~free).sum()))


def _excluded(
    levels: sparse.csr_matrix,
    allowed: sparse.csr_matrix,
    free: np.ndarray,
    rows: np.ndarray,
    binding: np.ndarray,
) -> float:
    """How many of the binding rows would hold a pair ``allowed`` (or ``free``) excludes were the
    value drawn regardless of the key (its share over the binding rows)."""
    totals = np.asarray(levels[binding].sum(axis=0)).ravel()
    share = totals / max(float(totals.sum()), 1.0)
    kept = np.asarray(allowed[binding] @ share).ravel() + share[free].sum()
    return float(np.sum(rows[binding] * (1.0 - kept)))


def _kept(levels: sparse.csr_matrix, allowed: sparse.csr_matrix, free: np.ndarray) -> np.ndarray:
    """Per key level, its rows whose value it allows (``allowed``) or that every level allows
    (``free``)."""
    kept = np.asarray(levels.multiply(allowed).sum(axis=1)).ravel()
    return kept + np.asarray(levels[:, np.flatnonzero(free)].sum(axis=1)).ravel()


def _holds(
    levels: sparse.csr_matrix,
    allowed: sparse.csr_matrix,
    free: np.ndarray,
    rows: np.ndarray,
    binding: np.ndarray,
    level_off: float = DEPENDENCY_LEVEL_OFF,
    excluding: np.ndarray | None = None,
) -> bool:
    """Whether the binding levels keep to ``allowed`` (or a ``free`` value) in all but the shares a
    dependency allows (``level_off`` per level; ``DEPENDENCY_MAX_OFF`` pooled and the binomial
    test of ``DEPENDENCY_LOOSE`` over the levels ``excluding`` a value, by default all), and the
    values tell something (``DEPENDENCY_MIN_MINORITY`` binding rows hold another value than the
    most common one).  Rows at the pooled rare value (counted in ``rows``, not in ``levels``) are
    exceptions."""
    kept = _kept(levels, allowed, free)
    if ((rows - kept) > level_off * rows)[binding].any():
        return False
    totals = np.asarray(levels[binding].sum(axis=0)).ravel()
    if rows[binding].sum() - totals.max() < DEPENDENCY_MIN_MINORITY:
        return False
    evidence = binding if excluding is None else excluding
    off, n = (rows - kept)[evidence].sum(), rows[evidence].sum()
    return bool(off <= DEPENDENCY_MAX_OFF * n and binom.cdf(off, n, DEPENDENCY_LOOSE) <= DEPENDENCY_LEVEL)
