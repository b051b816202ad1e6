"""Sample a clip at any time: linear (2 keys) or cubic Hermite (4 keys), exact velocities.

Between key k and key k+1 at fraction ``s = t/dt - k`` every channel is a Hermite curve
``x(s) = h00 x_k + h10 m_k + h01 x_k1 + h11 m_k1`` whose key tangents ``m`` are central
differences of the neighbouring keys (Catmull-Rom; linear mode is ``h00 = 1-s, h01 = s``).
Positions interpolate as they are, scales as ``log(scl)``.  Rotations are interpolated in
the chart at key k: ``r = log(q q_k^-1)`` as a rotation vector, so ``r_k = 0`` and
``r_k1 = log(q_k1 q_k^-1)`` (shortest path).  A key's tangent is its angular velocity
``w_k = (log(q_k+1 q_k^-1) - log(q_k-1 q_k^-1)) / 2`` (per frame), mapped into the chart
by the inverse left Jacobian, so the angular velocity is continuous across keys.  Then
``rot = exp(r) q_k`` and ``ang = J(r) dr/dt`` (left Jacobian): the exact derivative.
Every velocity is ``d/ds`` divided by the clip's ``dt`` and multiplied by the playback
rate; a looping clip interpolates from its last key back to its first like any other
segment (period = frames * dt); a clamped clip holds its end keys with zero velocity.
"""

import math
from typing import Literal, Optional

import numpy as np
from numba import njit
from pydantic import Field

from animgraph.maths import (
    ang_to_sa_dx,
    from_scaled_angle_axis,
    load3,
    load4,
    qinv,
    qmul,
    qnormalize,
    sa_dx_to_ang,
    store3,
    store4,
    to_scaled_angle_axis,
    vadd,
    vexp,
    vlog,
    vscale,
    vsub,
)
from animgraph.node import Node, Port, register, slot
from animgraph.pose import Clip, Pose

ZERO = (0.0, 0.0, 0.0)


@njit(cache=True)
def segment(t, frames, key_dt, loop, rate):
    """Key index k, fraction s in [0, 1] and whether the clip moves at time ``t`` (s).

    On a key the segment is chosen in the direction of play, so the velocity is the
    derivative along the playing direction; a clamped clip at or past an end does not move.
    """
    u = t / key_dt
    if frames == 1:
        return 0, 0.0, False
    if loop:
        u = u - frames * math.floor(u / frames)
        if u >= frames:  # rounding of a tiny negative time
            u = 0.0
        k = int(math.floor(u))
        s = u - k
        if s == 0.0 and rate < 0.0:
            return (k - 1) % frames, 1.0, True
        return k, s, True
    last = frames - 1
    if u <= 0.0:
        return 0, 0.0, u == 0.0 and rate > 0.0
    if u >= last:
        return last - 1, 1.0, u == last and rate < 0.0
    k = int(math.floor(u))
    s = u - k
    if s == 0.0 and rate < 0.0:
        return k - 1, 1.0, True
    return k, s, True


@njit(cache=True)
def keys(k, frames, loop):
    """Keys k-1, k, k+1, k+2 (wrapped or clamped) and the frame spans of the tangents at k and k+1."""
    if loop:
        return (k - 1) % frames, k, (k + 1) % frames, (k + 2) % frames, 2.0, 2.0
    km = max(k - 1, 0)
    k1 = min(k + 1, frames - 1)
    k2 = min(k + 2, frames - 1)
    return km, k, k1, k2, max(float(k1 - km), 1.0), max(float(k2 - k), 1.0)


@njit(cache=True)
def basis(s, cubic):
    """Hermite weights of (x_k, m_k, x_k1, m_k1) at ``s`` and their derivatives d/ds."""
    if not cubic:
        return (1.0 - s, 0.0, s, 0.0), (-1.0, 0.0, 1.0, 0.0)
    s2 = s * s
    s3 = s2 * s
    w = (2.0 * s3 - 3.0 * s2 + 1.0, s3 - 2.0 * s2 + s, 3.0 * s2 - 2.0 * s3, s3 - s2)
    dw = (6.0 * s2 - 6.0 * s, 3.0 * s2 - 4.0 * s + 1.0, 6.0 * s - 6.0 * s2, 3.0 * s2 - 2.0 * s)
    return w, dw


@njit(cache=True)
def hermite(w, x0, m0, x1, m1):
    """Hermite curve value (or d/ds, given derivative weights) from key values x and tangents m."""
    return vadd(vadd(vscale(x0, w[0]), vscale(m0, w[1])), vadd(vscale(x1, w[2]), vscale(m1, w[3])))


@njit(cache=True)
def tangents(xm, x0, x1, x2, span0, span1):
    """Central-difference tangents (per frame) at keys k and k+1."""
    return vscale(vsub(x1, xm), 1.0 / span0), vscale(vsub(x2, x0), 1.0 / span1)


@njit(cache=True)
def rel(q, q0):
    """Rotation vector of ``q`` relative to ``q0`` on the left, the short way round."""
    return to_scaled_angle_axis(qmul(q, qinv(q0)))


@njit(cache=True)
def sample_kernel(cpos, crot, cscl, start, frames, key_dt, t, rate, cubic, loop, out):
    """Write the local pose of clip frames ``start..start+frames-1`` at time ``t`` (s) into ``out``.

    Velocities are the time derivative of the interpolant times ``rate``.
    """
    k, s, moving = segment(t, frames, key_dt, loop, rate)
    km, k0, k1, k2, span0, span1 = keys(k, frames, loop)
    km += start
    k0 += start
    k1 += start
    k2 += start
    w, dw = basis(s, cubic)
    vs = rate / key_dt if moving else 0.0
    for j in range(out[0].shape[0]):
        # Positions.
        p0 = load3(cpos[k0], j)
        p1 = load3(cpos[k1], j)
        m0 = ZERO
        m1 = ZERO
        if cubic:
            m0, m1 = tangents(load3(cpos[km], j), p0, p1, load3(cpos[k2], j), span0, span1)
        store3(out[0], j, hermite(w, p0, m0, p1, m1))
        store3(out[3], j, vscale(hermite(dw, p0, m0, p1, m1), vs))
        # Scales, in log space.
        l0 = vlog(load3(cscl[k0], j))
        l1 = vlog(load3(cscl[k1], j))
        if cubic:
            m0, m1 = tangents(vlog(load3(cscl[km], j)), l0, l1, vlog(load3(cscl[k2], j)), span0, span1)
        store3(out[2], j, vexp(hermite(w, l0, m0, l1, m1)))
        store3(out[5], j, vscale(hermite(dw, l0, m0, l1, m1), vs))
        # Rotations, in the chart at key k.
        q0 = qnormalize(load4(crot[k0], j))
        q1 = qnormalize(load4(crot[k1], j))
        r1 = rel(q1, q0)
        if cubic:
            w0 = vscale(vsub(r1, rel(qnormalize(load4(crot[km], j)), q0)), 1.0 / span0)
            w1 = vscale(vadd(rel(qnormalize(load4(crot[k2], j)), q1), r1), 1.0 / span1)
            m0 = w0
            m1 = ang_to_sa_dx(r1, w1)
        r = hermite(w, ZERO, m0, r1, m1)
        dr = hermite(dw, ZERO, m0, r1, m1)
        store4(out[1], j, qmul(from_scaled_angle_axis(r), q0))
        store3(out[4], j, vscale(sa_dx_to_ang(r, dr), vs))


@njit(cache=True)
def advance(clock, step, frames, key_dt, loop):
    """The clock (s) after playing ``step`` seconds: wrapped to one period, or clamped to the clip."""
    clock += step
    if loop:
        period = frames * key_dt
        clock -= period * math.floor(clock / period)
        if clock >= period:
            clock = 0.0
        return clock
    return min(max(clock, 0.0), (frames - 1) * key_dt)


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    start = int(par[0])
    frames = int(par[1])
    key_dt = par[2]
    cubic = par[3] > 0.5
    loop = par[4] > 0.5
    out = slot(pose, outs[0])
    if ins[0] >= 0:
        # Driven: sample at time.x, the time's own rate scales the velocities.
        t = sig[ins[0]]
        rate = sig[ins[0] + 1]
        if not (math.isfinite(t) and math.isfinite(rate)):
            t = 0.0
            rate = 0.0
        sample_kernel(db[0], db[1], db[2], start, frames, key_dt, t, rate, cubic, loop, out)
        return
    rate = sig[ins[1]] if ins[1] >= 0 else par[5]
    if not math.isfinite(rate):
        rate = 0.0
    t = st[0]
    sample_kernel(db[0], db[1], db[2], start, frames, key_dt, t, rate, cubic, loop, out)
    st[0] = advance(t, rate * dt, frames, key_dt, loop)


@register(run)
class Sample(Node):
    """Play a clip: its local pose with exact velocities, on its own clock or at a given time."""

    type: Literal["sample"] = "sample"
    clip: str = Field(min_length=1, description="clip asset name")
    mode: Literal["linear", "cubic"] = "cubic"
    loop: bool = True
    rate: float = Field(1.0, ge=-100.0, le=100.0, allow_inf_nan=False, description="playback rate")
    time: Optional[float] = Field(
        None, allow_inf_nan=False, description="fixed sampling time (s); null runs the node's own clock"
    )

    INPUTS = (
        Port("time", "scalar", "", "sampling time (s) and its rate; unlinked and null: own clock", True),
        Port("rate", "scalar", "", "playback rate of the own clock (default: field rate)", True),
    )
    OUTPUTS = (Port("pose", "pose", "local", "sampled local pose with velocities"),)

    def params(self, ctx):
        r = ctx.clip(self, "clip", self.clip)
        return np.array(
            [r.start, r.frames, r.dt, self.mode == "cubic", self.loop, self.rate], dtype=np.float64
        )

    def state(self, ctx, time=0.0):
        """The own clock (s), set so that the first frame after a reset shows exactly ``time``."""
        return np.array([time], dtype=np.float64)


def sample(clip: Clip, time, mode="linear", loop=False, rate=1.0):
    """Local pose of ``clip`` at ``time`` (s, scalar or array: a batch); velocities times ``rate``."""
    if mode not in ("linear", "cubic"):
        raise ValueError(f"sample mode must be 'linear' or 'cubic', got {mode!r}")
    times = np.asarray(time, dtype=np.float64)
    if not np.all(np.isfinite(times)) or not math.isfinite(rate):
        raise ValueError("sample time and rate must be finite")
    out = Pose.identity(len(clip.skeleton), times.shape)
    for t, dst in zip(times.reshape(-1), out.items()):
        sample_kernel(
            clip.pos, clip.rot, clip.scl, 0, clip.frames, clip.dt, float(t), float(rate),
            mode == "cubic", bool(loop), dst,
        )
    return out
