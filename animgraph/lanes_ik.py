"""Two-bone IK over one lane tile: ``ik.apply_two_bone`` at full weight in float32, exact velocities.

The solve is ``ik.two_bone_solve`` written once per character with selects instead of
branches (every case is computed, the valid one kept), so the lane loop can be packed:

- the soft reach clamp's ``exp(-v)`` (``v >= 0``) is ``p(v/16)^16`` with ``p`` the Taylor
  series of ``exp(-x)`` to degree 11 (relative error < 2e-6 for ``v <= 20``; beyond, the
  term it scales is below float32 resolution of the reach), since libm's exp would keep
  the loop scalar;
- the root's swing (``ik.root_swing``): two shortest arcs;
- ``qbetween``'s opposite-vector case (a half turn about an axis normal to ``a``) and the
  zero-length guards are selects.

Weight is 1 with rate 0 (the ozz chain's); ``weighted_rotation`` is then the identity.
The chain's globals come from tile passes like ``fk_tile`` along the path from the root to
the end joint only, into scratch (never read and written in the same lane loop).
"""

import numpy as np
from numba import njit

from animgraph.lanes import ANG, JOINT, LANES, ROT, copy_joint, kmul_joint, load_lane, qmul, qrot, \
    store_lane3, store_lane4, vadd, vcross, vscale
from animgraph.lanes import fk_tile
from animgraph.lanes_ops import HALF, KEY, ONE, TWO, ZERO, blend_tile, qconj, qdot, qscale, sample_linear_tile, vsub

F32 = np.float32
EPS = F32(1e-8)  # maths.EPS
TINY = F32(1e-9)  # ik.TINY
REACH_SOFT, REACH_MAX, REACH_MIN, HINT = F32(0.97), F32(0.999), F32(1e-3), F32(1e-2)  # ik's constants
FOLD_SOFT = F32(1.0 / 3.0)  # ik's
BEND_TURN = F32(1.0)  # ik's
EXPM = tuple(F32((-1.0) ** k / np.prod(np.arange(1, k + 1, dtype=np.float64))) for k in range(12))  # exp(-x)
SOLVED = 14  # per lane: q_hip (4), w_hip (3), q_knee (4), w_knee (3)


# ---------------------------------------------------------------- one character, float32, branch-free


@njit(inline="always")
def vdot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(inline="always")
def sel3(c, a, b):
    return (a[0] if c else b[0], a[1] if c else b[1], a[2] if c else b[2])


@njit(inline="always")
def sel4(c, a, b):
    return (a[0] if c else b[0], a[1] if c else b[1], a[2] if c else b[2], a[3] if c else b[3])


@njit(inline="always")
def inv_len(a):
    """``(|a|, 1/|a|)``, the inverse 0 below EPS (as maths' guards give zero results there)."""
    n = np.sqrt(vdot(a, a))
    return n, ONE / n if n >= EPS else ZERO


@njit(inline="always")
def norm_dx(a, da):
    """``a/|a|`` and its time derivative; zero at the zero vector (``vnormalize``, ``vnormalize_dx``)."""
    _, inv = inv_len(a)
    u = vscale(a, inv)
    return u, vscale(vsub(da, vscale(u, vdot(u, da))), inv)


@njit(inline="always")
def exp_neg(v):
    """``exp(-v)`` for ``v >= 0`` (0 beyond 20): Taylor of ``exp(-v/16)``, squared four times."""
    x = min(v, F32(20.0)) * F32(0.0625)
    c = EXPM
    p = c[11]
    for k in range(10, -1, -1):
        p = p * x + c[k]
    p = p * p
    p = p * p
    p = p * p
    p = p * p
    return p if v < F32(20.0) else ZERO


@njit(inline="always")
def clamp_reach(x, dx, lo, dlo, full, dfull):
    """``ik.clamp_reach``: every piece computed, one kept."""
    s, ds = FOLD_SOFT * lo, FOLD_SOFT * dlo
    v = max(lo + s - x, ZERO) / s
    dv = (dlo + ds - dx) / s - v * ds / s
    g = exp_neg(v + HALF * v * v)
    floor, dfloor = lo + s * g, dlo + ds * g - s * (ONE + v) * g * dv
    x, dx = (x, dx) if x >= lo + s else (floor, dfloor)
    k = REACH_SOFT * full
    s = (REACH_MAX - REACH_SOFT) * full
    ds = (REACH_MAX - REACH_SOFT) * dfull
    u = max(x - k, ZERO) / s
    du = (dx - REACH_SOFT * dfull) / s - u * ds / s
    f = exp_neg(u + HALF * u * u)
    soft, dsoft = REACH_MAX * full - s * f, REACH_MAX * dfull - ds * f + s * (ONE + u) * f * du
    r = x if x <= k else soft
    dr = dx if x <= k else dsoft
    return r, dr


@njit(inline="always")
def qbetween_dx(a, da, b, db):
    """``maths.qbetween`` and ``maths.qbetween_dx``: shortest rotation from ``a``'s direction to ``b``'s, its rate."""
    la, ia = inv_len(a)
    lb, ib = inv_len(b)
    c = vcross(a, b)
    w = vdot(a, b) + la * lb
    zero = la < EPS or lb < EPS
    opposite = w < F32(1e-10) * la * lb
    # Generic: q = raw / |raw|, raw = (w, a x b); dq the derivative of the normalization.
    dw = vdot(da, b) + vdot(a, db) + vdot(a, da) * ia * lb + la * vdot(b, db) * ib
    dc = vadd(vcross(da, b), vcross(a, db))
    n = np.sqrt(w * w + vdot(c, c))
    inv = ONE / n if n >= EPS else ZERO
    q = (w * inv, c[0] * inv, c[1] * inv, c[2] * inv)
    dq = (dw * inv, dc[0] * inv, dc[1] * inv, dc[2] * inv)
    dq = vsub4(dq, qscale(q, qdot(q, dq)))
    d = qmul(dq, qconj(q))
    ang = (TWO * d[1], TWO * d[2], TWO * d[3])
    # Opposite: a half turn about a x X, or a x Y when a is along X.
    ax, ay = (ZERO, a[2], -a[1]), (-a[2], ZERO, a[0])
    axis = sel3(vdot(ax, ax) < F32(1e-12) * (ONE + vdot(a, a)), ay, ax)
    _, iax = inv_len(axis)
    half = (ZERO, axis[0] * iax, axis[1] * iax, axis[2] * iax)
    half = sel4(iax == ZERO, (ONE, ZERO, ZERO, ZERO), half)
    identity = (ONE, ZERO, ZERO, ZERO)
    q = sel4(zero, identity, sel4(opposite, half, q))
    ang = sel3(zero or opposite, (ZERO, ZERO, ZERO), ang)
    return q, ang


@njit(inline="always")
def vsub4(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3])


@njit(inline="always")
def smooth_max0(x, dx, soft, dsoft):
    """``maths.smooth_max0``: all three pieces computed, one kept."""
    s = max(soft, TINY)
    u = min(max((x + s) / (TWO * s), ZERO), ONE)
    du = (dx + dsoft) / (TWO * s) - u * dsoft / s
    g = u * u * u * (ONE - HALF * u)
    band, dband = TWO * s * g, TWO * dsoft * g + TWO * s * u * u * (F32(3.0) - TWO * u) * du
    value = x if x >= soft else (ZERO if x <= -soft else band)
    rate = dx if x >= soft else (ZERO if x <= -soft else dband)
    return value, rate


@njit(inline="always")
def bend_direction(ab, vab, bc, vbc, hinge, dhinge):
    """``ik.bend_direction``: unit bend direction normal to the upper bone and its rate (zero when none)."""
    u, du = norm_dx(ab, vab)
    along = vdot(bc, u)
    dalong = vdot(vbc, u) + vdot(bc, du)
    perp = vsub(bc, vscale(u, along))
    dperp = vsub(vsub(vbc, vscale(u, dalong)), vscale(du, along))
    lbc, ibc = inv_len(bc)
    dlbc = vdot(bc, vbc) * ibc
    hx = vcross(hinge, u)
    dhx = vadd(vcross(dhinge, u), vcross(hinge, du))
    m = vadd(perp, vscale(hx, HINT * lbc))
    dm = vadd(dperp, vadd(vscale(hx, HINT * dlbc), vscale(dhx, HINT * lbc)))
    # Never against the hinge: the part along hinge x u kept >= 0 (n is 0 when there is no such direction).
    n, dn = norm_dx(hx, dhx)
    a, da = vdot(perp, n), vdot(dperp, n) + vdot(perp, dn)
    kept, dkept = smooth_max0(a, da, HINT * lbc, HINT * dlbc)
    m = vadd(m, vscale(n, kept - a))
    dm = vadd(dm, vadd(vscale(n, dkept - da), vscale(dn, kept - a)))
    mu, dmu = norm_dx(m, dm)
    small = np.sqrt(vdot(m, m)) < TINY * lbc
    z = (ZERO, ZERO, ZERO)
    return sel3(small, z, mu), sel3(small, z, dmu)


@njit(inline="always")
def root_swing(e, de, t, dt, h, dh):
    """``ik.root_swing``: two shortest arcs through a half-way direction leaning to the bend side."""
    e1, de1 = norm_dx(e, de)
    t1, dt1 = norm_dx(t, dt)
    s, ds = HALF * (ONE - vdot(e1, t1)), -HALF * (vdot(de1, t1) + vdot(e1, dt1))
    n, dn = vcross(h, e1), vadd(vcross(dh, e1), vcross(h, de1))
    m = vadd(vadd(e1, t1), vscale(n, BEND_TURN * s))
    dm = vadd(vadd(de1, dt1), vscale(vadd(vscale(n, ds), vscale(dn, s)), BEND_TURN))
    q1, w1 = qbetween_dx(e1, de1, m, dm)
    q2, w2 = qbetween_dx(m, dm, t1, dt1)
    q = qmul(q2, q1)
    return qscale(q, ONE if q[0] >= ZERO else F32(-1.0)), vadd(w2, qrot(q2, w1))


@njit(inline="always")
def two_bone_solve(a, b, c, tp, tv, hinge):
    """``ik.two_bone_solve`` at weight 1: (q_hip, w_hip, q_knee, w_knee), identities where it is undefined."""
    identity, z = (ONE, ZERO, ZERO, ZERO), (ZERO, ZERO, ZERO)
    ab, vab = vsub(b[0], a[0]), vsub(b[3], a[3])
    bc, vbc = vsub(c[0], b[0]), vsub(c[3], b[3])
    at, vat = vsub(tp, a[0]), vsub(tv, a[3])
    lab, iab = inv_len(ab)
    lbc, ibc = inv_len(bc)
    dlab, dlbc = vdot(ab, vab) * iab, vdot(bc, vbc) * ibc
    full, dfull = lab + lbc, dlab + dlbc
    lo = abs(lab - lbc) + REACH_MIN * full
    dlo = (ONE if lab - lbc >= ZERO else F32(-1.0)) * (dlab - dlbc) + REACH_MIN * dfull
    lat, iat = inv_len(at)
    reach, dreach = clamp_reach(lat, vdot(at, vat) * iat, lo, dlo, full, dfull)

    # Interior angle at the knee that gives the reach (law of cosines).
    num = lab * lab + lbc * lbc - reach * reach
    dnum = TWO * (lab * dlab + lbc * dlbc - reach * dreach)
    den = max(TWO * lab * lbc, TINY)  # guarded: a zero-length bone is selected away below
    dden = TWO * (dlab * lbc + lab * dlbc)
    cos1 = min(ONE, max(F32(-1.0), num / den))
    dcos1 = (dnum * den - num * dden) / (den * den)
    sin1 = np.sqrt(max(ZERO, ONE - cos1 * cos1))
    dsin1 = -cos1 * dcos1 / sin1 if sin1 > F32(1e-12) else ZERO

    # Knee: turn the lower bone onto the direction with that angle, in the bend plane.
    h = qrot(b[1], hinge)
    m, dm = bend_direction(ab, vab, bc, vbc, h, vcross(b[4], h))
    u, du = norm_dx(ab, vab)
    dirn = vadd(vscale(u, -cos1), vscale(m, sin1))
    shin = vscale(dirn, lbc)
    dshin = vadd(vscale(dirn, dlbc),
                 vscale(vadd(vadd(vscale(u, -dcos1), vscale(du, -cos1)), vadd(vscale(m, dsin1), vscale(dm, sin1))),
                        lbc))
    qk, wk = qbetween_dx(bc, vbc, shin, dshin)
    bent = vdot(m, m) > ZERO
    q_knee, w_knee = sel4(bent, qk, identity), sel3(bent, wk, z)

    # End after the knee turn, then the root swing that takes it onto the target line.
    r = qrot(q_knee, bc)
    c1 = vadd(b[0], r)
    vc1 = vadd(vadd(b[3], vcross(w_knee, r)), qrot(q_knee, vbc))
    ac1, vac1 = vsub(c1, a[0]), vsub(vc1, a[3])
    qs, ws = root_swing(ac1, vac1, at, vat, h, vcross(b[4], h))
    swing = not (lat < TINY * full or np.sqrt(vdot(ac1, ac1)) < TINY * full)
    q_hip, w_hip = sel4(swing, qs, identity), sel3(swing, ws, z)
    ok = lab >= TINY and lbc >= TINY
    return sel4(ok, q_hip, identity), sel3(ok, w_hip, z), sel4(ok, q_knee, identity), sel3(ok, w_knee, z)


@njit(inline="always")
def local_under(par, rot, ang):
    """Local rotation and angular velocity under global parent ``par`` giving global ``rot``/``ang`` (``kdiv``)."""
    inv = qconj(par[1])
    return qmul(inv, rot), qrot(inv, vsub(ang, par[4]))


# ---------------------------------------------------------------- the kernel over a tile


@njit(inline="always")
def path_globals(local, path, first, last, glob, parent):
    """Globals of ``path[first..last-1]`` into ``glob`` joints ``first+1..last`` (joint 0: the identity parent)."""
    for i in range(first, last):
        copy_joint(glob, i, parent, 0)
        kmul_joint(parent, 0, local, path[i], glob, i + 1)


# error_model numpy: a float divide by zero gives inf (then selected away), not a check and a branch.
@njit(cache=True, error_model="numpy")
def two_bone_ik_tile(local, path, ia, ib, ic, hinge, tpos, tvel, out, glob, parent, solved):
    """``ops.two_bone_ik`` (weight 1) of every lane of ``local`` into ``out`` (a separate buffer, or ``local``).

    ``path``: the joints from a root down to the end joint (``ik_path``), ``ia``/``ib``/``ic``
    the positions of root, mid and end in it; ``hinge`` (3,) float32; ``tpos``/``tvel``
    lane-minor float32 (3 * LANES) targets in model space.  Scratch: ``glob`` float32
    ((len(path) + 1) * JOINT) with joint 0 the identity (``ik_scratch``), ``parent`` (JOINT),
    ``solved`` (SOLVED * LANES).
    """
    if local.ctypes.data != out.ctypes.data:  # in place, only the chain's two joints are written
        for i in range(out.shape[0]):
            out[i] = local[i]
    hinge = (F32(hinge[0]), F32(hinge[1]), F32(hinge[2]))
    path_globals(local, path, 0, ic + 1, glob, parent)
    ja, jb = path[ia], path[ib]
    at_a, at_b = ja * JOINT, jb * JOINT
    # The solve writes only ``solved``: one output buffer keeps LLVM's overlap checks few enough to pack the loop.
    for lane in range(LANES):
        a = load_lane(glob, ia + 1, lane)
        b = load_lane(glob, ib + 1, lane)
        c = load_lane(glob, ic + 1, lane)
        tp = (tpos[lane], tpos[LANES + lane], tpos[2 * LANES + lane])
        tv = (tvel[lane], tvel[LANES + lane], tvel[2 * LANES + lane])
        q_hip, w_hip, q_knee, w_knee = two_bone_solve(a, b, c, tp, tv, hinge)
        store_lane4(solved, lane, q_hip)
        store_lane3(solved, 4 * LANES + lane, w_hip)
        store_lane4(solved, 7 * LANES + lane, q_knee)
        store_lane3(solved, 11 * LANES + lane, w_knee)
    for lane in range(LANES):
        pa = load_lane(glob, ia, lane)
        a = load_lane(glob, ia + 1, lane)
        q_hip = (solved[lane], solved[LANES + lane], solved[2 * LANES + lane], solved[3 * LANES + lane])
        w_hip = (solved[4 * LANES + lane], solved[5 * LANES + lane], solved[6 * LANES + lane])
        rot, ang = local_under(pa, qmul(q_hip, a[1]), vadd(w_hip, qrot(q_hip, a[4])))
        store_lane4(out, at_a + ROT * LANES + lane, rot)
        store_lane3(out, at_a + ANG * LANES + lane, ang)
    # The mid joint's parent after the hip turn, from the stored (float32) hip, as ik does.
    path_globals(out, path, ia, ib, glob, parent)
    for lane in range(LANES):
        pb = load_lane(glob, ib, lane)
        b = load_lane(glob, ib + 1, lane)
        q_hip = (solved[lane], solved[LANES + lane], solved[2 * LANES + lane], solved[3 * LANES + lane])
        w_hip = (solved[4 * LANES + lane], solved[5 * LANES + lane], solved[6 * LANES + lane])
        q_knee = (solved[7 * LANES + lane], solved[8 * LANES + lane], solved[9 * LANES + lane],
                  solved[10 * LANES + lane])
        w_knee = (solved[11 * LANES + lane], solved[12 * LANES + lane], solved[13 * LANES + lane])
        rot_b = qmul(q_hip, qmul(q_knee, b[1]))
        ang_b = vadd(w_hip, qrot(q_hip, vadd(w_knee, qrot(q_knee, b[4]))))
        rot, ang = local_under(pb, rot_b, ang_b)
        store_lane4(out, at_b + ROT * LANES + lane, rot)
        store_lane3(out, at_b + ANG * LANES + lane, ang)


# ---------------------------------------------------------------- setup and batch wrapper


def ik_path(parents, root, mid, end):
    """(path int64 from a root down to ``end``, positions of root, mid and end in it)."""
    chain = [end]
    while parents[chain[-1]] >= 0:
        chain.append(int(parents[chain[-1]]))
    path = np.array(chain[::-1], np.int64)
    where = {int(j): i for i, j in enumerate(path)}
    if root not in where or mid not in where or not where[root] < where[mid] < where[end]:
        raise ValueError(f"joints {root}, {mid}, {end} are not a chain of ancestors")
    return path, where[root], where[mid], where[end]


def ik_scratch(path):
    """(glob, parent, solved) scratch for ``two_bone_ik_tile``: glob's joint 0 is the identity kineform."""
    glob = np.zeros((len(path) + 1) * JOINT, np.float32)
    glob[(ROT * LANES):(ROT * LANES + LANES)] = 1.0  # rot w
    glob[(7 * LANES):(10 * LANES)] = 1.0  # scl (lanes.SCL = 7)
    return glob, np.empty(JOINT, np.float32), np.empty(SOLVED * LANES, np.float32)


def lane_targets(values, batch):
    """Lane-minor (tiles, 3 * LANES) float32 from per-character (batch, 3) or one (3,) target, padded with the last."""
    from animgraph.lanes import tile_count

    v = np.broadcast_to(np.asarray(values, np.float64), (batch, 3))
    v = np.concatenate([v, np.repeat(v[-1:], tile_count(batch) * LANES - batch, axis=0)])
    return np.ascontiguousarray(v.reshape(-1, LANES, 3).transpose(0, 2, 1), np.float32).reshape(-1, 3 * LANES)


def two_bone_ik(local, parents, joints, target_pos, target_vel=(0.0, 0.0, 0.0), hinge=(1.0, 0.0, 0.0)):
    """``ops.two_bone_ik(local, parents, joints, target_pos, target_vel, hinge=hinge)`` through tiles (indices)."""
    from animgraph.lanes import pack_tiles, unpack_tiles

    batch = local.batch[0]
    path, ia, ib, ic = ik_path(np.asarray(parents), *joints)
    hinge = np.asarray(hinge, np.float64)
    hinge = (hinge / np.linalg.norm(hinge)).astype(np.float32)
    tiles = pack_tiles(local)
    out = np.empty_like(tiles)
    tp, tv = lane_targets(target_pos, batch), lane_targets(target_vel, batch)
    glob, parent, solved = ik_scratch(path)
    for t in range(tiles.shape[0]):
        two_bone_ik_tile(tiles[t], path, ia, ib, ic, hinge, tp[t], tv[t], out[t], glob, parent, solved)
    return unpack_tiles(out, batch)


# ---------------------------------------------------------------- the full ozz chain on tiles


@njit(cache=True)
def chain_ik_tiles(tab_a, frames_a, dt_a, unit_a, tab_b, frames_b, dt_b, unit_b, loop, times, rate, coef, alpha,
                   alpha_vel, parents, left, right, hinge, targets, out):
    """``lanes_ops.chain_tiles`` with two-bone IK on both legs between the blend and FK.

    ``left``/``right``: ``ik_leg`` arrays (path, then root, mid, end positions); ``targets``
    float32 (4, 3 * LANES): left pos, left vel, right pos, right vel, lane-minor (the same for every tile).
    """
    size = out.shape[1]
    ta, tb = np.empty(size, np.float32), np.empty(size, np.float32)
    mixed, legged = np.empty(size, np.float32), np.empty(size, np.float32)
    rows, sv, parent = np.empty(LANES, np.int64), np.empty(2 * LANES, np.float32), np.empty(JOINT, np.float32)
    keys = np.empty(KEY * LANES, np.float32)
    solved = np.empty(SOLVED * LANES, np.float32)
    glob = np.zeros((max(left.shape[0], right.shape[0]) - 3 + 1) * JOINT, np.float32)
    for i in range(LANES):  # joint 0 of glob: the identity kineform (rot w and scale 1)
        glob[ROT * LANES + i] = ONE
        for c in range(3):
            glob[(7 + c) * LANES + i] = ONE
    for t in range(out.shape[0]):
        lane_times = times[t * LANES:(t + 1) * LANES]
        sample_linear_tile(tab_a, frames_a, dt_a, loop, unit_a, lane_times, rate, ta, rows, sv, keys)
        sample_linear_tile(tab_b, frames_b, dt_b, loop, unit_b, lane_times, rate, tb, rows, sv, keys)
        blend_tile(ta, tb, coef, alpha, alpha_vel, mixed)
        n = left.shape[0] - 3
        two_bone_ik_tile(mixed, left[:n], left[n], left[n + 1], left[n + 2], hinge, targets[0], targets[1], legged,
                         glob, parent, solved)
        n = right.shape[0] - 3
        two_bone_ik_tile(legged, right[:n], right[n], right[n + 1], right[n + 2], hinge, targets[2], targets[3], mixed,
                         glob, parent, solved)
        fk_tile(mixed, parents, out[t], parent)


def ik_leg(parents, joints):
    """One int64 array: ``ik_path``'s path, then the positions of root, mid and end in it (``chain_ik_tiles``)."""
    path, ia, ib, ic = ik_path(parents, *joints)
    return np.concatenate([path, [ia, ib, ic]]).astype(np.int64)
