"""The editor window's views inside a node: a state machine's canvas and a blend space's plot, opened by a
double click on the graph's canvas (the breadcrumb leads back), and what the graph's canvas shows of the playing
preview (skipped nodes, links by weight, a link's value under the mouse).  A mixin of ``app.Editor``, whose
``doc``, ``canvas``, ``graph_view``, ``machine_view``, ``space_view``, ``player`` and ``problems`` it uses."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from animgraph.errors import AnimgraphError

from .livemarks import frame_marks


class InnerViews:
    """Open, close and sync the view inside a node; the live marks and the link tip (``Editor``'s part)."""

    def open_inner(self, node_id):
        """Open a state machine node in its own canvas, a blend space in its plot (the breadcrumb leads back); False
        if it is neither."""
        node = next((n for n in self.doc.graph.nodes if n.id == node_id), None)
        views = {"state_machine": self.machine_view, "blend_space_1d": self.space_view,
                 "blend_space_2d": self.space_view}
        view = views.get(node.type) if node is not None else None
        if view is None:
            return False
        self.close_inner()
        view.open(node_id)  # (a blend space's plot takes the graph canvas's size: opened while it shows)
        self.inner = view
        dpg.configure_item("graph_pane", show=False)
        dpg.set_value("crumb_here", f"> {node_id} ({view.kind})")
        dpg.configure_item("breadcrumb", show=True)
        self._sync_inner()  # drawn from the document now (no re-plan: the preview and its recording go on)
        self.status(f"opened {view.kind} {node_id!r}: the breadcrumb 'graph' leads back")
        return True

    def close_inner(self):
        """Back to the graph's canvas."""
        if self.inner is None:
            return
        self.inner.close()
        self.inner = None
        dpg.configure_item("graph_pane", show=True)
        dpg.configure_item("breadcrumb", show=False)
        self.graph_view.refresh_inspector()

    def double_click(self, at=None):
        """A double click on the graph's canvas: a comment frame's title retitles it; a state machine or blend space
        node opens."""
        canvas = self.active_canvas
        if self.inner is not None:
            return None
        if canvas.on_double_click(at) is not None:
            return None
        at = at if at is not None else dpg.get_mouse_pos(local=False)
        for nid, (x, y, w, h) in canvas.rects(screen=True).items():
            if x <= at[0] < x + w and y <= at[1] < y + h and self.open_inner(nid):
                return nid
        return None

    def _sync_inner(self):
        """The open machine's canvas in line with the document; back to the graph if an edit removed the machine."""
        if self.inner is None:
            return
        if not self.inner.valid():
            self.close_inner()
            return
        self.inner.sync()
        self.graph_view.refresh_inspector()

    def live_marks(self):
        """(node ids skipped in the frame shown, {'node.port': weight} of the inputs each choosing node shows) of the
        preview's instance; nothing while the graph has problems or nothing plays."""
        if self.player is None or self.problems or self.kernels != "ready":
            return set(), {}
        return frame_marks(self.player)

    def hover_link(self, at=None):
        """The mouse over a link of the graph's canvas while the preview plays: a tip with the value it carries in
        the frame shown (``inspect.link_value``); over a machine's transition: what it does.  Returns the tip's
        text, or None."""
        from animgraph import inspect as look

        text = None
        at = at if at is not None else dpg.get_mouse_pos(local=False)
        idle = not dpg.is_mouse_button_down(dpg.mvMouseButton_Left)
        if self.inner is not None and idle and self.active_canvas.hovered() and hasattr(self.inner, "link_text"):
            text = self.inner.link_text(at)  # a machine's transitions: what each one does
        elif self.inner is None and self.player is not None and not self.problems and self.canvas.hovered() and idle:
            link = self.canvas.link_at(at)
            if link is not None:
                try:
                    text = f"{link[0]} -> {link[1]}\n{look.link_value(self.player.inst, link[0])}"
                except (AnimgraphError, KeyError, IndexError):
                    text = None
        if text is None:
            if dpg.is_item_shown("link_tip"):
                dpg.hide_item("link_tip")
            return None
        dpg.set_value("link_tip_text", text)
        dpg.configure_item("link_tip", pos=[int(at[0]) + 16, int(at[1]) + 16], show=True)
        return text
