"""A blend space node as the editor plots it (no dearpygui here): its entries' points, its triangulation, the frame
that maps the space to pixels, and an entry moved as one edit of the node's ``entries``.

1-D spaces are drawn along a horizontal line (the entry's ``at`` is x); 2-D spaces with x to the
right and the parameter's z up, as seen from above (Y up in the runtime).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animgraph.triangulate import delaunay, refuse_degenerate

from .document import EditError

PAD = 0.15  # of the points' span, added round them
MIN_SPAN = 1.0  # space units: the least span drawn (one entry's neighbourhood)


def is_space(node):
    return node.type in ("blend_space_1d", "blend_space_2d")


def points(node):
    """(N, 2) float64 points of the entries (1-D: y = 0)."""
    return np.asarray([(e.at, 0.0) if node.type == "blend_space_1d" else tuple(e.at) for e in node.entries],
                      np.float64)


def triangles(node, pts=None):
    """(M, 3) entry indices of the triangulation (2-D), or (N-1, 2) segments between sorted entries (1-D), of the
    node's points or ``pts`` (an entry being dragged); none where those are degenerate."""
    pts = points(node) if pts is None else np.asarray(pts, np.float64)
    if node.type == "blend_space_2d":
        try:
            refuse_degenerate(pts, [e.name for e in node.entries])
            return np.asarray(delaunay(pts), np.int64)
        except ValueError:
            return np.zeros((0, 3), np.int64)
    order = np.argsort(pts[:, 0], kind="stable")
    return np.stack([order[:-1], order[1:]], axis=1)


def moved_entries(node, name, at):
    """The node's ``entries`` as the file holds them with entry ``name`` at ``at`` (a number, or [x, y])."""
    entries = [e.model_dump() for e in node.entries]
    k = next((i for i, e in enumerate(entries) if e["name"] == name), None)
    if k is None:
        raise EditError(f"node {node.id!r} has no entry {name!r}")
    if node.type == "blend_space_1d":
        entries[k]["at"] = float(at[0] if isinstance(at, (list, tuple, np.ndarray)) else at)
    else:
        entries[k]["at"] = [float(at[0]), float(at[1])]
    return entries


def move_entry(doc, node_id, name, at):
    """Move entry ``name`` of blend space ``node_id`` to ``at``: one undo step (EditError, one line, if the space
    would be degenerate: two entries at one point, all on one line)."""
    doc.set_field(node_id, "entries", moved_entries(doc.graph.node(node_id), name, at))


@dataclass(frozen=True)
class Frame:
    """Space <-> pixel mapping of a plot ``size`` (w, h) pixels at screen ``origin`` over space ``bounds``."""

    origin: tuple
    size: tuple
    bounds: tuple  # (x0, y0, x1, y1) in space units, y up
    margin: float = 40.0  # pixels

    @classmethod
    def around(cls, pts, origin, size, extra=(), line=False):
        """A frame round ``pts`` (and ``extra`` points), padded, with equal scales on both axes; ``line`` (a 1-D
        space): x spans the width, y = 0 across the middle."""
        p = np.asarray(list(pts) + list(extra), np.float64).reshape(-1, 2)
        lo, hi = p.min(axis=0), p.max(axis=0)
        mid = (lo + hi) / 2
        w, h = (max(v - 2 * cls.margin, 1.0) for v in size)
        if line:
            half = max(float(hi[0] - lo[0]), MIN_SPAN) * (1 + 2 * PAD) / 2
            return cls(tuple(origin), tuple(size), (mid[0] - half, -1.0, mid[0] + half, 1.0))
        span = max(float((hi - lo).max()), MIN_SPAN) * (1 + 2 * PAD)
        unit = min(w / span, h / span)
        half = np.array([w / unit, h / unit]) / 2
        return cls(tuple(origin), tuple(size), (mid[0] - half[0], mid[1] - half[1], mid[0] + half[0], mid[1] + half[1]))

    def to_screen(self, point):
        x0, y0, x1, y1 = self.bounds
        w, h = self.size[0] - 2 * self.margin, self.size[1] - 2 * self.margin
        sx = self.origin[0] + self.margin + (point[0] - x0) / (x1 - x0) * w
        sy = self.origin[1] + self.margin + (y1 - point[1]) / (y1 - y0) * h
        return float(sx), float(sy)

    def to_space(self, screen):
        x0, y0, x1, y1 = self.bounds
        w, h = self.size[0] - 2 * self.margin, self.size[1] - 2 * self.margin
        return (float(x0 + (screen[0] - self.origin[0] - self.margin) / w * (x1 - x0)),
                float(y1 - (screen[1] - self.origin[1] - self.margin) / h * (y1 - y0)))
