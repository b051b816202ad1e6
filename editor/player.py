"""The editor's preview player: plays a debug plan, records it, scrubs and replays it exactly, finds pops.

Frame ``f`` is the pose at ``time = t0 + f·dt``: frame 0 is the first step after
``reset(t0)`` (a step samples at its clock, then advances it by ``dt``).  Every frame
records the inputs it was stepped with, the world pose of the shown output and the
channel values; every ``every`` frames also the instance's state (``save_state``).
A seek restores the nearest recorded state at or before the frame and replays the
recorded inputs forward, so a scrub never re-runs from the start and never steps
backwards.  Stepping on from a recorded frame replays the recording (its inputs
included) until an input is set to something else: then the recording ends there and
a new future is recorded.  No dearpygui here: the window draws what this holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from animgraph.errors import GraphError
from animgraph.executor import OP_INS, OP_OUTS, OP_PAR, OP_PAR_END, OP_STATE, OP_STATE_END
from animgraph.nodes.sample import PAR as SAMPLE_PAR
from animgraph.nodes.sample import sample_time
from animgraph.pops import PopFinder

_WIDTH = {"scalar": 1, "int": 1, "bool": 1, "vec3": 3, "quat": 4}  # value widths of plottable signals
_AXES = {3: ".x .y .z".split(), 4: ".w .x .y .z".split()}
PLOTTED = ("scalar", "int", "bool")  # node signals given a channel


@dataclass
class _Frame:
    """One recorded frame."""

    inputs: dict  # the inputs it was stepped with
    dt: float  # s, of the step that reached it
    state: object  # Instance.save_state() every ``every`` frames, else None
    pos: np.ndarray  # (J, 3) world positions (m) of the shown output
    vel: np.ndarray  # (J, 3) world velocities (m/s)
    values: np.ndarray  # one value per channel
    pop: object  # the Pop found on this frame, or None
    ended: bool  # every ``loop: false`` sample is at or past its clip's end after this frame (False: none)
    events: list  # the events (``animgraph.events.Event``) of the step that reached it


class Player:
    """Plays ``plan`` (batch 1, ``reuse_slots=False``) at ``dt`` s per frame, keeping up to ``keep`` frames.

    ``output``: the pose output shown (the first one by default); ``time``: the time (s) of
    frame 0; ``every``: frames between recorded states (a state of the locomotion debug plan
    is 30 kB: one a frame for a minute would be 100 MB; a scrub replays at most ``every - 1``
    frames, each a few microseconds); ``trail``: frames of root positions in ``trail``.
    """

    def __init__(self, plan, dt=1 / 60, keep=3600, output=None, time=0.0, every=10, trail=120):
        if not (isinstance(dt, (int, float)) and math.isfinite(dt) and 0.0 < dt <= 1.0):
            raise GraphError(f"player dt must be seconds in (0, 1], got {dt!r}", file=plan.file)
        for name, value in (("keep", keep), ("every", every), ("trail", trail)):
            if not (isinstance(value, int) and value >= 1):
                raise GraphError(f"player {name} must be a whole number >= 1, got {value!r}", file=plan.file)
        self.dt, self.keep, self.every, self.trail_frames = float(dt), keep, min(every, keep), trail
        self.t0 = float(time)
        self.inputs = {}
        self._use(plan, output)
        self._restart(0)

    # ------------------------------------------------------------ what the window reads

    @property
    def time(self):
        """Seconds at the current frame."""
        return self.t0 + self.frame * self.dt

    @property
    def pos(self):
        """(J, 3) world positions (m) of the shown output at the current frame."""
        return self._at(self.frame).pos

    @property
    def vel(self):
        """(J, 3) world velocities (m/s) of the shown output at the current frame."""
        return self._at(self.frame).vel

    @property
    def fd(self):
        """(pos, vel) of the previous frame, vel the central difference ``(x[t] - x[t-2]) / 2dt``; None without both."""
        if self.frame - 2 < self.first:
            return None
        a, b, c = self._at(self.frame - 2), self._at(self.frame - 1), self._at(self.frame)
        return b.pos, (c.pos - a.pos) / (b.dt + c.dt)

    @property
    def prev_vel(self):
        """(J, 3) the propagated world velocities of the previous frame (drawn beside ``fd``), or None."""
        return self._at(self.frame - 1).vel if self.frame > self.first else None

    @property
    def trail(self):
        """(N, 3) root positions (m) over the last ``trail_frames`` recorded frames up to the current one."""
        i = self.frame - self.first
        return np.array([r.pos[self._root] for r in self._rec[max(0, i - self.trail_frames + 1):i + 1]])

    @property
    def pops(self):
        """The Pops found so far in the recording, in frame order (for the timeline)."""
        return [r.pop for r in self._rec if r.pop is not None]

    def channels(self):
        """Channel names: ``speed:<joint>``, ``input:<id>`` (``.x`` ... per component), ``signal:<node>.<port>``
        (scalar, int and bool outputs of every node) and ``pop:excess`` (the pop finder's worst ratio)."""
        return list(self._names)

    def history(self, name):
        """The values of channel ``name`` over the recorded frames: element i is frame ``first + i``."""
        k = self._index.get(name)
        if k is None:
            raise GraphError(f"unknown channel {name!r} (see Player.channels())", file=self.plan.file)
        return np.array([r.values[k] for r in self._rec])

    @property
    def last(self):
        """The last recorded frame: the timeline spans ``first`` .. ``last``."""
        return self.first + len(self._rec) - 1

    @property
    def finished(self):
        """Whether every ``loop: false`` sample had played to its clip's end by the current frame (and the frame
        before): where a looping preview starts again.  Never true for a graph without such a sample."""
        return self.frame > self.first and self._at(self.frame).ended and self._at(self.frame - 1).ended

    def events(self, last=None):
        """[(frame, Event)] of the recorded frames up to the current one (``last``: only that many, the newest)."""
        found = [(self.first + i, e) for i, r in enumerate(self._rec[:self.frame - self.first + 1]) for e in r.events]
        return found[-last:] if last else found

    def frames_recorded(self):
        """How many frames the recording holds (frames ``first`` .. ``first + n - 1``)."""
        return len(self._rec)

    # ------------------------------------------------------------ play

    def set_input(self, name, value):
        """Set a graph input for the coming frames (GraphError naming it if the value is refused)."""
        self.inst.set_inputs({name: value})
        self.inputs[name] = _frozen(value)
        self._touched = True

    def step(self):
        """One frame forward: along the recording unless an input was set otherwise, else a new recorded frame."""
        i = self.frame + 1 - self.first
        if i < len(self._rec):
            rec = self._rec[i]
            if rec.dt == self.dt and (not self._touched or _same(rec.inputs, self.inputs)):
                self._advance(rec.inputs, rec.dt)
                self.frame, self.inputs, self._touched = self.frame + 1, dict(rec.inputs), False
                return
            del self._rec[i:]  # an input was set otherwise: a new future from here
        if self._seen != self.frame:  # the finder compares with the frame we leave
            self.finder.reset()
            self.finder.observe(self.inst, self.frame, self.dt, self.time)
        self._advance(self.inputs, self.dt)
        self.frame += 1
        self._record()

    def seek(self, frame):
        """Go to ``frame``: a recorded state and a replay, steps past the recording, a restart before it."""
        if not (isinstance(frame, (int, np.integer)) and frame >= 0):
            raise GraphError(f"seek takes a frame number >= 0, got {frame!r}", file=self.plan.file)
        frame, last = int(frame), self.first + len(self._rec) - 1
        if frame < self.first:
            self._restart(frame)
        elif frame <= last:
            self._goto(frame)
        else:
            if self.frame != last:
                self._goto(last)
            while self.frame < frame:
                self.step()

    def reset(self):
        """Back to frame 0 (time ``t0``) with a new instance and an empty recording; inputs kept."""
        self._restart(0)

    def replan(self, plan, output=None):
        """Play ``plan`` (after an edit) from the current frame and time; inputs re-applied, recording restarted.

        The world placement of pose outputs that keep their id carries over: an edit does not move the character.
        """
        old = self.inst
        keep_output = output or (self.output if plan.outputs.get(self.output, ("",))[0] == "pose" else None)
        self._use(plan, keep_output)
        self.inst = plan.instance()
        self.inst.reset(self.time)
        for nid, (kind, _, so) in plan.outputs.items():
            was = old.plan.outputs.get(nid)
            if kind == "pose" and was is not None and was[0] == "pose":
                self.inst.st[:, so:so + 7] = old.st[:, was[2]:was[2] + 7]
        self._begin(self.frame)

    # ------------------------------------------------------------ inside

    def _use(self, plan, output):
        """Take ``plan``: its pop finder (which checks it), joints and channels."""
        if plan.batch != 1:
            raise GraphError(f"the player plays one character: compile with batch=1, not {plan.batch}", file=plan.file)
        self.finder = PopFinder(plan, output)
        self.plan, self.output = plan, self.finder.output
        self.joints = tuple(plan.skeleton.names)
        self.parents = np.asarray(plan.skeleton.parents, np.int64)
        self._root = int(np.flatnonzero(self.parents < 0)[0])
        self._names, self._reads = _channels(plan, self.joints)
        self._index = {name: k for k, name in enumerate(self._names)}
        self._clamped = _clamped_samples(plan)

    def _restart(self, frame):
        """A new instance reset to the time of ``frame``, which becomes the first recorded frame."""
        self.inst = self.plan.instance()
        self.inst.reset(self.t0 + frame * self.dt)
        self._begin(frame)

    def _begin(self, frame):
        """Apply the inputs (dropping those the plan refuses), evaluate ``frame`` and start the recording there."""
        for name, value in list(self.inputs.items()):
            try:
                self.inst.set_inputs({name: value})
            except GraphError:
                del self.inputs[name]  # the edit removed the input or changed its kind
        self.inst.step(self.dt)
        self._fresh = self.inst.events()
        self.frame = self.first = frame
        self._rec, self._seen, self._touched = [], None, False
        self.finder.reset()
        self._record()

    def _record(self):
        """Record the current (newest) frame; drop the oldest states' worth of frames beyond ``keep``."""
        pop = self.finder.observe(self.inst, self.frame, self.dt, self.time)
        pos, vel = self.finder.last  # the shown output in world space
        self._seen = self.frame
        values = np.concatenate([np.linalg.norm(vel, axis=1), self.inst.sig[0, self._reads], [self.finder.worst]])
        state = self.inst.save_state() if (self.frame - self.first) % self.every == 0 else None
        self._rec.append(_Frame(dict(self.inputs), self.dt, state, pos, vel, values, pop, self._ended(),
                                list(self._fresh)))
        self._touched = False
        if len(self._rec) > self.keep:  # the front must stay a recorded state
            del self._rec[:self.every]
            self.first += self.every

    def _goto(self, frame):
        """Move within the recording: from the nearest state at or before ``frame`` (or from here), replaying inputs."""
        i, here = frame - self.first, self.frame - self.first
        k = i - i % self.every
        if self._touched or not k <= here <= i:
            self.inst.load_state(self._rec[k].state)
            here, self._touched = k, False
        for g in range(here + 1, i + 1):
            self._advance(self._rec[g].inputs, self._rec[g].dt)
        self.frame, self.inputs, self._seen = frame, dict(self._rec[i].inputs), None

    def _ended(self):
        """Whether every ``loop: false`` sample is at or past the end it plays towards (False if there is none)."""
        if not self._clamped:
            return False
        sig, st = self.inst.sig[0], self.inst.st[0]
        for ins, par_at, state_at in self._clamped:
            par = self.inst.par[par_at]
            # The sampler's own rule for its time and rate (plain Python: nothing compiles here).
            t, rate = sample_time.py_func(ins, par, st[state_at], sig)
            end = (par[SAMPLE_PAR.frames] - 1) * par[SAMPLE_PAR.key_dt]
            if not (t >= end - 1e-9 if rate >= 0.0 else t <= 1e-9):
                return False
        return True

    def _advance(self, inputs, dt):
        if inputs:
            self.inst.set_inputs(inputs)
        self.inst.step(dt)
        self._fresh = self.inst.events()  # this step's (a replay's were recorded the first time)

    def _at(self, frame):
        return self._rec[frame - self.first]


def _channels(plan, joints):
    """Channel names and, past the speeds, their offsets into the signal buffer (the pop excess comes last)."""
    names, reads = [f"speed:{j}" for j in joints], []
    for nid, (off, kind) in plan.inputs.items():
        n = _WIDTH.get(kind, 0)
        names += [f"input:{nid}"] if n == 1 else [f"input:{nid}{axis}" for axis in _AXES.get(n, [])]
        reads += list(range(off, off + n)) if n in (1, 3, 4) else []
    for (nid, port), off in plan.located.items():
        kind = plan.checked.outputs[nid][port].signal
        if kind in PLOTTED and nid not in plan.inputs:
            names.append(f"signal:{nid}.{port}")
            reads.append(off)
    return names + ["pop:excess"], np.array(reads, np.int64)


def _clamped_samples(plan):
    """(ins, par slice, state slice) of each scheduled ``sample`` node with ``loop: false``."""
    out = []
    for i, nid in enumerate(plan.order):
        node = plan.nodes[nid]
        if node.type == "sample" and not node.loop:
            row = plan.ops[i]
            out.append((plan.io[row[OP_INS]:row[OP_OUTS]], slice(row[OP_PAR], row[OP_PAR_END]),
                        slice(row[OP_STATE], row[OP_STATE_END])))
    return out


def _frozen(value):
    """A copy of an input value that later changes to the caller's arrays cannot reach."""
    if isinstance(value, tuple):
        return tuple(_frozen(v) for v in value)
    return np.array(value) if isinstance(value, (np.ndarray, list)) else value


def _same(a, b):
    """Whether two input dicts hold the same values (arrays compared by value)."""
    if a.keys() != b.keys():
        return False
    return all(_same_value(a[k], b[k]) for k in a)


def _same_value(x, y):
    if isinstance(x, tuple) or isinstance(y, tuple):
        return isinstance(x, tuple) and isinstance(y, tuple) and len(x) == len(y) and all(map(_same_value, x, y))
    return np.array_equal(np.asarray(x), np.asarray(y))
