"""Inertialization offsets per joint: the gap between two kineforms and how it is put back on.

An offset takes a kineform ``dst`` to ``src`` (same space; m, rad, log scale):
position ``p_src - p_dst`` with rate ``v_src - v_dst`` (m/s); rotation the rotation
vector ``log(qabs(q_src q_dst^-1))`` (the short way round, rad) with rate
``J(x)^-1 (w_src - R(q_src q_dst^-1) w_dst)`` (``J`` the left Jacobian of exp); scale
``log(s_src / s_dst)`` with rate ``svl_src - svl_dst`` (1/s).  Stored as ``OFFSET`` floats
a joint in that order (pos, vel, rot, rot rate, log scale, its rate).  Used by the
``inertialize`` and ``tracking_spring`` nodes; ``animgraph.decay`` decays them.
"""

from numba import njit

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
    vlog,
    vmul,
    vsub,
)

OFFSET = 18  # floats of one joint's offset: pos, vel, rot, rot rate, log scale, its rate


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
