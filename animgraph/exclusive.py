"""Which nodes a graph needs only through one input port: what a branch that is not taken may skip.

A state machine needs the sub-graph feeding a state's pose input only while that state is
active, a one-shot its ``shot`` input only while it plays, a blend space an entry only at a
non-zero weight (DESIGN.md, "Branches that only run when needed").  The nodes such a port
owns are those whose every path to a graph output runs through that port: remove the
port's link and they reach no output.  A node that also feeds anything else (a condition,
another state, an output) is not owned and always runs.
"""

from __future__ import annotations

import networkx as nx


def link_graph(links):
    """``networkx.MultiDiGraph`` of the nodes in ``links`` (``("src.port", "dst.port")`` pairs); each edge keyed by
    ``"dst_port"`` and holding ``src_port``."""
    graph = nx.MultiDiGraph()
    for src, dst in links:
        (a, a_port), (b, b_port) = (ref.split(".", 1) for ref in (src, dst))
        graph.add_edge(a, b, key=b_port, src_port=a_port)
    return graph


def owned_by_port(graph, outputs, node, port):
    """The nodes of ``graph`` (``link_graph``) that reach the ``outputs`` (node ids) only through input ``port`` of
    ``node`` (or a list of ports: through any of them); empty if the port is unlinked."""
    ports = {port} if isinstance(port, str) else set(port)
    feeding = [(a, b, k) for a, b, k in graph.in_edges(node, keys=True) if k in ports]
    if not feeding:
        return set()
    cut = graph.copy()
    cut.remove_edges_from(feeding)
    upstream = set().union(*(nx.ancestors(graph, a) | {a} for a, _, _ in feeding))
    return (upstream & _reaching(graph, outputs)) - _reaching(cut, outputs)


def _reaching(graph, outputs):
    """The ``outputs`` in ``graph`` and every node with a path to one of them."""
    found = set()
    for out in outputs:
        if out in graph:
            found |= nx.ancestors(graph, out) | {out}
    return found


def owned_by_ports(links, outputs, node, ports):
    """``{port: owned nodes}`` for several input ``ports`` of ``node`` (``owned_by_port``); a node owned by none of them
    is shared.  ``links`` as ``link_graph`` takes them."""
    graph = link_graph(links)
    return {port: owned_by_port(graph, outputs, node, port) for port in ports}
