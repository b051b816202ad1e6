"""A blend space opened in the editor: its entries plotted in 1-D or 2-D, the triangulation, the live point and
weights; drag an entry to move it (one undo step of the graph's document).

Double-clicking a ``blend_space_1d`` or ``blend_space_2d`` node opens it here (the
breadcrumb leads back).  The plot is a drawlist redrawn every frame: the triangulation's
edges (1-D: the segments between neighbouring entries), each entry as a dot sized by its
weight with its name and weight, and the parameter's point where the preview is.  A left
drag that starts on an entry moves it; on release the move is one ``set_field`` of the
node's ``entries`` (refused, with the reason in the status bar, if two entries would meet
or a 2-D space would lie on one line).  The frame that maps the space to pixels is kept
during a drag, so the space does not slide under the mouse.
"""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from animgraph import inspect as look
from animgraph.errors import AnimgraphError

from . import fields, space
from .document import EditError

PLOT = "space_plot"
BACK, EDGE, AXIS = (24, 26, 30), (110, 120, 140), (60, 64, 72)
ENTRY, ENTRY_LIVE, POINT = (200, 200, 210), (120, 240, 140), (255, 90, 70)
GRAB = 14  # pixels: how near an entry a press must be to grab it
SNAP = 0.01  # space units a dragged entry's coordinates are rounded to (short numbers in the file)


class SpaceView:
    """The open blend space: its plot and details; ``editor.inner`` while open."""

    kind = "blend space"

    def __init__(self, editor):
        self.editor = editor
        self.node_id = None
        self.frame = None  # space.Frame the plot was last drawn with
        self.dragging = None  # (entry name, its drawn point in space units) during a drag
        self.live = None  # inspect.SpaceNow of the last frame played
        self.size = (800, 400)
        self.reserve = 0  # pixels below the plot for the preview row (set by build)
        self.canvas = _NoCanvas()
        self._held = False  # the left button was down last frame (a press starts only on the frame it goes down)

    def build(self, parent, width, height):
        """The pane under ``parent``; ``height`` < 0: the pixels left below it for the preview row (as a canvas's)."""
        self.reserve = max(-height, 0)
        with dpg.group(parent=parent, tag="space_pane", show=False):
            dpg.add_text("drag an entry to move it (Ctrl+Z undoes); the red cross is the parameter while playing",
                         color=(150, 150, 150))
            dpg.add_drawlist(*self.size, tag=PLOT)
            dpg.add_group(tag="space_no_menu", show=False)

    def open(self, node_id):
        self.node_id, self.frame, self.dragging, self.live = node_id, None, None, None
        self.fit()
        dpg.configure_item("space_pane", show=True)

    def fit(self):
        """The plot as large as the pane above the preview row (all of it while the canvas is maximized)."""
        right, plot = dpg.get_item_state("right"), dpg.get_item_state(PLOT)
        (w, h), top = right.get("rect_size", (0, 0)), right.get("rect_min", (0, 0))[1]
        above = plot["rect_min"][1] - top if plot.get("rect_size", (0, 0))[1] > 0 else 70  # not drawn yet: about
        below = self.reserve if dpg.is_item_shown("preview_row") else 8
        size = (max(int(w) - 16, 200), max(int(h - above - below), 150))
        if size != self.size:
            self.size = size
            dpg.configure_item(PLOT, width=size[0], height=size[1])
            self.frame = None

    def close(self):
        dpg.configure_item("space_pane", show=False)
        self.node_id = None

    def node(self):
        return next((n for n in self.editor.doc.graph.nodes if n.id == self.node_id), None)

    def valid(self):
        node = self.node()
        return node is not None and space.is_space(node)

    def sync(self):
        if self.dragging is None:
            self.frame = None  # the next draw frames the space as it now is

    # ------------------------------------------------------------ mouse

    def hovered(self):
        return dpg.is_item_shown("space_pane") and dpg.is_item_hovered(PLOT)

    def entry_at(self, screen):
        """The name of the entry drawn within GRAB pixels of ``screen``, or None."""
        node, best = self.node(), None
        if self.frame is None or node is None:
            return None
        for e, p in zip(node.entries, space.points(node)):
            sx, sy = self.frame.to_screen(p)
            d = ((sx - screen[0]) ** 2 + (sy - screen[1]) ** 2) ** 0.5
            if d <= GRAB and (best is None or d < best[1]):
                best = (e.name, d)
        return best and best[0]

    def press(self, screen):
        """A left press at ``screen``: grab the entry there (True if one was)."""
        name = self.entry_at(screen)
        if name is not None:
            self.dragging = (name, self.frame.to_space(screen))
        return name is not None

    def drag(self, screen):
        if self.dragging is not None:
            x, y = self.frame.to_space(screen)
            one = self.node().type == "blend_space_1d"
            self.dragging = (self.dragging[0], (_snap(x), 0.0 if one else _snap(y)))

    def release(self):
        """The drag ends: the entry moves there (one undo step), or the status bar says why not."""
        if self.dragging is None:
            return False
        name, (x, y) = self.dragging
        self.dragging = None
        at = [x] if self.node().type == "blend_space_1d" else [x, y]
        try:
            space.move_entry(self.editor.doc, self.node_id, name, at)
        except (EditError, AnimgraphError) as e:
            self.editor.status(f"entry {name!r} not moved: {e}", error=True)
            return False
        self.editor.changed()
        self.editor.status(f"moved entry {name!r} to {', '.join(f'{v:g}' for v in at)}")
        return True

    def poll(self):
        """Each frame: a left drag on the plot moves an entry (the press, the drag, the release)."""
        mouse = dpg.get_mouse_pos(local=False)
        down = dpg.is_mouse_button_down(dpg.mvMouseButton_Left)
        if down and self.dragging is None and self.hovered() and not self._held:
            self.press(mouse)
        elif down and self.dragging is not None:
            self.drag(mouse)
        elif not down and self.dragging is not None:
            self.release()
        self._held = down

    # ------------------------------------------------------------ drawing

    def show_live(self, player):
        node, self.live = self.node(), None
        if player is not None and node is not None and self.node_id in player.plan.nodes:
            try:
                self.live = look.blend_space(player.inst, self.node_id)
            except (AnimgraphError, IndexError, KeyError):
                self.live = None
        self.draw()

    def draw(self):
        if self.dragging is None:
            self.fit()  # the pane's size as laid out in the last frame (a maximize, a window resized)
        dpg.delete_item(PLOT, children_only=True)
        node = self.node()
        if node is None:
            return
        pts = space.points(node)
        if self.dragging is not None:
            k = [e.name for e in node.entries].index(self.dragging[0])
            pts[k] = self.dragging[1]
        origin = dpg.get_item_rect_min(PLOT)
        if self.frame is None or self.dragging is None:
            extra = [self.live.point + (0.0,) * (2 - len(self.live.point))] if self.live and self.live.point else []
            self.frame = space.Frame.around(space.points(node), origin, self.size, extra,
                                            line=node.type == "blend_space_1d")
        f = self.frame
        w, h = self.size

        def at(p):  # drawlist coordinates are the plot's own pixels
            sx, sy = f.to_screen(p)
            return sx - f.origin[0], sy - f.origin[1]

        dpg.draw_rectangle((0, 0), (w, h), fill=BACK, color=AXIS, parent=PLOT)
        x0, y0, x1, y1 = f.bounds
        dpg.draw_line(at((x0, 0.0)), at((x1, 0.0)), color=AXIS, parent=PLOT)
        if node.type == "blend_space_2d":
            dpg.draw_line(at((0.0, y0)), at((0.0, y1)), color=AXIS, parent=PLOT)
        for tri in space.triangles(node, pts):
            for a, b in zip(tri, list(tri[1:]) + [tri[0]]) if len(tri) == 3 else [tri]:
                dpg.draw_line(at(pts[a]), at(pts[b]), color=EDGE, thickness=2, parent=PLOT)
        weights = self.live.weights if self.live else {}
        for k, (e, p) in enumerate(zip(node.entries, pts)):
            wgt = weights.get(e.name, 0.0)
            colour = ENTRY_LIVE if wgt > 0.0 else ENTRY
            dpg.draw_circle(at(p), 5 + 12 * wgt, color=colour, fill=(*colour, 90 + int(160 * wgt)), parent=PLOT)
            shown = f"{e.name} {wgt:.2f}" if self.live else e.name
            coords = f"{p[0]:g}" if node.type == "blend_space_1d" else f"{p[0]:g}, {p[1]:g}"
            sx, sy = at(p)
            below = node.type == "blend_space_1d" and k % 2  # 1-D neighbours' labels alternate above and below
            dpg.draw_text((sx + 10, sy + 12 if below else sy - 24), f"{shown}  [{coords}]", color=colour, size=15,
                          parent=PLOT)
        if self.live is not None and self.live.point:
            q = self.live.point + (0.0,) * (2 - len(self.live.point))
            sx, sy = at(q)
            dpg.draw_line((sx - 9, sy - 9), (sx + 9, sy + 9), color=POINT, thickness=3, parent=PLOT)
            dpg.draw_line((sx - 9, sy + 9), (sx + 9, sy - 9), color=POINT, thickness=3, parent=PLOT)
        dpg.draw_text((8, h - 22), f"{x0:.3g} .. {x1:.3g}" + (f"   (up: {y0:.3g} .. {y1:.3g})"
                                                               if node.type == "blend_space_2d" else ""),
                      color=(150, 150, 150), size=13, parent=PLOT)

    def screen_of(self, name):
        """Screen point where entry ``name`` is drawn (for a test's pointer)."""
        node = self.node()
        k = [e.name for e in node.entries].index(name)
        return self.frame.to_screen(space.points(node)[k])

    # ------------------------------------------------------------ details

    def refresh_details(self, parent):
        node = self.node()
        dpg.add_text(f"{node.type} {node.id!r}", parent=parent)
        panel = fields.Panel(self.editor.graph_view, node.id)
        for spec in self.editor.doc.field_specs(node.id):
            panel.field(parent, spec, getattr(node, spec.name))


class _NoCanvas:
    """What the window asks of the canvas in sight, for the plot, which has none: its keys and menus do nothing."""

    menu = title_box = "space_no_menu"  # a hidden item: no add menu or title box is ever open here

    def hovered(self):
        return False

    def typing(self):
        return False

    def key(self, *args):
        return False

    def _nothing(self, *args, **kwargs):
        return None

    open_menu = delete_selected = copy = paste = duplicate = comment_selected = frame_all = frame_selected = \
        arrange = begin_frame = menu_enter = menu_move = on_right_click = on_double_click = _nothing


def _snap(v):
    return round(round(v / SNAP) * SNAP, 6)
