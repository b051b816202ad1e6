"""Dead blending: cross-fade from the extrapolated old pose to the live input.

On a transition the node keeps what it showed, coasted one frame on as the fade will coast it
(so nothing pops, and a long frame cannot fling it), extrapolates it with velocities decaying
at ``ln2 / halflife`` and fades from it to the input with a smoothstep weight whose rate enters
every velocity; after ``duration`` the output is the input.  A zero duration is a cut; a zero half-life holds the
old pose still.  The maths, and why rotations fade along two fixed arcs, is in
``animgraph.fades``.

State: the header ``ST``; per joint (blocks of ``joints`` rows each, ``JOINT``) the
previous output and the snapshot taken at the transition, both kineforms; then the
root-motion tail ``MOTION``.
"""

import math
from typing import Literal

import numpy as np
from animgraph.jit import njit

from animgraph.decay import halflife_rate
from animgraph.fades import carry_pose, dead_blend_kernel, fade_motion
from animgraph.kernels import KFORM, copy_pose, state_pose
from animgraph.limits import DT_MAX, cut_seconds, seconds_field
from animgraph.node import Node, Port, fields, port_indices, register, slot
from animgraph.pose import Pose, number, pose_arg
from animgraph.stencil import FRAME, STEPS, play

INPUTS = (
    Port("pose", "pose", "local", "input pose with velocities"),
    Port("transition", "bool", "", "set on the frame the input jumps", True),
    Port("motion", "motion", "", "root motion switched with the pose: dead-blended alike", True),
)
OUTPUTS = (
    Port("pose", "pose", "local", "extrapolated old pose faded into the input"),
    Port("motion", "motion", "", "root motion faded in from the coasting old one (zero when 'motion' is unlinked)"),
)
IN, OUT = port_indices("DeadBlendIn", INPUTS), port_indices("DeadBlendOut", OUTPUTS)

# duration: cross-fade seconds (0 cuts); rate: decay rate of the old pose's velocities (1/s)
PAR = fields("DeadBlendPar", duration=1, rate=1)
# shown: a previous output exists; elapsed: seconds since the transition; active: blending
ST = fields("DeadBlendSt", shown=1, elapsed=1, active=1)
# per joint: the previous output and the old pose at the transition (kineforms), each a block of joints rows
JOINT = fields("DeadBlendJoint", prev=KFORM, old=KFORM)
# after the joint blocks: root motion last output, the old motion at the transition (vel, ang each), fading flag
MOTION = fields("DeadBlendMotion", last=6, old=6, fading=1)


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def dead_blend_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the old pose, snapshot on the transition event, faded into the input pose."""
    duration = par[PAR.duration]
    rate = par[PAR.rate]
    inp = slot(pose, ins[IN.pose])
    out = slot(pose, outs[OUT.pose])
    joints = inp[0].shape[0]
    prev = state_pose(st, ST.SIZE + JOINT.prev * joints, joints)
    old = state_pose(st, ST.SIZE + JOINT.old * joints, joints)
    transition = ins[IN.transition] >= 0 and sig[ins[IN.transition]] > 0.5
    if ins[IN.motion] >= 0:
        tail = st[ST.SIZE + JOINT.SIZE * joints:]
        fade_motion(sig, ins[IN.motion], outs[OUT.motion], tail[MOTION.last:MOTION.last + 6],
                    tail[MOTION.old:MOTION.old + 6], tail[MOTION.fading:MOTION.fading + 1],
                    transition and st[ST.shown] > 0.5, transition, rate, duration,
                    0.0 if transition else st[ST.elapsed] + dt)
    if transition and st[ST.shown] > 0.5 and duration > 0.0:
        carry_pose(prev, rate, dt, old)
        st[ST.elapsed] = 0.0
        st[ST.active] = 1.0
    elif transition:
        st[ST.active] = 0.0  # first frame, or a cut
    else:
        st[ST.elapsed] += dt
    if st[ST.active] > 0.5 and st[ST.elapsed] >= duration:
        st[ST.active] = 0.0
    if st[ST.active] > 0.5:
        dead_blend_kernel(old, inp, rate, duration, st[ST.elapsed], out)
    else:
        copy_pose(inp, out)
    copy_pose(out, prev)
    st[ST.shown] = 1.0


@register(dead_blend_node)
class DeadBlend(Node):
    """Hide a transition: cross-fade from the old pose coasting on its decaying velocities."""

    type: Literal["dead_blend"] = "dead_blend"
    duration: float = seconds_field(0.5, "cross-fade time; 0 cuts")
    halflife: float = seconds_field(0.2, "half-life of the old pose's velocities; 0 holds it")

    CATEGORY = "transitions"
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def params(self, ctx):
        # Plan parameters are finite: a held pose (half-life 0, rate inf) is any rate above decay.MAX_RATE.
        rate = min(halflife_rate(self.halflife), 1e300)
        return PAR.pack(duration=cut_seconds(self.duration), rate=rate)

    def state(self, ctx, time=0.0):
        """No previous output and no blend: the first frame shows the input."""
        return np.zeros(ST.SIZE + JOINT.SIZE * len(ctx.skeleton) + MOTION.SIZE, dtype=np.float64)


def _seconds(name, value):
    value = number(value, name, 0.0)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value}")
    return cut_seconds(value)


class DeadBlender:
    """Dead blending without a graph, on poses of any batch shape.  Use::

        dead.transition(shown)          # the pose shown at the transition time T
        out = dead.update(new, 0.0)     # output at T: equals ``shown``
        out = dead.update(next_, dt)    # output at T + dt, and so on

    A transition during a blend should pass the current output as ``shown``.  The output
    ``t`` s after the transition depends on ``shown``, ``t`` and the current input alone,
    so any steps reaching ``t`` give the same pose.
    """

    def __init__(self, duration=0.5, halflife=0.2):
        self.duration = _seconds("duration", duration)
        self.halflife = _seconds("halflife", halflife)
        self.rate = halflife_rate(self.halflife)
        self.reset()

    def reset(self):
        """Drop the stored pose: the next update returns its input."""
        self.old = None
        self.elapsed = 0.0
        self.active = False

    def transition(self, pose):
        """Start a cross-fade from ``pose`` (what is shown now, with its velocities)."""
        pose = pose_arg(pose, "pose")
        if not np.all(pose.scl > 0):
            raise ValueError("scales must be positive to blend in log space")
        # float64 copies, one kernel tuple per batch item, like the node's state.
        self.old = [tuple(np.array(a, dtype=np.float64) for a in item) for item in pose.items()]
        self.shape = (pose.batch, pose.joints)
        self.elapsed = 0.0
        self.active = self.duration > 0.0

    def update(self, input, dt):
        """Advance ``dt`` s and return the blend from the extrapolated pose into ``input``."""
        input = pose_arg(input, "input")
        self.elapsed += number(dt, "dt", 0.0, DT_MAX)
        if self.active and self.elapsed >= self.duration:
            self.active = False
        out = Pose.identity(input.joints, input.batch)
        if not self.active:
            for a, b in zip(out.as_tuple(), input.as_tuple()):
                a[:] = b
            return out
        if self.shape != (input.batch, input.joints):
            raise ValueError(
                f"input has batch {input.batch} and {input.joints} joints, the transition had "
                f"{self.shape[0]} and {self.shape[1]}"
            )
        if not np.all(input.scl > 0):
            raise ValueError("scales must be positive to blend in log space")
        for old, src, dst in zip(self.old, input.items(), out.items()):
            dead_blend_kernel(old, src, self.rate, self.duration, self.elapsed, dst)
        return out


def verify_dead_blend(m, t, h, rng):
    """The input cuts to the backwards clip ``lag`` s before t; the old pose coasts and fades out."""
    dead = DeadBlender(duration=0.4, halflife=0.15)
    start = t - rng.uniform(FRAME, 0.4 - (STEPS[-1] + 1) * h)
    dead.transition(m.pose(start))
    dead.update(m.other(start), 0.0)
    return [play(lambda s, dt: dead.update(m.other(s), dt), start, t, h)]


DeadBlend.OP, DeadBlend.VERIFY = DeadBlender, verify_dead_blend
