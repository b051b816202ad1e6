"""The compiled executor and the runtime: against ag.ops composed by hand, batches, inputs, edits,
reset and teleport.  Every test shares one compiled executor (animgraph.executor.load caches it)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import numba
from numba import njit
from numba.core.errors import TypingError

import animgraph as ag
from animgraph.node import REGISTRY
from animgraph import executor, graphs, views
from animgraph.maths import qmul, qrot

DT = 1 / 60


def graph(nodes, links, assets=None):
    return ag.Graph.from_dict({"format": "animgraph.graph", "version": 1,
                               "assets": {"walk": "animgraph:walk", "jog": "animgraph:jog"} if assets is None else assets,
                               "nodes": nodes, "links": links})


@pytest.fixture(scope="module")
def clips():
    skel, walk = ag.data.load("walk")
    _, jog = ag.data.load("jog")
    return skel, walk, jog


def frozen(out):
    """A copy of step()'s outputs (they are views rewritten by the next step)."""
    return {k: v.copy() for k, v in out.items()}


def assert_pose(a, b, atol, fields=("pos", "rot", "scl", "vel", "ang", "svl")):
    for f in fields:
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), atol=atol, rtol=0, err_msg=f)


# Input time -> sample walk, input time -> sample jog, blend by input alpha, FK; local and global outputs.
BLEND_NODES = [
    {"id": "t", "type": "input", "signal": "scalar"},
    {"id": "alpha", "type": "input", "signal": "scalar", "default": 0.3},
    {"id": "walk", "type": "sample", "clip": "walk"},
    {"id": "jog", "type": "sample", "clip": "jog"},
    {"id": "mix", "type": "blend"},
    {"id": "fk", "type": "fk"},
    {"id": "local", "type": "output"},
    {"id": "glob", "type": "output"},
    {"id": "a_out", "type": "output", "signal": "scalar"},
]
BLEND_LINKS = [["t.value", "walk.time"], ["t.value", "jog.time"], ["walk.pose", "mix.a"], ["jog.pose", "mix.b"],
               ["alpha.value", "mix.alpha"], ["mix.pose", "fk.pose"], ["mix.pose", "local.pose"],
               ["fk.pose", "glob.pose"], ["alpha.value", "a_out.value"]]


def blend_by_hand(skel, walk, jog, t, t_rate, alpha, alpha_rate):
    a = ag.ops.sample(walk, t, mode="cubic", loop=True, rate=t_rate)
    b = ag.ops.sample(jog, t, mode="cubic", loop=True, rate=t_rate)
    local = ag.ops.blend(a, b, alpha, alpha_rate)
    return local, ag.ops.fk(local, skel.parents)


# ---------------------------------------------------------------- against ag.ops


def test_fk_bk_match_ops(clips):
    skel, walk, _ = clips
    nodes = [{"id": "frame", "type": "constant", "signal": "pose", "clip": "walk", "frame": 40},
             {"id": "fk", "type": "fk"}, {"id": "bk", "type": "bk"},
             {"id": "glob", "type": "output"}, {"id": "back", "type": "output"}]
    links = [["frame.pose", "fk.pose"], ["fk.pose", "bk.pose"], ["fk.pose", "glob.pose"], ["bk.pose", "back.pose"]]
    out = ag.compile(graph(nodes, links)).instance().step(DT)
    local = ag.Pose(walk.pos[40], walk.rot[40], walk.scl[40])
    glob = ag.ops.fk(local, skel.parents)
    assert_pose(out["glob"], glob, atol=0)  # the same kernels on the same float32 data
    assert_pose(out["back"], ag.ops.bk(glob, skel.parents), atol=0)


def test_sample_blend_fk_match_ops(clips):
    skel, walk, jog = clips
    inst = ag.compile(graph(BLEND_NODES, BLEND_LINKS)).instance()
    for t, alpha, alpha_rate in [(0.0, 0.3, 0.0), (0.51, 0.8, -1.5), (3.7, 0.05, 2.0)]:
        out = inst.step(DT, {"t": (t, 1.0), "alpha": (alpha, alpha_rate)})
        local, glob = blend_by_hand(skel, walk, jog, t, 1.0, alpha, alpha_rate)
        assert_pose(out["local"], local, atol=1e-6)
        assert_pose(out["glob"], glob, atol=1e-5)
        np.testing.assert_array_equal(out["a_out"], [alpha, alpha_rate])


# ---------------------------------------------------------------- batches


@pytest.mark.parametrize("lanes", (False, True))
def test_batch_of_64_matches_single_runs(clips, lanes):
    # The per-character executor gives a batch bit for bit what single runs give; the lane
    # executor (float32 lane maths where a node type has a tile kernel) within float32 rounding:
    # 1e-5 m and rad, and 1e-4 of the scale (at least 1) for the rates.
    def check(got, want):
        for f in ("pos", "rot", "scl", "vel", "ang", "svl"):
            a, b = getattr(got, f), np.broadcast_to(getattr(want, f), getattr(got, f).shape)
            atol = (1e-4 * max(1.0, float(np.abs(b).max())) if f in ("vel", "ang", "svl") else 1e-5) if lanes else 0
            np.testing.assert_allclose(a, b, atol=atol, rtol=0, err_msg=f)

    plan1 = ag.compile(graph(BLEND_NODES, BLEND_LINKS), batch=1)
    plan64 = ag.compile(graph(BLEND_NODES, BLEND_LINKS), batch=64)
    many = plan64.instance(lanes=lanes)
    assert many._call is not None and many.lanes == lanes
    one = plan1.instance()
    for frame in range(3):
        t = 0.2 + frame * DT
        ref = frozen(one.step(DT, {"t": (t, 1.0), "alpha": 0.6}))
        out = many.step(DT, {"t": (t, 1.0), "alpha": 0.6})
        for k in ("local", "glob"):
            check(out[k], ref[k])
    # Different inputs per character: each matches its own single run.
    rng = np.random.default_rng(4)
    ts, rates, alphas = rng.uniform(0, 2, 64), rng.uniform(0.5, 1.5, 64), rng.uniform(0, 1, 64)
    # (alpha's rate given: a rate from the change would differ, the single run's previous value being another's)
    out = frozen(many.step(DT, {"t": (ts, rates), "alpha": (alphas, 0.0)}))
    assert out["glob"].pos.shape == (64, len(clips[0]), 3) and out["a_out"].shape == (64, 2)
    for c in range(0, 64, 9):
        ref = one.step(DT, {"t": (float(ts[c]), float(rates[c])), "alpha": (float(alphas[c]), 0.0)})
        for k in ("local", "glob"):
            check(out[k][c], ref[k])


def test_own_clock_state_is_per_character(clips):
    nodes = [{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "fk", "type": "fk"}, {"id": "out", "type": "output"}]
    links = [["walk.pose", "fk.pose"], ["fk.pose", "out.pose"]]
    many = ag.compile(graph(nodes, links), batch=5).instance()
    times = np.array([0.0, 0.4, 1.1, 2.0, 2.3])
    many.reset(times)
    one = ag.compile(graph(nodes, links)).instance()
    for _ in range(2):
        out = frozen(many.step(DT))
    for c, t in enumerate(times):
        one.reset(t)
        one.step(DT)
        assert_pose(out["out"][c], one.step(DT)["out"], atol=0)


# ---------------------------------------------------------------- inputs


@pytest.fixture(scope="module")
def signals():
    nodes = [{"id": "w", "type": "input"}, {"id": "n", "type": "input", "signal": "int", "default": 3},
             {"id": "v", "type": "input", "signal": "vec3"}, {"id": "q", "type": "input", "signal": "quat"},
             {"id": "b", "type": "input", "signal": "bool"},
             {"id": "wo", "type": "output", "signal": "scalar"}, {"id": "no", "type": "output", "signal": "int"},
             {"id": "vo", "type": "output", "signal": "vec3"}, {"id": "qo", "type": "output", "signal": "quat"},
             {"id": "bo", "type": "output", "signal": "bool"}]
    links = [["w.value", "wo.value"], ["n.value", "no.value"], ["v.value", "vo.value"], ["q.value", "qo.value"],
             ["b.value", "bo.value"]]
    return graph(nodes, links, assets={})


def test_signal_inputs_reach_outputs(signals):
    inst = ag.compile(signals).instance()
    out = inst.step(DT)
    np.testing.assert_array_equal(out["wo"], [0, 0])
    np.testing.assert_array_equal(out["no"], [3])
    np.testing.assert_array_equal(out["qo"], [1, 0, 0, 0, 0, 0, 0])
    out = inst.step(DT, {"w": (0.5, -2.0), "v": ([1, 2, 3], [4, 5, 6]), "q": [0, 0, 2, 0], "b": True, "n": 7})
    np.testing.assert_array_equal(out["wo"], [0.5, -2.0])
    np.testing.assert_array_equal(out["vo"], [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(out["qo"], [0, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(out["bo"], [1])
    np.testing.assert_array_equal(out["no"], [7])
    out = inst.step(DT, {"w": 0.25})
    np.testing.assert_allclose(out["wo"], [0.25, -0.25 / DT]), "a value without a rate: the rate of its change"
    np.testing.assert_array_equal(inst.step(DT)["wo"], [0.25, 0.0]), "inputs are sticky (and then still)"


def test_int_and_bool_inputs_are_whole_numbers(signals):
    inst = ag.compile(signals).instance()
    out = inst.step(DT, {"n": 1.6, "b": 0.3})
    np.testing.assert_array_equal(out["no"], [2])
    np.testing.assert_array_equal(out["bo"], [1])
    out = inst.step(DT, {"n": [2.4], "b": [0.0]})
    np.testing.assert_array_equal(out["no"], [2])
    np.testing.assert_array_equal(out["bo"], [0])


def test_signal_inputs_per_character(signals):
    inst = ag.compile(signals, batch=3).instance()
    out = inst.step(DT, {"w": ([1.0, 2.0, 3.0], 0.5), "v": np.arange(9.0).reshape(3, 3)})
    np.testing.assert_array_equal(out["wo"], [[1, 0.5], [2, 0.5], [3, 0.5]])
    np.testing.assert_array_equal(out["vo"][:, :3], np.arange(9.0).reshape(3, 3))
    np.testing.assert_array_equal(out["vo"][:, 3:], 0)


@pytest.mark.parametrize(
    "inputs, words",
    [
        ({"w": float("nan")}, "not finite"),
        ({"w": (0.5, float("inf"))}, "not finite"),
        ({"v": [1.0, float("nan"), 0.0]}, "not finite"),
        ({"w": np.array([0.1, np.nan, 0.2])}, "not finite"),
        ({"v": [1.0, 2.0]}, "shape"),
        ({"w": np.zeros(4)}, "shape"),
        ({"n": (1, 2)}, "no rate"),
    ],
)
def test_bad_inputs_name_the_input(signals, inputs, words):
    inst = ag.compile(signals, batch=3).instance()
    with pytest.raises(ag.GraphError, match=words) as info:
        inst.step(DT, inputs)
    assert info.value.node == next(iter(inputs))


def test_unknown_input_and_bad_dt(signals):
    inst = ag.compile(signals).instance()
    with pytest.raises(ag.GraphError, match=r"unknown input 'x' \(inputs: b, n, q, v, w\)"):
        inst.step(DT, {"x": 1.0})
    with pytest.raises(ag.GraphError, match="dt"):
        inst.step(float("nan"))


@pytest.mark.parametrize("batch", [1, 19])
def test_a_step_shorter_than_dt_min_is_a_pause(signals, batch):
    """Below DT_MIN a step acts as 0: a jump's rate over 5e-324 s would overflow, and float32 lanes would see 0."""
    from animgraph.limits import DT_MIN

    outs = []
    for dt in (0.0, 5e-324, 0.5 * DT_MIN):
        inst = ag.compile(signals, batch=batch).instance()
        inst.step(DT, {"w": 0.5, "v": [1.0, 2.0, 3.0]})
        out = inst.step(dt, {"w": -7.0, "v": [4.0, -5.0, 6.0]})
        outs.append([np.array(out[k]) for k in ("wo", "vo")])
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a, b)
    assert np.all(outs[0][0][..., 1] == 0.0), "a pause keeps the last rate (0 after one step from rest)"


# ---------------------------------------------------------------- edits


def test_set_param_without_re_planning(clips):
    skel, walk, jog = clips
    nodes = [{"id": "frame", "type": "constant", "signal": "pose", "clip": "walk", "frame": 3},
             {"id": "other", "type": "constant", "signal": "pose", "clip": "jog", "frame": 9},
             {"id": "mix", "type": "blend", "alpha": 0.25}, {"id": "out", "type": "output"}]
    links = [["frame.pose", "mix.a"], ["other.pose", "mix.b"], ["mix.pose", "out.pose"]]
    plan = ag.compile(graph(nodes, links))
    inst = plan.instance()
    table = plan.table.copy()

    def pose(clip, f):
        return ag.Pose(clip.pos[f], clip.rot[f], clip.scl[f])

    assert_pose(inst.step(DT)["out"], ag.ops.blend(pose(walk, 3), pose(jog, 9), 0.25), atol=1e-6)
    inst.set_param("frame", "frame", 100)
    inst.set_param("mix", "alpha", 0.75)  # an unlinked input fed by its field
    assert_pose(inst.step(DT)["out"], ag.ops.blend(pose(walk, 100), pose(jog, 9), 0.75), atol=1e-6)
    np.testing.assert_array_equal(plan.table, table)
    with pytest.raises(ag.GraphError, match="ports") as info:
        inst.set_param("out", "signal", "scalar")
    assert (info.value.node, info.value.port) == ("out", "signal")
    with pytest.raises(ag.GraphError, match="for signal 'pose' only"):
        inst.set_param("frame", "signal", "scalar")
    with pytest.raises(ag.GraphError, match="greater than or equal to 0"):
        inst.set_param("frame", "frame", -1)
    with pytest.raises(ag.GraphError, match="past the clip"):
        inst.set_param("frame", "frame", 10**6)
    assert_pose(inst.step(DT)["out"], ag.ops.blend(pose(walk, 100), pose(jog, 9), 0.75), atol=1e-6)
    other = plan.instance()
    assert_pose(other.step(DT)["out"], ag.ops.blend(pose(walk, 3), pose(jog, 9), 0.25), atol=1e-6)


# ---------------------------------------------------------------- reset and teleport

CLOCK_NODES = [{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "fk", "type": "fk"},
               {"id": "local", "type": "output"}, {"id": "glob", "type": "output"}]
CLOCK_LINKS = [["walk.pose", "fk.pose"], ["walk.pose", "local.pose"], ["fk.pose", "glob.pose"]]


def test_reset_gives_the_velocities_of_a_continuous_run():
    plan = ag.compile(graph(CLOCK_NODES, CLOCK_LINKS))
    run, jump = plan.instance(), plan.instance()
    for _ in range(75):  # through the walk's loop point (2.48 s) would take longer; 75 frames is 1.25 s
        run.step(DT)
    jump.step(DT)
    jump.reset(time=75 * DT)
    a, b = frozen(run.step(DT)), jump.step(DT)
    for k in ("local", "glob"):
        assert_pose(a[k], b[k], atol=1e-5)  # the clocks differ by float rounding of 75 additions only
    assert np.abs(b["glob"].vel).max() > 0.5, "a walking pose moves"


def test_teleport_translation_moves_positions_keeps_velocities():
    plan = ag.compile(graph(CLOCK_NODES, CLOCK_LINKS), batch=3)
    moved, still = plan.instance(), plan.instance()
    for _ in range(10):
        moved.step(DT), still.step(DT)
    delta = np.array([1.5, 0.0, -4.0])
    moved.teleport(delta, characters=[1])
    a, b = frozen(moved.step(DT)), still.step(DT)
    for k in ("local", "glob"):
        for c in (0, 2):
            assert_pose(a[k][c], b[k][c], atol=0)
        for f in ("rot", "scl", "vel", "ang", "svl"):
            np.testing.assert_array_equal(getattr(a[k], f)[1], getattr(b[k], f)[1], err_msg=f)
    np.testing.assert_allclose(a["glob"].pos[1] - b["glob"].pos[1], np.broadcast_to(delta, b["glob"].pos[1].shape),
                               atol=1e-5)
    np.testing.assert_allclose(a["local"].pos[1, 0] - b["local"].pos[1, 0], delta, atol=1e-5)
    np.testing.assert_array_equal(a["local"].pos[1, 1:], b["local"].pos[1, 1:])
    # A reset restarts the animation where the character stands.
    moved.reset(0.5)
    still.reset(0.5)
    a, b = frozen(moved.step(DT)), still.step(DT)
    np.testing.assert_allclose(a["glob"].pos[1] - b["glob"].pos[1], np.broadcast_to(delta, b["glob"].pos[1].shape),
                               atol=1e-5)
    assert_pose(a["glob"][0], b["glob"][0], atol=0)


def test_teleport_rotation_turns_about_the_root():
    plan = ag.compile(graph(CLOCK_NODES, CLOCK_LINKS))
    moved, still = plan.instance(), plan.instance()
    for _ in range(10):
        last = moved.step(DT)
        still.step(DT)
    pivot = last["glob"].pos[0].astype(np.float64)
    half = np.pi / 6
    turn = (np.cos(half), 0.0, np.sin(half), 0.0)  # 60 degrees about +Y
    delta = np.array([0.0, 0.0, 2.0])
    moved.teleport(delta, turn)
    a, b = frozen(moved.step(DT)), still.step(DT)
    for j in range(len(b["glob"].pos)):
        want = np.add(qrot(turn, tuple(b["glob"].pos[j] - pivot)), pivot + delta)
        np.testing.assert_allclose(a["glob"].pos[j], want, atol=1e-5)
        np.testing.assert_allclose(a["glob"].vel[j], qrot(turn, tuple(b["glob"].vel[j].astype(float))), atol=1e-5)
        np.testing.assert_allclose(a["glob"].ang[j], qrot(turn, tuple(b["glob"].ang[j].astype(float))), atol=1e-5)
        q = qmul(turn, tuple(b["glob"].rot[j].astype(float)))
        assert abs(abs(np.dot(q, a["glob"].rot[j])) - 1) < 1e-6
    # The next frame after that: still no spike, velocities stay those of the turned unmoved pose.
    a, b = frozen(moved.step(DT)), still.step(DT)
    np.testing.assert_allclose(a["glob"].vel[0], qrot(turn, tuple(b["glob"].vel[0].astype(float))), atol=1e-5)


# ---------------------------------------------------------------- the executor module


def test_executor_source_and_cache():
    module = executor.load()
    assert executor.load() is module, "generated and imported once per process"
    names = executor.kinds()
    assert module.KINDS == names
    text = executor.source(names)
    for i, name in enumerate(names):
        assert f"kind == {i}:  # {name}" in text
    assert module.PATH.read_text() == text and module.PATH.name == f"executor_{module.KEY}.py"
    assert not list(module.PATH.parent.glob("*.tmp"))
    assert executor.source(names[:-1]) != text


def test_a_borrowed_view_is_the_same_memory_and_holds_no_reference():
    @njit
    def write_through(a, x):
        b = views.borrowed(a[1:])  # a view of a view: the same data, shape and strides
        b[0, 2] = x
        return b.shape, b.strides, b[1, 3]

    a = np.arange(12.0).reshape(3, 4)
    refs = sys.getrefcount(a)
    assert write_through(a, -1.0) == ((2, 4), (32, 8), 11.0) and a[1, 2] == -1.0
    assert sys.getrefcount(a) == refs


def test_rows_views_equal_reshaped_slices():
    @njit
    def two_views(flat, at):
        a = views.rows(flat, at, (3, 2, 4))
        b = views.rows(flat, at + 24, (5, 2))
        a[2, 1, 3] = -1.0  # writes through
        return a.copy(), b.copy(), a.strides, b.strides, a.flags.c_contiguous

    flat = np.arange(60, dtype=np.float32)
    a, b, sa, sb, contiguous = two_views(flat, 7)
    np.testing.assert_array_equal(a.ravel()[:-1], np.arange(7, 30, dtype=np.float32))
    assert a[2, 1, 3] == -1.0 == flat[30] and contiguous
    np.testing.assert_array_equal(b, np.arange(31, 41, dtype=np.float32).reshape(5, 2))
    assert sa == (32, 16, 4) and sb == (8, 4)


def test_flat_views_and_overlap():
    @njit
    def flat_and_overlap(a, x, y):
        f = views.flat(a)
        f[5] = -1.0  # writes through
        return f.shape, f.strides, views.overlap(x, y)

    a = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    shape, strides, _ = flat_and_overlap(a, a, a)
    assert shape == (24,) and strides == (4,) and a[0, 1, 2] == -1.0
    for x, y, want in ((a[0], a[1], False), (a[0], a[0, 3:], True), (a[1, :2], a[1, 1:], True),
                       (a[1, :1], a[1, 1:], False), (a, np.zeros_like(a), False)):
        assert flat_and_overlap(a, x, y)[2] is want and flat_and_overlap(a, y, x)[2] is want
    with pytest.raises(ValueError, match="C-contiguous"):
        views.flat(a.transpose())
    with pytest.raises(TypingError):
        flat_and_overlap(a.transpose(), a, a)  # compiled, only C arrays have a flat view


@pytest.mark.parametrize("batch", [1, 19])
def test_steps_leave_no_reference_on_the_instances_arrays(clips, batch):
    """The executor borrows its arrays (``views.borrowed``): after many steps, scalar walk or lane tiles,
    every array the call takes has the Python reference count it had before."""
    inst = ag.compile(graphs.path("blend"), batch=batch).instance()
    inst.step(DT)
    arrays = [a for a in inst._args if isinstance(a, np.ndarray)]
    refs = [sys.getrefcount(a) for a in arrays]
    for _ in range(50):
        inst.step(DT)
    assert [sys.getrefcount(a) for a in arrays] == refs


LEAK_CHECK = """
import numpy as np
from numba.core.runtime import rtsys
from animgraph.bench import chain_assets, chain_graph
from animgraph.runtime import compile
skel, clips = chain_assets()
inst = compile(chain_graph(), batch=19, assets=clips).instance(lanes=True)
def live():
    s = rtsys.get_allocation_stats()
    return s.alloc - s.free, s.alloc
inst.step(1 / 60)
before, allocs = live()
for _ in range(40):
    out = inst.step(1 / 60)["out"]
after, allocs_after = live()
print(before, after, allocs_after - allocs, bool(np.isfinite(out.pos).all() and np.isfinite(out.ang).all()))
"""


def test_tile_kernels_free_their_scratch():
    """The lane kernels use borrowed views of their scratch arrays (``views.borrowed``, kept by ``views.alive``):
    each step allocates and frees them, so numba's count of live allocations does not grow."""
    import os
    import subprocess

    env = dict(os.environ, NUMBA_NRT_STATS="1")  # read once, at numba's import: hence a process of its own
    run = subprocess.run([sys.executable, "-c", LEAK_CHECK], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    before, after, allocated, finite = run.stdout.split()
    assert int(after) == int(before) and int(allocated) > 40 and finite == "True"


def test_a_cold_cache_compiles_only_the_graphs_node_types(monkeypatch):
    """On a cold cache the first plan runs on an executor with branches for its node types only: the same
    kernels, so the same outputs bit for bit.  Graphs it covers share it; one with other node types gets the
    whole registry's, as does every graph once that is compiled."""
    monkeypatch.delenv(executor.FULL_ENV, raising=False)
    path = Path(graphs.path("ik_lookat_footlock"))
    types = {n["type"] for n in json.loads(path.read_text())["nodes"]}
    monkeypatch.setattr(executor, "_full_compiled", lambda names: False)
    monkeypatch.setattr(executor, "_partial_cover", lambda names: None)  # nothing compiled yet
    plan = ag.compile(path)
    assert plan.executor.COVERS == tuple(n for n in executor.kinds() if n in types) and types < set(executor.kinds())
    assert plan.executor.KEY != executor.load().KEY and plan.executor.KINDS == executor.kinds()
    assert executor.load(types) is plan.executor, "one module per set of node types"
    text = executor.source(executor.kinds(), plan.executor.COVERS)
    for i, name in enumerate(executor.kinds()):
        assert (f"kind == {i}:  # {name}" in text) == (name in types)
    full = ag.compile(path)
    full.executor = executor.load()
    a, b = plan.instance(), full.instance()
    for _ in range(40):
        assert_pose(frozen(a.step(DT))["out"], frozen(b.step(DT))["out"], atol=0)
    # Now compiled: found in this process.  A graph it covers shares it; one with other types
    # gets the whole registry's executor (then every later graph shares that).
    monkeypatch.undo()
    monkeypatch.delenv(executor.FULL_ENV, raising=False)
    monkeypatch.setattr(executor, "_full_compiled", lambda names: False)
    assert executor._partial_cover(executor.kinds()) == plan.executor.COVERS  # read back from disk: test_first_run
    monkeypatch.undo()
    monkeypatch.delenv(executor.FULL_ENV, raising=False)
    monkeypatch.setattr(executor, "_full_compiled", lambda names: False)
    assert executor.load({"output", "look_at"} & types) is plan.executor
    other = ag.compile(graphs.path("blend"))
    assert other.executor is executor.load() and not executor.covers(plan.executor, other.node_types)
    # A plan handed an executor without its node types is given one that has them.
    other.executor = plan.executor
    other.instance()
    assert other.executor is executor.load()
    # Compiled whole: every graph shares it; the environment can ask for it always.
    monkeypatch.setattr(executor, "_full_compiled", lambda names: True)
    assert executor.load(types) is executor.load()
    monkeypatch.setattr(executor, "_full_compiled", lambda names: False)
    monkeypatch.setattr(executor, "_partial_cover", lambda names: None)
    monkeypatch.setenv(executor.FULL_ENV, "full")
    assert executor.load(types) is executor.load()
    monkeypatch.delenv(executor.FULL_ENV)
    with pytest.raises(ag.GraphError, match="unknown node type 'nope'"):
        executor.load({"nope"})


def test_write_once_is_atomic_and_idempotent(tmp_path):
    path = tmp_path / "x" / "executor_k.py"
    executor._write_once(path, "a = 1\n")
    stamp = path.stat().st_mtime_ns
    executor._write_once(path, "a = 1\n")
    assert path.stat().st_mtime_ns == stamp, "an identical file is left alone (numba's cache stays valid)"
    executor._write_once(path, "a = 2\n")
    assert path.read_text() == "a = 2\n"
    assert [p.name for p in path.parent.iterdir()] == ["executor_k.py"]


# ---------------------------------------------------------------- every node type, compiled vs Python dispatch

EVERYTHING_NODES = [
    {"id": "t", "type": "input"},
    {"id": "idx", "type": "input", "signal": "int"},
    {"id": "alpha", "type": "input", "default": 0.4},
    {"id": "look_target", "type": "input", "signal": "vec3", "default": [0.5, 1.6, 1.0]},
    {"id": "hand_target", "type": "input", "signal": "vec3", "default": [-0.4, 1.1, 0.3]},
    {"id": "contact", "type": "input", "signal": "bool"},
    {"id": "walk", "type": "sample", "clip": "walk"},
    {"id": "jog", "type": "sample", "clip": "jog", "mode": "linear"},
    {"id": "rest", "type": "constant", "signal": "pose", "clip": "walk", "frame": 0},
    {"id": "sel", "type": "select", "count": 3},
    {"id": "inert", "type": "inertialize", "duration": 0.2},
    {"id": "mix", "type": "blend"},
    {"id": "diff", "type": "difference"},
    {"id": "add", "type": "additive", "alpha": 0.5},
    {"id": "dead", "type": "dead_blend", "duration": 0.3},
    {"id": "spring", "type": "tracking_spring"},
    {"id": "look", "type": "look_at", "joint": "head"},
    {"id": "reach", "type": "two_bone_ik", "root": "right_shoulder", "mid": "right_elbow", "end": "right_hand",
     "hinge": [0.0, 0.8, -0.6]},
    {"id": "lock", "type": "foot_lock", "foot_height": 0.04, "hinge": [0.936, 0.352, 0.0]},
    {"id": "fk", "type": "fk"},
    {"id": "bk", "type": "bk"},
    {"id": "out", "type": "output"},
    {"id": "glob", "type": "output"},
    {"id": "changed", "type": "output", "signal": "bool"},
    {"id": "locked", "type": "output", "signal": "vec3"},
]
EVERYTHING_LINKS = [
    ["t.value", "jog.time"], ["walk.pose", "sel.in0"], ["jog.pose", "sel.in1"], ["rest.pose", "sel.in2"],
    ["idx.value", "sel.index"], ["sel.pose", "inert.pose"], ["sel.changed", "inert.transition"],
    ["inert.pose", "mix.a"], ["walk.pose", "mix.b"], ["alpha.value", "mix.alpha"],
    ["jog.pose", "diff.pose"], ["walk.pose", "diff.reference"], ["mix.pose", "add.base"], ["diff.pose", "add.add"],
    ["add.pose", "dead.pose"], ["sel.changed", "dead.transition"], ["dead.pose", "spring.value"],
    ["sel.changed", "spring.jump"], ["spring.value", "look.pose"],
    ["look_target.value", "look.target"], ["look.pose", "reach.pose"], ["hand_target.value", "reach.target"],
    ["reach.pose", "lock.pose"], ["contact.value", "lock.contact"], ["lock.pose", "fk.pose"], ["fk.pose", "bk.pose"],
    ["bk.pose", "out.pose"], ["fk.pose", "glob.pose"], ["sel.changed", "changed.value"], ["lock.locked", "locked.value"],
]


def everything_inputs(frame, batch):
    """Inputs for frame ``frame`` that switch clips, move targets and toggle the contact."""
    c = np.arange(batch)
    return {
        "t": (0.3 + frame / 60 + 0.1 * c, 1.0 + 0.01 * c),
        "idx": (frame // 4 + c) % 3,
        "alpha": (0.5 + 0.4 * np.sin(frame / 3 + c), 0.4 / 3 * np.cos(frame / 3 + c)),
        "look_target": (np.stack([0.5 + 0.1 * c, 1.6 + 0 * c, 1.0 + 0.05 * frame + 0 * c], 1), [0.0, 0.0, 3.0]),
        "hand_target": [-0.4, 1.1, 0.3 - 0.01 * frame],
        "contact": (frame // 3 + c) % 2,
    }


def test_every_node_type_compiled_matches_python_dispatch():
    batch = 4
    plan = ag.compile(graph(EVERYTHING_NODES, EVERYTHING_LINKS), batch=batch)
    compiled, python = plan.instance(parallel=False), plan.instance(python=True)
    switched = False
    for frame in range(14):
        inputs = everything_inputs(frame, batch)
        a = frozen(compiled.step(DT, inputs))
        b = python.step(DT, inputs)
        for k in a:
            if k in ("out", "glob"):
                assert_pose(a[k], b[k], atol=1e-6)
            else:
                np.testing.assert_allclose(a[k], b[k], atol=1e-6)
        switched |= bool(np.any(a["changed"]))
        assert np.all(np.isfinite(a["glob"].vel))
    assert switched, "select switched, so inertialize and dead_blend ran transitions"
    np.testing.assert_allclose(compiled.st, python.st, atol=1e-6)


def test_node_types_beyond_that_graph_match_python_dispatch_in_a_graph_of_their_own():
    # A node type added later, not in EVERYTHING_NODES: its example between samples and inputs (test_ranges.around),
    # every such type in one graph (one executor to compile), ids prefixed by type.
    from test_ranges import around

    nodes, links, frames, version = [], [], [{} for _ in range(6)], 1
    assets = {"walk": "animgraph:walk", "db": {"database": ["animgraph:walk", "animgraph:run_stop"]}}
    planned = {k for k in executor.kinds() if REGISTRY[k].PLANNED}  # the check's own: tests/test_node_sync_group.py
    for kind in sorted(set(executor.kinds()) - {n["type"] for n in EVERYTHING_NODES} - planned):
        some, joins, inputs = around(kind, {})
        nodes += [n | {"id": f"{kind}_{n['id']}"} for n in some]
        links += [[f"{kind}_{a}", f"{kind}_{b}"] for a, b in joins]
        for i, frame in enumerate(frames):
            frame.update({f"{kind}_{k}": v for k, v in inputs[i % len(inputs)].items()})
        version = 3 if any(n.get("database") == "db" for n in some) else version
    if not nodes:
        return
    plan = ag.compile(ag.Graph.from_dict({"format": "animgraph.graph", "version": version, "nodes": nodes, "links": links,
                                          "assets": assets if version == 3 else {"walk": assets["walk"]}}), batch=3)
    compiled, python = plan.instance(parallel=False), plan.instance(python=True)
    for inputs in frames:
        a, b = frozen(compiled.step(DT, inputs)), python.step(DT, inputs)
        for k in a:
            if isinstance(a[k], ag.Pose):
                assert_pose(a[k], b[k], atol=1e-6)
            else:
                np.testing.assert_allclose(a[k], b[k], atol=1e-6, err_msg=k)
    np.testing.assert_allclose(compiled.st, python.st, atol=1e-6)


def test_stateless_nodes_match_ops_composed_by_hand(clips):
    skel, walk, jog = clips
    nodes = [n for n in EVERYTHING_NODES if n["id"] in ("t", "alpha", "look_target", "hand_target", "walk", "jog", "mix",
                                                         "diff", "add", "look", "reach", "fk", "glob")]
    links = [["t.value", "walk.time"], ["t.value", "jog.time"], ["jog.pose", "mix.a"], ["walk.pose", "mix.b"],
             ["alpha.value", "mix.alpha"], ["jog.pose", "diff.pose"], ["walk.pose", "diff.reference"],
             ["mix.pose", "add.base"], ["diff.pose", "add.add"], ["add.pose", "look.pose"],
             ["look_target.value", "look.target"], ["look.pose", "reach.pose"], ["hand_target.value", "reach.target"],
             ["reach.pose", "fk.pose"], ["fk.pose", "glob.pose"]]
    inst = ag.compile(graph(nodes, links)).instance()
    t, alpha, alpha_rate = 0.7, 0.35, 0.8
    look_p, look_v = np.array([0.5, 1.6, 1.2]), np.array([0.1, 0.0, -0.3])
    hand_p, hand_v = np.array([-0.4, 1.1, 0.35]), np.array([0.0, 0.2, 0.0])
    out = inst.step(DT, {"t": (t, 1.0), "alpha": (alpha, alpha_rate), "look_target": (look_p, look_v),
                         "hand_target": (hand_p, hand_v)})
    a = ag.ops.sample(walk, t, mode="cubic", loop=True)
    b = ag.ops.sample(jog, t, mode="linear", loop=True)
    pose = ag.ops.additive(ag.ops.blend(b, a, alpha, alpha_rate), ag.ops.difference(b, a), 0.5)
    pose = ag.ops.look_at(pose, skel, "head", look_p, look_v)
    pose = ag.ops.two_bone_ik(pose, skel, ("right_shoulder", "right_elbow", "right_hand"), hand_p, hand_v,
                              hinge=(0.0, 0.8, -0.6))
    assert_pose(out["glob"], ag.ops.fk(pose, skel.parents), atol=2e-5)


def test_the_walk_over_threads_compiles_the_character_walk_once():
    # numba lowers a prange index as uint64: handed on as it is, ``character`` (the whole walk, every kernel)
    # compiled twice on a cold cache, once for the int64 its typing saw (measured: 33 s more of a 90 s compile).
    plan = ag.compile(graphs.path("blend"), batch=16)
    inst = plan.instance(lanes=False)
    assert not inst.lanes
    inst.step(1 / 60)
    index = plan.executor.character._cache._cache_file._load_index()  # what the compile saved (numba's cache)
    assert [key[0][0] for key in index] == [numba.types.int64]
