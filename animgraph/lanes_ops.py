"""Lane versions of the ozz chain's ops (sample linear, blend) over one tile of ``lanes.LANES`` characters.

Same tile layout and rules as ``animgraph.lanes``: the maths is written once per character
as float32 ``inline='always'`` functions and mapped over the lanes; inputs, outputs and
scratch are separate buffers; no allocation and no branches inside a lane loop.

numba has no vector sin/cos/atan2 here (no SVML), and a libm call in a lane loop keeps it
scalar, so the rotation maths is polynomial:

- ``sample_linear_tile``: ``exp(s r1) q_k`` needs the quaternion exp of ``h = s r1 / 2``
  with ``|h| <= pi/2`` (``r1`` is the shortest rotation from key k to k+1).  ``cos|h|`` and
  ``sin|h| / |h|`` are Taylor series in ``|h|^2``: no sqrt, no divide, no branch near 0, and
  8 terms leave < 1e-9 at ``pi/2`` (below float32 rounding).
- ``blend_tile``: ``maths.blend_rot``'s slerp sum form, whose weights ``sin(t h) / sin h``
  are power series in ``y = cos h - 1`` (``maths.slerp_weights``).  With the weight fixed
  per tile, their coefficients are computed once (``slerp_coefficients``) and each lane
  runs a fixed-degree Horner instead of the scalar code's loop-until-small; degree
  ``SLERP_DEGREE`` keeps the weights' derivatives within 2e-6 even 180 degrees apart.
"""

import math

import numpy as np
from numba import njit

from animgraph.lanes import ANG, CONTRACT, fk_tile, JOINT, LANES, POS, ROT, SCL, SVL, VEL, load_lane, qmul, \
    store_lane3, store_lane4, vadd, vscale
from animgraph.nodes.sample import key_table, segment

F32 = np.float32
ONE = F32(1.0)
ZERO = F32(0.0)
HALF = F32(0.5)
TWO = F32(2.0)

# Taylor coefficients of cos(x) and sin(x) / x in x^2, float32 so the Horner sums stay float32.
COS = tuple(F32((-1.0) ** k / math.factorial(2 * k)) for k in range(8))
SINC = tuple(F32((-1.0) ** k / math.factorial(2 * k + 1)) for k in range(8))

# Lane key table columns, per key k and joint: pos_k, pos_k1 - pos_k, q_k, r1, log scl_k, log scl_k1 - log scl_k.
KP, KDP, KQ, KR1, KLS, KDLS = 0, 3, 6, 10, 13, 16
KEY = 19

SLERP_DEGREE = 20  # Horner degree of the slerp weight series (see the module docstring)
NCOEF = SLERP_DEGREE + 1
# slerp_coefficients rows: f(1-a), f(a), their d/dy, and h / sin h (for the weight's rate).
C_F0, C_F1, C_D0, C_D1, C_HS = 0, NCOEF, 2 * NCOEF, 3 * NCOEF, 4 * NCOEF


# ---------------------------------------------------------------- setup (once per clip / weight)


def lane_key_table(clip):
    """(flat float32 key table (F * J * KEY), whether every scale is exactly 1) of ``clip`` for ``sample_linear_tile``.

    Rotations and ``r1`` are ``sample.key_table``'s (normalized, shortest path, float32);
    the differences to key k+1 wrap to the first key, as a looping clip does (a clamped
    clip never samples a segment starting at its last key).
    """
    ktab, unit = key_table(clip)
    frames, joints = clip.frames, len(clip.skeleton)
    nxt = np.roll(np.arange(frames), -1)
    pos = np.asarray(clip.pos, np.float64)
    ls = ktab[..., 13:16].astype(np.float64)  # sample.LOG_SCL columns
    out = np.empty((frames, joints, KEY), np.float32)
    out[..., KP:KP + 3] = pos
    out[..., KDP:KDP + 3] = pos[nxt] - pos
    out[..., KQ:KQ + 4] = ktab[..., 0:4]  # sample.ROT
    out[..., KR1:KR1 + 3] = ktab[..., 4:7]  # sample.R1
    out[..., KLS:KLS + 3] = ls
    out[..., KDLS:KDLS + 3] = ls[nxt] - ls
    return out.reshape(-1), unit


def slerp_coefficients(alpha):
    """float32 (5 * NCOEF,) power-series coefficients in ``y = cos h - 1`` of slerp's weights at ``alpha``.

    ``f(t) = sin(t h) / sin h = sum c_k y^k`` with ``c_0 = t``, ``c_k = c_(k-1) (t^2 - k^2) / (k (2k+1))``
    (``maths.slerp_weights``) for ``t = 1 - alpha`` and ``alpha``, their derivatives in ``y``, and
    ``h / sin h``.  Computed in float64, rounded once.
    """
    out = np.zeros(5 * NCOEF)
    for row, t in ((C_F0, 1.0 - alpha), (C_F1, alpha)):
        c = t
        out[row] = c
        for k in range(1, NCOEF):
            c *= (t * t - k * k) / (k * (2 * k + 1))
            out[row + k] = c
            out[row + 2 * NCOEF + k - 1] = k * c  # d/dy: row C_D0 / C_D1, degree one less
    g = 1.0
    out[C_HS] = g
    for k in range(1, NCOEF):
        g *= -k / (2 * k + 1)
        out[C_HS + k] = g
    return out.astype(np.float32)


# ---------------------------------------------------------------- one character, float32


@njit(inline="always")
def poly8(z, c):
    """``sum c[k] z^k``, k < 8, by Horner."""
    return ((((((c[7] * z + c[6]) * z + c[5]) * z + c[4]) * z + c[3]) * z + c[2]) * z + c[1]) * z + c[0]


@njit(inline="always")
def qexp_half(h):
    """Unit quaternion ``exp((0, h))`` for ``|h| <= pi/2``, from Taylor series (no sqrt, no branch)."""
    z = h[0] * h[0] + h[1] * h[1] + h[2] * h[2]
    s = poly8(z, SINC)
    return (poly8(z, COS), h[0] * s, h[1] * s, h[2] * s)


@njit(inline="always")
def vlerp(a, b, t):
    return (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2]))


@njit(inline="always")
def vsub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(inline="always")
def qdot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]


@njit(inline="always")
def qscale(q, s):
    return (q[0] * s, q[1] * s, q[2] * s, q[3] * s)


@njit(inline="always")
def qadd(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


@njit(inline="always")
def qconj(q):
    return (q[0], -q[1], -q[2], -q[3])


@njit(inline="always")
def ang_to_qdx(q, w):
    """d/dt of unit ``q`` turning at left angular velocity ``w``: ``(0, w) q / 2``."""
    return qscale(qmul((ZERO, w[0], w[1], w[2]), q), HALF)


@njit(inline="always")
def horner(coef, at, y):
    """``sum coef[at + k] y^k`` for k <= SLERP_DEGREE (a constant trip count: LLVM unrolls it)."""
    acc = coef[at + SLERP_DEGREE]
    for k in range(SLERP_DEGREE - 1, -1, -1):
        acc = acc * y + coef[at + k]
    return acc


@njit(inline="always")
def blend_rot(ar, aw, br, bw, coef, alpha_vel):
    """``maths.blend_rot`` in float32: slerp's sum form and its exact time derivative, any angle apart."""
    x = qdot(ar, br)
    sign = np.float32(-1.0) if x < ZERO else ONE  # a select: the shortest way round
    br = qscale(br, sign)
    y = x * sign - ONE
    f0, f1 = horner(coef, C_F0, y), horner(coef, C_F1, y)
    d0, d1 = horner(coef, C_D0, y), horner(coef, C_D1, y)
    dar, dbr = ang_to_qdx(ar, aw), ang_to_qdx(br, bw)
    dx = qdot(dar, br) + qdot(ar, dbr)  # d(cos h)/dt
    rot = qadd(qscale(ar, f0), qscale(br, f1))
    drot = qadd(qadd(qscale(ar, d0 * dx), qscale(br, d1 * dx)), qadd(qscale(dar, f0), qscale(dbr, f1)))
    d = qmul(drot, qconj(rot))
    # The weight's rate turns the result along log(br ar^-1) = 2 (h / sin h) vec(br ar^-1).
    delta = qmul(br, qconj(ar))
    k = TWO * horner(coef, C_HS, y) * alpha_vel
    ang = (TWO * d[1] + k * delta[1], TWO * d[2] + k * delta[2], TWO * d[3] + k * delta[3])
    return rot, ang


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


@njit(cache=True, fastmath=CONTRACT)
def sample_linear_tile(table, frames, key_dt, loop, unit, times, rate, out, rows=None, sv=None, keys=None):
    """Linear sample (as ``ops.sample(clip, t, 'linear', loop, rate)``) of lane ``l`` at ``times[l]`` into ``out``.

    ``table``: ``lane_key_table(clip)[0]``; ``unit``: its second value (scales skipped).
    Scratch, allocated per call when not given: ``rows`` (int64, LANES) each lane's key row,
    ``sv`` (float32, 2 * LANES) its fraction and velocity scale, ``keys`` (float32,
    KEY * LANES) one joint's gathered key rows.
    """
    joints = out.shape[0] // JOINT
    if rows is None:
        rows = np.empty(LANES, np.int64)
    if sv is None:
        sv = np.empty(2 * LANES, np.float32)
    if keys is None:
        keys = np.empty(KEY * LANES, np.float32)
    # Per lane, scalar: the segment (the same function as the scalar sample).
    for lane in range(LANES):
        k, s, moving = segment(float(times[lane]), frames, key_dt, loop, rate)
        rows[lane] = k * joints * KEY
        sv[lane] = s
        sv[LANES + lane] = rate / key_dt if moving else 0.0
    for j in range(joints):
        at = j * JOINT
        gather_keys(table, rows, j * KEY, keys)
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
            store_lane4(out, at + ROT * LANES + lane, qmul(qexp_half(vscale(r1, s * HALF)), q0))
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


@njit(inline="always")
def unit_scales(a, b, at):
    """Every lane of ``a`` and ``b`` has scale exactly 1 at joint offset ``at`` (log and exp then skipped)."""
    n = 0
    for i in range(3 * LANES):
        n += (a[at + SCL * LANES + i] != ONE) + (b[at + SCL * LANES + i] != ONE)
    return n == 0


@njit(cache=True, fastmath=CONTRACT)
def blend_tile(a, b, coef, alpha, alpha_vel, out):
    """``ops.blend(a, b, alpha, alpha_vel)`` for every lane of tiles ``a`` and ``b`` into ``out`` (a third buffer).

    ``coef``: ``slerp_coefficients(alpha)``.
    """
    alpha = np.float32(alpha)
    alpha_vel = np.float32(alpha_vel)
    joints = out.shape[0] // JOINT
    for j in range(joints):
        at = j * JOINT
        for lane in range(LANES):
            ap, ar, asc, av, aw, asv = load_lane(a, j, lane)
            bp, br, bsc, bv, bw, bsv = load_lane(b, j, lane)
            store_lane3(out, at + POS * LANES + lane, vlerp(ap, bp, alpha))
            store_lane3(out, at + VEL * LANES + lane, vadd(vlerp(av, bv, alpha), vscale(vsub(bp, ap), alpha_vel)))
            rot, ang = blend_rot(ar, aw, br, bw, coef, alpha_vel)
            store_lane4(out, at + ROT * LANES + lane, rot)
            store_lane3(out, at + ANG * LANES + lane, ang)
        if unit_scales(a, b, at):  # log 1 = 0: the blended scale is 1, its rate the lerp of the rates
            for i in range(3 * LANES):
                out[at + SCL * LANES + i] = ONE
                o = at + SVL * LANES + i
                out[o] = a[o] + alpha * (b[o] - a[o])
        else:  # scales lerp in log space; math.log/exp keep this loop scalar
            for i in range(3 * LANES):
                la, lb = math.log(a[at + SCL * LANES + i]), math.log(b[at + SCL * LANES + i])
                out[at + SCL * LANES + i] = math.exp(la + alpha * (lb - la))
                o = at + SVL * LANES + i
                out[o] = a[o] + alpha * (b[o] - a[o]) + (lb - la) * alpha_vel


# ---------------------------------------------------------------- the ozz chain (without IK) on tiles


@njit(cache=True)
def chain_tiles(tab_a, frames_a, dt_a, unit_a, tab_b, frames_b, dt_b, unit_b, loop, times, rate, coef, alpha,
                parents, out):
    """Sample a and b at ``times`` (one per character), blend at ``alpha``, FK: ``out`` (tiles, J * JOINT).

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
        blend_tile(ta, tb, coef, alpha, 0.0, mixed)
        fk_tile(mixed, parents, out[t], parent)


# ---------------------------------------------------------------- batch wrappers (pack, run every tile, unpack)


def sample_linear(clip, times, loop=False, rate=1.0):
    """``ops.sample(clip, times, 'linear', loop, rate)`` through ``sample_linear_tile``: Pose (B, J, ...) float32."""
    from animgraph.lanes import tile_count, unpack_tiles

    times = np.asarray(times, np.float64).reshape(-1)
    batch = times.shape[0]
    padded = np.concatenate([times, np.repeat(times[-1:], tile_count(batch) * LANES - batch)])  # a valid time
    table, unit = lane_key_table(clip)
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
    for t in range(out.shape[0]):
        blend_tile(ta[t], tb[t], coef, alpha, alpha_vel, out[t])
    return unpack_tiles(out, a.batch[0])
