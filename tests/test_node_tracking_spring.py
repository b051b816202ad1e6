"""tracking_spring node and ag.ops.TrackingSpring; the two-rate offset decay it rests on.

Driven through the kernel with hand-built contract arrays.  Velocity tolerance as for
inertialize: central differences (h and 2h, Richardson) of the node's own output agree
with its velocities to ``VEL_TOL`` relative (floor 1 unit/s).
"""

import math

import numpy as np
import pytest
from pydantic import ValidationError

import animgraph as ag
from animgraph.decay import spring_weights, two_rate_weights
from animgraph.node import BuildContext
from animgraph.nodes.tracking_spring import JOINT, PAR, SIGNALS, ST, TRACK, TrackingSpring, TrackingSpringNode
from fd import from_rotvec, qconj, qmul, rotvec
from test_node_inertialize import (
    DT,
    T0,
    VEL_TOL,
    Runner,
    assert_pose_close,
    carried,
    clip_source,
    fd_errors,
    other_clip,
    report,
    skeleton,
)

LN2 = math.log(2)


# ---------------------------------------------------------------- validity


@pytest.mark.parametrize(
    "fields",
    [
        {"position_halflife": -1.0},
        {"position_halflife": math.nan},
        {"velocity_halflife": math.inf},
        {"acceleration": 1.5},
        {"acceleration": -0.1},
        {"jump_speed": 0.0},
        {"jump_speed": -1.0},
        {"jump_turn": 0.0},
        {"signal": "int"},
        {"gain": 0.1},
    ],
)
def test_bad_parameters_are_refused(fields):
    with pytest.raises(ValidationError):
        TrackingSpringNode(id="ts", **fields)
    with pytest.raises(ValueError):
        TrackingSpring(**fields)


def test_bad_values_are_refused():
    spring = TrackingSpring("vec3")
    with pytest.raises(ValueError):
        spring.update(([1.0, 2.0], [0.0, 0.0]), DT)
    with pytest.raises(ValueError):
        spring.update(([1.0, math.nan, 0.0], [0.0, 0.0, 0.0]), DT)
    with pytest.raises(ValueError):
        spring.update(([1.0, 0.0, 0.0], [0.0, 0.0, 0.0]), math.inf)
    poses = TrackingSpring()
    poses.update(ag.Pose.identity(3), DT)
    with pytest.raises(ValueError):
        poses.update(ag.Pose.identity(4), DT)


@pytest.mark.parametrize(
    "signal, size",
    [("scalar", ST.SIZE + TRACK.SIZE), ("vec3", ST.SIZE + TRACK.SIZE), ("quat", ST.SIZE + TRACK.SIZE),
     ("pose", ST.SIZE + JOINT.SIZE * 4)],
)
def test_ports_and_layout(signal, size):
    node = TrackingSpringNode(id="ts", signal=signal, position_halflife=0.4, jump_speed=None)
    ins, outs = node.inputs(), node.outputs()
    assert [p.name for p in ins] == ["value", "reset", "jump"]
    assert ins[0].signal == signal and outs[0].signal == signal and [p.name for p in outs] == ["value"]
    assert ins[1].optional and ins[2].optional and ins[1].signal == ins[2].signal == "bool"
    ctx = BuildContext(skeleton=skeleton(4))
    np.testing.assert_array_equal(
        node.params(ctx),
        PAR.pack(signal=SIGNALS.index(signal), position_halflife=0.4, velocity_halflife=0.05, acceleration=1.0,
                 jump_speed=-1.0, jump_turn=50.0),
    )
    # Header; a signal's last target and offset (16), or per joint the last target (19) and the offset (18).
    assert (ST.SIZE, TRACK.SIZE, JOINT.prev, JOINT.off, JOINT.SIZE) == (1, 16, 0, 19, 37)
    assert node.state(ctx).shape == (size,) and not node.state(ctx).any()


# ---------------------------------------------------------------- the offset decay


@pytest.mark.parametrize("a, b", [(2.0, 30.0), (30.0, 2.0), (5.0, 5.0), (5.0, 5.0 + 1e-9), (0.0, 3.0), (1.0, 1e6)])
def test_two_rate_weights_solve_the_offset_equation(a, b):
    # e'' = -(a+b) e' - a b e from (e0, u0): checked with float64 central differences in t.
    e0, u0 = 0.7, -2.0

    def state(t):
        w = two_rate_weights(a, b, t)
        return w[0] * e0 + w[1] * u0, w[2] * e0 + w[3] * u0

    assert state(0.0) == (e0, u0)
    for t in (0.01, 0.1, 0.7):
        h = 1e-5 * min(1.0, 1.0 / max(a, b) * 10)
        (ep, up), (em, um), (e, u) = state(t + h), state(t - h), state(t)
        assert abs((ep - em) / (2 * h) - u) < 1e-6 * (1 + abs(u))
        acc = -(a + b) * u - a * b * e
        assert abs((up - um) / (2 * h) - acc) < 1e-5 * (1 + abs(acc) + a * b * abs(e))


def test_two_rate_weights_limits():
    # Coincident rates are the critically damped spring; an infinite rate is a first-order decay.
    np.testing.assert_allclose(two_rate_weights(4.0, 4.0 + 1e-12, 0.3), two_rate_weights(4.0, 4.0, 0.3), atol=1e-12)
    y = 2 * LN2 / 0.2
    np.testing.assert_allclose(spring_weights(0.2, 0.3), two_rate_weights(y, y, 0.3), atol=1e-15)
    e = math.exp(-3.0 * 0.2)
    np.testing.assert_allclose(two_rate_weights(3.0, math.inf, 0.2), (e, 0.0, -3.0 * e, 0.0))
    np.testing.assert_allclose(two_rate_weights(math.inf, math.inf, 0.2), (0, 0, 0, 0))


# ---------------------------------------------------------------- parameters and degenerate cases


def scalar_run(spring, xs, vs, dt=DT, jumps=(), resets=()):
    return [spring.update((x, v), dt, reset=n in resets, jump=n in jumps) for n, (x, v) in enumerate(zip(xs, vs))]


def test_smooth_targets_are_tracked_exactly():
    t = np.arange(100) * DT
    out = scalar_run(TrackingSpring("scalar"), np.sin(3 * t), 3 * np.cos(3 * t))
    assert [o[0] for o in out] == list(np.sin(3 * t)) and [o[1] for o in out] == list(3 * np.cos(3 * t))
    spring = TrackingSpring("vec3", acceleration=1.0)
    for tk in t:
        x = np.array([np.sin(tk), tk**2, 1.0])
        v = np.array([np.cos(tk), 2 * tk, 0.0])
        ox, ov = spring.update((x, v), DT)
        np.testing.assert_array_equal(ox, x)
        np.testing.assert_array_equal(ov, v)
    spring = TrackingSpring("quat")
    for tk in t:
        # Spinning about z at 6 rad/s while nodding about the turning x axis: w = 6 z + Rz(6t) (2 cos t) x.
        q = qmul(from_rotvec([0, 0, 6.0 * tk]), from_rotvec([2.0 * np.sin(tk), 0, 0]))
        w = np.array([2.0 * np.cos(tk) * np.cos(6 * tk), 2.0 * np.cos(tk) * np.sin(6 * tk), 6.0])
        oq, ow = spring.update((q, w), DT)
        np.testing.assert_array_equal(oq, q)
        np.testing.assert_array_equal(ow, w)


def test_first_frame_starts_on_the_target():
    spring = TrackingSpring("scalar")
    assert spring.update((5.0, -1.0), DT) == (5.0, -1.0)


def test_position_jump_is_absorbed_then_decays_with_position_halflife():
    hx, hv = 0.2, 0.01
    spring = TrackingSpring("scalar", position_halflife=hx, velocity_halflife=hv)
    n = np.arange(120)
    xs = 0.5 * n * DT + np.where(n >= 10, 1.0, 0.0)  # 0.5 units/s, a step of 1 at frame 10
    out = scalar_run(spring, xs, np.full(n.shape, 0.5))
    # No pop: the jump frame continues the previous output at its velocity.
    assert out[10] == pytest.approx((out[9][0] + 0.5 * DT, 0.5), abs=1e-12)
    offset = np.array([o[0] for o in out]) - xs
    np.testing.assert_allclose(offset[10], -1.0, atol=1e-12)
    # Long after the velocity half-life, the position offset halves every position half-life.
    k = int(round(hx / DT))
    np.testing.assert_allclose(offset[10 + 30 + k] / offset[10 + 30], 0.5, rtol=1e-3)
    np.testing.assert_allclose(offset[-1], 0.0, atol=2e-3)


def test_second_jump_mid_decay_continues_from_the_output():
    n = np.arange(40)
    xs = np.select([n < 10, n < 14], [0.0, 1.0], -2.0)  # two steps, the second mid-decay
    out = scalar_run(TrackingSpring("scalar", position_halflife=0.2), xs, np.zeros(40))
    for k in (10, 14):
        assert out[k][0] == pytest.approx(out[k - 1][0] + DT * out[k - 1][1], abs=1e-12)
        assert out[k][1] == pytest.approx(out[k - 1][1], abs=1e-12)
    assert abs(out[-1][0] + 2.0) < abs(out[20][0] + 2.0)  # heading for the new target


def test_velocity_jump_decays_with_velocity_halflife():
    # Position continuous, velocity 2 -> -1 at frame 10, flagged by the jump event.
    a, b = LN2 / 5.0, LN2 / 0.05
    spring = TrackingSpring("scalar", position_halflife=5.0, velocity_halflife=0.05, jump_speed=None)
    n = np.arange(40)
    vs = np.where(n < 10, 2.0, -1.0)
    xs = np.where(n < 10, 2.0 * n * DT, 2.0 * 9 * DT - (n - 9) * DT)
    out = scalar_run(spring, xs, vs, jumps={10})
    e0 = out[10][0] - xs[10]
    u0 = out[10][1] - vs[10]
    assert u0 == pytest.approx(3.0) and e0 == pytest.approx(2.0 * DT + DT, abs=1e-12)
    # Independent solution of e'' + (a+b) e' + ab e = 0: A e^-at + B e^-bt.
    A = (b * e0 + u0) / (b - a)
    B = e0 - A
    for k in (1, 3, 10, 29):
        t = k * DT
        assert out[10 + k][0] - xs[10 + k] == pytest.approx(A * math.exp(-a * t) + B * math.exp(-b * t), abs=1e-9)
        u = -a * A * math.exp(-a * t) - b * B * math.exp(-b * t)
        assert out[10 + k][1] - vs[10 + k] == pytest.approx(u, abs=1e-8)


@pytest.mark.parametrize("follow", [1.0, 0.5, 0.0])
def test_acceleration_proportion(follow):
    # Constant acceleration 4 from rest: followed fully, exact; else the spring lags at the rest
    # point -(1 - γ) A / (a b) of e'' + (a+b) e' + a b e = -(1 - γ) A.
    a, b = LN2 / 0.1, LN2 / 0.02
    spring = TrackingSpring("scalar", position_halflife=0.1, velocity_halflife=0.02, acceleration=follow)
    t = np.arange(120) * DT
    out = scalar_run(spring, 2.0 * t**2, 4.0 * t)
    lag = out[-1][0] - 2.0 * t[-1] ** 2
    assert lag == pytest.approx(-(1 - follow) * 4.0 / (a * b), abs=1e-6)
    assert out[-1][1] == pytest.approx(4.0 * t[-1], abs=1e-6)


def test_jump_speed_threshold_and_none():
    n = np.arange(20)
    xs = np.where(n >= 10, 0.01, 0.0)  # a 0.6 units/s inconsistency at 60 Hz
    vs = np.zeros(20)
    passed = scalar_run(TrackingSpring("scalar", jump_speed=1.0), xs, vs)
    assert passed[10][0] == 0.01  # below the threshold: followed exactly
    caught = scalar_run(TrackingSpring("scalar", jump_speed=0.5), xs, vs)
    assert caught[10][0] == 0.0 and caught[11][0] < 0.01  # absorbed, then decaying
    big = np.where(n >= 10, 100.0, 0.0)
    assert scalar_run(TrackingSpring("scalar", jump_speed=None), big, vs)[10][0] == 100.0
    assert scalar_run(TrackingSpring("scalar", jump_speed=None), big, vs, jumps={10})[10][0] == 0.0


def test_reset_puts_the_output_on_the_target():
    n = np.arange(30)
    xs = np.where(n >= 5, 3.0, 0.0)
    out = scalar_run(TrackingSpring("scalar"), xs, np.zeros(30), resets={12})
    assert out[11][0] < 2.99  # still catching up after the jump
    assert all(o == (3.0, 0.0) for o in out[12:])


def test_zero_halflives_follow_the_target_through_jumps():
    n = np.arange(20)
    xs = np.where(n >= 5, 3.0, 0.0)
    out = scalar_run(TrackingSpring("scalar", position_halflife=0.0, velocity_halflife=0.0), xs, np.zeros(20))
    assert [o[0] for o in out] == list(xs)


def test_quaternion_sign_flips_are_not_jumps():
    spring = TrackingSpring("quat")
    for k in range(30):
        q = from_rotvec([0.0, 2.0 * k * DT, 0.3])
        q = q if k % 2 else -q
        oq, ow = spring.update((q, [0.0, 2.0, 0.0]), DT)
        np.testing.assert_allclose(oq, q, atol=1e-12)


def test_quaternion_jump_is_absorbed_the_short_way():
    spring = TrackingSpring("quat", position_halflife=1.0, velocity_halflife=0.05)
    a = from_rotvec([0, math.radians(170), 0])
    b = -from_rotvec([0, math.radians(-170), 0])
    spring.update((a, [0, 0, 0]), DT)
    oq, _ = spring.update((b, [0, 0, 0]), DT, jump=True)
    np.testing.assert_allclose(np.abs(np.dot(oq, a)), 1.0, atol=1e-12)
    oq, _ = spring.update((b, [0, 0, 0]), DT)
    # Moving from a toward b by a little, through 180 deg, not back through 0.
    angle = np.degrees(np.linalg.norm(rotvec(oq)))
    assert 170.0 < angle <= 180.0


def test_signal_kernel_through_the_node_contract():
    # Value at sig[3:9], reset at sig[11], jump at sig[12], output at sig[13:19].
    node = TrackingSpringNode(id="ts", signal="vec3")
    par = node.params(None)
    st = node.state(None)
    sig = np.full(20, 9.0)
    ins, outs = np.array([3, 11, 12], np.int64), np.array([13], np.int64)
    from test_node_inertialize import DB

    pose = tuple(np.zeros((1, 1, k), np.float32) for k in (3, 4, 3, 3, 3, 3))
    sig[11] = sig[12] = 0.0
    sig[3:9] = [1, 2, 3, 0.5, 0, 0]
    node.KERNEL(ins, outs, par, st, pose, sig, DB, DT)
    np.testing.assert_array_equal(sig[13:19], [1, 2, 3, 0.5, 0, 0])
    sig[3:9] = [5, 2, 3, 0.5, 0, 0]  # a jump of 4 along x
    node.KERNEL(ins, outs, par, st, pose, sig, DB, DT)
    np.testing.assert_allclose(sig[13:19], [1 + 0.5 * DT, 2, 3, 0.5, 0, 0])
    assert sig[19] == 9.0 and np.all(sig[:3] == 9.0)  # nothing written outside its ports


def test_pose_batches_match_single_items():
    rng = np.random.default_rng(2)
    a = ag.Pose(rng.normal(size=(2, 3, 5, 3)), from_rotvec(rng.normal(size=(2, 3, 5, 3))),
                vel=rng.normal(size=(2, 3, 5, 3)), ang=rng.normal(size=(2, 3, 5, 3)))
    b = ag.Pose(rng.normal(size=(2, 3, 5, 3)), from_rotvec(rng.normal(size=(2, 3, 5, 3))))
    batch = TrackingSpring()
    batch.update(a, DT)
    out = batch.update(b, DT)
    for i in range(2):
        for k in range(3):
            one = TrackingSpring()
            one.update(a[i, k], DT)
            assert_pose_close(one.update(b[i, k], DT), out[i, k], 0)


# ---------------------------------------------------------------- real clips


def spring_run(node, clip, other, frames, switch, stretch=False, event=True):
    """Track clip, then the other clip from frame ``switch`` (jump event set there, or detected)."""
    src_a, src_b = clip_source(clip, stretch), clip_source(other, stretch)
    outs, ins, states = [], [], []
    for n in range(frames):
        inp = (src_a if n < switch else src_b)(T0 + n * DT)
        outs.append(node.step(inp, DT, False, event and n == switch))
        ins.append(inp)
        states.append(node.copy())
    return outs, ins, states


def test_pose_tracks_a_clip_exactly(bundled_clip):
    skel, clip = bundled_clip
    # Detection off: mocap joints turn fast enough to trip it (see the module docstring).
    node = Runner(TrackingSpringNode(id="ts", jump_speed=None, jump_turn=None), skel, events=2)
    outs, ins, _ = spring_run(node, clip, clip, 40, 0, stretch=True)
    for o, i in zip(outs, ins):
        assert_pose_close(o, i, 1e-6)


@pytest.mark.parametrize("follow", [1.0, 0.5])
def test_velocities_match_central_differences_on_clips(any_clip, follow):
    skel, clip = any_clip
    switch = 6
    other = other_clip(clip, T0 + switch * DT)
    fields = {"position_halflife": 0.2, "velocity_halflife": 0.05, "acceleration": follow}
    node = Runner(TrackingSpringNode(id="ts", **fields), skel, 2)
    outs, _, states = spring_run(node, clip, other, 30, switch, stretch=True)
    src = clip_source(other, stretch=True)
    errs = []
    for n in range(switch + 1, 30, 2):
        t = T0 + n * DT
        errs.append(fd_errors(lambda inp, dt: states[n].copy().step(inp, dt), outs[n], t, src))
    name = f"tracking_spring γ={follow} {clip.name}"
    e_vel = report(f"{name} vel", [e[0] for e in errs])
    e_ang = report(f"{name} ang", [e[1] for e in errs])
    e_svl = report(f"{name} svl", [e[2] for e in errs])
    assert e_vel.max() < VEL_TOL and e_ang.max() < VEL_TOL and e_svl.max() < VEL_TOL


@pytest.mark.parametrize("event", [True, False])
def test_clip_switch_does_not_pop_and_converges(bundled_clip, event):
    skel, clip = bundled_clip
    switch = 10
    other = other_clip(clip, T0 + switch * DT)
    # With the event, detection off; detecting, thresholds low enough to catch the switch.
    limits = {"jump_speed": None, "jump_turn": None} if event else {"jump_speed": 0.5, "jump_turn": 5.0}
    node = Runner(TrackingSpringNode(id="ts", position_halflife=0.03, velocity_halflife=0.01, **limits), skel, 2)
    outs, ins, _ = spring_run(node, clip, other, switch + 50, switch, event=event)
    before, at, expect = outs[switch - 1], outs[switch], carried(outs[switch - 1], DT)
    # With the jump event every joint continues the previous output at its velocity; detected,
    # the joints whose input turns well past the threshold do (the others follow their input).
    turn = np.linalg.norm(rotvec(qmul(ins[switch].rot, qconj(ins[switch - 1].rot))), axis=-1)
    jumped = np.ones(len(turn), bool) if event else turn > 3 * 5.0 * DT
    assert jumped.sum() > 5
    np.testing.assert_allclose(np.abs(np.sum(at.rot[jumped] * expect.rot[jumped], axis=-1)), 1, atol=1e-6)
    np.testing.assert_allclose(at.ang[jumped], before.ang[jumped], atol=2e-5)
    if event:
        assert_pose_close(at, expect, 2e-5)
        # After 50 frames (28 position half-lives) the output is the input again.
        assert_pose_close(outs[-1], ins[-1], 2e-5)


def test_pose_kernel_works_in_place():
    rng = np.random.default_rng(4)
    poses = [ag.Pose(rng.normal(size=(5, 3)), from_rotvec(rng.normal(size=(5, 3))), vel=rng.normal(size=(5, 3)))
             for _ in range(4)]
    aliased, apart = (Runner(TrackingSpringNode(id="ts"), skeleton(5), 2) for _ in range(2))
    aliased.outs[0] = 2  # output written over the input slot
    for n, p in enumerate(poses):
        assert_pose_close(aliased.step(p, DT, False, n == 2), apart.step(p, DT, False, n == 2), 0)
