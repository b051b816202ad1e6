"""The preview player: scrubs and replays bit for bit, never steps backwards, replans in place, records channels.

References: a fresh player (or a bare instance) stepped the same frames; central
differences and velocities through ``ag.ops.fk`` (the compiled kernels, where the
player uses its own numpy FK); the input script itself for the input channels.
"""

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.editor.player import Player

DT = 1 / 60


def script(f):
    """Inputs of the locomotion graph at frame f: gait switches and a speed change (contacts come from the clips)."""
    return {"gait": (f // 25) % 3, "rate": 1.0 + 0.01 * (f % 50)}


@pytest.fixture(scope="module")
def plan():
    return ag.compile(graphs.path("gaits"), reuse_slots=False)


def play(player, frames):
    """Step ``player`` on to frame ``frames`` with the script's inputs."""
    while player.frame < frames:
        for name, value in script(player.frame + 1).items():
            player.set_input(name, value)
        player.step()
    return player


def outputs(player):
    """Copies of every output array of the player's instance, and its world pose."""
    arrays = []
    for value in player.inst.outputs.values():
        arrays += [a.copy() for a in (value.as_tuple() if isinstance(value, ag.Pose) else (value,))]
    return arrays + [player.pos.copy(), player.vel.copy()]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


class Counted:
    """Counts an instance's steps and resets."""

    def __init__(self, player):
        self.steps = self.resets = 0
        inst = player.inst
        step, reset = inst.step, inst.reset

        def counted_step(*args, **kw):
            self.steps += 1
            return step(*args, **kw)

        def counted_reset(*args, **kw):
            self.resets += 1
            return reset(*args, **kw)

        inst.step, inst.reset = counted_step, counted_reset


# ---------------------------------------------------------------- scrubbing


@pytest.mark.parametrize("k", [0, 7, 40, 63, 89])
def test_seek_back_is_bit_identical_to_a_fresh_run(plan, k):
    player = play(Player(plan), 90)
    player.seek(k)
    fresh = play(Player(plan), k)
    assert player.frame == k and player.time == fresh.time and player.inputs == fresh.inputs
    assert_same(outputs(player), outputs(fresh))
    # And the state is whole: both step on alike (the recording's own inputs, then new ones).
    play(player, k + 15)
    play(fresh, k + 15)
    assert_same(outputs(player), outputs(fresh))


def test_seek_beyond_the_recording_steps_there(plan):
    player = play(Player(plan), 50)
    player.seek(20)
    player.seek(80)  # back to 50 on the recording, then 30 new frames with frame 50's inputs
    fresh = play(Player(plan), 50)
    for _ in range(30):
        fresh.step()
    assert player.frame == 80 and player.frames_recorded() == 81
    assert_same(outputs(player), outputs(fresh))


def test_seek_never_steps_backwards(plan):
    player = play(Player(plan, every=10), 100)
    inst, count = player.inst, Counted(player)
    for target, most in [(55, 5), (57, 2), (3, 3), (98, 8), (98, 0), (100, 2)]:
        before = count.steps
        player.seek(target)
        assert count.steps - before <= most, target
        assert player.frame == target
    assert count.resets == 0 and player.inst is inst  # the recorded states, never a run from the start
    assert_same(outputs(player), outputs(play(Player(plan), 100)))


def test_stepping_on_a_recording_replays_it_until_the_inputs_differ(plan):
    player = play(Player(plan), 60)
    recorded = player.history("speed:Hips")
    player.seek(20)
    for _ in range(10):
        player.step()  # no new inputs: frame 21..30 as recorded
    assert player.frame == 30 and player.frames_recorded() == 61
    np.testing.assert_array_equal(np.linalg.norm(player.vel[0]), recorded[30])
    player.set_input("gait", 2 - script(31)["gait"])
    player.step()  # a new future: the recording ends here
    assert player.frames_recorded() == 32 and player.inputs["gait"] == 2 - script(31)["gait"]


def test_frames_before_the_recording_restart_there(plan):
    player = play(Player(plan, keep=30, every=10), 75)
    assert 21 <= player.frames_recorded() <= 30 and player.first == 76 - player.frames_recorded()
    assert player.first % 10 == 0  # the oldest frame kept holds a state
    player.seek(player.first)  # still replayable
    player.seek(5)
    assert (player.frame, player.first, player.frames_recorded()) == (5, 5, 1)
    assert player.time == pytest.approx(5 * DT)


# ---------------------------------------------------------------- replan


def test_replan_keeps_time_placement_and_inputs(plan):
    player = play(Player(plan), 40)
    root, time, inputs = player.pos[0].copy(), player.time, dict(player.inputs)
    data = ag.Graph.load(graphs.path("gaits")).to_dict()
    next(n for n in data["nodes"] if n["id"] == "smooth")["duration"] = 0.1
    edited = ag.compile(ag.Graph.from_dict(data, file=graphs.path("gaits")), reuse_slots=False)
    player.replan(edited)
    assert (player.frame, player.time, player.first, player.frames_recorded()) == (40, time, 40, 1)
    assert player.inputs == inputs and player.plan is edited
    # Every node as a bare instance reset to that time with those inputs evaluates it ...
    bare = edited.instance()
    bare.reset(time)
    bare.step(DT, inputs)
    for node in ("walk", "pick", "smooth", "right_lock"):
        np.testing.assert_array_equal(player.inst.port(node, "pose").pos, bare.port(node, "pose").pos)
    # ... while the character stays where it stood (the placement carried over; the pose itself may change,
    # as the edit restarts the transition in progress and the locks).
    ground = [0, 2]
    moved = np.linalg.norm(player.pos[0, ground] - root[ground])
    assert moved < 0.05 < 0.5 < np.linalg.norm(bare.outputs["out"].pos[0, ground] - root[ground])


def test_replan_drops_inputs_the_edit_removed():
    player = Player(ag.compile(graphs.path("select_inertialize"), reuse_slots=False))
    player.set_input("clip", 2)
    player.step()
    player.replan(ag.compile(graphs.path("blend"), reuse_slots=False))
    assert "clip" not in player.inputs and player.frame == 1
    player.step()


# ---------------------------------------------------------------- what the window draws


def test_fd_and_prev_vel_against_the_compiled_fk(plan):
    player = Player(plan)
    assert player.fd is None and player.prev_vel is None
    inst = plan.instance()  # the same frames, by hand
    inst.reset(0.0)
    glob = []
    for f in range(30):
        if f:
            for name, value in script(f).items():
                player.set_input(name, value)
            player.step()
        out = inst.step(DT, script(f) if f else {})
        glob.append(ag.ops.fk(out["out"].copy(), plan.skeleton.parents))
        if f >= 2:
            pos, vel = player.fd
            np.testing.assert_allclose(pos, glob[-2].pos, atol=1e-5)
            np.testing.assert_allclose(vel, (glob[-1].pos - glob[-3].pos) / (2 * DT), atol=1e-3)
            np.testing.assert_allclose(player.prev_vel, glob[-2].vel, atol=1e-4)
        np.testing.assert_allclose(player.vel, glob[-1].vel, atol=1e-4)
    trail = player.trail
    assert trail.shape == (30, 3)
    np.testing.assert_allclose(trail, [g.pos[0] for g in glob], atol=1e-5)


def test_channels_and_histories(plan):
    player = play(Player(plan), 70)
    names = player.channels()
    assert {f"speed:{j}" for j in player.joints} <= set(names)
    assert {"input:gait", "input:rate", "signal:pick_left.value", "signal:pick.changed", "pop:excess"} <= set(names)
    assert len(names) == len(set(names))
    for name in names:
        assert player.history(name).shape == (player.frames_recorded(),) == (71,)
    np.testing.assert_array_equal(player.history("input:gait")[1:], [script(f)["gait"] for f in range(1, 71)])
    switched = np.flatnonzero(player.history("signal:pick.changed"))
    np.testing.assert_array_equal(switched, [f for f in range(1, 71) if script(f)["gait"] != script(f - 1)["gait"]
                                             and f != 1])
    with pytest.raises(ag.GraphError, match="unknown channel"):
        player.history("speed:nobody")


def test_pops_are_found_once_and_survive_a_scrub():
    nodes = [{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "jog", "type": "sample", "clip": "jog"},
             {"id": "i", "type": "input", "signal": "int"}, {"id": "pick", "type": "select"},
             {"id": "out", "type": "output"}]
    links = [["walk.pose", "pick.in0"], ["jog.pose", "pick.in1"], ["i.value", "pick.index"], ["pick.pose", "out.pose"]]
    assets = {"walk": "animgraph:walk", "jog": "animgraph:jog"}
    g = ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "assets": assets,
                            "nodes": nodes, "links": links})
    player = Player(ag.compile(g, reuse_slots=False), time=0.2)
    for f in range(1, 50):
        player.set_input("i", int(15 <= f < 30))
        player.step()
    found = [(p.frame, p.node) for p in player.pops]
    assert found == [(15, "pick"), (30, "pick")]
    assert player.pops[0].time == pytest.approx(0.2 + 15 * DT)
    player.seek(10)
    player.seek(45)
    assert [(p.frame, p.node) for p in player.pops] == found
    player.seek(20)
    player.set_input("i", 0)
    player.step()  # a new future from 21, switching back: frame 30's pop is gone, frame 21 pops
    assert [(p.frame, p.node) for p in player.pops] == [(15, "pick"), (21, "pick")]


def test_refuses_what_it_cannot_play():
    path = graphs.path("select_inertialize")
    with pytest.raises(ag.GraphError, match="reuse_slots=False"):
        Player(ag.compile(path))
    with pytest.raises(ag.GraphError, match="batch=1"):
        Player(ag.compile(path, batch=2, reuse_slots=False))
    player = Player(ag.compile(path, reuse_slots=False))
    with pytest.raises(ag.GraphError, match="clip"):
        player.set_input("clip", "two")
    assert "clip" not in player.inputs
    with pytest.raises(ag.GraphError, match="frame number"):
        player.seek(-1)


def _three_loops_of_walk(doc):
    """The pops the player finds over three loops of ``walk`` played by ``doc``'s graph."""
    plan = ag.compile(doc.graph, reuse_slots=False)
    _, clip = ag.data.load("walk")
    player = Player(plan)
    while player.frame < 3 * (clip.frames - 1) * clip.dt / DT + 2:
        player.step()
        assert not player.finished  # looping clips: a looping preview never starts again
    return player.pops


def test_the_new_graph_walks_on_for_three_loops_without_a_pop():
    from animgraph.editor.document import Document

    doc = Document.new()
    assert _three_loops_of_walk(doc) == []
    # The finder does see the loop's snap back without root motion (the new graph before it had root motion).
    doc.set_field("walk", "root_motion", False)
    pops = _three_loops_of_walk(doc)
    assert len(pops) >= 3 and max(p.error for p in pops) > 1.0, pops


def test_finished_once_every_clamped_sample_has_ended():
    # Two clamped samples at rates 1 and 2 blended: finished only once the slower one has ended too.
    graph = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 2, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "a", "type": "sample", "clip": "walk", "loop": False},
                  {"id": "b", "type": "sample", "clip": "walk", "loop": False, "rate": 2.0},
                  {"id": "mix", "type": "blend", "alpha": 0.5}, {"id": "out", "type": "output"}],
        "links": [["a.pose", "mix.a"], ["b.pose", "mix.b"], ["mix.pose", "out.pose"]]})
    _, clip = ag.data.load("walk")
    end = (clip.frames - 1) * clip.dt / DT  # frames until the rate-1 clip's clock reaches its end
    player = Player(ag.compile(graph, reuse_slots=False))
    first = None
    while player.frame < end + 10:
        player.step()
        if player.finished and first is None:
            first = player.frame
    assert first is not None and end - 1 <= first <= end + 2, (first, end)
    player.seek(int(end / 2))  # a scrub back: not finished there
    assert not player.finished
