"""Graph checks: each broken graph raises a GraphError naming the node and the port."""

import pytest

import animgraph as ag
from animgraph import check as check_mod
from animgraph.check import GraphWarning, check


def graph(nodes, links, **extra):
    return ag.Graph.from_dict(
        {"format": "animgraph.graph", "version": 1, "nodes": nodes, "links": links, **extra}, file="g.json"
    )


REST = {"id": "rest", "type": "constant", "signal": "pose"}
FK = {"id": "fk", "type": "fk"}
BK = {"id": "bk", "type": "bk"}
OUT = {"id": "out", "type": "output"}


def error(nodes, links):
    with pytest.raises(ag.GraphError) as info:
        check(graph(nodes, links))
    assert "g.json" in str(info.value), "the message names the file"
    return info.value


def test_good_graph_order_and_spaces():
    c = check(graph([OUT, BK, FK, REST], [["rest.pose", "fk.pose"], ["fk.pose", "bk.pose"], ["bk.pose", "out.pose"]]))
    assert c.order == ["rest", "fk", "bk", "out"]
    assert c.spaces[("out", "pose", "in")] == "local"
    assert c.spaces[("out", "pose", "out")] == "local"
    c = check(graph([REST, FK, OUT], [["rest.pose", "fk.pose"], ["fk.pose", "out.pose"]]))
    assert c.spaces[("out", "pose", "in")] == "global", "an 'any' port adopts its input's space"


def test_cycle_is_named():
    err = error([REST, FK, BK, OUT, {"id": "fk2", "type": "fk"}],
                [["bk.pose", "fk.pose"], ["fk.pose", "bk.pose"], ["fk.pose", "out.pose"]])
    assert "cycle: " in str(err)
    assert "fk -> bk -> fk" in str(err) or "bk -> fk -> bk" in str(err)
    assert err.node in ("fk", "bk") and err.port == "pose"


def test_find_cycle_runs_only_when_sorting_fails(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("find_cycle called on an acyclic graph")

    monkeypatch.setattr(check_mod.nx, "find_cycle", boom)
    check(graph([REST, FK, OUT], [["rest.pose", "fk.pose"], ["fk.pose", "out.pose"]]))


def test_dangling_required_input():
    err = error([REST, FK, OUT], [["fk.pose", "out.pose"]])
    assert (err.node, err.port) == ("fk", "pose")
    assert "not linked" in str(err)


def test_input_fed_twice():
    err = error([REST, FK, OUT], [["rest.pose", "fk.pose"], ["fk.pose", "out.pose"], ["rest.pose", "out.pose"]])
    assert (err.node, err.port) == ("out", "pose")
    assert "fed twice" in str(err) and "fk.pose" in str(err)


def test_signal_kind_mismatch():
    err = error([{"id": "w", "type": "input"}, FK, OUT], [["w.value", "fk.pose"], ["fk.pose", "out.pose"]])
    assert (err.node, err.port) == ("fk", "pose")
    assert "signal mismatch" in str(err) and "scalar" in str(err)


def test_pose_space_mismatch():
    err = error([REST, BK, OUT], [["rest.pose", "bk.pose"], ["bk.pose", "out.pose"]])
    assert (err.node, err.port) == ("bk", "pose")
    assert "local pose" in str(err) and "global pose" in str(err)


@pytest.mark.parametrize(
    "link, node, port, words",
    [
        (["nobody.pose", "out.pose"], "nobody", "pose", "unknown node 'nobody'"),
        (["rest.value", "out.pose"], "rest", "value", "outputs: pose"),
        (["rest.pose", "out.value"], "out", "value", "inputs: pose"),
    ],
)
def test_unknown_node_or_port_in_link(link, node, port, words):
    err = error([REST, OUT], [link])
    assert (err.node, err.port) == (node, port)
    assert words in str(err)


def test_graph_without_output():
    err = error([REST, FK], [["rest.pose", "fk.pose"]])
    assert "no output node" in str(err)


def test_unused_nodes_warn_and_are_pruned():
    g = graph([REST, FK, OUT, {"id": "lost", "type": "bk"}, {"id": "w", "type": "input"}],
              [["rest.pose", "fk.pose"], ["fk.pose", "out.pose"], ["fk.pose", "lost.pose"]])
    with pytest.warns(GraphWarning) as caught:
        c = check(g)
    assert sorted(str(w.message) for w in caught) == [
        "g.json: node 'lost' feeds no output: left out of the plan",
        "g.json: node 'w' feeds no output: left out of the plan",
    ]
    assert c.order == ["rest", "fk", "out"]
    assert c.pruned == ["lost", "w"]


def test_pruned_node_may_be_half_built():
    # A dangling input on a node that feeds no output is not an error (the editor's work in progress).
    g = graph([REST, OUT, BK], [["rest.pose", "out.pose"]])
    with pytest.warns(GraphWarning):
        assert check(g).pruned == ["bk"]
