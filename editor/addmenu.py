"""The canvas's add menu: a searchable list of node types opened at the cursor, or from a pin's menu with only the
types that fit the pin (the new node then linked to it).  A mixin of ``canvas.Canvas``, whose ``doc``, ``act``,
``place``, ``select``, ``to_doc``, ``rects`` and ``pins`` it uses."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from . import palette


def inside(point, rect):
    """Whether screen ``point`` lies in rectangle ``(x, y, w, h)``."""
    x, y, w, h = rect
    return x <= point[0] < x + w and y <= point[1] < y + h


class AddMenu:
    """Right click on empty canvas: the add menu at the cursor; on a pin: "add linked node..." (``Canvas``'s part)."""

    def build_menus(self):
        """The add menu (a search box over a list of node types) and a pin's menu, hidden until opened."""
        with dpg.window(tag=self.menu, show=False, no_title_bar=True, popup=True, width=240, height=300):
            dpg.add_text("", tag=f"{self.menu}_title")
            dpg.add_input_text(tag=self.menu_search, hint="search", width=-1,
                               callback=lambda s, a: self._menu_filter(a))
            dpg.add_listbox([], tag=self.menu_list, width=-1, num_items=14,
                            callback=lambda s, a: self.add_from_menu(a))
        with dpg.window(tag=self.pin_menu, show=False, no_title_bar=True, popup=True):
            dpg.add_menu_item(label="add linked node...", tag=f"{self.pin_menu}_add",
                              callback=lambda: self.open_menu(pin=self._pin_for_menu))
        self._pin_for_menu = None

    def open_menu(self, at=None, pin=None):
        """The searchable add menu at the mouse (``at``: screen point); ``pin`` (ref, kind): only node types with a
        fitting port, the new node linked to it."""
        at = at if at is not None else dpg.get_mouse_pos(local=False)
        self.menu_at, self.menu_pin = self.to_doc(at), pin
        dpg.hide_item(self.pin_menu)
        title = f"add a node linked to {pin[0]}" if pin else "add a node"
        dpg.set_value(f"{self.menu}_title", title)
        dpg.set_value(self.menu_search, "")
        self._menu_filter("")
        dpg.configure_item(self.menu, pos=[int(at[0]), int(at[1])], show=True)
        dpg.focus_item(self.menu_search)

    def menu_choices(self, text):
        """Node types the add menu lists for search ``text`` (with its pin, only the linkable ones)."""
        hits = palette.search(text) if text.strip() else sorted(palette.search(""))
        if self.menu_pin is not None:
            fits = {t for t, _, _ in self.doc.linkable(*self.menu_pin)}
            hits = [t for t in hits if t in fits]
        return hits

    def _menu_filter(self, text):
        self.menu_types = self.menu_choices(text)
        dpg.configure_item(self.menu_list, items=self.menu_types)
        dpg.set_value(self.menu_list, self.menu_types[0] if self.menu_types else "")

    def menu_move(self, step):
        """Up/Down in the add menu's search: highlight the listed type ``step`` rows on (clamped at the ends)."""
        if not self.menu_types:
            return None
        now = dpg.get_value(self.menu_list)
        i = self.menu_types.index(now) + step if now in self.menu_types else 0
        dpg.set_value(self.menu_list, self.menu_types[min(max(i, 0), len(self.menu_types) - 1)])
        return dpg.get_value(self.menu_list)

    def menu_enter(self):
        """Enter in the add menu: add the highlighted type."""
        choice = dpg.get_value(self.menu_list)
        if choice in self.menu_types:
            self.add_from_menu(choice)

    def add_from_menu(self, node_type):
        """Add ``node_type`` where the menu was opened (linked to its pin, if any), and close the menu."""
        dpg.hide_item(self.menu)
        want = self.menu_at if self.menu_at is not None else self.spot_in_sight()  # no menu opened at a point
        if self.menu_pin is None:
            return self.add_node(node_type, want)
        ref, kind = self.menu_pin
        ok, nid = self.act("add_linked", node_type, ref, kind, self.place(node_type, want))
        if ok:
            self.select([nid])
            self.owner.status(f"added {node_type} node {nid!r} linked to {ref}")
        return nid

    def on_right_click(self, at=None):
        """A right click: on a pin, its menu (add linked node...); on the canvas, the add menu at the mouse."""
        at = at if at is not None else dpg.get_mouse_pos(local=False)
        pin = self.pin_at(at)
        if pin is not None:
            return self.open_pin_menu(*pin, at)
        if any(inside(at, r) for r in self.rects(screen=True).values()):
            return None
        return self.open_menu(at)

    def pin_at(self, at):
        """(ref, kind) of the pin whose line holds screen point ``at`` (items in a node report no hover), or None."""
        for attr, (nid, port, kind) in self.pins.items():
            for line in dpg.get_item_children(attr, 1):
                state = dpg.get_item_state(line)
                if "rect_min" not in state:  # the pin's tooltip
                    continue
                (x, y), (w, h) = state["rect_min"], state["rect_size"]
                if inside(at, (x - 12, y, w + 24, h)):  # and the pin's circle beside it
                    return f"{nid}.{port}", kind
        return None

    def open_pin_menu(self, ref, kind, at):
        self._pin_for_menu = (ref, kind)
        dpg.configure_item(self.pin_menu, pos=[int(at[0]), int(at[1])], show=True)
