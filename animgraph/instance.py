"""A running plan: ``plan.instance() -> Instance``, one per set of characters.

``inst.step(dt, inputs)`` writes the inputs into the signal buffer, makes one call
into the compiled executor for all B characters and returns a dict keyed by
output node id:

- a pose output is a ``Pose`` of shape (J, ...) when batch == 1 and (B, J, ...)
  when batch > 1;
- a signal output is a float64 array (value then rate: scalar ``[x, dx]``, vec3
  ``[p(3), v(3)]``, quat ``[q(4), ang(3)]``, int/bool ``[v]``, motion ``[vel(3), ang(3)]``,
  trajectory ``[value(12), rate(12)]``) of shape (n,) or (B, n).

The returned dict and its arrays are views into the instance's buffers, rewritten
by the next step (copy what you keep: ``pose.copy()``, ``arr.copy()``).  This keeps
``step`` to a few microseconds of Python.

Inputs (by input node id) are sticky: a value stays until set again.  A value is a
number or array, or a tuple ``(value, rate)``; a scalar or single vector applies to
every character, an array with a leading axis of length B sets each.  A scalar or vec3
set without a rate takes the rate of its change over each step (``nodes/input.py``);
other kinds have rate 0.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numba
import numpy as np

from . import events
from .errors import GraphError
from .limits import DT_MAX, DT_MIN, SIGNAL_MAX, TIME_MAX
from .executor import OP_INS, OP_OUTS, OP_OUTS_END, OP_PAR, OP_PAR_END, OP_STATE, OP_STATE_END
from .node import SIGNAL_SIZE, OpSlices
from .pose import Pose

PARALLEL_MIN_BATCH = 16  # below this, threads cost more than they save
LANES_ENV = "ANIMGRAPH_LANES"  # "0": never run on lane tiles (the per-character executor only)



def _entry(dispatcher, key):
    """The function to call per frame: the compiled entry point (skips numba's type dispatch).

    Our arguments always have the same types, so after one typed call through the
    dispatcher its single overload's entry point is safe and saves a microsecond.
    ``key``: the executor's (on a cold cache, its compile helper shares the kernels first).
    """

    def first(*args):
        from . import warm

        warm.share(key)
        dispatcher(*args)
        warm.finish()  # the executor is compiled: a compile helper still running has nothing left to add
        overloads = list(getattr(dispatcher, "overloads", {}).values())
        return getattr(overloads[0], "entry_point", dispatcher) if len(overloads) == 1 else dispatcher

    return first


def _pose_view(arrays, slot, batch):
    """A Pose whose arrays are views of pose slot ``slot`` (no copy, no validation)."""
    pose = Pose.__new__(Pose)
    for name, a in zip(("pos", "rot", "scl", "vel", "ang", "svl"), arrays):
        setattr(pose, name, a[0, slot] if batch == 1 else a[:, slot])
    return pose


class EventList(list):
    """``Instance.events()``: a list of ``Event`` records with ``lost``, the events per character that found no room."""

    lost: np.ndarray


@dataclass(frozen=True, eq=False)
class State:
    """A snapshot from ``Instance.save_state``: copies of every buffer that persists between frames."""

    plan: object  # the plan whose layout the buffers follow
    chars: np.ndarray  # signals (inputs included) then node state, per character
    vecs: np.ndarray  # pose slots: pos scl vel ang svl
    rots: np.ndarray  # pose slots: rot
    par: np.ndarray  # parameters (set_param writes them)
    nodes: dict  # node models by id (set_param replaces them)


class Instance:
    """One plan's running state for B characters: pose slots, signals, state, parameters."""

    def __init__(self, plan, parallel=None, python=False, lanes=None):
        from . import lanes as lane_tiles

        self.plan = plan
        self.batch = b = plan.batch
        j, s, n_sig = plan.joints, plan.n_slots, len(plan.sig_init)
        if parallel is None:
            parallel = b >= PARALLEL_MIN_BATCH
        if lanes is None:
            lanes = parallel and b >= lane_tiles.LANES and os.environ.get(LANES_ENV, "1") != "0"
        self.lanes = lanes = bool(lanes) and not python
        # Lane tiles run whole tiles: the characters past the batch are padding, evaluated but never output;
        # each step they take the last character's signals (inputs included), their state is their own.
        rows = lane_tiles.tile_count(b) * lane_tiles.LANES if lanes else b
        # Per character, every slot's pos scl vel ang svl in one array, rot in another.
        self.vecs = np.zeros((rows, 5, s, j, 3), np.float32)
        self.rots = np.zeros((rows, s, j, 4), np.float32)
        self.rots[..., 0] = 1.0
        self.vecs[:, 1] = 1.0
        v = self.vecs[:b]
        self.pose = (v[:, 0], self.rots[:b], v[:, 1], v[:, 2], v[:, 3], v[:, 4])
        self.chars = np.zeros((rows, n_sig + plan.n_state))
        self.chars[:, :n_sig] = plan.sig_init
        self.chars[:, n_sig:] = plan.initial_state
        self.sig, self.st = self.chars[:b, :n_sig], self.chars[:b, n_sig:]
        self._padded, self._n_sig = rows > b, n_sig
        self.par = plan.par.copy()
        self.nodes = dict(plan.nodes)
        if python:  # the reference: the op table walked in Python, calling the same kernels
            from .executor import walk_in_python

            self._call = walk_in_python
        elif lanes:
            self._call = _entry(plan.executor.run_tiles, plan.executor.KEY)
        else:
            self._call = _entry(plan.executor.run_parallel if parallel else plan.executor.run_serial, plan.executor.KEY)
        self._args = (plan.table, self.par, self.chars, self.vecs, self.rots, plan.clipbuf)
        if lanes:
            # One tile per thread, reused for every tile it walks (``animgraph.tilewalk``): scratch within a frame.
            self.tiles = lane_tiles.identity_tiles(min(numba.config.NUMBA_NUM_THREADS, rows // lane_tiles.LANES), s, j)
            if plan.reuse_slots:  # the output slots; a debug plan copies every slot out (``port``)
                keep = [loc for kind, loc, _ in plan.outputs.values() if kind == "pose"]
            else:
                keep = range(s)
            keep = sorted(keep)
            # The outputs in arrays of their own, per field (characters, joints, 3|4): see animgraph.tilewalk.
            self._keep = {slot: k for k, slot in enumerate(keep)}
            self.out_vecs = np.ascontiguousarray(self.vecs[:, :, keep].transpose(2, 1, 0, 3, 4))
            self.out_rots = np.ascontiguousarray(self.rots[:, keep].transpose(1, 0, 2, 3))
            self._args += (self.tiles, plan.pose_io, np.array(keep, np.int64), self.out_vecs, self.out_rots)
        else:
            self._keep = {}
        self._everyone = np.arange(b)
        self._steps = 0  # steps taken: the index the next step's events carry
        self._events = plan.event_capacity > 0
        self._step_column = self.chars[:, events.STEP]  # a view: stamping it costs a fill, not an indexing
        self._ops = {nid: self._slices(i, nid) for i, nid in enumerate(plan.order)}  # what node hooks act on
        self._inputs = {nid: self.nodes[nid].write_input(self._ops[nid], self._everyone) for nid in plan.inputs}
        # Inputs of pruned nodes are accepted and ignored.
        self._known = {n.id for n in plan.graph.nodes if getattr(n, "GRAPH_INPUT", False)}
        self.outputs = {}
        for nid, (kind, loc, _) in plan.outputs.items():
            if kind == "pose":
                self.outputs[nid] = self._slot_view(loc)
            else:
                n = SIGNAL_SIZE[kind]
                self.outputs[nid] = self.sig[0, loc:loc + n] if b == 1 else self.sig[:, loc:loc + n]

    # ------------------------------------------------------------ per frame

    def step(self, dt, inputs=None):
        """Advance every character by ``dt`` seconds (0..1000; below ``DT_MIN`` a pause); returns the outputs (views,
        see module doc).

        A step that fails (bad ``dt`` or any bad input) changes nothing.
        """
        if type(dt) is not float and not (isinstance(dt, (int, float, np.integer, np.floating))
                                          and not isinstance(dt, (bool, np.bool_))):
            raise GraphError(f"step dt must be a number of seconds, got {type(dt).__name__} {dt!r}",
                             file=self.plan.file)
        if not 0.0 <= dt <= DT_MAX:
            raise GraphError(f"step dt must be a finite number of seconds in [0, {DT_MAX:g}], got {dt!r}",
                             file=self.plan.file)
        if inputs:
            self.set_inputs(inputs)
        if self._padded:  # padded lanes follow the last character's inputs (a lane-wide branch then agrees)
            self.chars[self.batch:, :self._n_sig] = self.chars[self.batch - 1, :self._n_sig]
        if self._events:
            self._step_column.fill(self._steps)
        call = self._call(*self._args, float(dt) if dt >= DT_MIN else 0.0)
        if call is not None:  # the first call compiled or loaded the executor: keep its entry point
            self._call = call
        self._steps += 1
        return self.outputs

    def events(self):
        """The events of every step since the last call (``animgraph.events.Event`` records), in time order per
        character; emptied.  ``.lost`` on the list: per character, the events that found its block full (a
        GraphWarning says so: raise ``compile(..., events=N)`` or call more often)."""
        if not self._events:
            found, lost = [], np.zeros(self.batch, np.int64)
        else:
            found, lost = events.read(self.sig, self.plan.order, self.plan.event_names, self.batch)
            self.chars[self.batch:, events.COUNT] = self.chars[self.batch:, events.LOST] = 0.0  # padded lanes'
        out = EventList(found)
        out.lost = lost
        if lost.any():
            from .check import GraphWarning

            where = f"{self.plan.file}: " if self.plan.file else ""
            warnings.warn(f"{where}{int(lost.sum())} events lost: a character's block holds "
                          f"{self.plan.event_capacity} between two events() calls", GraphWarning, stacklevel=2)
        return out

    def set_inputs(self, inputs):
        """Write input values (and rates) per character: ``{"w": 0.3, "target": (pos, vel)}``.

        Every value is checked before any is written: on a GraphError (naming the input) nothing changed.
        Values beyond ±1e9 are refused; scalar, int and vec3 values are clamped to the input's [min, max].
        """
        if not isinstance(inputs, dict):
            raise GraphError(f"inputs must be a dict {{input id: value}}, got {type(inputs).__name__}",
                             file=self.plan.file)
        writes = []
        for name, value in inputs.items():
            check = self._inputs.get(name)
            if check is not None:
                writes.append(check(value))
            elif name not in self._known:
                known = ", ".join(sorted(self._inputs)) or "none"
                raise GraphError(f"unknown input {name!r} (inputs: {known})", str(name), None, self.plan.file)
        for write in writes:
            write()

    def _slices(self, i, nid):
        """Op ``i``'s OpSlices: views of this instance's buffers for node ``nid``'s hooks."""
        row, plan = self.plan.ops[i], self.plan
        s0, s1 = int(row[OP_STATE]), int(row[OP_STATE_END])
        return OpSlices(nid, plan.file, self.sig, self.st[:, s0:s1], self.par[row[OP_PAR]:row[OP_PAR_END]],
                        plan.io[row[OP_INS]:row[OP_OUTS]], plan.io[row[OP_OUTS]:row[OP_OUTS_END]], self.pose,
                        plan.initial_state[s0:s1])

    # ------------------------------------------------------------ edits

    def set_param(self, node_id, field, value):
        """Change a node's field without re-planning (GraphError if the layout would change)."""
        file = self.plan.file
        node = self.nodes.get(node_id)
        if node is None:
            raise GraphError("not a scheduled node of this plan", node_id, field, file)
        data = node.model_dump()
        if field not in data or field in ("id", "type"):
            raise GraphError(f"unknown or fixed field {field!r}", node_id, field, file)
        data[field] = value
        try:
            new = type(node).model_validate(data)
        except Exception as e:  # pydantic ValidationError: first message
            msg = e.errors()[0]["msg"] if hasattr(e, "errors") else str(e)
            raise GraphError(msg, node_id, field, file) from None
        if new.inputs() != node.inputs() or new.outputs() != node.outputs():
            raise GraphError("this change alters the node's ports: compile the graph again", node_id, field, file)
        i = self.plan.op(node_id)
        a, b, s0, s1 = self.plan.ops[i, [OP_PAR, OP_PAR_END, OP_STATE, OP_STATE_END]]
        p = self.plan.node_params(new)
        s = self.plan.node_state(new, 0.0)
        if len(p) != b - a or len(s) != s1 - s0:
            raise GraphError("this change alters the parameter or state layout: compile the graph again",
                             node_id, field, file)
        updates = []
        for (nid, port), (off, kind) in self.plan.constants.items():
            if nid == node_id and port == field:
                if value is None:
                    raise GraphError("the unlinked input would lose its value: compile the graph again",
                                     node_id, field, file)
                updates.append((off, self.plan.constant_block(kind, getattr(new, field))))
        self.par[a:b] = p
        for off, block in updates:
            self.sig[:, off:off + len(block)] = block
        self.nodes[node_id] = new
        if node_id in self._inputs:  # its checks follow the new fields (bounds)
            self._inputs[node_id] = new.write_input(self._ops[node_id], self._everyone)

    def port(self, node_id, port):
        """A view of output ``port`` of node ``node_id`` after the last step: a Pose, or the float64 signal block.

        Shapes as ``step``'s outputs.  A pose output of a node other than a graph output is
        only readable in a debug plan (``compile(..., reuse_slots=False)``): otherwise its
        slot may hold another node's pose by now.
        """
        plan, file = self.plan, self.plan.file
        if node_id not in plan.nodes:
            raise GraphError("not a scheduled node of this plan", node_id, port, file)
        ports = plan.checked.outputs[node_id]
        if port not in ports:
            raise GraphError(f"unknown output port {port!r} (outputs: {', '.join(ports) or 'none'})",
                             node_id, port, file)
        loc, kind = plan.located[(node_id, port)], ports[port].signal
        if kind != "pose":
            n = SIGNAL_SIZE[kind]
            return self.sig[0, loc:loc + n] if self.batch == 1 else self.sig[:, loc:loc + n]
        if plan.reuse_slots and node_id not in plan.outputs:
            raise GraphError("this pose slot is reused within the frame: compile with reuse_slots=False to read it",
                             node_id, port, file)
        return self._slot_view(loc)

    def _slot_view(self, slot):
        """Pose slot ``slot`` as a Pose of views: the lane executor's output arrays for an output slot."""
        k = self._keep.get(slot)
        if k is None:
            return _pose_view(self.pose, slot, self.batch)
        v, r = self.out_vecs[k, :, :self.batch], self.out_rots[k, :self.batch]
        return _pose_view(tuple(a[:, None] for a in (v[0], r, v[1], v[2], v[3], v[4])), 0, self.batch)

    def _outputs_to_slots(self):
        """Lane executor: the output arrays copied back into the characters' slots, where node hooks read poses."""
        for slot, k in self._keep.items():
            self.vecs[:, :, slot] = self.out_vecs[k].transpose(1, 0, 2, 3)
            self.rots[:, slot] = self.out_rots[k]

    def _slots_to_outputs(self):
        """Lane executor: the output arrays as the characters' slots hold them (after ``load_state``)."""
        for slot, k in self._keep.items():
            self.out_vecs[k] = self.vecs[:, :, slot].transpose(1, 0, 2, 3)
            self.out_rots[k] = self.rots[:, slot]

    # ------------------------------------------------------------ snapshots

    def save_state(self):
        """A snapshot of everything the next step reads (signals, inputs, state, pose slots, parameters)."""
        self._outputs_to_slots()
        return State(self.plan, self.chars.copy(), self.vecs.copy(), self.rots.copy(), self.par.copy(),
                     dict(self.nodes))

    def load_state(self, state):
        """Restore a ``save_state`` snapshot of this plan in place (output views stay valid): steps repeat exactly.

        Refused with a GraphError, changing nothing, unless every buffer is an array of the
        saved dtype and shape, finite, with unit rotations (norm within 1e-3) in the pose slots.
        """
        file = self.plan.file
        if not isinstance(state, State):
            raise GraphError(f"load_state takes what save_state returned, got {type(state).__name__}", file=file)
        if state.plan is not self.plan:
            raise GraphError("load_state: the state was saved from another plan (compile again means a new state)",
                             file=file)
        pairs = (("chars", self.chars), ("vecs", self.vecs), ("rots", self.rots), ("par", self.par))
        for name, mine in pairs:  # all checked first: a refused state changes nothing
            saved = getattr(state, name)
            if not isinstance(saved, np.ndarray):
                raise GraphError(f"load_state: state.{name} must be a numpy array, got {type(saved).__name__}",
                                 file=file)
            if saved.dtype != mine.dtype or saved.shape != mine.shape:
                raise GraphError(f"load_state: state.{name} must be {mine.dtype} of shape {mine.shape} as saved, "
                                 f"got {saved.dtype} {saved.shape}", file=file)
            if not np.all(np.isfinite(saved)):
                raise GraphError(f"load_state: state.{name} holds NaN or infinite values", file=file)
        norm = np.sqrt(np.einsum("...i,...i->...", state.rots.astype(np.float64), state.rots.astype(np.float64)))
        if not np.all(np.abs(norm - 1.0) <= 1e-3):
            worst = float(norm.flat[int(np.argmax(np.abs(norm - 1.0)))])
            raise GraphError(f"load_state: state.rots holds a rotation of norm {worst:.6g}, not a unit quaternion",
                             file=file)
        if not isinstance(state.nodes, dict) or set(state.nodes) != set(self.nodes):
            raise GraphError("load_state: state.nodes must be the saved dict of node models by id", file=file)
        for name, mine in pairs:
            np.copyto(mine, getattr(state, name))
        self._slots_to_outputs()
        self.nodes = dict(state.nodes)
        self._inputs = {nid: self.nodes[nid].write_input(self._ops[nid], self._everyone) for nid in self.plan.inputs}

    def reset(self, time=0.0, characters=None):
        """Set every node's state as at ``time`` seconds (scalar, or one per character) for the characters given (all).

        The world placement of pose outputs (see ``teleport``) is kept: a reset restarts
        the animation, not where the character stands.  Inputs keep their values.
        """
        rows = self._rows(characters)
        try:
            times = np.broadcast_to(np.asarray(time, dtype=np.float64), rows.shape)
        except (TypeError, ValueError):
            raise GraphError(f"reset time must be a number of seconds or one per character, got {time!r}",
                             file=self.plan.file) from None
        if not np.all(np.abs(times) <= TIME_MAX):
            raise GraphError(f"reset time must be finite seconds in [-{TIME_MAX:g}, {TIME_MAX:g}], got {time!r}",
                             file=self.plan.file)
        self._outputs_to_slots()
        self._stamp()
        for t in np.unique(times):
            state, chosen = self.plan.state(float(t), self.nodes), rows[times == t]
            for (nid, op), (_, s0, s1) in zip(self._ops.items(), self.plan._state_layout):
                self.nodes[nid].reset(op, chosen, state[s0:s1])  # the node's hook: by default a copy

    def _stamp(self):
        """Events a hook writes between steps (a range ended by a reset) belong to the next step, at its start."""
        if self._events:
            self._step_column.fill(self._steps)

    def _rows(self, characters):
        """Character indices (all when None); GraphError unless whole numbers in [0, batch)."""
        if characters is None:
            return np.arange(self.batch)
        rows = np.atleast_1d(np.asarray(characters))
        if rows.ndim != 1 or rows.dtype.kind not in "iu" or not np.all((rows >= 0) & (rows < self.batch)):
            raise GraphError(f"characters must be indices in [0, {self.batch}), got {characters!r}",
                             file=self.plan.file)
        return rows

    def teleport(self, pos_delta, rot_delta=None, characters=None):
        """Move characters in the world: positions by ``pos_delta`` (m), turned by ``rot_delta`` about the root.

        The world placement held by each pose output changes; it has no velocity, so
        the next frame's velocities are unchanged (rotated by ``rot_delta`` only).
        """
        rows = self._rows(characters)
        try:
            d = np.broadcast_to(np.asarray(pos_delta, dtype=np.float64), (len(rows), 3))
            r = np.broadcast_to(np.asarray((1.0, 0.0, 0.0, 0.0) if rot_delta is None else rot_delta, np.float64),
                                (len(rows), 4))
        except (TypeError, ValueError):
            raise GraphError("teleport takes pos_delta (3,) or (n, 3) in m and rot_delta (4,) or (n, 4) w-first",
                             file=self.plan.file) from None
        if not (np.all(np.abs(d) <= SIGNAL_MAX) and np.all(np.abs(r) <= SIGNAL_MAX)):
            raise GraphError(f"teleport must be finite and within ±{SIGNAL_MAX:g}", file=self.plan.file)
        if not np.all(np.linalg.norm(r, axis=1) > 1e-6):
            raise GraphError("teleport rot_delta must be a non-zero quaternion (w, x, y, z)", file=self.plan.file)
        self._outputs_to_slots()
        self._stamp()
        for nid, op in self._ops.items():  # the nodes' hooks: the output node moves its placement
            self.nodes[nid].teleport(op, rows, d, r)
