"""Sync groups at check time: which samples play in step, and the weight graph their clock reads.

A sample joins a group by its ``sync_group`` field, or by feeding an input a node puts in a group
(``Node.sync_inputs``: a blend space's entries) when it names none of its own.  For each group the
check adds one ``sync_group`` node (``nodes/sync_group.py``, id ``__sync_<group>``) and links its
``<sample>_time`` outputs into the members' ``time`` inputs, so the schedule runs it after every
signal its weights read and before its members.  A member runs as its ``sync_member()["driven"]`` copy:
a looping sample cut to its whole gait cycles (``cycles``), so that its loop wraps where its pose repeats.

A member's *effective weight* is the largest, over paths along pose links from it to a graph output,
of the product of the weights the nodes on the path give the inputs it enters by
(``Node.input_weights``).  Here those paths become a small graph: its vertices the members and every
node on such a path, its edges the pose links between them, each with its weight's source (a linked
signal, which becomes an input of the group node, or a constant folded from an unlinked field).
"""

from __future__ import annotations

import math

import networkx as nx

from .errors import GraphError

PREFIX = "__sync_"  # id of a group's node: PREFIX + group name


def add_groups(nodes, index, ports, feeds, file, make_ports):
    """Add a ``sync_group`` node per group to ``nodes``/``index``/``ports`` and its links to ``feeds`` (in place).

    ``make_ports(node)`` -> (inputs, outputs) dicts of a node's Ports (``check._ports``).
    """
    groups = _groups(nodes, feeds)
    if not groups:
        return
    from .node import REGISTRY

    cls = REGISTRY["sync_group"]
    for name, members in sorted(groups.items()):
        gid = PREFIX + name
        if gid in nodes:
            raise GraphError(f"node id {gid!r} is the sync group {name!r}'s: rename the node", gid, None, file)
        fields, links = _group_fields(name, members, nodes, ports, feeds, file)
        try:
            node = cls.model_validate({"id": gid, "type": "sync_group", **fields})
        except ValueError as e:
            raise GraphError(f"sync group {name!r}: {e}", members[0], "sync_group", file) from None
        nodes[gid], index[gid] = node, len(index)
        ports[gid] = make_ports(node)
        for dst, src in links:
            feeds[dst] = src


def _groups(nodes, feeds):
    """{group name: [member node ids in file order]}."""
    owner = {}
    for nid, node in nodes.items():
        member = node.sync_member()
        if member is not None and member["group"] is not None:
            owner[nid] = member["group"]
    for nid, node in nodes.items():
        for port, group in node.sync_inputs().items():
            for up in _upstream(nid, port, nodes, feeds):
                member = nodes[up].sync_member()
                if member is not None and member["group"] is None:
                    owner.setdefault(up, group)
    groups = {}
    for nid in nodes:
        if nid in owner:
            groups.setdefault(owner[nid], []).append(nid)
    return groups


def _upstream(nid, port, nodes, feeds):
    """Node ids whose output reaches input ``port`` of ``nid`` through links (any depth)."""
    seen, todo = set(), [feeds[(nid, port)][0]] if (nid, port) in feeds else []
    while todo:
        up = todo.pop()
        if up in seen:
            continue
        seen.add(up)
        todo += [src for (dst, _), (src, _) in feeds.items() if dst == up]
    return sorted(seen)


def _group_fields(name, members, nodes, ports, feeds, file):
    """The group node's fields and the links to add ((dst id, port), (src id, port))."""
    signals, sources, links = [], {}, []

    def signal_input(src, kind):
        if src not in sources:
            sources[src] = len(signals)
            signals.append(kind)
        return sources[src]

    vertices, sinks, edges = _weight_graph(members, nodes, ports, feeds)
    rows = []
    for sid in members:
        m = nodes[sid].sync_member()
        if (sid, m["time_port"]) in feeds:
            raise GraphError(f"in sync group {name!r} its {m['time_port']!r} input is linked from "
                             f"{'.'.join(feeds[(sid, m['time_port'])])}: the group gives its time (unlink it, or take "
                             "the sample out of the group)", sid, m["time_port"], file)
        rate_src = feeds.get((sid, m["rate_port"]))
        rows.append({"sample": sid, "clip": m["clip"], "variant": m["variant"], "loop": m["loop"], "start": m["start"], "rate": m["rate"],
                     "rate_input": -1 if rate_src is None else signal_input(rate_src, "scalar"),
                     "vertex": vertices[sid]})
        links.append(((sid, m["time_port"]), (PREFIX + name, f"{sid}_time")))
        for port, out in ((m.get("weight_port"), "weight"), (m.get("leads_port"), "leads")):
            if port is not None and (sid, port) not in feeds:  # its events' weight and voice, unless linked by hand
                links.append(((sid, port), (PREFIX + name, f"{sid}_{out}")))
        nodes[sid] = m["driven"]
    out_edges = []
    for src, dst, port in edges:
        w = nodes[dst].input_weights().get(port)
        edge = {"src": vertices[src], "dst": vertices[dst]}
        edge |= {"input": -1, "offset": 1.0} if w is None else _term(w, dst, nodes, ports, feeds, signal_input, file)
        out_edges.append(edge)
    for src, k in sources.items():
        links.append(((PREFIX + name, f"in{k}"), src))
    fields = {"members": rows, "signals": signals, "vertices": len(vertices), "sinks": sorted(sinks),
              "edges": out_edges}
    return fields, links


def _term(w, nid, nodes, ports, feeds, signal_input, file):
    """An edge's weight fields for ``Weight`` ``w`` of node ``nid``: a linked signal's input, else a constant."""
    ins, outs = ports[nid]
    range_ = {"between": tuple(w.between)} if w.between is not None else {"scale": w.scale, "offset": w.offset}
    if w.port in outs:  # an early output: the node decides it before the group runs
        return {"input": signal_input((nid, w.port), outs[w.port].signal)} | range_
    if w.port not in ins:
        raise GraphError(f"input_weights names no port {w.port!r}", nid, w.port, file)
    if (nid, w.port) in feeds:
        return {"input": signal_input(feeds[(nid, w.port)], ins[w.port].signal)} | range_
    x = float(getattr(nodes[nid], w.port, 0.0) or 0.0)
    if w.between is not None:
        value = 1.0 if w.between[0] <= math.floor(x + 0.5) <= w.between[1] else 0.0
    else:
        value = min(max(w.offset + w.scale * x, 0.0), 1.0)
    return {"input": -1, "offset": value}


def _weight_graph(members, nodes, ports, feeds):
    """({node id: vertex}, sink vertices, [(src, dst, dst port)]): the pose paths from the members to the outputs.

    Vertices are numbered members first; edges come in an order where every destination's own edges come first
    (``sync_group.effective_weights`` reads them so).
    """
    dag = nx.DiGraph()
    for (dst, dport), (src, sport) in feeds.items():
        if ports[src][1][sport].signal == "pose":
            dag.add_edge(src, dst)
            dag.edges[src, dst].setdefault("ports", []).append(dport)
    sinks = {nid for nid in dag if getattr(nodes[nid], "GRAPH_OUTPUT", False)}
    keep = set(members)
    for sid in members:
        if sid in dag:
            keep |= {v for v in nx.descendants(dag, sid) if v in sinks or nx.descendants(dag, v) & sinks}
    sub = dag.subgraph(keep)
    vertices = {sid: i for i, sid in enumerate(members)}
    for nid in sorted(keep - set(members)):
        vertices[nid] = len(vertices)
    edges = []
    for nid in reversed(list(nx.topological_sort(sub))):
        for dst in sorted(sub.successors(nid)):
            edges += [(nid, dst, port) for port in sub.edges[nid, dst]["ports"]]
    return vertices, {vertices[nid] for nid in keep & sinks}, edges
