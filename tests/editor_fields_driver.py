"""Drives the details panel through its widgets' callbacks, in a subprocess (dearpygui aborts without a display).

``python tests/editor_fields_driver.py MODE ARGS...`` prints what happened as one JSON line:

- ``fields GRAPH...``: in one window, for a new graph and each GRAPH, adds every registered
  node type from the palette, and sets each field of it through its widget to a different
  valid value (its choices, its range, the node's EXAMPLE), then to values out of its range;
- ``boundary GRAPH``: an exception injected into a widget's callback and into a frame;
- ``bad_values GRAPH BROKEN_BVH``: an out-of-range typed number, a BVH asset that does not read.

The candidate values and the ways to type them are this file's own: a new node type is covered
without editing it; a new widget kind fails here until it is taught how to type it.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import dearpygui.dearpygui as dpg

from animgraph.editor import fields
from animgraph.editor.app import Editor
from animgraph.editor.document import Document
from animgraph.graph import Graph
from animgraph.node import REGISTRY


DRAW_EVERY = 10  # edits between drawn frames: each edit runs a frame's work, a tenth of them are drawn too
done = [0]


def frames(editor, n=1):
    for _ in range(n):
        editor.frame()


def act(editor, item, value=None):
    """The user changes ``item`` (a tag) to ``value`` (or clicks it); then a frame runs (drawn now and then)."""
    assert dpg.does_item_exist(item), f"no widget {item}"
    editor.trigger(item, value)
    done[0] += 1
    editor.frame(draw=done[0] % DRAW_EVERY == 0)


def field_value(doc, nid, path):
    """The document's value at ``path`` (field, then item index and part for lists of models)."""
    value = fields.plain(getattr(doc.graph.node(nid), path[0]))
    for p in path[1:]:
        value = value[p]
    return value


def same(a, b):
    """Equal as the file holds them (numbers to 1e-9 relative)."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


# ---------------------------------------------------------------- values


def mirrored(joint, choices):
    """The other side's joint (left <-> right) if the skeleton has it, else the next joint."""
    name = str(joint)
    for a, b in (("left", "right"), ("right", "left")):
        if a in name and name.replace(a, b) in choices:
            return name.replace(a, b)
    if name in choices:
        return choices[(list(choices).index(name) + 1) % len(choices)]
    return choices[0] if choices else None


def inside(spec, x):
    return fields.in_range(spec, x)


def numbers(spec, integer):
    """In-range numbers: the middle, the quarter, the bounds, small ones."""
    lo = -1e3 if spec.low is None else spec.low
    hi = 1e3 if spec.high is None else spec.high
    xs = [(lo + hi) / 2, lo + (hi - lo) / 4, lo, hi, 0.5, 1.0, 2.0, 0.0]
    xs = [int(round(x)) if integer else x for x in xs]
    return [x for x in xs if inside(spec, x)]


def outside(spec):
    """Numbers out of the field's range: past each bound, and an open bound itself."""
    out = []
    if spec.low is not None:
        out += [spec.low - max(1.0, abs(spec.low))] + ([spec.low] if spec.low_open else [])
    if spec.high is not None:
        out += [spec.high + max(1.0, abs(spec.high))] + ([spec.high] if spec.high_open else [])
    return out


SIGNAL_VALUES = {"scalar": [0.75, -2.5], "int": [3, -7], "bool": [True, False], "vec3": [[1.0, 2.0, -3.0]],
                 "quat": [[0.0, 1.0, 0.0, 0.0]], "trajectory": [[0.0, 0.5, 0.0, 1.0, 0.0, 2.0, 0.0, 1.0, 1.0, 0.0,
                                                                  0.0, 1.0]], "pose": []}


def candidates(spec, current, example):
    """Different valid values of a field: from the EXAMPLE, its choices, its range (then none, if allowed)."""
    kind = spec.widget
    out = [example[spec.name]] if spec.name in example else []
    if kind == "bool":
        out.append(not current)
    elif kind in ("enum", "signal", "clip", "joint", "state", "state_or_any"):
        out += ([mirrored(current, spec.choices)] if kind == "joint" else []) + list(spec.choices)
        if not spec.choices and isinstance(current, str):  # a name without choices (a blend space's sync group)
            out += ["x", "y"]
    elif kind in ("float", "int"):
        out += numbers(spec, kind == "int")
    elif kind == "axis":
        n = len(current) if isinstance(current, list) else 3  # an axis, or a point of as many numbers (2-D)
        out += [v[:n] for v in ([0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.5, -0.5, 0.25])]
    elif kind == "joints":
        out.append([mirrored(j, spec.choices) for j in current])
    elif kind == "tags":
        out += [["walk"], ["run", "mirrored"]]
    elif kind == "text":
        out += ["x", "y"]  # two: a name may be taken by then (a state renamed "x")
    elif kind == "name":
        out += ["gait", None]  # typed empty: none
    elif kind == "value":
        out += SIGNAL_VALUES[spec.signal]
    elif kind != "branches":
        raise AssertionError(f"field {spec.name!r}: no values for widget kind {kind!r}")
    if spec.optional or kind == "value":
        out.append(None)
    return [v for v in out if not same(v, current)]


# ---------------------------------------------------------------- typing into widgets


def type_value(editor, path, spec, value):
    """Make the widget of ``spec`` at ``path`` say ``value``, as a user would."""
    t = fields.tag(*path)
    kind = spec.widget
    signal = spec.signal if kind == "value" else ""
    if kind == "bool" or signal == "bool":
        act(editor, t, bool(value))
    elif kind in ("enum", "signal", "clip", "joint", "state", "state_or_any") and not spec.choices:
        act(editor, t, json.dumps(value))  # no choices: the editor shows the field as its JSON text
    elif kind in ("enum", "signal", "clip", "joint", "state", "state_or_any"):
        act(editor, t, fields.NONE if value is None else str(value))
    elif kind in ("float", "int") or signal in ("scalar", "int"):
        if value is None:
            act(editor, fields.tag(*path, "set"), False)
        else:
            act(editor, t, value)
    elif kind == "axis" or signal in ("vec3", "quat"):
        if value is None:
            act(editor, fields.tag(*path, "set"), False)
        else:
            act(editor, t, list(value))
    elif kind == "joints":
        current = field_value(editor.doc, editor.graph_view.selected, path)
        for i, joint in enumerate(value):
            if current[i] != joint:
                act(editor, fields.tag(*path, i), joint)
    elif kind == "tags":
        act(editor, t, ", ".join(value))
    elif kind == "text":
        act(editor, t, value)
    elif kind == "name":
        act(editor, t, value or "")
    elif kind == "value":
        act(editor, t, json.dumps(value))
    else:
        raise AssertionError(f"field {spec.name!r}: no way to type widget kind {kind!r}")


def shown(path, spec, like=None):
    """The value the widget of ``spec`` at ``path`` shows (None: an unset nullable one); a vector as long as ``like``
    (a list) or the field's shape."""
    t = fields.tag(*path)
    if dpg.does_item_exist(fields.tag(*path, "set")) and not dpg.get_value(fields.tag(*path, "set")):
        return None
    value = dpg.get_value(t)
    if isinstance(value, list) and spec.widget in ("axis", "value"):
        return value[:len(like) if isinstance(like, list) else len(field_shape(spec))]
    if isinstance(value, str) and spec.widget == "value":
        return json.loads(value)
    if spec.widget == "name":
        return value or None  # empty: none
    return value


def ranged(spec):
    """Whether the field's widget takes numbers that have a range (a pose or bool value takes none)."""
    numeric = spec.widget in ("float", "int", "axis") or spec.signal not in ("", "pose", "bool")
    return numeric and (spec.low is not None or spec.high is not None)


def field_shape(spec):
    return [0] * (3 if spec.widget == "axis" else fields.VALUE_SIZE.get(spec.signal, 1))


# ---------------------------------------------------------------- the check


class Check:
    """Sets every field of the selected node; collects what failed as lines."""

    def __init__(self, editor, label, thorough):
        self.editor, self.label = editor, label
        self.thorough = thorough  # also the out-of-range values (the same widgets in every graph: once is enough)
        self.failures, self.set_ok, self.refused = [], 0, 0

    @property
    def doc(self):
        return self.editor.doc

    def problems(self):
        """The nodes the graph's problems are about (a new node's unlinked input is one before and after an edit).

        Validated as the editor's preview validates (``reuse_slots=False``), so the document's validation of
        this revision, cached, serves both: one plan per edit, not three."""
        return {p.node for p in self.doc.validate(reuse_slots=False).problems}

    def fail(self, nid, path, text):
        self.failures.append(f"{self.label} {nid} {'.'.join(map(str, path))}: {text}")

    def set_field(self, nid, path, spec, example):
        """True if a different valid value was accepted through the widget and the document holds it."""
        current = field_value(self.doc, nid, path)
        for value in candidates(spec, current, example):
            before, problems = self.doc.to_json(), self.problems()
            type_value(self.editor, path, spec, value)
            if self.doc.to_json() == before:
                continue  # refused (cross-field rules): the document is unchanged; try the next value
            held = field_value(self.doc, nid, path)
            if not same(held, value):
                self.fail(nid, path, f"typed {value!r}, the document holds {held!r}")
            if not self.problems() <= problems:
                self.fail(nid, path, f"{value!r} made the graph invalid: {self.problems() - problems}")
            Graph.from_dict(json.loads(self.doc.to_json()))  # the file it would save reads back
            if spec.widget in ("float", "int", "bool", "enum", "clip", "signal") and not same(shown(path, spec), held):
                self.fail(nid, path, f"the widget shows {shown(path, spec)!r}, the document {held!r}")
            self.set_ok += 1
            return True
        return False

    def out_of_range(self, nid, path, spec):
        """Each out-of-range number leaves the document unchanged, reverts the widget and names the range."""
        vector = spec.widget == "axis" or spec.signal in fields.VALUE_SIZE
        for bad in outside(spec):
            current = field_value(self.doc, nid, path)
            typed = ([bad] + list(current[1:]) if current else [bad] + [0.0] * (len(field_shape(spec)) - 1)) \
                if vector else bad
            before = self.doc.to_json()
            type_value(self.editor, path, spec, typed)
            status = dpg.get_value("status")
            if self.doc.to_json() != before:
                self.fail(nid, path, f"out-of-range {bad!r} changed the document")
            if not same(shown(path, spec, current), current):
                self.fail(nid, path, f"after {bad!r} the widget shows {shown(path, spec, current)!r}, not {current!r}")
            bounds = [f"{b:g}" for b in (spec.low, spec.high) if b is not None]
            if not all(b in status for b in bounds) or "\n" in status:
                self.fail(nid, path, f"after {bad!r} the status says {status!r}, not the range {bounds}")
            self.refused += 1

    def node(self, nid):
        """Every field of node ``nid`` (per signal kind for nodes with one); the names of fields never set."""
        cls = type(self.doc.graph.node(nid))
        example = getattr(cls, "EXAMPLE", {})
        specs = self.doc.field_specs(nid)
        signal = next((s for s in specs if s.widget == "signal"), None)
        states = [None] + ([c for c in signal.choices if c != getattr(self.doc.graph.node(nid), "signal")]
                           if signal else [])
        done = set()
        for state in states:
            if state is not None:
                type_value(self.editor, ("signal",), signal, state)
                if self.doc.graph.node(nid).signal != state:
                    continue  # a kind the node's other fields do not allow now
                done.add("signal")
            for spec in self.doc.field_specs(nid):
                if spec.widget == "signal":
                    continue
                if spec.widget == "branches":
                    done |= {spec.name} if self.branches(nid, spec) else set()
                    continue
                if self.set_field(nid, (spec.name,), spec, example):
                    done.add(spec.name)
                if self.thorough and ranged(spec):
                    self.out_of_range(nid, (spec.name,), self.spec_now(nid, spec.name))
        if signal is not None and "signal" not in done and self.set_field(nid, ("signal",), signal, example):
            done.add("signal")
        return [s.name for s in specs if s.name not in done]

    def spec_now(self, nid, name):
        return next(s for s in self.doc.field_specs(nid) if s.name == name)

    def branches(self, nid, spec):
        """A list of models: add an item, set each part of item 0 and its out-of-range numbers, remove the item."""
        path = (spec.name,)
        n = len(field_value(self.doc, nid, path))
        act(self.editor, fields.tag(spec.name, "add"))
        if len(field_value(self.doc, nid, path)) != n + 1:
            self.fail(nid, path, "'add' did not add an item")
            return False
        ok = True
        for name in [sub.name for sub in spec.items]:
            sub = next(s for s in self.spec_now(nid, spec.name).items if s.name == name)  # choices as shown now
            if not self.set_field(nid, (spec.name, 0, sub.name), sub, {}):
                self.fail(nid, (spec.name, 0, sub.name), "no other valid value was accepted")
                ok = False
            if self.thorough and ranged(sub):
                self.out_of_range(nid, (spec.name, 0, sub.name), sub)
        act(self.editor, fields.tag(spec.name, n, "remove"))
        if len(field_value(self.doc, nid, path)) != n:
            self.fail(nid, path, "'remove' did not remove the item")
            return False
        return ok


def reading_clips(editor):
    """The window as it is once its child process says the clip readers are compiled: clips are read, so
    joint and clip fields have their choices (this test is about the panel; test_editor_window's first-run
    test drives the child itself)."""
    editor.assets_ready = editor.doc.read_assets = True
    return editor


def fields_mode(*graphs):
    """Every node type added to a new graph and to each graph, every field set through its widget."""
    editor = Editor(Document.new())
    editor.build()
    reading_clips(editor)
    authored = sorted(t for t, cls in REGISTRY.items() if not cls.PLANNED)  # the palette's types
    result = {"graphs": [], "types": authored, "failures": [], "unset": {}, "set": 0, "refused": 0}
    for graph in [None, *graphs]:
        editor.set_document(Document.new() if graph is None else Document.open(graph), offer=False)
        frames(editor, 2)
        label = "new" if graph is None else Path(graph).stem
        check = Check(editor, label, thorough=graph is None)
        baseline = check.problems()
        if baseline:
            check.failures.append(f"{label}: invalid before any edit: {baseline}")
        act(editor, "asset_bundled", "run")  # a second clip, so a clip field has another choice
        act(editor, "asset_add_bundled")
        for node_type in authored:
            before = {n.id for n in editor.doc.graph.nodes}
            act(editor, f"palette_{node_type}")
            new = [n.id for n in editor.doc.graph.nodes if n.id not in before]
            if len(new) != 1 or editor.graph_view.selected != new[0]:
                check.failures.append(f"{label}: adding {node_type} from the palette: {new}, selected "
                                      f"{editor.graph_view.selected}")
                continue
            missing = [s.name for s in editor.doc.field_specs(new[0]) if not dpg.does_item_exist(fields.tag(s.name))]
            if missing:
                check.failures.append(f"{label} {new[0]}: no widget for {missing}")
            unset = check.node(new[0])
            if unset:
                result["unset"][f"{label}:{node_type}"] = unset
        result["graphs"].append(label)
        result["failures"] += check.failures
        result["set"] += check.set_ok
        result["refused"] += check.refused
    result["alive"] = dpg.is_dearpygui_running()
    editor.shutdown()
    print(json.dumps(result))


def boundary(graph):
    """An exception injected into a widget's callback, then into a frame: the editor survives both."""
    editor = Editor(Document.open(graph))
    editor.build()
    frames(editor, 2)
    nid = next(n.id for n in editor.doc.graph.nodes if any(s.widget == "float" and not s.optional
                                                             for s in editor.doc.field_specs(n.id)))
    editor.graph_view.select(nid)
    spec = next(s for s in editor.doc.field_specs(nid) if s.widget == "float" and not s.optional)
    value = next(x for x in numbers(spec, False) if not same(x, getattr(editor.doc.graph.node(nid), spec.name)))
    act(editor, fields.tag(spec.name), value)  # an unsaved edit
    result = {"edited": same(getattr(editor.doc.graph.node(nid), spec.name), value), "dirty": editor.doc.dirty}

    def boom(*args):
        raise RuntimeError("injected failure\nsecond line")

    real = editor.graph_view.set_field
    editor.graph_view.set_field = boom
    act(editor, fields.tag(spec.name), value + 0.125 if inside(spec, value + 0.125) else value / 2)
    editor.graph_view.set_field = real
    result["alive"] = dpg.is_dearpygui_running()
    result["status"] = dpg.get_value("status")
    result["dialog"] = dpg.is_item_shown("crash_box")
    act(editor, "crash_copy")
    frames(editor, 2)
    result["clipboard"] = dpg.get_clipboard_text()
    from animgraph.editor import files

    auto = files.autosave_path(editor.doc.path)
    result["autosave"] = str(auto)
    result["autosave_value"] = getattr(Graph.load(auto).node(nid), spec.name) if auto.is_file() else None
    result["value"] = value
    # A frame that raises: caught too, and the next frames draw.
    real_draw = editor.view.draw
    editor.view.draw = boom
    dpg.set_value("status", "")
    frames(editor, 1)
    result["frame_status"] = dpg.get_value("status")
    editor.view.draw = real_draw
    frames(editor, 3)
    after = value / 2 if inside(spec, value / 2) else value * 0.75
    act(editor, fields.tag(spec.name), after)  # and edits still work
    result["edit_after"] = same(getattr(editor.doc.graph.node(nid), spec.name), after)
    result["alive_after"] = dpg.is_dearpygui_running()
    editor.shutdown()
    print(json.dumps(result))


def bad_values(graph, broken):
    """An out-of-range number typed into a field, a BVH asset that does not read, a BVH asset that does."""
    from animgraph import data

    editor = Editor(Document.open(graph))
    editor.build()
    frames(editor, 2)
    nid, spec = next((n.id, s) for n in editor.doc.graph.nodes for s in editor.doc.field_specs(n.id)
                     if s.widget == "float" and s.high is not None and s.high <= 1e3 and not s.optional)
    editor.graph_view.select(nid)
    frames(editor)
    before, value = editor.doc.to_json(), getattr(editor.doc.graph.node(nid), spec.name)
    act(editor, fields.tag(spec.name), spec.high + 1.0)
    result = {"node": nid, "field": spec.name, "low": spec.low, "high": spec.high, "typed": spec.high + 1.0,
              "unchanged": editor.doc.to_json() == before, "widget": dpg.get_value(fields.tag(spec.name)),
              "value": value, "status": dpg.get_value("status")}
    assets = dict(editor.doc.graph.assets)
    before = editor.doc.to_json()
    act(editor, "bvh_dialog", {"file_path_name": str(broken)})
    result["bvh_unchanged"] = editor.doc.to_json() == before and dict(editor.doc.graph.assets) == assets
    result["bvh_status"] = dpg.get_value("status")
    act(editor, "bvh_dialog", {"file_path_name": str(data.path("walk"))})
    result["good_bvh_added"] = len(editor.doc.graph.assets) == len(assets) + 1
    result["alive"] = dpg.is_dearpygui_running()
    editor.shutdown()
    print(json.dumps(result))


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"fields": fields_mode, "boundary": boundary, "bad_values": bad_values}[mode](*args)
