"""Two-way blend of poses with a weight that may change over time.

``pos = lerp(a, b, α)``, ``scl = exp(lerp(log a, log b, α))`` (eerp) and
``rot = exp(α d) qa`` with ``d = log(qb qa^-1)`` the shortest rotation vector from a to b.
Velocities are the exact time derivatives with both inputs moving and ``α`` changing at
``α'`` (1/s): ``vel = lerp(va, vb, α) + α' (pb - pa)``, likewise ``svl`` in log space, and
``ang = J(α d) (α' d + α d') + R(exp(α d)) ωa`` where ``d' = J(d)^-1 (ωb - R(qb qa^-1) ωa)``
(``J`` the left Jacobian of exp): no lerp of angular velocities, which is only right
when the two rotations turn about the same axis.
Per joint: one atan2 for ``d`` and ``J(d)^-1`` (``cot(|d|/2) = w/|xyz|`` of ``qb qa^-1``), one
sin/cos pair for ``exp(α d)`` and ``J(α d)``; unit scales skip log/exp, ``α' = 0`` its terms.
"""

from typing import Literal

import numpy as np
from numba import njit
from pydantic import Field

from animgraph.maths import (
    load_kform,
    qinv,
    qmul,
    qrot,
    store_kform,
    to_scaled_angle_axis_dx,
    vadd,
    vexp,
    vlerp,
    vlog,
    vscale,
    vsub,
    weighted_rot_sq,
)
from animgraph.args import broadcast_poses, check_scales, weights
from animgraph.limits import unit_field
from animgraph.node import Node, Port, register, slot
from animgraph.pose import Pose


@njit(cache=True, error_model="numpy")
def is_one(v):
    return v[0] == 1.0 and v[1] == 1.0 and v[2] == 1.0


@njit(cache=True, error_model="numpy")
def blend_kform(a, b, alpha, alpha_vel):
    """Kineform between ``a`` (α=0) and ``b`` (α=1), with the velocity of the changing weight."""
    ap, ar, asc, av, aw, asv = a
    bp, br, bsc, bv, bw, bsv = b
    pos = vlerp(ap, bp, alpha)
    vel = vlerp(av, bv, alpha)
    if alpha_vel != 0.0:
        vel = vadd(vel, vscale(vsub(bp, ap), alpha_vel))
    # Rotation: walk the shortest arc from a towards b, both ends moving.
    delta = qmul(br, qinv(ar))
    d, d2, dd = to_scaled_angle_axis_dx(delta, vsub(bw, qrot(delta, aw)))
    e, e_ang = weighted_rot_sq(d, d2, dd, alpha, alpha_vel)
    rot = qmul(e, ar)
    ang = vadd(e_ang, qrot(e, aw))
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


@njit(cache=True, error_model="numpy")
def blend_kernel(a, b, alpha, alpha_vel, out):
    """Blend pose tuples ``a`` and ``b`` row by row into ``out`` (which may alias either)."""
    for j in range(out[0].shape[0]):
        store_kform(out, j, blend_kform(load_kform(a, j), load_kform(b, j), alpha, alpha_vel))


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    if ins[2] >= 0:
        alpha = sig[ins[2]]
        alpha_vel = sig[ins[2] + 1]
    else:
        alpha = par[0]
        alpha_vel = 0.0
    # Held at the ends of [0, 1]: a clamped weight does not move.
    if not alpha > 0.0:  # also catches NaN
        alpha = 0.0
        alpha_vel = 0.0
    elif alpha > 1.0:
        alpha = 1.0
        alpha_vel = 0.0
    if par[1] > 0.0:  # root motion: a lerp of the two bodies' velocities
        for c in range(int(par[1])):
            sig[outs[0] + c] = sig[ins[0] + c] + alpha * (sig[ins[1] + c] - sig[ins[0] + c])
        return
    blend_kernel(slot(pose, ins[0]), slot(pose, ins[1]), alpha, alpha_vel, slot(pose, outs[0]))


@register(run)
class Blend(Node):
    """Cross-fade two poses of the same space (or two root motions); the weight's rate adds its own velocity."""

    type: Literal["blend"] = "blend"
    alpha: float = unit_field(0.5, "weight of b (0: a, 1: b)")
    signal: Literal["pose", "motion"] = Field(
        "pose", description="what is blended: poses, or root motions (blend them with the same alpha as their poses)"
    )

    INPUTS = (
        Port("a", "pose", "any", "pose at alpha 0"),
        Port("b", "pose", "any", "pose at alpha 1, same space as a"),
        Port("alpha", "scalar", "", "weight of b and its rate (1/s), clamped to [0, 1]", True),
    )
    OUTPUTS = (Port("pose", "pose", "any", "blended pose, in the inputs' space"),)

    def inputs(self):
        if self.signal == "motion":
            return (Port("a", "motion", "", "root motion at alpha 0"), Port("b", "motion", "", "root motion at alpha 1"),
                    self.INPUTS[2])
        return self.INPUTS

    def outputs(self):
        if self.signal == "motion":
            return (Port("value", "motion", "", "blended root motion"),)
        return self.OUTPUTS

    def params(self, ctx):
        return np.array([self.alpha, 6.0 if self.signal == "motion" else 0.0], dtype=np.float64)


def blend(a, b, alpha, alpha_vel=0.0):
    """Pose between ``a`` (alpha 0) and ``b`` (alpha 1), alpha_vel = dalpha/dt in 1/s; any batch shape."""
    shape, (a, b) = broadcast_poses(a, b)
    check_scales(a, b)
    alpha, alpha_vel = weights(shape, alpha, alpha_vel)
    out = Pose.identity(a.joints, shape)
    for n, (src_a, src_b, dst) in enumerate(zip(a.items(), b.items(), out.items())):
        blend_kernel(src_a, src_b, alpha[n], alpha_vel[n], dst)
    return out
