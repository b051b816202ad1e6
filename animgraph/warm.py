"""A cold first run compiles in two processes: a helper compiles node kernels into the disk cache.

On a cold cache the executor's first call compiles every node kernel one after another
(in kind order, as ``run_serial``'s typing meets them).  ``start()`` launches one helper
process that compiles the same kernels with the same signatures
(``executor.kernel_signatures()``) in the opposite order, writing numba's disk cache; the
main process's compile looks each kernel up there first, so the two meet in the middle
and the main process loads the helper's half instead of compiling it.  The machine code
is the same either way (same source, types and compiler flags), so results are
bit-identical.

Where they meet, each claims a kernel before compiling it (a file created exclusively in a
directory of this run's own, ``claims``): before its first step the main process compiles
the kernels from the front that the helper has not claimed (``share``), then waits for the
ones the helper claimed instead of compiling them a second time beside it (the kernel the
two reached together was compiled twice: 2 to 3 s of a 15 s first run).

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
import shutil
import subprocess
import sys
import tempfile
import time

_HELPER = {}  # executor key -> (Popen, claims directory, covered kinds), at most one per key and process
CLAIMS_ENV = "ANIMGRAPH_CLAIMS"  # the helper's claims directory (``claim``)
WAIT_STEP = 0.02  # s between looks at the helper's progress
STALL = 300.0  # s without a kernel finished after which the main process stops waiting for a helper that hangs


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
        return _HELPER[key][0] if key in _HELPER else None
    if not sys.executable or getattr(sys, "frozen", False):
        return None
    try:
        claims = tempfile.mkdtemp(prefix="animgraph-claims-")
    except OSError:
        return None
    try:
        proc = subprocess.Popen(
            helper_argv(names, cover),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            # the helper starts no helper of its own
            env={**os.environ, "ANIMGRAPH_COMPILE_JOBS": "1", CLAIMS_ENV: claims},
            close_fds=True,
        )
    except (OSError, ValueError):
        shutil.rmtree(claims, ignore_errors=True)
        return None
    _HELPER[key] = (proc, claims, set(names if cover is None else cover))
    if len(_HELPER) == 1:
        atexit.register(finish)
    return proc


def helper_argv(names, cover=None):
    """The helper's command line.  ``-P``: not the working directory first on ``sys.path``, where a source
    checkout's ``animgraph/`` (``pip install . && animgraph demo`` run from it) would shadow the installed one."""
    return [sys.executable, "-P", "-m", "animgraph.warm", *names, "--", *(names if cover is None else cover)]


def finish():
    """End and reap every helper: those still running only duplicate what the main process has compiled."""
    for key, (proc, claims, _) in list(_HELPER.items()):
        if proc.poll() is None:
            proc.terminate()  # a save interrupted this way leaves at most a stray ``*.tmp.*`` file; never a bad entry
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(claims, ignore_errors=True)
        _HELPER.pop(key, None)


def _compile(names, cover):
    """The helper's work: compile each covered kernel with its executor signature, last kind first."""
    from . import executor

    if executor.kinds() != tuple(names):  # a registry the parent extended at run time: nothing safe to guess
        return 0
    claims = os.environ.get(CLAIMS_ENV)
    work = _work(cover)
    for i in reversed(range(len(work))):
        if claims and not claim(claims, i):
            break  # the main process has come this far from the front: the rest is its own
        name, kernel, sig = work[i]
        kernel.compile(sig)  # loads instead if the main process has cached it already
        if claims:
            _touch(os.path.join(claims, f"{i}.done"))
    return 0


def _work(cover):
    """The kernels the helper compiles for branches ``cover``: (name, kernel, signature) in kind order."""
    from . import executor

    return [(name, kernel, sig) for name, kernel, sig in executor.kernel_signatures() if name in cover]


def claim(claims, i):
    """Whether this process takes kernel ``i`` of the work: True for the first to ask, in any process."""
    try:
        os.close(os.open(os.path.join(claims, f"{i}.claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError:  # taken, or the directory is gone: then nobody claims and the walk's compile does the rest
        return False
    return True


def _touch(path):
    with open(path, "w"):
        pass


def share(key):
    """Before the first step of executor ``key`` on a cold cache: compile the kernels the helper has not claimed,
    from the front, then wait until those it claimed are cached (or it has stopped, or finished none in ``STALL``
    seconds: the walk's compile then does what is missing), so nothing compiles twice."""
    if key not in _HELPER:
        return
    proc, claims, cover = _HELPER[key]
    work = _work(cover)
    mine = 0
    while mine < len(work) and proc.poll() is None and claim(claims, mine):
        name, kernel, sig = work[mine]
        kernel.compile(sig)
        mine += 1
    pending = [i for i in range(mine, len(work)) if os.path.exists(os.path.join(claims, f"{i}.claim"))]
    progress = time.monotonic()
    while pending and proc.poll() is None and time.monotonic() - progress < STALL:
        left = [i for i in pending if not os.path.exists(os.path.join(claims, f"{i}.done"))]
        if len(left) < len(pending):
            progress = time.monotonic()
        pending = left
        if pending:
            time.sleep(WAIT_STEP)


if __name__ == "__main__":
    args = sys.argv[1:]
    cut = args.index("--") if "--" in args else len(args)
    sys.exit(_compile(args[:cut], set(args[cut + 1:]) if "--" in args else set(args)))
