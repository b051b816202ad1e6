"""Graph files: JSON round trip, the JSON Schema, and load errors naming file, node and field."""

import json
import re

import pytest

import animgraph as ag
from animgraph import graph as graph_mod
from animgraph.node import REGISTRY, Node, Port, register

GRAPH = {
    "format": "animgraph.graph",
    "version": 1,
    "description": "rest pose and a clip frame, through FK and BK",
    "assets": {"walk": "animgraph:walk", "local": {"path": "clips/x.bvh", "scale": 0.01}},
    "nodes": [
        {"id": "rest", "type": "constant", "signal": "pose"},
        {"id": "frame", "type": "constant", "signal": "pose", "clip": "walk", "frame": 3},
        {"id": "w", "type": "input", "signal": "scalar", "default": 0.25, "min": 0.0, "max": 1.0},
        {"id": "v", "type": "input", "signal": "vec3", "default": [1, 2, 3]},
        {"id": "fk", "type": "fk"},
        {"id": "bk", "type": "bk"},
        {"id": "out", "type": "output"},
        {"id": "wout", "type": "output", "signal": "scalar"},
    ],
    "links": [["frame.pose", "fk.pose"], ["fk.pose", "bk.pose"], ["bk.pose", "out.pose"], ["w.value", "wout.value"]],
    "editor": {"positions": {"rest": [40, 60], "fk": [200, 60]}, "zoom": 1.0},
}


def write(tmp_path, data, name="g.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def load_error(tmp_path, data):
    path = write(tmp_path, data)
    with pytest.raises(ag.GraphError) as info:
        ag.Graph.load(path)
    err = info.value
    assert str(path) in str(err), "the message names the file"
    return err


# ---------------------------------------------------------------- round trip


def test_round_trip_is_identical(tmp_path):
    g = ag.Graph.load(write(tmp_path, GRAPH))
    a = tmp_path / "a.json"
    g.save(a)
    g2 = ag.Graph.load(a)
    assert g2 == g
    b = tmp_path / "b.json"
    g2.save(b)
    assert a.read_text() == b.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == [], "no temporary file left"


def test_saved_text_is_diff_friendly(tmp_path):
    g = ag.Graph.from_dict(GRAPH)
    text = g.to_json()
    lines = text.splitlines()
    node_lines = [ln for ln in lines if '"type":' in ln]
    assert len(node_lines) == len(GRAPH["nodes"]), "one node per line"
    for ln in node_lines:
        assert json.loads(ln.strip().rstrip(","))["id"]
    assert sum(1 for ln in lines if re.match(r'^\s*\["\w+\.\w+", "\w+\.\w+"\],?$', ln)) == len(GRAPH["links"])
    # Defaults are left out, id and type come first.
    assert lines[lines.index('  "nodes": [') + 1].strip() == '{"id": "rest", "type": "constant", "signal": "pose"},'
    assert text.endswith("}\n")


def test_int_default_is_normalised_to_the_signal_kind():
    g = ag.Graph.from_dict(GRAPH)
    assert g.node("v").default == [1.0, 2.0, 3.0]
    assert g.node("w").default == 0.25
    q = ag.Graph.from_dict({**GRAPH, "nodes": [{"id": "q", "type": "input", "signal": "quat", "default": [2, 0, 0, 0]}],
                            "links": []})
    assert q.node("q").default == [1.0, 0.0, 0.0, 0.0]


def test_save_re_anchors_relative_assets(tmp_path):
    (tmp_path / "sub").mkdir()
    g = ag.Graph.load(write(tmp_path, GRAPH))
    g.save(tmp_path / "sub" / "moved.json")
    moved = json.loads((tmp_path / "sub" / "moved.json").read_text())
    assert moved["assets"] == {"walk": "animgraph:walk", "local": {"path": "../clips/x.bvh", "scale": 0.01}}
    assert ag.Graph.load(tmp_path / "sub" / "moved.json").base_dir == tmp_path / "sub"


def test_save_to_missing_directory_writes_nothing(tmp_path):
    g = ag.Graph.from_dict(GRAPH)
    with pytest.raises(OSError):
        g.save(tmp_path / "nope" / "g.json")
    assert not (tmp_path / "nope").exists()


# ---------------------------------------------------------------- schema


def _validate(instance, schema, root, where="$"):
    """A small JSON Schema checker for the keywords pydantic emits; raises AssertionError."""
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return _validate(instance, root["$defs"][name], root, where)
    if "oneOf" in schema or "anyOf" in schema:
        options = schema.get("oneOf") or schema.get("anyOf")
        disc = schema.get("discriminator")
        if disc:
            ref = disc["mapping"][instance[disc["propertyName"]]]
            return _validate(instance, {"$ref": ref}, root, where)
        errors = []
        for option in options:
            try:
                _validate(instance, option, root, where)
                return
            except AssertionError as e:
                errors.append(str(e))
        raise AssertionError(f"{where}: no option matches: {errors}")
    kind = schema.get("type")
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
    if kind == "number":
        assert isinstance(instance, (int, float)) and not isinstance(instance, bool), where
    elif kind == "integer":
        assert isinstance(instance, int) and not isinstance(instance, bool), where
    elif kind:
        assert isinstance(instance, types[kind]), f"{where}: {instance!r} is not {kind}"
    if "const" in schema:
        assert instance == schema["const"], where
    if "enum" in schema:
        assert instance in schema["enum"], where
    for key, test in (("minimum", lambda a, b: a >= b), ("maximum", lambda a, b: a <= b),
                      ("exclusiveMinimum", lambda a, b: a > b), ("minLength", lambda a, b: len(a) >= b)):
        if key in schema:
            assert test(instance, schema[key]), f"{where}: {key}"
    if "pattern" in schema:
        assert re.search(schema["pattern"], instance), f"{where}: pattern"
    if kind == "object":
        props = schema.get("properties", {})
        for req in schema.get("required", []):
            assert req in instance, f"{where}: missing {req}"
        for key, value in instance.items():
            if key in props:
                _validate(value, props[key], root, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                raise AssertionError(f"{where}: unknown key {key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                _validate(value, schema["additionalProperties"], root, f"{where}.{key}")
    if kind == "array":
        if "prefixItems" in schema:
            assert len(instance) == len(schema["prefixItems"]), where
            for i, (v, s) in enumerate(zip(instance, schema["prefixItems"])):
                _validate(v, s, root, f"{where}[{i}]")
        elif "items" in schema:
            for i, v in enumerate(instance):
                _validate(v, schema["items"], root, f"{where}[{i}]")


def test_schema_validates_saved_files_and_rejects_bad_ones(tmp_path):
    schema = ag.Graph.json_schema()
    g = ag.Graph.from_dict(GRAPH)
    _validate(json.loads(g.to_json()), schema, schema)
    for bad in (
        {**GRAPH, "extra": 1},
        {**GRAPH, "nodes": [{"id": "x", "type": "constant", "frame": -1}]},
        {**GRAPH, "links": [["a", "b.c"]]},
        {**GRAPH, "version": graph_mod.VERSION + 1},
    ):
        with pytest.raises(AssertionError):
            _validate(bad, schema, schema)


def test_schema_publishes_ports_per_node_type():
    schema = ag.Graph.json_schema()
    defs = {d["properties"]["type"]["const"]: d for d in schema["$defs"].values()
            if "type" in d.get("properties", {}) and "const" in d["properties"]["type"]}
    assert set(REGISTRY) <= set(defs)
    fk = defs["fk"]["x-ports"]
    assert fk["inputs"] == [{"name": "pose", "signal": "pose", "space": "local", "optional": False,
                             "doc": "parent-relative pose"}]
    assert fk["outputs"][0]["space"] == "global"
    assert defs["output"]["x-ports"]["inputs"][0]["name"] == "pose"


# ---------------------------------------------------------------- load errors


def test_malformed_json_names_line(tmp_path):
    err = load_error(tmp_path, '{"format": "animgraph.graph",\n "version": 1,\n "nodes": [}\n')
    assert "invalid JSON at line 3" in str(err)


def test_nan_in_file_is_refused(tmp_path):
    text = json.dumps(GRAPH).replace('"default": 0.25', '"default": NaN')
    assert "NaN is not allowed" in str(load_error(tmp_path, text))


def test_unknown_node_type_lists_valid_ones(tmp_path):
    data = {**GRAPH, "nodes": GRAPH["nodes"] + [{"id": "zz", "type": "blender"}]}
    err = load_error(tmp_path, data)
    assert err.node == "zz"
    assert "unknown node type 'blender'" in str(err)
    for name in REGISTRY:
        assert name in str(err)


def test_missing_type(tmp_path):
    err = load_error(tmp_path, {**GRAPH, "nodes": [{"id": "a"}]})
    assert err.node == "a" and "no 'type'" in str(err)


@pytest.mark.parametrize(
    "node, port, words",
    [
        ({"id": "c", "type": "constant", "signal": "pose", "frame": -1}, "frame", "greater than or equal to 0"),
        ({"id": "c", "type": "constant", "signal": "pose", "frame": "x"}, "frame", "integer"),
        ({"id": "c", "type": "constant", "signal": "wave"}, "signal", "'scalar'"),
        ({"id": "c", "type": "input", "signal": "vec3", "default": [1, 2]}, None, "3 numbers"),
        ({"id": "c", "type": "fk", "gain": 2}, "gain", "unknown key 'gain'"),
        ({"id": "1c", "type": "fk"}, "id", "pattern"),
    ],
)
def test_bad_parameter_names_node_and_field(tmp_path, node, port, words):
    err = load_error(tmp_path, {**GRAPH, "nodes": [node], "links": []})
    assert err.node == node["id"] and err.port == port
    assert words in str(err)
    assert f"node {node['id']!r}" in str(err)


def test_unknown_top_level_key(tmp_path):
    assert "unknown key 'nodez'" in str(load_error(tmp_path, {**GRAPH, "nodez": []}))


def test_bad_link_form(tmp_path):
    err = load_error(tmp_path, {**GRAPH, "links": [["fk", "out.pose"]]})
    assert "link 0" in str(err) and "'fk'" in str(err)


def test_newer_version_names_both_versions(tmp_path):
    err = load_error(tmp_path, {**GRAPH, "version": 7, "nodes": [{"id": "x", "type": "from_the_future"}]})
    assert "file version 7" in str(err) and f"(version {graph_mod.VERSION})" in str(err)


def test_wrong_format_tag(tmp_path):
    assert "'format' must be 'animgraph.graph'" in str(load_error(tmp_path, {**GRAPH, "format": "other"}))


def test_duplicate_node_id(tmp_path):
    err = load_error(tmp_path, {**GRAPH, "nodes": GRAPH["nodes"] + [{"id": "fk", "type": "bk"}]})
    assert err.node == "fk" and "duplicate" in str(err)


def test_missing_file(tmp_path):
    with pytest.raises(ag.GraphError, match="cannot read graph file"):
        ag.Graph.load(tmp_path / "absent.json")


# ---------------------------------------------------------------- registry


def _probe_kernel(ins, outs, par, st, pose, sig, db, dt):
    pass


def test_node_types_registered_later_become_loadable():
    data = {**GRAPH, "nodes": [{"id": "p", "type": "late_probe", "gain": 2.0}], "links": []}
    with pytest.raises(ag.GraphError):
        ag.Graph.from_dict(data)
    try:

        @register(_probe_kernel)
        class LateProbe(Node):
            type: graph_mod.Literal["late_probe"] = "late_probe"
            gain: float = 1.0
            OUTPUTS = (Port("value", "scalar"),)

        g = ag.Graph.from_dict(data)
        assert g.nodes[0].gain == 2.0
        assert "late_probe" in json.dumps(ag.Graph.json_schema())
    finally:
        REGISTRY.pop("late_probe", None)
        graph_mod.sync_registry()
    with pytest.raises(ag.GraphError, match="unknown node type"):
        ag.Graph.from_dict(data)
