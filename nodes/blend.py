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
from animgraph.node import SIGNAL_SIZE, Node, Port, fields, port_indices, register, slot
from animgraph.pose import Pose
from animgraph.stencil import stencil

INPUTS = (
    Port("a", "pose", "any", "pose at alpha 0"),
    Port("b", "pose", "any", "pose at alpha 1, same space as a"),
    Port("alpha", "scalar", "", "weight of b and its rate (1/s), clamped to [0, 1]", True),
)
OUTPUTS = (Port("pose", "pose", "any", "blended pose, in the inputs' space"),)
IN, OUT = port_indices("BlendIn", INPUTS), port_indices("BlendOut", OUTPUTS)
# signal "motion": a and b are root motions and the output is 'value', at the same positions.
MOTION_INPUTS = (Port("a", "motion", "", "root motion at alpha 0"), Port("b", "motion", "", "root motion at alpha 1"),
                 INPUTS[IN.alpha])
MOTION_OUTPUTS = (Port("value", "motion", "", "blended root motion"),)
# The weight while the alpha port is unlinked; the root-motion block size (0: poses are blended).
PAR = fields("BlendPar", alpha=1, motion_size=1)


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
def blend_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: blend a and b (poses, or root-motion blocks) with the clamped weight."""
    if ins[IN.alpha] >= 0:
        alpha = sig[ins[IN.alpha]]
        alpha_vel = sig[ins[IN.alpha] + 1]
    else:
        alpha = par[PAR.alpha]
        alpha_vel = 0.0
    # Held at the ends of [0, 1]: a clamped weight does not move.
    if not alpha > 0.0:  # also catches NaN
        alpha = 0.0
        alpha_vel = 0.0
    elif alpha > 1.0:
        alpha = 1.0
        alpha_vel = 0.0
    if par[PAR.motion_size] > 0.0:  # root motion: a lerp of the two bodies' velocities
        a, b, out = ins[IN.a], ins[IN.b], outs[OUT.pose]
        for c in range(int(par[PAR.motion_size])):
            sig[out + c] = sig[a + c] + alpha * (sig[b + c] - sig[a + c])
        return
    blend_kernel(slot(pose, ins[IN.a]), slot(pose, ins[IN.b]), alpha, alpha_vel, slot(pose, outs[OUT.pose]))


@register(blend_node)
class Blend(Node):
    """Cross-fade two poses of the same space (or two root motions); the weight's rate adds its own velocity."""

    type: Literal["blend"] = "blend"
    alpha: float = unit_field(0.5, "weight of b (0: a, 1: b)")
    signal: Literal["pose", "motion"] = Field(
        "pose", description="what is blended: poses, or root motions (blend them with the same alpha as their poses)"
    )

    CATEGORY = "blends"
    FIELD_KINDS = {"signal": "signal"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def inputs(self):
        return MOTION_INPUTS if self.signal == "motion" else self.INPUTS

    def outputs(self):
        return MOTION_OUTPUTS if self.signal == "motion" else self.OUTPUTS

    def params(self, ctx):
        return PAR.pack(alpha=self.alpha, motion_size=SIGNAL_SIZE["motion"] if self.signal == "motion" else 0)


def blend(a, b, alpha, alpha_vel=0.0):
    """Pose between ``a`` (alpha 0) and ``b`` (alpha 1), alpha_vel = dalpha/dt in 1/s; any batch shape."""
    shape, (a, b) = broadcast_poses(a, b)
    check_scales(a, b)
    alpha, alpha_vel = weights(shape, alpha, alpha_vel)
    out = Pose.identity(a.joints, shape)
    for n, (src_a, src_b, dst) in enumerate(zip(a.items(), b.items(), out.items())):
        blend_kernel(src_a, src_b, alpha[n], alpha_vel[n], dst)
    return out


def verify_blend(m, t, h, rng):
    """The clip into the clip played backwards, with a swinging weight."""
    return [stencil(lambda s: blend(m.pose(s), m.other(s), *m.weight(s)), t, h)]


Blend.OP, Blend.VERIFY = blend, verify_blend
