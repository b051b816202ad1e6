"""Drives the editor window through its own callbacks, in a subprocess (dearpygui aborts without a display).

``python tests/editor_driver.py MODE ARGS...`` runs one scenario and prints what happened as
one JSON line.  ``links GRAPH OUT_DIR`` opens GRAPH, breaks its first link and makes it again
through the node editor's delink/link callbacks, tries a mismatched link, plays frames and
writes two screenshots; ``pops``, ``timeline``, ``looping``, ``files``, ``shots`` and ``first_run``:
see their functions.
"""

from __future__ import annotations

import inspect
import json
import sys
import time
from pathlib import Path

import dearpygui.dearpygui as dpg
import numpy as np

from animgraph.editor.app import Editor
from animgraph.editor.document import Document


def frames(editor, n):
    for _ in range(n):
        editor.frame()


def shot(path):
    dpg.output_frame_buffer(file=str(path))
    for _ in range(60):
        dpg.render_dearpygui_frame()
        if path.exists() and path.stat().st_size > 0:
            return


def pins(view, src, dst):
    """The node editor's output attribute of ``src`` and input attribute of ``dst`` ('node.port')."""
    found = {}
    for attr, (nid, port, kind) in view.pins.items():
        found[(f"{nid}.{port}", kind)] = attr
    return found[(src, "out")], found[(dst, "in")]


def main(graph, out):
    out = Path(out)
    editor = Editor(Document.open(graph))
    editor.build()
    editor.start_kernels()
    while editor.kernels != "ready":
        editor.frame()
    frames(editor, 3)
    view, doc = editor.canvas, editor.doc
    result = {"nodes": len(view.nodes), "links_drawn": len(view.links), "links": len(doc.graph.links)}
    src, dst = doc.graph.links[0]
    link = next(k for k, v in view.links.items() if v == (src, dst))
    view.on_delink("node_editor", link)
    frames(editor, 2)
    result["after_delink"] = [src, dst] in [list(x) for x in editor.doc.graph.links]
    result["problem_after_delink"] = editor.problems[0].text if editor.problems else None
    bad = editor.problems[0].node if editor.problems else None
    result["shown_on_node"] = bad is not None and dpg.get_value(view.errors[bad]) == editor.problems[0].text \
        and bad in view.marked and dpg.get_value("status") == editor.problems[0].text
    view.on_link("node_editor", pins(view, src, dst))
    frames(editor, 2)
    result["after_link"] = [src, dst] in [list(x) for x in editor.doc.graph.links]
    result["problems_after_link"] = [p.text for p in editor.problems]
    # A mismatched link: a pose output dropped on a signal input (or the reverse), refused with a reason.
    pose_out = next(k for k, v in view.pins.items() if v[2] == "out" and _signal(doc, v) == "pose")
    sig_in = next((k for k, v in view.pins.items() if v[2] == "in" and _signal(doc, v) not in ("pose", None)), None)
    if sig_in is not None:
        before = editor.doc.to_json()
        view.on_link("node_editor", (pose_out, sig_in))
        result["refused"] = dpg.get_value("status")
        result["refused_unchanged"] = editor.doc.to_json() == before
    # Closing with unsaved changes asks first; Cancel keeps the window.
    editor.request_close()
    frames(editor, 1)
    result["asked"] = editor.doc.dirty and dpg.is_item_shown("ask_save")
    editor._answer("cancel")
    frames(editor, 1)
    result["still_open"] = dpg.is_dearpygui_running() and not dpg.is_item_shown("ask_save")
    result["undo"] = editor.doc.undo() and editor.doc.undo()  # undo the relink and the delink
    frames(editor, 2)
    result["undo_back"] = editor.doc.to_json() == Document.open(graph).to_json()
    editor.view.playing = False
    for _ in range(5):
        editor.player.step()
    frames(editor, 2)
    shot(out / "a.png")
    for _ in range(40):
        editor.player.step()
    frames(editor, 2)
    shot(out / "b.png")
    result["frame"] = editor.player.frame
    result["pops"] = [p.node for p in editor.player.pops]
    editor.shutdown()
    print(json.dumps(result))


def _signal(doc, pin):
    nid, port, kind = pin
    ins, outs = doc.ports(nid)
    return next((p.signal for p in (ins if kind == "in" else outs) if p.name == port), None)


def pops(graph):
    """Switch a select without a transition while playing: the pop finder names it and the editor marks it."""
    editor = Editor(Document.open(graph))
    editor.build()
    editor.start_kernels()
    while editor.player is None:
        frames(editor, 1)
    editor.view.playing = False
    for _ in range(20):
        editor.player.step()
    switched = editor.player.frame + 1
    editor.player.set_input("clip", 2)
    for _ in range(5):
        editor.player.step()
    frames(editor, 2)
    result = {"switched": switched, "pops": [[p.frame, p.node] for p in editor.player.pops],
              "marked": sorted(editor.canvas.marked),
              "timeline": dpg.get_value("pop_text")}
    editor.shutdown()
    print(json.dumps(result))


def call(item, value=None):
    """Run ``item``'s callback as dearpygui does on a click or an edit (sender, app_data, user_data)."""
    cb = dpg.get_item_callback(item)
    args = (item, value, dpg.get_item_user_data(item))
    n = cb.__code__.co_argcount - (1 if inspect.ismethod(cb) else 0)
    cb(*args[:n])


def started(doc, timeout=1500.0):
    """An editor on ``doc`` whose preview plays (the kernels loaded or compiled first)."""
    editor = Editor(doc)
    editor.build()
    frames(editor, 1)
    editor.start_kernels()
    deadline = time.monotonic() + timeout
    while editor.player is None:
        assert time.monotonic() < deadline and editor.kernels in ("compiling", "loading", "ready"), editor.kernels
        frames(editor, 1)
    return editor


def timeline():
    """Play, then drag the timeline backwards and forwards over the whole recording; zoom with the wheel."""
    editor = started(Document.new())
    call("play_button")  # pause
    call("reset_button")  # back to frame 0: a recording of exactly the frames stepped below
    player = editor.player
    seen = {0: player.pos.copy()}
    for _ in range(90):
        call("step_button")
        frames(editor, 1)
        seen[player.frame] = player.pos.copy()
    config = dpg.get_item_configuration("timeline")
    result = {"paused": not editor.view.playing, "frame": player.frame, "range": [config["min_value"],
                                                                                 config["max_value"]], "seeks": []}
    for target in (30, 85, 10, 60, 90, 1):
        call("timeline", target)
        frames(editor, 2)
        config = dpg.get_item_configuration("timeline")
        result["seeks"].append({"target": target, "frame": player.frame, "slider": dpg.get_value("timeline"),
                                "same_pose": bool(np.array_equal(player.pos, seen[target])),
                                "range": [config["min_value"], config["max_value"]]})
    distance = [editor.view.camera.distance]
    for delta in (1, 1, -2):
        editor.view.wheel(delta)
        distance.append(editor.view.camera.distance)
    result["distance"] = distance
    editor.shutdown()
    print(json.dumps(result))


def looping(graph, loops):
    """Play through the window's playback path: where the preview starts again, and the inputs it keeps."""
    import animgraph as ag

    editor = started(Document.open(graph) if graph != "new" else Document.new())
    _, clip = ag.data.load("walk")
    result = {"clip_s": (clip.frames - 1) * clip.dt, "dt": editor.player.dt}
    if "speed" in editor.view.input_items:
        call(editor.view.input_items["speed"], 2.0)
    call("reset_button")  # from frame 0 (inputs kept)
    player, run = editor.player, []
    for _ in range(int(float(loops) * result["clip_s"] / player.dt)):
        editor.view.play_one()
        run.append(player.frame)
    result["loop_on"] = run
    result["inputs"] = {k: float(v) for k, v in player.inputs.items()}
    result["pops"] = [[p.frame, p.node, p.error] for p in player.pops]
    dpg.set_value("loop_preview", False)  # the user unticks "loop preview"
    player.reset()
    run = []
    for _ in range(int(float(loops) * result["clip_s"] / player.dt)):
        editor.view.play_one()
        run.append(player.frame)
    result["loop_off"] = run
    editor.shutdown()
    print(json.dumps(result))


def file_ops(tmp, part):
    """``part`` "discard", "read_only" or "shortcuts", through the editor's callbacks (one window a process:
    dearpygui cannot make a second viewport)."""
    tmp = Path(tmp)
    result = {}

    def editor_on(path):
        editor = Editor(Document.open(path))
        editor.build()
        frames(editor, 2)
        return editor

    if part == "discard":
        _discard(tmp, result, editor_on)
    elif part == "read_only":
        _read_only(tmp, result, editor_on)
    else:
        _shortcuts(tmp, result, editor_on)
    print(json.dumps(result))


def _discard(tmp, result, editor_on):
    """Discard on quit deletes the autosave; shutdown writes none; the next open offers nothing."""
    from animgraph.editor import files

    g = tmp / "g.json"
    Document.new().save(g)
    editor = editor_on(g)
    editor.graph_view.act("set_field", "walk", "rate", 0.5)
    editor.last_autosave -= 3600  # the minute's autosave is due
    frames(editor, 1)
    auto = files.autosave_path(g)
    result["autosaved"] = auto.is_file()
    editor.request_close()
    frames(editor, 1)
    result["asked"] = dpg.is_item_shown("ask_save")
    call("ask_save_discard")
    editor.shutdown()
    result["autosave_after_discard"] = auto.exists()
    result["offered_after_discard"] = files.pending_autosave(g) is not None


def _read_only(tmp, result, editor_on):
    """A read-only file is never written: Save says so in one line and offers Save As, which writes elsewhere."""
    import os
    import stat

    ro = tmp / "ro.json"
    Document.new().save(ro)
    os.chmod(ro, 0o444)
    before = ro.read_bytes()
    editor = editor_on(ro)
    editor.graph_view.act("set_field", "walk", "rate", 0.5)
    editor.shortcut(dpg.mvKey_S, ctrl=True)
    frames(editor, 1)
    result["ro_status"] = dpg.get_value("status")
    result["ro_save_as_offered"] = dpg.is_item_shown("save_dialog")
    result["ro_bytes_same"] = ro.read_bytes() == before
    result["ro_mode"] = oct(stat.S_IMODE(ro.stat().st_mode))
    result["ro_dirty"] = editor.doc.dirty
    # ... and Save As from that dialog writes the other file.
    call("save_dialog", {"file_path_name": str(tmp / "as.json")})
    frames(editor, 1)
    result["saved_as"] = [str(editor.doc.path), editor.doc.dirty, Document.open(tmp / "as.json").to_json() ==
                          editor.doc.to_json()]
    editor.shutdown()


def _shortcuts(tmp, result, editor_on):
    """Ctrl+S saves a writable file (keeping its mode); Ctrl+Shift+S and Ctrl+O open their dialogs; Ctrl+N."""
    import os
    import stat

    w = tmp / "w.json"
    Document.new().save(w)
    os.chmod(w, 0o640)
    editor = editor_on(w)
    editor.graph_view.act("set_field", "walk", "rate", 1.5)
    editor.shortcut(dpg.mvKey_S, ctrl=True)
    frames(editor, 1)
    result["ctrl_s"] = [editor.doc.dirty, Document.open(w).graph.node("walk").rate, oct(stat.S_IMODE(w.stat().st_mode))]
    editor.shortcut(dpg.mvKey_S, ctrl=True, shift=True)
    frames(editor, 1)
    result["ctrl_shift_s"] = dpg.is_item_shown("save_dialog")
    dpg.hide_item("save_dialog")
    editor.shortcut(dpg.mvKey_N, ctrl=True)
    frames(editor, 1)
    result["ctrl_n"] = [editor.doc.path is None, editor.doc.to_json() == Document.new().to_json()]
    editor.shortcut(dpg.mvKey_O, ctrl=True)
    frames(editor, 1)
    result["ctrl_o"] = dpg.is_item_shown("open_dialog")
    call("open_dialog", {"file_path_name": str(w)})
    frames(editor, 1)
    result["opened"] = str(editor.doc.path)
    editor.shutdown()


def shots(graph, out, *counts):
    """``animgraph edit GRAPH --screenshot OUT/N.png --frames N`` for each N of ``counts``, in one window: the
    command's own ``screenshot_window`` each time (its line printed each time), the preview playing on."""
    from animgraph.editor import launch

    editor = Editor(Document.open(graph))
    editor.build()
    shutdown, editor.shutdown = editor.shutdown, lambda: None  # one window for every screenshot
    for i, n in enumerate(counts):
        if i:
            editor.start_kernels = lambda: None  # started by the first one: the kernels stay ready
        launch.screenshot_window(editor, Path(out) / f"{n}.png", int(n))
    shutdown()


def first_run(launched):
    """Start on the cache in the environment, as ``animgraph edit`` does, until the preview plays 30 frames:
    every drawn frame's time and state, and what this (the window's) process compiled."""
    from numba.core import event

    compiled = []

    class Compiles(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            d = ev.data["dispatcher"]
            compiled.append(f"{d.py_func.__module__}.{d.py_func.__qualname__}")

    event.register("numba:compile", Compiles())
    editor = Editor(Document.new())
    editor.build()
    drawn = []  # (seconds since launch, kernels, playing) per drawn frame

    def frame():
        editor.frame()
        drawn.append((time.time() - float(launched), editor.kernels, editor.player is not None
                      and editor.player.frame > 0))
        # A pause after each frame: under Xvfb the CPU draws a frame (about 0.1 s), and frames drawn back to back
        # would take a core from the child compiling beside (a display's vsync paces a real window).
        time.sleep(0.1)

    frame()  # the first frame comes before anything compiles (Editor.run)
    editor.start_kernels()
    deadline = time.monotonic() + 1500
    while editor.player is None or editor.player.frame < 30:
        assert time.monotonic() < deadline and editor.kernels in ("compiling", "loading", "ready"), editor.kernels
        frame()
    result = {"compiled": compiled, "drawn": drawn, "said": editor.said, "child": editor.warm is not None}
    editor.shutdown()
    print(json.dumps(result))


# ---------------------------------------------------------------- the canvas's habits


class Pointer:
    """Real mouse input into the X server (XTest through ctypes): what a user's hand does, in viewport pixels."""

    def __init__(self):
        import ctypes
        import os

        self.x11, self.xtst = ctypes.CDLL("libX11.so.6"), ctypes.CDLL("libXtst.so.6")
        self.x11.XOpenDisplay.restype = ctypes.c_void_p
        self.display = ctypes.c_void_p(self.x11.XOpenDisplay(os.environ["DISPLAY"].encode()))
        self.origin = dpg.get_viewport_pos()

    def _flush(self):
        self.x11.XFlush(self.display)

    def move(self, x, y):
        self.xtst.XTestFakeMotionEvent(self.display, -1, int(self.origin[0] + x), int(self.origin[1] + y), 0)
        self._flush()

    def button(self, which, down):
        self.xtst.XTestFakeButtonEvent(self.display, which, bool(down), 0)
        self._flush()


def steps(editor, pointer, path, which, n=3):
    """Press ``which`` (1 left, 3 right) at the first point of ``path``, move through it, release at its end."""
    pointer.move(*path[0])
    frames(editor, n)
    pointer.button(which, True)
    frames(editor, n)
    for p in path[1:]:
        pointer.move(*p)
        frames(editor, n)
    pointer.button(which, False)
    frames(editor, n)


def rects(canvas):
    """{node id: (x, y, w, h)} as the window drew them."""
    return canvas.rects(screen=True)


def overlaps(canvas):
    from animgraph.editor.layout import MIN_GAP, too_close

    return too_close(rects(canvas), MIN_GAP)


def undo_steps(doc, edit):
    """How many undo steps ``edit()`` added."""
    before = len(doc.history)
    edit()
    return len(doc.history) - before


def canvas_habits(graph, out):
    """Every habit of the canvas through its callbacks (and real mouse input where dearpygui reads it)."""
    out = Path(out)
    editor = Editor(Document.open(graph))
    editor.build()
    frames(editor, 3)
    canvas, doc, r = editor.canvas, editor.doc, {}
    pointer = Pointer()
    (ox, oy), (w, h) = canvas.origin(), canvas.size()
    r["editor_rect"] = [ox, oy, w, h]
    # Arrange: moved, one step, no overlap in the window; again: nothing to do.  The nodes start piled up on a
    # diagonal, as the palette used to add them.
    doc.move_many({n.id: (20 + 30 * k, 20 + 30 * k) for k, n in enumerate(doc.graph.nodes)})
    frames(editor, 2)
    r["piled_overlaps"] = len(overlaps(canvas))
    before = {n.id: doc.position(n.id) for n in doc.graph.nodes}
    r["arrange_steps"] = undo_steps(doc, editor.arrange)
    frames(editor, 2)
    r["arrange_again_steps"] = undo_steps(doc, editor.arrange)
    frames(editor, 2)
    r["arrange_moved"] = sum(doc.position(k) != v for k, v in before.items())
    r["arrange_drawn_at_doc"] = all(list(dpg.get_item_pos(canvas.nodes[k])) == [int(v) for v in doc.position(k)]
                                    for k in canvas.nodes)
    r["arrange_overlaps"] = overlaps(canvas)
    # Right click on empty canvas (real mouse): the add menu opens at the cursor; search, Enter adds there.
    from animgraph.editor.layout import gap

    def clear(p):  # room for a new node right and below the point, away from the minimap (bottom right)
        return all(gap((*p, 200, 150), b) > 16 for b in rects(canvas).values()) and not (
            p[0] + 200 > ox + w - 220 and p[1] + 150 > oy + h - 170)

    spots = [(ox + w - 260 - 40 * i, oy + 40 + 40 * j) for i in range(30) for j in range(8)]
    empty = next((p for p in spots if clear(p)), spots[0])
    r["empty"] = list(empty)
    r["empty_before"] = clear(empty)
    steps(editor, pointer, [empty], 3)
    r["menu_shown"] = dpg.is_item_shown(canvas.menu)
    r["menu_at"] = list(dpg.get_item_pos(canvas.menu))
    call(canvas.menu_search, "blend")
    frames(editor, 1)
    listed = list(dpg.get_item_configuration(canvas.menu_list)["items"])
    walk = [dpg.get_value(canvas.menu_list)]
    for key in (dpg.mvKey_Down, dpg.mvKey_Up, dpg.mvKey_Up):
        editor._on_key(None, key)
        frames(editor, 1)
        walk.append(dpg.get_value(canvas.menu_list))
    r["menu_arrows"] = [listed, walk]
    call(canvas.menu_search, "dead")
    frames(editor, 1)
    r["menu_items"] = list(canvas.menu_types)
    added = undo_steps(doc, lambda: editor._on_key(None, dpg.mvKey_Return))  # Enter, as the key handler has it
    frames(editor, 2)
    new = [n.id for n in doc.graph.nodes if n.id not in before]
    r["menu_added"] = [new, added, not dpg.is_item_shown(canvas.menu)]
    cx, cy = canvas.to_doc(empty)
    r["menu_node_near_cursor"] = [round(a - b) for a, b in zip(doc.position(new[0]), (cx, cy))] if new else None
    # A right click on the same spot now has a node there: a node added there goes to free space beside it.
    canvas.open_menu(at=(empty[0] + 5, empty[1] + 5))
    call(canvas.menu_search, "fk")
    canvas.menu_enter()
    frames(editor, 2)
    r["second_add_overlaps"] = overlaps(canvas)
    # Enter in the palette search adds the highlighted node, in sight and on nobody.
    count = len(doc.graph.nodes)
    call("palette_search", "inertial")
    frames(editor, 1)
    r["palette_highlight"] = editor.graph_view.highlighted
    dpg.focus_item("palette_search")
    frames(editor, 2)
    r["palette_focused"] = dpg.is_item_focused("palette_search")
    # Up/Down while typing: the highlight walks the shown buttons from top to bottom (as drawn), clamped at the ends.
    call("palette_search", "blend")
    frames(editor, 2)
    buttons = [item for item in dpg.get_all_items() if str(dpg.get_item_alias(item)).startswith("palette_")
               and dpg.get_item_type(item) == "mvAppItemType::mvButton" and dpg.is_item_visible(item)]
    drawn = [dpg.get_item_user_data(b) for b in sorted(buttons, key=lambda b: dpg.get_item_rect_min(b)[1])]
    walk = [editor.graph_view.highlighted]
    for key in (dpg.mvKey_Down, dpg.mvKey_Down, dpg.mvKey_Up, dpg.mvKey_Up, dpg.mvKey_Up):
        editor._on_key(None, key)
        frames(editor, 1)
        walk.append(editor.graph_view.highlighted)
    r["palette_arrows"] = [drawn, walk]
    call("palette_search", "inertial")
    frames(editor, 1)
    r["palette_steps"] = undo_steps(doc, lambda: editor._on_key(None, dpg.mvKey_Return))
    frames(editor, 2)
    r["palette_added"] = len(doc.graph.nodes) - count
    r["palette_overlaps"] = overlaps(canvas)
    pal = doc.graph.nodes[-1].id
    px, py, pw, ph = rects(canvas)[pal]
    r["palette_in_sight"] = ox <= px and px + pw <= ox + w and oy <= py and py + ph <= oy + h
    # From a pin: its menu's "add linked node..." entry opens the menu with only fitting types; the choice links.
    src = next(f"{s}" for s, _ in doc.graph.links if doc.ports(s.split(".")[0])[1][0].signal == "pose")
    sid, sport = src.split(".")
    attr = next(a for a, v in canvas.pins.items() if v == (sid, sport, "out"))
    canvas.select([sid])
    canvas.key(dpg.mvKey_F)  # the pin's node in sight
    frames(editor, 2)
    line = dpg.get_item_children(attr, 1)[0]  # the pin's text (an attribute has no rectangle of its own)
    (ax, ay), (aw, ah) = dpg.get_item_rect_min(line), dpg.get_item_rect_size(line)
    steps(editor, pointer, [(ax + aw - 6, ay + ah / 2)], 3)  # a real right click on the output pin's line
    r["pin_menu_shown"] = dpg.is_item_shown(canvas.pin_menu)
    if not r["pin_menu_shown"]:  # the pin's line not reported hovered: open it as the handler would
        canvas.open_pin_menu(src, "out", (ax + aw, ay))
    call(f"{canvas.pin_menu}_add")
    frames(editor, 1)
    fits = {t for t, _, _ in doc.linkable(src, "out")}
    r["pin_menu_types"] = [list(canvas.menu_types), sorted(fits), dpg.get_value(f"{canvas.menu}_title")]
    ids = {n.id for n in doc.graph.nodes}
    choice = "fk" if "fk" in canvas.menu_types else canvas.menu_types[0]
    r["linked_steps"] = undo_steps(doc, lambda: call(canvas.menu_list, choice))
    frames(editor, 2)
    linked = [n.id for n in doc.graph.nodes if n.id not in ids]
    r["linked"] = [linked, [list(ln) for ln in doc.graph.links if linked and ln[1].startswith(linked[0] + ".")]]
    r["linked_src"] = src
    r["linked_overlaps"] = overlaps(canvas)
    # Box select (a real left drag over empty canvas): the first column's nodes.
    canvas.key(dpg.mvKey_Home)
    frames(editor, 2)
    boxes = rects(canvas)
    # The leftmost nodes well inside the canvas (a drag past its edge makes the node editor pan).
    seen = {k: b for k, b in boxes.items() if ox + 20 <= b[0] and b[0] + b[2] <= ox + w - 20 and oy + 20 <= b[1]
            and b[1] + b[3] <= oy + h - 20}
    left = min(b[0] for b in seen.values())
    first = sorted(k for k, b in seen.items() if b[0] < left + 20)
    top = min(boxes[k][1] for k in first)
    right = max(boxes[k][0] + boxes[k][2] for k in first)
    bottom = max(boxes[k][1] + boxes[k][3] for k in first)
    steps(editor, pointer, [(left - 12, top - 12), ((left + right) / 2, bottom), (right + 4, bottom + 6)], 1)
    frames(editor, 2)
    r["box_window"] = [len(dpg.get_selected_nodes(canvas.tag)), [left - 12, top - 12], [ox, oy]]
    box = (left - 12, top - 12, right + 16 - left, bottom + 18 - top)
    r["box"] = [sorted(canvas.selection()), sorted(k for k, b in boxes.items() if gap(b, box) == 0)]
    # Ctrl+C, Ctrl+V of a linked pair and a third node: fresh ids, the link among them kept, one step, on nobody.
    a, b = (ref.split(".")[0] for ref in doc.graph.links[0])
    first = [n.id for n in doc.graph.nodes if n.id in {a, b, first[0]}]
    canvas.select(first)
    inner = [ln for ln in doc.graph.links if ln[0].split(".")[0] in first and ln[1].split(".")[0] in first]
    frames(editor, 2)
    canvas.key(dpg.mvKey_C, ctrl=True)
    ids = {n.id for n in doc.graph.nodes}
    r["paste_steps"] = undo_steps(doc, lambda: canvas.key(dpg.mvKey_V, ctrl=True))
    frames(editor, 2)
    pasted = [n.id for n in doc.graph.nodes if n.id not in ids]
    names = {k: v for k, v in zip(first, pasted)}
    r["paste"] = [len(pasted) == len(first), len(set(n.id for n in doc.graph.nodes)) == len(doc.graph.nodes),
                  sorted(canvas.selection()) == sorted(pasted)]
    r["paste_links"] = [len(inner), sum(1 for a, b in doc.graph.links
                                        if a.split(".")[0] in pasted and b.split(".")[0] in pasted)]
    r["paste_overlaps"] = overlaps(canvas)
    # Ctrl+D duplicates the selection (the pasted nodes): one step, fresh ids again.
    ids = {n.id for n in doc.graph.nodes}
    r["dup_steps"] = undo_steps(doc, lambda: canvas.key(dpg.mvKey_D, ctrl=True))
    frames(editor, 2)
    dup = [n.id for n in doc.graph.nodes if n.id not in ids]
    r["dup"] = [len(dup), len(pasted), len(set(n.id for n in doc.graph.nodes)) == len(doc.graph.nodes)]
    r["pasted"] = pasted
    r["dup_overlaps"] = overlaps(canvas)
    # Delete: the duplicated nodes go in one step; undo brings them back.
    r["delete_steps"] = undo_steps(doc, lambda: canvas.key(dpg.mvKey_Delete))
    frames(editor, 2)
    r["deleted"] = [not any(n.id in dup for n in doc.graph.nodes), doc.undo() and all(
        any(n.id == d for n in doc.graph.nodes) for d in dup)]
    doc.redo()
    frames(editor, 2)
    # A comment frame around the pasted nodes: stored under editor, drawn round them, moved with them.
    canvas.select(pasted)
    canvas.key(dpg.mvKey_F)  # in sight
    frames(editor, 2)
    canvas.key(dpg.mvKey_C)  # C asks for the title, typed and confirmed with Enter
    frames(editor, 1)
    r["title_box"] = dpg.is_item_shown(canvas.title_box)
    dpg.set_value(canvas.title_box_text, "pasted")
    r["comment_steps"] = undo_steps(doc, lambda: call(canvas.title_box_text, "pasted"))
    frames(editor, 2)
    r["comment_doc"] = doc.comments()
    boxes = rects(canvas)

    def encloses(frame):
        """Whether the frame holds the part in sight of every pasted node (frames are cut at the canvas's edge)."""
        x0, y0, x1, y1 = frame
        for n in pasted:
            bx, by, bw, bh = boxes[n]
            cx0, cy0, cx1, cy1 = max(bx, ox), max(by, oy), min(bx + bw, ox + w), min(by + bh, oy + h)
            if cx1 > cx0 and cy1 > cy0 and not (x0 <= cx0 and cx1 <= x1 and y0 <= cy0 and cy1 <= y1):
                return False
        return True

    r["comment_drawn"] = [[t, encloses(f)] for t, f in canvas.frames]
    # A double click on the frame's title band: a box with its title; Enter retitles, "remove frame" removes it
    # (each one undo step, undone here).
    x0, y0, x1, _ = canvas.frames[0][1]
    r["retitle_opened"] = [canvas.on_double_click((x0 + 8, y0 + 4)), dpg.is_item_shown(canvas.title_box),
                           dpg.get_value(canvas.title_box_text), canvas.on_double_click((x1 + 40, y0 + 4))]
    dpg.set_value(canvas.title_box_text, "renamed")
    r["retitle_steps"] = undo_steps(doc, lambda: call(canvas.title_box_text, "renamed"))
    r["retitled"] = [f["title"] for f in doc.comments()]
    doc.undo()
    canvas.on_double_click((x0 + 8, y0 + 4))
    r["remove_steps"] = undo_steps(doc, lambda: call(f"{canvas.title_box}_remove"))
    r["removed"] = [doc.comments(), [n.id for n in doc.graph.nodes if n.id in pasted] == pasted]
    doc.undo()
    frames(editor, 2)
    before_frame = canvas.frames[0][1] if canvas.frames else None
    # A node move (a drag of the selection: imnodes moves every selected node): one undo step for them all.
    for nid in pasted:
        x, y = dpg.get_item_pos(canvas.nodes[nid])
        dpg.set_item_pos(canvas.nodes[nid], [x + 30, y + 20])
    r["move_steps"] = undo_steps(doc, lambda: frames(editor, 1))
    frames(editor, 2)
    boxes = rects(canvas)
    r["comment_moved"] = [[round(a - b) for a, b in zip(canvas.frames[0][1], before_frame)], encloses(
        canvas.frames[0][1])] if before_frame else None
    doc.save(out / "saved.json")
    r["comment_saved"] = json.loads((out / "saved.json").read_text())["editor"].get("comments")
    # Home and F: the view lost far away, then everything, then one far node, brought into sight; no edit.
    text, steps_before = doc.to_json(), len(doc.history)
    canvas.view = (5000.0, 4000.0)
    canvas.sync(editor.problems)
    frames(editor, 2)
    r["lost"] = not any(ox <= x < ox + w and oy <= y < oy + h for x, y, _, _ in rects(canvas).values())
    canvas.key(dpg.mvKey_Home)
    frames(editor, 2)
    boxes = rects(canvas)
    r["home"] = [min(b[0] for b in boxes.values()) - ox, min(b[1] for b in boxes.values()) - oy]
    far = pasted[0]
    canvas.act("move", far, (6000, 5000))
    frames(editor, 2)
    canvas.select([far])
    canvas.key(dpg.mvKey_F)
    frames(editor, 2)
    fx, fy, fw, fh = rects(canvas)[far]
    r["frame_selected"] = [fx - ox, fy - oy, fw, fh]
    doc.undo()  # the far move
    r["view_no_edit"] = [doc.to_json() == text, len(doc.history) == steps_before]
    # Ctrl+Space (the key handler's shortcut): the canvas takes the preview row's height; Home frames in it, clear of
    # the minimap; Ctrl+Space again gives the height back.
    from animgraph.editor.canvas import minimap_rect

    r["max_h"] = [canvas.size()[1]]
    editor.shortcut(dpg.mvKey_Spacebar, ctrl=True)
    frames(editor, 3)
    r["max_h"].append(canvas.size()[1])
    r["max_preview_hidden"] = not dpg.is_item_shown("preview_row")
    canvas.key(dpg.mvKey_Home)
    frames(editor, 2)
    (mx0, my0), (mw, mh) = canvas.origin(), canvas.size()
    boxes = rects(canvas)
    r["max_in_sight"] = [sum(mx0 <= x and x + bw <= mx0 + mw and my0 <= y and y + bh <= my0 + mh
                             for x, y, bw, bh in boxes.values()), len(boxes)]
    mini = minimap_rect(mw, mh)
    mini = (mx0 + mini[0], my0 + mini[1], mini[2], mini[3])
    # Nodes wholly past the canvas's right edge are out of sight, not under the minimap.
    r["max_under_minimap"] = sorted([k, b] for k, b in boxes.items() if gap(b, mini) == 0 and b[0] < mx0 + mw)
    r["max_minimap"] = mini
    shot(out / "canvas_maximized.png")
    editor.shortcut(dpg.mvKey_Spacebar, ctrl=True)
    frames(editor, 3)
    r["max_h"].append(canvas.size()[1])
    r["max_preview_back"] = dpg.is_item_shown("preview_row")
    shot(out / "canvas.png")
    editor.shutdown()
    print(json.dumps(r))


def no_overlap(*graphs):
    """Each graph (and a new graph with one node of every type) opened in one window: the drawn node rectangles
    closer than 8 px, as stored and after Arrange."""
    from animgraph.node import REGISTRY

    editor = Editor(Document.new())
    editor.build()
    frames(editor, 2)
    result = {}
    every = Document.new()
    for t in sorted(REGISTRY):
        every.add_node(t)
    for name, doc in [(Path(g).stem, Document.open(g)) for g in graphs] + [("every_type", every)]:
        editor.set_document(doc, offer=False)
        frames(editor, 2)
        stored = overlaps(editor.canvas)
        editor.arrange()
        frames(editor, 2)
        result[name] = {"stored": stored, "arranged": overlaps(editor.canvas), "nodes": len(editor.canvas.nodes),
                        "drawn": sum(r[2] > 0 for r in rects(editor.canvas).values())}
    editor.shutdown()
    print(json.dumps(result))


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"links": main, "pops": pops, "timeline": timeline, "looping": looping, "files": file_ops,
     "first_run": first_run, "shots": shots,
     "canvas": canvas_habits, "no_overlap": no_overlap}[mode](*args)
