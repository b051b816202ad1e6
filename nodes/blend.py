"""Two-way blend of poses with a weight that may change over time.

``pos = lerp(a, b, α)``, ``scl = exp(lerp(log a, log b, α))`` (eerp) and
``rot = exp(α d) qa`` with ``d = log(qb qa^-1)`` the shortest rotation vector from a to b.
Velocities are the exact time derivatives with both inputs moving and ``α`` changing at
``α'`` (1/s): ``vel = lerp(va, vb, α) + α' (pb - pa)``, likewise ``svl`` in log space, and
``ang = J(α d) (α' d + α d') + R(exp(α d)) ωa`` where ``d' = J(d)^-1 (ωb - R(qb qa^-1) ωa)``
(``J`` the left Jacobian of exp): no lerp of angular velocities, which is only right
when the two rotations turn about the same axis.
The rotation is computed as slerp's sum form ``f(1-α) qa + f(α) qb`` with ``f(t) = sin(t h) / sin h``
a power series in ``cos h - 1`` (``maths.blend_rot``): no trigonometry per joint.  Joints whose two
rotations are within 51.7 degrees and whose scales are 1 (the common case) run it from series
coefficients computed once per op and rounded to the poses' float type (``lanes_ops.blend_rot_near``);
the others take ``maths.blend_kform`` in float64.
"""

from typing import Literal

import numpy as np
from numba import njit
from pydantic import Field

from animgraph.kernels import weight_input
from animgraph.lanes import CONTRACT, LANES, tile_slot
from animgraph.lanes_ops import NCOEF, NEAR_TOP, NEAR_Y, blend_rot_near, blend_tile as blend_lanes, fill_coefficients, \
    near_weights, shortest, vadd, vlerp, vscale, vsub
from animgraph.maths import blend_kform, is_one, load_kform, store_kform
from animgraph.args import broadcast_poses, check_scales, weights
from animgraph.limits import unit_field
from animgraph.node import DB_PARENTS, SIGNAL_SIZE, Node, Port, fields, port_indices, register, slot
from animgraph.pose import Pose
from animgraph.stencil import stencil
from animgraph.views import alive, borrowed

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


@njit(cache=True, error_model="numpy", fastmath=CONTRACT)  # FMA: the near path is 23% faster
def blend_kernel(a, b, alpha, alpha_vel, out):
    """Blend pose tuples ``a`` and ``b`` row by row into ``out`` (which may alias either)."""
    weights = near_weights(alpha, out[1])  # in the poses' float type
    ft = out[1].dtype.type
    w, dw = ft(alpha), ft(alpha_vel)
    for j in range(out[0].shape[0]):
        ka, kb = load_kform(a, j), load_kform(b, j)
        ap, ar, asc, av, aw, asv = ka
        bp, br, bsc, bv, bw, bsv = kb
        br, y = shortest(ar, br)
        if NEAR_Y <= y <= NEAR_TOP and is_one(asc) and is_one(bsc):  # unit quaternions: y <= 0 up to rounding
            rot, ang = blend_rot_near(ar, aw, br, y, bw, weights, dw)
            vel = vadd(vlerp(av, bv, w), vscale(vsub(bp, ap), dw))
            store_kform(out, j, (vlerp(ap, bp, w), rot, asc, vel, ang, vlerp(asv, bsv, w)))
        else:
            store_kform(out, j, blend_kform(ka, kb, alpha, alpha_vel))


@njit(cache=True, inline="always")
def blend_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: blend a and b (poses, or root-motion blocks) with the clamped weight."""
    alpha, alpha_vel = weight_input(sig, ins[IN.alpha], par[PAR.alpha])
    if par[PAR.motion_size] > 0.0:  # root motion: a lerp of the two bodies' velocities
        a, b, out = ins[IN.a], ins[IN.b], outs[OUT.pose]
        for c in range(int(par[PAR.motion_size])):
            sig[out + c] = sig[a + c] + alpha * (sig[b + c] - sig[a + c])
        return
    blend_kernel(slot(pose, ins[IN.a]), slot(pose, ins[IN.b]), alpha, alpha_vel, slot(pose, outs[OUT.pose]))


@njit(cache=True)
def blend_tile(ins, outs, par, st, tile, sig, db, dt):
    """The executor's call on a lane tile: each lane's own weight (``animgraph.lanes_ops.blend_tile``, float32)."""
    if par[PAR.motion_size] > 0.0:
        return False  # root-motion blocks: a few numbers, lane by lane
    joints = db[DB_PARENTS].shape[0]
    own_w, own_dw = np.empty(LANES, np.float32), np.empty(LANES, np.float32)
    own_coef = np.empty(5 * NCOEF * LANES, np.float32)
    alpha, alpha_vel, coef = borrowed(own_w), borrowed(own_dw), borrowed(own_coef)  # uncounted in the loops
    for lane in range(LANES):
        w, dw = weight_input(sig[lane], ins[IN.alpha], par[PAR.alpha])
        alpha[lane], alpha_vel[lane] = w, dw
        fill_coefficients(w, coef, lane)
    blend_lanes(tile_slot(tile, ins[IN.a], joints), tile_slot(tile, ins[IN.b], joints), coef, alpha, alpha_vel,
                tile_slot(tile, outs[OUT.pose], joints))
    alive(own_w), alive(own_dw), alive(own_coef)
    return True


@register(blend_node, tile=blend_tile)
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
