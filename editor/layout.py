"""Where nodes go on a canvas (no dearpygui here): node sizes, Arrange, free space, overlap.

Arrange lays a graph out left to right: columns are networkx's topological generations
(a node with no inputs moves right to just before its first consumer, so a constant
feeding the output does not sit at the far left with a long link), rows are ordered by
barycentre sweeps (each node near the mean row of its neighbours, which shortens links
and uncrosses them), and each column's nodes are placed as near the mean height of their
neighbours as the column's order and gaps allow (least squares: an isotonic regression).
Columns are as wide as their widest node and nodes are stacked by their heights, so with
the sizes the window measured no two nodes come closer than the gaps.

Sizes are pixels of dearpygui's default font; ``estimate_size`` reads a node's title and
pin lines (the texts the canvas draws) for a layout without a window.
"""

from __future__ import annotations

import math

import networkx as nx

MIN_GAP = 8  # pixels: the least distance between two node rectangles the canvas accepts
COLUMN_GAP = 60  # pixels between columns of an arranged graph
ROW_GAP = 24  # pixels between nodes of a column
CHAR = 7  # pixels per character of the default font (ProggyClean 13)
TITLE_PAD, PIN_ROW, NODE_PAD = 45, 19, 24  # node height without pins, per pin line; width padding (measured)
SWEEPS = 4  # barycentre sweeps (down and up) when ordering columns


def node_title(node_id, node_type):
    """A node's title bar text."""
    return f"{node_id} : {node_type}"


def pin_text(port, kind):
    """The text of a pin line: name ('?' if optional), signal kind and pose space."""
    space = f" {port.space}" if port.signal == "pose" and port.space else ""
    opt = "?" if kind == "in" and port.optional else ""
    return f"{port.name}{opt}  [{port.signal}{space}]"


PIN_INDENT = {"in": 0, "out": 10}  # pixels an output's text is indented by


def estimate_size(node_id, node_type, ins, outs):
    """(width, height) in pixels a node is drawn with, from its title and pin texts (at least as large)."""
    widths = [len(node_title(node_id, node_type)) * CHAR]
    widths += [len(pin_text(p, "in")) * CHAR + PIN_INDENT["in"] for p in ins]
    widths += [len(pin_text(p, "out")) * CHAR + PIN_INDENT["out"] for p in outs]
    return float(max(widths) + NODE_PAD), float(TITLE_PAD + PIN_ROW * (len(ins) + len(outs)))


# ---------------------------------------------------------------- arrange


def dependency_dag(graph):
    """networkx DiGraph of node ids with an edge per link (src node -> dst node), made acyclic if it is not."""
    ids = {n.id for n in graph.nodes}
    dag = nx.DiGraph()
    dag.add_nodes_from(n.id for n in graph.nodes)
    for src, dst in graph.links:
        a, b = src.partition(".")[0], dst.partition(".")[0]
        if a in ids and b in ids and a != b:
            dag.add_edge(a, b)
    while True:  # a hand-edited file may hold a cycle: drop one of its links until none is left
        try:
            cycle = nx.find_cycle(dag)
        except nx.NetworkXNoCycle:
            return dag
        dag.remove_edge(*cycle[-1][:2])


def columns(dag, order):
    """[[node id, ...] per column], left to right: topological generations, then sources moved right to just
    before their first consumer; each column in ``order`` (file order)."""
    col = {}
    for k, generation in enumerate(nx.topological_generations(dag)):
        for nid in generation:
            col[nid] = k
    for nid in dag:
        if dag.in_degree(nid) == 0 and dag.out_degree(nid) > 0:
            col[nid] = min(col[s] for s in dag.successors(nid)) - 1
    out = [[] for _ in range(max(col.values(), default=-1) + 1)]
    for nid in sorted(col, key=order.get):
        out[col[nid]].append(nid)
    return [c for c in out if c]


def order_columns(dag, cols, sweeps=SWEEPS):
    """The columns reordered by barycentre sweeps: each node sorted by the mean row of its neighbours in the
    column before (sweeping right) or after (sweeping left); a node with none keeps its row."""
    cols = [list(c) for c in cols]
    row = {nid: k for c in cols for k, nid in enumerate(c)}
    for sweep in range(2 * sweeps):
        right = sweep % 2 == 0
        indices = range(1, len(cols)) if right else range(len(cols) - 2, -1, -1)
        for i in indices:
            near = dag.predecessors if right else dag.successors
            key = {}
            for nid in cols[i]:
                rows = [row[m] for m in near(nid)]
                key[nid] = sum(rows) / len(rows) if rows else row[nid]
            cols[i].sort(key=lambda n: (key[n], row[n]))
            for k, nid in enumerate(cols[i]):
                row[nid] = k
    return cols


def arrange(graph, sizes, origin=(20.0, 20.0), column_gap=COLUMN_GAP, row_gap=ROW_GAP, passes=3):
    """{node id: (x, y)} of every node of ``graph`` laid out left to right; ``sizes`` {id: (w, h)} in pixels.

    No two nodes' rectangles come closer than ``min(column_gap, row_gap)``.
    """
    dag = dependency_dag(graph)
    order = {n.id: i for i, n in enumerate(graph.nodes)}
    cols = order_columns(dag, columns(dag, order))
    xs, x = [], float(origin[0])
    for ids in cols:
        xs.append(round(x))
        x += max(sizes[nid][0] for nid in ids) + column_gap
    top, mid = {}, {}  # node id -> y of its top, of its middle
    for sweep in range(passes):  # first what feeds each node, then all its neighbours, placed so far
        for ids in cols:
            wants, weights = [], []
            for nid in ids:
                near = list(dag.predecessors(nid)) + (list(dag.successors(nid)) if sweep else [])
                ys = [mid[m] for m in near if m in mid]
                wants.append(sum(ys) / len(ys) - sizes[nid][1] / 2 if ys else origin[1])
                weights.append(1.0 if ys else 1e-3)  # a node without placed neighbours goes where it fits
            for nid, y in zip(ids, stack([sizes[n][1] for n in ids], wants, weights, row_gap, origin[1])):
                top[nid], mid[nid] = y, y + sizes[nid][1] / 2
    lift = min(top.values(), default=origin[1]) - round(origin[1])  # the top node at the origin
    return {nid: (xs[c], top[nid] - lift) for c, ids in enumerate(cols) for nid in ids}


def stack(heights, wants, weights, gap, top):
    """Whole-pixel tops of a column's nodes, in order: nearest their wanted tops (least squares with ``weights``),
    each ``gap`` pixels or more below the one above, none above ``top``.

    With c_i the tops of the nodes packed tight, y_i = z_i + c_i and the gaps hold when z is non-decreasing:
    an isotonic regression of ``wants - c`` (pool adjacent violators).
    """
    packed, c = [], 0.0
    for h in heights:
        packed.append(c)
        c += h + gap
    blocks = []  # [weighted sum, weight, count]
    for want, c, w in zip(wants, packed, weights):
        blocks.append([w * (want - c), w, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s2, w2, n2 = blocks.pop()
            blocks[-1] = [blocks[-1][0] + s2, blocks[-1][1] + w2, blocks[-1][2] + n2]
    z = [max(s / w, top) for s, w, n in blocks for _ in range(n)]
    return _rounded(z, packed, heights, gap)


def _rounded(z, packed, heights, gap):
    """Tops rounded to whole pixels without closing a gap (each at least the one above's bottom + gap)."""
    out, floor = [], -math.inf
    for zi, ci, h in zip(z, packed, heights):
        y = max(math.ceil(zi + ci), floor)
        out.append(y)
        floor = y + math.ceil(h) + gap
    return out


# ---------------------------------------------------------------- free space, overlap


def gap(a, b):
    """Distance in pixels between rectangles ``(x, y, w, h)``: 0 if they touch or overlap."""
    dx = max(a[0] - (b[0] + b[2]), b[0] - (a[0] + a[2]), 0.0)
    dy = max(a[1] - (b[1] + b[3]), b[1] - (a[1] + a[3]), 0.0)
    return math.hypot(dx, dy)


def too_close(rects, least=MIN_GAP):
    """[(id, id, distance)] of the pairs of rectangles ``{id: (x, y, w, h)}`` closer than ``least`` pixels."""
    items = sorted(rects.items())
    return [(a, b, round(gap(ra, rb), 1)) for i, (a, ra) in enumerate(items) for b, rb in items[i + 1:]
            if gap(ra, rb) < least]


def free_spot(rects, size, want, least=2 * MIN_GAP, step=20.0, within=None):
    """(x, y) nearest ``want`` (on a grid of ``step`` pixels) where a ``size`` (w, h) rectangle stays ``least`` pixels
    from every rectangle of ``rects`` {id: (x, y, w, h)}; inside the area ``within`` (x, y, w, h) if it has room."""
    w, h = size

    def clear(x, y):
        return all(gap((x, y, w, h), r) >= least for r in rects.values())

    x0, y0 = float(want[0]), float(want[1])
    if within is not None:  # the grid inside the area, nearest first
        ax, ay, aw, ah = within
        spots = [(x0 + i * step, y0 + j * step)
                 for i in range(math.ceil((ax - x0) / step), math.floor((ax + aw - w - x0) / step) + 1)
                 for j in range(math.ceil((ay - y0) / step), math.floor((ay + ah - h - y0) / step) + 1)]
        spots.sort(key=lambda p: (math.hypot(p[0] - x0, p[1] - y0), p[1], p[0]))
        for x, y in spots:
            if clear(x, y):
                return round(x), round(y)
    rings = 1 + int(max((max(abs(r[0] - x0), abs(r[1] - y0)) + max(r[2], r[3]) for r in rects.values()),
                        default=0.0) / step) + 1
    for ring in range(rings + 1):
        spots = [(x0 + i * step, y0 + j * step) for i in range(-ring, ring + 1) for j in range(-ring, ring + 1)
                 if max(abs(i), abs(j)) == ring]
        spots.sort(key=lambda p: (math.hypot(p[0] - x0, p[1] - y0), p[1], p[0]))
        for x, y in spots:
            if clear(x, y):
                return round(x), round(y)
    bottom = max(r[1] + r[3] for r in rects.values())  # past every rectangle: clear by construction
    return round(x0), round(bottom + least)
