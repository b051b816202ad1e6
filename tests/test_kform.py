"""Kineforms: mul/div/inv are exact inverses at any scale, and mul's velocities are derivatives."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph import maths as m

seeds = st.integers(0, 2**32 - 1)


def random_kforms(rng, n, scale_spread=0.7):
    """n random kineforms with non-uniform scales and non-zero velocities, as a Pose."""
    rot = rng.normal(size=(n, 4))
    rot /= np.linalg.norm(rot, axis=-1, keepdims=True)
    return ag.Pose(
        rng.normal(size=(n, 3)),
        rot,
        np.exp(rng.normal(size=(n, 3)) * scale_spread),
        rng.normal(size=(n, 3)),
        rng.normal(size=(n, 3)) * 3,
        rng.normal(size=(n, 3)),
    )


def assert_kform_close(a, b, tol):
    for f in ("pos", "scl", "vel", "ang", "svl"):
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), atol=tol, rtol=tol, err_msg=f)
    # Quaternions up to sign.
    d = np.abs(np.sum(a.rot.astype(float) * b.rot, axis=-1))
    np.testing.assert_allclose(d, 1.0, atol=tol)


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_div_undoes_mul_at_non_unit_scale(seed):
    rng = np.random.default_rng(seed)
    a, b = random_kforms(rng, 64), random_kforms(rng, 64)
    assert_kform_close(ag.kform.div(a, ag.kform.mul(a, b)), b, tol=2e-4)


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_mul_by_inverse_is_identity(seed):
    rng = np.random.default_rng(seed)
    a = random_kforms(rng, 64)
    assert_kform_close(ag.kform.mul(a, ag.kform.inv(a)), ag.Pose.identity(64), tol=2e-4)


def test_mul_hand_checked_leverage_and_expansion():
    # Parent at the origin spinning at 2 rad/s about Y with scale 2 growing at 0.5/s;
    # the child sits 1 m along x in the parent: r = 2 m along x.
    a = ag.Pose([[0, 0, 0]], [[1, 0, 0, 0]], [[2, 2, 2]], [[0, 0, 0]], [[0, 2, 0]], [[0.5, 0.5, 0.5]])
    b = ag.Pose([[1, 0, 0]], [[1, 0, 0, 0]])
    c = ag.kform.mul(a, b)
    np.testing.assert_allclose(c.pos, [[2, 0, 0]])
    # Leverage: w x r = (0,2,0) x (2,0,0) = (0,0,-4); expansion: 0.5 * 2 * 1 = 1 along x.
    np.testing.assert_allclose(c.vel, [[1, 0, -4]])
    np.testing.assert_allclose(c.ang, [[0, 2, 0]])
    np.testing.assert_allclose(c.svl, [[0.5, 0.5, 0.5]])


def _advance(k, h):
    """Kineform tuple moved along its own velocities for h seconds (exactly, in float64)."""
    p, r, s, v, w, sv = k
    return (
        m.vadd(p, m.vscale(v, h)),
        m.qmul(m.from_scaled_angle_axis(m.vscale(w, h)), r),
        m.vmul(s, m.vexp(m.vscale(sv, h))),
        v,
        w,
        sv,
    )


@settings(max_examples=60, deadline=None)
@given(seeds)
def test_kmul_velocities_are_central_differences(seed):
    rng = np.random.default_rng(seed)
    a, b = (tuple(tuple(float(x) for x in getattr(random_kforms(rng, 1), f)[0]) for f in ag.pose.FIELDS)
            for _ in range(2))
    h = 1e-5
    c = m.kmul(a, b)
    cp, cm = m.kmul(_advance(a, h), _advance(b, h)), m.kmul(_advance(a, -h), _advance(b, -h))
    vel = m.vscale(m.vsub(cp[0], cm[0]), 1 / (2 * h))
    ang = m.vscale(m.to_scaled_angle_axis(m.qmul(cp[1], m.qinv(cm[1]))), 1 / (2 * h))
    svl = m.vscale(m.vsub(m.vlog(cp[2]), m.vlog(cm[2])), 1 / (2 * h))
    tol = 1e-5 * (1 + np.abs(c[3]).max() + np.abs(c[4]).max())
    np.testing.assert_allclose(vel, c[3], atol=tol)
    np.testing.assert_allclose(ang, c[4], atol=tol)
    np.testing.assert_allclose(svl, c[5], atol=1e-6)


def test_shapes_are_checked():
    rng = np.random.default_rng(0)
    try:
        ag.kform.mul(random_kforms(rng, 3), random_kforms(rng, 4))
    except ValueError as e:
        assert "shapes differ" in str(e)
    else:
        raise AssertionError("mismatched shapes were accepted")


@settings(max_examples=40, deadline=None)
@given(seeds)
def test_kmul_unit_is_kmul_for_a_unit_frame(seed):
    # FK takes kmul_unit for a parent of scale 1 and scale rate 0: the same numbers, bit for bit.
    rng = np.random.default_rng(seed)
    a, b = random_kforms(rng, 16), random_kforms(rng, 16)
    for i in range(16):
        ka = (tuple(a.pos[i]), tuple(a.rot[i]), (1.0, 1.0, 1.0), tuple(a.vel[i]), tuple(a.ang[i]), (0.0, 0.0, 0.0))
        kb = tuple(tuple(float(x) for x in getattr(b, f)[i]) for f in ("pos", "rot", "scl", "vel", "ang", "svl"))
        assert m.unit_frame(ka)
        assert m.kmul_unit(ka, kb) == m.kmul(ka, kb)
    assert not m.unit_frame(((0.0,) * 3, (1.0, 0.0, 0.0, 0.0), (1.0, 1.0, 2.0), (0.0,) * 3, (0.0,) * 3, (0.0,) * 3))
    assert not m.unit_frame(((0.0,) * 3, (1.0, 0.0, 0.0, 0.0), (1.0,) * 3, (0.0,) * 3, (0.0,) * 3, (0.0, 1e-9, 0.0)))
