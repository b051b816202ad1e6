"""dead_blend node and ag.ops.DeadBlender: parameters, degenerate cases, velocities, transitions.

Driven through the kernel with hand-built contract arrays (``Runner``).  Velocity
tolerance as for inertialize: central differences (h and 2h, Richardson) of the node's
own output agree with its velocities to ``VEL_TOL`` relative (floor 1 unit/s).  The last
section replays transitions ``animgraph verify`` caught popping and whirling: angular speed
under a stated bound, frame-to-frame continuity, the same poses at steps dt and dt/3.
The last one checks the closed form on every clip: one update to an elapsed time equals
600 Hz steps to it (1e-5 rad, 1e-5 m), and one-update outputs against central differences.
"""

import math

import numpy as np
import pytest
from pydantic import ValidationError

import animgraph as ag
from animgraph.node import BuildContext
from animgraph.fades import MAX_TURN
from animgraph.nodes.dead_blend import JOINT, MOTION, PAR, ST, DeadBlend, DeadBlender
from conftest import BUNDLED, SHARED_MOCAP, TEST_ONLY, load_any
from fd import from_rotvec, qconj, qmul, rotvec
from test_node_inertialize import (
    DT,
    H,
    T0,
    VEL_TOL,
    Runner,
    assert_pose_close,
    carried,
    clip_source,
    fd_errors,
    other_clip,
    report,
    single,
    skeleton,
    switch_run,
)

LN2 = math.log(2)


def coasted(p, h, halflife):
    """Pose ``p`` moved ``h`` s on as a dead blend coasts its snapshot (numpy, independent of the kernels): velocities
    decaying at ln2 / halflife, each joint's turn decaying at least at |ang| / MAX_TURN."""
    lam = LN2 / halflife
    dist, fade = -np.expm1(-lam * h) / lam, np.exp(-lam * h)
    ang = np.asarray(p.ang, float)
    kappa = np.maximum(lam, np.linalg.norm(ang, axis=-1, keepdims=True) / MAX_TURN)
    turn, turn_fade = -np.expm1(-kappa * h) / kappa, np.exp(-kappa * h)
    return ag.Pose(p.pos + dist * p.vel, qmul(from_rotvec(turn * ang), p.rot), p.scl * np.exp(dist * np.asarray(p.svl)),
                   fade * p.vel, turn_fade * ang, fade * np.asarray(p.svl))


def angle_between(a, b):
    """Angle (rad) of the rotation taking quaternions ``b`` to ``a``, float64, per joint."""
    return np.linalg.norm(rotvec(qmul(np.asarray(a, float), qconj(b))), axis=-1)


# ---------------------------------------------------------------- validity


@pytest.mark.parametrize(
    "fields",
    [{"duration": -0.1}, {"duration": math.nan}, {"halflife": -1.0}, {"halflife": math.inf}, {"mode": "cubic"}],
)
def test_bad_parameters_are_refused(fields):
    with pytest.raises(ValidationError):
        DeadBlend(id="db", **fields)


@pytest.mark.parametrize("kwargs", [{"duration": -1.0}, {"halflife": math.nan}, {"duration": math.inf}])
def test_bad_dead_blender_arguments_are_refused(kwargs):
    with pytest.raises(ValueError):
        DeadBlender(**kwargs)


def test_ports_and_layout():
    node = DeadBlend(id="db", duration=0.4, halflife=0.1)
    assert [p.name for p in node.inputs()] == ["pose", "transition", "motion"]
    assert node.inputs()[1].optional and node.inputs()[1].signal == "bool"
    assert [p.name for p in node.outputs()] == ["pose", "motion"]
    ctx = BuildContext(skeleton=skeleton(4))
    np.testing.assert_allclose(node.params(ctx), PAR.pack(duration=0.4, rate=LN2 / 0.1))
    # Header, per joint the previous output and the transition snapshot (19 each), root-motion tail.
    assert (ST.SIZE, JOINT.prev, JOINT.old, JOINT.SIZE, MOTION.SIZE) == (3, 0, 19, 38, 13)
    assert node.state(ctx).shape == (ST.SIZE + JOINT.SIZE * 4 + MOTION.SIZE,) and not node.state(ctx).any()


def test_mismatched_poses_are_refused():
    dead = DeadBlender()
    dead.transition(ag.Pose.identity(3))
    with pytest.raises(ValueError):
        dead.update(ag.Pose.identity(4), DT)


# ---------------------------------------------------------------- parameters, hand-checked


def expected(p0, v0, p_in, v_in, t, duration, halflife):
    """Hand formula for one position channel: decayed extrapolation, smoothstep cross-fade."""
    lam = LN2 / halflife
    ghost = p0 + v0 * (1 - math.exp(-lam * t)) / lam
    ghost_v = v0 * math.exp(-lam * t)
    s = t / duration
    w, dw = 3 * s * s - 2 * s**3, 6 * s * (1 - s) / duration
    return ghost + w * (p_in - ghost), ghost_v + w * (v_in - ghost_v) + dw * (p_in - ghost)


@pytest.mark.parametrize("duration, halflife", [(0.5, 0.2), (0.3, 0.05), (1.0, 1.0)])
def test_duration_and_halflife_hand_checked(duration, halflife):
    dead = DeadBlender(duration=duration, halflife=halflife)
    dead.transition(single(pos=(0.2, 0, 0), vel=(3, 0, 0)))
    t = 0.0
    for dt in (0.0, 0.04, 0.07, 0.1):
        t += dt
        out = dead.update(single(pos=(1, 0, 0), vel=(-1, 0, 0)), dt)
        p, v = expected(0.2, 3.0, 1.0, -1.0, t, duration, halflife)
        np.testing.assert_allclose(out.pos[0, 0], p, atol=1e-6)
        np.testing.assert_allclose(out.vel[0, 0], v, atol=1e-5)


def test_rotation_extrapolation_and_fade_hand_checked():
    # Old pose turning about z at 2 rad/s, input still at identity, half way through the fade.
    duration, halflife, t = 0.4, 0.1, 0.2
    dead = DeadBlender(duration=duration, halflife=halflife)
    dead.transition(single(ang=(0, 0, 2)))
    out = dead.update(single(), t)
    lam = LN2 / halflife
    ghost = 2 * (1 - math.exp(-lam * t)) / lam  # angle turned by the old pose
    # Weight 1/2: half way along the shortest arc; rate 6 s (1-s)/d = 1.5/d toward identity.
    np.testing.assert_allclose(rotvec(out.rot[0].astype(float)), [0, 0, ghost / 2], atol=1e-6)
    ang = 0.5 * 2 * math.exp(-lam * t) - 1.5 / duration * ghost
    np.testing.assert_allclose(out.ang[0], [0, 0, ang], atol=1e-5)


def test_scale_extrapolation_hand_checked():
    dead = DeadBlender(duration=1.0, halflife=0.25)
    dead.transition(single(scl=(2, 1, 1), svl=(1, 0, 0)))
    out = dead.update(single(), 0.5)
    lam = LN2 / 0.25
    log_ghost = math.log(2) + (1 - math.exp(-lam * 0.5)) / lam
    np.testing.assert_allclose(out.scl[0, 0], math.exp(0.5 * log_ghost), rtol=1e-6)
    np.testing.assert_allclose(out.svl[0, 0], 0.5 * math.exp(-lam * 0.5) - 1.5 * log_ghost, atol=1e-5)


def test_node_matches_the_op():
    skel = skeleton(1)
    src = single(pos=(0.3, 0, 0), rot=from_rotvec([0, 0.8, 0]), scl=(2, 1, 1), vel=(1, 0, 0), ang=(0, 0, 2))
    dst = single(pos=(0, 0.2, 0), vel=(0, -1, 0), svl=(0.5, 0, 0))
    node = Runner(DeadBlend(id="db", duration=0.3, halflife=0.1), skel)
    node.step(src, DT)
    op = DeadBlender(duration=0.3, halflife=0.1)
    op.transition(coasted(src, DT, 0.1))
    assert_pose_close(node.step(dst, DT, True), op.update(dst, 0.0), 2e-6)
    for _ in range(25):
        assert_pose_close(node.step(dst, DT), op.update(dst, DT), 2e-6)


# ---------------------------------------------------------------- degenerate cases


def test_zero_duration_is_a_cut():
    node = Runner(DeadBlend(id="db", duration=0.0), skeleton(1))
    node.step(single(pos=(5, 0, 0), vel=(1, 0, 0)), DT)
    new = single(pos=(0, 1, 0), vel=(0, 2, 0))
    for flag in (True, False):
        out = node.step(new, DT, flag)
        np.testing.assert_array_equal(out.pos, new.pos)
        np.testing.assert_array_equal(out.vel, new.vel)
    op = DeadBlender(duration=0.0)
    op.transition(single(pos=(5, 0, 0)))
    np.testing.assert_array_equal(op.update(new, 0.0).pos, new.pos)


def test_zero_halflife_holds_the_old_pose_still():
    dead = DeadBlender(duration=1.0, halflife=0.0)
    dead.transition(single(pos=(1, 0, 0), vel=(5, 0, 0), ang=(0, 3, 0)))
    out = dead.update(single(pos=(1, 0, 0)), 0.0)
    np.testing.assert_array_equal(out.pos[0], [1, 0, 0])
    np.testing.assert_array_equal(out.vel[0], [0, 0, 0])
    np.testing.assert_array_equal(out.ang[0], [0, 0, 0])
    out = dead.update(single(pos=(1, 0, 0)), 0.3)
    np.testing.assert_allclose(out.pos[0], [1, 0, 0], atol=1e-7)


def test_transition_on_the_first_frame_shows_the_input():
    node = Runner(DeadBlend(id="db"), skeleton(1))
    new = single(pos=(0, 1, 0), vel=(0, 2, 0))
    for flag in (True, False):
        out = node.step(new, DT, flag)
        np.testing.assert_array_equal(out.pos, new.pos)
        np.testing.assert_array_equal(out.vel, new.vel)


def test_q_and_minus_q_blend_without_a_spin():
    q = from_rotvec([0.3, -1.2, 0.5])
    dead = DeadBlender(duration=0.4, halflife=0.2)
    dead.transition(single(rot=q))
    for dt in (0.0, 0.1, 0.1):
        out = dead.update(single(rot=-q), dt)
        np.testing.assert_allclose(np.abs(np.sum(out.rot[0] * q)), 1.0, atol=1e-6)
        np.testing.assert_allclose(out.ang[0], [0, 0, 0], atol=1e-6)


def test_blend_takes_the_short_way():
    shown = from_rotvec([0, math.radians(170), 0])
    new = -from_rotvec([0, math.radians(-170), 0])
    dead = DeadBlender(duration=1.0, halflife=0.2)
    dead.transition(single(rot=shown))
    out = dead.update(single(rot=new), 0.5)
    # Weight 1/2 of a 20 deg arc through 180 deg, not of the 340 deg one through 0.
    assert abs(np.degrees(np.linalg.norm(rotvec(out.rot[0]))) - 180.0) < 1e-3


def test_spinning_old_pose_coasts_a_capped_turn_and_fades_without_a_jump():
    # The old pose spins at 5 rad/s about z from 2 rad (half-life 100 s): uncapped it would turn
    # 720 rad; capped, its spin decays at kappa = 5 / MAX_TURN so it turns MAX_TURN in all.
    # Its arc to the still input passes 180 deg mid-fade, where a shortest-path blend jumps.
    duration, w0, g0 = 0.6, 5.0, 2.0
    kappa = w0 / MAX_TURN
    dead = DeadBlender(duration=duration, halflife=100.0)
    dead.transition(single(rot=from_rotvec([0, 0, g0]), ang=(0, 0, w0)))
    outs = [dead.update(single(), 0.0)]
    for _ in range(36):
        outs.append(dead.update(single(), DT))
    for n, out in enumerate(outs[:-1]):
        # Hand formula, all about z: exp(α d0) exp((1-α) γ) g0 with the gap d0 = -g0 the short way.
        t = n * DT
        s = t / duration
        alpha, alpha_vel = s * s * (3 - 2 * s), 6 * s * (1 - s) / duration
        gamma, gamma_vel = w0 * (1 - math.exp(-kappa * t)) / kappa, w0 * math.exp(-kappa * t)
        angle = g0 + (1 - alpha) * gamma - alpha * g0
        assert angle_between(out.rot, from_rotvec([0, 0, angle])).max() < 1e-6
        ang = (1 - alpha) * gamma_vel - alpha_vel * (gamma + g0)
        np.testing.assert_allclose(out.ang[0], [0, 0, ang], atol=1e-5)
    for a, b in zip(outs[:-1], outs[1:]):
        step = rotvec(qmul(b.rot[0], qconj(a.rot[0])))
        mean_ang = (a.ang[0].astype(float) + b.ang[0]) / 2
        # Each frame turns by its mean angular velocity times dt (to second order in dt).
        assert np.linalg.norm(step - mean_ang * DT) < 2e-3, (step, mean_ang * DT)
    np.testing.assert_allclose(abs(outs[-1].rot[0, 0]), 1.0, atol=1e-6)
    # A plain shortest-path blend of the same poses jumps where the arc passes 180 deg.
    ghost = lambda t: from_rotvec([0, 0, g0 + w0 * (1 - math.exp(-kappa * t)) / kappa])
    weight = lambda t: (t / duration) ** 2 * (3 - 2 * t / duration)
    plain = [ag.ops.blend(single(rot=ghost(n * DT)), single(), weight(n * DT)).rot[0] for n in range(37)]
    assert max(np.linalg.norm(rotvec(qmul(b, qconj(a)))) for a, b in zip(plain[:-1], plain[1:])) > 1.0


def test_input_turning_past_half_a_turn_takes_the_short_way_from_the_shown_pose():
    # The old pose is still at identity; the input spins at 10 rad/s about x, 5.9 rad over the
    # fade, its quaternion's sign flipping every other frame.  Up to half a turn from the shown
    # pose the fade follows it, hand formula exp(α β), β = 10 t x; past it the closed form
    # measures the input the short way, β - 2π (the flip no history-free fade avoids, see the
    # module docstring), whatever the quaternion signs and the steps.
    duration, w = 0.6, 10.0
    dead = DeadBlender(duration=duration, halflife=0.1)
    dead.transition(single())
    for n in range(36):
        t = n * DT
        rot = from_rotvec([w * t, 0, 0]) * (-1) ** n
        out = dead.update(single(rot=rot, ang=(w, 0, 0)), DT if n else 0.0)
        s = t / duration
        alpha, alpha_vel = s * s * (3 - 2 * s), 6 * s * (1 - s) / duration
        beta = w * t if w * t < math.pi else w * t - 2 * math.pi
        assert angle_between(out.rot, from_rotvec([alpha * beta, 0, 0])).max() < 1e-6, n
        np.testing.assert_allclose(out.ang[0], [alpha_vel * beta + alpha * w, 0, 0], atol=1e-5)


def test_retransition_mid_blend_starts_from_what_is_shown():
    node = Runner(DeadBlend(id="db", duration=0.5, halflife=0.2), skeleton(1))
    a = single(pos=(0, 0, 0), vel=(1, 0, 0))
    b = single(pos=(2, 0, 0), vel=(0, 1, 0))
    c = single(pos=(-3, 0, 0), vel=(0, 0, -2))
    node.step(a, DT)
    node.step(b, DT, True)
    for _ in range(5):
        shown = node.step(b, DT)
    out = node.step(c, DT, True)
    decay = math.exp(-LN2 / 0.2 * DT)
    np.testing.assert_allclose(out.pos, shown.pos + (1.0 - decay) / (LN2 / 0.2) * shown.vel, atol=1e-6)
    np.testing.assert_allclose(out.vel, decay * shown.vel, atol=1e-6)
    op = DeadBlender(duration=0.5, halflife=0.2)
    op.transition(coasted(shown, DT, 0.2))
    assert_pose_close(op.update(c, 0.0), out, 1e-6)
    for _ in range(10):
        assert_pose_close(op.update(c, DT), node.step(c, DT), 2e-6)


def test_a_transition_after_a_long_step_coasts_a_bounded_way():
    """The frame of a transition 1000 s after the last one: what showed coasts |v| / rate and turns at most MAX_TURN
    (carried at constant velocities it would fly 3 km and spin 6000 turns in one frame)."""
    node = Runner(DeadBlend(id="db", duration=0.3, halflife=0.2), skeleton(1))
    shown = node.step(single(pos=(1, 0, 0), rot=from_rotvec([0.3, 0, 0]), vel=(3, 0, 0), ang=(0, 40, 0),
                             svl=(0.5, 0, 0)), DT)
    out = node.step(single(pos=(0, 2, 0)), 1000.0, True)
    rate = LN2 / 0.2
    np.testing.assert_allclose(out.pos, shown.pos + shown.vel / rate, atol=1e-6)
    np.testing.assert_allclose(out.scl, shown.scl * np.exp(np.asarray(shown.svl) / rate), rtol=1e-6)
    assert angle_between(out.rot, shown.rot).max() == pytest.approx(MAX_TURN, abs=1e-5)
    for v in (out.vel, out.ang, out.svl):
        np.testing.assert_allclose(v, 0.0, atol=1e-9)
    assert_pose_close(out, coasted(shown, 1000.0, 0.2), 1e-6)


def test_batches_match_single_items():
    rng = np.random.default_rng(5)
    shown = ag.Pose(rng.normal(size=(2, 3, 5, 3)), from_rotvec(rng.normal(size=(2, 3, 5, 3))),
                    vel=rng.normal(size=(2, 3, 5, 3)), ang=rng.normal(size=(2, 3, 5, 3)))
    new = ag.Pose(rng.normal(size=(2, 3, 5, 3)), from_rotvec(rng.normal(size=(2, 3, 5, 3))))
    batch = DeadBlender(duration=0.3, halflife=0.1)
    batch.transition(shown)
    out = batch.update(new, 0.1)
    for i in range(2):
        for k in range(3):
            one = DeadBlender(duration=0.3, halflife=0.1)
            one.transition(shown[i, k])
            assert_pose_close(one.update(new[i, k], 0.1), out[i, k], 0)


# ---------------------------------------------------------------- real clips


@pytest.mark.parametrize("fields", [{"duration": 0.4, "halflife": 0.15}, {"duration": 0.25, "halflife": 1.0}])
def test_velocities_match_central_differences_on_clips(any_clip, fields):
    skel, clip = any_clip
    switch = 6
    other = other_clip(clip, T0 + switch * DT)
    node = Runner(DeadBlend(id="db", **fields), skel)
    outs, _, states = switch_run(node, clip, other, 30, switch, stretch=True)
    src = clip_source(other, stretch=True)
    errs = []
    for n in range(switch + 1, switch + int(fields["duration"] / DT), 2):
        t = T0 + n * DT
        errs.append(fd_errors(lambda inp, dt: states[n].copy().step(inp, dt), outs[n], t, src))
    name = f"dead_blend {fields['duration']}/{fields['halflife']} {clip.name}"
    e_vel = report(f"{name} vel", [e[0] for e in errs])
    e_ang = report(f"{name} ang", [e[1] for e in errs])
    e_svl = report(f"{name} svl", [e[2] for e in errs])
    assert e_vel.max() < VEL_TOL and e_ang.max() < VEL_TOL and e_svl.max() < VEL_TOL


def test_transition_does_not_pop_and_converges(bundled_clip):
    skel, clip = bundled_clip
    switch = 10
    other = other_clip(clip, T0 + switch * DT)
    node = Runner(DeadBlend(id="db", duration=0.3, halflife=0.2), skel)
    outs, ins, _ = switch_run(node, clip, other, 40, switch)
    before, at = outs[switch - 1], outs[switch]
    assert np.abs(ins[switch].rot - ins[switch - 1].rot).max() > 0.05
    # No pop: the output moves on from the previous output as the fade coasts it.
    assert_pose_close(at, coasted(before, DT, 0.2), 2e-5)
    # After the duration the output is the input, bit for bit.
    assert_pose_close(outs[switch + 18], ins[switch + 18], 0)
    assert_pose_close(outs[-1], ins[-1], 0)


def test_no_history_fresh_dead_blender_matches_running_one(bundled_clip):
    skel, clip = bundled_clip
    other = other_clip(clip, T0 + 5 * DT)
    src_a, src_b = clip_source(clip), clip_source(other)
    inputs = [src_b(T0 + n * DT) if 5 <= n < 9 else src_a(T0 + n * DT) for n in range(40)]
    run_long = DeadBlender(duration=0.2, halflife=0.1)
    shown = run_long.update(inputs[0], 0.0)
    for n in range(1, 40):
        if n in (5, 9):
            run_long.transition(carried(shown, DT))
            shown = run_long.update(inputs[n], 0.0)
        else:
            shown = run_long.update(inputs[n], DT)
        if n == 9 + 13:
            # After the fade, a fresh dead blender agrees on its first update.
            assert_pose_close(DeadBlender(duration=0.2, halflife=0.1).update(inputs[n], DT), shown, 0)
    # Mid-motion transition: fresh and running ones given the same shown pose agree from then on.
    t = T0 + 40 * DT
    fresh = DeadBlender(duration=0.2, halflife=0.1)
    for op in (fresh, run_long):
        op.transition(carried(shown, DT))
    assert_pose_close(fresh.update(src_b(t), 0.0), run_long.update(src_b(t), 0.0), 0)
    for k in range(1, 6):
        inp = src_b(t + k * DT)
        assert_pose_close(fresh.update(inp, DT), run_long.update(inp, DT), 0)


# ---------------------------------------------------------------- regressions: pops, whirls, step size

# Transitions that `animgraph verify --node dead_blend` caught (seed 18 on walk, 23 on run):
# the shown pose is the clip at ``start``, the input the clip played backwards from its end.
# The shown toe / thumb turns at 54 / 39 rad/s there (mocap jitter), so its extrapolation
# spins, and the arc from it to the input used to pass a whole turn mid-fade.
VERIFY_CASES = [("walk", 1.1966384939121322, "RightToeBase"), ("run", 0.39549932950097494, "RThumb")]
FADE, HALFLIFE = 0.4, 0.15


def fade_run(name, start, dt, span=FADE):
    """Shown pose, inputs and outputs of a dead blend from ``start`` stepped by ``dt`` s for ``span`` s."""
    clip = load_any(name)[1]
    steps = int(round(span / dt))
    times = start + dt * np.arange(steps + 1)
    inputs = ag.ops.sample(clip, clip.duration - times, "cubic", rate=-1.0)
    shown = ag.ops.sample(clip, start, "cubic")
    dead = DeadBlender(duration=FADE, halflife=HALFLIFE)
    dead.transition(shown)
    outs = [dead.update(inputs[0], 0.0)] + [dead.update(inputs[k], dt) for k in range(1, steps + 1)]
    return shown, inputs, outs


@pytest.mark.parametrize("name, start, joint", VERIFY_CASES)
def test_no_pop_and_no_whirl_on_the_verify_cases(name, start, joint):
    dt = 3e-4  # the verify stencil's step
    shown, inputs, outs = fade_run(name, start, dt, FADE + dt)
    # Bound: the fade walks from the extrapolated pose to the input along arcs of at most a
    # half turn each (the input's turn since the transition, asserted here, and the gap at
    # the transition) plus the extrapolation's own capped turn, at weight rate <= 1.5 / FADE
    # (smoothstep); on top of that it turns no faster than the input and the extrapolation
    # together.  The old arc rule went past 1000 rad/s here (the clips stay under 55).
    assert angle_between(inputs.rot, inputs[0].rot).max() < math.pi
    speed_in = np.linalg.norm(np.asarray(inputs.ang, float), axis=-1).max(axis=0)
    speed_old = np.linalg.norm(np.asarray(shown.ang, float), axis=-1)
    bound = speed_in + speed_old + 1.5 / FADE * (2 * math.pi + MAX_TURN)
    speed = np.array([np.linalg.norm(np.asarray(o.ang, float), axis=-1) for o in outs])
    steps = np.array([angle_between(b.rot, a.rot) for a, b in zip(outs[:-1], outs[1:])])
    j = load_any(name)[0].index(joint)
    print(f"{name} {joint}: output up to {speed[:, j].max():.1f} rad/s, frame steps up to "
          f"{steps[:, j].max() / dt:.1f} rad/s; input up to {speed_in[j]:.1f}, shown {speed_old[j]:.1f}, "
          f"bound {bound[j]:.1f}; all joints: output / bound up to {(speed / bound).max():.2f}")
    assert (speed <= bound).all()
    # Continuity: each frame turns by no more than the bound allows in dt (1e-5 rad of float32 rounding).
    assert (steps <= bound * dt + 1e-5).all()
    # And ends on the input once the fade is over.
    assert_pose_close(outs[-1], inputs[-1], 0)


@pytest.mark.parametrize("dt", [DT, 1e-3, 3e-4])
@pytest.mark.parametrize("name, start, joint", VERIFY_CASES)
def test_output_does_not_depend_on_the_step(name, start, joint, dt):
    # The same times reached in steps of dt and dt/3 give the same poses to float32 precision.
    _, _, coarse = fade_run(name, start, dt)
    _, _, fine = fade_run(name, start, dt / 3)
    worst = 0.0
    for a, b in zip(coarse, fine[::3]):
        worst = max(worst, angle_between(a.rot, b.rot).max())
        assert_pose_close(a, b, 2e-5, fields=("pos", "scl", "vel", "svl"))
        np.testing.assert_allclose(a.ang, b.ang, atol=1e-4, rtol=1e-5)
    print(f"{name} dt {dt:.2e} vs dt/3: rotations differ by up to {worst:.1e} rad")
    assert worst < 2e-6


# ---------------------------------------------------------------- closed form: the steps do not matter

# Every clip: the bundled ones and every BVH in ../shared/data/mocap (cmu_131_01 included).
EVERY_CLIP = BUNDLED + sorted(set(TEST_ONLY) | {p.name for p in SHARED_MOCAP.glob("*.bvh")})
CLOSED = {"duration": 0.5, "halflife": 0.15}
STEP_TOL = 1e-5  # rad and m: stepped at 600 Hz vs one update to the same elapsed time


def clip_transition(name):
    """Skeleton, the pose shown at the transition (the clip early on) and the input ``tau`` s after it.

    The input is the same clip later on, both with the stretch motion (so every field
    moves); ``tb + tau`` falls mid-way between keys for ``tau`` a whole number of frames.
    """
    skel, clip = load_any(name)
    src = clip_source(clip, stretch=True)
    tb = T0 + DT * math.floor((clip.duration - 0.6) / DT)
    return skel, src(T0 + 6 * DT), lambda tau: src(tb + tau)


def one_update(shown, inp, tau):
    """The op's output ``tau`` s after a transition from ``shown``, reached in one update."""
    dead = DeadBlender(**CLOSED)
    dead.transition(shown)
    return dead.update(inp, tau)


@pytest.mark.parametrize("name", EVERY_CLIP)
def test_one_update_equals_steps_at_600_hz(name):
    skel, shown, source = clip_transition(name)
    hz, checks = 600, {60: None, 180: None, 330: None}  # 0.1 s, 0.3 s and past the duration (0.55 s)
    stepped = DeadBlender(**CLOSED)
    stepped.transition(shown)
    stepped.update(source(0.0), 0.0)
    node = Runner(DeadBlend(id="db", **CLOSED), skel)
    node.step(carried(shown, -DT), DT)
    node.step(source(0.0), DT, True)
    after_transition = node.copy()
    worst_rot = worst_pos = 0.0
    for k in range(1, max(checks) + 1):
        out, node_out = stepped.update(source(k / hz), 1 / hz), node.step(source(k / hz), 1 / hz)
        if k not in checks:
            continue
        tau = k / hz
        one = one_update(shown, source(tau), tau)
        node_one = after_transition.copy().step(source(tau), tau)
        for a, b in ((out, one), (node_out, node_one)):
            worst_rot = max(worst_rot, angle_between(a.rot, b.rot).max())
            worst_pos = max(worst_pos, np.abs(a.pos.astype(float) - b.pos).max())
            assert_pose_close(a, b, STEP_TOL)
    print(f"dead_blend {name}: 600 Hz steps vs one update differ by up to {worst_rot:.1e} rad, {worst_pos:.1e} m")
    assert worst_rot <= STEP_TOL and worst_pos <= STEP_TOL


@pytest.mark.parametrize("name", EVERY_CLIP)
def test_one_update_velocities_match_central_differences(name):
    # The output at tau reached in one update, its velocities against central differences of
    # one-update outputs at tau +- h, +- 2h (input sampled at the matching times), relative
    # |fd - v| / max(|v|, 1) below VEL_TOL (1e-3), as every node's.
    _, shown, source = clip_transition(name)
    errs = []
    for n in range(2, int(CLOSED["duration"] / DT), 3):
        tau = n * DT
        mid = one_update(shown, source(tau), tau)
        errs.append(fd_errors(lambda inp, dt: one_update(shown, inp, tau + dt), mid, tau, source, H))
    label = f"dead_blend one update {name}"
    e_vel = report(f"{label} vel", [e[0] for e in errs])
    e_ang = report(f"{label} ang", [e[1] for e in errs])
    e_svl = report(f"{label} svl", [e[2] for e in errs])
    assert e_vel.max() < VEL_TOL and e_ang.max() < VEL_TOL and e_svl.max() < VEL_TOL
