"""The canvas's pure logic without a window: Arrange, free space, copy and paste, comment frames, batches."""

import json
from types import SimpleNamespace

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animgraph.graphs as shipped
from animgraph.editor import layout
from animgraph.editor.document import Document, EditError
from animgraph.graph import Graph
from animgraph.node import REGISTRY


def fake_graph(n, edges):
    """An object with ``nodes`` (ids n0..) and ``links`` as ``arrange`` reads them."""
    nodes = [SimpleNamespace(id=f"n{i}") for i in range(n)]
    return SimpleNamespace(nodes=nodes, links=[(f"n{a}.out", f"n{b}.in{k}") for k, (a, b) in enumerate(edges)])


def rects_of(pos, sizes):
    return {k: (*pos[k], *sizes[k]) for k in pos}


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 14).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
    st.lists(st.tuples(st.integers(40, 260), st.integers(40, 220)), min_size=n, max_size=n))))
def test_arrange_never_overlaps_and_runs_left_to_right(case):
    n, edges, dims = case
    edges = [(a, b) for a, b in edges if a < b]  # a DAG (links go from lower to higher ids)
    graph = fake_graph(n, edges)
    sizes = {f"n{i}": dims[i] for i in range(n)}
    pos = layout.arrange(graph, sizes, column_gap=30, row_gap=20)
    assert set(pos) == set(sizes)
    assert layout.too_close(rects_of(pos, sizes), 20) == []
    for a, b in edges:  # every link runs to the right: its source's right edge left of its destination
        assert pos[f"n{a}"][0] + sizes[f"n{a}"][0] < pos[f"n{b}"][0], (a, b, pos)


def test_arrange_columns_are_generations_and_sources_sit_before_their_first_consumer():
    # 0 -> 1 -> 2 -> 3, and 4 (a source) feeds only 3: it goes in 2's column, not the first.
    graph = fake_graph(5, [(0, 1), (1, 2), (2, 3), (4, 3)])
    dag = layout.dependency_dag(graph)
    assert [sorted(g) for g in nx.topological_generations(dag)][0] == ["n0", "n4"]
    cols = layout.columns(dag, {f"n{i}": i for i in range(5)})
    assert cols == [["n0"], ["n1"], ["n2", "n4"], ["n3"]]


def test_barycentre_ordering_uncrosses_two_chains():
    # a0 -> b1 and a1 -> b0 in file order cross; one sweep orders b by its feeder's row.
    graph = SimpleNamespace(nodes=[SimpleNamespace(id=i) for i in ("a0", "a1", "b0", "b1")],
                            links=[("a0.o", "b1.i"), ("a1.o", "b0.i")])
    dag = layout.dependency_dag(graph)
    cols = layout.order_columns(dag, layout.columns(dag, {"a0": 0, "a1": 1, "b0": 2, "b1": 3}))
    assert cols == [["a0", "a1"], ["b1", "b0"]]
    pos = layout.arrange(graph, {k: (100, 60) for k in ("a0", "a1", "b0", "b1")})
    assert pos["b1"][1] < pos["b0"][1] and pos["b1"][1] == pos["a0"][1]  # level with what feeds it: a short link


def test_a_cycle_in_a_hand_edited_file_is_still_laid_out():
    graph = fake_graph(3, [(0, 1), (1, 2), (2, 0)])
    sizes = {f"n{i}": (80, 50) for i in range(3)}
    pos = layout.arrange(graph, sizes)
    assert set(pos) == set(sizes) and layout.too_close(rects_of(pos, sizes), layout.COLUMN_GAP) == [] or \
        layout.too_close(rects_of(pos, sizes), layout.ROW_GAP) == []


def test_gap_between_rectangles_by_hand():
    assert layout.gap((0, 0, 10, 10), (13, 0, 5, 5)) == 3
    assert layout.gap((0, 0, 10, 10), (13, 14, 5, 5)) == 5  # a 3-4-5 corner
    assert layout.gap((0, 0, 10, 10), (5, 5, 10, 10)) == 0
    assert layout.too_close({"a": (0, 0, 10, 10), "b": (15, 0, 10, 10), "c": (40, 0, 5, 5)}, 8) == [("a", "b", 5.0)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-200, 400), st.integers(-200, 400), st.integers(20, 200), st.integers(20, 150)),
                max_size=12), st.tuples(st.integers(-100, 300), st.integers(-100, 300)),
       st.tuples(st.integers(20, 200), st.integers(20, 150)))
def test_free_spot_is_clear_and_is_the_wanted_spot_when_that_is_clear(rects, want, size):
    rects = {str(i): r for i, r in enumerate(rects)}
    area = (-50, -50, 500, 400)
    for within in (None, area):
        x, y = layout.free_spot(rects, size, want, within=within)
        assert all(layout.gap((x, y, *size), r) >= 2 * layout.MIN_GAP for r in rects.values())
        if all(layout.gap((*want, *size), r) >= 2 * layout.MIN_GAP for r in rects.values()) and (
                within is None or (area[0] <= want[0] <= area[0] + area[2] - size[0] and
                                   area[1] <= want[1] <= area[1] + area[3] - size[1])):
            assert (x, y) == want
    # Room in the area: the spot is inside it (every grid spot of the area checked, so none is missed).
    x, y = layout.free_spot(rects, size, want, within=area)
    grid = [(want[0] + i * 20, want[1] + j * 20) for i in range(-40, 41) for j in range(-40, 41)]
    room = [p for p in grid if area[0] <= p[0] <= area[0] + area[2] - size[0] and
            area[1] <= p[1] <= area[1] + area[3] - size[1] and
            all(layout.gap((*p, *size), r) >= 2 * layout.MIN_GAP for r in rects.values())]
    if room:
        assert area[0] <= x <= area[0] + area[2] - size[0] and area[1] <= y <= area[1] + area[3] - size[1]


def test_size_estimate_grows_with_pins_and_names():
    ins, outs = Document.new().ports("walk")
    w, h = layout.estimate_size("walk", "sample", ins, outs)
    w2, h2 = layout.estimate_size("a_much_longer_node_id_here", "sample", ins, outs)
    assert h == layout.TITLE_PAD + layout.PIN_ROW * (len(ins) + len(outs)) and w2 > w and h2 == h


# ---------------------------------------------------------------- copy, paste, comments, batches


def chain():
    doc = Document.new()
    doc.add_node("fk", pos=(300, 0))
    doc.add_node("input", "w", pos=(0, 200))
    doc.add_node("blend", pos=(300, 200))
    doc.connect("walk.pose", "fk.pose")
    doc.connect("w.value", "blend.alpha")
    return doc


def test_paste_keeps_the_links_inside_with_fresh_ids_in_one_undo_step():
    doc = chain()
    before = doc.to_json()
    fragment = doc.copy(["walk", "fk", "w"])  # walk -> fk inside; w -> blend leaves the selection
    assert sorted(map(tuple, fragment["links"])) == [("walk.pose", "fk.pose")]
    steps = len(doc.history)
    names = doc.paste(fragment, (50, 30))
    assert len(doc.history) == steps + 1
    ids = [n.id for n in doc.graph.nodes]
    assert len(set(ids)) == len(ids) and names == {"walk": "walk_2", "fk": "fk_2", "w": "w_2"}
    assert ["walk_2.pose", "fk_2.pose"] in doc.graph.to_dict()["links"]
    assert not any(src == "w_2.value" for src, _ in doc.graph.links)  # the link that left the selection is not copied
    assert doc.position("fk_2") == (350.0, 30.0)
    names2 = doc.paste(fragment)  # again: yet fresher ids
    assert set(names2.values()) == {"walk_3", "fk_3", "w_3"}
    assert doc.undo() and doc.undo() and doc.to_json() == before


def test_paste_of_nonsense_is_refused_and_changes_nothing():
    doc = chain()
    before = doc.to_json()
    with pytest.raises(EditError):
        doc.paste({"nodes": [{"id": "x", "type": "no_such_type"}], "links": [], "positions": {}})
    with pytest.raises(EditError):
        doc.paste({"nope": 1})
    assert doc.to_json() == before


def test_comment_frames_are_stored_under_editor_and_follow_renames_removals_and_paste(tmp_path):
    doc = chain()
    k = doc.add_comment("legs", ["walk", "fk"])
    assert k == 0 and doc.comments() == [{"title": "legs", "nodes": ["walk", "fk"]}]
    doc.save(tmp_path / "c.json")
    stored = json.loads((tmp_path / "c.json").read_text())
    assert stored["editor"]["comments"] == [{"nodes": ["walk", "fk"], "title": "legs"}]
    assert Document.open(tmp_path / "c.json").comments() == doc.comments()
    doc.rename("fk", "forward")
    assert doc.comments()[0]["nodes"] == ["walk", "forward"]
    doc.paste(doc.copy(["walk", "forward"]))  # the whole frame copied: the copy has its own frame
    assert doc.comments()[1] == {"title": "legs", "nodes": ["walk_2", "forward_2"]}
    doc.set_comment_title(1, "legs again")
    doc.remove_node("walk")
    doc.remove_node("forward")
    assert doc.comments() == [{"title": "legs again", "nodes": ["walk_2", "forward_2"]}]  # the empty frame went
    with pytest.raises(EditError):
        doc.add_comment("x", ["nobody"])
    doc.remove_comment(0)
    assert "comments" not in doc.graph.editor


def test_a_batch_is_one_undo_step_and_an_error_inside_undoes_it_all():
    doc = chain()
    before, steps = doc.to_json(), len(doc.history)
    with doc.batch():
        nid = doc.add_node("bk", pos=(600, 0))
        doc.connect("fk.pose", f"{nid}.pose")
    assert len(doc.history) == steps + 1 and doc.undo() and doc.to_json() == before
    with pytest.raises(EditError), doc.batch():
        doc.add_node("fk", pos=(600, 0))
        doc.connect("fk.pose", "no_such.pose")
    assert doc.to_json() == before and len(doc.history) == steps


# ---------------------------------------------------------------- shipped graphs, headless


def shipped_graphs():
    return sorted(shipped.path(n) for n in shipped.names())


@pytest.mark.parametrize("path", shipped_graphs(), ids=lambda p: p.stem)
def test_shipped_graphs_are_stored_as_arranged_from_their_estimated_sizes(path):
    """The stored positions are Arrange's (re-saved from it) and no two estimated node rectangles are close."""
    doc = Document.open(path)
    sizes = {n.id: layout.estimate_size(n.id, n.type, *doc.ports(n.id)) for n in doc.graph.nodes}
    stored = {n.id: doc.position(n.id) for n in doc.graph.nodes}
    assert layout.too_close(rects_of(stored, sizes), layout.MIN_GAP) == []


def test_one_node_of_every_type_arranges_without_overlap():
    doc = Document.new()
    for t in sorted(REGISTRY):
        doc.add_node(t)
    sizes = {n.id: layout.estimate_size(n.id, n.type, *doc.ports(n.id)) for n in doc.graph.nodes}
    pos = layout.arrange(doc.graph, sizes)
    assert layout.too_close(rects_of(pos, sizes), layout.MIN_GAP) == []
    Graph.from_dict(doc.graph.to_dict())  # still a valid file


def test_add_linked_offers_only_fitting_types_and_links_in_one_step():
    doc = chain()
    offers = doc.linkable("walk.pose", "out")  # a local pose
    types = [t for t, _, _ in offers]
    assert "fk" in types and "bk" not in types  # bk takes a global pose
    assert "input" not in types  # an input has no inputs
    for t, fields, port in offers:  # every offer really links, and in one undo step
        steps = len(doc.history)
        nid = doc.add_linked(t, "walk.pose", "out", pos=(900, 900))
        assert ["walk.pose", f"{nid}.{port}"] in doc.graph.to_dict()["links"], t
        assert len(doc.history) == steps + 1
        doc.undo()
    offers_in = dict((t, f) for t, f, _ in doc.linkable("blend.alpha", "in"))  # a scalar input
    assert offers_in.get("input") in ({}, {"signal": "scalar"})
    nid = doc.add_linked("input", "blend.alpha", "in")
    assert [f"{nid}.value", "blend.alpha"] in doc.graph.to_dict()["links"]
    with pytest.raises(EditError):
        doc.add_linked("bk", "walk.pose", "out")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(20, 200), st.integers(-300, 600), st.sampled_from([1.0, 1e-3])), min_size=1,
                max_size=8))
def test_stack_keeps_order_and_gaps_and_is_nearest_the_wants(nodes):
    heights, wants, weights = zip(*nodes)
    ys = layout.stack(heights, wants, weights, 10, 0)
    assert ys[0] >= 0 and all(b >= a + h + 10 for a, b, h in zip(ys, ys[1:], heights))
    # Least squares: no feasible nudge of one block of neighbours up or down by a pixel lowers the cost by more
    # than the rounding allows (checked against every shifted run).
    def cost(y):
        return sum(w * (a - b) ** 2 for a, b, w in zip(y, wants, weights))

    def feasible(y):
        return y[0] >= 0 and all(b >= a + h + 10 for a, b, h in zip(y, y[1:], heights))

    best = cost(ys)
    for i in range(len(ys)):
        for j in range(i + 1, len(ys) + 1):
            for d in (-3, 3):
                y = list(ys)
                y[i:j] = [v + d for v in y[i:j]]
                if feasible(y):
                    assert cost(y) >= best - sum(weights) * 7, (ys, y)


def test_stack_by_hand():
    assert layout.stack([50, 50], [100, 100], [1, 1], 10, 0) == [70, 130]  # split round the shared want
    assert layout.stack([50, 50], [0, 500], [1, 1], 10, 0) == [0, 500]  # far apart: each where it wants
    assert layout.stack([50], [-40], [1], 10, 0) == [0]  # not above the top
