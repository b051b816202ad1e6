"""The motion-matching database: features of hand-made clips, mirroring, normalisation, the file, the CLI."""

import json
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph import cli, database
from animgraph.database import Database, build, build_from_paths, cached_build
from animgraph.errors import AnimgraphError
from animgraph.features import Group, Schema

FPS = 60
SPEED = 1.4  # m/s
SPIN = 0.5  # rad/s, turning left
FEATURE_TOL = 2e-3  # m, m/s: the simulation bone's smoothing of an arc, central differences
BUNDLED = [f"animgraph:{n}" for n in ag.data.locomotion()]


def walker(frames=240, speed=SPEED, spin=0.0):
    """(name, skeleton, clip) of hips walking along +Z at ``speed`` m/s turning left at ``spin`` rad/s, toes fixed."""
    skel = ag.Skeleton(["hips", "chest", "left_toe", "right_toe"], [-1, 0, 0, 0],
                       [[0, 1, 0], [0, 0.4, 0], [0.1, -1, 0.1], [-0.1, -1, 0.1]])
    t = np.arange(frames) / FPS
    yaw = spin * t
    pos = np.repeat(skel.offsets[None], frames, 0).astype(np.float64)
    if spin:
        pos[:, 0, 0], pos[:, 0, 2] = speed / spin * (1 - np.cos(yaw)), speed / spin * np.sin(yaw)
    else:
        pos[:, 0, 2] = speed * t
    rot = np.zeros((frames, 4, 4))
    rot[..., 0] = 1.0
    rot[:, 0, 0], rot[:, 0, 2] = np.cos(yaw / 2), np.sin(yaw / 2)
    return "walker", skel, ag.Clip(skel, pos, rot, dt=1 / FPS, name="walker")


def raw(db):
    """The database's features before normalisation (float64)."""
    return db.features.astype(np.float64) / db.schema.weights() * db.scale + db.offset


def group(db, name, r=0):
    """Raw feature columns of group ``name`` over range ``r``."""
    return raw(db)[db.range_starts[r]:db.range_stops[r], db.schema.slices()[name]]


@pytest.fixture(scope="module")
def bundled_db():
    return build_from_paths(BUNDLED)


@pytest.fixture(scope="module")
def saved(bundled_db, tmp_path_factory):
    path = tmp_path_factory.mktemp("db") / "db.npz"
    bundled_db.save(path)
    return path


# ---------------------------------------------------------------- features of hand-made clips


def test_schema_default_columns_match_the_trajectory_signal():
    s = Schema.default()
    assert s.dim == 27
    sl = s.slices()
    assert s.columns()[sl["trajectory_position"]] == [f"trajectory_position.{k}.{a}" for k in (20, 40, 60) for a in "xz"]
    assert s.columns()[sl["trajectory_direction"]][:2] == ["trajectory_direction.20.x", "trajectory_direction.20.z"]
    assert Schema.from_json(s.to_json()) == s


def test_straight_walk_trajectory_is_ahead_at_speed():
    db = build([walker()], mirror=False)
    traj, dirs = group(db, "trajectory_position"), group(db, "trajectory_direction")
    for k, off in enumerate((20, 40, 60)):  # every frame, the extrapolated ones too
        np.testing.assert_allclose(traj[:, 2 * k], 0.0, atol=1e-4)
        np.testing.assert_allclose(traj[:, 2 * k + 1], SPEED * off / FPS, atol=1e-4)
        np.testing.assert_allclose(dirs[:, 2 * k:2 * k + 2], np.tile([0.0, 1.0], (len(dirs), 1)), atol=1e-6)
    np.testing.assert_allclose(group(db, "hips_velocity"), np.tile([0, 0, SPEED], (db.frames, 1)), atol=1e-4)
    np.testing.assert_allclose(group(db, "foot_position"), np.tile([0.1, 0, 0.1, -0.1, 0, 0.1], (db.frames, 1)),
                               atol=1e-5)
    np.testing.assert_allclose(db.motion[:, 2], SPEED, atol=1e-4)


def test_turning_walk_features_equal_the_arc():
    frames = 240
    db = build([walker(frames, spin=SPIN)], mirror=False)
    inner = slice(20, frames - 60)  # away from the bone's edge fits and from extrapolation
    w, v, r = SPIN, SPEED, SPEED / SPIN
    np.testing.assert_allclose(group(db, "foot_position")[inner], np.tile([0.1, 0, 0.1, -0.1, 0, 0.1], (frames - 80, 1)),
                               atol=FEATURE_TOL)
    # A toe's velocity in the bone's frame: the bone's (0, 0, v) plus spin x its offset (x, -1, 0.1).
    feet = [0.1 * w, 0, v - 0.1 * w, 0.1 * w, 0, v + 0.1 * w]
    np.testing.assert_allclose(group(db, "foot_velocity")[inner], np.tile(feet, (frames - 80, 1)), atol=FEATURE_TOL)
    t = np.array([20, 40, 60]) / FPS
    ahead = np.stack([r * (1 - np.cos(w * t)), r * np.sin(w * t)], 1).reshape(-1)
    facing = np.stack([np.sin(w * t), np.cos(w * t)], 1).reshape(-1)
    np.testing.assert_allclose(group(db, "trajectory_position")[inner], np.tile(ahead, (frames - 80, 1)), atol=FEATURE_TOL)
    np.testing.assert_allclose(group(db, "trajectory_direction")[inner], np.tile(facing, (frames - 80, 1)),
                               atol=FEATURE_TOL)
    # Extrapolated past the end: the same arc, within the edge fit's error.
    np.testing.assert_allclose(group(db, "trajectory_position")[-60:-10], np.tile(ahead, (50, 1)), atol=0.03)
    np.testing.assert_allclose(db.motion[inner, 4], SPIN, atol=1e-3)


def test_mirrored_turn_turns_the_other_way():
    db = build([walker(spin=SPIN)], mirror=True)
    assert db.names == ["walker", "walker (mirrored)"]
    a, b = group(db, "trajectory_direction", 0), group(db, "trajectory_direction", 1)
    assert np.all(a[20:-60, 0::2] > 0.1) and np.all(b[20:-60, 0::2] < -0.1)
    np.testing.assert_allclose(b[:, 0::2], -a[:, 0::2], atol=1e-5)
    np.testing.assert_allclose(b[:, 1::2], a[:, 1::2], atol=1e-5)
    np.testing.assert_allclose(db.motion[db.range_starts[1]:, 4], -db.motion[:db.range_stops[0], 4], atol=1e-5)


def test_bundled_turns_mirror(bundled_db):
    db = bundled_db
    turn = {n: float(np.mean(group(db, "trajectory_direction", i)[:, 4])) for i, n in enumerate(db.names)}
    assert turn["jog_turn_left"] > 0.3 and turn["jog_turn_left (mirrored)"] < -0.3
    assert turn["jog_turn_right"] < -0.3 and turn["jog_turn_right (mirrored)"] > 0.3
    assert db.frames == int(db.range_stops[-1]) and len(db.names) == 2 * len(BUNDLED)


def test_normalisation_mean_zero_and_group_std_is_weight():
    groups = [g.model_copy(update={"weight": 2.5 if g.name == "hips_velocity" else 1.0}) for g in Schema.default().groups]
    db = build([walker(spin=SPIN), walker(speed=3.0)], Schema(groups=groups))
    np.testing.assert_allclose(db.features.mean(axis=0), 0.0, atol=1e-5)
    for g, sl in zip(db.schema.groups, db.schema.slices().values()):
        std = db.features[:, sl].astype(np.float64).std(axis=0).mean()
        assert std == pytest.approx(g.weight, rel=1e-4), g.name
    assert db.features.dtype == np.float32 and db.scale.dtype == np.float64


def test_search_windows_leave_a_successor_frame(bundled_db):
    db = bundled_db
    assert np.all(db.search_starts == db.range_starts + database.SEARCH_SKIP_START)
    assert np.all(db.search_stops == db.range_stops - database.SEARCH_SKIP_END)
    assert database.search_window(0, 5) == (0, 4)  # too short for both margins: all but the last frame
    assert database.search_window(7, 8) == (7, 7)


def test_unknown_joint_names_the_schema_file_group_and_joint(tmp_path):
    path = tmp_path / "feet.json"
    path.write_text(json.dumps({"groups": [{"name": "feet", "kind": "position", "joints": ["left_tow"]}]}))
    with pytest.raises(AnimgraphError) as err:
        build([walker()], Schema.load(path))
    assert str(path) in str(err.value) and "'feet'" in str(err.value) and "'left_tow'" in str(err.value)


@pytest.mark.parametrize("bad", [
    {"groups": []},
    {"groups": [{"name": "t", "kind": "trajectory_position", "offsets": [20, 601]}]},  # past 10 s
    {"groups": [{"name": "t", "kind": "trajectory_position", "joints": ["hips"]}]},
    {"groups": [{"name": "t", "kind": "position", "joints": ["hips"], "weight": 0}]},  # nothing to search by
    {"groups": [{"name": "t", "kind": "position", "joints": ["hips"], "weight": 1001}]},
    {"groups": [{"name": "t", "kind": "position", "joints": ["hips"], "weight": -1}]},
    {"groups": [{"name": "t", "kind": "position", "joints": ["hips"]}], "extra": 1},
])
def test_bad_schema_is_one_line_naming_the_file(tmp_path, bad):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(AnimgraphError) as err:
        Schema.load(path)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_clips_of_other_skeletons_are_refused():
    _, skel, clip = walker()
    other = ag.Skeleton(["hips", "chest", "left_toe", "toe_r"], skel.parents, skel.offsets)
    with pytest.raises(AnimgraphError, match="^odd: its skeleton"):
        build([walker(), ("odd", other, ag.Clip(other, clip.pos, clip.rot, dt=clip.dt))])
    with pytest.raises(AnimgraphError, match="at least one clip"):
        build([])


# ---------------------------------------------------------------- the file


def test_save_load_round_trip_is_bit_identical(bundled_db, saved):
    db = Database.load(saved)
    for key, a in bundled_db.arrays().items():
        b = db.arrays()[key]
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), key
    assert db.schema == bundled_db.schema and db.names == bundled_db.names
    assert db.skeleton.index("left_toe") == bundled_db.skeleton.index("left_toe")
    assert db.skeleton_hash == database.skeleton_hash(bundled_db.skeleton)


def _rewrite(src, dst, change):
    with np.load(src) as npz:
        entries = {k: npz[k] for k in npz.files}
    change(entries)
    np.savez(dst, **entries)
    return dst


def _one_line_error(path):
    with pytest.raises(AnimgraphError) as err:
        Database.load(path)
    text = str(err.value)
    assert text.startswith(str(path) + ":") and "\n" not in text
    return text


def test_newer_version_names_both(saved, tmp_path):
    path = _rewrite(saved, tmp_path / "v3.npz", lambda e: e.update(version=np.array(database.VERSION + 1)))
    text = _one_line_error(path)
    assert f"version {database.VERSION + 1}" in text and f"version {database.VERSION})" in text


def test_edited_skeleton_fails_its_hash(saved, tmp_path):
    def nudge(e):
        e["skeleton_offsets"] = e["skeleton_offsets"] + np.float32(0.01)

    assert "skeleton hash mismatch" in _one_line_error(_rewrite(saved, tmp_path / "h.npz", nudge))


@pytest.mark.parametrize("key", ["format", "version", "schema", "skeleton_names", "skeleton_parents", "pos", "rot",
                                 "motion", "contacts", "range_starts", "search_stops", "names", "features", "offset",
                                 "scale", "skeleton_hash", "dt"])
def test_missing_or_misshaped_entry_is_one_line(saved, tmp_path, key):
    _one_line_error(_rewrite(saved, tmp_path / "missing.npz", lambda e: e.pop(key)))

    def reshape(e):
        a = e[key]
        e[key] = a.reshape(-1)[:-1] if a.ndim > 1 or a.size > 1 else np.array([a, a])

    _one_line_error(_rewrite(saved, tmp_path / "shape.npz", reshape))


def test_not_a_database(tmp_path):
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    assert "not a motion-matching database" in _one_line_error(tmp_path / "other.npz")
    (tmp_path / "g.json").write_text("{}")
    assert "not an .npz" in _one_line_error(tmp_path / "g.json")
    assert "no such" in _one_line_error(tmp_path / "absent.npz")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2000), zip_head=st.booleans())
def test_fuzz_random_bytes(tmp_path, data, zip_head):
    path = tmp_path / "fuzz.npz"
    path.write_bytes((b"PK\x03\x04" if zip_head else b"") + data)
    _one_line_error(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0.0, 0.9999), flip=st.integers(0, 2 ** 31))
def test_fuzz_truncated_and_flipped_real_file(saved, tmp_path, cut, flip):
    data = saved.read_bytes()
    path = tmp_path / "cut.npz"
    path.write_bytes(data[:int(cut * len(data))])
    _one_line_error(path)
    flipped = bytearray(data)
    flipped[flip % len(data)] ^= 0xFF
    path.write_bytes(bytes(flipped))
    try:  # a flipped byte may land where nothing reads it: then it loads
        Database.load(path)
    except AnimgraphError as err:
        assert "\n" not in str(err) and str(path) in str(err)


def test_save_is_atomic(bundled_db, tmp_path, monkeypatch):
    path = tmp_path / "db.npz"
    bundled_db.save(path)
    before = path.read_bytes()

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", fail)
    with pytest.raises(OSError):
        bundled_db.save(path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["db.npz"]


# ---------------------------------------------------------------- cache and graphs


def test_cached_build_reuses_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ANIMGRAPH_CACHE", str(tmp_path / "cache"))
    labels = ["animgraph:run", "animgraph:jog"]
    first = cached_build(labels, None, mirror=False)
    path = database.cache_path(database.cache_key(labels, None, False))
    assert path.is_file()
    monkeypatch.setattr(database, "build_from_paths", lambda *a, **k: pytest.fail("rebuilt instead of reused"))
    again = cached_build(labels, None, mirror=False)
    assert np.array_equal(again.features, first.features) and again.names == ["run", "jog"]
    assert database.cache_key(labels, None, True) != database.cache_key(labels, None, False)


def _graph(tmp_path, assets):
    data = {"format": "animgraph.graph", "version": 3, "assets": assets,
            "nodes": [{"id": "play", "type": "sample", "clip": "jog", "loop": True}, {"id": "out", "type": "output"}],
            "links": [["play.pose", "out.pose"]]}
    (tmp_path / "g.json").write_text(json.dumps(data))
    return ag.Graph.load(tmp_path / "g.json")


def test_graph_database_asset_is_a_clip_with_the_database(saved, tmp_path):
    plan = ag.compile(_graph(tmp_path, {"jog": {"database": str(saved)}, "walk": "animgraph:walk"}))
    clip = plan.clips["jog"].clip
    assert clip.frames == clip.database.frames and isinstance(clip.database, Database)


def test_graph_database_with_other_joint_names_names_asset_and_node(bundled_db, tmp_path):
    skel = bundled_db.skeleton
    renamed = ag.Skeleton([n.upper() for n in skel.names], skel.parents, skel.offsets)
    db = Database(**{**{k: getattr(bundled_db, k) for k in (
        "schema", "pos", "rot", "scl", "motion", "contacts", "range_starts", "range_stops", "names", "search_starts",
        "search_stops", "features", "offset", "scale")}, "skeleton": renamed})
    db.save(tmp_path / "renamed.npz")
    with pytest.raises(ag.GraphError) as err:
        ag.compile(_graph(tmp_path, {"walk": "animgraph:walk", "jog": {"database": "renamed.npz"}}))
    assert err.value.node == "play" and "'jog'" in str(err.value) and "joint names" in str(err.value)
    with pytest.raises(ag.GraphError) as err:
        ag.compile(_graph(tmp_path, {"jog": {"database": "absent.npz"}}))
    assert err.value.node == "play" and "absent.npz" in str(err.value)


# ---------------------------------------------------------------- command line


def test_mm_build_writes_the_file(tmp_path, capsys):
    out = tmp_path / "db.npz"
    assert cli.main(["mm", "build", "animgraph:walk", "animgraph:jog_turn_right", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "4 ranges" in printed and "27 features" in printed and str(out) in printed
    assert Database.load(out).names[-1] == "jog_turn_right (mirrored)"
    assert cli.main(["mm", "info", str(out)]) == 0
    assert "skeleton   31 joints" in capsys.readouterr().out
    no_mirror = tmp_path / "one.npz"
    assert cli.main(["mm", "build", str(ag.data.path("run")), "--no-mirror", "--out", str(no_mirror)]) == 0
    assert Database.load(no_mirror).names == ["cmu_16_45_run_jog"]


@pytest.mark.parametrize("args", [
    ["mm", "build", "--out", "{out}"],  # no clips
    ["mm", "build", "animgraph:sprint", "--out", "{out}"],
    ["mm", "build", "missing.bvh", "--out", "{out}"],
    ["mm", "build", "animgraph:walk", "--out", "{out}", "--features", "absent.json"],
    ["mm", "build", "animgraph:walk", "--out", "{tmp}/no/such/dir/db.npz"],
    ["mm", "build", "animgraph:walk", "--out", "{tmp}/db.txt"],
])
def test_mm_build_bad_args_exit_2_one_line_no_file(tmp_path, capsys, args):
    out = tmp_path / "db.npz"
    argv = [a.format(out=out, tmp=tmp_path) for a in args]
    try:
        status = cli.main(argv)
    except SystemExit as stop:  # argparse's usage errors
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err
    assert not out.exists() and not any(p.suffix in (".npz", ".tmp") for p in tmp_path.rglob("*"))


def test_zip_entries_have_no_pickles(saved):
    with zipfile.ZipFile(saved) as z:
        assert {n[:-4] for n in z.namelist()} == set(Database.load(saved).arrays())
    np.load(saved, allow_pickle=False)["names"]  # text arrays, not objects
