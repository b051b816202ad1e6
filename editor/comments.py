"""The canvas's comment frames: titled frames round chosen nodes, stored under ``editor.comments`` in the graph file
(one undo step each) and drawn round their nodes' drawn rectangles wherever the nodes go.  A mixin of
``canvas.Canvas``, whose ``doc``, ``act``, ``selection``, ``rects``, ``origin`` and ``size`` it uses."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

FRAME_COLOUR, FRAME_FILL = (230, 200, 90, 255), (230, 200, 90, 28)
FRAME_PAD, FRAME_TITLE = 12, 18  # pixels around framed nodes, and the title band above them


class CommentFrames:
    """C over the canvas: a titled frame round the selection (``Canvas``'s part)."""

    def build_title_box(self):
        """The box asking a new comment frame's title, and the front drawlist the frames are drawn on."""
        with dpg.window(tag=self.title_box, show=False, no_title_bar=True, popup=True, width=240):
            dpg.add_text("comment frame title")
            dpg.add_input_text(tag=self.title_box_text, width=-1, on_enter=True, callback=self.title_enter)
        dpg.add_viewport_drawlist(front=True, tag=self.overlay)

    def comment_selected(self, title=None):
        """A titled comment frame around the selected nodes (stored under ``editor`` in the file; one undo step);
        without ``title``, a box asks for it first."""
        ids = self.selection()
        if not ids:
            self.owner.status("select the nodes to frame first", error=True)
            return None
        if title is None:
            self._framing = ids
            dpg.set_value(self.title_box_text, "comment")
            x, y = dpg.get_mouse_pos(local=False)
            dpg.configure_item(self.title_box, pos=[int(x), int(y)], show=True)
            dpg.focus_item(self.title_box_text)
            return None
        ok, k = self.act("add_comment", title, ids)
        if ok:
            self.owner.status(f"framed {len(ids)} nodes as {title!r}")
        return k if ok else None

    def title_enter(self):
        """Enter (or OK) in the comment title box: frame the nodes it was opened for with the typed title."""
        dpg.hide_item(self.title_box)
        ids, self._framing = self._framing, None
        if ids:
            self.chosen = set(ids)
            return self.comment_selected(dpg.get_value(self.title_box_text).strip() or "comment")
        return None

    def draw_frames(self):
        """Each comment frame around its nodes' drawn rectangles, its title above them (a front drawlist: the node
        editor draws nothing of ours behind its nodes)."""
        dpg.delete_item(self.overlay, children_only=True)
        self.frames = []
        if not dpg.is_item_shown(self.tag):
            return
        rects = self.rects(screen=True)
        (ox, oy), (w, h) = self.origin(), self.size()
        for frame in self.doc.comments():
            boxes = [rects[n] for n in frame["nodes"] if n in rects and rects[n][2] > 0]
            if not boxes:
                continue
            x0 = min(b[0] for b in boxes) - FRAME_PAD
            y0 = min(b[1] for b in boxes) - FRAME_PAD - FRAME_TITLE
            x1 = max(b[0] + b[2] for b in boxes) + FRAME_PAD
            y1 = max(b[1] + b[3] for b in boxes) + FRAME_PAD
            x0, y0, x1, y1 = max(x0, ox), max(y0, oy), min(x1, ox + w), min(y1, oy + h)  # not over other panes
            if x1 <= x0 or y1 <= y0:
                continue
            dpg.draw_rectangle((x0, y0), (x1, y1), color=FRAME_COLOUR, fill=FRAME_FILL, thickness=2,
                               parent=self.overlay)
            dpg.draw_text((x0 + 6, y0 + 2), frame["title"], color=FRAME_COLOUR, size=15, parent=self.overlay)
            self.frames.append((frame["title"], (x0, y0, x1, y1)))
