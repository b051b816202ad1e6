"""Bad databases, output paths and numbers, as a user sends them: one line naming where, exit 2, nothing written.

Each class of issue 23's "Build": the database validator (``mm build``, ``mm info``, a graph
asset), messages that name the file, node, field and value, ``Instance.load_state``'s checks,
``edit --screenshot``'s path and frame, and the numbers of the command line.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import animgraph as ag
from animgraph import database, fileio
from animgraph.bvh import save_bvh
from animgraph.cli import main
from animgraph.database import Database
from animgraph.errors import GraphError

from display import display  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
BLEND = ROOT / "graphs" / "blend.json"


# ---------------------------------------------------------------- helpers


def _clip_file(path, frames=40, rename=None):
    """The bundled walk's first ``frames`` frames as a BVH at ``path`` (one joint renamed: ``(old, new)``)."""
    skel, walk = ag.data.load("walk")
    names = list(skel.names)
    if rename:
        names[names.index(rename[0])] = rename[1]
    out = ag.Skeleton(names, skel.parents, skel.offsets, end_sites=skel.end_sites)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_bvh(path, out, ag.Clip(out, walk.pos[:frames], walk.rot[:frames], dt=walk.dt))
    return path


def _files(folder):
    """{relative path: sha256} of every file under ``folder``: what a refusal must leave as it was."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def _refused(capsys, argv, folder, *words):
    """``main(argv)`` exits 2 with one stderr line holding ``words``, changing no file under ``folder``."""
    before = _files(folder)
    try:
        status = main([str(a) for a in argv])
    except SystemExit as stop:  # the argument parser's refusals
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("animgraph"), err
    assert "internal error" not in err and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)
    assert _files(folder) == before, "a refused command wrote or changed a file"
    return err


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A working folder with a short clip ``a/walk.bvh``; paths are given relative to it, as a user types them."""
    monkeypatch.chdir(tmp_path)
    _clip_file(tmp_path / "a" / "walk.bvh")
    return tmp_path


def _schema(path, **weights):
    groups = [g.model_dump() for g in database.Schema.default().groups]
    for g in groups:
        g["weight"] = weights.get(g["name"], g["weight"])
    path.write_text(json.dumps({"groups": groups}))
    return path


@pytest.fixture(scope="module")
def small_db(tmp_path_factory):
    """A database file of a short clip (built by the CLI)."""
    folder = tmp_path_factory.mktemp("smalldb")
    clip = _clip_file(folder / "walk.bvh", 60)
    assert main(["mm", "build", str(clip), "--out", str(folder / "db.npz")]) == 0
    return folder / "db.npz"


def _tamper(src, dst, change):
    with np.load(src) as npz:
        entries = {k: npz[k] for k in npz.files}
    change(entries)
    np.savez(dst, **entries)
    return dst


# ---------------------------------------------------------------- one database validator


def test_weights_out_of_bounds_are_refused_before_writing(here, capsys):
    for weights, words in (({"foot_position": 1e4}, ["groups.0.weight", "1000"]),
                           ({"foot_position": -1.0}, ["groups.0.weight"]),
                           ({"foot_position": 1e-320, "foot_velocity": 0, "hips_velocity": 0, "trajectory_position": 0,
                             "trajectory_direction": 0}, []),
                           ({"foot_position": 0, "foot_velocity": 0, "hips_velocity": 0, "trajectory_position": 0,
                             "trajectory_direction": 0}, ["at least one group"])):
        schema = _schema(here / "s.json", **weights)
        if words:
            _refused(capsys, ["mm", "build", "a/walk.bvh", "--out", "db.npz", "--features", "s.json"], here,
                     "s.json", *words)
            assert not (here / "db.npz").exists()
        else:  # a tiny weight: the features stay finite (no overflow in the normalisation)
            assert main(["mm", "build", "a/walk.bvh", "--out", "db.npz", "--features", str(schema)]) == 0
            db = Database.load(here / "db.npz")
            assert np.all(np.isfinite(db.features)) and np.all(np.isfinite(db.scale))
            (here / "db.npz").unlink()
            capsys.readouterr()


def test_a_group_of_weight_0_is_left_out_of_the_distance(here, capsys):
    _schema(here / "s.json", hips_velocity=0.0)
    assert main(["mm", "build", "a/walk.bvh", "--out", "db.npz", "--features", "s.json"]) == 0
    db = Database.load("db.npz")
    cols = db.schema.slices()["hips_velocity"]
    assert np.all(db.features[:, cols] == 0.0) and np.all(np.isfinite(db.scale)) and np.all(db.scale > 0)
    other = db.features[:, db.schema.slices()["foot_velocity"]].astype(np.float64)
    assert other.std(axis=0).mean() == pytest.approx(1.0, rel=1e-4)  # the others keep their weight
    capsys.readouterr()
    assert main(["mm", "info", "db.npz", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["groups"]["hips_velocity"]["weight"] == 0.0


def test_the_bounds_are_in_the_schema_and_the_help(capsys):
    assert main(["schema", "--features"]) == 0
    weight = json.loads(capsys.readouterr().out)["$defs"]["Group"]["properties"]["weight"]
    assert weight["minimum"] == 0 and weight["maximum"] == 1000
    with pytest.raises(SystemExit):
        main(["mm", "build", "--help"])
    assert "[0, 1000]" in " ".join(capsys.readouterr().out.split())


def test_a_clip_too_short_to_search_is_refused_or_skipped(here, capsys):
    _clip_file(here / "b" / "one.bvh", frames=1)
    err = _refused(capsys, ["mm", "build", "a/walk.bvh", "b/one.bvh", "--out", "db.npz"], here,
                   "b/one.bvh: 1 frame at 60 fps", "too short to search", "--skip-short")
    assert not (here / "db.npz").exists(), err
    assert main(["mm", "build", "a/walk.bvh", "b/one.bvh", "--out", "db.npz", "--skip-short"]) == 0
    err = capsys.readouterr().err
    assert "warning: b/one.bvh: 1 frame at 60 fps" in err and "left out" in err
    assert Database.load("db.npz").names == ["walk", "walk (mirrored)"]


def test_a_tampered_database_is_refused_where_it_is_read(small_db, tmp_path, capsys):
    def zero_rotation(e):
        e["rot"] = e["rot"].copy()
        e["rot"][17, 3] = 0.0

    bad = _tamper(small_db, tmp_path / "zero.npz", zero_rotation)
    _refused(capsys, ["mm", "info", bad], tmp_path, str(bad), "entry 'rot'", "norm 0", "frame 17", "range 'walk'")
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps({
        "format": "animgraph.graph", "version": 3, "assets": {"db": {"database": "zero.npz"}},
        "nodes": [{"id": "stick", "type": "input", "signal": "trajectory"},
                  {"id": "mm", "type": "motion_match", "database": "db"}, {"id": "out", "type": "output"}],
        "links": [["stick.value", "mm.trajectory"], ["mm.pose", "out.pose"]]}))
    _refused(capsys, ["validate", graph], tmp_path, "g.json", "node 'mm' port 'database'", "zero.npz", "entry 'rot'")
    for key, value, words in (("scale", -1.0, ["entry 'scale'", "positive"]),
                              ("features", np.inf, ["entry 'features'", "frame 0"]),
                              ("search_stops", None, ["range 'walk': search window 3..3", "edited or corrupt"])):
        def change(e, key=key, value=value):
            e[key] = e[key].copy()
            e[key][0] = e["search_starts"][0] if value is None else value  # None: an empty search window

        _refused(capsys, ["mm", "info", _tamper(small_db, tmp_path / f"{key}.npz", change)], tmp_path, *words)


def test_an_older_database_loads_or_says_rebuild(small_db, tmp_path, capsys):
    db = Database.load(small_db)

    def version_1(e):  # how version 1 stored it: scale divided by the group weights
        e["version"] = np.array(1, np.int64)
        e["scale"] = e["scale"] / db.schema.weights()

    old = Database.load(_tamper(small_db, tmp_path / "v1.npz", version_1))
    assert np.array_equal(old.features, db.features)
    np.testing.assert_allclose(old.scale, db.scale, rtol=1e-15)
    np.testing.assert_allclose(old.normalise(db.offset + db.scale), db.schema.weights(), rtol=1e-6)
    _refused(capsys, ["mm", "info", _tamper(small_db, tmp_path / "v0.npz", lambda e: e.update(version=np.array(0)))],
             tmp_path, "version 0", "rebuild it with `animgraph mm build`")

    def broken_v1(e):
        version_1(e)
        e["search_starts"] = e["search_starts"] + 1

    _refused(capsys, ["mm", "info", _tamper(small_db, tmp_path / "v1b.npz", broken_v1)], tmp_path,
             "search window", "rebuild it with `animgraph mm build`")


def test_a_schema_nested_absurdly_deep_is_one_line(here, capsys):
    (here / "deep.json").write_text('{"groups": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _refused(capsys, ["mm", "build", "a/walk.bvh", "--out", "db.npz", "--features", "deep.json"], here,
             "deep.json", "nested")


# ---------------------------------------------------------------- every message names where


def test_two_clips_of_one_name_are_told_apart_by_their_path(here, capsys):
    skel, _ = ag.data.load("walk")
    _clip_file(here / "b" / "walk.bvh", rename=(skel.names[5], "renamed_joint"))
    err = _refused(capsys, ["mm", "build", "a/walk.bvh", "b/walk.bvh", "--out", "db.npz"], here,
                   "animgraph: b/walk.bvh: its skeleton", "than a/walk.bvh's", "'renamed_joint'")
    assert "animgraph:walk" not in err


def test_out_of_memory_names_the_command_and_the_clips(here, capsys, monkeypatch):
    """Provoked by ``fileio.available_memory`` saying 1 MiB is free (what the build asks before preparing)."""
    _clip_file(here / "b" / "long.bvh", frames=400)
    monkeypatch.setattr(fileio, "available_memory", lambda: 1 << 20)
    _refused(capsys, ["mm", "build", "a/walk.bvh", "b/long.bvh", "--out", "db.npz"], here,
             "mm build:", "1 MiB is available", "b/long.bvh (", "a/walk.bvh (")
    assert not (here / "db.npz").exists()


def test_range_errors_name_node_field_and_value(tmp_path, capsys):
    graph = tmp_path / "g.json"
    walk = {"path": "animgraph:walk", "scale": 0}
    graph.write_text(json.dumps({"format": "animgraph.graph", "version": 1, "assets": {"walk": walk},
                                 "nodes": [{"id": "s", "type": "sample", "clip": "walk"},
                                           {"id": "out", "type": "output"}],
                                 "links": [["s.pose", "out.pose"]]}))
    _refused(capsys, ["validate", graph], tmp_path, "g.json", "asset 'walk' field 'scale'", "got 0")
    graph.write_text(json.dumps({"format": "animgraph.graph", "version": 3, "assets": {"walk": "animgraph:walk"},
                                 "nodes": [{"id": "s", "type": "sample", "clip": "walk"},
                                           {"id": "alpha", "type": "input", "default": 1e39},
                                           {"id": "out", "type": "output"}], "links": [["s.pose", "out.pose"]]}))
    _refused(capsys, ["validate", graph], tmp_path, "g.json", "node 'alpha' port 'default'", "1e+39")


@pytest.mark.parametrize("argv,words", [
    (["--dt", "1.7e308"], ["--dt", "1.7e308", "[1e-09, 1000]"]),
    (["--dt", "nan"], ["--dt"]),
    (["--dt", "0"], ["--dt"]),
    (["--frames", "0"], ["--frames", "[1, 1000000]"]),
    (["--frames", "99999999999999999"], ["--frames"]),
    (["--batch", "0"], ["--batch", "[1, 1048576]"]),
    (["--batch", "2000000"], ["--batch"]),
    (["--input", "alpha=1e39"], ["--input alpha=1e+39", "1e+09", "node 'alpha' port 'value'", "blend.json"]),
    (["--input", "alpha=1,2,inf"], ["--input alpha=1,2,inf", "not finite", "node 'alpha'"]),
])
def test_every_number_of_the_command_line_is_checked_by_the_parser(tmp_path, capsys, argv, words):
    """Refused before anything runs or compiles: one line naming the option, nothing written. ``--dt``, ``--frames``
    and ``--batch`` by the parser; an input value once the graph is read (the line names the graph and the node)."""
    args = {"--frames": "2", "--dt": "0.01", "--batch": "1"}
    args.update(dict(zip(argv[::2], argv[1::2])))
    flat = [x for k, v in args.items() for x in (k, v)]
    err = _refused(capsys, ["run", BLEND, *flat, "--out", tmp_path / "x.npz"], tmp_path, *words)
    assert "compiling" not in err
    _refused(capsys, ["edit", BLEND, "--frames", "-1"], tmp_path, "--frames", "[0, 1000000]")


def _graph_error_calls(path, functions=None):
    """(line, call) of every ``GraphError(...)`` in ``path`` (inside ``functions`` only, when given)."""
    tree = ast.parse(Path(path).read_text())
    out = []
    scopes = [tree] if functions is None else [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in functions]
    for scope in scopes:
        for n in ast.walk(scope):
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "GraphError":
                out.append((n.lineno, n))
    return out


def test_every_graph_error_of_nodes_planner_and_assets_passes_node_and_port():
    """An AST check: positionally (message, node, port) or by keyword; a port given as a literal None only where
    no field is known (a node's params() returning NaN)."""
    calls = [(p, line, c) for p in sorted((ROOT / "nodes").glob("*.py")) for line, c in _graph_error_calls(p)]
    calls += [(ROOT / "animgraph" / "plan.py", line, c) for line, c in _graph_error_calls(
        ROOT / "animgraph" / "plan.py", {"_call"})]
    calls += [(ROOT / "animgraph" / "assets.py", line, c) for line, c in _graph_error_calls(
        ROOT / "animgraph" / "assets.py", {"load_asset", "_load_asset_v2", "_load_database", "load_assets"})]
    assert len(calls) > 20
    literal_none = []
    for path, line, call in calls:
        keys = {k.arg for k in call.keywords}
        node = len(call.args) >= 2 or "node" in keys
        port = len(call.args) >= 3 or "port" in keys
        assert node and port, f"{path.name}:{line}: GraphError without node= and port="
        given = call.args[2] if len(call.args) >= 3 else next(k.value for k in call.keywords if k.arg == "port")
        if isinstance(given, ast.Constant) and given.value is None:
            literal_none.append(f"{path.name}:{line}")
    assert len(literal_none) == 1 and literal_none[0].startswith("plan.py"), literal_none


# ---------------------------------------------------------------- load_state


@pytest.fixture(scope="module")
def blend_instance():
    inst = ag.compile(BLEND).instance()
    for _ in range(5):
        inst.step(1 / 60)
    return inst


def _buffers(inst):
    return [a.copy() for a in (inst.chars, inst.vecs, inst.rots, inst.par)]


@pytest.mark.parametrize("field,change,words", [
    ("chars", lambda a: a.tolist(), ["state.chars", "numpy array", "list"]),
    ("chars", lambda a: a.astype(np.float32), ["state.chars", "float64", "float32"]),
    ("vecs", lambda a: a[:, :, :1], ["state.vecs", "shape"]),
    ("chars", lambda a: np.where(np.arange(a.size).reshape(a.shape) == 3, np.nan, a), ["state.chars", "NaN"]),
    ("par", lambda a: np.full_like(a, np.nan), ["state.par", "NaN"]),
    ("rots", lambda a: a * 0, ["state.rots", "norm 0"]),
    ("rots", lambda a: a * np.float32(1.01), ["state.rots", "norm 1.01"]),
    ("nodes", lambda a: None, ["state.nodes"]),
])
def test_load_state_refuses_a_bad_state_changing_nothing(blend_instance, field, change, words):
    inst = blend_instance
    state = inst.save_state()
    parts = {k: getattr(state, k) for k in ("plan", "chars", "vecs", "rots", "par", "nodes")}
    bad = ag.instance.State(**{**parts, field: change(parts[field])})
    inst.step(1 / 60)  # the buffers now differ from the state
    before = _buffers(inst)
    with pytest.raises(GraphError) as err:
        inst.load_state(bad)
    assert "\n" not in str(err.value) and str(BLEND) in str(err.value)
    for w in words:
        assert w in str(err.value), (w, str(err.value))
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(before, _buffers(inst)))
    inst.load_state(state)  # the good state still loads, and the steps repeat exactly
    first = inst.step(1 / 60)["out"].copy()
    inst.load_state(state)
    assert np.array_equal(inst.step(1 / 60)["out"].pos, first.pos)


def test_every_state_a_shipped_graph_saves_loads_back():
    """The checks refuse nothing a real run saves (motion matching, foot locks, IK at 60 frames)."""
    for name in ("locomotion", "ik_lookat_footlock"):
        inst = ag.compile(ROOT / "graphs" / f"{name}.json").instance()
        for f in range(60):
            inst.step(1 / 60)
            if f % 20 == 0:
                inst.load_state(inst.save_state())


# ---------------------------------------------------------------- edit --screenshot


def test_screenshot_path_is_checked_before_anything_plays(tmp_path, capsys):
    (tmp_path / "shots.png").mkdir()
    _refused(capsys, ["edit", BLEND, "--screenshot", tmp_path / "shots.png"], tmp_path,
             "--screenshot", "is a directory")
    _refused(capsys, ["edit", BLEND, "--screenshot", tmp_path / "missing" / "x.png"], tmp_path,
             "--screenshot", "no such directory")
    _refused(capsys, ["edit", BLEND, "--screenshot", "/proc/x.png"], tmp_path, "--screenshot", "cannot write")
    assert sorted(os.listdir(tmp_path)) == ["shots.png"] and os.listdir(tmp_path / "shots.png") == []


@pytest.mark.parametrize("frames", [0, 7])
def test_screenshot_shows_the_frame_asked_for(display, tmp_path, frames):  # noqa: F811
    out = tmp_path / "x.png"
    run = subprocess.run([sys.executable, "-m", "animgraph", "edit", str(BLEND), "--screenshot", str(out),
                          "--frames", str(frames)], capture_output=True, text=True, timeout=900,
                         env=dict(os.environ, DISPLAY=display))
    assert run.returncode == 0, run.stderr
    assert f"wrote {out} at frame {frames};" in run.stdout and out.stat().st_size > 0
    assert sorted(os.listdir(tmp_path)) == ["x.png"]
