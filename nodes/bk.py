"""Backward kinematics: global pose -> local pose, velocities included (inverse of FK).

Each joint's local kineform is ``kdiv(parent_global, global)``, exact at any scale.
"""

from typing import Literal

from animgraph.jit import njit

from animgraph.maths import kdiv, load_kform, store_kform
from animgraph.node import DB_PARENTS, Node, Port, port_indices, register, slot
from animgraph.pose import Pose, parents_arg, pose_arg
from animgraph.stencil import stencil

INPUTS = (Port("pose", "pose", "global", "model-space pose"),)
OUTPUTS = (Port("pose", "pose", "local", "parent-relative pose"),)
IN, OUT = port_indices("BKIn", INPUTS), port_indices("BKOut", OUTPUTS)


@njit(cache=True, own_code=True)
def bk_kernel(glob, parents, out):
    """Local pose tuple ``out`` from global pose tuple ``glob``."""
    for j in range(parents.shape[0]):
        k = load_kform(glob, j)
        p = parents[j]
        if p >= 0:
            k = kdiv(load_kform(glob, p), k)
        store_kform(out, j, k)


@njit(cache=True, inline="always")
def bk_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the input pose slot to the output slot, parents from the clip database."""
    bk_kernel(slot(pose, ins[IN.pose]), db[DB_PARENTS], slot(pose, outs[OUT.pose]))


@register(bk_node)
class BK(Node):
    """Global (model-space) pose to local pose."""

    type: Literal["bk"] = "bk"

    CATEGORY = "IK"
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS


def bk(glob, parents):
    """Local pose from a global pose (model space) of any batch shape."""
    glob = pose_arg(glob, "global_")
    parents, _ = parents_arg(parents, glob.joints)
    out = Pose.identity(glob.joints, glob.batch)
    for src, dst in zip(glob.items(), out.items()):
        bk_kernel(src, parents, dst)
    return out


def verify_bk(m, t, h, rng):
    """The clip's model-space pose back to local."""
    return [stencil(lambda s: bk(m.glob(s), m.parents), t, h)]


BK.OP, BK.VERIFY = bk, verify_bk
