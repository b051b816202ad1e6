"""Delaunay triangulation of a blend space's points (plan time) and the per-frame walk to the parameter's weights.

Plan time, plain Python (a blend space has tens of points): ``delaunay(points)`` sweeps the points
in x order, fanning each new point to the hull edges it sees (a triangulation of the convex hull),
then flips every edge whose opposite corner lies strictly inside the other triangle's circumcircle
(Lawson) until none does: a Delaunay triangulation.  Four cocircular points (a grid's squares, the
usual blend-space layout) keep whichever diagonal they got, where Bowyer-Watson's cavities can
disagree with themselves in rounding.  ``mesh(triangles)`` adds each triangle's neighbours
and the hull's edges in counter-clockwise order.

Per frame (numba, on the tables as int64 arrays or as float64 slices of a node's parameters):
``locate`` starts from last frame's triangle (the hint) and walks to the neighbour across the
edge of the most negative barycentric coordinate (a visibility walk, which ends on a Delaunay
triangulation); crossing a hull edge means the point is outside the hull, and the walk then
follows the hull edges from there while the nearest point gets nearer (the hull edges seen from
the point form one chain along which that distance has one minimum).  ``space_weights`` gives
the live weights (those of at least ``spaces.LIVE_MIN``): barycentric inside a triangle, the
projection onto the nearest hull edge outside (clamped to the edge), and their rates from the
point's velocity (both are linear in the point, apart from the clamp).  They sum to 1, are
continuous (on an edge both sides give the edge's weights), and depend on the hint only in
which triangle is found.
"""

from __future__ import annotations

import numpy as np

from animgraph.jit import njit

from .spaces import LIVE_MIN

EPS = 1e-12  # barycentric coordinates above -EPS count as inside (relative to the triangle)
TRI, NBR = 3, 3  # a triangle's corners, its neighbours (across the edge opposite each corner)
HULL = 5  # a hull edge: its two corners (counter-clockwise), the next and previous hull edge, its triangle


def orient(p, a, b, c):
    """Twice the signed area of triangle (a, b, c) of ``p`` (N, 2): > 0 counter-clockwise."""
    return (p[b, 0] - p[a, 0]) * (p[c, 1] - p[a, 1]) - (p[b, 1] - p[a, 1]) * (p[c, 0] - p[a, 0])


def refuse_degenerate(points, names):
    """A ValueError naming the entries when points (N, 2) coincide or all lie on one line; nothing otherwise."""
    p = np.asarray(points, np.float64)
    size = max(float(np.ptp(p[:, 0])), float(np.ptp(p[:, 1])), 1e-300)
    for i in range(len(p)):
        for j in range(i):
            if np.hypot(*(p[i] - p[j])) <= 1e-9 * size:
                raise ValueError(f"entries {names[j]!r} and {names[i]!r} are at the same point "
                                 f"[{p[i, 0]:g}, {p[i, 1]:g}]")
    a = 0
    b = int(np.argmax(np.hypot(*(p - p[a]).T)))
    if not any(abs(orient(p, a, b, c)) > 1e-9 * size * size for c in range(len(p))):
        raise ValueError(f"entries {', '.join(repr(n) for n in names)} all lie on one line: use blend_space_1d")


def delaunay(points):
    """Counter-clockwise triangles (M, 3) int64 of a Delaunay triangulation of ``points`` (N, 2), N >= 3, not all on
    one line and no two alike (``refuse_degenerate``)."""
    p = np.asarray(points, np.float64)
    order = sorted(range(len(p)), key=lambda i: (p[i, 0], p[i, 1]))
    size = max(float(np.ptp(p[:, 0])), float(np.ptp(p[:, 1])))
    tol = 1e-12 * size * size
    # The first point off the line of the first two starts the hull, fanned to the points before it.
    k = next(k for k in range(2, len(order)) if abs(orient(p, order[0], order[1], order[k])) > tol)
    line, apex = order[:k], order[k]
    tris = []
    for a, b in zip(line, line[1:]):
        tris.append((a, b, apex) if orient(p, a, b, apex) > 0 else (b, a, apex))
    hull = line + [apex] if orient(p, line[0], line[-1], apex) > 0 else [line[0], apex] + line[:0:-1]
    for q in order[k + 1:]:
        n = len(hull)
        seen = [orient(p, hull[i], hull[(i + 1) % n], q) < -tol for i in range(n)]
        if not any(seen):
            raise ValueError("the triangulation found a point inside the hull of the points before it (points too "
                             "close to each other for float64)")
        for i in range(n):
            if seen[i]:
                tris.append((hull[(i + 1) % n], hull[i], q))
        # The seen edges are one run around the hull: its inner corners leave, q takes their place.
        first = next(i for i in range(n) if seen[i] and not seen[i - 1])
        last = next(i for i in range(n) if seen[i] and not seen[(i + 1) % n])
        keep, i = [], (last + 1) % n
        while True:
            keep.append(hull[i])
            if i == first:
                break
            i = (i + 1) % n
        hull = keep + [q]
    return flip_to_delaunay(p, np.asarray(tris, np.int64), size)


def in_circle(p, a, b, c, d):
    """> 0 when ``d`` lies inside the circumcircle of counter-clockwise (a, b, c)."""
    rows = [(p[i, 0] - p[d, 0], p[i, 1] - p[d, 1]) for i in (a, b, c)]
    m = np.array([[x, y, x * x + y * y] for x, y in rows])
    return float(np.linalg.det(m))


def flip_to_delaunay(p, tris, size):
    """Lawson's flips of ``tris`` until no edge's far corner lies strictly inside the other side's circumcircle (by
    more than rounding, relative to the points' extent ``size``)."""
    tris = [tuple(int(v) for v in t) for t in tris]
    for _ in range(10 * len(tris) ** 2 + 10):
        edges = {}
        for t, (a, b, c) in enumerate(tris):
            for u, v, w in ((a, b, c), (b, c, a), (c, a, b)):
                edges[(u, v)] = (t, w)
        for (u, v), (t, w) in edges.items():
            if (v, u) not in edges:
                continue
            s, x = edges[(v, u)]
            if in_circle(p, u, v, w, x) > 1e-10 * size ** 4:
                tris[t], tris[s] = (w, u, x), (x, v, w)
                break
        else:
            return np.asarray(tris, np.int64)
    raise ValueError("the triangulation did not settle (points too close to each other for float64)")


def hull_area(p):
    """Twice the area of the convex hull of points (N, 2) (Andrew's monotone chain)."""
    pts = sorted(map(tuple, p))

    def chain(seq):
        out = []
        for q in seq:
            while len(out) >= 2 and ((out[-1][0] - out[-2][0]) * (q[1] - out[-2][1])
                                     - (out[-1][1] - out[-2][1]) * (q[0] - out[-2][0])) <= 0:
                out.pop()
            out.append(q)
        return out[:-1]

    ring = chain(pts) + chain(pts[::-1])
    return sum(ring[i][0] * ring[(i + 1) % len(ring)][1] - ring[(i + 1) % len(ring)][0] * ring[i][1]
               for i in range(len(ring)))


def mesh(triangles):
    """(neighbours (M, 3), hull (H, HULL)) of counter-clockwise ``triangles``: the triangle across the edge opposite
    each corner (``-1 - h`` for hull edge h), and each hull edge's corners, next and previous edge, triangle."""
    owner = {}
    for t, (a, b, c) in enumerate(triangles):
        for u, v in ((b, c), (c, a), (a, b)):  # the edge opposite corners 0, 1, 2
            owner[(int(u), int(v))] = t
    border = [(u, v) for (u, v) in owner if (v, u) not in owner]
    # Hull edges in counter-clockwise order: each starts where the last ended.
    start = {u: (u, v) for u, v in border}
    ring = [border[0]]
    while len(ring) < len(border):
        ring.append(start[ring[-1][1]])
    index = {e: h for h, e in enumerate(ring)}
    nbrs = np.empty((len(triangles), NBR), np.int64)
    for t, (a, b, c) in enumerate(triangles):
        for k, (u, v) in enumerate(((b, c), (c, a), (a, b))):
            e = (int(u), int(v))
            nbrs[t, k] = owner[(e[1], e[0])] if (e[1], e[0]) in owner else -1 - index[e]
    n = len(ring)
    hull = np.asarray([(u, v, (h + 1) % n, (h - 1) % n, owner[(u, v)]) for h, (u, v) in enumerate(ring)], np.int64)
    return nbrs, hull


# ---------------------------------------------------------------- per frame (numba)


@njit(cache=True)
def barycentric(pts, tris, t, x, y):
    """Barycentric coordinates of (x, y) in triangle ``t`` (corner order) and their gradients (3, 2)."""
    a, b, c = int(tris[t, 0]), int(tris[t, 1]), int(tris[t, 2])
    ax, ay, bx, by, cx, cy = pts[a, 0], pts[a, 1], pts[b, 0], pts[b, 1], pts[c, 0], pts[c, 1]
    area = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    lam = np.empty(3)
    grad = np.empty((3, 2))
    lam[0] = ((bx - x) * (cy - y) - (by - y) * (cx - x)) / area
    lam[1] = ((cx - x) * (ay - y) - (cy - y) * (ax - x)) / area
    lam[2] = ((ax - x) * (by - y) - (ay - y) * (bx - x)) / area
    grad[0, 0], grad[0, 1] = (by - cy) / area, (cx - bx) / area
    grad[1, 0], grad[1, 1] = (cy - ay) / area, (ax - cx) / area
    grad[2, 0], grad[2, 1] = (ay - by) / area, (bx - ax) / area
    return lam, grad


@njit(cache=True)
def edge_param(pts, u, v, x, y):
    """Where the projection of (x, y) onto segment u-v lies, clamped to [0, 1]; its gradient (0 when clamped); the
    squared distance to that point."""
    ex, ey = pts[v, 0] - pts[u, 0], pts[v, 1] - pts[u, 1]
    length2 = ex * ex + ey * ey
    s = ((x - pts[u, 0]) * ex + (y - pts[u, 1]) * ey) / length2
    gx, gy = ex / length2, ey / length2
    if s <= 0.0:
        s, gx, gy = 0.0, 0.0, 0.0
    elif s >= 1.0:
        s, gx, gy = 1.0, 0.0, 0.0
    dx, dy = pts[u, 0] + s * ex - x, pts[u, 1] + s * ey - y
    return s, gx, gy, dx * dx + dy * dy


@njit(cache=True)
def locate(pts, tris, nbrs, hull, hint, x, y):
    """The triangle holding (x, y) (>= 0), or ``-1 - h`` for the nearest hull edge h when outside the hull; walked from
    ``hint`` (last frame's answer, in the same form)."""
    t = hint if hint >= 0 else (int(hull[-1 - hint, 4]) if -1 - hint < hull.shape[0] else 0)
    if t >= tris.shape[0]:  # not this space's hint (a state saved from another plan)
        t = 0
    for _ in range(tris.shape[0] + 1):
        lam = barycentric(pts, tris, t, x, y)[0]
        k = 0
        for c in range(1, 3):
            if lam[c] < lam[k]:
                k = c
        if lam[k] >= -EPS:
            return t
        across = int(nbrs[t, k])
        if across < 0:
            return nearest_hull_edge(pts, hull, -1 - across, x, y)
        t = across
    return t  # not reached on a Delaunay triangulation (the walk visits a triangle at most once)


@njit(cache=True)
def nearest_hull_edge(pts, hull, h, x, y):
    """``-1 - h'`` for the hull edge nearest (x, y), walked from hull edge ``h`` along the hull while it gets nearer."""
    d = edge_param(pts, int(hull[h, 0]), int(hull[h, 1]), x, y)[3]
    for _ in range(hull.shape[0]):
        moved = False
        for side in (2, 3):  # next, previous
            g = int(hull[h, side])
            e = edge_param(pts, int(hull[g, 0]), int(hull[g, 1]), x, y)[3]
            if e < d:
                h, d, moved = g, e, True
                break
        if not moved:
            break
    return -1 - h


@njit(cache=True)
def space_weights(pts, tris, nbrs, hull, hint, x, y, dx, dy, idx, w, dw):
    """The live entries at (x, y) moving at (dx, dy): their indices in ascending order into ``idx`` (3,), weights into
    ``w`` and rates (1/s) into ``dw``; returns (count, the new hint).  Weights sum to 1 and are > 0."""
    where = locate(pts, tris, nbrs, hull, hint, x, y)
    n = 0
    if where >= 0:
        lam, grad = barycentric(pts, tris, where, x, y)
        total = 0.0
        for c in range(3):
            if lam[c] >= LIVE_MIN:
                total += lam[c]
        for c in range(3):
            if lam[c] >= LIVE_MIN:
                idx[n], w[n], dw[n] = tris[where, c], lam[c] / total, grad[c, 0] * dx + grad[c, 1] * dy
                n += 1
    else:
        h = -1 - where
        u, v = int(hull[h, 0]), int(hull[h, 1])
        s, gx, gy, _ = edge_param(pts, u, v, x, y)
        rate = gx * dx + gy * dy
        if s > 1.0 - LIVE_MIN:
            s, rate = 1.0, 0.0
        elif s < LIVE_MIN:
            s, rate = 0.0, 0.0
        if s < 1.0:
            idx[n], w[n], dw[n] = u, 1.0 - s, -rate
            n += 1
        if s > 0.0:
            idx[n], w[n], dw[n] = v, s, rate
            n += 1
    sort_live(idx, w, dw, n)
    # What the blend uses: one entry does not move; two move against each other (a corner or an edge reached from
    # inside the triangle drops the others' rates with their weights).
    if n == 1:
        dw[0] = 0.0
    elif n == 2:
        dw[0] = -dw[1]
    return n, where


@njit(cache=True)
def sort_live(idx, w, dw, n):
    """Order the first ``n`` live entries by index (an insertion sort of at most three)."""
    for i in range(1, n):
        j = i
        while j > 0 and idx[j - 1] > idx[j]:
            idx[j - 1], idx[j] = idx[j], idx[j - 1]
            w[j - 1], w[j] = w[j], w[j - 1]
            dw[j - 1], dw[j] = dw[j], dw[j - 1]
            j -= 1
