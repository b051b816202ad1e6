"""Automatic node placement: columns by dependency depth, rows ordered to keep links short.

A node's column is the length of the longest chain of links feeding it; within a column
nodes are ordered by the mean row of what feeds them (one barycentre sweep) and stacked
by their height, estimated from their pin count.
"""

from __future__ import annotations

import networkx as nx

COLUMN = 210  # pixels between columns: the widest shipped node is about 190 px
ROW = 21  # pixels per pin line
GAP = 18  # pixels between nodes of a column


def arrange(graph, ports, origin=(20.0, 20.0)):
    """{node id: (x, y)} for every node of ``graph``; ``ports(id)`` gives its (inputs, outputs)."""
    dag = nx.DiGraph()
    dag.add_nodes_from(n.id for n in graph.nodes)
    dag.add_edges_from((src.split(".")[0], dst.split(".")[0]) for src, dst in graph.links)
    if not nx.is_directed_acyclic_graph(dag):
        return {}
    depth = {}
    for nid in nx.topological_sort(dag):
        depth[nid] = max((depth[p] + 1 for p in dag.predecessors(nid)), default=0)
    file_order = {n.id: i for i, n in enumerate(graph.nodes)}
    columns = {}
    for nid in sorted(depth, key=file_order.get):
        columns.setdefault(depth[nid], []).append(nid)
    row, out = {}, {}
    for c in sorted(columns):
        ids = columns[c]
        key = {nid: _mean([row[p] for p in dag.predecessors(nid)], file_order[nid]) for nid in ids}
        y = origin[1]
        for k, nid in enumerate(sorted(ids, key=lambda n: (key[n], file_order[n]))):
            row[nid] = k
            out[nid] = (round(origin[0] + COLUMN * c), round(y))
            ins, outs = ports(nid)
            y += ROW * (len(ins) + len(outs) + 1.5) + GAP
    return out


def _mean(values, default):
    return sum(values) / len(values) if values else default
