"""Link rules for the editor: whether a link may be made, and which links a changed node no longer takes.

Worded as ``animgraph.check`` words its errors (the status bar shows them), but tolerant:
the rest of the graph may be unfinished (dangling inputs, a bad link from a hand-edited
file), so only what the new link itself would break refuses it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import networkx as nx

REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")


class Mismatch(NamedTuple):
    """A pose input fed a pose of the wrong space: ``src`` is ``got``; the input wants ``want`` (from ``other``)."""

    node: str
    port: str
    src: tuple
    got: str
    want: str
    other: str | None = None  # the 'any' input whose space the node adopted, if that is what ``want`` comes from


def split(ref):
    """('node', 'port') of a 'node.port' reference, or None if it is not one."""
    return tuple(ref.split(".")) if isinstance(ref, str) and REF.match(ref) else None


def port_tables(graph):
    """{node id: ({input name: Port}, {output name: Port})} of every node instance."""
    return {n.id: ({p.name: p for p in n.inputs()}, {p.name: p for p in n.outputs()}) for n in graph.nodes}


def refusal(graph, src, dst):
    """Why the link ``src -> dst`` ('node.port' each) may not be made in ``graph``, or None if it may.

    The link replaces any link into ``dst``.  Refused: unknown nodes or ports, a signal
    mismatch, a cycle, and a pose space mismatch that the link causes (at ``dst`` or
    downstream, through nodes whose 'any' space follows their inputs).
    """
    for what, ref in (("source", src), ("destination", dst)):
        if split(ref) is None:
            return f"{what} {ref!r} is not 'node.port'"
    (snode, sport), (dnode, dport) = split(src), split(dst)
    ports = port_tables(graph)
    for nid in (snode, dnode):
        if nid not in ports:
            return f"link {src} -> {dst}: unknown node {nid!r}"
    outs, ins = ports[snode][1], ports[dnode][0]
    if sport not in outs:
        return f"unknown output port {sport!r} in link {src} -> {dst} (outputs: {', '.join(outs) or 'none'})"
    if dport not in ins:
        return f"unknown input port {dport!r} in link {src} -> {dst} (inputs: {', '.join(ins) or 'none'})"
    a, b = outs[sport].signal, ins[dport].signal
    if a != b:
        return f"signal mismatch: {src} is {a}, {dst} takes {b}"
    cycle = _cycle(graph, ports, snode, dnode)
    if cycle:
        return f"cycle: {' -> '.join(cycle)}"
    if a == "pose":
        return _space_refusal(graph, ports, src, dst)
    return None


def _cycle(graph, ports, snode, dnode):
    """The node ids of the cycle ``snode -> dnode -> ... -> snode`` the link would close, or None."""
    if snode == dnode:
        return [snode, snode]
    dag = nx.DiGraph()
    dag.add_nodes_from(ports)
    ends = [(split(a), split(b)) for a, b in graph.links]
    dag.add_edges_from((s[0], d[0]) for s, d in ends if s and d and s[0] in ports and d[0] in ports)
    if not nx.has_path(dag, dnode, snode):
        return None
    return [snode, *nx.shortest_path(dag, dnode, snode)]


def _space_refusal(graph, ports, src, dst):
    """The first space mismatch the link adds to the graph's, worded for the status bar (None if none)."""
    before = set(resolve_spaces(graph, graph.links, ports)[1])  # a hand-edited file may hold some already
    links = [link for link in graph.links if link[1] != dst] + [(src, dst)]
    added = [m for m in resolve_spaces(graph, links, ports)[1] if m not in before]
    if not added:
        return None
    m = next((m for m in added if f"{m.node}.{m.port}" == dst), added[0])
    here = f"{m.node}.{m.port}" == dst
    if m.other is not None:
        got_from = src if here else ".".join(m.src)
        return f"space mismatch: {got_from} is a {m.got} pose but {m.node}.{m.other} has a {m.want} pose"
    if here:
        return f"space mismatch: {src} is a {m.got} pose, this input takes a {m.want} pose"
    return f"space mismatch downstream: {'.'.join(m.src)} would be a {m.got} pose, {m.node}.{m.port} takes a {m.want} pose"


def _feeds(links, ports):
    """{(dst id, port): (src id, port)} of the links that name existing ports of the same signal kind."""
    feeds = {}
    for link in links:
        s, d = split(link[0]), split(link[1])
        if s is None or d is None or s[0] not in ports or d[0] not in ports:
            continue
        out, inp = ports[s[0]][1].get(s[1]), ports[d[0]][0].get(d[1])
        if out is not None and inp is not None and out.signal == inp.signal and d not in feeds:
            feeds[d] = s
    return feeds


def resolve_spaces(graph, links, ports=None):
    """({(id, port, 'in'|'out'): space}, [Mismatch]) of every pose port, as ``check._resolve_spaces`` but tolerant.

    Links to unknown ports are skipped; a cycle leaves the file order; a mismatch is
    recorded and the walk goes on.
    """
    ports = ports if ports is not None else port_tables(graph)
    feeds = _feeds(links, ports)
    dag = nx.DiGraph()
    dag.add_nodes_from(ports)
    dag.add_edges_from((s[0], d[0]) for d, s in feeds.items())
    try:
        order = list(nx.topological_sort(dag))
    except nx.NetworkXUnfeasible:
        order = list(ports)
    spaces, bad = {}, []
    for nid in order:
        ins, outs = ports[nid]
        adopted, adopted_from = None, None
        for name, port in ins.items():
            if port.signal != "pose":
                continue
            src = feeds.get((nid, name))
            got = spaces.get((*src, "out"), "any") if src else "any"
            want = port.space or "any"
            if want != "any" and got not in ("any", want):
                bad.append(Mismatch(nid, name, src, got, want))
            elif want == "any" and got != "any":
                if adopted is not None and adopted != got:
                    bad.append(Mismatch(nid, name, src, got, adopted, adopted_from))
                elif adopted is None:
                    adopted, adopted_from = got, name
            spaces[(nid, name, "in")] = got if want == "any" else want
        for name, port in outs.items():
            if port.signal == "pose":
                want = port.space or "any"
                spaces[(nid, name, "out")] = (adopted or "any") if want == "any" else want
    return spaces, bad


def stale_links(graph, node_id):
    """The links of ``node_id`` that no longer fit its ports (the port is gone or takes another signal kind)."""
    ports = port_tables(graph)
    stale = []
    for link in graph.links:
        s, d = split(link[0]), split(link[1])
        if node_id not in (s and s[0], d and d[0]):
            continue
        out = ports.get(s[0], ({}, {}))[1].get(s[1]) if s else None
        inp = ports.get(d[0], ({}, {}))[0].get(d[1]) if d else None
        if out is None or inp is None or out.signal != inp.signal:
            stale.append(link)
    return stale
