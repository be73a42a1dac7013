"""The category model: smoothed levels, pairs that depend on each other, leave-one-out."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from nrad.categories import CategoryModel, Dependency, edge_discount
from nrad.cells import category_p_values


def _codes(rng: np.random.Generator, n: int = 3000) -> tuple[np.ndarray, list[int]]:
    """Feature 0: 40 merchants (Zipf); 1: their category (a function of the merchant); 2: noise."""
    weights = 1.0 / np.arange(1, 41)
    merchant = rng.choice(40, size=n, p=weights / weights.sum())
    category = np.arange(40) % 6
    noise = rng.integers(0, 3, size=n)
    # Codes K (other) and K + 1 (missing) follow the levels of each feature.
    return np.column_stack([merchant, category[merchant], noise]), [42, 8, 5]


def test_the_dependent_pair_is_joined_and_the_independent_feature_is_not() -> None:
    codes, n_codes = _codes(np.random.default_rng(0))
    model = CategoryModel.fit(codes, n_codes)
    assert model.parent[2] == -1
    assert {model.parent[0], model.parent[1]} == {-1, 0} or {model.parent[0], model.parent[1]} == {-1, 1}


def test_an_unseen_level_costs_about_log_2n_and_more_than_a_rare_one() -> None:
    codes, n_codes = _codes(np.random.default_rng(1))
    model = CategoryModel.fit(codes, n_codes)
    common, rare, unseen = (
        codes[codes[:, 0] == 0][0].copy(),
        codes[codes[:, 0] == 39][0].copy(),
        codes[0].copy(),
    )
    unseen[0] = 40  # "other": never seen
    terms = -model.log_terms(np.vstack([common, rare, unseen]))
    assert terms[0, 0] < terms[1, 0] < terms[2, 0]
    # Krichevsky-Trofimov: a level never seen in n rows costs log((n + K/2) / (1/2)) nats.
    np.testing.assert_allclose(terms[2, 0] if model.parent[0] == -1 else -np.log(0.5 / (3000 + 21)),
                               -np.log(0.5 / (3000 + 21)), rtol=0.05)  # fmt: skip


def test_a_broken_deterministic_pair_costs_many_nats() -> None:
    codes, n_codes = _codes(np.random.default_rng(2))
    model = CategoryModel.fit(codes, n_codes)
    row = codes[codes[:, 0] == 0][0].copy()
    broken = row.copy()
    broken[1] = (row[1] + 1) % 6  # the merchant's category is never another one
    gap = -model.log_terms(broken[None]).sum() + model.log_terms(row[None]).sum()
    assert gap > 9.0, gap
    # A relation never broken in training gets a small discount.
    child = 1 if model.parent[1] == 0 else 0
    assert edge_discount(model.joint[child]) < 0.05


def test_leave_one_out_reads_a_training_row_as_if_it_were_new() -> None:
    codes, n_codes = _codes(np.random.default_rng(3))
    codes[7, 2] = 3  # the only row with this code of the noise feature
    model = CategoryModel.fit(codes, n_codes)
    loo = model.log_terms(codes[7:8], leave_out=codes[7:8])[0, 2]
    fresh = CategoryModel.fit(np.delete(codes, 7, axis=0), n_codes).log_terms(codes[7:8])[0, 2]
    np.testing.assert_allclose(loo, fresh)
    assert loo < model.log_terms(codes[7:8])[0, 2]


def test_state_round_trips() -> None:
    codes, n_codes = _codes(np.random.default_rng(4))
    model = CategoryModel.fit(codes, n_codes)
    meta, arrays = model.to_state("c.")
    again = CategoryModel.from_state(meta, arrays, "c.")
    np.testing.assert_array_equal(model.log_terms(codes), again.log_terms(codes))


def _loose_pair_with_a_rare_level(rng: np.random.Generator, n: int = 3000) -> tuple[np.ndarray, list[int]]:
    """Feature 0: 30 parent levels; 1: a child that mostly follows it, and a rare level (code 4, 0.2%
    of the rows) that comes with any parent."""
    parent = rng.integers(0, 30, n)
    child = np.where(rng.random(n) < 0.8, parent % 3, rng.integers(0, 4, n))
    child[rng.random(n) < 0.002] = 4
    return np.column_stack([parent, child]), [32, 7]


def test_a_rare_level_seen_with_any_parent_is_not_made_rarer_by_its_parent() -> None:
    codes, n_codes = _loose_pair_with_a_rare_level(np.random.default_rng(5))
    model = CategoryModel.fit(codes, n_codes)
    assert model.parent[1] == 0
    rare = codes[:, 1] == 4
    # Each of its rows, read as new (left out), brings a pair seen nowhere else: a row does that
    # with chance about (pairs seen once) / n, here above 1e-3.  Shared out by the level's
    # marginal count (0.2%) as well, it comes out below 2e-5.
    p = category_p_values(model, codes[rare], codes[rare])[:, 1]
    assert rare.sum() >= 2 and p.min() > 2e-4, p
    model.backoff = "marginal"
    assert category_p_values(model, codes[rare], codes[rare])[:, 1].min() < 2e-5


def test_the_share_of_new_pairs_leaves_a_training_row_out() -> None:
    codes, n_codes = _loose_pair_with_a_rare_level(np.random.default_rng(6))
    model = CategoryModel.fit(codes, n_codes)
    pair_count = {tuple(r): c for r, c in zip(*np.unique(codes, axis=0, return_counts=True), strict=True)}
    alone = next(i for i, r in enumerate(codes) if pair_count[tuple(r)] == 1)
    twice = next(i for i, r in enumerate(codes) if pair_count[tuple(r)] == 2)
    for row in (alone, twice):
        fresh = CategoryModel.fit(np.delete(codes, row, axis=0), n_codes)
        child = np.arange(7)
        own = np.full(7, codes[row, 1]), np.full(7, pair_count[tuple(codes[row])])
        np.testing.assert_allclose(
            model._novel_share(1, child, *own), fresh._novel_share(1, child, None, None)
        )


def test_a_file_without_the_back_off_shares_new_pairs_by_the_marginal_counts() -> None:
    codes, n_codes = _loose_pair_with_a_rare_level(np.random.default_rng(7))
    model = CategoryModel.fit(codes, n_codes)
    meta, arrays = model.to_state("c.")
    assert meta["backoff"] == "novel"
    del meta["backoff"]  # as model files of format 11 and before
    old = CategoryModel.from_state(meta, arrays, "c.")
    assert old.backoff == "marginal"
    model.backoff = "marginal"
    np.testing.assert_array_equal(old.log_terms(codes), model.log_terms(codes))


def test_a_dependency_kept_in_all_but_one_percent_of_the_rows_is_stated_and_its_breaks_found() -> None:
    """The merchant gives its category: a row with another category breaks it, in the training
    table (its own pair counted) and in a new one; a merchant with too few rows binds nothing.  The
    noise column gives nothing, nor does anything give it; nor does a category allow its merchants,
    whose smallest hold less than DEPENDENCY_SET_SHARE of its rows."""
    rng = np.random.default_rng(2)
    codes, n_codes = _codes(rng)
    broken_rows = rng.choice(len(codes), 15, replace=False)
    codes[broken_rows, 1] = (codes[broken_rows, 1] + 1) % 6
    model = CategoryModel.fit(codes, n_codes)
    dependencies = model.dependencies(np.ones(3, dtype=bool))
    assert [(d.key, d.value) for d in dependencies] == [(0, 1)]
    (dependency,) = dependencies
    bound = np.bincount(codes[:, 0], minlength=42)[codes[:, 0]] >= 10
    assert set(np.flatnonzero(dependency.broken(codes))) == set(broken_rows[bound[broken_rows]])
    new = np.array([[3, 3 % 6, 0], [3, (3 + 1) % 6, 0], [3, 7, 0]])  # kept, broken, category missing
    assert dependency.broken(new).tolist() == [False, True, False]
    assert not model.dependencies(np.array([True, False, True]))


def test_a_level_whose_rows_often_hold_another_value_gives_none_and_new_rows_may_hold_any_pair_seen() -> None:
    """Associates are never paid a bonus, seniors and above always, analysts in 3% of their rows:
    28 analysts with a bonus are a minority of their level, not its errors, and the analysts give
    nothing while the other levels keep theirs.  New rows are read against the training rows as
    normal: a pair two of them held breaks nothing there."""
    rng = np.random.default_rng(5)
    n = 3000
    level = rng.choice(4, n, p=[0.15, 0.3, 0.3, 0.25])  # associate, analyst, senior, lead
    bonus = np.where(level >= 2, 0, 1)  # code 0: a bonus; code 1: at its spike, 0
    analysts = np.flatnonzero(level == 1)
    bonus[analysts[:28]] = 0
    bonus[np.flatnonzero(level == 3)[:2]] = 1  # two leads without a bonus
    codes = np.column_stack([level, bonus])
    model = CategoryModel.fit(codes, [6, 4])
    deps = {(d.key, d.value): d for d in model.dependencies(np.ones(2, dtype=bool))}
    dependency = deps[(0, 1)]
    assert dependency.binding[:4].tolist() == [True, False, True, True]
    rows = np.array([[0, 0], [1, 0], [1, 1], [2, 1], [3, 1]])  # a bonus for an associate, ...
    assert dependency.broken(rows).tolist() == [True, False, False, True, True]
    seen = {(d.key, d.value): d for d in model.dependencies(np.ones(2, dtype=bool), seen=True)}[(0, 1)]
    assert seen.broken(rows).tolist() == [True, False, False, True, False]


def test_a_relation_with_exceptions_or_one_common_value_is_no_dependency() -> None:
    """3% of the rows at another category than their merchant's: a loose relation, no dependency.
    Nor is a status that is one value in 99.8% of the rows a dependency of every column."""
    rng = np.random.default_rng(3)
    codes, n_codes = _codes(rng)
    loose = rng.random(len(codes)) < 0.03
    codes[loose, 1] = (codes[loose, 1] + 1) % 6
    assert not CategoryModel.fit(codes, n_codes).dependencies(np.ones(3, dtype=bool))
    # Key: 3 levels (then rare, missing); value: "ok" or "warn" (then rare, missing).
    one_value = sparse.csr_matrix(
        np.array([[900, 1, 0, 0], [800, 0, 0, 0], [700, 1, 0, 0], [0] * 4, [0] * 4])
    )
    assert Dependency.find(0, 1, one_value, 5, 4) is None
    two_values = sparse.csr_matrix(
        np.array([[900, 1, 0, 0], [2, 800, 0, 5], [700, 0, 0, 0], [0] * 4, [0] * 4])
    )
    assert Dependency.find(0, 1, two_values, 5, 4).gives.tolist() == [0, 1, 0, -1, -1]


def test_a_level_that_allows_a_few_values_is_a_dependency_and_a_pair_it_never_holds_breaks_it() -> None:
    """Six wards, each with its four or five diagnoses (some shared): 15 rows with a diagnosis of
    another ward break the dependency, in the training table and in a new one; a diagnosis seen in
    only a few rows of the table is a rare level, not a break.  A ward whose diagnoses thin out
    (a long tail of pairs seen once or twice) binds nothing: no dependency at all."""
    rng = np.random.default_rng(4)
    allowed = [[0, 1, 2, 3, 4], [5, 6, 4, 7, 8], [9, 10, 11, 12, 13], [14, 15, 16, 17], [7, 18, 19, 20, 21],
               [22, 23, 8, 24, 25, 26]]  # fmt: skip
    n = 3000
    ward = rng.choice(6, size=n, p=[0.18, 0.14, 0.14, 0.12, 0.16, 0.26])
    diagnosis = np.array([rng.choice(allowed[w]) for w in ward])
    broken = rng.choice(n, 15, replace=False)
    diagnosis[broken] = [rng.choice(sorted(set(range(27)) - set(allowed[ward[r]]))) for r in broken]
    rare = rng.choice(np.setdiff1d(np.arange(n), broken), 2, replace=False)
    diagnosis[rare] = 27  # a diagnosis the table holds twice
    codes, n_codes = np.column_stack([ward, diagnosis]), [8, 30]
    model = CategoryModel.fit(codes, n_codes)
    dependencies = {(d.key, d.value): d for d in model.dependencies(np.ones(2, dtype=bool))}
    assert (0, 1) in dependencies
    by_ward = dependencies[(0, 1)]
    assert set(np.flatnonzero(by_ward.broken(codes))) == set(broken)
    # kept, broken, kept (shared), broken, missing, a diagnosis never seen (pooled with the rare)
    new = np.array([[0, 2], [0, 9], [5, 8], [3, 8], [2, 29], [1, 28]])
    assert by_ward.broken(new).tolist() == [False, True, False, True, False, False]
    # A key that may give one value alone (a number's indicator) states no sets.
    keys = np.array([False, True])
    assert (0, 1) not in {(d.key, d.value) for d in model.dependencies(np.ones(2, dtype=bool), set_keys=keys)}
    # A long tail: each ward also holds 40 other diagnoses once or twice each.
    loose = diagnosis.copy()
    tail = rng.choice(n, 400, replace=False)
    loose[tail] = 28 + rng.integers(0, 40, 400)
    codes = np.column_stack([ward, loose])
    assert not CategoryModel.fit(codes, [8, 70]).dependencies(np.ones(2, dtype=bool))
    # A large level allowing every value beside a small one mostly at one value, its other values
    # twice each (4 of 124 garages of fair quality finished): what a loose relation shows.
    garages = np.array([[1200, 800, 700, 0, 0], [120, 2, 2, 0, 0], [0] * 5, [0] * 5])
    assert Dependency.find(0, 1, sparse.csr_matrix(garages), 4, 5) is None
    # Only the levels that exclude a value are evidence: one exception in the 121 rows of the only
    # such level is what a rate of 1-2% shows (two charged-off loans in 204 of grade A, where the
    # other grades allow every status), however many rows the level allowing everything holds;
    # one in five times the rows is a rule with an error.
    garages[1] = [120, 1, 0, 0, 0]
    assert Dependency.find(0, 1, sparse.csr_matrix(garages), 4, 5) is None
    garages[1] = [600, 1, 0, 0, 0]
    assert Dependency.find(0, 1, sparse.csr_matrix(garages), 4, 5) is not None
    # Levels of 40 rows that hold one value each are too few to say what else they exclude (a
    # value they hold in 5% of their rows is missing from 40 of them one time in eight); of 120
    # rows, they are enough.
    small = np.array([[500, 500, 0, 0, 0, 0], [0, 0, 40, 0, 0, 0], [0, 0, 0, 40, 0, 0], [0] * 6, [0] * 6])
    assert Dependency.find(0, 1, sparse.csr_matrix(small), 5, 6) is None
    small[1:3] *= 3
    assert Dependency.find(0, 1, sparse.csr_matrix(small), 5, 6) is not None
    # Small levels still say what the relation is: where their values repeat but thin out (3 of 80
    # rows each, a child category that follows its parent in 90% of the rows and is random in the
    # rest), it is loose, and the large levels do not make a dependency of it.
    loose = np.array([[2000, 400, 0, 0, 0, 0, 0], [0, 0, 1000, 0, 0, 0, 0], [3, 3, 0, 74, 0, 0, 0],
                      [3, 0, 3, 0, 74, 0, 0], [0] * 7, [0] * 7])  # fmt: skip
    assert Dependency.find(0, 1, sparse.csr_matrix(loose), 6, 7) is None
    # Two related yes/no columns: every level allows both values, which states nothing.
    first = rng.random(n) < 0.3
    second = np.where(first, rng.random(n) < 0.6, rng.random(n) < 0.2)
    codes = np.column_stack([first, second]).astype(int)
    assert not CategoryModel.fit(codes, [4, 4]).dependencies(np.ones(2, dtype=bool))


def test_a_few_hundred_rows_do_not_tell_a_dependency_from_a_loose_relation() -> None:
    """One exception in 141 rows is what a relation broken by 5% of the rows shows now and then (a
    parcel marked fragile whatever it holds): no dependency.  Twenty times the rows with nine
    exceptions (0.3%) is one.  With twenty exceptions (0.7%) it is none: twenty rows that hold
    the same pair are the table's, not as many errors, however large the table."""
    few = np.array([[60, 1, 0, 0], [0, 80, 0, 0], [0] * 4, [0] * 4])
    assert Dependency.find(0, 1, sparse.csr_matrix(few), 4, 4) is None
    many = 20 * few
    many[0, 1] = 9
    assert Dependency.find(0, 1, sparse.csr_matrix(many), 4, 4) is not None
    assert Dependency.find(0, 1, sparse.csr_matrix(20 * few), 4, 4) is None


def test_a_level_whose_rows_leave_a_number_absent_is_a_dependency_a_present_value_breaks() -> None:
    """Marital status and the spouse's age's indicator (present, other, missing): single, widowed
    and divorced heads have no spouse's age; 5 rows hold one anyway and break it, a married head
    without one breaks nothing.  A column absent in almost every row of every level (a note kept in
    1% of the rows) states nothing, nor does a level whose rows are often present."""
    rng = np.random.default_rng(7)
    n = 3000
    marital = rng.choice(4, size=n, p=[0.6, 0.2, 0.12, 0.08])  # married, single, widowed, divorced
    spouse = np.where(marital == 0, 0, 2)  # present, or missing (code 2 of 3)
    spouse[rng.choice(np.flatnonzero(marital == 0), 30, replace=False)] = 2  # not recorded
    broken = rng.choice(np.flatnonzero(marital > 0), 5, replace=False)
    spouse[broken] = 0
    codes, n_codes = np.column_stack([marital, spouse]), [6, 3]
    model = CategoryModel.fit(codes, n_codes)
    absences = np.array([False, True])
    found = {(d.key, d.value): d for d in model.dependencies(np.ones(2, dtype=bool), absences=absences)}
    assert (0, 1) in found
    assert set(np.flatnonzero(found[(0, 1)].broken(codes))) == set(broken)
    assert found[(0, 1)].binding[:4].tolist() == [False, True, True, True]
    # Without absences, or read as a category's levels, nothing is stated (a missing value is none).
    assert (0, 1) not in {(d.key, d.value) for d in model.dependencies(np.ones(2, dtype=bool))}
    # A note kept in 1% of the rows, whatever the level: absent everywhere, no dependency.
    note = np.where(rng.random(n) < 0.01, 0, 2)
    sparse_model = CategoryModel.fit(np.column_stack([marital, note]), n_codes)
    assert not sparse_model.dependencies(np.ones(2, dtype=bool), absences=absences)
    # Absent in 85% of a level's rows: no level binds.
    loose = np.where((marital > 0) & (rng.random(n) < 0.15), 0, spouse)
    assert not CategoryModel.fit(np.column_stack([marital, loose]), n_codes).dependencies(
        np.ones(2, dtype=bool), absences=absences
    )
