"""Two-bone IK: rotate a root and a mid joint so the end joint reaches a moving target.

The node and its op around the analytic solve in ``animgraph.ik`` (model space, exact
velocities, clamped reach, bend plane from the current knee or the ``hinge`` axis; see
there), weighted by ``weight`` with its rate.
"""

from typing import Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field, field_validator

from animgraph.args import check_axis, check_chain, joint_index, per_item, skeleton_parents
from animgraph.errors import GraphError
from animgraph.ik import apply_two_bone
from animgraph.kernels import copy_pose
from animgraph.lanes import JOINT, LANES, ROT, SCL, tile_slot
from animgraph.lanes_ik import SOLVED, two_bone_ik_tile as two_bone_lanes
from animgraph.limits import AXIS_MAX, INDEX_MAX, Axis, JointName, unit_field
from animgraph.node import DB_PARENTS, Node, Port, fields, port_indices, register, slot
from animgraph.pose import Pose, number
from animgraph.stencil import ramp, stencil
from animgraph.views import alive, borrowed

INPUTS = (
    Port("pose", "pose", "local", "parent-relative pose"),
    Port("target", "vec3", "", "end target in model space (m, m/s)"),
    Port("weight", "scalar", "", "blend weight with its rate (1/s); the field when unlinked", optional=True),
)
OUTPUTS = (Port("pose", "pose", "local", "parent-relative pose with the chain solved"),)
IN, OUT = port_indices("TwoBoneIKIn", INPUTS), port_indices("TwoBoneIKOut", OUTPUTS)
# joint indices of the chain, the mid joint's hinge axis (weight: a signal always, the planner feeds an unlinked port its field)
PAR = fields("TwoBoneIKPar", root=1, mid=1, end=1, hinge=3)

# ---------------------------------------------------------------- kernel


@njit(cache=True)
def two_bone_ik_kernel(local, parents, ja, jb, jc, hinge, tpos, tvel, w, dw, out):
    """Local pose tuple ``out``: ``local`` with joints ``ja``, ``jb`` turned so ``jc`` reaches the target."""
    copy_pose(local, out)
    apply_two_bone(out, parents, ja, jb, jc, hinge, tpos, tvel, w, dw)


# ---------------------------------------------------------------- node


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def two_bone_ik_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: solve the chain of the input pose for the target signal, into the output slot."""
    t = ins[IN.target]
    tpos = (sig[t], sig[t + 1], sig[t + 2])
    tvel = (sig[t + 3], sig[t + 4], sig[t + 5])
    w, dw = sig[ins[IN.weight]], sig[ins[IN.weight] + 1]
    hinge = (par[PAR.hinge], par[PAR.hinge + 1], par[PAR.hinge + 2])
    ja, jb, jc = int(par[PAR.root]), int(par[PAR.mid]), int(par[PAR.end])
    out = slot(pose, outs[OUT.pose])
    if ins[IN.pose] != outs[OUT.pose]:  # else in place (IN_PLACE): only the chain's two joints are written
        copy_pose(slot(pose, ins[IN.pose]), out)
    apply_two_bone(out, db[DB_PARENTS], ja, jb, jc, hinge, tpos, tvel, w, dw)


@njit(cache=True, own_code=True)
def two_bone_ik_tile(ins, outs, par, st, tile, sig, db, dt):
    """The executor's call on a lane tile (``animgraph.lanes_ik.two_bone_ik_tile``, float32) when every lane's
    weight is 1 at rate 0; otherwise lane by lane."""
    t = ins[IN.target]
    own_p, own_v = np.empty(3 * LANES, np.float32), np.empty(3 * LANES, np.float32)
    tpos, tvel = borrowed(own_p), borrowed(own_v)  # uncounted in the loops (as every scratch below)
    for lane in range(LANES):
        s = sig[lane]
        w, dw = s[ins[IN.weight]], s[ins[IN.weight] + 1]
        if w != 1.0 or dw != 0.0:
            return False
        for c in range(3):
            tpos[c * LANES + lane], tvel[c * LANES + lane] = s[t + c], s[t + 3 + c]
    parents = db[DB_PARENTS]
    joints = parents.shape[0]
    ja, jb, jc = int(par[PAR.root]), int(par[PAR.mid]), int(par[PAR.end])
    # The path from a root joint down to the end joint, and where root and mid lie on it.
    n, j = 0, jc
    while j >= 0:
        n, j = n + 1, parents[j]
    own_path = np.empty(n, np.int64)
    path = borrowed(own_path)
    j = jc
    for i in range(n - 1, -1, -1):
        path[i], j = j, parents[j]
    ia, ib = 0, 0
    for i in range(n):
        if path[i] == ja:
            ia = i
        if path[i] == jb:
            ib = i
    own_glob = np.zeros((n + 1) * JOINT, np.float32)
    glob = borrowed(own_glob)
    for i in range(LANES):  # joint 0 of glob: the identity kineform (rot w and scale 1)
        glob[ROT * LANES + i] = 1.0
        for c in range(3):
            glob[(SCL + c) * LANES + i] = 1.0
    own_hinge, own_parent, own_solved = np.empty(3, np.float32), np.empty(JOINT, np.float32), \
        np.empty(SOLVED * LANES, np.float32)
    for c in range(3):
        own_hinge[c] = par[PAR.hinge + c]
    # int64 casts: numba would otherwise also compile a copy for the literal 0 that ia and ib start from
    two_bone_lanes(tile_slot(tile, ins[IN.pose], joints), path, np.int64(ia), np.int64(ib), np.int64(n - 1),
                   borrowed(own_hinge), tpos, tvel, tile_slot(tile, outs[OUT.pose], joints), glob,
                   borrowed(own_parent), borrowed(own_solved))
    alive(own_p), alive(own_v), alive(own_path), alive(own_glob), alive(own_hinge), alive(own_parent), alive(own_solved)
    return True


@register(two_bone_ik_node, tile=two_bone_ik_tile)
class TwoBoneIK(Node):
    """Analytic two-joint IK: rotates ``root`` and ``mid`` so ``end`` reaches the target (model space)."""

    type: Literal["two_bone_ik"] = "two_bone_ik"
    root: JointName = Field(description=f"upper joint, e.g. left_hip (a name, or an index 0..{INDEX_MAX})")
    mid: JointName = Field(description="middle joint, e.g. left_knee (bends in its current plane)")
    end: JointName = Field(description="end joint, e.g. left_foot")
    hinge: Axis = Field(
        (1.0, 0.0, 0.0),
        description="mid joint's hinge axis in its own frame: the bend plane of a straight chain "
        f"(CMU knees: [0.94, 0.342, 0] left, [0.94, -0.342, 0] right; components within ±{AXIS_MAX:g}, not all 0)",
    )
    weight: float = unit_field(1.0, "0 leaves the pose, 1 reaches the target")

    CATEGORY = "IK"
    IN_PLACE = {"pose": "pose"}
    FIELD_KINDS = {"root": "joint", "mid": "joint", "end": "joint", "hinge": "axis"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    @field_validator("hinge")
    @classmethod
    def _hinge_nonzero(cls, v):
        return check_axis(v, "hinge")

    def params(self, ctx):
        root, mid, end = (ctx.joint(self, name, getattr(self, name)) for name in ("root", "mid", "end"))
        msg = check_chain(ctx.skeleton.parents, root, mid, end)
        if msg:
            raise GraphError(msg, node=self.id, port="root")
        return PAR.pack(root=root, mid=mid, end=end, hinge=self.hinge)


# ---------------------------------------------------------------- op


def two_bone_ik(local, parents, joints, target_pos, target_vel=(0.0, 0.0, 0.0), weight=1.0, weight_vel=0.0,
                hinge=(1.0, 0.0, 0.0)):
    """Local pose with ``joints = (root, mid, end)`` solved so ``end`` reaches the target.

    ``parents`` a Skeleton (joint names work) or a parents array; target position (m)
    and velocity (m/s) in model space, shape (3,) or the pose's batch shape + (3,);
    ``weight`` in [0, 1] with rate ``weight_vel`` (1/s); ``hinge`` the mid joint's hinge
    axis in its own frame (the bend plane of a straight chain).  Velocities are exact.
    """
    parents, skel = skeleton_parents(parents, local)
    if not isinstance(joints, (list, tuple)) or len(joints) != 3:
        raise ValueError(f"two_bone_ik needs joints (root, mid, end), got {joints!r}")
    ja, jb, jc = (joint_index(skel, parents, j) for j in joints)
    msg = check_chain(parents, ja, jb, jc)
    if msg:
        raise ValueError(msg)
    hinge = check_axis(hinge, "hinge")
    out = Pose.identity(local.joints, local.batch)
    tp = per_item(target_pos, local.batch, 3, "target_pos")
    tv = per_item(target_vel, local.batch, 3, "target_vel")
    weight, weight_vel = number(weight, "weight", 0.0, 1.0), number(weight_vel, "weight_vel")
    for n, (src, dst) in enumerate(zip(local.items(), out.items())):
        two_bone_ik_kernel(src, parents, ja, jb, jc, hinge, tuple(tp[n]), tuple(tv[n]), weight, weight_vel, dst)
    return out


# ---------------------------------------------------------------- verify


def verify_two_bone_ik(m, t, h, rng):
    """The leg reaches for a point circling above the animated foot, the weight ramping."""

    def f(s):
        return two_bone_ik(m.pose(s), m.skel, m.leg[:3], *m.reach_target(s), *ramp(s - t))

    return [stencil(f, t, h)]


TwoBoneIK.OP, TwoBoneIK.VERIFY = two_bone_ik, verify_two_bone_ik
