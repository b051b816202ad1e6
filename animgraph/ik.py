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
"""

import math

from numba import njit

from .kernels import joint_global, joint_global_below, set_rotation_under
from .maths import (
    qbetween,
    qbetween_dx,
    qabs,
    qmul,
    qrot,
    smooth_max0,
    vadd,
    vcross,
    vcross_dx,
    vdot,
    vdot_dx,
    vlen,
    vlen_dx,
    vnormalize,
    vnormalize_dx,
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

# ---------------------------------------------------------------- the solver


@njit(cache=True)
def soft_floor(x, dx, lo, dlo, s, ds):
    """``x`` (rate ``dx``) kept above ``lo`` softly (C2) over a band ``s`` (rates ``dlo``, ``ds``): exact from ``lo + s`` up.

    Below ``k = lo + s`` the value is ``lo + s exp(-u - u^2/2)``, ``u = (k - x)/s``: value,
    slope and curvature match at ``k``, and it tends to ``lo``.
    """
    if x >= lo + s:
        return x, dx
    u = (lo + s - x) / s
    du = (dlo + ds - dx) / s - u * ds / s
    f = math.exp(-u - 0.5 * u * u)
    return lo + s * f, dlo + ds * f - s * (1.0 + u) * f * du


@njit(cache=True)
def clamp_reach(x, dx, lo, dlo, full, dfull):
    """Reach ``x`` (rate ``dx``) kept within ``[lo, REACH_MAX full]``, softly (C2): from ``(1 + FOLD_SOFT) lo`` down, from ``REACH_SOFT full`` up.

    Below, ``soft_floor`` over ``FOLD_SOFT lo``: the knee's angle changes without bound per
    metre of reach near the fold, so a target moving fast into it is slowed over a band
    (a hard clamp there stopped the knee dead in a step).  Beyond ``k = REACH_SOFT full``
    the reach is ``m - s exp(-u - u^2/2)``, ``u = (x - k)/s``, ``s = m - k``: value, slope and
    curvature match at ``k``, and it tends to ``m``.
    """
    x, dx = soft_floor(x, dx, lo, dlo, FOLD_SOFT * lo, FOLD_SOFT * dlo)
    k = REACH_SOFT * full
    if x <= k:
        return x, dx
    s = (REACH_MAX - REACH_SOFT) * full
    ds = (REACH_MAX - REACH_SOFT) * dfull
    u = (x - k) / s
    du = (dx - REACH_SOFT * dfull) / s - u * ds / s
    f = math.exp(-u - 0.5 * u * u)
    return REACH_MAX * full - s * f, REACH_MAX * dfull - ds * f + s * (1.0 + u) * f * du


@njit(cache=True)
def bend_direction(ab, vab, bc, vbc, hinge, dhinge):
    """Unit direction (normal to the upper bone) the end bends towards, with its rate.

    The lower bone's component normal to the upper bone, plus ``HINT`` times the one the
    hinge axis gives (``hinge x ab``): the current bend plane whenever the chain is bent
    the hinge's way, the hinge's plane when it is straight or bent against it, continuous
    in between.
    """
    u, du = vnormalize(ab), vnormalize_dx(ab, vab)
    along, dalong = vdot(bc, u), vdot_dx(bc, vbc, u, du)
    perp = vsub(bc, vscale(u, along))
    dperp = vsub(vsub(vbc, vscale(u, dalong)), vscale(du, along))
    lbc, dlbc = vlen(bc), vlen_dx(bc, vbc)
    hx, dhx = vcross(hinge, u), vcross_dx(hinge, dhinge, u, du)
    m = vadd(perp, vscale(hx, HINT * lbc))
    dm = vadd(dperp, vadd(vscale(hx, HINT * dlbc), vscale(dhx, HINT * lbc)))
    if vlen(hx) > TINY:
        # A knee never bends against its hinge: the bone's part along the hinge's bend
        # direction is kept >= 0 (C2 over HINT lbc), so a chain the animation carries through
        # straight, or a little over, keeps bending the hinge's way instead of flipping.
        n, dn = vnormalize(hx), vnormalize_dx(hx, dhx)
        a, da = vdot(perp, n), vdot_dx(perp, dperp, n, dn)
        if a < HINT * lbc:
            kept, dkept = smooth_max0(a, da, HINT * lbc, HINT * dlbc)
            m = vadd(m, vscale(n, kept - a))
            dm = vadd(dm, vadd(vscale(n, dkept - da), vscale(dn, kept - a)))
    if vlen(m) < TINY * lbc:
        return (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    return vnormalize(m), vnormalize_dx(m, dm)


@njit(cache=True)
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
    e1, de1 = vnormalize(e), vnormalize_dx(e, de)
    t1, dt1 = vnormalize(t), vnormalize_dx(t, dt)
    s, ds = 0.5 * (1.0 - vdot(e1, t1)), -0.5 * vdot_dx(e1, de1, t1, dt1)
    n, dn = vcross(h, e1), vcross_dx(h, dh, e1, de1)
    m = vadd(vadd(e1, t1), vscale(n, BEND_TURN * s))
    dm = vadd(vadd(de1, dt1), vscale(vadd(vscale(n, ds), vscale(dn, s)), BEND_TURN))
    q1, w1 = qbetween(e1, m), qbetween_dx(e1, de1, m, dm)
    q2, w2 = qbetween(m, t1), qbetween_dx(m, dm, t1, dt1)
    return qabs(qmul(q2, q1)), vadd(w2, qrot(q2, w1))


@njit(cache=True)
def two_bone_solve(a, b, c, t, hinge, w, dw):
    """Global rotation deltas (hip, knee) with angular velocities taking end ``c`` to target ``t``.

    ``a``, ``b``, ``c`` are the global kineforms of root, mid and end; ``t`` is the
    target ``(pos, vel)``; ``hinge`` the mid joint's hinge axis in its own frame.
    Returns ``(q_hip, ang_hip, q_knee, ang_knee)``: the new global rotations are
    ``q_hip * a.rot`` and ``q_hip * q_knee * b.rot``.
    """
    ident = (1.0, 0.0, 0.0, 0.0)
    zero = (0.0, 0.0, 0.0)
    ab, vab = vsub(b[0], a[0]), vsub(b[3], a[3])
    bc, vbc = vsub(c[0], b[0]), vsub(c[3], b[3])
    at, vat = vsub(t[0], a[0]), vsub(t[1], a[3])
    lab, dlab = vlen(ab), vlen_dx(ab, vab)
    lbc, dlbc = vlen(bc), vlen_dx(bc, vbc)
    if lab < TINY or lbc < TINY:
        return ident, zero, ident, zero
    full, dfull = lab + lbc, dlab + dlbc
    lo = abs(lab - lbc) + REACH_MIN * full
    dlo = math.copysign(1.0, lab - lbc) * (dlab - dlbc) + REACH_MIN * dfull
    reach, dreach = clamp_reach(vlen(at), vlen_dx(at, vat), lo, dlo, full, dfull)

    # Interior angle at the knee that gives the reach (law of cosines); never 0 or pi.
    num = lab * lab + lbc * lbc - reach * reach
    dnum = 2.0 * (lab * dlab + lbc * dlbc - reach * dreach)
    den = 2.0 * lab * lbc
    dden = 2.0 * (dlab * lbc + lab * dlbc)
    cos1 = min(1.0, max(-1.0, num / den))
    dcos1 = (dnum * den - num * dden) / (den * den)
    sin1 = math.sqrt(max(0.0, 1.0 - cos1 * cos1))
    dsin1 = -cos1 * dcos1 / sin1 if sin1 > 1e-12 else 0.0

    # Knee: turn the lower bone onto the direction with that angle, in the bend plane.
    h = qrot(b[1], hinge)
    m, dm = bend_direction(ab, vab, bc, vbc, h, vcross(b[4], h))
    u, du = vnormalize(ab), vnormalize_dx(ab, vab)
    shin = vscale(vadd(vscale(u, -cos1), vscale(m, sin1)), lbc)
    dshin = vadd(
        vscale(vadd(vscale(u, -cos1), vscale(m, sin1)), dlbc),
        vscale(vadd(vadd(vscale(u, -dcos1), vscale(du, -cos1)), vadd(vscale(m, dsin1), vscale(dm, sin1))), lbc),
    )
    q_knee, w_knee = ident, zero
    if vlen(m) > 0.0:
        q_knee, w_knee = weighted_rotation(qbetween(bc, shin), qbetween_dx(bc, vbc, shin, dshin), w, dw)

    # End after the knee turn, then the root swing that takes it onto the target line.
    r = qrot(q_knee, bc)
    c1 = vadd(b[0], r)
    vc1 = vadd(vadd(b[3], vcross(w_knee, r)), qrot(q_knee, vbc))
    ac1, vac1 = vsub(c1, a[0]), vsub(vc1, a[3])
    if vlen(at) < TINY * full or vlen(ac1) < TINY * full:
        return ident, zero, q_knee, w_knee  # target at the root: no direction to swing to
    q_sw, w_sw = root_swing(ac1, vac1, at, vat, h, vcross(b[4], h))
    q_hip, w_hip = weighted_rotation(q_sw, w_sw, w, dw)
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
