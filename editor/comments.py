"""The canvas's comment frames: titled frames round chosen nodes, stored under ``editor.comments`` in the graph file
(one undo step each) and drawn round their nodes' drawn rectangles wherever the nodes go.  A mixin of
``canvas.Canvas``, whose ``doc``, ``act``, ``selection``, ``rects``, ``origin`` and ``size`` it uses."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

FRAME_COLOUR, FRAME_FILL = (230, 200, 90, 255), (230, 200, 90, 28)
FRAME_PAD, FRAME_TITLE = 12, 18  # pixels around framed nodes, and the title band above them


class CommentFrames:
    """C over the canvas: a titled frame round the selection; a double click on its title retitles or removes it
    (``Canvas``'s part)."""

    def build_title_box(self):
        """The box asking a new comment frame's title, and the front drawlist the frames are drawn on."""
        with dpg.window(tag=self.title_box, show=False, no_title_bar=True, popup=True, width=240):
            dpg.add_text("comment frame title")
            dpg.add_input_text(tag=self.title_box_text, width=-1, on_enter=True, callback=self.title_enter)
            dpg.add_button(label="remove frame", tag=f"{self.title_box}_remove", small=True, show=False,
                           callback=lambda: self.remove_retitled())
        dpg.add_viewport_drawlist(front=True, tag=self.overlay)

    def _ask_title(self, text, retitle=None):
        """Open the title box at the mouse with ``text``; for an existing frame (``retitle``) it also offers removal."""
        self._retitling = retitle
        dpg.set_value(self.title_box_text, text)
        dpg.configure_item(f"{self.title_box}_remove", show=retitle is not None)
        x, y = dpg.get_mouse_pos(local=False)
        dpg.configure_item(self.title_box, pos=[int(x), int(y)], show=True)
        dpg.focus_item(self.title_box_text)

    def frame_at(self, at):
        """The document index of the comment frame whose title band holds screen point ``at``, or None."""
        for k, (_, (x0, y0, x1, _)) in zip(self.frame_index, self.frames):
            if x0 <= at[0] < x1 and y0 <= at[1] < y0 + FRAME_PAD + FRAME_TITLE:
                return k
        return None

    def on_double_click(self, at=None):
        """A double click on a frame's title (Unreal's comment habit): a box to retitle or remove it."""
        at = at if at is not None else dpg.get_mouse_pos(local=False)
        k = self.frame_at(at)
        if k is not None:
            self._ask_title(self.doc.comments()[k]["title"], retitle=k)
        return k

    def remove_retitled(self):
        """The title box's "remove frame": the frame goes (its nodes stay); one undo step."""
        dpg.hide_item(self.title_box)
        k, self._retitling = self._retitling, None
        return self.act("remove_comment", k)[0] if k is not None else False

    def comment_selected(self, title=None):
        """A titled comment frame around the selected nodes (stored under ``editor`` in the file; one undo step);
        without ``title``, a box asks for it first."""
        ids = self.selection()
        if not ids:
            self.owner.status("select the nodes to frame first", error=True)
            return None
        if title is None:
            self._framing = ids
            self._ask_title("comment")
            return None
        ok, k = self.act("add_comment", title, ids)
        if ok:
            self.owner.status(f"framed {len(ids)} nodes as {title!r}")
        return k if ok else None

    def title_enter(self):
        """Enter (or OK) in the comment title box: frame the nodes it was opened for with the typed title."""
        dpg.hide_item(self.title_box)
        if self._retitling is not None:
            k, self._retitling = self._retitling, None
            title = dpg.get_value(self.title_box_text).strip() or "comment"
            return k if self.act("set_comment_title", k, title)[0] else None
        ids, self._framing = self._framing, None
        if ids:
            self.chosen = set(ids)
            return self.comment_selected(dpg.get_value(self.title_box_text).strip() or "comment")
        return None

    def draw_frames(self):
        """Each comment frame around its nodes' drawn rectangles, its title above them (a front drawlist: the node
        editor draws nothing of ours behind its nodes)."""
        dpg.delete_item(self.overlay, children_only=True)
        self.frames, self.frame_index = [], []
        if not dpg.is_item_shown(self.tag):
            return
        rects = self.rects(screen=True)
        (ox, oy), (w, h) = self.origin(), self.size()
        for k, frame in enumerate(self.doc.comments()):
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
            self.frame_index.append(k)
