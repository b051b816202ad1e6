"""The planner: op table, pose slot liveness, signal and parameter layout, assets (no compiling)."""

from typing import Literal

import numpy as np
import pytest

import animgraph as ag
from animgraph import graph as graph_mod
from animgraph.executor import OP_KIND, OP_PAR, OP_PAR_END, OP_STATE, OP_STATE_END, OP_WIDTH, kinds
from animgraph.node import REGISTRY, SIGNAL_SIZE, Node, Port, register
from animgraph.nodes.sample import key_table
from animgraph.plan import make_plan


def graph(nodes, links, assets=None, file=None):
    g = ag.Graph.from_dict(
        {"format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk"} if assets is None else assets,
         "nodes": nodes, "links": links},
        file=file,
    )
    return g


def chain(*types):
    """rest -> types... -> out, linked by their pose ports."""
    nodes = [{"id": "rest", "type": "constant", "signal": "pose"}]
    nodes += [{"id": f"n{i}", "type": t} for i, t in enumerate(types)]
    nodes.append({"id": "out", "type": "output"})
    ids = [n["id"] for n in nodes]
    return nodes, [[f"{a}.pose", f"{b}.pose"] for a, b in zip(ids, ids[1:])]


def rows(plan):
    """(node id, input locators, output locators) per op."""
    return [(nid, list(plan.io[r[1]:r[2]]), list(plan.io[r[2]:r[3]])) for nid, r in zip(plan.order, plan.ops)]


def check_liveness(plan):
    """Every pose input reads the slot its source wrote, unclobbered since; outputs' slots are never rewritten."""
    written = {}  # slot -> (node, port) whose value it holds
    pinned = {loc for kind, loc, _ in plan.outputs.values() if kind == "pose"}
    for nid, ins, outs in rows(plan):
        node = plan.nodes[nid]
        in_ports, out_ports = node.inputs(), node.outputs()
        for port, loc in zip(in_ports, ins):
            src = plan.checked.feeds.get((nid, port.name))
            if port.signal == "pose" and src is not None:
                assert written[loc] == src, f"{nid}.{port.name} reads slot {loc} holding {written[loc]}, not {src}"
        read = {p.name: i for p, i in zip(in_ports, ins) if p.signal == "pose"}
        for port, loc in zip(out_ports, outs):
            if port.signal == "pose":
                if loc in read.values():  # only an IN_PLACE output, over its own input, read by nobody later
                    inp = node.IN_PLACE.get(port.name)
                    assert read.get(inp) == loc and list(read.values()).count(loc) == 1, f"{nid} writes a slot it reads"
                    src = plan.checked.feeds[(nid, inp)]
                    later = [(n, p) for n, p in plan.checked.feeds if plan.checked.feeds[(n, p)] == src
                             and plan.order.index(n) > plan.order.index(nid)]
                    assert not later and src[0] not in plan.outputs, f"{nid} overwrites {src}, still needed"
                if loc in pinned:
                    assert written.get(loc, (None,))[0] not in plan.outputs, f"output slot {loc} rewritten by {nid}"
                written[loc] = (nid, port.name)


def test_chain_reuses_two_slots_and_pins_the_output():
    plan = make_plan(graph(*chain("fk", "bk", "fk", "bk", "fk", "bk")))
    check_liveness(plan)
    assert plan.n_slots == 2, "two slots ping-pong; the output takes the one its input no longer needs"
    assert [ag.executor.kinds()[k] for k in plan.ops[:, OP_KIND]] == ["constant"] + ["fk", "bk"] * 3 + ["output"]


def test_fan_out_liveness():
    nodes = [
        {"id": "rest", "type": "constant", "signal": "pose"},
        {"id": "frame", "type": "constant", "signal": "pose", "clip": "walk", "frame": 5},
        {"id": "fk1", "type": "fk"}, {"id": "fk2", "type": "fk"},
        {"id": "bk1", "type": "bk"}, {"id": "bk2", "type": "bk"},
        {"id": "o1", "type": "output"}, {"id": "o2", "type": "output"}, {"id": "o3", "type": "output"},
        {"id": "o4", "type": "output"},
    ]
    links = [["rest.pose", "fk1.pose"], ["frame.pose", "fk2.pose"], ["fk1.pose", "bk1.pose"], ["fk2.pose", "bk2.pose"],
             ["fk1.pose", "o1.pose"], ["bk2.pose", "o2.pose"], ["rest.pose", "o3.pose"], ["bk1.pose", "o4.pose"]]
    plan = make_plan(graph(nodes, links))
    check_liveness(plan)
    results = [loc for kind, loc, _ in plan.outputs.values()]
    assert len(set(results)) == len(results) == 4


IK_LEG = {"type": "two_bone_ik", "root": "LeftUpLeg", "mid": "LeftLeg", "end": "LeftFoot"}


def test_in_place_ops_take_over_their_input_slot_only_when_nobody_reads_it_later():
    nodes = [{"id": "clip", "type": "sample", "clip": "walk"}, {"id": "ik1", **IK_LEG}, {"id": "ik2", **IK_LEG},
             {"id": "fk", "type": "fk"}, {"id": "out", "type": "output"},
             {"id": "target", "type": "constant", "signal": "vec3", "value": [0.1, 0.1, 0.2]}]
    links = [["clip.pose", "ik1.pose"], ["ik1.pose", "ik2.pose"], ["ik2.pose", "fk.pose"], ["fk.pose", "out.pose"],
             ["target.value", "ik1.target"], ["target.value", "ik2.target"]]
    plan = make_plan(graph(nodes, links))
    check_liveness(plan)
    slot = {nid: outs[0] for nid, _, outs in rows(plan)}
    assert slot["clip"] == slot["ik1"] == slot["ik2"] != slot["fk"], "the IK chain runs in one slot"
    # The clip's pose read again after ik1 (a second output): ik1 must not overwrite it.
    plan = make_plan(graph(nodes + [{"id": "raw", "type": "output"}], links + [["clip.pose", "raw.pose"]]))
    check_liveness(plan)
    slot = {nid: outs[0] for nid, _, outs in rows(plan)}
    assert slot["ik1"] != slot["clip"] and slot["ik2"] == slot["ik1"]
    # A debug plan keeps every node's output: nothing in place.
    plan = make_plan(graph(nodes, links), reuse_slots=False)
    poses = [outs[0] for nid, _, outs in rows(plan) if nid != "target"]
    assert len(set(poses)) == len(poses)


def test_op_ranges_tile_params_and_state():
    nodes, links = chain("fk")
    nodes.append({"id": "w", "type": "input", "signal": "vec3", "default": [1, 2, 3]})
    nodes.append({"id": "wo", "type": "output", "signal": "vec3"})
    links.append(["w.value", "wo.value"])
    plan = make_plan(graph(nodes, links))
    assert plan.ops[0, OP_PAR] == 0 and plan.ops[-1, OP_PAR_END] == len(plan.par)
    assert np.all(plan.ops[1:, OP_PAR] == plan.ops[:-1, OP_PAR_END]) and np.all(plan.ops[1:, OP_STATE] == plan.ops[:-1, OP_STATE_END])
    assert plan.ops[-1, OP_STATE_END] == plan.n_state
    for nid, r in zip(plan.order, plan.ops):
        np.testing.assert_array_equal(plan.par[r[4]:r[5]], plan.nodes[nid].params(plan.ctx))
    off, kind = plan.inputs["w"]
    assert kind == "vec3"
    np.testing.assert_array_equal(plan.sig_init[off:off + SIGNAL_SIZE["vec3"]], [1, 2, 3, 0, 0, 0])
    # The executor's table holds the same op rows, locators and parents.
    t = plan.table
    n, ops_at, io_at, parents_at = t[:4]
    np.testing.assert_array_equal(t[ops_at:ops_at + OP_WIDTH * n].reshape(n, OP_WIDTH), plan.ops)  # no early kernels here
    np.testing.assert_array_equal(t[io_at:parents_at], plan.io)
    np.testing.assert_array_equal(t[parents_at:], plan.skeleton.parents)


def test_assets_share_one_frame_array(tmp_path):
    skel, walk = ag.data.load("walk")
    _, jog = ag.data.load("jog")
    short = ag.Clip(skel, walk.pos[:7], walk.rot[:7], dt=1 / 30)
    ag.save_bvh(tmp_path / "short.bvh", skel, short)
    g = graph(*chain(), assets={"walk": "animgraph:walk", "jog": "animgraph:jog", "short": "short.bvh"},
              file=tmp_path / "g.json")
    plan = make_plan(g)
    r = plan.clips
    assert (r["walk"].start, r["walk"].frames) == (0, walk.frames)
    assert (r["jog"].start, r["jog"].frames) == (walk.frames, jog.frames)
    assert r["short"].start == walk.frames + jog.frames and r["short"].frames == 7
    assert r["short"].dt == pytest.approx(1 / 30)
    pos, rot, scl, parents = plan.db
    keys, unit, motion, contacts = plan.tables["sample"]  # the sample node's CLIP_TABLES, through the registry
    assert pos.dtype == np.float32 and pos.shape == (walk.frames + jog.frames + 7, len(skel), 3)
    np.testing.assert_array_equal(rot[r["jog"].start:r["jog"].start + jog.frames], jog.rot)
    np.testing.assert_allclose(pos[r["short"].start:], walk.pos[:7], atol=1e-4)  # BVH text round trip
    assert parents.dtype == np.int64
    # The sample node's key table of each clip, and its all-scales-1 flag on every frame.
    np.testing.assert_array_equal(keys[r["jog"].start:r["jog"].start + jog.frames], key_table(jog)[0])
    assert keys.dtype == np.float32 and unit.shape == (len(pos),) and np.all(unit == 1.0)
    # No node asked for a root-motion variant: no extra frames, the root motion rows are zero.
    assert motion.shape == (len(pos), 6) and not motion.any()
    assert contacts.shape == (len(pos), 2)
    every_table = [a for kind_tables in plan.tables.values() for a in kind_tables]  # the executor's kind order
    np.testing.assert_array_equal(plan.clipbuf, np.concatenate([a.ravel() for a in (pos, rot, scl, *every_table)]))


def test_missing_asset_file_names_the_node_using_it(tmp_path):
    nodes = [{"id": "frame", "type": "constant", "signal": "pose", "clip": "run", "frame": 2},
             {"id": "out", "type": "output"}]
    g = graph(nodes, [["frame.pose", "out.pose"]], assets={"run": "clips/run.bvh"}, file=tmp_path / "g.json")
    with pytest.raises(ag.GraphError) as info:
        make_plan(g)
    err = info.value
    assert (err.node, err.port) == ("frame", "clip")
    assert "file not found" in str(err) and "run.bvh" in str(err) and "g.json" in str(err)


def test_unknown_bundled_clip():
    g = graph(*chain(), assets={"walk": "animgraph:moonwalk"})
    with pytest.raises(ag.GraphError, match="no bundled clip 'moonwalk'"):
        make_plan(g)


def test_unknown_asset_names_node_and_field():
    nodes = [{"id": "frame", "type": "constant", "signal": "pose", "clip": "nope"}, {"id": "out", "type": "output"}]
    with pytest.raises(ag.GraphError) as info:
        make_plan(graph(nodes, [["frame.pose", "out.pose"]]))
    assert (info.value.node, info.value.port) == ("frame", "clip")
    assert "unknown clip asset 'nope'" in str(info.value)


def test_assets_must_share_a_skeleton():
    skel, walk = ag.data.load("walk")
    small = ag.Skeleton(["a", "b"], [-1, 0], np.zeros((2, 3)))
    other = ag.Clip(small, np.zeros((3, 2, 3)), np.tile([1.0, 0, 0, 0], (3, 2, 1)))
    nodes = [{"id": "frame", "type": "constant", "signal": "pose", "clip": "other"}, {"id": "out", "type": "output"}]
    with pytest.raises(ag.GraphError, match="different skeleton") as info:
        make_plan(graph(nodes, [["frame.pose", "out.pose"]]), assets={"other": other})
    assert info.value.node == "frame"


def test_pose_graph_needs_a_skeleton():
    with pytest.raises(ag.GraphError, match="no skeleton"):
        make_plan(graph(*chain("fk"), assets={}))


def test_frame_past_the_clip_end():
    nodes = [{"id": "frame", "type": "constant", "signal": "pose", "clip": "walk", "frame": 10**6},
             {"id": "out", "type": "output"}]
    with pytest.raises(ag.GraphError) as info:
        make_plan(graph(nodes, [["frame.pose", "out.pose"]]))
    assert (info.value.node, info.value.port) == ("frame", "frame")


# ---------------------------------------------------------------- constant signals from fields


def _probe_kernel(ins, outs, par, st, pose, sig, db, dt):
    pass


@pytest.fixture
def probe():
    """A test-only node type with a signal input backed by a field of the same name (never compiled)."""

    @register(_probe_kernel)
    class Probe(Node):
        type: Literal["plan_probe"] = "plan_probe"
        gain: float | None = 1.5
        aim: list[float] | None = None
        INPUTS = (Port("pose", "pose", "any"), Port("gain", "scalar", "", "", True),
                  Port("aim", "vec3", "", "", True))
        OUTPUTS = (Port("pose", "pose", "any"),)

    graph_mod.sync_registry()
    yield
    REGISTRY.pop("plan_probe")
    graph_mod.sync_registry()


def test_unlinked_signal_inputs_take_the_field_value(probe):
    nodes, links = chain()
    nodes.insert(1, {"id": "p", "type": "plan_probe", "gain": 0.25})
    nodes.insert(1, {"id": "q", "type": "plan_probe", "aim": [1, 2, 3]})
    nodes.insert(1, {"id": "k", "type": "constant", "signal": "scalar", "value": 4})
    links = [["rest.pose", "p.pose"], ["p.pose", "q.pose"], ["q.pose", "out.pose"], ["k.value", "q.gain"]]
    plan = make_plan(graph(nodes, links))
    (_, p_ins, _), (_, q_ins, _) = [r for r in rows(plan) if r[0] in ("p", "q")]
    off, kind = plan.constants[("p", "gain")]
    assert p_ins[1] == off and kind == "scalar"
    np.testing.assert_array_equal(plan.sig_init[off:off + 2], [0.25, 0.0])
    assert p_ins[2] == -1, "a None field leaves the input unlinked"
    off, _ = plan.constants[("q", "aim")]
    np.testing.assert_array_equal(plan.sig_init[off:off + 6], [1, 2, 3, 0, 0, 0])
    assert ("q", "gain") not in plan.constants, "a linked input takes its link"
    assert plan.ops[:, OP_KIND].tolist().count(kinds().index("plan_probe")) == 2


def test_unknown_joint_names_node_and_field():
    nodes = [{"id": "frame", "type": "constant", "signal": "pose", "clip": "walk"},
             {"id": "aim", "type": "input", "signal": "vec3"},
             {"id": "look", "type": "look_at", "joint": "tail"}, {"id": "out", "type": "output"}]
    links = [["frame.pose", "look.pose"], ["aim.value", "look.target"], ["look.pose", "out.pose"]]
    with pytest.raises(ag.GraphError, match="unknown joint 'tail'") as info:
        make_plan(graph(nodes, links, file="g.json"))
    assert (info.value.node, info.value.port) == ("look", "joint")
    assert "g.json" in str(info.value)


@pytest.fixture
def tabled():
    """A test-only node type with per-clip tables and a clip variant of its own (never compiled)."""
    from animgraph.node import ClipTable, db_indices

    frame_no = ClipTable("frame_no", (), lambda clip: np.arange(clip.frames, dtype=np.float32))
    heights = ClipTable("heights", ("joints", 1), lambda clip: clip.pos[..., 1:2])

    @register(_probe_kernel)
    class Tabled(Node):
        type: Literal["plan_tabled"] = "plan_tabled"
        clip: str = "walk"
        CLIP_TABLES = (frame_no, heights)
        INPUTS = (Port("pose", "pose", "any"),)
        OUTPUTS = (Port("pose", "pose", "any"),)

        def clip_variants(self):
            return ((self.clip, "reversed"),)

        @classmethod
        def clip_variant(cls, skeleton, clip, variant):
            return ag.Clip(skeleton, clip.pos[::-1], clip.rot[::-1], clip.scl[::-1], clip.dt)

        def params(self, ctx):
            r = ctx.clip(self, "clip", self.clip, "reversed")
            return np.array([r.start, r.frames], np.float64)

    assert db_indices(Tabled.CLIP_TABLES) == (4, 5)
    graph_mod.sync_registry()
    yield
    REGISTRY.pop("plan_tabled")
    graph_mod.sync_registry()


def test_a_node_type_brings_its_own_tables_and_variants(tabled):
    """Per-asset precomputation is a registry hook: the planner and the executor name no node module."""
    from animgraph import executor

    nodes, links = chain()
    nodes.insert(1, {"id": "t", "type": "plan_tabled"})
    links = [["rest.pose", "t.pose"], ["t.pose", "out.pose"]]
    plan = make_plan(graph(nodes, links))
    walk = plan.clips["walk"]
    start, frames = plan.par[plan.ops[plan.op("t"), OP_PAR]:plan.ops[plan.op("t"), OP_PAR_END]].astype(int)
    assert (start, frames) == (plan.clips[("walk", "reversed")].start, walk.frames) and start >= walk.frames
    pos = plan.db[0]
    np.testing.assert_array_equal(pos[start:start + frames], pos[walk.start:walk.start + frames][::-1])
    frame_no, heights = plan.tables["plan_tabled"]
    np.testing.assert_array_equal(frame_no[start:start + frames], np.arange(frames))
    np.testing.assert_array_equal(heights[..., 0], pos[..., 1])
    # The generated executor hands the node type a db of the four common arrays and its two tables.
    text = executor.source(executor.kinds())
    i = executor.kinds().index("plan_tabled")
    assert "# plan_tabled.frame_no" in text and f"db{i} = (db[0], db[1], db[2], db[3]," in text



def test_fields_name_offsets_and_pack_by_name():
    from animgraph.node import fields, port_indices

    par = fields("Par", joints=4, radius=1, hinge=3)
    assert (par.joints, par.radius, par.hinge, par.SIZE) == (0, 4, 5, 8)
    np.testing.assert_array_equal(par.pack(hinge=(1, 0, 0), radius=0.2, joints=[5, 6, 7, 8]),
                                  [5, 6, 7, 8, 0.2, 1, 0, 0])
    with pytest.raises(ValueError, match="missing"):
        par.pack(joints=[1, 2, 3, 4], radius=1)
    with pytest.raises(ValueError, match="hinge"):
        par.pack(joints=[1, 2, 3, 4], radius=1, hinge=(1, 0))
    with pytest.raises(ValueError):
        fields("Bad", a=0)
    ins = port_indices("In", (Port("pose", "pose", "any"), Port("alpha", "scalar")))
    assert (ins.pose, ins.alpha) == (0, 1)


def test_core_modules_name_no_node_module():
    """node, plan, executor, instance, runtime and check import no node module; plan does not import runtime."""
    import ast
    from pathlib import Path

    core = Path(ag.__file__).parent
    for name in ("node", "plan", "executor", "instance", "runtime", "check", "graph"):
        tree = ast.parse((core / f"{name}.py").read_text())
        imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        nodes = {m for m in imported if m.startswith(("nodes.", "animgraph.nodes."))}
        assert not nodes, (name, nodes)
        if name == "plan":
            assert "runtime" not in imported and "animgraph.runtime" not in imported
