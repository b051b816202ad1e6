"""A state machine opened in the editor: its states and transitions on a canvas of their own, live while it plays.

Double-clicking a ``state_machine`` node opens it here (the breadcrumb leads back to the
graph).  The canvas is a ``canvas.Canvas`` over ``machine.MachineDoc`` (each link drawn with an
arrowhead where it enters its state and its condition over it), with the canvas's
habits: right click adds a state at the cursor, a drag from a state's ``out`` to another's
``in`` adds a transition, Del removes the selected states and transitions, every edit is one
undo step of the graph's document.  The details panel shows the machine's fields, the
selected state (name, start, reset on enter) or the selected transition (condition,
priority, duration, blend).  While the preview plays, the active state's title is green, the
state a transition leaves is amber, and a running transition is drawn over its link with
its progress.
"""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from animgraph import inspect as look
from animgraph.errors import AnimgraphError

from . import fields
from .canvas import CHOSEN_TITLE, Canvas
from .document import EditError
from .machine import ANY, STATE, MachineDoc, condition, describe

ACTIVE_TITLE = (40, 150, 70)
LEAVING_TITLE = (170, 120, 30)
RUNNING_LINK = (120, 240, 140)
ARROW = (200, 200, 200)
LABEL_BACK = (30, 31, 36, 220)
LABEL_CHAR = 7.0  # px a character of a condition's label takes (size 13)
NODE_PADDING = 8.0  # px between a node's contents and its frame, where its pins sit (the node editor's default)


class MachineCanvas(Canvas):
    """The canvas over a MachineDoc: states for nodes, transitions for links (link item -> transition index)."""

    def __init__(self, owner):
        super().__init__(owner, "machine")
        self.link_index = {}  # link item -> transition index in the file
        self.titles = {}  # state -> the title colour bound (None: the default)
        self.live = None  # inspect.MachineNow of the last frame played, or None
        self.running = None  # (state left, state entered, progress) of the transition drawn, or None
        self.transition_labels = []  # the condition text drawn over each link, as drawn last frame

    def menu_choices(self, text):
        """The add menu here adds states only."""
        return [STATE]

    def open_pin_menu(self, ref, kind, at):
        self.owner.status("drag from a state's 'out' pin to another state's 'in' pin to add a transition")

    def _graph_only(self, *args, **kwargs):
        self.owner.status("copy, paste and comment frames work on the graph's canvas", error=True)

    copy = paste = duplicate = comment_selected = _graph_only

    def rebuild(self):
        super().rebuild()
        self.link_index = {item: k for k, item in enumerate(self.links)}
        self.titles = {}

    def selected_transitions(self):
        """Indices of the transitions whose links are selected in the window."""
        return sorted(self.link_index[i] for i in dpg.get_selected_links(self.tag) if i in self.link_index)

    def delete_selected(self):
        """Delete the selected states (with their transitions) and transitions: one undo step."""
        ids = [sid for sid in self.selection() if sid != ANY]
        ks = self.selected_transitions()
        if not ids and not ks:
            return
        with self.doc.batch():
            if ks:
                self.act("remove_transitions", ks)
            for sid in ids:
                self.act("remove_node", sid)
        self.chosen = None
        self.owner.status(f"deleted {len(ids)} states, {len(ks)} transitions")

    def show_problems(self, problems, popping=None):
        """Titles: the active state green, the state a transition leaves amber, chosen ones blue (problems are the
        machine node's, shown in the status bar)."""
        now = self.live
        leaving = now.transition[0] if now is not None and now.transition else None
        chosen = self.chosen or set()
        for sid, item in self.nodes.items():
            colour = ACTIVE_TITLE if now is not None and sid == now.state else \
                LEAVING_TITLE if sid == leaving else CHOSEN_TITLE if sid in chosen else None
            if self.titles.get(sid, "unset") != colour:
                dpg.bind_item_theme(item, self._title_theme(colour) if colour else 0)
                self.titles[sid] = colour

    def highlighted(self):
        """The state whose title the window draws as active (read from the items' bound themes), or None."""
        theme = self._themes.get(("title", ACTIVE_TITLE))
        if theme is None:
            return None
        for sid, item in self.nodes.items():
            if dpg.get_item_info(item).get("theme") == theme:
                return sid
        return None

    def pin_points(self):
        """{(state, "in" or "out"): (x, y)}: where each state's pins are drawn on screen (its row's middle, on the
        node's frame)."""
        points = {}
        for attr, (sid, _, kind) in self.pins.items():
            node, rows = self.nodes.get(sid), dpg.get_item_children(attr, 1)
            if node is None or not rows:
                continue
            (x0, _), (x1, _) = dpg.get_item_rect_min(node), dpg.get_item_rect_max(node)
            (_, y0), (_, y1) = dpg.get_item_rect_min(rows[0]), dpg.get_item_rect_max(rows[0])
            if x1 <= x0:  # not drawn yet
                continue
            points[(sid, kind)] = (x0 - NODE_PADDING if kind == "in" else x1 + NODE_PADDING, (y0 + y1) / 2)
        return points

    def draw_transitions(self):
        """Each transition's direction and condition over its link: an arrowhead at the state it enters, the
        condition at the link's middle (where the node editor's curve passes); several between one pair share a
        line."""
        if self.owner.machine is None or not dpg.is_item_shown(self.tag):
            return
        points, shown = self.pin_points(), {}
        for t in self.owner.machine.transitions():
            a, b = points.get((t["from"], "out")), points.get((t["to"], "in"))
            if a is not None and b is not None:
                shown.setdefault((a, b), []).append(condition(t))
        for (a, b), words in shown.items():
            dpg.draw_triangle((b[0] - 1, b[1]), (b[0] - 11, b[1] - 5), (b[0] - 11, b[1] + 5), color=ARROW,
                              fill=ARROW, parent=self.overlay)
            # Above a link that runs forward (left to right), below one that runs back: a pair's two labels part.
            text = "; ".join(words)
            x, y = (a[0] + b[0]) / 2 - LABEL_CHAR * len(text) / 2, (a[1] + b[1]) / 2 + (-17 if b[0] > a[0] else 4)
            dpg.draw_rectangle((x - 2, y), (x + LABEL_CHAR * len(text) + 2, y + 14), color=LABEL_BACK, fill=LABEL_BACK,
                               parent=self.overlay)
            dpg.draw_text((x, y), text, color=ARROW, size=13, parent=self.overlay)
        self.transition_labels = ["; ".join(words) for words in shown.values()]

    def draw_live(self):
        """A running transition over its links: a bright line from the state left to the state entered, a dot at
        its progress and its percentage (on the front drawlist the comment frames use)."""
        self.running = None
        now = self.live
        if now is None or not now.transition or not dpg.is_item_shown(self.tag):
            return
        src, dst, progress = now.transition
        rects = self.rects(screen=True)
        if src not in rects or dst not in rects or rects[src][2] <= 0 or rects[dst][2] <= 0:
            return
        (sx, sy, sw, sh), (dx, dy, dw, dh) = rects[src], rects[dst]
        a, b = (sx + sw, sy + sh / 2), (dx, dy + dh / 2)
        at = (a[0] + (b[0] - a[0]) * progress, a[1] + (b[1] - a[1]) * progress)
        dpg.draw_line(a, b, color=(*RUNNING_LINK, 200), thickness=3, parent=self.overlay)
        dpg.draw_circle(at, 7, color=RUNNING_LINK, fill=RUNNING_LINK, parent=self.overlay)
        # The transition's name and a progress bar in the canvas's bottom-left corner (the minimap is bottom-right).
        (ox, oy), (_, h) = self.origin(), self.size()
        x, y = ox + 10, oy + h - 34
        dpg.draw_rectangle((x - 4, y - 4), (x + 236, y + 26), color=(60, 60, 60), fill=(20, 22, 26, 230),
                           parent=self.overlay)
        dpg.draw_text((x, y), f"{src} -> {dst}  {progress:.0%}", color=RUNNING_LINK, size=15, parent=self.overlay)
        dpg.draw_rectangle((x, y + 17), (x + 230 * progress, y + 22), color=RUNNING_LINK, fill=RUNNING_LINK,
                           parent=self.overlay)
        self.running = (src, dst, progress)


class MachineView:
    """The open state machine: its canvas, its details, its live state; ``editor.inner`` while open."""

    kind = "state machine"

    def __init__(self, editor):
        self.editor = editor
        self.canvas = MachineCanvas(self)
        self.machine = None  # MachineDoc while open
        self.selected = None  # ("state", name), ("transition", index) or None
        self._links_seen = ()

    @property
    def doc(self):
        return self.machine

    @property
    def node_id(self):
        return self.machine.node_id if self.machine is not None else None

    def build(self, parent, width, height):
        with dpg.group(parent=parent, tag="machine_pane", show=False):
            self.canvas.build("machine_pane", width, height)

    def open(self, node_id):
        """Show the machine ``node_id`` (EditError if it is not one)."""
        self.machine = MachineDoc(self.editor.doc, node_id)
        self.selected, self.canvas.live = None, None
        self.canvas.structure, self.canvas.chosen, self.canvas.view = None, None, (0.0, 0.0)
        dpg.configure_item("machine_pane", show=True)

    def close(self):
        dpg.configure_item("machine_pane", show=False)
        dpg.delete_item(self.canvas.overlay, children_only=True)
        self.machine = None

    def valid(self):
        """Whether the machine is still in the document (an undo may have removed it)."""
        try:
            self.machine.node()
        except EditError:
            return False
        return True

    # ------------------------------------------------------------ what the canvas calls

    def status(self, text, error=False):
        self.editor.status(text, error)

    def changed(self):
        self.editor.changed()

    def on_select(self, sid):
        self.select(("state", sid) if sid != ANY else None)

    def select(self, what):
        self.selected = what
        self.editor.graph_view.refresh_inspector()

    def act(self, what, *args):
        return self.canvas.act(what, *args)

    # ------------------------------------------------------------ per frame

    def sync(self):
        self.canvas.sync([])
        self._drop_stale()

    def _drop_stale(self):
        """Forget a selected state or transition an edit (an undo) has removed."""
        what = self.selected
        if what and (what[0] == "state" and what[1] not in self.machine.states() or
                     what[0] == "transition" and what[1] >= len(self.machine.transitions())):
            self.selected = None

    def poll(self):
        """The canvas's per-frame work, a selected transition followed, the live state read and drawn."""
        self.canvas.poll()
        links = tuple(self.canvas.selected_transitions())
        if links != self._links_seen:
            self._links_seen = links
            if len(links) == 1:
                self.select(("transition", links[0]))

    def link_text(self, at):
        """The transitions drawn under screen point ``at`` (one link may be several), one line each; or None."""
        pair = self.canvas.link_at(at)
        if pair is None:
            return None
        src, dst = (ref.partition(".")[0] for ref in pair)
        return "\n".join(describe(t) for t in self.machine.transitions() if (t["from"], t["to"]) == (src, dst))

    def show_live(self, player):
        """Read the machine from the preview's instance and show it (titles, the running transition)."""
        now = None
        if player is not None and self.node_id in player.plan.nodes:
            try:
                now = look.machine(player.inst, self.node_id)
            except (AnimgraphError, IndexError, KeyError):
                now = None
        self.canvas.live = now
        self.canvas.show_problems(self.editor.problems)
        self.canvas.draw_transitions()
        self.canvas.draw_live()

    # ------------------------------------------------------------ details

    def refresh_details(self, parent):
        """The machine's own fields, then the selected state's or transition's."""
        m, view = self.machine, self.editor.graph_view
        node = m.node()
        self._drop_stale()
        dpg.add_text(f"state machine {m.node_id!r}", parent=parent)
        dpg.add_text("right click: add a state; drag out -> in: add a transition; Del: delete", parent=parent,
                     wrap=240, color=(150, 150, 150))
        panel = fields.Panel(view, m.node_id)
        specs = {s.name: s for s in self.editor.doc.field_specs(m.node_id)}
        for name in ("start", "max_transitions_per_frame", "jump_duration"):
            panel.field(parent, specs[name], getattr(node, name))
        dpg.add_separator(parent=parent)
        what = self.selected
        if what is None:
            dpg.add_text("select a state or a transition", parent=parent, color=(150, 150, 150))
        elif what[0] == "state":
            self._state_details(parent, what[1], node)
        else:
            self._transition_details(parent, what[1], panel, specs["transitions"])

    def _state_details(self, parent, sid, node):
        state = next(s for s in node.states if s.name == sid)
        dpg.add_text(f"state {sid!r}" + (" (start)" if node.start == sid else ""), parent=parent)
        dpg.add_input_text(label="name", tag="machine_state_name", default_value=sid, on_enter=True, parent=parent,
                           width=150, callback=lambda s, a: self._rename(sid, a.strip()))
        dpg.add_checkbox(label="reset_on_enter", tag="machine_state_reset", default_value=state.reset_on_enter,
                         parent=parent, callback=lambda s, a: self.act("set_state_field", sid, "reset_on_enter",
                                                                       bool(a)))
        with dpg.group(horizontal=True, parent=parent):
            dpg.add_button(label="make start", tag="machine_state_start", callback=lambda: self.act("set_start", sid))
            dpg.add_button(label="delete state", tag="machine_state_delete",
                           callback=lambda: self.act("remove_node", sid))

    def _rename(self, sid, new):
        if self.act("rename", sid, new)[0]:
            self.selected = ("state", new)

    def _transition_details(self, parent, k, panel, spec):
        t = self.machine.transitions()[k]
        dpg.add_text(f"transition {k}: {t['from']} -> {t['to']}", parent=parent)

        def put(name):
            return lambda v: self.act("set_transition", k, name, None if v in ("", None) else v)

        for sub in spec.items:
            panel.widget(parent, ("transition", k, sub.name), sub, t.get(sub.name, sub.default), put(sub.name),
                         sub.name)
        dpg.add_button(label="delete transition", tag="machine_transition_delete", parent=parent,
                       callback=lambda: self.act("remove_transition", k))
