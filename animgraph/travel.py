"""Travel through a state machine: the first transition from every state towards every other, found once at plan time.

A machine's transitions are the edges of a directed graph over its states (a transition
``from: "any"`` is an edge from every state but its target).  Travel takes a shortest path by
number of transitions, whatever their conditions; among equally short paths, the one a
breadth-first search from the current state finds first, expanding each state's transitions
in declaration order (networkx's search, with the graph's edges added in that order).  The
table it gives is what a compiled step follows, one hop per transition: nothing is searched
per frame.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

ANY = -1  # a transition's source meaning every state


def transition_graph(n_states, transitions):
    """``networkx.DiGraph`` of states ``0 .. n_states-1``; edge ``(a, b)`` holds ``transition``, the index of the first
    declared transition from ``a`` (or from ``ANY``) to ``b``.  ``transitions``: (from, to) pairs, declaration order."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n_states))
    for k, (src, dst) in enumerate(transitions):
        if not 0 <= dst < n_states or not (src == ANY or 0 <= src < n_states):
            raise ValueError(f"transition {k}: states ({src}, {dst}) out of range for {n_states} states")
        for a in (range(n_states) if src == ANY else (src,)):
            if a != dst and not graph.has_edge(a, dst):  # the first declared one between two states is the one taken
                graph.add_edge(a, dst, transition=k)
    return graph


def next_transitions(n_states, transitions):
    """(n_states, n_states) int64: ``[s, t]`` the index of the transition travel takes first from state ``s`` towards
    state ``t``; -1 when ``s == t`` or no path leads there."""
    graph = transition_graph(n_states, transitions)
    table = np.full((n_states, n_states), -1, np.int64)
    for s in range(n_states):
        parent = dict(nx.bfs_predecessors(graph, s))  # successors expanded in edge insertion (declaration) order
        for t in parent:
            first = t
            while parent[first] != s:
                first = parent[first]
            table[s, t] = graph.edges[s, first]["transition"]
    return table


def travel_path(table, transitions, src, dst):
    """The states travel visits from ``src`` to ``dst`` (both included) by following ``table``; [] when unreachable."""
    path = [src]
    while path[-1] != dst:
        k = table[path[-1], dst]
        if k < 0:
            return []
        path.append(transitions[k][1])
    return path
