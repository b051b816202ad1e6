"""The preview's action buttons: each one-shot's ``fire`` and ``abort``, each state machine's ``travel`` targets.

A button acts through the graph input linked to the port (a one-shot fires on a rising
edge: the input is set true for one step, then false again; travel holds the target
state's index), so what the preview does is what a caller of ``Instance.step`` would do.
A port no graph input feeds gets a disabled button that says so.
"""

from __future__ import annotations

import dearpygui.dearpygui as dpg

GROUP = "actions"


def fed_by(plan, node_id, port):
    """The id of the graph input linked to ``node_id.port`` in ``plan``, or None."""
    for src, dst in plan.graph.links:
        if dst == f"{node_id}.{port}":
            nid = src.partition(".")[0]
            return nid if nid in plan.inputs else None
    return None


class Actions:
    """Buttons under the preview's inputs, rebuilt for each plan; ``after_step()`` ends the pulses of the last step."""

    def __init__(self, viewport):
        self.viewport = viewport
        self.pulses = set()  # bool inputs set true for one step
        self.buttons = {}  # (node id, what) -> button item

    def build(self, parent):
        dpg.add_text("Actions", parent=parent)
        dpg.add_group(tag=GROUP, parent=parent)

    def rebuild(self):
        dpg.delete_item(GROUP, children_only=True)
        self.buttons = {}
        player = self.viewport.player
        if player is None:
            return
        plan = player.plan
        for nid in plan.order:
            node = plan.nodes[nid]
            if node.type == "one_shot":
                with dpg.group(horizontal=True, parent=GROUP):
                    dpg.add_text(nid)
                    for port in ("fire", "abort"):
                        self._button(nid, port, port, fed_by(plan, nid, port), True)
            elif node.type == "state_machine":
                src = fed_by(plan, nid, "travel")
                if src is None:
                    dpg.add_text(f"{nid} travel: link an int input to {nid}.travel for its buttons", parent=GROUP,
                                 color=(150, 150, 150))
                    continue
                with dpg.group(horizontal=True, parent=GROUP):
                    dpg.add_text(f"{nid} travel:")
                    for k, state in enumerate(node.states):
                        self._button(nid, f"travel:{state.name}", state.name, src, k)
        if not self.buttons:
            dpg.add_text("(no one-shot or state machine)", parent=GROUP, color=(150, 150, 150))

    def _button(self, nid, what, label, src, value):
        item = dpg.add_button(label=label, tag=f"action:{nid}:{what}", small=True, enabled=src is not None,
                              user_data=(src, value), callback=lambda s, a, u: self.press(*u))
        with dpg.tooltip(item):
            port = what.partition(":")[0]
            dpg.add_text(f"sets input {src!r}" if src else f"link a graph input to {nid}.{port} to use this button")
        self.buttons[(nid, what)] = item

    def press(self, src, value):
        """A button: a bool input pulses true for one step; an int input (travel) holds the state's index."""
        player = self.viewport.player
        if player is None or src is None:
            return
        player.set_input(src, value)
        if value is True:
            self.pulses.add(src)
        self.viewport.editor.status(f"input {src!r} set to {value}" + (" for one step" if value is True else ""))

    def after_step(self):
        """Pulsed inputs go back to false once a step has seen them true."""
        player = self.viewport.player
        for src in self.pulses:
            if player is not None and src in player.plan.inputs:
                player.set_input(src, False)
        self.pulses.clear()
