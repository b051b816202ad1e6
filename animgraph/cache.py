"""Where compiled code is cached: one directory per version of the kernels' source.

numba's on-disk cache is keyed by each function's own file, so a kernel that
inlines a changed helper from another file would load stale machine code.
Keying the whole cache directory by a hash of every source file that holds
kernels makes a stale cache impossible.
"""

import functools
import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
LLVM_OPTIONS = ("-vectorize-scev-check-threshold=64",)  # set before any kernel compiles (``configure_numba``)


def _kernel_sources():
    import importlib.util

    spec = importlib.util.find_spec("animgraph.nodes")
    nodes = Path(spec.origin).parent if spec and spec.origin else _HERE / "nodes"
    # Only modules holding numba code count (not this one, which only names it): editing the CLI never recompiles.
    core = [p for p in sorted(_HERE.glob("*.py")) if p.name != "cache.py" and "njit" in p.read_text(encoding="utf-8")]
    return core + sorted(nodes.glob("*.py"))


def source_hash():
    """Short sha256 of the animgraph/*.py files with numba code, every nodes/*.py file and the LLVM options."""
    h = hashlib.sha256(" ".join(LLVM_OPTIONS).encode())  # they change the compiled code too
    for path in _kernel_sources():
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def preferred_base():
    """The directory that should hold animgraph's cached files: $ANIMGRAPH_CACHE, else ~/.cache/animgraph."""
    return os.environ.get("ANIMGRAPH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "animgraph"
    )


def _cannot_use(path):
    """Why ``path`` cannot hold the cache (None if it can): made if missing, then a file created in it."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as err:
        return err.strerror or str(err)
    return None


def _private_temp_base():
    """A cache base in the temporary directory that only this user can write (compiled code is executed)."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    base = Path(tempfile.gettempdir()) / f"animgraph-cache-{uid if uid is not None else 'user'}"
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        st = base.lstat()
        if stat.S_ISDIR(st.st_mode) and (uid is None or st.st_uid == uid) and not st.st_mode & 0o022:
            return base
        return Path(tempfile.mkdtemp(prefix="animgraph-cache-"))  # someone else's: a fresh one (uncached)
    except OSError:
        return base


def cache_dir():
    """The compiled-code directory: $ANIMGRAPH_CACHE or ~/.cache/animgraph, then the source hash.

    If that cannot be written (a read-only home, a cache path under a file) a private
    directory in the temporary directory takes its place, with one warning line on stderr.
    """
    return _usable(Path(preferred_base()) / source_hash())


@functools.lru_cache(maxsize=None)
def _usable(preferred):
    why = _cannot_use(preferred)
    if why is None:
        return preferred
    fallback = _private_temp_base() / preferred.name
    also = _cannot_use(fallback)
    print(f"animgraph: warning: cannot write the compiled-code cache {preferred} ({why}); "
          + (f"using {fallback}" if also is None else f"nor {fallback} ({also}): compiled code may not be cached")
          + " (set ANIMGRAPH_CACHE to a writable directory)", file=sys.stderr)
    return fallback


PRUNE_DAYS = 14  # a version's compiled code unused this long is removed
PRUNE_AT_ONCE = 2  # directories removed per start, so that no start pays for a large clean-up
_VERSION_DIR = re.compile(r"[0-9a-f]{16}")  # what source_hash() names: nothing else is ever removed


def prune(current, days=PRUNE_DAYS, at_most=PRUNE_AT_ONCE, now=None):
    """Mark ``current`` used (its mtime) and remove up to ``at_most`` other version directories beside it unused for ``days``.

    Every version of the kernels compiles into its own directory (``source_hash()``), so
    upgrades and edits leave old ones behind; each start touches its own, and the
    oldest untouched ones go a few at a time.  Only names ``source_hash()`` makes are
    candidates; errors (a directory in use or not ours to remove) are skipped.  Returns
    the paths removed.
    """
    current = Path(current)
    now = time.time() if now is None else now
    removed = []
    try:
        os.utime(current)
        entries = list(os.scandir(current.parent))
    except OSError:
        return removed
    old = []
    for entry in entries:
        if entry.name == current.name or not _VERSION_DIR.fullmatch(entry.name):
            continue
        try:
            if entry.is_dir(follow_symlinks=False) and now - entry.stat(follow_symlinks=False).st_mtime > days * 86400:
                old.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
        except OSError:
            continue
    for _, path in sorted(old)[:at_most]:  # the oldest first
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


def configure_numba():
    """Point numba's cache at ``cache_dir()`` unless the user chose NUMBA_CACHE_DIR; prune old versions' directories."""
    import numba

    if not os.environ.get("NUMBA_CACHE_DIR"):
        numba.config.CACHE_DIR = str(cache_dir() / "numba")
    _vectorize_strided_loops()
    _lock_numba_cache_writes()
    _quiet_pedantic_ir_checks()
    prune(cache_dir())


def _quiet_pedantic_ir_checks():
    """Keep numba's pedantic IR warning off a cold compile's output (a user can do nothing about it).

    Inlining ``maths.poly``'s loop into a lane kernel's float32 ``exp_neg`` makes numba's
    ``NumbaIRAssumptionWarning`` ("variable ... is not in scope") print several times while
    ``run_tiles`` compiles; the code it warns about is checked against the per-character executor
    (``tests/test_lane_executor.py``).
    """
    import warnings

    from numba.core.errors import NumbaIRAssumptionWarning

    warnings.filterwarnings("ignore", message=r"variable '.*' is not in scope", category=NumbaIRAssumptionWarning)


def _vectorize_strided_loops():
    """Let LLVM's loop vectorizer version a loop on more runtime no-wrap checks (16 by default, 64 here).

    A loop over joints reading ``rot[4 * j + c]`` from several flat arrays (``views.flat``)
    needs one check per strided access; above 16 LLVM leaves it scalar.  The checks run once
    per loop, before it.  A 65-joint blend measured 1.64 us scalar, 0.62 us packed.  The option
    is process-wide and read when a function compiles: it changes which loops pack, so speed, never
    results (no kernel has fastmath flags, so packed and scalar loops round alike; see ``lanes``).
    """
    import llvmlite.binding as llvm

    for option in LLVM_OPTIONS:
        llvm.set_option("", option)


def _lock_numba_cache_writes():
    """Make numba's cache-entry saves exclusive across processes (an advisory lock file; POSIX only).

    A save reads a function's index, picks the next free data-file number for a new
    signature, writes the index, then the data.  Two processes adding different
    signatures of one function at once (two first runs, or ``animgraph.warm``'s helper
    beside the main process) can both pick the same number, leaving an index entry that
    names the other signature's machine code.  Holding a lock over the whole save makes
    the read-modify-write atomic; loads need none (every file is replaced atomically, and
    an entry whose data file is not written yet loads as a miss).  Returns whether it is on.
    """
    try:
        import fcntl

        from numba.core.caching import IndexDataCacheFile
    except ImportError:
        return False
    save = IndexDataCacheFile.save
    if getattr(save, "_animgraph_locked", False):
        return True

    def locked_save(self, key, data):
        try:
            os.makedirs(self._cache_path, exist_ok=True)
            fd = os.open(os.path.join(self._cache_path, ".animgraph-save.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return save(self, key, data)  # no lock file, no worse than numba alone
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return save(self, key, data)
        finally:
            os.close(fd)  # releases the lock

    locked_save._animgraph_locked = True
    IndexDataCacheFile.save = locked_save
    return True


def saves_are_locked():
    """Whether numba's cache saves hold ``_lock_numba_cache_writes``'s lock (needed for a compile helper process)."""
    try:
        from numba.core.caching import IndexDataCacheFile
    except ImportError:
        return False
    return getattr(IndexDataCacheFile.save, "_animgraph_locked", False)


def is_cold():
    """Whether no compiled code is cached yet for this version of the kernels (the next kernel call compiles)."""
    root = Path(os.environ.get("NUMBA_CACHE_DIR") or cache_dir() / "numba")
    return not root.is_dir() or not any(root.rglob("*.nbi"))
