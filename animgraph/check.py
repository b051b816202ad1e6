"""Graph checks with networkx: links, ports, signal kinds, pose spaces, cycles, reachability.

``check(graph)`` returns a ``Checked`` (the schedule and the resolved port table)
or raises ``GraphError`` naming the file, node id and port.  Nodes that feed no
output are reported as ``GraphWarning``s and left out of the schedule; so is what a node's
own ``warnings()`` says (a state machine's unreachable state).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import networkx as nx

from . import exclusive
from .errors import GraphError
from .node import SIGNALS
from .sync import EVENT_WEIGHTS, add_event_weights, add_groups


class GraphWarning(UserWarning):
    """A graph that runs but probably not as meant (e.g. nodes that feed no output)."""


@dataclass
class Checked:
    """A checked graph: schedule, ports and where each input comes from."""

    order: list  # node ids that feed an output, in topological (then file) order
    pruned: list  # node ids that feed no output
    nodes: dict  # id -> node model
    inputs: dict  # id -> {port name: Port}
    outputs: dict  # id -> {port name: Port}
    feeds: dict  # (dst id, dst port) -> (src id, src port)
    spaces: dict = field(default_factory=dict)  # (id, port, "in"|"out") -> "local"|"global"|"any"
    warnings: list = field(default_factory=list)
    dag: nx.DiGraph = None
    # The ops in the order they run: (node id, early) pairs, a node with an early kernel twice (``animgraph.node``).
    walk: list = field(default_factory=list)
    # node id -> [(branch node id, bit mask)]: the branches an op is needed only through (``animgraph.exclusive``).
    gates: dict = field(default_factory=dict)

    def consumers(self, src):
        """(dst id, dst port) pairs fed by output ``src = (id, port)``."""
        return [dst for dst, s in self.feeds.items() if s == src]


def _split(ref, what, index, file):
    node, _, port = ref.partition(".")
    if not node or not port:
        raise GraphError(f"link {index}: {what} {ref!r} is not 'node.port'", file=file)
    return node, port


def _ports(node, file):
    ins = {p.name: p for p in node.inputs()}
    outs = {p.name: p for p in node.outputs()}
    for p in (*ins.values(), *outs.values()):
        if p.signal not in SIGNALS:
            raise GraphError(f"port signal {p.signal!r} is not one of {', '.join(SIGNALS)}", node.id, p.name, file)
    return ins, outs


def _link(index, link, ports, feeds, file):
    """Check one link and record which output feeds which input."""
    (src, sport), (dst, dport) = (_split(link[0], "source", index, file), _split(link[1], "destination", index, file))
    for nid, port in ((src, sport), (dst, dport)):
        if nid not in ports:
            raise GraphError(f"link {link[0]} -> {link[1]}: unknown node {nid!r}", nid, port, file)
    outs, ins = ports[src][1], ports[dst][0]
    if sport not in outs:
        raise GraphError(
            f"unknown output port {sport!r} in link {link[0]} -> {link[1]} (outputs: {', '.join(outs) or 'none'})",
            src, sport, file,
        )
    if dport not in ins:
        raise GraphError(
            f"unknown input port {dport!r} in link {link[0]} -> {link[1]} (inputs: {', '.join(ins) or 'none'})",
            dst, dport, file,
        )
    if (dst, dport) in feeds:
        other = ".".join(feeds[(dst, dport)])
        raise GraphError(f"input fed twice: by {other} and by {link[0]}", dst, dport, file)
    a, b = outs[sport].signal, ins[dport].signal
    if a != b:
        raise GraphError(f"signal mismatch: {link[0]} is {a}, {link[1]} takes {b}", dst, dport, file)
    feeds[(dst, dport)] = (src, sport)


EARLY = ":early"  # suffix of a node's early-kernel vertex in the schedule graph (never part of a node id)


def _base(vertex):
    """The node id of a schedule vertex (a node, or its early kernel)."""
    return vertex[:-len(EARLY)] if vertex.endswith(EARLY) else vertex


def _schedule(dag, index, feeds, file):
    """Topological order (file order among equals, a node's early kernel just before it); on failure name a cycle."""
    try:
        return list(nx.lexicographical_topological_sort(
            dag, key=lambda v: (index[_base(v)], 0 if v.endswith(EARLY) else 1)))
    except nx.NetworkXUnfeasible:
        found = nx.find_cycle(dag)  # a node's early outputs feeding its own early inputs: a cycle within the node
        cycle = [(_base(u), _base(v)) for u, v in found if _base(u) != _base(v)] or [(_base(found[0][0]),) * 2]
        path = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
        dst, src = cycle[0][1], cycle[0][0]
        port = next((p for (d, p), (s, _) in feeds.items() if d == dst and s == src), None)
        raise GraphError(f"cycle: {path}", dst, port, file) from None


def _schedule_graph(nodes, feeds, late=frozenset()):
    """The schedule's DiGraph: a vertex per node, and one more before it for its early kernel, which takes the
    links to and from its early ports (``Node.early_ports``) except the ``late`` inputs ((node id, port) pairs:
    read as the last frame left them)."""
    early = {nid: node.early_ports() for nid, node in nodes.items() if type(node).EARLY_KERNEL is not None}
    dag = nx.DiGraph()
    dag.add_nodes_from(nodes)
    dag.add_edges_from((nid + EARLY, nid) for nid in early)
    for (dst, dport), (src, sport) in feeds.items():
        u = src + EARLY if sport in early.get(src, ((), ()))[1] else src
        v = dst + EARLY if dport in early.get(dst, ((), ()))[0] and (dst, dport) not in late else dst
        dag.add_edge(u, v)
    return dag


def _reaches(dag, nodes):
    """``reaches(nid, (src, port))``: whether node ``nid`` runs before signal ``src.port`` is written in ``dag`` (the
    schedule graph: an early output's vertex is its node's early kernel)."""
    def reaches(nid, signal):
        src, port = signal
        cls = type(nodes[src])
        early = cls.EARLY_KERNEL is not None and port in nodes[src].early_ports()[1]
        return nx.has_path(dag, nid, src + EARLY if early else src)

    return reaches


def _gates(nodes, feeds, sinks):
    """({node id: [(branch node id, bit mask)]}, late inputs): the branches (``Node.branch_bits``) each node is
    needed only through, and the branch conditions (``Node.branch_conditions``) read a frame late because the
    branch's own nodes compute them.  A node needed by several branches of one node, or by anything else, is not
    gated; nor is one that only feeds a branch's conditions (it runs before the node decides, as any condition)."""
    branching = [nid for nid, node in nodes.items() if type(node).EARLY_KERNEL is not None and node.branch_bits()]
    if not branching:
        return {}, set()
    graph = exclusive.link_graph([(f"{s}.{sp}", f"{d}.{dp}") for (d, dp), (s, sp) in feeds.items()])
    gates, late = {}, set()
    for m in branching:
        groups = {}
        for port, bit in nodes[m].branch_bits().items():
            groups.setdefault(bit, ([], []))[0].append(port)
        for port, bit in nodes[m].branch_conditions().items():
            groups.setdefault(bit, ([], []))[1].append(port)
        for bit, (ports, conds) in sorted(groups.items()):
            owned = exclusive.owned_by_port(graph, sinks, m, ports + conds)
            feeding = {feeds[(m, p)][0] for p in ports if (m, p) in feeds} & owned
            gated = set().union(*(nx.ancestors(graph, a) | {a} for a in feeding)) & owned
            gated |= set().union(*(nx.descendants(graph, a) for a in gated)) & owned
            late |= {(m, c) for c in conds if (m, c) in feeds and feeds[(m, c)][0] in gated}
            for nid in sorted(gated):
                gates.setdefault(nid, []).append((m, 1 << bit))
    return gates, late


def has_constant(node, port):
    """True if an unlinked signal input ``port`` takes its value from the node's field of that name."""
    return port.signal != "pose" and port.name in type(node).model_fields and getattr(node, port.name) is not None


def check(graph, file=None, warn=True, event_weights=True):
    """Check a Graph; returns a Checked schedule or raises GraphError naming node and port.  ``event_weights``: add
    the node giving samples their events' weights (``animgraph.sync.add_event_weights``; a plan without events
    needs none)."""
    file = file if file is not None else graph.path
    nodes, index, ports = {}, {}, {}
    for i, node in enumerate(graph.nodes):
        if node.id in nodes:
            raise GraphError("duplicate node id", node.id, None, file)
        if type(node).PLANNED:
            raise GraphError(f"a {node.type!r} node is made by the check, not written in a graph (animgraph.sync)",
                             node.id, None, file)
        nodes[node.id], index[node.id] = node, i
        ports[node.id] = _ports(node, file)

    feeds = {}
    for i, link in enumerate(graph.links):
        _link(i, link, ports, feeds, file)
    add_groups(nodes, index, ports, feeds, file, lambda node: _ports(node, file))
    outputs = [nid for nid, node in nodes.items() if getattr(node, "GRAPH_OUTPUT", False)]
    base = _schedule_graph(nodes, feeds, _gates(nodes, feeds, outputs)[1])
    event_notes = add_event_weights(nodes, index, ports, feeds, file, lambda node: _ports(node, file),
                                    _reaches(base, nodes)
                                    ) if event_weights and nx.is_directed_acyclic_graph(base) else []  # else: named below

    # The events' weights only watch: the links into and out of their node make nothing needed (no gate follows them).
    watched = {dst: src for dst, src in feeds.items() if EVENT_WEIGHTS not in (dst[0], src[0])}
    gates, late = _gates(nodes, watched, outputs)
    dag = _schedule_graph(nodes, feeds, late)
    walk = _schedule(dag, index, feeds, file)
    order = [v for v in walk if not v.endswith(EARLY)]

    sinks = [nid for nid in order if getattr(nodes[nid], "GRAPH_OUTPUT", False)]
    if not sinks:
        raise GraphError("the graph has no output node (add a node of type 'output')", file=file)
    used = set(sinks)
    for nid in sinks:
        used |= {_base(v) for v in nx.ancestors(dag, nid)}
    for nid in order:  # a node that feeds no output may be half-built: only pruned
        for name, port in ports[nid][0].items():
            if nid in used and (nid, name) not in feeds and not port.optional and not has_constant(nodes[nid], port):
                raise GraphError(f"required {port.signal} input is not linked", nid, name, file)
    pruned = [nid for nid in order if nid not in used]
    notes = [f"node {nid!r} feeds no output: left out of the plan" for nid in pruned] + event_notes
    gates = {nid: marks for nid, marks in gates.items() if nid in used}
    if gates:  # an early kernel runs before the ops its branches gate (no cycle: module exclusive)
        dag.add_edges_from((m + EARLY, nid) for nid, marks in gates.items() for m, _ in marks)
        walk = _schedule(dag, index, feeds, file)
    notes += [f"node {node.id!r}: {note}" for node in graph.nodes for note in node.warnings()]
    if warn:
        for note in notes:
            warnings.warn(f"{file}: {note}" if file else note, GraphWarning, stacklevel=2)

    checked = Checked(
        order=[nid for nid in order if nid in used],
        pruned=pruned,
        nodes=nodes,
        inputs={nid: ports[nid][0] for nid in nodes},
        outputs={nid: ports[nid][1] for nid in nodes},
        feeds=feeds,
        warnings=notes,
        dag=dag,
        walk=[(_base(v), v.endswith(EARLY)) for v in walk if _base(v) in used],
        gates=gates,
    )
    _resolve_spaces(checked, order, file)
    return checked


def _resolve_spaces(checked, order, file):
    """Pose space of every pose port; 'any' ports adopt the space of the node's 'any' pose inputs."""
    spaces = checked.spaces
    for nid in order:
        adopted, adopted_from = None, None
        for name, port in checked.inputs[nid].items():
            if port.signal != "pose":
                continue
            src = checked.feeds.get((nid, name))
            got = spaces[(*src, "out")] if src else "any"
            want = port.space or "any"
            if want != "any" and got != "any" and got != want:
                raise GraphError(
                    f"space mismatch: {'.'.join(src)} is a {got} pose, this input takes a {want} pose", nid, name, file
                )
            if want == "any" and got != "any":
                if adopted is not None and adopted != got:
                    raise GraphError(
                        f"space mismatch: {got} pose here but a {adopted} pose on input {adopted_from!r}",
                        nid, name, file,
                    )
                adopted, adopted_from = got, name
            spaces[(nid, name, "in")] = got if want == "any" else want
        for name, port in checked.outputs[nid].items():
            if port.signal == "pose":
                want = port.space or "any"
                spaces[(nid, name, "out")] = (adopted or "any") if want == "any" else want
