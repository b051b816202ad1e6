"""Dead blending: cross-fade from the extrapolated old pose to the live input.

On a transition at time T the node keeps what it showed, carried one frame on at its own
velocities (so it is the pose at T and nothing pops), and extrapolates it with velocities
decaying at ``λ = ln2 / halflife`` (exact, ``animgraph.decay``): ``p(t) = p0 + v0 (1 -
e^-λt)/λ``, ``v(t) = v0 e^-λt``, log-scales likewise.  The output fades from that pose to
the input with the smoothstep weight ``α = 3s² - 2s³``, ``s = t / duration``, ``α' = 6 s
(1 - s) / duration``, whose rate enters every velocity: positions lerp, scales lerp in log
space.  After ``duration`` the output is the input.  A zero duration is a cut; a zero
half-life holds the old pose still.

Rotations: ``rot = exp(α D) exp((1-α) γ) g0``, two arcs known from the transition snapshot,
the elapsed time and the current input alone, so any steps reaching ``t`` give the same
pose.  ``γ = w0 (1 - e^-κt)/κ`` is the old rotation ``g0``'s extrapolated turn (closed form,
fixed axis); ``D = log(b g0⁻¹)`` the current input ``b`` seen from the rotation shown at
the transition, the short way (|D| <= π), turning at ``dD/dt = J⁻¹(D) w_b`` (the inverse
left Jacobian of the input's angular velocity), so ``α = 1`` lands exactly on ``b``.
``κ = max(λ, |w0| / MAX_TURN)`` caps the extrapolated turn at a quarter turn, from the same
starting rate: mocap jitter (a toe at 54 rad/s) coasts instead of spinning turns that the
fade must then unwind.  The angular speed is at most the input's plus the extrapolation's
plus ``α' (|D| + |γ|)`` (with |D| <= π the factor from the input's rate to the arc's is at
most 1).  A plain blend's shortest arc from the extrapolated pose to the input flips where
that moving arc passes a half turn (a pop of α 2π); here the arc starts at the fixed
``g0``, so it flips only where the input itself passes half a turn from what was shown.
No closed form can avoid such a flip for every input: the fade would be a homotopy from a
constant map of SO(3) to the identity, which does not exist.  Following the input past it
would need its turn since the transition, which only a per-step history knows (and then
the pose depends on the steps).

State: the header ``ST``; per joint (blocks of ``joints`` rows each, ``JOINT``) the
previous output and the snapshot taken at the transition, both kineforms; then the
root-motion tail ``MOTION``.
"""

import math
from typing import Literal

import numpy as np
from animgraph.jit import njit

from animgraph.decay import coast, halflife_rate, kform_extrapolate
from animgraph.maths import (
    load_kform,
    qinv,
    qmul,
    qrot,
    store_kform,
    to_scaled_angle_axis_dx,
    vadd,
    vexp,
    vlen,
    vlerp,
    vlog,
    vscale,
    vsub,
    weighted_rot,
)
from animgraph.kernels import KFORM, copy_pose, state_pose
from animgraph.limits import DT_MAX, cut_seconds, seconds_field
from animgraph.node import Node, Port, fields, port_indices, register, slot
from animgraph.pose import Pose, number, pose_arg
from animgraph.stencil import FRAME, STEPS, play

MAX_TURN = 0.5 * math.pi  # most the extrapolated rotation turns in total (rad)

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


@njit(cache=True)
def smoothstep(t, duration):
    """Weight of the live input ``t`` s into a cross-fade of ``duration`` s, and its rate (1/s)."""
    if duration <= 0.0 or t >= duration:
        return 1.0, 0.0
    s = max(t / duration, 0.0)
    return s * s * (3.0 - 2.0 * s), 6.0 * s * (1.0 - s) / duration


@njit(cache=True)
def coasting_turn(ang, rate, t):
    """Turn (rad, rotation vector) and rate ``t`` s on from ``ang`` decaying at ``rate`` 1/s or faster (MAX_TURN)."""
    dist, fade = coast(max(rate, vlen(ang) / MAX_TURN), t)
    return vscale(ang, dist), vscale(ang, fade)


@njit(cache=True)
def fade_rot(old_rot, old_ang, rate, t, rot, ang, alpha, alpha_vel):
    """``exp(α D) exp((1-α) γ) g0`` and its angular velocity (rad/s), see the module docstring.

    ``rot`` is the current input, turning at ``ang``; ``old_rot``, ``old_ang`` the snapshot.
    """
    gap, _, gap_vel = to_scaled_angle_axis_dx(qmul(rot, qinv(old_rot)), ang)
    gamma, gamma_vel = coasting_turn(old_ang, rate, t)
    e1, w1 = weighted_rot(gap, gap_vel, alpha, alpha_vel)
    e3, w3 = weighted_rot(gamma, gamma_vel, 1.0 - alpha, -alpha_vel)
    return qmul(e1, qmul(e3, old_rot)), vadd(w1, qrot(e1, w3))


@njit(cache=True)
def fade_kform(old, inp, rate, t, alpha, alpha_vel):
    """Kineform of ``old`` extrapolated ``t`` s, faded into ``inp`` by weight ``alpha`` moving at ``alpha_vel``."""
    ap, _, asc, av, _, asv = kform_extrapolate(old, rate, t)
    bp, br, bsc, bv, bw, bsv = inp
    pos = vlerp(ap, bp, alpha)
    vel = vadd(vlerp(av, bv, alpha), vscale(vsub(bp, ap), alpha_vel))
    rot, ang = fade_rot(old[1], old[4], rate, t, br, bw, alpha, alpha_vel)
    la = vlog(asc)
    lb = vlog(bsc)
    scl = vexp(vlerp(la, lb, alpha))
    svl = vadd(vlerp(asv, bsv, alpha), vscale(vsub(lb, la), alpha_vel))
    return (pos, rot, scl, vel, ang, svl)


@njit(cache=True)
def dead_blend_kernel(old, inp, rate, duration, t, out):
    """Pose ``old`` extrapolated ``t`` s (velocities decaying at ``rate`` 1/s) faded into ``inp``; into ``out``."""
    alpha, alpha_vel = smoothstep(t, duration)
    for j in range(out[0].shape[0]):
        store_kform(out, j, fade_kform(load_kform(old, j), load_kform(inp, j), rate, t, alpha, alpha_vel))


@njit(cache=True)
def carry_pose(src, ahead, out):
    """Pose ``src`` carried ``ahead`` s on at its own constant velocities, into ``out``."""
    for j in range(out[0].shape[0]):
        store_kform(out, j, kform_extrapolate(load_kform(src, j), 0.0, ahead))


@njit(cache=True)
def fade_motion(sig, at, out, st, record, transition, rate, duration, t):
    """Root motion ``sig[at:at+6]`` faded in from the old one into ``sig[out:out+6]``; ``st`` is the ``MOTION`` tail.

    The old motion (the last output at the transition) coasts like the old pose's
    velocities, decaying at ``rate`` (1/s), and the input fades in with the same smoothstep
    weight, so the velocity the output node integrates does not step.
    """
    if transition:
        st[MOTION.fading] = 1.0 if record and duration > 0.0 else 0.0
        for c in range(6):
            st[MOTION.old + c] = st[MOTION.last + c]
    if t >= duration:
        st[MOTION.fading] = 0.0
    alpha = smoothstep(t, duration)[0] if st[MOTION.fading] > 0.5 else 1.0
    fade = coast(rate, t)[1]
    for c in range(6):
        value = alpha * sig[at + c] + (1.0 - alpha) * fade * st[MOTION.old + c]
        sig[out + c] = value
        st[MOTION.last + c] = value


@njit(cache=True, inline="always")
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
        fade_motion(sig, ins[IN.motion], outs[OUT.motion], st[ST.SIZE + JOINT.SIZE * joints:],
                    transition and st[ST.shown] > 0.5, transition, rate, duration,
                    0.0 if transition else st[ST.elapsed] + dt)
    if transition and st[ST.shown] > 0.5 and duration > 0.0:
        carry_pose(prev, dt, old)
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
