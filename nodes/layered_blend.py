"""Layered blend: a second pose over chosen branches of the skeleton (Unreal's "layered blend per bone").

Each joint blends from ``base`` towards ``layer`` by its own weight ``α m_j``: ``m_j`` is the
joint's mask weight, from the ``branches`` (a joint and every joint below it), ramping in
over ``depth`` levels below the branch's root (level k gets ``(k + 1) / (depth + 1)`` of the
branch's weight; the largest where branches overlap); ``α`` is the overall weight with its
rate.  Per joint this is the two-pose blend (``maths.blend_kform``) at weight ``α m_j`` and
rate ``α' m_j``, so every velocity is exact and joints outside every branch are the base.
"""

from typing import List, Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field

from animgraph.args import broadcast_poses, check_scales, weights
from animgraph.branches import MAX_BRANCHES, Branch, branch_mask, mask_weights
from animgraph.fades import layer_kernel
from animgraph.kernels import weight_input
from animgraph.limits import unit_field
from animgraph.node import Node, Port, Weight, port_indices, register, slot
from animgraph.pose import Pose, pose_arg
from animgraph.stencil import stencil

INPUTS = (
    Port("base", "pose", "any", "pose everywhere outside the branches"),
    Port("layer", "pose", "any", "pose over the branches, same space as base"),
    Port("alpha", "scalar", "", "overall weight and its rate (1/s), clamped to [0, 1]", True),
)
OUTPUTS = (Port("pose", "pose", "any", "the layered pose, in the inputs' space"),)
IN, OUT = port_indices("LayeredBlendIn", INPUTS), port_indices("LayeredBlendOut", OUTPUTS)
# Parameters: one mask weight per joint (alpha is a signal always: the planner feeds an unlinked port its field).


@njit(cache=True, inline="always")
def layered_blend_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: base and layer slots, the weight signal, the mask (the parameters)."""
    alpha, alpha_vel = weight_input(sig, ins[IN.alpha])
    layer_kernel(slot(pose, ins[IN.base]), slot(pose, ins[IN.layer]), par, alpha, alpha_vel,
                         slot(pose, outs[OUT.pose]))


@register(layered_blend_node)
class LayeredBlend(Node):
    """Blend a layer pose over chosen branches of the skeleton, ramping in over a depth; the rest stays the base."""

    type: Literal["layered_blend"] = "layered_blend"
    branches: List[Branch] = Field(min_length=1, max_length=MAX_BRANCHES, description="the joints the layer covers")
    alpha: float = unit_field(1.0, "overall weight of the layer")

    CATEGORY = "blends"
    FIELD_KINDS = {"branches": "branches"}
    EXAMPLE = {"branches": [{"joint": "spine", "depth": 1}]}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def input_weights(self):
        """The layer at alpha times its largest branch weight, the base at 1 (sync groups, ``animgraph.node``)."""
        return {"layer": Weight("alpha", scale=max(b.weight for b in self.branches))}

    def params(self, ctx):
        """The per-joint mask (plan time: joint names to weights)."""
        return branch_mask(ctx, self, "branches", self.branches)


def layered_blend(base, layer, mask, alpha=1.0, alpha_vel=0.0):
    """Pose from ``base`` towards ``layer`` per joint at weight ``alpha * mask[j]`` (mask (J,) in [0, 1]); any batch shape."""
    base, layer = pose_arg(base, "base"), pose_arg(layer, "layer")
    check_scales(base, layer)
    mask = np.asarray(mask, np.float64)
    if mask.shape != (base.joints,) or not np.all((mask >= 0.0) & (mask <= 1.0)):
        raise ValueError(f"mask must be {base.joints} weights in [0, 1], got shape {mask.shape}")
    shape, (base, layer) = broadcast_poses(base, layer, names=("base", "layer"))
    alpha, alpha_vel = weights(shape, alpha, alpha_vel)
    out = Pose.identity(base.joints, shape)
    for n, (a, b, dst) in enumerate(zip(base.items(), layer.items(), out.items())):
        layer_kernel(a, b, mask, alpha[n], alpha_vel[n], dst)
    return out


def _upper_body(skel):
    """The spine joint, or the root's first child on a skeleton without canonical names."""
    try:
        return skel.index("spine")
    except ValueError:
        return next((j for j in range(len(skel)) if skel.parents[j] == 0), 0)


def verify_layered_blend(m, t, h, rng):
    """The backwards clip over the upper body (ramping in over 2 levels), with a swinging weight."""
    mask = mask_weights(m.parents, [(_upper_body(m.skel), 1.0, 2)])
    return [stencil(lambda s: layered_blend(m.pose(s), m.other(s), mask, *m.weight(s)), t, h)]


LayeredBlend.OP, LayeredBlend.VERIFY = layered_blend, verify_layered_blend
