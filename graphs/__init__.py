"""Shipped graphs: JSON files runnable with ``animgraph run`` (``names()``, ``path(name)``).

They name their clips as ``"animgraph:walk"`` etc., so they run from any install.
"""

from pathlib import Path

_DIR = Path(__file__).resolve().parent


def names():
    """Names of the shipped graphs (file stems), sorted."""
    return sorted(p.stem for p in _DIR.glob("*.json"))


def path(name):
    """The file of shipped graph ``name`` (with or without '.json'); ValueError listing the names if unknown."""
    stem = name[:-5] if name.endswith(".json") else name
    file = _DIR / f"{stem}.json"
    if not file.is_file():
        raise ValueError(f"no shipped graph {name!r}; shipped: {', '.join(names())}")
    return file
