"""A cold first run compiles in two processes: a helper compiles node kernels into the disk cache.

On a cold cache the executor's first call compiles every node kernel one after another
(in kind order, as ``run_serial``'s typing meets them).  ``start()`` launches one helper
process that compiles the same kernels with the same signatures
(``executor.kernel_signatures()``) in the opposite order, writing numba's disk cache; the
main process's compile looks each kernel up there first, so the two meet in the middle
and the main process loads the helper's half instead of compiling it.  The machine code
is the same either way (same source, types and compiler flags), so results are
bit-identical.

Robustness: only on a cold cache, never on a warm one; never when numba's cache saves
cannot be locked (``cache.saves_are_locked``: without the lock two writers can corrupt an
index); ``ANIMGRAPH_COMPILE_JOBS=1`` (or a single CPU) turns it off; any failure to start
the helper falls back silently to the single-process compile.  ``finish()`` ends the
helper once the main process has its code (its remaining work would only duplicate it) and
reaps it; it also runs at exit, so no helper outlives or is left a zombie of its parent.

The helper is ``python -m animgraph.warm``, not a ``multiprocessing`` child: ``spawn``
would re-run the parent's ``__main__`` script (a script without a ``__main__`` guard
would run twice) and ``fork`` would copy a process whose LLVM and thread state are live.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys

_HELPER = {}  # executor key -> Popen, at most one per key and process


def jobs():
    """Processes compiling on a cold cache: ``ANIMGRAPH_COMPILE_JOBS`` (1 turns the helper off), else 2 if 2 CPUs."""
    value = os.environ.get("ANIMGRAPH_COMPILE_JOBS", "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            return 1
    return 2 if (os.cpu_count() or 1) >= 2 else 1


def start(key, names, cover=None):
    """Launch the helper for executor ``key`` (registry ``names``, branches for ``cover``), not cached; returns it or None."""
    from . import cache

    if key in _HELPER or jobs() < 2 or not cache.saves_are_locked():
        return _HELPER.get(key)
    if not sys.executable or getattr(sys, "frozen", False):
        return None
    try:
        proc = subprocess.Popen(
            helper_argv(names, cover),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "ANIMGRAPH_COMPILE_JOBS": "1"},  # the helper starts no helper of its own
            close_fds=True,
        )
    except (OSError, ValueError):
        return None
    _HELPER[key] = proc
    if len(_HELPER) == 1:
        atexit.register(finish)
    return proc


def helper_argv(names, cover=None):
    """The helper's command line.  ``-P``: not the working directory first on ``sys.path``, where a source
    checkout's ``animgraph/`` (``pip install . && animgraph demo`` run from it) would shadow the installed one."""
    return [sys.executable, "-P", "-m", "animgraph.warm", *names, "--", *(names if cover is None else cover)]


def finish():
    """End and reap every helper: those still running only duplicate what the main process has compiled."""
    for key, proc in list(_HELPER.items()):
        if proc.poll() is None:
            proc.terminate()  # a save interrupted this way leaves at most a stray ``*.tmp.*`` file; never a bad entry
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        _HELPER.pop(key, None)


def _compile(names, cover):
    """The helper's work: compile each covered kernel with its executor signature, last kind first."""
    from . import executor

    if executor.kinds() != tuple(names):  # a registry the parent extended at run time: nothing safe to guess
        return 0
    for name, kernel, sig in reversed(executor.kernel_signatures()):
        if name in cover:
            kernel.compile(sig)  # loads instead if the main process has cached it already
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    cut = args.index("--") if "--" in args else len(args)
    sys.exit(_compile(args[:cut], set(args[cut + 1:]) if "--" in args else set(args)))
