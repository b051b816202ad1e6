"""The graph half of the editor window: palette, node editor, inspector and assets, on a ``Document``.

Every user action becomes one ``Document`` call (``add_node``, ``connect``, ``set_field``, ...);
a refused edit shows its reason in the status bar and changes nothing.  The node editor is
rebuilt from the document when its structure changes (nodes, ports, links); positions are
written back to the document when a drag ends.
"""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from animgraph.errors import AnimgraphError

from . import fields, palette
from .document import EditError

ERROR_TITLE = (170, 40, 40)
POP_TITLE = (200, 120, 0)
SHAPES = {"local": dpg.mvNode_PinShape_CircleFilled, "global": dpg.mvNode_PinShape_QuadFilled,
          "any": dpg.mvNode_PinShape_TriangleFilled}


def pin_shape(port):
    """Pose spaces are told apart by shape as well as colour; other signals are circles."""
    return SHAPES.get(port.space or "any", dpg.mvNode_PinShape_Circle) if port.signal == "pose" \
        else dpg.mvNode_PinShape_CircleFilled


class GraphView:
    """Palette, node editor, inspector and asset panel bound to ``editor.doc``; ``editor.status(text)`` reports."""

    def __init__(self, editor):
        self.editor = editor
        self.nodes = {}  # node id -> node item
        self.pins = {}  # attribute item -> (node id, port name, "in"|"out")
        self.links = {}  # link item -> (src, dst)
        self.errors = {}  # node id -> error text item
        self.tips = {}  # node id -> tooltip shown while the node has a problem
        self.structure = None
        self.selected = None
        self.marked = set()  # node ids drawn as in error or popping
        self._themes = {}

    @property
    def doc(self):
        return self.editor.doc

    # ------------------------------------------------------------ layout

    def build_palette(self, parent):
        """The palette: a search box and one collapsing group per category, from the node registry."""
        with dpg.group(parent=parent):
            dpg.add_text("Nodes")
            dpg.add_input_text(hint="search", width=-1, callback=lambda s, a: self._filter(a), tag="palette_search")
            with dpg.group(tag="palette_groups"):
                for category, types in palette.groups().items():
                    with dpg.collapsing_header(label=category, default_open=True, tag=f"palette_cat_{category}"):
                        for t in types:
                            dpg.add_button(label=t, width=-1, tag=f"palette_{t}", user_data=t,
                                           callback=lambda s, a, u: self.add_node(u))

    def _filter(self, text):
        hits = set(palette.search(text)) if text.strip() else None
        for category, types in palette.groups().items():
            shown = [t for t in types if hits is None or t in hits]
            for t in types:
                dpg.configure_item(f"palette_{t}", show=t in shown)
            dpg.configure_item(f"palette_cat_{category}", show=bool(shown))

    def build_editor(self, parent, width, height):
        dpg.add_node_editor(parent=parent, tag="node_editor", width=width, height=height, minimap=True,
                            minimap_location=dpg.mvNodeMiniMap_Location_BottomRight,
                            callback=self.on_link, delink_callback=self.on_delink)

    def build_inspector(self, parent):
        with dpg.group(parent=parent):
            dpg.add_text("Details")
            dpg.add_group(tag="inspector")
            dpg.add_separator()
            dpg.add_text("Assets")
            dpg.add_group(tag="assets")

    # ------------------------------------------------------------ edits

    def act(self, what, *args, **kwargs):
        """Call ``doc.<what>(...)``; a refusal goes to the status bar. Returns (ok, result)."""
        try:
            result = getattr(self.doc, what)(*args, **kwargs)
        except (EditError, AnimgraphError) as e:
            self.editor.status(str(e), error=True)
            return False, None
        self.editor.changed()
        return True, result

    def add_node(self, node_type):
        k = len(self.doc.graph.nodes)
        ok, node_id = self.act("add_node", node_type, pos=(60.0 + 30 * (k % 10), 60.0 + 30 * (k % 10)))
        if ok:
            self.select(node_id)
            self.editor.status(f"added {node_type} node {node_id!r}")

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
            self.editor.status(f"link refused: {reason}", error=True)
            return
        if self.act("connect", src, dst)[0]:
            self.editor.status(f"linked {src} -> {dst}")

    def on_delink(self, sender, link):
        pair = self.links.get(link)
        if pair:
            self.act("disconnect", *pair)
            self.editor.status(f"unlinked {pair[0]} -> {pair[1]}")

    def delete_selected(self):
        ids = {v: k for k, v in self.nodes.items()}
        for item in dpg.get_selected_nodes("node_editor"):
            if item in ids:
                self.act("remove_node", ids[item])
        for item in dpg.get_selected_links("node_editor"):
            if item in self.links:
                self.act("disconnect", *self.links[item])

    def select(self, node_id):
        self.selected = node_id
        self.refresh_inspector()

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
        for nid, item in self.nodes.items():
            pos = self.doc.position(nid)
            if tuple(dpg.get_item_pos(item)) != (int(pos[0]), int(pos[1])):
                dpg.set_item_pos(item, [int(pos[0]), int(pos[1])])
        self.show_problems(problems)
        if self.selected not in self.nodes:
            self.selected = None
        self.refresh_inspector()
        self.refresh_assets()

    def rebuild(self):
        dpg.delete_item("node_editor", children_only=True)
        self.nodes, self.pins, self.links, self.errors, self.tips, self.marked = {}, {}, {}, {}, {}, set()
        by_port = {}
        for node in self.doc.graph.nodes:
            ins, outs = self.doc.ports(node.id)
            pos = self.doc.position(node.id)
            with dpg.node(label=f"{node.id} : {node.type}", parent="node_editor", pos=[int(pos[0]), int(pos[1])],
                          user_data=node.id) as item:
                for port, kind in [(p, "in") for p in ins] + [(p, "out") for p in outs]:
                    attr_type = dpg.mvNode_Attr_Input if kind == "in" else dpg.mvNode_Attr_Output
                    with dpg.node_attribute(attribute_type=attr_type, shape=pin_shape(port)) as attr:
                        space = f" {port.space}" if port.signal == "pose" and port.space else ""
                        opt = "?" if kind == "in" and port.optional else ""
                        dpg.add_text(f"{port.name}{opt}  [{port.signal}{space}]", indent=0 if kind == "in" else 10)
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
                link = dpg.add_node_link(a, b, parent="node_editor")
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

    def show_problems(self, problems, popping=None):
        """Problem nodes get a red title and their message under the pins; a popping node an orange title."""
        text = {}
        for p in problems:
            if p.node in self.nodes:
                text.setdefault(p.node, p.text)
        marked = set(text) | ({popping} if popping in self.nodes else set())
        for nid, item in self.nodes.items():
            if nid in text:
                dpg.bind_item_theme(item, self._title_theme(ERROR_TITLE))
            elif nid == popping:
                dpg.bind_item_theme(item, self._title_theme(POP_TITLE))
            elif nid in self.marked:
                dpg.bind_item_theme(item, 0)
            if dpg.get_value(self.errors[nid]) != text.get(nid, ""):
                dpg.set_value(self.errors[nid], text.get(nid, ""))
                dpg.configure_item(self.errors[nid], show=nid in text)
                dpg.set_value(dpg.get_item_children(self.tips[nid], 1)[0], text.get(nid, ""))
        self.marked = marked

    def poll_moves(self):
        """Write node drags back to the document once the mouse is released (one undo step per drag)."""
        if dpg.is_mouse_button_down(dpg.mvMouseButton_Left):
            return
        for nid, item in self.nodes.items():
            x, y = dpg.get_item_pos(item)
            px, py = self.doc.position(nid)
            if (int(x), int(y)) != (int(px), int(py)):
                self.act("move", nid, (float(x), float(y)))
        selected = [k for k, v in self.nodes.items() if v in set(dpg.get_selected_nodes("node_editor"))]
        if len(selected) == 1 and selected[0] != self.selected:
            self.select(selected[0])

    # ------------------------------------------------------------ inspector

    def refresh_inspector(self):
        dpg.delete_item("inspector", children_only=True)
        nid = self.selected
        if nid is None:
            dpg.add_text("select a node to edit its fields", parent="inspector", color=(150, 150, 150))
            return
        node = self.doc.graph.node(nid)
        parent = "inspector"
        dpg.add_text(f"{node.type}: {palette.doc(node.type)}", wrap=240, parent=parent)
        dpg.add_input_text(label="id", default_value=nid, on_enter=True, parent=parent, width=150,
                           callback=lambda s, a: self._rename(nid, a))
        panel = fields.Panel(self, nid)
        for spec in self.doc.field_specs(nid):
            panel.field(parent, spec, getattr(node, spec.name))
        dpg.add_button(label="delete node", parent=parent, callback=lambda: self.act("remove_node", nid))

    def _rename(self, old, new):
        if self.act("rename", old, new)[0]:
            self.selected = new

    def set_field(self, nid, name, value):
        """A widget's write: ``doc.set_field``; a refusal rebuilds the panel so every widget shows the document."""
        if not self.act("set_field", nid, name, value)[0]:
            self.refresh_inspector()

    def refuse(self, text):
        """A value refused before it reached the document: say why and show the document's values again."""
        self.editor.status(text, error=True)
        self.refresh_inspector()

    # ------------------------------------------------------------ assets

    def refresh_assets(self):
        dpg.delete_item("assets", children_only=True)
        for name, spec in self.doc.graph.assets.items():
            with dpg.group(horizontal=True, parent="assets"):
                dpg.add_text(f"{name}: {_asset_label(spec)}")
                if not isinstance(spec, str):
                    opts = spec.model_dump(exclude_defaults=True, exclude={"path", "database"})
                    if opts:
                        dpg.add_text(str(opts), color=(150, 150, 150))
                dpg.add_button(label="x", small=True, user_data=name, callback=lambda s, a, u: self.act("remove_asset", u))
        from animgraph import data

        with dpg.group(horizontal=True, parent="assets"):
            dpg.add_combo(list(data.names()), width=110, tag="asset_bundled", default_value=data.names()[0])
            dpg.add_button(label="add bundled", tag="asset_add_bundled", callback=self._add_bundled)
        with dpg.group(horizontal=True, parent="assets"):
            dpg.add_combo(["auto", "keep", "drop"], default_value="auto", width=60, tag="asset_first")
            dpg.add_input_text(hint="units (auto)", width=80, tag="asset_units")
            dpg.add_combo(["auto", "cmu", "none"], default_value="auto", width=60, tag="asset_names")
        dpg.add_button(label="add BVH file...", parent="assets", callback=lambda: dpg.show_item("bvh_dialog"))

    def _add_bundled(self):
        name = dpg.get_value("asset_bundled")
        self.act("add_asset", _free_name(name, self.doc.graph.assets), f"animgraph:{name}")

    def add_bvh(self, path):
        """Add a BVH file as an asset with the reading options chosen beside the button."""
        from pathlib import Path

        units = dpg.get_value("asset_units").strip() or "auto"
        spec = {"path": str(path), "first_frame": dpg.get_value("asset_first"), "names": dpg.get_value("asset_names")}
        try:
            spec["units"] = units if units == "auto" else float(units)
        except ValueError:
            self.editor.status(f"units must be a number of metres per file unit or 'auto', got {units!r}", error=True)
            return
        spec = {k: v for k, v in spec.items() if v != "auto"}
        name = _free_name(Path(path).stem.replace("-", "_").replace(" ", "_"), self.doc.graph.assets)
        self.act("add_asset", name, spec if len(spec) > 1 else spec["path"])


def _free_name(name, taken):
    base, k = name or "clip", 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


def _asset_label(spec):
    """What an asset is, in a few words: its path, or a motion database's file or clip count."""
    if isinstance(spec, str):
        return spec
    database = getattr(spec, "database", None)
    if database is None:
        return spec.path
    return f"database {database}" if isinstance(database, str) else f"database of {len(database)} clips"
