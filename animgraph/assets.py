"""A graph's assets: clips (BVH and other clip files, bundled clips) and motion databases, loaded once.

Assets are BVH or glTF (.glb/.gltf, version 2 and later: ``animgraph.gltf.load_gltf``) paths relative to the
graph file, ``{"path": ..., options}``, ``"animgraph:NAME"``
for a bundled clip, or ``{"database": ...}`` (a motion database built from clips, or a saved
one); they must share one skeleton (the same parents).  Version-1 graphs read paths raw
(times ``scale``); version 2 reads them as ``clipfile.read_clip`` with the asset's ``units``,
``first_frame`` and ``names``.

Loading the same file again (same resolved path, modification time and size, same options)
returns what the first load returned, without reading it: the editor plans again on every
edit.  What is returned is shared: treat its arrays as read-only.
"""

from __future__ import annotations

import collections
import copy
import os
from pathlib import Path

import numpy as np

from .clipfile import is_gltf
from .errors import AnimgraphError, GraphError
from .graph import BUNDLED_PREFIX, AssetSpec, DatabaseSpec
from .pose import Clip

CACHE_MAX = 32  # assets kept in memory (the newest used)
_CACHE = collections.OrderedDict()  # key -> (Skeleton, Clip)
_TRACKED = collections.OrderedDict()  # (id of a loaded Clip, tracks options) -> (that Clip, its copy with tracks)


def _stamp(path):
    """(resolved path, mtime in ns, size in bytes) of a file: what tells one version of it from another."""
    path = Path(path).resolve()
    stat = os.stat(path)
    return str(path), stat.st_mtime_ns, stat.st_size


def _cached(key, read):
    """``read()``, or what it returned for ``key`` before (the newest ``CACHE_MAX`` kept)."""
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = read()
    _CACHE[key] = value
    while len(_CACHE) > CACHE_MAX:
        _CACHE.popitem(last=False)
    return value


def _read_bvh(path, scale):
    from .bvh import load_bvh

    return _cached(("bvh", _stamp(path), scale), lambda: load_bvh(path, scale=scale))


def _read_clip(path, units, first_frame, names, name):
    from .clipfile import read_clip

    def read():
        skel, clip, _ = read_clip(path, units=units, first_frame=first_frame, names=names, name=name)
        return skel, clip

    return _cached(("clip", _stamp(path), units, first_frame, names, name), read)


def _user(graph, asset):
    """(node id, field) of the first node naming ``asset`` in a field, for error messages."""
    for node in graph.nodes:
        for name, value in node:
            if value == asset and name not in ("id", "type"):
                return node.id, name
    return None, None


def load_asset(graph, name, spec, file):
    """(Skeleton, Clip) of one asset; version-2 options via ``_load_asset_v2``; errors name the node using it."""
    node, port = _user(graph, name)
    if isinstance(spec, DatabaseSpec):
        try:
            return _load_database(graph, name, spec)
        except AnimgraphError as e:
            raise GraphError(f"asset {name!r}: {e}", node, port, file) from None
    path, scale = (spec, 1.0) if isinstance(spec, str) else (spec.path, spec.scale)
    try:
        if graph.version >= 2:
            return _load_asset_v2(graph, name, AssetSpec(path=spec) if isinstance(spec, str) else spec, node, port)
        if path.startswith(BUNDLED_PREFIX):
            from . import data

            bundled = path[len(BUNDLED_PREFIX):]
            if bundled not in data.names():
                raise GraphError(
                    f"asset {name!r}: no bundled clip {bundled!r} (bundled: {', '.join(data.names())})",
                    node, port, file,
                )
            skel, clip = data.load(bundled)
            if scale != 1.0:
                clip = Clip(skel, clip.pos * scale, clip.rot, clip.scl, clip.dt)
            return skel, clip
        full = Path(graph.base_dir) / path
        if not full.is_file():
            raise GraphError(f"asset {name!r}: file not found: {full}", node, port, file)
        if is_gltf(full):
            raise GraphError(f"asset {name!r}: a glTF asset ({full.name}) needs graph format version 2 or later "
                             "(version 1 reads BVH files only)", node, port, file)
        return _read_bvh(str(full.resolve()), float(scale))
    except GraphError:
        raise
    except AnimgraphError as e:
        raise GraphError(f"asset {name!r}: {e}", node, port, file) from None


def _load_asset_v2(graph, name, spec, node, port):
    """A version-2 asset: the file (a bundled clip's too) read with ``clipfile.read_clip`` and the spec's options."""
    from . import data

    file = graph.path
    if spec.path.startswith(BUNDLED_PREFIX):
        bundled = spec.path[len(BUNDLED_PREFIX):]
        if bundled not in data.names():
            raise GraphError(
                f"asset {name!r}: no bundled clip {bundled!r} (bundled: {', '.join(data.names())})", node, port, file
            )
        if (spec.units, spec.first_frame, spec.names) == ("auto", "auto", "auto"):
            return data.load(bundled)
        full, clip_name = data.path(bundled), bundled
    else:
        full, clip_name = Path(graph.base_dir) / spec.path, None
        if not full.is_file():
            raise GraphError(f"asset {name!r}: file not found: {full}", node, port, file)
    units = spec.units if spec.units == "auto" else float(spec.units)
    return _read_clip(str(full.resolve()), units, spec.first_frame, spec.names, clip_name)


def _load_database(graph, name, spec):
    """(Skeleton, Clip) of a database asset: its frames as one clip that carries the ``Database`` (``clip.database``)."""
    from .database import Database, cached_build
    from .features import Schema

    def where(label):
        if label.startswith(BUNDLED_PREFIX):
            return label
        return str((Path(graph.base_dir) / label).resolve())

    def stamp(label):
        if label.startswith(BUNDLED_PREFIX):
            from . import data

            return _stamp(data.path(label[len(BUNDLED_PREFIX):]))
        return _stamp(label)

    if isinstance(spec.database, str):
        file = where(spec.database)
        sources, features, read = [file], None, lambda: _as_pair(Database.load(file))
    else:
        sources = [where(c) for c in spec.database]
        features = where(spec.features) if spec.features else None

        def read():
            schema = Schema.load(features) if features else None
            return _as_pair(cached_build(sources, schema, mirror=spec.mirror))

    try:
        key = ("database", isinstance(spec.database, str), tuple(stamp(c) for c in sources),
               features and _stamp(features), bool(spec.mirror))
    except (OSError, ValueError):  # a file missing or unknown: the load says which, uncached
        return read()
    return _cached(key, read)


def _as_pair(db):
    """(Skeleton, Clip) of a motion database: its frames as one clip carrying it."""
    return db.skeleton, db.as_clip()


def loops(graph, name, spec=None):
    """Whether asset ``name``'s tracks are a loop's: its ``loop`` field, or ('auto') whether a node plays it looping."""
    given = getattr(spec, "loop", "auto")
    if given != "auto":
        return bool(given)
    return any(getattr(node, "clip", None) == name and getattr(node, "loop", False) is True for node in graph.nodes)


def with_tracks(graph, name, spec, skel, clip):
    """A copy of a loaded clip asset carrying its ``Tracks`` (``animgraph.tracks.build``); GraphError naming graph,
    asset, track and value.  The same loaded clip with the same tracks options gives the same copy (re-plans)."""
    from .tracks import TrackError, build

    entries, derive = (spec.tracks, spec.derive) if isinstance(spec, AssetSpec) else ((), True)
    loop = loops(graph, name, spec)
    key = (id(clip), repr([e.model_dump() for e in entries]), derive, loop)
    if key in _TRACKED and _TRACKED[key][0] is clip:
        _TRACKED.move_to_end(key)
        return _TRACKED[key][1]
    try:
        tracks = build(skel, clip, entries, derive, loop)
    except TrackError as e:
        raise GraphError(f"asset {name!r} {e}", file=graph.path) from None
    out = copy.copy(clip)  # the loaded clip is shared (``_cached``): the tracks are this asset's
    out.tracks = tracks
    _TRACKED[key] = (clip, out)
    while len(_TRACKED) > CACHE_MAX:
        _TRACKED.popitem(last=False)
    return out


def load_assets(graph, assets=None, skeleton=None):
    """(skeleton, {name: Clip}) of the graph's assets plus ``assets`` given in memory; clip assets carry their
    tracks (``clip.tracks``), computed here."""
    file = graph.path
    clips, sources = {}, {}
    for name, spec in graph.assets.items():
        if assets and name in assets:
            continue
        skel, clip = load_asset(graph, name, spec, file)
        if not isinstance(spec, DatabaseSpec):
            clip = with_tracks(graph, name, spec, skel, clip)
        clips[name], sources[name] = clip, skel
    for name, value in (assets or {}).items():
        skel, clip = value if isinstance(value, tuple) else (value.skeleton, value)
        clips[name], sources[name] = clip, skel
    first = None  # the asset the others are compared with; None: the skeleton the caller gave
    for name, skel in sources.items():
        if skeleton is None:
            skeleton, first = skel, name
        elif len(skel) != len(skeleton) or not np.array_equal(skel.parents, skeleton.parents):
            node, port = _user(graph, name)
            raise GraphError(
                f"asset {name!r} has a different skeleton ({len(skel)} joints) from {_source(first)} "
                f"({len(skeleton)} joints): a graph's assets share one skeleton",
                node, port, file,
            )
        elif _is_database(clips, name, first) and list(skel.names) != list(skeleton.names):
            # A database's features name joints: clips played beside it must name them alike.
            node, port = _user(graph, name)
            diff = next(i for i, (a, b) in enumerate(zip(skel.names, skeleton.names)) if a != b)
            raise GraphError(
                f"asset {name!r} has other joint names than {_source(first)} (joint {diff}: "
                f"{skel.names[diff]!r} vs {skeleton.names[diff]!r}): a database and the clips beside it share "
                "one skeleton", node, port, file,
            )
    return skeleton, clips


def _source(first):
    """How an error names the skeleton assets are compared with."""
    return "the given skeleton" if first is None else f"asset {first!r}"


def _is_database(clips, *names):
    """Whether any of the assets ``names`` is a motion-matching database (its clip carries ``database``)."""
    return any(getattr(clips.get(n), "database", None) is not None for n in names)
