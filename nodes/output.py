"""Graph output: what ``Instance.step`` returns under this node's id.

A pose output holds the character's world placement: a static kineform ``W`` per
character (state), composed onto the root joints of a local pose (or every joint
of a global one): ``out = W * in``.  ``W`` has no velocity, so a teleport (a change
of ``W``) moves every global position by exactly the teleport while the next
frame's velocities are those of the unmoved pose, rotated by W's rotation only.
A signal output copies its input.
"""

from typing import ClassVar, Literal

import numpy as np
from numba import njit

from animgraph.maths import kmul, load_kform, store_kform
from animgraph.node import SIGNAL_SIZE, Node, Port, register, slot

POSE, SIGNAL = 1.0, 0.0


@njit(cache=True)
def place(src, parents, world, every_joint, out):
    """``out = world * src`` on root joints (or on every joint of a global pose)."""
    for j in range(parents.shape[0]):
        k = load_kform(src, j)
        if every_joint or parents[j] < 0:
            k = kmul(world, k)
        store_kform(out, j, k)


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    if par[0] == POSE:
        z = (0.0, 0.0, 0.0)
        world = ((st[0], st[1], st[2]), (st[3], st[4], st[5], st[6]), (1.0, 1.0, 1.0), z, z, z)
        place(slot(pose, ins[0]), db[3], world, par[1] != 0.0, slot(pose, outs[0]))
    else:
        for i in range(int(par[1])):
            sig[outs[0] + i] = sig[ins[0] + i]


@register(run)
class Output(Node):
    """A graph output, returned by ``Instance.step`` under the node id; a pose output holds the world placement."""

    type: Literal["output"] = "output"
    signal: Literal["pose", "scalar", "vec3", "quat", "int", "bool"] = "pose"

    INPUTS = (Port("pose", "pose", "any", "the pose to output ('value' port when signal is not 'pose')"),)
    OUTPUTS = (Port("pose", "pose", "any", "the output as returned, teleports applied"),)
    GRAPH_OUTPUT: ClassVar[bool] = True

    def _port(self):
        if self.signal == "pose":
            return Port("pose", "pose", "any", "the output pose, local or global")
        return Port("value", self.signal, "", "the output value")

    def inputs(self):
        return (self._port(),)

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
        return np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])  # world placement: pos, rot (w-first)
