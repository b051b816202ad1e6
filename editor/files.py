"""The editor's files besides the graph: autosaves and the recent-files list (no dearpygui here).

An autosave of ``dir/name.json`` is ``dir/.name.autosave.json`` when files can be made in
``dir``; otherwise (and for the shipped graphs, which count as read-only, and for an
unsaved document) it lives in the autosave directory: ``ANIMGRAPH_AUTOSAVE``, else
``autosave/`` in the cache directory (``ANIMGRAPH_CACHE``, else ``$XDG_CACHE_HOME/animgraph``
or ``~/.cache/animgraph``).  The recent
list is ``recent.json`` in ``ANIMGRAPH_CONFIG``, else ``$XDG_CONFIG_HOME/animgraph`` or
``~/.config/animgraph``.  Every write is atomic.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import animgraph.graphs
from animgraph.cache import preferred_base
from animgraph.errors import AnimgraphError
from animgraph.fileio import atomic_write_text, check_writable_dir
from animgraph.graph import Graph

from .document import Document

RECENT_MAX = 10
UNTITLED = "untitled.json"


def cache_dir():
    """Where autosaves go that cannot sit beside their graph: $ANIMGRAPH_AUTOSAVE, else <cache base>/autosave."""
    return Path(os.environ.get("ANIMGRAPH_AUTOSAVE") or Path(preferred_base()) / "autosave")


def config_dir():
    """The editor's settings directory: $ANIMGRAPH_CONFIG, else $XDG_CONFIG_HOME/animgraph or ~/.config/animgraph."""
    return Path(os.environ.get("ANIMGRAPH_CONFIG") or os.path.join(
        os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"), "animgraph"))


# ---------------------------------------------------------------- autosave


def _beside(path):
    return path.parent / f".{path.stem}.autosave.json"


def _cached(path):
    """The cache-dir autosave of ``path``: its name plus a hash of its full path (two 'a.json' do not collide)."""
    if path is None:
        return cache_dir() / UNTITLED
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    return cache_dir() / f"{path.stem}-{digest}.json"


def _writable_dir(directory):
    """Whether files can be made in ``directory`` (tried: the only sure test as root); the shipped graphs' is not."""
    if not directory.is_dir() or directory.resolve() == Path(animgraph.graphs.__file__).resolve().parent:
        return False
    try:
        check_writable_dir(directory)
    except AnimgraphError:
        return False
    return True


def autosave_path(path):
    """Where the autosave of the graph at ``path`` (None: an unsaved document) goes."""
    if path is None:
        return _cached(None)
    path = Path(path)
    return _beside(path) if _writable_dir(path.parent) else _cached(path)


def write_autosave(doc):
    """Write ``doc`` to its autosave atomically if it has unsaved changes; returns the autosave's path."""
    target = autosave_path(doc.path)
    if not doc.dirty:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, doc.graph.to_json(base_dir=target.parent.resolve()))
    return target


def _candidates(path):
    """Both places an autosave of ``path`` may be (the directory may have become read-only since)."""
    if path is None:
        return [_cached(None)]
    path = Path(path)
    return [_beside(path), _cached(path)]


def _graph_json(file, anchor):
    """The graph at ``file`` as JSON text with its assets anchored at ``anchor``; None if it cannot be read."""
    try:
        return Graph.load(file).to_json(base_dir=anchor)
    except AnimgraphError:
        return None


def pending_autosave(path):
    """An autosave of ``path`` to offer on open: newer than the file and different from it (any one for None)."""
    found = [a for a in _candidates(path) if a.is_file()]
    if path is None:
        return found[0] if found else None
    path = Path(path)
    if not path.is_file():
        return max(found, key=lambda a: a.stat().st_mtime_ns, default=None)
    anchor = path.resolve().parent
    current = _graph_json(path, anchor)
    newer = [a for a in found if a.stat().st_mtime_ns > path.stat().st_mtime_ns]
    for auto in sorted(newer, key=lambda a: a.stat().st_mtime_ns, reverse=True):
        text = _graph_json(auto, anchor)
        if text is not None and text != current:
            return auto
    return None


def restore_autosave(path):
    """A dirty Document of the pending autosave of ``path``, anchored as the graph at ``path`` (None if none)."""
    auto = pending_autosave(path)
    if auto is None:
        return None
    return Document.from_graph(Graph.load(auto), path, dirty=True)


def discard_autosave(path):
    """Delete the autosaves of ``path`` (after a save, or when the user declines them)."""
    for auto in _candidates(path):
        try:
            auto.unlink()
        except FileNotFoundError:
            pass


# ---------------------------------------------------------------- recent files


def _recent_file():
    return config_dir() / "recent.json"


def _read_recent():
    """The stored list as strings; [] when missing or not a JSON list of strings (a corrupt file is ignored)."""
    try:
        data = json.loads(_recent_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [p for p in data if isinstance(p, str)] if isinstance(data, list) else []


def recent_files():
    """Recently opened or saved graph files that still exist, most recent first (at most RECENT_MAX)."""
    return [Path(p) for p in _read_recent() if Path(p).is_file()][:RECENT_MAX]


def add_recent(path):
    """Put ``path`` first in the recent list; a list that cannot be written is left as it was (it is a convenience)."""
    path = str(Path(path).resolve())
    paths = [path] + [p for p in _read_recent() if p != path and Path(p).is_file()]
    try:
        _recent_file().parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(_recent_file(), json.dumps(paths[:RECENT_MAX], indent=1) + "\n")
    except OSError:
        pass
