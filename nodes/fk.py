"""Forward kinematics: local pose -> global pose, velocities included.

Each joint's global kineform is its parent's global kineform times its local one
(``kmul``), so the leverage (ang x r) and scale-expansion terms come for free.
"""

from typing import Literal

from animgraph.jit import njit

from animgraph.lanes import fk_tile as fk_lanes, tile_slot
from animgraph.poseops import fk_kernel  # the formula, shared with clip preparation
from animgraph.node import DB_PARENTS, Node, Port, port_indices, register, slot
from animgraph.pose import Pose, parents_arg, pose_arg
from animgraph.stencil import stencil

INPUTS = (Port("pose", "pose", "local", "parent-relative pose"),)
OUTPUTS = (Port("pose", "pose", "global", "model-space pose"),)
IN, OUT = port_indices("FKIn", INPUTS), port_indices("FKOut", OUTPUTS)




@njit(cache=True, inline="always")
def fk_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the input pose slot to the output slot, parents from the clip database."""
    fk_kernel(slot(pose, ins[IN.pose]), db[DB_PARENTS], slot(pose, outs[OUT.pose]))


@njit(cache=True, own_code=True)
def fk_tile(ins, outs, par, st, tile, sig, db, dt):
    """The executor's call on a lane tile (``animgraph.lanes.fk_tile``, float32)."""
    parents = db[DB_PARENTS]
    joints = parents.shape[0]
    fk_lanes(tile_slot(tile, ins[IN.pose], joints), parents, tile_slot(tile, outs[OUT.pose], joints))
    return True


@register(fk_node, tile=fk_tile)
class FK(Node):
    """Local pose to global (model-space) pose."""

    type: Literal["fk"] = "fk"

    CATEGORY = "IK"
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS


def fk(local, parents):
    """Global pose (model space, m, m/s, rad/s) from a local pose of any batch shape."""
    local = pose_arg(local, "local")
    parents, _ = parents_arg(parents, local.joints)
    out = Pose.identity(local.joints, local.batch)
    for src, dst in zip(local.items(), out.items()):
        fk_kernel(src, parents, dst)
    return out


def verify_fk(m, t, h, rng):
    """The clip's local pose to model space."""
    return [stencil(lambda s: fk(m.pose(s), m.parents), t, h)]


FK.OP, FK.VERIFY = fk, verify_fk
