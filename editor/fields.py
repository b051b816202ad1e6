"""The details panel's widgets: one per field kind (``palette.WIDGETS``), reading and writing through the document.

Every widget writes with ``GraphView.set_field`` (one ``Document.set_field``).  A number outside
its field's range is refused before it reaches the document, with the range in the status bar;
a value the document refuses is refused with the document's reason; either way the panel is
rebuilt from the document, so a widget never shows a value the document does not hold.
Widgets are tagged ``field:NAME`` (list items ``field:NAME:I``, their parts
``field:NAME:I:PART``, a nullable number's switch ``field:NAME:set``) so tests drive them as a
user would, through their callbacks.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import dearpygui.dearpygui as dpg
from pydantic import BaseModel

NONE = "(none)"  # a nullable choice's empty entry
WIDTH = 150  # pixels of one widget; a vector's row is as wide
VALUE_SIZE = {"vec3": 3, "quat": 4}  # value widgets shown as a row of numbers


def tag(*parts):
    """The alias of a field's widget: ``field:NAME[:I[:PART]]``."""
    return "field:" + ":".join(str(p) for p in parts)


def plain(value):
    """A field value as the file holds it: models as dicts, tuples as lists."""
    if isinstance(value, BaseModel):
        return {k: plain(v) for k, v in value.model_dump().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def range_text(spec):
    """The accepted range of a numeric field, e.g. '[0, 1]' or '(0, 60]'."""
    low = "-inf" if spec.low is None else f"{spec.low:g}"
    high = "inf" if spec.high is None else f"{spec.high:g}"
    return f"{'(' if spec.low_open else '['}{low}, {high}{')' if spec.high_open else ']'}"


def in_range(spec, number):
    """Whether ``number`` is finite and within the field's bounds (open bounds excluded)."""
    x = float(number)
    if not math.isfinite(x):
        return False
    if spec.low is not None and (x < spec.low or (spec.low_open and x == spec.low)):
        return False
    return not (spec.high is not None and (x > spec.high or (spec.high_open and x == spec.high)))


def placeholder(spec, integer=False):
    """A number in range shown by an unset nullable number (0, else 1, else a bound)."""
    for x in (0.0, 1.0, spec.low, spec.high):
        if x is not None and in_range(spec, x):
            return int(x) if integer else float(x)
    return 0 if integer else 0.0


class Panel:
    """Builds the widgets of one node's fields; ``view`` is the GraphView, ``nid`` the node id."""

    def __init__(self, view, nid):
        self.view, self.nid = view, nid

    def field(self, parent, spec, value):
        """The widget(s) of one top-level field."""
        name = spec.name

        def put(v):
            self.view.set_field(self.nid, name, v)

        item = self.widget(parent, (name,), spec, plain(value), put, name)
        if spec.doc and item is not None:
            with dpg.tooltip(item):
                dpg.add_text(spec.doc, wrap=320)

    def refuse(self, label, why):
        self.view.refuse(f"node {self.nid!r} field {label!r}: {why}")

    # ------------------------------------------------------------ by kind

    def widget(self, parent, path, spec, value, put, label):
        """One widget for ``spec`` at tag ``field:path``; ``put(value)`` writes the whole field."""
        kind = spec.widget
        t = tag(*path)
        if kind == "value":
            return self.value(parent, path, spec, value, put, label)
        if kind == "bool":
            return dpg.add_checkbox(label=label, parent=parent, tag=t, default_value=bool(value),
                                    callback=lambda s, a: put(bool(a)))
        if kind in ("enum", "joint", "clip", "signal", "state", "state_or_any") and spec.choices:
            return self.choice(parent, t, spec, value, put, label)
        if kind in ("float", "int"):
            return self.number(parent, path, spec, value, put, label, kind == "int")
        if kind == "axis" and isinstance(value, list):
            return self.vector(parent, t, spec, value, put, label)
        if kind == "joints" and isinstance(value, list):
            return self.joints(parent, path, spec, value, put, label)
        if kind == "branches" and isinstance(value, list):
            return self.branches(parent, path, spec, value, put, label)
        if kind == "tags":
            return dpg.add_input_text(label=label, parent=parent, tag=t, width=WIDTH, on_enter=True,
                                      default_value=", ".join(value or ()), hint="words, comma separated",
                                      callback=lambda s, a: put([w.strip() for w in a.split(",") if w.strip()]))
        if kind == "name":
            return dpg.add_input_text(label=label, parent=parent, tag=t, width=WIDTH, on_enter=True,
                                      default_value=value or "", hint="a name, or empty for none",
                                      callback=lambda s, a: put(a.strip() or None))
        if kind == "text" and (isinstance(value, str) or value is None):
            return dpg.add_input_text(label=label, parent=parent, tag=t, width=WIDTH, on_enter=True,
                                      default_value=value or "", callback=lambda s, a: put(a))
        return self.json_text(parent, t, value, put, label)  # anything else: the JSON the file holds

    def choice(self, parent, t, spec, value, put, label):
        choices = list(spec.choices) + ([NONE] if spec.optional else [])
        if value is None:
            current = NONE
        elif spec.widget == "joint" and isinstance(value, int) and 0 <= value < len(spec.choices):
            current = spec.choices[value]  # a joint given by index shows its name
        else:
            current = str(value)
        return dpg.add_combo(choices, label=label, parent=parent, tag=t, width=WIDTH, default_value=current,
                             callback=lambda s, a: put(None if a == NONE else a))

    def number(self, parent, path, spec, value, put, label, integer):
        """A typed number (double precision: what is typed is what the file holds); nullable: with a 'set' box."""
        t = tag(*path)

        def typed(a):
            if not in_range(spec, a):
                self.refuse(label, f"{a:g} is outside {range_text(spec)}")
                return
            put(int(a) if integer else float(a))

        kw = dict(label=label, tag=t, width=WIDTH - (25 if spec.optional else 0), on_enter=True,
                  callback=lambda s, a: typed(a))
        shown = placeholder(spec, integer) if value is None else value
        with dpg.group(horizontal=True, parent=parent) as row:
            if spec.optional:
                dpg.add_checkbox(tag=tag(*path, "set"), default_value=value is not None,
                                 callback=lambda s, a: typed(dpg.get_value(t)) if a else put(None))
            if integer:
                dpg.add_input_int(default_value=int(shown), **kw)
            else:
                dpg.add_input_double(default_value=float(shown), format="%.6g", **kw)
        return row

    def vector(self, parent, t, spec, value, put, label):
        n = len(value)

        def typed(a):
            a = [float(x) for x in a[:n]]
            if not all(in_range(spec, x) for x in a):
                self.refuse(label, f"each component is within {range_text(spec)}, got {a}")
                return
            put(a)

        return dpg.add_input_doublex(label=label, parent=parent, tag=t, size=n, width=WIDTH, format="%.4g",
                                     default_value=list(value), on_enter=True, callback=lambda s, a: typed(a))

    def joints(self, parent, path, spec, value, put, label):
        """One joint list: a combo per entry, '+' repeats the last entry, '-' drops it."""
        def at(i):
            return lambda s, a: put(value[:i] + [a] + value[i + 1:])

        with dpg.group(parent=parent, tag=tag(*path)) as box:
            dpg.add_text(label)
            for i, joint in enumerate(value):
                shown = spec.choices[joint] if isinstance(joint, int) and 0 <= joint < len(spec.choices) else joint
                dpg.add_combo(list(spec.choices), tag=tag(*path, i), width=WIDTH, default_value=str(shown),
                              callback=at(i))
            with dpg.group(horizontal=True):
                dpg.add_button(label="+", tag=tag(*path, "add"), callback=lambda: put(
                    value + value[-1:] if value else list(spec.choices[:1])))
                dpg.add_button(label="-", tag=tag(*path, "remove"), callback=lambda: put(value[:-1]))
        return box

    def branches(self, parent, path, spec, value, put, label):
        """A list of models (e.g. a layered blend's branches): each item's fields, a remove button, an add button."""
        def part(i, name):
            return lambda v: put([item | {name: v} if k == i else item for k, item in enumerate(value)])

        def remove(i):
            return lambda: put([item for k, item in enumerate(value) if k != i])

        with dpg.group(parent=parent, tag=tag(*path)) as box:
            dpg.add_text(label)
            for i, item in enumerate(value):
                with dpg.group(indent=10) as row:
                    for sub in spec.items:
                        shown = item.get(sub.name, sub.default)
                        self.widget(row, (*path, i, sub.name), sub, shown, part(i, sub.name),
                                    f"{label}[{i}].{sub.name}")
                    dpg.add_button(label=f"remove {i}", tag=tag(*path, i, "remove"), small=True, callback=remove(i))
            new = dict(value[-1]) if value else {s.name: s.default if s.default is not None else
                                                 (s.choices[0] if s.choices else None) for s in spec.items}
            if value and spec.follow is not None:  # items that must differ by more than a name (a blend space's)
                new = spec.follow(value)
            if isinstance(new.get("name"), str):  # named items (a machine's states) need a name of their own
                taken, base, k = {item.get("name") for item in value}, new["name"].rstrip("0123456789") or "item", 2
                while f"{base}{k}" in taken:
                    k += 1
                new["name"] = f"{base}{k}"
            dpg.add_button(label="add", tag=tag(*path, "add"), small=True, callback=lambda: put(value + [new]))
        return box

    def value(self, parent, path, spec, value, put, label):
        """A signal value: its widget follows the node's signal kind (none: zero, identity or at rest)."""
        kind = spec.signal
        t = tag(*path)
        if kind in ("scalar", "int"):
            return self.number(parent, path, replace(spec, optional=True), value, put, label, kind == "int")
        if kind == "bool":
            return dpg.add_checkbox(label=label, parent=parent, tag=t, default_value=bool(value),
                                    callback=lambda s, a: put(bool(a)))
        if kind in VALUE_SIZE:
            n = VALUE_SIZE[kind]
            shown = value if isinstance(value, list) and len(value) == n else [0.0] * n
            with dpg.group(horizontal=True, parent=parent) as row:
                dpg.add_checkbox(tag=tag(*path, "set"), default_value=value is not None,
                                 callback=lambda s, a: self.vector_set(label, spec, n, t, put) if a else put(None))
                self.vector(row, t, spec, shown, put, label)
            return row
        if kind == "pose":
            return dpg.add_text(f"{label}: none (a pose constant takes clip and frame)", parent=parent, tag=t)
        return self.json_text(parent, t, value, put, label, spec)

    def vector_set(self, label, spec, n, t, put):
        a = [float(x) for x in dpg.get_value(t)[:n]]
        if any(a):
            put(a)
        else:
            self.refuse(label, "type the value's numbers first")

    def json_text(self, parent, t, value, put, label, spec=None):
        def typed(text):
            try:
                value = json.loads(text)
            except ValueError:
                self.refuse(label, f"not JSON: {text!r}")
                return
            if spec is not None and spec.widget == "value" and not all(in_range(spec, x) for x in _numbers(value)):
                self.refuse(label, f"each number is within {range_text(spec)}, got {text}")
                return
            put(value)

        return dpg.add_input_text(label=label, parent=parent, tag=t, width=WIDTH, on_enter=True,
                                  default_value=json.dumps(value), callback=lambda s, a: typed(a))


def _numbers(value):
    """The numbers in a JSON value (booleans are not numbers here)."""
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []
