"""What a running instance's nodes are doing now, for tools that watch it (the editor's live views).

Plain reads of an ``Instance``'s signals and state, one character at a time: a state machine's
active state and running transition (by the node's ``ST`` field names), a blend space's point
and weights, a one-shot's weight, and whether a node ran in the last step.  Nothing here
writes to the instance or compiles anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import GraphError


@dataclass(frozen=True)
class MachineNow:
    """A state machine at the last step: the active state, its seconds, the transition showing (or None) and each
    state's weight in the pose."""

    state: str
    index: int
    time: float  # s in the active state
    transition: tuple | None  # (state left, state entered, progress in [0, 1]) while one shows
    weights: dict  # state name -> weight


@dataclass(frozen=True)
class SpaceNow:
    """A blend space at the last step: its parameter point ((x,) or (x, z): the linked input's, else the node's
    ``parameter`` field) and each entry's weight."""

    point: tuple
    weights: dict  # entry name -> weight


def _node(inst, node_id, kind=None):
    node = inst.plan.nodes.get(node_id)
    if node is None or (kind is not None and not node.type.startswith(kind)):
        what = f"a {kind} node" if kind else "a node"
        raise GraphError(f"{node_id!r} is not {what} of this plan", node_id, None, inst.plan.file)
    return node


def output(inst, node_id, port, character=0):
    """The first float of output ``port`` of ``node_id`` (a scalar's value, a bool or int as a float)."""
    at = inst.plan.located.get((node_id, port))
    if at is None:
        raise GraphError(f"output {port!r} of {node_id!r} is not a signal this plan keeps", node_id, port,
                         inst.plan.file)
    return float(inst.sig[character, at])


def input_value(inst, node_id, port, width=1, character=0):
    """The ``width`` floats linked into input ``port`` of ``node_id`` (None if the input is unlinked)."""
    for src, dst in inst.plan.graph.links:
        if dst == f"{node_id}.{port}":
            at = inst.plan.located.get(tuple(src.split(".", 1)))
            if at is None:
                return None
            return tuple(float(v) for v in inst.sig[character, at:at + width])
    return None


def op_state(inst, node_id, character=0):
    """The state row of ``node_id``'s op for one character (a view)."""
    from .executor import OP_STATE, OP_STATE_END

    row = inst.plan.ops[inst.plan.op(node_id)]
    return inst.st[character, row[OP_STATE]:row[OP_STATE_END]]


def machine(inst, node_id, character=0):
    """MachineNow of state machine ``node_id``."""
    from .nodes.state_machine import ST

    node = _node(inst, node_id, "state_machine")
    names = [s.name for s in node.states]
    st = op_state(inst, node_id, character)
    cur = int(st[ST.cur])
    transition = None
    source = int(st[ST.was])
    if st[ST.fade_length] > 0.0:
        transition = (names[source], names[cur], min(1.0, float(st[ST.fade] / st[ST.fade_length])))
    elif st[ST.active] > 0.5 and st[ST.length] > 0.0:
        transition = (names[source], names[cur], min(1.0, float(st[ST.elapsed] / st[ST.length])))
    weights = {s: output(inst, node_id, f"{s}_weight", character) for s in names}
    return MachineNow(names[cur], cur, float(st[ST.time]), transition, weights)


def blend_space(inst, node_id, character=0):
    """SpaceNow of blend space ``node_id`` (1-D: the point is (x,); 2-D: (x, z) of its vec3 parameter)."""
    node = _node(inst, node_id, "blend_space")
    two = node.type == "blend_space_2d"
    value = input_value(inst, node_id, "parameter", 3 if two else 1, character)
    if value is None:  # unlinked: the node's own parameter field
        field = node.parameter
        value = tuple(float(v) for v in field) if two else (float(field),)
    point = (value[0], value[2]) if two else (value[0],)
    return SpaceNow(point, {e.name: output(inst, node_id, f"{e.name}_weight", character) for e in node.entries})


def ran(inst, node_id, character=0):
    """Whether the op of ``node_id`` ran in the last step (False while a branch it alone serves is not live)."""
    if node_id not in inst.plan.order:
        return False
    return bool(inst.plan.running(node_id, inst.st)[character])


def input_weights(inst, node_id, character=0):
    """{input port: weight} of the pose inputs of a node that chooses among them, as it shows them now: a state
    machine's states and a blend space's entries (their ``_weight`` outputs), a select's chosen input (1), a
    blend's ``a`` and ``b`` (1 - alpha, alpha); {} for other nodes."""
    node = _node(inst, node_id)
    if node.type == "state_machine":
        return {s.name: output(inst, node_id, f"{s.name}_weight", character) for s in node.states}
    if node.type in ("blend_space_1d", "blend_space_2d"):
        return blend_space(inst, node_id, character).weights
    if node.type == "select":
        index = input_value(inst, node_id, "index", 1, character)
        k = int(round(index[0])) if index is not None else 0
        return {f"in{i}": float(i == min(max(k, 0), node.count - 1)) for i in range(node.count)}
    if node.type == "blend":
        alpha = input_value(inst, node_id, "alpha", 1, character)
        a = alpha[0] if alpha is not None else float(getattr(node, "alpha", 0.0) or 0.0)
        a = min(max(a, 0.0), 1.0)
        return {"a": 1.0 - a, "b": a}
    return {}


def link_value(inst, ref, character=0):
    """What output ``ref`` ('node.port') carries now, in a few words: a scalar's value and rate, a bool, an int, a
    vector, a pose's root speed (m/s; readable from a debug plan, ``compile(..., reuse_slots=False)``)."""
    import numpy as np

    node_id, _, port = ref.partition(".")
    signal = inst.plan.checked.outputs[node_id][port].signal
    value = np.asarray(inst.port(node_id, port).vel if signal == "pose" else inst.port(node_id, port))
    if inst.batch > 1:
        value = value[character]
    if signal == "pose":
        root = int(np.flatnonzero(np.asarray(inst.plan.skeleton.parents) < 0)[0])
        return f"pose: root speed {float(np.linalg.norm(value[root])):.3f} m/s"
    if signal == "scalar":
        return f"scalar: {value[0]:.4g} (rate {value[1]:.3g}/s)"
    if signal == "bool":
        return f"bool: {'true' if value[0] > 0.5 else 'false'}"
    if signal == "int":
        return f"int: {int(round(value[0]))}"
    if signal in ("vec3", "quat"):
        n = 3 if signal == "vec3" else 4
        return f"{signal}: ({', '.join(f'{v:.3g}' for v in value[:n])})"
    return f"{signal}: {len(value)} numbers"
