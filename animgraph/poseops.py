"""Whole-pose kernels below the node layer: forward kinematics, additive offsets and their differences.

The ``fk``, ``additive`` and ``difference`` node types run them, and so does clip preparation
(``animgraph.preprocess``: the simulation bone, seamless loops), which must not reach into node
modules.  Each formula lives here once.

Forward kinematics: each joint's global kineform is its parent's global kineform times its local
one (``kmul``), so the leverage (ang x r) and scale-expansion terms come for free.

Additive poses:
With ``a = log(add.rot)`` (rotation vector, short way round) the weighted offset rotation is
``E = exp(α a)``, turning at ``ωE = J(α a) (α' a + α a')`` with ``a' = J(a)^-1 ωadd`` (``J``
the left Jacobian of exp; at α = 1 this is just ``ωadd + α' a``).
Parent side: ``rot = E base``, ``ang = ωE + R(E) ωbase`` (the base turns inside E).
Local side:  ``rot = base E``, ``ang = ωbase + R(base) ωE`` (the offset turns inside base).
Positions add ``α add.pos`` (velocity ``α add.vel + α' add.pos``), scales multiply by
``exp(α log add.scl)`` (``svl`` adds ``α add.svl + α' log add.scl``).
``difference(pose, ref)`` inverts this at α = 1: parent side ``pose.rot ref.rot^-1``,
local side ``ref.rot^-1 pose.rot``, with the matching angular velocities.
"""

import numpy as np
from animgraph.jit import njit

from .kernels import flat_pose, row_kform, set_row_kform
from .maths import (
    ang_to_sa_dx,
    kmul,
    kmul_unit,
    load_kform,
    qabs,
    qinv,
    qinv_rot,
    qmul,
    qrot,
    store_kform,
    to_scaled_angle_axis,
    unit_frame,
    vadd,
    vdiv,
    vexp,
    vlog,
    vmul,
    vscale,
    vsub,
    weighted_rot,
)
from .pose import Pose


@njit(cache=True, entry=True, own_code=True)
def fk_kernel(local, parents, out):
    """Global pose tuple ``out`` from local pose tuple ``local`` (C-contiguous; rows ordered parents first)."""
    loc, glob = flat_pose(local), flat_pose(out)  # rows at constant strides: fewer address sums per joint
    for j in range(parents.shape[0]):
        k = row_kform(loc, j)
        p = parents[j]
        if p >= 0:
            g = row_kform(glob, p)
            k = kmul_unit(g, k) if unit_frame(g) else kmul(g, k)  # the common case: a third less work
        set_row_kform(glob, j, k)


@njit(cache=True)
def additive_kform(base, add, alpha, alpha_vel, local_side):
    """``base`` with ``add`` applied at weight ``alpha`` (rate ``alpha_vel`` 1/s) on the parent or local side."""
    bp, br, bsc, bv, bw, bsv = base
    ap, ar, asc, av, aw, asv = add
    pos = vadd(bp, vscale(ap, alpha))
    vel = vadd(vadd(bv, vscale(av, alpha)), vscale(ap, alpha_vel))
    a = to_scaled_angle_axis(ar)
    e, e_ang = weighted_rot(a, ang_to_sa_dx(a, aw), alpha, alpha_vel)
    if local_side:
        rot = qmul(br, e)
        ang = vadd(bw, qrot(br, e_ang))
    else:
        rot = qmul(e, br)
        ang = vadd(e_ang, qrot(e, bw))
    la = vlog(asc)
    scl = vmul(bsc, vexp(vscale(la, alpha)))
    svl = vadd(vadd(bsv, vscale(asv, alpha)), vscale(la, alpha_vel))
    return (pos, rot, scl, vel, ang, svl)


@njit(cache=True)
def difference_kform(pose, ref, local_side):
    """The additive kineform that takes ``ref`` to ``pose`` at weight 1 on the given side."""
    pp, pr, psc, pv, pw, psv = pose
    rp, rr, rsc, rv, rw, rsv = ref
    if local_side:
        rot = qabs(qmul(qinv(rr), pr))
        ang = qinv_rot(rr, vsub(pw, rw))
    else:
        rot = qabs(qmul(pr, qinv(rr)))
        ang = vsub(pw, qrot(rot, rw))
    return (vsub(pp, rp), rot, vdiv(psc, rsc), vsub(pv, rv), ang, vsub(psv, rsv))


@njit(cache=True, own_code=True)
def additive_kernel(base, add, alpha, alpha_vel, local_side, out):
    """Apply pose tuple ``add`` to ``base`` row by row into ``out`` (which may alias either)."""
    for j in range(out[0].shape[0]):
        k = additive_kform(load_kform(base, j), load_kform(add, j), alpha, alpha_vel, local_side)
        store_kform(out, j, k)


@njit(cache=True, own_code=True)
def difference_kernel(pose, ref, local_side, out):
    """Additive pose tuple taking ``ref`` to ``pose``, row by row into ``out`` (which may alias either)."""
    for j in range(out[0].shape[0]):
        store_kform(out, j, difference_kform(load_kform(pose, j), load_kform(ref, j), local_side))


# ---------------------------------------------------------------- on whole clips (no argument checks: callers' arrays)


def fk_frames(local, parents):
    """Global ``Pose`` (model space) of local ``Pose`` ``local`` of any batch shape; ``parents`` int64 (J,)."""
    out, parents = Pose.identity(local.joints, local.batch), np.asarray(parents, np.int64)
    for src, dst in zip(local.items(), out.items()):
        fk_kernel(src, parents, dst)
    return out


def additive_frames(base, add, alpha, local_side=False):
    """``base`` with additive ``Pose`` ``add`` (same batch shape) at weights ``alpha`` (scalar or one per item), rate 0."""
    out = Pose.identity(base.joints, base.batch)
    alpha = np.broadcast_to(np.asarray(alpha, np.float64), base.batch).reshape(-1)
    for n, (b, a, dst) in enumerate(zip(base.items(), add.items(), out.items())):
        additive_kernel(b, a, alpha[n], 0.0, local_side, dst)
    return out


def difference_frames(pose, reference, local_side=False):
    """The additive ``Pose`` taking ``reference`` to ``pose`` (same batch shape) at weight 1."""
    out = Pose.identity(pose.joints, pose.batch)
    for p, r, dst in zip(pose.items(), reference.items(), out.items()):
        difference_kernel(p, r, local_side, dst)
    return out
