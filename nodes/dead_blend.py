"""Dead blending: cross-fade from the extrapolated old pose to the live input.

On a transition at time T the node keeps what it showed, carried one frame on at its own
velocities (so it is the pose at T and nothing pops), and extrapolates it with velocities
decaying at ``λ = ln2 / halflife`` (exact exponential decay, ``animgraph.decay``):
``p(t) = p0 + v0 (1 - e^-λt)/λ``, ``v(t) = v0 e^-λt``; rotations turn about the fixed axis
of ``w0`` by ``w0 (1 - e^-λt)/λ`` and scales grow by ``exp(svl0 (1 - e^-λt)/λ)``.
The output is the blend from the extrapolated pose to the input with the smoothstep
weight ``α = 3s² - 2s³``, ``s = t / duration``, ``α' = 6 s (1 - s) / duration``, the
weight's rate included in the velocities: positions lerp, scales lerp in log space, and
rotations turn ``exp(α d)`` of the arc ``d`` from the extrapolated rotation to the input
(``nodes/blend.py``'s ``weighted_rot``).  The arc starts as the shortest one and then
stays continuous: both ends move, and when the short way round would switch sides
(``|d|`` passing π) the node keeps the arc it was on (``|d| < 2π``), since a plain
shortest-path blend jumps there by ``α 2π``.  After ``duration`` the output is the input.
A zero duration is a cut; a zero half-life holds the old pose still.
"""

import math
from typing import Literal

import numpy as np
from numba import njit
from pydantic import Field

from animgraph.decay import halflife_rate, kform_extrapolate
from animgraph.maths import (
    ang_to_sa_dx,
    load_kform,
    qinv,
    qmul,
    qrot,
    store_kform,
    to_scaled_angle_axis,
    vadd,
    vdot,
    vexp,
    vlen,
    vlerp,
    vlog,
    vscale,
    vsub,
)
from animgraph.node import Node, Port, register, slot
from animgraph.pose import Pose
from animgraph.nodes.blend import weighted_rot
from animgraph.nodes.inertialize import copy_pose, get3, put3, state_pose

HEADER = 4  # has a previous output, seconds since the transition, blend active, arcs to choose afresh
KFORM = 19  # floats of one stored kineform
TAU = 2.0 * math.pi


@njit(cache=True)
def smoothstep(t, duration):
    """Weight of the live input ``t`` s into a cross-fade of ``duration`` s, and its rate (1/s)."""
    if duration <= 0.0 or t >= duration:
        return 1.0, 0.0
    s = max(t / duration, 0.0)
    return s * s * (3.0 - 2.0 * s), 6.0 * s * (1.0 - s) / duration


@njit(cache=True)
def arc(delta, prev, fresh):
    """Rotation vector of ``delta`` (|d| < 2π): the shortest if ``fresh``, else the one nearer ``prev``."""
    d = to_scaled_angle_axis(delta)
    angle = vlen(d)
    if fresh or angle < 1e-9:
        return d
    other = vsub(d, vscale(d, TAU / angle))  # the same rotation the other way round
    gap = vsub(d, prev)
    gap_other = vsub(other, prev)
    return other if vdot(gap_other, gap_other) < vdot(gap, gap) else d


@njit(cache=True)
def fade_kform(a, b, alpha, alpha_vel, prev_arc, fresh):
    """Kineform from ``a`` (α=0) to ``b`` (α=1) with the weight's rate; rotation along the continuing arc.

    Returns the kineform and the arc (rotation vector from a's rotation to b's).
    """
    ap, ar, asc, av, aw, asv = a
    bp, br, bsc, bv, bw, bsv = b
    pos = vlerp(ap, bp, alpha)
    vel = vadd(vlerp(av, bv, alpha), vscale(vsub(bp, ap), alpha_vel))
    delta = qmul(br, qinv(ar))
    d = arc(delta, prev_arc, fresh)
    e, e_ang = weighted_rot(d, ang_to_sa_dx(d, vsub(bw, qrot(delta, aw))), alpha, alpha_vel)
    la = vlog(asc)
    lb = vlog(bsc)
    scl = vexp(vlerp(la, lb, alpha))
    svl = vadd(vlerp(asv, bsv, alpha), vscale(vsub(lb, la), alpha_vel))
    return (pos, qmul(e, ar), scl, vel, vadd(e_ang, qrot(e, aw)), svl), d


@njit(cache=True)
def dead_blend_kernel(old, inp, rate, duration, t, arcs, fresh, out):
    """Pose ``old`` extrapolated ``t`` s (velocities decaying at ``rate`` 1/s) faded into ``inp``; into ``out``.

    ``arcs`` (J, 3) holds each joint's rotation arc, read (unless ``fresh``) and updated.
    """
    alpha, alpha_vel = smoothstep(t, duration)
    for j in range(out[0].shape[0]):
        ghost = kform_extrapolate(load_kform(old, j), rate, t)
        k, d = fade_kform(ghost, load_kform(inp, j), alpha, alpha_vel, get3(arcs, j, 0), fresh)
        put3(arcs, j, 0, d)
        store_kform(out, j, k)


@njit(cache=True)
def carry_pose(src, ahead, dst):
    """Pose ``src`` carried ``ahead`` s on at its own constant velocities, into ``dst``."""
    for j in range(dst[0].shape[0]):
        store_kform(dst, j, kform_extrapolate(load_kform(src, j), 0.0, ahead))


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    duration = par[0]
    rate = par[1]
    inp = slot(pose, ins[0])
    out = slot(pose, outs[0])
    joints = inp[0].shape[0]
    prev = state_pose(st, HEADER, joints)
    old = state_pose(st, HEADER + KFORM * joints, joints)
    arcs = st[HEADER + 2 * KFORM * joints : HEADER + (2 * KFORM + 3) * joints].reshape((joints, 3))
    transition = ins[1] >= 0 and sig[ins[1]] > 0.5
    if transition and st[0] > 0.5 and duration > 0.0:
        carry_pose(prev, dt, old)
        st[1] = 0.0
        st[2] = 1.0
        st[3] = 1.0
    elif transition:
        st[2] = 0.0  # first frame, or a cut
    else:
        st[1] += dt
    if st[2] > 0.5 and st[1] >= duration:
        st[2] = 0.0
    if st[2] > 0.5:
        dead_blend_kernel(old, inp, rate, duration, st[1], arcs, st[3] > 0.5, out)
        st[3] = 0.0
    else:
        copy_pose(inp, out)
    copy_pose(out, prev)
    st[0] = 1.0


@register(run)
class DeadBlend(Node):
    """Hide a transition: cross-fade from the old pose coasting on its decaying velocities."""

    type: Literal["dead_blend"] = "dead_blend"
    duration: float = Field(0.5, ge=0.0, le=60.0, allow_inf_nan=False, description="cross-fade time (s); 0 cuts")
    halflife: float = Field(
        0.2, ge=0.0, le=60.0, allow_inf_nan=False, description="half-life of the old pose's velocities (s); 0 holds it"
    )

    INPUTS = (
        Port("pose", "pose", "local", "input pose with velocities"),
        Port("transition", "bool", "", "set on the frame the input jumps", True),
    )
    OUTPUTS = (Port("pose", "pose", "local", "extrapolated old pose faded into the input"),)

    def params(self, ctx):
        return np.array([self.duration, halflife_rate(self.halflife)], dtype=np.float64)

    def state(self, ctx, time=0.0):
        """No previous output and no blend: the first frame shows the input."""
        return np.zeros(HEADER + (2 * KFORM + 3) * len(ctx.skeleton), dtype=np.float64)


def _seconds(name, value):
    value = float(value)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value}")
    return value


class DeadBlender:
    """Dead blending without a graph, on poses of any batch shape.  Use::

        dead.transition(shown)          # the pose shown at the transition time T
        out = dead.update(new, 0.0)     # output at T: equals ``shown``
        out = dead.update(next_, dt)    # output at T + dt, and so on

    A transition during a blend should pass the current output as ``shown``.
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
        if not np.all(pose.scl > 0):
            raise ValueError("scales must be positive to blend in log space")
        # float64 copies, one kernel tuple per batch item, like the node's state.
        self.old = [tuple(np.array(a, dtype=np.float64) for a in item) for item in pose.items()]
        self.arcs = np.zeros((len(self.old), pose.joints, 3))
        self.fresh = True
        self.shape = (pose.batch, pose.joints)
        self.elapsed = 0.0
        self.active = self.duration > 0.0

    def update(self, input, dt):
        """Advance ``dt`` s and return the blend from the extrapolated pose into ``input``."""
        if not math.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt}")
        self.elapsed += float(dt)
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
        for old, src, dst, arcs in zip(self.old, input.items(), out.items(), self.arcs):
            dead_blend_kernel(old, src, self.rate, self.duration, self.elapsed, arcs, self.fresh, dst)
        self.fresh = False
        return out
