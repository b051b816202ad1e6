"""glTF out and in: round trips, cubic tangents equal to the propagated velocities, hand-made files for each
sampler kind, hostile files (fuzzed with hypothesis), and bad input through the command line: one line, exit 2,
nothing half-written.  The real tools (validator, three.js, Blender) are in test_gltf_tools.py."""

from __future__ import annotations

import base64
import json
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph import graphs
from animgraph.cli import main
from animgraph.gltf import GLTFError
from animgraph.ops import fk

import gltf_read


def angles(a, b):
    """Angles (rad) between unit quaternions (..., 4), either sign: 4 asin(|a - b| / 2), exact near zero."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    b = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0, -b, b)
    return 4.0 * np.arcsin(np.clip(np.linalg.norm(a - b, axis=-1) / 2.0, 0.0, 1.0))


def qmul(a, b):
    """Hamilton product, w-first (written here, not taken from animgraph)."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, float), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, float), -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], -1)


def axis_angle(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.r_[np.cos(angle / 2), np.sin(angle / 2) * axis]


# ---------------------------------------------------------------- round trips


@pytest.mark.parametrize("suffix", [".glb", ".gltf"])
@pytest.mark.parametrize("cubic", [True, False])
def test_save_then_load_gives_the_clip_back_at_the_keys(tmp_path, suffix, cubic):
    skel, clip = ag.data.load("walk")
    written = ag.save_gltf(tmp_path / f"walk{suffix}", skel, clip, cubic=cubic)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in written)
    skel2, clip2 = ag.load_gltf(written[0])
    assert skel2.names == skel.names and np.array_equal(skel2.parents, skel.parents)
    assert np.allclose(skel2.offsets, skel.offsets, atol=1e-6)
    assert clip2.frames == clip.frames and clip2.dt == pytest.approx(clip.dt, rel=1e-9)
    assert np.abs(clip2.pos - clip.pos).max() < 1e-5
    assert angles(clip2.rot, clip.rot).max() < 1e-5
    assert np.abs(clip2.scl - 1.0).max() < 1e-6


def test_round_trip_keeps_scale_rotations_and_several_roots(tmp_path):
    rng = np.random.default_rng(7)
    skel = ag.Skeleton(["a", "b", "c", "d", "e"], [-1, 0, 1, -1, 3], rng.normal(size=(5, 3)))
    frames = 9
    rot = rng.normal(size=(frames, 5, 4))
    rot /= np.linalg.norm(rot, axis=-1, keepdims=True)
    clip = ag.Clip(skel, rng.normal(size=(frames, 5, 3)), rot, np.exp(rng.normal(scale=0.3, size=(frames, 5, 3))),
                   dt=1 / 30)
    ag.save_gltf(tmp_path / "x.glb", skel, clip)
    skel2, clip2 = ag.load_gltf(tmp_path / "x.glb")
    assert list(skel2.parents) == [-1, 0, 1, -1, 3]
    assert np.abs(clip2.pos - clip.pos).max() < 1e-5 and angles(clip2.rot, clip.rot).max() < 1e-5
    assert np.abs(clip2.scl / clip.scl - 1.0).max() < 1e-5
    assert clip2.dt == pytest.approx(1 / 30)


def test_one_frame_clip_writes_linear_and_loads(tmp_path):
    skel, clip = ag.data.load("walk")
    one = ag.Clip(skel, clip.pos[:1], clip.rot[:1], dt=clip.dt)
    ag.save_gltf(tmp_path / "one.glb", skel, one)
    doc, _ = gltf_read.read_glb(tmp_path / "one.glb")
    assert {s["interpolation"] for s in doc["animations"][0]["samplers"]} == {"LINEAR"}
    _, back = ag.load_gltf(tmp_path / "one.glb")
    assert back.frames == 1 and np.abs(back.pos - one.pos).max() < 1e-6


# ---------------------------------------------------------------- tangents


@pytest.fixture(scope="module")
def blend_run(tmp_path_factory):
    """The shipped blend graph's 120 Hz run as a .glb through the CLI and the same frames through the API."""
    out = tmp_path_factory.mktemp("run") / "blend.glb"
    assert main(["run", str(graphs.path("blend")), "--frames", "121", "--dt", repr(1 / 120), "--out", str(out)]) == 0
    plan = ag.compile(graphs.path("blend"))
    inst = plan.instance()
    frames = [inst.step(1 / 120)["out"].copy() for _ in range(121)]
    pose = ag.Pose(*(np.stack([getattr(p, f) for p in frames]) for f in ag.pose.FIELDS))
    assert plan.checked.spaces.get(("out", "pose", "out")) != "global"  # local: its velocities are the tangents
    return out, pose, plan.skeleton


def _keys(file):
    """{(node, path): (values (K, C), in tangents (K, C), out tangents (K, C))} of a cubic .glb."""
    doc, accessor = gltf_read.read_glb(file)
    anim = doc["animations"][0]
    out = {}
    for ch in anim["channels"]:
        sampler = anim["samplers"][ch["sampler"]]
        assert sampler["interpolation"] == "CUBICSPLINE"
        v = accessor(sampler["output"]).reshape(len(accessor(sampler["input"])), 3, -1)
        out[ch["target"]["node"], ch["target"]["path"]] = (v[:, 1], v[:, 0], v[:, 2])
    return out


def test_cubic_tangents_are_the_propagated_velocities(blend_run):
    file, pose, skel = blend_run
    keys = _keys(file)
    for j in range(len(skel)):
        value, tin, tout = keys[j, "translation"]
        assert np.array_equal(tin, tout)
        assert np.abs(value - pose.pos[:, j]).max() < 1e-6 and np.abs(tin - pose.vel[:, j]).max() < 1e-5
        value, tin, _ = keys[j, "rotation"]
        q = value[:, [3, 0, 1, 2]]  # w-first
        assert angles(q, pose.rot[:, j]).max() < 1e-5
        # d/dt q = 1/2 (0, ang) q for a left-multiplying angular velocity.
        dq = 0.5 * qmul(np.c_[np.zeros(len(q)), pose.ang[:, j]], q)
        assert np.abs(tin - dq[:, [1, 2, 3, 0]]).max() < 1e-5
        value, tin, _ = keys[j, "scale"]
        assert np.abs(tin - pose.scl[:, j] * pose.svl[:, j]).max() < 1e-5


def test_cubic_tangents_agree_with_central_differences_of_the_keys(blend_run):
    # Independent of the velocities: the keys' own central differences, over each whole track.  Mocap at 120 Hz
    # is not smooth at one frame (fingers), so the bound is loose; a wrong convention (a right-multiplied angular
    # velocity, a wrong component order) is off by the size of the motion itself.
    file, _, skel = blend_run
    keys, dt = _keys(file), 1 / 120
    worst = {}
    for path in ("translation", "rotation"):
        for j in range(len(skel)):
            value, tangent, _ = keys[j, path]
            fd = (value[2:] - value[:-2]) / (2 * dt)
            if np.linalg.norm(fd) > 1e-3 * len(fd):
                worst[path, skel.names[j]] = np.linalg.norm(tangent[1:-1] - fd) / np.linalg.norm(fd)
    assert max(worst.values()) < 0.1, max(worst.items(), key=lambda kv: kv[1])
    assert sum(path == "rotation" for path, _ in worst) >= 20  # most joints turn


def test_cli_writes_gltf_with_its_bin_and_linear_on_request(tmp_path, capsys):
    out = tmp_path / "blend.gltf"
    assert main(["run", str(graphs.path("blend")), "--frames", "9", "--out", str(out), "--gltf-linear"]) == 0
    assert f"wrote {out} and {tmp_path / 'blend.bin'}" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blend.bin", "blend.gltf"]
    doc = json.loads(out.read_text())
    assert doc["buffers"][0]["uri"] == "blend.bin"
    assert {s["interpolation"] for s in doc["animations"][0]["samplers"]} == {"LINEAR"}
    skel, clip = ag.load_gltf(out)
    assert clip.frames == 9 and len(skel) == 31


def test_cli_keys_every_nth_frame(tmp_path, blend_run):
    _, pose, _ = blend_run
    out = tmp_path / "b.glb"
    assert main(["run", str(graphs.path("blend")), "--frames", "121", "--dt", repr(1 / 120), "--gltf-every", "4",
                 "--out", str(out)]) == 0
    _, clip = ag.load_gltf(out)
    assert clip.frames == 31 and clip.dt == pytest.approx(4 / 120)
    assert np.abs(clip.pos - pose.pos[::4]).max() < 1e-5


# ---------------------------------------------------------------- hand-made files


def make_gltf(nodes, joints, channels, extra=None):
    """A glTF document (data: URI buffer) of ``nodes``, a skin of ``joints`` and one animation of ``channels``:
    [(node, path, interpolation, times, values)] (values as glTF stores them: x, y, z, w rotations)."""
    blob, accessors, views = b"", [], []

    def add(array, kind):
        nonlocal blob
        data = np.asarray(array, "<f4").tobytes()
        views.append({"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)})
        blob += data
        accessors.append({"bufferView": len(views) - 1, "componentType": 5126, "count": len(array), "type": kind})
        return len(accessors) - 1

    samplers, chans = [], []
    for node, path, interp, times, values in channels:
        width = 4 if path == "rotation" else 3
        samplers.append({"input": add(np.asarray(times)[:, None], "SCALAR"),
                         "output": add(np.asarray(values).reshape(-1, width), f"VEC{width}"), "interpolation": interp})
        chans.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": path}})
    doc = {"asset": {"version": "2.0"}, "nodes": nodes, "skins": [{"joints": joints}],
           "animations": [{"samplers": samplers, "channels": chans}], "accessors": accessors, "bufferViews": views,
           "buffers": [{"byteLength": len(blob), "uri": "data:application/octet-stream;base64,"
                        + base64.b64encode(blob).decode()}]}
    doc.update(extra or {})
    return doc


def write(tmp_path, doc, name="x.gltf"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_loader_samples_step_linear_and_cubic_as_the_spec_says(tmp_path):
    # Node 1 is no joint: its rest transform (a half turn about z, 1 m up) folds into joint 2's.
    q90y = axis_angle([0, 1, 0], np.pi / 2)
    nodes = [{"name": "root", "children": [1]},
             {"name": "helper", "translation": [0, 1, 0], "rotation": [0, 0, 1, 0], "children": [2]},
             {"name": "tip", "translation": [1, 0, 0]}]
    times = np.linspace(0, 1, 11)  # 0.1 s apart: the frame time
    channels = [
        (0, "translation", "LINEAR", times, np.c_[times, 2 * times, np.zeros(11)]),
        (0, "rotation", "LINEAR", [0, 1], [[0, 0, 0, 1], list(q90y[1:]) + [q90y[0]]]),
        (2, "rotation", "STEP", [0, 0.55], [[0, 0, 0, 1], [1, 0, 0, 0]]),
        # Cubic scale: value 1 -> 3 over 1 s, out tangent 4 at 0, in tangent 0 at 1 (per second).
        (2, "scale", "CUBICSPLINE", [0, 1], [[0, 0, 0], [1, 1, 1], [4, 4, 4], [0, 0, 0], [3, 3, 3], [9, 9, 9]]),
    ]
    skel, clip = ag.load_gltf(write(tmp_path, make_gltf(nodes, [0, 2], channels)))
    assert skel.names == ["root", "tip"] and list(skel.parents) == [-1, 0]
    assert np.allclose(skel.offsets[1], [-1, 1, 0], atol=1e-6)  # (1, 0, 0) turned half about z, then 1 m up
    assert clip.frames == 11 and clip.dt == pytest.approx(0.1)
    assert np.allclose(clip.pos[:, 0], np.c_[times, 2 * times, np.zeros(11)], atol=1e-6)
    # Slerp at 0.5 s: 45 degrees about y.
    assert angles(clip.rot[5, 0], axis_angle([0, 1, 0], np.pi / 4)) < 1e-6
    # Step: the first key until 0.55 s (frames 0-5), then the second, after the helper's half turn about z.
    z180 = axis_angle([0, 0, 1], np.pi)
    assert angles(clip.rot[:6, 1], z180).max() < 1e-6
    assert angles(clip.rot[6:, 1], qmul(z180, [0, 1, 0, 0])).max() < 1e-6
    # Hermite at s = 0.5, h = 1: 0.5 * 1 + 0.125 * 4 + 0.5 * 3 - 0.125 * 0 = 2.5.
    assert clip.scl[5, 1] == pytest.approx([2.5] * 3, abs=1e-6)
    assert clip.scl[0, 1] == pytest.approx([1] * 3) and clip.scl[10, 1] == pytest.approx([3] * 3)


def test_loader_reads_a_matrix_node_and_normalized_short_rotations(tmp_path):
    m = np.eye(4)
    m[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]  # 90 degrees about z
    m[:3, 3] = [0.5, 0, 0]
    nodes = [{"name": "a", "matrix": list(m.T.ravel()), "children": [1]}, {"name": "b", "translation": [0, 1, 0]}]
    doc = make_gltf(nodes, [0, 1], [(1, "translation", "LINEAR", [0, 1], [[0, 1, 0], [0, 2, 0]])])
    shorts = np.array([[0, 0, 0, 32767], [32767, 0, 0, 0]], "<i2").tobytes()
    doc["bufferViews"].append({"buffer": 1, "byteLength": 16})
    doc["buffers"].append({"byteLength": 16, "uri": "data:;base64," + base64.b64encode(shorts).decode()})
    doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5122, "normalized": True,
                             "count": 2, "type": "VEC4"})
    doc["animations"][0]["samplers"].append({"input": 0, "output": len(doc["accessors"]) - 1})
    doc["animations"][0]["channels"].append({"sampler": 1, "target": {"node": 1, "path": "rotation"}})
    skel, clip = ag.load_gltf(write(tmp_path, doc))
    assert np.allclose(clip.pos[0, 0], [0.5, 0, 0]) and angles(clip.rot[0, 0], axis_angle([0, 0, 1], np.pi / 2)) < 1e-6
    world = fk(ag.Pose(clip.pos, clip.rot), skel.parents).pos
    assert np.allclose(world[0, 1], [-0.5, 0, 0], atol=1e-6) and np.allclose(world[-1, 1], [-1.5, 0, 0], atol=1e-6)
    assert angles(clip.rot[-1, 1], [0, 1, 0, 0]) < 1e-4


# ---------------------------------------------------------------- bad input


def _good(tmp_path):
    nodes = [{"name": "a", "children": [1]}, {"name": "b", "translation": [0, 1, 0]}]
    return make_gltf(nodes, [0, 1], [(1, "translation", "LINEAR", [0, 1], [[0, 1, 0], [0, 2, 0]])])


def _nan_buffer(doc):
    blob = np.array([0, 1, 0, 1, 0, np.nan, 0, 2, 0], "<f4").tobytes()  # times then values
    doc["buffers"][0] = {"byteLength": len(blob), "uri": "data:;base64," + base64.b64encode(blob).decode()}
    doc["bufferViews"] = [{"buffer": 0, "byteLength": 8}, {"buffer": 0, "byteOffset": 8, "byteLength": 24}]


BAD_FILES = {
    "no skin": (lambda d: d.pop("skins"), "skins"),
    "missing buffer file": (lambda d: d["buffers"][0].update(uri="gone.bin"), "buffers[0].uri"),
    "buffer shorter than its byteLength": (lambda d: d["buffers"][0].update(byteLength=10 ** 6), "buffers[0]"),
    "broken base64": (lambda d: d["buffers"][0].update(uri="data:;base64,@@@@"), "buffers[0].uri"),
    "accessor out of range": (lambda d: d["accessors"][1].update(count=1000), "accessors[1]"),
    "view past its buffer": (lambda d: d["bufferViews"][1].update(byteOffset=10 ** 5), "bufferViews[1]"),
    "channel on a missing sampler": (lambda d: d["animations"][0]["channels"][0].update(sampler=9),
                                     "animations[0].channels[0].sampler"),
    "non-finite value": (_nan_buffer, "accessors[1]"),
    "required extension": (lambda d: d.update(extensionsRequired=["EXT_meshopt_compression"]),
                           "extensionsRequired[0]"),
    "glTF 1": (lambda d: d["asset"].update(version="1.0"), "asset.version"),
    "input of the wrong type": (lambda d: d["animations"][0]["samplers"][0].update(input=1),
                                "accessors[1] (animations[0].samplers[0].input)"),
    "times going back": (lambda d: d.update(make_gltf(d["nodes"], [0, 1], [
        (1, "rotation", "LINEAR", [1, 0], [[0, 0, 0, 1], [0, 0, 0, 1]])])), "animations[0].samplers[0].input"),
    "too few output values": (lambda d: d.update(make_gltf(d["nodes"], [0, 1], [
        (1, "scale", "CUBICSPLINE", [0, 1], [[1, 1, 1], [1, 1, 1]])])), "animations[0].samplers[0].output"),
    "joint index out of range": (lambda d: d["skins"][0]["joints"].append(7), "skins[0].joints[2]"),
    "cycle of children": (lambda d: d["nodes"][1].update(children=[0]), "nodes[0]"),
    "zero rotation": (lambda d: d["nodes"][0].update(rotation=[0, 0, 0, 0]), "nodes[0].rotation"),
    "unknown interpolation": (lambda d: d["animations"][0]["samplers"][0].update(interpolation="SMOOTH"),
                              "interpolation"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_is_one_line_naming_file_and_element_exit_2(tmp_path, capsys, case):
    spoil, element = BAD_FILES[case]
    doc = _good(tmp_path)
    spoil(doc)
    path = write(tmp_path, doc)
    with pytest.raises(GLTFError) as err:
        ag.load_gltf(path)
    assert str(path) in str(err.value) and element in str(err.value) and "\n" not in str(err.value)
    assert main(["info", str(path)]) == 2
    out, text = capsys.readouterr()
    assert out == "" and text.count("\n") == 1 and str(path) in text and element in text


def _glb(doc, blob=b""):
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    blob += b"\0" * (-len(blob) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + (struct.pack("<II", len(blob), 0x004E4942) + blob
                                                                if blob else b"")
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body


def test_cut_glb_is_one_error(tmp_path):
    skel, clip = ag.data.load("walk")
    whole = ag.save_gltf(tmp_path / "w.glb", skel, clip)[0].read_bytes()
    for cut in (5, 16, 100, len(whole) // 2, len(whole) - 1):
        (tmp_path / "cut.glb").write_bytes(whole[:cut])
        with pytest.raises(GLTFError, match="cut.glb"):
            ag.load_gltf(tmp_path / "cut.glb")


# ---------------------------------------------------------------- fuzz: loads or one GLTFError, never a bare exception


def _loads_or_gltf_error(path):
    try:
        skel, clip = ag.load_gltf(path)
    except GLTFError as e:
        assert "\n" not in str(e) and str(path) in str(e)
        return
    assert np.isfinite(clip.pos).all() and np.isfinite(clip.rot).all() and len(skel) == clip.pos.shape[1]


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(data=st.binary(max_size=400))
def test_fuzz_any_bytes(tmp_path, data):
    path = tmp_path / "f.glb"
    path.write_bytes(data)
    _loads_or_gltf_error(path)


def _json_values():
    return st.recursive(st.none() | st.booleans() | st.integers(-3, 10 ** 6) | st.floats(allow_nan=False)
                        | st.text(max_size=8), lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=8)


def _paths(value, prefix=()):
    """Every (path) to a value inside a JSON tree."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


@FUZZ
@given(data=st.data())
def test_fuzz_edits_of_a_good_file(tmp_path, data):
    skel = ag.Skeleton(["a", "b", "c"], [-1, 0, 1], [[0, 0, 0], [0, 1, 0], [0, 1, 0]])
    rng = np.random.default_rng(3)
    clip = ag.Clip(skel, rng.normal(size=(3, 3, 3)), np.tile([1.0, 0, 0, 0], (3, 3, 1)), dt=0.1)
    from animgraph.gltf import gltf_document

    doc, blob = gltf_document(skel, clip)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        where = data.draw(st.sampled_from(paths))
        parent = doc
        for k in where[:-1]:
            parent = parent[k]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[where[-1]]
        else:
            parent[where[-1]] = data.draw(_json_values())
    if data.draw(st.booleans()):
        blob = bytearray(blob)
        for _ in range(data.draw(st.integers(1, 8))):
            if blob:
                blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
        blob = bytes(blob)
    path = tmp_path / "e.glb"
    path.write_bytes(_glb(doc, blob))
    _loads_or_gltf_error(path)


# ---------------------------------------------------------------- export: nothing half-written


def test_gltf_whose_bin_cannot_be_written_leaves_nothing(tmp_path, capsys):
    (tmp_path / "x.bin").mkdir()  # in the way of the buffer file
    status = main(["run", str(graphs.path("blend")), "--frames", "3", "--out", str(tmp_path / "x.gltf")])
    out, err = capsys.readouterr()
    assert status == 2 and err.count("\n") == 1 and "x.bin" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.bin"]


@pytest.mark.parametrize("argv, words", [
    (["--gltf-every", "0"], ["--gltf-every", "got 0"]),
    (["--out", "{d}/none/x.glb"], ["none", "no such directory"]),
    (["--gltf-linear", "--out", "{d}/x.bvh"], ["--gltf-linear", "glTF output"]),
    (["--gltf-every", "2", "--out", "{d}/x.npz"], ["--gltf-every 2", "glTF output"]),
])
def test_bad_export_options_exit_2_with_one_line(tmp_path, capsys, argv, words):
    argv = [a.replace("{d}", str(tmp_path)) for a in argv]
    status = _main(["run", str(graphs.path("blend")), "--frames", "3", *argv]
                  + ([] if "--out" in argv else ["--out", str(tmp_path / "x.glb")]))
    _, err = capsys.readouterr()
    assert status == 2 and err.count("\n") == 1 and all(w in err for w in words)
    assert list(tmp_path.iterdir()) == []


def _main(argv):
    try:
        return main(argv)
    except SystemExit as stop:  # options refused by the argument parser
        return stop.code


def test_save_gltf_refuses_other_suffixes_and_bad_velocities(tmp_path):
    skel, clip = ag.data.load("walk")
    with pytest.raises(ValueError, match=".glb or .gltf"):
        ag.save_gltf(tmp_path / "x.fbx", skel, clip)
    with pytest.raises(ValueError, match="vel"):
        ag.save_gltf(tmp_path / "x.glb", skel, clip, vel=np.zeros((2, 3)))
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- graph assets


def test_graph_asset_names_a_glb(tmp_path):
    skel, clip = ag.data.load("walk")
    ag.save_gltf(tmp_path / "walk.glb", skel, clip)
    graph = {"format": "animgraph.graph", "version": 2, "assets": {"walk": "walk.glb"},
             "nodes": [{"id": "s", "type": "sample", "clip": "walk"}, {"id": "out", "type": "output"}],
             "links": [["s.pose", "out.pose"]]}
    (tmp_path / "g.json").write_text(json.dumps(graph))
    inst = ag.compile(tmp_path / "g.json").instance()
    played = np.stack([inst.step(clip.dt)["out"].pos for _ in range(5)])
    offset = int(np.argmin([np.abs(played[0] - clip.pos[f]).max() for f in range(3)]))  # frame 0 or 1 first
    assert np.abs(played[:, 1:] - clip.pos[offset:offset + 5, 1:]).max() < 1e-4  # below the root
    graph["version"] = 1
    (tmp_path / "g1.json").write_text(json.dumps(graph))
    with pytest.raises(ag.GraphError, match="version 2"):
        ag.compile(tmp_path / "g1.json")


def test_huge_numbers_in_the_file_are_one_error(tmp_path):
    for spoil, element in ((lambda d: d["buffers"][0].update(uri="x.bin", byteLength=10 ** 30), "buffers[0]"),
                           (lambda d: d["accessors"][0].update(count=10 ** 30), "accessors[0]"),
                           (lambda d: d["bufferViews"][0].update(byteOffset=10 ** 30), "bufferViews[0]")):
        doc = _good(tmp_path)
        spoil(doc)
        (tmp_path / "x.bin").write_bytes(b"\0" * 64)
        with pytest.raises(GLTFError, match=element.replace("[", r"\[")):
            ag.load_gltf(write(tmp_path, doc))


def test_keys_far_apart_in_time_are_refused_not_allocated(tmp_path):
    nodes = [{"name": "a", "children": [1]}, {"name": "b"}]
    doc = make_gltf(nodes, [0, 1], [(1, "translation", "LINEAR", [0, 1e-3, 2e-3, 1e6], [[0, 0, 0]] * 4)])
    with pytest.raises(GLTFError, match="too many"):
        ag.load_gltf(write(tmp_path, doc))


def test_tangents_without_velocities_are_exact_on_a_steady_turn(tmp_path):
    # A steady turn (0.5, -1, 2) rad/s and a steady drift (1, 0, -2) m/s: central differences are exact there.
    omega, drift, dt = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.0, -2.0]), 1 / 30
    skel = ag.Skeleton(["a", "b"], [-1, 0], [[0, 0, 0], [0, 1, 0]])
    t = np.arange(12) * dt
    turn = np.stack([axis_angle(omega, np.linalg.norm(omega) * x) for x in t])
    rot = np.stack([turn, np.tile([1.0, 0, 0, 0], (12, 1))], axis=1)
    pos = np.stack([t[:, None] * drift, np.tile([0, 1.0, 0], (12, 1))], axis=1)
    ag.save_gltf(tmp_path / "turn.glb", skel, ag.Clip(skel, pos, rot, dt=dt))
    keys = _keys(tmp_path / "turn.glb")
    assert np.allclose(keys[0, "translation"][1], drift, atol=1e-5)
    dq = 0.5 * qmul(np.c_[np.zeros(12), np.tile(omega, (12, 1))], turn)
    assert np.allclose(keys[0, "rotation"][1], dq[:, [1, 2, 3, 0]], atol=1e-5)
    assert np.allclose(keys[1, "rotation"][1], 0.0) and np.allclose(keys[0, "scale"][1], 0.0)


@pytest.mark.parametrize("axis", [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0.3, -0.2, 0.9]])
@pytest.mark.parametrize("turn", [0.0, 1.0, np.pi - 1e-3, np.pi])
def test_node_matrix_reads_back_as_its_rotation(tmp_path, axis, turn):
    # Every branch of the matrix-to-quaternion conversion (half turns about each axis included).
    q = axis_angle(axis, turn)
    m = gltf_read.matrix(np.array([[0.1, 0.2, 0.3]]), q[None, [1, 2, 3, 0]], np.array([[1.0, 2.0, 0.5]]))[0]
    nodes = [{"name": "a", "matrix": list(m.T.ravel()), "children": [1]}, {"name": "b"}]
    doc = make_gltf(nodes, [0, 1], [(1, "translation", "LINEAR", [0, 1], [[0, 1, 0], [0, 2, 0]])])
    _, clip = ag.load_gltf(write(tmp_path, doc))
    assert angles(clip.rot[0, 0], q) < 1e-6
    assert np.allclose(clip.pos[0, 0], [0.1, 0.2, 0.3]) and np.allclose(clip.scl[0, 0], [1.0, 2.0, 0.5])


@pytest.mark.parametrize("call", [
    lambda t: ag.save_gltf(None, *ag.data.load("walk")),
    lambda t: ag.save_gltf(t / "x.glb", "skeleton", ag.data.load("walk")[1]),
    lambda t: ag.save_gltf(t / "x.glb", ag.Skeleton(["a"], [-1], [[0, 0, 0]]), ag.data.load("walk")[1]),
    lambda t: ag.load_gltf(None),
    lambda t: ag.load_gltf(t / "w.glb", animation=1.5),
])
def test_bad_api_arguments_are_value_errors(tmp_path, call):
    skel, clip = ag.data.load("walk")
    ag.save_gltf(tmp_path / "w.glb", skel, clip)
    with pytest.raises(ValueError):
        call(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.glb"]
