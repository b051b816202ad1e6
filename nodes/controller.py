"""Controller: the simulation object a player steers with a stick ("Code vs Data Driven Displacement").

Inputs: ``stick`` (vec3 in camera space: x right, z forward, y ignored; longer than 1 counts
as 1) and ``camera_yaw`` (scalar, rad): the camera looks along ``(sin yaw, 0, cos yaw)``, its
right is ``(-cos yaw, 0, sin yaw)`` (Y up, right-handed; the editor's orbit camera has
``camera_yaw = OrbitCamera.yaw + pi``).  A yaw ``th`` faces ``(sin th, 0, cos th)``, the
rotation ``(cos th/2, 0, sin th/2, 0)`` (``preprocess.facing_angle``'s convention).

Desired facing ``g``: the stick's world direction while it is pushed past ``DEADZONE``, else
held (``facing="stick"``); the camera's yaw (``facing="camera"``: strafing).  Desired
velocity: the world stick in the desired facing's frame, its forward part times
``forward_speed`` (``back_speed`` when it points back), its side part times ``side_speed``,
turned back to the world.  The article takes the speeds in the current facing's frame; in
the desired facing's frame held inputs hold the desired velocity, so the springs below are
exact for any step and the predicted trajectory is where the object goes.  Facing the
stick, the object goes where it faces, at ``forward_speed``; side and back speeds act when
strafing.

Springs, critically damped (rate ``y = 2 ln2 / halflife``, ``decay.spring_weights``): the
velocity's offset ``u = v - v_des`` and its rate ``a`` decay as
``u(t) = e^-yt (u0 + (a0 + y u0) t)``, and the position is their integral

    x(t) = x0 + v_des t + P(t) u0 + Q(t) a0,   Q = (1 - e^-yt (1 + yt)) / y^2,   P = (1 - e^-yt) / y + y Q

The yaw's offset from ``g`` (the short way round) and the yaw rate decay alike with
``rotation_halflife``.

Trajectory (``animgraph.node.TRAJECTORY``): the same closed forms at the ``offsets`` ``tau``,
in the object's own frame now.  As the state moves on, a prediction slides along the same
solution, so its rates are ``d/dt x(tau) = v(tau) + (tau - P(tau)) v_des'`` and
``d/dt th(tau) = w(tau) + (1 - W(tau)) g'`` (``W`` the spring's weight of the yaw offset), with
``v_des'`` and ``g'`` from the stick's and the camera's rates.

Frames: as in the output node, the kernel's ``dt`` is the step to the next frame; a frame
first covers the step since the last one (this frame's inputs held over it), then
outputs.  A reset puts the object at the origin, still, facing +Z.
"""

import math
from typing import Annotated, Literal, Tuple

import numpy as np
from animgraph.jit import njit
from pydantic import Field

from animgraph.args import node_model, signal_pair
from animgraph.decay import LN2, MIN_SECONDS, decay3, spring_weights
from animgraph.kernels import NO_DB, NO_POSE, read3, write3
from animgraph.limits import SECONDS_MAX, SIGNAL_MAX, seconds_field
from animgraph.maths import vadd, vlen, vnormalize_dx, vscale, vsub
from animgraph.node import TRAJECTORY, Node, Port, fields, port_indices, register
from animgraph.pose import Pose
from animgraph.stencil import FRAME, play

DEADZONE = 1e-3  # stick length under which "stick" facing holds the last desired facing
# A desired facing this close (rad) to the held one is the same goal: it keeps the held goal's turn (its multiple
# of 2 pi), so a held stick never flips the way round when the yaw swings past the goal's far side, however the
# time is cut.
SAME_GOAL = 1e-9
SPEED_MAX = 1e3  # m/s
ZERO = (0.0, 0.0, 0.0)

INPUTS = (
    Port("stick", "vec3", "", "the stick in camera space (x right, z forward, length <= 1) and its rate"),
    Port("camera_yaw", "scalar", "", "the camera's yaw (rad: it looks along (sin, 0, cos)) and its rate", True),
)
OUTPUTS = (
    Port("position", "vec3", "", "the simulation object's world position (m) and velocity"),
    Port("rotation", "quat", "", "its facing, a rotation about +Y, and angular velocity (rad/s)"),
    Port("trajectory", "trajectory", "", "its predicted future at the offsets, in its own frame, with rates"),
)
IN, OUT = port_indices("ControllerIn", INPUTS), port_indices("ControllerOut", OUTPUTS)
FACINGS = ("stick", "camera")
# Speeds (m/s), half-lives (s), the trajectory's offsets (s), the facing mode (FACINGS index).
PAR = fields("ControllerPar", forward_speed=1, side_speed=1, back_speed=1, velocity_halflife=1, rotation_halflife=1,
             offsets=3, facing=1)
# The object: position (m), velocity, acceleration; yaw (rad, unwrapped), yaw rate, held desired yaw;
# the step that followed the last frame (s) and whether there was a last frame.
ST = fields("ControllerSt", pos=3, vel=3, acc=3, yaw=1, spin=1, goal=1, last_dt=1, has_last=1)


# ---------------------------------------------------------------- frames and inputs


@njit(cache=True)
def yaw_rot(v, yaw):
    """``v`` turned by ``yaw`` rad about +Y (+Z towards +X)."""
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * v[0] + s * v[2], v[1], c * v[2] - s * v[0])


@njit(cache=True)
def up_cross(v):
    """``+Y x v``: the rate of ``v`` turning about +Y at 1 rad/s."""
    return (v[2], 0.0, -v[0])


@njit(cache=True)
def wrap(angle):
    """``angle`` (rad) brought into [-pi, pi)."""
    return angle - 2.0 * math.pi * math.floor((angle + math.pi) / (2.0 * math.pi))


@njit(cache=True)
def world_stick(stick, stick_vel, yaw, yaw_rate):
    """The stick in the world (length <= 1, on the ground) and its rate: x along ``(-cos, 0, sin)``, z ahead."""
    s, ds = (stick[0], 0.0, stick[2]), (stick_vel[0], 0.0, stick_vel[2])
    n = vlen(s)
    if n > 1.0:
        s, ds = vscale(s, 1.0 / n), vnormalize_dx(s, ds)
    w = yaw_rot((-s[0], 0.0, s[2]), yaw)
    return w, vadd(yaw_rot((-ds[0], 0.0, ds[2]), yaw), vscale(up_cross(w), yaw_rate))


@njit(cache=True)
def desired_facing(stick, stick_vel, held, yaw, yaw_rate, camera, near):
    """The desired yaw (rad) and its rate: the camera's, the stick's, or ``held``; a new goal within pi of ``near``,
    the held goal (the same direction) as it was."""
    rate = 0.0
    goal = held
    if camera:
        goal, rate = yaw, yaw_rate
    elif vlen(stick) > DEADZONE:
        goal = math.atan2(stick[0], stick[2])
        rate = (stick[2] * stick_vel[0] - stick[0] * stick_vel[2]) / (stick[0] ** 2 + stick[2] ** 2)
    if abs(wrap(goal - held)) <= SAME_GOAL:
        return held, rate
    return near + wrap(goal - near), rate


@njit(cache=True)
def desired_velocity(stick, stick_vel, goal, goal_rate, forward, side, back):
    """The desired velocity (m/s) and its rate: the world stick scaled by the speeds in the desired facing's frame."""
    local = yaw_rot(stick, -goal)
    local_rate = vsub(yaw_rot(stick_vel, -goal), vscale(up_cross(local), goal_rate))
    ahead = forward if local[2] > 0.0 else back
    vel = yaw_rot((side * local[0], 0.0, ahead * local[2]), goal)
    scaled_rate = yaw_rot((side * local_rate[0], 0.0, ahead * local_rate[2]), goal)
    return vel, vadd(scaled_rate, vscale(up_cross(vel), goal_rate))


# ---------------------------------------------------------------- springs


@njit(cache=True)
def spring_integrals(halflife, t):
    """``(P, Q)`` (s, s^2): position gained after ``t`` s per unit of initial velocity offset and of acceleration."""
    if not halflife >= MIN_SECONDS or t == 0.0:
        return 0.0, 0.0
    y = 2.0 * LN2 / halflife
    z = y * t
    # f = 1 - e^-z (1 + z), by its series where the difference would cancel.
    f = z * z * (0.5 - z / 3.0 + z * z / 8.0) if z < 1e-3 else 1.0 - math.exp(-z) * (1.0 + z)
    return (-math.expm1(-z) + f) / y, f / (y * y)


@njit(cache=True)
def move(pos, vel, acc, goal, halflife, t):
    """Position (m), velocity and acceleration ``t`` s on, the velocity springing towards ``goal`` (m/s)."""
    p, q = spring_integrals(halflife, t)
    off = vsub(vel, goal)
    off_t, acc_t = decay3(spring_weights(halflife, t), off, acc)
    pos_t = vadd(vadd(pos, vscale(goal, t)), vadd(vscale(off, p), vscale(acc, q)))
    return pos_t, vadd(goal, off_t), acc_t


@njit(cache=True)
def turn(yaw, spin, goal, halflife, t):
    """Yaw (rad), yaw rate ``t`` s on, springing towards ``goal`` (rad, unwrapped); and the weight the offset keeps."""
    w = spring_weights(halflife, t)
    off = yaw - goal
    return goal + w[0] * off + w[1] * spin, w[2] * off + w[3] * spin, w[0]


# ---------------------------------------------------------------- outputs


@njit(cache=True)
def write_trajectory(sig, o, par, state, velocity_goal, facing_goal):
    """The trajectory block at ``sig[o]`` from ``state`` (pos, vel, acc, yaw, spin) and the goals (value, rate)."""
    pos, vel, acc, yaw, spin = state
    vel_goal, vel_goal_rate = velocity_goal
    yaw_goal, yaw_goal_rate = facing_goal
    hv, hr = par[PAR.velocity_halflife], par[PAR.rotation_halflife]
    for k in range(3):
        tau = par[PAR.offsets + k]
        pos_k, vel_k, _ = move(pos, vel, acc, vel_goal, hv, tau)
        vel_k = vadd(vel_k, vscale(vel_goal_rate, tau - spring_integrals(hv, tau)[0]))
        yaw_k, spin_k, keep = turn(yaw, spin, yaw_goal, hr, tau)
        spin_k += (1.0 - keep) * yaw_goal_rate
        ahead = yaw_rot(vsub(pos_k, pos), -yaw)
        ahead_rate = vsub(yaw_rot(vsub(vel_k, vel), -yaw), vscale(up_cross(ahead), spin))
        angle, angle_rate = yaw_k - yaw, spin_k - spin
        sig[o + TRAJECTORY.pos + 2 * k] = ahead[0]
        sig[o + TRAJECTORY.pos + 2 * k + 1] = ahead[2]
        sig[o + TRAJECTORY.facing + 2 * k] = math.sin(angle)
        sig[o + TRAJECTORY.facing + 2 * k + 1] = math.cos(angle)
        sig[o + TRAJECTORY.pos_rate + 2 * k] = ahead_rate[0]
        sig[o + TRAJECTORY.pos_rate + 2 * k + 1] = ahead_rate[2]
        sig[o + TRAJECTORY.facing_rate + 2 * k] = angle_rate * math.cos(angle)
        sig[o + TRAJECTORY.facing_rate + 2 * k + 1] = -angle_rate * math.sin(angle)


@njit(cache=True)
def write_placement(sig, outs, pos, vel, yaw, spin):
    """The position (vec3) and rotation (quat about +Y) outputs."""
    write3(sig, outs[OUT.position], pos)
    write3(sig, outs[OUT.position] + 3, vel)
    o = outs[OUT.rotation]
    sig[o], sig[o + 1], sig[o + 2], sig[o + 3] = math.cos(0.5 * yaw), 0.0, math.sin(0.5 * yaw), 0.0
    write3(sig, o + 4, (0.0, spin, 0.0))


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def controller_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: cover the last step with this frame's goals, then output the object and its future."""
    stick, stick_vel = world_stick(read3(sig, ins[IN.stick]), read3(sig, ins[IN.stick] + 3),
                                   sig[ins[IN.camera_yaw]], sig[ins[IN.camera_yaw] + 1])
    camera = par[PAR.facing] > 0.5
    yaw_goal, yaw_goal_rate = desired_facing(stick, stick_vel, st[ST.goal], sig[ins[IN.camera_yaw]],
                                             sig[ins[IN.camera_yaw] + 1], camera, st[ST.yaw])
    vel_goal, vel_goal_rate = desired_velocity(stick, stick_vel, yaw_goal, yaw_goal_rate, par[PAR.forward_speed],
                                               par[PAR.side_speed], par[PAR.back_speed])
    pos, vel, acc = read3(st, ST.pos), read3(st, ST.vel), read3(st, ST.acc)
    yaw, spin = st[ST.yaw], st[ST.spin]
    if st[ST.has_last] > 0.5:
        pos, vel, acc = move(pos, vel, acc, vel_goal, par[PAR.velocity_halflife], st[ST.last_dt])
        yaw, spin, _ = turn(yaw, spin, yaw_goal, par[PAR.rotation_halflife], st[ST.last_dt])
    write3(st, ST.pos, pos)
    write3(st, ST.vel, vel)
    write3(st, ST.acc, acc)
    st[ST.yaw], st[ST.spin], st[ST.goal] = yaw, spin, yaw_goal
    st[ST.last_dt], st[ST.has_last] = dt, 1.0
    write_placement(sig, outs, pos, vel, yaw, spin)
    write_trajectory(sig, outs[OUT.trajectory], par, (pos, vel, acc, yaw, spin), (vel_goal, vel_goal_rate),
                     (yaw_goal, yaw_goal_rate))


def speed_field(default, description):
    """A speed field: 0..SPEED_MAX m/s."""
    return Field(default, ge=0.0, le=SPEED_MAX, allow_inf_nan=False,
                 description=f"{description} (m/s, [0, {SPEED_MAX:g}])")


Seconds = Annotated[float, Field(ge=0.0, le=SECONDS_MAX, allow_inf_nan=False)]
OFFSETS = (1.0 / 3.0, 2.0 / 3.0, 1.0)  # +20, +40, +60 frames at 60 fps


@register(controller_node)
class Controller(Node):
    """The simulation object steered by a stick: springs on velocity and facing, and its predicted trajectory."""

    type: Literal["controller"] = "controller"
    forward_speed: float = speed_field(4.0, "speed with the stick pushed fully ahead of the facing")
    side_speed: float = speed_field(3.0, "speed with the stick fully to the side of the facing")
    back_speed: float = speed_field(2.5, "speed with the stick fully behind the facing")
    velocity_halflife: float = seconds_field(0.27, "half-life of the velocity spring (0: the desired velocity at once)")
    rotation_halflife: float = seconds_field(0.27, "half-life of the facing spring (0: the desired facing at once)")
    offsets: Tuple[Seconds, Seconds, Seconds] = Field(
        OFFSETS, description=f"the trajectory's three future times (s, each in [0, {SECONDS_MAX:g}])"
    )
    facing: Literal["stick", "camera"] = Field(
        "stick", description="desired facing: where the stick points (held when released), or the camera's (strafe)"
    )
    camera_yaw: float = Field(0.0, ge=-SIGNAL_MAX, le=SIGNAL_MAX, allow_inf_nan=False,
                              description="the camera's yaw while the camera_yaw port is unlinked (rad)")

    CATEGORY = "locomotion"
    FIELD_KINDS = {"offsets": "axis", "facing": "enum"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def params(self, ctx):
        return PAR.pack(forward_speed=self.forward_speed, side_speed=self.side_speed, back_speed=self.back_speed,
                        velocity_halflife=self.velocity_halflife, rotation_halflife=self.rotation_halflife,
                        offsets=self.offsets, facing=FACINGS.index(self.facing))

    def state(self, ctx, time=0.0):
        """At the origin, still, facing +Z (and wanting to), with no last frame."""
        return ST.pack(pos=ZERO, vel=ZERO, acc=ZERO, yaw=0.0, spin=0.0, goal=0.0, last_dt=0.0, has_last=0.0)


# ---------------------------------------------------------------- op


def controller(state, stick, camera_yaw=0.0, dt=0.0, **options):
    """The simulation object ``dt`` s after ``state``, the inputs held over the step: a pure function of its state.

    ``state``: float64 (..., ``ST.SIZE``) from the last call, or None for a reset (no step: at
    the origin, still, facing +Z).  ``stick``: ``(value, rate)`` of (..., 3) arrays in camera
    space, or the value alone (rate 0); ``camera_yaw``: ``(yaw, rate)`` (rad, rad/s) or the
    yaw alone; ``options``: the node's fields.  Returns ``(state, (pos, vel), (rot, ang),
    trajectory)``: (..., 3) m and m/s, (..., 4) w-first and (..., 3) rad/s, (..., 24) as in
    ``animgraph.node``.
    """
    node = node_model(Controller, options, "controller")
    par = node.params(None)
    stick, stick_vel = signal_pair(stick, (3,), "stick")
    yaw, yaw_rate = signal_pair(camera_yaw, (), "camera_yaw")
    shape = np.broadcast_shapes(stick.shape[:-1], stick_vel.shape[:-1], yaw.shape, yaw_rate.shape,
                                () if state is None else np.shape(state)[:-1])
    if not (math.isfinite(dt) and dt >= 0.0):
        raise ValueError(f"dt must be a finite number of seconds >= 0, got {dt}")
    states = np.empty(shape + (ST.SIZE,))
    states[...] = node.state(None) if state is None else state
    if state is not None:
        states[..., ST.last_dt], states[..., ST.has_last] = dt, 1.0
    inputs = np.concatenate([np.broadcast_to(stick, shape + (3,)), np.broadcast_to(stick_vel, shape + (3,)),
                             np.broadcast_to(yaw, shape)[..., None], np.broadcast_to(yaw_rate, shape)[..., None]], -1)
    outs = np.empty(shape + (_SIG - 8,))
    for i in np.ndindex(shape):
        sig = np.concatenate([inputs[i], np.zeros(_SIG - 8)])
        controller_node(_INS, _OUTS, par, states[i], NO_POSE, sig, NO_DB, float(dt))
        outs[i] = sig[8:]
    return (states, (outs[..., 0:3], outs[..., 3:6]), (outs[..., 6:10], outs[..., 10:13]), outs[..., 13:])


_SIG = 8 + 6 + 7 + TRAJECTORY.SIZE  # the op's signal buffer: stick, camera yaw, then the three outputs
_INS = np.array([0, 6], np.int64)
_OUTS = np.array([8, 14, 21], np.int64)


# ---------------------------------------------------------------- verify


def facing_pose(pos, rot, traj):
    """The object and its three predicted points as a 4-joint Pose: points at (x, 0, z), turned to their facings."""
    lead = pos[0].shape[:-1]
    p, v = np.zeros(lead + (4, 3)), np.zeros(lead + (4, 3))
    q, w = np.zeros(lead + (4, 4)), np.zeros(lead + (4, 3))
    p[..., 0, :], v[..., 0, :], q[..., 0, :], w[..., 0, :] = pos[0], pos[1], rot[0], rot[1]
    for k in range(3):
        at = TRAJECTORY.pos + 2 * k
        p[..., k + 1, 0], p[..., k + 1, 2] = traj[..., at], traj[..., at + 1]
        rate = TRAJECTORY.pos_rate + 2 * k
        v[..., k + 1, 0], v[..., k + 1, 2] = traj[..., rate], traj[..., rate + 1]
        dx, dz = traj[..., TRAJECTORY.facing + 2 * k], traj[..., TRAJECTORY.facing + 2 * k + 1]
        ddx, ddz = traj[..., TRAJECTORY.facing_rate + 2 * k], traj[..., TRAJECTORY.facing_rate + 2 * k + 1]
        angle = np.arctan2(dx, dz)
        q[..., k + 1, 0], q[..., k + 1, 2] = np.cos(0.5 * angle), np.sin(0.5 * angle)
        w[..., k + 1, 1] = dz * ddx - dx * ddz
    return Pose(p, q, vel=v, ang=w)


def verify_stick(t, camera):
    """A stick swinging round (facing "stick", length 0.45..0.95) or ahead, side to side ("camera"); and its rate."""
    zero = np.zeros_like(t)
    if camera:
        value = np.stack([0.55 * np.sin(1.7 * t), zero, 0.5 + 0.3 * np.cos(1.1 * t)], -1)
        rate = np.stack([0.55 * 1.7 * np.cos(1.7 * t), zero, -0.3 * 1.1 * np.sin(1.1 * t)], -1)
        return value, rate
    value = np.stack([0.7 * np.sin(1.3 * t) + 0.25 * np.cos(2.1 * t + 1.0), zero,
                      0.7 * np.cos(1.3 * t) + 0.25 * np.sin(0.7 * t)], -1)
    rate = np.stack([0.7 * 1.3 * np.cos(1.3 * t) - 0.25 * 2.1 * np.sin(2.1 * t + 1.0), zero,
                     -0.7 * 1.3 * np.sin(1.3 * t) + 0.25 * 0.7 * np.cos(0.7 * t)], -1)
    return value, rate


def verify_yaw(t):
    """A camera turning steadily and swinging: yaw (rad) and rate."""
    return 0.8 * np.sin(0.9 * t) + 0.3 * t, 0.8 * 0.9 * np.cos(0.9 * t) + 0.3


def verify_controller(m, t, h, rng):
    """The stick swinging (facing the stick, or strafing with a turning camera) from a reset 1 to 30 frames before t."""
    camera = bool(rng.integers(0, 2))
    options = {"facing": "camera" if camera else "stick", "velocity_halflife": 0.2, "rotation_halflife": 0.3}
    start = t - rng.uniform(FRAME, 0.5)
    state = controller(None, verify_stick(start, camera), verify_yaw(start), **options)[0]

    def step(s, dt):
        nonlocal state
        state, pos, rot, traj = controller(state, verify_stick(s, camera), verify_yaw(s), dt, **options)
        return facing_pose(pos, rot, traj)

    return [play(step, start, t, h)]


Controller.OP, Controller.VERIFY = controller, verify_controller
