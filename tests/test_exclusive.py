"""The nodes a graph needs only through one input port (``animgraph.exclusive``): hand-built graphs, the shipped ones,
and random DAGs against every path enumerated (networkx.all_simple_paths)."""

import json

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from animgraph import graphs
from animgraph.exclusive import link_graph, owned_by_port, owned_by_ports


def test_a_hand_built_machine():
    # Samples feed the machine's states, speed its condition; the clock of walk also feeds the output (shared).
    links = [("idle.pose", "sm.idle"), ("walk.pose", "sm.walk"), ("clock.value", "walk.time"),
             ("clock.value", "out.time"), ("speed.value", "sm.speed"), ("sm.pose", "fk.pose"), ("fk.pose", "out.pose"),
             ("ik_target.value", "ik.target"), ("walk_raw.pose", "ik.pose"), ("ik.pose", "sm.run")]
    owned = owned_by_ports(links, {"out"}, "sm", ["idle", "walk", "run", "speed", "missing"])
    assert owned["idle"] == {"idle"}
    assert owned["walk"] == {"walk"}  # its clock also feeds the output: shared
    assert owned["run"] == {"ik", "ik_target", "walk_raw"}
    assert owned["speed"] == {"speed"}
    assert owned["missing"] == set()


def test_shipped_graphs_a_selects_inputs():
    # graphs/gaits.json: each gait's sample also feeds the selects of its motion and contacts, so no select input owns it.
    data = json.loads(graphs.path("gaits").read_text())
    outputs = {n["id"] for n in data["nodes"] if n["type"] == "output"}
    graph = link_graph(data["links"])
    for port in ("in0", "in1", "in2"):
        assert owned_by_port(graph, outputs, "pick", port) == set()


def reference(graph, outputs, node, port):
    """Every node with a path to an output, all of whose paths to every output use an edge into ``node``'s ``port``."""
    owned = set()
    for v in graph:
        paths = [p for out in outputs if out != v for p in nx.all_simple_edge_paths(graph, v, out)]
        if v in outputs or not paths:
            continue
        if all(any(b == node and k == port for a, b, k in path) for path in paths):
            owned.add(v)
    return owned


dags = st.integers(2, 7).flatmap(lambda n: st.lists(
    st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(["a", "b", "c"])), max_size=3 * n))


@settings(max_examples=200, deadline=None)
@given(dags, st.sampled_from(["a", "b", "c"]))
def test_random_graphs_against_every_path(edges, port):
    fed = {}  # one link per input port, as a valid graph has: a < b keeps it acyclic
    for a, b, p in edges:
        if a < b:
            fed.setdefault((b, p), a)
    links = [(f"n{a}.out", f"n{b}.{p}") for (b, p), a in fed.items()]
    if not links:
        return
    graph = link_graph(links)
    last = max(graph, key=lambda v: int(v[1:]))
    outputs = {last}
    for node in graph:
        assert owned_by_port(graph, outputs, node, port) == reference(graph, outputs, node, port), (node, links)
