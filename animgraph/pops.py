"""The pop finder: frames where a joint's motion disagrees with its own velocities, and the node that did it.

Over one frame a joint that moves smoothly covers what the trapezoid rule says its
velocities cover: ``Δx = ½(v0 + v1)·dt`` up to ``dt³/12·|x'''|``.  A pop (a switch without
a transition, a clip wrapping onto a different pose, a lock letting go) moves the
joint without the velocity to match.  A frame pops when some joint of the graph output,
in world space (a local output through ``world``, a numpy FK), has

    |Δx − ½(v0 + v1)·dt| > floor + rel · ½(|v0| + |v1|)·dt.

The culprit comes from a debug plan (every node's output kept, ``reuse_slots=False``).
Each node's pose output is tested in its own space: positions as above and, for a
local pose, rotations by what they do to the children (``turn_excess``: a local
rotation pop moves every child; a twist, which moves none, is no pop).  Walking the
schedule, a node *introduces* a pop on the joints where its output pops and none of
its pose inputs pops on that joint or an ancestor.  Named is the introducing node
whose joints are, or are ancestors of, the output's popping joints (the strongest if
several are: a sample's marginal truncation excess must not outvote a switch 30x over
the bound), else the strongest introducing node.
Plain numpy: it checks the runtime, so it shares none of its kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import GraphError

# Defaults, measured (see ``PopFinder``): off by more than its own motion over the frame plus a centimetre.
REL = 1.0  # of the mean speed times dt
FLOOR = 0.01  # m: slow joints


# ---------------------------------------------------------------- quaternions (w, x, y, z), numpy


def cross(a, b):
    """Cross products (..., 3) (``np.cross`` and ``np.stack`` cost several times more on small arrays)."""
    a0, a1, a2, b0, b1, b2 = a[..., 0], a[..., 1], a[..., 2], b[..., 0], b[..., 1], b[..., 2]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), np.result_type(a, b))
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out


def qmul_np(a, b):
    """Quaternion products ``a ⊗ b`` (..., 4)."""
    aw, av, bw, bv = a[..., :1], a[..., 1:], b[..., :1], b[..., 1:]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), np.result_type(a, b))
    out[..., :1] = aw * bw - (av * bv).sum(-1, keepdims=True)
    out[..., 1:] = aw * bv + bw * av + cross(av, bv)
    return out


def qrot_np(q, v):
    """``v`` (..., 3) rotated by unit quaternions ``q`` (..., 4)."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


# ---------------------------------------------------------------- FK


def levels(parents):
    """Joint indices grouped by depth (roots first): each group's parents are all in earlier groups."""
    depth = np.zeros(len(parents), int)
    for j, p in enumerate(parents):
        depth[j] = depth[p] + 1 if p >= 0 else 0
    return [np.flatnonzero(depth == d) for d in range(depth.max() + 1 if len(depth) else 0)]


def world(pose, parents, groups=None):
    """World positions (m) and velocities (m/s), float64 (..., J, 3), of a local pose (FK one depth at a time).

    ``pose``: a Pose or its six arrays ``(pos, rot, scl, vel, ang, svl)``; ``groups``: ``levels(parents)``.
    ``vel = v_p + ω_p × r + R_p (svl_p s_p t + s_p v)`` with ``r = R_p (s_p t)``: the leverage and
    scale-expansion terms of ``kform.mul``.
    """
    six = pose.as_tuple() if hasattr(pose, "as_tuple") else pose
    pos, rot, scl, vel, ang, svl = (np.array(a, np.float64) for a in six)
    for idx in (groups if groups is not None else levels(parents))[1:]:
        p = parents[idx]
        rp, sp = rot[..., p, :], scl[..., p, :]
        r = qrot_np(rp, sp * pos[..., idx, :])
        dp = svl[..., p, :] * sp * pos[..., idx, :] + sp * vel[..., idx, :]
        vel[..., idx, :] = vel[..., p, :] + cross(ang[..., p, :], r) + qrot_np(rp, dp)
        ang[..., idx, :] = ang[..., p, :] + qrot_np(rp, ang[..., idx, :])
        pos[..., idx, :] = pos[..., p, :] + r
        rot[..., idx, :] = qmul_np(rp, rot[..., idx, :])
        scl[..., idx, :] *= sp
        svl[..., idx, :] += svl[..., p, :]
    return pos, vel


# ---------------------------------------------------------------- the test


def excess(x0, x1, v0, v1, dt, rel, floor):
    """Per joint: ``|Δx − ½(v0+v1)dt| / (floor + rel·½(|v0|+|v1|)dt)``; above 1 is a pop."""
    err = np.linalg.norm(x1 - x0 - 0.5 * (v0 + v1) * dt, axis=-1)
    speed = 0.5 * (np.linalg.norm(v0, axis=-1) + np.linalg.norm(v1, axis=-1))
    return err / (floor + rel * speed * dt), err, speed


def turn_excess(a, b, parents, dt, rel, floor):
    """Per joint of a local pose (six arrays at two frames): the worst ``excess`` of its children's offsets as it turns.

    Each child offset ``r = R (s ⊙ t)`` seen from its parent joint, with velocity
    ``ω × r + R (svl ⊙ s ⊙ t + s ⊙ v)`` (one level of FK): a rotation pop judged by how far
    it moves the children, so twist about a bone, which moves nothing, never counts.
    """
    child = np.flatnonzero(parents >= 0)
    p = parents[child]

    def offsets(pose):
        pos, rot, scl, vel, ang, svl = pose
        r = qrot_np(rot[p], scl[p] * pos[child])
        return r, cross(ang[p], r) + qrot_np(rot[p], svl[p] * scl[p] * pos[child] + scl[p] * vel[child])

    (x0, v0), (x1, v1) = offsets(a), offsets(b)
    worst = np.zeros(len(parents))
    np.maximum.at(worst, p, excess(x0, x1, v0, v1, dt, rel, floor)[0])
    return worst


@dataclass(frozen=True)
class Pop:
    """A frame where the graph output moved without the velocity to match."""

    frame: int
    time: float  # s
    node: str | None  # the node that introduced it (None if it could not be attributed)
    joints: tuple  # names of the output's popping joints
    error: float  # worst |Δx − ½(v0+v1)dt| on the output, m
    speed: float  # that joint's mean speed over the frame, m/s


class PopFinder:
    """Watches a debug plan's instance frame by frame; ``observe`` returns a ``Pop`` or None.

    The defaults, ``rel = 1`` and ``floor = 1 cm`` (a frame off by more than its own
    motion plus a centimetre), were measured at 60 Hz on the shipped locomotion graph
    as the demo drives it (15 s of walk, jog, run with inertialized switches, foot
    locks and root motion): its worst joint reaches 0.81 of that bound (a toe 16 mm off
    at 0.62 m/s while the walk plays twice as fast just after the switch from run).
    Such errors are the trapezoid's truncation of fast capture motion: they shrink
    with the step (the worst knee: 8.2 mm at 60 Hz, 0.06 mm at 600 Hz), a real pop
    does not.  ``rel = 0.5`` would flag that toe, a 4 mm floor knees at heel strike
    (8 mm at 0.2 m/s); a switch from walk to run without a transition exceeds the
    bound 130x.
    """

    def __init__(self, plan, output=None, rel=REL, floor=FLOOR, character=0):
        file = plan.file
        if plan.reuse_slots:
            raise GraphError("the pop finder reads every node's output: compile with reuse_slots=False", file=file)
        poses = [nid for nid, (kind, _, _) in plan.outputs.items() if kind == "pose"]
        if output is None and not poses:
            raise GraphError("the pop finder needs a pose output; the graph has none", file=file)
        output = poses[0] if output is None else output
        if output not in poses:
            raise GraphError(f"not a pose output (pose outputs: {', '.join(poses) or 'none'})", output, None, file)
        if not 0 <= character < plan.batch:
            raise GraphError(f"character must be in [0, {plan.batch}), got {character!r}", file=file)
        self.plan, self.output, self.character = plan, output, character
        self.rel, self.floor = float(rel), float(floor)
        self.parents = np.asarray(plan.skeleton.parents, np.int64)
        self.groups = levels(self.parents)
        self.names = tuple(plan.skeleton.names)
        self.above = _ancestry(self.parents)  # above[a, j]: a is j or one of its ancestors
        self.nodes = _pose_nodes(plan)  # (node id, port, local?, [(src id, src port)]) in schedule order
        self.worst = 0.0  # the last observed frame's largest ratio to the threshold (above 1: a pop)
        self.last = None  # (pos, vel): the output last observed in world space, (J, 3) m and m/s
        self.reset()

    def reset(self):
        """Forget the previous frame (after a seek, a reset or a teleport)."""
        self._prev, self._frame = None, None

    def observe(self, inst, frame, dt, time=None):
        """After ``inst.step(dt)`` for frame ``frame``: the Pop since the previous observed frame, or None.

        None on the first frame after ``reset`` or when ``frame`` is not the previous one plus 1.
        """
        if inst.plan is not self.plan:
            raise GraphError("observe: the instance runs another plan than the pop finder's", file=self.plan.file)
        now = self._snapshot(inst)
        prev, follows = self._prev, self._frame is not None and frame == self._frame + 1
        self._prev, self._frame, self.last = now, frame, now["world"]
        self.worst = 0.0
        if not follows or dt <= 0.0:
            return None
        (x0, v0), (x1, v1) = prev["world"], now["world"]
        ratio, err, speed = excess(x0, x1, v0, v1, dt, self.rel, self.floor)
        self.worst = float(ratio.max(initial=0.0))
        popped = ratio > 1.0
        if not popped.any():
            return None
        worst = int(np.argmax(np.where(popped, err, -1.0)))
        return Pop(frame=int(frame), time=float(frame * dt if time is None else time),
                   node=self._culprit(prev, now, popped, dt),
                   joints=tuple(self.names[j] for j in np.flatnonzero(popped)),
                   error=float(err[worst]), speed=float(speed[worst]))

    def _snapshot(self, inst):
        """Copies (float64) of every pose output of the watched character, and the output in world space."""
        c = self.character if inst.batch > 1 else ...
        snap, ran = {}, {}
        for nid, port, _, _ in self.nodes:
            view = inst.port(nid, port)
            snap[(nid, port)] = tuple(np.array(a[c], np.float64) for a in view.as_tuple())
            ran[(nid, port)] = bool(self.plan.running(nid, inst.st)[self.character])
        snap["ran"] = ran  # a node skipped (an inactive state's) holds a stale output: never a culprit
        out = snap[(self.output, "pose")]
        if self.plan.checked.spaces.get((self.output, "pose", "out")) == "global":
            snap["world"] = (out[0], out[3])
        else:
            snap["world"] = world(out, self.parents, self.groups)
        return snap

    def _culprit(self, prev, now, target, dt):
        """The node that introduced the output's pops ``target`` (J,) bool, or None."""
        pops, reaching, anywhere = {}, (0.0, None), (0.0, None)
        for nid, port, local, sources in self.nodes:
            if not (prev["ran"][(nid, port)] and now["ran"][(nid, port)]):
                pops[(nid, port)] = np.zeros(len(self.names), np.bool_)
                continue
            ratio = self._ratio(prev[(nid, port)], now[(nid, port)], local, dt)
            mine = pops[(nid, port)] = ratio > 1.0
            fed = np.zeros_like(mine)
            for src in sources:
                fed |= pops[src]
            introduced = mine & ~(fed[:, None] & self.above).any(axis=0)  # no input pops here or above
            if not introduced.any():
                continue
            anywhere = max(anywhere, (ratio[introduced].max(), nid), key=_strength)
            reach = introduced & (self.above & target).any(axis=1)
            if reach.any():
                reaching = max(reaching, (ratio[reach].max(), nid), key=_strength)
        return reaching[1] or anywhere[1]

    def _ratio(self, a, b, local, dt):
        """Per joint of one pose output (six float64 arrays at two frames): its ``excess`` in its own space."""
        ratio = excess(a[0], b[0], a[3], b[3], dt, self.rel, self.floor)[0]
        if local:
            ratio = np.maximum(ratio, turn_excess(a, b, self.parents, dt, self.rel, self.floor))
        return ratio


def _strength(candidate):
    return candidate[0]


def _ancestry(parents):
    """(J, J) bool: ``above[a, j]`` when joint ``a`` is ``j`` or an ancestor of ``j``."""
    above = np.eye(len(parents), dtype=bool)
    for j, p in enumerate(parents):
        if p >= 0:
            above[:, j] |= above[:, p]
    return above


def _pose_nodes(plan):
    """(node id, output port, whether local, pose input sources) of every pose output, in schedule order."""
    checked, rows = plan.checked, []
    for nid in plan.order:
        sources = [checked.feeds[(nid, name)] for name, p in checked.inputs[nid].items()
                   if p.signal == "pose" and (nid, name) in checked.feeds]
        for name, p in checked.outputs[nid].items():
            if p.signal == "pose":
                local = checked.spaces.get((nid, name, "out")) != "global"
                rows.append((nid, name, local, sources))
    return rows
