"""animgraph.inspect: what a running instance's state machines, blend spaces and gated nodes are doing now."""

from pathlib import Path

import pytest

import animgraph as ag
from animgraph import inspect as look
from animgraph.errors import GraphError

ROOT = Path(__file__).resolve().parents[1]


def test_a_machine_s_state_its_transition_s_progress_and_the_gated_nodes():
    inst = ag.compile(ag.Graph.load(ROOT / "graphs" / "states.json"), batch=1).instance()
    inst.step(1 / 60, {"speed": 0.0})
    now = look.machine(inst, "loco")
    assert now.state == "idle" and now.transition is None and now.weights["idle"] == 1.0
    assert look.ran(inst, "idle") and not look.ran(inst, "run")
    inst.step(1 / 60, {"speed": 1.0})  # idle -> walking (above 0.3), inertialized over 0.4 s
    progress = []
    for _ in range(30):
        inst.step(1 / 60)
        now = look.machine(inst, "loco")
        progress.append(now.transition[2] if now.transition else None)
    assert now.state == "walking" and look.ran(inst, "walk") and not look.ran(inst, "run")
    shown = [p for p in progress if p is not None]
    assert shown == sorted(shown) and 0.0 < shown[0] < 0.2 and shown[-1] > 0.8 and progress[-1] is None
    with pytest.raises(GraphError, match="not a state_machine"):
        look.machine(inst, "walk")


def test_a_blend_space_s_point_and_weights():
    inst = ag.compile(ag.Graph.load(ROOT / "graphs" / "blend_space.json"), batch=1).instance()
    inst.step(1 / 60, {"speed": 2.66})
    now = look.blend_space(inst, "gait")
    assert now.point == pytest.approx((2.66,)) and now.weights["jog"] == pytest.approx(1.0)
    assert sum(now.weights.values()) == pytest.approx(1.0)


def test_a_crossfade_s_progress_and_both_states_weights():
    graph = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 4, "assets": {"walk": "animgraph:walk", "run": "animgraph:run"},
        "nodes": [{"id": "go", "type": "input", "signal": "bool", "default": False},
                  {"id": "walk", "type": "sample", "clip": "walk"}, {"id": "run", "type": "sample", "clip": "run"},
                  {"id": "sm", "type": "state_machine", "start": "walking",
                   "states": [{"name": "walking"}, {"name": "running"}],
                   "transitions": [{"from": "walking", "to": "running", "when": "go", "duration": 0.5,
                                    "blend": "crossfade"}]},
                  {"id": "out", "type": "output"}],
        "links": [["go.value", "sm.go"], ["walk.pose", "sm.walking"], ["run.pose", "sm.running"],
                  ["sm.pose", "out.pose"]]})
    inst = ag.compile(graph, batch=1).instance()
    inst.step(1 / 60)
    inst.step(1 / 60, {"go": True})
    seen = []
    for _ in range(40):
        inst.step(1 / 60)
        now = look.machine(inst, "sm")
        seen.append(now)
    fading = [s for s in seen if s.transition]
    assert fading and all(s.transition[:2] == ("walking", "running") for s in fading)
    progress = [s.transition[2] for s in fading]
    assert progress == sorted(progress) and progress[-1] > 0.9 and seen[-1].transition is None
    middle = fading[len(fading) // 2]
    assert 0.0 < middle.weights["walking"] < 1.0 and sum(middle.weights.values()) == pytest.approx(1.0)
    assert look.ran(inst, "run") and not look.ran(inst, "walk")  # the fade over: only the new state runs
