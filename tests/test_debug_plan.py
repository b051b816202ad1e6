"""The debug plan (``reuse_slots=False``): every node's output readable after a step, graph outputs unchanged.

References: the default plan of the same graph (bit-identical outputs), and the same
graph with an extra output node on the port read (the value that port carries).
"""

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.plan import make_plan

DT = 1 / 60


def drive(frame, batch, known):
    """Switches, a moving weight, contacts and a look target, for whichever of them the graph has."""
    phase = (frame // 9) % 3
    inputs = {
        "clip": phase,
        "gait": np.arange(batch) % 3 if frame < 12 else phase,
        "alpha": (0.5 + 0.4 * np.sin(frame / 6.0), 0.4 * 10.0 * np.cos(frame / 6.0)),
        "rate": 1.0 + 0.2 * phase,
        "left_contact": (frame // 6) % 2 == 0,
        "right_contact": (frame // 6) % 2 == 1,
        "look_target": (np.sin(frame / 9.0), 1.6, 2.0),
    }
    return {k: v for k, v in inputs.items() if k in known}


def pose_ports(plan):
    return [(nid, name) for nid in plan.order for name, p in plan.checked.outputs[nid].items() if p.signal == "pose"]


@pytest.mark.parametrize("batch", [1, 2, 19])  # 19: lane tiles, a full and a padded one
@pytest.mark.parametrize("name", graphs.names())
def test_debug_plan_outputs_are_bit_identical(name, batch):
    """Also the in-place ops (``Node.IN_PLACE``) of the default plan against the debug plan's separate slots."""
    default = ag.compile(graphs.path(name), batch=batch).instance()
    debug = ag.compile(graphs.path(name), batch=batch, reuse_slots=False).instance()
    plan = debug.plan
    slots = [plan.located[p] for p in pose_ports(plan)]
    assert len(set(slots)) == len(slots) == plan.n_slots  # one slot per pose output, none shared
    assert default.plan.n_slots <= plan.n_slots
    for frame in range(50):
        inputs = drive(frame, batch, plan.inputs)
        a, b = default.step(DT, inputs), debug.step(DT, inputs)
        for nid in a:
            x = a[nid].as_tuple() if isinstance(a[nid], ag.Pose) else (a[nid],)
            y = b[nid].as_tuple() if isinstance(b[nid], ag.Pose) else (b[nid],)
            for u, v in zip(x, y):
                np.testing.assert_array_equal(u, v, err_msg=f"{name} {nid} frame {frame}")


def with_output_on(name, node, port, signal="pose"):
    """The shipped graph with one more output node fed by ``node.port``."""
    g = ag.Graph.load(graphs.path(name))
    data = g.to_dict()
    data["nodes"].append({"id": "probe", "type": "output", "signal": signal})
    data["links"].append([f"{node}.{port}", "probe.pose" if signal == "pose" else "probe.value"])
    return ag.Graph.from_dict(data, file=g.path)


@pytest.mark.parametrize("node", ["walk", "run", "pick", "smooth"])
def test_port_reads_what_the_node_output(node):
    debug = ag.compile(graphs.path("select_inertialize"), reuse_slots=False).instance()
    probed = ag.compile(with_output_on("select_inertialize", node, "pose")).instance()
    view = debug.port(node, "pose")
    for frame in range(40):
        inputs = drive(frame, 1, debug.plan.inputs)
        debug.step(DT, inputs)
        want = probed.step(DT, inputs)["probe"]  # placed at the origin: the identity placement
        for f in ("pos", "rot", "vel", "ang"):
            np.testing.assert_array_equal(getattr(view, f), getattr(want, f), err_msg=f"{node} {f} frame {frame}")


def test_signal_port_and_batch_shapes():
    debug = ag.compile(graphs.path("select_inertialize"), batch=3, reuse_slots=False).instance()
    changed = debug.port("pick", "changed")
    assert changed.shape == (3, 1) and debug.port("pick", "pose").pos.shape == (3, debug.plan.joints, 3)
    debug.step(DT, {"clip": 0})
    debug.step(DT, {"clip": [0, 2, 0]})
    np.testing.assert_array_equal(changed[:, 0], [0.0, 1.0, 0.0])
    # Signals have their own blocks in every plan: readable from the default plan too.
    default = ag.compile(graphs.path("select_inertialize")).instance()
    default.step(DT, {"clip": 0})
    default.step(DT, {"clip": 1})
    np.testing.assert_array_equal(default.port("pick", "changed"), [1.0])


def test_port_errors_name_node_and_port():
    default = ag.compile(graphs.path("select_inertialize")).instance()
    out = default.step(DT)
    np.testing.assert_array_equal(default.port("out", "pose").pos, out["out"].pos)  # outputs keep their slots
    for node, port, says in [("pick", "pose", "reuse_slots=False"), ("nope", "pose", "not a scheduled node"),
                             ("pick", "nope", "unknown output port 'nope'")]:
        with pytest.raises(ag.GraphError, match=says) as e:
            default.port(node, port)
        assert "\n" not in str(e.value) and node in str(e.value)


def test_make_plan_never_compiles_and_records_every_output():
    g = ag.Graph.load(graphs.path("gaits"))
    plan = make_plan(g, reuse_slots=False)
    assert plan.executor is None and not plan.reuse_slots
    want = {(nid, name) for nid in plan.order for name in plan.checked.outputs[nid]}
    assert set(plan.located) == want


def test_in_place_ops_on_a_fan_out_equal_separate_slots():
    """Two IKs read one pose (only the later may take its slot), one IK reads a blend: bit for bit the debug
    plan's outputs, per character and on lane tiles."""
    def leg(side):
        return {"type": "two_bone_ik", "root": f"{side}UpLeg", "mid": f"{side}Leg", "end": f"{side}Foot"}

    g = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "clip", "type": "sample", "clip": "walk", "loop": True},
                  {"id": "t", "type": "input", "signal": "vec3"},
                  {"id": "ik1", **leg("Left")}, {"id": "ik2", **leg("Right")}, {"id": "ik3", **leg("Left")},
                  {"id": "mix", "type": "blend", "alpha": 0.4},
                  {"id": "out", "type": "output"}, {"id": "o2", "type": "output"}],
        "links": [["clip.pose", "ik1.pose"], ["clip.pose", "ik2.pose"], ["t.value", "ik1.target"],
                  ["t.value", "ik2.target"], ["ik1.pose", "mix.a"], ["ik2.pose", "mix.b"], ["mix.pose", "ik3.pose"],
                  ["t.value", "ik3.target"], ["ik3.pose", "out.pose"], ["ik1.pose", "o2.pose"]]})
    for batch in (1, 19):
        a = ag.compile(g, batch=batch).instance()
        b = ag.compile(g, batch=batch, reuse_slots=False).instance()
        slot = {nid: a.plan.io[r[2]] for nid, r in zip(a.plan.order, a.plan.ops)}
        reads = {nid: a.plan.io[r[1]] for nid, r in zip(a.plan.order, a.plan.ops)}
        assert slot["ik1"] != reads["ik1"] and slot["ik2"] == reads["ik2"] and slot["ik3"] == reads["ik3"]
        for frame in range(30):
            inputs = {"t": (np.array([0.1 * np.sin(frame / 5), 0.2, 0.3]), np.array([0.1, 0.0, -0.2]))}
            x, y = a.step(DT, inputs), b.step(DT, inputs)
            for nid in x:
                for u, v in zip(x[nid].as_tuple(), y[nid].as_tuple()):
                    np.testing.assert_array_equal(u, v, err_msg=f"batch {batch} {nid} frame {frame}")


def test_an_output_placing_its_input_in_place_equals_separate_slots():
    """The output node takes over its input's slot (``IN_PLACE``): root motion integrated, a teleport, a local and a
    global pose; bit for bit the debug plan's outputs, per character and on lane tiles."""
    g = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "clip", "type": "sample", "clip": "walk", "loop": True, "root_motion": True},
                  {"id": "fk", "type": "fk"}, {"id": "local", "type": "output"}, {"id": "world", "type": "output"}],
        "links": [["clip.pose", "fk.pose"], ["clip.pose", "local.pose"], ["fk.pose", "world.pose"],
                  ["clip.motion", "local.motion"], ["clip.motion", "world.motion"]]})
    turn = np.array([np.cos(0.4), 0.0, np.sin(0.4), 0.0])
    for batch in (1, 19):
        a = ag.compile(g, batch=batch).instance()
        b = ag.compile(g, batch=batch, reuse_slots=False).instance()
        slot = {nid: a.plan.io[r[2]] for nid, r in zip(a.plan.order, a.plan.ops)}
        reads = {nid: a.plan.io[r[1]] for nid, r in zip(a.plan.order, a.plan.ops)}
        assert slot["world"] == reads["world"] == slot["fk"], "the world output places the FK pose in its slot"
        last = a.plan.order.index("local") > a.plan.order.index("fk")  # the clip pose's last reader takes it over
        assert (slot["local"] == reads["local"]) == last
        for frame in range(40):
            if frame == 17:
                for inst in (a, b):
                    inst.teleport([1.5, 0.0, -2.0], turn)
            x, y = a.step(DT), b.step(DT)
            assert np.abs(x["world"].pos).max() > 0.5 or frame < 17
            for nid in x:
                for u, v in zip(x[nid].as_tuple(), y[nid].as_tuple()):
                    np.testing.assert_array_equal(u, v, err_msg=f"batch {batch} {nid} frame {frame}")
