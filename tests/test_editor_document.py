"""The editor's document model without a window: every edit, its undo and redo, refusals, files."""

import json
import os
import stat

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import animgraph.graphs as shipped
from animgraph import data as bundled
from animgraph.editor.document import Document, EditError, Problem
from animgraph.errors import AnimgraphError, GraphError
from animgraph.graph import Graph
from animgraph.node import REGISTRY


def chain():
    """walk -> fk -> bk -> out, an input 'w' and a blend waiting to be wired (positions set), a spare asset."""
    doc = Document.new()
    doc.add_asset("jog", "animgraph:jog")
    doc.add_node("fk", pos=(100, 0))
    doc.add_node("bk", pos=(200, 0))
    doc.add_node("input", "w", pos=(0, 200))
    doc.add_node("blend", pos=(300, 200))
    doc.add_node("look_at", "look", pos=(0, 400))
    for src, dst in (("walk.pose", "fk.pose"), ("fk.pose", "bk.pose"), ("bk.pose", "out.pose")):
        doc.connect(src, dst)
    return doc


def unchanged(doc, edit):
    """Run a refused ``edit``: EditError, and nothing about the document changes (returns the reason)."""
    state = (doc.to_json(), doc.revision, doc.dirty, doc.can_undo, doc.can_redo)
    with pytest.raises(EditError) as err:
        edit(doc)
    assert (doc.to_json(), doc.revision, doc.dirty, doc.can_undo, doc.can_redo) == state
    assert "\n" not in str(err.value)
    return str(err.value)


# ---------------------------------------------------------------- every operation

EDITS = {
    "add_node": lambda d: d.add_node("blend", pos=(5, 6), alpha=0.25),
    "remove_node": lambda d: d.remove_node("fk"),
    "connect": lambda d: d.connect("w.value", "blend.alpha"),
    "connect_replacing": lambda d: d.connect("walk.pose", "out.pose"),
    "disconnect": lambda d: d.disconnect("fk.pose", "bk.pose"),
    "set_field": lambda d: d.set_field("walk", "rate", 0.5),
    "set_field_ports": lambda d: d.set_field("out", "signal", "scalar"),
    "set_field_axis": lambda d: d.set_field("look", "forward", [0.94, 0.342, 0.0]),  # normalized by the node
    "add_node_axis": lambda d: d.add_node("look_at", "look2", forward=[0.94, 0.342, 0.0]),
    "move": lambda d: d.move("fk", (12.5, -3)),
    "rename": lambda d: d.rename("fk", "forward"),
    "add_asset": lambda d: d.add_asset("run", "animgraph:run"),
    "set_asset": lambda d: d.set_asset("walk", {"path": "animgraph:walk", "first_frame": "keep"}),
    "remove_asset": lambda d: d.remove_asset("jog"),
    "set_description": lambda d: d.set_description("a walk, forward and back"),
}


def effect(name, doc):
    """What each edit in EDITS must have done, read from the graph."""
    g = doc.graph
    links = [tuple(ln) for ln in g.links]
    if name == "add_node":
        assert g.node("blend_2").alpha == 0.25 and doc.position("blend_2") == (5.0, 6.0)
    elif name == "remove_node":
        assert "fk" not in [n.id for n in g.nodes] and not any("fk." in a + b for a, b in links)
        assert "fk" not in g.editor["positions"]
    elif name == "connect":
        assert ("w.value", "blend.alpha") in links
    elif name == "connect_replacing":
        assert ("walk.pose", "out.pose") in links and ("bk.pose", "out.pose") not in links
    elif name == "disconnect":
        assert ("fk.pose", "bk.pose") not in links
    elif name == "set_field":
        assert g.node("walk").rate == 0.5
    elif name == "set_field_ports":  # the output's pose input is gone: its link goes in the same step
        assert g.node("out").signal == "scalar" and ("bk.pose", "out.pose") not in links
    elif name in ("set_field_axis", "add_node_axis"):
        assert np.allclose(g.node("look" if name == "set_field_axis" else "look2").forward, np.array([0.94, 0.342, 0]) / np.hypot(0.94, 0.342), 0, 1e-15)
    elif name == "move":
        assert doc.position("fk") == (12.5, -3.0) and g.editor["positions"]["fk"] == [12.5, -3]
    elif name == "rename":
        assert g.node("forward").type == "fk" and ("walk.pose", "forward.pose") in links
        assert ("forward.pose", "bk.pose") in links and doc.position("forward") == (100.0, 0.0)
    elif name == "add_asset":
        assert list(g.assets) == ["walk", "jog", "run"] and g.assets["run"] == "animgraph:run"
    elif name == "set_asset":
        assert g.assets["walk"].first_frame == "keep"
    elif name == "remove_asset":
        assert list(g.assets) == ["walk"]
    elif name == "set_description":
        assert g.description == "a walk, forward and back"


@pytest.mark.parametrize("name", sorted(EDITS))
def test_each_edit_undo_redo(name, tmp_path):
    doc = chain()
    doc.save(tmp_path / "g.json")
    before, rev = doc.to_json(), doc.revision
    assert not doc.dirty
    EDITS[name](doc)
    effect(name, doc)
    after = doc.to_json()
    assert after != before and doc.dirty and doc.revision > rev
    assert Graph.from_dict(json.loads(after)).to_json() == after  # a valid graph file
    r = doc.revision
    assert doc.undo() and doc.revision > r
    assert doc.to_json() == before and not doc.dirty  # back at the saved state
    assert doc.redo() and doc.revision > r + 1
    assert doc.to_json() == after and doc.dirty
    effect(name, doc)
    assert not doc.redo() and doc.can_undo


def test_new_document_is_valid_and_plays():
    doc = Document.new()
    assert not doc.dirty and doc.path is None and not doc.can_undo and not doc.can_redo
    assert list(doc.graph.assets) == ["walk"] and doc.graph.node("walk").loop
    assert doc.graph.node("walk").root_motion and ("walk.motion", "out.motion") in doc.graph.links  # walks on
    assert all(n.id in doc.graph.editor["positions"] for n in doc.graph.nodes)
    result = doc.validate()
    assert result.ok and not result.problems
    inst = result.plan.instance()
    first, second = (inst.step(1 / 60, {})["out"].pos.copy() for _ in range(2))
    assert first.shape[-2:] == (len(doc.joints()), 3) and np.all(np.isfinite(second))
    assert not np.array_equal(first, second)  # the walk plays


def test_new_edit_clears_redo_and_noops_leave_no_step():
    doc = chain()
    doc.move("fk", (1, 1))
    doc.undo()
    assert doc.can_redo
    doc.move("fk", (2, 2))
    assert not doc.can_redo
    rev, undo_depth = doc.revision, len(doc.history)
    doc.move("fk", (2, 2))  # the same position: nothing to undo
    doc.connect("fk.pose", "bk.pose")  # the same link
    doc.rename("fk", "fk")
    assert doc.revision == rev and len(doc.history) == undo_depth


def test_add_node_ids_fills_and_refusals():
    doc = Document.new()
    assert [doc.add_node("blend") for _ in range(3)] == ["blend", "blend_2", "blend_3"]
    ik_id = doc.add_node("two_bone_ik")
    ik = doc.graph.node(ik_id)
    skel = doc.skeleton()
    root, mid, end = (skel.index(j) for j in (ik.root, ik.mid, ik.end))
    assert skel.parents[mid] == root and skel.parents[end] == mid  # the fill is one limb
    sample = doc.add_node("sample")
    assert doc.graph.node(sample).clip == "walk"  # the first asset
    unchanged(doc, lambda d: d.add_node("no_such_type"))
    unchanged(doc, lambda d: d.add_node("blend", "walk"))
    unchanged(doc, lambda d: d.add_node("blend", "2bad"))
    why = unchanged(doc, lambda d: d.add_node("blend", alpha=2.0))
    assert "alpha" in why and "blend_4" in why
    assert "wobble" in unchanged(doc, lambda d: d.add_node("blend", wobble=1))
    unchanged(doc, lambda d: d.add_node("blend", pos=(float("nan"), 0)))


def test_refused_edits_change_nothing():
    doc = chain()
    doc.move("fk", (3, 4))
    doc.undo()  # something on both stacks
    assert "no node" in unchanged(doc, lambda d: d.remove_node("nope"))
    unchanged(doc, lambda d: d.disconnect("walk.pose", "bk.pose"))
    why = unchanged(doc, lambda d: d.set_field("walk", "rate", 1000.0))
    assert "'walk'" in why and "'rate'" in why
    unchanged(doc, lambda d: d.set_field("walk", "speed", 1.0))
    unchanged(doc, lambda d: d.set_field("walk", "id", "x"))
    unchanged(doc, lambda d: d.set_field("walk", "type", "fk"))
    unchanged(doc, lambda d: d.set_field("walk", "rate", "fast"))
    unchanged(doc, lambda d: d.move("walk", ("a", 1)))
    unchanged(doc, lambda d: d.rename("walk", "out"))
    unchanged(doc, lambda d: d.rename("walk", "has space"))
    unchanged(doc, lambda d: d.add_asset("walk", "animgraph:jog"))
    unchanged(doc, lambda d: d.set_asset("nope", "animgraph:jog"))
    unchanged(doc, lambda d: d.add_asset("x", {"path": "a.bvh", "units": -1}))
    assert "used by node 'walk'" in unchanged(doc, lambda d: d.remove_asset("walk"))
    assert "file not found" in unchanged(doc, lambda d: d.add_asset("x", "/nonexistent/a.bvh"))
    unchanged(doc, lambda d: d.set_description(3))
    unchanged(doc, lambda d: d.connect("walk.pose", "w.value"))


def test_signal_change_resets_value_fields_and_drops_links():
    doc = chain()
    doc.set_field("w", "default", 0.5)
    doc.connect("w.value", "blend.alpha")
    before = doc.to_json()
    doc.set_field("w", "signal", "vec3")  # 0.5 is no vec3: the default goes back to none, the scalar link goes
    assert doc.graph.node("w").default is None
    assert ["w.value", "blend.alpha"] not in [list(ln) for ln in doc.graph.links]
    doc.undo()
    assert doc.to_json() == before
    doc.add_node("select", count=3)
    doc.connect("walk.pose", "select.in2")
    doc.set_field("select", "count", 2)
    assert all("select.in2" not in ln for ln in doc.graph.links)


def test_ports_follow_fields():
    doc = Document.new()
    doc.add_node("select", count=3, signal="vec3")
    ins, outs = doc.ports("select")
    assert [p.name for p in ins] == ["in0", "in1", "in2", "index"] and ins[0].signal == "vec3"
    assert [p.name for p in outs] == ["value", "changed"]


# ---------------------------------------------------------------- refusing links, with the reason


def test_refused_links_say_why():
    doc = chain()
    why = unchanged(doc, lambda d: d.connect("walk.pose", "blend.alpha"))
    assert why == "signal mismatch: walk.pose is pose, blend.alpha takes scalar"
    why = doc.can_connect("fk.pose", "look.pose")  # a global pose into a local-only input
    assert why == "space mismatch: fk.pose is a global pose, this input takes a local pose"
    assert unchanged(doc, lambda d: d.connect("fk.pose", "look.pose")) == why
    assert doc.can_connect("bk.pose", "fk.pose") == "cycle: bk -> fk -> bk"
    assert doc.can_connect("fk.pose", "fk.pose") == "cycle: fk -> fk"
    assert doc.can_connect("walk.pose", "nope.a") == "link walk.pose -> nope.a: unknown node 'nope'"
    assert "unknown input port 'x'" in doc.can_connect("walk.pose", "blend.x")
    assert "unknown output port 'x'" in doc.can_connect("walk.x", "blend.a")
    assert "is not 'node.port'" in doc.can_connect("walk", "blend.a")


def test_space_refusal_through_any_nodes():
    doc = chain()
    doc.connect("walk.pose", "blend.a")  # the blend is local now
    why = doc.can_connect("fk.pose", "blend.b")
    assert why == "space mismatch: fk.pose is a global pose but blend.a has a local pose"
    doc.disconnect("walk.pose", "blend.a")
    doc.connect("blend.pose", "look.pose")  # 'any' into local: allowed while the blend is open
    why = doc.can_connect("fk.pose", "blend.a")
    assert why == "space mismatch downstream: blend.pose would be a global pose, look.pose takes a local pose"
    assert doc.can_connect("walk.pose", "blend.a") is None
    # An unfinished graph elsewhere does not block an unrelated link.
    doc.add_node("fk", "fk2")
    doc.add_node("bk", "bk2")
    assert doc.can_connect("fk2.pose", "bk2.pose") is None


def test_hand_edited_mismatch_does_not_hide_a_new_one():
    data = chain().graph.to_dict()
    data["links"].append(["fk.pose", "look.pose"])  # a global pose into a local input, as a file may hold
    doc = Document.from_graph(Graph.from_dict(data))
    assert doc.validate().problems[0].port == "pose" and doc.validate().problems[0].node == "look"
    assert doc.can_connect("bk.pose", "look.pose") is None  # the fix is allowed
    assert doc.can_connect("walk.pose", "blend.a") is None  # and unrelated links
    doc.add_node("fk", "fk2")
    assert doc.can_connect("fk2.pose", "look.pose").startswith("space mismatch: fk2.pose is a global pose")


def test_validation_problems_match_animgraph_validate():
    doc = chain()
    doc.disconnect("bk.pose", "out.pose")
    result = doc.validate()
    assert result.plan is None
    with pytest.raises(GraphError) as err:
        from animgraph.plan import make_plan

        make_plan(doc.graph, warn=False)
    e = err.value
    assert result.problems == [Problem(e.node, e.port, e.message, str(e))]
    assert result.problems[0].node == "out" and doc.validate() is result  # cached per revision
    doc.undo()
    assert doc.validate().ok and "blend" in " ".join(doc.validate().warnings)


# ---------------------------------------------------------------- random edits against a replay


def refs(doc, outputs, signal=None):
    """Every output (or input) 'node.port' of the document (of ``signal`` if given), and one of a missing node."""
    ports = [f"{n.id}.{p.name}" for n in doc.graph.nodes for p in (n.outputs() if outputs else n.inputs())
             if signal in (None, p.signal)]
    return ports + ["ghost.pose"]


def signal_of(doc, ref):
    node, _, port = ref.partition(".")
    return next((p.signal for n in doc.graph.nodes if n.id == node for p in n.outputs() if p.name == port), None)


def draw_edit(data, doc):
    """(method, args) of one random edit, often refused, drawn from the document's current nodes and ports."""
    ids = [n.id for n in doc.graph.nodes] + ["ghost"]
    kind = data.draw(st.sampled_from(["add", "add", "remove", "connect", "connect", "connect", "disconnect",
                                      "set", "set", "move", "rename"]))
    if kind == "add":
        return "add_node", (data.draw(st.sampled_from(sorted(REGISTRY))), None, (data.draw(st.integers(-50, 50)), 0))
    if kind == "remove":
        return "remove_node", (data.draw(st.sampled_from(ids)),)
    if kind == "connect":
        src = data.draw(st.sampled_from(refs(doc, True)))
        same = data.draw(st.booleans())  # half the time an input of the same signal kind
        return "connect", (src, data.draw(st.sampled_from(refs(doc, False, signal_of(doc, src) if same else None))))
    if kind == "disconnect":
        links = [tuple(ln) for ln in doc.graph.links] or [("walk.pose", "out.pose")]
        return "disconnect", data.draw(st.sampled_from(links))
    if kind == "move":
        return "move", (data.draw(st.sampled_from(ids)), (data.draw(st.integers(-9, 9)), data.draw(st.floats(-9, 9))))
    if kind == "rename":
        return "rename", (data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(["a", "b", "walk", "out", "9"])))
    node = data.draw(st.sampled_from(ids))
    specs = doc.field_specs(node) if node != "ghost" else []
    if not specs:
        return "move", (node, (0, 0))
    spec = data.draw(st.sampled_from(specs))
    values = [spec.default, *spec.choices[:3], spec.low, spec.high, None]
    if spec.widget == "axis":  # a huge axis: normalized by the node, so its last digit tests exact undo
        values += [[spec.low] * 3, [0.94, 0.342, 0.0]]
    return "set_field", (node, spec.name, data.draw(st.sampled_from(values)))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_edits_equal_a_replay_of_the_surviving_ones(data):
    doc = Document.new()
    initial = doc.to_json()
    applied, undone = [], []
    for _ in range(data.draw(st.integers(1, 30))):
        choice = data.draw(st.sampled_from(["edit"] * 5 + ["undo", "redo"]))
        if choice in ("undo", "redo"):
            source, target = (applied, undone) if choice == "undo" else (undone, applied)
            assert getattr(doc, choice)() == bool(source)
            if source:
                target.append(source.pop())
                assert doc.to_json() == target[-1][2 if choice == "undo" else 3]  # exactly the JSON of then
            continue
        method, args = draw_edit(data, doc)
        json_before, rev = doc.to_json(), doc.revision
        try:
            getattr(doc, method)(*args)
        except EditError:
            assert doc.to_json() == json_before and doc.revision == rev
            continue
        if doc.revision != rev:
            event(f"applied {method}")
            applied.append((method, args, json_before, doc.to_json()))
            undone.clear()
        else:
            assert doc.to_json() == json_before
    replay = Document.new()
    for method, args, _, _ in applied:
        getattr(replay, method)(*args)
    assert replay.to_json() == doc.to_json()
    final = doc.to_json()
    for _ in applied:
        assert doc.undo()
    assert doc.to_json() == initial and not doc.dirty and not doc.can_undo
    for _ in applied:
        assert doc.redo()
    assert doc.to_json() == final


# ---------------------------------------------------------------- files


@pytest.mark.parametrize("name", shipped.names())
def test_shipped_graphs_round_trip(name, tmp_path):
    path = shipped.path(name)
    raw = path.read_bytes()
    doc = Document.open(path)
    assert doc.to_json() == raw.decode() and not doc.dirty and doc.path == path
    doc.move(doc.graph.nodes[0].id, (1, 2))
    assert path.read_bytes() == raw  # opening and editing never write the file
    doc.undo()
    doc.save(tmp_path / "copy.json")
    assert (tmp_path / "copy.json").read_bytes() == raw and doc.path == tmp_path / "copy.json"
    assert Document.open(tmp_path / "copy.json").to_json() == raw.decode()


def test_open_bad_files_raise_one_line(tmp_path):
    for text in ("{", "[]", '{"format": "animgraph.graph", "version": 2, "nodes": [{"id": "x"}]}'):
        (tmp_path / "bad.json").write_text(text)
        with pytest.raises(GraphError) as err:
            Document.open(tmp_path / "bad.json")
        assert "\n" not in str(err.value) and "bad.json" in str(err.value)
    with pytest.raises(GraphError):
        Document.open(tmp_path / "missing.json")


def saved_doc(tmp_path):
    doc = chain()
    doc.save(tmp_path / "g.json")
    doc.move("fk", (7, 7))
    return doc, (tmp_path / "g.json").read_bytes()


def refused_save(doc, path, old):
    with pytest.raises(EditError) as err:
        doc.save(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)
    assert doc.dirty and doc.path == path.parent / "g.json"
    assert (path.parent / "g.json").read_bytes() == old
    assert sorted(p.name for p in path.parent.iterdir()) == ["g.json"]  # no temporary file left
    return str(err.value)


def test_failed_save_keeps_the_old_file(tmp_path, monkeypatch):
    doc, old = saved_doc(tmp_path)

    def no_rename(src, dst):
        raise OSError(30, "Read-only file system")

    with monkeypatch.context() as m:  # fails at the last step, as root too
        m.setattr(os, "replace", no_rename)
        assert "Read-only file system" in refused_save(doc, tmp_path / "g.json", old)
    assert doc.path == tmp_path / "g.json" and doc.dirty
    with pytest.raises(EditError):
        doc.save(tmp_path / "no_dir" / "g.json")
    assert doc.path == tmp_path / "g.json" and not (tmp_path / "no_dir").exists()
    if os.path.isdir("/proc/self"):  # no file can be made there, as root too
        with pytest.raises(EditError):
            doc.save("/proc/self/g.json")
        assert doc.path == tmp_path / "g.json" and doc.dirty
    doc.save()
    assert not doc.dirty and (tmp_path / "g.json").read_bytes() != old
    with pytest.raises(EditError):
        Document.new().save()  # no file yet


def test_save_into_read_only_directory(tmp_path):
    doc, old = saved_doc(tmp_path)
    os.chmod(tmp_path, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    try:
        if os.access(tmp_path, os.W_OK):
            pytest.skip("running as root: a 0o555 directory is writable")
        refused_save(doc, tmp_path / "g.json", old)
    finally:
        os.chmod(tmp_path, 0o755)


def test_relative_assets_stay_anchored_to_the_file(tmp_path):
    (tmp_path / "a" / "clips").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    clip = (tmp_path / "a" / "clips" / "w.bvh").resolve()
    data = Document.new().graph.to_dict() | {"assets": {"walk": "clips/w.bvh"}}
    (tmp_path / "a" / "g.json").write_text(Graph.from_dict(data).to_json())
    doc = Document.open(tmp_path / "a" / "g.json")

    def target():
        return (doc.graph.base_dir / doc.graph.assets["walk"]).resolve()

    doc.add_node("blend")
    assert target() == clip
    doc.save(tmp_path / "b" / "g.json")
    assert json.loads((tmp_path / "b" / "g.json").read_text())["assets"]["walk"] == "../a/clips/w.bvh"
    assert target() == clip and doc.graph.base_dir == (tmp_path / "b").resolve()
    doc.undo()  # a state from before the save, when assets were relative to a/
    assert target() == clip
    doc.redo()
    (tmp_path / "b" / "clips").mkdir()
    (tmp_path / "b" / "clips" / "j.bvh").write_bytes(bundled.path("jog").read_bytes())  # an asset must read to be added
    doc.add_asset("jog", "clips/j.bvh")  # new relative assets are relative to the file
    assert (doc.graph.base_dir / "clips/j.bvh").resolve() == (tmp_path / "b" / "clips" / "j.bvh").resolve()


def test_edit_errors_are_animgraph_errors():
    assert issubclass(EditError, AnimgraphError)
