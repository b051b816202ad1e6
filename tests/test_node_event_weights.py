"""Event weights (``nodes/event_weights.py``, ``animgraph.sync.add_event_weights``): an event carries its source's
effective weight, outside sync groups too.

References: the weights worked out by hand from the blend's alpha and the select's index; a state's weight read
from the state machine's own ``<state>_weight`` output; the check's schedule (a weight read downstream of its own
sample cannot be had in the same frame: a note, weight 1).
"""

import json
import warnings

import numpy as np
import pytest

import animgraph as ag
from animgraph.check import GraphWarning, check


def write(tmp_path, name, nodes, links):
    """A graph of the bundled walk and jog (their derived plants and contacts) as a file."""
    data = {"format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk", "jog": "animgraph:jog"},
            "nodes": nodes, "links": links}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    return path


def blended(tmp_path, alpha_from="alpha.value"):
    nodes = [{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "jog", "type": "sample", "clip": "jog"},
             {"id": "mix", "type": "blend"}, {"id": "out", "type": "output"}]
    nodes += [{"id": "alpha", "type": "input", "min": 0.0, "max": 1.0}] if alpha_from == "alpha.value" else []
    links = [["walk.pose", "mix.a"], ["jog.pose", "mix.b"], [alpha_from, "mix.alpha"], ["mix.pose", "out.pose"]]
    return write(tmp_path, "blended", nodes, links)


def weights_seen(inst, steps, inputs):
    """{node: [weights of its events]} over ``steps`` steps of 1/60 s with ``inputs``."""
    seen = {}
    for _ in range(steps):
        inst.step(1 / 60, inputs)
        for e in inst.events():
            seen.setdefault(e.node, []).append(e.weight)
    return seen


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.8, 1.0])
def test_a_blend_gives_each_side_its_share_and_a_silent_side_says_nothing(tmp_path, alpha):
    inst = ag.compile(blended(tmp_path), events=256).instance()
    seen = weights_seen(inst, 150, {"alpha": alpha})  # 2.5 s: both clips plant both feet
    for node, weight in (("walk", 1.0 - alpha), ("jog", alpha)):
        if weight == 0.0:
            assert node not in seen
        else:
            assert len(seen[node]) >= 4 and np.allclose(seen[node], weight, rtol=0, atol=1e-12), (node, seen)


def test_a_select_lets_only_the_chosen_input_speak(tmp_path):
    nodes = [{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "jog", "type": "sample", "clip": "jog"},
             {"id": "pick", "type": "input", "signal": "int", "min": 0, "max": 1},
             {"id": "sel", "type": "select", "count": 2}, {"id": "out", "type": "output"}]
    links = [["walk.pose", "sel.in0"], ["jog.pose", "sel.in1"], ["pick.value", "sel.index"], ["sel.pose", "out.pose"]]
    inst = ag.compile(write(tmp_path, "select", nodes, links), events=256).instance()
    assert set(weights_seen(inst, 150, {"pick": 1})) == {"jog"}
    assert set(weights_seen(inst, 150, {"pick": 0})) == {"walk"}


def test_a_crossfading_state_machine_gives_the_state_left_its_fading_weight(tmp_path):
    nodes = [{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "jog", "type": "sample", "clip": "jog"},
             {"id": "go", "type": "input", "signal": "bool"},
             {"id": "sm", "type": "state_machine", "start": "walking",
              "states": [{"name": "walking"}, {"name": "jogging"}],
              "transitions": [{"from": "walking", "to": "jogging", "when": "go", "blend": "crossfade",
                               "duration": 1.5}]},
             {"id": "out", "type": "output"}, {"id": "w", "type": "output", "signal": "scalar"}]
    links = [["walk.pose", "sm.walking"], ["jog.pose", "sm.jogging"], ["go.value", "sm.go"], ["sm.pose", "out.pose"],
             ["sm.walking_weight", "w.value"]]
    inst = ag.compile(write(tmp_path, "fade", nodes, links), events=256).instance()
    fading = []
    for k in range(150):
        shown = float(inst.step(1 / 60, {"go": k >= 20})["w"][0])
        fading += [(e.weight, shown, e.detail) for e in inst.events() if e.node == "walk"]
    during = [(w, s) for w, s, detail in fading if s < 1.0 and not detail]  # fired by its clock
    assert len(during) >= 2 and all(w == pytest.approx(s, abs=1e-12) for w, s in during)
    assert 0.0 < min(w for w, _ in during) < max(w for w, _ in during) < 1.0


def test_a_weight_computed_from_its_own_sample_is_a_note_and_weight_one(tmp_path):
    path = blended(tmp_path, alpha_from="walk.time_left")  # the walk's time left (clamped to [0, 1]) mixes them
    with pytest.warns(GraphWarning, match="'walk': its events carry weight 1"):
        plan = ag.compile(path, events=256)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert check(ag.Graph.load(path)).nodes["__event_weights"].sources == ["jog"]
    seen = weights_seen(plan.instance(), 150, {})
    assert np.allclose(seen["walk"], 1.0, rtol=0, atol=0) and np.allclose(seen["jog"], 1.0, rtol=0, atol=0)


def test_no_node_when_every_weight_is_one_and_a_graph_may_not_name_one(tmp_path):
    nodes = [{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "out", "type": "output"}]
    plain = write(tmp_path, "plain", nodes, [["walk.pose", "out.pose"]])
    assert "__event_weights" not in check(ag.Graph.load(plain)).nodes
    named = write(tmp_path, "named", nodes + [{"id": "x", "type": "event_weights", "sources": ["walk"]}],
                  [["walk.pose", "out.pose"]])
    with pytest.raises(ag.GraphError, match="made by the check"):
        check(ag.Graph.load(named))
