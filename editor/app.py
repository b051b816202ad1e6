"""``animgraph edit``: the editor window, its menus, the edit -> validate -> re-plan -> play loop.

One ``Editor`` holds the ``Document`` (every edit goes through it), the ``GraphView``
(palette, node editor, inspector) and the ``Viewport`` (preview).  Each drawn frame it:
re-validates and re-plans when the document's revision changed (tables only: planning
never compiles), steps the preview, redraws, and writes an autosave once a minute.

The window's process never compiles.  A first run compiles in a child process
(``warmup``; numba holds the GIL while compiling, so a thread would freeze the window):
until it is done the preview says "compiling kernels (first run only)", the node editor
stays usable and edits are checked without planning (planning reads clips and builds
tables with compiled code).  Then, and on every later start, the cached code is loaded in
a thread while the window keeps drawing, and the preview plays.
"""

from __future__ import annotations

import inspect
import sys
import threading
import time
import traceback
from pathlib import Path

import dearpygui.dearpygui as dpg

from animgraph.errors import AnimgraphError

from . import files, warmup
from .document import Document, ReadOnlyError
from .graphview import GraphView
from .inner import InnerViews
from .machineview import MachineView
from .spaceview import SpaceView
from .viewport import Viewport

TITLE = "animgraph editor"
AUTOSAVE_SECONDS = 60.0
WINDOW = (1800, 1000)  # pixels; the panes below keep their size, the node editor takes the rest
LEFT = 250  # palette, details and assets
PREVIEW_HEIGHT = 420  # the row under the node editor: 3D view, controls, plot
VIEW_WIDTH, CONTROLS_WIDTH = 580, 470
COMPILE_NOTE = "compiling kernels (first run only: about a minute on 2 cores)..."


class Editor(InnerViews):
    """The editor window over one document at a time."""

    def __init__(self, doc, error=None):
        self.doc = doc
        doc.read_assets = False  # until start_kernels knows reading a clip compiles nothing
        self.player = None
        self.plan = None
        self.skeleton = None
        self.problems = []
        self.seen = None  # the document revision last validated
        self.kernels = "checking"  # "checking", "compiling", "loading", "ready", or an error line
        self.assets_ready = False  # whether reading a clip here compiles nothing (the child said so)
        self.warm = None
        self.said = []  # the warm-up child's lines
        self.last_autosave = time.monotonic()
        self.last_tick = time.monotonic()
        self.closing = False
        self.discarded = False  # the user discarded the unsaved changes: no autosave at shutdown
        self.graph_view = GraphView(self)
        self.machine_view = MachineView(self)
        self.space_view = SpaceView(self)
        self.inner = None  # the open state machine's (or blend space's) view, None on the graph
        self.view = Viewport(self)
        self.first_error = error
        self.jobs = []  # callbacks triggered from Python (tests), run with dearpygui's queue
        self.crash_details = ""  # the traceback of the last error caught by the boundary
        self.maximized = False  # the node canvas over the preview row too (Ctrl+Space)

    # ------------------------------------------------------------ window

    def build(self):
        dpg.create_context()
        dpg.configure_app(manual_callback_management=True)  # callbacks run in frame(), inside the error boundary
        dpg.create_viewport(title=TITLE, width=WINDOW[0], height=WINDOW[1], disable_close=True)
        with dpg.window(tag="main"):
            self._menus()
            with dpg.group(horizontal=True):
                with dpg.child_window(width=LEFT, height=-30, tag="left"):
                    self.graph_view.build_palette("left")
                    dpg.add_separator()
                    self.graph_view.build_inspector("left")
                with dpg.child_window(width=-1, height=-30, tag="right", no_scrollbar=True):
                    with dpg.group(horizontal=True, tag="breadcrumb", show=False):
                        dpg.add_button(label="graph", tag="crumb_graph", small=True, callback=self.close_inner)
                        dpg.add_text("", tag="crumb_here")
                    with dpg.group(tag="graph_pane"):
                        self.graph_view.build_editor("graph_pane", -1, -PREVIEW_HEIGHT)
                    self.machine_view.build("right", -1, -PREVIEW_HEIGHT)
                    self.space_view.build("right", -1, -PREVIEW_HEIGHT)
                    with dpg.group(horizontal=True, tag="preview_row"):
                        with dpg.child_window(width=VIEW_WIDTH, height=-1, tag="view_pane", no_scrollbar=True):
                            self.view.build_view("view_pane")
                        with dpg.child_window(width=CONTROLS_WIDTH, height=-1, tag="controls_pane"):
                            self.view.build_controls("controls_pane")
                        with dpg.child_window(width=-1, height=-1, tag="plot_pane"):
                            self.view.build_plot("plot_pane")
            dpg.add_text("", tag="status")
        self._dialogs()
        with dpg.handler_registry():
            dpg.add_key_press_handler(callback=self._on_key)
            dpg.add_mouse_click_handler(button=dpg.mvMouseButton_Right, callback=self._on_right_click)
            dpg.add_mouse_double_click_handler(button=dpg.mvMouseButton_Left, callback=self._on_double_click)
        dpg.set_exit_callback(self.request_close)
        dpg.setup_dearpygui()
        dpg.show_viewport()
        dpg.set_primary_window("main", True)
        self._update_title()

    def _menus(self):
        with dpg.menu_bar():
            with dpg.menu(label="File"):
                dpg.add_menu_item(label="New", shortcut="Ctrl+N", callback=lambda: self.guard(self.new))
                dpg.add_menu_item(label="Open...", shortcut="Ctrl+O", callback=self.open_dialog)
                with dpg.menu(label="Open Recent", tag="recent_menu"):
                    pass
                dpg.add_menu_item(label="Save", shortcut="Ctrl+S", callback=self.save)
                dpg.add_menu_item(label="Save As...", shortcut="Ctrl+Shift+S", callback=self.save_as)
                dpg.add_separator()
                dpg.add_menu_item(label="Quit", callback=self.request_close)
            with dpg.menu(label="Edit"):
                dpg.add_menu_item(label="Undo", shortcut="Ctrl+Z", callback=self.undo)
                dpg.add_menu_item(label="Redo", shortcut="Ctrl+Y", callback=self.redo)
                def on(name, *args):  # the canvas in sight: the graph's, or the open machine's
                    return lambda: getattr(self.active_canvas, name)(*args)

                for label, key, fn in (("Add node...", "right click", on("open_menu")),
                                       ("Delete selected", "Del", on("delete_selected")),
                                       ("Copy", "Ctrl+C", on("copy")), ("Paste", "Ctrl+V", on("paste")),
                                       ("Duplicate", "Ctrl+D", on("duplicate")),
                                       ("Comment frame around selected", "C", on("comment_selected")),
                                       ("Arrange nodes", "", self.arrange), ("Frame all", "Home", on("frame_all")),
                                       ("Frame selected", "F", on("frame_selected"))):
                    dpg.add_menu_item(label=label, shortcut=key, callback=lambda s, a, u: u(), user_data=fn)
            with dpg.menu(label="View"):
                dpg.add_menu_item(label="Maximize canvas", shortcut="Ctrl+Space", check=True, tag="maximize_item",
                                  callback=lambda: self.maximize_canvas(not self.maximized))

    def _dialogs(self):
        for tag, label, cb in (("open_dialog", "Open graph", self._on_open), ("save_dialog", "Save graph as",
                                                                                 self._on_save_as)):
            with dpg.file_dialog(label=label, tag=tag, show=False, callback=cb, width=700, height=420,
                                 default_path=str(self.doc.path.parent if self.doc.path else Path.cwd())):
                dpg.add_file_extension(".json")
                dpg.add_file_extension(".*")
        with dpg.file_dialog(label="Add a BVH clip", tag="bvh_dialog", show=False, width=700, height=420,
                             callback=lambda s, a: self.graph_view.add_bvh(a["file_path_name"])):
            dpg.add_file_extension(".bvh")
            dpg.add_file_extension(".*")
        with dpg.window(label="Unsaved changes", modal=True, show=False, tag="ask_save", no_close=True, width=420):
            dpg.add_text("", tag="ask_save_text", wrap=400)
            with dpg.group(horizontal=True):
                for what in ("save", "discard", "cancel"):
                    dpg.add_button(label=what.title(), width=90, tag=f"ask_save_{what}", user_data=what,
                                   callback=lambda s, a, u: self._answer(u))
        with dpg.window(label="Autosave found", modal=True, show=False, tag="ask_restore", no_close=True, width=460):
            dpg.add_text("", tag="ask_restore_text", wrap=440)
            with dpg.group(horizontal=True):
                dpg.add_button(label="Restore", width=90, callback=lambda: self._restore(True))
                dpg.add_button(label="Discard", width=90, callback=lambda: self._restore(False))
        with dpg.window(label="Error", modal=True, show=False, tag="error_box", width=560):
            dpg.add_text("", tag="error_text", wrap=540)
            dpg.add_button(label="OK", width=90, callback=lambda: dpg.hide_item("error_box"))
        with dpg.window(tag="link_tip", show=False, no_title_bar=True, no_move=True, no_resize=True, autosize=True,
                        no_focus_on_appearing=True, no_saved_settings=True):
            dpg.add_text("", tag="link_tip_text")
        with dpg.window(label="Internal error", modal=True, show=False, tag="crash_box", width=560):
            dpg.add_text("", tag="crash_text", wrap=540)
            with dpg.group(horizontal=True):
                dpg.add_button(label="copy details", tag="crash_copy", callback=lambda: dpg.set_clipboard_text(
                    self.crash_details))
                dpg.add_button(label="OK", width=90, callback=lambda: dpg.hide_item("crash_box"))

    def status(self, text, error=False):
        """One line in the status bar (red for errors)."""
        if dpg.does_item_exist("status"):
            dpg.set_value("status", text)
            dpg.configure_item("status", color=(255, 110, 110) if error else (200, 200, 200))

    def show_error(self, text):
        self.status(text, error=True)
        dpg.set_value("error_text", text)
        dpg.show_item("error_box")

    def _update_title(self):
        name = self.doc.path.name if self.doc.path else "untitled"
        dpg.set_viewport_title(f"{'*' if self.doc.dirty else ''}{name} - {TITLE}")
        dpg.delete_item("recent_menu", children_only=True)
        for path in files.recent_files():
            dpg.add_menu_item(label=str(path), parent="recent_menu", user_data=path,
                              callback=lambda s, a, u: self.guard(lambda: self.open(u)))

    # ------------------------------------------------------------ documents

    def changed(self):
        """Called after every successful document edit (the loop picks the new revision up)."""
        self._update_title()

    def set_document(self, doc, offer=True):
        self.close_inner()
        self.doc, self.seen, self.discarded = doc, None, False
        doc.read_assets = self.assets_ready
        self.graph_view.selected = None
        self.canvas.structure, self.canvas.chosen, self.canvas.view = None, None, (0.0, 0.0)
        self.view.framed = False
        if doc.path is not None:
            files.add_recent(doc.path)
        self._update_title()
        if offer:
            self._offer_autosave()

    def new(self):
        self.set_document(Document.new())
        self.status("new graph on the bundled walk clip")

    def open(self, path):
        """Open a graph; a bad file shows its one-line error and leaves the current document (and the file) alone."""
        try:
            doc = Document.open(path)
        except (AnimgraphError, OSError) as e:
            self.show_error(str(e))
            return False
        self.set_document(doc)
        self.status(f"opened {path}")
        return True

    def save(self, path=None):
        """Save (atomically); a failure keeps the previous file and says why."""
        if path is None and self.doc.path is None:
            dpg.show_item("save_dialog")
            return False
        try:
            self.doc.save(path)
        except ReadOnlyError as e:
            self.status(str(e), error=True)  # and Save As is offered
            self.save_as()
            return False
        except (AnimgraphError, OSError) as e:
            self.show_error(f"not saved: {e}")
            return False
        files.discard_autosave(self.doc.path)
        files.add_recent(self.doc.path)
        self._update_title()
        self.status(f"saved {self.doc.path}")
        return True

    def save_as(self):
        """Ask where to save (the Save As dialog)."""
        dpg.show_item("save_dialog")

    def open_dialog(self):
        """Ask which graph to open (the Open dialog)."""
        dpg.show_item("open_dialog")

    def _on_open(self, sender, data):
        self.guard(lambda: self.open(data["file_path_name"]))

    def _on_save_as(self, sender, data):
        self.save(data["file_path_name"])
        if self.closing and not self.doc.dirty:
            dpg.stop_dearpygui()

    def _offer_autosave(self):
        pending = files.pending_autosave(self.doc.path)
        if pending is not None:
            dpg.set_value("ask_restore_text", f"An autosave newer than {self.doc.path or 'the last session'} was "
                                              f"found:\n{pending}\nRestore it (unsaved), or discard it?")
            self._pending = pending
            dpg.show_item("ask_restore")

    def _restore(self, yes):
        dpg.hide_item("ask_restore")
        if yes:
            try:
                doc = files.restore_autosave(self.doc.path)
            except (AnimgraphError, OSError) as e:
                self.show_error(f"autosave not restored: {e}")
                return
            if doc is not None:
                self.set_document(doc, offer=False)
                self.status(f"restored {self._pending} (not saved yet)")
        else:
            files.discard_autosave(self.doc.path)

    # ------------------------------------------------------------ unsaved changes

    def guard(self, action):
        """Run ``action`` now, or after asking to save unsaved changes."""
        if not self.doc.dirty:
            action()
            return
        self._then = action
        dpg.set_value("ask_save_text", f"{self.doc.path or 'The new graph'} has unsaved changes.")
        dpg.show_item("ask_save")

    def request_close(self):
        self.closing = True
        self.guard(dpg.stop_dearpygui)

    def _answer(self, what):
        dpg.hide_item("ask_save")
        if what == "cancel":
            self.closing = False
            return
        if what == "save" and not self.save():
            return  # a Save As dialog is open, or saving failed
        if what == "discard":
            files.discard_autosave(self.doc.path)
            self.discarded = True  # and no autosave is written again at shutdown
        self._then()

    @property
    def canvas(self):
        """The graph's node canvas."""
        return self.graph_view.canvas

    @property
    def active_canvas(self):
        """The canvas in sight: the open state machine's, else the graph's."""
        return self.inner.canvas if self.inner is not None else self.canvas

    def arrange(self):
        """Lay the canvas in sight out left to right (one undo step)."""
        return self.active_canvas.arrange()

    def undo(self):
        if self.doc.undo():
            self.changed()
            self.status("undone")

    def redo(self):
        if self.doc.redo():
            self.changed()
            self.status("redone")

    def _on_key(self, sender, key):
        ctrl = dpg.is_key_down(dpg.mvKey_LControl) or dpg.is_key_down(dpg.mvKey_RControl)
        shift = dpg.is_key_down(dpg.mvKey_LShift) or dpg.is_key_down(dpg.mvKey_RShift)
        if key == dpg.mvKey_Return:
            if dpg.is_item_focused("palette_search"):
                self.graph_view.palette_enter()
            elif dpg.is_item_shown(self.active_canvas.menu):
                self.active_canvas.menu_enter()
            return  # (the comment title box takes its Enter itself)
        if key in (dpg.mvKey_Up, dpg.mvKey_Down):  # walk the matches while typing a search, as in Blender's menus
            step = 1 if key == dpg.mvKey_Down else -1
            if dpg.is_item_focused("palette_search"):
                self.graph_view.move_highlight(step)
            elif dpg.is_item_shown(self.active_canvas.menu):
                self.active_canvas.menu_move(step)
            return
        canvas = self.active_canvas
        typing = dpg.is_item_focused("palette_search") or canvas.typing()
        if not typing and canvas.hovered() and canvas.key(key, ctrl, shift):
            return  # the canvas's keys act where the mouse is on the canvas, so typing in a field stays typing
        self.shortcut(key, ctrl, shift)

    def maximize_canvas(self, on):
        """Ctrl+Space (Blender's maximize area): the node canvas takes the preview row's height too, or gives it back.

        The preview keeps playing while hidden; the view offset stays, so the nodes in sight stay where they were.
        """
        self.maximized = bool(on)
        dpg.configure_item("preview_row", show=not self.maximized)
        for canvas in (self.canvas, self.machine_view.canvas):
            dpg.configure_item(canvas.tag, height=-1 if self.maximized else -PREVIEW_HEIGHT)
        if self.inner is self.space_view:
            self.space_view.fit()
        dpg.set_value("maximize_item", self.maximized)

    def _on_double_click(self):
        if self.active_canvas.hovered() and not self.active_canvas.typing():
            self.double_click()

    def _on_right_click(self):
        if self.active_canvas.hovered() and not self.active_canvas.typing():
            self.active_canvas.on_right_click()

    def shortcut(self, key, ctrl=False, shift=False):
        """What a key pressed with Ctrl and Shift held (or not) does: the menus' shortcuts, Del."""
        actions = {(dpg.mvKey_Z, False): self.undo, (dpg.mvKey_Y, False): self.redo,
                   (dpg.mvKey_N, False): lambda: self.guard(self.new), (dpg.mvKey_O, False): self.open_dialog,
                   (dpg.mvKey_S, False): self.save, (dpg.mvKey_S, True): self.save_as}
        if ctrl and key == dpg.mvKey_Spacebar:
            self.maximize_canvas(not self.maximized)
        elif ctrl and (key, shift) in actions:
            actions[key, shift]()
        elif key == dpg.mvKey_Delete and not dpg.is_item_focused("palette_search"):
            self.active_canvas.delete_selected()

    # ------------------------------------------------------------ kernels

    def start_kernels(self):
        """Load the cached compiled code (in a thread) if everything is cached; else compile it in a child process.

        The window's process never compiles (numba holds the GIL): until the child says the clip
        readers are compiled no clip is read here, and until it is done nothing is planned here.
        """
        if warmup.executor_is_cached():
            self.assets_ready = True
            self._load()
        else:
            self.kernels, self.assets_ready = "compiling", False
            self.warm = warmup.start(*([self.doc.path] if self.doc.path is not None else []))
            self.said = []
            self._reader = threading.Thread(target=self._read_child, args=(self.warm, self.said), daemon=True)
            self._reader.start()
        self.doc.read_assets = self.assets_ready

    @staticmethod
    def _read_child(proc, said):
        """Collect the child's lines (a thread: a blocking read of a pipe releases the GIL)."""
        for line in proc.stdout:
            said.append(line.rstrip("\n"))

    def _load(self):
        """Load the cached code in a thread (a few seconds for the whole executor); the window draws meanwhile."""
        self.kernels = "loading"
        self._loader = threading.Thread(target=warmup.load_cached, daemon=True)
        self._loader.start()

    def poll_kernels(self):
        if self.kernels == "loading" and not self._loader.is_alive():
            self.kernels, self.seen = "ready", None
        if self.kernels != "compiling":
            return
        if not self.assets_ready and warmup.ASSETS_READY in self.said:
            self.assets_ready = self.doc.read_assets = True
            self.graph_view.refresh_inspector()  # joint choices now come from the skeleton
        if self.warm.poll() is not None:
            self._reader.join(timeout=5)
            out = [line for line in self.said if line.strip()]
            if self.warm.returncode == 0:
                self.assets_ready = self.doc.read_assets = True
                self.status(out[-1] if out else "kernels ready")
                self._load()
            else:
                self.kernels = f"compiling the kernels failed: {out[-1] if out else self.warm.returncode}"
                self.show_error(self.kernels)

    # ------------------------------------------------------------ the loop

    def revalidate(self):
        """Validate and re-plan after an edit; a valid plan replaces the preview's (tables only, no compile)."""
        from animgraph import executor
        from .player import Player

        if self.kernels != "ready":  # planning reads clips and builds tables: compiled code, maybe not cached yet
            self.problems = self.doc.check()
            self.graph_view.sync(self.problems)
            self._sync_inner()
            if self.problems:
                self.status(self.problems[0].text, error=True)
            self.seen = self.doc.revision
            self._update_state()
            return
        result = self.doc.validate(reuse_slots=False)
        self.problems = result.problems
        if result.plan is not None:
            self.plan, self.skeleton = result.plan, result.plan.skeleton
        self.graph_view.sync(self.problems)
        self._sync_inner()
        if self.problems:
            p = self.problems[0]
            self.status(p.text, error=True)
        elif self.kernels == "ready":
            self.plan.executor = executor.load()
            if self.player is None:
                self.player = Player(self.plan)
            else:
                self.player.replan(self.plan)
            self.view.build_inputs()
            self.view.refresh_channels()
        self.seen = self.doc.revision
        self._update_state()

    def _update_state(self):
        if self.kernels == "compiling":
            text = COMPILE_NOTE
        elif self.kernels == "loading":
            text = "loading the compiled kernels..."
        elif self.kernels not in ("ready", "checking", "loading"):
            text = self.kernels
        elif self.problems:
            text = "preview paused: the graph has a problem (see the red node)"
        elif self.player is None:
            text = "waiting for a valid graph"
        else:
            text = f"playing {self.doc.path.name if self.doc.path else 'untitled'}"
        dpg.set_value("preview_state", text)

    def tick(self):
        """One drawn frame's work."""
        now = time.monotonic()
        seconds, self.last_tick = now - self.last_tick, now
        self.poll_kernels()
        if self.inner is not None:
            self.inner.poll()
        else:
            self.graph_view.poll_moves()
        if self.seen != self.doc.revision or (self.kernels == "ready" and self.player is None and self.seen != -1):
            self.revalidate()
        self.view.advance(min(seconds, 0.25))
        self.view.draw()
        self.view.update_plot()
        dimmed, weights = self.live_marks()
        self.graph_view.show_problems(self.problems, self._popping(), dimmed)
        self.canvas.show_weights(weights)
        self.hover_link()
        if self.inner is not None:
            self.inner.show_live(self.player if self.kernels == "ready" and not self.problems else None)
        if now - self.last_autosave > AUTOSAVE_SECONDS:
            self.last_autosave = now
            try:
                files.write_autosave(self.doc)
            except (AnimgraphError, OSError) as e:
                self.status(f"autosave failed: {e}", error=True)

    # ------------------------------------------------------------ the error boundary

    def frame(self, draw=True):
        """One frame: the queued UI callbacks, then the frame's work, each inside the error boundary; then drawn
        (``draw=False``: not drawn, for tests that drive many edits)."""
        jobs, self.jobs = [*(dpg.get_callback_queue() or ()), *self.jobs], []
        self.protect(self.active_canvas.begin_frame)
        for job in jobs:
            self.protect(_call, *job)
        self.protect(self.tick)
        if draw:
            dpg.render_dearpygui_frame()

    def trigger(self, item, value=None):
        """What dearpygui does when the user changes ``item`` to ``value``: set it and queue its callback."""
        if value is not None and not isinstance(value, dict):  # a dict: a dialog's result, passed as it is
            dpg.set_value(item, value)
            value = dpg.get_value(item)  # as the widget holds it (its precision, its length)
        self.jobs.append((dpg.get_item_callback(item), item, value, dpg.get_item_user_data(item)))

    def protect(self, fn, *args):
        """Run ``fn(*args)``: the one place an exception of a callback or a frame stops; the editor goes on."""
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 (the boundary: anything a bug raises)
            self.failed(e)
            return None

    def failed(self, error):
        """After a bug: autosave first, then one line in the status bar and a dialog that can copy the traceback."""
        self.crash_details = traceback.format_exc()
        print(self.crash_details, file=sys.stderr, end="")
        try:
            saved = f"the graph is autosaved to {files.write_autosave(self.doc)}" if self.doc.dirty else \
                "no unsaved changes"
            self.last_autosave = time.monotonic()
        except Exception as e:  # noqa: BLE001
            saved = f"the autosave failed too: {e}"
        what = str(error).strip().splitlines()[0] if str(error).strip() else ""
        line = f"internal error: {type(error).__name__}{': ' if what else ''}{what} ({saved}; the editor goes on)"
        try:
            self.status(line, error=True)
            dpg.set_value("crash_text", line)
            dpg.show_item("crash_box")
        except Exception:  # noqa: BLE001 (no window left to show it in: stderr has it)
            pass

    def _popping(self):
        if self.player is not None and self.player.pops:
            return self.player.pops[-1].node
        return None

    def run(self):
        self.tick()  # the first frame is drawn before anything compiles (nothing is planned until then)
        dpg.render_dearpygui_frame()
        self.start_kernels()
        if self.first_error:
            self.show_error(self.first_error)
        else:
            self._offer_autosave()
        while dpg.is_dearpygui_running():
            self.frame()
        self.shutdown()

    def shutdown(self):
        if self.warm is not None and self.warm.poll() is None:
            self.warm.terminate()
        if self.doc.dirty and not self.discarded:
            files.write_autosave(self.doc)
        dpg.destroy_context()


def _call(callback, sender=None, app_data=None, user_data=None):
    """Call a dearpygui callback with as many of (sender, app_data, user_data) as it takes."""
    if callback is None:
        return
    try:
        n = len(inspect.signature(callback).parameters)
    except (TypeError, ValueError):  # a builtin without a signature: dearpygui's own functions take none
        n = 0
    callback(*(sender, app_data, user_data)[:n])
