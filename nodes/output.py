"""Graph output: what ``Instance.step`` returns under this node's id.

A pose output holds the character's world placement ``W`` (state, per character),
composed onto the root joints of a local pose (or every joint of a global one):
``out = W * in``.  Without root motion ``W`` is static: a teleport (a change of ``W``)
moves every global position by exactly the teleport while the next frame's velocities
are those of the unmoved pose, rotated by W's rotation only.

With its ``motion`` input linked (a root-motion signal: velocity ``v`` and angular
velocity ``w`` in W's own frame) the output is the integrator of root motion: ``W``
moves at world velocity ``R v`` and angular velocity ``R w`` this frame, so the output's
velocities carry the root motion exactly (leverage included).  Each frame ``W`` first
covers the step since the last frame as the exact arc of a body moving at the mean of
the two frames' motions ``(v, w)`` (the trapezoid rule: second order in the step):
``rot' = rot exp(w dt)``, ``pos' = pos + R J(w dt) v dt`` (``J`` the left Jacobian of exp).
Blends and switches act on the signal, so the placement never jumps.

With its ``position`` (vec3) or ``rotation`` (quat) input linked (a placement computed in
the graph, e.g. by the displacement node) the placement is that input, with its
velocities: ``W = S * (p, q)``, where ``S`` is the held placement (the identity unless
``Instance.teleport`` moved it, so teleports still move the character).  An unlinked one
of the two is the origin (identity); ``motion`` is then not integrated.
A signal output copies its input.
"""

from typing import ClassVar, Literal

import numpy as np
from animgraph.jit import njit

from animgraph.kernels import copy_pose, read3, write3
from animgraph.lanes import tile_slot
from animgraph.maths import body_step, kmul, load_kform, qmul, qnormalize, qrot, store_kform, vadd, vscale
from animgraph.node import DB_PARENTS, SIGNAL_SIZE, Node, Port, fields, port_indices, register, slot

POSE, SIGNAL = 1.0, 0.0
ZERO = (0.0, 0.0, 0.0)
ONE = (1.0, 1.0, 1.0)

# A signal output has only its first port ('value', the same position); motion is for pose outputs.
INPUTS = (
    Port("pose", "pose", "any", "the pose to output ('value' port when signal is not 'pose')"),
    Port("motion", "motion", "", "root motion integrated into the world placement (pose outputs)", True),
    Port("position", "vec3", "", "the world placement's position with its velocity (pose outputs)", True),
    Port("rotation", "quat", "", "the world placement's rotation with its angular velocity (pose outputs)", True),
)
OUTPUTS = (Port("pose", "pose", "any", "the output as returned, teleports applied"),)
IN, OUT = port_indices("OutputIn", INPUTS), port_indices("OutputOut", OUTPUTS)
# Parameters of a pose output: POSE, and whether the pose is global (the placement applies to every joint).
POSE_PAR = fields("OutputPosePar", mode=1, every_joint=1)
# Parameters of a signal output: SIGNAL, and the signal's block size.
SIGNAL_PAR = fields("OutputSignalPar", mode=1, size=1)
# State of a pose output (a signal output has none): the world placement (its hooks move and keep it),
# then the last frame's root motion, the step (s) that followed it and whether there is one.
ST = fields("OutputSt", pos=3, rot=4, last_vel=3, last_ang=3, last_dt=1, has_last=1)


@njit(cache=True, own_code=True)
def place(src, parents, world, every_joint, out):
    """``out = world * src`` on root joints (or on every joint of a global pose); a copy when ``world`` is the identity.

    ``out`` may be ``src`` (in place, ``IN_PLACE``): each row is read before it is written.
    """
    if is_identity(world):  # graphs without root motion or teleports: the product would return each row as is
        if src[0].ctypes.data != out[0].ctypes.data:
            copy_pose(src, out)
        return
    for j in range(parents.shape[0]):
        k = load_kform(src, j)
        if every_joint or parents[j] < 0:
            k = kmul(world, k)
        store_kform(out, j, k)


@njit(cache=True)
def is_identity(world):
    """Whether placement kineform ``world`` (its scale and svl are always 1 and 0) is the identity, at rest."""
    pos, rot, _, vel, ang, _ = world
    return (pos == ZERO and vel == ZERO and ang == ZERO
            and rot[0] == 1.0 and rot[1] == 0.0 and rot[2] == 0.0 and rot[3] == 0.0)


@njit(cache=True)
def advance_placement(pos, rot, vel, ang, dt):
    """Placement (pos m, rot) after ``dt`` s at constant body-frame velocity ``vel`` (m/s) and ``ang`` (rad/s)."""
    disp, turn = body_step(vel, ang, dt)
    return vadd(pos, qrot(rot, disp)), qnormalize(qmul(rot, turn))


@njit(cache=True, inline="always")
def output_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: copy a signal, or place the pose in the world (integrating its root motion)."""
    if par[POSE_PAR.mode] != POSE:
        for i in range(int(par[SIGNAL_PAR.size])):
            sig[outs[OUT.pose] + i] = sig[ins[IN.pose] + i]
        return
    if ins[IN.position] >= 0 or ins[IN.rotation] >= 0:
        world = linked_placement(st, sig, ins[IN.position], ins[IN.rotation])
    else:
        vel, ang = ZERO, ZERO
        if ins[IN.motion] >= 0:
            vel, ang = read3(sig, ins[IN.motion]), read3(sig, ins[IN.motion] + 3)
            integrate_motion(st, vel, ang, dt)
        pos, rot = placement(st)
        world = (pos, rot, ONE, qrot(rot, vel), qrot(rot, ang), ZERO)
    every_joint = par[POSE_PAR.every_joint] != 0.0
    place(slot(pose, ins[IN.pose]), db[DB_PARENTS], world, every_joint, slot(pose, outs[OUT.pose]))


@njit(cache=True, entry=True)
def placement(st):
    """The world placement (pos m, rot w-first) held in the state."""
    return (st[ST.pos], st[ST.pos + 1], st[ST.pos + 2]), (st[ST.rot], st[ST.rot + 1], st[ST.rot + 2], st[ST.rot + 3])


@njit(cache=True, own_code=True)
def linked_placement(st, sig, at_pos, at_rot):
    """The world placement ``S * (p, q)`` as a kineform: ``S`` held in the state (static), ``(p, q)`` and their
    velocities from the signals at ``sig[at_pos]`` (vec3) and ``sig[at_rot]`` (quat); -1: origin, identity."""
    pos, vel, rot, ang = ZERO, ZERO, (1.0, 0.0, 0.0, 0.0), ZERO
    if at_pos >= 0:
        pos, vel = read3(sig, at_pos), read3(sig, at_pos + 3)
    if at_rot >= 0:
        rot = qnormalize((sig[at_rot], sig[at_rot + 1], sig[at_rot + 2], sig[at_rot + 3]))
        ang = read3(sig, at_rot + 4)
    held_pos, held_rot = placement(st)
    return kmul((held_pos, held_rot, ONE, ZERO, ZERO, ZERO), (pos, rot, ONE, vel, ang, ZERO))


@njit(cache=True, own_code=True)
def integrate_motion(st, vel, ang, dt):
    """Advance the placement (``ST.pos``, ``ST.rot``) over the last step by the mean of its two end motions (trapezoid).

    ``ST.last_vel``, ``ST.last_ang``: the last frame's motion; ``ST.last_dt`` the step that followed it (s);
    ``ST.has_last`` whether there is one.  The first frame after a reset has no step to cover.
    """
    if st[ST.has_last] > 0.5:
        mean_vel = vscale(vadd(read3(st, ST.last_vel), vel), 0.5)
        mean_ang = vscale(vadd(read3(st, ST.last_ang), ang), 0.5)
        pos, rot = placement(st)
        pos, rot = advance_placement(pos, rot, mean_vel, mean_ang, st[ST.last_dt])
        write3(st, ST.pos, pos)
        st[ST.rot], st[ST.rot + 1], st[ST.rot + 2], st[ST.rot + 3] = rot
    write3(st, ST.last_vel, vel)
    write3(st, ST.last_ang, ang)
    st[ST.last_dt] = dt
    st[ST.has_last] = 1.0


@njit(cache=True, own_code=True)
def output_tile(ins, outs, par, st, tile, sig, db, dt):
    """The executor's call on a lane tile: a copy of the pose when every lane's placement is the identity at rest
    (no root motion, no linked placement, no teleport); otherwise lane by lane."""
    if par[POSE_PAR.mode] != POSE or ins[IN.motion] >= 0 or ins[IN.position] >= 0 or ins[IN.rotation] >= 0:
        return False
    for lane in range(st.shape[0]):
        pos, rot = placement(st[lane])
        if not is_identity((pos, rot, ONE, ZERO, ZERO, ZERO)):
            return False
    joints = db[DB_PARENTS].shape[0]
    if ins[IN.pose] == outs[OUT.pose]:  # in place (IN_PLACE): the identity leaves the pose as it is
        return True
    src, dst = tile_slot(tile, ins[IN.pose], joints), tile_slot(tile, outs[OUT.pose], joints)
    for i in range(dst.shape[0]):
        dst[i] = src[i]
    return True


@register(output_node, tile=output_tile)
class Output(Node):
    """A graph output, returned by ``Instance.step`` under the node id; a pose output holds the world placement."""

    type: Literal["output"] = "output"
    signal: Literal["pose", "scalar", "vec3", "quat", "int", "bool", "motion", "trajectory"] = "pose"

    CATEGORY = "signals"
    FIELD_KINDS = {"signal": "signal"}
    PLUMBING = True
    PLACEMENT: ClassVar[tuple] = INPUTS[IN.motion:]  # a pose output's inputs after the pose
    INPUTS = INPUTS[:IN.motion]
    OUTPUTS = OUTPUTS
    GRAPH_OUTPUT: ClassVar[bool] = True
    IN_PLACE = {"pose": "pose"}  # the placement changes the root joints only (every joint of a global pose)
    RESET = "a reset keeps the world placement (ST.pos, ST.rot): it restarts the animation, not where the character is"

    def _port(self):
        if self.signal == "pose":
            return Port("pose", "pose", "any", "the output pose, local or global")
        return Port("value", self.signal, "", "the output value")

    def inputs(self):
        return (self._port(), *self.PLACEMENT) if self.signal == "pose" else (self._port(),)

    def outputs(self):
        return (self._port(),)

    def params(self, ctx):
        if self.signal != "pose":
            return SIGNAL_PAR.pack(mode=SIGNAL, size=SIGNAL_SIZE[self.signal])
        space = ctx.input_space(self, "pose") if hasattr(ctx, "input_space") else "local"
        return POSE_PAR.pack(mode=POSE, every_joint=space == "global")

    def state(self, ctx, time=0.0):
        if self.signal != "pose":
            return np.zeros(0)
        # World placement at the origin, identity rotation (w-first); no last frame.
        return ST.pack(pos=ZERO, rot=(1.0, 0.0, 0.0, 0.0), last_vel=ZERO, last_ang=ZERO, last_dt=0.0, has_last=0.0)

    def reset(self, op, rows, state):
        """Hook: the state of ``rows`` as ``state`` but for the world placement, which stays."""
        placed = slice(ST.pos, ST.rot + 4)
        if op.st.shape[1] == 0:
            return
        kept = op.st[rows, placed]  # a copy (rows index it)
        op.st[rows] = state
        op.st[rows, placed] = kept

    def teleport(self, op, rows, pos_delta, rot_delta):
        """Hook: the world placement of ``rows`` moved by ``pos_delta`` (m) and turned by ``rot_delta`` about the root.

        It has no velocity, so the next frame's velocities are unchanged (rotated by ``rot_delta`` only).
        """
        if self.signal != "pose":
            return
        for k, c in enumerate(rows):
            pos, rot = placement(op.st[c])
            pivot = tuple(float(x) for x in op.pose[0][c, op.outs[OUT.pose], 0])  # the root where last drawn
            turn = qnormalize(tuple(rot_delta[k]))  # any non-zero quaternion
            moved = qrot(turn, tuple(np.subtract(pos, pivot)))
            op.st[c, ST.pos:ST.pos + 3] = np.add(np.add(moved, pivot), pos_delta[k])
            op.st[c, ST.rot:ST.rot + 4] = qnormalize(qmul(turn, rot))
