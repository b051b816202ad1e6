"""The canvas's live marks while the preview plays: nodes skipped this frame dimmed, the links into the inputs a
node chooses among drawn by weight, and the link under the mouse found (for its value's tip).  A mixin of
``canvas.Canvas``, whose ``doc``, ``nodes``, ``links``, ``by_port``, ``rects`` and themes it uses; ``frame_marks``
reads what to mark from a player's instance (``animgraph.inspect``)."""

from __future__ import annotations

import dearpygui.dearpygui as dpg
import numpy as np

from animgraph import inspect as look

DIM_TITLE, DIM_BODY, DIM_TEXT = (40, 40, 44), (34, 34, 38), (120, 120, 120)  # a node skipped this frame
WEIGHT_LEVELS = 4  # a link into a chosen input is drawn in one of these shades of its weight (and grey at 0)
LIVE_LINK = (120, 240, 140)
CHOOSERS = ("state_machine", "blend_space_1d", "blend_space_2d", "select", "blend")  # links drawn by weight


def frame_marks(player):
    """(node ids skipped in the player's frame, or left out of its plan as they feed no output; {'node.port':
    weight} of the inputs each choosing node shows)."""
    inst, plan = player.inst, player.plan
    dimmed = {nid for nid in plan.order if not look.ran(inst, nid)} | set(plan.pruned)
    weights = {}
    for nid in plan.order:
        if plan.nodes[nid].type in CHOOSERS:
            weights |= {f"{nid}.{port}": w for port, w in look.input_weights(inst, nid).items()}
    return dimmed, weights


class LiveMarks:
    """Dimmed nodes, links by weight, the link under the mouse (``Canvas``'s part)."""

    def pin_point(self, node_id, port, kind, rects=None):
        """Screen point of a pin's circle: the node's edge at the pin's text line (None while it is not drawn)."""
        attr = self.by_port.get((node_id, port, kind))
        rect = (rects or self.rects(screen=True)).get(node_id)
        if attr is None or rect is None or rect[2] <= 0:
            return None
        line = dpg.get_item_children(attr, 1)[0]
        y, h = dpg.get_item_rect_min(line)[1], dpg.get_item_rect_size(line)[1]
        return (rect[0] + rect[2] if kind == "out" else rect[0]), y + h / 2

    def link_at(self, at, near=6.0):
        """(src, dst) of the link drawn within ``near`` pixels of screen point ``at``, or None: imnodes draws a link
        as the cubic bezier from its output pin to its input pin with control points a quarter of its length
        out horizontally."""
        rects, best = self.rects(screen=True), None
        t = np.linspace(0.0, 1.0, 25)[:, None]
        for src, dst in self.links.values():
            a = self.pin_point(*src.split("."), "out", rects)
            b = self.pin_point(*dst.split("."), "in", rects)
            if a is None or b is None:
                continue
            p0, p3 = np.array(a), np.array(b)
            reach = 0.25 * np.linalg.norm(p3 - p0)
            p1, p2 = p0 + (reach, 0.0), p3 - (reach, 0.0)
            curve = (1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t ** 2 * p2 + t ** 3 * p3
            d = _distance_to_polyline(np.array(at, np.float64), curve)
            if d <= near and (best is None or d < best[0]):
                best = (d, (src, dst))
        return best and best[1]

    def _dim_theme(self):
        if "dim" not in self._themes:
            with dpg.theme() as theme, dpg.theme_component(dpg.mvAll):
                for c in (dpg.mvNodeCol_TitleBar, dpg.mvNodeCol_TitleBarHovered, dpg.mvNodeCol_TitleBarSelected):
                    dpg.add_theme_color(c, DIM_TITLE, category=dpg.mvThemeCat_Nodes)
                for c in (dpg.mvNodeCol_NodeBackground, dpg.mvNodeCol_NodeBackgroundHovered):
                    dpg.add_theme_color(c, DIM_BODY, category=dpg.mvThemeCat_Nodes)
                dpg.add_theme_color(dpg.mvThemeCol_Text, DIM_TEXT)
            self._themes["dim"] = theme
        return self._themes["dim"]

    def show_weights(self, weights):
        """Links into the inputs a node chooses among, drawn by the weight it shows each with (``{'node.port': w}``):
        bright at 1, fading to grey at 0; other links keep their signal's colour."""
        levels = self._levels
        for link, (src, dst) in self.links.items():
            w = weights.get(dst)
            level = None if w is None else round(min(max(w, 0.0), 1.0) * WEIGHT_LEVELS)
            if levels.get(link, None) == level:
                continue
            levels[link] = level
            if level is None:
                port = next((p for p in self.doc.ports(src.partition(".")[0])[1] if p.name == src.partition(".")[2]),
                            None)
                if port is not None:
                    dpg.bind_item_theme(link, self._pin_theme(port, link=True))
                continue
            key = ("weight", level)
            if key not in self._themes:
                t = level / WEIGHT_LEVELS
                colour = tuple(int(90 + (c - 90) * t) for c in LIVE_LINK)
                with dpg.theme() as theme, dpg.theme_component(dpg.mvAll):
                    dpg.add_theme_color(dpg.mvNodeCol_Link, colour, category=dpg.mvThemeCat_Nodes)
                    dpg.add_theme_style(dpg.mvNodeStyleVar_LinkThickness, 1.5 + 3.0 * t, category=dpg.mvThemeCat_Nodes)
                self._themes[key] = theme
            dpg.bind_item_theme(link, self._themes[key])
        self._levels = {k: v for k, v in levels.items() if k in self.links}
        return {self.links[k][1]: v for k, v in self._levels.items() if v is not None}


def _distance_to_polyline(p, pts):
    """Least distance from point ``p`` to the segments joining ``pts`` (N, 2) in turn."""
    a, b = pts[:-1], pts[1:]
    ab = b - a
    s = np.clip(np.einsum("ij,ij->i", p - a, ab) / np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-12), 0.0, 1.0)
    return float(np.min(np.linalg.norm(a + s[:, None] * ab - p, axis=1)))
