"""A state machine's canvas document without a window: states and transitions edited as nodes and links of their
own, each edit one undo step of the graph's document, the outer node's pins following the states."""

from pathlib import Path

import pytest

from animgraph.editor.document import Document, EditError
from animgraph.editor.machine import ANY, MachineDoc, describe
from animgraph.graph import Graph

ROOT = Path(__file__).resolve().parents[1]


def machine():
    """The new graph with a state machine (its example: states a, b, c; condition 'speed') and its canvas doc."""
    doc = Document.new()
    doc.add_node("state_machine", "sm", pos=(300, 200))
    return doc, MachineDoc(doc, "sm")


def pose_pins(doc, nid="sm"):
    return [p.name for p in doc.ports(nid)[0] if p.signal == "pose"]


def unchanged(doc, edit):
    before = (doc.to_json(), doc.revision, doc.can_undo)
    with pytest.raises(EditError) as err:
        edit()
    assert (doc.to_json(), doc.revision, doc.can_undo) == before
    assert "\n" not in str(err.value)
    return str(err.value)


def test_states_are_nodes_and_transitions_are_links_with_any_as_a_source():
    doc, m = machine()
    assert [(n.id, n.type) for n in m.graph.nodes] == [("a", "start state"), ("b", "state"), ("c", "state"),
                                                       (ANY, "any state")]
    assert m.graph.links == [["a.out", "b.in"], ["b.out", "c.in"], ["any.out", "a.in"]]
    assert [p.name for p in m.ports("a")[0]] == ["in"] and m.ports(ANY)[0] == ()
    rects = {n.id: m.position(n.id) for n in m.graph.nodes}
    assert len(set(rects.values())) == 4  # laid out before anything is stored: no two states on one spot


def test_adding_a_state_adds_its_pose_pin_in_one_undo_step():
    doc, m = machine()
    name = m.add_node("state", pos=(500, 80))
    assert name == "state1" and pose_pins(doc) == ["a", "b", "c", "state1"]
    assert m.position("state1") == (500.0, 80.0)
    assert doc.graph.editor["states"]["sm"]["state1"] == [500, 80]
    assert doc.undo() and pose_pins(doc) == ["a", "b", "c"] and "states" not in doc.graph.editor
    assert doc.redo() and pose_pins(doc) == ["a", "b", "c", "state1"]


def test_removing_a_state_drops_its_transitions_its_pin_and_the_links_into_it():
    doc, m = machine()
    doc.add_node("sample", "clip_b", clip="walk")
    doc.connect("clip_b.pose", "sm.b")
    m.remove_node("b")
    assert pose_pins(doc) == ["a", "c"] and m.graph.links == [["any.out", "a.in"]]
    assert not any(dst == "sm.b" for _, dst in doc.graph.links)
    assert doc.undo() and pose_pins(doc) == ["a", "b", "c"] and ("clip_b.pose", "sm.b") in doc.graph.links
    m.remove_node("a")  # the start state: the start moves to the first state left
    assert doc.graph.node("sm").start == "b"
    m.remove_node("b")
    assert "only state" in unchanged(doc, lambda: m.remove_node("c"))
    assert "not a state" in unchanged(doc, lambda: m.remove_node(ANY))


def test_renaming_a_state_renames_its_pin_its_links_the_start_and_its_transitions():
    doc, m = machine()
    doc.add_node("sample", "clip_a", clip="walk")
    doc.connect("clip_a.pose", "sm.a")
    m.move("a", (10, 10))
    m.rename("a", "idle")
    node = doc.graph.node("sm")
    assert node.start == "idle" and pose_pins(doc) == ["idle", "b", "c"]
    assert ("clip_a.pose", "sm.idle") in doc.graph.links
    assert m.graph.links[0] == ["idle.out", "b.in"] and m.graph.links[2] == ["any.out", "idle.in"]
    assert m.position("idle") == (10.0, 10.0) and "a" not in doc.graph.editor["states"]["sm"]
    assert "taken" in unchanged(doc, lambda: m.rename("b", "c"))
    assert doc.undo() and doc.graph.node("sm").start == "a"


def test_transitions_are_added_edited_and_removed_through_the_node_fields():
    doc, m = machine()
    k = m.add_transition("c", "a")
    assert m.graph.links[k] == ["c.out", "a.in"] and m.transitions()[k] == {"from": "c", "to": "a"}
    m.set_transition(k, "when", "jump")  # a new bool condition: a new input pin on the outer node
    assert ("jump", "bool") in [(p.name, p.signal) for p in doc.ports("sm")[0]]
    m.set_transition(k, "when", "speed")  # a scalar elsewhere: it takes the bounds used there
    assert doc.graph.node("sm").transitions[k].above == 0.5
    m.set_transition(k, "below", 0.2)  # under its above: the range becomes "below 0.2"
    m.set_transition(k, "duration", 0.5)
    m.set_transition(k, "blend", "crossfade")
    m.set_transition(k, "priority", 3)
    t = doc.graph.node("sm").transitions[k]
    assert (t.when, t.below, t.duration, t.blend, t.priority) == ("speed", 0.2, 0.5, "crossfade", 3)
    m.set_transition(k, "when", None)  # no condition: always, and its bounds go with it
    assert doc.graph.node("sm").transitions[k].below is None
    assert "itself" in unchanged(doc, lambda: m.connect("a.out", "a.in"))
    assert "'in'" in unchanged(doc, lambda: m.connect("a.in", "b.in"))
    assert "above" in unchanged(doc, lambda: m.set_transition_fields(0, {"above": 0.5, "below": 0.1}))
    m.connect("any.out", "c.in")
    assert m.graph.links[-1] == ["any.out", "c.in"]
    m.disconnect("any.out", "c.in")
    m.remove_transitions([0, 1])
    assert m.graph.links == [["any.out", "a.in"], ["c.out", "a.in"]]
    assert doc.undo() and len(m.graph.links) == 4


def test_start_and_reset_on_enter_and_the_machine_s_canvas_positions():
    doc, m = machine()
    m.set_start("c")
    assert [n.type for n in m.graph.nodes][:3] == ["state", "state", "start state"]
    m.set_state_field("b", "reset_on_enter", False)
    assert doc.graph.node("sm").states[1].reset_on_enter is False
    m.move_many({"a": (0, 0), "b": (200, 0)})
    assert doc.undo() and m.position("b") != (200.0, 0.0)
    doc.rename("sm", "loco")  # the canvas positions follow the node's id
    m2 = MachineDoc(doc, "loco")
    m2.move("a", (7, 7))
    doc.rename("loco", "sm2")
    assert MachineDoc(doc, "sm2").position("a") == (7.0, 7.0)
    doc.remove_node("sm2")
    assert "states" not in doc.graph.editor
    with pytest.raises(EditError):
        MachineDoc(doc, "walk")  # not a state machine


def test_a_machine_built_from_one_state_saves_and_reads_back(tmp_path):
    doc, m = machine()
    m.remove_node("b")
    m.remove_node("c")
    m.rename("a", "idle")
    m.add_node("state", "walk", pos=(300, 0))
    m.connect("idle.out", "walk.in")
    m.set_transition(0, "when", "go")
    path = tmp_path / "m.json"
    doc.save(path)
    node = Graph.load(path).node("sm")
    assert [s.name for s in node.states] == ["idle", "walk"] and node.transitions[0].when == "go"


def test_a_transition_in_one_line():
    _, m = machine()
    assert [describe(t) for t in m.transitions()] == [
        "a -> b: when speed > 0.5; 0.25 s inertialize, priority 0",
        "b -> c: when speed > 2; 0.25 s inertialize, priority 0",
        "any -> a: when speed < 0.5; 0.25 s inertialize, priority -1"]
    m.set_transition_fields(0, {"when": "jump", "above": None})  # a bool condition
    m.set_transition(1, "when", None)
    assert describe(m.transitions()[0]).startswith("a -> b: when jump is true;")
    assert describe(m.transitions()[1]).startswith("b -> c: when always;")


def test_placing_one_state_keeps_the_others_where_they_are_drawn():
    doc, m = machine()
    drawn = {n.id: m.position(n.id) for n in m.graph.nodes}  # laid out: nothing stored yet
    m.move("b", (900, 500))
    assert {k: m.position(k) for k in drawn if k != "b"} == {k: v for k, v in drawn.items() if k != "b"}
    m.add_node("state", "d", pos=(0, 600))
    m.rename("c", "e")
    m.remove_node("d")
    assert m.position("a") == drawn["a"] and m.position("e") == drawn["c"] and "d" not in doc.inner_positions("sm")
    assert all(doc.undo() for _ in range(4)) and "states" not in doc.graph.editor
