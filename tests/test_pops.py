"""The pop finder: the trapezoid test on hand-made motion, the node it names on graphs built to pop, and
silence on the shipped locomotion graph driven as the demo drives it.

Hand-computed references: a chord of a circle against the mean of its end tangents
(``2r sin(θ/2) − rθ cos(θ/2)``); a 5 cm jump in straight motion; ``ag.ops.fk`` (the
compiled kernels) for the numpy FK.
"""

import numpy as np
import pytest

import animgraph as ag
from animgraph import gaits_demo as demo, graphs
from animgraph.pops import FLOOR, REL, PopFinder, excess, world

DT = 1 / 60
ASSETS = {"walk": "animgraph:walk", "run": "animgraph:run"}


def graph(nodes, links):
    return ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "assets": ASSETS,
                               "nodes": nodes, "links": links})


def switching(transition):
    """Sample walk and run, selected by input 'i'; the select straight to the output, or through ``transition``."""
    nodes = [{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "run", "type": "sample", "clip": "run"},
             {"id": "i", "type": "input", "signal": "int"}, {"id": "pick", "type": "select"},
             {"id": "out", "type": "output"}]
    links = [["walk.pose", "pick.in0"], ["run.pose", "pick.in1"], ["i.value", "pick.index"]]
    if transition is None:
        return graph(nodes, links + [["pick.pose", "out.pose"]])
    nodes.append({"id": "smooth", "type": transition})
    return graph(nodes, links + [["pick.pose", "smooth.pose"], ["pick.changed", "smooth.transition"],
                                 ["smooth.pose", "out.pose"]])


def play(g, frames, inputs, start=0.2, events=None):
    """The pops of ``frames`` steps of a debug plan of ``g`` (``events[frame](inst)`` before that frame's step)."""
    plan = ag.compile(g, reuse_slots=False)
    inst, finder = plan.instance(), PopFinder(plan)
    inst.reset(start)  # the run clip (1.125 s) must not wrap within the play: its wrap is a pop of its own
    pops = []
    for f in range(frames):
        if events and f in events:
            events[f](inst)
        inst.step(DT, inputs(f))
        pop = finder.observe(inst, f, DT)
        if pop is not None:
            pops.append(pop)
    return pops


# ---------------------------------------------------------------- the test on hand-made motion


def test_world_matches_the_compiled_fk():
    skel, walk = ag.data.load("walk")
    local = ag.ops.sample(walk, np.linspace(0.1, 2.0, 5), mode="cubic", loop=True)
    rng = np.random.default_rng(3)
    local.scl[...] = rng.uniform(0.8, 1.25, local.scl.shape)
    local.svl[...] = rng.uniform(-1.0, 1.0, local.svl.shape)
    glob = ag.ops.fk(local, skel.parents)
    pos, vel = world(local, np.asarray(skel.parents))
    np.testing.assert_allclose(pos, glob.pos, atol=2e-6)
    np.testing.assert_allclose(vel, glob.vel, atol=2e-5)


@pytest.mark.parametrize("speed", [0.0, 0.5, 1.5, 2.0])
def test_a_5cm_jump_in_straight_motion_is_flagged_on_its_frame(speed):
    rng = np.random.default_rng(int(speed * 10))
    direction, jump = rng.normal(size=3), rng.normal(size=3)
    vel = speed * direction / np.linalg.norm(direction)
    t = np.arange(40) * DT
    pos = 0.3 + t[:, None] * vel + 0.05 * (jump / np.linalg.norm(jump)) * (np.arange(40) >= 17)[:, None]
    ratio = excess(pos[:-1], pos[1:], vel, vel, DT, REL, FLOOR)[0]
    assert list(np.flatnonzero(ratio > 1.0) + 1) == [17]


@pytest.mark.parametrize("radius, omega", [(0.05, 25.0), (0.3, 12.0), (1.0, 6.0), (2.0, 1.0)])
def test_smooth_circles_are_not_flagged(radius, omega):
    t = np.arange(120) * DT
    angle = omega * t
    pos = radius * np.stack([np.cos(angle), np.full_like(t, 0.2), np.sin(angle)], axis=1)
    vel = radius * omega * np.stack([-np.sin(angle), np.zeros_like(t), np.cos(angle)], axis=1)
    ratio, err, speed = excess(pos[:-1], pos[1:], vel[:-1], vel[1:], DT, REL, FLOOR)
    theta = omega * DT  # the chord and the mean end tangent point the same way
    np.testing.assert_allclose(err, abs(2 * radius * np.sin(theta / 2) - radius * theta * np.cos(theta / 2)),
                               atol=1e-12)
    np.testing.assert_allclose(speed, radius * omega)
    assert ratio.max() < 1.0


# ---------------------------------------------------------------- graphs built to pop


def index_20_to_40(f):
    return {"i": int(20 <= f < 40)}


def test_a_select_without_transition_is_named_on_its_switch_frames_only():
    pops = play(switching(None), 50, index_20_to_40)
    assert [(p.frame, p.node) for p in pops] == [(20, "pick"), (40, "pick")]
    assert all(len(p.joints) > 20 and p.error > 0.5 for p in pops)  # the whole body, by a switch of clip


@pytest.mark.parametrize("transition", ["inertialize", "dead_blend"])
def test_the_same_switches_through_a_transition_name_none(transition):
    assert play(switching(transition), 50, index_20_to_40) == []


def test_a_teleport_is_named_as_the_output_node():
    def hop(inst):
        inst.teleport((0.05, 0.0, 0.0))

    pops = play(switching(None), 40, lambda f: {"i": 0}, events={25: hop})
    assert [(p.frame, p.node) for p in pops] == [(25, "out")]
    assert "LeftFoot" in pops[0].joints  # a foot in stance: 5 cm against a few mm of its own motion


def test_reset_and_jumps_compare_with_nothing():
    plan = ag.compile(switching(None), reuse_slots=False)
    inst, finder = plan.instance(), PopFinder(plan)
    inst.step(DT, {"i": 0})
    assert finder.observe(inst, 0, DT) is None  # nothing before it
    inst.step(DT, {"i": 1})
    assert finder.observe(inst, 1, DT).node == "pick"
    inst.step(DT, {"i": 0})
    finder.reset()
    assert finder.observe(inst, 2, DT) is None  # the switch back, but forgotten by reset
    inst.step(DT, {"i": 1})
    assert finder.observe(inst, 5, DT) is None  # not the frame after 2: a seek


def test_refuses_plans_it_cannot_read():
    g = switching(None)
    with pytest.raises(ag.GraphError, match="reuse_slots=False"):
        PopFinder(ag.compile(g))
    plan = ag.compile(g, reuse_slots=False)
    with pytest.raises(ag.GraphError, match="not a pose output"):
        PopFinder(plan, output="pick")
    with pytest.raises(ag.GraphError, match="another plan"):
        PopFinder(plan).observe(ag.compile(g, reuse_slots=False).instance(), 0, DT)


# ---------------------------------------------------------------- the shipped locomotion graph


def test_locomotion_as_the_demo_drives_it_names_none():
    """``demo.simulate``'s script at 60 Hz: walk, jog, run, walk with inertialized switches and foot locks."""
    frames = 900
    total = frames * DT
    clips = {g: demo.locomotion_clip(g, distance=demo.START + total * 4.5 + 5.0) for g in demo.GAITS}
    speeds = [clips[g].speed for g in demo.GAITS]
    plan = ag.compile(graphs.path("gaits"), reuse_slots=False, assets={g: clips[g].clip for g in demo.GAITS})
    inst, finder = plan.instance(), PopFinder(plan)
    clock = demo.START
    inst.reset(clock)
    pops, worst, switches = [], 0.0, 0
    for f in range(frames):
        gait, speed, accel = demo.schedule(f * DT, total, speeds)
        inst.step(DT, {"gait": gait, "rate": (speed, accel)})  # the samples give the locks the clips' contacts
        switches += int(inst.port("pick", "changed")[0])
        pop = finder.observe(inst, f, DT)
        pops += [pop] if pop else []
        worst = max(worst, finder.worst)
        clock += speed * DT
    assert switches == 3 and pops == []
    assert worst > 0.3  # it was looking: the motion came within a factor of three of the bound


def test_watches_one_character_of_a_batch():
    plan = ag.compile(switching(None), batch=2, reuse_slots=False)
    inst = plan.instance()
    finders = [PopFinder(plan, character=c) for c in (0, 1)]
    inst.reset(0.2)
    for f in range(3):
        inst.step(DT, {"i": [0, int(f == 2)]})  # only character 1 switches, on frame 2
        found = [finder.observe(inst, f, DT) for finder in finders]
    assert found[0] is None and found[1].node == "pick" and found[1].frame == 2
