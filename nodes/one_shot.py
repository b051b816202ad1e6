"""One-shot: play a ``shot`` over the ``base`` (a wave, a hit reaction), fired, re-fired and aborted without a pop.

``fire`` and ``abort`` act on their rising edge (a fire in the same frame as an abort wins).
A fire restarts the shot's own nodes, inside the compiled step (the nodes needed only by the
``shot`` input and ``shot_motion``: ``animgraph.gates``), and plays it; the shot blends out by
itself when ``shot_time_left`` (linked from the shot sample's ``time_left``, read a frame late
as a state machine's conditions are) reaches ``blend_out``, or at once on ``abort``.  While
it plays, each joint shows the shot at its ``branches`` mask weight (``animgraph.branches``;
no branches: the whole body), joints outside the mask the base exactly.  Only while the shot
plays (or cross-fades out) do its nodes run.

``blend`` hides the changes:

- ``inertialize`` (default; ``animgraph.offsets``): a fire, re-fire or end shows the new pose
  at once with an offset from what showed, decaying over ``blend_in`` (or ``blend_out``).
- ``crossfade``: the shot's weight ramps with a smoothstep over ``blend_in`` (``blend_out``)
  from where it is, its rate in the velocities; a re-fire restarts the shot from where the
  weight is, and the jump of the restarted shot is inertialized over ``blend_in``.

"What showed" is the base itself at a fire from rest (exact, with its velocities), else the
node's previous output carried a frame on at its velocities: no pose history is kept.

Events (``animgraph.events``): instants at the start of the step: ``fired`` (also on a re-fire),
``ended`` when the shot begins blending out by itself, ``aborted`` when an abort stops it while it
plays.  Its own samples end the event ranges they have open when it stops running them or
restarts them (detail ``aborted`` for an abort or a re-fire, ``ended`` after its end).

Outputs: the pose; the root motion (``motion: "shot"``: the shot's while it plays, hidden as
the pose is; ``"base"``: the base's always); ``active`` (playing or blending out);
``shot_time`` (seconds since the fire, rate 1 while active); ``time_left`` (seconds until
the shot has blended out: while playing the shot's ``shot_time_left`` (1e9 unlinked), then
what is left of ``blend_out``; 0 when idle).
"""

from __future__ import annotations

from typing import List, Literal

import numpy as np
from pydantic import Field

from animgraph.branches import MAX_BRANCHES, Branch, branch_mask
from animgraph.events import CAP, INSTANT, emit, reason_id
from animgraph.fades import layer_kernel, smoothstep
from animgraph.jit import njit
from animgraph.kernels import KFORM, copy_pose, state_pose
from animgraph.limits import cut_seconds, seconds_field
from animgraph.node import Node, Port, Weight, fields, port_indices, register, slot
from animgraph.offsets import OFFSET, inertialize_kernel, motion_offset, record_offsets, still_active
from animgraph.pose import Pose, number, pose_arg
from animgraph.stencil import FRAME, STEPS, advance, play

INPUTS = (
    Port("base", "pose", "local", "what the character does: shown outside the shot and after it"),
    Port("shot", "pose", "local", "the action played over the base (its nodes run only while it plays)"),
    Port("fire", "bool", "", "plays the shot from its start on a rising edge (again while playing: restarts it)", True),
    Port("abort", "bool", "", "blends the shot out at once on a rising edge", True),
    Port("shot_time_left", "scalar", "", "the shot's seconds left (its sample's time_left; unlinked: until abort)",
         True),
    Port("base_motion", "motion", "", "the base's root motion", True),
    Port("shot_motion", "motion", "", "the shot's root motion (followed while it plays with motion 'shot')", True),
)
OUTPUTS = (
    Port("pose", "pose", "local", "the shot over the base, changes hidden"),
    Port("motion", "motion", "", "the root motion followed (none linked: still)"),
    Port("active", "bool", "", "1 while the shot plays or blends out"),
    Port("shot_time", "scalar", "", "seconds since the fire (rate 1 while active)"),
    Port("time_left", "scalar", "", "seconds until the shot has blended out (0 idle; 1e9 unlinked while playing)"),
    Port("weight", "scalar", "", "the shot's weight and its rate (1/s): 1 while it shows inertialized, a "
         "crossfade's smoothstep, 0 idle"),
)
IN, OUT = port_indices("OneShotIn", INPUTS), port_indices("OneShotOut", OUTPUTS)
EARLY_INS, EARLY_OUTS = ("fire", "abort", "shot_time_left"), ("active", "shot_time", "weight")

IDLE, PLAYING, OUT_ = 0.0, 1.0, 2.0  # phases
NONE, FIRED, ENDED = 0.0, 1.0, 2.0  # this frame's event
ABORTED, ENDED_BY_ITSELF = float(reason_id("aborted")), float(reason_id("ended"))  # the details its nodes stop with
FOREVER = 1e9  # time_left of a shot that ends only by abort (s)
MOTION = 6  # a motion signal's floats

# Parameters: durations (s), cross-fading (1) or inertialized (0), root motion from the shot (1), then the mask (J).
PAR = fields("OneShotPar", blend_in=1, blend_out=1, crossfade=1, shot_motion=1, source=1, on_fire=1, on_end=1,
             on_abort=1)  # then the events' source (-1: none) and name ids
# State: the phase, this frame's event, seconds since the fire and into the current blend, the last fire and abort
# inputs (edges), the shot's weight when the current blend began, the branch masks (live, entered) and the detail its
# nodes stop with (aborted or ended), whether the node was at rest when the event came (the base showed as it is); the
# offset's clock (a previous output exists, shows,
# seconds, duration); then per joint the previous output and the offset; then the root motion shown and its offset.
ST = fields("OneShotSt", phase=1, event=1, shot_time=1, clock=1, last_fire=1, last_abort=1, w_from=1, live=1,
            entered=1, why=1, rest=1, shown=1, active=1, elapsed=1, length=1)
JOINT = fields("OneShotJoint", prev=KFORM, off=OFFSET)
TAIL = fields("OneShotMotion", last=MOTION, offset=MOTION)


@njit(cache=True)
def rising(sig, at, st, last):
    """Whether the bool at ``sig[at]`` (unlinked: -1, never) rose since the last frame; remembers it in ``st[last]``."""
    if at < 0:
        return False
    now = sig[at] > 0.5
    rose = now and st[last] < 0.5
    st[last] = 1.0 if now else 0.0
    return rose


@njit(cache=True)
def shot_weight(par, st):
    """The shot's weight now and its rate (1/s): a step when inertialized, else a smoothstep from ``w_from``."""
    phase, clock, w_from = st[ST.phase], st[ST.clock], st[ST.w_from]
    if par[PAR.crossfade] < 0.5:
        return (1.0, 0.0) if phase == PLAYING else (0.0, 0.0)
    if phase == PLAYING:
        s, ds = smoothstep(clock, par[PAR.blend_in])
        return w_from + (1.0 - w_from) * s, (1.0 - w_from) * ds
    if phase == OUT_:
        s, ds = smoothstep(clock, par[PAR.blend_out])
        return w_from * (1.0 - s), -w_from * ds
    return 0.0, 0.0


@njit(cache=True)
def announce(sig, par, name):
    """An instant event ``name`` (the id in ``par`` at that field), at the step's start."""
    if par[PAR.source] >= 0.0 and sig[CAP] > 0.0:
        emit(sig, par[PAR.source], par[name], INSTANT, 0.0, 1.0, 0.0)


@njit(cache=True, own_code=True)
def one_shot_decide(ins, outs, par, st, pose, sig, db, dt):
    """The early kernel: fire, abort and the shot's end; whether the shot's nodes run (and restart) this frame."""
    fire = rising(sig, ins[IN.fire], st, ST.last_fire)
    abort = rising(sig, ins[IN.abort], st, ST.last_abort)
    phase, event = st[ST.phase], NONE
    st[ST.rest] = 1.0 if phase == IDLE and st[ST.active] < 0.5 else 0.0
    if phase != IDLE:
        st[ST.shot_time] += dt
        st[ST.clock] += dt
    w_now = shot_weight(par, st)[0]  # the weight this frame would show: an event's blend starts from it
    left = ins[IN.shot_time_left]
    # The shot's time left is last frame's (its nodes run after this): past the fire frame, it is this shot's.
    ends = abort or (left >= 0 and st[ST.shot_time] > 0.0 and sig[left] <= par[PAR.blend_out])
    if fire:
        announce(sig, par, PAR.on_fire)
        st[ST.why] = ABORTED  # a re-fire cuts the playing shot short
        phase, event = PLAYING, FIRED
        st[ST.shot_time], st[ST.clock], st[ST.w_from] = 0.0, 0.0, w_now
    elif phase == PLAYING and ends:
        announce(sig, par, PAR.on_abort if abort else PAR.on_end)
        st[ST.why] = ABORTED if abort else ENDED_BY_ITSELF
        phase, event = OUT_, ENDED
        st[ST.clock], st[ST.w_from] = 0.0, w_now
    elif phase == OUT_ and st[ST.clock] >= par[PAR.blend_out]:
        phase = IDLE
    st[ST.phase], st[ST.event] = phase, event
    needed = phase == PLAYING or (phase == OUT_ and par[PAR.crossfade] > 0.5)
    st[ST.live], st[ST.entered] = 1.0 if needed else 0.0, 1.0 if event == FIRED else 0.0
    sig[outs[OUT.active]] = 0.0 if phase == IDLE else 1.0
    sig[outs[OUT.shot_time]], sig[outs[OUT.shot_time] + 1] = st[ST.shot_time], 0.0 if phase == IDLE else 1.0
    sig[outs[OUT.weight]], sig[outs[OUT.weight] + 1] = shot_weight(par, st)


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def one_shot_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the shot layered over the base at its weight, fires and ends hidden by offsets."""
    base, shot, out = slot(pose, ins[IN.base]), slot(pose, ins[IN.shot]), slot(pose, outs[OUT.pose])
    joints = base[0].shape[0]
    mask = par[PAR.SIZE:PAR.SIZE + joints]
    prev = state_pose(st, ST.SIZE + JOINT.prev * joints, joints)
    at = ST.SIZE + JOINT.off * joints
    off = st[at:at + OFFSET * joints].reshape((joints, OFFSET))
    phase, event, crossfade = st[ST.phase], st[ST.event], par[PAR.crossfade] > 0.5
    w, w_vel = shot_weight(par, st)
    if w == 0.0 and w_vel == 0.0:
        copy_pose(base, out)
    else:
        layer_kernel(base, shot, mask, w, w_vel, out)
    # An event shows a new pose at once (inertialized) or restarts a visible shot (cross-faded): an offset from what
    # showed; a cross-fade's end needs none (its weight moves on from where it is).
    length = par[PAR.blend_in] if event == FIRED else par[PAR.blend_out]
    record = event != NONE and length > 0.0 and still_active(True, length, dt) and st[ST.shown] > 0.5 and (
        not crossfade or (event == FIRED and st[ST.rest] < 0.5))
    if record:
        if st[ST.rest] > 0.5:  # from rest the base showed, as it is now
            record_offsets(base, out, 0.0, off)
        else:
            record_offsets(prev, out, dt, off)
        for j in range(joints):  # outside the mask the base goes on as it is: no offset (a frame's carry error)
            if mask[j] == 0.0:
                off[j, :] = 0.0
        st[ST.elapsed], st[ST.active], st[ST.length] = 0.0, 1.0, length
    elif event != NONE and not crossfade:
        st[ST.active] = 0.0  # a cut
    else:
        st[ST.elapsed] += dt
    if st[ST.active] > 0.5 and not still_active(True, st[ST.length], st[ST.elapsed]):
        st[ST.active] = 0.0
    inertialize_kernel(out, off, st[ST.active] > 0.5, True, st[ST.length], st[ST.elapsed], out)
    if phase != IDLE or st[ST.active] > 0.5:  # at rest the next fire starts from the base itself
        copy_pose(out, prev)
    follow_motion(ins, outs, par, st, sig, ST.SIZE + JOINT.SIZE * joints, w, record)
    left = ins[IN.shot_time_left]
    o = outs[OUT.time_left]
    if phase == PLAYING:
        sig[o], sig[o + 1] = (sig[left], sig[left + 1]) if left >= 0 else (FOREVER, 0.0)
    elif phase == OUT_:
        sig[o], sig[o + 1] = max(par[PAR.blend_out] - st[ST.clock], 0.0), -1.0
    else:
        sig[o], sig[o + 1] = 0.0, 0.0
    st[ST.shown] = 1.0


@njit(cache=True)
def follow_motion(ins, outs, par, st, sig, tail, w, record):
    """The root motion: the base's, or with ``shot_motion`` the shot's at its weight; an offset where the pose's is."""
    dst, a, b = outs[OUT.motion], ins[IN.base_motion], ins[IN.shot_motion]
    wm = w if par[PAR.shot_motion] > 0.5 else 0.0
    for k in range(MOTION):
        sig[dst + k] = (1.0 - wm) * (sig[a + k] if a >= 0 else 0.0) + wm * (sig[b + k] if b >= 0 else 0.0)
    motion_offset(sig, dst, dst, st[tail + TAIL.last:tail + TAIL.last + MOTION],
                  st[tail + TAIL.offset:tail + TAIL.offset + MOTION], record, record, True, st[ST.length],
                  st[ST.elapsed])


@register(one_shot_node, early=one_shot_decide)
class OneShot(Node):
    """Play a shot over the base on a fire (over chosen branches), re-fire, abort and blend back without a pop."""

    type: Literal["one_shot"] = "one_shot"
    blend_in: float = seconds_field(0.2, "time the shot takes to show; 0 cuts")
    blend_out: float = seconds_field(0.3, "time the shot takes to leave, before its end or after an abort; 0 cuts")
    blend: Literal["inertialize", "crossfade"] = Field(
        "inertialize", description="inertialize (offsets from what showed), or crossfade (the weight ramps)")
    branches: List[Branch] = Field([], max_length=MAX_BRANCHES,
                                   description="the joints the shot covers (none: the whole body)")
    motion: Literal["base", "shot"] = Field("base", description="whose root motion is followed while the shot plays")

    CATEGORY = "transitions"
    FIELD_KINDS = {"branches": "branches", "blend": "enum", "motion": "enum"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS
    LIVE_FIELD, ENTERED_FIELD, WHY_FIELD = ST.live, ST.entered, ST.why
    EVENTS = True

    def params(self, ctx):
        """Durations, the blend, the motion, and the per-joint mask (plan time: joint names to weights)."""
        joints = len(ctx.skeleton)
        mask = branch_mask(ctx, self, "branches", self.branches) if self.branches else np.ones(joints)
        planned = hasattr(ctx, "event_names")  # in a plan, not a OneShotPlayer
        ids = ctx.event_names().id if planned else (lambda name: 0)
        head = PAR.pack(blend_in=cut_seconds(self.blend_in), blend_out=cut_seconds(self.blend_out),
                        crossfade=self.blend == "crossfade", shot_motion=self.motion == "shot",
                        source=ctx.event_source(self) if planned else -1, on_fire=ids("fired"), on_end=ids("ended"),
                        on_abort=ids("aborted"))
        return np.concatenate([head, mask])

    def state(self, ctx, time=0.0):
        """Idle, nothing shown yet."""
        return np.zeros(ST.SIZE + JOINT.SIZE * len(ctx.skeleton) + TAIL.SIZE, np.float64)

    def early_ports(self):
        """Fire, abort and the shot's time left are read, and ``active``/``shot_time`` written, before the shot runs."""
        return EARLY_INS, EARLY_OUTS

    def input_weights(self):
        """The shot at its ``weight`` (early output) times its largest mask weight; the base at 1 - that weight for a
        whole-body shot, 1 under branches (the joints outside them are the base)."""
        top = max((b.weight for b in self.branches), default=1.0)
        base = Weight("weight", -1.0, 1.0) if not self.branches else None
        return {"shot": Weight("weight", scale=top), **({"base": base} if base else {})}

    def branch_bits(self):
        """The shot's pose and motion are needed only while it plays (bit 0)."""
        return {"shot": 0, "shot_motion": 0}

    def branch_conditions(self):
        """The shot's time left is read only while it plays: the shot's own sample may give it (a frame late)."""
        return {"shot_time_left": 0}


# ---------------------------------------------------------------- op


class _Joints:
    """The part of a plan's build context the one-shot's state needs: a skeleton of ``joints`` joints."""

    def __init__(self, joints):
        self.skeleton = range(joints)


class OneShotPlayer:
    """A one-shot without a graph, on poses of any batch shape (each item its own): the node's kernels.

    ``OneShotPlayer(blend_in=0.2, blend_out=0.3, blend="inertialize", mask=None)`` (``mask``: per-joint weights in
    [0, 1], None the whole body); ``update(base, shot, dt, fire=False, abort=False, shot_time_left=None)`` takes
    local poses of one shape and returns the output pose; ``active`` says whether the first item plays.
    """

    def __init__(self, blend_in=0.2, blend_out=0.3, blend="inertialize", mask=None):
        self.node = OneShot.model_validate({"id": "one_shot", "type": "one_shot", "blend_in": blend_in,
                                            "blend_out": blend_out, "blend": blend})
        self.mask = None if mask is None else np.asarray(mask, np.float64)
        if self.mask is not None and not (self.mask.ndim == 1 and np.all((self.mask >= 0) & (self.mask <= 1))):
            raise ValueError("mask must be per-joint weights in [0, 1]")
        # signals: fire 0, abort 1, time left 2-3, outputs: active 4, shot_time 5-6, time_left 7-8, weight 9-10,
        # motion 11-16
        self.ins = np.asarray([0, 1, 0, 1, -1, -1, -1], np.int64)  # slots base 0, shot 1; signals
        self.outs = np.asarray([2, 11, 4, 5, 7, 9], np.int64)
        self.sig = np.zeros(11 + MOTION)
        self.rows = None

    @property
    def active(self):
        """Whether the first item's shot plays or blends out."""
        return self.rows is not None and self.rows[0][ST.phase] != IDLE

    def update(self, base, shot, dt, fire=False, abort=False, shot_time_left=None):
        """The output pose after ``dt`` s with ``base`` and ``shot`` (local poses, one shape)."""
        base, shot = pose_arg(base, "base"), pose_arg(shot, "shot")
        if (base.batch, base.joints) != (shot.batch, shot.joints):
            raise ValueError("base and shot must have one batch shape and one skeleton")
        dt = number(dt, "dt", 0.0)
        self.sig[0], self.sig[1] = float(bool(fire)), float(bool(abort))
        self.ins[IN.shot_time_left] = -1 if shot_time_left is None else 2
        if shot_time_left is not None:
            self.sig[2], self.sig[3] = float(number(shot_time_left, "shot_time_left")), -1.0
        count = int(np.prod(base.batch, dtype=np.int64))
        if self.rows is None or self.rows.shape[0] != count:
            self.rows = np.tile(self.node.state(_Joints(base.joints)), (count, 1))
        mask = np.ones(base.joints) if self.mask is None else self.mask
        if mask.shape != (base.joints,):
            raise ValueError(f"mask must have {base.joints} weights, got {mask.shape[0]}")
        par = np.concatenate([self.node.params(_Joints(base.joints))[:PAR.SIZE], mask])
        out = Pose.identity(base.joints, base.batch)
        edges = self.sig[:2].copy()
        for b, (x, y, z) in enumerate(zip(base.items(), shot.items(), out.items())):
            self.sig[:2] = edges  # every item sees the same edge
            slots = tuple(np.stack([x[c], y[c], z[c]]).astype(np.float32) for c in range(6))
            one_shot_decide(self.ins, self.outs, par, self.rows[b], slots, self.sig, (), dt)
            one_shot_node(self.ins, self.outs, par, self.rows[b], slots, self.sig, (), dt)
            for c in range(6):
                z[c][...] = slots[c][2]
        return out


def verify_one_shot(m, t, h, rng):
    """The backwards clip fired over the clip ``lag`` s before t, re-fired or aborted mid-blend half the time; a stencil
    per blend (inertialize, crossfade)."""
    return [fired_stencil(m, t, h, rng, blend) for blend in ("inertialize", "crossfade")]


def fired_stencil(m, t, h, rng, blend):
    """One verify stencil of a one-shot blending by ``blend`` (in and out over 0.4 s)."""
    shot = OneShotPlayer(blend_in=0.4, blend_out=0.4, blend=blend)
    lag = rng.uniform(3 * FRAME, 0.4 - (STEPS[-1] + 1) * h)
    start = t - lag
    events = {"fire": False, "abort": False}

    def step(s, dt):
        return shot.update(m.pose(s), m.other(s), dt, **events)

    step(start - FRAME, 0.0)
    events["fire"] = True
    step(start, FRAME)
    events["fire"] = False
    if rng.random() < 0.5:  # re-fired or aborted mid-blend: from the current output
        mid = start + (lag - 2 * FRAME) * rng.uniform(0.2, 0.6)
        advance(step, start, mid)
        what = "fire" if rng.random() < 0.5 else "abort"
        events[what] = True
        step(mid + FRAME, FRAME)
        events[what] = False
        start = mid + FRAME
    return play(step, start, t, h)


OneShot.OP, OneShot.VERIFY = OneShotPlayer, verify_one_shot
