"""Root motion: ``sample``'s root-motion mode, the output node's integrator, and no jumps at wraps or switches.

A jump is what the issue that asked for root motion defines: a joint moving between two
frames further than ``1.5 * dt * max(|v_t|, |v_t+1|) + 1 mm`` (its own speed allows less).
"""

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.nodes.output import advance_placement
from animgraph.preprocess import foot_contacts, root_track

JUMP_SLACK = 1e-3  # m


def jumps(pos, vel, dt):
    """(frame, joint) pairs where a joint moves further than its speeds at both ends allow."""
    step = np.linalg.norm(np.diff(pos, axis=0), axis=-1)
    speed = np.maximum(np.linalg.norm(vel[1:], axis=-1), np.linalg.norm(vel[:-1], axis=-1))
    return np.argwhere(step > 1.5 * dt * speed + JUMP_SLACK)


def world(out, skel):
    """Global positions and velocities (float64) of an output's local pose."""
    g = ag.ops.fk(out.copy(), skel.parents)
    return g.pos.astype(np.float64), g.vel.astype(np.float64)


def one_clip_graph(clip="walk", loop=False, extra_nodes=(), extra_links=()):
    return ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 1, "assets": {clip: f"animgraph:{clip}"},
        "nodes": [{"id": "s", "type": "sample", "clip": clip, "loop": loop, "root_motion": True},
                  {"id": "out", "type": "output"}, *extra_nodes],
        "links": [["s.pose", "out.pose"], ["s.motion", "out.motion"], *extra_links],
    })


@pytest.mark.parametrize("name", ["walk", "walk_turn", "run_stop"])
def test_root_motion_played_through_the_output_reproduces_the_clip(name):
    """The root-relative pose placed by the integrated root motion is the clip as captured (within millimetres)."""
    skel, clip = ag.data.load(name)
    inst = ag.compile(one_clip_graph(name)).instance()
    sim_pos, sim_rot = root_track(skel, clip)
    inst.teleport(sim_pos[0].astype(float), sim_rot[0].astype(float))  # start where the clip's bone starts
    ref = ag.ops.fk(ag.Pose(clip.pos, clip.rot, clip.scl), skel.parents).pos
    err = [np.abs(world(inst.step(clip.dt)["out"], skel)[0] - ref[f]).max() for f in range(clip.frames)]
    # The bone's velocities are central differences of its smoothed path, integrated by the
    # trapezoid rule: millimetres over seconds.
    assert max(err) < 0.005, max(err)


def test_pose_is_root_relative_and_motion_is_the_bone_velocity():
    skel, clip = ag.data.load("jog")
    plan = ag.compile(one_clip_graph("jog", extra_nodes=[{"id": "m", "type": "output", "signal": "motion"}],
                                     extra_links=[["s.motion", "m.value"]]))
    inst = plan.instance()
    out = inst.step(clip.dt)
    # The hips sit above the bone (horizontal offset: sway only), facing it.
    assert np.linalg.norm(out["out"].pos[0, [0, 2]]) < 0.15
    vel, ang = out["m"][:3], out["m"][3:]
    speed = ag.preprocess.root_stats(skel, clip)["speed_mean"]
    assert vel[2] == pytest.approx(speed, rel=0.2) and abs(vel[0]) < 0.3 * speed  # forward in its own frame
    assert ang[0] == 0.0 and ang[2] == 0.0


def test_placement_integrates_constant_motion_exactly_at_any_step():
    """Constant body velocity and turn rate trace a circle: one step of 1 s equals 600 steps of 1/600 s."""
    vel, ang = (0.3, 0.0, 1.7), (0.0, 0.9, 0.0)
    one = advance_placement((1.0, 0.0, -2.0), (1.0, 0.0, 0.0, 0.0), vel, ang, 1.0)
    pos, rot = (1.0, 0.0, -2.0), (1.0, 0.0, 0.0, 0.0)
    for _ in range(600):
        pos, rot = advance_placement(pos, rot, vel, ang, 1.0 / 600)
    np.testing.assert_allclose(one[0], pos, atol=1e-9)
    np.testing.assert_allclose(one[1], rot, atol=1e-9)
    # By hand: the circle of radius |v|/w about the start.
    w, t = 0.9, 1.0
    vx, vz = vel[0], vel[2]
    # d/dt (x, z) = R(w t) (vx, vz) with yaw turning +Z towards +X.
    x = (vx * np.sin(w * t) + vz * (1 - np.cos(w * t))) / w
    z = (vz * np.sin(w * t) - vx * (1 - np.cos(w * t))) / w
    np.testing.assert_allclose(one[0], (1.0 + x, 0.0, -2.0 + z), atol=1e-12)


def fd_errors(graph, skel, h, steps):
    """|fd - vel| / max(|vel|, 1) per frame and joint of the world pose, fourth-order central differences."""
    inst = ag.compile(graph).instance()
    pos, vel = zip(*(world(inst.step(h)["out"], skel) for _ in range(steps)))
    pos, vel = np.array(pos), np.array(vel)
    fd = (8.0 * (pos[3:-1] - pos[1:-3]) - (pos[4:] - pos[:-4])) / (12.0 * h)
    return np.linalg.norm(fd - vel[2:-2], axis=-1) / np.maximum(np.linalg.norm(vel[2:-2], axis=-1), 1.0)


def test_output_velocities_match_central_differences_with_root_motion():
    """Root motion adds no velocity error: the placed pose's velocities match differences as well as the clip's own do."""
    skel, _ = ag.data.load("walk_turn")
    plain = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 1, "assets": {"walk_turn": "animgraph:walk_turn"},
        "nodes": [{"id": "s", "type": "sample", "clip": "walk_turn", "loop": False}, {"id": "out", "type": "output"}],
        "links": [["s.pose", "out.pose"]],
    })
    h, steps = 1.0 / 4800.0, 2400
    rm, ref = fd_errors(one_clip_graph("walk_turn"), skel, h, steps), fd_errors(plain, skel, h, steps)
    # The clip's one-frame capture spikes and float32 set the floor (the reference's); hips: no spikes.
    assert rm.max() < ref.max() + 2e-3 and np.percentile(rm, 99) < np.percentile(ref, 99) + 5e-4
    assert rm[:, 0].max() < 3e-3, rm[:, 0].max()


def locomotion_run(dt, seconds):
    """The shipped locomotion graph at ``dt``: walk, switching to jog just after walk's first wrap, then run, walk."""
    plan = ag.compile(graphs.path("gaits"))
    inst = plan.instance()
    walk = plan.clips["walk"]
    period = walk.frames * walk.dt
    frames = int(seconds / dt)
    t = np.arange(frames) * dt
    wrap = int(np.ceil(period / dt))  # the first frame sampled after walk wraps
    gait = np.zeros(frames, int)
    gait[wrap:wrap + int(0.9 / dt)] = 1
    gait[wrap + int(0.9 / dt):wrap + int(1.8 / dt)] = 2
    pos, vel = [], []
    for g in gait:
        p, v = world(inst.step(dt, {"gait": int(g)})["out"], plan.skeleton)
        pos.append(p)
        vel.append(v)
    # Wraps of the clip on show (every sample node's clock runs from 0 at rate 1).
    wraps = []
    for g, name in enumerate(("walk", "jog", "run")):
        period = plan.clips[name].frames * plan.clips[name].dt
        wraps += [f for k in range(1, int(seconds / period) + 1) if (f := int(k * period / dt)) < frames and gait[f] == g]
    switches = list(np.flatnonzero(np.diff(gait)))
    return np.array(pos), np.array(vel), t, wraps, switches, plan


@pytest.mark.parametrize("dt", [1 / 60, 0.1])
def test_no_joint_jumps_at_loop_wraps_and_switches(dt):
    """Looping clips with travelling roots and gait switches: the placement and the pose move only as fast as they say."""
    pos, vel, t, wraps, switches, plan = locomotion_run(dt, 3 * 2.47 + 1.0)
    assert wraps and switches
    near = sorted({f for e in wraps + switches for f in range(e - 2, e + 3) if 0 <= f < len(pos) - 1})
    bad = [tuple(x) for x in jumps(pos, vel, dt) if x[0] in near]
    names = [(f, plan.skeleton.names[j]) for f, j in bad]
    assert not bad, names[:10]
    # The root travels on: never back by a clip's length.
    hips_step = np.linalg.norm(np.diff(pos[:, 0, [0, 2]], axis=0), axis=-1)
    assert hips_step.max() < 6.0 * dt


def test_select_and_blend_pass_root_motion_on():
    g = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk", "run": "animgraph:run"},
        "nodes": [
            {"id": "a", "type": "sample", "clip": "walk", "root_motion": True},
            {"id": "b", "type": "sample", "clip": "run", "root_motion": True},
            {"id": "i", "type": "input", "signal": "int", "default": 1},
            {"id": "sel", "type": "select", "signal": "motion"},
            {"id": "mix", "type": "blend", "signal": "motion", "alpha": 0.25},
            {"id": "ma", "type": "output", "signal": "motion"},
            {"id": "mb", "type": "output", "signal": "motion"},
            {"id": "ms", "type": "output", "signal": "motion"},
            {"id": "mm", "type": "output", "signal": "motion"},
        ],
        "links": [["a.motion", "ma.value"], ["b.motion", "mb.value"], ["a.motion", "sel.in0"], ["b.motion", "sel.in1"],
                  ["i.value", "sel.index"], ["sel.value", "ms.value"], ["a.motion", "mix.a"], ["b.motion", "mix.b"],
                  ["mix.value", "mm.value"]],
    })
    inst = ag.compile(g).instance()
    for _ in range(5):
        out = inst.step(1 / 60)
        assert np.any(out["ma"] != out["mb"])
        np.testing.assert_array_equal(out["ms"], out["mb"])
        np.testing.assert_allclose(out["mm"], 0.75 * out["ma"] + 0.25 * out["mb"], atol=1e-12)


@pytest.mark.parametrize("graph,index", [("gaits", "gait"), ("select_inertialize", "clip"),
                                         ("select_dead_blend", "clip")])
def test_root_motion_does_not_step_at_a_switch(graph, index):
    """The root motion switched with the pose goes through the same transition node: the placement's velocity is continuous."""
    plan = ag.compile(graphs.path(graph))
    inst = plan.instance()
    skel = plan.skeleton
    dt = 1 / 120
    hips = []
    for f in range(120):
        p, v = world(inst.step(dt, {index: 0 if f < 60 else 2})["out"], skel)
        hips.append(v[0])
    accel = np.linalg.norm(np.diff(hips, axis=0), axis=-1) / dt
    # A hard switch of walk (1.6 m/s) to run (3.9 m/s) root motion would be an acceleration of ~280 m/s^2.
    assert accel[58:62].max() < 3.0 * np.median(accel) + 20.0, accel[55:65]


def test_foot_lock_holds_in_the_world_while_the_model_frame_moves():
    """A lock fed the root motion pins the toe in the world as a lock on the unmoved clip pins it in the model frame."""
    skel, clip = ag.data.load("walk")
    contacts = foot_contacts(skel, clip)
    lock = {"id": "lock", "type": "foot_lock", "foot_height": 0.04, "hinge": [0.936, 0.352, 0.0]}
    moving = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "s", "type": "sample", "clip": "walk", "loop": False, "root_motion": True}, lock,
                  {"id": "c", "type": "input", "signal": "bool"}, {"id": "out", "type": "output"}],
        "links": [["s.pose", "lock.pose"], ["c.value", "lock.contact"], ["s.motion", "lock.motion"],
                  ["lock.pose", "out.pose"], ["s.motion", "out.motion"]],
    })
    still = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "s", "type": "sample", "clip": "walk", "loop": False}, lock,
                  {"id": "c", "type": "input", "signal": "bool"}, {"id": "out", "type": "output"}],
        "links": [["s.pose", "lock.pose"], ["c.value", "lock.contact"], ["lock.pose", "out.pose"]],
    })
    a, b = ag.compile(moving).instance(), ag.compile(still).instance()
    sim_pos, sim_rot = root_track(skel, clip)
    a.teleport(sim_pos[0].astype(float), sim_rot[0].astype(float))
    toe = skel.index("left_toe")
    diff, slide_a = [], []
    for f in range(clip.frames):
        c = {"c": bool(contacts[f, 0])}
        pa, va = world(a.step(clip.dt, c)["out"], skel)
        pb, _ = world(b.step(clip.dt, c)["out"], skel)
        diff.append(np.linalg.norm(pa[toe] - pb[toe]))
        if contacts[f, 0]:
            slide_a.append(np.linalg.norm(va[toe, [0, 2]]))
    assert max(diff) < 0.01, max(diff)
    assert np.mean(slide_a) < 0.15, np.mean(slide_a)
