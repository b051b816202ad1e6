"""Graph files: the pydantic model of a graph, its JSON form and its JSON Schema.

A graph file is JSON text meant for diffs::

    {"format": "animgraph.graph", "version": 2, "description": "...",
     "assets": {"walk": "animgraph:walk", "jog": "clips/jog.bvh",
                "mocap": {"path": "clips/x.bvh", "units": 0.01, "first_frame": "keep"}},
     "nodes": [{"id": "walk", "type": "sample", "clip": "walk"}, ...],
     "links": [["walk.pose", "out.pose"], ...],
     "editor": {"positions": {"walk": [40, 60]}}}

``nodes`` is a discriminated union on ``type`` over ``animgraph.node.REGISTRY``
(rebuilt if node types are registered later).  Unknown keys are errors.  Every
failure is an ``animgraph.GraphError`` naming the file, node id and field or port.

Versions: a graph is saved with the version it was loaded with (new graphs: ``VERSION``).
Version 1 reads path assets raw (file units, every frame, file names; ``scale``
multiplies positions).  Version 2 reads them the way ``animgraph info`` does: units,
an added T-pose frame 0 and the CMU name map decided from the data
(``animgraph.clipfile``) unless ``units``, ``first_frame`` or ``names`` say otherwise;
``scale`` is version 1's name for ``units``.  ``animgraph:NAME`` is the bundled clip
as ``ag.data.load`` gives it in every version.  Version 3 adds motion-matching database
assets (``{"database": "db.npz"}`` or ``{"database": ["animgraph:walk", ...]}``, ``DatabaseSpec``).
Version 4 adds clip tracks to a clip asset (``tracks``, ``derive``, ``loop``: ``animgraph.tracks``).
The rule (README): the version goes up when the top level or an asset's structure changes, or
when an older reader could silently misread a file; a new node type or node field needs none
(an older reader refuses the unknown key, naming the node and field).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, PrivateAttr, StringConstraints, Tag,
                      ValidationError, field_validator)
from pydantic.fields import FieldInfo

import animgraph.nodes  # noqa: F401  (registers the node types)

from .errors import GraphError
from .fileio import atomic_write_text
from .node import REGISTRY

FORMAT = "animgraph.graph"
VERSION = 4
V2_ASSET_FIELDS = ("units", "first_frame", "names")
V4_ASSET_FIELDS = ("tracks", "derive", "loop")
BUNDLED_PREFIX = "animgraph:"

TrackName = Annotated[str, Field(description="an identifier: letters, digits and _, not starting with a digit",
                                 json_schema_extra={"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"})]  # checked by _track_name
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class TrackInstant(BaseModel):
    """A named instant of a clip (version 4): ``{"name": "hit", "time": 0.42}``, seconds from the clip's start."""

    model_config = ConfigDict(extra="forbid")

    name: TrackName
    time: Seconds = Field(description="seconds from the clip's start")

    _name = field_validator("name")(lambda cls, v: _track_name(v))


class TrackRange(BaseModel):
    """A named range of a clip (version 4): ``{"name": "swing", "begin": 0.1, "end": 0.3}``; on a looping clip
    ``end < begin`` wraps through the end."""

    model_config = ConfigDict(extra="forbid")

    name: TrackName
    begin: Seconds = Field(description="seconds from the clip's start")
    end: Seconds = Field(description="seconds from the clip's start; before 'begin' only on a looping clip (wraps)")

    _name = field_validator("name")(lambda cls, v: _track_name(v))


def _track_name(value):
    from .tracks import NAME

    if not NAME.match(value):
        raise ValueError(f"track name {value!r} is not an identifier (letters, digits and _, not starting with a "
                         "digit)")
    return value


def _track_kind(value):
    """An entry with a 'time' is an instant, any other a range (each then reports its own missing or extra keys)."""
    if isinstance(value, dict):
        return "track_instant" if "time" in value else "track_range"
    return "track_instant" if isinstance(value, TrackInstant) else "track_range"


Track = Annotated[Union[Annotated[TrackInstant, Tag("track_instant")], Annotated[TrackRange, Tag("track_range")]],
                  Discriminator(_track_kind)]


PortRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")]


class AssetSpec(BaseModel):
    """A clip asset with options: a BVH path (relative to the graph file) or 'animgraph:NAME', and how to read it."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="BVH file relative to the graph file, or 'animgraph:NAME'")
    scale: float = Field(
        1.0, gt=0, allow_inf_nan=False,
        description="version 1 only: multiplies BVH positions (e.g. 0.01 for centimetres); version 2: 'units'",
    )
    units: Union[Literal["auto"], Annotated[float, Field(gt=0, allow_inf_nan=False)]] = Field(
        "auto",
        description="version 2: metres per file unit (0.01 for centimetres), or 'auto': decided from the rest "
        "pose's size, as 'animgraph info' prints it (metres, CMU cgspeed units, inches, cm or mm)",
    )
    first_frame: Literal["auto", "keep", "drop"] = Field(
        "auto",
        description="version 2: 'drop' frame 0 (an added T-pose), 'keep' it, or 'auto': dropped when it is at "
        "rest and jumps to frame 1, as 'animgraph info' prints it",
    )
    names: Literal["auto", "cmu", "none"] = Field(
        "auto",
        description="version 2: 'cmu' installs the canonical CMU joint names (animgraph.names) and requires a CMU "
        "skeleton, 'none' keeps the file's names only, 'auto' installs them when the names follow a CMU convention",
    )
    tracks: list[Track] = Field(
        default_factory=list,
        description="version 4: named instants {name, time} and ranges {name, begin, end} in seconds of the clip; "
        "a track of a derived name (left_contact, right_contact: ranges; left_plant, right_plant: instants) "
        "replaces the derived one; one name's entries in increasing time (begin)",
    )
    derive: bool = Field(
        True, description="version 4: derive the foot contact ranges and plant instants from the clip (its toes)",
    )
    loop: Union[Literal["auto"], bool] = Field(
        "auto",
        description="version 4: whether the clip's tracks are those of a loop (times modulo the period frames * dt, "
        "ranges may wrap through the end); 'auto': when a node plays the clip looping",
    )


class DatabaseSpec(BaseModel):
    """A motion-matching database asset (version 3): a file of ``animgraph mm build``, or clips built at load."""

    model_config = ConfigDict(extra="forbid")

    database: Union[Annotated[str, Field(min_length=1)], Annotated[list[Annotated[str, Field(min_length=1)]],
                                                                     Field(min_length=1)]] = Field(
        description="an .npz file written by 'animgraph mm build' (relative to the graph file), or a list of clips "
        "('animgraph:NAME' or BVH paths) built into a database when the graph loads, cached by content hash",
    )
    mirror: bool = Field(True, description="clips given as a list: add their mirror images (left turns give right)")
    features: str = Field("", description="clips given as a list: a feature schema JSON file (relative to the "
                                          "graph file); empty: the default schema")

    @field_validator("database", mode="before")
    @classmethod
    def _one_file_or_clips(cls, value):
        # One clear line instead of pydantic's report on each branch of the union.
        if isinstance(value, list) and not value:
            raise ValueError("'database' is an empty clip list: give an .npz file or at least one clip")
        if isinstance(value, list) and not all(isinstance(v, str) and v for v in value):
            raise ValueError("'database' clips must be non-empty texts ('animgraph:NAME' or BVH paths)")
        if not isinstance(value, (str, list)) or value == "":
            raise ValueError("'database' must be an .npz file name or a list of clips")
        return value

    def paths(self):
        """The file paths this asset names (the database file, or the clips and the schema)."""
        files = [self.database] if isinstance(self.database, str) else list(self.database)
        return files + ([self.features] if self.features else [])


def _asset_kind(value):
    """Which kind of asset ``value`` is, so a bad one reports its own problem, not every member's."""
    if isinstance(value, str):
        return "path"
    if isinstance(value, dict) and "database" in value or isinstance(value, DatabaseSpec):
        return "database"
    return "spec"


Asset = Annotated[Union[Annotated[str, Field(min_length=1), Tag("path")], Annotated[AssetSpec, Tag("spec")],
                        Annotated[DatabaseSpec, Tag("database")]], Discriminator(_asset_kind)]


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
    version: int = Field(
        VERSION, ge=1, le=VERSION,
        description="format version: 1 reads path assets raw, 2 decides units, T-pose frame and names from the data, "
        "3 adds database assets, 4 adds clip tracks (an asset's tracks, derive, loop)",
    )
    description: str = Field("", description="one line saying what the graph does")
    assets: dict[str, Asset] = Field(
        default_factory=dict,
        description="clip name -> BVH path relative to the graph file, 'animgraph:NAME' for a bundled clip, "
        "or {path, ...options}; in version 2 a plain path means every option 'auto'",
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
        if not isinstance(path, (str, os.PathLike)):
            raise GraphError(f"Graph.load: path must be a str or Path, got {type(path).__name__}")
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise GraphError(f"cannot read graph file: {e.strerror or e}", file=path) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise GraphError(f"not UTF-8 text: byte 0x{raw[e.start]:02x} at offset {e.start}", file=path) from None
        return cls.from_dict(parse_json(text, path), file=path)

    @classmethod
    def from_dict(cls, data, file=None):
        """Validate a graph from its JSON data (``file`` is named in errors and anchors asset paths)."""
        file = Path(file) if file is not None else None
        _precheck(data, file)
        sync_registry()
        try:
            graph = cls.model_validate(data)
        except ValidationError as e:
            inner = (e.errors()[0].get("ctx") or {}).get("error")
            if isinstance(inner, GraphError):  # raised by __init__, which pydantic calls
                raise GraphError(inner.message, inner.node, inner.port, file) from None
            raise _graph_error(e, data, file) from None
        _check_asset_fields(graph, file)
        graph._path = file
        return graph

    def __init__(self, **data):
        """A graph from keyword fields (``nodes=[...]``, ``links=[...]``, ...); GraphError naming the field."""
        sync_registry()
        try:
            super().__init__(**data)
        except ValidationError as e:
            raise _graph_error(e, data, None) from None

    # ------------------------------------------------------------ save

    def to_dict(self, base_dir=None):
        """The JSON data of the graph: defaults left out of nodes, keys in a fixed order."""
        data = {"format": FORMAT, "version": self.version}
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
        if isinstance(spec, DatabaseSpec):
            data = spec.model_dump(exclude_defaults=True)
            move = lambda p: self._anchored(p, base_dir)  # noqa: E731
            data["database"] = move(spec.database) if isinstance(spec.database, str) else [move(p) for p in
                                                                                            spec.database]
            if spec.features:
                data["features"] = move(spec.features)
            return data
        rel = self._anchored(spec if isinstance(spec, str) else spec.path, base_dir)
        if isinstance(spec, str):
            return rel
        return spec.model_dump(exclude_defaults=True) | {"path": rel}

    def _anchored(self, rel, base_dir):
        """A relative asset path re-expressed relative to ``base_dir`` (bundled names and absolute paths as they are)."""
        if base_dir is not None and not rel.startswith(BUNDLED_PREFIX) and not os.path.isabs(rel):
            rel = os.path.relpath(os.path.normpath(self.base_dir.resolve() / rel), base_dir).replace(os.sep, "/")
        return rel

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


MAX_DEPTH = 32  # nesting of JSON arrays and objects in a graph file
MAX_INT_DIGITS = 20


def parse_json(text, file=None):
    """JSON text of a graph file as Python data; GraphError for anything JSON or a graph file cannot hold.

    Refused: NaN/Infinity, numbers too large for a float (``1e309``), integers of more than 20
    digits, duplicate keys in an object, and nesting deeper than ``MAX_DEPTH``.
    """
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float, parse_int=_short_int,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as e:
        raise GraphError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", file=file) from None
    except ValueError as e:
        raise GraphError(str(e), file=file) from None
    except RecursionError:
        raise GraphError(f"JSON nested deeper than {MAX_DEPTH} levels", file=file) from None
    _check_depth(data, file)
    return data


def _reject_constant(name):
    raise ValueError(f"{name} is not allowed in a graph file")


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is too large for a graph file")
    return value


def _short_int(text):
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer {text[:24]}... has more than {MAX_INT_DIGITS} digits")
    return int(text)


def _unique_keys(pairs):
    data = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"duplicate key {key!r} in a JSON object")
        data[key] = value
    return data


def _check_depth(data, file):
    """GraphError if JSON data nests arrays and objects deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list, tuple)):
            if depth > MAX_DEPTH:
                raise GraphError(f"JSON nested deeper than {MAX_DEPTH} levels", file=file)
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))


# ---------------------------------------------------------------- errors


def _precheck(data, file):
    """Checks before pydantic: object shape, format tag, version (a newer file is refused), unique ids."""
    if not isinstance(data, dict):
        raise GraphError(f"a graph file holds a JSON object, not {type(data).__name__}", file=file)
    _check_depth(data, file)
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
    nodes = data.get("nodes")
    for n in nodes if isinstance(nodes, list) else []:
        nid = n.get("id") if isinstance(n, dict) else None
        if isinstance(nid, str):
            if nid in seen:
                raise GraphError("duplicate node id", node=nid, file=file)
            seen.add(nid)


def _check_asset_fields(graph, file):
    """Asset options of the other version are refused: they would be ignored or mean something else."""
    for name, spec in graph.assets.items():
        if isinstance(spec, DatabaseSpec):
            if graph.version < 3:
                raise GraphError(f"asset {name!r}: a 'database' asset needs version 3 (this file is version "
                                 f"{graph.version})", file=file)
            continue
        if isinstance(spec, str):
            continue
        given = spec.model_fields_set
        if graph.version < 4 and given & set(V4_ASSET_FIELDS):
            field = next(f for f in V4_ASSET_FIELDS if f in given)
            raise GraphError(f"asset {name!r}: {field!r} needs version 4 (this file is version {graph.version})",
                             file=file)
        from .tracks import TrackError, check_entries

        try:
            check_entries(spec.tracks)
        except TrackError as e:
            raise GraphError(f"asset {name!r} {e}", file=file) from None
        if graph.version < 2 and given & set(V2_ASSET_FIELDS):
            field = next(f for f in V2_ASSET_FIELDS if f in given)
            raise GraphError(f"asset {name!r}: {field!r} needs version 2 (this file is version {graph.version})",
                             file=file)
        if graph.version >= 2 and "scale" in given:
            raise GraphError(f"asset {name!r}: 'scale' is version 1's; version {graph.version} uses 'units' "
                             "(metres per file unit)", file=file)


_TELLING = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number", "value_error",
            "too_short", "too_long"}


_RANGE = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}


def _union_member(part):
    """Whether a pydantic error location part names a member of a union (``bool``, ``list[...]``, ...)."""
    return isinstance(part, str) and (part in ("bool", "int", "float", "str", "none") or "[" in part
                                      or part.startswith(("constrained-", "function-")))


def _data_loc(loc, data):
    """A pydantic error location without its union-member parts: a part is kept when it is a key or index of
    ``data`` along the way (a key may look like a member, ``"["``), or when it does not look like a member."""
    out, here = [], data
    for part in loc:
        if isinstance(here, dict) and part == here.get("type"):
            out.append(part)  # a node's discriminator tag: its fields follow, in the same dict
        elif isinstance(here, dict) and part in here or isinstance(here, list) and isinstance(part, int):
            out.append(part)
            here = here[part] if isinstance(here, dict) or 0 <= part < len(here) else None
        elif not _union_member(part):
            out.append(part)
            here = None
    return tuple(out)


def _graph_error(err, data, file):
    """The first pydantic error as a GraphError naming node and field (a range error rather than a type one)."""
    errors = err.errors()
    same = [x for x in errors if tuple(x["loc"])[:4] == tuple(errors[0]["loc"])[:4]]
    e = min(same, key=lambda x: 0 if x["type"] in _TELLING else 1)
    loc, kind = _data_loc(e["loc"], data), e["type"]
    more = f" (and {len(errors) - len(same)} more problems)" if len(errors) > len(same) else ""
    node = port = None
    msg = e["msg"].removeprefix("Value error, ")
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if loc[:1] == ("nodes",) and len(loc) >= 2 and isinstance(loc[1], int) and isinstance(nodes, (list, tuple)):
        raw = nodes[loc[1]]
        node = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else f"#{loc[1]}"
        rest = list(loc[2:])
        if rest and isinstance(raw, dict) and rest[0] == raw.get("type"):
            rest = rest[1:]
        port = ".".join(str(r) for r in rest) or None
        valid = ", ".join(sorted(REGISTRY))
        if kind == "union_tag_invalid" and isinstance(raw, dict):
            msg = f"unknown node type {raw.get('type')!r} (valid types: {valid})"
        elif kind == "union_tag_not_found":
            msg = f"node has no 'type' (valid types: {valid})"
        named = re.match(r"(\w+): (.*)", msg)
        if kind == "value_error" and port is None and named and isinstance(raw, dict) and named[1] in raw:
            port, msg = named[1], named[2]  # a node-level check that names its field
    elif loc[:1] == ("assets",) and len(loc) >= 2:
        field = [str(r) for r in loc[2:] if r not in ("spec", "track_instant", "track_range")]
        msg = f"asset {loc[1]!r}{' field ' + repr('.'.join(field)) if field else ''}: {msg}"
    elif loc:
        msg = f"{'.'.join(str(r) for r in loc)}: {msg}"
    value = e.get("input")
    if kind in _RANGE and isinstance(value, (int, float)) and not isinstance(value, bool):
        msg += f", got {value!r}"  # the value out of range, as the file holds it
    if kind == "extra_forbidden":
        key = str((loc or tuple(e["loc"]) or ("?",))[-1])
        msg = f"unknown key {key!r}"
        port = key if node else None
    elif kind == "string_pattern_mismatch" and loc[:1] == ("links",):
        msg = f"link {loc[1]}: {e['input']!r} is not 'node.port'"
    return GraphError(msg + more, node=node, port=port, file=file)
