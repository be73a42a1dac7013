"""The .nrad model file: round trip, and refusing files from strangers."""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nrad.model_file import MANIFEST, TENSORS, ModelFileError, load_model, save_model
from nrad.table import TableModel, fit_table


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    b = rng.choice(["x", "y", "z"], 300)
    return pd.DataFrame(
        {
            "id": np.arange(300),
            "a": rng.normal(size=300) + 3.0 * (b == "y"),  # read against its level of b
            "b": b,
            "c": rng.normal(size=300),
        }
    )


@pytest.fixture(scope="module")
def model(table: pd.DataFrame) -> TableModel:
    return fit_table(table, id_column="id", max_epochs=5)


@pytest.fixture()
def saved(model: TableModel, tmp_path: Path) -> Path:
    return save_model(model, tmp_path / "m.nrad")


def test_round_trip_gives_identical_scores(model: TableModel, saved: Path, table: pd.DataFrame) -> None:
    loaded = load_model(saved)
    a, _ = model.score(table)
    b, _ = loaded.score(table)
    pd.testing.assert_frame_equal(a, b)
    assert zipfile.ZipFile(saved).namelist() == [MANIFEST, TENSORS]


def test_a_time_since_another_datetime_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    start = pd.Timestamp("2024-03-01") + pd.to_timedelta(rng.integers(0, 10 * 86400, 300), "s")
    trips = pd.DataFrame(
        {
            "pickup": start.strftime("%Y-%m-%d %H:%M"),
            "dropoff": (start + pd.to_timedelta(rng.uniform(5, 50, 300), "min")).strftime("%Y-%m-%d %H:%M"),
            "fare": rng.normal(20, 5, 300),
        }
    )
    model = fit_table(trips, max_epochs=2)
    loaded = load_model(save_model(model, tmp_path / "trips.nrad"))
    assert loaded.schema.columns[1].after == "pickup" and loaded.schema.columns[1].after_unit == "hours"
    pd.testing.assert_frame_equal(model.score(trips)[0], loaded.score(trips)[0])


def _rewrite(src: Path, dst: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return dst


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


class Boom:
    def __reduce__(self) -> tuple:
        return (Path("/tmp/nrad-pwned").touch, ())


def test_pickle_payload_is_never_unpickled(saved: Path, tmp_path: Path) -> None:
    members = _members(saved)
    members[TENSORS] = pickle.dumps(Boom())
    bad = _rewrite(saved, tmp_path / "bad.nrad", members)
    with pytest.raises(ModelFileError, match="safetensors"):
        load_model(bad)
    assert not Path("/tmp/nrad-pwned").exists()
    members = _members(saved)
    members["model.pkl"] = pickle.dumps(Boom())
    with pytest.raises(ModelFileError, match="unexpected members"):
        load_model(_rewrite(saved, tmp_path / "bad2.nrad", members))


def test_path_traversal_names_are_refused(saved: Path, tmp_path: Path) -> None:
    members = _members(saved)
    members["../../evil.json"] = b"{}"
    before = set(tmp_path.parent.iterdir())
    with pytest.raises(ModelFileError, match="unexpected members"):
        load_model(_rewrite(saved, tmp_path / "trav.nrad", members))
    assert set(tmp_path.parent.iterdir()) == before


def test_zip_bomb_is_refused(saved: Path, tmp_path: Path) -> None:
    members = _members(saved)
    bomb = tmp_path / "bomb.nrad"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST, b" " * (64 * 2**20))  # 64 MiB of spaces, a few KiB compressed
        zf.writestr(TENSORS, members[TENSORS])
    with pytest.raises(ModelFileError, match="limit"):
        load_model(bomb)


def test_future_version_and_wrong_shapes_are_refused(saved: Path, tmp_path: Path) -> None:
    members = _members(saved)
    manifest = json.loads(members[MANIFEST])
    manifest["format_version"] = 99
    with pytest.raises(ModelFileError, match="version 99"):
        load_model(_rewrite(saved, tmp_path / "v.nrad", {**members, MANIFEST: json.dumps(manifest).encode()}))
    manifest = json.loads(members[MANIFEST])
    manifest["tensors"]["detector0.mean_"]["shape"] = [99]
    with pytest.raises(ModelFileError, match="detector0.mean_"):
        load_model(_rewrite(saved, tmp_path / "s.nrad", {**members, MANIFEST: json.dumps(manifest).encode()}))


def test_a_version_10_file_reads_and_scores_new_rows_as_training_rows(
    model: TableModel, saved: Path, tmp_path: Path, table: pd.DataFrame
) -> None:
    from safetensors.numpy import load, save

    members = _members(saved)
    manifest = json.loads(members[MANIFEST])
    tensors = {k: v for k, v in load(members[TENSORS]).items() if "_rows." not in k}
    assert len(tensors) < len(manifest["tensors"])  # the level counts were kept
    manifest["format_version"] = 10
    manifest["tensors"] = {k: v for k, v in manifest["tensors"].items() if k in tensors}
    old = tmp_path / "v10.nrad"
    _rewrite(saved, old, {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)})
    loaded = load_model(old)
    assert loaded.numeric.level_rows is None
    y = loaded.numeric.shape(table[["a", "c"]].to_numpy())
    codes = loaded.prepare(table).codes
    assert model.numeric.parent[0] >= 0  # so that a new row's reading differs from a training row's
    assert not np.array_equal(
        model.numeric.residuals(y, codes, new_rows=True), model.numeric.residuals(y, codes)
    )
    np.testing.assert_array_equal(
        loaded.numeric.residuals(y, codes, new_rows=True), model.numeric.residuals(y, codes)
    )


def test_truncated_and_garbage_files_are_refused(saved: Path, tmp_path: Path) -> None:
    data = saved.read_bytes()
    for i, cut in enumerate([len(data) // 2, 100, 0]):
        bad = tmp_path / f"t{i}.nrad"
        bad.write_bytes(data[:cut])
        with pytest.raises(ModelFileError):
            load_model(bad)
    with pytest.raises(ModelFileError, match="does not exist"):
        load_model(tmp_path / "none.nrad")


def test_tampered_tensor_values_that_do_not_fit_are_refused(saved: Path, tmp_path: Path) -> None:
    from safetensors.numpy import load, save

    members = _members(saved)
    tensors = load(members[TENSORS])
    manifest = json.loads(members[MANIFEST])
    tensors["detector0.mean_"] = np.zeros(5)  # the model has 2 numeric features
    manifest["tensors"]["detector0.mean_"]["shape"] = [5]
    bad = _rewrite(
        saved, tmp_path / "x.nrad", {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)}
    )
    with pytest.raises(ModelFileError, match="does not fit together"):
        load_model(bad)


def test_save_is_atomic(model: TableModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "m.nrad"

    def broken(*args: object) -> bytes:
        raise RuntimeError("disk full")

    monkeypatch.setattr("nrad.model_file.save_tensors", broken)
    with pytest.raises(RuntimeError):
        save_model(model, target)
    assert list(tmp_path.iterdir()) == []


def test_tampered_category_and_scaler_arrays_are_refused(saved: Path, tmp_path: Path) -> None:
    from safetensors.numpy import load, save

    members = _members(saved)
    for name, value in (("categories.counts.0", np.zeros(2)), ("numeric.grid", np.zeros((1, 3)))):
        tensors = load(members[TENSORS])
        manifest = json.loads(members[MANIFEST])
        tensors[name] = value
        manifest["tensors"][name]["shape"] = list(value.shape)
        bad = _rewrite(
            saved, tmp_path / "c.nrad", {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)}
        )
        with pytest.raises(ModelFileError, match="does not fit together"):
            load_model(bad)


def test_tampered_seen_values_beyond_the_walls_are_refused(saved: Path, tmp_path: Path) -> None:
    """The farthest training values beyond the walls stand at or beyond a wall, and nowhere else."""
    from safetensors.numpy import load, save

    members = _members(saved)
    seen = load(members[TENSORS])["walls.seen_low"]
    assert np.isnan(seen).all()  # no wall in this table's numbers
    for value in (np.zeros(len(seen)), np.full(len(seen) + 1, np.nan)):
        tensors = load(members[TENSORS])
        manifest = json.loads(members[MANIFEST])
        tensors["walls.seen_low"] = value
        manifest["tensors"]["walls.seen_low"]["shape"] = list(value.shape)
        bad = _rewrite(
            saved, tmp_path / "w.nrad", {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)}
        )
        with pytest.raises(ModelFileError, match="does not fit together"):
            load_model(bad)


def test_a_version_17_file_reads_new_rows_against_the_walls_themselves(tmp_path: Path) -> None:
    """A file written before the walls kept what the training rows held beyond them reads, and its
    new rows meet the walls as they did then: a 0 that 2 training rows held is beyond a wall at 1."""
    from safetensors.numpy import load, save

    rng = np.random.default_rng(7)
    x = rng.normal(size=3000)
    count = np.repeat([0, 1, 2, 3, 4, 5, 6, 7, 8], [2, 200, 250, 150, 272, 273, 326, 318, 1209])
    table = pd.DataFrame({"x": x, "y": x + rng.normal(0, 0.5, 3000), "count": rng.permutation(count)})
    path = save_model(fit_table(table, random_state=0, max_epochs=2), tmp_path / "m.nrad")
    members = _members(path)
    manifest = json.loads(members[MANIFEST])
    tensors = {
        k: v for k, v in load(members[TENSORS]).items() if not (k.startswith("walls.") and "seen_" in k)
    }
    assert len(tensors) == len(manifest["tensors"]) - 4
    manifest["format_version"] = 17
    manifest["tensors"] = {k: v for k, v in manifest["tensors"].items() if k in tensors}
    old = _rewrite(
        path, tmp_path / "v17.nrad", {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)}
    )
    row = pd.DataFrame({"x": [0.0], "y": [0.0], "count": [0]})
    then, _ = load_model(old).score(row, explain="none")
    now, _ = load_model(path).score(row, explain="none")
    assert then.loc[0, "p_value"] == 0 and now.loc[0, "p_value"] > 1e-3


def test_a_version_18_file_seeks_new_rows_neighbours_fold_by_fold(
    model: TableModel, saved: Path, table: pd.DataFrame, tmp_path: Path
) -> None:
    """A file written before the fusion kept its reference rows once each reads, and its new rows'
    neighbour scores are the mean over the folds' references, as its tails were fitted; the file
    of today seeks them among all of them."""
    from safetensors.numpy import load, save

    members = _members(saved)
    manifest = json.loads(members[MANIFEST])
    tensors = {k: v for k, v in load(members[TENSORS]).items() if k != "fusion.everyone"}
    assert len(tensors) == len(manifest["tensors"]) - 1
    manifest["format_version"] = 18
    manifest["tensors"] = {k: v for k, v in manifest["tensors"].items() if k in tensors}
    rewritten = {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)}
    old = load_model(_rewrite(saved, tmp_path / "v18.nrad", rewritten))
    now = load_model(saved)
    assert old.fusion is not None and old.fusion.everyone_index is None
    z = now.score_prepared(now.prepare(table))[1]
    folds = [old.fusion._log_distance(k, z) for k in range(len(old.fusion.references))]
    np.testing.assert_allclose(old.fusion.neighbours(z), np.mean(folds, axis=0))
    assert not np.allclose(now.fusion.neighbours(z), old.fusion.neighbours(z))
    # Pairs that name a fold or a row the references do not have are refused.
    for pair in ([len(now.fusion.references), 0], [0, len(now.fusion.references[0])], [-1, 0]):
        tensors["fusion.everyone"] = np.array([pair], dtype=np.int64)
        manifest["format_version"] = 19
        manifest["tensors"]["fusion.everyone"] = {"dtype": "int64", "shape": [1, 2]}
        rewritten = {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)}
        with pytest.raises(ModelFileError, match="does not fit together"):
            load_model(_rewrite(saved, tmp_path / "bad.nrad", rewritten))


def test_no_raw_values_beyond_what_scoring_needs(model: TableModel, saved: Path) -> None:
    manifest = json.loads(_members(saved)[MANIFEST])
    text = json.dumps(manifest)
    # The id column's name is stored, never its values; categories keep their levels (scoring needs them).
    assert manifest["id_column"] == "id" and '"7"' not in text
    assert sorted(manifest["schema"]["columns"][1]["levels"]) == ["x", "y", "z"]


def test_polars_frames_give_the_same_scores(model: TableModel, table: pd.DataFrame) -> None:
    pl = pytest.importorskip("polars")
    a, _ = model.score(table)
    b, _ = model.score(pl.from_pandas(table))
    pd.testing.assert_frame_equal(a, b)


def test_tampered_bands_are_refused(tmp_path: Path) -> None:
    """A model of hotel bookings keeps where its band of long stays begins and the band's training
    statistics; a band naming a numeric feature the model does not have, or on no side, is refused."""
    from safetensors.numpy import load, save

    from nrad.synthetic import make_bookings

    path = save_model(
        fit_table(make_bookings(3000, 0, random_state=10008).frame, max_epochs=2), tmp_path / "b.nrad"
    )
    members = _members(path)
    assert "bands.feature" in load(members[TENSORS]) and "tails.row_bands.columns" in load(members[TENSORS])
    for name, value in (
        ("bands.feature", np.array([99])),
        ("bands.side", np.array([0])),
        ("tails.row_bands.columns", np.array([99])),
    ):
        tensors = load(members[TENSORS])
        manifest = json.loads(members[MANIFEST])
        tensors[name] = value.astype(tensors[name].dtype)
        bad = _rewrite(
            path, tmp_path / "x.nrad", {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)}
        )
        with pytest.raises(ModelFileError, match="does not fit together"):
            load_model(bad)


def test_a_clocks_time_that_is_none_is_flagged_named_and_kept_in_the_file_a_version_20_file_reads(
    tmp_path: Path,
) -> None:
    """A departure written 1375 in a column of times written HHMM gets p-value 0 and the reason;
    the model file keeps which columns are clocks; a file written before it reads none as one."""
    from safetensors.numpy import load, save

    rng = np.random.default_rng(8)
    n = 2000
    hour = rng.integers(5, 24, n)
    table = pd.DataFrame(
        {"departure": hour * 100 + 5 * rng.integers(0, 12, n), "delay": rng.exponential(10, n)}
    )
    model = fit_table(table, random_state=0, max_epochs=2)
    row = pd.DataFrame({"departure": [1375], "delay": [5.0]})
    got, _ = model.score(row, explain="all")
    assert got.loc[0, "p_value"] == 0 and "no time of day" in got.loc[0, "reason"]
    path = save_model(model, tmp_path / "m.nrad")
    assert load_model(path).score(row, explain="none")[0].loc[0, "p_value"] == 0
    members = _members(path)
    manifest = json.loads(members[MANIFEST])
    tensors = {k: v for k, v in load(members[TENSORS]).items() if k != "walls.clock"}
    manifest["format_version"] = 20
    manifest["tensors"] = {k: v for k, v in manifest["tensors"].items() if k in tensors}
    old = _rewrite(
        path, tmp_path / "v20.nrad", {MANIFEST: json.dumps(manifest).encode(), TENSORS: save(tensors)}
    )
    assert load_model(old).score(row, explain="none")[0].loc[0, "p_value"] > 0
