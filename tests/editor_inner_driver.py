"""Drives the editor window into a state machine (and a blend space), through its callbacks, in a subprocess.

``python tests/editor_inner_driver.py MODE ARGS...`` runs one scenario and prints one JSON line:
``build OUT_DIR``: a 3-state machine built from nothing, saved; ``live GRAPH OUT_DIR``: graphs/states.json
played, its speed changed, the highlighted state read from the window; see the functions.
Where dearpygui reads the mouse (a click on a link, a drag, a hover) the real X pointer is moved (XTest); a double
click is the pointer moved there and the window's double-click handler called.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import dearpygui.dearpygui as dpg

from animgraph.editor.document import Document
from animgraph.editor.fields import tag
from editor_driver import Pointer, call, frames, pins, shot, started, undo_steps


def title(canvas, nid):
    """Screen point in a node's title bar (a tall node's middle may lie under the preview row)."""
    x, y, w, h = canvas.rects(screen=True)[nid]
    return x + w / 2, y + 10


def double_click(editor, pointer, at):
    """The real pointer moved to screen point ``at`` and the window's double-click handler called (two real clicks
    fall inside imgui's 0.3 s only while frames are quick: not on a loaded machine)."""
    pointer.move(*at)
    frames(editor, 3)
    editor._on_double_click()
    frames(editor, 3)


def click(editor, pointer, at):
    pointer.move(*at)
    frames(editor, 2)
    pointer.button(1, True)
    frames(editor, 2)
    pointer.button(1, False)
    frames(editor, 3)


def pin_point(canvas, ref, kind):
    """Screen point of a pin's circle: the node's edge at the pin's text line."""
    attr = next(a for a, v in canvas.pins.items() if (f"{v[0]}.{v[1]}", v[2]) == (ref, kind))
    line = dpg.get_item_children(attr, 1)[0]
    (x, y), (w, h) = dpg.get_item_rect_min(line), dpg.get_item_rect_size(line)
    nx, _, nw, _ = canvas.rects(screen=True)[ref.partition(".")[0]]
    return (nx + nw if kind == "out" else nx), y + h / 2


def empty_spot(canvas):
    """A screen point on the canvas clear of every node, away from the minimap."""
    (ox, oy), (w, h) = canvas.origin(), canvas.size()
    boxes = canvas.rects(screen=True).values()
    for j in range(8):
        for i in range(12):
            p = (ox + 60 + 90 * i, oy + 40 + 60 * j)
            if p[0] < ox + w - 260 and all(not (x - 40 < p[0] < x + bw + 40 and y - 40 < p[1] < y + bh + 40)
                                           for x, y, bw, bh in boxes):
                return p
    return ox + 40, oy + h - 40


def add_state(editor, canvas, name):
    """Right click on empty canvas, pick 'state' in the add menu; rename it in the details panel."""
    canvas.on_right_click(empty_spot(canvas))
    call(canvas.menu_list, "state")
    frames(editor, 2)
    call("machine_state_name", name)
    frames(editor, 2)


def build(out):
    """A 3-state machine built from nothing in the window; saved through the Save As dialog's callback."""
    out = Path(out)
    editor = started(Document.new())
    pointer = Pointer()
    frames(editor, 3)
    graph, view, r = editor.canvas, editor.machine_view, {}
    # The graph: assets, a state machine and a speed input from the add menu, the clips' samples.
    for clip in ("run", "walk_stop"):
        dpg.set_value("asset_bundled", clip)
        call("asset_add_bundled")
        frames(editor, 1)
    graph.on_right_click(empty_spot(graph))
    call(graph.menu_list, "state_machine")
    frames(editor, 3)
    graph.on_right_click(empty_spot(graph))
    call(graph.menu_list, "input")
    frames(editor, 3)
    for clip in ("run", "walk_stop"):
        nid = editor.graph_view.add_node("sample")
        frames(editor, 2)
        call(tag("clip"), clip)
        frames(editor, 2)
        r.setdefault("samples", []).append(nid)
    # Double click the machine: its canvas opens (breadcrumb shown, the graph's canvas hidden).
    double_click(editor, pointer, title(graph, "state_machine"))
    canvas = view.canvas
    r["opened"] = [editor.inner is view, dpg.is_item_shown("breadcrumb"), not dpg.is_item_shown("graph_pane"),
                   dpg.get_value("crumb_here"), sorted(canvas.nodes)]
    # From nothing: the example's states b and c and its last transition go (Del; the link's delink callback).
    canvas.select(["b", "c"])
    r["delete_steps"] = undo_steps(editor.doc, lambda: canvas.key(dpg.mvKey_Delete))  # Del over the canvas
    frames(editor, 2)
    link = next(k for k, v in canvas.links.items() if v == ("any.out", "a.in"))
    canvas.on_delink("node_editor", link)
    frames(editor, 2)
    r["emptied"] = [sorted(canvas.nodes), len(canvas.links), [p.name for p in editor.doc.ports("state_machine")[0]
                                                             if p.signal == "pose"]]
    canvas.select(["a"])
    frames(editor, 2)
    call("machine_state_name", "idle")
    frames(editor, 2)
    add_state(editor, canvas, "walk")
    # Ctrl+Z and Ctrl+Y with the machine open: the canvas follows the graph's history.
    editor.shortcut(dpg.mvKey_Z, ctrl=True)
    frames(editor, 2)
    undone = sorted(canvas.nodes)
    editor.shortcut(dpg.mvKey_Y, ctrl=True)
    frames(editor, 2)
    r["undo_redo"] = [undone, sorted(canvas.nodes)]
    add_state(editor, canvas, "run")
    r["states"] = sorted(canvas.nodes)
    r["titles"] = {sid: dpg.get_item_label(item) for sid, item in canvas.nodes.items()}
    r["pose_pins"] = [p.name for p in editor.doc.ports("state_machine")[0] if p.signal == "pose"]
    # Transitions: drag out -> in (the link callback); each selected by a real click on its link, set in the panel.
    conditions = [("idle", "walk", {"when": "speed", "above": 0.5, "duration": 0.3}),
                  ("walk", "run", {"when": "speed", "above": 2.0, "blend": "crossfade"}),
                  ("any", "idle", {"when": "speed", "below": 0.2, "priority": -1})]
    r["picked"] = []
    for k, (a, b, values) in enumerate(conditions):
        canvas.on_link("node_editor", pins(canvas, f"{a}.out", f"{b}.in"))
        frames(editor, 3)
        p, q = pin_point(canvas, f"{a}.out", "out"), pin_point(canvas, f"{b}.in", "in")
        click(editor, pointer, ((p[0] + q[0]) / 2, (p[1] + q[1]) / 2))  # a bezier with flat ends: its middle
        r["picked"].append(view.selected)
        for name, value in values.items():
            call(tag("transition", k, name), value)
            frames(editor, 2)
    r["transitions"] = [t for t in view.machine.transitions()]
    p, q = pin_point(canvas, "walk.out", "out"), pin_point(canvas, "run.in", "in")
    pointer.move((p[0] + q[0]) / 2, (p[1] + q[1]) / 2)  # hover: the tip says what the transition does
    frames(editor, 3)
    r["tip"] = [dpg.is_item_shown("link_tip"), dpg.get_value("link_tip_text")]
    r["links_drawn"] = sorted(canvas.links.values())
    shot(out / "machine.png")
    # Back to the graph: the machine's pins follow its states; link the input and the clips.
    call("crumb_graph")
    frames(editor, 3)
    r["back"] = [editor.inner is None, dpg.is_item_shown("graph_pane"), not dpg.is_item_shown("breadcrumb")]
    run, stop = r["samples"]
    for src, dst in (("input.value", "state_machine.speed"), (f"{stop}.pose", "state_machine.idle"),
                     ("walk.pose", "state_machine.walk"), (f"{run}.pose", "state_machine.run"),
                     ("state_machine.pose", "out.pose")):
        graph.on_link("node_editor", pins(graph, src, dst))
        frames(editor, 2)
    r["problems"] = [p.text for p in editor.problems]
    editor._on_save_as("save_dialog", {"file_path_name": str(out / "machine.json")})
    frames(editor, 2)
    r["saved"] = [str(editor.doc.path), editor.doc.dirty]
    editor.shutdown()
    print(json.dumps(r))


def live(graph, out):
    """graphs/states.json playing with its machine open: speed up through the input's slider; the state the window
    highlights and the transition it draws, frame by frame."""
    out = Path(out)
    editor = started(Document.open(graph))
    pointer = Pointer()
    frames(editor, 3)
    double_click(editor, pointer, title(editor.canvas, "loco"))
    view, canvas, r = editor.machine_view, editor.machine_view.canvas, {}
    r["opened"] = editor.inner is view
    call("play_button")  # pause: the frames below are stepped one by one
    frames(editor, 2)
    r["before"] = canvas.highlighted()
    dpg.set_value(editor.view.input_items["speed"], 1.2)  # the slider dragged to 1.2
    call(editor.view.input_items["speed"], 1.2)
    seen, shots = [], 0
    for _ in range(40):
        call("step_button")
        frames(editor, 1)
        seen.append([editor.player.frame, canvas.highlighted(), canvas.running and list(canvas.running)])
        if canvas.running and canvas.running[2] > 0.4 and not shots:
            shot(out / "machine_live.png")
            shots += 1
    r["seen"] = seen
    r["labels"] = sorted(canvas.transition_labels)  # each link's condition, as drawn over it
    x, y, w, h = canvas.rects(screen=True)["walking"]
    r["walking_in"] = [*canvas.pin_points()[("walking", "in")], x, y, h]
    editor.shutdown()
    print(json.dumps(r))


def drag(editor, pointer, path):
    """A real left drag along ``path`` (screen points), a few frames at each."""
    pointer.move(*path[0])
    frames(editor, 3)
    pointer.button(1, True)
    frames(editor, 3)
    for p in path[1:]:
        pointer.move(*p)
        frames(editor, 3)
    pointer.button(1, False)
    frames(editor, 3)


def blend_space(graph, out):
    """graphs/blend_space.json with its 1-D space open while speed rises (weights and point read as drawn), an entry
    dragged and undone; then a 2-D space's entry dragged and undone."""
    out = Path(out)
    editor = started(Document.open(graph))
    pointer = Pointer()
    frames(editor, 3)
    double_click(editor, pointer, title(editor.canvas, "gait"))
    view, r = editor.space_view, {}
    r["opened"] = [editor.inner is view, dpg.get_value("crumb_here"), dpg.is_item_shown("space_pane")]
    call("play_button")
    r["live"], now = [], 1.65
    for speed in (1.65, 2.2, 2.66, 3.3, 3.94):  # the slider moved there over 10 frames (no jump: no pop)
        for k in range(1, 11):
            value = round(now + (speed - now) * k / 10, 4)
            dpg.set_value(editor.view.input_items["speed"], value)
            call(editor.view.input_items["speed"], value)
            call("step_button")
            frames(editor, 1)
        now = speed
        r["live"].append([view.live.point[0], view.live.weights])
        if speed == 3.3:
            shot(out / "space_live.png")
    r["pops"] = [p.node for p in editor.player.pops]
    heights = [view.size[1]]
    for _ in range(2):  # Ctrl+Space: the plot takes the preview row's height too; again: gives it back
        editor.shortcut(dpg.mvKey_Spacebar, ctrl=True)
        frames(editor, 3)
        heights.append(view.size[1])
    r["plot_heights"] = heights
    before = editor.doc.to_json()
    a = view.screen_of("jog")
    r["grabbed"] = view.entry_at(a)
    b = view.frame.to_screen((3.0, 0.0))
    r["drag_steps"] = undo_steps(editor.doc, lambda: drag(editor, pointer, [a, ((a[0] + b[0]) / 2, a[1]), b]))
    r["moved"] = [e.at for e in editor.doc.graph.node("gait").entries]
    editor.shortcut(dpg.mvKey_Z, ctrl=True)
    frames(editor, 2)
    r["undone"] = editor.doc.to_json() == before
    call("crumb_graph")
    frames(editor, 2)
    # A 2-D space (the node's example, its parameter unlinked: its field is the point).
    editor.canvas.on_right_click(empty_spot(editor.canvas))
    call(editor.canvas.menu_list, "blend_space_2d")
    frames(editor, 3)
    double_click(editor, pointer, title(editor.canvas, "blend_space_2d"))
    r["opened_2d"] = editor.inner is view and view.node_id == "blend_space_2d"
    before = editor.doc.to_json()
    a = view.screen_of("forward")
    b = view.frame.to_screen((0.5, 1.5))
    r["drag_steps_2d"] = undo_steps(editor.doc, lambda: drag(editor, pointer, [a, b]))
    r["moved_2d"] = [list(e.at) for e in editor.doc.graph.node("blend_space_2d").entries]
    shot(out / "space_2d.png")
    editor.shortcut(dpg.mvKey_Z, ctrl=True)
    frames(editor, 2)
    r["undone_2d"] = editor.doc.to_json() == before
    editor.shortcut(dpg.mvKey_Z, ctrl=True)  # the 2-D node's addition: the open view goes, back to the graph
    frames(editor, 3)
    r["closed_by_undo"] = [editor.inner is None, dpg.is_item_shown("graph_pane"), dpg.is_item_shown("crash_box")]
    editor.shutdown()
    print(json.dumps(r))


def actions(graph, out):
    """states.json with an int input linked to the machine's travel: the one-shot fired from its preview button (the
    shot plays, the input pulses back), the travel buttons walk the machine to a state."""
    from animgraph import inspect as look

    data = json.loads(Path(graph).read_text())
    data["nodes"].append({"id": "go", "type": "input", "signal": "int", "default": -1, "min": -1, "max": 5})
    data["links"].append(["go.value", "loco.travel"])
    path = Path(out) / "travel.json"
    path.write_text(json.dumps(data))
    editor = started(Document.open(path))
    frames(editor, 3)
    call("play_button")
    frames(editor, 2)
    r = {"buttons": sorted("|".join(k) for k in editor.view.actions.buttons),
         "abort_enabled": dpg.get_item_configuration("action:wave_shot:abort")["enabled"],
         "fire_enabled": dpg.get_item_configuration("action:wave_shot:fire")["enabled"]}
    inst = lambda: editor.player.inst  # noqa: E731 (the player makes a new instance on a reset)
    r["before"] = look.output(inst(), "wave_shot", "active")
    call("action:wave_shot:fire")
    frames(editor, 1)
    r["fire"] = []
    for _ in range(30):
        call("step_button")
        frames(editor, 1)
        r["fire"].append([look.output(inst(), "wave_shot", "active"), look.output(inst(), "wave_shot", "weight"),
                          bool(editor.player.inputs.get("wave"))])
    r["travel"] = []
    call("action:loco:travel:running")
    for _ in range(90):
        call("step_button")
        frames(editor, 1)
        r["travel"].append(look.machine(inst(), "loco").state)
    editor.shutdown()
    print(json.dumps(r))


def marks(graph, out):
    """graphs/states.json on the graph's canvas while playing: skipped nodes dimmed, the machine's input links by
    weight, event ticks and the list of the last events, a link's live value under the real pointer."""
    out = Path(out)
    editor = started(Document.open(graph))
    pointer = Pointer()
    call("play_button")
    frames(editor, 2)
    dpg.set_value(editor.view.input_items["speed"], 1.2)
    call(editor.view.input_items["speed"], 1.2)
    for _ in range(60):  # idle -> walking: the walk's clip and its foot plants
        call("step_button")
        frames(editor, 1)
    canvas, r = editor.canvas, {}
    dim = canvas._themes.get("dim")
    r["dimmed"] = sorted(nid for nid, item in canvas.nodes.items() if dpg.get_item_info(item).get("theme") == dim)
    levels = {v: k for k, v in canvas._themes.items() if isinstance(k, tuple) and k[0] == "weight"}
    r["link_weights"] = {dst: levels[dpg.get_item_info(link).get("theme")][1] for link, (_, dst) in canvas.links.items()
                         if dpg.get_item_info(link).get("theme") in levels}
    r["event_ticks"] = editor.view.event_ticks
    r["event_list"] = dpg.get_value("event_list")
    # Hover: the middle of a link clear of the nodes (a symmetric bezier's middle is its ends' middle).
    rects = canvas.rects(screen=True).values()
    (ox, oy), (w, h) = canvas.origin(), canvas.size()
    r["hovered"] = []
    for want in (("speed.value", "loco.speed"), ("idle.pose", "loco.idle"), ("loco.state", "state.value"),
                 ("walk_right_lock.pose", "loco.walking"), ("loco.pose", "wave_shot.base"), ("wave.value",
                                                                                          "wave_shot.fire")):
        a = canvas.pin_point(*want[0].split("."), "out")
        b = canvas.pin_point(*want[1].split("."), "in")
        if a is None or b is None:
            continue
        mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
        if not (ox < mid[0] < ox + w and oy < mid[1] < oy + h) or any(
                x <= mid[0] < x + bw and y <= mid[1] < y + bh for x, y, bw, bh in rects):
            continue
        pointer.move(*mid)
        frames(editor, 3)
        r["hovered"].append([list(want), dpg.is_item_shown("link_tip"), dpg.get_value("link_tip_text")])
    pointer.move(ox + w - 30, oy + 30)
    frames(editor, 3)
    r["tip_after"] = dpg.is_item_shown("link_tip")
    shot(out / "marks.png")
    editor.shutdown()
    print(json.dumps(r))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    {"build": build, "live": live, "space": blend_space, "actions": actions, "marks": marks}[sys.argv[1]](*sys.argv[2:])
