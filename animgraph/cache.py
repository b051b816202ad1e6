"""Where compiled code is cached: one directory per version of the kernels' source.

numba's on-disk cache is keyed by each function's own file, so a kernel that
inlines a changed helper from another file would load stale machine code.
Keying the whole cache directory by a hash of every source file that holds
kernels makes a stale cache impossible.
"""

import hashlib
import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _kernel_sources():
    import importlib.util

    spec = importlib.util.find_spec("animgraph.nodes")
    nodes = Path(spec.origin).parent if spec and spec.origin else _HERE / "nodes"
    # Only modules holding numba code count, so editing the CLI never recompiles kernels.
    core = [p for p in sorted(_HERE.glob("*.py")) if "njit" in p.read_text(encoding="utf-8")]
    return core + sorted(nodes.glob("*.py"))


def source_hash():
    """Short sha256 of the animgraph/*.py files with numba code and every nodes/*.py file."""
    h = hashlib.sha256()
    for path in _kernel_sources():
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_dir():
    """The compiled-code directory: $ANIMGRAPH_CACHE or ~/.cache/animgraph, then the source hash."""
    base = os.environ.get("ANIMGRAPH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "animgraph"
    )
    return Path(base) / source_hash()


def configure_numba():
    """Point numba's cache at ``cache_dir()`` unless the user chose NUMBA_CACHE_DIR."""
    import numba

    if not os.environ.get("NUMBA_CACHE_DIR"):
        numba.config.CACHE_DIR = str(cache_dir() / "numba")
