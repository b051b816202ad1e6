"""A node canvas: dearpygui's node editor over a document, with its own selection, view, clipboard and menus.

The graph editor is one ``Canvas``; a state machine or blend space editor is another
instance over its own document.  The canvas reads and edits only ``owner.doc`` (whose
history is its undo scope) and reports through ``owner.status`` and ``owner.changed``;
``owner.on_select(node_id)`` (if present) hears a single selected node.

dearpygui's node editor (imnodes) cannot pan, zoom or select from Python.  So the canvas
keeps a view offset of its own: a node of the document at ``pos`` is drawn at grid
position ``pos + view``.  Home and F change that offset (the document and its undo
history are untouched: framing is not an edit), so everything, or the selection, moves
into sight; nothing zooms, so a graph larger than the canvas is framed from its top-left
corner.  Where the user panned by a middle drag is read back from a node's screen
rectangle.  Selections the canvas makes itself (paste, duplicate) are kept as
``chosen`` until the user selects in the window, as the window's selection cannot be set.
"""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from animgraph.errors import AnimgraphError

from . import layout, palette
from .addmenu import AddMenu
from .comments import CommentFrames
from .livemarks import LiveMarks
from .document import EditError

ERROR_TITLE = (170, 40, 40)
POP_TITLE = (200, 120, 0)
CHOSEN_TITLE = (60, 110, 170)
MARGIN = 30  # pixels between the canvas's edge and what Home and F frame
MINIMAP_FRACTION, MINIMAP_PAD = 0.2, 12  # imnodes's default minimap size (a fraction of the editor's), plus its padding
MINIMAP_CLEAR = 4  # pixels Home and F keep from the minimap: a view rounded to whole pixels never touches it
PASTE_OFFSET = (40.0, 40.0)  # pixels a paste or a duplicate lands from the copied nodes
SHAPES = {"local": dpg.mvNode_PinShape_CircleFilled, "global": dpg.mvNode_PinShape_QuadFilled,
          "any": dpg.mvNode_PinShape_TriangleFilled}


def pin_shape(port):
    """Pose spaces are told apart by shape as well as colour; other signals are circles."""
    return SHAPES.get(port.space or "any", dpg.mvNode_PinShape_Circle) if port.signal == "pose" \
        else dpg.mvNode_PinShape_CircleFilled


def minimap_rect(w, h):
    """(x, y, w, h) in the node editor's pixels that its minimap may cover (imnodes: a fraction of the editor's
    size, in the bottom-right corner), with a margin."""
    mw, mh = MINIMAP_FRACTION * w + MINIMAP_PAD, MINIMAP_FRACTION * h + MINIMAP_PAD
    return w - mw, h - mh, mw, mh


def clear_of_minimap(rects, x0, y0, left, top, w, h):
    """``(left, top)``, where the nodes' corner ``(x0, y0)`` is drawn, moved left or up (the lesser move) so that no
    node of ``rects`` within the canvas's width lies under the minimap (or ``MINIMAP_CLEAR`` from it), when that keeps
    the corner ``MARGIN`` inside; else unchanged. Nodes past the right edge are out of sight anyway."""
    mx, my, _, _ = minimap_rect(w, h)
    mx, my = mx - MINIMAP_CLEAR, my - MINIMAP_CLEAR
    under = [(x - x0 + left, y - y0 + top, rw, rh) for x, y, rw, rh in rects.values()]
    under = [(x, y, rw, rh) for x, y, rw, rh in under if x + rw > mx and y + rh > my and x < w]
    if not under:
        return left, top
    dx = max(x + rw for x, _, rw, _ in under) - mx
    dy = max(y + rh for _, y, _, rh in under) - my
    moves = [m for m in ((dx, 0.0), (0.0, dy)) if left - m[0] >= MARGIN and top - m[1] >= MARGIN]
    if not moves:
        return left, top
    sx, sy = min(moves, key=lambda m: m[0] + m[1])
    return left - sx, top - sy


class Canvas(AddMenu, CommentFrames, LiveMarks):
    """A node canvas over ``owner.doc``: build(parent) once, then sync(problems) and poll() every frame."""

    def __init__(self, owner, name="graph"):
        self.owner = owner
        self.tag = f"{name}_canvas"
        self.bar = f"{name}_canvas_bar"
        self.menu, self.menu_search, self.menu_list = f"{name}_add_menu", f"{name}_add_search", f"{name}_add_list"
        self.pin_menu = f"{name}_pin_menu"
        self.title_box, self.title_box_text = f"{name}_comment_title", f"{name}_comment_title_text"
        self._framing = None  # node ids the open title box frames
        self.overlay = f"{name}_frames"
        self.nodes = {}  # node id -> node item
        self.pins = {}  # attribute item -> (node id, port name, "in"|"out")
        self.links = {}  # link item -> (src, dst)
        self.errors = {}  # node id -> error text item
        self.tips = {}  # node id -> tooltip shown while the node has a problem
        self.marked = set()  # node ids drawn as in error, popping or chosen
        self.structure = None
        self.view = (0.0, 0.0)  # document position + view = grid position in the node editor
        self.chosen = None  # node ids the canvas selected (paste, duplicate) until the window's selection changes
        self._window_selection = ()
        self._clearing = False
        self.clipboard = None
        self.menu_at = None  # document position a node added from the menu goes to
        self.menu_pin = None  # (ref, kind) the add menu links a new node to, or None
        self.menu_types = []
        self.frames = []  # (title, (x0, y0, x1, y1)) of each comment frame as drawn, screen pixels
        self.frame_index = []  # the document's index of each frame in ``frames``
        self._retitling = None  # index of the frame the open title box retitles (None: a new frame)
        self._themes = {}
        self._levels = {}  # link item -> the weight shade it is drawn with (None: its signal's colour)
        self._pan = None
        self._placed = {}  # node id -> grid position the canvas last gave its item

    @property
    def doc(self):
        return self.owner.doc

    # ------------------------------------------------------------ building

    def build(self, parent, width, height):
        """The toolbar, the node editor, the add menu and the pin menu, under ``parent``."""
        with dpg.group(horizontal=True, parent=parent, tag=self.bar):
            for label, fn in (("add...", lambda: self.open_menu()), ("arrange", self.arrange),
                              ("home", self.frame_all), ("frame (F)", self.frame_selected),
                              ("comment", lambda: self.comment_selected()), ("copy", self.copy),
                              ("paste", self.paste), ("duplicate", self.duplicate)):
                dpg.add_button(label=label, small=True, callback=lambda s, a, u: u(), user_data=fn)
        dpg.add_node_editor(parent=parent, tag=self.tag, width=width, height=height, minimap=True,
                            minimap_location=dpg.mvNodeMiniMap_Location_BottomRight,
                            callback=self.on_link, delink_callback=self.on_delink)
        self.build_menus()
        self.build_title_box()

    # ------------------------------------------------------------ coordinates

    def origin(self):
        """Screen (x, y) of the node editor's top-left corner: below the toolbar."""
        x, y = dpg.get_item_rect_min(self.bar)
        return float(x), float(y + dpg.get_item_rect_size(self.bar)[1] + 4)  # 4: imgui's item spacing

    def size(self):
        """(width, height) of the node editor in pixels."""
        w, h = dpg.get_item_rect_size(self.tag)
        return float(w), float(h)

    def panning(self):
        """The node editor's own panning (a middle drag, plus its padding): as read at the start of this frame."""
        if self._pan is None:
            self._pan = self._read_panning()
        return self._pan

    def _read_panning(self):
        """Screen - origin - grid position of a drawn node (rectangles are those of the frame last drawn, so this
        is read before anything is moved in a frame)."""
        ox, oy = self.origin()
        for item in self.nodes.values():
            (sx, sy), (gx, gy) = dpg.get_item_rect_min(item), dpg.get_item_pos(item)
            if dpg.get_item_rect_size(item)[0] > 0:
                return sx - ox - gx, sy - oy - gy
        return self._pan if self._pan is not None else (0.0, 0.0)

    def to_doc(self, screen):
        """The document position drawn at screen point ``screen``."""
        (ox, oy), (px, py) = self.origin(), self.panning()
        return screen[0] - ox - px - self.view[0], screen[1] - oy - py - self.view[1]

    def visible(self):
        """(x, y, w, h) of the canvas's visible area in document pixels."""
        (ox, oy), (w, h) = self.origin(), self.size()
        x, y = self.to_doc((ox, oy))
        return x, y, w, h

    def hovered(self):
        """Whether the mouse is over the node editor."""
        (ox, oy), (w, h) = self.origin(), self.size()
        mx, my = dpg.get_mouse_pos(local=False)
        return ox <= mx < ox + w and oy <= my < oy + h

    def sizes(self):
        """{node id: (w, h)}: as drawn where the window has drawn the node, else estimated from its texts."""
        out = {}
        for node in self.doc.graph.nodes:
            item = self.nodes.get(node.id)
            w, h = dpg.get_item_rect_size(item) if item is not None else (0, 0)
            out[node.id] = (float(w), float(h)) if w > 0 and h > 0 else \
                layout.estimate_size(node.id, node.type, *self.doc.ports(node.id))
        return out

    def rects(self, screen=False):
        """{node id: (x, y, w, h)}: document rectangles (``screen``: as the window drew them)."""
        if screen:
            return {nid: (*dpg.get_item_rect_min(item), *dpg.get_item_rect_size(item))
                    for nid, item in self.nodes.items()}
        sizes = self.sizes()
        return {nid: (*self.doc.position(nid), *sizes[nid]) for nid in sizes}

    # ------------------------------------------------------------ edits

    def act(self, what, *args, **kwargs):
        """Call ``doc.<what>(...)``; a refusal goes to the status bar. Returns (ok, result)."""
        try:
            result = getattr(self.doc, what)(*args, **kwargs)
        except (EditError, AnimgraphError) as e:
            self.owner.status(str(e), error=True)
            return False, None
        self.owner.changed()
        return True, result

    def place(self, node_type, want, **fields):
        """Where a new node of ``node_type`` goes: ``want`` if free, else the nearest free spot in sight (else the
        nearest anywhere)."""
        try:
            nid, ins, outs = self.doc.probe(node_type, **fields)
            size = layout.estimate_size(nid, node_type, ins, outs)
        except EditError:
            size = layout.estimate_size(node_type, node_type, (), ())
        return layout.free_spot(self.rects(), size, want, within=self.visible())

    def spot_in_sight(self):
        """The document position ``MARGIN`` inside the visible area's top-left corner."""
        x, y, _, _ = self.visible()
        return x + MARGIN, y + MARGIN

    def add_node(self, node_type, at=None):
        """Add a node: at document position ``at`` (the cursor), else in free space in sight; never on another."""
        at = self.spot_in_sight() if at is None else at
        ok, nid = self.act("add_node", node_type, pos=self.place(node_type, at))
        if ok:
            self.select([nid])
            self.owner.status(f"added {node_type} node {nid!r}")
        return nid

    def on_link(self, sender, pair):
        """A link dropped between two pins: connect, or say why not."""
        a, b = (self.pins.get(p) for p in pair)
        if a is None or b is None:
            return
        if a[2] == "in":
            a, b = b, a
        src, dst = f"{a[0]}.{a[1]}", f"{b[0]}.{b[1]}"
        reason = self.doc.can_connect(src, dst)
        if reason:
            self.owner.status(f"link refused: {reason}", error=True)
            return
        if self.act("connect", src, dst)[0]:
            self.owner.status(f"linked {src} -> {dst}")

    def on_delink(self, sender, link):
        pair = self.links.get(link)
        if pair:
            self.act("disconnect", *pair)
            self.owner.status(f"unlinked {pair[0]} -> {pair[1]}")

    # ------------------------------------------------------------ selection

    def selection(self):
        """Selected node ids, in file order: the canvas's own choice (paste), else the window's."""
        if self.chosen is not None:
            ids = self.chosen
        else:
            items = set(dpg.get_selected_nodes(self.tag))
            ids = {nid for nid, item in self.nodes.items() if item in items}
        return [n.id for n in self.doc.graph.nodes if n.id in ids]

    def select(self, ids):
        """Make ``ids`` the selection (drawn with a blue title: the window's own selection cannot be set)."""
        dpg.clear_selected_nodes(self.tag)  # done when the node editor is next drawn
        self._clearing = True
        self.chosen = set(ids)
        if len(self.chosen) == 1 and hasattr(self.owner, "on_select"):
            self.owner.on_select(next(iter(self.chosen)))

    def box_select(self, a, b):
        """Select the nodes whose drawn rectangle meets the screen box with corners ``a`` and ``b``."""
        x0, x1 = sorted((a[0], b[0]))
        y0, y1 = sorted((a[1], b[1]))
        self.select([nid for nid, (x, y, w, h) in self.rects(screen=True).items()
                     if x < x1 and x + w > x0 and y < y1 and y + h > y0])
        return self.selection()

    def delete_selected(self):
        """Delete the selected nodes and links (one undo step)."""
        ids, links = self.selection(), [self.links[i] for i in dpg.get_selected_links(self.tag) if i in self.links]
        if not ids and not links:
            return
        with self.doc.batch():
            for src, dst in links:
                if [src, dst] in [list(ln) for ln in self.doc.graph.links]:
                    self.act("disconnect", src, dst)
            for nid in ids:
                self.act("remove_node", nid)
        self.chosen = None
        self.owner.status(f"deleted {len(ids)} nodes, {len(links)} links")

    def copy(self):
        """Keep the selected nodes (and the links and frames among them) for a paste."""
        ids = self.selection()
        if not ids:
            self.owner.status("select nodes to copy", error=True)
            return None
        self.clipboard = self.doc.copy(ids)
        dpg.set_clipboard_text(f"animgraph: {len(ids)} nodes")
        self.owner.status(f"copied {len(ids)} nodes")
        return self.clipboard

    def paste(self, fragment=None):
        """Paste the clipboard beside where it was copied, with fresh ids (one undo step); the copies are selected."""
        fragment = fragment or self.clipboard
        if not fragment:
            self.owner.status("nothing to paste", error=True)
            return {}
        offset = self._paste_offset(fragment)
        ok, names = self.act("paste", fragment, offset)
        if ok:
            self.select(names.values())
            self.owner.status(f"pasted {len(names)} nodes")
        return names or {}

    def duplicate(self):
        """Copy and paste the selection in one go (one undo step); the clipboard keeps what it held."""
        ids = self.selection()
        return self.paste(self.doc.copy(ids)) if ids else {}

    def _paste_offset(self, fragment):
        """How far to move the fragment: PASTE_OFFSET, or to the free spot nearest that for the box round it all."""
        rects, sizes = self.rects(), {}
        for entry in fragment["nodes"]:
            nid, t = entry["id"], entry["type"]
            try:
                sizes[nid] = layout.estimate_size(nid, t, *self.doc.probe(
                    t, **{k: v for k, v in entry.items() if k != "type"})[1:])
            except EditError:
                sizes[nid] = layout.estimate_size(nid, t, (), ())
        boxes = [(p[0], p[1], *sizes[n]) for n, p in fragment["positions"].items() if n in sizes]
        if not boxes:
            return PASTE_OFFSET
        x0, y0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
        x1, y1 = max(b[0] + b[2] for b in boxes), max(b[1] + b[3] for b in boxes)
        x, y = layout.free_spot(rects, (x1 - x0, y1 - y0), (x0 + PASTE_OFFSET[0], y0 + PASTE_OFFSET[1]))
        return x - x0, y - y0

    # ------------------------------------------------------------ arrange, framing

    def arrange(self):
        """Lay the graph out left to right by its measured node sizes (one undo step)."""
        x, y, _, _ = self.visible()
        pos = layout.arrange(self.doc.graph, self.sizes(), origin=(round(x) + MARGIN, round(y) + MARGIN))
        if self.act("move_many", pos)[0]:
            self.owner.status("nodes arranged")
        return pos

    def frame_all(self):
        """Home: bring every node into sight (centred if they fit, else from their top-left corner)."""
        return self._frame(self.rects())

    def frame_selected(self):
        """F: bring the selected nodes into sight (everything when nothing is selected)."""
        ids = set(self.selection())
        return self._frame({k: v for k, v in self.rects().items() if k in ids} if ids else self.rects())

    def _frame(self, rects):
        if not rects:
            return self.view
        x0 = min(r[0] for r in rects.values())
        y0 = min(r[1] for r in rects.values())
        x1 = max(r[0] + r[2] for r in rects.values())
        y1 = max(r[1] + r[3] for r in rects.values())
        (w, h), (px, py) = self.size(), self.panning()
        left = (w - (x1 - x0)) / 2 if x1 - x0 + 2 * MARGIN <= w else MARGIN
        top = (h - (y1 - y0)) / 2 if y1 - y0 + 2 * MARGIN <= h else MARGIN
        left, top = clear_of_minimap(rects, x0, y0, left, top, w, h)
        self.view = (round(left - px - x0), round(top - py - y0))  # grid = doc + view lands at screen origin + left
        self._place_items()
        return self.view

    # ------------------------------------------------------------ keys

    def typing(self):
        """Whether one of the canvas's text boxes (add menu, comment title) is open."""
        return dpg.is_item_shown(self.menu) or dpg.is_item_shown(self.title_box)

    def key(self, key, ctrl=False, shift=False):
        """A key meant for the canvas: Del, Ctrl+C/V/D, Home, F, C (comment); True if it was one."""
        actions = {(dpg.mvKey_C, True): self.copy, (dpg.mvKey_V, True): self.paste,
                   (dpg.mvKey_D, True): self.duplicate, (dpg.mvKey_Delete, False): self.delete_selected,
                   (dpg.mvKey_Home, False): self.frame_all, (dpg.mvKey_F, False): self.frame_selected,
                   (dpg.mvKey_C, False): self.comment_selected}
        action = actions.get((key, bool(ctrl)))
        if action is None or shift:
            return False
        action()
        return True

    # ------------------------------------------------------------ sync with the document

    def _structure(self):
        g = self.doc.graph
        return (tuple((n.id, n.type, self.doc.ports(n.id)) for n in g.nodes), tuple(map(tuple, g.links)))

    def sync(self, problems):
        """Bring the node editor in line with the document; mark problem nodes."""
        key = self._structure()
        if key != self.structure:
            self.rebuild()
            self.structure = key
        self._place_items()
        self.show_problems(problems)
        if self.chosen is not None:
            self.chosen &= set(self.nodes)

    def _place_items(self):
        for nid, item in self.nodes.items():
            x, y = self.doc.position(nid)
            want = [int(x + self.view[0]), int(y + self.view[1])]
            if list(dpg.get_item_pos(item)) != want:
                dpg.set_item_pos(item, want)
            self._placed[nid] = want

    def rebuild(self):
        dpg.delete_item(self.tag, children_only=True)
        self.nodes, self.pins, self.links, self.errors, self.tips, self.marked = {}, {}, {}, {}, {}, set()
        self.by_port = by_port = {}  # (node id, port, "in"|"out") -> attribute item
        self._placed, self._levels = {}, {}
        for node in self.doc.graph.nodes:
            ins, outs = self.doc.ports(node.id)
            x, y = self.doc.position(node.id)
            with dpg.node(label=layout.node_title(node.id, node.type), parent=self.tag, user_data=node.id,
                          pos=[int(x + self.view[0]), int(y + self.view[1])]) as item:
                for port, kind in [(p, "in") for p in ins] + [(p, "out") for p in outs]:
                    attr_type = dpg.mvNode_Attr_Input if kind == "in" else dpg.mvNode_Attr_Output
                    with dpg.node_attribute(attribute_type=attr_type, shape=pin_shape(port)) as attr:
                        dpg.add_text(layout.pin_text(port, kind), indent=layout.PIN_INDENT[kind])
                        if port.doc:
                            with dpg.tooltip(dpg.last_item()):
                                dpg.add_text(port.doc)
                    dpg.bind_item_theme(attr, self._pin_theme(port))
                    self.pins[attr] = (node.id, port.name, kind)
                    by_port[(node.id, port.name, kind)] = attr
                with dpg.node_attribute(attribute_type=dpg.mvNode_Attr_Static):
                    self.errors[node.id] = dpg.add_text("", color=(255, 110, 110), wrap=260, show=False)
                    with dpg.tooltip(self.errors[node.id]) as tip:  # a node itself cannot carry a tooltip
                        dpg.add_text("", wrap=420)
                    self.tips[node.id] = tip
            self.nodes[node.id] = item
        for src, dst in self.doc.graph.links:
            (sn, sp), (dn, dp) = src.split("."), dst.split(".")
            a, b = by_port.get((sn, sp, "out")), by_port.get((dn, dp, "in"))
            if a is not None and b is not None:
                link = dpg.add_node_link(a, b, parent=self.tag)
                self.links[link] = (src, dst)
                port = next((p for p in self.doc.ports(sn)[1] if p.name == sp), None)
                if port is not None:
                    dpg.bind_item_theme(link, self._pin_theme(port, link=True))

    def _pin_theme(self, port, link=False):
        key = (port.signal, port.space if port.signal == "pose" else "", link)
        if key not in self._themes:
            colour = palette.pin_colour(port.signal, key[1])
            with dpg.theme() as theme, dpg.theme_component(dpg.mvAll):
                cols = (dpg.mvNodeCol_Link, dpg.mvNodeCol_LinkHovered) if link else \
                    (dpg.mvNodeCol_Pin, dpg.mvNodeCol_PinHovered)
                for c in cols:
                    dpg.add_theme_color(c, colour, category=dpg.mvThemeCat_Nodes)
            self._themes[key] = theme
        return self._themes[key]

    def _title_theme(self, colour):
        key = ("title", colour)
        if key not in self._themes:
            with dpg.theme() as theme, dpg.theme_component(dpg.mvAll):
                for c in (dpg.mvNodeCol_TitleBar, dpg.mvNodeCol_TitleBarHovered, dpg.mvNodeCol_TitleBarSelected):
                    dpg.add_theme_color(c, colour, category=dpg.mvThemeCat_Nodes)
            self._themes[key] = theme
        return self._themes[key]

    def show_problems(self, problems, popping=None, dimmed=()):
        """Problem nodes get a red title and their message under the pins; a popping node an orange title; nodes
        the canvas chose a blue one; ``dimmed`` nodes (skipped in the frame played) are drawn dark."""
        text = {}
        for p in problems:
            if p.node in self.nodes:
                text.setdefault(p.node, p.text)
        chosen = self.chosen or set()
        dimmed = set(dimmed) & set(self.nodes)
        marked = set(text) | ({popping} if popping in self.nodes else set()) | (chosen & set(self.nodes)) | dimmed
        for nid, item in self.nodes.items():
            if nid in text:
                dpg.bind_item_theme(item, self._title_theme(ERROR_TITLE))
            elif nid == popping:
                dpg.bind_item_theme(item, self._title_theme(POP_TITLE))
            elif nid in chosen:
                dpg.bind_item_theme(item, self._title_theme(CHOSEN_TITLE))
            elif nid in dimmed:
                dpg.bind_item_theme(item, self._dim_theme())
            elif nid in self.marked:
                dpg.bind_item_theme(item, 0)
            if dpg.get_value(self.errors[nid]) != text.get(nid, ""):
                dpg.set_value(self.errors[nid], text.get(nid, ""))
                dpg.configure_item(self.errors[nid], show=nid in text)
                dpg.set_value(dpg.get_item_children(self.tips[nid], 1)[0], text.get(nid, ""))
        self.marked = marked

    def begin_frame(self):
        """Before a frame's callbacks: read where the user panned to, while the drawn rectangles match the items."""
        self._pan = self._read_panning()

    def poll(self):
        """Each frame: node drags written back once the mouse is released (one undo step for all moved nodes), the
        window's selection followed, comment frames drawn."""
        window = tuple(sorted(dpg.get_selected_nodes(self.tag)))
        if self._clearing:  # the window's selection, cleared by ``select``, is not the user's new choice
            self._window_selection, self._clearing = window, bool(window)
        elif window != self._window_selection:
            self._window_selection, self.chosen = window, None
            ids = self.selection()
            if len(ids) == 1 and hasattr(self.owner, "on_select"):
                self.owner.on_select(ids[0])
        if not dpg.is_mouse_button_down(dpg.mvMouseButton_Left):
            moved = {}  # nodes the user dragged: away from where the canvas last put them (not from the document,
            for nid, item in self.nodes.items():  # which an edit may have changed before the items follow it)
                x, y = dpg.get_item_pos(item)
                if nid in self._placed and [int(x), int(y)] != self._placed[nid]:
                    moved[nid] = (float(int(x)) - self.view[0], float(int(y)) - self.view[1])
            if moved:
                self.act("move_many", moved)
                self._place_items()
        self.draw_frames()



