"""Forward kinematics: local pose -> global pose, velocities included.

Each joint's global kineform is its parent's global kineform times its local one
(``kmul``), so the leverage (ang x r) and scale-expansion terms come for free.
"""

from typing import Literal

import numpy as np
from numba import njit

from animgraph.maths import kmul, load_kform, store_kform
from animgraph.node import Node, Port, register, slot
from animgraph.pose import Pose, parents_arg, pose_arg


@njit(cache=True)
def fk_kernel(local, parents, out):
    """Global pose tuple ``out`` from local pose tuple ``local`` (rows ordered parents first)."""
    for j in range(parents.shape[0]):
        k = load_kform(local, j)
        p = parents[j]
        if p >= 0:
            k = kmul(load_kform(out, p), k)
        store_kform(out, j, k)


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    fk_kernel(slot(pose, ins[0]), db[3], slot(pose, outs[0]))


@register(run)
class FK(Node):
    """Local pose to global (model-space) pose."""

    type: Literal["fk"] = "fk"

    INPUTS = (Port("pose", "pose", "local", "parent-relative pose"),)
    OUTPUTS = (Port("pose", "pose", "global", "model-space pose"),)


def fk(local, parents):
    """Global pose (model space, m, m/s, rad/s) from a local pose of any batch shape."""
    local = pose_arg(local, "local")
    parents, _ = parents_arg(parents, local.joints)
    out = Pose.identity(local.joints, local.batch)
    for src, dst in zip(local.items(), out.items()):
        fk_kernel(src, parents, dst)
    return out
