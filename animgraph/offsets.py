"""Inertialization offsets per joint: the gap between two kineforms and how it is put back on.

An offset takes a kineform ``dst`` to ``src`` (same space; m, rad, log scale):
position ``p_src - p_dst`` with rate ``v_src - v_dst`` (m/s); rotation the rotation
vector ``log(qabs(q_src q_dst^-1))`` (the short way round, rad) with rate
``J(x)^-1 (w_src - R(q_src q_dst^-1) w_dst)`` (``J`` the left Jacobian of exp); scale
``log(s_src / s_dst)`` with rate ``svl_src - svl_dst`` (1/s).  Stored as ``OFFSET`` floats
a joint in that order (pos, vel, rot, rot rate, log scale, its rate).  Used by the
``inertialize``, ``tracking_spring`` and ``motion_match`` nodes; ``animgraph.decay`` decays them.
Below, whole poses: recording the offsets of a transition and applying them decayed.
"""

from animgraph.jit import njit

from .decay import CUBIC_RATE_PEAK, REST_PEAK, decay3, decay_weights, kform_extrapolate, rate_rest_weights
from .kernels import copy_pose, get3, put3
from .maths import (
    ang_to_sa_dx,
    from_scaled_angle_axis,
    qabs,
    qinv,
    qmul,
    qrot,
    sa_dx_to_ang,
    to_scaled_angle_axis,
    vadd,
    vexp,
    vlen,
    vlog,
    vmul,
    vsub,
)
from .maths import load_kform, store_kform

OFFSET = 18  # floats of one joint's offset: pos, vel, rot, rot rate, log scale, its rate
SPRING_SPAN = 32.0  # half-lives after which a spring offset is below 1e-17 and dropped
# How far (m, rad, log scale) the cubic's rate term may carry a joint past its offset: a transition at a high
# playback rate starts offsets at tens of rad/s, and over a whole duration those swing limbs round (knees folded
# through the hips); that joint's rate term comes to rest sooner instead (decay.rate_rest_weights, C2 where it
# ends mid-transition), keeping the start's rate exact.
OVERSHOOT_POS, OVERSHOOT_ROT, OVERSHOOT_SCL = 0.1, 0.5, 0.1


@njit(cache=True)
def joint_offset(src, dst):
    """Offset (pos, vel, rotvec, its rate, log scale, its rate) taking kineform ``dst`` to ``src``."""
    sp, sr, ss, sv, sw, ssv = src
    dp, dr, ds, dv, dw, dsv = dst
    delta = qabs(qmul(sr, qinv(dr)))
    rot = to_scaled_angle_axis(delta)
    rot_rate = ang_to_sa_dx(rot, vsub(sw, qrot(delta, dw)))
    return (vsub(sp, dp), vsub(sv, dv), rot, rot_rate, vsub(vlog(ss), vlog(ds)), vsub(ssv, dsv))


@njit(cache=True)
def apply_offset(k, pos, dpos, rot, drot, lscl, dlscl):
    """Kineform ``k`` with the offset ``(pos, rot, log scale)`` moving at ``(dpos, drot, dlscl)`` applied."""
    ip, ir, isc, iv, iw, isv = k
    q = from_scaled_angle_axis(rot)
    return (
        vadd(ip, pos),
        qmul(q, ir),
        vmul(isc, vexp(lscl)),
        vadd(iv, dpos),
        vadd(sa_dx_to_ang(rot, drot), qrot(q, iw)),
        vadd(isv, dlscl),
    )


# ---------------------------------------------------------------- whole poses (inertialize, motion_match)


@njit(cache=True)
def record_offsets(src, dst, ahead, off):
    """Offsets ``off`` (J, 18) from pose ``dst`` to pose ``src`` carried ``ahead`` s on at its velocities."""
    for j in range(off.shape[0]):
        o = joint_offset(kform_extrapolate(load_kform(src, j), 0.0, ahead), load_kform(dst, j))
        for c in range(6):
            put3(off, j, 3 * c, o[c])


@njit(cache=True)
def inertialize_kernel(inp, off, active, cubic, length, t, out):
    """Pose ``inp`` with offsets ``off`` decayed for ``t`` s applied, into ``out`` (may alias ``inp``)."""
    w = decay_weights(cubic, length, t)
    if not active or (w[0] == 0.0 and w[1] == 0.0 and w[2] == 0.0 and w[3] == 0.0):
        copy_pose(inp, out)
        return
    wp, wr, ws = w, w, w
    for j in range(off.shape[0]):
        if cubic:
            wp = overshoot_weights(length, get3(off, j, 3), OVERSHOOT_POS, t, w)
            wr = overshoot_weights(length, get3(off, j, 9), OVERSHOOT_ROT, t, w)
            ws = overshoot_weights(length, get3(off, j, 15), OVERSHOOT_SCL, t, w)
        pos, dpos = decay3(wp, get3(off, j, 0), get3(off, j, 3))
        rot, drot = decay3(wr, get3(off, j, 6), get3(off, j, 9))
        lscl, dlscl = decay3(ws, get3(off, j, 12), get3(off, j, 15))
        store_kform(out, j, apply_offset(load_kform(inp, j), pos, dpos, rot, drot, lscl, dlscl))


@njit(cache=True)
def overshoot_weights(duration, v0, overshoot, t, w):
    """Cubic weights ``w`` (over ``duration`` s, at ``t``), the rate term's brought to rest soon enough that it carries the offset at most ``overshoot`` on (``v0`` per s).

    The offset's own term keeps the whole duration (shortening it would snap a large offset
    back in a few frames); only the start's rate comes to rest sooner, by ``rate_rest_weights``:
    with tail 1 (no acceleration left where it ends mid-transition, so no jolt) over the duration
    whose peak is the overshoot; while that would outlast the transition, over the whole duration
    with the tail between 0 (the cubic's own term) and 1 that mixes the two peaks to the overshoot,
    so that the weights stay continuous in ``v0``.
    """
    speed = vlen(v0)
    if speed * CUBIC_RATE_PEAK * duration <= overshoot:
        return w
    allowed = overshoot / speed  # the most the rate term may carry per unit |v0| (s)
    if allowed >= REST_PEAK * duration:
        tail = (CUBIC_RATE_PEAK * duration - allowed) / ((CUBIC_RATE_PEAK - REST_PEAK) * duration)
        fast = rate_rest_weights(duration, tail, t)
    else:
        fast = rate_rest_weights(allowed / REST_PEAK, 1.0, t)
    return w[0], fast[0], w[2], fast[1]


@njit(cache=True)
def still_active(cubic, length, t):
    """Whether an offset ``t`` s old still shows (cubic: before the duration; spring: 32 half-lives)."""
    if length <= 0.0:
        return False
    return t < (length if cubic else SPRING_SPAN * length)


@njit(cache=True)
def motion_offset(sig, at, out, last, offset, record, transition, cubic, length, t):
    """Root motion ``sig[at:at+6]`` plus its decaying ``offset`` (6) into ``sig[out:out+6]``; ``last`` the last output.

    On a transition the offset is the last output minus the new input, so the velocity
    the output node integrates does not step; it decays like the pose's offset (as a
    value: root motion carries no rate of its own).
    """
    w = decay_weights(cubic, length, t)
    for c in range(6):
        if transition:
            offset[c] = last[c] - sig[at + c] if record and length > 0.0 else 0.0
        value = sig[at + c] + w[0] * offset[c]
        sig[out + c] = value
        last[c] = value
