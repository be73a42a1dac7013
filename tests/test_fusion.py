"""The fused score: isolation trees as arrays, cross-fitted members, the table model's default."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import IsolationForest

from nrad.explain import first_feature
from nrad.fusion import MEMBERS, Fusion, IsolationTrees
from nrad.model_file import MANIFEST, TENSORS, ModelFileError, load_model, save_model
from nrad.table import TableModel, fit_table


@pytest.fixture(scope="module")
def rows() -> np.ndarray:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    X[:, 1] *= 50.0
    return X


def test_isolation_trees_score_as_scikit_learn_does(rows: np.ndarray) -> None:
    forest = IsolationForest(n_estimators=100, random_state=3).fit(rows)
    trees = IsolationTrees.fit(rows, 3)
    new = np.random.default_rng(1).normal(size=(300, 4)) * 3.0
    for X in (rows, new):
        np.testing.assert_allclose(trees.score(X), -forest.score_samples(X), rtol=0, atol=1e-12)
    # The numpy walk (used if scikit-learn's tree internals change) reaches the same leaves.
    leaves = trees._walk(new.astype(np.float32))
    np.testing.assert_allclose(
        trees.leaf_depth[leaves].mean(axis=1), -np.log2(trees.score(new)) * trees.normalizer
    )


def test_isolation_arrays_that_would_loop_or_escape_their_tree_are_refused(rows: np.ndarray) -> None:
    trees = IsolationTrees.fit(rows, 0)
    arrays = trees.to_arrays("f.")
    inner = int(np.flatnonzero(arrays["f.feature"] >= 0)[1])
    for name, value in (("f.left", 0), ("f.right", int(trees.roots[2]) + 1), ("f.feature", 4)):
        bad = {k: v.copy() for k, v in arrays.items()}
        bad[name][inner] = value  # back to the root / into the next tree / past the row's width
        with pytest.raises(ValueError):
            IsolationTrees.from_arrays(bad, "f.", 4)
    np.testing.assert_array_equal(IsolationTrees.from_arrays(arrays, "f.", 4).score(rows), trees.score(rows))


def test_training_rows_are_scored_by_members_that_did_not_see_them() -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(size=(400, 3))
    z[:6] = 8.0  # six identical far rows: a row that were its own neighbour would score 0
    folds = np.arange(400) % 2
    fusion = Fusion.fit(z, folds, np.ones(400, dtype=bool), random_state=0)
    members = fusion.members(z, folds)
    # Each far row has three twins in the other fold: fewer than 5, so its 5th neighbour is far.
    assert members[:6, 0].min() > 3.0 * np.median(members[6:, 0])
    # Rows kept out of the members (far values do not train) do not become references.
    fusion = Fusion.fit(z, folds, np.arange(400) >= 6, random_state=0)
    assert all(np.abs(ref).max() < 8.0 for ref in fusion.references)


def test_new_rows_seek_their_neighbours_among_every_training_row() -> None:
    """A new row is in no fold: its neighbour score is its distance to the 5th nearest of all the
    folds' reference rows at once; a training row, measured alike for the new rows' tails, is
    not its own neighbour (its 5th nearest other row, a twin counted once per copy)."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 3))
    z[1] = z[0]  # a twin: row 0's nearest other row, at distance 0
    for folds in (np.arange(300) % 2, np.arange(300) % 5):
        fusion = Fusion.fit(z, folds, np.arange(300) != 7, random_state=0)
        assert fusion.everyone is not None and len(fusion.everyone) == 299 and len(fusion.everyone_index) == 299  # row 7 is kept out
        new = rng.normal(size=(50, 3))
        whole = np.sort(np.linalg.norm(new[:, None, :] - fusion.everyone[None, :, :], axis=2), axis=1)
        np.testing.assert_allclose(fusion.neighbours(new), np.log(whole[:, 4]), rtol=1e-12)
        others = np.linalg.norm(z[:, None, :] - z[None, np.arange(300) != 7, :], axis=2)
        others[np.arange(300) != 7, np.arange(299)] = np.inf  # the row itself, where it is a reference
        kth = np.sort(others, axis=1)[:, 4]
        np.testing.assert_allclose(fusion.training_neighbours(z), np.log(kth), rtol=1e-12)


def test_fused_scale_is_each_members_median_and_iqr() -> None:
    rng = np.random.default_rng(0)
    density, members = (
        rng.normal(5, 2, 500),
        np.column_stack([rng.exponential(size=500), rng.uniform(size=500)]),
    )
    fusion = Fusion([], [], np.zeros(3), np.ones(3))
    fusion.calibrate(density, members)
    parts = np.column_stack([density, members])
    np.testing.assert_allclose(np.median((parts - fusion.center) / fusion.spread, axis=0), 0.0, atol=1e-12)
    q75, q25 = np.percentile((parts - fusion.center) / fusion.spread, [75, 25], axis=0)
    np.testing.assert_allclose(q75 - q25, 1.0)
    # A member in other units (x 1000) changes nothing.
    scaled = Fusion([], [], np.zeros(3), np.ones(3))
    scaled.calibrate(density * 1000.0, members)
    np.testing.assert_allclose(scaled.combine(density * 1000.0, members), fusion.combine(density, members))
    assert MEMBERS == ("density", "neighbours", "isolation", "robust distance")


def test_new_rows_are_scored_by_the_density_and_neighbours_alone() -> None:
    rng = np.random.default_rng(0)
    fusion = Fusion([], [], np.zeros(4), np.ones(4))
    density, members = rng.normal(size=200), rng.normal(size=(200, 3))
    fusion.calibrate(density, members)
    new = fusion.combine(density, members, new_rows=True)
    standardized = (np.column_stack([density, members]) - fusion.center) / fusion.spread
    np.testing.assert_allclose(new, standardized[:, :2].sum(axis=1))
    np.testing.assert_allclose(fusion.combine(density, members), standardized.sum(axis=1))
    # The isolation and robust-distance scores do not move a new row's score.
    moved = members + np.c_[np.zeros(200), rng.normal(size=(200, 2))]
    np.testing.assert_allclose(fusion.combine(density, moved, new_rows=True), new)


def test_new_rows_p_values_are_read_off_tails_of_their_own_score() -> None:
    rng = np.random.default_rng(1)

    def rows(n: int) -> pd.DataFrame:
        a = rng.normal(size=n)
        return pd.DataFrame({"a": a, "b": a + rng.normal(scale=0.5, size=n), "c": rng.exponential(size=n)})

    model = fit_table(rows(1000), max_epochs=30)
    scores = model.score(rows(2000), explain="none")[0]["anomaly_score"].to_numpy()
    # Fresh rows of the same kind: their scores' p-values off the new-row tails are uniform.
    p = np.exp(model.tails.row.log_p_values(scores))
    # The median too: a new row's neighbours sought among more rows than the tails' training rows
    # had (all folds' against one fold's) would put it lower (0.40).
    assert 0.45 <= np.mean(p <= 0.5) <= 0.55
    assert 0.15 <= np.mean(p <= 0.2) <= 0.25
    assert 0.03 <= np.mean(p <= 0.05) <= 0.08


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 400
    a = rng.normal(size=n)
    frame = pd.DataFrame({"a": a, "b": 2 * a + rng.normal(scale=0.3, size=n), "c": rng.choice(["x", "y"], n)})
    frame.loc[:3, "a"] = [1.5, -1.5, 2.0, -2.0]
    frame.loc[:3, "b"] = -2 * frame.loc[:3, "a"]  # four rows break the relation between a and b
    return frame


@pytest.fixture(scope="module")
def fused(table: pd.DataFrame) -> TableModel:
    return fit_table(table, max_epochs=30)


def test_the_table_model_fuses_by_default_and_nrde_is_one_argument_away(
    table: pd.DataFrame, fused: TableModel
) -> None:
    density = fit_table(table, max_epochs=30, detector="nrde")
    assert fused.fusion is not None and density.fusion is None
    assert fused.info["detector"] == "fused" and density.info["detector"] == "nrde"
    # Same flows (same seed): the density part of the fused model is the nrde model's score.
    prep = fused.prepare(table)
    np.testing.assert_allclose(fused.density_prepared(prep)[0], density.score_prepared(prep)[0])
    scored, _ = fused.score(table, in_sample=True)
    top = np.argsort(-scored["anomaly_score"].to_numpy())[:4]
    assert set(top) == {0, 1, 2, 3}
    # Explanations read the density: the broken relation names a or b.
    assert all(first_feature(scored.loc[r, "top_features"]) in {"a", "b"} for r in top)
    with pytest.raises(Exception, match="detector must be one of"):
        fit_table(table, detector="knn")
    # The units printed beside the scores name the members each way of scoring sums.
    assert "isolation" in fused.score_units(in_sample=True) and "isolation" not in fused.score_units()
    assert density.score_units() == density.score_units(in_sample=True)


def test_fused_model_file_round_trip_and_tampered_members(
    fused: TableModel, table: pd.DataFrame, tmp_path: Path
) -> None:
    from safetensors.numpy import load, save

    path = save_model(fused, tmp_path / "m.nrad")
    loaded = load_model(path)
    pd.testing.assert_frame_equal(fused.score(table)[0], loaded.score(table)[0])
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    tensors, manifest = load(members[TENSORS]), json.loads(members[MANIFEST])
    tensors["fusion.reference0"] = np.zeros((5, 7))  # the model reads 2 numeric features
    manifest["tensors"]["fusion.reference0"]["shape"] = [5, 7]
    bad = tmp_path / "bad.nrad"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr(MANIFEST, json.dumps(manifest))
        zf.writestr(TENSORS, save(tensors))
    with pytest.raises(ModelFileError, match="does not fit together"):
        load_model(bad)


def test_files_of_an_earlier_format_are_refused_with_what_to_do(table: pd.DataFrame, tmp_path: Path) -> None:
    # Earlier formats carry no tails of the cell tests or robust distance: they cannot give the
    # same p-values, so they are refused rather than read half.
    model = fit_table(table, max_epochs=5, detector="nrde")
    path = save_model(model, tmp_path / "m.nrad")
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members[MANIFEST])
    manifest["format_version"] = 2
    old = tmp_path / "old.nrad"
    with zipfile.ZipFile(old, "w") as zf:
        zf.writestr(MANIFEST, json.dumps(manifest))
        zf.writestr(TENSORS, members[TENSORS])
    with pytest.raises(ModelFileError, match="old.nrad: model format version 2.*refit the model"):
        load_model(old)


def test_member_scores_do_not_depend_on_the_batch() -> None:
    # 20 columns: the search multiplies matrices, whose last bits depend on how many rows it is given.
    rng = np.random.default_rng(0)
    z = rng.normal(size=(3000, 20))
    fusion = Fusion.fit(z, np.arange(3000) % 2, np.ones(3000, dtype=bool), random_state=0)
    new = rng.normal(size=(2000, 20))
    whole = fusion.members(new)
    pieces = np.concatenate([fusion.members(new[i : i + 333]) for i in range(0, 2000, 333)])
    np.testing.assert_array_equal(whole, pieces)
    alone = np.concatenate([fusion.neighbours(new[i : i + 333]) for i in range(0, 2000, 333)])
    np.testing.assert_array_equal(fusion.neighbours(new), alone)
