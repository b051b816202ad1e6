"""blend_space_1d node: validity, piecewise-linear weights (hand cases, sum 1, continuity, rates against central
differences), the op against the two-way blend, and whole graphs: velocities against central differences while the
parameter ramps, only the live entries' samples run, the lane executor equal to the per-character one.

Tolerances: weights exact to 1e-12 (float64 arithmetic); weight rates against 5-point central differences at h = 1e-4,
1e-6 (the weights are linear between entries); world velocities against central differences at h = 1 ms, 2e-3
relative (as test_node_state_machine); lanes against per-character 1e-5.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph.errors import GraphError
from animgraph.nodes.blend_space_1d import PAR, BlendSpace1d, line_weights
from fdcheck import world_velocity_errors

CLIPS = {"walk": "animgraph:walk", "jog": "animgraph:jog", "run": "animgraph:run"}
ENTRIES = [{"name": "walk", "at": 1.0}, {"name": "jog", "at": 2.5}, {"name": "run", "at": 4.0}]


def space_graph(entries=ENTRIES, motion=True, **fields):
    """One sample per entry (its clip by the entry's name, root-relative), an input ``speed``, the space to out; sync
    off (the space's own maths: tests/test_graph_blend_space.py runs it synced)."""
    nodes, links = [], [["speed.value", "bs.parameter"], ["bs.pose", "out.pose"], ["bs.motion", "motion.value"]]
    for e in entries:
        nodes.append({"id": f"s_{e['name']}", "type": "sample", "clip": e["name"], "root_motion": motion})
        links.append([f"s_{e['name']}.pose", f"bs.{e['name']}"])
        if motion:
            links.append([f"s_{e['name']}.motion", f"bs.{e['name']}_motion"])
        nodes.append({"id": f"w_{e['name']}", "type": "output", "signal": "scalar"})
        links.append([f"bs.{e['name']}_weight", f"w_{e['name']}.value"])
    nodes += [{"id": "speed", "type": "input", "signal": "scalar", "default": 1.0},
              {"id": "bs", "type": "blend_space_1d", "entries": entries, "sync_group": None, **fields},
              {"id": "out", "type": "output"}, {"id": "motion", "type": "output", "signal": "motion"}]
    return ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "assets": CLIPS, "nodes": nodes,
                               "links": links})


def weights_at(node, x, dx=0.0):
    """{entry index: (weight, rate)} of the live entries of ``node`` at parameter ``x`` moving at ``dx``."""
    par, n = node.params(), len(node.entries)
    idx, w, dw = np.zeros(3), np.zeros(3), np.zeros(3)
    count = line_weights(par[PAR.SIZE:PAR.SIZE + n], par[PAR.SIZE + n:], x, dx, idx, w, dw)
    return {int(idx[k]): (w[k], dw[k]) for k in range(count)}


def node(entries=ENTRIES, **fields):
    return BlendSpace1d.model_validate({"id": "bs", "type": "blend_space_1d", "entries": entries, **fields})


# ------------------------------------------------------------------ validity


@pytest.mark.parametrize("fields, says", [
    ({"entries": [{"name": "a", "at": 0.0}]}, "at least 2"),
    ({"entries": [{"name": "a", "at": 0.0}, {"name": "a", "at": 1.0}]}, "entry 'a' appears twice"),
    ({"entries": [{"name": "a", "at": 1.0}, {"name": "b", "at": 1.0}]}, "entries 'a' and 'b' are both at 1"),
    ({"entries": [{"name": "a", "at": 0.0}, {"name": "b", "at": float("nan")}]}, "finite"),
    ({"entries": [{"name": "a", "at": 0.0}, {"name": "b", "at": 1e12}]}, "less than or equal"),
    ({"entries": [{"name": "pose", "at": 0.0}, {"name": "b", "at": 1.0}]}, "collides with a port name"),
    ({"entries": [{"name": "a_weight", "at": 0.0}, {"name": "b", "at": 1.0}]}, "collides with a port name"),
    ({"entries": [{"name": "a", "at": "0"}, {"name": "b", "at": 1.0}]}, "at: expected a number"),
    ({"sync_group": "1x"}, "pattern"),
    ({"parameter": float("inf")}, "finite"),
])
def test_validity_bad_spaces_refused_naming_node_and_field(fields, says):
    data = {"id": "bs", "type": "blend_space_1d", "entries": ENTRIES} | fields
    graph = {"format": "animgraph.graph", "version": 1, "nodes": [data, {"id": "out", "type": "output"}],
             "links": [["bs.pose", "out.pose"]]}
    with pytest.raises(GraphError) as e:
        ag.Graph.from_dict(graph)
    text = str(e.value)
    assert "'bs'" in text and "\n" not in text, text
    assert says.lower() in text.lower(), text


def test_cli_refuses_a_bad_space_in_one_line_with_status_2(tmp_path, capsys):
    import json

    from animgraph.cli import main

    data = {"format": "animgraph.graph", "version": 1,
            "nodes": [{"id": "bs", "type": "blend_space_1d", "entries": [{"name": "a", "at": 1.0},
                                                                         {"name": "b", "at": 1.0}]},
                      {"id": "out", "type": "output"}], "links": [["bs.pose", "out.pose"]]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "'bs'" in err and "both at 1" in err and "\n" not in err, err


def test_ports_bits_weights_and_sync_groups():
    n = node()
    assert [(p.name, p.signal, p.optional) for p in n.inputs()] == [
        ("walk", "pose", False), ("jog", "pose", False), ("run", "pose", False), ("parameter", "scalar", False),
        ("walk_motion", "motion", True), ("jog_motion", "motion", True), ("run_motion", "motion", True)]
    assert [p.name for p in n.outputs()] == ["pose", "motion", "walk_weight", "jog_weight", "run_weight"]
    assert n.early_ports() == (("parameter",), ("walk_weight", "jog_weight", "run_weight"))
    assert n.branch_bits() == {"walk": 0, "walk_motion": 0, "jog": 1, "jog_motion": 1, "run": 2, "run_motion": 2}
    assert n.input_weights()["jog"].port == "jog_weight" and n.input_weights()["run_motion"].port == "run_weight"
    assert n.sync_group == "" and n.sync_inputs() == {"walk": "bs", "jog": "bs", "run": "bs"}  # "": the node's id
    assert node(sync_group="feet").sync_inputs() == {"walk": "feet", "jog": "feet", "run": "feet"}
    off = node(sync_group=None)
    assert off.sync_inputs() == {}
    # null survives a save and a load (it is not the default)
    again = BlendSpace1d.model_validate(off.model_dump(exclude_defaults=True, mode="json") | {"type": "blend_space_1d"})
    assert again.sync_group is None


def test_renaming_an_entry_in_the_editor_renames_its_links():
    from animgraph.editor.document import Document

    doc = Document(space_graph())
    doc.set_field("bs", "entries", [{"name": "stroll", "at": 1.0}, ENTRIES[1], ENTRIES[2]])
    links = [list(ln) for ln in doc.graph.links]
    assert ["s_walk.pose", "bs.stroll"] in links and ["s_walk.motion", "bs.stroll_motion"] in links
    assert ["bs.stroll_weight", "w_walk.value"] in links


# ------------------------------------------------------------------ weights


@pytest.mark.parametrize("x, want", [
    (-5.0, {0: 1.0}), (1.0, {0: 1.0}), (1.75, {0: 0.5, 1: 0.5}), (2.0, {0: 1 / 3, 1: 2 / 3}), (2.5, {1: 1.0}),
    (3.7, {1: 0.2, 2: 0.8}), (4.0, {2: 1.0}), (1e9, {2: 1.0}),
])
def test_piecewise_linear_weights_by_hand(x, want):
    got = weights_at(node(), x, 0.3)
    assert set(got) == set(want)
    for e, w in want.items():
        assert got[e][0] == pytest.approx(w, abs=1e-12)
    rates = {e: r for e, (_, r) in got.items()}
    if len(want) == 1:
        assert list(rates.values()) == [0.0]  # alone: clamped, or exactly at the entry
    else:
        lo, hi = sorted(want)
        assert rates[hi] == pytest.approx(0.3 / 1.5) and rates[lo] == pytest.approx(-0.3 / 1.5)


def test_entries_in_any_file_order_sort_by_their_values():
    shuffled = [ENTRIES[2], ENTRIES[0], ENTRIES[1]]  # run, walk, jog
    got = weights_at(node(shuffled), 3.7, 1.0)
    assert set(got) == {0, 2} and got[0][0] == pytest.approx(0.8) and got[2][0] == pytest.approx(0.2)
    assert got[0][1] == pytest.approx(1 / 1.5)


def dense(node, x, dx=0.0):
    out = np.zeros(len(node.entries))
    rate = np.zeros(len(node.entries))
    for e, (w, r) in weights_at(node, x, dx).items():
        out[e], rate[e] = w, r
    return out, rate


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=2, max_size=8, unique=True), st.floats(-150, 150),
       st.floats(-150, 150))
def test_weights_sum_to_one_and_are_continuous_along_any_path(ats, x0, x1):
    gaps = np.diff(sorted(ats))
    assume(gaps.min() > 1e-6)
    n = node([{"name": f"e{i}", "at": a} for i, a in enumerate(ats)])
    lipschitz = 1.0 / gaps.min()
    prev, steps = None, 400
    for k in range(steps + 1):
        x = x0 + (x1 - x0) * k / steps
        w = dense(n, x)[0]
        assert np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
        if prev is not None:
            assert np.abs(w - prev).max() <= lipschitz * abs(x1 - x0) / steps * (1 + 1e-9) + 1e-12
        prev = w


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 5.0), st.floats(-3.0, 3.0))
def test_weight_rates_equal_central_differences_away_from_the_entries(x, dx):
    n, h = node(), 1e-4
    if min(abs(x - e["at"]) for e in ENTRIES) < 10 * h * max(abs(dx), 1.0):
        return
    rate = dense(n, x, dx)[1]
    wt = [dense(n, x + k * h * dx)[0] for k in (-2, -1, 1, 2)]
    fd = (wt[0] - 8 * wt[1] + 8 * wt[2] - wt[3]) / (12 * h)
    np.testing.assert_allclose(rate, fd, atol=1e-6)


# ------------------------------------------------------------------ the op


def test_op_at_an_entry_is_its_pose_and_between_two_the_two_way_blend():
    skel, clip = ag.data.load("walk")
    poses = [ag.ops.sample(clip, t, "cubic") for t in (0.2, 0.6, 1.0)]
    at_jog = ag.ops.blend_space_1d(poses, [0.0, 1.0, 3.0], 1.0, 0.7)
    for f in ("pos", "rot", "vel", "ang"):
        np.testing.assert_array_equal(getattr(at_jog, f), getattr(poses[1], f))
    between = ag.ops.blend_space_1d(poses, [0.0, 1.0, 3.0], 2.5, 0.7)
    two = ag.ops.blend(poses[1], poses[2], 0.75, 0.35)
    for f in ("pos", "rot", "vel", "ang"):
        np.testing.assert_allclose(getattr(between, f), getattr(two, f), atol=1e-5)


def test_op_refuses_bad_arguments():
    skel, clip = ag.data.load("walk")
    poses = [ag.ops.sample(clip, t, "cubic") for t in (0.2, 0.6)]
    with pytest.raises(ValueError, match="both at"):
        ag.ops.blend_space_1d(poses, [1.0, 1.0], 0.5)
    with pytest.raises(ValueError, match="3 values"):
        ag.ops.blend_space_1d(poses, [0.0, 1.0, 2.0], 0.5)
    with pytest.raises(ValueError, match="finite"):
        ag.ops.blend_space_1d(poses, [0.0, 1.0], float("nan"))


# ------------------------------------------------------------------ whole graphs


def speed_at(t):
    """A ramp from walk through jog to run and back (m/s-like units of the entries), with its rate."""
    w = 2 * np.pi / 4.0
    return 1.2 + 1.3 * (1 - np.cos(w * t)), 1.3 * w * np.sin(w * t)


@pytest.mark.parametrize("at", [0.4, 1.1, 1.9, 2.6])
def test_world_velocities_equal_central_differences_while_the_speed_ramps(at):
    plan = ag.compile(space_graph())
    inst, parents = plan.instance(), plan.skeleton.parents
    clock, dt = 0.0, 1 / 60
    while clock < at - 1e-9:
        step = min(dt, at - clock)
        clock += step
        inst.step(step, {"speed": speed_at(clock)})
    x = speed_at(clock)[0]
    assert min(abs(x - e["at"]) for e in ENTRIES) > 0.05, x  # no entry crossed inside the stencil

    def step(h):
        nonlocal clock
        clock += h
        return inst.step(h, {"speed": speed_at(clock)})["out"]

    err, err_ang = world_velocity_errors(step, parents, 1e-3)
    assert err.max() < 2e-3 and err_ang.max() < 2e-3, (at, err.max(), err_ang.max())


def clock(inst, node_id, c=0):
    """The own clock (s) of sample ``node_id`` for character ``c``: what moves only while the sample runs."""
    from animgraph.executor import OP_STATE
    from animgraph.nodes.sample import ST as SAMPLE_ST

    plan = inst.plan
    return float(inst.st[c, plan.ops[plan.op(node_id), OP_STATE] + SAMPLE_ST.clock])


@pytest.mark.parametrize("how", ["compiled", "python", "lanes"])
def test_only_the_live_entries_samples_run_and_resume_without_a_restart(how):
    """Between walk and jog, run's sample never runs; past jog, walk's pauses where it was; back below jog, walk
    resumes from there (no restart: a blend space's clips keep their place).  The same on every executor."""
    plan = ag.compile(space_graph(), batch=16 if how == "lanes" else 1)
    assert plan.checked.gates == {"s_walk": [("bs", 1)], "s_jog": [("bs", 2)], "s_run": [("bs", 4)]}
    inst = plan.instance(python=how == "python", lanes=how == "lanes", parallel=False if how != "lanes" else None)
    dt = 1 / 60
    for f in range(30):
        out = inst.step(dt, {"speed": 1.8})
    assert clock(inst, "s_walk") == pytest.approx(30 * dt) and clock(inst, "s_jog") == pytest.approx(30 * dt)
    assert clock(inst, "s_run") == 0.0  # weight 0 throughout: never ran
    first = {e["name"]: out[f"w_{e['name']}"].reshape(-1, 2)[0] for e in ENTRIES}  # character 0's (weight, rate)
    assert first["run"][0] == 0.0 and first["walk"][0] + first["jog"][0] == pytest.approx(1.0)
    for f in range(20):
        inst.step(dt, {"speed": 3.0})
    assert clock(inst, "s_walk") == pytest.approx(30 * dt) and clock(inst, "s_run") == pytest.approx(20 * dt)
    for f in range(10):
        inst.step(dt, {"speed": 2.0})
    assert clock(inst, "s_walk") == pytest.approx(40 * dt)  # resumed, not restarted
    assert clock(inst, "s_run") == pytest.approx(20 * dt)
    if how == "lanes":
        from animgraph.executor import OP_STATE

        at = plan.ops[plan.op("s_walk"), OP_STATE]
        assert np.all(inst.st[:, at] == inst.st[0, at])


def test_weights_and_root_motion_outputs_follow_the_live_entries():
    plan = ag.compile(space_graph())
    inst = plan.instance(python=True)
    out = inst.step(1 / 60, {"speed": (2.0, 0.6)})
    assert out["w_walk"] == pytest.approx([1 / 3, -0.4]) and out["w_jog"] == pytest.approx([2 / 3, 0.4])
    assert list(out["w_run"]) == [0.0, 0.0]
    walk, jog = inst.port("s_walk", "motion"), inst.port("s_jog", "motion")
    np.testing.assert_allclose(out["motion"], walk / 3 + 2 * jog / 3, atol=1e-12)


def test_a_nan_speed_is_refused_by_the_input_changing_nothing():
    inst = ag.compile(space_graph()).instance(python=True)
    inst.step(1 / 60, {"speed": 2.0})
    before = inst.st.copy()
    with pytest.raises(GraphError, match="speed"):
        inst.step(1 / 60, {"speed": float("nan")})
    assert np.array_equal(inst.st, before)


def test_lane_executor_equals_the_per_character_one_with_characters_across_the_space():
    graph, batch = space_graph(), 19
    lanes = ag.compile(graph, batch=batch).instance(lanes=True)
    chars = ag.compile(graph, batch=batch).instance(lanes=False, parallel=False)
    seen = set()
    for f in range(120):
        speeds = [speed_at((f / 60 + 0.41 * c) % 4.0) for c in range(batch)]
        value = (np.array([s[0] for s in speeds]), np.array([s[1] for s in speeds]))
        a, b = lanes.step(1 / 60, {"speed": value}), chars.step(1 / 60, {"speed": value})
        for x, y in zip(a["out"].as_tuple(), b["out"].as_tuple()):
            np.testing.assert_allclose(x, y, atol=1e-5, rtol=1e-5)
        seen |= {int(np.argmax([a[f"w_{e['name']}"][c][0] for e in ENTRIES])) for c in range(batch)}
    assert seen == {0, 1, 2}
