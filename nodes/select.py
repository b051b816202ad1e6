"""Select one of N poses (or N signals of one kind) by an integer index, and say when the choice changes.

The output is a copy of input ``in{i}`` with ``i = clamp(round(index), 0, N-1)``, velocities
included: a hard switch (a root-motion signal switches with its pose through a second
select on the same index), so the ``changed`` event (1.0 on the frame the clamped index
differs from the previous frame's, else 0.0) is what a downstream transition (inertialize,
dead blend) hangs off.  The state holds the previous index; -1 after a reset, so the first
frame is never a change.
"""

import math
from typing import Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field, model_validator

from animgraph.kernels import copy_pose
from animgraph.node import SIGNAL_SIZE, Node, Port, Weight, fields, port_indices, register, slot
from animgraph.pose import Pose, pose_arg
from animgraph.stencil import stencil

MAX_COUNT = 64  # inputs at most

# Inputs in0 .. in{count-1} (input i at position i), then the index port at position ``count`` (``Select.inputs``).
INDEX = Port("index", "int", "", "input to pass through, clamped to range", True)
OUTPUTS = (
    Port("pose", "pose", "any", "the selected pose ('value' when signal is not 'pose')"),
    Port("changed", "bool", "", "1 on the frame the selected index changes, else 0"),
)
OUT = port_indices("SelectOut", OUTPUTS)  # 'pose' is 'value' for a signal: the same position
# The number of inputs, the index used while the index port is unlinked, the signal block size (0: poses).
PAR = fields("SelectPar", count=1, size=1)  # index: a signal always (the planner feeds an unlinked port its field)
ST = fields("SelectSt", index=1)  # the previous frame's index; -1 after a reset


@njit(cache=True)
def clamp_index(x, count):
    """``round(x)`` clamped to ``[0, count-1]``; NaN gives 0.

    Clamped before the conversion to int: a huge float would wrap to a negative index.
    """
    if not x > 0.0:  # also NaN
        return 0
    return int(math.floor(min(x, count - 1.0) + 0.5))


@njit(cache=True, inline="always")
def select_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: copy the chosen input (pose slot or signal block) to the output; flag a change."""
    count = int(par[PAR.count])
    index_port = count  # the index port follows in0 .. in{count-1}
    index = clamp_index(sig[ins[index_port]], count)
    src = ins[index]
    dst = outs[OUT.pose]
    size = int(par[PAR.size])
    if size > 0:  # a signal: copy its block
        for c in range(size):
            sig[dst + c] = sig[src + c]
    elif src != dst:
        copy_pose(slot(pose, src), slot(pose, dst))  # loops: see copy_rows
    sig[outs[OUT.changed]] = 1.0 if (st[ST.index] >= 0.0 and index != st[ST.index]) else 0.0
    st[ST.index] = index


@register(select_node)
class Select(Node):
    """Pass one of ``count`` poses (or signals) through, chosen by ``index``; ``changed`` fires on a switch."""

    type: Literal["select"] = "select"
    count: int = Field(2, ge=1, le=MAX_COUNT, description=f"number of inputs in0..in{{count-1}} [1, {MAX_COUNT}]")
    index: int = Field(
        0, ge=0, le=MAX_COUNT - 1, description="input chosen while the index port is unlinked [0, count-1]"
    )
    signal: Literal["pose", "motion", "scalar", "vec3", "quat", "int", "bool"] = Field(
        "pose", description="what is selected: poses, or signals of this kind (output port 'value')"
    )

    CATEGORY = "transitions"
    FIELD_KINDS = {"signal": "signal"}
    OUTPUTS = OUTPUTS

    def outputs(self):
        if self.signal == "pose":
            return self.OUTPUTS
        return (Port("value", self.signal, "", "the selected signal"), self.OUTPUTS[OUT.changed])

    @model_validator(mode="after")
    def _index_in_range(self):
        if self.index >= self.count:
            raise ValueError(f"index {self.index} out of range for count {self.count}")
        return self

    def input_weights(self):
        """1 for the selected input (the index rounded and clamped as the kernel does), 0 for the others."""
        last, far = self.count - 1, float(2 * MAX_COUNT)  # the kernel clamps the index into range
        return {f"in{i}": Weight("index", between=(-far if i == 0 else i, far if i == last else i))
                for i in range(self.count)}

    def inputs(self):
        space = "any" if self.signal == "pose" else ""
        items = tuple(Port(f"in{i}", self.signal, space, f"input {i}") for i in range(self.count))
        return items + (INDEX,)

    def params(self, ctx):
        size = 0 if self.signal == "pose" else SIGNAL_SIZE[self.signal]
        return PAR.pack(count=self.count, size=size)

    def state(self, ctx, time=0.0):
        """Previous index; -1 means no previous frame (the next frame is not a change)."""
        return ST.pack(index=-1.0)


def select(poses, index):
    """The pose ``poses[index]`` (index clamped to range; an int array picks per batch item)."""
    if not isinstance(poses, (list, tuple)):
        raise ValueError(f"poses must be a list of Poses, got {type(poses).__name__}")
    poses = [pose_arg(p, f"poses[{i}]") for i, p in enumerate(poses)]
    if not poses:
        raise ValueError("select needs at least one pose")
    idx = np.asarray(index)
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"select index must be integer, got {idx.dtype}")
    idx = np.clip(idx, 0, len(poses) - 1)
    if idx.ndim == 0:
        return poses[int(idx)].copy()
    shapes = {p.pos.shape for p in poses}
    if len(shapes) != 1:
        raise ValueError(f"select poses differ in shape: {sorted(shapes)}")
    batch = poses[0].batch
    idx = np.broadcast_to(idx, batch)[None, ..., None, None]
    channels = []
    for f in range(6):
        stack = np.stack([p.as_tuple()[f] for p in poses])
        channels.append(np.take_along_axis(stack, idx, axis=0)[0])
    return Pose(*channels)


def verify_select(m, t, h, rng):
    """One of the two moving poses, chosen per test time."""
    index = rng.integers(0, 2, len(t))
    return [stencil(lambda s: select([m.pose(s), m.other(s)], index), t, h)]


Select.OP, Select.VERIFY = select, verify_select
