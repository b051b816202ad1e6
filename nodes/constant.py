"""Constant: a fixed signal (rate 0), or a fixed local pose (zero velocities).

A pose constant is the skeleton's rest pose (offsets, identity rotations, unit
scales) or one frame of a clip asset.  Its values live in the parameters, so
``Instance.set_param`` changes them without re-planning.
"""

from typing import Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field, model_validator

from animgraph.errors import GraphError
from animgraph.limits import INDEX_MAX, SIGNAL_MAX, SignalValue, normalize_value, signal_value
from animgraph.lanes import ANG, JOINT, LANES, POS, ROT, SCL, SVL, VEL, tile_slot
from animgraph.node import DB_PARENTS, SIGNAL_SIZE, Node, Port, fields, port_indices, register, slot

POSE, SIGNAL = 1.0, 0.0

OUTPUTS = (Port("value", "any", "", "the constant ('pose' port, local, when signal is 'pose')"),)
OUT = port_indices("ConstantOut", OUTPUTS)  # 'value' is 'pose' for a pose constant: the same position
# POSE or SIGNAL; the value follows at VALUE (= PAR.SIZE): a signal's block (SIGNAL_SIZE of its kind), or a
# pose's blocks of POSE_JOINT widths per joint (block ``pos`` at ``VALUE + POSE_JOINT.pos * joints``, ...).
PAR = fields("ConstantPar", mode=1)
VALUE = PAR.SIZE  # where the value starts (a plain int: numba does not see the layout's class attributes)
POSE_JOINT = fields("ConstantPoseJoint", pos=3, rot=4, scl=3)


@njit(cache=True)
def write_pose(values, out):
    """Write pos/rot/scl rows from the flat ``values`` (POSE_JOINT blocks) into pose tuple ``out``, velocities zero."""
    pos, rot, scl, vel, ang, svl = out
    n = pos.shape[0]
    for j in range(n):
        for a in range(3):
            pos[j, a] = values[POSE_JOINT.pos * n + 3 * j + a]
            scl[j, a] = values[POSE_JOINT.scl * n + 3 * j + a]
            vel[j, a] = 0.0
            ang[j, a] = 0.0
            svl[j, a] = 0.0
        for a in range(4):
            rot[j, a] = values[POSE_JOINT.rot * n + 4 * j + a]


@njit(cache=True, inline="always")
def constant_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: write the constant pose (zero velocities) or signal block to the output."""
    if par[PAR.mode] == POSE:
        write_pose(par[VALUE:], slot(pose, outs[OUT.value]))
    else:
        o = outs[OUT.value]
        for i in range(par.shape[0] - VALUE):
            sig[o + i] = par[VALUE + i]


@njit(cache=True, own_code=True)
def constant_tile(ins, outs, par, st, tile, sig, db, dt):
    """The executor's call on a lane tile: a constant pose in every lane; a signal lane by lane."""
    if par[PAR.mode] != POSE:
        return False
    values = par[VALUE:]
    joints = db[DB_PARENTS].shape[0]
    out = tile_slot(tile, outs[OUT.value], joints)
    for j in range(joints):
        at = j * JOINT
        for a in range(3):
            p, s = values[POSE_JOINT.pos * joints + 3 * j + a], values[POSE_JOINT.scl * joints + 3 * j + a]
            for lane in range(LANES):
                out[at + (POS + a) * LANES + lane] = p
                out[at + (SCL + a) * LANES + lane] = s
                out[at + (VEL + a) * LANES + lane] = 0.0
                out[at + (ANG + a) * LANES + lane] = 0.0
                out[at + (SVL + a) * LANES + lane] = 0.0
        for a in range(4):
            r = values[POSE_JOINT.rot * joints + 4 * j + a]
            for lane in range(LANES):
                out[at + (ROT + a) * LANES + lane] = r
    return True


@register(constant_node, tile=constant_tile)
class Constant(Node):
    """A constant signal (rate 0) or a constant local pose (rest pose or a clip frame)."""

    type: Literal["constant"] = "constant"
    signal: Literal["scalar", "vec3", "quat", "int", "bool", "trajectory", "pose"] = "scalar"
    value: SignalValue = Field(
        None,
        description="the signal value (scalar: number, vec3: [x,y,z], quat: [w,x,y,z], trajectory: 3 positions "
        f"x,z then 3 facings x,z; numbers within ±{SIGNAL_MAX:g}); none: zero/identity/at rest",
    )
    clip: str | None = Field(None, description="pose: clip asset to take a frame from; none: the rest pose")
    frame: int = Field(0, ge=0, le=INDEX_MAX, description=f"pose: frame index in the clip [0, {INDEX_MAX}]")

    CATEGORY = "sources"
    FIELD_KINDS = {"signal": "signal", "clip": "clip", "value": "value"}
    PLUMBING = True
    OUTPUTS = OUTPUTS

    @model_validator(mode="after")
    def _check_value(self):
        if self.signal == "pose":
            if self.value is not None:
                raise ValueError("a pose constant takes 'clip' and 'frame', not 'value'")
        else:
            if self.clip is not None or self.frame:
                raise ValueError("'clip' and 'frame' are for signal 'pose' only")
            if self.value is not None:
                self.value = normalize_value(self.signal, self.value)
        return self

    def outputs(self):
        if self.signal == "pose":
            return (Port("pose", "pose", "local", "the constant local pose, zero velocities"),)
        return (Port("value", self.signal, "", "the constant value, rate 0"),)

    def params(self, ctx):
        """PAR, then the value: the signal's block, or the pose's pos, rot and scl blocks (POSE_JOINT)."""
        if self.signal != "pose":
            full = np.zeros(SIGNAL_SIZE[self.signal])
            value = signal_value(self.signal, self.value)
            full[: len(value)] = value
            return np.concatenate([PAR.pack(mode=SIGNAL), full])
        if self.clip is None:
            pos = np.asarray(ctx.skeleton.offsets, np.float64)
            rot = np.tile([1.0, 0.0, 0.0, 0.0], (len(pos), 1))
            scl = np.ones_like(pos)
        else:
            rng = ctx.clip(self, "clip", self.clip)
            if self.frame >= rng.frames:
                raise GraphError(f"frame {self.frame} is past the clip's last frame {rng.frames - 1}", self.id, "frame")
            clip = rng.clip
            pos, rot, scl = clip.pos[self.frame], clip.rot[self.frame], clip.scl[self.frame]
        return np.concatenate([PAR.pack(mode=POSE), np.ravel(pos), np.ravel(rot), np.ravel(scl)]).astype(np.float64)
