"""Graph files: the pydantic model of a graph, its JSON form and its JSON Schema.

A graph file is JSON text meant for diffs::

    {"format": "animgraph.graph", "version": 1, "description": "...",
     "assets": {"walk": "animgraph:walk", "jog": "clips/jog.bvh"},
     "nodes": [{"id": "walk", "type": "sample", "clip": "walk"}, ...],
     "links": [["walk.pose", "out.pose"], ...],
     "editor": {"positions": {"walk": [40, 60]}}}

``nodes`` is a discriminated union on ``type`` over ``animgraph.node.REGISTRY``
(rebuilt if node types are registered later).  Unknown keys are errors.  Every
failure is an ``animgraph.GraphError`` naming the file, node id and field or port.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, ValidationError
from pydantic.fields import FieldInfo

import animgraph.nodes  # noqa: F401  (registers the node types)

from .errors import GraphError
from .fileio import atomic_write_text
from .node import REGISTRY

FORMAT = "animgraph.graph"
VERSION = 1
BUNDLED_PREFIX = "animgraph:"

PortRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")]


class AssetSpec(BaseModel):
    """A clip asset with options: BVH path (relative to the graph file) and a position scale."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1)
    scale: float = Field(1.0, gt=0, description="multiplies BVH positions (e.g. 0.01 for centimetres)")


Asset = Union[str, AssetSpec]


def _node_union():
    classes = tuple(REGISTRY[name] for name in sorted(REGISTRY))
    if len(classes) == 1:
        return classes[0]
    return Annotated[Union[classes], Field(discriminator="type")]


AnyNode = _node_union()


class Graph(BaseModel):
    """A node graph: assets (clips), nodes, links ``[src.port, dst.port]`` and editor metadata."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["animgraph.graph"] = FORMAT
    version: int = Field(VERSION, ge=1, le=VERSION)
    description: str = Field("", description="one line saying what the graph does")
    assets: dict[str, Asset] = Field(
        default_factory=dict,
        description="clip name -> BVH path relative to the graph file, or 'animgraph:NAME' for a bundled clip",
    )
    nodes: list[AnyNode] = Field(default_factory=list)
    links: list[tuple[PortRef, PortRef]] = Field(
        default_factory=list, description="[source 'node.port', destination 'node.port'] pairs"
    )
    editor: dict[str, Any] = Field(default_factory=dict, description="editor metadata (node positions, ...)")

    _path: Path | None = PrivateAttr(default=None)

    # ------------------------------------------------------------ access

    @property
    def path(self):
        """The file this graph was loaded from or last saved to (None if built in memory)."""
        return self._path

    @property
    def base_dir(self):
        """Directory that relative asset paths resolve against (the file's, else the working directory)."""
        return self._path.parent if self._path else Path.cwd()

    def node(self, node_id):
        """The node with id ``node_id`` (GraphError if there is none)."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise GraphError(f"no node {node_id!r}", file=self._path)

    # ------------------------------------------------------------ load

    @classmethod
    def load(cls, path):
        """Read and validate a graph file; GraphError naming file, node and field on any problem."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise GraphError(f"cannot read graph file: {e.strerror or e}", file=path) from None
        except UnicodeDecodeError as e:
            raise GraphError(f"not UTF-8 text (byte {e.start}): a graph file is UTF-8 JSON", file=path) from None
        try:
            data = json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            raise GraphError("JSON nested too deeply to be a graph file", file=path) from None
        except json.JSONDecodeError as e:
            raise GraphError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", file=path) from None
        except ValueError as e:
            raise GraphError(str(e), file=path) from None
        return cls.from_dict(data, file=path)

    @classmethod
    def from_dict(cls, data, file=None):
        """Validate a graph from its JSON data (``file`` is named in errors and anchors asset paths)."""
        file = Path(file) if file is not None else None
        _precheck(data, file)
        sync_registry()
        try:
            graph = cls.model_validate(data)
        except ValidationError as e:
            raise _graph_error(e, data, file) from None
        graph._path = file
        return graph

    # ------------------------------------------------------------ save

    def to_dict(self, base_dir=None):
        """The JSON data of the graph: defaults left out of nodes, keys in a fixed order."""
        data = {"format": FORMAT, "version": VERSION}
        if self.description:
            data["description"] = self.description
        data["assets"] = {name: self._asset_json(spec, base_dir) for name, spec in self.assets.items()}
        data["nodes"] = [_node_json(n) for n in self.nodes]
        data["links"] = [list(link) for link in self.links]
        if self.editor:
            data["editor"] = _sorted(self.editor)
        return data

    def to_json(self, base_dir=None):
        """Stable, diff-friendly JSON text: one node and one link per line."""
        return _dumps(self.to_dict(base_dir)) + "\n"

    def save(self, path):
        """Write the graph atomically (temporary file, then rename); relative assets are re-anchored."""
        path = Path(path)
        text = self.to_json(base_dir=path.resolve().parent)
        atomic_write_text(path, text)
        self._path = path

    def _asset_json(self, spec, base_dir):
        rel = spec if isinstance(spec, str) else spec.path
        if base_dir is not None and not rel.startswith(BUNDLED_PREFIX) and not os.path.isabs(rel):
            rel = os.path.relpath(os.path.normpath(self.base_dir.resolve() / rel), base_dir).replace(os.sep, "/")
        if isinstance(spec, str):
            return rel
        return spec.model_dump(exclude_defaults=True) | {"path": rel}

    # ------------------------------------------------------------ schema

    @classmethod
    def json_schema(cls):
        """JSON Schema of graph files; each node type lists its ports under ``x-ports``."""
        return json_schema()


def json_schema():
    """JSON Schema of graph files, with each node type's ports under ``x-ports``."""
    sync_registry()
    schema = Graph.model_json_schema()
    schema["title"] = "animgraph graph file"
    for definition in schema.get("$defs", {}).values():
        tag = definition.get("properties", {}).get("type", {})
        cls = REGISTRY.get(tag.get("const", tag.get("default")))
        if cls is None:
            continue
        definition["x-ports"] = {
            "inputs": [_port_json(p) for p in cls.INPUTS],
            "outputs": [_port_json(p) for p in cls.OUTPUTS],
        }
    return schema


def _port_json(port):
    """A port as JSON; signal 'any' means the kind follows the node's 'signal' field."""
    return {
        "name": port.name,
        "signal": port.signal,
        "space": port.space,
        "optional": port.optional,
        "doc": port.doc,
    }


_synced = tuple(sorted(REGISTRY))


def sync_registry():
    """Rebuild the node union if node types were registered after this module was imported."""
    global AnyNode, _synced
    names = tuple(sorted(REGISTRY))
    if names == _synced:
        return
    AnyNode = _node_union()
    Graph.__pydantic_fields__["nodes"] = FieldInfo.from_annotated_attribute(
        list[AnyNode], Field(default_factory=list)
    )
    Graph.model_rebuild(force=True)
    _synced = names


# ---------------------------------------------------------------- JSON text


def _node_json(node):
    data = {"id": node.id, "type": node.type}
    data.update({k: v for k, v in node.model_dump(exclude_defaults=True, mode="json").items() if k not in data})
    return data


def _sorted(obj):
    if isinstance(obj, dict):
        return {k: _sorted(obj[k]) for k in sorted(obj)}
    if isinstance(obj, (list, tuple)):
        return [_sorted(v) for v in obj]
    return obj


def _dumps(obj, level=0, width=100):
    """JSON with containers on one line when short, one item per line otherwise (top level always split)."""
    one = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    if not isinstance(obj, (dict, list)) or not obj or (level >= 2 and len(one) + 2 * level <= width):
        return one
    if level == 1 and len(one) + 2 <= width and not any(isinstance(v, (dict, list)) for v in _values(obj)):
        return one
    pad, end = "  " * (level + 1), "  " * level
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k, ensure_ascii=False)}: {_dumps(v, level + 1, width)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    items = [pad + _dumps(v, level + 1, width) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + end + "]"


def _values(obj):
    return obj.values() if isinstance(obj, dict) else obj


def _reject_constant(name):
    raise ValueError(f"{name} is not allowed in a graph file")


# ---------------------------------------------------------------- errors


def _precheck(data, file):
    """Checks before pydantic: object shape, format tag, version (a newer file is refused), unique ids."""
    if not isinstance(data, dict):
        raise GraphError(f"a graph file holds a JSON object, not {type(data).__name__}", file=file)
    if data.get("format") != FORMAT:
        raise GraphError(f"'format' must be {FORMAT!r}, got {data.get('format')!r}", file=file)
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise GraphError(f"'version' must be a whole number >= 1, got {version!r}", file=file)
    if version > VERSION:
        raise GraphError(
            f"file version {version} is newer than this animgraph reads (version {VERSION}): upgrade animgraph",
            file=file,
        )
    seen = set()
    for n in data.get("nodes") or []:
        nid = n.get("id") if isinstance(n, dict) else None
        if isinstance(nid, str):
            if nid in seen:
                raise GraphError("duplicate node id", node=nid, file=file)
            seen.add(nid)


def _graph_error(err, data, file):
    """The first pydantic error as a GraphError naming node and field."""
    e = err.errors()[0]
    loc, kind = tuple(e["loc"]), e["type"]
    more = f" (and {err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
    node = port = None
    msg = e["msg"]
    if loc[:1] == ("nodes",) and len(loc) >= 2 and isinstance(loc[1], int):
        raw = data["nodes"][loc[1]]
        node = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else f"#{loc[1]}"
        rest = list(loc[2:])
        if rest and isinstance(raw, dict) and rest[0] == raw.get("type"):
            rest = rest[1:]
        port = ".".join(str(r) for r in rest) or None
        valid = ", ".join(sorted(REGISTRY))
        if kind == "union_tag_invalid":
            msg = f"unknown node type {raw.get('type')!r} (valid types: {valid})"
        elif kind == "union_tag_not_found":
            msg = f"node has no 'type' (valid types: {valid})"
    elif loc[:1] == ("assets",) and len(loc) >= 2:
        msg = f"asset {loc[1]!r}: {msg}"
    elif loc:
        msg = f"{'.'.join(str(r) for r in loc)}: {msg}"
    if kind == "extra_forbidden":
        msg = f"unknown key {str(loc[-1])!r}"
        port = str(loc[-1]) if node else None
    elif kind == "string_pattern_mismatch" and loc[:1] == ("links",):
        msg = f"link {loc[1]}: {e['input']!r} is not 'node.port'"
    return GraphError(msg + more, node=node, port=port, file=file)
