"""Additive poses: apply a weighted offset pose to a base pose, and make offsets (``difference``).

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

import math
from typing import Literal

from animgraph.jit import njit
from pydantic import Field

from animgraph.poseops import additive_kernel, difference_kernel  # the formulas (module docstring there)
from animgraph.args import broadcast_poses, check_scales, weights
from animgraph.limits import unit_field
from animgraph.node import Node, Port, Weight, fields, port_indices, register, slot
from animgraph.pose import Pose
from animgraph.stencil import stencil

SIDES = ("parent", "local")

INPUTS = (
    Port("base", "pose", "any", "pose the offset is applied to"),
    Port("add", "pose", "any", "additive pose (offsets), from a difference node"),
    Port("alpha", "scalar", "", "weight and its rate (1/s); not clamped, so > 1 exaggerates", True),
)
OUTPUTS = (Port("pose", "pose", "any", "base with the offset applied, in the base's space"),)
IN, OUT = port_indices("AdditiveIn", INPUTS), port_indices("AdditiveOut", OUTPUTS)
PAR = fields("AdditivePar", local_side=1)  # 1: local side (alpha: a signal always, the planner feeds an unlinked port its field)

DIFFERENCE_INPUTS = (
    Port("pose", "pose", "any", "pose to reach"),
    Port("reference", "pose", "any", "reference pose, same space"),
)
DIFFERENCE_OUTPUTS = (Port("pose", "pose", "any", "additive pose (offsets)"),)
DIFFERENCE_IN = port_indices("DifferenceIn", DIFFERENCE_INPUTS)
DIFFERENCE_OUT = port_indices("DifferenceOut", DIFFERENCE_OUTPUTS)
DIFFERENCE_PAR = fields("DifferencePar", local_side=1)  # 1: the additive will be applied on the local side




@njit(cache=True, inline="always")
def additive_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: apply the add pose to the base pose at the weight (non-finite weights give 0)."""
    alpha, alpha_vel = sig[ins[IN.alpha]], sig[ins[IN.alpha] + 1]
    if not (math.isfinite(alpha) and math.isfinite(alpha_vel)):
        alpha = 0.0
        alpha_vel = 0.0
    additive_kernel(
        slot(pose, ins[IN.base]), slot(pose, ins[IN.add]), alpha, alpha_vel, par[PAR.local_side] > 0.5,
        slot(pose, outs[OUT.pose])
    )


@register(additive_node)
class Additive(Node):
    """Apply an additive pose (from ``difference``) to a base pose with a weight and its rate."""

    type: Literal["additive"] = "additive"
    alpha: float = unit_field(1.0, "weight of the additive pose")
    side: Literal["parent", "local"] = Field("parent", description="multiply the offset rotation on this side")

    CATEGORY = "blends"
    FIELD_KINDS = {"side": "enum"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def input_weights(self):
        """The additive pose at alpha (clamped to [0, 1]), the base at 1 (sync groups, ``animgraph.node``)."""
        return {"add": Weight("alpha")}

    def params(self, ctx):
        return PAR.pack(local_side=self.side == "local")


@njit(cache=True, inline="always")
def difference_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the additive pose taking the reference pose to the pose."""
    difference_kernel(slot(pose, ins[DIFFERENCE_IN.pose]), slot(pose, ins[DIFFERENCE_IN.reference]),
                      par[DIFFERENCE_PAR.local_side] > 0.5, slot(pose, outs[DIFFERENCE_OUT.pose]))


@register(difference_node)
class Difference(Node):
    """Additive pose that takes ``reference`` to ``pose`` (for an ``additive`` node at weight 1)."""

    type: Literal["difference"] = "difference"
    side: Literal["parent", "local"] = Field("parent", description="side the additive will be applied on")

    CATEGORY = "blends"
    FIELD_KINDS = {"side": "enum"}
    INPUTS = DIFFERENCE_INPUTS
    OUTPUTS = DIFFERENCE_OUTPUTS

    def params(self, ctx):
        return DIFFERENCE_PAR.pack(local_side=self.side == "local")


def _side(side):
    if not isinstance(side, str) or side not in SIDES:
        raise ValueError(f"side must be 'parent' or 'local', got {side!r}")
    return side == "local"


def additive(base, add, alpha, alpha_vel=0.0, side="parent"):
    """``base`` with additive pose ``add`` applied at weight alpha (alpha_vel in 1/s); any batch shape."""
    local_side = _side(side)
    shape, (base, add) = broadcast_poses(base, add, names=("base", "add"))
    check_scales(base, add)
    alpha, alpha_vel = weights(shape, alpha, alpha_vel)
    out = Pose.identity(base.joints, shape)
    for n, (b, a, dst) in enumerate(zip(base.items(), add.items(), out.items())):
        additive_kernel(b, a, alpha[n], alpha_vel[n], local_side, dst)
    return out


def difference(pose, reference, side="parent"):
    """Additive pose with ``additive(reference, difference(pose, reference), 1, side=side) == pose``."""
    local_side = _side(side)
    shape, (pose, reference) = broadcast_poses(pose, reference, names=("pose", "reference"))
    check_scales(pose, reference)
    out = Pose.identity(pose.joints, shape)
    for p, r, dst in zip(pose.items(), reference.items(), out.items()):
        difference_kernel(p, r, local_side, dst)
    return out


def verify_additive(m, t, h, rng):
    """The backwards clip as an additive pose (against the first frame) on the clip, swinging weight, either side."""
    side = str(rng.choice(["parent", "local"]))

    def f(s):
        add = difference(m.other(s), m.reference, side=side)
        return additive(m.pose(s), add, *m.weight(s), side=side)

    return [stencil(f, t, h)]


def verify_difference(m, t, h, rng):
    """The additive pose taking the backwards clip to the clip, both moving, either side."""
    side = str(rng.choice(["parent", "local"]))
    return [stencil(lambda s: difference(m.pose(s), m.other(s), side=side), t, h)]


Additive.OP, Additive.VERIFY = additive, verify_additive
Difference.OP, Difference.VERIFY = difference, verify_difference
