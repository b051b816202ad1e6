"""two_bone_ik: parameters, reach and clamping, degenerate targets, weight, velocities vs central differences.

Velocities are checked in float64 (the kernel run on float64 buffers, h = 1e-5 s) so the
test sees the maths, not float32 rounding; the float32 op is checked against the same
kernel.  Also home of the small motion helpers the look_at and foot_lock tests share.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import animgraph as ag
from animgraph.ik import BEND_TURN, REACH_MAX, REACH_MIN, REACH_SOFT, root_swing
from animgraph.node import BuildContext
from animgraph.nodes.two_bone_ik import TwoBoneIK, two_bone_ik, two_bone_ik_kernel
from fd import from_rotvec, qconj, qmul, rotvec

H = 1e-5  # s, central-difference step on float64 evaluations
FD_FLOOR = 1e-2  # m/s, rad/s: relative errors are taken against max(|fd|, FD_FLOOR)
FD_TOL = 1e-4  # relative, float64 (measured ~1e-6 typical; the IK near full reach is the worst)

# ---------------------------------------------------------------- shared helpers


def pose64(pos, rot, vel, ang):
    """A float64 local pose tuple (pos, rot, scl, vel, ang, svl) with unit scales."""
    pos = np.array(pos, float)
    rot, vel, ang = (np.array(a, float) for a in (rot, vel, ang))
    return (pos, rot, np.ones_like(pos), vel, ang, np.zeros_like(pos))


def straight_motion(pos, rot, vel, ang):
    """``pose_at(t)``: positions along straight lines, rotations spinning at constant ``ang`` (exact velocities)."""
    pos, rot, vel, ang = (np.asarray(a, float) for a in (pos, rot, vel, ang))
    return lambda t: pose64(pos + t * vel, qmul(from_rotvec(ang * t), rot), vel, ang)


def clip_motion(clip, frame):
    """Straight motion through ``frame`` of a clip, velocities the clip's central differences."""
    a, b = max(frame - 1, 0), min(frame + 1, clip.frames - 1)
    pos, rot = clip.pos.astype(float), clip.rot.astype(float)
    rot /= np.linalg.norm(rot, axis=-1, keepdims=True)  # float32 rotations are unit to 1e-7 only
    span = (b - a) * clip.dt
    vel = (pos[b] - pos[a]) / span
    ang = rotvec(qmul(rot[b], qconj(rot[a]))) / span
    return straight_motion(pos[frame], rot[frame], vel, ang)


def as_pose(p):
    """An ag.Pose (float32) from a float64 pose tuple."""
    return ag.Pose(*p)


def empty_like(p):
    return tuple(np.zeros_like(a) for a in p)


def fd_errors(out_at, h=H, floor=FD_FLOOR):
    """Relative errors (vel, ang) per joint of ``out_at(0)`` against central differences of ``out_at(+-h)``."""
    c, p, m = out_at(0.0), out_at(h), out_at(-h)
    vel = (p[0] - m[0]) / (2 * h)
    ang = rotvec(qmul(p[1], qconj(m[1]))) / (2 * h)
    ev = np.linalg.norm(c[3] - vel, axis=-1) / np.maximum(np.linalg.norm(vel, axis=-1), floor)
    ea = np.linalg.norm(c[4] - ang, axis=-1) / np.maximum(np.linalg.norm(ang, axis=-1), floor)
    return ev, ea


def global64(p, parents):
    """Global positions and rotations (float64) of a local pose tuple, by plain FK."""
    pos, rot = np.zeros_like(p[0]), np.zeros_like(p[1])
    for j, par in enumerate(parents):
        if par < 0:
            pos[j], rot[j] = p[0][j], p[1][j]
        else:
            off = np.concatenate([[0.0], p[0][j] * p[2][par]])
            pos[j] = pos[par] + qmul(qmul(rot[par], off), qconj(rot[par]))[1:]
            rot[j] = qmul(rot[par], p[1][j])
    return pos, rot


def report(name, errors):
    """Print max and 99th percentile (shown with pytest -s) and return them."""
    e = np.concatenate([np.ravel(x) for x in errors])
    worst, p99 = float(e.max()), float(np.percentile(e, 99))
    print(f"{name}: max {worst:.2e}  p99 {p99:.2e}")
    return worst, p99


# A synthetic leg: pelvis (moving root), hip, knee, ankle, toe.
LEG_PARENTS = np.array([-1, 0, 1, 2, 3])
LEG_OFFSETS = np.array([[0, 1, 0], [0.1, 0, 0], [0, -0.45, 0.02], [0, -0.42, -0.03], [0, -0.05, 0.15]], float)
HIP, KNEE, ANKLE, TOE = 1, 2, 3, 4


def leg_motion(rng, spin=1.0, bend=0.3):
    """A random moving synthetic leg (pose_at function)."""
    rot = from_rotvec(rng.normal(size=(5, 3)) * bend)
    vel = np.zeros((5, 3))
    vel[0] = rng.normal(size=3) * 0.5
    return straight_motion(LEG_OFFSETS, rot, vel, rng.normal(size=(5, 3)) * spin)


def leg_skeleton():
    return ag.Skeleton(["pelvis", "hip", "knee", "ankle", "toe"], LEG_PARENTS, LEG_OFFSETS)


def solve64(p, joints, tpos, tvel, w=1.0, dw=0.0, parents=LEG_PARENTS, hinge=(1.0, 0.0, 0.0)):
    out = empty_like(p)
    two_bone_ik_kernel(p, np.asarray(parents, np.int64), *joints, hinge, tuple(map(float, tpos)),
                       tuple(map(float, tvel)), float(w), float(dw), out)
    return out


# ---------------------------------------------------------------- validity


def test_bad_parameters_are_refused():
    skel = leg_skeleton()
    ctx = BuildContext(skeleton=skel)
    ok = TwoBoneIK(id="ik", root="hip", mid="knee", end="ankle")
    assert list(ok.params(ctx)) == [1, 2, 3, 1.0, 0.0, 0.0]
    with pytest.raises(ValidationError):
        TwoBoneIK(id="ik", root="hip", mid="knee", end="ankle", pole="x")  # unknown key
    with pytest.raises(ValidationError):
        TwoBoneIK(id="ik", root="hip", mid="knee")  # end missing
    for w in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValidationError):
            TwoBoneIK(id="ik", root="hip", mid="knee", end="ankle", weight=w)
    for hinge in ((0, 0, 0), (1, float("nan"), 0), (1, 0)):
        with pytest.raises(ValidationError, match="hinge"):
            TwoBoneIK(id="ik", root="hip", mid="knee", end="ankle", hinge=hinge)
    with pytest.raises(ag.GraphError, match="'ik'.*'end'.*unknown joint 'heel'"):
        TwoBoneIK(id="ik", root="hip", mid="knee", end="heel").params(ctx)
    with pytest.raises(ag.GraphError, match="not an ancestor"):
        TwoBoneIK(id="ik", root="knee", mid="hip", end="ankle").params(ctx)
    local = as_pose(leg_motion(np.random.default_rng(0))(0.0))
    with pytest.raises(ValueError, match="root, mid, end"):
        two_bone_ik(local, skel, ("hip", "ankle"), (0, 0, 0))
    with pytest.raises(ValueError, match="not an ancestor"):
        two_bone_ik(local, skel, ("hip", "toe", "knee"), (0, 0, 0))
    with pytest.raises(ValueError, match="pass a Skeleton"):
        two_bone_ik(local, LEG_PARENTS, ("hip", "knee", "ankle"), (0, 0, 0))


# ---------------------------------------------------------------- behaviour


def full_reach(g):
    return np.linalg.norm(g.pos[KNEE] - g.pos[HIP]) + np.linalg.norm(g.pos[ANKLE] - g.pos[KNEE])


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.05, REACH_SOFT))
def test_end_reaches_a_reachable_target(seed, frac):
    rng = np.random.default_rng(seed)
    local = as_pose(leg_motion(rng)(0.0))
    g = ag.ops.fk(local, LEG_PARENTS)
    d = rng.normal(size=3)
    target = g.pos[HIP] + frac * full_reach(g) * d / np.linalg.norm(d)
    out = two_bone_ik(local, LEG_PARENTS, (HIP, KNEE, ANKLE), target)
    go = ag.ops.fk(out, LEG_PARENTS)
    assert np.linalg.norm(go.pos[ANKLE] - target) < 1e-5  # m
    # Only the root and mid rotations change; bone lengths are kept.
    changed = np.flatnonzero(np.any(out.rot != local.rot, axis=-1))
    assert set(changed) <= {HIP, KNEE}
    np.testing.assert_array_equal(out.pos, local.pos)


def test_knee_stays_in_the_bend_plane():
    rng = np.random.default_rng(3)
    local = as_pose(leg_motion(rng)(0.0))
    g = ag.ops.fk(local, LEG_PARENTS)
    a, b, c = g.pos[HIP], g.pos[KNEE], g.pos[ANKLE]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n)
    target = a + 0.7 * (c - a) + 0.1 * np.cross(n, c - a)  # in the chain plane
    # The plane's normal in the knee's frame is its hinge: the knee stays in the plane.
    hinge = qmul(qmul(qconj(g.rot[KNEE].astype(float)), np.r_[0.0, n]), g.rot[KNEE].astype(float))[1:]
    go = ag.ops.fk(two_bone_ik(local, LEG_PARENTS, (HIP, KNEE, ANKLE), target, hinge=hinge), LEG_PARENTS)
    assert abs(np.dot(go.pos[KNEE] - a, n)) < 1e-6
    assert np.linalg.norm(go.pos[ANKLE] - target) < 1e-5
    # The knee bends the same way round as before.
    assert np.dot(np.cross(go.pos[KNEE] - a, go.pos[ANKLE] - a), n) > 0


def test_unreachable_target_clamps_the_reach_with_finite_velocities():
    motion = leg_motion(np.random.default_rng(4))
    g = ag.ops.fk(as_pose(motion(0.0)), LEG_PARENTS)
    reach = full_reach(g)
    d = np.array([0.3, -1.0, 0.2]) / np.linalg.norm([0.3, -1.0, 0.2])
    target, tvel = g.pos[HIP] + 2.0 * reach * d, np.array([0.5, 0.0, -0.3])
    out = solve64(motion(0.0), (HIP, KNEE, ANKLE), target, tvel)
    pos, _ = global64(out, LEG_PARENTS)
    dist = np.linalg.norm(pos[ANKLE] - pos[HIP])
    assert REACH_SOFT * reach - 1e-9 < dist <= REACH_MAX * reach
    assert np.allclose((pos[ANKLE] - pos[HIP]) / dist, d, atol=1e-9)  # straight at the target
    assert all(np.all(np.isfinite(a)) for a in out)
    ev, ea = fd_errors(lambda t: solve64(motion(t), (HIP, KNEE, ANKLE), target + t * tvel, tvel))
    assert max(ev.max(), ea.max()) < FD_TOL


def test_soft_reach_is_smooth_through_the_clamp():
    # A target sweeping from 0.9 to 1.2 reaches: velocities match differences all along.
    motion = leg_motion(np.random.default_rng(5), spin=0.0)
    g = ag.ops.fk(as_pose(motion(0.0)), LEG_PARENTS)
    reach, a = full_reach(g), g.pos[HIP].astype(float)
    d = np.array([0.1, -1.0, 0.3]) / np.linalg.norm([0.1, -1.0, 0.3])
    tvel = 0.3 * reach * d
    worst = 0.0
    for k in np.linspace(0.9, 1.2, 31):
        def out_at(t):
            return solve64(motion(t), (HIP, KNEE, ANKLE), a + k * reach * d + t * tvel, tvel)
        worst = max(worst, max(e.max() for e in fd_errors(out_at)))
        pos, _ = global64(out_at(0.0), LEG_PARENTS)
        assert np.linalg.norm(pos[ANKLE] - a) <= REACH_MAX * reach
    assert worst < FD_TOL


def test_target_at_the_root_is_defined():
    motion = leg_motion(np.random.default_rng(6))
    g = ag.ops.fk(as_pose(motion(0.0)), LEG_PARENTS)
    out = solve64(motion(0.0), (HIP, KNEE, ANKLE), g.pos[HIP], g.vel[HIP])
    assert all(np.all(np.isfinite(a)) for a in out)
    pos, _ = global64(out, LEG_PARENTS)
    lab = np.linalg.norm(g.pos[KNEE] - g.pos[HIP])
    lbc = np.linalg.norm(g.pos[ANKLE] - g.pos[KNEE])
    # Folded as far as allowed: the end at the minimum reach from the root.
    assert np.isclose(np.linalg.norm(pos[ANKLE] - pos[HIP]), abs(lab - lbc) + REACH_MIN * (lab + lbc), atol=1e-6)


def test_straight_chain_and_target_along_the_bone():
    # Rest pose of a straight leg (singular bend plane) and a target on the bone's line.
    parents = [-1, 0, 1, 2]
    local = ag.Pose([[0, 1, 0], [0, -0.5, 0], [0, -0.4, 0], [0, -0.4, 0]], np.tile([1.0, 0, 0, 0], (4, 1)))
    target = np.array([0.0, 0.5, 0.0])  # 0.5 m below the hip, along the thigh
    out = two_bone_ik(local, parents, (0, 1, 2), target, (0.0, -0.2, 0.0))
    assert all(np.all(np.isfinite(a)) for a in out.as_tuple())
    go = ag.ops.fk(out, parents)
    assert np.linalg.norm(go.pos[2] - target) < 1e-5
    # The straight chain bends about the mid joint's x axis: the knee leaves the line in y-z.
    assert abs(go.pos[1][0]) < 1e-6 and abs(go.pos[1][2]) > 0.1
    # Fully stretched towards a target beyond reach along the chain's own line: clamped, finite.
    out = two_bone_ik(local, parents, (0, 1, 2), (0.0, -2.0, 0.0), (0.0, -1.0, 0.0))
    go = ag.ops.fk(out, parents)
    assert np.all(np.isfinite(out.ang)) and np.linalg.norm(go.pos[2] - go.pos[0]) <= REACH_MAX * 0.9 + 1e-6


def test_zero_length_bone_leaves_the_pose():
    parents = [-1, 0, 1]
    local = ag.Pose([[0, 1, 0], [0, 0, 0], [0, -0.4, 0]], np.tile([1.0, 0, 0, 0], (3, 1)))
    out = two_bone_ik(local, parents, (0, 1, 2), (0.3, 0.5, 0.0))
    np.testing.assert_array_equal(out.rot, local.rot)


def test_weight_zero_returns_the_input_and_one_reaches():
    rng = np.random.default_rng(7)
    local = as_pose(leg_motion(rng)(0.0))
    g = ag.ops.fk(local, LEG_PARENTS)
    target = g.pos[ANKLE] + np.array([0.1, 0.15, -0.05])
    out = two_bone_ik(local, LEG_PARENTS, (HIP, KNEE, ANKLE), target, (1.0, 0.0, 0.0), weight=0.0)
    for a, b in zip(out.as_tuple(), local.as_tuple()):
        np.testing.assert_allclose(a, b, atol=1e-7)
    half = ag.ops.fk(two_bone_ik(local, LEG_PARENTS, (HIP, KNEE, ANKLE), target, weight=0.5), LEG_PARENTS)
    d_half = np.linalg.norm(half.pos[ANKLE] - target)
    assert 0.0 < d_half < np.linalg.norm(g.pos[ANKLE] - target)


def test_batches_match_single_items():
    rng = np.random.default_rng(8)
    items = [as_pose(leg_motion(rng)(0.0)) for _ in range(6)]
    targets = rng.normal(size=(6, 3)) * 0.3 + [0.1, 0.4, 0.0]
    batch = ag.Pose(*(np.stack([getattr(p, f) for p in items]).reshape(2, 3, 5, -1) for f in ag.pose.FIELDS))
    out = two_bone_ik(batch, LEG_PARENTS, (HIP, KNEE, ANKLE), targets.reshape(2, 3, 3))
    for n, p in enumerate(items):
        single = two_bone_ik(p, LEG_PARENTS, (HIP, KNEE, ANKLE), targets[n])
        np.testing.assert_array_equal(out.rot[n // 3, n % 3], single.rot)
        np.testing.assert_array_equal(out.ang[n // 3, n % 3], single.ang)


def test_float32_op_matches_the_float64_kernel():
    motion = leg_motion(np.random.default_rng(9))
    target, tvel = np.array([0.2, 0.3, 0.2]), np.array([0.3, -0.1, 0.4])
    ref = solve64(motion(0.0), (HIP, KNEE, ANKLE), target, tvel)
    out = two_bone_ik(as_pose(motion(0.0)), LEG_PARENTS, (HIP, KNEE, ANKLE), target, tvel)
    np.testing.assert_allclose(out.ang, ref[4], atol=1e-4 * (1 + np.abs(ref[4]).max()))
    np.testing.assert_allclose(np.abs(np.sum(out.rot * ref[1], -1)), 1.0, atol=1e-6)


# ---------------------------------------------------------------- velocities


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.3, 1.3), st.floats(0.0, 1.0), st.floats(-2.0, 2.0))
def test_velocities_match_central_differences_synthetic(seed, frac, w, dw):
    rng = np.random.default_rng(seed)
    motion = leg_motion(rng, spin=2.0)
    g = ag.ops.fk(as_pose(motion(0.0)), LEG_PARENTS)
    d = rng.normal(size=3)
    target = g.pos[HIP] + frac * full_reach(g) * d / np.linalg.norm(d)
    tvel = rng.normal(size=3)
    ev, ea = fd_errors(lambda t: solve64(motion(t), (HIP, KNEE, ANKLE), target + t * tvel, tvel, w + dw * t, dw))
    assert max(ev.max(), ea.max()) < FD_TOL


def clip_ik_errors(skel, clip, frames, rng):
    """FD errors of the left-leg IK on a clip, targets offset from the animated foot and moving."""
    parents = skel.parents.astype(np.int64)
    joints = tuple(skel.index(j) for j in ("left_hip", "left_knee", "left_foot"))
    errs = []
    for frame in frames:
        motion = clip_motion(clip, frame)
        pos, _ = global64(motion(0.0), parents)
        target = pos[joints[2]] + rng.normal(size=3) * 0.1
        tvel = rng.normal(size=3) * 0.5
        errs.append(fd_errors(lambda t: solve64(motion(t), joints, target + t * tvel, tvel, parents=parents)))
    return errs


def test_velocities_match_central_differences_on_clips(any_clip):
    skel, clip = any_clip
    rng = np.random.default_rng(11)
    frames = rng.integers(1, clip.frames - 1, size=40)
    worst, p99 = report(f"two_bone_ik {clip.name}", clip_ik_errors(skel, clip, frames, rng))
    assert worst < FD_TOL, f"{clip.name}: worst relative velocity error {worst:.2e}"


# ---------------------------------------------------------------- node contract


def run_node(node, skel, local, target, tvel, weight=None):
    """Call the node's kernel exactly as the executor does: slot 0 in, slot 1 out."""
    ctx = BuildContext(skeleton=skel)
    J = len(skel)
    pose = tuple(np.zeros((2, J, n), np.float32) for n in (3, 4, 3, 3, 3, 3))
    for buf, a in zip(pose, local.as_tuple()):
        buf[0] = a
    sig = np.zeros(8)
    sig[0:3], sig[3:6] = target, tvel
    ins = np.array([0, 0, 6], np.int64)
    # unlinked: the field at rate 0, the constant block the planner feeds the port
    sig[6:8] = (node.weight, 0.0) if weight is None else weight
    outs = np.array([1], np.int64)
    db = (np.zeros((1, J, 3), np.float32), np.zeros((1, J, 4), np.float32), np.ones((1, J, 3), np.float32),
          skel.parents.astype(np.int64))
    type(node).KERNEL(ins, outs, node.params(ctx), node.state(ctx), pose, sig, db, 1 / 60)
    return ag.Pose(*(buf[1] for buf in pose))


def test_node_kernel_through_the_contract(bundled_clip):
    skel, clip = bundled_clip
    local = ag.Pose(clip.pos[10], clip.rot[10])
    g = ag.ops.fk(local, skel.parents)
    target = g.pos[skel.index("left_foot")] + np.array([0.05, 0.1, 0.05])
    node = TwoBoneIK(id="ik", root="left_hip", mid="left_knee", end="left_foot")
    got = run_node(node, skel, local, target, (0.1, 0.2, 0.3))
    want = two_bone_ik(local, skel, ("left_hip", "left_knee", "left_foot"), target, (0.1, 0.2, 0.3))
    for a, b in zip(got.as_tuple(), want.as_tuple()):
        np.testing.assert_array_equal(a, b)
    go = ag.ops.fk(got, skel.parents)
    assert np.linalg.norm(go.pos[skel.index("left_foot")] - target) < 1e-5
    # A linked weight signal (value, rate) is used instead of the field.
    got = run_node(node, skel, local, target, (0.1, 0.2, 0.3), weight=(0.5, 2.0))
    want = two_bone_ik(local, skel, ("left_hip", "left_knee", "left_foot"), target, (0.1, 0.2, 0.3), 0.5, 2.0)
    np.testing.assert_array_equal(got.ang, want.ang)


def test_a_knee_taken_through_straight_keeps_bending_the_hinges_way():
    """The animated knee turns from bent (foot behind, the hinge's way) through straight to 0.15 rad over;
    the target sits at full reach along hip -> ankle, so the solve must bend the knee somewhere.

    It bends it the hinge's way every time (the knee ahead of the hip-ankle line, +z), and the
    solved knee moves smoothly with the animation: no flip where the animation passes straight.
    """
    skel = leg_skeleton()
    full = np.linalg.norm(LEG_OFFSETS[KNEE]) + np.linalg.norm(LEG_OFFSETS[ANKLE])
    knees, sides = [], []
    for angle in np.linspace(0.3, -0.15, 91):  # about x: + bends the foot back, - over-straightens
        rot = np.tile([1.0, 0.0, 0.0, 0.0], (5, 1))
        rot[KNEE] = [np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0]
        local = ag.Pose(LEG_OFFSETS.copy(), rot)
        g = ag.ops.fk(local, LEG_PARENTS).pos.astype(float)
        target = g[HIP] + (g[ANKLE] - g[HIP]) / np.linalg.norm(g[ANKLE] - g[HIP]) * full
        solved = ag.ops.fk(two_bone_ik(local, skel, ("hip", "knee", "ankle"), target), LEG_PARENTS).pos.astype(float)
        hip, knee, ankle = solved[HIP], solved[KNEE], solved[ANKLE]
        line = (ankle - hip) / np.linalg.norm(ankle - hip)
        off = (knee - hip) - np.dot(knee - hip, line) * line  # the knee's offset from the hip-ankle line
        knees.append(knee)
        sides.append(off[2])
    assert min(sides) > 0.0, min(sides)  # always ahead: bent the hinge's way
    assert max(np.linalg.norm(np.diff(knees, axis=0), axis=1)) < 0.005  # 91 small steps, no flip


def folded_against_the_hinge(t):
    """(pose_at(t), target(t), target velocity): the knee bent 155 degrees against its hinge (foot up in
    front of the hip), the thigh turning about its length at 0.2 rad/s; the target 0.2 m from the hip, up in
    front, sweeping sideways (x) through the leg's plane.

    The knee turn bends the knee the hinge's way, which puts the end behind the hip, opposite the target:
    the root swing onto the target passes through a half turn (the shortest arc's axis spins there)."""
    rot = np.tile([1.0, 0.0, 0.0, 0.0], (5, 1))
    rot[KNEE] = from_rotvec(np.array([-2.7, 0.0, 0.0]))
    ang = np.zeros((5, 3))
    ang[HIP] = [0.0, 0.2, 0.0]
    d, dd = np.array([-0.06 + 0.12 * t, 0.081, 0.182]), np.array([0.12, 0.0, 0.0])
    n = d / np.linalg.norm(d)
    target = LEG_OFFSETS[0] + LEG_OFFSETS[HIP] + 0.2 * n
    tvel = 0.2 * (dd - n * np.dot(n, dd)) / np.linalg.norm(d)
    return straight_motion(LEG_OFFSETS, rot, np.zeros((5, 3)), ang)(t), target, tvel


def test_a_knee_bent_against_its_hinge_with_the_target_at_the_hip_never_spins():
    """Swept over 1 s in 400 steps, the solved knee and ankle move at most 3 mm a step (no spin about
    the target line), the ankle stays on the target, and the velocities equal central differences."""
    joints = (HIP, KNEE, ANKLE)
    steps = np.linspace(0.0, 1.0, 401)
    knees, ankles = [], []
    for t in steps:
        pose, target, tvel = folded_against_the_hinge(t)
        pos, _ = global64(solve64(pose, joints, target, tvel), LEG_PARENTS)
        knees.append(pos[KNEE])
        ankles.append(pos[ANKLE])
        assert np.linalg.norm(pos[ANKLE] - target) < 1e-6
    jump = max(np.linalg.norm(np.diff(knees, axis=0), axis=1).max(), np.linalg.norm(np.diff(ankles, axis=0), axis=1).max())
    print(f"largest knee/ankle step {jump * 1e3:.2f} mm")
    assert jump < 0.003
    for t in steps[::40]:
        ev, ea = fd_errors(lambda s: solve64(*(lambda p, x, v: (p, joints, x, v))(*folded_against_the_hinge(t + s))))
        assert max(ev.max(), ea.max()) < FD_TOL, t


# ---------------------------------------------------------------- fast targets (issue 23's soak, by hand)

ARM_OFFSETS = np.array([[0, 1, 0], [0.1, 0, 0], [0, -0.299, 0], [0, -0.212, 0], [0, -0.05, 0.15]], float)  # CMU arm
RATE = 960  # steps per second, as the soak


def trapezoid_residual(offsets, target_at):
    """Largest ``|x(t+dt) - x(t) - (v(t) + v(t+dt)) dt / 2|`` (m) of any joint of a still chain solved for
    ``target_at(t) -> (pos, vel)`` over 0.2 s at ``RATE``; world positions and velocities by FK."""
    still = straight_motion(offsets, np.tile([1.0, 0.0, 0.0, 0.0], (5, 1)), np.zeros((5, 3)), np.zeros((5, 3)))(0.0)
    dt, xs, vs = 1.0 / RATE, [], []
    for t in np.arange(-0.1, 0.1, dt):
        g = ag.ops.fk(as_pose(solve64(still, (HIP, KNEE, ANKLE), *target_at(t))), LEG_PARENTS)
        xs.append(g.pos.astype(float))
        vs.append(g.vel.astype(float))
    x, v = np.array(xs), np.array(vs)
    return np.linalg.norm(x[1:] - x[:-1] - 0.5 * (v[1:] + v[:-1]) * dt, axis=-1).max()


@pytest.mark.parametrize("offsets, miss", [(LEG_OFFSETS, 0.02), (ARM_OFFSETS, 0.05)], ids=["leg", "arm"])
def test_a_target_sweeping_past_the_root_is_followed_without_a_velocity_step(offsets, miss):
    """A target passing ``miss`` m from the root at 3 m/s dips into the fold (reach below |l_ab - l_bc|):
    the reach is slowed over a band, so no joint leaves its velocities by 5 mm a step at 960 Hz (the
    hard fold clamp stopped the knee dead: ~30 mm).  It passes below and behind the root: its direction
    turns through half a circle in a few steps, and on the other side that half circle runs within 7
    degrees of the swing's one undefined direction (the root-swing test below), which no fold band helps."""
    root = offsets[0] + offsets[HIP]
    d = np.array([0.3, -1.0, 0.4]) / np.linalg.norm([0.3, -1.0, 0.4])
    side = -np.cross(d, [1.0, 0.0, 0.0]) / np.linalg.norm(np.cross(d, [1.0, 0.0, 0.0]))
    worst = trapezoid_residual(offsets, lambda t: (root + miss * side + 3.0 * t * d, 3.0 * d))
    print(f"worst residual {worst * 1e3:.2f} mm")
    assert worst < 0.005


def test_a_target_passing_over_the_hinge_axis_does_not_spin_the_chain():
    """An arm's target crossing the line of the elbow's hinge axis through the shoulder (at 0.6 of the full
    reach, 5 m/s): no joint leaves its velocities by 5 mm a step at 960 Hz (the swing from frame to hinge
    frame, undefined along the hinge, spun the arm about the target line there: an elbow flip, ~390 mm)."""
    root = ARM_OFFSETS[0] + ARM_OFFSETS[HIP]
    full = np.linalg.norm(ARM_OFFSETS[KNEE]) + np.linalg.norm(ARM_OFFSETS[ANKLE])
    hinge = np.array([1.0, 0.0, 0.0])  # the elbow's axis in the world: its frame is the world's (a still chain)
    vel = 5.0 * np.array([0.0, 0.6, 0.8])
    worst = trapezoid_residual(ARM_OFFSETS, lambda t: (root + 0.6 * full * hinge + t * vel, vel))
    print(f"worst residual {worst * 1e3:.2f} mm")
    assert worst < 0.005


# ---------------------------------------------------------------- the root swing's one undefined direction


def swing_singularity(e, h):
    """``ik.root_swing``'s undefined direction as its docstring gives it: ``-(cos p e + sin p n)``, ``n = h x e``,
    ``tan p = BEND_TURN (1 + cos p) / 2`` (unit ``e``, unit ``h`` normal to it)."""
    p = 0.5
    for _ in range(200):  # a contraction: |d/dp atan(k (1 + cos p) / 2)| < 1
        p = math.atan(BEND_TURN * (1.0 + math.cos(p)) / 2.0)
    return -(math.cos(p) * e + math.sin(p) * np.cross(h, e))


def rot_angle(q1, q2):
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(q1, q2)))))


def test_the_root_swing_turns_smoothly_everywhere_but_at_its_one_documented_direction():
    """Targets swept round great circles: the swing takes the end onto the target and turns by at most 30 times the
    sweep's step (no spin) on every circle staying 0.3 rad from the documented direction, including the hinge axis
    and the far side of the end; a circle passing 1e-4 rad from that direction turns by more than 1 rad in one step."""
    rng = np.random.default_rng(5)
    steps = np.linspace(-math.pi, math.pi, 4001)
    zero = (0.0, 0.0, 0.0)
    crossed = 0
    for _ in range(12):
        e = rng.normal(size=3)
        e /= np.linalg.norm(e)
        h = np.cross(e, rng.normal(size=3))
        h /= np.linalg.norm(h)
        bad = swing_singularity(e, h)
        u = np.cross(bad, rng.normal(size=3))
        u /= np.linalg.norm(u)
        past = np.array([bad * math.cos(1e-4) + u * math.sin(1e-4), np.cross(bad, u)])  # nearest at the sweep's middle
        circles = [rng.normal(size=(2, 3)) for _ in range(6)] + [np.array([h, e]), np.array([-e, rng.normal(size=3)]), past]
        for a, b in circles:
            a = a / np.linalg.norm(a)
            b = b - a * np.dot(a, b)
            b /= np.linalg.norm(b)
            ts = np.cos(steps)[:, None] * a + np.sin(steps)[:, None] * b
            qs = [np.array(root_swing(tuple(e), zero, tuple(t), zero, tuple(h), zero)[0]) for t in ts]
            for q, t in zip(qs[::200], ts[::200]):
                np.testing.assert_allclose(qrot_np(q, e), t, atol=1e-9)
            turns = np.array([rot_angle(p, q) for p, q in zip(qs[:-1], qs[1:])])
            near = math.acos(min(1.0, float(np.max(ts @ bad))))
            if near > 0.3:
                assert turns.max() < 30 * (steps[1] - steps[0]), (turns.max(), near)
            elif near < 2e-4:
                assert turns.max() > 1.0
                crossed += 1
    assert crossed == 12


def qrot_np(q, v):
    """``q`` (w-first) applied to ``v``."""
    w, u = q[0], np.asarray(q[1:])
    return v + 2.0 * w * np.cross(u, v) + 2.0 * np.cross(u, np.cross(u, v))
