"""state_machine node: validity, the rules (priority and ties, hops per frame, rings, interruption), travel against a
breadth-first search, and whole graphs: no pop, velocities equal to central differences across every transition, the
lane executor equal to the per-character one with characters in different states.

Tolerances: world velocities against 5-point central differences at h = 1 ms, 2e-3 relative (as test_demo's whole
graph); the pop finder's defaults; lanes against per-character 1e-5.
"""

from collections import deque

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph.errors import GraphError
from animgraph.nodes.state_machine import BLENDS, StateMachine, StateMachinePlayer
from animgraph.pops import PopFinder
from fdcheck import world_velocity_errors
from test_node_dead_blend import coasted

WALK = {"walk": "animgraph:walk", "jog": "animgraph:jog", "run": "animgraph:run"}


def machine_graph(transitions, states=("idle", "walk", "run"), conditions=(), **fields):
    """A graph: one sample per state (root-relative; idle: the walk held at 0.4 s), conditions from inputs, the machine
    to out."""
    # The bundled walk and jog clips start with 0.25 s of capture noise (the arm markers): states that restart them
    # on entry skip it with ``start``, as a game's would.
    clips = {"idle": ("walk", {"time": 0.4, "loop": False}), "walk": ("walk", {"start": 0.3}), "run": ("run", {}),
             "jog": ("jog", {"start": 0.3})}
    nodes, links = [], []
    for name in states:
        clip, extra = clips.get(name, ("jog", {}))
        nodes.append({"id": f"s_{name}", "type": "sample", "clip": clip, "root_motion": True, **extra})
        links.append([f"s_{name}.pose", f"sm.{name}"])
    for name, kind in conditions:
        nodes.append({"id": name, "type": "input", "signal": kind})
        links.append([f"{name}.value", f"sm.{name}"])
    nodes.append({"id": "sm", "type": "state_machine", "start": states[0], "states": [{"name": s} for s in states],
                  "transitions": transitions, **fields})
    nodes += [{"id": "out", "type": "output"}, {"id": "state", "type": "output", "signal": "int"},
              {"id": "changed", "type": "output", "signal": "bool"}]
    links += [["sm.pose", "out.pose"], ["sm.state", "state.value"], ["sm.changed", "changed.value"]]
    return ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "assets": WALK, "nodes": nodes,
                               "links": links})


# ------------------------------------------------------------------ validity


@pytest.mark.parametrize("fields, says", [
    ({"start": "nope"}, "start 'nope' is not a state"),
    ({"states": [{"name": "a"}, {"name": "a"}], "start": "a"}, "state 'a' appears twice"),
    ({"states": [{"name": "pose"}], "start": "pose"}, "collides with a port name"),
    ({"states": [{"name": "a_time"}], "start": "a_time"}, "collides with a port name"),
    ({"states": [{"name": "1a"}], "start": "1a"}, "pattern"),
    ({"transitions": [{"from": "a", "to": "zz"}]}, "transition 0 (a -> zz): unknown state 'zz'"),
    ({"transitions": [{"from": "a", "to": "a"}]}, "to itself"),
    ({"transitions": [{"from": "a", "to": "b", "above": 1.0}]}, "need a 'when'"),
    ({"transitions": [{"from": "a", "to": "b", "when": "x"}, {"from": "b", "to": "a", "when": "x", "below": 1}]},
     "a bool in one transition and a scalar"),
    ({"transitions": [{"from": "a", "to": "b", "when": "b"}]}, "collides with a state or port name"),
    ({"transitions": [{"from": "a", "to": "b", "when": "x", "above": 2, "below": 1}]}, "must be below"),
    ({"transitions": [{"from": "a", "to": "b", "duration": -1}]}, "greater than or equal"),
    ({"transitions": [{"from": "a", "to": "b", "duration": float("nan")}]}, "finite"),
    ({"transitions": [{"from": "a", "to": "b", "unknown": 1}]}, "unknown"),
    ({"states": [{"name": "a", "reset_on_enter": "yes"}, {"name": "b"}]}, "reset_on_enter: expected a number"),
    ({"transitions": [{"from": "a", "to": "b", "when": "x", "above": "0.5"}]}, "above: expected a number"),
    ({"states": [{"name": "a"}, {"name": "b_motion"}]}, "collides with a port name"),
    ({"transitions": [{"from": "a", "to": "b", "blend": "slerp"}]}, "transitions.0.blend"),
    ({"transitions": [{"from": "a", "to": "b", "blend": "dead_blend", "halflife": -0.1}]}, "halflife"),
])
def test_validity_bad_machines_refused_naming_node_and_field(fields, says):
    data = {"id": "sm", "type": "state_machine", "start": "a", "states": [{"name": "a"}, {"name": "b"}]} | fields
    graph = {"format": "animgraph.graph", "version": 1, "nodes": [data, {"id": "out", "type": "output"}],
             "links": [["sm.pose", "out.pose"]]}
    with pytest.raises(GraphError) as e:
        ag.Graph.from_dict(graph)
    text = str(e.value)
    assert "'sm'" in text and "\n" not in text, text
    assert says.lower() in text.lower(), text


def test_ports_follow_states_and_conditions():
    node = StateMachine.model_validate({"id": "sm", "type": "state_machine", "start": "idle",
                                        "states": [{"name": "idle"}, {"name": "walk"}],
                                        "transitions": [{"from": "idle", "to": "walk", "when": "speed", "above": 0.1},
                                                        {"from": "any", "to": "idle", "when": "stop"}]})
    assert [(p.name, p.signal) for p in node.inputs()] == [
        ("idle", "pose"), ("walk", "pose"), ("speed", "scalar"), ("stop", "bool"), ("travel", "int"),
        ("idle_motion", "motion"), ("walk_motion", "motion")]
    assert [p.name for p in node.outputs()] == ["pose", "motion", "state", "time_in_state", "changed", "idle_time",
                                                "walk_time", "idle_weight", "walk_weight"]
    # "from" is written back as "from"
    assert node.model_dump(exclude_defaults=True, mode="json")["transitions"][1]["from"] == "any"


# ------------------------------------------------------------------ rules, on the node's own kernel


def player(transitions, states=("a", "b", "c", "d"), **fields):
    return StateMachinePlayer(start=states[0], states=[{"name": s} for s in states], transitions=transitions, **fields)


def poses(states=("a", "b", "c", "d")):
    """One distinct one-joint pose per state (its position's x is its index)."""
    out = {}
    for i, name in enumerate(states):
        p = ag.Pose.identity(1)
        p.pos[0, 0] = float(i)
        out[name] = p
    return out


def walk(sm, conditions, frames, dt=0.1, travel=None, states=("a", "b", "c", "d")):
    """The active state after each of ``frames`` steps (the first frame shows the start state)."""
    seen = []
    for _ in range(frames):
        sm.update(poses(states), conditions, dt, travel)
        seen.append(sm.state)
    return seen


def test_priority_then_file_order():
    sm = player([{"from": "a", "to": "b", "priority": 1}, {"from": "a", "to": "c"}, {"from": "a", "to": "d"}])
    assert walk(sm, {}, 2) == ["a", "c"]  # priority 0 before 1; of the two at 0, the first in the file
    sm = player([{"from": "a", "to": "d", "when": "x"}, {"from": "any", "to": "b", "when": "y", "priority": -1}])
    assert walk(sm, {"x": True, "y": True}, 2) == ["a", "b"]  # "any" at a lower priority wins
    assert walk(player([{"from": "a", "to": "d", "when": "x"}]), {"x": False}, 3) == ["a", "a", "a"]


def test_scalar_conditions_hold_strictly_between_above_and_below():
    t = [{"from": "a", "to": "b", "when": "speed", "above": 1.0, "below": 2.0}]
    for speed, state in ((1.0, "a"), (1.5, "b"), (2.0, "a"), (0.5, "a")):
        assert walk(player(t), {"speed": speed}, 2)[-1] == state, speed


def test_hops_per_frame_and_a_ring_of_always_true_conditions_ends():
    chain = [{"from": "a", "to": "b"}, {"from": "b", "to": "c"}, {"from": "c", "to": "d"}]
    assert walk(player(chain, max_transitions_per_frame=2), {}, 3) == ["a", "c", "d"]
    assert walk(player(chain), {}, 4) == ["a", "b", "c", "d"]
    ring = [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]
    assert walk(player(ring, max_transitions_per_frame=3), {}, 4) == ["a", "b", "a", "b"]  # 3 hops: ends on b
    assert walk(player(ring, max_transitions_per_frame=2), {}, 3) == ["a", "a", "a"]  # there and back


def test_an_interruption_mid_transition_starts_from_the_current_output():
    # a -> b over 1 s, interrupted after 0.3 s by b -> c: the output moves on from where it was, no jump.
    sm = player([{"from": "a", "to": "b", "when": "go", "duration": 1.0},
                 {"from": "b", "to": "c", "when": "next", "duration": 1.0}])
    xs = []
    for k in range(40):
        flags = {"go": k == 1, "next": k == 4}
        xs.append(float(sm.update(poses(), flags, 0.1).pos[0, 0]))
    assert xs[0] == 0.0 and xs[1] == pytest.approx(0.0, abs=1e-6)  # the switch frame shows where a was
    assert sm.state == "c" and xs[-1] == pytest.approx(2.0, abs=1e-6)
    assert max(abs(b - a) for a, b in zip(xs, xs[1:])) < 0.25  # offsets decay over 1 s: no frame jumps


# ------------------------------------------------------------------ travel


def reference_path(n, transitions, src, dst):
    """Breadth-first from ``src``, each state's transitions tried in file order; the first path found."""
    seen, queue = {src: [src]}, deque([src])
    while queue:
        a = queue.popleft()
        for frm, to in transitions:
            if (frm == a or (frm == -1 and to != a)) and to not in seen:
                seen[to] = seen[a] + [to]
                queue.append(to)
    return seen.get(dst)


machines = st.integers(2, 6).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(-1, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.integers(0, n - 1), st.integers(0, n - 1)))


@settings(max_examples=200, deadline=None)
@given(machines)
def test_travel_walks_the_breadth_first_path_one_hop_per_transition(machine):
    n, pairs, start, goal = machine
    pairs = [(a, b) for a, b in pairs if a != b]
    names = [f"s{i}" for i in range(n)]
    transitions = [{"from": "any" if a < 0 else names[a], "to": names[b], "when": "never", "duration": 0.25}
                   for a, b in pairs]
    sm = StateMachinePlayer(start=names[start], states=[{"name": s} for s in names], transitions=transitions,
                            jump_duration=0.25)
    frames = [names.index(s) for s in walk(sm, {"never": False}, 1, states=names)]
    frames += [names.index(s) for s in walk(sm, {"never": False}, 4 * n + 4, dt=0.1, travel=goal, states=names)]
    visited = [frames[0]] + [b for a, b in zip(frames, frames[1:]) if b != a]
    path = reference_path(n, pairs, start, goal)
    if path is None:  # no path: one inertialized jump
        assert visited == [start, goal] if start != goal else visited == [start]
        return
    assert visited == path
    graph = nx.DiGraph([(a, b) for a, b in pairs if a >= 0] + [(a, b) for f, b in pairs if f < 0
                                                                 for a in range(n) if a != b])
    graph.add_nodes_from(range(n))
    assert len(visited) - 1 == nx.shortest_path_length(graph, start, goal)
    # One hop per transition's duration (0.25 s, frames of 0.1 s): hops at least 3 frames apart.
    changes = [k for k in range(1, len(frames)) if frames[k] != frames[k - 1]]
    assert all(b - a >= 3 for a, b in zip(changes, changes[1:])), frames


# ------------------------------------------------------------------ whole graphs

TRANSITIONS = [{"from": "idle", "to": "walk", "when": "speed", "above": 0.5, "duration": 0.3},
               {"from": "walk", "to": "run", "when": "speed", "above": 2.0, "duration": 0.3},
               {"from": "run", "to": "walk", "when": "speed", "below": 2.0, "duration": 0.3},
               {"from": "any", "to": "idle", "when": "speed", "below": 0.5, "duration": 0.4, "priority": -1}]


def blended(transitions, blend):
    """``transitions`` each hidden by ``blend`` (inertialize, crossfade, dead_blend)."""
    return [t | {"blend": blend} for t in transitions]


def speed_at(t):
    """A script through every transition, and interruptions (a reversal 0.1 s into a 0.3 s transition)."""
    keys = [(0.0, 0.0), (0.5, 1.0), (1.2, 3.0), (1.3, 1.0), (2.0, 0.0), (2.1, 3.0), (2.15, 3.0), (3.0, 0.2)]
    return next(v for k, v in reversed(keys) if t >= k)


@pytest.mark.parametrize("blend", BLENDS)
def test_no_pop_through_transitions_and_interruptions_and_the_states_seen(blend):
    plan = ag.compile(machine_graph(blended(TRANSITIONS, blend), conditions=[("speed", "scalar")]), reuse_slots=False)
    inst, finder = plan.instance(), PopFinder(plan)
    dt, pops, states = 1 / 60, [], []
    for f in range(int(3.5 / dt)):
        out = inst.step(dt, {"speed": speed_at(f * dt)})
        pop = finder.observe(inst, f, dt)
        pops += [pop] if pop else []
        states.append(int(out["state"][0]))
    assert pops == [], pops[:3]
    runs = [s for k, s in enumerate(states) if k == 0 or s != states[k - 1]]
    assert runs[:4] == [0, 1, 2, 1] and 0 in runs[4:] and runs[-1] == 0, runs


@pytest.mark.parametrize("blend", BLENDS)
@pytest.mark.parametrize("at", [0.5, 1.2, 1.3, 2.0, 2.1])
def test_world_velocities_equal_central_differences_while_a_transition_blends(at, blend):
    """Stepped at 60 Hz through the state change at ``at`` (or an interruption), then a stencil 50 ms on, while the
    offset decays or the fade runs: the velocities are the exact derivative of what is shown.  (A stencil astride the
    switch frame would measure the jump in acceleration that any inertialization or fade has there, not an error.)"""
    plan = ag.compile(machine_graph(blended(TRANSITIONS, blend), conditions=[("speed", "scalar")]))
    inst, parents = plan.instance(), plan.skeleton.parents
    clock, dt, changes = 0.0, 1 / 60, []
    while clock < at + 0.05 - 1e-9:
        step = min(dt, at + 0.05 - clock)
        clock += step
        out = inst.step(step, {"speed": speed_at(clock)})
        changes += [clock] if out["changed"][0] else []
    assert changes and at <= changes[-1] < at + 0.05, changes  # a transition started just before the stencil

    def step(h):
        nonlocal clock
        clock += h
        return inst.step(h, {"speed": speed_at(clock)})["out"]

    err, err_ang = world_velocity_errors(step, parents, 1e-3)
    assert err.max() < 2e-3 and err_ang.max() < 2e-3, (at, err.max(), err_ang.max())


@pytest.mark.parametrize("blend", BLENDS)
def test_lane_executor_equals_the_per_character_one_with_characters_in_different_states(blend):
    graph = machine_graph(blended(TRANSITIONS, blend), conditions=[("speed", "scalar")])
    batch = 19
    lanes = ag.compile(graph, batch=batch).instance(lanes=True)
    chars = ag.compile(graph, batch=batch).instance(lanes=False, parallel=False)
    seen = set()
    for f in range(150):
        speeds = np.array([speed_at((f / 60 + 0.37 * c) % 3.5) for c in range(batch)])
        a, b = lanes.step(1 / 60, {"speed": speeds}), chars.step(1 / 60, {"speed": speeds})
        np.testing.assert_array_equal(a["state"], b["state"])
        for x, y in zip(a["out"].as_tuple(), b["out"].as_tuple()):
            np.testing.assert_allclose(x, y, atol=1e-5, rtol=1e-5)
        seen |= {int(s) for s in np.ravel(a["state"])}
    assert seen == {0, 1, 2}


def test_state_times_restart_on_entry_and_hold_while_inactive():
    plan = ag.compile(machine_graph(TRANSITIONS, conditions=[("speed", "scalar")]))
    inst, dt = plan.instance(), 1 / 60
    out = {}
    for f in range(90):
        out = inst.step(dt, {"speed": 1.0 if f < 60 else 0.0})
        if f == 59:
            walk_time = inst.port("sm", "walk_time").copy()
    # walk entered at frame 1, left at frame 60: 58 frames of dt, then held with rate 0.
    assert walk_time[0] == pytest.approx(58 * dt) and walk_time[1] == 1.0
    held = inst.port("sm", "walk_time")
    assert held[0] == pytest.approx(58 * dt) and held[1] == 0.0
    t = inst.port("sm", "time_in_state")
    assert t[0] == pytest.approx(29 * dt) and t[1] == 1.0 and int(out["state"][0]) == 0


def test_renaming_a_state_in_the_editor_renames_its_references_and_links():
    from animgraph.editor.document import Document

    doc = Document(machine_graph(TRANSITIONS, conditions=[("speed", "scalar")]))
    doc.set_field("sm", "states", [{"name": "idle"}, {"name": "stroll"}, {"name": "run"}])
    node = next(n for n in doc.graph.nodes if n.id == "sm")
    assert [s.name for s in node.states] == ["idle", "stroll", "run"]
    assert [(t.source, t.to) for t in node.transitions] == [("idle", "stroll"), ("stroll", "run"), ("run", "stroll"),
                                                            ("any", "idle")]
    assert ["s_walk.pose", "sm.stroll"] in [list(ln) for ln in doc.graph.links]
    doc.set_field("sm", "states", [{"name": "rest"}, {"name": "stroll"}, {"name": "run"}])
    assert next(n for n in doc.graph.nodes if n.id == "sm").start == "rest"
    assert doc.undo() and next(n for n in doc.graph.nodes if n.id == "sm").start == "idle"


# ------------------------------------------------------------------ only the active state's nodes run


def clock(inst, node_id, c=0):
    """The own clock (s) of sample ``node_id`` for character ``c``: what moves only while the sample runs."""
    from animgraph.executor import OP_STATE
    from animgraph.nodes.sample import ST as SAMPLE_ST

    plan = inst.plan
    return float(inst.st[c, plan.ops[plan.op(node_id), OP_STATE] + SAMPLE_ST.clock])


@pytest.mark.parametrize("how", ["compiled", "python", "lanes"])
def test_only_the_active_states_nodes_run_and_restart_on_entry(how):
    """Idle shows first: walk's and run's samples stay where they are; walk entered restarts its sample at its start and
    runs it; run's stays paused; re-entering walk restarts it again.  A state left runs one frame more (the change's:
    its pose then is where the transition starts).  The same on every executor."""
    graph = machine_graph(TRANSITIONS, conditions=[("speed", "scalar")])
    batch = 16 if how == "lanes" else 1
    inst = ag.compile(graph, batch=batch).instance(python=how == "python", lanes=how == "lanes",
                                                   parallel=False if how != "lanes" else None)
    dt, script = 1 / 60, [0.0] * 20 + [1.0] * 30 + [3.0] * 30 + [1.0] * 30
    seen = {}
    for f, speed in enumerate(script):
        out = inst.step(dt, {"speed": speed})
        seen.setdefault(int(np.ravel(out["state"])[0]), f)
        if f == 19:
            assert clock(inst, "s_walk") == 0.3 and clock(inst, "s_run") == 0.0  # never ran: initial rows
        if f == 49:  # walk since frame 20: shown 0.3 s + 29 dt, the clock one frame on
            assert clock(inst, "s_walk") == pytest.approx(0.3 + 30 * dt) and clock(inst, "s_run") == 0.0
        if f == 79:  # run since frame 50; walk paused where it was left, the change's frame on
            assert clock(inst, "s_walk") == pytest.approx(0.3 + 31 * dt)
            assert clock(inst, "s_run") == pytest.approx(30 * dt)
    assert seen == {0: 0, 1: 20, 2: 50}
    # walk re-entered at frame 80 (restarted); run ran frames 50-79 and 80, the change's
    assert clock(inst, "s_walk") == pytest.approx(0.3 + 30 * dt) and clock(inst, "s_run") == pytest.approx(31 * dt)
    if batch > 1:  # every lane the same
        plan = inst.plan
        from animgraph.executor import OP_STATE
        at = plan.ops[plan.op("s_walk"), OP_STATE]
        assert np.all(inst.st[:, at] == inst.st[0, at])


def test_a_state_without_reset_on_enter_resumes_its_nodes_where_they_paused():
    graph = machine_graph(TRANSITIONS, conditions=[("speed", "scalar")])
    sm = next(n for n in graph.nodes if n.id == "sm")
    graph = graph.model_copy(update={"nodes": [n if n.id != "sm" else sm.model_copy(update={"states": [
        s.model_copy(update={"reset_on_enter": s.name != "walk"}) for s in sm.states]}) for n in graph.nodes]})
    inst, dt = ag.compile(graph).instance(), 1 / 60
    for f, speed in enumerate([1.0] * 31 + [3.0] * 20 + [1.0] * 10):
        inst.step(dt, {"speed": speed})
    # walk ran frames 1-31 (entered at frame 1: 0 -> walk; left at 31, which it runs) and 51-60, paused in between
    assert clock(inst, "s_walk") == pytest.approx(0.3 + 41 * dt)


def test_which_nodes_a_state_owns():
    """A node feeding only one state's inputs is gated on it; one also feeding a condition every state reads (read by
    the machine before the states run) or two states always runs; nested machines gate on both; a machine's state time may drive its own
    state's sample (no cycle: the machine decides before its states run)."""
    g = {"format": "animgraph.graph", "version": 1, "assets": WALK, "nodes": [
        {"id": "speed", "type": "input", "signal": "scalar"},
        {"id": "a1", "type": "sample", "clip": "walk", "contacts": True},
        {"id": "b1", "type": "sample", "clip": "run"},
        {"id": "both", "type": "sample", "clip": "jog"},
        {"id": "mix", "type": "blend", "alpha": 0.5},
        {"id": "p", "type": "sample", "clip": "walk", "loop": False},
        {"id": "q", "type": "sample", "clip": "run"},
        {"id": "inner", "type": "state_machine", "start": "p", "states": [{"name": "p"}, {"name": "q"}],
         "transitions": [{"from": "p", "to": "q", "when": "speed", "above": 2}]},
        {"id": "outer", "type": "state_machine", "start": "a", "states": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
         "transitions": [{"from": "any", "to": "b", "when": "planted"}, {"from": "b", "to": "c", "when": "speed",
                                                                         "above": 1}]},
        {"id": "out", "type": "output"}],
        "links": [["speed.value", "inner.speed"], ["speed.value", "outer.speed"],
                  ["a1.pose", "mix.a"], ["both.pose", "mix.b"], ["mix.pose", "outer.a"],
                  ["a1.left_contact", "outer.planted"],
                  ["b1.pose", "outer.b"], ["outer.b_time", "b1.time"],
                  ["p.pose", "inner.p"], ["q.pose", "inner.q"], ["inner.pose", "outer.c"],
                  ["two.motion", "outer.a_motion"], ["two.motion", "outer.c_motion"], ["outer.pose", "out.pose"]]}
    g["nodes"].insert(0, {"id": "two", "type": "sample", "clip": "walk", "root_motion": True})
    plan = ag.compile(ag.Graph.from_dict(g))
    gates = plan.checked.gates
    assert "a1" not in gates and "two" not in gates  # feeds a condition every state reads; feeds two states
    assert gates["mix"] == [("outer", 1)] and gates["b1"] == [("outer", 2)]
    assert gates["inner"] == [("outer", 4)]
    assert sorted(gates["p"]) == [("inner", 1), ("outer", 4)] and sorted(gates["q"]) == [("inner", 2), ("outer", 4)]
    assert "both" in gates and gates["both"] == [("outer", 1)]  # only through mix, only state a's
    walk = plan.checked.walk
    assert walk.index(("outer", True)) < walk.index(("b1", False)) < walk.index(("outer", False))
    inst = plan.instance()
    for f in range(5):
        inst.step(1 / 60, {"speed": 0.0})
    assert clock(inst, "p") == 0.0 and clock(inst, "q") == 0.0  # outer in a (or b): inner's states never ran

# ------------------------------------------------------------------ unreachable states: a warning


REACH = [{"from": "idle", "to": "walk", "when": "go"}, {"from": "walk", "to": "idle", "when": "stop"},
         {"from": "any", "to": "run", "when": "fast"}, {"from": "turn", "to": "idle", "when": "stop"},
         {"from": "jog", "to": "turn", "when": "go"}]


def test_unreachable_states_are_warnings_naming_the_state():
    # Reached from idle: walk (a chain), run (from any state); turn and jog only lead into the reachable part.
    sm = StateMachine(id="loco", start="idle", states=[{"name": s} for s in ("idle", "walk", "run", "turn", "jog")],
                      transitions=REACH)
    said = sm.warnings()
    assert len(said) == 2 and all("cannot be reached from start 'idle'" in s for s in said), said
    assert "'turn'" in said[0] and "'jog'" in said[1]
    # A ring through every state, or "any" into each: nothing to say; "any" into the start alone reaches nothing.
    ring = [{"from": a, "to": b} for a, b in zip("abc", "bca")]
    assert StateMachine(id="m", start="a", states=[{"name": s} for s in "abc"], transitions=ring).warnings() == []
    back = [{"from": "any", "to": "a"}]
    assert len(StateMachine(id="m", start="a", states=[{"name": s} for s in "abc"], transitions=back).warnings()) == 2
    assert StateMachine(id="m", start="a", states=[{"name": "a"}]).warnings() == []


def test_check_reports_an_unreachable_state_as_the_graph_s_warning():
    from animgraph.check import GraphWarning, check

    graph = machine_graph(REACH, states=("idle", "walk", "run", "turn", "jog"),
                          conditions=[("go", "bool"), ("stop", "bool"), ("fast", "bool")])
    with pytest.warns(GraphWarning) as caught:
        checked = check(graph)
    notes = [n for n in checked.warnings if n.startswith("node 'sm': state ")]
    assert len(notes) == 2 and "'turn'" in notes[0] and "'jog'" in notes[1], checked.warnings
    assert {str(w.message) for w in caught} >= set(notes)
    with pytest.warns(GraphWarning):
        assert ag.compile(graph).warnings == checked.warnings  # it still plans


def test_validate_prints_the_unreachable_state_and_exits_0(capsys, tmp_path):
    from animgraph.cli import main

    path = tmp_path / "machine.json"
    machine_graph(REACH, states=("idle", "walk", "run", "turn", "jog"),
                  conditions=[("go", "bool"), ("stop", "bool"), ("fast", "bool")]).save(path)
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"OK {path}")
    lines = err.splitlines()
    assert len(lines) == 2 and all(str(path) in line and "warning" in line and "node 'sm': state" in line
                                   for line in lines), lines
    assert "'turn'" in lines[0] and "'jog'" in lines[1]



# ------------------------------------------------------------------ the shipped machine


def test_a_states_own_clip_ends_it_a_frame_late_and_restarts_with_it():
    """graphs/states.json: the right turn's sample feeds the state's pose and its ``time_left`` condition: it runs only
    in the state, restarts on entry, and the machine leaves one frame after time_left falls below 0.3 s."""
    from animgraph import graphs

    plan = ag.compile(graphs.path("states"))
    assert plan.checked.gates["jog_right"] == [("loco", 1 << 5)]
    assert "speed" not in plan.checked.gates and "turn" not in plan.checked.gates
    inst, dt = plan.instance(), 1 / 60
    left, states = [], []
    script = [(1.2, 0.0)] * 30 + [(3.5, 0.0)] * 60 + [(3.5, -1.0)] * 10 + [(3.5, 0.0)] * 110
    for twice in range(2):
        for speed, turn in script:
            out = inst.step(dt, {"speed": speed, "turn": turn})
            states.append(int(np.ravel(out["state"])[0]))
            left.append(float(inst.port("jog_right", "time_left")[0]))
        script = script[60:]  # running again, then the turn a second time
    entries = [k for k in range(1, len(states)) if states[k] == 5 and states[k - 1] != 5]
    exits = [k for k in range(1, len(states)) if states[k] != 5 and states[k - 1] == 5]
    assert len(entries) == 2 and len(exits) == 2, (entries, exits)
    for a, b in zip(entries, exits):
        assert left[a] == pytest.approx(1.75 - dt, abs=0.02)  # restarted: the whole clip left after the entry frame
        assert left[b - 2] >= 0.3 > left[b - 1]  # fell below at b - 1, read at b


def test_lane_executor_equals_the_per_character_one_on_the_shipped_machine():
    from animgraph import graphs

    graph, batch = ag.Graph.load(graphs.path("states")), 21
    lanes = ag.compile(graph, batch=batch).instance(lanes=True)
    chars = ag.compile(graph, batch=batch).instance(lanes=False, parallel=False)
    rng, seen = np.random.default_rng(7), set()
    speed, turn = rng.uniform(0, 4, batch), np.zeros(batch)
    for f in range(240):
        if f % 20 == 0:
            speed = np.clip(speed + rng.normal(0, 1.5, batch), 0, 4)
            turn = rng.choice([-1.0, 0.0, 0.0, 1.0], batch)
        a, b = lanes.step(1 / 60, {"speed": speed, "turn": turn}), chars.step(1 / 60, {"speed": speed, "turn": turn})
        np.testing.assert_array_equal(a["state"], b["state"])
        for x, y in zip(a["out"].as_tuple(), b["out"].as_tuple()):
            np.testing.assert_allclose(x, y, atol=1e-5, rtol=1e-5)
        seen |= {int(s) for s in np.ravel(a["state"])}
    assert len(seen) >= 5, seen


def test_root_motion_follows_the_state_without_a_step():
    """walking -> running (0.3 s) on graphs/states.json: the machine's motion moves from walk's to run's without
    stepping (its step decays as the pose's offset), and equals run's once the transition is over."""
    from animgraph import graphs

    inst, dt = ag.compile(graphs.path("states")).instance(), 1 / 60
    motion, walk, run = [], [], []
    for f in range(120):
        inst.step(dt, {"speed": 1.2 if f < 60 else 3.5, "turn": 0.0})
        motion.append(inst.port("loco", "motion").copy())
        walk.append(inst.port("walk", "motion").copy())
        run.append(inst.port("run", "motion").copy())
    motion, walk, run = np.array(motion), np.array(walk), np.array(run)
    jump = np.linalg.norm(run[60, :3] - walk[59, :3])
    assert jump > 1.5  # what a switch without the offset would step by (m/s)
    steps = np.linalg.norm(np.diff(motion[:, :3], axis=0), axis=1)
    assert steps[55:80].max() < 0.15 * jump, steps[55:80].max()
    np.testing.assert_allclose(motion[60 + 19:], run[60 + 19:], atol=1e-9)  # 0.3 s on: run's own


# ------------------------------------------------------------------ crossfade and dead blend


def fade_weight(t, duration):
    """The smoothstep weight ``3s^2 - 2s^3`` of the new state ``t`` s into a fade, and its rate (1/s)."""
    s = min(max(t / duration, 0.0), 1.0)
    return 3 * s**2 - 2 * s**3, 6 * s * (1 - s) / duration


def switching(blend, duration=0.4):
    """A debug plan of walk -> run (on ``go``, ``duration`` s, hidden by ``blend``) and an instance of it."""
    plan = ag.compile(machine_graph(blended([t | {"duration": duration} for t in SWITCH], blend), states=("walk", "run"),
                                    conditions=[("go", "bool"), ("back", "bool")]), reuse_slots=False)
    return plan.instance()


def test_a_crossfade_shows_the_blend_of_both_states_and_runs_both_until_it_ends():
    """walk -> run crossfaded over 0.4 s (24 frames) from frame 10: each frame the machine's pose is ``ops.blend`` of
    the two samples' poses at the smoothstep weight and its rate; both samples run while it lasts, then only run's."""
    inst, dt, go = switching("crossfade"), 1 / 60, 10
    ticks = []  # how far walk's clock moved each frame
    for f in range(50):
        before = clock(inst, "s_walk")
        inst.step(dt, {"go": float(f == go), "back": 0.0})
        ticks.append(clock(inst, "s_walk") - before)
        if go <= f <= go + 22:
            alpha, rate = fade_weight((f - go) * dt, 0.4)
            want = ag.ops.blend(inst.port("s_walk", "pose"), inst.port("s_run", "pose"), alpha, rate)
            for a, b in zip(inst.port("sm", "pose").as_tuple(), want.as_tuple()):
                np.testing.assert_allclose(a, b, atol=2e-5)
        if f >= go + 26:  # over: run's pose as it is
            for a, b in zip(inst.port("sm", "pose").as_tuple(), inst.port("s_run", "pose").as_tuple()):
                np.testing.assert_array_equal(a, b)
    assert ticks[1:go + 23] == pytest.approx([dt] * (go + 22)) and ticks[go + 26:] == [0.0] * (50 - go - 26), ticks


def test_a_dead_blend_coasts_what_showed_into_the_new_state_and_runs_only_it():
    """walk -> run dead-blended from frame 10, back to walk at frame 20 (mid-blend): the machine's pose equals a
    ``DeadBlender`` started from what showed and fed the new state's pose; what showed is walk's pose that frame at the
    change from rest (its sample runs that frame, then stops), and the machine's output the frame before coasted a
    frame on at the interruption."""
    inst, dt, go, back = switching("dead_blend"), 1 / 60, 10, 20
    dead = ag.ops.DeadBlender(duration=0.4, halflife=0.2)
    ticks, shown = [], None
    for f in range(50):
        before = clock(inst, "s_walk")
        inst.step(dt, {"go": float(f == go), "back": float(f == back)})
        ticks.append(clock(inst, "s_walk") - before)
        if f == go:
            dead.transition(inst.port("s_walk", "pose"))
        if f == back:
            dead.transition(coasted(shown, dt, 0.2))
        if f >= go:
            want = dead.update(inst.port("s_run" if f < back else "s_walk", "pose"), 0.0 if f in (go, back) else dt)
            for a, b in zip(inst.port("sm", "pose").as_tuple(), want.as_tuple()):
                np.testing.assert_allclose(a, b, atol=2e-5)
        shown = ag.Pose(*(np.array(a) for a in inst.port("sm", "pose").as_tuple()))
    assert ticks[1:go + 1] == pytest.approx([dt] * go) and ticks[go + 1:back] == [0.0] * (back - go - 1), ticks
    assert clock(inst, "s_walk") == pytest.approx(0.3 + 30 * dt)  # restarted at frame 20, shown 29 frames on


# ------------------------------------------------------------------ save and restore mid-transition


SWITCH = [{"from": "walk", "to": "run", "when": "go", "duration": 0.4},
          {"from": "run", "to": "walk", "when": "back", "duration": 0.4}]


def switch_script(frames, batch, go_at, back_at=()):
    """Per frame the inputs ``go``/``back``: true on the frames given (shifted by a frame per character)."""
    shift = np.arange(batch) % 3
    return [{"go": (f - shift == go_at).astype(float), "back": np.isin(f - shift, back_at).astype(float)}
            for f in range(frames)]


def recorded(inst, script):
    """Copies of every output (each pose field, state, changed) of ``inst`` stepped through ``script`` at 60 Hz."""
    frames = []
    for inputs in script:
        out = inst.step(1 / 60, inputs)
        frames.append([np.array(a) for a in out["out"].as_tuple()] + [np.array(out["state"]),
                                                                       np.array(out["changed"])])
    return frames


@pytest.mark.parametrize("blend", BLENDS)
@pytest.mark.parametrize("batch", [1, 19])  # 19: the lane executor
@pytest.mark.parametrize("interrupted", [False, True])
def test_a_restore_mid_transition_continues_bit_identically(batch, interrupted, blend):
    # walk -> run starts at frame 10; interrupted: run -> walk at frame 16, mid-transition; saved at frame 20, while
    # the (last) transition runs; then 40 frames with another interruption.  Loaded in place or into a fresh instance
    # of the plan, the 40 frames repeat exactly.
    plan = ag.compile(machine_graph(blended(SWITCH, blend), states=("walk", "run"),
                                    conditions=[("go", "bool"), ("back", "bool")]), batch=batch)
    inst = plan.instance()
    before = switch_script(20, batch, 10, (16,) if interrupted else ())
    recorded(inst, before)
    assert np.all(inst.port("sm", "time_in_state")[..., 0] < 0.4)  # saved mid-transition, every character
    assert np.all(inst.port("sm", "state")[..., 0] == (0 if interrupted else 1))
    saved = inst.save_state()
    after = switch_script(60, batch, 30, (26, 35))[20:]
    want = recorded(inst, after)
    assert any(np.any(w[-1]) for w in want)  # the script changes state after the save too
    inst.load_state(saved)
    again = recorded(inst, after)
    fresh = plan.instance()
    fresh.load_state(saved)
    elsewhere = recorded(fresh, after)
    for f, w in enumerate(want):
        for k, a in enumerate(w):
            assert np.array_equal(a, again[f][k]), (f, k)
            assert np.array_equal(a, elsewhere[f][k]), (f, k)


def test_a_machine_reading_its_own_outputs_in_a_condition_is_a_cycle_naming_it():
    """The early kernel writes the states' times and reads the conditions: a time feeding a condition is a cycle."""
    graph = machine_graph([{"from": "idle", "to": "walk", "when": "speed", "above": 0.5}])
    graph = ag.Graph.from_dict(graph.model_dump(mode="json", by_alias=True, exclude_none=True)
                               | {"links": [list(ln) for ln in graph.links] + [["sm.idle_time", "sm.speed"]]})
    with pytest.raises(GraphError) as e:
        ag.compile(graph)
    assert "cycle: sm -> sm" in str(e.value) and "'speed'" in str(e.value), str(e.value)


@pytest.mark.parametrize("blend", ["crossfade", "inertialize", "dead_blend"])
def test_state_weights_are_the_crossfades_smoothstep_or_one_from_the_change(blend):
    """``<state>_weight``: what a sync group reads (tests/test_node_sync_group.py): walk 1 until the change at frame
    10; then a crossfade's 1 - alpha and alpha with their rates (the weights the pose above is blended at), an
    inertialized or dead-blended change the new state's 1 at once; they sum to 1."""
    inst, dt, go = switching(blend), 1 / 60, 10
    for f in range(40):
        inst.step(dt, {"go": float(f == go), "back": 0.0})
        walk, run = inst.port("sm", "walk_weight"), inst.port("sm", "run_weight")
        alpha, rate = (0.0, 0.0) if f < go else fade_weight((f - go) * dt, 0.4) if blend == "crossfade" else (1.0, 0.0)
        assert run == pytest.approx([alpha, rate], abs=1e-12), f
        assert walk == pytest.approx([1.0 - alpha, -rate], abs=1e-12), f
