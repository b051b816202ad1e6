"""Two-bone IK solve (used by the ``two_bone_ik`` and ``foot_lock`` nodes): turn a root and a mid joint so the end reaches a moving target.

Analytic, in model space, with the exact time derivative of every step (float64).
With root ``a``, mid ``b``, end ``c`` (global) and target ``t``:

- reach ``L = |t - a|`` is clamped softly (C2) to ``lo = |l_ab - l_bc| + 0.001 M`` below,
  over a band of ``lo / 3`` (the knee's angle per metre of reach grows without bound at the
  fold, so a target moving fast into it must be slowed over a distance), and above: exact
  from ``4/3 lo`` up to ``0.97 M``, never beyond ``0.999 M`` (``M = l_ab + l_bc``), so the
  chain never folds or straightens into its singular points and velocities stay smooth;
- the interior angle at the knee that gives ``L``: ``cos beta = (l_ab^2 + l_bc^2 - L^2) / (2 l_ab l_bc)``;
- the bend direction ``m``: the lower bone's part normal to the upper bone (the current
  knee's plane), plus 1 % of ``hinge x (b - a)`` so a straight chain (common in motion
  capture: locked knees) still has a plane, the mid joint's ``hinge`` axis; its part
  along ``hinge x (b - a)`` is kept from going negative (``smooth_max0``, over that 1 %),
  so a knee never bends against its hinge, and one the animation takes through straight
  does not flip;
- knee: ``qbetween(c - b, l_bc (-cos beta u + sin beta m))``, ``u`` along ``b - a``;
- root: the rotation taking the moved end ``c1 - a`` onto ``t - a`` (``root_swing``): two
  shortest arcs through a half-way direction leaning to the bend side, so a target on the
  far side of the root is a turn about the hinge, not a spin about an undefined axis.

Angular velocities come from the derivatives of these formulas (``vnormalize_dx``,
``qbetween_dx``, the exp map's Jacobians), so they equal a central finite difference.
A weight ``w`` (with rate ``dw``) scales both rotation vectors.  The deltas are applied
on the global side and brought back to the local rotations with ``kdiv``.
Degenerate cases are defined: a target at the root keeps the knee turn and skips the
swing; zero-length bones leave the pose as is.

The solve is generic over the float type and has no branches (every case computed, the
valid one kept): the lane tiles (``lanes_ik``, float32) call the same functions.  They are
``forceinline`` (LLVM always inlines them, so the lane loop still packs), not inlined by numba:
numba prepares an inlined body again at every call site, at a cost that grows with its size
(numba issue 8989), and ``lanes_ik.two_bone_ik_tile`` took 93 s to compile cold that way
against 21 s now.
"""

import numpy as np
from animgraph.jit import njit

from .kernels import joint_global, joint_global_below, set_rotation_under
from .maths import (
    const,
    exp_neg,
    inv_len,
    norm_dx,
    qabs,
    qbetween_ang,
    qmul,
    qrot,
    sel3,
    sel4,
    smooth_max0,
    vadd,
    vcross,
    vcross_dx,
    vdot,
    vdot_dx,
    vscale,
    vsub,
    weighted_rotation,
)

REACH_SOFT = 0.97  # fraction of full reach reached exactly
REACH_MAX = 0.999  # fraction of full reach never exceeded
REACH_MIN = 1e-3  # fold buffer, fraction of full reach beyond |l_ab - l_bc|
FOLD_SOFT = 1.0 / 3.0  # width of the soft band above the fold floor, a fraction of the floor
HINT = 1e-2  # weight of the hinge axis in the bend direction (relative to the lower bone's length)
TINY = 1e-9
BEND_TURN = 1.0  # how far the half-way direction of the root swing leans to the bend side (root_swing)

# error_model numpy throughout: the cases not kept may divide by zero (nan or inf, then not kept), with no check.


# ---------------------------------------------------------------- the solver


@njit(cache=True, error_model="numpy", forceinline=True)
def soft_floor(x, dx, lo, dlo, s, ds):
    """``x`` (rate ``dx``) kept above ``lo`` softly (C2) over a band ``s`` (rates ``dlo``, ``ds``): exact from ``lo + s`` up.

    Below ``k = lo + s`` the value is ``lo + s exp(-u - u^2/2)``, ``u = (k - x)/s``: value,
    slope and curvature match at ``k``, and it tends to ``lo``.
    """
    u = max(lo + s - x, const(0.0, x)) / s
    du = (dlo + ds - dx) / s - u * ds / s
    f = exp_neg(u + const(0.5, x) * u * u)
    keep = x >= lo + s
    return (x if keep else lo + s * f), (dx if keep else dlo + ds * f - s * (const(1.0, x) + u) * f * du)


@njit(cache=True, error_model="numpy", forceinline=True)
def clamp_reach(x, dx, lo, dlo, full, dfull):
    """Reach ``x`` (rate ``dx``) kept within ``[lo, REACH_MAX full]``, softly (C2): from ``(1 + FOLD_SOFT) lo`` down, from ``REACH_SOFT full`` up.

    Below, ``soft_floor`` over ``FOLD_SOFT lo``: the knee's angle changes without bound per
    metre of reach near the fold, so a target moving fast into it is slowed over a band
    (a hard clamp there stopped the knee dead in a step).  Beyond ``k = REACH_SOFT full``
    the reach is ``m - s exp(-u - u^2/2)``, ``u = (x - k)/s``, ``s = m - k``: value, slope and
    curvature match at ``k``, and it tends to ``m``.
    """
    x, dx = soft_floor(x, dx, lo, dlo, const(FOLD_SOFT, x) * lo, const(FOLD_SOFT, x) * dlo)
    k = const(REACH_SOFT, x) * full
    s = const(REACH_MAX - REACH_SOFT, x) * full
    ds = const(REACH_MAX - REACH_SOFT, x) * dfull
    u = max(x - k, const(0.0, x)) / s
    du = (dx - const(REACH_SOFT, x) * dfull) / s - u * ds / s
    f = exp_neg(u + const(0.5, x) * u * u)
    keep = x <= k
    soft = const(REACH_MAX, x) * full - s * f
    dsoft = const(REACH_MAX, x) * dfull - ds * f + s * (const(1.0, x) + u) * f * du
    return (x if keep else soft), (dx if keep else dsoft)


@njit(cache=True, error_model="numpy", forceinline=True)
def bend_direction(ab, vab, bc, vbc, hinge, dhinge):
    """Unit direction (normal to the upper bone) the end bends towards, with its rate.

    The lower bone's component normal to the upper bone, plus ``HINT`` times the one the
    hinge axis gives (``hinge x ab``): the current bend plane whenever the chain is bent
    the hinge's way, the hinge's plane when it is straight or bent against it, continuous
    in between.
    """
    u, du = norm_dx(ab, vab)
    along, dalong = vdot(bc, u), vdot_dx(bc, vbc, u, du)
    perp = vsub(bc, vscale(u, along))
    dperp = vsub(vsub(vbc, vscale(u, dalong)), vscale(du, along))
    lbc, ibc = inv_len(bc)
    dlbc = vdot(bc, vbc) * ibc
    hint = const(HINT, lbc)
    hx, dhx = vcross(hinge, u), vcross_dx(hinge, dhinge, u, du)
    m = vadd(perp, vscale(hx, hint * lbc))
    dm = vadd(dperp, vadd(vscale(hx, hint * dlbc), vscale(dhx, hint * lbc)))
    # A knee never bends against its hinge: the bone's part along the hinge's bend
    # direction is kept >= 0 (C2 over HINT lbc), so a chain the animation carries through
    # straight, or a little over, keeps bending the hinge's way instead of flipping
    # (``n`` is zero when ``hx`` has no direction, and ``kept = a`` above the band: m unchanged).
    n, dn = norm_dx(hx, dhx)
    a, da = vdot(perp, n), vdot_dx(perp, dperp, n, dn)
    kept, dkept = smooth_max0(a, da, hint * lbc, hint * dlbc)
    m = vadd(m, vscale(n, kept - a))
    dm = vadd(dm, vadd(vscale(n, dkept - da), vscale(dn, kept - a)))
    mu, dmu = norm_dx(m, dm)
    small = np.sqrt(vdot(m, m)) < const(TINY, lbc) * lbc
    z = (const(0.0, lbc), const(0.0, lbc), const(0.0, lbc))
    return sel3(small, z, mu), sel3(small, z, dmu)


@njit(cache=True, error_model="numpy", forceinline=True)
def root_swing(e, de, t, dt, h, dh):
    """Root rotation taking direction ``e`` onto ``t`` (model space), with its angular velocity (rad/s).

    Two shortest arcs through ``m = e1 + t1 + BEND_TURN (1 - e1.t1)/2 (h x e1)`` (unit ``e1``,
    ``t1``): ``R = arc(m, t) arc(e, m)``, turning at ``w2 + R2 w1``.  Near ``t = e`` it is the
    shortest arc; at ``t = -e`` (a knee turn that put the end on the far side of the root) a
    half turn about the hinge, not a spin about an undefined axis; in the hinge's plane it is
    the turn about the hinge.  Every choice of root rotation has a direction where it turns
    without limit (a hairy ball); this one has a single one, ``-(cos p e1 + sin p n)`` with
    ``n = h x e1`` the side the joint bends to and ``tan p = BEND_TURN (1 + cos p) / 2``
    (about 41 degrees from ``-e`` away from the bend side: behind and above a hanging arm,
    in front of and above a standing leg), where reach targets rarely go.
    """
    e1, de1 = norm_dx(e, de)
    t1, dt1 = norm_dx(t, dt)
    half = const(0.5, e1[0])
    s, ds = half * (const(1.0, e1[0]) - vdot(e1, t1)), -half * vdot_dx(e1, de1, t1, dt1)
    n, dn = vcross(h, e1), vcross_dx(h, dh, e1, de1)
    turn = const(BEND_TURN, s)
    m = vadd(vadd(e1, t1), vscale(n, turn * s))
    dm = vadd(vadd(de1, dt1), vscale(vadd(vscale(n, ds), vscale(dn, s)), turn))
    q1, w1 = qbetween_ang(e1, de1, m, dm)
    q2, w2 = qbetween_ang(m, dm, t1, dt1)
    return qabs(qmul(q2, q1)), vadd(w2, qrot(q2, w1))


@njit(cache=True, error_model="numpy", forceinline=True)
def knee_turn(a, b, c, tp, tv, hinge):
    """Global rotation delta of the knee (and its angular velocity, rad/s) that gives the end the target's reach.

    ``a``, ``b``, ``c`` are the global kineforms of root, mid and end; ``tp``/``tv`` the
    target's position and velocity; ``hinge`` the mid joint's hinge axis in its own frame.
    The identity when a bone has no length or the chain has no bend direction.
    """
    one, zero = const(1.0, a[0][0]), const(0.0, a[0][0])
    identity, z = (one, zero, zero, zero), (zero, zero, zero)
    ab, vab = vsub(b[0], a[0]), vsub(b[3], a[3])
    bc, vbc = vsub(c[0], b[0]), vsub(c[3], b[3])
    at, vat = vsub(tp, a[0]), vsub(tv, a[3])
    lab, iab = inv_len(ab)
    lbc, ibc = inv_len(bc)
    dlab, dlbc = vdot(ab, vab) * iab, vdot(bc, vbc) * ibc
    full, dfull = lab + lbc, dlab + dlbc
    lo = abs(lab - lbc) + const(REACH_MIN, lab) * full
    dlo = (one if lab - lbc >= zero else -one) * (dlab - dlbc) + const(REACH_MIN, lab) * dfull
    lat, iat = inv_len(at)
    reach, dreach = clamp_reach(lat, vdot(at, vat) * iat, lo, dlo, full, dfull)

    # Interior angle at the knee that gives the reach (law of cosines); never 0 or pi.
    two = const(2.0, lab)
    num = lab * lab + lbc * lbc - reach * reach
    dnum = two * (lab * dlab + lbc * dlbc - reach * dreach)
    den = two * lab * lbc
    dden = two * (dlab * lbc + lab * dlbc)
    cos1 = min(one, max(-one, num / den))
    dcos1 = (dnum * den - num * dden) / (den * den)
    sin1 = np.sqrt(max(zero, one - cos1 * cos1))
    dsin1 = -cos1 * dcos1 / sin1 if sin1 > const(1e-12, sin1) else zero

    # Turn the lower bone onto the direction with that angle, in the bend plane.
    h = qrot(b[1], hinge)
    m, dm = bend_direction(ab, vab, bc, vbc, h, vcross(b[4], h))
    u, du = norm_dx(ab, vab)
    shin = vscale(vadd(vscale(u, -cos1), vscale(m, sin1)), lbc)
    dshin = vadd(
        vscale(vadd(vscale(u, -cos1), vscale(m, sin1)), dlbc),
        vscale(vadd(vadd(vscale(u, -dcos1), vscale(du, -cos1)), vadd(vscale(m, dsin1), vscale(dm, sin1))), lbc),
    )
    q, w = qbetween_ang(bc, vbc, shin, dshin)
    turn = vdot(m, m) > zero and lab >= const(TINY, lab) and lbc >= const(TINY, lab)
    return sel4(turn, q, identity), sel3(turn, w, z)


@njit(cache=True, error_model="numpy", forceinline=True)
def hip_swing(a, b, c, tp, tv, hinge, q_knee, w_knee):
    """Global rotation delta of the root (and its angular velocity, rad/s) taking the end, after the knee's
    ``q_knee``/``w_knee``, onto the target line (``root_swing``); arguments as ``knee_turn``'s.

    The identity when a bone has no length or the target or the end is at the root.
    """
    one, zero = const(1.0, a[0][0]), const(0.0, a[0][0])
    ab, bc, vbc = vsub(b[0], a[0]), vsub(c[0], b[0]), vsub(c[3], b[3])
    at, vat = vsub(tp, a[0]), vsub(tv, a[3])
    lab, lbc, lat = np.sqrt(vdot(ab, ab)), np.sqrt(vdot(bc, bc)), np.sqrt(vdot(at, at))
    tiny = const(TINY, lab)
    full = lab + lbc
    h = qrot(b[1], hinge)
    r = qrot(q_knee, bc)
    c1 = vadd(b[0], r)
    vc1 = vadd(vadd(b[3], vcross(w_knee, r)), qrot(q_knee, vbc))
    ac1, vac1 = vsub(c1, a[0]), vsub(vc1, a[3])
    q, w = root_swing(ac1, vac1, at, vat, h, vcross(b[4], h))
    swing = not (lat < tiny * full or np.sqrt(vdot(ac1, ac1)) < tiny * full) and lab >= tiny and lbc >= tiny
    return sel4(swing, q, (one, zero, zero, zero)), sel3(swing, w, (zero, zero, zero))


@njit(cache=True)
def two_bone_solve(a, b, c, t, hinge, w, dw):
    """Global rotation deltas (hip, knee) with angular velocities taking end ``c`` to target ``t``.

    ``a``, ``b``, ``c`` are the global kineforms of root, mid and end; ``t`` is the
    target ``(pos, vel)``; ``hinge`` the mid joint's hinge axis in its own frame; weight
    ``w`` (rate ``dw``) on both.  Returns ``(q_hip, ang_hip, q_knee, ang_knee)``: the new
    global rotations are ``q_hip * a.rot`` and ``q_hip * q_knee * b.rot``.
    """
    q, ang = knee_turn(a, b, c, t[0], t[1], hinge)
    q_knee, w_knee = weighted_rotation(q, ang, w, dw)
    q, ang = hip_swing(a, b, c, t[0], t[1], hinge, q_knee, w_knee)
    q_hip, w_hip = weighted_rotation(q, ang, w, dw)
    return q_hip, w_hip, q_knee, w_knee


@njit(cache=True)
def apply_two_bone(pose, parents, ja, jb, jc, hinge, tpos, tvel, w, dw):
    """Solve two-bone IK in place on local pose tuple ``pose``: joints ``ja``, ``jb`` turn so ``jc`` reaches the target.

    Target position ``tpos`` (m) and velocity ``tvel`` (m/s) in model space; ``hinge`` the
    mid joint's hinge axis in its own frame; weight ``w`` with rate ``dw`` (1/s).
    One walk from the root to ``ja``'s parent; the chain's globals follow from it.
    """
    pa = joint_global(pose, parents, parents[ja])
    a = joint_global_below(pose, parents, parents[ja], pa, ja)
    b = joint_global_below(pose, parents, ja, a, jb)
    c = joint_global_below(pose, parents, jb, b, jc)
    q_hip, w_hip, q_knee, w_knee = two_bone_solve(a, b, c, (tpos, tvel), hinge, w, dw)
    set_rotation_under(pose, ja, pa, qmul(q_hip, a[1]), vadd(w_hip, qrot(q_hip, a[4])))
    # jb's parent after the hip turn, from the stored (float32) hip as a fresh walk would read it.
    a1 = joint_global_below(pose, parents, parents[ja], pa, ja)
    pb = joint_global_below(pose, parents, ja, a1, parents[jb])
    rot_b = qmul(q_hip, qmul(q_knee, b[1]))
    ang_b = vadd(w_hip, qrot(q_hip, vadd(w_knee, qrot(q_knee, b[4]))))
    set_rotation_under(pose, jb, pb, rot_b, ang_b)
