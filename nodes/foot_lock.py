"""Foot lock: pin the toe where a contact starts, blended in and out by an inertializer.

Per frame, with the animated toe ``(p, v)`` from FK of the input pose:

- the lock position is ``target + offset``: ``target`` is the locked point ``(c, 0)``
  while locked, else the animated toe ``(p, v)``; the offset decays as a critically
  damped spring by half-life (``decay.spring_weights``, exact for any ``dt``):
  ``plant_halflife`` while locked (the blend into the lock, and the glide of a toe that
  lands moving), ``halflife`` while free (the blend back to the animation);
- contact start locks ``c`` = the current lock position at height ``foot_height``; contact
  end, or the animated toe farther than ``unlock_radius`` from ``c``, releases it.  Each
  switch moves the difference of the two targets into the offset, so the lock position
  and its velocity never jump;
- while free, the animated toe can be made a swing (``free_toe``); mocap toes skim the
  floor mid-swing and pull back just before a plant:

  - ``clearance`` keeps the free toe that far above ``foot_height`` (``maths.smooth_max0``, C2 over
    ``SOFT``), and ``lift_halflife`` is the half-life of the vertical part of the blend out
    of a lock, so a step clears the ground as soon as it leaves it;
  - ``forward_only`` stops the free toe going back against the direction of travel (the
    root's world velocity): a world-fixed plane across the travel follows ``HOLD_SOFT``
    behind its furthest point, or starts at the lock it left (``update_hold``, ``set_plane``), and the toe
    is kept ahead of it (``held_toe``, C2 over ``HOLD_SOFT``: no jump anywhere) until the
    animation comes past, so a plant lands where the toe got to.  If the character stops,
    turns 45 degrees or leaves the toe ``unlock_radius`` behind, the hold lets go through the
    offset, as a lock does;
- two-bone IK (hip, knee, foot) moves the foot by the lock's displacement from the
  animated toe, ``foot + (lock - p)`` with velocity ``foot.vel + (lock.vel - v)``; the foot
  then turns from its animated global rotation by ``qbetween(p - foot, lock - ankle)``
  so the toe points at the lock: the identity when the leg reaches (the toe lands on
  the lock), a heel lift when it cannot.

With root motion the model frame moves through the world; the optional ``motion`` input
(the same signal the output node integrates) keeps the locked point fixed in the world:
each frame the point, the offset and its rate are re-expressed in the frame as it moved
(the way the output node moves the placement).

Velocities are exact (the spring's own derivative, the smooth maxima's, the IK's analytic one).  Parameters
``PAR`` and per-character state ``ST`` are declared by name below.
"""

import copy as _copy
import math
from typing import List, Literal, Optional

import numpy as np
from animgraph.jit import njit
from pydantic import Field, ValidationError, field_validator

from animgraph.args import check_axis, check_chain, joint_index, skeleton_parents
from animgraph.decay import decay3, spring_decay, spring_weights
from animgraph.errors import GraphError
from animgraph.maths import (
    body_step,
    qbetween,
    qbetween_dx,
    qinv_rot,
    qmul,
    qrot,
    smooth_max0,
    vadd,
    vcross,
    vdot,
    vlen,
    vscale,
    vsub,
)
from animgraph.ik import apply_two_bone
from animgraph.kernels import copy_pose, joint_global, read3, set_global_rotation, write3
from animgraph.limits import AXIS_MAX, DISTANCE_MAX, DT_MAX, Axis, JointName, seconds_field
from animgraph.node import DB_PARENTS, Node, Port, fields, port_indices, register, slot
from animgraph.pose import Pose, number, numbers
from animgraph.stencil import STEPS, identity_rot, play

LEFT_LEG = ("left_hip", "left_knee", "left_foot", "left_toe")
ZERO = (0.0, 0.0, 0.0)
SOFT = 0.01  # m: the clearance is a smooth max over this band, so a lifted toe's velocity never jumps
HOLD_SOFT = 0.003  # m: a free toe stops within this much of its furthest point, with no jump in its velocity
HOLD_TURN = math.cos(math.radians(45.0))  # a hold is let go when the travel turns further than this from it
MIN_TRAVEL = 0.1  # m/s: a slower character has no direction of travel, and forward_only holds nothing

INPUTS = (
    Port("pose", "pose", "local", "parent-relative pose"),
    Port("contact", "bool", "", "the toe is in contact with the ground"),
    Port("motion", "motion", "", "root motion of the model frame (from the graph's output), so locks hold in the world", True),
)
OUTPUTS = (
    Port("pose", "pose", "local", "parent-relative pose with the foot locked"),
    Port("locked", "vec3", "", "lock position of the toe in model space (m, m/s)"),
)
IN, OUT = port_indices("FootLockIn", INPUTS), port_indices("FootLockOut", OUTPUTS)
# joint indices of the leg, unlock radius (m), half-life free (s), foot height (m), knee hinge axis (knee frame),
# half-life locked (s), swing clearance (m), half-life of the vertical blend out (s), forward_only (0/1)
PAR = fields("FootLockPar", hip=1, knee=1, foot=1, toe=1, unlock_radius=1, halflife=1, foot_height=1, hinge=3,
             plant_halflife=1, clearance=1, lift_halflife=1, forward_only=1)
# contact on the last frame (0/1), locked (0/1), the locked point (model frame), the offset and its rate;
# with root motion: the last frame's motion (vel, ang), the step since it (s), whether there was one (0/1);
# forward_only: whether there is a hold plane (0/1), a world-fixed point on it and the direction of travel across it.
ST = fields(
    "FootLockSt", contact=1, lock=1, point=3, off=3, offv=3, motion_vel=3, motion_ang=3, motion_dt=1, moved=1,
    held=1, hold_point=3, hold_dir=3,
)
STATE_SIZE = ST.SIZE


@njit(cache=True)
def foot_lock_update(pose, parents, par, st, contact, dt, locked, at):
    """Lock the foot in place on local pose tuple ``pose``; lock position and velocity to ``locked[at:at+6]``.

    ``par`` the ``PAR`` parameters, ``st`` the ``ST`` state (updated).  The model frame stands
    still in the world.
    """
    foot_lock_moving(pose, parents, par, st, contact, dt, locked, at, False, ZERO, ZERO)


@njit(cache=True)
def follow_frame(st, vel, ang, dt):
    """Re-express the lock point, offset and offset rate (state) in the model frame as it moved since the last frame.

    The frame moved as the output node moves the placement: over the last step ``motion_dt``
    at the mean of the last (``motion_vel``, ``motion_ang``) and this frame's root motion
    ``(vel, ang)``, so a point fixed in the world is ``turn^-1 (point - disp)`` in it now.
    Then this frame's motion and ``dt`` are kept for the next.
    """
    if st[ST.moved] > 0.5:
        move(st, vscale(vadd(read3(st, ST.motion_vel), vel), 0.5),
             vscale(vadd(read3(st, ST.motion_ang), ang), 0.5), st[ST.motion_dt])
    write3(st, ST.motion_vel, vel)
    write3(st, ST.motion_ang, ang)
    st[ST.motion_dt] = dt
    st[ST.moved] = 1.0


@njit(cache=True)
def move(st, vel, ang, dt):
    """The lock state seen from a frame that moved ``dt`` s at body-frame velocity ``vel``, ``ang``."""
    disp, turn = body_step(vel, ang, dt)
    point = qinv_rot(turn, vsub(read3(st, ST.point), disp))
    off = qinv_rot(turn, read3(st, ST.off))
    offv = qinv_rot(turn, read3(st, ST.offv))
    write3(st, ST.point, point)
    write3(st, ST.off, off)
    write3(st, ST.offv, offv)
    write3(st, ST.hold_point, qinv_rot(turn, vsub(read3(st, ST.hold_point), disp)))
    write3(st, ST.hold_dir, qinv_rot(turn, read3(st, ST.hold_dir)))


@njit(cache=True)
def frame_velocity(x, mvel, mang):
    """Velocity (m/s, world) of the model-frame point ``x`` as the frame moves at root motion ``(mvel, mang)``."""
    return vadd(mvel, vcross(mang, x))


@njit(cache=True)
def lock_position(lock, point, off, offv, p, v, mvel, mang):
    """Lock position and its velocity in the model frame: the world-fixed point, or the toe ``(p, v)``, plus the offset.

    The offset decays in the world (its rate ``offv`` is world-relative), so seen from the
    moving frame it also turns at ``-mang``; a world-fixed point moves at ``-frame_velocity``.
    """
    if lock:
        pos = vadd(point, off)
        return pos, vsub(offv, frame_velocity(pos, mvel, mang))
    return vadd(p, off), vsub(vadd(v, offv), vcross(mang, off))


@njit(cache=True)
def travel_direction(pose, mvel, mang):
    """Unit horizontal direction of travel (model frame): the root joint's world velocity, or zeros below MIN_TRAVEL."""
    root = (pose[0][0, 0], pose[0][0, 1], pose[0][0, 2])
    vel = vadd((pose[3][0, 0], pose[3][0, 1], pose[3][0, 2]), frame_velocity(root, mvel, mang))
    n = math.hypot(vel[0], vel[2])
    if not n >= MIN_TRAVEL:
        return ZERO
    return (vel[0] / n, 0.0, vel[2] / n)


@njit(cache=True)
def held_toe(st, p, v, mvel, mang):
    """The free toe ``(p, v)`` (model frame) kept from going back through the hold plane, if there is one.

    The plane is world-fixed, through ``hold_point`` across ``hold_dir`` (horizontal): the
    toe's distance ahead of it (along ``hold_dir``, world velocity) is kept from going below 0,
    by a smooth max over ``HOLD_SOFT``; the rest of its motion follows the animation.
    """
    if st[ST.held] < 0.5:
        return p, v
    d = read3(st, ST.hold_dir)
    world_v = vadd(v, frame_velocity(p, mvel, mang))
    ahead, ahead_v = vdot(vsub(p, read3(st, ST.hold_point)), d), vdot(world_v, d)
    kept, kept_v = smooth_max0(ahead, ahead_v, HOLD_SOFT, 0.0)
    q = vadd(p, vscale(d, kept - ahead))
    return q, vsub(vadd(world_v, vscale(d, kept_v - ahead_v)), frame_velocity(q, mvel, mang))


@njit(cache=True)
def update_hold(st, p, travel, radius):
    """Move the hold plane up to ``HOLD_SOFT`` behind the toe at ``p`` (model frame) when it is that far ahead of it.

    The plane is the toe's furthest point along the travel so far, less ``HOLD_SOFT``: while the
    toe is at least that far ahead the smooth max is the identity, so the plane (and its
    direction, ``travel`` now) moves with it seamlessly; once the toe falls back into the band
    the plane stays put.  A toe that turns back between two frames is caught by the last
    one's plane, at any frame rate.  The plane is let go (the caller's offset takes the jump)
    when the character stops (no direction of travel), turns more than ``HOLD_TURN`` away
    from it, or the animated toe is ``radius`` m behind it.
    """
    if st[ST.held] > 0.5:
        d = read3(st, ST.hold_dir)
        ahead = vdot(vsub(p, read3(st, ST.hold_point)), d)
        if vlen(travel) > 0.0 and vdot(travel, d) >= HOLD_TURN and -radius <= ahead < HOLD_SOFT:
            return  # held: the plane stays
    set_plane(st, vsub(p, vscale(travel, HOLD_SOFT)), travel)


@njit(cache=True)
def set_plane(st, point, travel):
    """The hold plane through ``point`` (model frame) across the unit direction ``travel``; none if ``travel`` is zero."""
    st[ST.held] = 1.0 if vlen(travel) > 0.0 else 0.0
    write3(st, ST.hold_point, point)
    write3(st, ST.hold_dir, travel)


@njit(cache=True)
def free_toe(pose, par, st, p, v, mvel, mang):
    """Where the free toe goes (model frame, m, m/s), and how far that jumped (before - after) as a hold let go.

    The animated toe ``(p, v)``, lifted to the clearance, then held forward (``forward_only``).
    """
    if par[PAR.clearance] > 0.0:
        low = par[PAR.foot_height] + par[PAR.clearance]
        y, vy = smooth_max0(p[1] - low, v[1], SOFT, 0.0)
        p, v = (p[0], low + y, p[2]), (v[0], vy, v[2])
    if par[PAR.forward_only] < 0.5:
        return p, v, ZERO, ZERO
    before, before_v = held_toe(st, p, v, mvel, mang)
    update_hold(st, p, travel_direction(pose, mvel, mang), par[PAR.unlock_radius])
    fp, fv = held_toe(st, p, v, mvel, mang)
    return fp, fv, vsub(before, fp), vsub(before_v, fv)


@njit(cache=True)
def decay_offset(par, st, lock, dt):
    """The offset and its rate (state) after ``dt`` s in the lock's state: plant_halflife locked, else halflife (lift_halflife in Y)."""
    off0, offv0 = read3(st, ST.off), read3(st, ST.offv)
    if lock:
        return decay3(spring_weights(par[PAR.plant_halflife], dt), off0, offv0)
    off, offv = decay3(spring_weights(par[PAR.halflife], dt), off0, offv0)
    if par[PAR.lift_halflife] == par[PAR.halflife]:
        return off, offv
    y, vy = spring_decay(off0[1], offv0[1], par[PAR.lift_halflife], dt)
    return (off[0], y, off[2]), (offv[0], vy, offv[2])


@njit(cache=True)
def foot_lock_moving(pose, parents, par, st, contact, dt, locked, at, moving, mvel, mang):
    """``foot_lock_update`` in a model frame moving at root motion ``mvel`` (m/s), ``mang`` (rad/s): the lock holds in the world.

    A world-fixed point ``c`` moves at ``-(mvel + mang x c)`` in the model frame, and the
    offset, which decays in the world, turns at ``-mang``.
    """
    jh, jk, jf, jt = int(par[PAR.hip]), int(par[PAR.knee]), int(par[PAR.foot]), int(par[PAR.toe])
    radius, halflife, height = par[PAR.unlock_radius], par[PAR.halflife], par[PAR.foot_height]
    hinge = read3(par, PAR.hinge)
    foot = joint_global(pose, parents, jf)
    toe = joint_global(pose, parents, jt)
    p, v = toe[0], toe[3]

    if moving:
        follow_frame(st, mvel, mang, dt)
    was_contact = st[ST.contact] > 0.5
    lock = st[ST.lock] > 0.5
    point = read3(st, ST.point)
    # Over the step just taken the lock kept its state: one half-life for the whole step (exact).
    off, offv = decay_offset(par, st, lock, dt)

    releasing = lock and (not contact or vlen(vsub(point, p)) > radius)
    pos, vel = p, v  # the lock position as it lets go
    fp, fv = p, v  # where the free toe goes
    if lock and not releasing:
        st[ST.held] = 0.0
    else:
        if releasing:
            pos, vel = lock_position(True, point, off, offv, p, v, mvel, mang)
            if par[PAR.forward_only] > 0.5:  # a released toe waits there for the animation to come past
                set_plane(st, pos, travel_direction(pose, mvel, mang))
        fp, fv, jump, jump_v = free_toe(pose, par, st, p, v, mvel, mang)
        # A hold let go is a switch of the target, like a release: the offset takes its jump.
        off = vadd(off, jump)
        offv = vadd(vadd(offv, jump_v), vcross(mang, jump))
    if releasing:
        # Release: the target jumps from the point to the free toe, the offset takes the jump.
        lock = False
        off = vsub(pos, fp)
        offv = vadd(vsub(vel, fv), vcross(mang, off))
    if contact and not was_contact:
        # Lock where the lock position is now, at foot height; the offset takes the jump.
        cur, curv = lock_position(lock, point, off, offv, fp, fv, mvel, mang)
        lock = True
        st[ST.held] = 0.0
        point = (cur[0], height, cur[2])
        off = vsub(cur, point)
        offv = vadd(curv, frame_velocity(cur, mvel, mang))

    st[ST.contact] = 1.0 if contact else 0.0
    st[ST.lock] = 1.0 if lock else 0.0
    write3(st, ST.point, point)
    write3(st, ST.off, off)
    write3(st, ST.offv, offv)

    pos, vel = lock_position(lock, point, off, offv, fp, fv, mvel, mang)
    write3(locked, at, pos)
    write3(locked, at + 3, vel)

    # Move the foot by the lock's displacement from the animated toe ...
    tpos = vadd(foot[0], vsub(pos, p))
    tvel = vadd(foot[3], vsub(vel, v))
    apply_two_bone(pose, parents, jh, jk, jf, hinge, tpos, tvel, 1.0, 0.0)
    # ... then turn it from its animated global rotation so the toe points at the lock
    # (the identity whenever the IK reached; lifts the heel when the leg is too short).
    ankle = joint_global(pose, parents, jf)
    r, dr = vsub(p, foot[0]), vsub(v, foot[3])
    d, dd = vsub(pos, ankle[0]), vsub(vel, ankle[3])
    if vlen(r) < 1e-9 or vlen(d) < 1e-9:
        q, w = (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0)  # toe at the ankle: nothing to aim
    else:
        q, w = qbetween(r, d), qbetween_dx(r, dr, d, dd)
    set_global_rotation(pose, parents, jf, qmul(q, foot[1]), vadd(w, qrot(q, foot[4])))


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def foot_lock_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: lock the foot of the input pose into the output slot, the lock position to ``locked``."""
    out = slot(pose, outs[OUT.pose])
    if ins[IN.pose] != outs[OUT.pose]:  # else in place (IN_PLACE): only the leg's joints are written
        copy_pose(slot(pose, ins[IN.pose]), out)
    m = ins[IN.motion]
    moving = m >= 0
    mvel, mang = ZERO, ZERO
    if moving:
        mvel, mang = read3(sig, m), read3(sig, m + 3)
    contact = sig[ins[IN.contact]] > 0.5
    foot_lock_moving(out, db[DB_PARENTS], par, st, contact, dt, sig, outs[OUT.locked], moving, mvel, mang)


def pack_params(model, idx):
    """The ``PAR`` array of a ``FootLockNode`` with the leg's joint indices ``idx`` (hip, knee, foot, toe)."""
    hip, knee, foot, toe = idx
    plant = model.halflife if model.plant_halflife is None else model.plant_halflife
    lift = model.halflife if model.lift_halflife is None else model.lift_halflife
    return PAR.pack(hip=hip, knee=knee, foot=foot, toe=toe, unlock_radius=model.unlock_radius,
                    halflife=model.halflife, foot_height=model.foot_height, hinge=model.hinge, plant_halflife=plant,
                    clearance=model.clearance, lift_halflife=lift, forward_only=float(model.forward_only))


def check_leg(parents, hip, knee, foot, toe):
    """Message saying why the four joints are not one leg, or '' if they are."""
    msg = check_chain(parents, hip, knee, foot)
    if msg:
        return msg
    j = parents[toe]
    while j >= 0 and j != foot:
        j = parents[j]
    return "" if j == foot else f"foot joint {foot} is not an ancestor of toe joint {toe}"


@register(foot_lock_node)
class FootLockNode(Node):
    """Pins the toe where a contact starts (inertialized in and out) and solves the leg with two-bone IK."""

    type: Literal["foot_lock"] = "foot_lock"
    joints: List[JointName] = Field(list(LEFT_LEG), description="hip, knee, foot and toe of one leg")
    unlock_radius: float = Field(
        0.2, gt=0.0, le=DISTANCE_MAX, allow_inf_nan=False,
        description=f"release when the animated toe is this far from the lock (m, (0, {DISTANCE_MAX:g}])",
    )
    halflife: float = seconds_field(0.1, "half-life of the blend out of the lock (and into it, unless plant_halflife)")
    plant_halflife: Optional[float] = seconds_field(
        None, "half-life of the blend into the lock: how fast a toe landing on it stops; null: halflife")
    lift_halflife: Optional[float] = seconds_field(
        None, "half-life of the vertical part of the blend out of the lock: how fast a released toe rises to its swing; "
        "null: halflife")
    clearance: float = Field(
        0.0, ge=0.0, le=DISTANCE_MAX, allow_inf_nan=False,
        description="while free, the toe stays at least this high above foot_height, so a swing clears the ground "
        f"(m, [0, {DISTANCE_MAX:g}]; a smooth max over {SOFT * 100:g} cm; 0: off)",
    )
    forward_only: bool = Field(
        False,
        description="while free, the toe never moves back against the direction of travel (the root's horizontal "
        "velocity in the world, from 0.1 m/s): it is kept within 3 mm of its furthest point along the travel, "
        "or of the lock it left, until the animation comes past, so a plant lands where the toe got to",
    )
    foot_height: float = Field(
        0.02, ge=-DISTANCE_MAX, le=DISTANCE_MAX, allow_inf_nan=False,
        description=f"height of the toe joint above the ground (m, [-{DISTANCE_MAX:g}, {DISTANCE_MAX:g}])",
    )
    hinge: Axis = Field(
        (1.0, 0.0, 0.0),
        description="knee hinge axis in the knee's frame: the bend plane of a straight leg "
        f"(CMU knees: [0.94, 0.342, 0] left, [0.94, -0.342, 0] right; components within ±{AXIS_MAX:g}, not all 0)",
    )

    CATEGORY = "IK"
    IN_PLACE = {"pose": "pose"}
    FIELD_KINDS = {"joints": "joints", "hinge": "axis"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    @field_validator("hinge")
    @classmethod
    def _hinge_nonzero(cls, v):
        return check_axis(v, "hinge")

    @field_validator("joints")
    @classmethod
    def _four_joints(cls, v):
        if len(v) != 4:
            raise ValueError(f"joints must be [hip, knee, foot, toe], got {len(v)} names")
        return v

    def params(self, ctx):
        idx = [ctx.joint(self, "joints", name) for name in self.joints]
        msg = check_leg(ctx.skeleton.parents, *idx)
        if msg:
            raise GraphError(msg, node=self.id, port="joints")
        return pack_params(self, idx)

    def state(self, ctx, time=0.0):
        return np.zeros(ST.SIZE)


class FootLock:
    """Foot locking without a graph: the ``foot_lock`` node's kernel and state in a small object.

    ``update(local, skeleton, contact, dt)`` takes a local pose (any batch shape), a
    Skeleton (or parents array with integer ``joints``), the contact flag(s) and the
    frame time (s); it returns the local pose with the foot locked and sets
    ``locked_pos``/``locked_vel`` (model space, m and m/s).  ``reset()`` forgets the lock.
    """

    def __init__(self, unlock_radius=0.2, halflife=0.1, foot_height=0.02, joints=LEFT_LEG, hinge=(1.0, 0.0, 0.0),
                 plant_halflife=None, lift_halflife=None, clearance=0.0, forward_only=False):
        try:
            self.model = FootLockNode(
                id="foot_lock",
                joints=joints,
                unlock_radius=unlock_radius,
                halflife=halflife,
                plant_halflife=plant_halflife,
                lift_halflife=lift_halflife,
                clearance=clearance,
                forward_only=forward_only,
                foot_height=foot_height,
                hinge=hinge,
            )
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise ValueError(f"FootLock {where + ': ' if where else ''}{first['msg'].removeprefix('Value error, ')}") \
                from None
        self.reset()

    def reset(self):
        """Forget the lock and the blend: the next update starts afresh."""
        self.state = None
        self.locked_pos = None
        self.locked_vel = None

    def copy(self):
        """An independent copy, state included."""
        return _copy.deepcopy(self)

    def update(self, local, skeleton, contact, dt):
        """Local pose with the foot locked, ``dt`` seconds after the previous update."""
        parents, skel = skeleton_parents(skeleton, local)
        dt = number(dt, "dt", 0.0, DT_MAX)
        idx = [joint_index(skel, parents, j) for j in self.model.joints]
        msg = check_leg(parents, *idx)
        if msg:
            raise ValueError(msg)
        par = pack_params(self.model, idx)
        items = int(np.prod(local.batch, dtype=np.int64))
        if self.state is None:
            self.state = np.zeros((items, ST.SIZE))
        if self.state.shape[0] != items:
            raise ValueError(f"FootLock ran on {self.state.shape[0]} characters, now {items}: reset() first")
        try:
            flags = np.broadcast_to(numbers(contact, "contact") != 0, local.batch).reshape(-1)
        except ValueError as e:
            raise ValueError(f"contact must be a flag or one per batch item of {local.batch}: {e}") from None
        locked = np.zeros((items, 6))
        out = local.copy()
        for n, dst in enumerate(out.items()):
            foot_lock_update(dst, parents, par, self.state[n], bool(flags[n]), float(dt), locked[n], 0)
        self.locked_pos = locked[:, :3].reshape(tuple(local.batch) + (3,))
        self.locked_vel = locked[:, 3:].reshape(tuple(local.batch) + (3,))
        return out


def verify_foot_lock(m, t, h, rng):
    """The toe locks on the clip's contacts from ``lag`` s before t; the pose and the lock position are checked."""
    # In and out at different rates, the swing lifted and held forward: every path checked.
    lock = FootLock(joints=m.leg, plant_halflife=0.04, lift_halflife=0.03, clearance=0.05, forward_only=True)
    hold = t + STEPS[0] * h  # the contact is held over the stencil: its switching is an event, not motion

    def step(s, dt):
        out = lock.update(m.pose(s), m.skel, m.contact(np.minimum(s, hold)), dt)
        locked = Pose(lock.locked_pos[:, None], identity_rot(s)[:, None], vel=lock.locked_vel[:, None])
        return out, locked

    outs = play(step, t - rng.uniform(0.1, 0.6), t, h)
    return [[pose for pose, _ in outs], [locked for _, locked in outs]]


FootLockNode.OP, FootLockNode.VERIFY = FootLock, verify_foot_lock
