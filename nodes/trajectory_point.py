"""Trajectory point: a point ahead on a trajectory, as a vec3 target (a look-at target toward the travel).

With the trajectory's point ``k`` at ground position ``p = (px, pz)`` and facing ``d = (dx, dz)``
(the ``trajectory`` signal, in the simulation object's own frame, ``animgraph.node``), the
target is ``(px + a dx, height, pz + a dz)``: ``a = distance`` metres along the point's facing,
at ``height``.  Its velocity is the same combination of the rates, ``(vx + a ddx, 0, vz + a
ddz)``.  Standing still, the target stays ``distance`` ahead of where the object faces, so a
head looking at it never points at itself.
"""

from typing import Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field

from animgraph.args import node_model
from animgraph.kernels import NO_DB, NO_POSE, write3
from animgraph.limits import DISTANCE_MAX
from animgraph.node import TRAJECTORY, Node, Port, fields, port_indices, register
from animgraph.pose import Pose, numbers
from animgraph.stencil import identity_rot, stencil

INPUTS = (Port("trajectory", "trajectory", "", "the trajectory, in the simulation object's own frame"),)
OUTPUTS = (Port("target", "vec3", "", "the point ahead at the height (m, own frame) and its velocity (m/s)"),)
IN, OUT = port_indices("TrajectoryPointIn", INPUTS), port_indices("TrajectoryPointOut", OUTPUTS)
PAR = fields("TrajectoryPointPar", point=1, distance=1, height=1)


@njit(cache=True, inline="always")
def trajectory_point_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: point ``k``'s position plus ``distance`` along its facing, at ``height``."""
    at, k, a = ins[IN.trajectory], 2 * int(par[PAR.point]), par[PAR.distance]
    px, pz = sig[at + TRAJECTORY.pos + k], sig[at + TRAJECTORY.pos + k + 1]
    dx, dz = sig[at + TRAJECTORY.facing + k], sig[at + TRAJECTORY.facing + k + 1]
    vx, vz = sig[at + TRAJECTORY.pos_rate + k], sig[at + TRAJECTORY.pos_rate + k + 1]
    ddx, ddz = sig[at + TRAJECTORY.facing_rate + k], sig[at + TRAJECTORY.facing_rate + k + 1]
    write3(sig, outs[OUT.target], (px + a * dx, par[PAR.height], pz + a * dz))
    write3(sig, outs[OUT.target] + 3, (vx + a * ddx, 0.0, vz + a * ddz))


@register(trajectory_point_node)
class TrajectoryPoint(Node):
    """A point ahead on a trajectory (along a future point's facing, at a height): a look-at target."""

    type: Literal["trajectory_point"] = "trajectory_point"
    point: int = Field(2, ge=0, le=2, description="which future point: 0, 1 or 2 (the controller's offsets)")
    distance: float = Field(2.0, ge=0.0, le=DISTANCE_MAX, allow_inf_nan=False,
                            description="metres ahead of the point along its facing")
    height: float = Field(1.6, ge=-DISTANCE_MAX, le=DISTANCE_MAX, allow_inf_nan=False,
                          description="the target's height (m)")

    CATEGORY = "signals"
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    def params(self, ctx):
        return PAR.pack(point=self.point, distance=self.distance, height=self.height)


# ---------------------------------------------------------------- op


def trajectory_point(trajectory, **options):
    """``(pos, vel)`` (..., 3) m and m/s of the node's target for ``trajectory`` (..., 24) values then rates."""
    par = node_model(TrajectoryPoint, options, "trajectory_point").params(None)
    traj = numbers(trajectory, "trajectory")
    if traj.shape[-1:] != (TRAJECTORY.SIZE,):
        raise ValueError(f"trajectory must be (..., {TRAJECTORY.SIZE}) values then rates, got {traj.shape}")
    out = np.empty(traj.shape[:-1] + (6,))
    ins, outs = np.array([0], np.int64), np.array([TRAJECTORY.SIZE], np.int64)
    for i in np.ndindex(traj.shape[:-1]):
        sig = np.concatenate([traj[i], np.zeros(6)])
        trajectory_point_node(ins, outs, par, np.zeros(0), NO_POSE, sig, NO_DB, 0.0)
        out[i] = sig[TRAJECTORY.SIZE:]
    return out[..., :3], out[..., 3:]


# ---------------------------------------------------------------- verify


def moving_trajectory(t):
    """A trajectory (..., 24) whose points circle and whose facings turn, with exact rates, at times ``t`` (s)."""
    t = np.asarray(t, np.float64)
    traj = np.zeros(t.shape + (TRAJECTORY.SIZE,))
    for k in range(3):
        r, w, phase = 1.0 + k, 0.7 + 0.3 * k, 0.5 * k
        angle, turn = w * t + phase, np.sin(1.3 * t + k)
        p, v = TRAJECTORY.pos + 2 * k, TRAJECTORY.pos_rate + 2 * k
        traj[..., p], traj[..., p + 1] = r * np.sin(angle), r * np.cos(angle)
        traj[..., v], traj[..., v + 1] = r * w * np.cos(angle), -r * w * np.sin(angle)
        f, df = TRAJECTORY.facing + 2 * k, TRAJECTORY.facing_rate + 2 * k
        rate = 1.3 * np.cos(1.3 * t + k)
        traj[..., f], traj[..., f + 1] = np.sin(turn), np.cos(turn)
        traj[..., df], traj[..., df + 1] = rate * np.cos(turn), -rate * np.sin(turn)
    return traj


def verify_trajectory_point(m, t, h, rng):
    """Each point of a moving trajectory, 2.5 m ahead at 1.6 m, as a one-joint pose."""
    options = {"point": int(rng.integers(0, 3)), "distance": 2.5}

    def target(s):
        pos, vel = trajectory_point(moving_trajectory(s), **options)
        return Pose(pos[..., None, :], identity_rot(s)[..., None, :], vel=vel[..., None, :])

    return [stencil(target, t, h)]


TrajectoryPoint.OP, TrajectoryPoint.VERIFY = trajectory_point, verify_trajectory_point
