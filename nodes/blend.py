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
coefficients computed once per op and rounded to the poses' float type (``maths.slerp_sum``), in
loops over flat arrays that LLVM packs across joints (``blend_near_rows``: 65 joints 1.7 -> 0.6 us);
the others are then re-done one by one by ``maths.blend_kform`` in float64 (``blend_far_rows``).
"""

from typing import Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field

from animgraph.kernels import row3, row3_64, row4_64, set_row3, set_row4, weight_input
from animgraph.lanes import LANES, tile_slot
from animgraph.lanes_ops import NCOEF, NEAR_TOP, NEAR_Y, blend_tile as blend_lanes, fill_coefficients, near_weights, \
    shortest
from animgraph.maths import blend_kform, load3, load_kform, madd, poly, slerp_sum, store3, store_kform, vadd, vlerp, vscale, \
    vsub
from animgraph.args import broadcast_poses, check_scales, weights
from animgraph.limits import unit_field
from animgraph.node import DB_PARENTS, SIGNAL_SIZE, Node, Port, Weight, fields, port_indices, register, slot
from animgraph.pose import Pose
from animgraph.stencil import stencil
from animgraph.views import alive, borrowed, flat, overlap

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
PAR = fields("BlendPar", motion_size=1)  # alpha: a signal always (the planner feeds an unlinked port its field)


@njit(cache=True, error_model="numpy", own_code=True)
def blend_kernel(a, b, alpha, alpha_vel, out):
    """Blend pose tuples ``a`` and ``b`` (C-contiguous) row by row into ``out`` (which may alias either).

    The near sums for every joint in loops packed across joints, then the far joints (walk
    against jog: 2 or 3 of 31) re-done one by one from the inputs.
    """
    far = far_joints(a, b)
    if far == 0 or not (shares(out, a) or shares(out, b)):
        blend_near_rows(a, b, alpha, alpha_vel, out)
        if far > 0:
            blend_far_rows(a, b, alpha, alpha_vel, out)
        return
    # out is a or b: joint by joint, each row read before it is written (the far rows re-read inputs).
    weights = near_weights(alpha, out[1])
    ar, aw, br, bw, rot, ang = flat(a[1]), flat(a[4]), flat(b[1]), flat(b[4]), flat(out[1]), flat(out[4])
    asc, bsc = flat(a[2]), flat(b[2])
    ft = out[1].dtype.type
    w, dw = np.float64(ft(alpha)), np.float64(ft(alpha_vel))
    for j in range(out[0].shape[0]):
        if near_row(ar, br, asc, bsc, j):
            ap, bp, av, bv = load3(a[0], j), load3(b[0], j), load3(a[3], j), load3(b[3], j)
            asv, bsv = load3(a[5], j), load3(b[5], j)
            store3(out[0], j, vlerp(ap, bp, w))
            store3(out[3], j, vadd(vlerp(av, bv, w), vscale(vsub(bp, ap), dw)))
            store3(out[2], j, (1.0, 1.0, 1.0))
            store3(out[5], j, vlerp(asv, bsv, w))
            near_rot_row(ar, aw, br, bw, weights, dw, rot, ang, j)
        else:
            store_kform(out, j, blend_kform(load_kform(a, j), load_kform(b, j), alpha, alpha_vel))


@njit(inline="always")
def shares(p, q):
    """Whether a field of pose tuple ``p`` overlaps the same field of ``q`` (``out`` is ``a``, say)."""
    return (overlap(p[0], q[0]) or overlap(p[1], q[1]) or overlap(p[2], q[2]) or overlap(p[3], q[3])
            or overlap(p[4], q[4]) or overlap(p[5], q[5]))


@njit(inline="always")  # into blend_kernel: a call passing three pose tuples costs 0.1 us
def far_joints(a, b):
    """How many joints ``blend_rot_near`` does not cover (``near_row``)."""
    ar, br, asc, bsc = flat(a[1]), flat(b[1]), flat(a[2]), flat(b[2])
    far = 0
    for j in range(ar.size // 4):
        far += not near_row(ar, br, asc, bsc, j)
    return far


@njit(inline="always")  # into blend_kernel: a call passing three pose tuples costs 0.1 us
def blend_far_rows(a, b, alpha, alpha_vel, out):
    """The joints ``far_joints`` counts, by ``maths.blend_kform`` in float64 (``out`` holds no input)."""
    ar, br, asc, bsc = flat(a[1]), flat(b[1]), flat(a[2]), flat(b[2])
    for j in range(ar.size // 4):
        if not near_row(ar, br, asc, bsc, j):
            store_kform(out, j, blend_kform(load_kform(a, j), load_kform(b, j), alpha, alpha_vel))


@njit(inline="always")
def near_row(ar, br, asc, bsc, j):
    """Whether ``blend_rot_near`` covers joint ``j`` (flat rotations and scales of a and b): rotations within
    51.7 degrees, scales 1.  Bitwise ``&``, not ``and``: no branch, so a loop over joints stays packed."""
    y = shortest(row4_64(ar, j), row4_64(br, j))[1]
    sa, sb = row3(asc, j), row3(bsc, j)
    unit = (sa[0] == 1.0) & (sa[1] == 1.0) & (sa[2] == 1.0) & (sb[0] == 1.0) & (sb[1] == 1.0) & (sb[2] == 1.0)
    return (NEAR_Y <= y) & (y <= NEAR_TOP) & unit


@njit(inline="always")  # into blend_kernel: a call passing three pose tuples costs 0.1 us
def blend_near_rows(a, b, alpha, alpha_vel, out):
    """``blend_kernel`` when ``far_joints`` is 0, the same sums, in joint loops LLVM packs (``views.flat``).

    One loop per pair of fields: a loop touching all eighteen arrays needs more runtime
    overlap checks than LLVM will emit, and stays scalar.
    """
    ft = out[1].dtype.type
    w, dw = np.float64(ft(alpha)), np.float64(ft(alpha_vel))  # rounded as the per-joint path rounds them
    ap, bp, av, bv, op, ov = flat(a[0]), flat(b[0]), flat(a[3]), flat(b[3]), flat(out[0]), flat(out[3])
    for i in range(op.size):
        pa, pb, va, vb = np.float64(ap[i]), np.float64(bp[i]), np.float64(av[i]), np.float64(bv[i])
        op[i], ov[i] = madd(w, pb - pa, pa), madd(w, vb - va, va) + (pb - pa) * dw  # maths.vlerp's sums
    asv, bsv, osc, osv = flat(a[5]), flat(b[5]), flat(out[2]), flat(out[5])
    for i in range(osv.size):
        sa, sb = np.float64(asv[i]), np.float64(bsv[i])
        osc[i], osv[i] = 1.0, madd(w, sb - sa, sa)
    near_rot_rows(flat(a[1]), flat(a[4]), flat(b[1]), flat(b[4]), near_weights(alpha, out[1]), dw, flat(out[1]),
                  flat(out[4]))


@njit(inline="always")
def near_rot_rows(ar, aw, br, bw, weights, alpha_vel, rot, ang):
    """``near_rot_row`` on every row of flat arrays."""
    for j in range(rot.size // 4):
        near_rot_row(ar, aw, br, bw, weights, alpha_vel, rot, ang, j)


@njit(inline="always")
def near_rot_row(ar, aw, br, bw, weights, alpha_vel, rot, ang, j):
    """``blend_rot_near`` of joint ``j`` of flat arrays, as ``slerp_sum`` whatever the weight's rate.

    At rate 0 its extra term is exactly 0 and the result that of ``slerp_sum_still``: one loop
    to compile instead of two (each packed loop is seconds of first-run compile).
    """
    f0, f1, d0, d1, hs = weights
    qa = row4_64(ar, j)
    qb, y = shortest(qa, row4_64(br, j))
    q, w = slerp_sum(qa, row3_64(aw, j), qb, row3_64(bw, j), poly(y, f0), poly(y, f1), poly(y, d0),
                     poly(y, d1), poly(y, hs), alpha_vel)
    set_row4(rot, j, q)
    set_row3(ang, j, w)


@njit(cache=True, inline="always")
def blend_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: blend a and b (poses, or root-motion blocks) with the clamped weight."""
    alpha, alpha_vel = weight_input(sig, ins[IN.alpha])
    if par[PAR.motion_size] > 0.0:  # root motion: a lerp of the two bodies' velocities
        a, b, out = ins[IN.a], ins[IN.b], outs[OUT.pose]
        for c in range(int(par[PAR.motion_size])):
            sig[out + c] = sig[a + c] + alpha * (sig[b + c] - sig[a + c])
        return
    blend_kernel(slot(pose, ins[IN.a]), slot(pose, ins[IN.b]), alpha, alpha_vel, slot(pose, outs[OUT.pose]))


@njit(cache=True, own_code=True)
def blend_tile(ins, outs, par, st, tile, sig, db, dt):
    """The executor's call on a lane tile: each lane's own weight (``animgraph.lanes_ops.blend_tile``, float32)."""
    if par[PAR.motion_size] > 0.0:
        return False  # root-motion blocks: a few numbers, lane by lane
    joints = db[DB_PARENTS].shape[0]
    own_w, own_dw = np.empty(LANES, np.float32), np.empty(LANES, np.float32)
    own_coef = np.empty(5 * NCOEF * LANES, np.float32)
    alpha, alpha_vel, coef = borrowed(own_w), borrowed(own_dw), borrowed(own_coef)  # uncounted in the loops
    for lane in range(LANES):
        w, dw = weight_input(sig[lane], ins[IN.alpha])
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

    def input_weights(self):
        """a at 1 - alpha, b at alpha (sync groups, ``animgraph.node``)."""
        return {"a": Weight("alpha", -1.0, 1.0), "b": Weight("alpha")}

    def inputs(self):
        return MOTION_INPUTS if self.signal == "motion" else self.INPUTS

    def outputs(self):
        return MOTION_OUTPUTS if self.signal == "motion" else self.OUTPUTS

    def params(self, ctx):
        return PAR.pack(motion_size=SIGNAL_SIZE["motion"] if self.signal == "motion" else 0)


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
