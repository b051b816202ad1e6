"""Accepted ranges: every numeric node field has finite bounds in the JSON Schema, and a graph
built at either edge of any field (or fed inputs and steps at the edges of theirs) gives
finite output.  The edges are read from the schema itself, so a new field is tested as
soon as it is declared.  One compiled executor, batch 1, a few frames per graph."""

import math

import numpy as np
import pytest

import animgraph as ag
from animgraph.graph import json_schema
from animgraph.limits import DT_MAX, SIGNAL_MAX
from animgraph.node import REGISTRY

DT = 1 / 60
TINY = 1e-300  # a half-life or duration too small for float32: must act as 0


def node_defs():
    """{node type: its JSON Schema definition}."""
    out = {}
    for definition in json_schema()["$defs"].values():
        tag = definition.get("properties", {}).get("type", {})
        name = tag.get("const", tag.get("default"))
        if name in REGISTRY:
            out[name] = definition
    return out


def numeric_leaves(schema, path=()):
    """(path, schema) of every number/integer schema under ``schema`` (through anyOf, items, prefixItems)."""
    if schema.get("type") in ("number", "integer"):
        yield path, schema
    for sub in schema.get("anyOf", []):
        yield from numeric_leaves(sub, path)
    if isinstance(schema.get("items"), dict):
        yield from numeric_leaves(schema["items"], path + ("*",))
    for i, sub in enumerate(schema.get("prefixItems", [])):
        yield from numeric_leaves(sub, path + (i,))


def bounds(leaf):
    """The lowest and highest value a numeric schema accepts (exclusive bounds: the next float in)."""
    low = leaf.get("minimum", leaf.get("exclusiveMinimum"))
    high = leaf.get("maximum", leaf.get("exclusiveMaximum"))
    if "exclusiveMinimum" in leaf:
        low = math.nextafter(low, math.inf)
    if "exclusiveMaximum" in leaf:
        high = math.nextafter(high, -math.inf)
    return low, high


def edges():
    """(node type, field, path, value) for both edges of every numeric field, plus tiny seconds."""
    for name, definition in sorted(node_defs().items()):
        if REGISTRY[name].PLANNED:  # made by the check from a checked graph; a file may not hold one
            continue
        for field, prop in definition["properties"].items():
            for path, leaf in numeric_leaves(prop):
                low, high = bounds(leaf)
                for value in (low, high):
                    yield name, field, path, value
                if low == 0 and "s," in prop.get("description", ""):
                    yield name, field, path, TINY


def test_every_numeric_field_has_finite_bounds_in_the_schema():
    defs = node_defs()
    assert set(defs) == set(REGISTRY)
    missing = []
    for name, definition in defs.items():
        for field, prop in definition["properties"].items():
            for path, leaf in numeric_leaves(prop):
                low, high = bounds(leaf)
                if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
                    missing.append(f"{name}.{field}{list(path) or ''}")
    assert not missing, f"numeric fields without finite bounds: {missing}"
    version = json_schema()["properties"]["version"]
    assert version["minimum"] == 1 and version["maximum"] == ag.graph.VERSION


# ---------------------------------------------------------------- graphs around one node

WALK = {"walk": "animgraph:walk"}


def around(name, fields):
    """A small graph exercising node ``name`` with ``fields`` (nodes, links, per-frame inputs)."""
    n = {"id": "n", "type": name, **REGISTRY[name].EXAMPLE, **fields}
    poses = [{"id": "a", "type": "sample", "clip": "walk"},
             {"id": "b", "type": "sample", "clip": "walk", "time": 0.5, "loop": False}]
    switch = [{"id": "k", "type": "input", "signal": "int"}, {"id": "s", "type": "select"}]
    switch_links = [["a.pose", "s.in0"], ["b.pose", "s.in1"], ["k.value", "s.index"]]
    out = [{"id": "out", "type": "output"}]
    frames, switching = [{}], [{"k": 0}, {"k": 1}, {"k": 1}, {"k": 0}, {}]
    if name == "sample":
        return [{"clip": "walk", **n}] + out, [["n.pose", "out.pose"]], frames
    if name in ("blend", "additive"):
        ports = ("a", "b") if name == "blend" else ("base", "add")
        return poses + [n] + out, [["a.pose", f"n.{ports[0]}"], ["b.pose", f"n.{ports[1]}"],
                                   ["n.pose", "out.pose"]], frames
    if name == "select":
        count = fields.get("count", 2)
        return poses[:1] + [n] + out, [["a.pose", f"n.in{i}"] for i in range(count)] + [["n.pose", "out.pose"]], frames
    if name in ("inertialize", "dead_blend"):
        return (poses + switch + [n] + out, switch_links + [["s.pose", "n.pose"], ["s.changed", "n.transition"],
                                                            ["n.pose", "out.pose"]], switching)
    if name == "tracking_spring":
        return (poses + switch + [n] + out, switch_links + [["s.pose", "n.value"], ["n.value", "out.pose"]], switching)
    if name in ("look_at", "two_bone_ik"):
        n = {"joint": "head"} | n if name == "look_at" else {"root": "right_shoulder", "mid": "right_elbow",
                                                             "end": "right_hand"} | n
        target = {"id": "t", "type": "input", "signal": "vec3", "default": [0.3, 1.5, 0.4]}
        return (poses[:1] + [target, n] + out, [["a.pose", "n.pose"], ["t.value", "n.target"], ["n.pose", "out.pose"]],
                [{}, {"t": ([SIGNAL_MAX, -SIGNAL_MAX, 0.0], [SIGNAL_MAX, 0.0, -SIGNAL_MAX])}, {"t": [0.0, 0.0, 0.0]}])
    if name == "foot_lock":
        contact = {"id": "c", "type": "input", "signal": "bool"}
        return (poses[:1] + [contact, n] + out, [["a.pose", "n.pose"], ["c.value", "n.contact"], ["n.pose", "out.pose"]],
                [{"c": False}, {"c": True}, {"c": True}, {"c": False}, {}])
    if name == "constant":
        out = [{"id": "out", "type": "output", "signal": n.get("signal", "scalar")}]
        port = "pose" if n.get("signal") == "pose" else "value"
        return [n] + out, [[f"n.{port}", f"out.{port}"]], frames
    if name == "input":
        kind = n.get("signal", "scalar")
        out = [{"id": "out", "type": "output", "signal": kind}]
        big = SIGNAL_MAX if kind == "scalar" else [SIGNAL_MAX] * 3
        return [n] + out, [["n.value", "out.value"]], [{}, {"n": big}, {"n": np.negative(big)}]
    return generic(n, frames)


def generic(n, frames):
    """A node type without a graph above: its inputs fed by kind (poses from two samples, signals from inputs)."""
    cls = REGISTRY[n["type"]]
    node = cls.model_validate(n)
    nodes, links, poses = [{"id": "a", "type": "sample", "clip": "walk"},
                           {"id": "b", "type": "sample", "clip": "walk", "time": 0.5, "loop": False}], [], iter("ab")
    for port in node.inputs():
        if port.signal == "pose" and port.space == "global":  # a sample's local pose through a converter
            kind, pin, pout = converter("local", "global")
            nodes.append({"id": f"to_{port.name}", "type": kind, **REGISTRY[kind].EXAMPLE})
            links += [[f"{next(poses, 'a')}.pose", f"to_{port.name}.{pin}"], [f"to_{port.name}.{pout}", f"n.{port.name}"]]
        elif port.signal == "pose":
            links.append([f"{next(poses, 'a')}.pose", f"n.{port.name}"])
        elif port.signal in ("scalar", "vec3", "int", "bool", "trajectory") and not port.optional:
            nodes.append({"id": f"in_{port.name}", "type": "input", "signal": port.signal})
            links.append([f"in_{port.name}.value", f"n.{port.name}"])
    first = node.outputs()[0]
    out = {"id": "out", "type": "output"} | ({} if first.signal == "pose" else {"signal": first.signal})
    port = "pose" if first.signal == "pose" else "value"
    return nodes + [n, out], links + [[f"n.{first.name}", f"out.{port}"]], frames


def converter(src, dst):
    """(type, input port, output port) of a registered node type turning one ``src`` pose into a ``dst`` pose."""
    for kind, cls in sorted(REGISTRY.items()):
        node = cls.model_validate({"id": "x", "type": kind, **cls.EXAMPLE})
        ins, outs = node.inputs(), node.outputs()
        needed = [p for p in ins if not p.optional]
        if ([(p.signal, p.space) for p in needed] == [("pose", src)] and outs
                and (outs[0].signal, outs[0].space) == ("pose", dst)):
            return kind, needed[0].name, outs[0].name
    raise LookupError(f"no node type turns a {src} pose into a {dst} one")


def with_value(name, field, path, value):
    """The fields of node ``name`` with ``field`` (at ``path`` inside it) set to ``value``."""
    fields = {}
    if name == "constant":
        fields = {"signal": "pose", "clip": "walk"} if field == "frame" else {"signal": "vec3" if path else "scalar"}
    if name == "input" and path:
        fields["signal"] = "vec3"
    if name == "inertialize" and field == "halflife":
        fields["mode"] = "spring"
    if name == "select" and field == "index":
        fields["count"] = int(value) + 1
    if not path:
        fields[field] = int(value) if isinstance(value, int) else value
        return fields
    default = REGISTRY[name].model_fields[field].default
    vec = list(default) if isinstance(default, (list, tuple)) and default else [0.0, 0.0, 1.0]
    vec[path[0] if path[0] != "*" else 0] = value
    fields[field] = vec
    return fields


def run_frames(nodes, links, frames, dts=(DT, 0.0, DT_MAX, 5e-324, DT)):
    assets, version = WALK, 1
    if any(n.get("database") == "db" for n in nodes):  # a node's EXAMPLE names a motion database
        assets, version = WALK | {"db": {"database": ["animgraph:walk", "animgraph:run_stop"]}}, 3
    graph = ag.Graph.from_dict({"format": "animgraph.graph", "version": version, "assets": assets, "nodes": nodes,
                                "links": links})
    inst = ag.compile(graph).instance()
    for i, dt in enumerate(dts):
        out = inst.step(dt, frames[i % len(frames)])
        for key, value in out.items():
            arrays = value.as_tuple() if hasattr(value, "as_tuple") else (value,)
            for a in arrays:
                assert np.all(np.isfinite(a)), f"output {key!r} not finite at frame {i} (dt {dt})"


EDGES = list(edges())


@pytest.mark.parametrize("name, field, path, value", EDGES,
                         ids=[f"{n}.{f}{list(p) if p else ''}={v:g}" for n, f, p, v in EDGES])
def test_field_at_its_edge_gives_finite_output_or_a_graph_error(name, field, path, value):
    nodes, links, frames = around(name, with_value(name, field, path, value))
    try:
        run_frames(nodes, links, frames)
    except ag.GraphError as e:
        # Only what depends on the skeleton or clip may fail at plan time (a joint or frame index past the end).
        assert field in ("joint", "root", "mid", "end", "joints", "frame"), str(e)


@pytest.mark.parametrize("name", sorted(n for n, cls in REGISTRY.items() if not cls.PLANNED))
def test_every_node_type_with_its_example_gives_finite_output(name):
    # Every registered type, those without a numeric field too: a new node type is exercised with no edit here
    # (but the check's own, which graphs that sync exercise: tests/test_node_sync_group.py).
    run_frames(*around(name, {}))


# ---------------------------------------------------------------- values refused where they enter


@pytest.mark.parametrize("field, value", [("time", -1e17), ("time", 1e6 + 1), ("rate", 101.0), ("rate", float("nan"))])
def test_sample_refuses_times_and_rates_out_of_range(field, value):
    with pytest.raises(ag.GraphError, match=field):
        ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "assets": WALK,
                            "nodes": [{"id": "n", "type": "sample", "clip": "walk", field: value}]})


@pytest.mark.parametrize("fields", [{"default": 1e309}, {"default": 1e300}, {"default": -2e9}, {"min": 1e10},
                                    {"min": 1.0, "max": 0.0}, {"default": 2.0, "max": 1.0}])
def test_input_refuses_defaults_and_bounds_out_of_range(fields):
    with pytest.raises(ag.GraphError, match="node 'w'"):
        ag.Graph.from_dict({"format": "animgraph.graph", "version": 1,
                            "nodes": [{"id": "w", "type": "input", **fields}]})


@pytest.mark.parametrize("node", ["input", "constant"])
@pytest.mark.parametrize("signal", ["scalar", "int", "bool"])
def test_a_list_for_a_one_number_signal_is_a_graph_error(node, signal):
    """Was a TypeError from numpy (an internal error on the CLI, a dead editor) for int and scalar."""
    field = "default" if node == "input" else "value"
    with pytest.raises(ag.GraphError, match=f"node 'w'.*{signal} value is one"):
        ag.Graph.from_dict({"format": "animgraph.graph", "version": 1,
                            "nodes": [{"id": "w", "type": node, "signal": signal, field: [1, 2]}]})


@pytest.mark.parametrize("halflife", [0.0, TINY, 1e-7, 1e-6])
@pytest.mark.parametrize("mode", ["spring", "cubic"])
def test_inertializer_tiny_length_is_an_instant_cut(halflife, mode):
    skel, walk = ag.data.load("walk")
    src = ag.ops.sample(walk, 0.0)
    dst = ag.ops.sample(walk, 0.5)
    inert = ag.ops.Inertializer(halflife=halflife) if mode == "spring" else ag.ops.Inertializer(duration=halflife)
    inert.transition(src, dst)
    for dt in (0.0, 1e-9, DT):
        out = inert.update(dst, dt)
        for a in out.as_tuple():
            assert np.all(np.isfinite(a))
    if halflife < 1e-6:
        np.testing.assert_array_equal(out.pos, dst.pos)  # a cut: the new input, no offset


def test_decay_weights_below_a_microsecond_are_a_cut_never_nan():
    from animgraph import decay

    for h in (0.0, 5e-324, TINY, 1e-12, 9.99e-7):
        for t in (0.0, 5e-324, 1e-9, DT, 1e3):
            for w in (decay.spring_weights(h, t), decay.cubic_weights(h, t),
                      decay.two_rate_weights(decay.halflife_rate(h), decay.halflife_rate(0.1), t)):
                assert all(math.isfinite(x) for x in w), (h, t, w)
            if t > 0:
                assert decay.spring_weights(h, t) == (0.0, 0.0, 0.0, 0.0)
    # At the edge the spring is still a (very fast) spring, finite.
    assert all(math.isfinite(x) for x in decay.spring_weights(1e-6, 1e-9))


def test_dead_blender_tiny_duration_and_halflife_are_finite():
    skel, walk = ag.data.load("walk")
    for duration, halflife in ((TINY, TINY), (TINY, 0.2), (0.5, TINY), (0.0, 0.0)):
        dead = ag.ops.DeadBlender(duration=duration, halflife=halflife)
        dead.transition(ag.ops.sample(walk, 0.0))
        for dt in (0.0, 1e-9, DT):
            for a in dead.update(ag.ops.sample(walk, 0.5), dt).as_tuple():
                assert np.all(np.isfinite(a))
