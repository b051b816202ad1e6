"""glTF export checked by the tools people use: the Khronos glTF-Validator, three.js's GLTFLoader, Blender.

``.ci/install-gltf-tools`` installs them (npm packages into ``.ci/gltf-tools``, Debian's blender).
Each test skips with the reason when its tool is missing, and fails under ``CI=true``.
Every shipped graph runs at 120 Hz (and at 480 Hz, which puts every 4th frame on the clips' own
120 Hz frames); every 4th frame is a key.  Its first character's pose goes out through ``animgraph
run``'s own code path (``run_graph_file``); the same run through the API gives the reference frames.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.ops import fk
from animgraph.runner import pick_pose_output, run_graph_file

import gltf_read

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).with_name("gltf_tools")
NODE_MODULES = Path(os.environ.get("ANIMGRAPH_GLTF_TOOLS", ROOT / ".ci" / "gltf-tools")) / "node_modules"
RATES = (120, 480)  # Hz: the runtime's frame rate; 480 Hz every 4th frame puts the keys on the clips' 120 Hz frames
SECONDS = 2
EVERY = 4  # every 4th frame a key
GRAPHS = graphs.names()


def _missing(reason):
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI=true but {reason} (.ci/install-gltf-tools installs it)")
    pytest.skip(f"{reason} (run .ci/install-gltf-tools)")


def _need_node_package(name):
    if shutil.which("node") is None:
        _missing("node is not installed")
    if not (NODE_MODULES / name / "package.json").is_file():
        _missing(f"the npm package {name} is not in {NODE_MODULES}")


def _need_blender():
    if shutil.which("blender") is None:
        _missing("blender is not installed")


@pytest.fixture
def validator():
    """Skips (fails under CI=true) before any export when the validator is missing."""
    _need_node_package("gltf-validator")


@pytest.fixture
def three():
    """Skips (fails under CI=true) before any export when three.js is missing."""
    _need_node_package("three")


@pytest.fixture
def blender():
    """Skips (fails under CI=true) before any export when Blender is missing."""
    _need_blender()


@functools.lru_cache(maxsize=None)
def reference(graph, rate=120):
    """(skeleton, global positions (F, J, 3), global rotations (F, J, 4) w-first) of the graph's first pose output,
    first character, at ``rate`` Hz for ``SECONDS``: the runtime's own frames."""
    plan = ag.compile(graphs.path(graph), batch=1)
    nid = pick_pose_output(plan)
    inst = plan.instance()
    frames = [inst.step(1.0 / rate)[nid].copy() for _ in range(SECONDS * rate + 1)]  # batch 1: (J, ...) arrays
    pose = ag.Pose(*(np.stack([getattr(p, f) for p in frames]) for f in ag.pose.FIELDS))
    if plan.checked.spaces.get((nid, "pose", "out")) != "global":
        pose = fk(pose, plan.skeleton.parents)
    return plan.skeleton, pose.pos.astype(np.float64), pose.rot.astype(np.float64)


def export(graph, out, rate=120, linear=False):
    """Write the graph's run at ``rate`` Hz as glTF through ``animgraph run``'s code path, every 4th frame a key."""
    run_graph_file(str(graphs.path(graph)), SECONDS * rate + 1, dt=1.0 / rate, out=str(out), progress=False,
                   gltf_linear=linear, gltf_every=EVERY)
    return out


def skipped(rate):
    """The frames between keys and their times (s) at ``rate`` Hz."""
    frames = [f for f in range(SECONDS * rate + 1) if f % EVERY]
    return frames, np.array(frames) / rate


def angle(a, b):
    """Angles (rad) between unit quaternions ``a`` and ``b`` (..., 4), either sign: 4 asin(|a - b| / 2)."""
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    b = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0, -b, b)
    return 4.0 * np.arcsin(np.clip(np.linalg.norm(a - b, axis=-1) / 2.0, 0.0, 1.0))


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """{(graph, rate, kind): file} of every shipped graph at each rate: 'cubic' and 'linear' .glb, and .gltf."""
    folder = tmp_path_factory.mktemp("gltf")
    files = {}
    for g in GRAPHS:
        for rate in RATES:
            files[g, rate, "cubic"] = export(g, folder / f"{g}-{rate}.glb", rate)
            files[g, rate, "linear"] = export(g, folder / f"{g}-{rate}-linear.glb", rate, linear=True)
        files[g, 120, "gltf"] = export(g, folder / f"{g}-120.gltf")
    return files


@pytest.mark.slow(minutes=1)
def test_validator_reports_no_error_and_no_warning_on_every_shipped_graph(validator, exports):
    files = [str(f) for f in exports.values()]
    run = subprocess.run(["node", str(SCRIPTS / "validate.cjs"), str(NODE_MODULES), *files], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    reports = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["file"] for r in reports] == files
    for r in reports:
        print(f"{Path(r['file']).name}: {r['errors']} errors, {r['warnings']} warnings, {r['infos']} infos")
        assert (r["errors"], r["warnings"]) == (0, 0), r["messages"][:10]


@pytest.mark.slow(minutes=0.5)
def test_validator_passes_odd_skeletons(validator, tmp_path):
    # Two roots (a common root node above them), non-unit scales, one joint and one frame.
    rng = np.random.default_rng(7)
    skel = ag.Skeleton(["a", "b", "c", "d", "e"], [-1, 0, 1, -1, 3], rng.normal(size=(5, 3)))
    rot = rng.normal(size=(9, 5, 4))
    rot /= np.linalg.norm(rot, axis=-1, keepdims=True)
    clip = ag.Clip(skel, rng.normal(size=(9, 5, 3)), rot, np.exp(rng.normal(scale=0.3, size=(9, 5, 3))), dt=1 / 30)
    one = ag.Skeleton(["a"], [-1], [[0, 0, 0]])
    files = [*ag.save_gltf(tmp_path / "roots.glb", skel, clip)[:1], *ag.save_gltf(tmp_path / "linear.glb", skel, clip,
                                                                              cubic=False),
             *ag.save_gltf(tmp_path / "one.glb", one, ag.Clip(one, np.zeros((1, 1, 3)), np.tile([1.0, 0, 0, 0],
                                                                                              (1, 1, 1))))]
    run = subprocess.run(["node", str(SCRIPTS / "validate.cjs"), str(NODE_MODULES), *map(str, files)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    for line in run.stdout.splitlines():
        r = json.loads(line)
        assert (r["errors"], r["warnings"]) == (0, 0), (r["file"], r["messages"][:10])


@pytest.mark.slow(minutes=0.5)
def test_validator_finds_the_error_in_a_cut_file(validator, tmp_path):
    # The validator is alive: a file cut short is an error to it.
    skel, clip = ag.data.load("walk")
    whole = ag.save_gltf(tmp_path / "walk.glb", skel, clip)[0].read_bytes()
    (tmp_path / "cut.glb").write_bytes(whole[: len(whole) // 2])
    run = subprocess.run(["node", str(SCRIPTS / "validate.cjs"), str(NODE_MODULES), str(tmp_path / "cut.glb")],
                         capture_output=True, text=True, timeout=300)
    assert json.loads(run.stdout)["errors"] >= 1


def three_sample(file, times):
    """three.js's world joint positions (T, J, 3) and rotations (T, J, 4) w-first of ``file`` at ``times`` (s)."""
    run = subprocess.run(["node", str(SCRIPTS / "three_sample.mjs"), str(NODE_MODULES), str(file),
                          *[repr(float(t)) for t in times]], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(run.stdout)
    return data["names"], np.array(data["pos"]), np.array(data["rot"])[..., [3, 0, 1, 2]]


def rotation_angle(q, m):
    """Angles (rad) between rotations ``q`` (..., 4) w-first and the rotation parts of matrices ``m`` (..., 4, 4)."""
    r = gltf_read.matrix(np.zeros(q.shape[:-1] + (3,)), q[..., [1, 2, 3, 0]], np.ones(q.shape[:-1] + (3,)))[..., :3, :3]
    a = m[..., :3, :3] / np.linalg.norm(m[..., :3, :3], axis=-2, keepdims=True)
    return 2.0 * np.arcsin(np.clip(np.linalg.norm(r - a, axis=(-2, -1)) / (2.0 * np.sqrt(2.0)), 0.0, 1.0))


@pytest.mark.slow(minutes=1.5)
def test_three_js_samples_the_files_own_curves_between_keys(three, exports):
    # three.js's GLTFLoader reads our keys and tangents as the glTF spec's curves (computed here independently).
    worst = np.zeros(2)
    for (graph, rate, kind), file in exports.items():
        if kind == "gltf":
            continue
        _, times = skipped(rate)
        names, pos, rot = three_sample(file, times)
        doc, accessor = gltf_read.read_glb(file)
        mats = gltf_read.world(doc, gltf_read.curves(doc, accessor, times), len(times))
        spec = np.stack([mats[j] for j in doc["skins"][0]["joints"]], axis=1)
        errors = np.abs(pos - spec[..., :3, 3]).max(), rotation_angle(rot, spec).max()
        assert errors[0] < 1e-5 and errors[1] < 1e-5, (graph, rate, kind, errors)
        worst = np.maximum(worst, errors)
    assert worst[0] > 0.0  # compared something
    print(f"three.js against the spec's curves of the files: max {worst[0]:.1e} m, {worst[1]:.1e} rad")


@pytest.mark.slow(minutes=2)
def test_three_js_between_keys_against_the_runtime_frames(three, exports, capsys):
    # Cubic keys with the exact velocities as tangents against LINEAR at the same keys, at the frames between keys.
    rows = []
    for rate in RATES:
        frames, times = skipped(rate)
        for graph in GRAPHS:
            skel, pos, rot = reference(graph, rate)
            row = [graph, rate]
            for kind in ("cubic", "linear"):
                names, tpos, trot = three_sample(exports[graph, rate, kind], times)
                assert names == skel.names
                ep, er = np.abs(tpos - pos[frames]).max(axis=-1), angle(trot, rot[frames])
                row += [np.median(ep), ep.max(), np.median(er), er.max()]
            rows.append(row)
            cubic, linear = row[2:6], row[6:10]
            assert cubic[0] <= linear[0] + 1e-6 and cubic[2] <= linear[2] + 1e-6, row
            if rate == 480 and not synced(graph):
                # Keys on the clips' own frames: the curve between them is the tangents' cubic.  (A sync group's
                # members play at times its phase gives, integrated step by step: not on their clips' frames.)
                assert cubic[0] < 1e-5 and cubic[2] < 1e-5, row
    with capsys.disabled():
        print(f"\nthree.js at the frames between keys (every {EVERY}th frame a key) against the runtime's frames: "
              "median / max error")
        for graph, rate, *e in rows:
            print(f"  {graph:20s} {rate} Hz  cubic {e[0]:.0e}/{e[1]:.0e} m {e[2]:.0e}/{e[3]:.0e} rad   "
                  f"linear {e[4]:.0e}/{e[5]:.0e} m {e[6]:.0e}/{e[7]:.0e} rad")


def synced(graph):
    """Whether shipped graph ``graph`` plays samples in a sync group (``animgraph.sync``)."""
    plan = ag.compile(graphs.path(graph))
    return any(node.type == "sync_group" for node in plan.nodes.values())


BLENDER_PROBE = SCRIPTS / "blender_probe.py"


def blender_heads(files):
    """{file: (bone names, heads (K, J, 3) in glTF axes at the keys, key times)} from Blender's glTF importer."""
    out = Path(files[0]).with_suffix(".heads.json")
    run = subprocess.run(["blender", "-b", "--factory-startup", "--python-exit-code", "1", "--python",
                          str(BLENDER_PROBE), "--", str(out), *map(str, files)], capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0 and out.is_file(), (run.stdout[-3000:], run.stderr[-3000:])
    data = json.loads(out.read_text())
    result = {}
    for file, d in data.items():
        assert d["armatures"] == 1, (file, d["armatures"])
        heads = np.array(d["heads"])  # Blender z-up: (x, y, z) = glTF (x, -z, y)
        result[file] = (d["bones"], np.stack([heads[..., 0], heads[..., 2], -heads[..., 1]], axis=-1),
                        np.array(d["times"]))
    return result


@pytest.mark.slow(minutes=3)
def test_blender_imports_one_armature_whose_heads_follow_the_joints_at_the_keys(blender, exports, capsys):
    files = [exports[g, 120, "cubic"] for g in GRAPHS]
    heads = blender_heads(files)
    rows = []
    for graph, file in zip(GRAPHS, files):
        skel, pos, _ = reference(graph)
        bones, at_keys, times = heads[str(file)]
        assert sorted(bones) == sorted(skel.names)
        keys = np.round(times * 120).astype(int)
        assert np.allclose(keys / 120, times, atol=1e-6) and (keys % EVERY == 0).all()
        order = [bones.index(n) for n in skel.names]
        error = np.abs(at_keys[:, order] - pos[keys]).max()
        rows.append((graph, len(keys), error))
        assert error < 1e-4, (graph, error)
    with capsys.disabled():
        print("\nBlender's glTF import: bone heads vs the runtime's joints at the keys")
        for graph, n, error in rows:
            print(f"  {graph:22s} {n} keys, max error {error:.1e} m")


@pytest.mark.slow(minutes=1)
def test_a_gltf_blender_wrote_from_a_bundled_bvh_loads_and_plays(blender, tmp_path):
    skel, clip = ag.data.load("walk")
    ag.save_bvh(tmp_path / "walk.bvh", skel, clip)
    run = subprocess.run(["blender", "-b", "--factory-startup", "--python-exit-code", "1", "--python",
                          str(SCRIPTS / "blender_bvh_to_glb.py"), "--", str(tmp_path / "walk.bvh"),
                          str(tmp_path / "walk.glb")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    skel2, clip2 = ag.load_gltf(tmp_path / "walk.glb")
    assert sorted(skel2.names) == sorted(skel.names)
    assert clip2.frames == clip.frames and clip2.dt == pytest.approx(clip.dt)
    # Blender gives its bones other rest orientations: the world joint positions are what must agree.
    order = [skel2.names.index(n) for n in skel.names]
    world = fk(ag.Pose(clip.pos, clip.rot, clip.scl), skel.parents).pos
    world2 = fk(ag.Pose(clip2.pos, clip2.rot, clip2.scl), skel2.parents).pos[:, order]
    assert np.abs(world2 - world).max() < 1e-4
    # It plays: a graph samples it as an asset.
    graph = {"format": "animgraph.graph", "version": 2, "assets": {"walk": "walk.glb"},
             "nodes": [{"id": "s", "type": "sample", "clip": "walk", "loop": True}, {"id": "out", "type": "output"}],
             "links": [["s.pose", "out.pose"]]}
    (tmp_path / "g.json").write_text(json.dumps(graph))
    inst = ag.compile(tmp_path / "g.json").instance()
    poses = [inst.step(clip.dt)["out"].copy() for _ in range(20)]
    assert all(np.isfinite(p.pos).all() and np.isfinite(p.vel).all() for p in poses)
    assert angle(poses[-1].rot.astype(float), poses[0].rot.astype(float)).max() > 0.05  # it moves
