"""Tracking spring: follow a target exactly, but smooth over its discontinuities.

The reference spring ("Perfect Tracking with Springs") pulls its velocity toward the
target's acceleration, velocity and position with separate gains and integrates it; it
tracks exactly only when fed finite differences one frame ahead.  Our targets carry exact
velocities, so we write the same spring on the offset ``e = x - target`` (per channel:
a position, a rotation vector ``x = exp(e) target``, or a log-scale), with ``u = e'``:

    e'' = -(a + b) e' - a b e - (1 - γ) target''      a = ln2 / position_halflife,
                                                       b = ln2 / velocity_halflife

The offset is a sum of two exponentials: it loses its velocity with half-life
``velocity_halflife`` and its position with half-life ``position_halflife``
(``animgraph.decay.two_rate_weights``, exact for any dt).  ``γ`` (``acceleration``) is the
proportion of the target's acceleration followed (its backward difference over the
frame, held for the step); at 1 (the reference's zero acceleration half-life) a zero
offset stays zero: the output is the target, exactly.

Discontinuities: a frame on which the target's step disagrees with its velocities,
``|Δx/dt - (v_prev + v)/2|`` above ``jump_speed`` for values or ``jump_turn`` for
rotations (per channel), or on which the ``jump`` event is set, is a jump.  As in the
reference's no-velocity/no-acceleration variants, the target's value, velocity and
acceleration across the jump are not followed: the output continues from its previous
value at its previous velocity (the offset takes up the jump) and the offset then decays.
Smooth motion keeps the gap near ``dt² |x'''| / 12``, but fast mocap joints reach tens of
rad/s at 60 Hz, so detection is a safety net for big pops: link ``jump`` when the graph
knows (e.g. ``select.changed``).  ``reset`` (and the first frame) puts the output on the
target.  Output ``x = target ⊕ e`` with velocity ``v_target + u`` (rotations:
``J(e) u + R(exp e) w_target``, ``J`` the left Jacobian of exp).

State: the header ``ST``, then for ``signal="pose"`` per joint (blocks of ``joints`` rows
each, ``JOINT``) the last target as a kineform and the offset, for the other signals one
``TRACK`` block (the last target and the offset).
"""

import math
from typing import Literal, Optional

import numpy as np
from animgraph.jit import njit
from pydantic import Field, ValidationError

from animgraph.decay import decay3, halflife_rate, two_rate_weights
from animgraph.maths import (
    from_scaled_angle_axis,
    load_kform,
    qmul,
    qinv,
    qrot,
    sa_dx_to_ang,
    store_kform,
    to_scaled_angle_axis,
    vadd,
    vexp,
    vlen,
    vlog,
    vscale,
    vsub,
)
from animgraph.kernels import KFORM, get3, put3, read3, state_pose, write3
from animgraph.limits import SIGNAL_MAX, seconds_field, unit_field
from animgraph.node import SIGNAL_SIZE, Node, Port, fields, port_indices, register, slot
from animgraph.offsets import OFFSET, joint_offset
from animgraph.pose import Pose
from animgraph.stencil import FRAME, play

SIGNALS = ("scalar", "vec3", "quat", "pose")
SCALAR, VEC3, QUAT, POSE = range(len(SIGNALS))  # the kernel's code of each signal kind
ZERO = (0.0, 0.0, 0.0)
ONE = (1.0, 1.0, 1.0)

# The pose variant's ports; inputs()/outputs() give the value ports the kind of the signal field (same positions).
INPUTS = (
    Port("value", "pose", "any", "target with its rate (the signal field chooses the kind)"),
    Port("reset", "bool", "", "put the output onto the target this frame", True),
    Port("jump", "bool", "", "the target is discontinuous this frame", True),
)
OUTPUTS = (Port("value", "pose", "any", "tracked value with its rate"),)
IN, OUT = port_indices("TrackingSpringIn", INPUTS), port_indices("TrackingSpringOut", OUTPUTS)

# signal: SIGNALS index; halflives in s; acceleration γ; jump_speed, jump_turn: -1 for only the jump event
PAR = fields(
    "TrackingSpringPar", signal=1, position_halflife=1, velocity_halflife=1, acceleration=1, jump_speed=1, jump_turn=1
)
# tracking: something was tracked (0 on the first frame)
ST = fields("TrackingSpringSt", tracking=1)
# signal="pose", per joint: the last target (kineform) and the offset (animgraph.offsets), each a block of joints rows
JOINT = fields("TrackingSpringJoint", prev=KFORM, off=OFFSET)
# other signals, after the header: the last target (value x, rotation q, velocity v) and the offset e, its rate u
TRACK = fields("TrackingSpringTrack", x=3, q=4, v=3, e=3, u=3)


# ---------------------------------------------------------------- channels


@njit(cache=True)
def jumped(step, dt, v, vp, jump_speed):
    """Whether a target's step in ``dt`` s is off its mean velocity by more than ``jump_speed`` (<0: never)."""
    if jump_speed < 0.0 or dt == 0.0:
        return False
    return vlen(vsub(vscale(step, 1.0 / dt), vscale(vadd(v, vp), 0.5))) > jump_speed


@njit(cache=True)
def spring_step(e, u, dv, spring):
    """Offset ``e`` and rate ``u`` after ``dt`` s while the target's velocity changed by ``dv``.

    ``spring`` is ``(dt, rate_x, rate_v, follow)``: step (s), the two rates (1/s), γ.
    """
    dt, rate_x, rate_v, follow = spring
    w = two_rate_weights(rate_x, rate_v, dt)
    if follow >= 1.0 or dt == 0.0 or rate_x == math.inf or rate_v == math.inf:
        return decay3(w, e, u)
    # Constant forcing g / dt, g = -(1-γ) dv (the velocity change not followed), moves the rest
    # point to g / (dt a b): the offset gains g (1 - w_xx) / (dt a b) and its rate g w_xv / dt.
    # For a step short against both rates these factors tend to dt/2 and 1 (no 0/0 as dt -> 0).
    g = vscale(dv, -(1.0 - follow))
    if dt * max(rate_x, rate_v) < 1e-6:
        ge, gu = 0.5 * dt, 1.0
    else:
        ge, gu = (1.0 - w[0]) / (dt * rate_x * rate_v), w[1] / dt
    e, u = decay3(w, e, u)
    return vadd(e, vscale(g, ge)), vadd(u, vscale(g, gu))


@njit(cache=True)
def vec_channel(e, u, x, v, xp, vp, spring, limit, jump):
    """New offset (e, u) of a vector channel whose target moved from (xp, vp) to (x, v)."""
    dt = spring[0]
    if jump or jumped(vsub(x, xp), dt, v, vp, limit):
        # Continue from the previous output at its velocity: the offset takes up the jump.
        shown_v = vadd(vp, u)
        shown_x = vadd(vadd(xp, e), vscale(shown_v, dt))
        return vsub(shown_x, x), vsub(shown_v, v)
    return spring_step(e, u, vsub(v, vp), spring)


@njit(cache=True)
def rot_out(e, u, q, w):
    """Rotation ``exp(e) q`` and its angular velocity: offset ``e`` moving at ``u``, ``q`` turning at ``w``."""
    r = from_scaled_angle_axis(e)
    return qmul(r, q), vadd(sa_dx_to_ang(e, u), qrot(r, w))


@njit(cache=True)
def turning(q, w):
    """A kineform holding only a rotation and its angular velocity."""
    return (ZERO, q, ONE, ZERO, w, ZERO)


@njit(cache=True)
def rot_channel(e, u, q, w, qp, wp, spring, limit, jump):
    """New offset (e, u) of a rotation channel whose target turned from (qp, wp) to (q, w)."""
    dt = spring[0]
    if jump or jumped(to_scaled_angle_axis(qmul(q, qinv(qp))), dt, w, wp, limit):
        shown_q, shown_w = rot_out(e, u, qp, wp)
        shown = turning(qmul(from_scaled_angle_axis(vscale(shown_w, dt)), shown_q), shown_w)
        o = joint_offset(shown, turning(q, w))
        return o[2], o[3]
    return spring_step(e, u, vsub(w, wp), spring)


# ---------------------------------------------------------------- poses


@njit(cache=True)
def track_pose(inp, prev, off, first, jump, spring, jump_speed, jump_turn, out):
    """Track pose ``inp`` into ``out``; ``prev`` (last target) and ``off`` (J, 18 offsets) are updated."""
    dt, rate_x, rate_v, follow = spring
    smooth = not (rate_x == math.inf and rate_v == math.inf)
    for j in range(off.shape[0]):
        k = load_kform(inp, j)
        pos, rot, scl, vel, ang, svl = k
        lscl = vlog(scl)
        if first or not smooth:
            for c in range(6):
                put3(off, j, 3 * c, ZERO)
        else:
            pp, pr, ps, pv, pw, psv = load_kform(prev, j)
            ep, up = vec_channel(get3(off, j, 0), get3(off, j, 3), pos, vel, pp, pv, spring, jump_speed, jump)
            er, ur = rot_channel(get3(off, j, 6), get3(off, j, 9), rot, ang, pr, pw, spring, jump_turn, jump)
            es, us = vec_channel(
                get3(off, j, 12), get3(off, j, 15), lscl, svl, vlog(ps), psv, spring, jump_speed, jump
            )
            put3(off, j, 0, ep)
            put3(off, j, 3, up)
            put3(off, j, 6, er)
            put3(off, j, 9, ur)
            put3(off, j, 12, es)
            put3(off, j, 15, us)
        store_kform(prev, j, k)
        q, w = rot_out(get3(off, j, 6), get3(off, j, 9), rot, ang)
        pos = vadd(pos, get3(off, j, 0))
        vel = vadd(vel, get3(off, j, 3))
        scl = vexp(vadd(lscl, get3(off, j, 12)))
        svl = vadd(svl, get3(off, j, 15))
        store_kform(out, j, (pos, q, scl, vel, w, svl))


# ---------------------------------------------------------------- signals


@njit(cache=True)
def read_signal(sig, i, kind):
    """(value as vec3, quaternion, velocity as vec3) of a scalar/vec3/quat signal at ``sig[i]``."""
    ident = (1.0, 0.0, 0.0, 0.0)
    if kind == SCALAR:
        return (sig[i], 0.0, 0.0), ident, (sig[i + 1], 0.0, 0.0)
    if kind == VEC3:
        return read3(sig, i), ident, read3(sig, i + 3)
    return ZERO, (sig[i], sig[i + 1], sig[i + 2], sig[i + 3]), read3(sig, i + 4)


@njit(cache=True)
def write_signal(sig, i, kind, x, q, v):
    """Write value ``x`` (vec3; a scalar its first entry) or quaternion ``q``, with velocity ``v``, at ``sig[i]``."""
    if kind == SCALAR:
        sig[i] = x[0]
        sig[i + 1] = v[0]
    elif kind == VEC3:
        write3(sig, i, x)
        write3(sig, i + 3, v)
    else:
        for c in range(4):
            sig[i + c] = q[c]
        write3(sig, i + 4, v)


@njit(cache=True)
def track_signal(sig, i, o, kind, st, first, jump, spring, limit):
    """Track the signal at ``sig[i]`` into ``sig[o]``; ``st`` is the ``TRACK`` block (last target, offset)."""
    x, q, v = read_signal(sig, i, kind)
    e = read3(st, TRACK.e)
    u = read3(st, TRACK.u)
    if first or (spring[1] == math.inf and spring[2] == math.inf):
        e = ZERO
        u = ZERO
    elif kind == QUAT:
        qp = (st[TRACK.q], st[TRACK.q + 1], st[TRACK.q + 2], st[TRACK.q + 3])
        e, u = rot_channel(e, u, q, v, qp, read3(st, TRACK.v), spring, limit, jump)
    else:
        e, u = vec_channel(e, u, x, v, read3(st, TRACK.x), read3(st, TRACK.v), spring, limit, jump)
    write3(st, TRACK.x, x)
    for c in range(4):
        st[TRACK.q + c] = q[c]
    write3(st, TRACK.v, v)
    write3(st, TRACK.e, e)
    write3(st, TRACK.u, u)
    if kind == QUAT:
        qo, wo = rot_out(e, u, q, v)
        write_signal(sig, o, kind, x, qo, wo)
    else:
        write_signal(sig, o, kind, vadd(x, e), q, vadd(v, u))


# ---------------------------------------------------------------- node


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def tracking_spring_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the value (a pose slot or a signal, by the signal parameter) tracked into the output."""
    kind = int(par[PAR.signal])
    spring = (dt, halflife_rate(par[PAR.position_halflife]), halflife_rate(par[PAR.velocity_halflife]),
              par[PAR.acceleration])
    jump_speed = par[PAR.jump_speed]
    jump_turn = par[PAR.jump_turn]
    first = st[ST.tracking] < 0.5 or (ins[IN.reset] >= 0 and sig[ins[IN.reset]] > 0.5)
    jump = ins[IN.jump] >= 0 and sig[ins[IN.jump]] > 0.5
    if kind == POSE:
        inp = slot(pose, ins[IN.value])
        joints = inp[0].shape[0]
        prev = state_pose(st, ST.SIZE + JOINT.prev * joints, joints)
        at = ST.SIZE + JOINT.off * joints
        off = st[at : at + OFFSET * joints].reshape((joints, OFFSET))
        track_pose(inp, prev, off, first, jump, spring, jump_speed, jump_turn, slot(pose, outs[OUT.value]))
    else:
        limit = jump_turn if kind == QUAT else jump_speed
        track_signal(sig, ins[IN.value], outs[OUT.value], kind, st[ST.SIZE:], first, jump, spring, limit)
    st[ST.tracking] = 1.0


@register(tracking_spring_node)
class TrackingSpringNode(Node):
    """Follow a signal or pose exactly while smoothing over its jumps (a spring on the offset)."""

    type: Literal["tracking_spring"] = "tracking_spring"
    signal: Literal["scalar", "vec3", "quat", "pose"] = Field("pose", description="what is tracked")
    position_halflife: float = seconds_field(0.3, "half-life of the position offset after a jump")
    velocity_halflife: float = seconds_field(0.05, "half-life of the velocity offset after a jump")
    acceleration: float = unit_field(1.0, "proportion of the target's acceleration followed")
    jump_speed: Optional[float] = Field(
        2.0,
        gt=0.0,
        le=SIGNAL_MAX,
        allow_inf_nan=False,
        description=f"a value stepping off its velocities by more (units/s, (0, {SIGNAL_MAX:g}]) jumps; "
        "null: only the jump event",
    )
    jump_turn: Optional[float] = Field(
        50.0,
        gt=0.0,
        le=SIGNAL_MAX,
        allow_inf_nan=False,
        description=f"a rotation stepping off its angular velocities by more (rad/s, (0, {SIGNAL_MAX:g}]) jumps; "
        "null: only the event",
    )

    CATEGORY = "signals"
    FIELD_KINDS = {"signal": "signal"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def inputs(self):
        ports = list(INPUTS)
        ports[IN.value] = Port("value", self.signal, self.value_space(), "target with its rate")
        return tuple(ports)

    def outputs(self):
        ports = list(OUTPUTS)
        ports[OUT.value] = Port("value", self.signal, self.value_space(), "tracked value with its rate")
        return tuple(ports)

    def value_space(self):
        """The value ports' pose space: any for a pose, none for the other signals."""
        return "any" if self.signal == "pose" else ""

    def params(self, ctx):
        return PAR.pack(
            signal=SIGNALS.index(self.signal),
            position_halflife=self.position_halflife,
            velocity_halflife=self.velocity_halflife,
            acceleration=self.acceleration,
            jump_speed=-1.0 if self.jump_speed is None else self.jump_speed,
            jump_turn=-1.0 if self.jump_turn is None else self.jump_turn,
        )

    def state(self, ctx, time=0.0):
        """Nothing tracked yet: the first frame puts the output onto the target."""
        if self.signal == "pose":
            return np.zeros(ST.SIZE + JOINT.SIZE * len(ctx.skeleton), dtype=np.float64)
        return np.zeros(ST.SIZE + TRACK.SIZE, dtype=np.float64)


# ---------------------------------------------------------------- op


class TrackingSpring:
    """A tracking spring without a graph; the node's parameters and kernel.

    ``TrackingSpring(signal="pose")`` tracks poses of any batch shape;
    ``signal="scalar"|"vec3"|"quat"`` tracks one value given as ``(x, dx)``, ``(p, v)`` or
    ``(q, w)``.  ``update(value, dt, reset=False, jump=False)`` returns the tracked value
    in the same form; the first update after construction or ``reset()`` returns the target.
    """

    def __init__(self, signal="pose", **options):
        try:
            self.node = TrackingSpringNode(id="op", signal=signal, **options)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise ValueError(f"TrackingSpring {where + ': ' if where else ''}{first['msg']}") from None
        self.par = self.node.params(None)
        self.size = 0 if signal == "pose" else SIGNAL_SIZE[signal]
        self.reset()

    def reset(self):
        """Forget the target: the next update starts on it."""
        self.states = None

    def update(self, value, dt, reset=False, jump=False):
        """The tracked value ``dt`` s after the previous update (reset: back onto the target)."""
        if not math.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt}")
        if self.size:
            return self._update_signal(value, float(dt), reset, jump)
        return self._update_pose(value, float(dt), reset, jump)

    def _update_signal(self, value, dt, reset, jump):
        n = self.size
        x, v = value
        flat = np.concatenate([np.ravel(np.asarray(x, dtype=np.float64)), np.ravel(np.asarray(v, dtype=np.float64))])
        if flat.shape != (n,) or not np.all(np.isfinite(flat)):
            raise ValueError(f"a {self.node.signal} value must be finite with {n} numbers, got {flat}")
        if self.states is None:
            self.states = np.zeros(ST.SIZE + TRACK.SIZE)
        # Signal buffer: the value, the output, the reset and jump flags.
        sig = np.zeros(2 * n + 2)
        sig[:n] = flat
        sig[2 * n] = float(reset)
        sig[2 * n + 1] = float(jump)
        ins, outs = _ports(value=0, reset=2 * n, jump=2 * n + 1, out=n)
        tracking_spring_node(ins, outs, self.par, self.states, _NO_POSE, sig, _NO_DB, dt)
        out = sig[n : 2 * n]
        if self.node.signal == "scalar":
            return float(out[0]), float(out[1])
        split = 4 if self.node.signal == "quat" else 3
        return out[:split].copy(), out[split:].copy()

    def _update_pose(self, value, dt, reset, jump):
        joints, batch = value.joints, value.batch
        items = value.items()
        if self.states is None:
            self.states = np.zeros((len(items), ST.SIZE + JOINT.SIZE * joints))
            self.shape = (batch, joints)
        if self.shape != (batch, joints):
            raise ValueError(f"pose has batch {batch} and {joints} joints, the spring tracked {self.shape}")
        if not np.all(value.scl > 0):
            raise ValueError("scales must be positive to track them in log space")
        out = Pose.identity(joints, batch)
        slots = tuple(np.zeros((2,) + a.shape[-2:], dtype=np.float32) for a in value.as_tuple())
        # Pose slot 0 the target, slot 1 the output; signal buffer: the reset and jump flags.
        sig = np.array([float(reset), float(jump)])
        ins, outs = _ports(value=0, reset=0, jump=1, out=1)
        for item, st, dst in zip(items, self.states, out.items()):
            for a, b in zip(slots, item):
                a[0] = b
            tracking_spring_node(ins, outs, self.par, st, slots, sig, _NO_DB, dt)
            for a, b in zip(dst, slots):
                a[:] = b[1]
        return out


def _ports(value, reset, jump, out):
    """The kernel's ``ins`` and ``outs`` from the value, reset and jump locators and the output's."""
    ins, outs = np.empty(len(INPUTS), np.int64), np.empty(len(OUTPUTS), np.int64)
    ins[IN.value], ins[IN.reset], ins[IN.jump] = value, reset, jump
    outs[OUT.value] = out
    return ins, outs


_NO_POSE = tuple(np.zeros((1, 1, n), dtype=np.float32) for n in (3, 4, 3, 3, 3, 3))
_NO_DB = (
    np.zeros((1, 1, 3), dtype=np.float32),
    np.zeros((1, 1, 4), dtype=np.float32),
    np.zeros((1, 1, 3), dtype=np.float32),
    np.zeros(1, dtype=np.int32),
)


def verify_tracking_spring(m, t, h, rng):
    """The target jumps to the backwards clip ``lag`` s before t; the spring takes up the jump and lets go.

    At ``acceleration`` 1 (the default).  Below 1 the spring follows a backward difference
    of the target's acceleration held over each step, so its output is only C1 at the
    steps and a difference across them is off by about ``(1 - acceleration) jerk h^2``
    (3e-2 on these clips, falling as h^2): the stencil cannot tell right from wrong there.
    """
    spring = TrackingSpring(signal="pose", acceleration=1.0)
    start = t - rng.uniform(FRAME, 0.5)
    spring.update(m.pose(start - FRAME), 0.0)
    spring.update(m.other(start), FRAME, jump=True)
    return [play(lambda s, dt: spring.update(m.other(s), dt), start, t, h)]


TrackingSpringNode.OP, TrackingSpringNode.VERIFY = TrackingSpring, verify_tracking_spring
