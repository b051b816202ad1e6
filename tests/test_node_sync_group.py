"""Sync groups (``animgraph.sync``, ``nodes/sync_group.py``) and the phase maps (``animgraph.phase``).

Phases are recomputed here from each member's sampled time and its own markers; the group's phase rate
from the blend weights the test sets itself; velocities against central differences of the whole graph.
"""

import math
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph.errors import GraphError
from animgraph.executor import OP_STATE
from animgraph.nodes.sample import ST as SAMPLE_ST
from animgraph.phase import MarkerError, markers, phase_at, time_at, whole_cycles
from animgraph.tracks import clip_tracks
from fdcheck import world_velocity_errors

DT = 1 / 60


# ---------------------------------------------------------------- phase maps, by hand


def test_markers_by_hand_loop_and_clamped():
    # One plant of each foot: no whole cycle, the loop wraps through the clip's end (period 1 s).
    times, phases, cycles, period = markers([0.1], [0.6], 1.0, loop=True)
    assert times.tolist() == [0.1, 0.6, 1.1] and phases.tolist() == [0.0, 0.5, 1.0] and (cycles, period) == (1, 1)
    times, phases, cycles, period = markers([0.7], [0.2], 1.0, loop=False)  # starts on the right foot
    assert times.tolist() == [0.2, 0.7] and phases.tolist() == [0.5, 1.0] and (cycles, period) == (0.0, 1.0)
    # A foot planting twice in a row: a whole cycle (the other foot's step missing).
    assert markers([0.1, 0.5], [0.9], 2.0, loop=False)[1].tolist() == [0.0, 1.0, 1.5]


def test_whole_cycles_run_from_the_first_plant_to_the_same_foots_last():
    # L .1, R .5, L .9, R 1.3, L 1.7 in a 2 s clip: two cycles from .1 to 1.7 (the clip's end, mid-step, unused).
    assert whole_cycles([0.1, 0.9, 1.7], [0.5, 1.3]) == (0.1, 1.7)
    assert whole_cycles([0.5, 1.3], [0.1, 0.9, 1.6]) == (0.1, 1.6)  # starting on the right foot
    assert whole_cycles([0.1], [0.6]) is None  # under one cycle
    # Cut there, the loop's wrap goes plant to plant: the last plant is the other foot's.
    times, phases, cycles, period = markers([0.0, 0.8], [0.4, 1.2], 1.6, loop=True)
    assert times.tolist() == [0.0, 0.4, 0.8, 1.2, 1.6] and phases.tolist() == [0, 0.5, 1, 1.5, 2] and cycles == 2


def test_a_cut_keeps_the_instants_inside_and_joins_the_seams_stance():
    from animgraph.tracks import Tracks

    tracks = Tracks(3.0, True, {"left_plant": np.array([0.5, 1.5, 2.5])},
                    {"left_contact": np.array([[0.3, 0.7], [1.3, 1.7], [2.3, 2.7]])})
    cut = tracks.cut(0.5, 2.5)
    assert cut.length == 2.0 and cut.loop
    assert cut.instants["left_plant"].tolist() == [0.0, 1.0]
    assert np.allclose(cut.ranges["left_contact"], [[0.8, 1.2], [1.8, 0.2]])  # the seam's stance wraps


def test_a_clip_without_a_plant_of_each_foot_has_no_phase():
    with pytest.raises(MarkerError, match="right_plant"):
        markers([0.1, 0.5], [], 1.0, loop=True)


def test_phase_and_time_by_hand():
    times, phases, cycles, period = markers([0.1], [0.6], 1.0, loop=True)
    assert phase_at(times, phases, True, period, 0.35) == pytest.approx((0.25, 1.0))
    assert phase_at(times, phases, True, period, 0.05)[0] == pytest.approx(0.95)  # the wrap segment: 0.6 .. 1.1
    t, dtdu, slope = time_at(times, phases, True, 1.0, cycles, 3.25)  # any whole cycles on
    assert (t, dtdu, slope) == pytest.approx((0.35, 1.0, 1.0))
    times, phases, _, period = markers([0.5], [1.0], 1.5, loop=False)  # 1 cycle/s, extrapolated before 0.5
    assert phase_at(times, phases, False, 1.5, 0.0)[0] == pytest.approx(-0.5)
    assert time_at(times, phases, False, 1.5, 0.0, -2.0)[:2] == (0.0, 0.0)  # clamped: the time stands still
    assert time_at(times, phases, False, 1.5, 0.0, 9.0)[:2] == (1.5, 0.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.05, 0.45), min_size=2, max_size=8), st.floats(0.0, 0.3), st.floats(-5.0, 5.0),
       st.booleans())
def test_time_then_phase_is_the_identity(steps, first, u, loop):
    plants = first + np.cumsum([0.0, *steps])
    length = float(plants[-1] + 0.3)
    left, right = plants[0::2], plants[1::2]
    times, phases, cycles, period = markers(left, right, length, loop)
    t, dtdu, _ = time_at(times, phases, loop, length, cycles, u)
    back, slope = phase_at(times, phases, loop, period, t)
    if loop:
        assert 0.0 <= t < length
        assert abs((back - u + 0.5) % 1.0 - 0.5) < 1e-9  # the same phase, whole cycles apart
        assert dtdu * slope == pytest.approx(1.0)
    elif dtdu > 0.0:
        assert back == pytest.approx(u, abs=1e-9)


# ---------------------------------------------------------------- groups on real clips


def blend_graph(sync=True, a="walk", b="jog", start_b=0.0, rate_b=None, **sample):
    """Two looping clips with root motion, blended by input ``alpha``, in sync group ``gait`` (or not)."""
    group = {"sync_group": "gait"} if sync else {}
    rate = {} if rate_b is None else {"rate": rate_b}
    return ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 4,
        "assets": {a: f"animgraph:{a}", b: f"animgraph:{b}"},
        "nodes": [
            {"id": "a", "type": "sample", "clip": a, "root_motion": True, **group, **sample},
            {"id": "b", "type": "sample", "clip": b, "root_motion": True, "start": start_b, **group, **rate},
            {"id": "alpha", "type": "input", "default": 0.0, "min": 0.0, "max": 1.0},
            {"id": "mix", "type": "blend"},
            {"id": "mix_motion", "type": "blend", "signal": "motion"},
            {"id": "out", "type": "output"},
        ],
        "links": [["a.pose", "mix.a"], ["b.pose", "mix.b"], ["alpha.value", "mix.alpha"], ["mix.pose", "out.pose"],
                  ["a.motion", "mix_motion.a"], ["b.motion", "mix_motion.b"], ["alpha.value", "mix_motion.alpha"],
                  ["mix_motion.value", "out.motion"]],
    })


class Markers(NamedTuple):
    times: np.ndarray
    phases: np.ndarray
    cycles: float
    period: float
    length: float
    loop: bool

    def phase(self, t):
        """(phase, its rate per clip second) at clip time t."""
        return phase_at(self.times, self.phases, self.loop, self.period, t)


def clip_markers(plan, sample_id, group="__sync_gait"):
    """A member's markers, from its clip's tracks and how the graph file plays it (the plan drives it clamped)."""
    members = plan.nodes[group].members if group in plan.nodes else ()
    loop = next((m.loop for m in members if m.sample == sample_id), plan.nodes[sample_id].loop)
    node = plan.nodes[sample_id]
    variant = node.clip_variants()[0][1] if node.clip_variants() else ""
    r = plan.clips[(node.clip, variant) if variant else node.clip]
    length = (r.frames if loop else r.frames - 1) * r.dt
    tracks = clip_tracks(plan.skeleton, r.clip, loop)
    return Markers(*markers(tracks.instants["left_plant"], tracks.instants["right_plant"], length, loop), length, loop)


def read(inst, plan, node, port, n=2):
    at = plan.located[(node, port)]
    return inst.sig[:, at:at + n]


def wrapped(x):
    return (x + 0.5) % 1.0 - 0.5


def test_members_keep_the_groups_phase_and_the_rate_is_the_weight_blend():
    plan = ag.compile(blend_graph(rate_b=1.3), batch=1)
    inst = plan.instance()
    mk = {s: clip_markers(plan, s) for s in ("a", "b")}
    rates = {"a": 1.0, "b": 1.3}
    for f in range(400):
        alpha = min(max((f - 60) / 240, 0.0), 1.0)  # ramps across the leader change at 0.5
        inst.step(DT, {"alpha": alpha})
        phase, phase_rate = read(inst, plan, "__sync_gait", "phase")[0]
        num = den = 0.0
        for s, w in (("a", 1 - alpha), ("b", alpha)):
            t, t_rate = read(inst, plan, "__sync_gait", f"{s}_time")[0]
            u, slope = mk[s].phase(t)
            assert abs(wrapped(u - phase)) < 1e-6, (f, s)  # each member at the group's phase
            assert t_rate == pytest.approx(phase_rate / slope, rel=1e-9)
            num, den = num + w * rates[s] * slope, den + w
        assert phase_rate == pytest.approx(num / den, rel=1e-9), f
        assert read(inst, plan, "__sync_gait", "leader", 1)[0, 0] == (1 if alpha > 0.5 else 0)


def test_a_leader_change_changes_the_rate_only_as_much_as_the_weights_do():
    plan = ag.compile(blend_graph(a="walk", b="run"), batch=1)
    inst = plan.instance()
    mk = {s: clip_markers(plan, s) for s in ("a", "b")}
    last, switches = None, 0
    for f in range(300):
        alpha = 0.5 + 0.01 * math.sin(f * 0.7)  # the leader switches back and forth
        inst.step(DT, {"alpha": alpha})
        rate = read(inst, plan, "__sync_gait", "phase")[0, 1]
        leader = read(inst, plan, "__sync_gait", "leader", 1)[0, 0]
        slopes = tuple(mk[s].phase(read(inst, plan, "__sync_gait", f"{s}_time")[0, 0])[1] for s in ("a", "b"))
        if last is not None and slopes == last[3]:  # the same segments: only the weights moved
            d_rate_dw = abs(slopes[1] - slopes[0])  # rates 1: d/dalpha of (1 - alpha) u_a' + alpha u_b'
            assert abs(rate - last[1]) <= d_rate_dw * abs(alpha - last[0]) + 1e-6, f
            switches += leader != last[2]
        last = (alpha, rate, leader, slopes)
    assert switches >= 10


def test_clips_starting_on_opposite_feet_line_up_by_marker():
    # walk_r is walk with its feet's plants swapped: it starts on the other foot, so in step with walk it plays
    # half a cycle away from walk's own time.
    skel, clip = ag.data.load("walk")
    plants = clip_tracks(skel, clip, True).instants
    swapped = [{"name": name, "time": float(t)} for name, other in (("left_plant", "right_plant"),
                                                                    ("right_plant", "left_plant"))
               for t in plants[other]]
    g = blend_graph(a="walk", b="walk").model_dump(mode="json", by_alias=True, exclude_none=True)
    g["assets"]["walk_r"] = {"path": "animgraph:walk", "derive": False, "tracks": swapped}
    g["nodes"][1]["clip"] = "walk_r"
    plan = ag.compile(ag.Graph.from_dict(g), batch=1)
    inst = plan.instance()
    walk = clip_markers(plan, "a")
    for f in range(200):
        inst.step(DT, {"alpha": 0.5})
        ta, tb = (read(inst, plan, "__sync_gait", f"{s}_time")[0, 0] for s in ("a", "b"))
        ua, ub = (walk.phase(t)[0] for t in (ta, tb))  # both on walk's own markers
        assert abs(abs(wrapped(ub - ua)) - 0.5) < 1e-6, f


def test_without_the_group_phases_drift_apart():
    for sync, drift in ((True, False), (False, True)):
        plan = ag.compile(blend_graph(a="walk", b="run", sync=sync), batch=1)
        inst = plan.instance()
        mk = {s: clip_markers(plan, s) for s in ("a", "b")}
        worst = 0.0
        for f in range(240):
            inst.step(DT, {"alpha": 0.5})
            if sync:
                ta, tb = (read(inst, plan, "__sync_gait", f"{s}_time")[0, 0] for s in ("a", "b"))
            else:
                ta, tb = (inst.st[0, plan.ops[plan.op(s)][OP_STATE] + SAMPLE_ST.clock] for s in ("a", "b"))
            ua, ub = mk["a"].phase(ta)[0], mk["b"].phase(tb)[0]
            worst = max(worst, abs(wrapped(ua - ub)))
        assert (worst > 0.2) == drift, (sync, worst)


def test_whole_graph_velocities_match_central_differences_while_the_weight_ramps():
    plan = ag.compile(blend_graph(a="walk", b="jog"), batch=1)
    inst = plan.instance()
    parents = plan.skeleton.parents
    keys = {s: plan.clips[plan.nodes[s].clip].dt for s in ("a", "b")}
    mk = {s: clip_markers(plan, s) for s in ("a", "b")}
    state, h = {"alpha": 0.1, "dt": 0.0}, 1e-3

    def step(dt):
        state["alpha"] = min(state["alpha"] + 0.3 * dt, 1.0)  # a ramp at 0.3/s, with its rate
        state["dt"] = dt
        return inst.step(dt, {"alpha": (state["alpha"], 0.3)})["out"]

    def clean():
        """No member's clip key or plant marker inside the stencil's six steps: the clips' cubic interpolation has an
        acceleration step at each key (mocap noise), and a marker is a kink of the time's rate."""
        for s in ("a", "b"):
            t, rate = read(inst, plan, "__sync_gait", f"{s}_time")[0]
            lo = t + state["dt"] * rate  # the next frame's time: the clock moved on after the last frame
            hi = lo + 6 * h * rate
            if math.floor(lo / keys[s]) != math.floor(hi / keys[s]):
                return False
            times = mk[s].times
            if np.any((times > lo) & (times < hi)) or np.any((times - mk[s].period > lo) & (times - mk[s].period < hi)):
                return False
        return True

    for f in range(30):
        step(DT)
    worst, tries = [], 0
    while len(worst) < 8 and tries < 400:
        tries += 1
        if not clean():
            step(1.7e-3)
            continue
        err, err_ang = world_velocity_errors(step, parents, h)
        worst.append((f"{err.max():.2g}", f"{err_ang.max():.2g}", state["alpha"]))
        assert err.max() < 2e-3 and err_ang.max() < 2e-3, worst
        for f in range(7):
            step(DT)
    assert len(worst) == 8, tries


def test_lane_executor_equals_the_per_character_one():
    graph = blend_graph(a="walk", b="run")
    batch = 19
    lanes = ag.compile(graph, batch=batch).instance(lanes=True)
    chars = ag.compile(graph, batch=batch).instance(lanes=False, parallel=False)
    for f in range(120):
        alpha = np.clip(np.sin(0.05 * f + np.arange(batch)) * 0.6 + 0.5, 0.0, 1.0)
        a, b = lanes.step(DT, {"alpha": alpha})["out"], chars.step(DT, {"alpha": alpha})["out"]
        for field in ("pos", "rot"):  # values to 1e-5, rates relative to their scale (tests/test_lane_executor.py)
            assert np.abs(getattr(a, field) - getattr(b, field)).max() <= 1e-5, (f, field)
        for field in ("vel", "ang"):
            x, y = getattr(a, field), getattr(b, field)
            assert (np.abs(x - y) / np.maximum(1.0, np.abs(y))).max() <= 1e-4, (f, field)


def test_a_reset_realigns_the_group():
    plan = ag.compile(blend_graph(a="walk", b="run"), batch=1)
    inst = plan.instance()
    first = inst.step(DT, {"alpha": 0.5})["out"].pos[..., 1:, :].copy()  # the root keeps its world placement
    for f in range(50):
        inst.step(DT, {"alpha": 0.5})
    inst.reset()
    again = inst.step(DT, {"alpha": 0.5})["out"].pos[..., 1:, :]
    assert np.abs(again - first).max() < 1e-5


# ---------------------------------------------------------------- effective weights


def test_effective_weight_is_the_largest_product_over_paths():
    # a reaches the output through mix.a (1 - alpha) and through a select's in0 (1 while index 0).
    g = blend_graph(a="walk", b="run").model_dump(mode="json", by_alias=True, exclude_none=True)
    g["nodes"] += [{"id": "pick", "type": "select", "count": 2},
                   {"id": "which", "type": "input", "signal": "int", "default": 0, "min": 0, "max": 1},
                   {"id": "out2", "type": "output"}]
    g["links"] += [["a.pose", "pick.in0"], ["b.pose", "pick.in1"], ["which.value", "pick.index"],
                   ["pick.pose", "out2.pose"]]
    plan = ag.compile(ag.Graph.from_dict(g), batch=1)
    inst = plan.instance()
    for which, alpha, leader, weight in ((0, 0.8, 0, 1.0), (1, 0.8, 1, 1.0), (1, 0.3, 1, 1.0), (0, 0.3, 0, 1.0)):
        inst.step(DT, {"alpha": alpha, "which": which})
        assert read(inst, plan, "__sync_gait", "leader", 1)[0, 0] == leader
        assert read(inst, plan, "__sync_gait", "leader_weight", 1)[0, 0] == pytest.approx(weight)
    g["nodes"] = [n for n in g["nodes"] if n["id"] != "out2"]
    g["links"] = [k for k in g["links"] if k[1] != "out2.pose"]
    plan = ag.compile(ag.Graph.from_dict(g), batch=1)  # the select now feeds nothing: weights from mix only
    inst = plan.instance()
    inst.step(DT, {"alpha": 0.3, "which": 1})
    assert read(inst, plan, "__sync_gait", "leader_weight", 1)[0, 0] == pytest.approx(0.7)


# ---------------------------------------------------------------- refusals


def test_a_member_whose_time_is_linked_or_fixed_is_refused():
    g = blend_graph().model_dump(mode="json", by_alias=True, exclude_none=True)
    g["nodes"].append({"id": "t", "type": "input", "default": 0.0, "min": 0.0, "max": 9.0})
    g["links"].append(["t.value", "b.time"])
    with pytest.raises(GraphError, match="sync group 'gait'.*'time' input is linked from t.value") as e:
        ag.compile(ag.Graph.from_dict(g), batch=1)
    assert e.value.node == "b" and e.value.port == "time"
    with pytest.warns(UserWarning, match="node 'a': plays at its fixed time 0.5 s: its sync_group 'gait' is ignored"):
        plan = ag.compile(blend_graph(time=0.5), batch=1)
    assert [m.sample for m in plan.nodes["__sync_gait"].members] == ["b"]


def test_a_clip_without_markers_is_refused_naming_clip_and_sample():
    g = blend_graph().model_dump(mode="json", by_alias=True, exclude_none=True)
    g["assets"]["jog"] = {"path": "animgraph:jog", "derive": False,
                          "tracks": [{"name": "left_plant", "time": 0.2}, {"name": "left_plant", "time": 0.9}]}
    with pytest.raises(GraphError, match="clip 'jog' has no right_plant marker") as e:
        ag.compile(ag.Graph.from_dict(g), batch=1)
    assert e.value.node == "b"


def test_a_node_id_taken_by_a_groups_node_is_refused():
    g = blend_graph().model_dump(mode="json", by_alias=True, exclude_none=True)
    g["nodes"].append({"id": "__sync_gait", "type": "input"})
    with pytest.raises(GraphError, match="sync group 'gait'"):
        ag.compile(ag.Graph.from_dict(g), batch=1)


def test_a_file_cannot_hold_a_groups_node():
    g = blend_graph().model_dump(mode="json", by_alias=True, exclude_none=True)
    g["nodes"].append({"id": "clock", "type": "sync_group", "members": [{"sample": "a", "clip": "walk", "vertex": 0}]})
    with pytest.raises(GraphError, match="made by the check") as e:
        ag.compile(ag.Graph.from_dict(g), batch=1)
    assert e.value.node == "clock"


def test_the_compiled_group_equals_python_dispatch():
    plan = ag.compile(blend_graph(a="walk", b="run"), batch=3)
    compiled, python = plan.instance(parallel=False), plan.instance(python=True)
    for f in range(40):
        alpha = np.array([0.2, 0.5, 0.9]) + 0.1 * np.sin(0.2 * f)
        a, b = compiled.step(DT, {"alpha": alpha})["out"], python.step(DT, {"alpha": alpha})["out"]
        np.testing.assert_allclose(a.pos, b.pos, atol=1e-6)
    np.testing.assert_allclose(compiled.st, python.st, atol=1e-9)
