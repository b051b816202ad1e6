"""The planner: a checked graph -> flat tables the compiled executor walks.

- op table (int64, one row per scheduled node, topological order): kind and the
  ranges of its port locators, parameters and state (see ``animgraph.executor``);
- pose slots reused by liveness (a slot is free after its last reader has run; an
  op never writes a slot it reads; the slots of graph outputs are never reused, so
  they still hold last frame's result between steps); a debug plan
  (``reuse_slots=False``) gives every pose output a slot of its own, so that every
  node's output stays readable after a step (``Plan.located``, ``Instance.port``);
- a signal buffer layout: one block per signal output, one constant block per
  unlinked signal input whose node has a field of the same name (-1 otherwise);
- parameters float64, shared by the characters; state float64 per character;
- every asset in one frame array ``db = (clip_pos, clip_rot, clip_scl, parents)`` with a
  ``ClipRange`` per asset, plus the clip variants nodes ask for (``Node.clip_variants``,
  made by their type's ``clip_variant``: e.g. the sample node's root-relative clip), and
  each node type's per-frame ``CLIP_TABLES`` (the sample node's key table), computed here
  once per plan through the registry: the planner names no node module.
  The assets come from ``animgraph.assets`` (loaded once per file version).

``make_plan`` reads as its steps: check, load the clips, build the clip tables, lay out
the ports (slots and signals), lay out parameters and state, build the op table.

Planning never compiles: an edit re-plans in milliseconds.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from dataclasses import dataclass, field

import numpy as np

from .assets import load_assets
from .check import check, has_constant
from .errors import GraphError
from .events import DEFAULT_CAPACITY, MAX_EVENTS
from .events import block as events_block
from .executor import HEADER_WIDTH, OP_GATE, OP_GATE_END, OP_KIND, OP_WIDTH, kinds
from .graph import Graph
from .instance import Instance
from .limits import MAX_BATCH, signal_value  # noqa: F401 (MAX_BATCH: plan.MAX_BATCH for callers)
from .node import REGISTRY, SIGNAL_SIZE, BuildContext, ClipRange
from .pose import Skeleton


class PlanContext(BuildContext):
    """BuildContext plus the resolved pose space of each port."""

    def __init__(self, skeleton, clips, spaces, order=()):
        super().__init__(skeleton, clips, tuple(order))
        self.spaces = spaces

    def input_space(self, node, port):
        """'local', 'global' or 'any' (unresolved) for input ``port`` of ``node``."""
        return self.spaces.get((node.id, port, "in"), "any")

    def output_space(self, node, port):
        return self.spaces.get((node.id, port, "out"), "any")


@dataclass
class Plan:
    """Tables for the executor, built from a checked graph for ``batch`` characters."""

    graph: object
    batch: int
    skeleton: Skeleton
    clips: dict  # asset name -> ClipRange
    db: tuple  # (clip_pos, clip_rot, clip_scl, parents): what every kernel's db begins with
    tables: dict  # node type -> its CLIP_TABLES over the frame array (views of clipbuf)
    order: list  # node ids, one per op
    nodes: dict  # id -> node model (the scheduled ones)
    ops: np.ndarray
    io: np.ndarray
    pose_io: np.ndarray  # bool per io entry: a pose port (a slot), not a signal (the lane executor copies slots)
    par: np.ndarray
    n_state: int
    n_slots: int
    sig_init: np.ndarray
    table: np.ndarray  # int64: header, ops, io, parents (see animgraph.executor)
    clipbuf: np.ndarray  # float32: clip_pos, clip_rot, clip_scl, then every node type's tables, flattened
    inputs: dict  # input node id -> (offset of the block its caller writes: value, rate, no-rate flag; signal kind)
    outputs: dict  # output node id -> (signal kind, slot or offset, state offset)
    constants: dict  # (node id, port) -> (offset, signal kind): unlinked inputs fed from fields
    pruned: list
    warnings: list
    ctx: PlanContext
    checked: object
    executor: object = None
    located: dict = field(default_factory=dict)  # (node id, output port) -> pose slot or signal offset
    reuse_slots: bool = True  # False: no pose slot is shared, every node's output survives the step
    _state_layout: list = field(default_factory=list)  # (id, start, stop) per op
    # What a fresh instance holds per character: every op's initial state row (``ops[i, OP_STATE:OP_STATE_END]``),
    # which a compiled step may copy to reset chosen ops for chosen characters (``Node.RESET`` says when not enough).
    initial_state: np.ndarray = field(default_factory=lambda: np.zeros(0))
    event_names: object = None  # animgraph.events.Names: what the records' name and detail ids mean
    event_capacity: int = 0  # records per character in the event block at the start of the signals (0: none)

    @property
    def joints(self):
        return len(self.skeleton) if self.skeleton is not None else 0

    @property
    def file(self):
        return self.graph.path

    def op(self, node_id):
        """Op index of a scheduled node."""
        return self.order.index(node_id)

    def state(self, time=0.0, nodes=None):
        """Initial state (float64, one character) for a reset to ``time`` seconds."""
        nodes = nodes or self.nodes
        st = np.zeros(self.n_state)
        for nid, a, b in self._state_layout:
            s = _call(nodes[nid], "state", self.ctx, self.file, time)
            if s.shape != (b - a,):
                raise GraphError(f"state() returned {s.shape[0]} values, first {b - a}", nid, None, self.file)
            st[a:b] = s
        return st

    def running(self, node_id, st):
        """Whether the op of ``node_id`` ran in the last step, per character of ``st`` ((B, n_state) the instance's
        state): False while a branch it is needed only through is not live (``animgraph.gates``)."""
        from .gates import GATE, LIVE, MASK

        row = self.ops[self.op(node_id)]
        live = np.ones(st.shape[0], np.bool_)
        for k in range(row[OP_GATE], row[OP_GATE_END], GATE):
            live &= (st[:, self.io[k + LIVE]].astype(np.int64) & self.io[k + MASK]) != 0
        return live

    def instance(self, parallel=None, python=False, lanes=None):
        """A runnable Instance with its own state, signals, parameters and pose slots.

        ``parallel``: threads over characters (default: when batch >= 16); ``python``: walk
        the op table in Python instead of the compiled executor (a slow reference);
        ``lanes``: run tiles of ``lanes.LANES`` characters op by op (default: when parallel
        and batch >= LANES, unless the environment sets ``ANIMGRAPH_LANES=0``)."""
        from . import executor

        if self.executor is None or not executor.covers(self.executor, self.node_types):
            self.executor = executor.load(self.node_types)
        return Instance(self, parallel, python, lanes)

    @property
    def node_types(self):
        """The graph's node type names: what its executor must have branches for."""
        return {node.type for node in self.checked.nodes.values()}  # a sync group's too

    def node_params(self, node):
        """``node.params`` for this plan as flat float64; errors name the node (and field)."""
        return _call(node, "params", self.ctx, self.file)

    def node_state(self, node, time=0.0):
        """``node.state`` at ``time`` s for this plan as flat float64; errors name the node (and field)."""
        return _call(node, "state", self.ctx, self.file, time)

    def constant_block(self, kind, value):
        """The signal block (value then zero rate) holding ``value`` of signal ``kind``."""
        return _signal_block(kind, value)


def _call(node, method, ctx, file, *args):
    """``node.params(ctx)``/``node.state(ctx, t)`` as flat float64; errors name the node (and field)."""
    try:
        out = getattr(node, method)(ctx, *args)
    except GraphError as e:
        raise GraphError(e.message, e.node or node.id, e.port, e.file or file) from None
    except (ValueError, KeyError, IndexError) as e:
        raise GraphError(f"{method}: {e}", node.id, _field_named(node, str(e)), file) from None
    out = np.ascontiguousarray(out, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(out)):
        raise GraphError(f"{method}() gave a non-finite value", node.id, None, file)  # which field: not known
    return out


def _field_named(node, text):
    """The node's field a message starts with ('index 3 out of range' -> 'index'), else None."""
    first = text.strip("'\" ").split(" ", 1)[0].rstrip(":")
    return first if first in type(node).model_fields and first not in ("id", "type") else None


def _offsets(tables):
    """(kind, arrays, index of its first array among all kinds' arrays) per node type with tables."""
    k = 0
    for kind, arrays in tables.items():
        yield kind, arrays, k
        k += len(arrays)


_DERIVED = {}  # (what, digest of the clip and skeleton) -> a clip variant or per-frame tables, for re-plans
# ("what" holds the node class or the table's build function itself: never another one's by a reused id)
_DERIVED_MAX = 512  # entries kept (the least recently used go first): a few graphs' variants and tables


def _digest(h, value):
    """Feed ``value`` (arrays, a Skeleton, a Clip, plain values) into the hash ``h`` by content."""
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.reshape(-1).view(np.uint8))
    elif isinstance(value, Skeleton):
        for k, v in sorted(vars(value).items()):
            h.update(k.encode())
            _digest(h, v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            h.update(f.name.encode())
            _digest(h, getattr(value, f.name))
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for v in value:
            _digest(h, v)
    elif isinstance(value, dict):
        h.update(f"dict{len(value)}".encode())
        for k, v in value.items():
            _digest(h, k)
            _digest(h, v)
    else:
        h.update(repr(value).encode())


def _content_key(skeleton, clip):
    """A digest of everything ``clip`` and ``skeleton`` hold: what derived data depends on."""
    h = hashlib.blake2b(digest_size=20)
    _digest(h, skeleton)
    _digest(h, clip)
    return h.digest()


def _derived(what, key, make):
    """``make()``, or (a copy of) what it returned for ``what`` of a clip of the same ``_content_key``.

    An editor re-plans on every edit: a clip's variants (root motion, contacts) and per-frame tables
    are the bulk of a plan's time and depend only on the clip, the skeleton and ``what``."""
    key = (what, key)
    value = _DERIVED.pop(key) if key in _DERIVED else make()
    _DERIVED[key] = value  # the most recently used last
    while len(_DERIVED) > _DERIVED_MAX:
        del _DERIVED[next(iter(_DERIVED))]
    return copy.deepcopy(value)


def _frame_db(skeleton, clips, variants=()):
    """The clip database: one frame array for every clip and variant, ClipRanges into it, each node type's tables.

    ``variants``: ``(asset name, variant, node type)`` triples (``Node.clip_variants``); each
    becomes a clip of its own, made by the node type's ``clip_variant``.  Returns ``(db,
    ranges, tables)``: ``db = (pos, rot, scl, parents)`` float32 frame arrays and int64
    parents; ``tables`` maps each registered node type with ``CLIP_TABLES`` to its tables
    over the whole frame array, in the executor's kind order.
    """
    joints = len(skeleton) if skeleton is not None else 0
    entries = [(name, clip) for name, clip in clips.items()]
    for name, variant, cls in dict.fromkeys(variants):
        if name in clips:
            clip = clips[name]
            entries.append(((name, variant), _derived(("variant", cls, variant), _content_key(skeleton, clip),
                                                      lambda: cls.clip_variant(skeleton, clip, variant))))
    ranges, start = {}, 0
    for key, clip in entries:
        ranges[key] = ClipRange(start, clip.frames, clip.dt, clip, key[1] if isinstance(key, tuple) else "")
        start += clip.frames
    parts = [clip for _, clip in entries]

    def stack(arrays, shape):
        if not arrays:
            return np.zeros(shape, np.float32)
        return np.ascontiguousarray(np.concatenate(arrays), dtype=np.float32)

    parents = np.ascontiguousarray(skeleton.parents if skeleton is not None else [], dtype=np.int64)
    fields = [stack([getattr(c, f) for c in parts], (0, joints, w)) for f, w in (("pos", 3), ("rot", 4), ("scl", 3))]
    tables, keys = {}, {}
    for kind in kinds():
        specs = REGISTRY[kind].CLIP_TABLES
        if specs:
            for i, c in enumerate(parts):
                if i not in keys:
                    keys[i] = _content_key(skeleton, c)
            tables[kind] = tuple(stack([_derived(("table", t.build), keys[i], lambda: t.build(c))
                                        for i, c in enumerate(parts)],
                                       (0, *t.frame_shape(joints))) for t in specs)
    return (*fields, parents), ranges, tables


# ---------------------------------------------------------------- layout


def _taken_over(node, nid, i, checked, last_read, kept):
    """{output port: source} for the pose outputs of op ``i`` that take over their ``IN_PLACE`` input's slot.

    Only when this op is the source's last reader, the source is not kept (a graph output, or
    every node in a debug plan) and no other input of the op reads it.
    """
    taken = {}
    for out, inp in node.IN_PLACE.items():
        src = checked.feeds.get((nid, inp))
        if (src is None or last_read.get(src) != i or src[0] in kept or out not in checked.outputs[nid]
                or checked.outputs[nid][out].signal != "pose"):
            continue
        if sum(checked.feeds.get((nid, name)) == src for name in checked.inputs[nid]) == 1:
            taken[out] = src
    return taken


class _Slots:
    """Pose slot allocator: lowest free slot first."""

    def __init__(self):
        self.free, self.count = [], 0

    def take(self):
        if self.free:
            self.free.sort()
            return self.free.pop(0)
        self.count += 1
        return self.count - 1

    def give(self, s):
        self.free.append(s)


def _signal_block(kind, value):
    block = np.zeros(SIGNAL_SIZE[kind])
    v = signal_value(kind, value)
    block[: len(v)] = v
    return block


def _table(ops, io, parents, n_sig, slots, joints, frames):
    """The executor's int64 table: header (``executor.N_OPS`` ...), op rows, port locators, parents."""
    ops_at, io_at = HEADER_WIDTH, HEADER_WIDTH + ops.size
    parents_at = io_at + io.size
    head = [len(ops), ops_at, io_at, parents_at, n_sig, slots, joints, frames]  # in the header's column order
    return np.ascontiguousarray(np.concatenate([head, ops.ravel(), io, parents]), dtype=np.int64)


def make_plan(graph, batch=1, assets=None, skeleton=None, warn=True, reuse_slots=True, events=DEFAULT_CAPACITY):
    """Check ``graph`` and lay out its tables for ``batch`` characters (no compiling).

    ``reuse_slots=False``: a debug plan, where no two pose outputs share a slot.  ``events``: the
    records each character's event block holds between two ``Instance.events()`` calls (0: none).
    """
    if not (isinstance(events, (int, np.integer)) and not isinstance(events, bool) and 0 <= events <= MAX_EVENTS):
        raise GraphError(f"events must be a whole number of records in [0, {MAX_EVENTS}], got {events!r}",
                         file=getattr(graph, "path", None))
    checked = _checked(graph, batch, warn, events > 0)
    order, nodes = checked.order, {nid: checked.nodes[nid] for nid in checked.order}
    skeleton, clips = _clips(graph, checked, assets, skeleton)
    variants = [(name, variant, type(nodes[nid])) for nid in order for name, variant in nodes[nid].clip_variants()]
    db, ranges, tables = _frame_db(skeleton, clips, variants)
    ctx = PlanContext(skeleton, ranges, checked.spaces, order)
    capacity = int(events) if any(type(nodes[nid]).EVENTS for nid in order) else 0
    ports = _lay_out_ports(checked, nodes, reuse_slots, capacity)
    par_ranges, par, state_ranges, initial_state = _lay_out_params_and_state(order, nodes, ctx, graph.path)
    gate_io, gate_ranges, par = _lay_out_gates(checked, nodes, len(ports.io), par, state_ranges, initial_state)
    ports.io = np.concatenate([ports.io, gate_io])
    ports.pose_io = np.concatenate([ports.pose_io, np.zeros(len(gate_io), np.bool_)])
    ops = _op_table(order, nodes, ports.io_ranges, par_ranges, state_ranges, gate_ranges)
    walk = _walk_table(ops, order, checked.walk)
    outputs = {nid: (kind, loc, state_ranges[order.index(nid)][0]) for nid, (kind, loc) in ports.outputs.items()}
    clipbuf, db, tables = _clip_buffer(db, tables)
    n_slots = max(ports.slots, 1)
    return Plan(
        graph=graph,
        batch=int(batch),
        skeleton=skeleton,
        clips=ranges,
        db=db,
        tables=tables,
        order=list(order),
        nodes=nodes,
        ops=ops,
        io=ports.io,
        pose_io=ports.pose_io,
        par=par,
        n_state=len(initial_state),
        n_slots=n_slots,
        sig_init=ports.sig_init,
        table=_table(walk, ports.io, db[3], len(ports.sig_init), n_slots, len(db[3]), len(db[0])),
        clipbuf=clipbuf,
        inputs=ports.inputs,
        outputs=outputs,
        constants=ports.constants,
        pruned=checked.pruned,
        warnings=checked.warnings,
        ctx=ctx,
        checked=checked,
        located=dict(ports.located),
        reuse_slots=bool(reuse_slots),
        _state_layout=[(nid, a, b) for nid, (a, b) in zip(order, state_ranges)],
        initial_state=initial_state,
        event_names=ctx.event_names(),
        event_capacity=capacity,
    )


def node_types(graph, events=DEFAULT_CAPACITY):
    """Node type names a plan of ``graph`` runs (``Plan.node_types``): its own and those the check adds (the events'
    weights, sync groups), so that the executor a first run compiles covers them all."""
    return {node.type for node in check(graph, graph.path, warn=False, event_weights=events).nodes.values()}


def _checked(graph, batch, warn, events):
    """The checked graph (``check.check``; with the events' weights when ``events``), after refusing a bad ``graph``
    or ``batch``."""
    if not isinstance(graph, Graph):
        raise GraphError(f"make_plan: graph must be a Graph, got {type(graph).__name__}")
    if not (isinstance(batch, (int, np.integer)) and not isinstance(batch, bool) and 1 <= batch <= MAX_BATCH):
        raise GraphError(f"batch must be a whole number in [1, {MAX_BATCH}], got {batch!r}", file=graph.path)
    return check(graph, graph.path, warn=warn, event_weights=events)


def _clips(graph, checked, assets, skeleton):
    """(skeleton, {name: Clip}) of the graph's assets; a GraphError when pose nodes have no skeleton."""
    skeleton, clips = load_assets(graph, assets, skeleton)
    ports = (p for nid in checked.order for p in (*checked.inputs[nid].values(), *checked.outputs[nid].values()))
    if skeleton is None and any(p.signal == "pose" for p in ports):
        raise GraphError("the graph has pose nodes but no skeleton: add a clip asset", file=graph.path)
    return skeleton, clips


@dataclass
class _Ports:
    """Where every port lives: pose slots and signal blocks (``_lay_out_ports``)."""

    io: np.ndarray  # int64 locator per port, op by op: inputs then outputs
    pose_io: np.ndarray  # bool per locator: a pose slot
    io_ranges: list  # (ins start, outs start, outs end) into io per op
    located: dict  # (node id, output port) -> slot or offset
    slots: int  # pose slots used
    sig_init: np.ndarray  # the signal buffer a fresh instance starts from
    inputs: dict  # input node id -> (caller block offset, kind)
    outputs: dict  # output node id -> (kind, slot or offset)
    constants: dict  # (node id, port) -> (offset, kind)


def _lay_out_ports(checked, nodes, reuse_slots, capacity=0):
    """Pose slots by liveness and signal blocks for every port, op by op (module doc); the event block first
    (``animgraph.events``: ``capacity`` records), where every kernel finds it."""
    order = checked.order
    last_read = {}
    for i, nid in enumerate(order):
        for name, port in checked.inputs[nid].items():
            src = checked.feeds.get((nid, name))
            if src is not None and port.signal == "pose":
                last_read[src] = i
    sinks = {nid for nid in order if getattr(nodes[nid], "GRAPH_OUTPUT", False)}
    kept = sinks if reuse_slots else set(order)  # nodes whose pose slots are never given back
    slots, located = _Slots(), {}
    io, pose_io, io_ranges, sig_parts = [], [], [], []
    inputs, outputs, constants = {}, {}, {}
    n_sig = 0

    def sig_block(block):
        nonlocal n_sig
        sig_parts.append(block)
        n_sig += len(block)
        return n_sig - len(block)

    sig_block(events_block(capacity))  # at offset 0: every kernel finds it there (``animgraph.events``)
    for nid in order:  # an early kernel's outputs are read before its node's own op: laid out first
        if type(nodes[nid]).EARLY_KERNEL is not None:
            for name in nodes[nid].early_ports()[1]:
                located[(nid, name)] = sig_block(np.zeros(SIGNAL_SIZE[checked.outputs[nid][name].signal]))

    for i, nid in enumerate(order):
        node, ins = nodes[nid], len(io)
        for name, port in checked.inputs[nid].items():
            src = checked.feeds.get((nid, name))
            pose_io.append(port.signal == "pose")
            if src is not None:
                io.append(located[src])
            elif has_constant(node, port):
                off = sig_block(_signal_block(port.signal, getattr(node, name)))
                constants[(nid, name)] = (off, port.signal)
                io.append(off)
            else:
                io.append(-1)
        outs = len(io)
        taken = _taken_over(node, nid, i, checked, last_read, kept)
        for name, port in checked.outputs[nid].items():
            pose_io.append(port.signal == "pose")
            if (nid, name) in located:  # an early output
                pass
            elif name in taken:
                located[(nid, name)] = located[taken[name]]
            elif port.signal == "pose":
                located[(nid, name)] = slots.take()
            else:
                located[(nid, name)] = sig_block(np.zeros(SIGNAL_SIZE[port.signal]))
            io.append(located[(nid, name)])
        io_ranges.append((ins, outs, len(io)))
        # Free what this op was the last to read, and its pose outputs nobody reads.
        for src, last in last_read.items():
            if last == i and src[0] not in kept and src not in taken.values():
                slots.give(located[src])
        for name, port in checked.outputs[nid].items():
            if port.signal == "pose" and (nid, name) not in last_read and nid not in kept:
                slots.give(located[(nid, name)])
        if getattr(node, "GRAPH_INPUT", False):
            (name, port), = checked.outputs[nid].items()
            # What the caller writes goes right after the output block, where the kernel reads it.
            caller = sig_block(np.zeros(node.caller_size()))
            if caller != located[(nid, name)] + SIGNAL_SIZE[port.signal]:
                raise AssertionError(f"input {nid}: its caller block does not follow its output block")
            inputs[nid] = (caller, port.signal)
        if nid in sinks:
            (name, port), = checked.outputs[nid].items()
            outputs[nid] = (port.signal, located[(nid, name)])

    sig_init = np.concatenate(sig_parts) if sig_parts else np.zeros(0)
    for nid, (off, kind) in inputs.items():  # inputs start at their defaults, as given and as output
        block = _signal_block(kind, nodes[nid].default)
        sig_init[off:off + len(block)] = block
        sig_init[off - len(block):off] = block
    return _Ports(np.array(io, dtype=np.int64), np.array(pose_io, dtype=np.bool_), io_ranges, located, slots.count,
                  sig_init, inputs, outputs, constants)


def _lay_out_params_and_state(order, nodes, ctx, file):
    """(par ranges, parameters, state ranges, initial state row): each op's ``params`` and ``state`` at 0 s, in order."""
    par_parts, state_parts, par_ranges, state_ranges = [], [], [], []
    n_par = n_state = 0
    for nid in order:
        p = _call(nodes[nid], "params", ctx, file)
        s = _call(nodes[nid], "state", ctx, file, 0.0)
        par_parts.append(p)
        state_parts.append(s)
        par_ranges.append((n_par, n_par + len(p)))
        state_ranges.append((n_state, n_state + len(s)))
        n_par, n_state = n_par + len(p), n_state + len(s)
    par = np.concatenate(par_parts) if par_parts else np.zeros(0)
    return par_ranges, par, state_ranges, np.concatenate(state_parts) if state_parts else np.zeros(0)


def _lay_out_gates(checked, nodes, at, par, state_ranges, initial_state):
    """(gate entries, (start, stop) into io per op, parameters): each gated op's gates (``animgraph.gates``), to go at
    ``at`` in io, and its initial state row appended to the parameters, where a restart copies it from."""
    entries, ranges, par = [], [], [par]
    n_par = sum(len(p) for p in par)
    for nid, (s0, s1) in zip(checked.order, state_ranges):
        start = at + len(entries)
        marks = checked.gates.get(nid, [])
        if marks:
            par.append(initial_state[s0:s1])
            for m, mask in marks:
                ms = state_ranges[checked.order.index(m)][0]
                cls = type(nodes[m])
                why = ms + cls.WHY_FIELD if cls.WHY_FIELD >= 0 else -1
                leaving = ms + cls.LEAVING_FIELD if cls.LEAVING_FIELD >= 0 else -1
                entries += [ms + cls.LIVE_FIELD, ms + cls.ENTERED_FIELD, mask, n_par, why, leaving]
            n_par += s1 - s0
        ranges.append((start, at + len(entries)))
    return np.array(entries, np.int64), ranges, np.concatenate(par)


def _op_table(order, nodes, io_ranges, par_ranges, state_ranges, gate_ranges):
    """The op rows (``OP_WIDTH`` int64 each): node type, then ranges into io, parameters, state and gates."""
    kind_of = {name: i for i, name in enumerate(kinds())}
    rows = [[kind_of[nodes[nid].type], *io, *par, *st, *gate]  # the executor's OP_KIND, OP_INS, ... in order
            for nid, io, par, st, gate in zip(order, io_ranges, par_ranges, state_ranges, gate_ranges)]
    return np.array(rows, dtype=np.int64).reshape(-1, OP_WIDTH)


def _walk_table(ops, order, walk):
    """The rows the executor walks, in ``walk`` order: a node's row, and before it, for a node with an early kernel,
    the same row with the early kind (``executor.early_kind``)."""
    at = {nid: i for i, nid in enumerate(order)}
    rows = ops[[at[nid] for nid, _ in walk]].copy()
    rows[[k for k, (_, early) in enumerate(walk) if early], OP_KIND] += len(kinds())
    return rows


def _clip_buffer(db, tables):
    """(clipbuf, db, tables): the frame arrays and node tables in one flat float32 buffer, and views of it.

    The executor reads the clips from that one buffer: ``plan.db`` and ``plan.tables`` hold views (no second copy).
    """
    flat = [*db[:3], *(a for arrays in tables.values() for a in arrays)]
    clipbuf = np.ascontiguousarray(np.concatenate([a.ravel() for a in flat]), dtype=np.float32)
    views, at = [], 0
    for a in flat:
        views.append(clipbuf[at:at + a.size].reshape(a.shape))
        at += a.size
    tables = {kind: tuple(views[3:][k:k + len(arrays)]) for kind, arrays, k in _offsets(tables)}
    return clipbuf, (*views[:3], db[3]), tables
