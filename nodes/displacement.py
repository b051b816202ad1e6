"""Displacement: where the character entity stands, between its root motion and the simulation object.

From "Code vs Data Driven Displacement".  Inputs: the character's root ``motion`` (body-frame
velocity and angular velocity, from a sample or motion matching) and the simulation
object's ``position`` and ``rotation`` (from the controller).  The node integrates the
character's world placement in its state, as the output node does (each frame the exact
arc of the mean of the two frames' motions over the step since the last frame), then:

- ``none``: nothing more: the character goes where its root motion takes it.
- ``character_to_simulation``: the character is put on the simulation object.
- ``simulation_to_character``: the simulation is meant to follow the character.  A node
  downstream cannot move the controller, so here the character moves by its root motion
  alone; the controller's trajectory is relative to its own position and facing, so fed to
  motion matching it still asks for the turn and speed wanted, from where the character is.
- ``adjust``: the character is pulled towards the simulation at the damper rates
  ``k = ln2 / halflife`` (position, rotation): ``p' = R v + k (s - p)``; each step solves
  this exactly for ``s - p_free`` moving linearly over the step (``p_free`` the root-motion
  path):  ``p1 = p_free + a g0 + b (g1 - g0)``, ``g = s - p`` at the step's start and
  ``s - p_free`` at its end, ``a = 1 - e^-kt``, ``b = 1 - a / kt`` (the article's damper is
  ``a g1``); rotations likewise on rotation vectors.
- ``adjust_by_velocity``: the same, the adjustment's rate held under ``position_ratio``
  times the character's speed (``rotation_ratio`` times its turning rate), so a character
  standing still is not slid.

Then in any mode ``clamp_distance`` (m) and ``clamp_angle`` (rad) bound the deviation from the
simulation (0: off).  A clamped character is held on the bound: its velocity relative to the
simulation loses the part that would take it out.  Velocities are exact for the
continuous-time adjustment: root motion plus the damper's rate now; the placement follows
that motion to second order in the step (first order while clamped, or with a half-life
far shorter than the step, where the damper settles within the step).  Outputs: the
character's ``position`` and ``rotation`` (feed the output node's placement) and its
``deviation`` from the simulation (m, with its rate).  An unlinked ``rotation`` leaves the
facing to root motion alone; an unlinked ``motion`` is standing still.  The first frame
after a reset puts the character on the simulation.
"""

import math
from typing import Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field

from animgraph.args import node_model, signal_pair
from animgraph.decay import MAX_RATE, halflife_rate
from animgraph.kernels import NO_DB, NO_POSE, read3, write3
from animgraph.limits import DISTANCE_MAX, seconds_field
from animgraph.maths import (
    ang_to_sa_dx,
    body_step,
    from_scaled_angle_axis,
    qinv,
    qmul,
    qnormalize,
    qrot,
    sa_dx_to_ang,
    to_scaled_angle_axis,
    vadd,
    vdot,
    vlen,
    vscale,
    vsub,
)
from animgraph.node import Node, Port, fields, port_indices, register
from animgraph.pose import Pose
from animgraph.stencil import FRAME, play

MODES = ("none", "character_to_simulation", "simulation_to_character", "adjust", "adjust_by_velocity")
NONE, TO_SIMULATION, TO_CHARACTER, ADJUST, BY_VELOCITY = range(len(MODES))
ZERO = (0.0, 0.0, 0.0)
IDENTITY = (1.0, 0.0, 0.0, 0.0)
WRAP = 1.0  # rad: a rotation deviation stepping further than this wrapped round; damp its end value alone

INPUTS = (
    Port("motion", "motion", "", "the character's root motion (body frame); unlinked: standing still", True),
    Port("position", "vec3", "", "the simulation object's world position (m) and velocity"),
    Port("rotation", "quat", "", "the simulation object's rotation and angular velocity; unlinked: facing "
         "by root motion alone", True),
)
OUTPUTS = (
    Port("position", "vec3", "", "the character's world position (m) and velocity"),
    Port("rotation", "quat", "", "the character's world rotation and angular velocity (rad/s)"),
    Port("deviation", "scalar", "", "distance from the character to the simulation (m) and its rate"),
    Port("motion", "motion", "", "the character's motion in its own frame (m/s, rad/s): what moves its model "
         "frame, for foot locks"),
)
IN, OUT = port_indices("DisplacementIn", INPUTS), port_indices("DisplacementOut", OUTPUTS)
# mode: MODES index; half-lives (s); ratios of the character's speeds; clamps (m, rad; 0 off)
PAR = fields("DisplacementPar", mode=1, position_halflife=1, rotation_halflife=1, position_ratio=1, rotation_ratio=1,
             clamp_distance=1, clamp_angle=1)
# The character's placement; the last frame's motion, the simulation then, and the step that followed it;
# whether the character was placed (0 after a reset).
ST = fields("DisplacementSt", pos=3, rot=4, last_vel=3, last_ang=3, sim_pos=3, sim_rot=4, last_dt=1, placed=1)


# ---------------------------------------------------------------- steps


@njit(cache=True)
def root_motion_step(pos, rot, vel, ang, dt):
    """Placement (m, w-first) ``dt`` s on along the exact arc of body-frame velocity ``vel`` and ``ang`` (held)."""
    disp, turn = body_step(vel, ang, dt)
    return vadd(pos, qrot(rot, disp)), qnormalize(qmul(rot, turn))


@njit(cache=True)
def damper_weights(rate, dt):
    """``(a, b)`` of a damper at ``rate`` (1/s) over ``dt`` s: ``a = 1 - e^-z``, ``b = 1 - a / z``, ``z = rate dt``."""
    z = rate * dt
    if z == 0.0:
        return 0.0, 0.0
    if z < 1e-4:
        return -math.expm1(-z), z * (0.5 - z / 6.0)
    a = -math.expm1(-z)
    return a, 1.0 - a / z


@njit(cache=True)
def limit(v, most):
    """``v`` shortened to length ``most`` if longer."""
    n = vlen(v)
    if n > most:
        return vscale(v, most / n)
    return v


@njit(cache=True)
def adjustment(start, end, weights):
    """The damped adjustment over a step from the gaps at its start and end (linear between): ``a g0 + b (g1 - g0)``."""
    return vadd(vscale(start, weights[0]), vscale(vsub(end, start), weights[1]))


@njit(cache=True)
def rot_gap(target, rot):
    """Rotation vector (rad) from ``rot`` to ``target``, left-multiplying: ``exp(gap) rot = target``."""
    return to_scaled_angle_axis(qmul(target, qinv(rot)))


# ---------------------------------------------------------------- clamps


@njit(cache=True)
def clamp_position(pos, sim, most):
    """``pos`` within ``most`` m of ``sim`` (0: no bound), and the outward direction if held on the bound (else 0)."""
    gap = vsub(pos, sim)
    n = vlen(gap)
    if not (most > 0.0 and n > most):
        return pos, ZERO
    out = vscale(gap, 1.0 / n)
    return vadd(sim, vscale(out, most)), out


@njit(cache=True)
def held_velocity(vel, sim_vel, out):
    """The velocity of a character held on the bound (outward direction ``out``): no outward motion from the sim."""
    rel = vsub(vel, sim_vel)
    away = vdot(rel, out)
    if away > 0.0:
        return vsub(vel, vscale(out, away))
    return vel


@njit(cache=True)
def clamp_rotation(rot, sim, most):
    """``rot`` within ``most`` rad of ``sim`` (0: no bound), and its rotation vector from ``sim`` if held (else 0)."""
    gap = rot_gap(rot, sim)
    n = vlen(gap)
    if not (most > 0.0 and n > most):
        return rot, ZERO
    gap = vscale(gap, most / n)
    return qmul(from_scaled_angle_axis(gap), sim), gap


@njit(cache=True)
def held_angular(ang, sim_ang, gap):
    """The angular velocity of a rotation held on the bound at ``gap`` (rad) from the sim's: no outward turning.

    The gap's rate from the relative angular velocity (inverse left Jacobian) loses its
    outward part, and is turned back into an angular velocity (left Jacobian).
    """
    rel = from_scaled_angle_axis(gap)
    rate = ang_to_sa_dx(gap, vsub(ang, qrot(rel, sim_ang)))
    away = vdot(rate, gap) / vdot(gap, gap)
    if away <= 0.0:
        return ang
    return vadd(sa_dx_to_ang(gap, vsub(rate, vscale(gap, away))), qrot(rel, sim_ang))


# ---------------------------------------------------------------- the frame


@njit(cache=True)
def follow(st, par, mode, motion, sim, linked):
    """The character's placement this frame (pos, rot), from its last one by root motion and the mode's adjustment."""
    vel, ang = motion
    sim_pos, sim_rot = sim[0], sim[2]
    if st[ST.placed] < 0.5:
        return sim_pos, sim_rot if linked else IDENTITY
    pos, rot = read3(st, ST.pos), (st[ST.rot], st[ST.rot + 1], st[ST.rot + 2], st[ST.rot + 3])
    dt = st[ST.last_dt]
    last_vel, last_ang = read3(st, ST.last_vel), read3(st, ST.last_ang)
    mean_vel, mean_ang = vscale(vadd(last_vel, vel), 0.5), vscale(vadd(last_ang, ang), 0.5)
    free_pos, free_rot = root_motion_step(pos, rot, mean_vel, mean_ang, dt)
    if mode == TO_SIMULATION:
        return sim_pos, sim_rot if linked else free_rot
    if mode != ADJUST and mode != BY_VELOCITY:
        return free_pos, free_rot
    by_velocity = mode == BY_VELOCITY
    if linked:
        last_sim_rot = (st[ST.sim_rot], st[ST.sim_rot + 1], st[ST.sim_rot + 2], st[ST.sim_rot + 3])
        start, end = rot_gap(last_sim_rot, rot), rot_gap(sim_rot, free_rot)
        if vlen(vsub(end, start)) > WRAP:
            start = end
        turn = adjustment(start, end, damper_weights(min(halflife_rate(par[PAR.rotation_halflife]), MAX_RATE), dt))
        if by_velocity:
            turn = limit(turn, par[PAR.rotation_ratio] * dt * 0.5 * (vlen(last_ang) + vlen(ang)))
        free_rot = qnormalize(qmul(from_scaled_angle_axis(turn), free_rot))
        # The root-motion path along the turn the body really took (second order with the adjustment).
        took = to_scaled_angle_axis(qmul(qinv(rot), free_rot))
        free_pos = vadd(pos, qrot(rot, vscale(sa_dx_to_ang(took, mean_vel), dt)))
    move = adjustment(vsub(read3(st, ST.sim_pos), pos), vsub(sim_pos, free_pos),
                      damper_weights(min(halflife_rate(par[PAR.position_halflife]), MAX_RATE), dt))
    if by_velocity:
        move = limit(move, par[PAR.position_ratio] * dt * 0.5 * (vlen(last_vel) + vlen(vel)))
    return vadd(free_pos, move), free_rot


@njit(cache=True)
def rates(par, mode, pos, rot, motion, sim, linked):
    """The character's velocity and angular velocity (world): root motion plus the adjustment's rate now."""
    vel, ang = qrot(rot, motion[0]), qrot(rot, motion[1])
    sim_pos, sim_vel, sim_rot, sim_ang = sim
    if mode == TO_SIMULATION:
        return sim_vel, sim_ang if linked else ang
    if mode != ADJUST and mode != BY_VELOCITY:
        return vel, ang
    pull = vscale(vsub(sim_pos, pos), min(halflife_rate(par[PAR.position_halflife]), MAX_RATE))
    spin = vscale(rot_gap(sim_rot, rot), min(halflife_rate(par[PAR.rotation_halflife]), MAX_RATE))
    if mode == BY_VELOCITY:
        pull = limit(pull, par[PAR.position_ratio] * vlen(motion[0]))
        spin = limit(spin, par[PAR.rotation_ratio] * vlen(motion[1]))
    return vadd(vel, pull), vadd(ang, spin) if linked else ang


@njit(cache=True)
def read_motion(sig, at):
    """Body-frame velocity and angular velocity of the motion signal at ``sig[at]``; standing still when unlinked."""
    if at < 0:
        return ZERO, ZERO
    return read3(sig, at), read3(sig, at + 3)


@njit(cache=True)
def read_simulation(sig, ins):
    """The simulation's (pos, vel, rot, ang); the identity, still, when its rotation is unlinked."""
    pos, vel = read3(sig, ins[IN.position]), read3(sig, ins[IN.position] + 3)
    at = ins[IN.rotation]
    if at < 0:
        return pos, vel, IDENTITY, ZERO
    return pos, vel, qnormalize((sig[at], sig[at + 1], sig[at + 2], sig[at + 3])), read3(sig, at + 4)


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def displacement_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: move the character over the last step, adjust and clamp it, output its placement."""
    mode = int(par[PAR.mode])
    motion = read_motion(sig, ins[IN.motion])
    sim = read_simulation(sig, ins)
    linked = ins[IN.rotation] >= 0
    pos, rot = follow(st, par, mode, motion, sim, linked)
    pos, out = clamp_position(pos, sim[0], par[PAR.clamp_distance])
    gap = ZERO
    if linked:
        rot, gap = clamp_rotation(rot, sim[2], par[PAR.clamp_angle])
    vel, ang = rates(par, mode, pos, rot, motion, sim, linked)
    if vdot(out, out) > 0.0:
        vel = held_velocity(vel, sim[1], out)
    if vdot(gap, gap) > 0.0:
        ang = held_angular(ang, sim[3], gap)
    write3(st, ST.pos, pos)
    st[ST.rot], st[ST.rot + 1], st[ST.rot + 2], st[ST.rot + 3] = rot
    write3(st, ST.last_vel, motion[0])
    write3(st, ST.last_ang, motion[1])
    write3(st, ST.sim_pos, sim[0])
    st[ST.sim_rot], st[ST.sim_rot + 1], st[ST.sim_rot + 2], st[ST.sim_rot + 3] = sim[2]
    st[ST.last_dt], st[ST.placed] = dt, 1.0
    write_outputs(sig, outs, pos, vel, rot, ang, sim)


@njit(cache=True)
def write_outputs(sig, outs, pos, vel, rot, ang, sim):
    """Position, rotation, the deviation (distance to the simulation, m, and its rate) and the body-frame motion."""
    write3(sig, outs[OUT.position], pos)
    write3(sig, outs[OUT.position] + 3, vel)
    o = outs[OUT.rotation]
    sig[o], sig[o + 1], sig[o + 2], sig[o + 3] = rot
    write3(sig, o + 4, ang)
    gap = vsub(pos, sim[0])
    n = vlen(gap)
    sig[outs[OUT.deviation]] = n
    sig[outs[OUT.deviation] + 1] = vdot(gap, vsub(vel, sim[1])) / n if n > 1e-12 else 0.0
    back = qinv(rot)
    write3(sig, outs[OUT.motion], qrot(back, vel))
    write3(sig, outs[OUT.motion] + 3, qrot(back, ang))


@register(displacement_node)
class Displacement(Node):
    """The character entity's placement: root motion, synchronised, adjusted or clamped to the simulation object."""

    type: Literal["displacement"] = "displacement"
    mode: Literal["none", "character_to_simulation", "simulation_to_character", "adjust", "adjust_by_velocity"] = Field(
        "adjust_by_velocity", description="how the character follows the simulation (see the node's docs)"
    )
    position_halflife: float = seconds_field(0.1, "half-life of the position adjustment (0: at once)")
    rotation_halflife: float = seconds_field(0.2, "half-life of the rotation adjustment (0: at once)")
    position_ratio: float = Field(0.5, ge=0.0, le=100.0, allow_inf_nan=False,
                                  description="adjust_by_velocity: most adjustment speed per m/s of the character's "
                                  "speed [0, 100]")
    rotation_ratio: float = Field(0.5, ge=0.0, le=100.0, allow_inf_nan=False,
                                  description="adjust_by_velocity: most adjustment turn rate per rad/s of the "
                                  "character's turning [0, 100]")
    clamp_distance: float = Field(0.0, ge=0.0, le=DISTANCE_MAX, allow_inf_nan=False,
                                  description=f"farthest the character strays from the simulation (m, [0, "
                                  f"{DISTANCE_MAX:g}]; 0: no clamp)")
    clamp_angle: float = Field(0.0, ge=0.0, le=math.pi, allow_inf_nan=False,
                               description="most the character's rotation strays from the simulation's (rad, "
                               "[0, pi]; 0: no clamp)")

    CATEGORY = "locomotion"
    FIELD_KINDS = {"mode": "enum"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def params(self, ctx):
        return PAR.pack(mode=MODES.index(self.mode), position_halflife=self.position_halflife,
                        rotation_halflife=self.rotation_halflife, position_ratio=self.position_ratio,
                        rotation_ratio=self.rotation_ratio, clamp_distance=self.clamp_distance,
                        clamp_angle=self.clamp_angle)

    def state(self, ctx, time=0.0):
        """Not placed yet: the first frame puts the character on the simulation."""
        return ST.pack(pos=ZERO, rot=IDENTITY, last_vel=ZERO, last_ang=ZERO, sim_pos=ZERO, sim_rot=IDENTITY,
                       last_dt=0.0, placed=0.0)


# ---------------------------------------------------------------- op


def displacement(state, position, rotation=None, motion=None, dt=0.0, **options):
    """The character's placement ``dt`` s after ``state``: a pure function of its state and this frame's inputs.

    ``state``: float64 (..., ``ST.SIZE``) from the last call, or None for a reset (no step:
    the character is put on the simulation).  ``position``: the simulation's ``(pos, vel)``
    (..., 3) arrays (m, m/s); ``rotation``: its ``(rot, ang)`` ((..., 4) w-first, (..., 3)
    rad/s) or None (unlinked); ``motion``: the character's root motion ``(vel, ang)``
    (..., 3) in its body frame, or None (standing still); ``options``: the node's fields.
    Returns ``(state, (pos, vel), (rot, ang), (deviation, rate), (body vel, body ang))``.
    """
    node = node_model(Displacement, options, "displacement")
    if not (math.isfinite(dt) and dt >= 0.0):
        raise ValueError(f"dt must be a finite number of seconds >= 0, got {dt}")
    blocks = [*signal_pair(position, (3,), "position"), *signal_pair(np.zeros(3) if motion is None else motion, (3,),
                                                                      "motion")]
    if rotation is not None:
        blocks += signal_pair(rotation, (4,), "rotation", (3,))
    shape = np.broadcast_shapes(*(b.shape[:-1] for b in blocks), () if state is None else np.shape(state)[:-1])
    inputs = np.concatenate([np.broadcast_to(b, shape + b.shape[-1:]) for b in blocks], -1)
    states = np.empty(shape + (ST.SIZE,))
    states[...] = node.state(None) if state is None else state
    if state is not None:
        states[..., ST.last_dt], states[..., ST.placed] = dt, 1.0
    par = node.params(None)
    ins = np.array([6, 0, 12 if rotation is not None else -1], np.int64)
    size = inputs.shape[-1]
    outs = np.array([size, size + 6, size + 13, size + 15], np.int64)
    r = np.empty(shape + (21,))  # position 6, rotation 7, deviation 2, motion 6
    for i in np.ndindex(shape):
        sig = np.concatenate([inputs[i], np.zeros(21)])
        displacement_node(ins, outs, par, states[i], NO_POSE, sig, NO_DB, float(dt))
        r[i] = sig[size:]
    return (states, (r[..., 0:3], r[..., 3:6]), (r[..., 6:10], r[..., 10:13]), (r[..., 13], r[..., 14]),
            (r[..., 15:18], r[..., 18:21]))


# ---------------------------------------------------------------- verify


def verify_simulation(t):
    """A simulation object weaving ahead and turning: ``(pos, vel)``, ``(rot, ang)`` at times ``t`` (s)."""
    zero = np.zeros_like(t)
    pos = np.stack([0.6 * np.sin(1.1 * t), zero, 1.3 * t + 0.2 * np.cos(0.8 * t)], -1)
    vel = np.stack([0.66 * np.cos(1.1 * t), zero, 1.3 - 0.16 * np.sin(0.8 * t)], -1)
    yaw, spin = 0.5 * np.sin(0.9 * t), 0.45 * np.cos(0.9 * t)
    rot = np.stack([np.cos(0.5 * yaw), zero, np.sin(0.5 * yaw), zero], -1)
    return (pos, vel), (rot, np.stack([zero, spin, zero], -1))


def verify_motion(t):
    """Root motion swaying and turning: body-frame ``(vel, ang)`` at times ``t``."""
    zero = np.zeros_like(t)
    vel = np.stack([0.2 * np.sin(1.3 * t), zero, 1.2 + 0.3 * np.cos(0.9 * t)], -1)
    return vel, np.stack([zero, 0.3 + 0.5 * np.sin(1.7 * t), zero], -1)


def placement_pose(pos, rot, deviation):
    """The character and its deviation (at x, rate as x velocity) as a 2-joint Pose."""
    lead = pos[0].shape[:-1]
    p, v, q, w = np.zeros(lead + (2, 3)), np.zeros(lead + (2, 3)), np.zeros(lead + (2, 4)), np.zeros(lead + (2, 3))
    p[..., 0, :], v[..., 0, :], q[..., 0, :], w[..., 0, :] = pos[0], pos[1], rot[0], rot[1]
    p[..., 1, 0], v[..., 1, 0], q[..., 1, 0] = deviation[0], deviation[1], 1.0
    return Pose(p, q, vel=v, ang=w)


def verify_displacement(m, t, h, rng):
    """A character with its own root motion following a weaving simulation: one of the smooth modes, from a reset."""
    mode = str(rng.choice(["none", "character_to_simulation", "simulation_to_character", "adjust"]))
    options = {"mode": mode, "position_halflife": 0.15, "rotation_halflife": 0.25}
    start = t - rng.uniform(FRAME, 0.5)
    state = displacement(None, *verify_simulation(start), verify_motion(start), **options)[0]

    def step(s, dt):
        nonlocal state
        state, pos, rot, deviation, _ = displacement(state, *verify_simulation(s), verify_motion(s), dt, **options)
        return placement_pose(pos, rot, deviation)

    return [play(step, start, t, h)]


Displacement.OP, Displacement.VERIFY = displacement, verify_displacement
