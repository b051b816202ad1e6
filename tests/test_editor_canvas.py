"""The node canvas's habits in a real window under Xvfb: one driver run (tests/editor_driver.py ``canvas``) read by
a test per habit, and one run measuring node rectangles of every shipped graph (``no_overlap``).

Where dearpygui reads the mouse (right click, box select) the driver moves the X server's real pointer (XTest);
everything else goes through the canvas's callbacks and keys.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from display import display, driver_result  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = sorted((ROOT / "graphs").glob("*.json"))
def run(display, mode, *args):
    """The driver's JSON result for ``mode`` (each run once per session)."""
    return driver_result("editor_driver.py", display, mode, *args, timeout=600)


@pytest.fixture(scope="module")
def habits(display, tmp_path_factory):
    return run(display, "canvas", ROOT / "graphs" / "gaits.json", tmp_path_factory.mktemp("canvas"))


def test_arrange_moves_the_nodes_in_one_step_and_none_overlap(habits):
    assert habits["piled_overlaps"] > 0, "the driver's piled-up nodes did not overlap"
    assert habits["arrange_steps"] == 1, "Arrange is one undo step"
    assert habits["arrange_again_steps"] == 0, "Arrange of an arranged graph moved nodes again"
    assert habits["arrange_moved"] > 0, "Arrange moved no node"
    assert habits["arrange_drawn_at_doc"], "the window does not draw the arranged positions"
    assert habits["arrange_overlaps"] == [], f"arranged nodes closer than 8 px: {habits['arrange_overlaps']}"


def test_right_click_opens_the_add_menu_at_the_cursor_and_enter_adds_there(habits):
    assert habits["empty_before"], "the driver's right-click spot was not empty"
    assert habits["menu_shown"], "a right click on the empty canvas opened no add menu"
    assert habits["menu_at"] == [int(v) for v in habits["empty"]], "the menu is not at the cursor"
    assert habits["menu_items"] == ["dead_blend"], f"search 'dead' lists {habits['menu_items']}"
    new, steps, closed = habits["menu_added"]
    assert new == ["dead_blend"] and steps == 1 and closed, f"Enter added {new} in {steps} steps, closed={closed}"
    dx, dy = habits["menu_node_near_cursor"]
    assert math.hypot(dx, dy) <= 100, f"the new node is {dx}, {dy} px from the cursor"
    assert habits["second_add_overlaps"] == [], "a node added on top of another overlaps it"


def test_enter_in_the_palette_search_adds_the_highlighted_node_in_sight(habits):
    assert habits["palette_highlight"] == "inertialize", habits["palette_highlight"]
    assert habits["palette_focused"], "the palette's search box did not take the focus"
    assert habits["palette_steps"] == 1 and habits["palette_added"] == 1, "Enter did not add one node in one step"
    assert habits["palette_overlaps"] == [], f"the palette's node overlaps: {habits['palette_overlaps']}"
    assert habits["palette_in_sight"], "the palette's node was placed out of sight"


def test_add_linked_node_from_a_pin_lists_only_fitting_types_and_links(habits):
    assert habits["pin_menu_shown"], "a right click on an output pin opened no pin menu"
    listed, fitting, title = habits["pin_menu_types"]
    assert listed == fitting and listed and "bk" not in listed, f"listed {listed}, fitting {fitting}"
    assert habits["linked_src"] in title
    (new,), links = habits["linked"]
    assert habits["linked_steps"] == 1, "adding a linked node took more than one undo step"
    assert links == [[habits["linked_src"], f"{new}.pose"]], f"the new node's links: {links}"
    assert habits["linked_overlaps"] == []


def test_box_select_with_a_real_drag(habits):
    selected, met = habits["box"]
    assert selected == met and met, f"a drag over {met} selected {selected}"


def test_copy_paste_and_duplicate_keep_inner_links_with_fresh_ids(habits):
    assert habits["paste_steps"] == 1, "Ctrl+V is one undo step"
    same_count, unique, selected = habits["paste"]
    assert same_count and unique and selected, f"pasted all={same_count}, ids unique={unique}, selected={selected}"
    inner, pasted = habits["paste_links"]
    assert inner >= 1 and pasted == inner, f"{inner} links inside the selection, {pasted} among the copies"
    assert habits["paste_overlaps"] == [], f"pasted nodes overlap: {habits['paste_overlaps']}"
    dup, selected, unique = habits["dup"]
    assert habits["dup_steps"] == 1 and dup == selected >= 2 and unique, f"Ctrl+D: {habits['dup']}"
    assert habits["dup_overlaps"] == []


def test_delete_is_one_step_and_undone(habits):
    assert habits["delete_steps"] == 1 and habits["deleted"] == [True, True], habits["deleted"]


def test_a_comment_frame_is_stored_drawn_round_its_nodes_and_moves_with_them(habits):
    assert habits["title_box"], "C opened no box for the frame's title"
    assert habits["comment_steps"] == 1, "a comment frame is one undo step"
    (frame,) = habits["comment_doc"]
    assert frame["title"] == "pasted" and frame["nodes"] == habits["pasted"], frame
    assert habits["comment_saved"] == [{"nodes": frame["nodes"], "title": "pasted"}], "not under editor.comments"
    assert habits["comment_drawn"] == [["pasted", True]], "the frame is not drawn round its nodes"
    assert habits["move_steps"] == 1, "a drag of several nodes is one undo step"
    shift, encloses = habits["comment_moved"]
    assert shift[0] == 30 and encloses, f"the frame moved {shift} with nodes moved by (30, 20)"


def test_home_and_f_bring_the_nodes_into_sight_without_an_edit(habits):
    assert habits["lost"], "the driver's view was not lost"
    assert habits["home"] == [30, 30], f"Home put the nodes' corner at {habits['home']} (margin 30 px)"
    ox, oy, w, h = habits["editor_rect"]
    x, y, fw, fh = habits["frame_selected"]
    assert abs(x - (w - fw) / 2) <= 1 and abs(y - (h - fh) / 2) <= 1, "F did not centre the selected far node"
    assert habits["view_no_edit"] == [True, True], "framing changed the document or its history"


@pytest.fixture(scope="module")
def measured(display):
    return run(display, "no_overlap", *GRAPHS)


@pytest.mark.parametrize("graph", [g.stem for g in GRAPHS] + ["every_type"])
def test_node_rectangles_are_8_px_apart_in_the_window(measured, graph):
    r = measured[graph]
    assert r["drawn"] == r["nodes"] > 0, "nodes not drawn"
    if graph != "every_type":  # a new graph's nodes all start at (0, 0): only its arranged layout counts
        assert r["stored"] == [], f"{graph} as stored: closer than 8 px: {r['stored']}"
    assert r["arranged"] == [], f"{graph} after Arrange: closer than 8 px: {r['arranged']}"


def test_ctrl_space_maximizes_the_canvas_and_home_keeps_nodes_clear_of_the_minimap(habits):
    before, maximized, back = habits["max_h"]
    from animgraph.editor.app import PREVIEW_HEIGHT

    assert maximized >= before + PREVIEW_HEIGHT - 40, f"Ctrl+Space: the canvas went from {before} to {maximized} px"
    assert habits["max_preview_hidden"] and habits["max_preview_back"], "the preview row was not hidden, then shown"
    assert back == before, f"Ctrl+Space again left the canvas {back} px tall, not {before}"
    shown, count = habits["max_in_sight"]
    assert shown > 0 and count > 0
    assert habits["max_under_minimap"] == [], f"Home put {habits['max_under_minimap']} (x, y, w, h as drawn) under " \
        f"the minimap at {habits['max_minimap']}"


def test_clear_of_minimap_moves_the_lesser_way_and_only_within_the_margin():
    from animgraph.editor.canvas import MARGIN, MINIMAP_CLEAR, clear_of_minimap, minimap_rect

    w, h = 1000.0, 500.0
    mx, my, mw, mh = minimap_rect(w, h)
    assert (mx + mw, my + mh) == (w, h) and mw > 0.2 * w and mh > 0.2 * h
    # A node 10 px into the minimap from above and 150 px from the left: moved up 10 and the clearance (the lesser way).
    rects = {"a": (0.0, 0.0, 100.0, 50.0), "b": (mx - 200.0 + 50.0, my - 100.0 + 10.0 - 40.0, 100.0, 40.0)}
    left, top = 200.0, 100.0
    assert clear_of_minimap(rects, 0.0, 0.0, left, top, w, h) == (left, top - 10.0 - MINIMAP_CLEAR)
    # A node ending on the minimap's edge is moved clear too: a view rounded by a pixel would put it under.
    edge = {"a": (0.0, 0.0, 100.0, 50.0), "b": (mx - 200.0 + 50.0, my - 100.0 - 40.0, 100.0, 40.0)}
    assert clear_of_minimap(edge, 0.0, 0.0, left, top, w, h) == (left, top - MINIMAP_CLEAR)
    # A node wholly past the canvas's right edge is out of sight: it moves nothing.
    past = {"a": (0.0, 0.0, 100.0, 50.0), "b": (w - 200.0 + 10.0, h - 100.0 - 20.0, 100.0, 40.0)}
    assert clear_of_minimap(past, 0.0, 0.0, left, top, w, h) == (left, top)
    # Nothing under it: unchanged.
    assert clear_of_minimap({"a": (0.0, 0.0, 10.0, 10.0)}, 0.0, 0.0, left, top, w, h) == (left, top)
    # Drawn from the margin, only a move past it would clear the minimap: unchanged.
    far = {"c": (0.0, 0.0, w - 2 * MARGIN, h - 2 * MARGIN)}
    assert clear_of_minimap(far, 0.0, 0.0, MARGIN, MARGIN, w, h) == (MARGIN, MARGIN)


def test_up_and_down_walk_the_matches_of_the_palette_and_the_add_menu(habits):
    drawn, walk = habits["palette_arrows"]
    assert len(drawn) >= 3 and walk[0] in drawn, f"palette buttons shown for 'blend': {drawn}"
    i = drawn.index(walk[0])
    at = lambda k: drawn[min(max(k, 0), len(drawn) - 1)]  # noqa: E731
    assert walk[1:] == [at(i + 1), at(i + 2), at(i + 1), at(i), at(i - 1)], f"drawn {drawn}, walked {walk}"
    listed, walk = habits["menu_arrows"]
    assert len(listed) >= 2 and walk == [listed[0], listed[1], listed[0], listed[0]], f"listed {listed}, walked {walk}"


def test_a_double_click_on_a_frame_title_retitles_or_removes_it(habits):
    index, shown, text, elsewhere = habits["retitle_opened"]
    assert index == 0 and shown and text == "pasted", habits["retitle_opened"]
    assert elsewhere is None, "a double click beside the frame opened it"
    assert habits["retitle_steps"] == 1 and habits["retitled"] == ["renamed"], habits["retitled"]
    frames, nodes_kept = habits["removed"]
    assert habits["remove_steps"] == 1 and frames == [] and nodes_kept, habits["removed"]
