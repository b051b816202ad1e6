"""Sync groups at check time: which samples play in step, and the weight graph their clock reads.

A sample joins a group by its ``sync_group`` field, or by feeding an input a node puts in a group
(``Node.sync_inputs``: a blend space's entries) when it names none of its own.  For each group the
check adds one ``sync_group`` node (``nodes/sync_group.py``, id ``__sync_<group>``) and links its
``<sample>_time`` outputs into the members' ``time`` inputs, so the schedule runs it after every
signal its weights read and before its members.  A member runs as its ``sync_member()["driven"]`` copy:
a looping sample cut to its whole gait cycles (``cycles``), so that its loop wraps where its pose repeats.

A member's *effective weight* is the largest, over paths along pose links from it to a graph output,
of the product of the weights the nodes on the path give the inputs it enters by
(``Node.input_weights``).  Here those paths become a small graph (``animgraph.weights``): its
vertices the members and every node on such a path, its edges the pose links between them, each
with its weight's source (a linked signal, which becomes an input of the group node, or a constant
folded from an unlinked field).

The same weights go with events: after the groups, ``add_event_weights`` adds one ``event_weights``
node (``nodes/event_weights.py``, id ``__event_weights``) for the samples outside groups, linked
into their ``weight`` inputs (``Node.EVENT_WEIGHT``), unless every such weight is a constant 1.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from .errors import GraphError

PREFIX = "__sync_"  # id of a group's node: PREFIX + group name
EVENT_WEIGHTS = "__event_weights"  # id of the node giving samples outside groups their events' weights


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
    out_edges = _edge_fields(edges, vertices, nodes, ports, feeds, signal_input, file)
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
    for src, k in sources.items():
        links.append(((PREFIX + name, f"in{k}"), src))
    fields = {"members": rows, "signals": signals, "vertices": len(vertices), "sinks": sorted(sinks),
              "edges": out_edges}
    return fields, links


def add_event_weights(nodes, index, ports, feeds, file, make_ports, reaches):
    """Add the ``event_weights`` node and its links for the samples outside groups whose events' weight is not a
    constant 1 (in place, as ``add_groups``).  ``reaches(nid, (src, port))``: whether node ``nid``'s outputs lead to
    signal ``src.port`` in the schedule (a weight read downstream of its own sample would make a cycle: that sample
    keeps weight 1, and a note says so).  Returns the notes."""
    wanted = [nid for nid, node in nodes.items()
              if node.EVENT_WEIGHT is not None and (nid, node.EVENT_WEIGHT) not in feeds]
    notes = []
    while wanted:
        vertices, sinks, edges = _weight_graph(wanted, nodes, ports, feeds)
        reads = {src for _, dst, port in edges for src in _read(nodes[dst].input_weights().get(port), dst, ports, feeds)}
        late = [nid for nid in wanted if any(reaches(nid, src) for src in reads)]
        if not late:
            break
        notes += [f"node {nid!r}: its events carry weight 1: its weight reads a signal computed from its own output"
                  for nid in late]
        wanted = [nid for nid in wanted if nid not in late]
    if not wanted:
        return notes
    if EVENT_WEIGHTS in nodes:
        raise GraphError(f"node id {EVENT_WEIGHTS!r} is the events' weights': rename the node", EVENT_WEIGHTS, None, file)
    signals, sources = [], {}

    def signal_input(src, kind):
        if src not in sources:
            sources[src] = len(signals)
            signals.append(kind)
        return sources[src]

    out_edges = _edge_fields(edges, vertices, nodes, ports, feeds, signal_input, file)
    if not signals and _constant_weights(len(vertices), sinks, out_edges)[:len(wanted)].min(initial=1.0) == 1.0:
        return notes  # every weight a constant 1: what an unlinked weight input gives
    from .node import REGISTRY

    node = REGISTRY["event_weights"].model_validate(
        {"id": EVENT_WEIGHTS, "type": "event_weights", "sources": wanted, "signals": signals,
         "vertices": len(vertices), "sinks": sorted(sinks), "edges": out_edges})
    nodes[EVENT_WEIGHTS], index[EVENT_WEIGHTS] = node, len(index)
    ports[EVENT_WEIGHTS] = make_ports(node)
    for sid in wanted:
        feeds[(sid, nodes[sid].EVENT_WEIGHT)] = (EVENT_WEIGHTS, f"{sid}_weight")
    for src, k in sources.items():
        feeds[(EVENT_WEIGHTS, f"in{k}")] = src
    return notes


def _read(w, nid, ports, feeds):
    """The signals ((node id, port)) ``Weight`` ``w`` of node ``nid`` reads: none for a constant."""
    if w is None:
        return ()
    if w.port in ports[nid][1]:
        return ((nid, w.port),)
    return (feeds[(nid, w.port)],) if (nid, w.port) in feeds else ()


def _constant_weights(n, sinks, edges):
    """The vertices' weights of a weight graph whose every edge is a constant (``animgraph.weights``)."""
    w = np.zeros(n)
    w[list(sinks)] = 1.0
    for e in edges:
        w[e["src"]] = max(w[e["src"]], w[e["dst"]] * e["offset"])
    return w


def _edge_fields(edges, vertices, nodes, ports, feeds, signal_input, file):
    """The weight graph's edges as ``Edge`` fields (``animgraph.weights``), their signals added by ``signal_input``."""
    out = []
    for src, dst, port in edges:
        w = nodes[dst].input_weights().get(port)
        edge = {"src": vertices[src], "dst": vertices[dst]}
        edge |= {"input": -1, "offset": 1.0} if w is None else _term(w, dst, nodes, ports, feeds, signal_input, file)
        out.append(edge)
    return out


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
