"""The editor's document: one graph, every edit the UI makes, undo and redo, open and save (no dearpygui here).

Every edit builds the graph's JSON data with the change and validates it as a whole
(``Graph.from_dict``), so ``Document.graph`` is always a valid ``animgraph.Graph``; a
refused edit raises ``EditError`` (one line) and changes nothing.  The history holds the
JSON text of each state (a few kB at these sizes), with the file its relative asset paths
are anchored to, so undo and redo restore a state exactly.
"""

from __future__ import annotations

import copy
import math
from contextlib import contextmanager
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from animgraph.errors import AnimgraphError, GraphError
from animgraph.fileio import atomic_write_text
from animgraph.graph import VERSION, AssetSpec, Graph, parse_json
from animgraph.node import REGISTRY, Node

from . import clipboard
from . import links as linkrules
from .fills import fills, joint_names, read_skeleton
from .history import History
from .palette import field_specs

ID_PATTERN = next(m.pattern for m in Node.model_fields["id"].metadata if getattr(m, "pattern", None))


class EditError(AnimgraphError):
    """An edit the document refused, with the one-line reason (the status bar shows it)."""


class ReadOnlyError(EditError):
    """A save refused because the target file is read-only (it is never written: save it under another name)."""


@dataclass(frozen=True)
class Problem:
    """One validation problem: the node and port it is about (if any), the message, and the full text.

    ``text`` is ``str(GraphError)``: the same words as ``animgraph validate`` prints.
    """

    node: str | None
    port: str | None
    message: str
    text: str


@dataclass(frozen=True)
class Validation:
    """The result of planning the document: the plan (None if it failed), problems, warnings."""

    plan: object
    problems: list = field(default_factory=list)
    warnings: list = field(default_factory=list)

    @property
    def ok(self):
        return self.plan is not None


class Document:
    """A graph being edited: ``graph``, the ``path`` it was opened from or saved to, ``dirty``, ``revision``."""

    def __init__(self, graph, path=None, dirty=False):
        self.path = Path(path) if path is not None else None
        self.graph = graph = _settled(graph)
        self.revision = 0
        self.history = History(saved=not dirty)
        self._text = graph.to_json()
        self._validation = None  # ((revision, kwargs), Validation)
        self._skeletons = {}  # first asset (name, spec, anchor) -> Skeleton or None
        self.read_assets = True  # False: skeleton() reads no clip (the editor, while the clip readers compile)
        self._batch = None  # (text, anchor) of the state a batch started from, while one is open

    # ------------------------------------------------------------ files

    @classmethod
    def new(cls):
        """The walk clip played in a loop into an output, with root motion (it walks on, no snap back at a loop)."""
        data = {
            "format": "animgraph.graph", "version": VERSION,
            "assets": {"walk": "animgraph:walk"},
            "nodes": [{"id": "walk", "type": "sample", "clip": "walk", "loop": True, "root_motion": True},
                      {"id": "out", "type": "output"}],
            "links": [["walk.pose", "out.pose"], ["walk.motion", "out.motion"]],
            "editor": {"positions": {"walk": [40, 40], "out": [320, 40]}},
        }
        return cls(Graph.from_dict(data))

    @classmethod
    def open(cls, path):
        """The graph file at ``path`` (GraphError, one line, on any bad file; the file is only read)."""
        return cls(Graph.load(path), path)

    @classmethod
    def from_graph(cls, graph, path=None, dirty=False):
        """A document of ``graph`` (its assets anchored at ``path``, re-anchored if the graph came from elsewhere)."""
        path = Path(path) if path is not None else None
        if _anchor(graph.path) != _anchor(path):
            graph = Graph.from_dict(graph.to_dict(base_dir=_anchor(path)), file=path)
        return cls(graph, path, dirty)

    def save(self, path=None):
        """Write the graph atomically to ``path`` (default: ``self.path``); EditError saying why if it cannot."""
        path = Path(path) if path is not None else self.path
        if path is None:
            raise EditError("the document has no file yet: save it under a name")
        try:
            mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
        except OSError:
            mode = None
        if mode is not None and not mode & 0o222:  # the mode bits, not access(): root may write anything
            raise ReadOnlyError(f"{path} is read-only: not saved (save it under another name)")
        try:
            text = self.graph.to_json(base_dir=_anchor(path))
            atomic_write_text(path, text)
            if mode is not None:
                os.chmod(path, mode)  # the new file keeps the old one's permissions
        except OSError as e:
            raise EditError(f"cannot save {path}: {e.strerror or e}") from None
        self.path = path
        self._show(Graph.from_dict(parse_json(text, path), file=path))  # relative assets now anchored at path
        self.history.mark_saved()

    def to_json(self):
        """The graph file text of the current state (asset paths as anchored)."""
        return self._text  # made once per state (``_show``), the text the history and ``_apply`` compare

    @property
    def dirty(self):
        """Whether the current state differs from the one last opened or saved."""
        return self.history.dirty

    # ------------------------------------------------------------ nodes

    def add_node(self, type, node_id=None, pos=(0.0, 0.0), **fields):
        """Add a node of ``type`` (defaults, its EXAMPLE, fills for required fields, then ``fields``); returns its id."""
        cls = REGISTRY.get(type)
        if cls is None:
            raise EditError(f"unknown node type {type!r} (valid types: {', '.join(sorted(REGISTRY))})")
        node_id = self._free_id(type) if node_id is None else node_id
        self._check_new_id(node_id)
        xy = _xy(pos)
        entry = self._entry(type, node_id, fields)
        data = self._data()
        data["nodes"].append(entry)
        _positions(data)[node_id] = xy
        self._apply(data)
        return node_id

    def _entry(self, type_name, node_id, fields):
        """A new node's JSON entry: its EXAMPLE, fills for required fields, then ``fields``."""
        cls = REGISTRY[type_name]
        entry = {"id": node_id, "type": type_name, **copy.deepcopy(cls.EXAMPLE)}
        filled = fills(field_specs(cls, self.joints(), tuple(self.graph.assets)), self.skeleton(), self.joints())
        return entry | {k: v for k, v in filled.items() if k not in entry and k not in fields} | fields

    def linkable(self, ref, kind):
        """[(type, fields, port)] of the node types a new node of which can be linked to pin ``ref`` ('node.port',
        ``kind`` 'out' or 'in'): ``port`` is the new node's input (or output) taking it; ``fields`` set its signal
        kind where the type has one to set.  Sorted by type."""
        nid, _, name = ref.partition(".")
        ins, outs = self.ports(nid)
        pin = next((p for p in (outs if kind == "out" else ins) if p.name == name), None)
        if pin is None:
            raise EditError(f"node {nid!r} has no {'output' if kind == 'out' else 'input'} {name!r}")
        found = []
        for type_name in sorted(REGISTRY):
            cls = REGISTRY[type_name]
            tries = [{}] + ([{"signal": pin.signal}] if "signal" in cls.model_fields and pin.signal != "pose" else [])
            for fields in tries:
                port = self._fitting_port(type_name, fields, ref, kind, pin)
                if port is not None:
                    found.append((type_name, fields, port))
                    break
        return found

    def probe(self, type, **fields):
        """(id, inputs, outputs) a new ``type`` node with ``fields`` would have here (nothing is added); EditError
        if it cannot be made."""
        if type not in REGISTRY:
            raise EditError(f"unknown node type {type!r}")
        node_id = fields.pop("id", None) or self._free_id(type)
        try:
            node = REGISTRY[type].model_validate(self._entry(type, node_id, fields) | {"type": type})
        except Exception as e:  # noqa: BLE001 (pydantic's error, or a fill that needs what this graph lacks)
            raise EditError(f"a {type!r} node cannot be made here: {str(e).splitlines()[0]}") from None
        return node_id, tuple(node.inputs()), tuple(node.outputs())

    def _fitting_port(self, type_name, fields, ref, kind, pin):
        """The first port of a new ``type_name`` node (with ``fields``) a link with pin ``ref`` may use, or None."""
        try:
            _, ins, outs = self.probe(type_name, **fields)
        except EditError:  # a type that needs what this graph lacks: not offered
            return None
        for port in (ins if kind == "out" else outs):
            if port.signal != pin.signal:
                continue
            if pin.signal == "pose" and "any" not in (port.space or "any", pin.space or "any") and \
                    port.space != pin.space:
                continue
            return port.name
        return None

    def add_linked(self, type, ref, kind, pos=(0.0, 0.0)):
        """Add a node of ``type`` at ``pos`` linked to pin ``ref`` (one undo step); returns its id."""
        offer = next(((f, port) for t, f, port in self.linkable(ref, kind) if t == type), None)
        if offer is None:
            raise EditError(f"no port of a {type!r} node links to {ref}")
        fields, port = offer
        with self.batch():
            nid = self.add_node(type, pos=pos, **fields)
            if kind == "out":
                self.connect(ref, f"{nid}.{port}")
            else:
                self.connect(f"{nid}.{port}", ref)
        return nid

    def remove_node(self, node_id):
        """Remove a node with its links and position."""
        self._node(node_id)
        data = self._data()
        data["nodes"] = [n for n in data["nodes"] if n["id"] != node_id]
        data["links"] = [ln for ln in data["links"] if node_id not in (_nid(ln[0]), _nid(ln[1]))]
        _positions(data).pop(node_id, None)
        _drop_from_comments(data, {node_id})
        inner = data["editor"].get("states", {})
        inner.pop(node_id, None)
        if not inner:
            data["editor"].pop("states", None)
        self._apply(data)

    def set_field(self, node_id, field, value):
        """Set one field of a node, validated by its model; links to ports the change removes are dropped."""
        self.set_fields(node_id, {field: value})

    def set_fields(self, node_id, values):
        """Set several fields of a node at once (``{field: value}``, validated together: a state machine's states
        and the transitions that name them); links to ports the change removes are dropped.  One undo step."""
        node = self._node(node_id)
        fields = type(node).model_fields
        for field in values:
            if field in ("id", "type"):
                raise EditError(f"node {node_id!r}: {'rename the node' if field == 'id' else 'a node keeps its type'}"
                                f" instead of setting {field!r}")
            if field not in fields:
                raise EditError(f"node {node_id!r} has no field {field!r} (fields: "
                                f"{', '.join(f for f in fields if f not in ('id', 'type'))})")
        graph = self._with_fields(node, values)
        stale = linkrules.stale_links(graph, node_id)
        data = graph.to_dict()
        data["links"] = [ln for ln in data["links"] if tuple(ln) not in set(map(tuple, stale))]
        self._apply(data)

    def _with_fields(self, node, values):
        """The graph with ``node.field = value`` for each of ``values``; a changed signal kind (one field set alone)
        resets fields that only fit the old kind."""
        entry = next(n for n in self._data()["nodes"] if n["id"] == node.id)
        widgets = {s.name: s.widget for s in field_specs(node)}
        followed, ports = type(node).follow_edit(entry, entry | values)  # a renamed state's references
        tries = [followed]
        field, value = next(iter(values.items()))
        if len(values) == 1 and widgets[field] == "signal":
            # value fields follow the kind; then whatever only the old kind allowed
            tries.append({k: v for k, v in entry.items() if widgets.get(k) != "value"} | {field: value})
            keep = {k for k, info in type(node).model_fields.items() if info.is_required()} | {"id", "type"}
            tries.append({k: v for k, v in entry.items() if k in keep} | {field: value})
        first = None
        for attempt in tries:
            data = self._data()
            data["nodes"] = [attempt if n["id"] == node.id else n for n in data["nodes"]]
            data["links"] = [[_port_renamed(ref, node.id, ports) for ref in link] for link in data["links"]]
            try:
                return self._build(data)
            except EditError as e:
                first = first or e
        raise first

    def move(self, node_id, pos):
        """Place a node in the editor at ``pos`` (x, y)."""
        self._node(node_id)
        data = self._data()
        _positions(data)[node_id] = _xy(pos)
        self._apply(data)

    def move_many(self, positions):
        """Place several nodes at once, ``{id: (x, y)}``: one undo step (the editor's Arrange)."""
        data = self._data()
        for node_id, pos in positions.items():
            self._node(node_id)
            _positions(data)[node_id] = _xy(pos)
        self._apply(data)

    def inner_positions(self, node_id):
        """{part name: (x, y)} of what the editor draws inside a node (a state machine's states), stored under
        ``editor.states.<node id>``; empty if none is placed yet."""
        stored = self.graph.editor.get("states", {}).get(node_id, {})
        return {k: (float(v[0]), float(v[1])) for k, v in stored.items()
                if isinstance(v, (list, tuple)) and len(v) == 2}

    def move_inner(self, node_id, positions, keep=None):
        """Place parts inside node ``node_id`` (``{name: (x, y)}``, one undo step); ``keep``: the names that stay
        (the others' positions are dropped)."""
        self._node(node_id)
        data = self._data()
        inner = data["editor"].setdefault("states", {}).setdefault(node_id, {})
        for name, pos in positions.items():
            inner[name] = _xy(pos)
        if keep is not None:
            for name in [k for k in inner if k not in keep]:
                del inner[name]
        if not inner:
            del data["editor"]["states"][node_id]
        if not data["editor"]["states"]:
            del data["editor"]["states"]
        self._apply(data)

    def position(self, node_id):
        """The editor position (x, y) of a node; (0, 0) if it has none."""
        xy = self.graph.editor.get("positions", {}).get(node_id)
        return (float(xy[0]), float(xy[1])) if isinstance(xy, (list, tuple)) and len(xy) == 2 else (0.0, 0.0)

    def rename(self, node_id, new_id):
        """Give a node a new id; its links and position follow."""
        self._node(node_id)
        if new_id == node_id:
            return
        self._check_new_id(new_id)
        data = self._data()
        for n in data["nodes"]:
            if n["id"] == node_id:
                n["id"] = new_id
        data["links"] = [[_renamed(ref, node_id, new_id) for ref in ln] for ln in data["links"]]
        positions = _positions(data)
        if node_id in positions:
            positions[new_id] = positions.pop(node_id)
        for frame in data["editor"].get("comments", []):
            frame["nodes"] = [new_id if n == node_id else n for n in frame["nodes"]]
        inner = data["editor"].get("states", {})
        if node_id in inner:
            inner[new_id] = inner.pop(node_id)
        self._apply(data)

    def copy(self, ids):
        """A clipboard fragment of the nodes ``ids``: their entries, positions, the links and frames among them."""
        for nid in ids:
            self._node(nid)
        return clipboard.copy(self._data(), ids)

    def paste(self, fragment, offset=(40.0, 40.0)):
        """Add a ``copy`` fragment moved by ``offset`` pixels, every node with a fresh id (one undo step);
        returns {old id: new id}."""
        try:
            data, names = clipboard.paste(self._data(), fragment, offset)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise EditError(f"not pasted: the clipboard holds no nodes ({type(e).__name__}: {e})") from None
        self._apply(data)
        return names

    # ------------------------------------------------------------ comment frames

    def comments(self):
        """The comment frames: [{'title': text, 'nodes': [id, ...]}], stored under ``editor.comments``."""
        return copy.deepcopy(self.graph.editor.get("comments", []))

    def add_comment(self, title, ids):
        """Frame the nodes ``ids`` with a titled comment (one undo step); returns its index."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            raise EditError("select the nodes to frame first")
        for nid in ids:
            self._node(nid)
        if not isinstance(title, str):
            raise EditError(f"a comment title is text, got {type(title).__name__}")
        data = self._data()
        data["editor"].setdefault("comments", []).append({"title": title, "nodes": ids})
        self._apply(data)
        return len(data["editor"]["comments"]) - 1

    def set_comment_title(self, index, title):
        """Retitle comment frame ``index``."""
        data = self._data()
        self._comment(data, index)["title"] = str(title)
        self._apply(data)

    def remove_comment(self, index):
        """Remove comment frame ``index`` (its nodes stay)."""
        data = self._data()
        self._comment(data, index)
        del data["editor"]["comments"][index]
        if not data["editor"]["comments"]:
            del data["editor"]["comments"]
        self._apply(data)

    @staticmethod
    def _comment(data, index):
        frames = data["editor"].get("comments", [])
        if not isinstance(index, int) or not 0 <= index < len(frames):
            raise EditError(f"no comment frame {index!r} ({len(frames)} frames)")
        return frames[index]

    # ------------------------------------------------------------ batches

    @contextmanager
    def batch(self):
        """Edits made inside ``with doc.batch():`` are one undo step; an error inside undoes them all."""
        if self._batch is not None:  # nested: the outer batch is the step
            yield
            return
        self._batch = start = (self._text, self.path)
        try:
            yield
        except BaseException:
            self._batch = None
            if self._text != start[0]:
                self._show(Graph.from_dict(parse_json(start[0]), file=start[1]))
            raise
        self._batch = None
        if self._text != start[0]:
            self.history.record(*start)

    def ports(self, node_id):
        """(inputs, outputs) of this node instance: Port tuples (they vary with fields)."""
        node = self._node(node_id)
        return tuple(node.inputs()), tuple(node.outputs())

    def field_specs(self, node_id):
        """palette.field_specs of a node with this document's joints and assets as choices."""
        return field_specs(self._node(node_id), self.joints(), tuple(self.graph.assets))

    # ------------------------------------------------------------ links

    def can_connect(self, src, dst):
        """None if the link ``src -> dst`` ('node.port') may be made (replacing a link into dst), else why not."""
        return linkrules.refusal(self.graph, src, dst)

    def connect(self, src, dst):
        """Link output ``src`` to input ``dst``, replacing a link into ``dst``; EditError with the reason if refused."""
        why = self.can_connect(src, dst)
        if why:
            raise EditError(why)
        data = self._data()
        old = next((i for i, ln in enumerate(data["links"]) if ln[1] == dst), None)
        if old is None:
            data["links"].append([src, dst])
        else:
            data["links"][old] = [src, dst]
        self._apply(data)

    def disconnect(self, src, dst):
        """Remove the link ``src -> dst``."""
        data = self._data()
        if [src, dst] not in data["links"]:
            raise EditError(f"no link {src} -> {dst}")
        data["links"].remove([src, dst])
        self._apply(data)

    # ------------------------------------------------------------ assets, description

    def add_asset(self, name, spec):
        """Add clip asset ``name``: 'animgraph:NAME', a path relative to the graph file, or an AssetSpec/dict."""
        if not isinstance(name, str) or not name:
            raise EditError(f"an asset name is a non-empty text, got {name!r}")
        if name in self.graph.assets:
            raise EditError(f"asset {name!r} exists already")
        self._set_asset(name, spec)

    def set_asset(self, name, spec):
        """Change what clip asset ``name`` reads."""
        if name not in self.graph.assets:
            raise EditError(f"no asset {name!r} (assets: {', '.join(self.graph.assets) or 'none'})")
        self._set_asset(name, spec)

    def _set_asset(self, name, spec):
        data = self._data()
        data["assets"][name] = spec.model_dump(exclude_defaults=True) if isinstance(spec, AssetSpec) else spec
        self._check_reads(self._build(data), name)
        self._apply(data)

    def _check_reads(self, graph, name):
        """EditError (one line) unless asset ``name`` of ``graph`` reads, with the skeleton of the graph's other assets."""
        from animgraph.assets import load_assets

        one = Graph.from_dict({"format": "animgraph.graph", "version": graph.version,
                               "assets": {name: graph.to_dict()["assets"][name]}}, file=self.path)
        first = next(iter(self.graph.assets), None)
        try:
            load_assets(one, skeleton=self.skeleton() if first not in (None, name) else None)
        except AnimgraphError as e:
            raise EditError(f"not added: {e.message if isinstance(e, GraphError) else e}") from None

    def remove_asset(self, name):
        """Remove clip asset ``name``; refused while a node uses it."""
        if name not in self.graph.assets:
            raise EditError(f"no asset {name!r} (assets: {', '.join(self.graph.assets) or 'none'})")
        for node in self.graph.nodes:
            for spec in field_specs(node):
                if spec.widget == "clip" and getattr(node, spec.name) == name:
                    raise EditError(f"asset {name!r} is used by node {node.id!r} field {spec.name!r}")
        data = self._data()
        del data["assets"][name]
        self._apply(data)

    def set_description(self, text):
        """Set the graph's one-line description."""
        if not isinstance(text, str):
            raise EditError(f"a description is text, got {type(text).__name__}")
        data = self._data()
        data["description"] = text
        self._apply(data)

    # ------------------------------------------------------------ undo, redo

    @property
    def can_undo(self):
        return self.history.can_undo

    @property
    def can_redo(self):
        return self.history.can_redo

    def undo(self):
        """Go back one edit; False if there is none."""
        return self._restore(self.history.undo(self._text, self.path))

    def redo(self):
        """Re-apply the last undone edit; False if there is none."""
        return self._restore(self.history.redo(self._text, self.path))

    def _restore(self, state):
        if state is None:
            return False
        text, anchor = state
        graph = Graph.from_dict(parse_json(text), file=anchor)
        if _anchor(anchor) != _anchor(self.path):  # saved elsewhere since: keep the assets pointing at their files
            graph = Graph.from_dict(graph.to_dict(base_dir=_anchor(self.path)), file=self.path)
        self._show(graph)
        return True

    # ------------------------------------------------------------ validation, skeleton

    def validate(self, **plan_kwargs):
        """Plan the graph (``make_plan(graph, batch=1, warn=False, **plan_kwargs)``); cached per revision."""
        key = (self.revision, plan_kwargs)
        if self._validation is not None and _same_key(self._validation[0], key):
            return self._validation[1]
        from animgraph.plan import make_plan

        try:
            plan = make_plan(self.graph, batch=1, warn=False, **plan_kwargs)
            result = Validation(plan, [], list(plan.warnings))
        except GraphError as e:
            result = Validation(None, [Problem(e.node, e.port, e.message, str(e))])
        except AnimgraphError as e:
            result = Validation(None, [Problem(None, None, str(e), str(e))])
        self._validation = (key, result)
        return result

    def check(self):
        """Problems of the graph's links, ports and schedule only: no clip is read, nothing compiles."""
        from animgraph.check import check

        try:
            check(self.graph, self.graph.path, warn=False)
        except GraphError as e:
            return [Problem(e.node, e.port, e.message, str(e))]
        return []

    def skeleton(self):
        """The skeleton of the first asset (the graph's skeleton), or None if there is none, it cannot be read or
        ``read_assets`` is off."""
        if not self.graph.assets or not self.read_assets:
            return None
        name, spec = next(iter(self.graph.assets.items()))
        key = (name, repr(spec), str(_anchor(self.path)), self.graph.version)
        if key not in self._skeletons:
            self._skeletons[key] = read_skeleton(self.graph, name)
        return self._skeletons[key]

    def joints(self):
        """Joint names of the skeleton for widgets: the canonical name (e.g. 'left_foot') where there is one."""
        return joint_names(self.skeleton())

    # ------------------------------------------------------------ internals

    def _node(self, node_id):
        for n in self.graph.nodes:
            if n.id == node_id:
                return n
        raise EditError(f"no node {node_id!r}")

    def _free_id(self, type):
        taken = {n.id for n in self.graph.nodes}
        return next(c for c in (type, *(f"{type}_{k}" for k in range(2, len(taken) + 3))) if c not in taken)

    def _check_new_id(self, node_id):
        if not isinstance(node_id, str) or not re.match(ID_PATTERN, node_id):
            raise EditError(f"{node_id!r} is not a node id (a letter or _, then letters, digits or _)")
        if any(n.id == node_id for n in self.graph.nodes):
            raise EditError(f"node id {node_id!r} is taken")

    def _data(self):
        data = self.graph.to_dict()
        data.setdefault("editor", {})
        return data

    def _build(self, data):
        try:
            return _settled(Graph.from_dict(data, file=self.path))
        except GraphError as e:
            where = f"node {e.node!r}" + (f" field {e.port!r}" if e.port else "") + ": " if e.node else ""
            raise EditError(where + e.message) from None

    def _apply(self, data):
        """Make ``data`` the current state (one undo step) unless it is invalid (EditError) or changes nothing."""
        if not data.get("editor", {}).get("positions", True):
            del data["editor"]["positions"]
        graph = self._build(data)
        if graph.to_json() == self._text:
            return
        if self._batch is None:
            self.history.record(self._text, self.path)
        self._show(graph)

    def _show(self, graph):
        self.graph = graph
        self._text = graph.to_json()
        self.revision += 1


def _settled(graph, tries=4):
    """``graph`` read back from its own data until that changes nothing, so that a state restored from its text
    is the same state (a validator that normalizes, e.g. an axis, can move the last digit once more)."""
    text = graph.to_json()
    for _ in range(tries):
        again = Graph.from_dict(graph.to_dict(), file=graph.path)
        if again.to_json() == text:
            break
        graph, text = again, again.to_json()
    return graph


def _anchor(path):
    """The directory relative asset paths are anchored to: the file's, else the working directory."""
    return Path(path).resolve().parent if path is not None else Path.cwd().resolve()


def _nid(ref):
    return ref.partition(".")[0]


def _renamed(ref, old, new):
    node, _, port = ref.partition(".")
    return f"{new}.{port}" if node == old else ref


def _port_renamed(ref, node_id, ports):
    """Link end ``ref`` ("node.port") with the port renamed by ``ports`` when it is one of ``node_id``'s."""
    nid, _, port = ref.partition(".")
    return f"{nid}.{ports[port]}" if nid == node_id and port in ports else ref


def _drop_from_comments(data, ids):
    """Remove ``ids`` from every comment frame of ``data``; a frame left empty goes too."""
    frames = data.get("editor", {}).get("comments")
    if frames is None:
        return
    for frame in frames:
        frame["nodes"] = [n for n in frame["nodes"] if n not in ids]
    data["editor"]["comments"] = [f for f in frames if f["nodes"]]
    if not data["editor"]["comments"]:
        del data["editor"]["comments"]


def _positions(data):
    return data.setdefault("editor", {}).setdefault("positions", {})


def _xy(pos):
    """[x, y] for the file: finite numbers, whole ones written as integers (diff-friendly)."""
    try:
        x, y = (float(v) for v in pos)
    except (TypeError, ValueError):
        raise EditError(f"a position is two numbers (x, y), got {pos!r}") from None
    if not (math.isfinite(x) and math.isfinite(y)):
        raise EditError(f"a position must be finite, got {pos!r}")
    return [int(v) if v.is_integer() and abs(v) < 2 ** 53 else v for v in (x, y)]


def _same_key(a, b):
    """Same revision and the same plan arguments (compared by identity: they may be clips or arrays)."""
    return a[0] == b[0] and a[1].keys() == b[1].keys() and all(a[1][k] is b[1][k] for k in a[1])
