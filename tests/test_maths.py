"""Vector and quaternion kernels: hand-checked cases, and every _dx against central differences."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animgraph import maths as m
from animgraph.jit import njit
from llvmlite import binding as llvm

finite = st.floats(-3.0, 3.0, allow_nan=False, width=64)
vec3 = st.tuples(finite, finite, finite)
quat_raw = st.tuples(finite, finite, finite, finite).filter(lambda q: sum(x * x for x in q) > 0.01)


def unit(q):
    n = math.sqrt(sum(x * x for x in q))
    return tuple(x / n for x in q)


def close(a, b, tol=1e-9):
    return np.allclose(np.asarray(a, float), np.asarray(b, float), atol=tol, rtol=0)


def same_rotation(a, b, tol=1e-9):
    return close(a, b, tol) or close(a, m.qscale(b, -1.0), tol)


def test_qmul_hand_checked():
    # 90 degrees about Y takes x to -z; a further 90 about X takes -z to +y.
    ry = (math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0)
    rx = (math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0)
    assert close(m.qrot(ry, (1.0, 0.0, 0.0)), (0.0, 0.0, -1.0))
    assert close(m.qrot(m.qmul(rx, ry), (1.0, 0.0, 0.0)), (0.0, 1.0, 0.0))
    assert close(m.qrot(m.qmul(rx, ry), (0.0, 1.0, 0.0)), (0.0, 0.0, 1.0))


def test_scaled_angle_axis_hand_checked():
    q = m.from_scaled_angle_axis((0.0, math.pi / 2, 0.0))
    assert close(q, (math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0))
    assert close(m.to_scaled_angle_axis(q), (0.0, math.pi / 2, 0.0))
    # The long way round (w < 0) maps back to the short rotation vector.
    assert close(m.to_scaled_angle_axis(m.qscale(q, -1.0)), (0.0, math.pi / 2, 0.0))


def test_log_exp_small_angles_are_exact():
    for a in (1e-12, 1e-9, 1e-6, 1e-4, 1e-3):
        v = (a, -2 * a, 0.5 * a)
        assert close(m.qlog(m.qexp(v)), v, tol=1e-15)


@given(vec3)
@settings(max_examples=200, deadline=None)
def test_exp_series_equals_the_closed_form_up_to_a_quarter_turn(v):
    # Scaled so the half angle spans [0, pi/2]: the range sample's linear mode uses it on.
    n = math.sqrt(sum(x * x for x in v))
    if n > 0.0:
        v = tuple(x / n * min(n, 3.0) / 3.0 * math.pi / 2 for x in v)
    assert close(m.qexp_series(v), m.qexp(v), tol=2e-16 * 8)


def test_exp_series_hand_checked():
    assert m.qexp_series((0.0, 0.0, 0.0)) == (1.0, 0.0, 0.0, 0.0)
    q = m.qexp_series((0.0, 0.0, math.pi / 2))  # half a turn about z
    assert close(q, (0.0, 0.0, 0.0, 1.0), tol=1e-16)


def test_qbetween_of_nearly_opposite_vectors_reaches_the_target():
    # Found by test_qbetween_maps_direction: 1e-5 rad from opposite once took an arbitrary half turn.
    for eps in (1e-3, 1e-5, 1e-7, 1e-9):
        a, b = (0.0, 1.0, 0.0), (eps, -1.0, 0.0)
        assert close(m.qrot(m.qbetween(a, b), a), m.vnormalize(b), tol=3e-8), eps
    q = m.qbetween((0.0, 2.0, 0.0), (0.0, -3.0, 0.0))  # exactly opposite: half a turn about an axis normal to a
    assert close(m.qrot(q, (0.0, 1.0, 0.0)), (0.0, -1.0, 0.0))
    assert m.qbetween_dx((0.0, 2.0, 0.0), (1.0, 0.0, 0.0), (0.0, -3.0, 0.0), (0.0, 0.0, 1.0)) == (0.0, 0.0, 0.0)


def test_degenerate_vectors_give_no_nan():
    z = (0.0, 0.0, 0.0)
    assert m.vnormalize(z) == z
    assert m.vnormalize_dx(z, (1.0, 2.0, 3.0)) == z
    assert m.qnormalize((0.0, 0.0, 0.0, 0.0)) == (1.0, 0.0, 0.0, 0.0)
    assert m.qbetween(z, (1.0, 0.0, 0.0)) == (1.0, 0.0, 0.0, 0.0)
    assert m.qbetween((0.0, 2.0, 0.0), z) == (1.0, 0.0, 0.0, 0.0)
    assert m.qbetween_dx(z, (1.0, 0, 0), (0, 1.0, 0), (0, 0, 1.0)) == z
    q = m.qbetween((1.0, 0.0, 0.0), (-1.0, 0.0, 0.0))
    assert close(m.qrot(q, (1.0, 0.0, 0.0)), (-1.0, 0.0, 0.0))
    assert np.all(np.isfinite(m.qbetween_dx((1.0, 0, 0), (0, 1.0, 0), (-1.0, 0, 0), (0, 0, 1.0))))


@settings(max_examples=100, deadline=None)
@given(vec3, vec3)
def test_qbetween_maps_direction(a, b):
    if m.vlen(a) < 1e-3 or m.vlen(b) < 1e-3:
        return
    q = m.qbetween(a, b)
    assert close(m.qrot(q, m.vnormalize(a)), m.vnormalize(b), tol=1e-7)


@settings(max_examples=100, deadline=None)
@given(quat_raw, quat_raw, st.floats(0.0, 1.0))
def test_slerp_endpoints_and_shortest_path(a, b, t):
    a, b = unit(a), unit(b)
    assert same_rotation(m.qslerp(a, b, 0.0), a, 1e-9)
    assert same_rotation(m.qslerp(a, b, 1.0), b, 1e-9)
    # Interpolating towards -b is the same rotation path as towards b.
    assert same_rotation(m.qslerp(a, b, t), m.qslerp(a, m.qscale(b, -1.0), t), 1e-9)
    # The angle travelled never exceeds pi (the short way round).
    assert m.vlen(m.to_scaled_angle_axis(m.qmul(b, m.qinv(a)))) <= math.pi + 1e-9


H = 1e-6  # central-difference step (float64 throughout)


def central(f, x, dx):
    """Central difference of f along the straight path x + t*dx at t = 0."""
    xp = tuple(xi + H * di for xi, di in zip(x, dx))
    xm = tuple(xi - H * di for xi, di in zip(x, dx))
    fp, fm = f(xp), f(xm)
    if isinstance(fp, tuple):
        return tuple((p - q) / (2 * H) for p, q in zip(fp, fm))
    return (fp - fm) / (2 * H)


@settings(max_examples=100, deadline=None)
@given(vec3, vec3)
def test_vnormalize_dx(v, dv):
    if m.vlen(v) < 0.1:
        return
    assert close(m.vnormalize_dx(v, dv), central(m.vnormalize, v, dv), tol=1e-6)


@settings(max_examples=100, deadline=None)
@given(quat_raw, quat_raw)
def test_qnormalize_dx(q, dq):
    assert close(m.qnormalize_dx(q, dq), central(m.qnormalize, q, dq), tol=1e-5)


@settings(max_examples=100, deadline=None)
@given(vec3, vec3, vec3, vec3)
def test_cross_dot_len_dx(a, da, b, db):
    ab, dab = a + b, da + db
    assert close(m.vcross_dx(a, da, b, db), central(lambda x: m.vcross(x[:3], x[3:]), ab, dab), 1e-6)
    assert close(m.vdot_dx(a, da, b, db), central(lambda x: m.vdot(x[:3], x[3:]), ab, dab), 1e-6)
    if m.vlen(a) > 0.1:
        assert close(m.vlen_dx(a, da), central(m.vlen, a, da), 1e-6)


@settings(max_examples=100, deadline=None)
@given(vec3, vec3, vec3, vec3)
def test_qbetween_dx_is_the_angular_velocity(a, da, b, db):
    if m.vlen(a) < 0.1 or m.vlen(b) < 0.1:
        return
    if m.vdot(m.vnormalize(a), m.vnormalize(b)) < -0.95:
        return  # near-opposite vectors: the between rotation is ill-conditioned
    ab, dab = a + b, da + db

    def between(x):
        return m.qbetween(x[:3], x[3:])

    qp = between(tuple(x + H * d for x, d in zip(ab, dab)))
    qm = between(tuple(x - H * d for x, d in zip(ab, dab)))
    fd = m.vscale(m.to_scaled_angle_axis(m.qmul(qp, m.qinv(qm))), 1.0 / (2 * H))
    assert close(m.qbetween_dx(a, da, b, db), fd, tol=1e-4 * (1 + m.vlen(fd)))


@settings(max_examples=100, deadline=None)
@given(quat_raw, vec3)
def test_ang_qdx_round_trip(q, w):
    q = unit(q)
    assert close(m.qdx_to_ang(q, m.ang_to_qdx(q, w)), w, tol=1e-12)


def test_exp_is_exact_not_approximate():
    # A large rotation: the fast approximations drift here; the exact exp does not.
    v = (0.0, 0.0, 1.4)
    q = m.qexp(v)
    assert q[0] == pytest.approx(math.cos(1.4), abs=1e-15)
    assert q[3] == pytest.approx(math.sin(1.4), abs=1e-15)


@settings(max_examples=100, deadline=None)
@given(quat_raw, vec3)
def test_to_scaled_angle_axis_dx_is_the_rate_of_the_rotation_vector(q, w):
    q = unit(q)
    v, t2, dv = m.to_scaled_angle_axis_dx(q, w)
    assert close(v, m.to_scaled_angle_axis(q), 1e-12)
    assert abs(t2 - m.vdot(v, v)) < 1e-12
    if m.vlen(v) > math.pi - 0.05:
        return  # near a half turn the short-way vector flips: no derivative there

    def rotvec_at(h):
        return m.to_scaled_angle_axis(m.qmul(m.from_scaled_angle_axis(m.vscale(w, h)), q))

    fd = m.vscale(m.vsub(rotvec_at(H), rotvec_at(-H)), 1.0 / (2 * H))
    assert close(dv, fd, tol=1e-5 * (1 + m.vlen(fd)))


@settings(max_examples=200, deadline=None)
@given(st.floats(-0.05, 0.05), st.floats(-3.0, 3.0), st.sampled_from([0.003, 0.01, 0.02]), st.floats(-0.05, 0.05))
def test_smooth_max0_is_a_c2_max_and_its_rate_is_exact(x, dx, soft, dsoft):
    """Within 3/16 soft above max(x, 0); the rate is a central difference in time, band moving too; C2 ends."""
    value, rate = m.smooth_max0(x, dx, soft, dsoft)
    assert max(x, 0.0) - 1e-12 <= value <= max(x, 0.0) + 0.1875 * soft + 1e-12  # 3/16 soft over, at x == 0
    if abs(x) >= soft:
        assert (value, rate) == (max(x, 0.0), dx if x > 0 else 0.0)
    h = 1e-7
    fd = (m.smooth_max0(x + h * dx, dx, soft + h * dsoft, dsoft)[0]
          - m.smooth_max0(x - h * dx, dx, soft - h * dsoft, dsoft)[0]) / (2 * h)
    assert rate == pytest.approx(fd, abs=1e-6)
    for end, slope in ((-soft, 0.0), (soft, 1.0)):  # slope 0 and 1 at the ends, its own slope 0 there
        assert m.smooth_max0(end, 1.0, soft, 0.0)[1] == pytest.approx(slope, abs=1e-12)
        assert abs(m.smooth_max0(end * (1 - 1e-4), 1.0, soft, 0.0)[1] - slope) < 1e-6


# ---------------------------------------------------------------- madd: a * b + c fused by the CPU alone


@njit
def _madd_one(a, b, c):
    return m.madd(a, b, c)


@njit
def _madd_rows(a, b, c, out):
    for i in range(out.shape[0]):  # a loop LLVM vectorizes: the fused op must not depend on it
        out[i] = m.madd(a[i], b[i], c[i])


@pytest.mark.parametrize("dtype, eps", [(np.float32, 2.0 ** -12), (np.float64, 2.0 ** -27)])
def test_madd_rounds_float32_once_where_the_cpu_fuses_and_alike_in_every_context(dtype, eps):
    # (1 + eps)^2 - (1 + 2 eps) = eps^2, half a unit in the last place of 1 (float32: a tie, to even) or a quarter
    # (float64): a separate product rounds it away, one fused rounding keeps it.
    a, c = dtype(1.0 + eps), dtype(-(1.0 + 2.0 * eps))
    # float32 (the lane tiles) fuses where the CPU can; float64 (the per-character kernels) rounds twice.
    fused = dtype == np.float32 and "+fma" in llvm.get_host_cpu_features().flatten().split(",")
    got = _madd_one(a, a, c)
    assert got == (dtype(eps * eps) if fused else 0.0)
    rng = np.random.default_rng(7)
    x, y, z = (rng.normal(size=1001).astype(dtype) for _ in range(3))
    x[:3], y[:3], z[:3] = a, a, c
    rows = np.empty_like(x)
    _madd_rows(x, y, z, rows)
    assert np.array_equal(rows, np.array([_madd_one(p, q, r) for p, q, r in zip(x, y, z)], dtype))
    assert m.madd(1.5, 2.0, 0.25) == 3.25  # plain Python: the same sum
