"""Drives the editor window through its own callbacks, in a subprocess (dearpygui aborts without a display).

``python tests/editor_driver.py GRAPH OUT_DIR`` opens GRAPH, breaks its first link and
makes it again through the node editor's delink/link callbacks, tries a mismatched link,
plays frames, writes two screenshots and prints what happened as one JSON line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import dearpygui.dearpygui as dpg

from animgraph.editor.app import Editor
from animgraph.editor.document import Document


def frames(editor, n):
    for _ in range(n):
        editor.tick()
        dpg.render_dearpygui_frame()


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
        editor.tick()
        dpg.render_dearpygui_frame()
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


def compiling(graph):
    """A slow compile in the child process: the window keeps drawing and says it is compiling."""
    import subprocess

    from animgraph.editor import warmup

    warmup.executor_is_cached = lambda: False
    warmup.start = lambda: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"],
                                            stdout=subprocess.PIPE, text=True)
    editor = Editor(Document.open(graph))
    editor.build()
    editor.start_kernels()
    drawn, said = 0, set()
    while editor.kernels == "compiling":
        frames(editor, 1)
        drawn += 1
        said.add(dpg.get_value("preview_state"))
    frames(editor, 3)
    ok, node_id = editor.graph_view.act("add_node", "blend")  # the editor works meanwhile and after
    result = {"drawn": drawn, "said": sorted(said), "kernels": editor.kernels, "player": editor.player is not None,
              "added": ok}
    editor.shutdown()
    print(json.dumps(result))


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"links": main, "pops": pops, "compiling": compiling}[mode](*args)
