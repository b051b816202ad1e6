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
  Assets are BVH paths relative to the graph file, ``{"path": ..., options}``, or
  ``"animgraph:NAME"`` for a bundled clip; they must share one skeleton (the same parents).
  Version-1 graphs read paths raw (times ``scale``); version 2 reads them as
  ``clipfile.read_clip`` with the asset's ``units``, ``first_frame`` and ``names``.

Planning never compiles: an edit re-plans in milliseconds.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .check import check, has_constant
from .errors import AnimgraphError, GraphError
from .executor import HEADER_WIDTH, OP_STATE, OP_WIDTH, kinds
from .graph import BUNDLED_PREFIX, AssetSpec, DatabaseSpec, Graph
from .instance import Instance
from .limits import MAX_BATCH, signal_value  # noqa: F401 (MAX_BATCH: plan.MAX_BATCH for callers)
from .node import REGISTRY, SIGNAL_SIZE, BuildContext, ClipRange
from .pose import Clip, Skeleton


class PlanContext(BuildContext):
    """BuildContext plus the resolved pose space of each port."""

    def __init__(self, skeleton, clips, spaces):
        super().__init__(skeleton, clips)
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
        return {node.type for node in self.graph.nodes}

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


# ---------------------------------------------------------------- assets


@functools.lru_cache(maxsize=32)
def _read_bvh(path, mtime_ns, scale):
    from .bvh import load_bvh

    return load_bvh(path, scale=scale)


@functools.lru_cache(maxsize=32)
def _read_clip(path, mtime_ns, units, first_frame, names, name):
    from .clipfile import read_clip

    skel, clip, _ = read_clip(path, units=units, first_frame=first_frame, names=names, name=name)
    return skel, clip


def _user(graph, asset):
    """(node id, field) of the first node naming ``asset`` in a field, for error messages."""
    for node in graph.nodes:
        for name, value in node:
            if value == asset and name not in ("id", "type"):
                return node.id, name
    return None, None


def _load_asset(graph, name, spec, file):
    """(Skeleton, Clip) of one asset; version-2 options via ``_load_asset_v2``; errors name the node using it."""
    node, port = _user(graph, name)
    if isinstance(spec, DatabaseSpec):
        try:
            return _load_database(graph, name, spec)
        except AnimgraphError as e:
            raise GraphError(f"asset {name!r}: {e}", node, port, file) from None
    path, scale = (spec, 1.0) if isinstance(spec, str) else (spec.path, spec.scale)
    try:
        if graph.version >= 2:
            return _load_asset_v2(graph, name, AssetSpec(path=spec) if isinstance(spec, str) else spec, node, port)
        if path.startswith(BUNDLED_PREFIX):
            from . import data

            bundled = path[len(BUNDLED_PREFIX):]
            if bundled not in data.names():
                raise GraphError(
                    f"asset {name!r}: no bundled clip {bundled!r} (bundled: {', '.join(data.names())})",
                    node, port, file,
                )
            skel, clip = data.load(bundled)
            if scale != 1.0:
                clip = Clip(skel, clip.pos * scale, clip.rot, clip.scl, clip.dt)
            return skel, clip
        full = Path(graph.base_dir) / path
        if not full.is_file():
            raise GraphError(f"asset {name!r}: file not found: {full}", node, port, file)
        stat = os.stat(full)
        return _read_bvh(str(full.resolve()), stat.st_mtime_ns, float(scale))
    except GraphError:
        raise
    except AnimgraphError as e:
        raise GraphError(f"asset {name!r}: {e}", node, port, file) from None


def _load_asset_v2(graph, name, spec, node, port):
    """A version-2 asset: the file (a bundled clip's too) read with ``clipfile.read_clip`` and the spec's options."""
    from . import data

    file = graph.path
    if spec.path.startswith(BUNDLED_PREFIX):
        bundled = spec.path[len(BUNDLED_PREFIX):]
        if bundled not in data.names():
            raise GraphError(
                f"asset {name!r}: no bundled clip {bundled!r} (bundled: {', '.join(data.names())})", node, port, file
            )
        if (spec.units, spec.first_frame, spec.names) == ("auto", "auto", "auto"):
            return data.load(bundled)
        full, clip_name = data.path(bundled), bundled
    else:
        full, clip_name = Path(graph.base_dir) / spec.path, None
        if not full.is_file():
            raise GraphError(f"asset {name!r}: file not found: {full}", node, port, file)
    stat = os.stat(full)
    units = spec.units if spec.units == "auto" else float(spec.units)
    return _read_clip(str(full.resolve()), stat.st_mtime_ns, units, spec.first_frame, spec.names, clip_name)


def _load_database(graph, name, spec):
    """(Skeleton, Clip) of a database asset: its frames as one clip that carries the ``Database`` (``clip.database``)."""
    from .database import Database, cached_build
    from .features import Schema

    def where(label):
        if label.startswith(BUNDLED_PREFIX):
            return label
        return str((Path(graph.base_dir) / label).resolve())

    if isinstance(spec.database, str):
        db = Database.load(where(spec.database))
    else:
        schema = Schema.load(where(spec.features)) if spec.features else None
        db = cached_build([where(c) for c in spec.database], schema, mirror=spec.mirror)
    return db.skeleton, db.as_clip()


def load_assets(graph, assets=None, skeleton=None):
    """(skeleton, {name: Clip}) of the graph's assets plus ``assets`` given in memory."""
    file = graph.path
    clips, sources = {}, {}
    for name, spec in graph.assets.items():
        if assets and name in assets:
            continue
        skel, clip = _load_asset(graph, name, spec, file)
        clips[name], sources[name] = clip, skel
    for name, value in (assets or {}).items():
        skel, clip = value if isinstance(value, tuple) else (value.skeleton, value)
        clips[name], sources[name] = clip, skel
    first = None  # the asset the others are compared with; None: the skeleton the caller gave
    for name, skel in sources.items():
        if skeleton is None:
            skeleton, first = skel, name
        elif len(skel) != len(skeleton) or not np.array_equal(skel.parents, skeleton.parents):
            node, port = _user(graph, name)
            raise GraphError(
                f"asset {name!r} has a different skeleton ({len(skel)} joints) from {_source(first)} "
                f"({len(skeleton)} joints): a graph's assets share one skeleton",
                node, port, file,
            )
        elif _is_database(clips, name, first) and list(skel.names) != list(skeleton.names):
            # A database's features name joints: clips played beside it must name them alike.
            node, port = _user(graph, name)
            diff = next(i for i, (a, b) in enumerate(zip(skel.names, skeleton.names)) if a != b)
            raise GraphError(
                f"asset {name!r} has other joint names than {_source(first)} (joint {diff}: "
                f"{skel.names[diff]!r} vs {skeleton.names[diff]!r}): a database and the clips beside it share "
                "one skeleton", node, port, file,
            )
    return skeleton, clips


def _source(first):
    """How an error names the skeleton assets are compared with."""
    return "the given skeleton" if first is None else f"asset {first!r}"


def _is_database(clips, *names):
    """Whether any of the assets ``names`` is a motion-matching database (its clip carries ``database``)."""
    return any(getattr(clips.get(n), "database", None) is not None for n in names)


def _offsets(tables):
    """(kind, arrays, index of its first array among all kinds' arrays) per node type with tables."""
    k = 0
    for kind, arrays in tables.items():
        yield kind, arrays, k
        k += len(arrays)


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
            entries.append(((name, variant), cls.clip_variant(skeleton, clips[name], variant)))
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
    tables = {}
    for kind in kinds():
        specs = REGISTRY[kind].CLIP_TABLES
        if specs:
            tables[kind] = tuple(stack([t.build(c) for c in parts], (0, *t.frame_shape(joints))) for t in specs)
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


def make_plan(graph, batch=1, assets=None, skeleton=None, warn=True, reuse_slots=True):
    """Check ``graph`` and lay out its tables for ``batch`` characters (no compiling).

    ``reuse_slots=False``: a debug plan, where no two pose outputs share a slot.
    """
    if not isinstance(graph, Graph):
        raise GraphError(f"make_plan: graph must be a Graph, got {type(graph).__name__}")
    if not (isinstance(batch, (int, np.integer)) and not isinstance(batch, bool) and 1 <= batch <= MAX_BATCH):
        raise GraphError(f"batch must be a whole number in [1, {MAX_BATCH}], got {batch!r}", file=graph.path)
    file = graph.path
    checked = check(graph, file, warn=warn)
    order, nodes = checked.order, {nid: checked.nodes[nid] for nid in checked.order}
    uses_pose = any(p.signal == "pose" for nid in order for p in (*checked.inputs[nid].values(), *checked.outputs[nid].values()))
    skeleton, clips = load_assets(graph, assets, skeleton)
    if uses_pose and skeleton is None:
        raise GraphError("the graph has pose nodes but no skeleton: add a clip asset", file=file)
    variants = [(name, variant, type(nodes[nid])) for nid in order for name, variant in nodes[nid].clip_variants()]
    db, ranges, tables = _frame_db(skeleton, clips, variants)
    ctx = PlanContext(skeleton, ranges, checked.spaces)

    kind_of = {name: i for i, name in enumerate(kinds())}
    last_read = {}
    for i, nid in enumerate(order):
        for name, port in checked.inputs[nid].items():
            src = checked.feeds.get((nid, name))
            if src is not None and port.signal == "pose":
                last_read[src] = i
    sinks = {nid for nid in order if getattr(nodes[nid], "GRAPH_OUTPUT", False)}
    kept = sinks if reuse_slots else set(order)  # nodes whose pose slots are never given back

    slots, located = _Slots(), {}
    ops, io, pose_io, par_parts, sig_parts, state_parts = [], [], [], [], [], []
    n_par = n_state = n_sig = 0
    state_layout, inputs, outputs, constants = [], {}, {}, {}

    def sig_block(block):
        nonlocal n_sig
        sig_parts.append(block)
        n_sig += len(block)
        return n_sig - len(block)

    for i, nid in enumerate(order):
        node = nodes[nid]
        row = [kind_of[node.type], len(io)]  # the executor's OP_KIND, OP_INS, ... in order
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
        row.append(len(io))
        taken = _taken_over(node, nid, i, checked, last_read, kept)
        for name, port in checked.outputs[nid].items():
            pose_io.append(port.signal == "pose")
            if name in taken:
                located[(nid, name)] = located[taken[name]]
            elif port.signal == "pose":
                located[(nid, name)] = slots.take()
            else:
                located[(nid, name)] = sig_block(np.zeros(SIGNAL_SIZE[port.signal]))
            io.append(located[(nid, name)])
        row.append(len(io))
        # Free what this op was the last to read, and its pose outputs nobody reads.
        for src, last in last_read.items():
            if last == i and src[0] not in kept and src not in taken.values():
                slots.give(located[src])
        for name, port in checked.outputs[nid].items():
            if port.signal == "pose" and (nid, name) not in last_read and nid not in kept:
                slots.give(located[(nid, name)])

        p = _call(node, "params", ctx, file)
        par_parts.append(p)
        row += [n_par, n_par + len(p)]
        n_par += len(p)
        s = _call(node, "state", ctx, file, 0.0)
        state_parts.append(s)
        state_layout.append((nid, n_state, n_state + len(s)))
        row += [n_state, n_state + len(s)]
        n_state += len(s)
        ops.append(row)

        if getattr(node, "GRAPH_INPUT", False):
            (name, port), = checked.outputs[nid].items()
            # What the caller writes goes right after the output block, where the kernel reads it.
            caller = sig_block(np.zeros(node.caller_size()))
            if caller != located[(nid, name)] + SIGNAL_SIZE[port.signal]:
                raise AssertionError(f"input {nid}: its caller block does not follow its output block")
            inputs[nid] = (caller, port.signal)
        if nid in sinks:
            (name, port), = checked.outputs[nid].items()
            outputs[nid] = (port.signal, located[(nid, name)], row[OP_STATE])

    ops = np.array(ops, dtype=np.int64).reshape(-1, OP_WIDTH)
    io = np.array(io, dtype=np.int64)
    pose_io = np.array(pose_io, dtype=np.bool_)
    sig_init = np.concatenate(sig_parts) if sig_parts else np.zeros(0)
    for nid, (off, kind) in inputs.items():  # inputs start at their defaults, as given and as output
        block = _signal_block(kind, nodes[nid].default)
        sig_init[off:off + len(block)] = block
        sig_init[off - len(block):off] = block
    n_slots = max(slots.count, 1)
    # The executor reads the clips from one flat buffer: plan.db and plan.tables hold views of it (no second copy).
    flat = [*db[:3], *(a for arrays in tables.values() for a in arrays)]
    clipbuf = np.ascontiguousarray(np.concatenate([a.ravel() for a in flat]), dtype=np.float32)
    views, at = [], 0
    for a in flat:
        views.append(clipbuf[at:at + a.size].reshape(a.shape))
        at += a.size
    db = (*views[:3], db[3])
    tables = {kind: tuple(views[3:][k:k + len(arrays)]) for kind, arrays, k in _offsets(tables)}
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
        io=io,
        pose_io=pose_io,
        par=np.concatenate(par_parts) if par_parts else np.zeros(0),
        n_state=n_state,
        n_slots=n_slots,
        sig_init=sig_init,
        table=_table(ops, io, db[3], len(sig_init), n_slots, len(db[3]), len(db[0])),
        clipbuf=clipbuf,
        inputs=inputs,
        outputs=outputs,
        constants=constants,
        pruned=checked.pruned,
        warnings=checked.warnings,
        ctx=ctx,
        checked=checked,
        located=dict(located),
        reuse_slots=bool(reuse_slots),
        _state_layout=state_layout,
        initial_state=np.concatenate(state_parts) if state_parts else np.zeros(0),
    )
