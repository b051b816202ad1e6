"""The blend space view's plain-Python half: points, triangulation, the pixel frame, an entry moved with undo."""

import pytest

from animgraph.editor import space
from animgraph.editor.document import Document, EditError


def doc_with(node_type):
    doc = Document.new()
    doc.add_node(node_type, "bs")
    return doc


def test_a_moved_entry_is_one_undo_step_and_a_degenerate_move_is_refused():
    doc = doc_with("blend_space_2d")  # idle [0, 0], forward [0, 1], left [-1, 0], right [1, 0]
    before = doc.to_json()
    space.move_entry(doc, "bs", "forward", [0.5, 1.5])
    assert doc.graph.node("bs").entries[1].at == (0.5, 1.5)
    assert doc.undo() and doc.to_json() == before
    with pytest.raises(EditError, match="same point"):
        space.move_entry(doc, "bs", "forward", [1.0, 0.0])
    with pytest.raises(EditError, match="one line"):
        space.move_entry(doc, "bs", "forward", [0.5, 0.0])
    assert doc.to_json() == before
    one = doc_with("blend_space_1d")
    space.move_entry(one, "bs", "jog", [3.0])
    assert [e.at for e in one.graph.node("bs").entries] == [1.0, 3.0, 4.0]
    with pytest.raises(EditError, match="both at"):
        space.move_entry(one, "bs", "jog", [4.0])


def test_the_triangulation_and_the_segments_of_a_line():
    two = doc_with("blend_space_2d").graph.node("bs")
    tris = space.triangles(two)
    assert tris.shape[1] == 3 and {int(i) for i in tris.ravel()} == {0, 1, 2, 3}
    pts = space.points(two)
    pts[1] = (0.5, 0.0)  # dragged onto the line of the others: no triangles drawn
    assert len(space.triangles(two, pts)) == 0
    one = doc_with("blend_space_1d").graph.node("bs")
    assert space.triangles(one).tolist() == [[0, 1], [1, 2]]


def test_the_frame_maps_the_space_to_pixels_and_back():
    pts = [(0.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (1.0, 0.0)]
    f = space.Frame.around(pts, (100, 50), (800, 400))
    for p in pts:
        sx, sy = f.to_screen(p)
        assert 100 + f.margin <= sx <= 900 - f.margin and 50 + f.margin <= sy <= 450 - f.margin
        assert f.to_space((sx, sy)) == pytest.approx(p)
    assert f.to_screen((0.0, 1.0))[1] < f.to_screen((0.0, 0.0))[1]  # up is up
    line = space.Frame.around([(1.0, 0.0), (4.0, 0.0)], (0, 0), (800, 400), line=True)
    a, b = line.to_screen((1.0, 0.0)), line.to_screen((4.0, 0.0))
    assert b[0] - a[0] > 0.6 * 800 and a[1] == b[1] == pytest.approx(200)
