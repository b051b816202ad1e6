"""The contract every node module in ``nodes/`` follows, and the node registry.

A node module defines one pydantic model (subclass of ``Node``) with
``type: Literal["name"]``, its ``INPUTS``/``OUTPUTS`` ports (named for kernels by
``port_indices``), its parameters and per-character state as named float64 layouts
(``fields``: declared once, packed by name, read by name), and a numba kernel::

    @njit(cache=True, inline="always")
    def blend_node(ins, outs, par, st, pose, sig, db, dt): ...   # <type>_node, registered with @register

``inline="always"`` compiles it into the executor's walk: as a call, passing these
arguments costs 0.05 to 0.1 us per op at one character, which matters for a node whose
work is a few joints' maths (sample, blend, fk, input, output...).  A node whose work is
far more than that (IK, a search, a state machine) leaves it out and says
``own_code=True`` (``animgraph.jit``): its machine code is made once, cached, and called by
every walk, which then compiles only its own code (every entry inlined made the whole
registry's walk about 3.5x slower to compile; every entry linked in, a walk compiled the
code of every node type again, alone, after the kernels).  An entry stays a thin reader of
ports that calls plain ``@njit(cache=True)`` kernels for the work; a kernel with many
joints' work that an inlined entry calls (``blend_kernel``) is ``own_code`` too.

Kernel arguments (all for one character):

- ``ins``/``outs`` int64 arrays, one entry per port in declaration order: the pose
  slot index for pose ports, the offset into ``sig`` for signal ports, -1 for an
  unlinked optional input (unlinked inputs whose model has a field of the same
  name get a constant signal holding that field's value instead).
- ``par`` float64 parameters from ``Node.params``; ``st`` float64 state from
  ``Node.state`` (persists across frames, per character).
- ``pose`` the tuple ``(pos, rot, scl, vel, ang, svl)`` of float32 arrays
  (S, J, 3|4): every pose slot; ``slot(pose, i)`` gives one pose as 2-D views.
- ``sig`` float64 signal buffer; a signal occupies ``SIGNAL_SIZE[kind]`` floats:
  scalar ``(x, dx)``, vec3 ``(p, v)``, quat ``(q, ang)``, int/bool ``(v,)``, root
  motion ``(vel, ang)``: the simulation bone's velocity (m/s) and angular velocity (rad/s)
  in its own frame (itself a rate; the output node integrates it into the placement), and
  trajectory (24 floats): the simulation object's future at 3 times ahead, in its own frame
  now (relative to its position, turned by the inverse of its facing; Y up, ground XZ):
  ``[p1x, p1z, p2x, p2z, p3x, p3z, d1x, d1z, d2x, d2z, d3x, d3z]`` (positions in m, facings
  as unit XZ directions), then their 12 time derivatives in the same order (m/s, 1/s).
- ``db`` the clip database as the node type sees it: ``(clip_pos (F,J,3), clip_rot (F,J,4),
  clip_scl (F,J,3), parents (J,))`` (indices ``DB_POS``, ``DB_ROT``, ``DB_SCL``,
  ``DB_PARENTS``): every clip of the graph in one frame array and the skeleton's parents;
  then the node type's own ``CLIP_TABLES`` in declaration order (``db_indices`` names their
  indices): per-frame tables it computes from each clip at plan time (the sample node's key
  table, say).  A kernel called with only the first four (``len(db) == 4``) must still work.
- ``dt`` the frame time in seconds.

Per-asset hooks: ``CLIP_TABLES`` (above), and ``clip_variants()`` with ``clip_variant()``:
the variants of a clip a node needs prepared (the sample node's root-relative clip), each
a clip of its own in the frame array with its own ``ClipRange``.  The core planner and
executor name no node module: everything a node type precomputes comes through these.

In place (optional, ``IN_PLACE = {"pose": "pose"}``): a node whose output is its input with a
few joints changed (``two_bone_ik``) may take over the input's pose slot when no later op
reads that input; its kernels then find ``ins[...] == outs[...]`` and must write only what
they change (reading each value before writing it).  Debug plans never do this.

Lane tiles (optional, ``@register(kernel, tile=tile_kernel)``): batches of at least
``lanes.LANES`` characters run tile by tile (``executor.run_tiles``), every pose slot of a
tile one flat float32 block of ``J * lanes.JOINT`` numbers laid out lane-minor
(``animgraph.lanes``).  A node type's tile kernel::

    @njit(cache=True)
    def blend_tile(ins, outs, par, st, tile, sig, db, dt): ...   # -> True when it did the op

takes ``ins``/``outs``/``par``/``db``/``dt`` as above; ``tile`` the tile's pose slots (slot
``s`` is ``lanes.tile_slot(tile, s, joints)``), ``sig`` and ``st`` the tile's characters'
signals and this op's state as 2-D (LANES, n) views, one row per lane.  It returns False
when it cannot do this op on this tile (a case it leaves to the scalar kernel, such as a
weight other than 1 on some lane): the executor then runs ``kernel`` lane by lane on the
characters' own slots, copying a pose slot between them and the tile only when the other
kind of op reads it.  Node types without a tile kernel always run that way, so every graph
runs on tiles and only the speed differs.  Scratch arrays a tile kernel allocates go into its
loops as ``views.borrowed`` views, with ``views.alive(array)`` after the last use: a counted
array costs two atomic operations wherever a loop passes it on (``nodes/blend.py``).

Python hooks (optional, outside the frame): what ``Instance`` does to one op's state and
signals between steps is the node's own method, all of one signature ``hook(op, rows, ...)``:
``op`` the op's ``OpSlices`` (views of the instance's buffers), ``rows`` an int64 array of the
characters to act on.  ``Instance`` calls them and names no node type:

- ``write_input(op, rows)`` -> ``check(value) -> write()``: a graph input (``GRAPH_INPUT``)
  checks what the caller sets (a GraphError naming the node, changing nothing) and returns
  the write into its signals (``nodes/input.py``);
- ``reset(op, rows, state)``: a reset of ``rows`` to ``state`` (the node's state row at the
  reset time); by default a copy (the output node keeps its world placement);
- ``teleport(op, rows, pos_delta, rot_delta)``: the characters moved in the world, per row
  ``(n, 3)`` m and ``(n, 4)`` w-first; by default nothing.

Input weights (sync groups, events): the *effective weight* of a sample is the product, along a path from it
to a graph pose output, of the weight each node on the path gives the input the path enters by, the largest over
paths (``animgraph.sync``).  A node says what it gives each pose input with ``input_weights()`` -> {input port:
``Weight``}: read from one of its signal ports (an input such as a blend's ``alpha``, or an output of its early
kernel such as a blend space's ``<entry>_weight``), as ``clamp(offset + scale * x, 0, 1)`` or, with ``between``
``(lo, hi)``, 1 when the int signal lies in it and 0 otherwise (a ``select``'s input); ``scale`` may fold in a
constant (a ``layered_blend``'s largest joint weight).  An input it does not name passes its weight on unchanged
(1).  ``sync_inputs()`` -> {input port: group name}: the samples feeding that input that name no group of their
own join the group (a blend space's entries).  A node that can join a group (a ``sample``) says how it plays
with ``sync_member()``; the group (``nodes/sync_group.py``) then drives its ``time`` input.

A fresh op's state is its initial row (``Plan.initial_state``), which a compiled step may
copy to reset an op for chosen characters; a node type whose reset needs more than that row
(a state that depends on the reset time, or a reset hook) says why in ``RESET``.

Branches (optional: a node that needs some pose inputs only some of the time, as a state
machine needs only its active state's): ``branch_bits()`` maps input ports to bit numbers, and
the node keeps two state fields, named by ``LIVE_FIELD`` and ``ENTERED_FIELD`` (offsets into
its state): a bit mask of the branches it needs this frame, and of those to restart this
frame.  The planner gates every op whose every path to a graph output runs through one
branch's ports (``animgraph.exclusive``): the op runs for a character only while the bit is
live, and its state is first set to its initial row on a frame the bit is entered
(``animgraph.gates``).  A skipped op keeps its state and its outputs go stale.  The masks must
be written before the gated ops run: by an early kernel (``register(kernel, early=...)``), a
second op of the node scheduled as soon as the inputs it reads are ready, which reads the
input ports ``early_ports()[0]`` and writes the output ports ``early_ports()[1]`` (signals
only; the node's other ports are its main kernel's).  Both kernels get the same ``ins``,
``outs``, ``par`` and ``st``, so the early kernel passes what it decided on through ``st``.
An early input in ``branch_conditions()`` is read only while its branch is live; when the
branch's own nodes compute it, they are gated with the branch and the early kernel reads the
value they left in the last frame it ran (one frame late: a state's clip's time left).
A third field, ``WHY_FIELD``, holds the detail id (``animgraph.events.REASONS``) the node's
branches stop with; an op whose type has a closing kernel (``register(kernel, closing=...)``:
a sample's open event ranges) gets it before its branch stops or restarts it, or while the
branch runs only to show where a transition starts (the mask at ``LEAVING_FIELD``, if any).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

import numpy as np
from animgraph.jit import njit
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import GraphError
from .limits import refuse_text

DB_POS, DB_ROT, DB_SCL, DB_PARENTS = range(4)  # the clip database every kernel gets


@dataclass(frozen=True)
class ClipTable:
    """A per-frame table a node type computes from every clip at plan time: ``build(clip)`` -> (F, *shape) float32.

    ``shape`` is per frame: ``()`` one number, ``(n,)`` n numbers, ``("joints", n)`` n per joint.
    """

    name: str
    shape: tuple
    build: object

    def frame_shape(self, joints):
        """The per-frame shape with ``"joints"`` resolved."""
        return tuple(joints if d == "joints" else int(d) for d in self.shape)


def db_indices(tables):
    """Indices in a kernel's ``db`` of a node type's ``CLIP_TABLES`` (after the four of every kernel)."""
    return tuple(range(DB_PARENTS + 1, DB_PARENTS + 1 + len(tables)))


def fields(name, **widths):
    """Named offsets into a flat float64 array (parameters or state), declared once: ``PAR = fields("PAR", halflife=1, hinge=3)``.

    The result is a namedtuple of offsets (``PAR.halflife == 0``, ``PAR.hinge == 1``) and the
    total ``PAR.SIZE`` (4 here) that a kernel indexes with (``par[PAR.hinge + 2]``,
    ``st[ST.SIZE:]``: numba folds them to constants); its class knows the ``WIDTHS`` and
    ``pack(**values)``, which lays out a float64 array from every field by name (a number,
    or ``width`` numbers).
    """
    offsets, at = [], 0
    for width in widths.values():
        if not (isinstance(width, int) and width >= 1):
            raise ValueError(f"{name}: field widths must be whole numbers >= 1, got {widths}")
        offsets.append(at)
        at += width
    if "SIZE" in widths:
        raise ValueError(f"{name}: SIZE names the layout's size, not a field")
    cls = collections.namedtuple(name, [*widths, "SIZE"])  # SIZE a member too, so kernels can read it
    cls.WIDTHS = dict(widths)
    cls.pack = classmethod(_pack)
    return cls(*offsets, at)


def port_indices(name, ports):
    """Named indices of ``ports`` (declaration order) into a kernel's ``ins`` or ``outs``: ``ins[IN.alpha]``."""
    return collections.namedtuple(name, [p.name for p in ports])(*range(len(ports)))


def _pack(cls, **values):
    """A float64 array of every field of ``cls`` (a ``fields`` layout) from ``values`` by name."""
    if set(values) != set(cls.WIDTHS):
        missing, extra = set(cls.WIDTHS) - set(values), set(values) - set(cls.WIDTHS)
        raise ValueError(f"{cls.__name__}.pack: missing {sorted(missing)}, unknown {sorted(extra)}")
    out = np.empty(sum(cls.WIDTHS.values()), np.float64)
    at = 0
    for key, width in cls.WIDTHS.items():
        value = np.asarray(values[key], np.float64).reshape(-1)
        if value.size != width:
            raise ValueError(f"{cls.__name__}.{key}: {width} number(s), got {value.size}")
        out[at:at + width] = value
        at += width
    return out


CATEGORIES = ("sources", "blends", "transitions", "IK", "locomotion", "signals")
# Kinds of fields that are more than a number, for generated editor widgets.
FIELD_KINDS = ("joint", "joints", "clip", "axis", "enum", "signal", "value", "branches", "tags", "state",
               "state_or_any", "name")
# joint(s): names or indices in the graph's skeleton; clip: an asset name; axis: a direction
# vec3 (or three numbers, as the controller's offsets); enum: one of a Literal's strings;
# signal: a signal kind; value: a value of the node's signal kind (number, vec3, quat, bool,
# trajectory); branches: a list of models ({joint, weight, depth}, a machine's states); tags: a list of words
# (motion_match's clip filters); state: one of a state machine's states (state_or_any: or "any"); name: an identifier
# the graph shares between nodes, or null (a sample's sync group).

# The trajectory signal's blocks (module docstring): positions (x, z) and facings (x, z) of the 3
# future points, then their rates; ``sig[at + TRAJECTORY.facing + 2 * k]`` is point k's facing x.
TRAJECTORY = fields("Trajectory", pos=6, facing=6, pos_rate=6, facing_rate=6)
SIGNAL_SIZE = {"scalar": 2, "vec3": 6, "quat": 7, "int": 1, "bool": 1, "motion": 6, "trajectory": TRAJECTORY.SIZE}
SIGNALS = ("pose",) + tuple(SIGNAL_SIZE)
SPACES = ("local", "global", "any")


class Weight(NamedTuple):
    """The weight a node gives one pose input (module doc): from its signal port ``port`` as ``clamp(offset + scale *
    x, 0, 1)``, or, with ``between = (lo, hi)``, 1 when that int signal lies in it (inclusive) and 0 otherwise."""

    port: str
    scale: float = 1.0
    offset: float = 0.0
    between: tuple | None = None


class Port(NamedTuple):
    """A node port: name, signal kind, pose space ('' for non-pose), one-line doc."""

    name: str
    signal: str
    space: str = ""
    doc: str = ""
    optional: bool = False


@dataclass
class ClipRange:
    """Where one clip lives in the graph's frame array: first frame, frame count, frame time (s)."""

    start: int
    frames: int
    dt: float
    clip: object = None
    variant: str = ""  # "" the clip as loaded; "root" / "root_loop" root-relative with root motion


@dataclass(frozen=True, eq=False)
class OpSlices:
    """One op of a running instance as a node's Python hooks see it: views of the instance's buffers."""

    id: str  # the node id
    file: object  # the graph file, for errors
    sig: np.ndarray  # (B, n) float64 signals per character; this op's blocks start at ``ins``/``outs``
    st: np.ndarray  # (B, state size) float64 this op's state per character
    par: np.ndarray  # this op's parameters (shared by the characters)
    ins: np.ndarray  # int64 locators of the op's input ports (pose slot or signal offset; -1 unlinked)
    outs: np.ndarray  # int64 locators of its output ports
    pose: tuple  # (pos, rot, scl, vel, ang, svl) float32 (B, slots, J, 3|4) every pose slot per character
    initial: np.ndarray  # this op's initial state row (a fresh instance's)


@dataclass
class BuildContext:
    """What a node may look at when laying out its parameters and state."""

    skeleton: object
    clips: dict = field(default_factory=dict)  # asset name (or (name, variant)) -> ClipRange
    order: tuple = ()  # node ids in op order: an event's source is its node's op index
    names: object = None  # the plan's event names (``animgraph.events.Names``), made on first use

    def event_source(self, node):
        """The op index events of ``node`` carry as their source (0 outside a plan)."""
        return self.order.index(node.id) if node.id in self.order else 0

    def event_names(self):
        """The plan's ``events.Names``: ids of the event names and details its nodes emit."""
        if self.names is None:
            from .events import Names

            self.names = Names()
        return self.names

    def joint(self, node, port, joint):
        """Index of ``joint`` in the skeleton, or a GraphError naming node and field."""
        try:
            return self.skeleton.index(joint)
        except ValueError as e:
            raise GraphError(str(e), node=node.id, port=port) from None

    def clip(self, node, port, name, variant=""):
        """The ClipRange of asset ``name`` (its ``variant``, see ``Node.clip_variants``), or a GraphError naming node and field."""
        if name not in self.clips:
            raise GraphError(
                f"unknown clip asset {name!r} (assets: {', '.join(sorted(k for k in self.clips if isinstance(k, str))) or 'none'})",
                node=node.id,
                port=port,
            )
        key = (name, variant) if variant else name
        if key not in self.clips:
            raise GraphError(f"clip asset {name!r}: its {variant!r} variant was not prepared", node=node.id, port=port)
        return self.clips[key]


class Node(BaseModel):
    """Base of every node model: an ``id``, ports, parameter and state layout, a kernel."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    INPUTS: ClassVar[tuple] = ()
    OUTPUTS: ClassVar[tuple] = ()
    DOC: ClassVar[str] = ""
    CLIP_TABLES: ClassVar[tuple] = ()  # ClipTable per-frame tables the kernel reads from db
    EVENTS: ClassVar[bool] = False  # the kernel may write events (``animgraph.events``): the plan gives them room
    KERNEL: ClassVar[object] = None  # set by ``register``
    TILE_KERNEL: ClassVar[object] = None  # set by ``register(kernel, tile=...)``: the lane-tile kernel, if any
    # Pose output -> pose input whose slot it may take over when nothing reads the input after this op: the
    # kernels then find the input already in the output (same slot index) and write only what they change.
    IN_PLACE: ClassVar[dict] = {}
    # What the editor and the checks need, declared by each node file:
    CATEGORY: ClassVar[str] = ""  # palette group: one of CATEGORIES
    FIELD_KINDS: ClassVar[dict] = {}  # field -> FIELD_KINDS entry, for fields that are more than a number
    OP: ClassVar[object] = None  # the pure ``ag.ops`` function (or class) with the node's maths
    VERIFY: ClassVar[object] = None  # the ``animgraph verify`` case: (motion, t, h, rng) -> stencils
    PLUMBING: ClassVar[bool] = False  # graph plumbing (input, constant, output): no op, no verify case
    PLANNED: ClassVar[bool] = False  # made by the check, not authored (a sync group): not in the editor's palette
    EXAMPLE: ClassVar[dict] = {}  # fields a newly added node needs besides its defaults (editor palette, generic tests)
    RESET: ClassVar[str] = ""  # why a reset needs more than the op's initial state row ("": a copy of it does)
    EARLY_KERNEL: ClassVar[object] = None  # set by ``register(kernel, early=...)``: the early phase, if any
    CLOSING_KERNEL: ClassVar[object] = None  # set by ``register(kernel, closing=...)``: before a gate stops it
    EVENT_WEIGHT: ClassVar[object] = None  # the scalar input its events' weight comes in by (animgraph.sync), if any
    LIVE_FIELD: ClassVar[int] = -1  # branches: state offset of the mask of branches needed this frame
    ENTERED_FIELD: ClassVar[int] = -1  # branches: state offset of the mask of branches to restart this frame
    WHY_FIELD: ClassVar[int] = -1  # branches: state offset of the detail id its branches stop with (-1: none)
    LEAVING_FIELD: ClassVar[int] = -1  # branches: state offset of the mask of those run only to start a transition

    @model_validator(mode="before")
    @classmethod
    def _no_text_for_numbers(cls, data):
        """Refuse text where a number or flag belongs ("0.3", "true"): pydantic would convert it."""
        return refuse_text(cls, data)

    def inputs(self):
        """Input ports of this instance (a node may vary them with its parameters)."""
        return tuple(self.INPUTS)

    def outputs(self):
        return tuple(self.OUTPUTS)

    def clip_variants(self):
        """(asset name, variant) pairs the planner must prepare for this node: e.g. ``("walk", "root_loop")``."""
        return ()

    @classmethod
    def clip_variant(cls, skeleton, clip, variant):
        """The clip of ``variant`` made from ``clip`` (a hook for the variants ``clip_variants`` asks for)."""
        raise ValueError(f"node type {cls.model_fields['type'].default!r} makes no clip variant {variant!r}")

    def params(self, ctx: BuildContext) -> np.ndarray:
        """Flat float64 parameters read by the kernel."""
        return np.zeros(0)

    def state(self, ctx: BuildContext, time: float = 0.0) -> np.ndarray:
        """Initial per-character float64 state (``time`` is the reset time in seconds)."""
        return np.zeros(0)

    def early_ports(self):
        """(input port names, output port names) of the early kernel (module doc); none without one."""
        return (), ()

    def branch_bits(self):
        """{input port name: bit} of the pose inputs needed only while their bit is live (module doc); none by default."""
        return {}

    def branch_conditions(self):
        """{early input port name: bit} read only while that bit is live: a node the branch owns may compute it (a
        state's clip's ``time_left``), and the early kernel then reads the value it left last frame (module doc)."""
        return {}

    def input_weights(self):
        """{pose input port: Weight} the node gives that input on the way to the output (module doc); others: 1."""
        return {}

    def sync_inputs(self):
        """{pose input port: sync group name} whose feeding samples without a group of their own join it (module doc)."""
        return {}

    def sync_member(self):
        """How this node plays when it joins a sync group, or None if it cannot: {"group": its own group name or None,
        "clip", "variant": of the clip it plays, "loop", "start", "rate": the field, "rate_port", "time_port": the
        input the group drives, optional "weight_port", "leads_port": inputs the group feeds its effective weight and
        whether it leads (for its events), "driven": the node as the plan runs it in the group} (module doc)."""
        return None

    def warnings(self) -> list[str]:
        """What runs but is probably not meant (a state no transition reaches), one line each; ``check`` prefixes
        the node id and reports them as it reports nodes that feed no output."""
        return []

    # Python hooks (module doc): ``op`` this node's OpSlices, ``rows`` int64 character indices.

    @classmethod
    def follow_edit(cls, old: dict, new: dict):
        """Editor hook: a node's JSON entry edited from ``old`` to ``new`` -> (``new`` with what refers to the edited
        part following it, ``{old port name: new port name}`` for links to follow); by default nothing follows."""
        return new, {}

    def write_input(self, op: OpSlices, rows: np.ndarray):
        """Hook of graph inputs: a ``check(value) -> write()`` for what the caller sets on characters ``rows``."""
        raise TypeError(f"node {self.id!r} (type {self.type!r}) is not a graph input: the caller cannot set it")

    def reset(self, op: OpSlices, rows: np.ndarray, state: np.ndarray):
        """Hook: set characters ``rows`` of this op to ``state``, its state row at the reset time."""
        op.st[rows] = state

    def teleport(self, op: OpSlices, rows: np.ndarray, pos_delta: np.ndarray, rot_delta: np.ndarray):
        """Hook: characters ``rows`` moved by ``pos_delta`` (n, 3) m and turned by ``rot_delta`` (n, 4); default nothing."""


REGISTRY: dict = {}


def register(kernel, tile=None, early=None, closing=None):
    """Class decorator: add a node model with its numba ``kernel`` (optional: lane ``tile`` kernel, ``early`` kernel,
    ``closing`` kernel ``(par, st, sig, why)``: called for a gated op before its branch stops or restarts it,
    ``animgraph.gates``)."""

    def wrap(cls):
        name = cls.model_fields["type"].default
        if name in REGISTRY:
            raise ValueError(f"node type {name!r} registered twice")
        cls.KERNEL = staticmethod(kernel)  # a numba dispatcher would otherwise bind as a method
        cls.TILE_KERNEL = staticmethod(tile) if tile is not None else None
        cls.EARLY_KERNEL = staticmethod(early) if early is not None else None
        cls.CLOSING_KERNEL = staticmethod(closing) if closing is not None else None
        REGISTRY[name] = cls
        return cls

    return wrap


@njit(cache=True)
def slot(pose, i):
    """Pose slot ``i`` as a tuple of six 2-D (J, 3|4) views."""
    return (pose[0][i], pose[1][i], pose[2][i], pose[3][i], pose[4][i], pose[5][i])
