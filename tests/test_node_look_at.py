"""look_at: parameters, aiming, weight, degenerate targets, velocities vs central differences.

Velocities are checked in float64 (kernel on float64 buffers, h = 1e-5 s), relative to
max(|fd|, 1e-2 rad/s); tolerance 1e-4 (measured ~1e-9 typical).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import animgraph as ag
from animgraph.node import BuildContext
from animgraph.nodes.look_at import LookAt, look_at, look_at_kernel
from fd import qconj, qmul, rotvec
from test_node_two_bone_ik import (
    FD_TOL,
    LEG_PARENTS,
    TOE,
    as_pose,
    clip_motion,
    empty_like,
    fd_errors,
    global64,
    leg_motion,
    leg_skeleton,
    report,
    run_node,
)


def aim64(p, j, fwd, tpos, tvel, w=1.0, dw=0.0, parents=LEG_PARENTS):
    out = empty_like(p)
    look_at_kernel(p, np.asarray(parents, np.int64), j, tuple(map(float, fwd)), tuple(map(float, tpos)),
                   tuple(map(float, tvel)), float(w), float(dw), out)
    return out


def rotate(q, v):
    return qmul(qmul(q, np.r_[0.0, v]), qconj(q))[1:]


def unit(v):
    return np.asarray(v, float) / np.linalg.norm(v)


# ---------------------------------------------------------------- validity


def test_bad_parameters_are_refused():
    ctx = BuildContext(skeleton=leg_skeleton())
    assert list(LookAt(id="aim", joint="toe").params(ctx)) == [4, 0.0, 0.0, 1.0]
    assert list(LookAt(id="aim", joint="toe", forward=(0, 2, 0)).params(ctx))[1:4] == [0.0, 1.0, 0.0]
    with pytest.raises(ValidationError):
        LookAt(id="aim", joint="toe", target=[0, 0, 0])  # unknown key
    with pytest.raises(ValidationError):
        LookAt(id="aim")  # joint missing
    for fwd in ((0, 0, 0), (0, float("inf"), 1), (1, 0)):
        with pytest.raises(ValidationError, match="forward"):
            LookAt(id="aim", joint="toe", forward=fwd)
    for w in (-0.5, 1.01):
        with pytest.raises(ValidationError):
            LookAt(id="aim", joint="toe", weight=w)
    with pytest.raises(ag.GraphError, match="'aim'.*'joint'.*unknown joint 'nose'"):
        LookAt(id="aim", joint="nose").params(ctx)
    local = as_pose(leg_motion(np.random.default_rng(0))(0.0))
    with pytest.raises(ValueError, match="forward"):
        look_at(local, LEG_PARENTS, TOE, (1, 0, 0), forward=(0, 0, 0))
    with pytest.raises(ValueError, match="unknown joint"):
        look_at(local, leg_skeleton(), "nose", (1, 0, 0))


# ---------------------------------------------------------------- behaviour


def test_hand_checked_quarter_turn():
    # A root joint facing +z, a target 1 m along +x moving at 1 m/s along +z: the joint
    # turns +90 deg about y, and the target direction turns back at 1 rad/s about -y.
    local = ag.Pose([[0, 0, 0]], [[1, 0, 0, 0]])
    out = look_at(local, [-1], 0, (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    np.testing.assert_allclose(out.rot[0], [np.sqrt(0.5), 0, np.sqrt(0.5), 0], atol=1e-7)
    np.testing.assert_allclose(out.ang[0], [0, -1, 0], atol=1e-7)
    # A static target holds the aim: the joint's turn about y (swinging its forward away)
    # is cancelled, its spin about its own forward axis (z, turned to x) is kept.
    local.ang[0] = [0.0, 1.0, 2.0]
    out = look_at(local, [-1], 0, (1.0, 0.0, 0.0))
    np.testing.assert_allclose(out.rot[0], [np.sqrt(0.5), 0, np.sqrt(0.5), 0], atol=1e-7)
    np.testing.assert_allclose(out.ang[0], [2, 0, 0], atol=1e-6)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_forward_axis_points_at_the_target(seed):
    rng = np.random.default_rng(seed)
    local = as_pose(leg_motion(rng)(0.0))
    fwd = rng.normal(size=3)
    target = rng.normal(size=3)
    out = look_at(local, LEG_PARENTS, TOE, target, rng.normal(size=3), forward=fwd)
    g = ag.ops.fk(out, LEG_PARENTS)
    aim = rotate(g.rot[TOE].astype(float), unit(fwd))
    assert np.linalg.norm(aim - unit(target - g.pos[TOE])) < 1e-5
    # Only the joint's rotation and angular velocity change.
    for name in ("pos", "scl", "vel", "svl"):
        np.testing.assert_array_equal(getattr(out, name), getattr(local, name))
    changed = np.flatnonzero(np.any(out.rot != local.rot, axis=-1) | np.any(out.ang != local.ang, axis=-1))
    assert set(changed) <= {TOE}


def test_weight_zero_returns_the_input_and_half_turns_half_way():
    rng = np.random.default_rng(2)
    local = as_pose(leg_motion(rng)(0.0))
    target = np.array([0.5, 1.0, 1.0])
    out = look_at(local, LEG_PARENTS, TOE, target, (0.3, 0.0, 0.0), weight=0.0)
    for a, b in zip(out.as_tuple(), local.as_tuple()):
        np.testing.assert_allclose(a, b, atol=1e-7)
    g0 = ag.ops.fk(local, LEG_PARENTS)
    full = ag.ops.fk(look_at(local, LEG_PARENTS, TOE, target), LEG_PARENTS)
    half = ag.ops.fk(look_at(local, LEG_PARENTS, TOE, target, weight=0.5), LEG_PARENTS)
    turn = lambda g: rotvec(qmul(g.rot[TOE].astype(float), qconj(g0.rot[TOE].astype(float))))  # noqa: E731
    np.testing.assert_allclose(turn(half), 0.5 * turn(full), atol=1e-6)


def test_degenerate_targets_and_forward():
    rng = np.random.default_rng(3)
    p = leg_motion(rng)(0.0)
    pos, rot = global64(p, LEG_PARENTS)
    # Target at the joint: no direction, the pose is left as is (no NaN).
    out = aim64(p, TOE, (0, 0, 1), pos[TOE], (1.0, 0.0, 0.0))
    for a, b in zip(out, p):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # Zero forward (refused by the model and the op; the kernel leaves the pose).
    out = aim64(p, TOE, (0, 0, 0), pos[TOE] + 1.0, (0.0, 0.0, 0.0))
    for a, b in zip(out, p):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # Target straight behind: half a turn, finite, forward at the target.
    fwd = rotate(rot[TOE], [0.0, 0.0, 1.0])
    out = aim64(p, TOE, (0, 0, 1), pos[TOE] - 2.0 * fwd, (0.1, 0.2, 0.3))
    assert all(np.all(np.isfinite(a)) for a in out)
    pos2, rot2 = global64(out, LEG_PARENTS)
    np.testing.assert_allclose(rotate(rot2[TOE], [0.0, 0.0, 1.0]), -fwd, atol=1e-9)


def test_batches_match_single_items():
    rng = np.random.default_rng(4)
    items = [as_pose(leg_motion(rng)(0.0)) for _ in range(4)]
    targets = rng.normal(size=(4, 3))
    batch = ag.Pose(*(np.stack([getattr(p, f) for p in items]).reshape(2, 2, 5, -1) for f in ag.pose.FIELDS))
    out = look_at(batch, LEG_PARENTS, TOE, targets.reshape(2, 2, 3), (0.1, 0.0, 0.0))
    for n, p in enumerate(items):
        single = look_at(p, LEG_PARENTS, TOE, targets[n], (0.1, 0.0, 0.0))
        np.testing.assert_array_equal(out.rot[n // 2, n % 2], single.rot)
        np.testing.assert_array_equal(out.ang[n // 2, n % 2], single.ang)


# ---------------------------------------------------------------- velocities


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.0, 1.0), st.floats(-2.0, 2.0))
def test_velocities_match_central_differences_synthetic(seed, w, dw):
    rng = np.random.default_rng(seed)
    motion = leg_motion(rng, spin=2.0)
    fwd, target, tvel = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    ev, ea = fd_errors(lambda t: aim64(motion(t), TOE, fwd, target + t * tvel, tvel, w + dw * t, dw))
    assert max(ev.max(), ea.max()) < FD_TOL


def test_velocities_match_central_differences_on_clips(any_clip):
    skel, clip = any_clip
    parents = skel.parents.astype(np.int64)
    head = skel.index("head")
    rng = np.random.default_rng(12)
    errs = []
    for frame in rng.integers(1, clip.frames - 1, size=40):
        motion = clip_motion(clip, frame)
        pos, _ = global64(motion(0.0), parents)
        target = pos[head] + rng.normal(size=3) * 0.5 + [0.0, 0.0, 1.0]
        tvel = rng.normal(size=3)
        w, dw = rng.uniform(0.3, 1.0), rng.normal()
        errs.append(fd_errors(lambda t: aim64(motion(t), head, (0, 0, 1), target + t * tvel, tvel, w + dw * t, dw,
                                              parents=parents)))
    worst, p99 = report(f"look_at {clip.name}", errs)
    assert worst < FD_TOL, f"{clip.name}: worst relative velocity error {worst:.2e}"


# ---------------------------------------------------------------- node contract


def test_node_kernel_through_the_contract(bundled_clip):
    skel, clip = bundled_clip
    local = ag.Pose(clip.pos[20], clip.rot[20])
    g = ag.ops.fk(local, skel.parents)
    target = g.pos[skel.index("head")] + np.array([0.5, 0.2, 1.0])
    node = LookAt(id="aim", joint="head", forward=(0, 0, 1))
    got = run_node(node, skel, local, target, (0.3, 0.0, -0.2))
    want = look_at(local, skel, "head", target, (0.3, 0.0, -0.2))
    for a, b in zip(got.as_tuple(), want.as_tuple()):
        np.testing.assert_array_equal(a, b)
    got = run_node(node, skel, local, target, (0.3, 0.0, -0.2), weight=(0.25, -1.0))
    want = look_at(local, skel, "head", target, (0.3, 0.0, -0.2), weight=0.25, weight_vel=-1.0)
    np.testing.assert_array_equal(got.ang, want.ang)
