"""The shipped graphs: each validates, round-trips through save, matches the JSON Schema, and runs.

Tolerances: quaternions of every output pose stay unit to 1e-5 (float32 storage);
every output value is finite.  The schema check uses ``jsonschema`` when it is
installed (it is not a dependency); otherwise a structural walk of the schema
(keys, required keys, the node ``type`` discriminator, ranges and enums) checks
every node, independently of the pydantic models that generated it.
"""

import json

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.graph import json_schema
from animgraph.runner import validate

NAMES = graphs.names()
EXPECTED = {"blend", "select_inertialize", "select_dead_blend", "additive", "ik_lookat_footlock", "locomotion", "gaits",
            "controller"}


def test_every_graph_is_shipped():
    assert EXPECTED <= set(NAMES)
    with pytest.raises(ValueError, match="shipped: "):
        graphs.path("nope")


@pytest.mark.parametrize("name", NAMES)
def test_validates_with_a_one_line_description(name):
    plan = validate(graphs.path(name))
    assert plan.warnings == [] and plan.pruned == []
    desc = plan.graph.description
    assert desc and "\n" not in desc and len(desc) <= 160
    # Bundled clips only, so the graph runs from any install.
    assert all(_bundled(spec) for spec in plan.graph.assets.values())


def _bundled(spec):
    """Whether an asset reads bundled clips only (a database asset: every clip in its list)."""
    clips = getattr(spec, "database", None)
    if clips is not None:
        return isinstance(clips, list) and all(c.startswith("animgraph:") for c in clips)
    return str(spec).startswith("animgraph:")


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_is_identical(name, tmp_path):
    path = graphs.path(name)
    text = path.read_text(encoding="utf-8")
    g = ag.Graph.load(path)
    copy = tmp_path / f"{name}.json"
    g.save(copy)
    assert copy.read_text(encoding="utf-8") == text  # shipped files are in the saved (canonical) form
    again = ag.Graph.load(copy)
    assert again.model_dump() == g.model_dump()
    again.save(copy)
    assert copy.read_text(encoding="utf-8") == text


def _resolve(schema, node):
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].split("/")[-1]]
    return node


def _check_value(schema, spec, value, where):
    """Structural check of one value against a (small) JSON Schema subset; returns a list of problems."""
    spec = _resolve(schema, spec)
    if "anyOf" in spec:
        problems = [_check_value(schema, s, value, where) for s in spec["anyOf"]]
        return [] if any(not p for p in problems) else [f"{where}: matches no alternative: {problems}"]
    kind = spec.get("type")
    types = {"string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)}
    if kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return [f"{where}: {value!r} is not a {kind}"]
        if kind == "integer" and not float(value).is_integer():
            return [f"{where}: {value!r} is not an integer"]
        for key, ok in (("minimum", value >= spec.get("minimum", -np.inf)),
                        ("maximum", value <= spec.get("maximum", np.inf)),
                        ("exclusiveMinimum", value > spec.get("exclusiveMinimum", -np.inf)),
                        ("exclusiveMaximum", value < spec.get("exclusiveMaximum", np.inf))):
            if not ok:
                return [f"{where}: {value!r} breaks {key} {spec[key]}"]
    elif kind in types and not isinstance(value, types[kind]):
        return [f"{where}: {value!r} is not {kind}"]
    if "const" in spec and value != spec["const"]:
        return [f"{where}: {value!r} != {spec['const']!r}"]
    if "enum" in spec and value not in spec["enum"]:
        return [f"{where}: {value!r} not in {spec['enum']}"]
    if isinstance(value, dict) and "properties" in spec:
        return _check_object(schema, spec, value, where)
    if isinstance(value, list) and "prefixItems" in spec:
        if len(value) != len(spec["prefixItems"]):
            return [f"{where}: {len(value)} items, schema has {len(spec['prefixItems'])}"]
        return [p for i, (s, v) in enumerate(zip(spec["prefixItems"], value))
                for p in _check_value(schema, s, v, f"{where}[{i}]")]
    if isinstance(value, list) and "items" in spec:
        return [p for i, v in enumerate(value) for p in _check_value(schema, spec["items"], v, f"{where}[{i}]")]
    return []


def _check_object(schema, spec, value, where):
    props = spec["properties"]
    problems = [f"{where}: unknown key {k!r}" for k in value if k not in props and spec.get("additionalProperties") is False]
    problems += [f"{where}: missing {k!r}" for k in spec.get("required", []) if k not in value]
    for k, v in value.items():
        if k in props:
            problems += _check_value(schema, props[k], v, f"{where}.{k}")
    return problems


def _node_spec(schema, node_type):
    for definition in schema["$defs"].values():
        tag = definition.get("properties", {}).get("type", {})
        if tag.get("const", tag.get("default")) == node_type:
            return definition
    raise AssertionError(f"no schema definition for node type {node_type!r}")


def test_structural_checker_catches_mistakes():
    """The fallback checker is not vacuous: it rejects unknown keys, bad ranges and wrong types."""
    schema = json_schema()
    data = json.loads(graphs.path("blend").read_text(encoding="utf-8"))
    assert _graph_problems(schema, data) == []
    bad = json.loads(json.dumps(data))
    bad["nodes"][0]["speed"] = 2.0
    bad["nodes"][0]["rate"] = 1000.0
    bad["nodes"][2]["min"] = "low"
    bad["extra"] = 1
    found = " ".join(_graph_problems(schema, bad))
    assert "speed" in found and "rate" in found and "min" in found and "extra" in found


def _graph_problems(schema, data):
    top = {k: v for k, v in data.items() if k != "nodes"}
    problems = _check_object(schema, {**schema, "required": schema.get("required", [])}, top, "graph")
    for i, node in enumerate(data["nodes"]):
        problems += _check_object(schema, _node_spec(schema, node["type"]), node, f"nodes[{i}]")
    return problems


@pytest.mark.parametrize("name", NAMES)
def test_schema_validates_the_graph(name):
    schema = json_schema()
    data = json.loads(graphs.path(name).read_text(encoding="utf-8"))
    try:
        import jsonschema
    except ImportError:
        assert _graph_problems(schema, data) == []
    else:
        jsonschema.validate(data, schema)


def _drive(name, frame, batch):
    """Inputs that exercise each graph: switches and weights that move (contacts come from the clips)."""
    phase = (frame // 30) % 3
    inputs = {}
    if name.startswith("select_"):
        inputs["clip"] = phase
    if name in ("blend", "additive"):
        inputs["alpha"] = (0.5 + 0.4 * np.sin(frame / 20.0), 0.4 * 3.0 * np.cos(frame / 20.0))
    if name == "gaits":
        inputs["gait"] = np.arange(batch) % 3 if frame < 40 else phase
        inputs["rate"] = 1.0 + 0.1 * phase
    if name in ("controller", "locomotion"):  # the stick swinging round and let go, the camera turning
        turn = frame / 40.0 + np.arange(batch)[:, None]
        inputs["stick"] = 0.5 * (phase != 2) * np.concatenate([np.sin(turn), 0 * turn, np.cos(turn)], -1)
        inputs["camera_yaw"] = (0.3 * phase, 0.1)
    return inputs


@pytest.mark.parametrize("name", NAMES)
def test_runs_finite_with_unit_quaternions(name):
    batch, frames = 3, 120
    plan = ag.compile(graphs.path(name), batch=batch)
    inst = plan.instance()
    for frame in range(frames):
        out = inst.step(1 / 60, _drive(name, frame, batch))
        for nid, value in out.items():
            arrays = value.as_tuple() if isinstance(value, ag.Pose) else (value,)
            assert all(np.isfinite(a).all() for a in arrays), (name, nid, frame)
            if isinstance(value, ag.Pose):
                assert value.pos.shape == (batch, plan.joints, 3)
                assert np.abs(np.linalg.norm(value.rot, axis=-1) - 1).max() < 1e-5, (name, nid, frame)
