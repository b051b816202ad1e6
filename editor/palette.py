"""The node palette and parameter widgets, generated from the node registry (no dearpygui here).

Everything comes from ``animgraph.node.REGISTRY``: a node type added as one file in
``nodes/`` appears in its ``CATEGORY`` with widgets read from its pydantic model
(``FIELD_KINDS`` first, else the field's annotation) and bounds from its ``ge``/``gt``/
``le``/``lt`` constraints.
"""

from __future__ import annotations

import colorsys
import types
import typing
from dataclasses import dataclass
from typing import Literal, Union

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

import animgraph.nodes  # noqa: F401  (registers the node types)
from animgraph.limits import Axis, JointName
from animgraph.node import CATEGORIES, REGISTRY, SIGNAL_SIZE, SIGNALS

OTHER = "other"  # palette group of a node type whose CATEGORY is not one of CATEGORIES
NUMERIC = ("float", "int", "axis", "value")  # widgets with bounds (a joint's index bounds are no use to a name list)
WIDGETS = ("float", "int", "bool", "text", "enum", "joint", "joints", "clip", "axis", "signal", "value", "branches",
           "tags", "state", "state_or_any", "name")


def groups():
    """Node types by palette group: CATEGORIES in order (then 'other'), types sorted; empty groups left out."""
    out = {}
    for name in sorted(REGISTRY):
        if REGISTRY[name].PLANNED:
            continue
        category = REGISTRY[name].CATEGORY
        out.setdefault(category if category in CATEGORIES else OTHER, []).append(name)
    return {c: out[c] for c in (*CATEGORIES, OTHER) if c in out}


def doc(node_type):
    """One line saying what a node type does: its DOC, else the first line of its class docstring."""
    cls = REGISTRY[node_type]
    text = cls.DOC or (cls.__doc__ or "")
    return text.strip().splitlines()[0] if text.strip() else ""


def search(text):
    """Node types whose name, category or doc holds ``text`` (case-insensitive); name matches first."""
    text = text.strip().lower()
    hits = [name for name in sorted(REGISTRY) if not REGISTRY[name].PLANNED and (
            text in name.lower() or text in REGISTRY[name].CATEGORY.lower() or text in doc(name).lower())]
    return sorted(hits, key=lambda name: text not in name.lower())


# ---------------------------------------------------------------- pins


SPACE_SHADE = {"local": (0.75, 0.95), "global": (0.75, 0.6), "any": (0.2, 0.8)}  # pose space -> (saturation, value)


def pin_colour(signal, space=""):
    """RGB 0..255 of a pin: one hue per signal kind round the wheel; a pose's space changes shade (any: greyish)."""
    if signal not in SIGNALS:
        return (160, 160, 160)  # a kind the registry does not know: neutral grey
    hue = SIGNALS.index(signal) / len(SIGNALS)
    sat, val = SPACE_SHADE.get(space, SPACE_SHADE["local"]) if signal == "pose" else (0.65, 0.9)
    return tuple(int(round(255 * c)) for c in colorsys.hsv_to_rgb(hue, sat, val))


# ---------------------------------------------------------------- fields


@dataclass(frozen=True)
class FieldSpec:
    """How to edit one node field: a widget kind (one of WIDGETS), its default, bounds and choices."""

    name: str
    widget: str
    default: object  # the model's default; for a required field its EXAMPLE or first choice (None if neither)
    low: float | None  # lower bound, or None
    high: float | None
    choices: tuple  # enum strings, signal kinds, joint names (joint, joints, branches), asset names (clip), states
    doc: str
    optional: bool  # None (JSON null) is a valid value
    low_open: bool = False  # the bound itself is refused (gt)
    high_open: bool = False  # (lt)
    required: bool = False  # the model has no default
    signal: str = ""  # value widgets: the signal kind the value has (the node's 'signal' field)
    items: tuple = ()  # branches (a list of models): the FieldSpecs of one item's fields
    follow: object = None  # branches: ``items -> new item`` (the item model's ``next_item``), else a copy of the last


def field_specs(node, joint_names=(), assets=()):
    """FieldSpecs of every user field of ``node`` (a Node instance or class) except id and type."""
    cls = node if isinstance(node, type) else type(node)
    kinds = getattr(cls, "FIELD_KINDS", {})
    example = getattr(cls, "EXAMPLE", {})
    signal = getattr(node, "signal", None) if not isinstance(node, type) else _default(cls.model_fields.get("signal"))
    specs = []
    for name, info in cls.model_fields.items():
        if name in ("id", "type"):
            continue
        specs.append(_spec(name, info, kinds.get(name), example, tuple(joint_names), tuple(assets), signal,
                           _state_names(node)))
    return specs


def _state_names(node):
    """The state names of a node instance with ``states`` (a state machine's), for its state fields' choices."""
    if isinstance(node, type):
        return ()
    return tuple(str(getattr(s, "name", "")) for s in (getattr(node, "states", None) or ()))


def _spec(name, info, kind, example, joints, assets, signal, states=()):
    widget = kind or _widget(info.annotation)
    low, high, low_open, high_open = _bounds(info) if widget in NUMERIC else (None, None, False, False)
    choices = _choices(widget, info.annotation, joints, assets, states)
    items = ()
    if widget == "branches":
        item = _item_model(info.annotation)
        # An item's keys as the file holds them: a field's alias where it has one (a transition's "from").
        items = tuple(_spec(i.alias or n, i, getattr(item, "FIELD_KINDS", {}).get(n), {}, joints, assets, None, states)
                      for n, i in item.model_fields.items()) if item else ()
    default = _default(info)
    if info.is_required():
        default = example.get(name, choices[0] if choices and widget not in ("joints", "branches") else None)
    return FieldSpec(
        name=name, widget=widget, default=default, low=low, high=high, choices=choices,
        doc=info.description or "", optional=_nullable(info.annotation), low_open=low_open, high_open=high_open,
        required=info.is_required(), signal=(signal or "") if widget == "value" else "", items=items,
        follow=getattr(_item_model(info.annotation), "next_item", None) if widget == "branches" else None,
    )


def _default(info):
    if info is None or info.is_required():
        return None
    return info.get_default(call_default_factory=True)


def _strip(annotation):
    """The annotation without Optional and Annotated wrappers."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if _is_union(annotation):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _strip(args[0])
    return annotation


def _is_union(annotation):
    return typing.get_origin(annotation) in (Union, types.UnionType)


def _nullable(annotation):
    return _is_union(annotation) and type(None) in typing.get_args(annotation)


def _widget(annotation):
    """A widget kind from a field annotation (when the node's FIELD_KINDS says nothing)."""
    if annotation == JointName:
        return "joint"
    if annotation == Axis:
        return "axis"
    bare = _strip(annotation)
    origin = typing.get_origin(bare)
    if bare == JointName:
        return "joint"
    if origin is Literal:
        return "enum"
    if origin in (list, typing.List):
        item = typing.get_args(bare)[0] if typing.get_args(bare) else None
        if item == JointName:
            return "joints"
        if isinstance(item, type) and issubclass(item, BaseModel):
            return "branches"
    for kind, widget in ((bool, "bool"), (int, "int"), (float, "float"), (str, "text")):
        if bare is kind:
            return widget
    return "text"


def _item_model(annotation):
    args = typing.get_args(_strip(annotation))
    return args[0] if args and isinstance(args[0], type) and issubclass(args[0], BaseModel) else None


def _choices(widget, annotation, joints, assets, states=()):
    if widget in ("joint", "joints", "branches"):
        return joints
    if widget in ("state", "state_or_any"):
        return states + (("any",) if widget == "state_or_any" else ())
    if widget == "clip":
        return assets
    if widget in ("enum", "signal"):
        bare = _strip(annotation)
        if typing.get_origin(bare) is Literal:
            return tuple(str(a) for a in typing.get_args(bare))
        return tuple(SIGNAL_SIZE) if widget == "signal" else ()
    return ()


def _bounds(info):
    """(low, high, low_open, high_open) from the field's constraints, else from the first constrained member."""
    found = _constraints(info.metadata)
    if found == (None, None, False, False):
        for meta in _nested_metadata(info.annotation):
            found = _constraints(meta)
            if found != (None, None, False, False):
                break
    return found


def _constraints(metadata):
    low = high = None
    low_open = high_open = False
    for m in metadata:
        if isinstance(m, annotated_types.Ge):
            low = float(m.ge)
        elif isinstance(m, annotated_types.Gt):
            low, low_open = float(m.gt), True
        elif isinstance(m, annotated_types.Le):
            high = float(m.le)
        elif isinstance(m, annotated_types.Lt):
            high, high_open = float(m.lt), True
    return low, high, low_open, high_open


def _nested_metadata(annotation):
    """Metadata lists of the Annotated members inside ``annotation`` (unions, lists, tuples), depth first."""
    if typing.get_origin(annotation) is typing.Annotated:
        args = typing.get_args(annotation)
        for extra in args[1:]:
            yield extra.metadata if isinstance(extra, FieldInfo) else [extra]
        yield from _nested_metadata(args[0])
        return
    for arg in typing.get_args(annotation):
        yield from _nested_metadata(arg)
