"""Copy and paste of nodes on a graph's JSON data (no dearpygui here).

A fragment is plain JSON data: the copied nodes' entries, the links between them (links
from or to a node left behind are not copied), their positions and the comment frames
whose nodes were all copied.  Pasting gives every node a fresh id (its old one, else
``id_2``, ``id_3``, ...) that no node of the graph has, and renames the fragment's links
and frames to match.
"""

from __future__ import annotations

import copy as _copy
import json


def _nid(ref):
    return ref.partition(".")[0]


def copy(data, ids):
    """The fragment of graph data ``data`` (``Graph.to_dict()``) holding the nodes ``ids`` and what is between them."""
    ids = set(ids)
    editor = data.get("editor", {})
    positions = editor.get("positions", {})
    return {
        "nodes": [_copy.deepcopy(n) for n in data["nodes"] if n["id"] in ids],
        "links": [list(ln) for ln in data["links"] if _nid(ln[0]) in ids and _nid(ln[1]) in ids],
        "positions": {k: list(v) for k, v in positions.items() if k in ids},
        "comments": [_copy.deepcopy(c) for c in editor.get("comments", [])
                     if c.get("nodes") and set(c["nodes"]) <= ids],
    }


def fresh_id(base, taken):
    """``base`` if it is not taken, else ``base_2``, ``base_3``, ... (a trailing ``_N`` of base is dropped first)."""
    if base not in taken:
        return base
    stem, _, tail = base.rpartition("_")
    stem = stem if stem and tail.isdigit() else base
    k = 2
    while f"{stem}_{k}" in taken:
        k += 1
    return f"{stem}_{k}"


def paste(data, fragment, offset=(40.0, 40.0)):
    """(new data, {old id: new id}): ``fragment`` added to graph data ``data``, moved by ``offset`` pixels."""
    data = _copy.deepcopy(data)
    fragment = json.loads(json.dumps(fragment))  # a private copy, JSON types only
    taken = {n["id"] for n in data["nodes"]}
    names = {}
    for node in fragment["nodes"]:
        names[node["id"]] = fresh_id(node["id"], taken)
        taken.add(names[node["id"]])
        data["nodes"].append(node | {"id": names[node["id"]]})

    def rename(ref):
        node, _, port = ref.partition(".")
        return f"{names[node]}.{port}"

    data["links"] += [[rename(a), rename(b)] for a, b in fragment["links"]]
    editor = data.setdefault("editor", {})
    positions = editor.setdefault("positions", {})
    for old, new in names.items():
        x, y = fragment["positions"].get(old, (0.0, 0.0))
        positions[new] = [x + offset[0], y + offset[1]]
    for frame in fragment.get("comments", []):
        editor.setdefault("comments", []).append(frame | {"nodes": [names[n] for n in frame["nodes"]]})
    return data, names
