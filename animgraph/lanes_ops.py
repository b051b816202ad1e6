"""Lane versions of the ozz chain's ops (sample linear, blend) over one tile of ``lanes.LANES`` characters.

Same tile layout and rules as ``animgraph.lanes``: the maths is written once per character
(``animgraph.maths``, generic over the float type, or here when only the lanes use it) and
mapped over the lanes in float32; inputs, outputs and scratch are separate buffers; no
allocation and no branches inside a lane loop.

numba has no vector sin/cos/atan2 here (no SVML), and a libm call in a lane loop keeps it
scalar, so the rotation maths is polynomial:

- ``sample_linear_tile``: ``exp(s r1) q_k`` needs the quaternion exp of ``h = s r1 / 2``
  with ``|h| <= pi/2`` (``r1`` is the shortest rotation from key k to k+1): ``maths.qexp_series``,
  whose ``cos|h|`` and ``sin|h| / |h|`` are Taylor series in ``|h|^2`` (no sqrt, no divide, no
  branch near 0; in float32 8 terms, < 1e-9 at ``pi/2``, below float32 rounding).
- ``blend_tile``: ``maths.blend_rot``'s slerp sum form, whose weights ``sin(t h) / sin h``
  are power series in ``y = cos h - 1`` (``maths.slerp_weights``).  With the weight fixed
  per lane, their coefficients are computed once per op (``fill_coefficients``) and each lane
  runs a fixed-degree Horner instead of the scalar code's loop-until-small; degree
  ``SLERP_DEGREE`` keeps the weights' derivatives within 2e-6 even 180 degrees apart.
"""

import math

import numpy as np
from animgraph.jit import njit

from animgraph.lanes import ANG, fk_tile, JOINT, LANES, POS, ROT, SCL, SVL, VEL, load_lane, store_lane3, store_lane4
from animgraph.kernels import basis, keys, segment
from animgraph.maths import madd, poly, qdot, qexp_series, qmul, qscale, slerp_sum, slerp_sum_still, vadd, vcross, \
    vlerp, vscale, vsub
from animgraph.views import alive, borrowed

F32 = np.float32
ONE = F32(1.0)
ZERO = F32(0.0)
HALF = F32(0.5)

# Jacobian series (left Jacobian of exp, ``maths.from_scaled_angle_axis_ang``): (1 - cos t) / t^2 and
# (t - sin t) / t^3 in z = t^2, to degree 11: below float32 resolution for t <= 4 (cubic charts overshoot pi a little).
JAC_A = tuple(F32((-1.0) ** k / math.factorial(2 * k + 2)) for k in range(12))
JAC_B = tuple(F32((-1.0) ** k / math.factorial(2 * k + 3)) for k in range(12))

# Cubic gather columns per lane: positions of keys k-1..k+2, the key table row k (rotation, r1, its two
# chart tangents), log scales of keys k-1..k+2; then per-lane scalars: Hermite weights, their d/ds,
# 1/spans, velocity scale, first/last (1.0: a clamped clip's end segment, one-sided rotation tangents).
XM, X0, X1, X2, CQ, CR1, CM0, CM1, LM, L0, L1, L2 = 0, 3, 6, 9, 12, 16, 19, 22, 25, 28, 31, 34
CKEY = 37
SW, SDW, SSPAN, SV, SFIRST, SLAST = 0, 4, 8, 10, 11, 12
SCALARS = 13

# Lane key table columns, per key k and joint: pos_k, pos_k1 - pos_k, q_k, r1, log scl_k, log scl_k1 - log scl_k.
KP, KDP, KQ, KR1, KLS, KDLS = 0, 3, 6, 10, 13, 16
KEY = 19

SLERP_DEGREE = 20  # Horner degree of the slerp weight series (see the module docstring)
NCOEF = SLERP_DEGREE + 1
# slerp_coefficients rows: f(1-a), f(a), their d/dy, and h / sin h (for the weight's rate).
C_F0, C_F1, C_D0, C_D1, C_HS = 0, NCOEF, 2 * NCOEF, 3 * NCOEF, 4 * NCOEF


# ---------------------------------------------------------------- setup (once per clip / weight)


def lane_key_table(clip, ktab):
    """(flat float32 key table (F * J * KEY), whether every scale is exactly 1) of ``clip`` for ``sample_linear_tile``.

    ``ktab``: the sample node's key table of the clip (``nodes.sample.key_table(clip)[0]``):
    its rotations and ``r1`` (normalized, shortest path, float32) and log scales.  The
    differences to key k+1 wrap to the first key, as a looping clip does (a clamped clip
    never samples a segment starting at its last key).
    """
    frames, joints = clip.frames, len(clip.skeleton)
    nxt = np.roll(np.arange(frames), -1)
    pos = np.asarray(clip.pos, np.float64)
    ls = ktab[..., 13:16].astype(np.float64)  # the key table's log-scale columns
    out = np.empty((frames, joints, KEY), np.float32)
    out[..., KP:KP + 3] = pos
    out[..., KDP:KDP + 3] = pos[nxt] - pos
    out[..., KQ:KQ + 4] = ktab[..., 0:4]  # rotation
    out[..., KR1:KR1 + 3] = ktab[..., 4:7]  # r1
    out[..., KLS:KLS + 3] = ls
    out[..., KDLS:KDLS + 3] = ls[nxt] - ls
    return out.reshape(-1), bool(np.all(clip.scl == 1.0))


@njit(cache=True)
def fill_coefficients(alpha, coef, lane):
    """Lane ``lane`` of lane-minor ``coef`` (5 * NCOEF * LANES float32): power series of slerp's weights at ``alpha``.

    In ``y = cos h - 1``: ``f(t) = sin(t h) / sin h = sum c_k y^k`` with ``c_0 = t``,
    ``c_k = c_(k-1) (t^2 - k^2) / (k (2k+1))`` (``maths.slerp_weights``) for ``t = 1 - alpha``
    and ``alpha``, their derivatives in ``y``, and ``h / sin h``.  Float64, rounded once.
    """
    for row in range(C_D0, C_D1 + NCOEF):
        coef[row * LANES + lane] = 0.0
    for row, t in ((C_F0, 1.0 - alpha), (C_F1, alpha)):
        c = t
        coef[row * LANES + lane] = c
        for k in range(1, NCOEF):
            c *= (t * t - k * k) / (k * (2 * k + 1))
            coef[(row + k) * LANES + lane] = c
            coef[(row + 2 * NCOEF + k - 1) * LANES + lane] = k * c  # d/dy: row C_D0 / C_D1, degree one less
    g = 1.0
    coef[C_HS * LANES + lane] = g
    for k in range(1, NCOEF):
        g *= -k / (2 * k + 1)
        coef[(C_HS + k) * LANES + lane] = g


def slerp_coefficients(alpha):
    """Lane-minor float32 (5 * NCOEF * LANES,) slerp weight coefficients (``fill_coefficients``): one weight
    for every lane, or one per lane (an array of LANES)."""
    alphas = np.broadcast_to(np.asarray(alpha, np.float64), (LANES,))
    out = np.empty(5 * NCOEF * LANES, np.float32)
    for lane in range(LANES):
        fill_coefficients(float(alphas[lane]), out, lane)
    return out


def lane_weights(alpha, alpha_vel=0.0):
    """(alpha, alpha_vel) as float32 arrays of LANES, from one value each or one per lane."""
    return (np.ascontiguousarray(np.broadcast_to(np.asarray(alpha, np.float32), (LANES,))),
            np.ascontiguousarray(np.broadcast_to(np.asarray(alpha_vel, np.float32), (LANES,))))


# ---------------------------------------------------------------- one character, float32


@njit(inline="always")
def horner(coef, at, lane, y):
    """``sum coef[(at + k) * LANES + lane] y^k`` for k <= SLERP_DEGREE (a constant trip count: LLVM unrolls it)."""
    acc = coef[(at + SLERP_DEGREE) * LANES + lane]
    for k in range(SLERP_DEGREE - 1, -1, -1):
        acc = madd(acc, y, coef[(at + k) * LANES + lane])
    return acc


@njit(inline="always")
def shortest(ar, br):
    """``br`` or ``-br``, whichever is nearer ``ar`` (a select, no branch), and ``y = cos h - 1`` between them."""
    x = qdot(ar, br)
    sign = np.float32(-1.0) if x < ZERO else ONE
    return qscale(br, sign), x * sign - ONE


@njit(inline="always")
def blend_rot_lanes(ar, aw, br, bw, coef, lane, alpha_vel):
    """``maths.blend_rot`` in float32: slerp's sum form and its exact time derivative, any angle apart."""
    br, y = shortest(ar, br)
    f0, f1 = horner(coef, C_F0, lane, y), horner(coef, C_F1, lane, y)
    d0, d1 = horner(coef, C_D0, lane, y), horner(coef, C_D1, lane, y)
    return slerp_sum(ar, aw, br, bw, f0, f1, d0, d1, horner(coef, C_HS, lane, y), alpha_vel)


# One character, rotations near each other (``y >= NEAR_Y``: at most 51.7 degrees apart): the same series
# cut at degree 8, its coefficients a tuple computed once per weight.  Each term is at most 0.05 of the one
# before (``|y| (k^2 - t^2) / (k (2k + 1)) <= 0.1 / 2``): the weights, their derivatives and h / sin h stay
# within 1e-9 of their closed forms (``tests/test_node_blend.py``).
NEAR_Y = np.float32(-0.1)
NEAR_TOP = np.float32(1e-3)  # above it the inputs are not unit quaternions: the float64 kernel decides


@njit(inline="always")
def slerp_series(t, like):
    """``(c_0 .. c_8)`` of ``sin(t h) / sin h = sum c_k y^k`` (``fill_coefficients``), ``t`` in [0, 1]: computed in
    float64 and rounded once to the element type of array ``like``."""
    ft = like.dtype.type
    q = t * t
    c1 = t * (q - 1.0) / 3.0
    c2 = c1 * (q - 4.0) / 10.0
    c3 = c2 * (q - 9.0) / 21.0
    c4 = c3 * (q - 16.0) / 36.0
    c5 = c4 * (q - 25.0) / 55.0
    c6 = c5 * (q - 36.0) / 78.0
    c7 = c6 * (q - 49.0) / 105.0
    c8 = c7 * (q - 64.0) / 136.0
    return (ft(t), ft(c1), ft(c2), ft(c3), ft(c4), ft(c5), ft(c6), ft(c7), ft(c8))


@njit(inline="always")
def derivative9(c):
    """Coefficients of d/dy of ``maths.poly(y, c)`` for 9 coefficients (degree 7, padded with zeros to 9), in float64:
    ``k c_k`` is exact there, and ``poly`` indexes a tuple of one type."""
    return (np.float64(c[1]), 2.0 * c[2], 3.0 * c[3], 4.0 * c[4], 5.0 * c[5], 6.0 * c[6], 7.0 * c[7], 8.0 * c[8], 0.0)


# h / sin h in y: g_0 = 1, g_k = g_(k-1) (-k / (2k + 1)) (``fill_coefficients``' row C_HS).
H_SIN = tuple(float(np.prod([-k / (2.0 * k + 1.0) for k in range(1, n + 1)])) for n in range(9))


@njit(inline="always")
def near_weights(alpha, like):
    """Series of slerp's weights at ``alpha`` for ``blend_rot_near`` (f(1 - alpha), f(alpha), their d/dy,
    h / sin h), in the element type of array ``like``: float32 maths for float32 poses."""
    ft = like.dtype.type
    f0, f1 = slerp_series(1.0 - alpha, like), slerp_series(alpha, like)
    g = H_SIN
    hs = (ft(g[0]), ft(g[1]), ft(g[2]), ft(g[3]), ft(g[4]), ft(g[5]), ft(g[6]), ft(g[7]), ft(g[8]))
    return f0, f1, derivative9(f0), derivative9(f1), hs


@njit(inline="always")
def blend_rot_near(ar, aw, br, y, bw, weights, alpha_vel):
    """``blend_rot_lanes`` for one character from ``near_weights``; ``br`` and ``y`` from ``shortest``, ``y >= NEAR_Y``.

    A weight that does not move (the usual case) skips the weight-rate term, whose value is then exactly 0.
    """
    f0, f1, d0, d1, hs = weights
    if alpha_vel == 0.0:
        return slerp_sum_still(ar, aw, br, bw, poly(y, f0), poly(y, f1), poly(y, d0), poly(y, d1))
    return slerp_sum(ar, aw, br, bw, poly(y, f0), poly(y, f1), poly(y, d0), poly(y, d1), poly(y, hs), alpha_vel)


# ---------------------------------------------------------------- kernels over a tile


@njit(inline="always")
def gather_keys(table, rows, jk, keys):
    """Copy each lane's key row of one joint (``table[rows[lane] + jk + c]``) to lane-minor ``keys[c*LANES + lane]``.

    A separate pass: LLVM cannot bound the addresses of per-lane gathers, so it cannot rule
    out that they overlap the output and leaves a loop that does both scalar.
    """
    for c in range(KEY):
        for lane in range(LANES):
            keys[c * LANES + lane] = table[rows[lane] + jk + c]


@njit(inline="always")
def gather_clip_keys(cpos, ktab, frames0, frames1, j, keys):
    """``gather_keys`` from the graph's clip database: lane ``l``'s segment from frame ``frames0[l]`` to ``frames1[l]``.

    ``cpos`` (F, J, 3) the clips' positions, ``ktab`` (F, J, 16) the sample node's key table
    (``nodes.sample.key_table``: rot 0..3, r1 4..6, log scale 13..15).
    """
    for lane in range(LANES):
        k0, k1 = frames0[lane], frames1[lane]
        for c in range(3):
            p0, ls0 = cpos[k0, j, c], ktab[k0, j, 13 + c]
            keys[(KP + c) * LANES + lane] = p0
            keys[(KDP + c) * LANES + lane] = cpos[k1, j, c] - p0
            keys[(KR1 + c) * LANES + lane] = ktab[k0, j, 4 + c]
            keys[(KLS + c) * LANES + lane] = ls0
            keys[(KDLS + c) * LANES + lane] = ktab[k1, j, 13 + c] - ls0
        for c in range(4):
            keys[(KQ + c) * LANES + lane] = ktab[k0, j, c]


@njit(inline="always")
def linear_joint(keys, sv, unit, out, at):
    """One joint of a linear sample for every lane, from its gathered ``keys`` and ``sv`` (fraction, velocity scale)."""
    for lane in range(LANES):
        s, v = sv[lane], sv[LANES + lane]
        p0 = (keys[KP * LANES + lane], keys[(KP + 1) * LANES + lane], keys[(KP + 2) * LANES + lane])
        dp = (keys[KDP * LANES + lane], keys[(KDP + 1) * LANES + lane], keys[(KDP + 2) * LANES + lane])
        q0 = (keys[KQ * LANES + lane], keys[(KQ + 1) * LANES + lane], keys[(KQ + 2) * LANES + lane],
              keys[(KQ + 3) * LANES + lane])
        r1 = (keys[KR1 * LANES + lane], keys[(KR1 + 1) * LANES + lane], keys[(KR1 + 2) * LANES + lane])
        store_lane3(out, at + POS * LANES + lane, vadd(p0, vscale(dp, s)))
        store_lane3(out, at + VEL * LANES + lane, vscale(dp, v))
        # Linear: r = s r1 moves along itself, so ang = r1 ds/dt (the left Jacobian is the identity).
        store_lane4(out, at + ROT * LANES + lane, qmul(qexp_series(vscale(r1, s * HALF)), q0))
        store_lane3(out, at + ANG * LANES + lane, vscale(r1, v))
    if unit:  # the clip's flag, the same for every lane: outside the lane loops
        for i in range(3 * LANES):
            out[at + SCL * LANES + i] = ONE
            out[at + SVL * LANES + i] = ZERO
    else:  # scales are rare: math.exp keeps this loop scalar
        for c in range(3):
            for lane in range(LANES):
                ls, dls = keys[(KLS + c) * LANES + lane], keys[(KDLS + c) * LANES + lane]
                out[at + (SCL + c) * LANES + lane] = math.exp(ls + sv[lane] * dls)
                out[at + (SVL + c) * LANES + lane] = dls * sv[LANES + lane]


@njit(cache=True)
def sample_linear_tile(table, frames, key_dt, loop, unit, times, rate, out, rows=None, sv=None, keys=None):
    """Linear sample (as ``ops.sample(clip, t, 'linear', loop, rate)``) of lane ``l`` at ``times[l]`` into ``out``.

    ``table``: ``lane_key_table(clip, ktab)[0]``; ``unit``: its second value (scales skipped).
    Scratch, allocated per call when not given: ``rows`` (int64, LANES) each lane's key row,
    ``sv`` (float32, 2 * LANES) its fraction and velocity scale, ``keys`` (float32,
    KEY * LANES) one joint's gathered key rows.
    """
    joints = out.shape[0] // JOINT
    own_rows = np.empty(LANES, np.int64) if rows is None else rows
    own_sv = np.empty(2 * LANES, np.float32) if sv is None else sv
    own_keys = np.empty(KEY * LANES, np.float32) if keys is None else keys
    rows, sv, keys = borrowed(own_rows), borrowed(own_sv), borrowed(own_keys)  # uncounted in the loops
    # Per lane, scalar: the segment (the same function as the scalar sample).
    for lane in range(LANES):
        k, s, moving = segment(float(times[lane]), frames, key_dt, loop, rate)
        rows[lane] = k * joints * KEY
        sv[lane] = s
        sv[LANES + lane] = rate / key_dt if moving else 0.0
    for j in range(joints):
        gather_keys(table, rows, j * KEY, keys)
        linear_joint(keys, sv, unit, out, j * JOINT)
    alive(own_rows), alive(own_sv), alive(own_keys)


@njit(cache=True)
def sample_clip_tile(cpos, ktab, unit, start, frames, key_dt, loop, times, rates, out):
    """Linear sample of clip frames ``start..start+frames-1`` of the graph's database, lane ``l`` at ``times[l]``
    (s) with playback rate ``rates[l]`` (velocities scaled by it), into tile pose ``out``.

    ``cpos``, ``ktab``: as ``gather_clip_keys``; ``unit``: the clip's scales are all 1.
    """
    joints = out.shape[0] // JOINT
    own0, own1 = np.empty(LANES, np.int64), np.empty(LANES, np.int64)
    own_sv, own_keys = np.empty(2 * LANES, np.float32), np.empty(KEY * LANES, np.float32)
    frames0, frames1 = borrowed(own0), borrowed(own1)  # uncounted in the loops
    sv, keys = borrowed(own_sv), borrowed(own_keys)
    for lane in range(LANES):
        k, s, moving = segment(times[lane], frames, key_dt, loop, rates[lane])
        frames0[lane] = start + k
        frames1[lane] = start + ((k + 1) % frames if loop else min(k + 1, frames - 1))
        sv[lane] = s
        sv[LANES + lane] = rates[lane] / key_dt if moving else 0.0
    for j in range(joints):
        gather_clip_keys(cpos, ktab, frames0, frames1, j, keys)
        linear_joint(keys, sv, unit, out, j * JOINT)
    alive(own0), alive(own1), alive(own_sv), alive(own_keys)


@njit(inline="always")
def lane_vec(buf, col, lane):
    """vec3 of columns ``col..col+2`` of lane ``lane`` in a lane-minor scratch."""
    return (buf[col * LANES + lane], buf[(col + 1) * LANES + lane], buf[(col + 2) * LANES + lane])


@njit(inline="always")
def hermite3(w0, w1, w2, w3, x0, m0, x1, m1):
    """``w0 x0 + w1 m0 + w2 x1 + w3 m1`` for vec3s."""
    return vadd(vadd(vscale(x0, w0), vscale(m0, w1)), vadd(vscale(x1, w2), vscale(m1, w3)))


@njit(inline="always")
def exp_ang(r, dr):
    """``exp(r)`` (unit quaternion) and the left Jacobian times ``dr``: ``maths.from_scaled_angle_axis_ang``."""
    z = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
    a, b = poly(z, JAC_A), poly(z, JAC_B)
    x = vcross(r, dr)
    ang = vadd(vadd(dr, vscale(x, a)), vscale(vcross(r, x), b))
    return qexp_series(vscale(r, HALF)), ang


@njit(inline="always")
def cubic_joint(keys, sv, out, at):
    """One joint of a cubic sample (positions, rotations) for every lane, from gathered ``keys`` and scalars ``sv``."""
    for lane in range(LANES):
        w0, w1, w2, w3 = sv[SW * LANES + lane], sv[(SW + 1) * LANES + lane], sv[(SW + 2) * LANES + lane], \
            sv[(SW + 3) * LANES + lane]
        d0, d1, d2, d3 = sv[SDW * LANES + lane], sv[(SDW + 1) * LANES + lane], sv[(SDW + 2) * LANES + lane], \
            sv[(SDW + 3) * LANES + lane]
        i0, i1, v = sv[SSPAN * LANES + lane], sv[(SSPAN + 1) * LANES + lane], sv[SV * LANES + lane]
        first, last = sv[SFIRST * LANES + lane], sv[SLAST * LANES + lane]
        xm, x0, x1, x2 = lane_vec(keys, XM, lane), lane_vec(keys, X0, lane), lane_vec(keys, X1, lane), \
            lane_vec(keys, X2, lane)
        m0, m1 = vscale(vsub(x1, xm), i0), vscale(vsub(x2, x0), i1)
        store_lane3(out, at + POS * LANES + lane, hermite3(w0, w1, w2, w3, x0, m0, x1, m1))
        store_lane3(out, at + VEL * LANES + lane, vscale(hermite3(d0, d1, d2, d3, x0, m0, x1, m1), v))
        r1 = lane_vec(keys, CR1, lane)
        t0, t1 = lane_vec(keys, CM0, lane), lane_vec(keys, CM1, lane)
        t0 = vadd(t0, vscale(vsub(r1, t0), first))  # a select: r1 on a clamped clip's first segment
        t1 = vadd(t1, vscale(vsub(r1, t1), last))
        r = vadd(vadd(vscale(t0, w1), vscale(r1, w2)), vscale(t1, w3))
        dr = vadd(vadd(vscale(t0, d1), vscale(r1, d2)), vscale(t1, d3))
        e, ang = exp_ang(r, dr)
        q0 = (keys[CQ * LANES + lane], keys[(CQ + 1) * LANES + lane], keys[(CQ + 2) * LANES + lane],
              keys[(CQ + 3) * LANES + lane])
        store_lane4(out, at + ROT * LANES + lane, qmul(e, q0))
        store_lane3(out, at + ANG * LANES + lane, vscale(ang, v))


@njit(cache=True)
def sample_clip_cubic_tile(cpos, ktab, unit, start, frames, key_dt, loop, times, rates, out):
    """``sample_clip_tile`` in cubic mode (``ops.sample(..., 'cubic')``): Catmull-Rom positions and log scales,
    rotations on the chart at key k with the key table's tangents, exact velocities."""
    joints = out.shape[0] // JOINT
    own_rows = np.empty(4 * LANES, np.int64)
    own_sv, own_keys = np.empty(SCALARS * LANES, np.float32), np.empty(CKEY * LANES, np.float32)
    rows, sv, keys_ = borrowed(own_rows), borrowed(own_sv), borrowed(own_keys)  # uncounted in the loops
    for lane in range(LANES):
        k, s, moving = segment(times[lane], frames, key_dt, loop, rates[lane])
        km, k0, k1, k2, span0, span1 = keys(k, frames, loop)
        w, dw = basis(s, True)
        for i in range(4):
            sv[(SW + i) * LANES + lane] = w[i]
            sv[(SDW + i) * LANES + lane] = dw[i]
        sv[SSPAN * LANES + lane], sv[(SSPAN + 1) * LANES + lane] = 1.0 / span0, 1.0 / span1
        sv[SV * LANES + lane] = rates[lane] / key_dt if moving else 0.0
        sv[SFIRST * LANES + lane] = 1.0 if not loop and k == 0 else 0.0
        sv[SLAST * LANES + lane] = 1.0 if not loop and k == frames - 2 else 0.0
        rows[lane], rows[LANES + lane], rows[2 * LANES + lane], rows[3 * LANES + lane] = \
            start + km, start + k0, start + k1, start + k2
    for j in range(joints):
        for lane in range(LANES):  # the gathers, in a pass of their own (see ``gather_keys``)
            for i in range(4):
                f = rows[i * LANES + lane]
                for c in range(3):
                    keys_[(XM + 3 * i + c) * LANES + lane] = cpos[f, j, c]
                    keys_[(LM + 3 * i + c) * LANES + lane] = ktab[f, j, 13 + c]
            f = rows[LANES + lane]
            for c in range(13):  # rotation, r1, m0, m1: the key table's first 13 columns
                keys_[(CQ + c) * LANES + lane] = ktab[f, j, c]
        at = j * JOINT
        cubic_joint(keys_, sv, out, at)
        if unit:
            for i in range(3 * LANES):
                out[at + SCL * LANES + i] = ONE
                out[at + SVL * LANES + i] = ZERO
        else:  # log scales on the same curve; math.exp keeps this loop scalar
            for lane in range(LANES):
                w0, w1, w2, w3 = sv[SW * LANES + lane], sv[(SW + 1) * LANES + lane], sv[(SW + 2) * LANES + lane], \
                    sv[(SW + 3) * LANES + lane]
                d0, d1, d2, d3 = sv[SDW * LANES + lane], sv[(SDW + 1) * LANES + lane], \
                    sv[(SDW + 2) * LANES + lane], sv[(SDW + 3) * LANES + lane]
                i0, i1 = sv[SSPAN * LANES + lane], sv[(SSPAN + 1) * LANES + lane]
                lm, l0, l1, l2 = lane_vec(keys_, LM, lane), lane_vec(keys_, L0, lane), lane_vec(keys_, L1, lane), \
                    lane_vec(keys_, L2, lane)
                m0, m1 = vscale(vsub(l1, lm), i0), vscale(vsub(l2, l0), i1)
                ls = hermite3(w0, w1, w2, w3, l0, m0, l1, m1)
                dls = vscale(hermite3(d0, d1, d2, d3, l0, m0, l1, m1), sv[SV * LANES + lane])
                for c in range(3):
                    out[at + (SCL + c) * LANES + lane] = math.exp(ls[c])
                    out[at + (SVL + c) * LANES + lane] = dls[c]
    alive(own_rows), alive(own_sv), alive(own_keys)


@njit(inline="always")
def unit_scales(a, b, at):
    """Every lane of ``a`` and ``b`` has scale exactly 1 at joint offset ``at`` (log and exp then skipped)."""
    n = 0
    for i in range(3 * LANES):
        n += (a[at + SCL * LANES + i] != ONE) + (b[at + SCL * LANES + i] != ONE)
    return n == 0


@njit(cache=True)
def blend_tile(a, b, coef, alpha, alpha_vel, out):
    """``ops.blend(a, b, alpha, alpha_vel)`` for every lane of tiles ``a`` and ``b`` into ``out`` (a third buffer).

    ``alpha``, ``alpha_vel``: float32 (LANES,) each lane's weight and its rate (1/s);
    ``coef``: ``slerp_coefficients(alpha)`` (lane-minor).
    """
    joints = out.shape[0] // JOINT
    for j in range(joints):
        at = j * JOINT
        for lane in range(LANES):
            w, dw = alpha[lane], alpha_vel[lane]
            ap, ar, asc, av, aw, asv = load_lane(a, j, lane)
            bp, br, bsc, bv, bw, bsv = load_lane(b, j, lane)
            store_lane3(out, at + POS * LANES + lane, vlerp(ap, bp, w))
            store_lane3(out, at + VEL * LANES + lane, vadd(vlerp(av, bv, w), vscale(vsub(bp, ap), dw)))
            rot, ang = blend_rot_lanes(ar, aw, br, bw, coef, lane, dw)
            store_lane4(out, at + ROT * LANES + lane, rot)
            store_lane3(out, at + ANG * LANES + lane, ang)
        if unit_scales(a, b, at):  # log 1 = 0: the blended scale is 1, its rate the lerp of the rates
            for c in range(3):
                for lane in range(LANES):
                    out[at + (SCL + c) * LANES + lane] = ONE
                    o = at + (SVL + c) * LANES + lane
                    out[o] = a[o] + alpha[lane] * (b[o] - a[o])
        else:  # scales lerp in log space; math.log/exp keep this loop scalar
            for c in range(3):
                for lane in range(LANES):
                    i = at + (SCL + c) * LANES + lane
                    la, lb = math.log(a[i]), math.log(b[i])
                    out[i] = math.exp(la + alpha[lane] * (lb - la))
                    o = at + (SVL + c) * LANES + lane
                    out[o] = a[o] + alpha[lane] * (b[o] - a[o]) + (lb - la) * alpha_vel[lane]


# ---------------------------------------------------------------- the ozz chain (without IK) on tiles


@njit(cache=True)
def chain_tiles(tab_a, frames_a, dt_a, unit_a, tab_b, frames_b, dt_b, unit_b, loop, times, rate, coef, alpha,
                alpha_vel, parents, out):
    """Sample a and b at ``times`` (one per character), blend at ``alpha``, FK: ``out`` (tiles, J * JOINT).

    ``coef``, ``alpha``, ``alpha_vel``: as ``blend_tile`` takes them (``slerp_coefficients``, ``lane_weights``).

    One tile goes through every op before the next starts, so its intermediates (one tile
    each, reused) stay in cache.
    """
    size = out.shape[1]
    ta, tb, mixed = np.empty(size, np.float32), np.empty(size, np.float32), np.empty(size, np.float32)
    rows, sv, parent = np.empty(LANES, np.int64), np.empty(2 * LANES, np.float32), np.empty(JOINT, np.float32)
    keys = np.empty(KEY * LANES, np.float32)
    for t in range(out.shape[0]):
        lane_times = times[t * LANES:(t + 1) * LANES]
        sample_linear_tile(tab_a, frames_a, dt_a, loop, unit_a, lane_times, rate, ta, rows, sv, keys)
        sample_linear_tile(tab_b, frames_b, dt_b, loop, unit_b, lane_times, rate, tb, rows, sv, keys)
        blend_tile(ta, tb, coef, alpha, alpha_vel, mixed)
        fk_tile(mixed, parents, out[t], parent)


# ---------------------------------------------------------------- batch wrappers (pack, run every tile, unpack)


def sample_linear(clip, ktab, times, loop=False, rate=1.0):
    """``ops.sample(clip, times, "linear", loop, rate)`` through ``sample_linear_tile`` (``ktab``: ``lane_key_table``'s): Pose (B, J, ...) float32."""
    from animgraph.lanes import tile_count, unpack_tiles

    times = np.asarray(times, np.float64).reshape(-1)
    batch = times.shape[0]
    padded = np.concatenate([times, np.repeat(times[-1:], tile_count(batch) * LANES - batch)])  # a valid time
    table, unit = lane_key_table(clip, ktab)
    out = np.empty((tile_count(batch), len(clip.skeleton) * JOINT), np.float32)
    for t in range(out.shape[0]):
        sample_linear_tile(table, clip.frames, clip.dt, bool(loop), unit, padded[t * LANES:(t + 1) * LANES],
                           float(rate), out[t])
    return unpack_tiles(out, batch)


def blend(a, b, alpha, alpha_vel=0.0):
    """``ops.blend(a, b, alpha, alpha_vel)`` of Poses (B, J, ...) through ``blend_tile``, one weight for all."""
    from animgraph.lanes import pack_tiles, unpack_tiles

    ta, tb = pack_tiles(a), pack_tiles(b)
    out = np.empty_like(ta)
    coef = slerp_coefficients(alpha)
    alpha, alpha_vel = lane_weights(alpha, alpha_vel)
    for t in range(out.shape[0]):
        blend_tile(ta[t], tb[t], coef, alpha, alpha_vel, out[t])
    return unpack_tiles(out, a.batch[0])
