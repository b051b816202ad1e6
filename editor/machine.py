"""A state machine node seen as a graph of its own: states as nodes, transitions as links (no dearpygui here).

``MachineDoc`` answers what ``canvas.Canvas`` asks of a document (``graph.nodes``,
``graph.links``, ``ports``, ``position``, ``add_node``, ``connect``, ...) for the
``state_machine`` node ``node_id`` of a ``Document``, and turns each edit into one edit of
that node's fields (``Document.set_fields``), so the graph file stays the only truth and
the graph's undo history is the canvas's: adding a state adds the outer node's pose
input, removing one drops its transitions and the links into its pins, renaming one
renames its pins (the node's ``follow_edit``).  Each state is a canvas node with one input
pin (transitions into it) and one output pin (transitions out); the pseudo state ``any``
has only an output, for the transitions ``from: "any"``.  A transition is the link
``<from>.out -> <to>.in``; the k-th link is the k-th transition of the file.  Where states
are drawn is stored under ``editor.states.<node id>`` in the graph file.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace

from animgraph.node import Port

from . import layout
from .document import EditError

ANY = "any"
STATE, START, ANY_TYPE = "state", "start state", "any state"
ENTER = Port("in", "transition", "", "transitions into this state")
LEAVE = Port("out", "transition", "", "transitions out of this state: drag to another state's 'in'")
TRANSITION_FIELDS = ("from", "to", "when", "above", "below", "duration", "blend", "halflife", "priority")


def condition(t):
    """A transition's condition (a dict as the file holds it) in a few words: "speed > 0.3", "go is true", "always"."""
    when = t.get("when")
    if when is None:
        return "always"
    if "above" in t or "below" in t:
        return " and ".join(([f"{when} > {t['above']:g}"] if "above" in t else []) +
                            ([f"{when} < {t['below']:g}"] if "below" in t else []))
    return f"{when} is true"


def describe(t):
    """One line for a transition as the file holds it (a dict): its condition, duration, blend and priority."""
    return (f"{t['from']} -> {t['to']}: when {condition(t)}; {t.get('duration', 0.25):g} s "
            f"{t.get('blend', 'inertialize')}, priority {t.get('priority', 0)}")


@dataclass(frozen=True)
class StateItem:
    """A canvas node: a state's name (or ``any``) and its kind (``state``, ``start state``, ``any state``)."""

    id: str
    type: str


class MachineGraph:
    """What the canvas reads of a graph: ``nodes`` (StateItems) and ``links`` ([src ref, dst ref] per transition)."""

    def __init__(self, machine):
        names = [s.name for s in machine.states]
        self.nodes = [StateItem(n, START if n == machine.start else STATE) for n in names] + [StateItem(ANY, ANY_TYPE)]
        self.links = [[f"{t.source}.out", f"{t.to}.in"] for t in machine.transitions]


class MachineDoc:
    """The state machine ``node_id`` of document ``doc`` as a canvas's document (edits go to ``doc``)."""

    def __init__(self, doc, node_id):
        self.doc, self.node_id = doc, node_id
        self._cache = None  # (doc revision, MachineGraph, positions)
        self.node()  # EditError now if there is no such machine

    # ------------------------------------------------------------ reading

    def node(self):
        """The machine's current node model (EditError once it is gone or no longer a state machine)."""
        node = next((n for n in self.doc.graph.nodes if n.id == self.node_id), None)
        if node is None or node.type != "state_machine":
            raise EditError(f"no state machine {self.node_id!r} in the graph")
        return node

    def _read(self):
        if self._cache is None or self._cache[0] != self.doc.revision:
            graph = MachineGraph(self.node())
            self._cache = (self.doc.revision, graph, self._placed(graph))
        return self._cache

    @property
    def graph(self):
        return self._read()[1]

    @property
    def revision(self):
        return self.doc.revision

    def states(self):
        """The state names, in file order."""
        return [s.name for s in self.node().states]

    def transitions(self):
        """The transitions as the file holds them (dicts with ``from`` and ``to``)."""
        return [t.model_dump(by_alias=True, exclude_defaults=True) | {"from": t.source, "to": t.to}
                for t in self.node().transitions]

    def ports(self, sid):
        """(inputs, outputs) of a state: transitions in, transitions out (``any``: out only)."""
        self._state(sid, allow_any=True)
        return ((), (LEAVE,)) if sid == ANY else ((ENTER,), (LEAVE,))

    def position(self, sid):
        return self._read()[2].get(sid, (0.0, 0.0))

    def _placed(self, graph):
        """Stored positions; the states without one laid out by Arrange beside them; ``any`` (unless stored) under
        the leftmost state, so its transitions run up and right into the states."""
        stored = self.doc.inner_positions(self.node_id)
        missing = [n.id for n in graph.nodes if n.id not in stored and n.id != ANY]
        placed = dict(stored)
        sizes = {n.id: layout.estimate_size(n.id, n.type, *self.ports(n.id)) for n in graph.nodes}
        if missing:
            left = max((x + sizes[k][0] for k, (x, _) in stored.items() if k in sizes and k != ANY), default=0.0)
            states = SimpleNamespace(nodes=[n for n in graph.nodes if n.id != ANY],
                                     links=[ln for ln in graph.links if not ln[0].startswith(ANY + ".")])
            laid = layout.arrange(states, sizes, origin=(left + 40.0 if stored else 40.0, 40.0))
            placed |= {k: laid[k] for k in missing}
        if ANY not in placed:
            boxes = [(x, y + sizes[k][1]) for k, (x, y) in placed.items() if k in sizes]
            placed[ANY] = (min(x for x, _ in boxes), max(y for _, y in boxes) + 40.0) if boxes else (40.0, 40.0)
        return placed

    def comments(self):
        return []

    # ------------------------------------------------------------ edits

    @contextmanager
    def batch(self):
        with self.doc.batch():
            yield

    def _set(self, **values):
        """Set the machine's fields (one undo step, with the states' stored positions kept to the states there)."""
        self.doc.set_fields(self.node_id, values)

    def _entry(self):
        node = self.node()
        return ([s.model_dump(exclude_defaults=True) | {"name": s.name} for s in node.states], self.transitions(),
                node.start)

    def add_node(self, type=STATE, node_id=None, pos=(0.0, 0.0), **fields):
        """Add a state (``type`` must be ``state``) named ``node_id`` (default: a free name) at ``pos``; its name."""
        if type != STATE:
            raise EditError(f"a state machine's canvas adds states, not {type!r} nodes")
        states, _, _ = self._entry()
        name = node_id or self._free_name()
        drawn = self._drawn()
        with self.doc.batch():
            self._set(states=states + [{"name": name, **fields}])
            self.doc.move_inner(self.node_id, drawn | {name: pos})
        return name

    def _drawn(self):
        """{state: position} of every state as drawn now (laid-out ones included): stored together with an edit
        that places one, so that the others stay where they are drawn."""
        return {n.id: tuple(float(round(v)) for v in self.position(n.id)) for n in self.graph.nodes}  # whole pixels

    def probe(self, type=STATE, **fields):
        """(name, inputs, outputs) a new state would have (nothing is added)."""
        if type != STATE:
            raise EditError(f"a state machine's canvas adds states, not {type!r} nodes")
        name = fields.get("id") or self._free_name()
        return name, (ENTER,), (LEAVE,)

    def _free_name(self):
        taken = set(self.states())
        return next(f"state{k}" for k in range(1, len(taken) + 2) if f"state{k}" not in taken)

    def remove_node(self, sid):
        """Remove a state with its transitions (the start moves to the first state left); the last one stays."""
        if sid == ANY:
            raise EditError("'any' is not a state: remove its transitions instead")
        self._state(sid)
        states, transitions, start = self._entry()
        if len(states) == 1:
            raise EditError(f"state {sid!r} is the machine's only state: a machine needs one")
        states = [s for s in states if s["name"] != sid]
        transitions = [t for t in transitions if sid not in (t["from"], t["to"])]
        drawn = {k: v for k, v in self._drawn().items() if k != sid}
        with self.doc.batch():
            self._set(states=states, transitions=transitions, start=states[0]["name"] if start == sid else start)
            self.doc.move_inner(self.node_id, drawn, keep=set(drawn))

    def rename(self, sid, new):
        """Rename a state: the start, its transitions, the outer node's pins and their links follow."""
        if sid == ANY:
            raise EditError("'any' stands for every state and keeps its name")
        self._state(sid)
        if new == sid:
            return
        if new == ANY or new in self.states():
            raise EditError(f"state name {new!r} is taken")
        states, _, _ = self._entry()
        drawn = self._drawn()
        drawn[new] = drawn.pop(sid)
        with self.doc.batch():
            self._set(states=[s | {"name": new} if s["name"] == sid else s for s in states])
            self.doc.move_inner(self.node_id, drawn, keep=set(drawn))

    def set_start(self, sid):
        """Make ``sid`` the state at the first frame and after a reset."""
        self._state(sid)
        self._set(start=sid)

    def set_state_field(self, sid, field, value):
        """Set a field of state ``sid`` other than its name (``reset_on_enter``)."""
        if field == "name":
            return self.rename(sid, value)
        states, _, _ = self._entry()
        self._state(sid)
        self._set(states=[s | {field: value} if s["name"] == sid else s for s in states])

    def move_many(self, positions):
        """Place states (``{name: (x, y)}``): one undo step."""
        for sid in positions:
            self._state(sid, allow_any=True)
        self.doc.move_inner(self.node_id, self._drawn() | dict(positions))

    def move(self, sid, pos):
        self.move_many({sid: pos})

    # ------------------------------------------------------------ transitions

    def can_connect(self, src, dst):
        """None if a transition ``src -> dst`` ('state.out' -> 'state.in') may be added, else why not."""
        a, _, pa = src.partition(".")
        b, _, pb = dst.partition(".")
        if pa != "out" or pb != "in":
            return "a transition goes from a state's 'out' to another state's 'in'"
        if a not in self.states() + [ANY] or b not in self.states():
            return f"no state {a if a not in self.states() + [ANY] else b!r}"
        if a == b:
            return f"state {a!r}: a state's transition to itself is not allowed"
        return None

    def connect(self, src, dst, **fields):
        """Add a transition ``src -> dst`` (a new one even if the pair has one: each has its own condition)."""
        why = self.can_connect(src, dst)
        if why:
            raise EditError(why)
        self.add_transition(src.partition(".")[0], dst.partition(".")[0], **fields)

    def add_transition(self, source, to, **fields):
        """Add a transition from state ``source`` (or ``any``) to ``to``; its index."""
        _, transitions, _ = self._entry()
        self._set(transitions=transitions + [{"from": source, "to": to, **fields}])
        return len(transitions)

    def disconnect(self, src, dst):
        """Remove the last transition ``src -> dst``."""
        pair = [src.partition(".")[0], dst.partition(".")[0]]
        _, transitions, _ = self._entry()
        k = next((k for k in reversed(range(len(transitions)))
                  if [transitions[k]["from"], transitions[k]["to"]] == pair), None)
        if k is None:
            raise EditError(f"no transition {pair[0]} -> {pair[1]}")
        self.remove_transition(k)

    def remove_transition(self, k):
        _, transitions, _ = self._entry()
        self._transition(transitions, k)
        self._set(transitions=transitions[:k] + transitions[k + 1:])

    def remove_transitions(self, ks):
        """Remove several transitions (one undo step)."""
        _, transitions, _ = self._entry()
        for k in ks:
            self._transition(transitions, k)
        self._set(transitions=[t for i, t in enumerate(transitions) if i not in set(ks)])

    def set_transition(self, k, field, value):
        """Set one field of transition ``k`` (``None`` clears an optional one: ``when``, ``above``, ``below``).

        A condition is a bool or a scalar throughout, so that every edit is one the user can make: a ``when``
        naming a scalar condition that other transitions bound takes their bounds if this transition has none, and
        a bound set past the other one (``below`` under ``above``) replaces the range (the other bound goes)."""
        self.set_transition_fields(k, {field: value})

    def set_transition_fields(self, k, values):
        """Set fields of transition ``k`` at once (one undo step); see ``set_transition``."""
        for field in values:
            if field not in TRANSITION_FIELDS:
                raise EditError(f"a transition has no field {field!r} (fields: {', '.join(TRANSITION_FIELDS)})")
        _, transitions, _ = self._entry()
        t = dict(self._transition(transitions, k))
        for field, value in values.items():
            if value is None:
                t.pop(field, None)
            else:
                t[field] = value
        for mine, other in (("above", "below"), ("below", "above")):
            if values.get(mine) is not None and other not in values and t.get(other) is not None and \
                    not t.get("above", -1e300) < t.get("below", 1e300):
                del t[other]
        if t.get("when") is None:  # no condition: always holds, and no bounds
            t = {f: v for f, v in t.items() if f not in ("above", "below")}
        elif "when" in values and "above" not in t and "below" not in t:
            bounded = next((o for i, o in enumerate(transitions) if i != k and o.get("when") == t["when"]
                            and ("above" in o or "below" in o)), None)
            if bounded is not None:
                t |= {f: bounded[f] for f in ("above", "below") if f in bounded}
        self._set(transitions=transitions[:k] + [t] + transitions[k + 1:])

    # ------------------------------------------------------------ what the canvas cannot do here

    def linkable(self, ref, kind):
        return []

    def copy(self, ids):
        raise EditError("copy and paste work on the graph's canvas (a state is named by its pin on the machine)")

    def paste(self, fragment, offset=(0.0, 0.0)):
        raise EditError("copy and paste work on the graph's canvas")

    def add_comment(self, title, ids):
        raise EditError("comment frames are drawn on the graph's canvas")

    # ------------------------------------------------------------ internals

    def _state(self, sid, allow_any=False):
        if sid == ANY and allow_any or sid in self.states():
            return sid
        raise EditError(f"machine {self.node_id!r} has no state {sid!r} (states: {', '.join(self.states())})")

    @staticmethod
    def _transition(transitions, k):
        if not isinstance(k, int) or not 0 <= k < len(transitions):
            raise EditError(f"no transition {k!r} ({len(transitions)} transitions)")
        return transitions[k]
