"""blend node: validity, end points, degenerate rotations, the weight-rate term, exact velocities vs central FD.

Tolerances: hand cases 1e-5 (float32 output); float64 kernels vs 5-point central FD:
relative error <= 1e-6; float32 Pose from ``ag.ops.blend`` vs FD: |v - fd| <= 1e-3 |fd|
+ NOISE 2^-24 |x| / h (see fdcheck.py).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit
from pydantic import ValidationError

import animgraph as ag
from animgraph.lanes_ops import near_weights
from animgraph.maths import blend_kform, poly
from animgraph.node import REGISTRY
from animgraph.nodes.blend import Blend, blend_kernel
from animgraph.nodes.sample import sample_kernel
from fd import from_rotvec, qconj, qmul, rotvec
from fdcheck import Pose64, check_fd32, central_fd, random_pose, rel_errors, same_rot

FIELDS = ("pos", "rot", "scl", "vel", "ang", "svl")


def assert_pose_close(got, want, atol=1e-5, rot_tol=1e-5):
    for f in FIELDS:
        if f == "rot":
            assert same_rot(got.rot, want.rot, rot_tol)
        else:
            np.testing.assert_allclose(getattr(got, f), getattr(want, f), atol=atol, rtol=1e-5, err_msg=f)


# ------------------------------------------------------------------ validity


def test_validity_bad_parameters_refused():
    assert Blend(id="b").alpha == 0.5
    for fields in ({"alpha": -0.1}, {"alpha": 1.5}, {"alpha": float("nan")}, {"weight": 0.5}, {"alpha": "half"}):
        with pytest.raises(ValidationError):
            Blend(id="b", **fields)
    with pytest.raises(ValidationError):
        Blend(id="b", type="sample")
    assert REGISTRY["blend"] is Blend
    assert [p.space for p in Blend(id="b").inputs()[:2]] == ["any", "any"]
    assert Blend(id="b").outputs()[0].space == "any"


def test_op_refuses_bad_arguments():
    rng = np.random.default_rng(0)
    a, b = random_pose(rng, 3), random_pose(rng, 3)
    with pytest.raises(ValueError, match="finite"):
        ag.ops.blend(a, b, float("nan"))
    with pytest.raises(ValueError, match="finite"):
        ag.ops.blend(a, b, 0.5, np.inf)
    with pytest.raises(ValueError, match="joint"):
        ag.ops.blend(a, random_pose(rng, 4), 0.5)
    bad = b.copy()
    bad.scl[1, 0] = 0.0
    with pytest.raises(ValueError, match="scale"):
        ag.ops.blend(a, bad, 0.5)


# ------------------------------------------------------------------ end points and hand cases


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_alpha_zero_and_one_return_the_inputs(seed):
    rng = np.random.default_rng(seed)
    a, b = random_pose(rng, 3), random_pose(rng, 3)
    assert_pose_close(ag.ops.blend(a, b, 0.0), a)
    assert_pose_close(ag.ops.blend(a, b, 1.0), b, atol=2e-5)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), alpha=st.floats(0.0, 1.0), alpha_vel=st.floats(-10.0, 10.0))
def test_identical_inputs_are_returned(seed, alpha, alpha_vel):
    a = random_pose(np.random.default_rng(seed), 3)
    assert_pose_close(ag.ops.blend(a, a, alpha, alpha_vel), a)


def test_opposite_quaternions_do_not_spin():
    """b.rot = -a.rot is the same rotation: the blend stays on it, with a's angular velocity."""
    a = random_pose(np.random.default_rng(1), 4)
    b = a.copy()
    b.rot *= -1.0
    out = ag.ops.blend(a, b, 0.3, alpha_vel=5.0)
    assert same_rot(out.rot, a.rot, 1e-6)
    np.testing.assert_allclose(out.ang, a.ang, atol=1e-5)


def test_shortest_path_slerp():
    """200 degrees about z one way is 160 the other: the blend goes the short way."""
    a = ag.Pose.identity(1)
    b = ag.Pose.identity(1)
    b.rot[0] = from_rotvec(np.array([0.0, 0.0, np.radians(200.0)]))
    out = ag.ops.blend(a, b, 0.5)
    assert same_rot(out.rot[0], from_rotvec(np.array([0.0, 0.0, -np.radians(80.0)])), 1e-6)


def test_lerp_eerp_and_weight_rate_on_static_poses():
    """Still inputs: vel = alpha_vel (pb - pa), ang = alpha_vel log(qb qa^-1), svl = alpha_vel log(sb/sa)."""
    rng = np.random.default_rng(2)
    a, b = random_pose(rng, 5, speed=0.0), random_pose(rng, 5, speed=0.0)
    out = ag.ops.blend(a, b, 0.25, alpha_vel=2.0)
    np.testing.assert_allclose(out.pos, 0.75 * a.pos + 0.25 * b.pos, atol=1e-6)
    np.testing.assert_allclose(out.scl, a.scl**0.75 * b.scl**0.25, rtol=1e-6)
    d = rotvec(qmul(b.rot.astype(float), qconj(a.rot.astype(float))))
    assert same_rot(out.rot, qmul(from_rotvec(0.25 * d), a.rot.astype(float)), 1e-6)
    np.testing.assert_allclose(out.vel, 2.0 * (b.pos - a.pos), atol=1e-5)
    np.testing.assert_allclose(out.ang, 2.0 * d, atol=1e-5)
    np.testing.assert_allclose(out.svl, 2.0 * np.log(b.scl / a.scl), atol=1e-5)


def test_batches_broadcast():
    rng = np.random.default_rng(3)
    a, b = random_pose(rng, 4, batch=(3,)), random_pose(rng, 4)
    alpha = np.array([0.1, 0.5, 0.9])
    out = ag.ops.blend(a, b, alpha, alpha_vel=[1.0, 0.0, -1.0])
    assert out.batch == (3,)
    one = ag.ops.blend(a[2], b, 0.9, -1.0)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(out, f)[2], getattr(one, f))


def test_any_memory_layout_blends_alike():
    """Fields assigned after construction as strided or Fortran-order views give the same blend."""
    rng = np.random.default_rng(4)
    a, b = random_pose(rng, 6, batch=(2,)), random_pose(rng, 6, batch=(2,))
    want = ag.ops.blend(a, b, 0.4, 0.5)
    odd = a.copy()
    odd.pos = np.asfortranarray(a.pos)
    odd.rot = np.repeat(a.rot, 2, axis=-2)[..., ::2, :]  # every other row of a bigger array
    odd.vel = np.stack([a.vel, a.vel], axis=-1)[..., 0]  # a strided view
    assert not any(x.flags.c_contiguous for x in (odd.pos, odd.rot, odd.vel))
    got = ag.ops.blend(odd, b, 0.4, 0.5)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))


# ------------------------------------------------------------------ velocities vs central FD


def blend64(a, b, alpha, alpha_vel):
    out = Pose64(np.shape(a.pos)[:-1])
    for n, (x, y, dst) in enumerate(zip(a.items(), b.items(), out.items())):
        blend_kernel(x, y, alpha[n], alpha_vel[n], dst)
    return out


def sample64(clip, times):
    out = Pose64(np.shape(times) + (len(clip.skeleton),))
    for t, dst in zip(np.reshape(times, -1), out.items()):
        sample_kernel(clip.pos, clip.rot, clip.scl, 0, clip.frames, clip.dt, t, 1.0, True, True, dst)
    return out


def weight(t):
    return 0.5 + 0.45 * np.sin(3.0 * t), 1.35 * np.cos(3.0 * t)


def test_velocities_exact_with_moving_inputs_and_weight():
    """Random inputs moving at constant angular velocity, far apart: float64 blend vs FD, rel <= 1e-6."""
    rng = np.random.default_rng(4)
    a0, b0 = random_pose(rng, 6, speed=3.0), random_pose(rng, 6, speed=3.0)

    def moved(p, t):
        """p at time t (float64), moving at its own constant velocities."""
        out = Pose64(t.shape + (p.joints,))
        tt = t[:, None, None]
        out.pos[...] = p.pos + p.vel * tt
        out.rot[...] = qmul(from_rotvec(p.ang.astype(float) * tt), p.rot.astype(float))
        out.scl[...] = p.scl * np.exp(p.svl * tt)
        out.vel[...], out.ang[...], out.svl[...] = p.vel, p.ang, p.svl
        return out

    def at(t):
        w, dw = weight(t)
        return blend64(moved(a0, t), moved(b0, t), w, dw)

    ts = np.linspace(-0.3, 0.3, 9)
    pose, vel, ang, svl = central_fd(at, ts, 1e-4)
    for v, ref in ((pose.vel, vel), (pose.ang, ang), (pose.svl, svl)):
        assert rel_errors(v, ref, 1e-2).max() <= 1e-6


def test_velocities_match_central_fd_on_real_clips(bundled_clip):
    """a = the clip, b = the clip half a second later, weight swinging: float64 and float32 checks."""
    _, clip = bundled_clip
    rng = np.random.default_rng(5)
    h = clip.dt / 10
    shift = 61 * clip.dt  # whole frames, so both inputs are inside a key segment
    ts = (rng.integers(0, clip.frames, 40) + rng.uniform(0.25, 0.75, 40)) * clip.dt

    def at64(t):
        w, dw = weight(t)
        return blend64(sample64(clip, t), sample64(clip, t + shift), w, dw)

    pose, vel, ang, _ = central_fd(at64, ts, h / 8)  # small h: the wrap segments jump far
    assert rel_errors(pose.vel, vel, 1e-2).max() <= 1e-6
    assert rel_errors(pose.ang, ang, 1e-2).max() <= 1e-6

    # The reference's lerp of the inputs' angular velocities is not the derivative: this check can fail.
    a, b = sample64(clip, ts), sample64(clip, ts + shift)
    w, dw = weight(ts)
    d = rotvec(qmul(b.rot, qconj(a.rot)))
    naive = a.ang + w[:, None, None] * (b.ang - a.ang) + dw[:, None, None] * d
    assert rel_errors(naive, ang, 1e-2).max() > 1e-2

    def at32(t):
        w, dw = weight(t)
        return ag.ops.blend(*(ag.ops.sample(clip, x, mode="cubic", loop=True) for x in (t, t + shift)), w, dw)

    pose, vel, ang, _ = central_fd(at32, ts, h)
    check_fd32(pose.vel, vel, np.abs(clip.pos).max(), h, "vel")
    check_fd32(pose.ang, ang, 2.0, h, "ang")


@njit
def _near_series(alpha, y, like):
    f0, f1, d0, d1, hs = near_weights(alpha, like)
    return poly(y, f0), poly(y, f1), poly(y, d0), poly(y, d1), poly(y, hs)


def test_near_series_match_the_closed_forms():
    """The degree-8 series of the near path: sin(t h) / sin h, its d/dy and h / sin h, y = cos h - 1 in [-0.1, 0)."""
    worst = 0.0
    for alpha in np.linspace(0.0, 1.0, 11):
        for y in np.linspace(-0.1, -1e-4, 25):
            h = np.arccos(1.0 + y)

            def f(t):
                return np.sin(t * h) / np.sin(h)

            def df_dy(t):  # d/dh divided by dy/dh = -sin h
                return (t * np.cos(t * h) * np.sin(h) - np.sin(t * h) * np.cos(h)) / np.sin(h) ** 2 / -np.sin(h)

            want = (f(1 - alpha), f(alpha), df_dy(1 - alpha), df_dy(alpha), h / np.sin(h))
            got = _near_series(alpha, y, np.zeros(1))
            worst = max(worst, max(abs(g - w) for g, w in zip(got, want)))
    assert worst < 1e-9


@pytest.mark.parametrize("rows", [40, 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_paths_agree_with_the_float64_kineform_blend(dtype, rows):
    """Near joints (float series), far joints, opposite signs and non-unit scales: each row equals maths.blend_kform.

    All 40 rows: the packed loops, then the far rows again joint by joint; the first 20 (all near, unit
    scales): the packed loops alone.
    """
    rng = np.random.default_rng(11)
    joints = 40
    a = random_pose(rng, joints, speed=2.0)
    b = random_pose(rng, joints, speed=2.0)
    near = np.arange(joints) < 30  # b's rotation within about 40 degrees of a's; its sign flipped on some
    turn = from_rotvec(rng.normal(size=(joints, 3)) * 0.25)
    b.rot[near] = qmul(turn, a.rot)[near] * np.where(rng.random((joints, 1)) < 0.5, -1.0, 1.0)[near]
    a.scl[:20], b.scl[:20] = 1.0, 1.0  # unit scales: the float series; rows 20..29 near but scaled
    a.svl[:20], b.svl[:20] = 0.1, -0.2
    poses = [tuple(np.ascontiguousarray(x[:rows], dtype) for x in p.as_tuple()) for p in (a, b)]
    out = tuple(np.zeros_like(x) for x in poses[0])
    for alpha, alpha_vel in ((0.3, 0.0), (0.8, -2.5)):
        blend_kernel(poses[0], poses[1], alpha, alpha_vel, out)
        for which in (0, 1):  # out may alias either input
            into = tuple(x.copy() for x in poses[which])
            ins = [into if k == which else poses[k] for k in (0, 1)]
            blend_kernel(ins[0], ins[1], alpha, alpha_vel, into)
            for got, want in zip(into, out):
                np.testing.assert_array_equal(got, want)
        for j in range(rows):
            ka = tuple(tuple(float(v) for v in x[j]) for x in poses[0])
            kb = tuple(tuple(float(v) for v in x[j]) for x in poses[1])
            want = blend_kform(ka, kb, alpha, alpha_vel)
            tol = 2e-6 if dtype == np.float32 else 1e-9
            for f, got, ref in zip(FIELDS, out, want):
                scale = max(1.0, np.abs(ref).max())
                assert np.abs(got[j] - np.array(ref)).max() <= tol * scale * 10, (dtype, alpha, j, f)


# ------------------------------------------------------------------ the node contract, blend_node() directly


def run_node(node, a, b, alpha_sig=None, out_slot=2):
    """Call the kernel with a in slot 0, b in slot 1, the output in ``out_slot``; return the output pose."""
    pose = tuple(np.ascontiguousarray(np.stack([x, y, np.zeros_like(x)])) for x, y in zip(a.as_tuple(), b.as_tuple()))
    sig = np.zeros(4)
    ins = np.array([0, 1, 2], np.int64)
    # unlinked: the field alpha at rate 0, the constant block the planner feeds the port
    sig[2:4] = (node.alpha, 0.0) if alpha_sig is None else alpha_sig
    par = node.params(None)
    type(node).KERNEL(ins, np.array([out_slot], np.int64), par, node.state(None), pose, sig, (), 1 / 60)
    return ag.Pose(*(p[out_slot].copy() for p in pose))


def test_node_kernel_matches_op():
    rng = np.random.default_rng(6)
    a, b = random_pose(rng, 5), random_pose(rng, 5)
    node = Blend(id="b", alpha=0.3)
    assert_pose_close(run_node(node, a, b), ag.ops.blend(a, b, 0.3), atol=1e-6, rot_tol=1e-6)
    assert_pose_close(run_node(node, a, b, (0.8, -2.0)), ag.ops.blend(a, b, 0.8, -2.0), atol=1e-6, rot_tol=1e-6)
    # Writing over an input slot (slot reuse) gives the same result.
    assert_pose_close(run_node(node, a, b, (0.8, -2.0), out_slot=0), ag.ops.blend(a, b, 0.8, -2.0), atol=1e-6)
    assert_pose_close(run_node(node, a, b, (0.8, -2.0), out_slot=1), ag.ops.blend(a, b, 0.8, -2.0), atol=1e-6)


def test_node_clamps_weight_and_its_rate():
    rng = np.random.default_rng(7)
    a, b = random_pose(rng, 3), random_pose(rng, 3)
    node = Blend(id="b")
    assert_pose_close(run_node(node, a, b, (1.7, 3.0)), b, atol=2e-5)
    assert_pose_close(run_node(node, a, b, (-0.2, 3.0)), a)
    assert_pose_close(run_node(node, a, b, (np.nan, 0.0)), a)
