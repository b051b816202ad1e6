"""The displacement node: each mode's defining property, the clamps, velocities against central differences, no jumps.

Tolerances: placements are float64 closed forms (1e-12 m where a property is exact);
graph outputs are float32 poses (1e-5 m).  Rates against five-point central differences
at a 10 us step, reached by steps shrinking towards it: the adjustments are second order
in the step (1e-9).  Two cases are first order, about 4e-6 here, so 2e-5: a clamped
character projected back onto the bound each step, and a half-life far shorter than the
step (0: the damper then settles within each step, on the step's linear model of the gap).
"""

import math

import numpy as np
import pytest

import animgraph as ag
from animgraph.node import REGISTRY
from animgraph.nodes.displacement import ST, Displacement, displacement, verify_motion, verify_simulation

DT = 1 / 60
FIVE = np.array([1.0, -8.0, 8.0, -1.0]) / 12.0
STILL = (np.zeros(3), np.zeros(3))


def yaw_quat(yaw):
    return np.array([math.cos(yaw / 2), 0.0, math.sin(yaw / 2), 0.0])


def qrot(q, v):
    """``v`` rotated by unit quaternion ``q`` (w-first), numpy."""
    t = 2.0 * np.cross(q[1:], v)
    return v + q[0] * t + np.cross(q[1:], t)


def angle_between(a, b):
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(a, b)))))


def displaced(pos=(1.0, 0.0, 0.0), yaw=1.0):
    """A state: the character at the origin facing +Z, the simulation held at ``pos``, turned by ``yaw``, last frame."""
    state = displacement(None, STILL)[0]
    state[ST.sim_pos:ST.sim_pos + 3] = pos
    state[ST.sim_rot:ST.sim_rot + 4] = yaw_quat(yaw)
    return state


def play(options, frames, dt=DT, start=0.3):
    """The verify scenario (a weaving, turning simulation; swaying, turning root motion) at ``dt`` steps."""
    t = start + dt * np.arange(frames)
    state = displacement(None, *verify_simulation(t[0]), verify_motion(t[0]), **options)[0]
    got = []
    for a, b in zip(t, t[1:]):
        state, pos, rot, dev, _ = displacement(state, *verify_simulation(b), verify_motion(b), b - a, **options)
        got.append((pos, rot, dev))
    return got


def test_validity():
    assert REGISTRY["displacement"] is Displacement and ag.ops.displacement is displacement
    for bad in ({"mode": "glue"}, {"clamp_angle": 4.0}, {"position_ratio": -1.0}):
        with pytest.raises(ValueError, match="displacement"):
            displacement(None, STILL, **bad)
    with pytest.raises(ValueError, match="rotation"):
        displacement(None, STILL, (np.ones(3), np.zeros(3)))
    with pytest.raises(ag.GraphError, match="'place'.*position"):
        ag.compile(ag.Graph.from_dict({
            "format": "animgraph.graph", "version": 1,
            "nodes": [{"id": "place", "type": "displacement"}, {"id": "out", "type": "output", "signal": "vec3"}],
            "links": [["place.position", "out.value"]]}))


@pytest.mark.parametrize("mode", ["none", "character_to_simulation", "simulation_to_character", "adjust",
                                  "adjust_by_velocity"])
def test_the_first_frame_puts_the_character_on_the_simulation(mode):
    sim = (np.array([1.0, 0.0, 2.0]), np.array([0.5, 0.0, 0.0])), (yaw_quat(0.7), np.array([0.0, 0.2, 0.0]))
    _, pos, rot, dev, _ = displacement(None, *sim, (np.array([0.0, 0.0, 1.0]), np.zeros(3)), mode=mode)
    np.testing.assert_array_equal(pos[0], sim[0][0])
    np.testing.assert_allclose(rot[0], sim[1][0], atol=1e-15)
    assert dev[0] == 0.0


def test_character_to_simulation_is_the_simulation():
    t = 0.3 + DT * np.arange(1, 40)
    for (pos, rot, dev), time in zip(play({"mode": "character_to_simulation"}, 40), t):
        (sim_pos, sim_vel), (sim_rot, sim_ang) = verify_simulation(time)
        np.testing.assert_array_equal(np.concatenate([pos[0], pos[1], rot[1]]),
                                      np.concatenate([sim_pos, sim_vel, sim_ang]))
        np.testing.assert_allclose(rot[0], sim_rot, atol=1e-15)
        assert dev == (0.0, 0.0)


@pytest.mark.parametrize("mode", ["none", "simulation_to_character"])
def test_none_moves_by_root_motion_alone_on_exact_arcs(mode):
    speed, turn = 1.5, 0.8  # m/s along +Z, rad/s about +Y: a circle of radius speed / turn
    motion = (np.array([0.0, 0.0, speed]), np.array([0.0, turn, 0.0]))
    sim = ((np.array([5.0, 0.0, 5.0]), np.array([1.0, 0.0, 0.0])), (yaw_quat(2.0), np.zeros(3)))  # far: ignored
    state = displacement(None, (np.zeros(3), np.zeros(3)), motion=motion, mode=mode)[0]
    time = 0.0
    for dt in (DT, 0.1, 0.5, DT, 1.3):
        state, pos, rot, dev, _ = displacement(state, *sim, motion, dt, mode=mode)
        time += dt
        r = speed / turn
        np.testing.assert_allclose(pos[0], [r * (1 - math.cos(turn * time)), 0.0, r * math.sin(turn * time)],
                                   atol=1e-12)
        np.testing.assert_allclose(pos[1], speed * np.array([math.sin(turn * time), 0.0, math.cos(turn * time)]),
                                   atol=1e-12)
        np.testing.assert_allclose(rot[0], yaw_quat(turn * time), atol=1e-12)


def test_none_places_the_character_where_the_output_node_integrates_the_same_motion():
    nodes = [{"id": "s", "type": "sample", "clip": "walk_turn", "loop": True, "root_motion": True},
             {"id": "origin", "type": "constant", "signal": "vec3"},
             {"id": "place", "type": "displacement", "mode": "none"},
             {"id": "by_motion", "type": "output"}, {"id": "by_place", "type": "output"}]
    links = [["s.pose", "by_motion.pose"], ["s.motion", "by_motion.motion"], ["s.pose", "by_place.pose"],
             ["s.motion", "place.motion"], ["origin.value", "place.position"],
             ["place.position", "by_place.position"], ["place.rotation", "by_place.rotation"]]
    graph = ag.Graph.from_dict({"format": "animgraph.graph", "version": 1,
                                "assets": {"walk_turn": "animgraph:walk_turn"}, "nodes": nodes, "links": links})
    inst = ag.compile(graph).instance()
    for _ in range(200):
        out = inst.step(DT)
        for field in ("pos", "rot", "vel", "ang"):
            np.testing.assert_allclose(getattr(out["by_place"], field), getattr(out["by_motion"], field), atol=1e-5)
    assert np.linalg.norm(out["by_place"].pos[0]) > 1.0  # it walked


@pytest.mark.parametrize("dt", [DT, 0.05, 0.2])
def test_adjust_halves_the_deviation_in_a_halflife(dt):
    options = {"mode": "adjust", "position_halflife": 0.2, "rotation_halflife": 0.4}
    state = displaced()
    sim = ((np.array([1.0, 0.0, 0.0]), np.zeros(3)), (yaw_quat(1.0), np.zeros(3)))
    for n in range(1, 9):
        state, pos, rot, dev, _ = displacement(state, *sim, None, dt, **options)
        left = 0.5 ** (n * dt / 0.2)
        assert dev[0] == pytest.approx(left, rel=1e-12)
        np.testing.assert_allclose(pos[1], [math.log(2) / 0.2 * left, 0.0, 0.0], rtol=1e-12)  # the damper's rate
        assert angle_between(rot[0], sim[1][0]) == pytest.approx(0.5 ** (n * dt / 0.4), rel=1e-9)


def test_adjust_by_velocity_leaves_a_standing_character_alone():
    state = displaced()
    sim = ((np.array([1.0, 0.0, 0.0]), np.zeros(3)), (yaw_quat(1.0), np.zeros(3)))
    for _ in range(30):
        state, pos, rot, dev, _ = displacement(state, *sim, STILL, DT, mode="adjust_by_velocity")
        np.testing.assert_array_equal(np.concatenate([pos[0], pos[1], rot[1]]), 0.0)
        np.testing.assert_allclose(rot[0], [1.0, 0.0, 0.0, 0.0], atol=1e-15)
        assert dev[0] == 1.0


@pytest.mark.parametrize("walking", [True, False])
def test_adjust_by_velocity_adjusts_at_most_its_ratio_of_the_motion(walking):
    """Walking straight the position is adjusted at its ratio of the speed; turning on the spot, the rotation."""
    ratio = 0.2
    options = {"position_ratio": ratio, "rotation_ratio": ratio, "position_halflife": 0.05, "rotation_halflife": 0.05}
    motion = (np.array([0.0, 0.0, 1.2]), np.zeros(3)) if walking else (np.zeros(3), np.array([0.0, 0.5, 0.0]))
    sim = ((np.array([2.0, 0.0, 0.0]), np.zeros(3)), (yaw_quat(2.0), np.zeros(3)))
    state = displaced((2.0, 0.0, 0.0), 2.0)
    state[ST.last_vel:ST.last_vel + 3], state[ST.last_ang:ST.last_ang + 3] = motion  # already on the move
    for _ in range(30):
        alone = displacement(state, *sim, motion, DT, mode="none")
        state, pos, rot, _, _ = displacement(state, *sim, motion, DT, mode="adjust_by_velocity", **options)
        moved, turned = np.linalg.norm(pos[0] - alone[1][0]), angle_between(rot[0], alone[2][0])
        pull, spin = pos[1] - qrot(rot[0], motion[0]), rot[1] - motion[1]  # the rates beyond root motion
        if walking:  # held at the limit, not idle; the facing left alone
            assert moved == pytest.approx(ratio * 1.2 * DT, rel=1e-12) and turned < 1e-7
            assert np.linalg.norm(pull) == pytest.approx(ratio * 1.2, rel=1e-12) and np.all(spin == 0.0)
        else:
            assert turned == pytest.approx(ratio * 0.5 * DT, rel=1e-6) and moved == 0.0
            assert np.linalg.norm(spin) == pytest.approx(ratio * 0.5, rel=1e-12) and np.all(pull == 0.0)


@pytest.mark.parametrize("mode", ["none", "adjust_by_velocity"])
def test_clamps_hold_every_frame(mode):
    options = {"mode": mode, "clamp_distance": 0.3, "clamp_angle": 0.5}
    state = displacement(None, STILL, (yaw_quat(0.0), np.zeros(3)), **options)[0]
    held = 0
    for n in range(1, 120):
        t = n * DT
        sim = ((np.array([2.9 * t, 0.0, 0.0]), np.array([2.9, 0.0, 0.0])),
               (yaw_quat(3.1 * t), np.array([0.0, 3.1, 0.0])))  # running and spinning away from a standing character
        state, pos, rot, dev, _ = displacement(state, *sim, STILL, DT, **options)
        angle = angle_between(rot[0], sim[1][0])
        assert dev[0] <= 0.3 * (1 + 1e-12) and angle <= 0.5 + 1e-9
        if dev[0] > 0.3 * (1 - 1e-12) and angle > 0.5 - 1e-9:
            held += 1
            np.testing.assert_allclose(pos[1], sim[0][1], atol=1e-12)  # dragged along at the simulation's speed
            np.testing.assert_allclose(rot[1], sim[1][1], atol=1e-9)
            assert dev[1] == pytest.approx(0.0, abs=1e-12)
    assert held > 100


OPTIONS = [{"mode": "none"}, {"mode": "adjust"}, {"mode": "adjust", "position_halflife": 0.0, "rotation_halflife": 0.0},
           {"mode": "adjust_by_velocity", "position_ratio": 0.05, "rotation_ratio": 0.05},
           {"mode": "none", "clamp_distance": 0.05, "clamp_angle": 0.1}]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(f"{v}" for v in o.values()))
def test_velocities_are_central_differences(options):
    t, s = 0.9, 1e-5
    times = np.concatenate([t - 2 * s - 0.6 * np.geomspace(1.0, 1e-5, 40), t + s * np.arange(-2, 3)])
    state = displacement(None, *verify_simulation(times[0]), verify_motion(times[0]), **options)[0]
    got = []
    for a, b in zip(times, times[1:]):
        state, pos, rot, dev, _ = displacement(state, *verify_simulation(b), verify_motion(b), b - a, **options)
        got.append((np.concatenate([pos[0], [2 * math.atan2(rot[0][2], rot[0][0]), dev[0]]]),
                    np.concatenate([pos[1], [rot[1][1], dev[1]]])))
    fd = sum(w * got[-5 + k][0] for w, k in zip(FIVE, (0, 1, 3, 4))) / s
    first_order = "clamp_distance" in options or options.get("position_halflife") == 0.0
    np.testing.assert_allclose(fd, got[-3][1], atol=2e-5 if first_order else 1e-9)
    assert got[-3][1][4] != 0.0 and abs(got[-3][1][3]) > 0.1


@pytest.mark.parametrize("options", OPTIONS + [{"mode": "character_to_simulation"}],
                         ids=lambda o: "-".join(f"{v}" for v in o.values()))
def test_no_jumps(options):
    """No frame moves the character further than its speeds at both ends allow (as tests/test_root_motion.py)."""
    got = play(options, 120)
    pos = np.array([g[0][0] for g in got])
    speed = np.linalg.norm([g[0][1] for g in got], axis=-1)
    step = np.linalg.norm(np.diff(pos, axis=0), axis=-1)
    assert np.all(step <= 1.5 * DT * np.maximum(speed[1:], speed[:-1]) + 1e-3)


def test_the_shipped_controller_graph_moves_the_character_smoothly_within_its_clamp():
    """Stick swinging round, let go, taken up again: the placement's steps are its velocities' (trapezoid, 0.1 mm)."""
    from animgraph import graphs

    plan = ag.compile(graphs.path("controller"), reuse_slots=False)
    clamp = plan.nodes["place"].clamp_distance
    inst, python = plan.instance(), plan.instance(python=True)
    place, deviation = [], []
    for frame in range(400):
        turn = frame / 50.0
        stick = [0.0, 0.0, 0.0] if 200 <= frame < 260 else [0.5 * math.sin(turn), 0.0, 0.5 * math.cos(turn)]
        out = inst.step(DT, {"stick": stick})
        if frame < 20:  # the executor against the op table walked in Python
            ref = python.step(DT, {"stick": stick})
            np.testing.assert_array_equal(out["out"].pos, ref["out"].pos)
            np.testing.assert_array_equal(out["deviation"], ref["deviation"])
        deviation.append(out["deviation"][0])
        place.append(np.concatenate([inst.port("place", "position"), inst.port("place", "rotation")]))
    place = np.array(place)
    assert max(deviation) <= clamp * (1 + 1e-9) and max(deviation) > 0.05  # it strays, within the clamp
    pos, vel = place[:, :3], place[:, 3:6]
    step = np.diff(pos, axis=0) - 0.5 * DT * (vel[1:] + vel[:-1])
    assert np.abs(step).max() < 1e-4
    yaw = np.unwrap(2.0 * np.arctan2(place[:, 8], place[:, 6]))
    turned = np.diff(yaw) - 0.5 * DT * (place[1:, 11] + place[:-1, 11])
    assert np.abs(turned).max() < 1e-4 and np.ptp(yaw) > 1.0


def test_the_motion_output_is_the_placements_velocity_in_its_own_frame():
    options = {"mode": "adjust", "position_halflife": 0.15, "rotation_halflife": 0.25}
    t = np.linspace(0.3, 2.0, 30)
    state = displacement(None, *verify_simulation(t[0]), verify_motion(t[0]), **options)[0]
    for a, b in zip(t, t[1:]):
        state, (pos, vel), (rot, ang), _, (body_vel, body_ang) = displacement(
            state, *verify_simulation(b), verify_motion(b), b - a, **options)
        back = ag.Pose(np.zeros((1, 3)), rot[None] * np.array([1.0, -1.0, -1.0, -1.0]))
        np.testing.assert_allclose(body_vel, ag.kform.mul(back, ag.Pose(np.zeros((1, 3)), np.array([[1.0, 0, 0, 0]]),
                                                                         vel=vel[None])).vel[0], atol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(body_ang), np.linalg.norm(ang), atol=1e-6)
        np.testing.assert_allclose(body_ang[1], ang[1], atol=1e-6)  # a turn about +Y stays one
