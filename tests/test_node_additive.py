"""additive and difference nodes: validity, round trip, both sides, weights, exact velocities vs central FD.

Tolerances: hand cases 1e-5 (float32 output); float64 kernels vs 5-point central FD:
relative error <= 1e-6; float32 Pose from ``ag.ops`` vs FD: |v - fd| <= 1e-3 |fd|
+ NOISE 2^-24 |x| / h (see fdcheck.py).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import animgraph as ag
from animgraph.node import REGISTRY
from animgraph.nodes.additive import Additive, Difference, additive_kernel, difference_kernel
from animgraph.nodes.sample import sample_kernel
from fd import from_rotvec, qconj, qmul, rotvec
from fdcheck import Pose64, central_fd, check_fd32, random_pose, rel_errors, same_rot

FIELDS = ("pos", "rot", "scl", "vel", "ang", "svl")
SIDES = ("parent", "local")


def qrot(q, v):
    """Rotate vectors v by unit quaternions q (numpy)."""
    qv = np.concatenate([np.zeros(np.shape(v)[:-1] + (1,)), v], -1)
    return qmul(qmul(q, qv), qconj(q))[..., 1:]


def assert_pose_close(got, want, atol=1e-5, rot_tol=1e-5):
    for f in FIELDS:
        if f == "rot":
            assert same_rot(got.rot, want.rot, rot_tol)
        else:
            np.testing.assert_allclose(getattr(got, f), getattr(want, f), atol=atol, rtol=1e-5, err_msg=f)


def still(pose):
    """The pose with zero velocities."""
    out = pose.copy()
    for f in ("vel", "ang", "svl"):
        getattr(out, f)[...] = 0.0
    return out


# ------------------------------------------------------------------ validity


def test_validity_bad_parameters_refused():
    node = Additive(id="add")
    assert (node.alpha, node.side) == (1.0, "parent")
    assert Difference(id="d").side == "parent"
    for fields in ({"alpha": -0.5}, {"alpha": 2.0}, {"alpha": float("inf")}, {"side": "left"}, {"weight": 1.0}):
        with pytest.raises(ValidationError):
            Additive(id="add", **fields)
    for fields in ({"side": "right"}, {"alpha": 0.5}):
        with pytest.raises(ValidationError):
            Difference(id="d", **fields)
    assert REGISTRY["additive"] is Additive and REGISTRY["difference"] is Difference
    assert [p.name for p in Additive(id="a").inputs()] == ["base", "add", "alpha"]
    assert [p.name for p in Difference(id="d").inputs()] == ["pose", "reference"]


def test_op_refuses_bad_arguments():
    rng = np.random.default_rng(0)
    a, b = random_pose(rng, 3), random_pose(rng, 3)
    with pytest.raises(ValueError, match="side"):
        ag.ops.additive(a, b, 0.5, side="middle")
    with pytest.raises(ValueError, match="side"):
        ag.ops.difference(a, b, side="up")
    with pytest.raises(ValueError, match="finite"):
        ag.ops.additive(a, b, float("nan"))
    bad = b.copy()
    bad.scl[0, 2] = -1.0
    with pytest.raises(ValueError, match="scale"):
        ag.ops.difference(a, bad)


# ------------------------------------------------------------------ round trip, weights, sides


@pytest.mark.parametrize("side", SIDES)
@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_difference_then_additive_round_trips(side, seed):
    rng = np.random.default_rng(seed)
    pose, ref = random_pose(rng, 4, speed=2.0), random_pose(rng, 4, speed=2.0)
    back = ag.ops.additive(ref, ag.ops.difference(pose, ref, side=side), 1.0, side=side)
    assert_pose_close(back, pose, atol=3e-5)


@pytest.mark.parametrize("side", SIDES)
@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), alpha=st.floats(0.0, 1.0), alpha_vel=st.floats(-5.0, 5.0))
def test_identity_additive_changes_nothing(side, seed, alpha, alpha_vel):
    base = random_pose(np.random.default_rng(seed), 3)
    assert_pose_close(ag.ops.additive(base, ag.Pose.identity(3), alpha, alpha_vel, side=side), base)


@pytest.mark.parametrize("side", SIDES)
def test_alpha_zero_returns_base_and_sign_of_add_rotation_is_irrelevant(side):
    rng = np.random.default_rng(1)
    base, add = random_pose(rng, 5), random_pose(rng, 5)
    assert_pose_close(ag.ops.additive(base, add, 0.0, side=side), base)
    flipped = add.copy()
    flipped.rot *= -1.0
    for alpha, alpha_vel in ((0.4, 2.0), (1.0, 0.0)):
        assert_pose_close(
            ag.ops.additive(base, flipped, alpha, alpha_vel, side=side),
            ag.ops.additive(base, add, alpha, alpha_vel, side=side),
            atol=1e-6,
        )


def test_parent_and_local_side_hand_case():
    """Base 90 deg about z turning at w about x; add 90 deg about x, still."""
    base = ag.Pose.identity(1)
    base.rot[0] = from_rotvec(np.array([0.0, 0.0, np.pi / 2]))
    base.ang[0] = (1.5, 0.0, 0.0)
    add = ag.Pose.identity(1)
    add.rot[0] = from_rotvec(np.array([np.pi / 2, 0.0, 0.0]))
    half = from_rotvec(np.array([np.pi / 4, 0.0, 0.0]))
    qb = base.rot.astype(float)
    parent = ag.ops.additive(base, add, 0.5, side="parent")
    local = ag.ops.additive(base, add, 0.5, side="local")
    assert same_rot(parent.rot, qmul(half, qb), 1e-6)
    assert same_rot(local.rot, qmul(qb, half), 1e-6)
    assert not same_rot(parent.rot, local.rot, 0.1)
    np.testing.assert_allclose(parent.ang, qrot(half, base.ang.astype(float)), atol=1e-6)  # base turns inside
    np.testing.assert_allclose(local.ang, base.ang, atol=1e-6)  # a still offset on the local side


@pytest.mark.parametrize("side", SIDES)
def test_partial_weight_and_weight_rate_on_still_poses(side):
    """Still poses: offsets scale with alpha; alpha_vel adds alpha_vel times the full offset."""
    rng = np.random.default_rng(2)
    base, add = still(random_pose(rng, 5)), still(random_pose(rng, 5))
    out = ag.ops.additive(base, add, 0.3, alpha_vel=-2.0, side=side)
    a = rotvec(add.rot.astype(float))
    qb = base.rot.astype(float)
    np.testing.assert_allclose(out.pos, base.pos + 0.3 * add.pos, atol=1e-6)
    np.testing.assert_allclose(out.scl, base.scl * add.scl**0.3, rtol=1e-6)
    np.testing.assert_allclose(out.vel, -2.0 * add.pos, atol=1e-5)
    np.testing.assert_allclose(out.svl, -2.0 * np.log(add.scl), atol=1e-5)
    if side == "parent":
        assert same_rot(out.rot, qmul(from_rotvec(0.3 * a), qb), 1e-6)
        np.testing.assert_allclose(out.ang, -2.0 * a, atol=1e-5)
    else:
        assert same_rot(out.rot, qmul(qb, from_rotvec(0.3 * a)), 1e-6)
        np.testing.assert_allclose(out.ang, qrot(qb, -2.0 * a), atol=1e-5)


def test_batches_broadcast():
    rng = np.random.default_rng(3)
    base, add = random_pose(rng, 4, batch=(2, 3)), random_pose(rng, 4)
    out = ag.ops.additive(base, add, np.full((2, 3), 0.7), side="local")
    assert out.batch == (2, 3)
    one = ag.ops.additive(base[1, 2], add, 0.7, side="local")
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(out, f)[1, 2], getattr(one, f))
    assert ag.ops.difference(base, add).batch == (2, 3)


# ------------------------------------------------------------------ velocities vs central FD


def sample64(clip, times, rate=1.0):
    out = Pose64(np.shape(times) + (len(clip.skeleton),))
    for t, dst in zip(np.reshape(times, -1), out.items()):
        sample_kernel(clip.pos, clip.rot, clip.scl, 0, clip.frames, clip.dt, t, rate, True, True, dst)
    return out


def difference64(pose, ref, side):
    out = Pose64(np.shape(pose.pos)[:-1])
    for p, r, dst in zip(pose.items(), ref.items(), out.items()):
        difference_kernel(p, r, side == "local", dst)
    return out


def additive64(base, add, alpha, alpha_vel, side):
    out = Pose64(np.shape(base.pos)[:-1])
    for n, (b, a, dst) in enumerate(zip(base.items(), add.items(), out.items())):
        additive_kernel(b, a, alpha[n], alpha_vel[n], side == "local", dst)
    return out


def weight(t):
    return 0.5 + 0.45 * np.sin(3.0 * t), 1.35 * np.cos(3.0 * t)


@pytest.mark.parametrize("side", SIDES)
def test_velocities_match_central_fd_on_real_clips(bundled_clip, side):
    """base = the clip; add = difference(clip 0.5 s later, clip at t = 0.2 s), both moving; weight swinging."""
    _, clip = bundled_clip
    rng = np.random.default_rng(5)
    h = clip.dt / 10
    shift = 61 * clip.dt  # whole frames: every sample stays inside a key segment
    ts = (rng.integers(0, clip.frames, 40) + rng.uniform(0.25, 0.75, 40)) * clip.dt
    ref_t = 0.2

    def at64(t):
        w, dw = weight(t)
        ref = sample64(clip, np.full_like(t, ref_t), rate=0.0)  # a still reference pose
        add = difference64(sample64(clip, t + shift), ref, side)
        return additive64(sample64(clip, t), add, w, dw, side)

    pose, vel, ang, _ = central_fd(at64, ts, h / 8)  # small h: the wrap segments jump far
    assert rel_errors(pose.vel, vel, 1e-2).max() <= 1e-6
    assert rel_errors(pose.ang, ang, 1e-2).max() <= 1e-6

    def at32(t):
        w, dw = weight(t)
        add = ag.ops.difference(
            ag.ops.sample(clip, t + shift, mode="cubic", loop=True),
            ag.ops.sample(clip, np.full_like(t, ref_t), mode="cubic", loop=True, rate=0.0),
            side=side,
        )
        return ag.ops.additive(ag.ops.sample(clip, t, mode="cubic", loop=True), add, w, dw, side=side)

    pose, vel, ang, _ = central_fd(at32, ts, h)
    check_fd32(pose.vel, vel, 2 * np.abs(clip.pos).max(), h, "vel")
    check_fd32(pose.ang, ang, 2.0, h, "ang")


def test_weighted_angular_velocity_needs_the_jacobians():
    """The reference's alpha*ang_add + alpha_vel*a is off for a large offset turning off-axis; ours matches FD."""
    w_add = np.array([0.0, 3.0, 0.0])
    a0 = np.array([2.0, 0.0, 0.0])  # 115 degrees about x, turning about y
    alpha = 0.5

    def at(t):
        add = Pose64(t.shape + (1,))
        add.rot[:, 0] = qmul(from_rotvec(w_add * t[:, None]), from_rotvec(a0))
        add.ang[:, 0] = w_add
        base = Pose64(t.shape + (1,))
        base.rot[..., 0] = 1.0
        n = t.shape[0]
        return additive64(base, add, np.full(n, alpha), np.zeros(n), "parent"), add

    pose, _, ang, _ = central_fd(lambda t: at(t)[0], np.array([0.0]), 1e-4)
    np.testing.assert_allclose(pose.ang, ang, atol=1e-8)
    reference = alpha * w_add
    assert np.linalg.norm(reference - ang[0, 0]) > 0.1 * np.linalg.norm(ang[0, 0])


# ------------------------------------------------------------------ the node contract, additive_node() and difference_node() directly


def run_node(node, a, b, alpha_sig=None, out_slot=2):
    """Call the kernel with inputs in slots 0 and 1, the output in ``out_slot``; return the output pose."""
    pose = tuple(np.ascontiguousarray(np.stack([x, y, np.zeros_like(x)])) for x, y in zip(a.as_tuple(), b.as_tuple()))
    sig = np.zeros(4)
    ins = np.array([0, 1, 2][: len(node.inputs())], np.int64)
    if len(node.inputs()) == 3:  # unlinked: the field alpha at rate 0, the constant block the planner feeds the port
        sig[2:4] = (node.alpha, 0.0) if alpha_sig is None else alpha_sig
    par = node.params(None)
    type(node).KERNEL(ins, np.array([out_slot], np.int64), par, node.state(None), pose, sig, (), 1 / 60)
    return ag.Pose(*(p[out_slot].copy() for p in pose))


@pytest.mark.parametrize("side", SIDES)
def test_node_kernels_match_ops(side):
    rng = np.random.default_rng(6)
    base, pose, ref = (random_pose(rng, 5) for _ in range(3))
    add = run_node(Difference(id="d", side=side), pose, ref)
    assert_pose_close(add, ag.ops.difference(pose, ref, side=side), atol=1e-6, rot_tol=1e-6)
    node = Additive(id="a", alpha=0.6, side=side)
    assert_pose_close(run_node(node, base, add), ag.ops.additive(base, add, 0.6, side=side), atol=1e-6)
    want = ag.ops.additive(base, add, 0.25, 1.5, side=side)
    assert_pose_close(run_node(node, base, add, (0.25, 1.5)), want, atol=1e-6)
    for out_slot in (0, 1):  # writing over an input slot gives the same result
        assert_pose_close(run_node(node, base, add, (0.25, 1.5), out_slot=out_slot), want, atol=1e-6)
    assert_pose_close(run_node(node, base, add, (np.nan, 1.0)), base)  # a NaN weight applies nothing
