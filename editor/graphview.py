"""The graph half of the editor window: palette, node canvas, inspector and assets, on a ``Document``.

Every user action becomes one ``Document`` call (``add_node``, ``connect``, ``set_field``, ...);
a refused edit shows its reason in the status bar and changes nothing.  The node canvas
(``canvas.Canvas``) draws the document and takes the edits made on it.
"""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from . import fields, palette
from .canvas import Canvas

OPENS = {"state_machine": "its states", "blend_space_1d": "its plot", "blend_space_2d": "its plot"}  # double-click

class GraphView:
    """Palette, node editor, inspector and asset panel bound to ``editor.doc``; ``editor.status(text)`` reports."""

    def __init__(self, editor):
        self.editor = editor
        self.canvas = Canvas(self, "graph")
        self.selected = None
        self.highlighted = None  # the palette type Enter adds
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
        hits = palette.search(text) if text.strip() else None
        for category, types in palette.groups().items():
            shown = [t for t in types if hits is None or t in hits]
            for t in types:
                dpg.configure_item(f"palette_{t}", show=t in shown)
            dpg.configure_item(f"palette_cat_{category}", show=bool(shown))
        self.highlight(hits[0] if hits else None)

    def highlight(self, node_type):
        """Mark the palette button Enter adds (the best match of the search)."""
        if self.highlighted is not None:
            dpg.bind_item_theme(f"palette_{self.highlighted}", 0)
        self.highlighted = node_type
        if node_type is not None:
            if "highlight" not in self._themes:
                with dpg.theme() as theme, dpg.theme_component(dpg.mvButton):
                    dpg.add_theme_color(dpg.mvThemeCol_Button, (60, 110, 170))
                self._themes["highlight"] = theme
            dpg.bind_item_theme(f"palette_{node_type}", self._themes["highlight"])

    def move_highlight(self, step):
        """Up/Down in the palette's search: highlight the shown type ``step`` buttons on (clamped at the ends)."""
        text = dpg.get_value("palette_search") or ""
        hits = set(palette.search(text)) if text.strip() else None
        shown = [t for types in palette.groups().values() for t in types if hits is None or t in hits]
        if not shown:
            return None
        i = shown.index(self.highlighted) + step if self.highlighted in shown else 0
        self.highlight(shown[min(max(i, 0), len(shown) - 1)])
        return self.highlighted

    def palette_enter(self):
        """Enter in the palette's search: add the highlighted node type (into free space in sight)."""
        if self.highlighted is None:
            self.editor.status("no node type matches the search", error=True)
            return None
        return self.add_node(self.highlighted)

    def build_editor(self, parent, width, height):
        """The node canvas (toolbar, node editor, add menu) under ``parent``."""
        self.canvas.build(parent, width, height)

    def build_inspector(self, parent):
        with dpg.group(parent=parent):
            dpg.add_text("Details")
            dpg.add_group(tag="inspector")
            dpg.add_separator()
            dpg.add_text("Assets")
            dpg.add_group(tag="assets")

    # ------------------------------------------------------------ edits

    def act(self, what, *args, **kwargs):
        """Call ``doc.<what>(...)`` through the canvas (a refusal goes to the status bar). Returns (ok, result)."""
        return self.canvas.act(what, *args, **kwargs)

    def add_node(self, node_type):
        """A palette click: the node goes into free space in sight of the canvas."""
        return self.canvas.add_node(node_type)

    def delete_selected(self):
        self.canvas.delete_selected()

    def select(self, node_id):
        self.selected = node_id
        self.refresh_inspector()

    # ------------------------------------------------------------ sync with the document

    def sync(self, problems):
        """Bring the canvas in line with the document; the inspector and assets too."""
        self.canvas.sync(problems)
        if self.selected not in self.canvas.nodes:
            self.selected = None
        self.refresh_inspector()
        self.refresh_assets()

    def show_problems(self, problems, popping=None, dimmed=()):
        self.canvas.show_problems(problems, popping, dimmed)

    def poll_moves(self):
        """The canvas's per-frame work (drags written back, selection followed, comment frames drawn)."""
        self.canvas.poll()

    def on_select(self, node_id):
        """The canvas selected one node: show its fields."""
        if node_id != self.selected:
            self.select(node_id)

    def status(self, text, error=False):
        self.editor.status(text, error)

    def changed(self):
        self.editor.changed()

    # ------------------------------------------------------------ inspector

    def refresh_inspector(self):
        dpg.delete_item("inspector", children_only=True)
        inner = self.editor.inner
        if inner is not None and inner.valid():  # an open machine or blend space: its own details
            inner.refresh_details("inspector")
            return
        nid = self.selected
        if nid is None:
            dpg.add_text("select a node to edit its fields", parent="inspector", color=(150, 150, 150))
            return
        node = self.doc.graph.node(nid)
        parent = "inspector"
        dpg.add_text(f"{node.type}: {palette.doc(node.type)}", wrap=240, parent=parent)
        dpg.add_input_text(label="id", default_value=nid, on_enter=True, parent=parent, width=150,
                           callback=lambda s, a: self._rename(nid, a))
        if node.type in OPENS:
            dpg.add_button(label=f"open {OPENS[node.type]} (double-click)", parent=parent, tag="inspector_open",
                           callback=lambda: self.editor.open_inner(nid))
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
