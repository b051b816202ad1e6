"""The controller node: the simulation object's springs, speeds, facing, and its predicted trajectory.

Tolerances: the springs are closed forms in float64, so steps and predictions agree to
1e-9 m (rounding over a few hundred operations on metres).  Rates against five-point
central differences: 1e-7 where the inputs are held (the solution is exact for any step);
with moving inputs each step holds them (first order in the step), and the difference at
step ``s`` is off by about ``s`` times the inputs' rates: 1e-4 at s = 10 us.
"""

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph.node import REGISTRY, TRAJECTORY
from animgraph.nodes.controller import ST, Controller, controller, verify_stick, verify_yaw

DT = 1 / 60
FIVE = np.array([1.0, -8.0, 8.0, -1.0]) / 12.0  # weights of x(t-2s), x(t-s), x(t+s), x(t+2s), over s


def yaw_of(rot):
    """Yaw (rad) of a rotation about +Y (w-first)."""
    return 2.0 * np.arctan2(rot[..., 2], rot[..., 0])


def run(state, stick, steps, dt=DT, yaw=0.0, **options):
    """``steps`` updates of ``dt`` s with the inputs held; the last outputs."""
    for _ in range(steps):
        state, pos, rot, traj = controller(state, stick, yaw, dt, **options)
    return state, pos, rot, traj


def test_validity():
    assert REGISTRY["controller"] is Controller and ag.ops.controller is controller
    state, pos, rot, traj = controller(None, np.zeros(3))
    np.testing.assert_array_equal(state[:ST.last_dt], Controller(id="c").state(None)[:ST.last_dt])
    np.testing.assert_array_equal(pos[0], 0.0)
    np.testing.assert_array_equal(rot[0], [1.0, 0.0, 0.0, 0.0])
    rest = [0.0] * 6 + [0.0, 1.0] * 3 + [0.0] * 12  # still, facing ahead
    np.testing.assert_array_equal(traj, rest)
    for bad in ({"forward_speed": -1.0}, {"offsets": [0.1, 0.2]}, {"offsets": [0.1, 0.2, 61.0]}, {"facing": "left"}):
        with pytest.raises(ValueError, match="controller"):
            controller(None, np.zeros(3), **bad)
    with pytest.raises(ValueError, match="stick"):
        controller(None, np.zeros(2))
    with pytest.raises(ag.GraphError, match="'ctrl'.*velocity_halflife"):
        ag.Graph.from_dict({"format": "animgraph.graph", "version": 1,
                            "nodes": [{"id": "ctrl", "type": "controller", "velocity_halflife": -0.1}]})


@pytest.mark.parametrize("stick, camera_yaw, direction", [
    ((0.0, 0.0, 1.0), 0.0, (0.0, 0.0, 1.0)),  # ahead, camera looking along +Z
    ((1.0, 0.0, 0.0), 0.0, (-1.0, 0.0, 0.0)),  # right of a camera looking along +Z is -X (Y up, right-handed)
    ((0.0, 0.0, 1.0), math.pi / 2, (1.0, 0.0, 0.0)),  # the camera looks along +X
    ((0.0, 0.5, 3.0), 0.0, (0.0, 0.0, 1.0)),  # y ignored, longer than 1 counts as 1
])
def test_the_stick_steers_in_camera_space_and_the_object_faces_where_it_goes(stick, camera_yaw, direction):
    state = controller(None, np.zeros(3))[0]
    _, pos, rot, traj = run(state, np.array(stick), 1, dt=60.0, yaw=camera_yaw)  # springs long settled
    np.testing.assert_allclose(pos[1], 4.0 * np.array(direction), atol=1e-9)  # forward_speed: faces the stick
    np.testing.assert_allclose(yaw_of(rot[0]), math.atan2(direction[0], direction[2]), atol=1e-9)
    np.testing.assert_allclose(rot[1], 0.0, atol=1e-9)


@pytest.mark.parametrize("stick, speed", [((0.0, 0.0, 1.0), 4.0), ((0.0, 0.0, -0.5), 0.5 * 2.5),
                                          ((-0.8, 0.0, 0.0), 0.8 * 3.0),
                                          ((0.6, 0.0, -0.8), math.hypot(0.6 * 3.0, 0.8 * 2.5))])
def test_strafing_speeds_are_forward_side_and_back_of_the_camera(stick, speed):
    state = controller(None, np.zeros(3), facing="camera")[0]
    yaw = 0.3
    _, pos, rot, _ = run(state, np.array(stick), 1, dt=60.0, yaw=yaw, facing="camera")
    assert np.linalg.norm(pos[1]) == pytest.approx(speed, rel=1e-9)
    np.testing.assert_allclose(yaw_of(rot[0]), yaw, atol=1e-9)  # facing the camera's way whatever the stick


def test_releasing_the_stick_holds_the_facing_and_stops():
    state = controller(None, np.zeros(3))[0]
    state, _, rot, _ = run(state, np.array([0.3, 0.0, 0.4]), 10)
    mid = yaw_of(rot[0])
    _, pos, rot, traj = run(state, np.zeros(3), 1, dt=60.0)
    np.testing.assert_allclose(pos[1], 0.0, atol=1e-9)
    assert yaw_of(rot[0]) == pytest.approx(math.atan2(-0.3, 0.4), abs=1e-9)  # the stick's direction, not back to 0
    assert abs(mid) < abs(math.atan2(-0.3, 0.4))  # it was still turning when released


STATES = st.tuples(*(st.floats(-3.0, 3.0) for _ in range(11)))


@settings(max_examples=40, deadline=None)
# Spinning past the far side of a held stick's direction: short steps once re-aimed the other way round.
@example((0.0,) * 9 + (-1.5625, -2.0), -1.0, 0.0, 0.0, 1.0, "stick", 15)
@given(STATES, st.floats(-1.0, 1.0), st.floats(-1.0, 1.0), st.floats(-4.0, 4.0), st.floats(0.01, 2.0),
       st.sampled_from(["stick", "camera"]), st.integers(2, 40))
def test_one_step_equals_many_when_the_inputs_are_held(values, x, z, camera_yaw, span, facing, pieces):
    """History-free: the springs are closed forms, so one update of ``span`` s is ``pieces`` shorter ones."""
    state = controller(None, np.zeros(3))[0]
    state[ST.pos:ST.pos + 9] = values[:9]
    state[ST.yaw], state[ST.spin] = values[9], values[10]
    state[ST.goal] = values[9] + 0.5  # held (stick mode, short stick): within pi of the yaw
    options = {"facing": facing, "velocity_halflife": 0.2, "rotation_halflife": 0.35}
    stick = np.array([x, 0.0, z])
    one = outputs_flat(controller(state, stick, camera_yaw, span, **options))
    many = outputs_flat(run(state, stick, pieces, span / pieces, camera_yaw, **options))
    for a, b in zip(one, many):
        np.testing.assert_allclose(a, b, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("facing", ["stick", "camera"])
def test_the_trajectory_is_where_the_object_goes_while_the_stick_is_held(facing):
    state = controller(None, np.zeros(3), facing=facing)[0]
    state = run(state, np.array([0.2, 0.0, 0.9]), 25, yaw=0.4, facing=facing)[0]  # moving and turning already
    held = np.array([0.9, 0.0, -0.3])  # a new stick, held from now on
    state, pos, rot, traj = controller(state, held, 0.4, DT, facing=facing)
    yaw = yaw_of(rot[0])
    for k, frames in enumerate((20, 40, 60)):  # the default offsets: +1/3, +2/3, +1 s at 60 fps
        _, pos_k, rot_k, _ = run(state, held, frames, yaw=0.4, facing=facing)
        ahead = pos_k[0] - pos[0]
        c, s = math.cos(yaw), math.sin(yaw)  # into the object's frame now: turned by -yaw
        local = (c * ahead[0] - s * ahead[2], s * ahead[0] + c * ahead[2])
        np.testing.assert_allclose(traj[TRAJECTORY.pos + 2 * k:TRAJECTORY.pos + 2 * k + 2], local, atol=1e-9)
        turned = yaw_of(rot_k[0]) - yaw
        np.testing.assert_allclose(traj[TRAJECTORY.facing + 2 * k:TRAJECTORY.facing + 2 * k + 2],
                                   (math.sin(turned), math.cos(turned)), atol=1e-9)


def outputs_flat(out):
    """Position, yaw and trajectory values of one controller call (one object), and their rates."""
    _, pos, rot, traj = out
    return (np.concatenate([pos[0], [yaw_of(rot[0])], traj[:12]]),
            np.concatenate([pos[1], [rot[1][1]], traj[12:]]))


def test_rates_of_held_inputs_are_central_differences():
    """Held inputs: every stencil point is one exact update from the same state."""
    options = {"facing": "camera", "velocity_halflife": 0.25, "rotation_halflife": 0.4}
    stick = np.array([-0.7, 0.0, 0.4])
    state = run(controller(None, np.zeros(3), **options)[0], np.array([0.5, 0.0, 0.5]), 30, yaw=-0.5, **options)[0]
    t, s = 0.3, 1e-3
    centre = outputs_flat(controller(state, stick, 1.1, t, **options))
    points = [outputs_flat(controller(state, stick, 1.1, t + k * s, **options))[0] for k in (-2, -1, 1, 2)]
    fd = sum(w * p for w, p in zip(FIVE, points)) / s
    np.testing.assert_allclose(fd, centre[1], atol=1e-7)
    assert np.abs(centre[1]).max() > 0.5  # moving, turning, and the prediction sliding


@pytest.mark.parametrize("camera", [False, True])
def test_rates_of_moving_inputs_are_central_differences(camera):
    """The stick and camera swinging: rates carry them (desired velocity and facing), as frames get short."""
    options = {"facing": "camera" if camera else "stick", "velocity_halflife": 0.2, "rotation_halflife": 0.3}
    t, s = 0.8, 1e-5
    lead = t - 2 * s - 0.5 * np.geomspace(1.0, 1e-5, 30)  # steps shrinking towards the stencil's
    times = np.concatenate([lead, t + s * np.arange(-2, 3)])
    state = controller(None, verify_stick(times[0], camera), verify_yaw(times[0]), **options)[0]
    got = []
    for a, b in zip(times, times[1:]):
        out = controller(state, verify_stick(b, camera), verify_yaw(b), b - a, **options)
        state = out[0]
        got.append(outputs_flat(out))
    fd = sum(w * got[-5 + k][0] for w, k in zip(FIVE, (0, 1, 3, 4))) / s
    rates = got[-3][1]
    np.testing.assert_allclose(fd, rates, atol=1e-4)
    assert np.abs(rates[4:]).max() > 0.5


def test_zero_halflives_are_instant_and_nothing_is_ever_nan():
    for hv in (0.0, 1e-300):  # below a microsecond a half-life acts as 0
        state = controller(None, np.zeros(3), velocity_halflife=hv, rotation_halflife=hv)[0]
        _, pos, rot, _ = controller(state, np.array([0.0, 0.0, 0.5]), 0.0, DT, velocity_halflife=hv,
                                    rotation_halflife=hv)
        np.testing.assert_allclose(pos[1], [0.0, 0.0, 2.0], atol=1e-12)  # at the desired velocity at once
        np.testing.assert_allclose(pos[0], [0.0, 0.0, 2.0 * DT], atol=1e-12)
    options = {"velocity_halflife": 60.0, "rotation_halflife": 0.0, "offsets": (0.0, 1.0, 60.0)}
    state = controller(None, np.zeros(3), **options)[0]
    for dt in (0.0, 5e-324, DT, 1e3):
        state, pos, rot, traj = controller(state, (np.array([0.3, 0.0, -1e9]), np.ones(3)), (1e9, 1.0), dt, **options)
        assert all(np.all(np.isfinite(a)) for a in (state, *pos, *rot, traj))


def test_a_graph_runs_the_op_compiled_and_resets_the_object_to_the_origin():
    graph = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 1,
        "nodes": [{"id": "stick", "type": "input", "signal": "vec3", "default": [0.0, 0.0, 1.0]},
                  {"id": "ctrl", "type": "controller", "camera_yaw": 0.5},
                  {"id": "pos", "type": "output", "signal": "vec3"},
                  {"id": "traj", "type": "output", "signal": "trajectory"}],
        "links": [["stick.value", "ctrl.stick"], ["ctrl.position", "pos.value"], ["ctrl.trajectory", "traj.value"]]})
    plan = ag.compile(graph)
    inst, python = plan.instance(), plan.instance(python=True)
    first = {k: v.copy() for k, v in inst.step(DT).items()}
    python.step(DT)
    for _ in range(30):
        out = inst.step(DT)
        ref = python.step(DT)  # the executor against the op table walked in Python
        for key in out:
            np.testing.assert_array_equal(out[key], ref[key])
    state = controller(None, np.array([0.0, 0.0, 1.0]), 0.5)[0]
    state, pos, _, traj = run(state, np.array([0.0, 0.0, 1.0]), 30, yaw=0.5)
    np.testing.assert_allclose(out["pos"], np.concatenate(pos), atol=1e-12)  # the op is the node's kernel
    np.testing.assert_allclose(out["traj"], traj, atol=1e-12)
    inst.reset()
    again = inst.step(DT)
    for key in first:
        np.testing.assert_array_equal(again[key], first[key])
