"""Foot lock: pin the toe where a contact starts, blended in and out by an inertializer.

Per frame, with the animated toe ``(p, v)`` from FK of the input pose:

- the lock position is ``target + offset``: ``target`` is the locked point ``(c, 0)``
  while locked, else the animated toe ``(p, v)``; the offset decays as a critically
  damped spring by half-life (``decay.spring_weights``, exact for any ``dt``);
- contact start locks ``c`` = the current lock position at height ``foot_height``; contact
  end, or the animated toe farther than ``unlock_radius`` from ``c``, releases it.  Each
  switch moves the difference of the two targets into the offset, so the lock position
  and its velocity never jump;
- two-bone IK (hip, knee, foot) moves the foot by the lock's displacement from the
  animated toe, ``foot + (lock - p)`` with velocity ``foot.vel + (lock.vel - v)``; the foot
  then turns from its animated global rotation by ``qbetween(p - foot, lock - ankle)``
  so the toe points at the lock: the identity when the leg reaches (the toe lands on
  the lock), a heel lift when it cannot.

With root motion the model frame moves through the world; the optional ``motion`` input
(the same signal the output node integrates) keeps the locked point fixed in the world:
each frame the point, the offset and its rate are re-expressed in the frame as it moved
(the way the output node moves the placement).

Velocities are exact (the spring's own derivative, the IK's analytic one).  State per
character: previous contact, lock flag, locked point, offset and its velocity.
"""

import copy as _copy
from typing import List, Literal

import numpy as np
from numba import njit
from pydantic import Field, ValidationError, field_validator

from animgraph.args import check_axis, check_chain, joint_index, skeleton_parents
from animgraph.decay import decay3, spring_weights
from animgraph.errors import GraphError
from animgraph.maths import body_step, qbetween, qbetween_dx, qinv_rot, qmul, qrot, vadd, vcross, vlen, vscale, vsub
from animgraph.ik import apply_two_bone
from animgraph.kernels import copy_pose, joint_global, set_global_rotation
from animgraph.limits import AXIS_MAX, DISTANCE_MAX, DT_MAX, Axis, JointName, seconds_field
from animgraph.node import Node, Port, register, slot
from animgraph.pose import number, numbers

LEFT_LEG = ("left_hip", "left_knee", "left_foot", "left_toe")
ZERO = (0.0, 0.0, 0.0)
# prev contact, lock, locked point (3), offset (3), offset velocity (3); with root motion: the last
# frame's motion (6), the step since it (s), whether there was one.
STATE_SIZE = 20


@njit(cache=True)
def foot_lock_update(pose, parents, par, st, contact, dt, locked, at):
    """Lock the foot in place on local pose tuple ``pose``; lock position and velocity to ``locked[at:at+6]``.

    ``par`` = (hip, knee, foot, toe, unlock radius m, half-life s, foot height m, knee hinge axis);
    ``st`` the STATE_SIZE floats of state, updated.  The model frame stands still in the world.
    """
    foot_lock_moving(pose, parents, par, st, contact, dt, locked, at, False, ZERO, ZERO)


@njit(cache=True)
def follow_frame(st, vel, ang, dt):
    """Re-express the lock point, offset and offset rate (state) in the model frame as it moved since the last frame.

    The frame moved as the output node moves the placement: over the last step ``st[18]``
    at the mean of the last (``st[11:17]``) and this frame's root motion ``(vel, ang)``, so a
    point fixed in the world is ``turn^-1 (point - disp)`` in it now.  Then this frame's
    motion and ``dt`` are kept for the next.
    """
    if st[19] > 0.5:
        move(st, vscale(vadd((st[11], st[12], st[13]), vel), 0.5),
             vscale(vadd((st[14], st[15], st[16]), ang), 0.5), st[18])
    for i in range(3):
        st[11 + i] = vel[i]
        st[14 + i] = ang[i]
    st[18] = dt
    st[19] = 1.0


@njit(cache=True)
def move(st, vel, ang, dt):
    """The lock state seen from a frame that moved ``dt`` s at body-frame velocity ``vel``, ``ang``."""
    disp, turn = body_step(vel, ang, dt)
    point = qinv_rot(turn, vsub((st[2], st[3], st[4]), disp))
    off = qinv_rot(turn, (st[5], st[6], st[7]))
    offv = qinv_rot(turn, (st[8], st[9], st[10]))
    for i in range(3):
        st[2 + i] = point[i]
        st[5 + i] = off[i]
        st[8 + i] = offv[i]


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
def foot_lock_moving(pose, parents, par, st, contact, dt, locked, at, moving, mvel, mang):
    """``foot_lock_update`` in a model frame moving at root motion ``mvel`` (m/s), ``mang`` (rad/s): the lock holds in the world.

    A world-fixed point ``c`` moves at ``-(mvel + mang x c)`` in the model frame, and the
    offset, which decays in the world, turns at ``-mang``.
    """
    jh, jk, jf, jt = int(par[0]), int(par[1]), int(par[2]), int(par[3])
    radius, halflife, height = par[4], par[5], par[6]
    hinge = (par[7], par[8], par[9])
    foot = joint_global(pose, parents, jf)
    toe = joint_global(pose, parents, jt)
    p, v = toe[0], toe[3]

    if moving:
        follow_frame(st, mvel, mang, dt)
    was_contact = st[0] > 0.5
    lock = st[1] > 0.5
    point = (st[2], st[3], st[4])
    off, offv = decay3(spring_weights(halflife, dt), (st[5], st[6], st[7]), (st[8], st[9], st[10]))

    if lock and (not contact or vlen(vsub(point, p)) > radius):
        # Release: the target jumps from the point to the toe, the offset takes the jump.
        pos, vel = lock_position(True, point, off, offv, p, v, mvel, mang)
        lock = False
        off = vsub(pos, p)
        offv = vadd(vsub(vel, v), vcross(mang, off))
    if contact and not was_contact:
        # Lock where the lock position is now, at foot height; the offset takes the jump.
        cur, curv = lock_position(lock, point, off, offv, p, v, mvel, mang)
        lock = True
        point = (cur[0], height, cur[2])
        off = vsub(cur, point)
        offv = vadd(curv, frame_velocity(cur, mvel, mang))

    st[0] = 1.0 if contact else 0.0
    st[1] = 1.0 if lock else 0.0
    for i in range(3):
        st[2 + i] = point[i]
        st[5 + i] = off[i]
        st[8 + i] = offv[i]

    pos, vel = lock_position(lock, point, off, offv, p, v, mvel, mang)
    for i in range(3):
        locked[at + i] = pos[i]
        locked[at + 3 + i] = vel[i]

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


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    out = slot(pose, outs[0])
    copy_pose(slot(pose, ins[0]), out)
    m = ins[2]
    moving = m >= 0
    mvel, mang = ZERO, ZERO
    if moving:
        mvel, mang = (sig[m], sig[m + 1], sig[m + 2]), (sig[m + 3], sig[m + 4], sig[m + 5])
    foot_lock_moving(out, db[3], par, st, sig[ins[1]] > 0.5, dt, sig, outs[1], moving, mvel, mang)


def check_leg(parents, hip, knee, foot, toe):
    """Message saying why the four joints are not one leg, or '' if they are."""
    msg = check_chain(parents, hip, knee, foot)
    if msg:
        return msg
    j = parents[toe]
    while j >= 0 and j != foot:
        j = parents[j]
    return "" if j == foot else f"foot joint {foot} is not an ancestor of toe joint {toe}"


@register(run)
class FootLockNode(Node):
    """Pins the toe where a contact starts (inertialized in and out) and solves the leg with two-bone IK."""

    type: Literal["foot_lock"] = "foot_lock"
    joints: List[JointName] = Field(list(LEFT_LEG), description="hip, knee, foot and toe of one leg")
    unlock_radius: float = Field(
        0.2, gt=0.0, le=DISTANCE_MAX, allow_inf_nan=False,
        description=f"release when the animated toe is this far from the lock (m, (0, {DISTANCE_MAX:g}])",
    )
    halflife: float = seconds_field(0.1, "half-life of the blend in and out of the lock")
    foot_height: float = Field(
        0.02, ge=-DISTANCE_MAX, le=DISTANCE_MAX, allow_inf_nan=False,
        description=f"height of the toe joint above the ground (m, [-{DISTANCE_MAX:g}, {DISTANCE_MAX:g}])",
    )
    hinge: Axis = Field(
        (1.0, 0.0, 0.0),
        description="knee hinge axis in the knee's frame: the bend plane of a straight leg "
        f"(CMU knees: [0.94, 0.342, 0] left, [0.94, -0.342, 0] right; components within ±{AXIS_MAX:g}, not all 0)",
    )

    INPUTS = (
        Port("pose", "pose", "local", "parent-relative pose"),
        Port("contact", "bool", "", "the toe is in contact with the ground"),
        Port("motion", "motion", "", "root motion of the model frame (from the graph's output), so locks hold in the world", True),
    )
    OUTPUTS = (
        Port("pose", "pose", "local", "parent-relative pose with the foot locked"),
        Port("locked", "vec3", "", "lock position of the toe in model space (m, m/s)"),
    )

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
        return np.array(idx + [self.unlock_radius, self.halflife, self.foot_height, *self.hinge], dtype=np.float64)

    def state(self, ctx, time=0.0):
        return np.zeros(STATE_SIZE)


class FootLock:
    """Foot locking without a graph: the ``foot_lock`` node's kernel and state in a small object.

    ``update(local, skeleton, contact, dt)`` takes a local pose (any batch shape), a
    Skeleton (or parents array with integer ``joints``), the contact flag(s) and the
    frame time (s); it returns the local pose with the foot locked and sets
    ``locked_pos``/``locked_vel`` (model space, m and m/s).  ``reset()`` forgets the lock.
    """

    def __init__(self, unlock_radius=0.2, halflife=0.1, foot_height=0.02, joints=LEFT_LEG, hinge=(1.0, 0.0, 0.0)):
        try:
            self.model = FootLockNode(
                id="foot_lock",
                joints=joints,
                unlock_radius=unlock_radius,
                halflife=halflife,
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
        m = self.model
        par = np.array(idx + [m.unlock_radius, m.halflife, m.foot_height, *m.hinge], dtype=np.float64)
        items = int(np.prod(local.batch, dtype=np.int64))
        if self.state is None:
            self.state = np.zeros((items, STATE_SIZE))
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
