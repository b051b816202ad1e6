"""Backward kinematics: global pose -> local pose, velocities included (inverse of FK).

Each joint's local kineform is ``kdiv(parent_global, global)``, exact at any scale.
"""

from typing import Literal

import numpy as np
from numba import njit

from animgraph.maths import kdiv, load_kform, store_kform
from animgraph.node import Node, Port, register, slot
from animgraph.pose import Pose, parents_arg, pose_arg


@njit(cache=True)
def bk_kernel(glob, parents, out):
    """Local pose tuple ``out`` from global pose tuple ``glob``."""
    for j in range(parents.shape[0]):
        k = load_kform(glob, j)
        p = parents[j]
        if p >= 0:
            k = kdiv(load_kform(glob, p), k)
        store_kform(out, j, k)


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    bk_kernel(slot(pose, ins[0]), db[3], slot(pose, outs[0]))


@register(run)
class BK(Node):
    """Global (model-space) pose to local pose."""

    type: Literal["bk"] = "bk"

    INPUTS = (Port("pose", "pose", "global", "model-space pose"),)
    OUTPUTS = (Port("pose", "pose", "local", "parent-relative pose"),)


def bk(glob, parents):
    """Local pose from a global pose (model space) of any batch shape."""
    glob = pose_arg(glob, "global_")
    parents, _ = parents_arg(parents, glob.joints)
    out = Pose.identity(glob.joints, glob.batch)
    for src, dst in zip(glob.items(), out.items()):
        bk_kernel(src, parents, dst)
    return out
