"""Vector, quaternion and kineform maths with time derivatives, as numba kernels.

Every function here works on plain tuples of floats so that numba keeps them in
registers: a vec3 is ``(x, y, z)``, a quaternion is ``(w, x, y, z)`` (unit,
w-first), and a kineform is the 6-tuple ``(pos, rot, scl, vel, ang, svl)`` of one
joint.  Arrays stay float32 in memory; ``load_*``/``store_*`` convert at the edge
so the per-character arithmetic runs in float64.  The functions the lane tiles use
(``animgraph.lanes``: float32, 16 characters per loop) are generic over the float type: their
constants go through ``const`` (a Python float literal would promote float32 maths to float64
and keep the lane loop from packing) and they have no branches.  numba inlines them into the
lane tiles' modules (``inline=into_lanes``, ``INLINE_INTO``): inlined by LLVM instead, the
loops of ``lanes_ops.blend_tile`` measured unpacked ("unsafe indirect dependence").  Everywhere
else they are calls that LLVM always inlines (``forceinline=True``): each is compiled once per
float type and shared, where numba's own inlining prepares the callee's body again at every
call site, at a cost that grows with its size (numba issue 8989): inlined by numba into
``nodes.blend`` as well, ``blend_kernel`` compiled in 17 s against 10 s, and everywhere, the
cold compile of ``graphs/locomotion.json`` doubled (219 s of CPU against 119 s).  The joint
loops of ``nodes.blend`` still pack (``tests/test_lanes.py``).

Conventions (see DESIGN.md): ``ang`` is the scaled angle-axis rate that
left-multiplies, ``rot(t+dt) = exp(ang*dt) * rot(t)``; ``svl`` is d/dt log(scl).
This is the one module for this maths: nodes and ops import from here.
"""

import math
import sys

import numpy as np
from llvmlite import ir
from numba import types

from animgraph.jit import njit
from numba.extending import intrinsic, overload
from numba.np.numpy_support import as_dtype

EPS = 1e-8


# ---------------------------------------------------------------- constants in the argument's float type


def const(value, like):
    """Float ``value`` in the float type of ``like`` (float32 stays float32); any other ``like`` keeps it as is."""
    return type(like)(value) if isinstance(like, np.floating) else value


@overload(const, inline="always")
def _const(value, like):
    if isinstance(like, types.Float):
        cast = as_dtype(like).type
        return lambda value, like: cast(value)
    return lambda value, like: value


def pick(like, for64, for32):
    """``for32`` if ``like`` is float32, else ``for64``: constant tables (series) sized for the argument's precision."""
    return for32 if isinstance(like, np.float32) else for64


@overload(pick, inline="always")
def _pick(like, for64, for32):
    if like == types.float32:
        return lambda like, for64, for32: for32
    return lambda like, for64, for32: for64


def madd(a, b, c):
    """``a * b + c``; in float32 (the lane tiles) one rounding (FMA) where the CPU has it, on every compile alike.

    LLVM's ``contract`` flag fused some products into their sums depending on the code around
    a kernel once inlined, so one graph rounded differently compiled or loaded from the cache;
    an explicit ``llvm.fmuladd`` is fused or not by the CPU alone (``tests/test_determinism.py``).
    """
    return a * b + c


@intrinsic
def _fmuladd(typingctx, a, b, c):
    if isinstance(a, types.Float) and a == b == c:
        def lower_fmuladd(context, builder, sig, args):
            t = args[0].type
            fmuladd = builder.module.declare_intrinsic("llvm.fmuladd", [t], ir.FunctionType(t, [t, t, t]))
            return builder.call(fmuladd, args)
        return a(a, b, c), lower_fmuladd
    return None


@overload(madd, inline="always")
def _madd(a, b, c):
    if not all(isinstance(x, (types.Float, types.Integer, types.Boolean)) for x in (a, b, c)):
        return None
    if a == b == c == types.float32:
        return lambda a, b, c: _fmuladd(a, b, c)
    # float64 (the per-character kernels) rounds twice, as before madd: their results stay bit-identical.
    return lambda a, b, c: a * b + c


# Taylor coefficients of exp(-x) to degree 11, float32 (``exp_neg``).
EXP_NEG_SERIES32 = tuple(np.float32((-1.0) ** k / math.factorial(k)) for k in range(12))


def exp_neg(v):
    """``exp(-v)`` for ``v >= 0``; float32 from a series (lanes: a libm call keeps the loop scalar)."""
    return math.exp(-v)


@overload(exp_neg, inline="always")
def _exp_neg(v):
    if v == types.float32:
        # p(v/16)^16, p the series: relative error < 2e-6 up to v = 20, where it is taken as 0.
        def series(v):
            p = poly(min(v, np.float32(20.0)) * np.float32(0.0625), EXP_NEG_SERIES32)
            p = p * p
            p = p * p
            p = p * p
            p = p * p
            return p * np.float32(v < np.float32(20.0))  # a product, not a branch: the lane loop packs
        return series
    return lambda v: math.exp(-v)


# The modules whose kernels run these functions over lanes (or joints) in loops that must pack.
INLINE_INTO = ("animgraph.lanes", "animgraph.lanes_ops", "animgraph.lanes_ik")


def into_lanes(expr, caller, callee):
    """numba inline cost model: inline when the function being compiled is in ``INLINE_INTO``, else call.

    A nested call (``qmul`` in ``kmul`` inlined into a tile) is decided while numba prepares the
    inlined body alone, its caller then ``kmul``: the outer callers are the ``state`` of the
    inlining pass's frames further up the stack.
    """
    if caller.func_id.modname in INLINE_INTO:
        return True
    frame = sys._getframe(1)
    while frame is not None:
        state = frame.f_locals.get("state") if frame.f_code.co_name == "_do_work" else None
        if state is not None and getattr(state.func_ir.func_id, "modname", None) in INLINE_INTO:
            return True
        frame = frame.f_back
    return False


# ---------------------------------------------------------------- vec3


@njit(cache=True, inline=into_lanes, forceinline=True)
def vadd(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(cache=True, inline=into_lanes, forceinline=True)
def vsub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(cache=True, inline=into_lanes, forceinline=True)
def vscale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@njit(cache=True, inline=into_lanes, forceinline=True)
def vmul(a, b):
    """Element-wise product."""
    return (a[0] * b[0], a[1] * b[1], a[2] * b[2])


@njit(cache=True)
def vdiv(a, b):
    """Element-wise quotient."""
    return (a[0] / b[0], a[1] / b[1], a[2] / b[2])


@njit(cache=True)
def vneg(a):
    return (-a[0], -a[1], -a[2])


@njit(cache=True, inline=into_lanes, forceinline=True)
def vlerp(a, b, t):
    return (madd(t, b[0] - a[0], a[0]), madd(t, b[1] - a[1], a[1]), madd(t, b[2] - a[2], a[2]))


@njit(cache=True, inline=into_lanes, forceinline=True)
def vdot(a, b):
    return madd(a[2], b[2], madd(a[1], b[1], a[0] * b[0]))


@njit(cache=True, inline=into_lanes, forceinline=True)
def vcross(a, b):
    return (madd(a[1], b[2], -(a[2] * b[1])), madd(a[2], b[0], -(a[0] * b[2])), madd(a[0], b[1], -(a[1] * b[0])))


@njit(cache=True, inline=into_lanes, forceinline=True)
def sel3(c, a, b):
    """``a if c else b`` per component: a select, not a branch, so a lane loop still packs."""
    return (a[0] if c else b[0], a[1] if c else b[1], a[2] if c else b[2])


@njit(cache=True, inline=into_lanes, forceinline=True)
def sel4(c, a, b):
    """``sel3`` for quaternions."""
    return (a[0] if c else b[0], a[1] if c else b[1], a[2] if c else b[2], a[3] if c else b[3])


@njit(cache=True, inline=into_lanes, forceinline=True)
def inv_len(a):
    """``(|a|, 1/|a|)``, the inverse 0 below ``EPS`` (where ``vnormalize`` gives the zero vector)."""
    n = np.sqrt(vdot(a, a))
    return n, const(1.0, n) / n if n >= const(EPS, n) else const(0.0, n)


@njit(cache=True, inline=into_lanes, forceinline=True)
def norm_dx(a, da):
    """``a / |a|`` and its time derivative (``da`` its rate); zero at the zero vector."""
    _, inv = inv_len(a)
    u = vscale(a, inv)
    return u, vscale(vsub(da, vscale(u, vdot(u, da))), inv)


@njit(cache=True)
def vlen(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(cache=True)
def vexp(a):
    return (math.exp(a[0]), math.exp(a[1]), math.exp(a[2]))


@njit(cache=True)
def vlog(a):
    return (math.log(a[0]), math.log(a[1]), math.log(a[2]))


@njit(cache=True)
def vnormalize(a):
    """Unit vector along ``a``; the zero vector maps to zero (never NaN)."""
    n = vlen(a)
    if n < EPS:
        return (0.0, 0.0, 0.0)
    return vscale(a, 1.0 / n)


@njit(cache=True)
def vnormalize_dx(a, da):
    """Time derivative of ``a/|a|`` given ``da = d a/dt``; zero at the zero vector."""
    return norm_dx(a, da)[1]


@njit(cache=True)
def vlen_dx(a, da):
    """Time derivative of ``|a|``."""
    n = vlen(a)
    if n < EPS:
        return 0.0
    return vdot(a, da) / n


@njit(cache=True)
def vcross_dx(a, da, b, db):
    """Time derivative of ``a x b``."""
    return vadd(vcross(da, b), vcross(a, db))


@njit(cache=True)
def vdot_dx(a, da, b, db):
    """Time derivative of ``a . b``."""
    return vdot(da, b) + vdot(a, db)


# ---------------------------------------------------------------- quaternions


# error_model numpy: a zero ``soft`` divides to nan in the band, which is then not kept (no check, no branch).
@njit(cache=True, error_model="numpy", inline=into_lanes, forceinline=True)
def smooth_max0(x, dx, soft, dsoft):
    """``max(x, 0)`` made C2 over ``soft`` either side of 0, and its rate (``soft`` may move at ``dsoft``).

    In the band the slope is the smoothstep of ``u = (x + soft) / (2 soft)``, so the value is
    ``2 soft (u^3 - u^4 / 2)``: value, slope and curvature match at both ends.  Every piece is
    computed and one kept (the lane IK runs it).
    """
    zero, one, two = const(0.0, x), const(1.0, x), const(2.0, x)
    u = min(max((x + soft) / (two * soft), zero), one)
    du = (dx + dsoft) / (two * soft) - u * dsoft / soft
    g = u * u * u * (one - const(0.5, x) * u)
    band, dband = two * soft * g, two * dsoft * g + two * soft * u * u * (const(3.0, x) - two * u) * du
    return (x if x >= soft else (zero if x <= -soft else band)), (dx if x >= soft else (zero if x <= -soft else dband))


@njit(cache=True, inline=into_lanes, forceinline=True)
def qmul(a, b):
    """Hamilton product ``a * b`` (w-first)."""
    return (
        madd(-a[3], b[3], madd(-a[2], b[2], madd(-a[1], b[1], a[0] * b[0]))),
        madd(-a[3], b[2], madd(a[2], b[3], madd(a[1], b[0], a[0] * b[1]))),
        madd(a[3], b[1], madd(a[2], b[0], madd(-a[1], b[3], a[0] * b[2]))),
        madd(a[3], b[0], madd(-a[2], b[1], madd(a[1], b[2], a[0] * b[3]))),
    )


@njit(cache=True, inline=into_lanes, forceinline=True)
def qinv(q):
    """Inverse of a unit quaternion (its conjugate)."""
    return (q[0], -q[1], -q[2], -q[3])


@njit(cache=True, inline=into_lanes, forceinline=True)
def qadd(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


@njit(cache=True, inline=into_lanes, forceinline=True)
def qscale(q, s):
    return (q[0] * s, q[1] * s, q[2] * s, q[3] * s)


@njit(cache=True, inline=into_lanes, forceinline=True)
def qdot(a, b):
    return madd(a[3], b[3], madd(a[2], b[2], madd(a[1], b[1], a[0] * b[0])))


@njit(cache=True)
def qnormalize(q):
    """Unit quaternion along ``q``; the zero quaternion maps to identity."""
    n = math.sqrt(qdot(q, q))
    if n < EPS:
        return (1.0, 0.0, 0.0, 0.0)
    return qscale(q, 1.0 / n)


@njit(cache=True)
def qnormalize_dx(q, dq):
    """Time derivative of ``q/|q|`` given ``dq``."""
    n = math.sqrt(qdot(q, q))
    if n < EPS:
        return (0.0, 0.0, 0.0, 0.0)
    u = qscale(q, 1.0 / n)
    d = qdot(u, dq)
    return (
        (dq[0] - u[0] * d) / n,
        (dq[1] - u[1] * d) / n,
        (dq[2] - u[2] * d) / n,
        (dq[3] - u[3] * d) / n,
    )


@njit(cache=True, inline=into_lanes, forceinline=True)
def qabs(q):
    """The same rotation with ``w >= 0`` (the short way round)."""
    return qscale(q, const(-1.0, q[0]) if q[0] < const(0.0, q[0]) else const(1.0, q[0]))


@njit(cache=True, inline=into_lanes, forceinline=True)
def qsub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3])


@njit(cache=True, inline=into_lanes, forceinline=True)
def qrot(q, v):
    """Rotate vec3 ``v`` by unit quaternion ``q``."""
    u = (q[1], q[2], q[3])
    t = vscale(vcross(u, v), const(2.0, q[0]))
    c = vcross(u, t)
    return (madd(t[0], q[0], v[0]) + c[0], madd(t[1], q[0], v[1]) + c[1], madd(t[2], q[0], v[2]) + c[2])


@njit(cache=True)
def qinv_rot(q, v):
    """Rotate vec3 ``v`` by the inverse of unit quaternion ``q``."""
    return qrot(qinv(q), v)


@njit(cache=True)
def qexp(v):
    """Quaternion exponential of the pure quaternion ``(0, v)``."""
    half = vlen(v)
    if half < 1e-4:
        # Taylor terms keep sin(x)/x exact to float64 near zero.
        s = 1.0 - half * half / 6.0
        c = 1.0 - half * half / 2.0
        return qnormalize((c, v[0] * s, v[1] * s, v[2] * s))
    s = math.sin(half) / half
    return (math.cos(half), v[0] * s, v[1] * s, v[2] * s)


# Taylor coefficients of cos(x) and sin(x) / x in z = x^2 to degree 11: below 2e-17 for x <= pi/2; in float32 to
# degree 7, below 1e-9 there (under float32 rounding).
COS_SERIES = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(12))
SINC_SERIES = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(12))
COS_SERIES32 = tuple(np.float32(c) for c in COS_SERIES[:8])
SINC_SERIES32 = tuple(np.float32(c) for c in SINC_SERIES[:8])


@njit(inline="always")
def poly(z, c):
    """``sum c[k] z^k`` over the tuple ``c``, by Horner (in the type of ``z`` and ``c``)."""
    acc = c[len(c) - 1]
    for k in range(len(c) - 2, -1, -1):
        acc = madd(acc, z, c[k])
    return acc


@njit(cache=True, inline=into_lanes, forceinline=True)
def qexp_series(v):
    """``qexp(v)`` for ``|v| <= pi/2`` from Taylor series in ``|v|^2``: no sqrt, sin or cos (exact to the float type).

    All the terms whatever ``|v|``: a branch to fewer terms for short ``v`` keeps a loop
    over joints (``nodes.sample.linear_rotation_rows``) or lanes from packing, which saves more.
    """
    z = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
    s, c = poly(z, pick(z, SINC_SERIES, SINC_SERIES32)), poly(z, pick(z, COS_SERIES, COS_SERIES32))
    return (c, v[0] * s, v[1] * s, v[2] * s)


@njit(cache=True)
def qlog(q):
    """Quaternion logarithm of unit ``q`` as a vec3 (half angle times axis), via atan2."""
    s = math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    half = math.atan2(s, q[0])
    if s < 1e-12:
        k = 1.0 / q[0] if abs(q[0]) > 1e-12 else 0.0
    else:
        k = half / s
    return (q[1] * k, q[2] * k, q[3] * k)


@njit(cache=True)
def from_scaled_angle_axis(v):
    """Quaternion of rotation vector ``v`` (angle times axis, radians)."""
    return qexp(vscale(v, 0.5))


@njit(cache=True)
def to_scaled_angle_axis(q):
    """Rotation vector (angle times axis, radians) of unit ``q``, the short way round."""
    return vscale(qlog(qabs(q)), 2.0)


@njit(cache=True)
def sa_dx_to_ang(v, dv):
    """Angular velocity (rad/s, left-multiplying) of ``from_scaled_angle_axis(v)`` as ``v`` moves at ``dv``.

    The left Jacobian of the exponential map: ``dv + a v x dv + b v x (v x dv)`` with
    ``a = (1 - cos|v|)/|v|^2``, ``b = (|v| - sin|v|)/|v|^3``.
    """
    t2 = vdot(v, v)
    if t2 < 1e-6:
        a = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
        b = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    else:
        t = math.sqrt(t2)
        a = (1.0 - math.cos(t)) / t2
        b = (t - math.sin(t)) / (t2 * t)
    c = vcross(v, dv)
    return vadd(vadd(dv, vscale(c, a)), vscale(vcross(v, c), b))


@njit(cache=True)
def body_step(vel, ang, dt):
    """Displacement (m, in the body's frame at the start) and turn (quaternion) of a body moving ``dt`` s at
    constant body-frame velocity ``vel`` (m/s) and angular velocity ``ang`` (rad/s): ``J(ang dt) vel dt``, ``exp(ang dt)``.
    """
    turn = vscale(ang, dt)
    return vscale(sa_dx_to_ang(turn, vel), dt), from_scaled_angle_axis(turn)


@njit(cache=True, error_model="numpy")
def from_scaled_angle_axis_ang(v, dv):
    """``from_scaled_angle_axis(v)`` and ``sa_dx_to_ang(v, dv)`` (rad/s) together, from one sin and one cos.

    With ``h = |v|/2``: ``q = (cos h, v sin h / |v|)``, and the left Jacobian's
    ``a = 2 sin^2 h / |v|^2``, ``b = (|v| - 2 sin h cos h) / |v|^3``; Taylor series near zero.
    """
    return from_scaled_angle_axis_ang_sq(v, vdot(v, v), dv)


@njit(cache=True, error_model="numpy")
def from_scaled_angle_axis_ang_sq(v, t2, dv):
    """``from_scaled_angle_axis_ang(v, dv)`` given ``t2 = |v|^2`` (rad^2), for callers that already know it."""
    if t2 < 1e-6:
        h2 = 0.25 * t2
        c = 1.0 - h2 / 2.0 + h2 * h2 / 24.0
        s = 0.5 - h2 / 12.0 + h2 * h2 / 240.0  # sin(h) / (2 h)
        a = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
        b = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    else:
        t = math.sqrt(t2)
        sh = math.sin(0.5 * t)
        c = math.cos(0.5 * t)
        s = sh / t
        a = 2.0 * sh * sh / t2
        b = (t - 2.0 * sh * c) / (t2 * t)
    x = vcross(v, dv)
    ang = vadd(vadd(dv, vscale(x, a)), vscale(vcross(v, x), b))
    return (c, v[0] * s, v[1] * s, v[2] * s), ang


@njit(cache=True, error_model="numpy")
def to_scaled_angle_axis_dx(q, ang):
    """Rotation vector ``v`` of ``q`` (short way), ``|v|^2`` and ``dv/dt`` while ``q`` turns at left-multiplying ``ang``.

    ``ang_to_sa_dx(to_scaled_angle_axis(q), ang)`` with one atan2: its ``cot(|v|/2)`` is ``w / |xyz|``.
    """
    q = qabs(q)
    s = math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    h = math.atan2(s, q[0])
    if s < 1e-12:
        k = 2.0 / q[0] if abs(q[0]) > 1e-12 else 0.0
    else:
        k = 2.0 * h / s
    v = (q[1] * k, q[2] * k, q[3] * k)
    t2 = vdot(v, v)
    if t2 < 1e-6:
        c = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
    else:
        c = (1.0 - h * q[0] / s) / t2
    x = vcross(v, ang)
    return v, t2, vadd(vsub(ang, vscale(x, 0.5)), vscale(vcross(v, x), c))


@njit(cache=True)
def ang_to_sa_dx(v, ang):
    """Rate ``dv/dt`` of a rotation vector ``v`` (|v| < 2 pi) whose rotation turns at left-multiplying ``ang``.

    The inverse left Jacobian: ``ang - v x ang / 2 + c v x (v x ang)`` with
    ``c = (1 - (|v|/2) cot(|v|/2)) / |v|^2``.
    """
    t2 = vdot(v, v)
    if t2 < 1e-6:
        c = 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0
    else:
        h = 0.5 * math.sqrt(t2)
        c = (1.0 - h * math.cos(h) / math.sin(h)) / t2
    x = vcross(v, ang)
    return vadd(vsub(ang, vscale(x, 0.5)), vscale(vcross(v, x), c))


# ---------------------------------------------------------------- weighted rotations (blends, IK and look-at weights)


@njit(cache=True, error_model="numpy")
def weighted_rot(d, dd, w, dw):
    """``exp(w d)`` and its angular velocity (rad/s) for rotation vector ``d`` (rad) moving at ``dd``, weight ``w`` at ``dw`` (1/s)."""
    return weighted_rot_sq(d, vdot(d, d), dd, w, dw)


@njit(cache=True, error_model="numpy")
def weighted_rot_sq(d, d2, dd, w, dw):
    """``weighted_rot`` given ``d2 = |d|^2`` (rad^2); one sin and one cos for the exp map and its Jacobian."""
    r = vscale(d, w)
    dr = vscale(dd, w)
    if dw != 0.0:
        dr = vadd(vscale(d, dw), dr)
    return from_scaled_angle_axis_ang_sq(r, d2 * (w * w), dr)


@njit(cache=True)
def weighted_rotation(rot, ang, w, dw):
    """Quaternion ``rot`` (turning at ``ang`` rad/s) scaled towards identity by weight ``w`` (rate ``dw`` 1/s), with its angular velocity (rad/s).

    ``exp(w log rot)`` through ``to_scaled_angle_axis``/``sa_dx_to_ang`` (``weighted_rot``
    takes the rotation vector instead and uses the one-sin-one-cos exp map).
    At full weight not changing (the usual IK case) that is ``rot`` (the short way) and ``ang``.
    """
    if w == 1.0 and dw == 0.0:
        return qabs(rot), ang
    v = to_scaled_angle_axis(rot)
    dv = ang_to_sa_dx(v, ang)
    vw = vscale(v, w)
    return from_scaled_angle_axis(vw), sa_dx_to_ang(vw, vadd(vscale(v, dw), vscale(dv, w)))


@njit(cache=True)
def qslerp(a, b, t):
    """Shortest-path spherical interpolation from ``a`` (t=0) to ``b`` (t=1)."""
    d = qmul(b, qinv(a))
    return qmul(from_scaled_angle_axis(vscale(to_scaled_angle_axis(d), t)), a)


@njit(cache=True, inline=into_lanes, forceinline=True)
def opposite(w, c, lab):
    """Whether ``a``, ``b`` (``w = a.b + |a||b|``, ``c = a x b``, ``lab = |a||b|``) are opposite to rounding.

    Only then is ``(w, c)`` no rotation: ``w`` carries an error of about 2e-16 ``lab``, which
    turns the axis by that over ``|c|``; below ``|c| = 1e-8 lab`` the vectors are within 1e-8 rad
    of opposite, and any axis normal to ``a`` is as close.  In float32 (error 6e-8 ``lab``):
    below ``|c| = 1.4e-5 lab``.
    """
    return w < lab and vdot(c, c) < const(pick(w, 1e-16, 2e-10), w) * lab * lab


@njit(cache=True)
def qbetween(a, b):
    """Shortest rotation taking the direction of ``a`` to the direction of ``b`` (identity if either is zero)."""
    z = (const(0.0, a[0]), const(0.0, a[0]), const(0.0, a[0]))
    return qbetween_ang(a, z, b, z)[0]


@njit(cache=True, inline=into_lanes, forceinline=True)
def qdx_to_ang(q, dq):
    """Angular velocity (rad/s, left-multiplying) of unit ``q`` moving at ``dq``."""
    d = qmul(dq, qinv(q))
    two = const(2.0, d[1])
    return (two * d[1], two * d[2], two * d[3])


@njit(cache=True, inline=into_lanes, forceinline=True)
def ang_to_qdx(q, ang):
    """Time derivative of unit ``q`` rotating at left-multiplying angular velocity ``ang``."""
    return qscale(qmul((const(0.0, ang[0]), ang[0], ang[1], ang[2]), q), const(0.5, q[0]))


@njit(cache=True)
def qbetween_dx(a, da, b, db):
    """Angular velocity (rad/s) of ``qbetween(a, b)`` as ``a`` and ``b`` move."""
    return qbetween_ang(a, da, b, db)[1]


# error_model numpy: the cases not kept may divide by zero (no check, no branch: the lane IK runs it).
@njit(cache=True, error_model="numpy", inline=into_lanes, forceinline=True)
def qbetween_ang(a, da, b, db):
    """``qbetween(a, b)`` and its angular velocity (rad/s) as ``a``, ``b`` move at ``da``, ``db``: every case computed, one kept."""
    one, zero = const(1.0, a[0]), const(0.0, a[0])
    identity = (one, zero, zero, zero)
    la, ia = inv_len(a)
    lb, ib = inv_len(b)
    c = vcross(a, b)
    w = vdot(a, b) + la * lb
    raw = (w, c[0], c[1], c[2])
    n = np.sqrt(qdot(raw, raw))
    inv = one / n if n >= const(EPS, n) else zero
    q = qscale(raw, inv)
    # The rate of the normalization of raw: (draw - q (q . draw)) / |raw|.
    draw = vcross_dx(a, da, b, db)
    draw = (vdot_dx(a, da, b, db) + vdot(a, da) * ia * lb + la * (vdot(b, db) * ib), draw[0], draw[1], draw[2])
    ang = qdx_to_ang(q, qscale(qsub(draw, qscale(q, qdot(q, draw))), inv))
    # Opposite: a half turn about a x X, or a x Y when a is along X.
    ax = vcross(a, (one, zero, zero))
    ax = sel3(vdot(ax, ax) < const(1e-12, w) * (one + vdot(a, a)), vcross(a, (zero, one, zero)), ax)
    _, iax = inv_len(ax)
    half = sel4(iax == zero, identity, (zero, ax[0] * iax, ax[1] * iax, ax[2] * iax))
    none = la < const(EPS, la) or lb < const(EPS, lb)  # no direction to turn towards
    opp = opposite(w, c, la * lb)
    q = sel4(none, identity, sel4(opp, half, sel4(n < const(EPS, n), identity, q)))
    return q, sel3(none or opp, (zero, zero, zero), ang)


# ---------------------------------------------------------------- kineforms


@njit(cache=True, inline=into_lanes, forceinline=True)
def kmul(a, b):
    """Compose moving frames: ``b`` expressed in ``a`` -> ``b`` in ``a``'s parent.

    Includes the leverage term (ang x r) and the scale-expansion term (svl * s * p).
    """
    ap, ar, asc, av, aw, asv = a
    bp, br, bsc, bv, bw, bsv = b
    r = qrot(ar, vmul(asc, bp))
    pos = vadd(ap, r)
    rot = qmul(ar, br)
    scl = vmul(asc, bsc)
    dp = vadd(vmul(vmul(asv, asc), bp), vmul(asc, bv))
    vel = vadd(vadd(av, vcross(aw, r)), qrot(ar, dp))
    ang = vadd(aw, qrot(ar, bw))
    svl = vadd(asv, bsv)
    return (pos, rot, scl, vel, ang, svl)


@njit(cache=True)
def unit_frame(a):
    """Whether kineform ``a`` has scale exactly 1 and scale rate exactly 0 (``kmul_unit`` applies)."""
    asc, asv = a[2], a[5]
    return asc[0] == 1.0 and asc[1] == 1.0 and asc[2] == 1.0 and asv[0] == 0.0 and asv[1] == 0.0 and asv[2] == 0.0


@njit(inline="always")  # inlined into FK's joint loop: as a call it measured no faster than kmul
def kmul_unit(a, b):
    """``kmul(a, b)`` for ``a`` of unit scale not growing (``unit_frame``): the scale terms are exact no-ops, skipped."""
    ap, ar, asc, av, aw, asv = a
    bp, br, bsc, bv, bw, bsv = b
    r = qrot(ar, bp)
    vel = vadd(vadd(av, vcross(aw, r)), qrot(ar, bv))
    return (vadd(ap, r), qmul(ar, br), bsc, vel, vadd(aw, qrot(ar, bw)), bsv)


@njit(cache=True)
def kdiv(a, c):
    """The ``b`` with ``kmul(a, b) == c``: ``c`` re-expressed in moving frame ``a``.

    Exact at any (non-uniform) scale.
    """
    ap, ar, asc, av, aw, asv = a
    cp, cr, csc, cv, cw, csv = c
    r = vsub(cp, ap)
    pos = vdiv(qinv_rot(ar, r), asc)
    rot = qmul(qinv(ar), cr)
    scl = vdiv(csc, asc)
    rel = qinv_rot(ar, vsub(vsub(cv, av), vcross(aw, r)))
    vel = vsub(vdiv(rel, asc), vmul(asv, pos))
    ang = qinv_rot(ar, vsub(cw, aw))
    svl = vsub(csv, asv)
    return (pos, rot, scl, vel, ang, svl)


@njit(cache=True)
def kidentity():
    z = (0.0, 0.0, 0.0)
    return (z, (1.0, 0.0, 0.0, 0.0), (1.0, 1.0, 1.0), z, z, z)


@njit(cache=True)
def kinv(a):
    """The ``b`` with ``kmul(a, b)`` the identity frame at rest."""
    return kdiv(a, kidentity())


# ---------------------------------------------------------------- array edges


# np.float64, not float(): numba's float() keeps a float32 element float32, which would
# compile every helper for float32 tuples and lose the float64 arithmetic.


@njit(cache=True)
def load3(arr, i):
    return (np.float64(arr[i, 0]), np.float64(arr[i, 1]), np.float64(arr[i, 2]))


@njit(cache=True)
def load4(arr, i):
    return (np.float64(arr[i, 0]), np.float64(arr[i, 1]), np.float64(arr[i, 2]), np.float64(arr[i, 3]))


@njit(cache=True)
def store3(arr, i, v):
    arr[i, 0] = v[0]
    arr[i, 1] = v[1]
    arr[i, 2] = v[2]


@njit(cache=True)
def store4(arr, i, q):
    arr[i, 0] = q[0]
    arr[i, 1] = q[1]
    arr[i, 2] = q[2]
    arr[i, 3] = q[3]


@njit(cache=True)
def load_kform(pose, i):
    """Kineform of row ``i`` of a pose tuple ``(pos, rot, scl, vel, ang, svl)``."""
    return (
        load3(pose[0], i),
        load4(pose[1], i),
        load3(pose[2], i),
        load3(pose[3], i),
        load3(pose[4], i),
        load3(pose[5], i),
    )


@njit(cache=True)
def store_kform(pose, i, k):
    """Write kineform ``k`` into row ``i`` of a pose tuple."""
    store3(pose[0], i, k[0])
    store4(pose[1], i, k[1])
    store3(pose[2], i, k[2])
    store3(pose[3], i, k[3])
    store3(pose[4], i, k[4])
    store3(pose[5], i, k[5])


# ---------------------------------------------------------------- blending two kineforms


@njit(cache=True, error_model="numpy")
def is_one(v):
    """Whether vec3 ``v`` is exactly (1, 1, 1): a unit scale, whose log is 0."""
    return v[0] == 1.0 and v[1] == 1.0 and v[2] == 1.0


SLERP_SERIES_MIN = 0.8  # cos of the half angle above which slerp's weights come from their series (about 74 degrees apart)
SERIES_TOL = 1e-9  # a series stops at a term this small: its tail is then below float32 rounding of the weights (~6e-8)
SERIES_INV = np.array([0.0] + [1.0 / (k * (2 * k + 1)) for k in range(1, 64)])  # 1 / (k (2k + 1)): no divide per term


@njit(cache=True, error_model="numpy")
def slerp_weights(x, t0, t1):
    """``f(t) = sin(t h) / sin h`` at ``t0`` and ``t1``, their derivatives in ``x = cos h``, and ``h / sin h``.

    With ``y = x - 1``: ``f(t) = sum_k c_k y^k``, ``c_0 = t``, ``c_k = c_{k-1} (t^2 - k^2) / (k (2k + 1))``;
    ``h / sin h = df/dt`` at ``t = 0``.  For ``t`` in [0, 1] and ``x`` near 1 no trigonometry is needed.
    """
    y = x - 1.0
    p0 = t0 * (t0 * t0 - 1.0) / 3.0  # c_k y^(k-1), k = 1
    p1 = t1 * (t1 * t1 - 1.0) / 3.0
    g = -1.0 / 3.0
    f0, f1, df0, df1, h_sin = t0 + p0 * y, t1 + p1 * y, p0, p1, 1.0 + g * y
    k, n = 1.0, 1
    while abs(k * p0) + abs(k * p1) + abs(g) > SERIES_TOL and n < 63:
        k, n = k + 1.0, n + 1
        r = y * SERIES_INV[n]
        p0 *= (t0 * t0 - k * k) * r
        p1 *= (t1 * t1 - k * k) * r
        g *= -k * k * r
        f0, f1, df0, df1, h_sin = f0 + p0 * y, f1 + p1 * y, df0 + k * p0, df1 + k * p1, h_sin + g * y
    return f0, f1, df0, df1, h_sin


@njit(cache=True, error_model="numpy")
def blend_rot(ar, aw, br, bw, alpha, alpha_vel):
    """Rotation ``exp(α log(br ar^-1)) ar`` (shortest arc) and its angular velocity (rad/s), both ends turning.

    Near rotations (the common case) use slerp's form ``f(1-α) ar + f(α) br`` and its time derivative
    (weights from ``slerp_weights``; the weight's rate adds ``α' log(br ar^-1)``); far ones the exp map.
    """
    x = qdot(ar, br)
    if x < 0.0:
        br, x = qscale(br, -1.0), -x
    if x < SLERP_SERIES_MIN:
        return blend_rot_log(ar, aw, br, bw, alpha, alpha_vel)
    f0, f1, df0, df1, h_sin = slerp_weights(x, 1.0 - alpha, alpha)
    if alpha_vel != 0.0:
        return slerp_sum(ar, aw, br, bw, f0, f1, df0, df1, h_sin, alpha_vel)
    return slerp_sum_still(ar, aw, br, bw, f0, f1, df0, df1)


@njit(cache=True, inline=into_lanes, forceinline=True)
def slerp_sum_still(ar, aw, br, bw, f0, f1, d0, d1):
    """Slerp's sum form ``f0 ar + f1 br`` and its angular velocity (rad/s) at a weight that does not move, from
    the weights ``f0 = f(1 - α)``, ``f1 = f(α)`` and their derivatives ``d0, d1`` in ``cos h``; ``br`` on ``ar``'s
    side.  Generic over the float type, no branch: the lane tiles' blend too (``lanes_ops.blend_rot_lanes``)."""
    dar, dbr = ang_to_qdx(ar, aw), ang_to_qdx(br, bw)
    dx = qdot(dar, br) + qdot(ar, dbr)  # d(cos h)/dt
    rot = qadd(qscale(ar, f0), qscale(br, f1))
    drot = qadd(qadd(qscale(ar, d0 * dx), qscale(br, d1 * dx)), qadd(qscale(dar, f0), qscale(dbr, f1)))
    return rot, qdx_to_ang(rot, drot)


@njit(cache=True, inline=into_lanes, forceinline=True)
def slerp_sum(ar, aw, br, bw, f0, f1, d0, d1, h_sin, alpha_vel):
    """``slerp_sum_still`` with the weight moving at ``alpha_vel`` (1/s); ``h_sin = h / sin h``."""
    rot, ang = slerp_sum_still(ar, aw, br, bw, f0, f1, d0, d1)
    # The weight's rate turns the result along log(br ar^-1) = 2 (h / sin h) vec(br ar^-1).
    delta = qmul(br, qinv(ar))
    return rot, vadd(ang, vscale((delta[1], delta[2], delta[3]), const(2.0, h_sin) * h_sin * alpha_vel))


@njit(cache=True, error_model="numpy")
def blend_rot_log(ar, aw, br, bw, alpha, alpha_vel):
    """``blend_rot`` through the exp map: one atan2, one sin and one cos."""
    delta = qmul(br, qinv(ar))
    d, d2, dd = to_scaled_angle_axis_dx(delta, vsub(bw, qrot(delta, aw)))
    e, e_ang = weighted_rot_sq(d, d2, dd, alpha, alpha_vel)
    return qmul(e, ar), vadd(e_ang, qrot(e, aw))


@njit(cache=True, error_model="numpy")
def blend_kform(a, b, alpha, alpha_vel):
    """Kineform between ``a`` (α=0) and ``b`` (α=1), with the velocity of the changing weight."""
    ap, ar, asc, av, aw, asv = a
    bp, br, bsc, bv, bw, bsv = b
    pos = vlerp(ap, bp, alpha)
    vel = vlerp(av, bv, alpha)
    if alpha_vel != 0.0:
        vel = vadd(vel, vscale(vsub(bp, ap), alpha_vel))
    rot, ang = blend_rot(ar, aw, br, bw, alpha, alpha_vel)
    # Scale: lerp in log space; unit scales (the common case) have log 0 and stay 1.
    svl = vlerp(asv, bsv, alpha)
    if is_one(asc) and is_one(bsc):
        return (pos, rot, asc, vel, ang, svl)
    la = vlog(asc)
    lb = vlog(bsc)
    scl = vexp(vlerp(la, lb, alpha))
    if alpha_vel != 0.0:
        svl = vadd(svl, vscale(vsub(lb, la), alpha_vel))
    return (pos, rot, scl, vel, ang, svl)
