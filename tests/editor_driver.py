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
    view, doc = editor.graph_view, editor.doc
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
    result = {"switched": switched, "pops": [[p.frame, p.node] for p in editor.player.pops], "marked": sorted(editor.graph_view.marked),
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


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"links": main, "pops": pops, "timeline": timeline, "looping": looping, "files": file_ops,
     "first_run": first_run, "shots": shots}[mode](*args)
