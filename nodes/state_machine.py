"""State machine: one pose input per state, transitions on conditions, each one inertialized.

Every frame the machine reads its conditions once.  Among the transitions out of the
current state (and those ``from: "any"``, never to the current state itself) whose
condition holds, the lowest ``priority`` wins, ties by order in the file; up to
``max_transitions_per_frame`` hops are taken in a frame, each from the state the last one
reached, so a ring of always-true conditions ends.  A transition without ``when`` always
holds; ``when`` names a condition input: a bool (holds when true), or a scalar with
``above`` and/or ``below`` (holds strictly between them).

A transition's ``blend`` says how the change is hidden over its ``duration``:

- ``inertialize`` (default; ``animgraph.offsets``, cubic): an offset from what showed to the
  new state's pose; only the new state runs.
- ``dead_blend`` (``animgraph.fades``): what showed coasts on velocities decaying with the
  transition's ``halflife`` and fades into the new state's pose (smoothstep weight, its rate
  in the velocities); only the new state runs.
- ``crossfade``: the old state's pose fades into the new one's (smoothstep weight, its rate
  in the velocities); both states run until it ends.

"What showed" is, for a change from rest, the pose of the state left, which runs on for
that one frame (exact, with its velocities); while another transition still shows, the
machine's own previous output carried a frame on at its velocities.  So interruptions need
no pose history and never pop: an inertialization or a dead blend starts from what showed
whatever was running; a crossfade started while another transition still shows fades from
the state being left, with the gap from what showed to that pose inertialized away over its
duration.  At rest the machine keeps no copy of its output.

Travel (the ``travel`` input: a state's index; any other value stops travelling) walks
the shortest path over the transitions regardless of their conditions, one hop per
transition's duration (``animgraph.travel``: the table is built at plan time); conditions
wait until it arrives.  With no path, the machine jumps there over ``jump_duration``.

Outputs: the pose, the state's index, the seconds in it (rate 1), ``changed`` on a frame the
state changes, and per state ``<state>_time``: seconds since it was last entered (0 on
entry, rate 1 while active, held while not), which a state's samples may link to their
``time`` input so the state's clips start from their beginning on entry.

Events (``animgraph.events``, read by ``Instance.events``): instants at the start of the step
the machine decides in: ``entered`` and ``left`` with the state's name as detail on a change
(from the state it was in to the state it ends the frame in: hops through other states within
one frame are not announced), ``entered`` for the start state on the first frame and after a
reset, and ``travel_jump`` (detail: the state travelled to) when travel finds no path.  A
state's own samples end the event ranges they have open when it is left (detail
``state_left``; ``animgraph.gates``).

Only the active state's nodes run: the machine decides in an early kernel, before the
nodes its states need (``animgraph.node``, branches), and the planner gates every node
needed only through one state's inputs (its pose and ``<state>_motion``) on that state
being active (``animgraph.gates``).  A skipped node keeps its state; on entering a state
with ``reset_on_enter`` (default) its nodes restart from their initial state, so its clips
play from their beginning.  A node also needed elsewhere (by a condition, another state,
an output) always runs.
"""

from __future__ import annotations

import math
from typing import ClassVar, List, Literal, Optional

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from animgraph.jit import njit
from animgraph.decay import halflife_rate
from animgraph.events import CAP, INSTANT, emit, reason_id
from animgraph.fades import carry_pose, crossfade_kernel, dead_blend_kernel, fade_motion, smoothstep
from animgraph.kernels import KFORM, copy_pose, state_pose
from animgraph.limits import Part, cut_seconds, seconds_field
from animgraph.node import Node, Port, Weight, fields, register, slot
from animgraph.offsets import OFFSET, inertialize_kernel, motion_offset, record_offsets, still_active
from animgraph.pose import Pose, number, pose_arg
from animgraph.stencil import FRAME, STEPS, advance, play
from animgraph.travel import ANY, next_transitions

MAX_STATES = 32
MAX_TRANSITIONS = 256
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"
FIXED_PORTS = ("pose", "motion", "state", "time_in_state", "changed", "travel")
BOOL, SCALAR = 0.0, 1.0  # a condition's kind
UNBOUNDED = 1e300  # an absent above/below (parameters are finite)

# Parameters: counts, the events' source (-1: none) and name ids, then the condition kinds (one per condition), the
# transitions in the order they are tried (priority, then file order; ROW each), the travel table (states x states: a
# row, or -1), the states' reset_on_enter, and their names' event ids.
PAR = fields("StateMachinePar", states=1, conditions=1, transitions=1, hops=1, jump=1, source=1, on_enter=1,
             on_leave=1, on_jump=1)
ROW = fields("StateMachineRow", src=1, dst=1, condition=1, above=1, below=1, duration=1, blend=1, rate=1)
BLENDS = ("inertialize", "crossfade", "dead_blend")
INERTIALIZE, CROSSFADE, DEAD_BLEND = range(3)
# State: current state, seconds in it, travel target (-1 none), last travel input, travel hops taken, a previous
# output exists, seconds since the last change, an offset shows, its duration, this frame's change (its duration;
# -1 none: the early kernel tells the pose kernel), the states needed now and those entered now (bit masks, see
# animgraph.node's branches); then per state the seconds since it was entered; then per joint the previous output
# (kineform) and the offset, each a block of joints rows; then the root motion shown and its offset (TAIL).
# The last transition: the state it left, how it blends, whether another still showed when it began (else the previous
# output is the state it left, whose nodes run that frame); the running fade (crossfade or dead blend): the crossfade's
# source state (-1 none), its seconds, duration (0: none) and the dead blend's velocity decay (1/s).
ST = fields("StateMachineSt", cur=1, time=1, target=1, last_travel=1, travelled=1, shown=1, elapsed=1, active=1,
            length=1, hop=1, live=1, entered=1, why=1, leaving=1, was=1, blend=1, busy=1, fade_from=1, fade=1, fade_length=1,
            fade_rate=1)  # why: the detail its states' nodes stop with (state_left); leaving: the state left from rest
JOINT = fields("StateMachineJoint", prev=KFORM, off=OFFSET, old=KFORM)  # old: the dead blend's snapshot
FIXED_OUTS = fields("StateMachineOut", pose=1, motion=1, state=1, time_in_state=1, changed=1)  # then <state>_time
MOTION = 6  # a motion signal's floats
# After the joints: the motion shown, the dead blend's old motion and whether it fades, the inertialized offset.
TAIL = fields("StateMachineMotion", last=MOTION, old=MOTION, fading=1, offset=MOTION)


@njit(cache=True)
def holds(sig, at, kind, above, below):
    """Whether a condition holds: a bool signal at ``sig[at]`` is true, or a scalar lies strictly inside (above, below)."""
    if at < 0:
        return False
    x = sig[at]
    if kind == BOOL:
        return x > 0.5
    return above < x < below


@njit(cache=True)
def first_transition(ins, par, sig, n, n_cond, n_trans, cur):
    """The row of the first transition (in the order tried) out of ``cur`` whose condition holds; -1 if none."""
    rows = PAR.SIZE + n_cond
    for r in range(n_trans):
        at = rows + r * ROW.SIZE
        src, dst, c = int(par[at + ROW.src]), int(par[at + ROW.dst]), int(par[at + ROW.condition])
        if dst == cur or (src != cur and src != ANY):
            continue
        if c < 0 or holds(sig, ins[n + c], par[PAR.SIZE + c], par[at + ROW.above], par[at + ROW.below]):
            return r
    return -1


@njit(cache=True)
def announce(sig, par, name, state):
    """An instant event ``name`` (the id in ``par`` at that field) with ``state``'s name as detail, at the step's start."""
    if par[PAR.source] < 0.0 or sig[CAP] == 0.0:
        return
    n = int(par[PAR.states])
    names = PAR.SIZE + int(par[PAR.conditions]) + int(par[PAR.transitions]) * ROW.SIZE + n * n + n
    emit(sig, par[PAR.source], par[name], INSTANT, 0.0, 1.0, par[names + state])


@njit(cache=True)
def follow_travel(ins, par, sig, st, n, n_cond, n_trans, cur):
    """(row, state) of travel's next hop from ``cur`` (row -1: a jump; state -1: no hop now); reads the travel input."""
    at = ins[n + n_cond]
    if at >= 0 and sig[at] != st[ST.last_travel]:  # a new request (a state's index), or a stop (anything else)
        st[ST.last_travel] = sig[at]
        want = sig[at]
        st[ST.target] = int(want) if 0.0 <= want < n and want == math.floor(want) else -1.0
        st[ST.travelled] = 0.0
    target = int(st[ST.target])
    if target == cur:
        st[ST.target] = -1.0
        return -1, -1
    if target < 0 or (st[ST.travelled] > 0.5 and st[ST.active] > 0.5):  # one hop per transition's duration
        return -1, -1
    table = PAR.SIZE + n_cond + n_trans * ROW.SIZE
    return int(par[table + cur * n + target]), target


@njit(cache=True)
def start_fade(st, blend, rate, length, was):
    """A transition begins: how it blends, whether something still showed, and its fade (none for an inertialization)."""
    st[ST.busy] = 1.0 if st[ST.active] > 0.5 or st[ST.fade_length] > 0.0 else 0.0
    st[ST.blend], st[ST.was] = blend, was
    fades = blend != INERTIALIZE and length > 0.0
    st[ST.fade], st[ST.fade_length], st[ST.fade_rate] = 0.0, length if fades else 0.0, rate
    st[ST.fade_from] = was if fades and blend == CROSSFADE else -1.0


@njit(cache=True, own_code=True)
def state_machine_decide(ins, outs, par, st, pose, sig, db, dt):
    """The early kernel: this frame's state from the conditions (or travel); its times and the states needed now."""
    n, n_cond, n_trans = int(par[PAR.states]), int(par[PAR.conditions]), int(par[PAR.transitions])
    rows = PAR.SIZE + n_cond
    cur = was = int(st[ST.cur])
    length, hop = -1.0, -1  # the duration and row of the last hop taken this frame (row -1: travel's jump)
    if st[ST.shown] > 0.5:
        r, target = follow_travel(ins, par, sig, st, n, n_cond, n_trans, cur)
        if target >= 0 and r < 0:
            announce(sig, par, PAR.on_jump, target)
        if target >= 0:
            length = par[rows + r * ROW.SIZE + ROW.duration] if r >= 0 else par[PAR.jump]
            cur, hop = (target if r < 0 else int(par[rows + r * ROW.SIZE + ROW.dst])), r
            st[ST.travelled] += 1.0
        elif st[ST.target] < 0.0:
            for _ in range(int(par[PAR.hops])):
                r = first_transition(ins, par, sig, n, n_cond, n_trans, cur)
                if r < 0:
                    break
                length, hop = par[rows + r * ROW.SIZE + ROW.duration], r
                cur = int(par[rows + r * ROW.SIZE + ROW.dst])
    changed = length >= 0.0 and cur != was
    if changed:
        announce(sig, par, PAR.on_leave, was)
        announce(sig, par, PAR.on_enter, cur)
    elif st[ST.shown] < 0.5:
        announce(sig, par, PAR.on_enter, cur)
    if changed:
        start_fade(st, par[rows + hop * ROW.SIZE + ROW.blend] if hop >= 0 else INERTIALIZE,
                   par[rows + hop * ROW.SIZE + ROW.rate] if hop >= 0 else 0.0, length, was)
    elif st[ST.fade_length] > 0.0:
        st[ST.fade] += dt
        if st[ST.fade] >= st[ST.fade_length]:  # over: the source state stops running
            st[ST.fade_length], st[ST.fade_from] = 0.0, -1.0
    times = st[ST.SIZE:ST.SIZE + n]
    if changed or st[ST.shown] < 0.5:
        st[ST.time] = 0.0
        times[cur] = 0.0
    else:
        st[ST.time] += dt
        times[cur] += dt
    restart = par[rows + n_trans * ROW.SIZE + n * n + cur] > 0.5  # the state's reset_on_enter
    st[ST.cur], st[ST.hop] = cur, length if changed else -1.0
    # The state left runs on through a crossfade, and for the frame of a change from rest: its pose now is what the
    # machine would have shown, the transition's start.
    source = int(st[ST.fade_from]) if not changed or st[ST.busy] > 0.5 else was
    st[ST.live] = float((1 << cur) | (1 << source if source >= 0 else 0))
    # Left from rest and not faded from: it runs this frame only to show where the change starts, at weight 0.
    st[ST.leaving] = float(1 << was) if changed and source == was and int(st[ST.fade_from]) != was else 0.0
    st[ST.entered] = float(1 << cur) if changed and restart else 0.0
    sig[outs[FIXED_OUTS.state]] = cur
    sig[outs[FIXED_OUTS.time_in_state]], sig[outs[FIXED_OUTS.time_in_state] + 1] = st[ST.time], 1.0
    sig[outs[FIXED_OUTS.changed]] = 1.0 if changed else 0.0
    for s in range(n):
        o = outs[FIXED_OUTS.SIZE + s]
        sig[o], sig[o + 1] = times[s], 1.0 if s == cur else 0.0
    state_weights(sig, outs, st, n, cur)


@njit(cache=True)
def state_weights(sig, outs, st, n, cur):
    """Each state's weight in the pose and its rate (``<state>_weight``): 1 for the active state, 0 for the others; a
    crossfade's smoothstep between its source and the active state while it runs.  An inertialized or dead-blended
    change shows the new state's motion at once (an offset hides the step): its weight is 1 from the change on."""
    alpha, alpha_vel, source = 1.0, 0.0, int(st[ST.fade_from])
    if source >= 0 and st[ST.fade_length] > 0.0:
        alpha, alpha_vel = smoothstep(st[ST.fade], st[ST.fade_length])
    for s in range(n):
        o = outs[FIXED_OUTS.SIZE + n + s]
        if s == cur:
            sig[o], sig[o + 1] = alpha, alpha_vel
        elif s == source and alpha < 1.0:
            sig[o], sig[o + 1] = 1.0 - alpha, -alpha_vel
        else:
            sig[o], sig[o + 1] = 0.0, 0.0


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def state_machine_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the state the early kernel chose, its pose faded or inertialized from what showed."""
    n, n_cond = int(par[PAR.states]), int(par[PAR.conditions])
    cur, length, blend, source = int(st[ST.cur]), st[ST.hop], int(st[ST.blend]), int(st[ST.fade_from])
    changed = length >= 0.0
    inp = slot(pose, ins[cur])
    out = slot(pose, outs[FIXED_OUTS.pose])
    joints = inp[0].shape[0]
    blocks = ST.SIZE + n
    prev = state_pose(st, blocks + JOINT.prev * joints, joints)
    old = state_pose(st, blocks + JOINT.old * joints, joints)
    at = blocks + JOINT.off * joints
    off = st[at:at + OFFSET * joints].reshape((joints, OFFSET))
    if changed:
        # What showed, now: the state left (from rest: it ran this frame), or the previous output carried a frame on
        # at its velocities (another transition still showed).
        busy = st[ST.busy] > 0.5
        # An inertialization's offset reaches the new state's pose; an interrupting crossfade's reaches the pose it
        # fades from.  A step longer than the offset takes to decay makes carrying the output that far meaningless.
        record = length > 0.0 and still_active(True, length, dt) and (
            blend == INERTIALIZE or (blend == CROSSFADE and busy))
        dst = slot(pose, ins[source]) if source >= 0 else inp
        dead = blend == DEAD_BLEND and st[ST.fade_length] > 0.0
        if busy:
            start_from(prev, dt, dst, record, dead, off, old, st[ST.fade_rate])
        else:
            start_from(slot(pose, ins[int(st[ST.was])]), 0.0, dst, record, dead, off, old,
                       st[ST.fade_rate])
        if record:
            st[ST.elapsed], st[ST.active], st[ST.length] = 0.0, 1.0, length
        else:
            st[ST.active] = 0.0
    else:
        st[ST.elapsed] += dt
    if st[ST.active] > 0.5 and not still_active(True, st[ST.length], st[ST.elapsed]):
        st[ST.active] = 0.0
    shown = inp
    if source >= 0:
        alpha, alpha_vel = smoothstep(st[ST.fade], st[ST.fade_length])
        crossfade_kernel(slot(pose, ins[source]), inp, alpha, alpha_vel, out)
        shown = out
    elif blend == DEAD_BLEND and st[ST.fade_length] > 0.0:
        dead_blend_kernel(old, inp, st[ST.fade_rate], st[ST.fade_length], st[ST.fade], out)
        shown = out
    inertialize_kernel(shown, off, st[ST.active] > 0.5, True, st[ST.length], st[ST.elapsed], out)
    blend_motion(ins, outs, st, sig, n + n_cond + 1, blocks + JOINT.SIZE * joints, cur, source, changed, blend)
    if st[ST.active] > 0.5 or st[ST.fade_length] > 0.0:  # at rest the next change starts from the state's own pose
        copy_pose(out, prev)
    st[ST.shown] = 1.0


@njit(cache=True)
def start_from(shown, ahead, dst, record, dead, off, old, rate):
    """A transition starts from pose ``shown`` carried ``ahead`` s on: the offsets to ``dst`` (at its velocities) and
    the dead blend's snapshot (coasted, decaying at ``rate`` 1/s), as needed."""
    if record:
        record_offsets(shown, dst, ahead, off)
    if dead:
        carry_pose(shown, rate, ahead, old)


@njit(cache=True)
def blend_motion(ins, outs, st, sig, motions, tail, cur, source, changed, blend):
    """The machine's root motion: the active state's (none linked: still), faded or inertialized as its pose is."""
    dst = outs[FIXED_OUTS.motion]
    src = ins[motions + cur]
    for k in range(MOTION):
        sig[dst + k] = sig[src + k] if src >= 0 else 0.0
    if source >= 0:  # crossfading from the source state's motion
        alpha = smoothstep(st[ST.fade], st[ST.fade_length])[0]
        other = ins[motions + source]
        for k in range(MOTION):
            sig[dst + k] = alpha * sig[dst + k] + (1.0 - alpha) * (sig[other + k] if other >= 0 else 0.0)
    last = st[tail + TAIL.last:tail + TAIL.last + MOTION]
    if blend == DEAD_BLEND:
        fade_motion(sig, dst, dst, last, st[tail + TAIL.old:tail + TAIL.old + MOTION],
                    st[tail + TAIL.fading:tail + TAIL.fading + 1], changed and st[ST.fade_length] > 0.0, changed,
                    st[ST.fade_rate], st[ST.fade_length], st[ST.fade])
    else:  # an offset on a change, decaying as the pose's does (none for a crossfade from rest)
        motion_offset(sig, dst, dst, last, st[tail + TAIL.offset:tail + TAIL.offset + MOTION],
                      changed and st[ST.active] > 0.5, changed, True, st[ST.length], st[ST.elapsed])


class State(Part):
    """One state: its name is also the name of its pose input and of its ``<name>_time`` output."""

    name: str = Field(pattern=IDENTIFIER, max_length=64, description="the state's name (an identifier)")
    reset_on_enter: bool = Field(True, description="restart the nodes only this state needs when it is entered")


class Transition(Part):
    """A transition: from a state (or "any"), to a state, when a condition holds, inertialized over ``duration``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)
    FIELD_KINDS: ClassVar[dict] = {"source": "state_or_any", "to": "state"}

    source: str = Field(alias="from", description='the state it leaves, or "any" (every state but its target)')
    to: str = Field(description="the state it enters")
    when: Optional[str] = Field(None, pattern=IDENTIFIER, max_length=64,
                                description="condition input: a bool, or a scalar with above/below (none: always)")
    above: Optional[float] = Field(None, allow_inf_nan=False, description="holds while the scalar is above this")
    below: Optional[float] = Field(None, allow_inf_nan=False, description="holds while the scalar is below this")
    duration: float = seconds_field(0.25, "transition time (s); 0 cuts")
    blend: Literal["inertialize", "crossfade", "dead_blend"] = Field(
        "inertialize", description="inertialize (the new state only), crossfade (both states run), dead_blend")
    halflife: float = seconds_field(0.2, "dead_blend: half-life of the old pose's velocities; 0 holds it")
    priority: int = Field(0, ge=-1000, le=1000, description="lower first among those that hold [-1000, 1000]")


@register(state_machine_node, early=state_machine_decide)
class StateMachine(Node):
    """States with a pose input each; prioritised, interruptible transitions on conditions, inertialized."""

    type: Literal["state_machine"] = "state_machine"
    start: str = Field(pattern=IDENTIFIER, description="the state at the first frame and after a reset")
    states: List[State] = Field(min_length=1, max_length=MAX_STATES, description="the states, each a pose input")
    transitions: List[Transition] = Field([], max_length=MAX_TRANSITIONS, description="transitions between states")
    max_transitions_per_frame: int = Field(1, ge=1, le=8, description="hops taken at most in one frame [1, 8]")
    jump_duration: float = seconds_field(0.25, "travel's transition when no path leads to its state")

    CATEGORY = "transitions"
    FIELD_KINDS = {"start": "state", "states": "branches", "transitions": "branches"}
    LIVE_FIELD, ENTERED_FIELD, WHY_FIELD, LEAVING_FIELD = ST.live, ST.entered, ST.why, ST.leaving
    EVENTS = True
    EXAMPLE = {"start": "a", "states": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
               "transitions": [{"from": "a", "to": "b", "when": "speed", "above": 0.5},
                               {"from": "b", "to": "c", "when": "speed", "above": 2.0},
                               {"from": "any", "to": "a", "when": "speed", "below": 0.5, "priority": -1}]}

    @model_validator(mode="after")
    def _consistent(self):
        names = [s.name for s in self.states]
        seen = set()
        for name in names:
            if name in seen:
                raise ValueError(f"state {name!r} appears twice")
            if name in FIXED_PORTS or name.endswith(("_time", "_motion")):
                raise ValueError(f"state {name!r} collides with a port name (pose, motion, state, time_in_state, "
                                 f"changed, travel, <state>_time, <state>_motion)")
            seen.add(name)
        if self.start not in seen:
            raise ValueError(f"start {self.start!r} is not a state (states: {', '.join(names)})")
        kinds = {}
        for k, t in enumerate(self.transitions):
            where = f"transition {k} ({t.source} -> {t.to})"
            if t.source != "any" and t.source not in seen:
                raise ValueError(f"{where}: unknown state {t.source!r} (states: {', '.join(names)})")
            if t.to not in seen:
                raise ValueError(f"{where}: unknown state {t.to!r} (states: {', '.join(names)})")
            if t.source == t.to:
                raise ValueError(f"{where}: a state's transition to itself")
            if t.when is None:
                if t.above is not None or t.below is not None:
                    raise ValueError(f"{where}: above/below need a 'when' condition")
                continue
            if t.when in seen or t.when in FIXED_PORTS or t.when.endswith(("_time", "_motion")):
                raise ValueError(f"{where}: condition {t.when!r} collides with a state or port name")
            kind = "bool" if t.above is None and t.below is None else "scalar"
            if kinds.setdefault(t.when, kind) != kind:
                raise ValueError(f"{where}: condition {t.when!r} is a bool in one transition and a scalar with "
                                 f"above/below in another")
            if t.above is not None and t.below is not None and not t.above < t.below:
                raise ValueError(f"{where}: above {t.above:g} must be below below {t.below:g}")
        return self

    @classmethod
    def follow_edit(cls, old, new):
        """A state renamed in the editor: ``start``, the transitions and the links to its ports follow the new name."""
        before, after = old.get("states"), new.get("states")
        if not (isinstance(before, list) and isinstance(after, list) and len(before) == len(after)):
            return new, {}
        names = {}
        for a, b in zip(before, after):
            if isinstance(a, dict) and isinstance(b, dict) and a.get("name") != b.get("name"):
                names[a.get("name")] = b.get("name")
        if not names or not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
            return new, {}
        new = dict(new)
        if new.get("start") in names:
            new["start"] = names[new["start"]]
        if isinstance(new.get("transitions"), list):
            new["transitions"] = [t | {k: names.get(t[k], t[k]) for k in ("from", "to") if k in t}
                                  if isinstance(t, dict) else t for t in new["transitions"]]
        ports = dict(names) | {f"{a}{end}": f"{b}{end}" for a, b in names.items()
                               for end in ("_time", "_motion", "_weight")}
        return new, ports

    def conditions(self):
        """[(name, kind)] of the condition inputs, in order of first use."""
        found = {}
        for t in self.transitions:
            if t.when is not None and t.when not in found:
                found[t.when] = "bool" if t.above is None and t.below is None else "scalar"
        return list(found.items())

    def inputs(self):
        poses = tuple(Port(s.name, "pose", "local", f"pose of state {s.name!r}") for s in self.states)
        conds = tuple(Port(name, kind, "", f"condition {name!r}" + (" (bool)" if kind == "bool" else " (scalar)"))
                      for name, kind in self.conditions())
        motions = tuple(Port(f"{s.name}_motion", "motion", "", f"root motion of state {s.name!r}", True)
                        for s in self.states)
        return (poses + conds + (Port("travel", "int", "", "index of a state to travel to (other values: stay)", True),)
                + motions)

    def outputs(self):
        return (Port("pose", "pose", "local", "the active state's pose, transitions inertialized"),
                Port("motion", "motion", "", "the active state's root motion (none linked: still)"),
                Port("state", "int", "", "index of the active state"),
                Port("time_in_state", "scalar", "", "seconds since the active state was entered (rate 1)"),
                Port("changed", "bool", "", "1 on a frame the state changes"),
                *(Port(f"{s.name}_time", "scalar", "", f"seconds since {s.name!r} was entered (rate 1 while active)")
                  for s in self.states),
                *(Port(f"{s.name}_weight", "scalar", "", f"weight of {s.name!r} in the pose and its rate (1/s): 1 while "
                       "active, a crossfade's smoothstep while one runs") for s in self.states))

    def transition_rows(self):
        """The transitions in the order tried (priority, then file order) as (declaration index, ROW values)."""
        index = {s.name: i for i, s in enumerate(self.states)}
        conds = {name: c for c, (name, _) in enumerate(self.conditions())}
        order = sorted(range(len(self.transitions)), key=lambda k: (self.transitions[k].priority, k))
        rows = []
        for k in order:
            t = self.transitions[k]
            rows.append((k, (ANY if t.source == "any" else index[t.source], index[t.to],
                             -1 if t.when is None else conds[t.when],
                             -UNBOUNDED if t.above is None else t.above, UNBOUNDED if t.below is None else t.below,
                             cut_seconds(t.duration), BLENDS.index(t.blend),
                             min(halflife_rate(cut_seconds(t.halflife)), 1e300))))
        return rows

    def params(self, ctx=None):
        n = len(self.states)
        index = {s.name: i for i, s in enumerate(self.states)}
        rows = self.transition_rows()
        row_of = {k: r for r, (k, _) in enumerate(rows)}
        pairs = [(ANY if t.source == "any" else index[t.source], index[t.to]) for t in self.transitions]
        table = next_transitions(n, pairs)  # declaration indices; the kernel reads rows in the order tried
        table = np.vectorize(lambda k: row_of[k] if k >= 0 else -1, otypes=[np.float64])(table) if n else table
        ids = ctx.event_names().id if ctx is not None else (lambda name: 0)
        head = PAR.pack(states=n, conditions=len(self.conditions()), transitions=len(rows),
                        hops=self.max_transitions_per_frame, jump=cut_seconds(self.jump_duration),
                        source=ctx.event_source(self) if ctx is not None else -1, on_enter=ids("entered"),
                        on_leave=ids("left"), on_jump=ids("travel_jump"))
        kinds = [BOOL if kind == "bool" else SCALAR for _, kind in self.conditions()]
        return np.concatenate([head, np.asarray(kinds, np.float64),
                               np.asarray([v for _, r in rows for v in r], np.float64).reshape(-1),
                               np.asarray(table, np.float64).reshape(-1),
                               np.asarray([s.reset_on_enter for s in self.states], np.float64),
                               np.asarray([ids(s.name) for s in self.states], np.float64)])

    def early_ports(self):
        """The conditions and travel are read, and the state and its times written, before the states' nodes run."""
        return ((*(name for name, _ in self.conditions()), "travel"),
                ("state", "time_in_state", "changed", *(f"{s.name}{end}" for end in ("_time", "_weight")
                                                        for s in self.states)))

    def input_weights(self):
        """Each state's pose and motion at its ``<state>_weight`` (the early kernel's, ``state_weights``)."""
        return {f"{s.name}{end}": Weight(f"{s.name}_weight") for s in self.states for end in ("", "_motion")}

    def branch_bits(self):
        """Each state's pose and motion inputs are needed only while it is active (bit: its index)."""
        return {f"{s.name}{end}": i for i, s in enumerate(self.states) for end in ("", "_motion")}

    def branch_conditions(self):
        """A condition only transitions out of one state read (not "any") is needed only while that state is active."""
        index, used = {s.name: i for i, s in enumerate(self.states)}, {}
        for t in self.transitions:
            if t.when is not None:
                used.setdefault(t.when, set()).add(t.source)
        return {name: index[src.pop()] for name, src in used.items() if len(src) == 1 and "any" not in src}

    def state(self, ctx, time=0.0):
        """At the start state, no travel, no previous output: the first frame shows the start state's pose."""
        joints = len(ctx.skeleton)
        st = np.zeros(ST.SIZE + len(self.states) + JOINT.SIZE * joints + TAIL.SIZE, np.float64)
        st[ST.cur] = [s.name for s in self.states].index(self.start)
        st[ST.target], st[ST.last_travel], st[ST.fade_from] = -1.0, -1.0, -1.0
        st[ST.why] = reason_id("state_left")
        return st

    def warnings(self):
        """A line per state no chain of transitions reaches from ``start`` (a transition ``from: "any"`` reaches its
        target from every other state): only travel's jump gets there."""
        import networkx as nx

        from animgraph.travel import transition_graph

        index = {s.name: i for i, s in enumerate(self.states)}
        graph = transition_graph(len(self.states), [(ANY if t.source == "any" else index[t.source], index[t.to])
                                                     for t in self.transitions])
        reached = nx.descendants(graph, index[self.start]) | {index[self.start]}
        return [f"state {s.name!r} cannot be reached from start {self.start!r} by any transition (only a travel "
                f"jump enters it)" for i, s in enumerate(self.states) if i not in reached]


# ---------------------------------------------------------------- op


class _Joints:
    """The part of a plan's build context a state machine's state needs: a skeleton of ``joints`` joints."""

    def __init__(self, joints):
        self.skeleton = range(joints)


class StateMachinePlayer:
    """A state machine without a graph, on poses of any batch shape (each item its own machine): the node's kernel.

    ``StateMachinePlayer(start="idle", states=[{"name": "idle"}, ...], transitions=[{"from": "idle", ...}])`` takes
    the node's fields; ``update(poses, conditions, dt, travel=None)`` takes ``{state: Pose}`` (local, one shape) and
    ``{condition: value}`` (numbers or bools, shared by the items) and returns the output pose; ``state`` names the
    active state of the first item.
    """

    def __init__(self, **fields):
        self.node = StateMachine.model_validate({"id": "state_machine", "type": "state_machine", **fields})
        self.par = self.node.params()
        self.conds = self.node.conditions()
        n, m = len(self.node.states), len(self.conds)
        self.ins = np.full(n + m + 1 + n, -1, dtype=np.int64)  # poses in slots 0..n-1; signals in 2-float blocks
        self.ins[:n] = np.arange(n)
        self.ins[n:n + m] = np.arange(m) * 2
        self.ins[n + m] = 2 * m  # travel; no root motion inputs
        motion = 2 * m + 5 + 4 * n  # after the states' times and weights
        self.outs = np.asarray([n, motion, 2 * m + 1, 2 * m + 2, 2 * m + 4] + [2 * m + 5 + 2 * s for s in range(2 * n)],
                               np.int64)
        self.sig = np.zeros(motion + MOTION)
        self.rows = None  # per batch item, the node's state row

    @property
    def state(self):
        """The active state's name (of the first item; the start state before the first update)."""
        return self.node.start if self.rows is None else self.node.states[int(self.rows[0][ST.cur])].name

    def update(self, poses, conditions, dt, travel=None):
        """The output pose after ``dt`` s with ``poses`` ({state: Pose}) and ``conditions`` ({name: value})."""
        names = [s.name for s in self.node.states]
        if not isinstance(poses, dict) or set(poses) != set(names):
            raise ValueError(f"poses must be a dict naming every state once: {', '.join(names)}")
        items = [pose_arg(poses[name], f"poses[{name!r}]") for name in names]
        if len({(p.batch, p.joints) for p in items}) != 1:
            raise ValueError("state poses must have one batch shape and one skeleton")
        dt = number(dt, "dt", 0.0)
        for c, (name, _) in enumerate(self.conds):
            if name not in conditions:
                raise ValueError(f"condition {name!r} has no value")
            self.sig[2 * c] = float(number(conditions[name], name))
        self.sig[2 * len(self.conds)] = -1.0 if travel is None else float(number(travel, "travel"))
        batch, joints = items[0].batch, items[0].joints
        count = int(np.prod(batch, dtype=np.int64))
        if self.rows is None or self.rows.shape[0] != count:
            self.rows = np.tile(self.node.state(_Joints(joints)), (count, 1))
        out = Pose.identity(joints, batch)
        per_state, shown = [p.items() for p in items], out.items()  # kernel tuples per batch item (views of out)
        for b in range(count):
            slots = tuple(np.stack([q[b][c] for q in per_state] + [shown[b][c]]).astype(np.float32) for c in range(6))
            state_machine_decide(self.ins, self.outs, self.par, self.rows[b], slots, self.sig, (), dt)
            state_machine_node(self.ins, self.outs, self.par, self.rows[b], slots, self.sig, (), dt)
            for c in range(6):
                shown[b][c][...] = slots[c][len(items)]
        return out


def verify_state_machine(m, t, h, rng):
    """Two states (the clip, the backwards clip) switched ``lag`` s before t, and back mid-transition half the time;
    a stencil per blend (inertialize, crossfade, dead_blend)."""
    return [switched_stencil(m, t, h, rng, blend) for blend in BLENDS]


def switched_stencil(m, t, h, rng, blend):
    """One verify stencil of a two-state machine whose transitions blend by ``blend``."""
    sm = StateMachinePlayer(start="a", states=[{"name": "a"}, {"name": "b"}],
                            transitions=[{"from": "a", "to": "b", "when": "go", "duration": 0.4, "blend": blend},
                                         {"from": "b", "to": "a", "when": "back", "duration": 0.4, "blend": blend}])
    lag = rng.uniform(3 * FRAME, 0.4 - (STEPS[-1] + 1) * h)
    start = t - lag
    flags = {"go": False, "back": False}

    def step(s, dt):
        return sm.update({"a": m.pose(s), "b": m.other(s)}, flags, dt)

    step(start - FRAME, 0.0)  # the first frame shows the start state
    flags["go"] = True
    step(start, FRAME)  # a -> b: the offset from a's pose carried one frame on
    flags["go"] = False
    if rng.random() < 0.5:  # interrupted mid-transition: b -> a from the current output
        mid = start + (lag - 2 * FRAME) * rng.uniform(0.2, 0.6)  # the stencil starts a frame or more after it
        advance(step, start, mid)
        flags["back"] = True
        step(mid + FRAME, FRAME)
        flags["back"] = False
        start = mid + FRAME
    return play(step, start, t, h)


StateMachine.OP, StateMachine.VERIFY = StateMachinePlayer, verify_state_machine
