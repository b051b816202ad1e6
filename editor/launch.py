"""``animgraph edit``: open the editor on a graph, or play it and write a screenshot of the whole window.

With ``--screenshot`` a bad graph is the command's one-line error (exit 2) and no window
opens; without it the window opens on a new graph and shows the error.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import dearpygui.dearpygui as dpg

from animgraph.errors import AnimgraphError

from . import files
from .app import COMPILE_NOTE, Editor
from .document import Document


def screenshot_window(editor, path, frames, timeout=900.0):
    """Play ``frames`` frames once ``editor``'s kernels are ready, write a PNG of the whole window, close it."""
    editor.start_kernels()
    if editor.kernels == "compiling":
        print(f"animgraph: {COMPILE_NOTE}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + timeout
    while editor.kernels != "ready" or editor.player is None:
        if time.monotonic() > deadline or editor.kernels not in ("ready", "compiling", "loading", "checking"):
            raise AnimgraphError(f"no preview to screenshot: {editor.kernels if editor.kernels != 'ready' else ''}"
                                 f"{editor.problems[0].text if editor.problems else ''}")
        editor.frame()
        if editor.problems:
            raise AnimgraphError(editor.problems[0].text)
    editor.view.playing = False
    editor.player.seek(frames)  # ticks while waiting may have played on: the picture shows frame ``frames``
    for _ in range(3):
        editor.frame()
    editor.view.update_plot(True)
    dpg.render_dearpygui_frame()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.png")
    dpg.output_frame_buffer(file=str(tmp))
    for _ in range(100):  # the frame buffer is written during a later frame
        dpg.render_dearpygui_frame()
        if tmp.exists() and tmp.stat().st_size > 0:
            break
    if not tmp.exists():
        raise AnimgraphError(f"{path}: the window's frame buffer could not be written")
    time.sleep(0.1)
    os.replace(tmp, path)
    (x, y), (w, h) = dpg.get_item_rect_min("view3d"), dpg.get_item_rect_size("view3d")
    print(f"animgraph edit: wrote {path} at frame {editor.player.frame}; 3D view at x={x} y={y} size {w}x{h}",
          flush=True)
    editor.shutdown()


def has_display():
    """Whether a window can be opened (dearpygui aborts the process without one)."""
    return os.name == "nt" or sys.platform == "darwin" or bool(os.environ.get("DISPLAY")
                                                                   or os.environ.get("WAYLAND_DISPLAY"))


def main(graph=None, screenshot=None, frames=60):
    """``animgraph edit``: open ``graph`` (or a new one) in the window; with ``screenshot``, play, save a PNG, exit."""
    error = None
    if graph is None:
        doc = Document.new()
    elif screenshot is not None:
        doc = Document.open(graph)  # a bad file is the command's one-line error, exit 2
    elif not Path(graph).exists() and Path(graph).parent.is_dir() and str(graph).endswith(".json"):
        doc = Document.from_graph(Document.new().graph, Path(graph), dirty=True)  # a new graph, to be saved there
    else:
        try:
            doc = Document.open(graph)
        except (AnimgraphError, OSError) as e:
            doc, error = Document.new(), str(e)
    if not has_display():
        raise AnimgraphError("the editor needs a display: set DISPLAY, or run it under xvfb-run")
    editor = Editor(doc, error)
    editor.build()
    if screenshot is not None:
        screenshot_window(editor, screenshot, frames)
        return 0
    if doc.path is not None and error is None:
        files.add_recent(doc.path)
    editor.run()
    return 0
