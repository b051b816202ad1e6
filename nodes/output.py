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
A signal output copies its input.
"""

from typing import ClassVar, Literal

import numpy as np
from numba import njit

from animgraph.kernels import read3
from animgraph.maths import body_step, kmul, load_kform, qmul, qnormalize, qrot, store_kform, vadd, vscale
from animgraph.node import SIGNAL_SIZE, Node, Port, register, slot

POSE, SIGNAL = 1.0, 0.0
ZERO = (0.0, 0.0, 0.0)
ONE = (1.0, 1.0, 1.0)


@njit(cache=True)
def place(src, parents, world, every_joint, out):
    """``out = world * src`` on root joints (or on every joint of a global pose)."""
    for j in range(parents.shape[0]):
        k = load_kform(src, j)
        if every_joint or parents[j] < 0:
            k = kmul(world, k)
        store_kform(out, j, k)


@njit(cache=True)
def advance_placement(pos, rot, vel, ang, dt):
    """Placement (pos m, rot) after ``dt`` s at constant body-frame velocity ``vel`` (m/s) and ``ang`` (rad/s)."""
    disp, turn = body_step(vel, ang, dt)
    return vadd(pos, qrot(rot, disp)), qnormalize(qmul(rot, turn))


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    if par[0] != POSE:
        for i in range(int(par[1])):
            sig[outs[0] + i] = sig[ins[0] + i]
        return
    vel, ang = ZERO, ZERO
    if ins[1] >= 0:
        vel, ang = read3(sig, ins[1]), read3(sig, ins[1] + 3)
        integrate_motion(st, vel, ang, dt)
    pos = (st[0], st[1], st[2])
    rot = (st[3], st[4], st[5], st[6])
    world = (pos, rot, ONE, qrot(rot, vel), qrot(rot, ang), ZERO)
    place(slot(pose, ins[0]), db[3], world, par[1] != 0.0, slot(pose, outs[0]))


@njit(cache=True)
def integrate_motion(st, vel, ang, dt):
    """Advance the placement ``st[0:7]`` over the last step by the mean of its two end motions (trapezoid).

    ``st[7:15]``: the last frame's motion (6), the step that followed it (s), whether there is one.
    The first frame after a reset has no step to cover.
    """
    if st[14] > 0.5:
        mean_vel = vscale(vadd(read3(st, 7), vel), 0.5)
        mean_ang = vscale(vadd(read3(st, 10), ang), 0.5)
        pos, rot = advance_placement((st[0], st[1], st[2]), (st[3], st[4], st[5], st[6]), mean_vel, mean_ang, st[13])
        st[0], st[1], st[2] = pos
        st[3], st[4], st[5], st[6] = rot
    st[7], st[8], st[9] = vel
    st[10], st[11], st[12] = ang
    st[13] = dt
    st[14] = 1.0


@register(run)
class Output(Node):
    """A graph output, returned by ``Instance.step`` under the node id; a pose output holds the world placement."""

    type: Literal["output"] = "output"
    signal: Literal["pose", "scalar", "vec3", "quat", "int", "bool", "motion"] = "pose"

    INPUTS = (Port("pose", "pose", "any", "the pose to output ('value' port when signal is not 'pose')"),)
    OUTPUTS = (Port("pose", "pose", "any", "the output as returned, teleports applied"),)
    MOTION: ClassVar[Port] = Port("motion", "motion", "", "root motion integrated into the world placement (pose outputs)", True)
    GRAPH_OUTPUT: ClassVar[bool] = True

    def _port(self):
        if self.signal == "pose":
            return Port("pose", "pose", "any", "the output pose, local or global")
        return Port("value", self.signal, "", "the output value")

    def inputs(self):
        return (self._port(), self.MOTION) if self.signal == "pose" else (self._port(),)

    def outputs(self):
        return (self._port(),)

    def params(self, ctx):
        if self.signal != "pose":
            return np.array([SIGNAL, SIGNAL_SIZE[self.signal]], np.float64)
        space = ctx.input_space(self, "pose") if hasattr(ctx, "input_space") else "local"
        return np.array([POSE, 1.0 if space == "global" else 0.0])

    def state(self, ctx, time=0.0):
        if self.signal != "pose":
            return np.zeros(0)
        # World placement pos, rot (w-first); then the last frame's root motion, its step (s), whether any.
        return np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0] + [0.0] * 8)
