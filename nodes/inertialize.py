"""Inertialization: hide a pose discontinuity behind an offset that decays to zero.

On a transition at time T the offset is what was shown minus the new input, both at T.
The node shows its own previous output carried one frame on at its own velocities (so
the two poses are at the same time and nothing pops), per joint:

- positions ``x = p_src - p_dst`` with rate ``v_src - v_dst``;
- rotations ``x = log(qabs(q_src q_dst^-1))`` as a rotation vector (the short way round),
  with rate ``J(x)^-1 (w_src - R(q_src q_dst^-1) w_dst)`` (``J`` the left Jacobian of exp),
  so the output's angular velocity is exactly ``w_src`` at T;
- scales ``x = log(s_src / s_dst)`` with rate ``svl_src - svl_dst``.

Each offset decays as ``x(t), x'(t)`` (``animgraph.decay``: cubic over ``duration`` or a
critically damped spring by ``halflife``; a cubic joint whose offset starts so fast that its
rate term would carry it more than ``offsets.OVERSHOOT_*`` on brings that rate to rest over
a shorter duration: a switch at a high playback rate does not swing limbs round) and is
applied to the live input:
``p = p_in + x``, ``v = v_in + x'``; ``q = exp(x) q_in``, ``w = J(x) x' + R(exp(x)) w_in``;
``s = s_in exp(x)``, ``svl = svl_in + x'``.  A transition mid-decay starts from the
previous output, which already holds the current offset.  A zero duration or half-life
records no offset: the transition is a cut.

State: the header ``ST``; per joint (blocks of ``joints`` rows each, ``JOINT``) the
previous output as a kineform and the offset; then the root-motion tail ``MOTION``.
"""

import math
from typing import Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field

from animgraph.kernels import KFORM, copy_pose, state_pose
from animgraph.limits import DT_MAX, cut_seconds, seconds_field
from animgraph.node import Node, Port, fields, port_indices, register, slot
from animgraph.offsets import OFFSET, inertialize_kernel, motion_offset, record_offsets, still_active
from animgraph.pose import Pose, number, pose_arg
from animgraph.stencil import FRAME, STEPS, advance, play

INPUTS = (
    Port("pose", "pose", "local", "input pose with velocities"),
    Port("transition", "bool", "", "set on the frame the input jumps", True),
    Port("motion", "motion", "", "root motion switched with the pose: inertialized alike", True),
)
OUTPUTS = (
    Port("pose", "pose", "local", "input with the decaying offset applied"),
    Port("motion", "motion", "", "root motion with its decaying offset (zero when 'motion' is unlinked)"),
)
IN, OUT = port_indices("InertializeIn", INPUTS), port_indices("InertializeOut", OUTPUTS)

# cubic: 1 cubic decay over length s, 0 spring with half-life length s (0 cuts)
PAR = fields("InertializePar", cubic=1, length=1)
# shown: a previous output exists; elapsed: seconds since the transition; active: an offset shows
ST = fields("InertializeSt", shown=1, elapsed=1, active=1)
# per joint: the previous output (kineform) and the offset (animgraph.offsets), each a block of joints rows
JOINT = fields("InertializeJoint", prev=KFORM, off=OFFSET)
# after the joint blocks: root motion last output and its offset (vel, ang each)
MOTION = fields("InertializeMotion", last=6, offset=6)


# ---------------------------------------------------------------- node


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def inertialize_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the input pose with its decaying offset, recorded on the transition event."""
    cubic = par[PAR.cubic] > 0.5
    length = par[PAR.length]
    inp = slot(pose, ins[IN.pose])
    out = slot(pose, outs[OUT.pose])
    joints = inp[0].shape[0]
    prev = state_pose(st, ST.SIZE + JOINT.prev * joints, joints)
    at = ST.SIZE + JOINT.off * joints
    off = st[at : at + OFFSET * joints].reshape((joints, OFFSET))
    transition = ins[IN.transition] >= 0 and sig[ins[IN.transition]] > 0.5
    if ins[IN.motion] >= 0:
        tail = ST.SIZE + JOINT.SIZE * joints
        motion_offset(sig, ins[IN.motion], outs[OUT.motion], st[tail + MOTION.last:tail + MOTION.last + 6],
                      st[tail + MOTION.offset:tail + MOTION.offset + 6],
                      transition and st[ST.shown] > 0.5, transition, cubic, length,
                      0.0 if transition else st[ST.elapsed] + dt)
    # After a step longer than the offset takes to decay, carrying the previous output that far
    # at its velocities means nothing: the transition is a cut.
    if transition and st[ST.shown] > 0.5 and length > 0.0 and still_active(cubic, length, dt):
        # The previous output, one frame on, is what would show now: the offset starts there.
        record_offsets(prev, inp, dt, off)
        st[ST.elapsed] = 0.0
        st[ST.active] = 1.0
    elif transition:
        st[ST.active] = 0.0  # first frame, or a cut
    else:
        st[ST.elapsed] += dt
    if st[ST.active] > 0.5 and not still_active(cubic, length, st[ST.elapsed]):
        st[ST.active] = 0.0
    inertialize_kernel(inp, off, st[ST.active] > 0.5, cubic, length, st[ST.elapsed], out)
    copy_pose(out, prev)
    st[ST.shown] = 1.0


@register(inertialize_node)
class Inertialize(Node):
    """Hide a transition: the offset from the previous output to the new input decays to zero."""

    type: Literal["inertialize"] = "inertialize"
    mode: Literal["cubic", "spring"] = Field("cubic", description="cubic decay over duration, or spring by halflife")
    duration: float = seconds_field(0.25, "cubic decay time; 0 cuts")
    halflife: float = seconds_field(0.1, "spring decay half-life; 0 cuts")

    CATEGORY = "transitions"
    FIELD_KINDS = {"mode": "enum"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def length(self):
        return self.duration if self.mode == "cubic" else self.halflife

    def params(self, ctx):
        return PAR.pack(cubic=self.mode == "cubic", length=cut_seconds(self.length()))

    def state(self, ctx, time=0.0):
        """No previous output and no offset: the first frame shows the input."""
        return np.zeros(ST.SIZE + JOINT.SIZE * len(ctx.skeleton) + MOTION.SIZE, dtype=np.float64)


# ---------------------------------------------------------------- op


def _length(name, value):
    value = number(value, name, 0.0)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value}")
    return cut_seconds(value)


class Inertializer:
    """Offset inertialization without a graph, on poses of any batch shape.

    ``Inertializer(duration=0.25)`` decays cubically over ``duration`` s;
    ``Inertializer(halflife=0.1)`` decays as a critically damped spring.  Use::

        inert.transition(shown, new)    # both poses at the transition time T
        out = inert.update(new, 0.0)    # output at T: equals ``shown``, velocities too
        out = inert.update(next_, dt)   # output at T + dt, and so on

    A transition while an offset is decaying should pass the current output as ``shown``.
    """

    def __init__(self, duration=None, halflife=None):
        if duration is not None and halflife is not None:
            raise ValueError("Inertializer takes a duration (cubic) or a halflife (spring), not both")
        self.cubic = halflife is None
        self.length = _length("duration", 0.25 if duration is None else duration) if self.cubic else _length(
            "halflife", halflife
        )
        self.reset()

    def reset(self):
        """Drop the offset: the next update returns its input."""
        self.offsets = None
        self.elapsed = 0.0
        self.active = False

    def transition(self, src, dst):
        """Record the offset from pose ``dst`` (the new input) to ``src`` (what was shown), same time."""
        src, dst = pose_arg(src, "src"), pose_arg(dst, "dst")
        if src.joints != dst.joints:
            raise ValueError(f"transition poses have {src.joints} and {dst.joints} joints")
        if src.batch != dst.batch:
            raise ValueError(f"transition poses have batch shapes {src.batch} and {dst.batch}")
        if not (np.all(src.scl > 0) and np.all(dst.scl > 0)):
            raise ValueError("scales must be positive to take their log-ratio offset")
        self.elapsed = 0.0
        self.active = self.length > 0.0
        self.offsets = np.zeros(src.batch + (src.joints, OFFSET), dtype=np.float64)
        flat = self.offsets.reshape((-1, src.joints, OFFSET))
        for n, (s, d) in enumerate(zip(src.items(), dst.items())):
            record_offsets(s, d, 0.0, flat[n])

    def update(self, input, dt):
        """Advance ``dt`` s and return ``input`` with the decayed offset applied (velocities exact)."""
        input = pose_arg(input, "input")
        self.elapsed += number(dt, "dt", 0.0, DT_MAX)
        if self.active and not still_active(self.cubic, self.length, self.elapsed):
            self.active = False
        out = Pose.identity(input.joints, input.batch)
        if not self.active:
            for a, b in zip(out.as_tuple(), input.as_tuple()):
                a[:] = b
            return out
        if self.offsets.shape[:-1] != input.batch + (input.joints,):
            raise ValueError(
                f"input has batch {input.batch} and {input.joints} joints, the transition had "
                f"{self.offsets.shape[:-2]} and {self.offsets.shape[-2]}"
            )
        flat = self.offsets.reshape((-1, input.joints, OFFSET))
        for n, (src, dst) in enumerate(zip(input.items(), out.items())):
            inertialize_kernel(src, flat[n], True, self.cubic, self.length, self.elapsed, dst)
        return out


def verify_inertialize(m, t, h, rng):
    """The input cuts to the backwards clip ``lag`` s before t (half the time back again mid-decay); cubic or spring."""
    inert = Inertializer(duration=0.4) if rng.random() < 0.5 else Inertializer(halflife=0.1)
    lag = rng.uniform(FRAME, 0.4 - (STEPS[-1] + 1) * h)
    start, source = t - lag, m.other
    inert.transition(m.pose(start), source(start))
    inert.update(source(start), 0.0)
    if rng.random() < 0.5:
        # Cut back while the offset decays: the new offset starts from the current output.
        mid = start + lag * rng.uniform(0.2, 0.8)
        shown = advance(lambda s, dt: inert.update(source(s), dt), start, mid)
        start, source = mid, m.pose
        inert.transition(shown, source(start))
        inert.update(source(start), 0.0)
    return [play(lambda s, dt: inert.update(source(s), dt), start, t, h)]


Inertialize.OP, Inertialize.VERIFY = Inertializer, verify_inertialize
