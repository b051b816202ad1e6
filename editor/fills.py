"""What the editor puts in a new node's required fields, and the joint names its widgets list.

A required clip field gets the first asset, joint fields get joints down one limb (root
first, so a two-bone chain is a real chain), other fields their first choice or a number
in range.  The skeleton is the first asset's, as the planner's.
"""

from __future__ import annotations

import math

from animgraph.errors import AnimgraphError
from animgraph.graph import Graph


def read_skeleton(graph, name):
    """The skeleton of asset ``name`` of ``graph`` (anchored as the graph), or None if it cannot be read."""
    from animgraph.assets import load_assets

    spec = graph.to_dict()["assets"][name]
    try:
        one = Graph.from_dict({"format": "animgraph.graph", "version": graph.version, "assets": {name: spec}},
                              file=graph.path)
        return load_assets(one)[0]
    except AnimgraphError:
        return None


def joint_names(skeleton):
    """Joint names in index order, the canonical one (e.g. 'left_foot') where the skeleton has one."""
    if skeleton is None:
        return ()
    canonical = {}
    for alias, j in skeleton.aliases.items():
        canonical.setdefault(j, alias)
    return tuple(canonical.get(j, name) for j, name in enumerate(skeleton.names))


def limb(skeleton, names, n):
    """``n`` of ``names`` down one limb, root first, ending at the parent of the first leaf that deep (a leg's
    hip, knee and foot on a CMU skeleton); [] if there is no such limb."""
    if skeleton is None or n == 0:
        return []
    parents = [int(p) for p in skeleton.parents]
    for leaf in range(len(parents)):
        if leaf in parents:
            continue
        chain, j = [], parents[leaf]
        while j >= 0 and len(chain) < n:
            chain.append(j)
            j = parents[j]
        if len(chain) == n:
            return [names[j] for j in reversed(chain)]
    return []


def fills(specs, skeleton, names):
    """{field: value} for the required fields among ``specs`` (palette FieldSpecs) that can be filled."""
    need = [s for s in specs if s.required]
    chain = limb(skeleton, names, sum(s.widget == "joint" for s in need))
    out = {}
    for s in need:
        value = chain.pop(0) if s.widget == "joint" and chain else fill(s)
        if value is not None:
            out[s.name] = value
    return out


def fill(spec):
    """A valid-looking value for one field: its default, first choice, a number in range, ... (None: no idea)."""
    if spec.default is not None:
        return spec.default
    if spec.widget == "joints" and spec.choices:
        return [spec.choices[0]]
    if spec.widget == "branches":
        return [{s.name: fill(s) for s in spec.items if s.required}]
    if spec.widget in ("float", "int"):
        low = spec.low if spec.low is not None else 0.0
        value = min(max(0.0, low + (1.0 if spec.low_open else 0.0)), spec.high if spec.high is not None else math.inf)
        return int(value) if spec.widget == "int" else value
    if spec.widget == "bool":
        return False
    if spec.widget == "axis":
        return [1.0, 0.0, 0.0]
    return None
