"""Fill the compiled-code cache once, before pytest-xdist's workers start (``conftest.pytest_configure``).

The workers would otherwise each compile the whole registry's executor and the plan-time
code at the same moment: the same minutes of CPU twice over (numba's saves are locked
across processes by ``animgraph.cache``, so they would not corrupt the cache, only waste
it).  Here, in one process (with ``animgraph.warm``'s helper on a second core): everything
the editor's preview compiles (``animgraph.editor.warmup``), then every shipped graph
stepped at batch 1 (the per-character walk) and 19 (lane tiles) with a reset and a
teleport; while the tiles compile, a second process compiles the per-character walk over
threads (``run_parallel``) on one graph at batch 16.  On a warm cache this only loads, in
seconds.  Tests that compile cold on purpose use their own temporary caches and are not
helped by it.

On an empty cache everything it runs is compiled here (half the node kernels by the compile
helper, as a user's first run): it then also records ``determinism_run``'s outputs from that
code, which ``test_determinism`` compares with a fresh process loading it, instead of
compiling the whole executor a second time in a private cache.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np


def play(name, batch, lanes=None):
    """Step shipped graph ``name`` at ``batch`` characters with a reset and a teleport (what compiles for it)."""
    import animgraph as ag
    from animgraph import graphs

    inst = ag.compile(graphs.path(name), batch=batch).instance(lanes=lanes)
    for _ in range(3):
        inst.step(1 / 60)
    inst.reset()
    inst.teleport(np.zeros(3))
    inst.step(1 / 60)


def main():
    t0 = time.perf_counter()
    from animgraph import cache, graphs

    cold = cache.is_cold()  # before anything here compiles

    try:
        from animgraph.editor import warmup
    except ImportError:  # the editor extra is not installed: its tests skip
        warmup = None
    if warmup is not None:
        warmup.compile_executor()
    for name in graphs.names():
        play(name, 1)
    # The lane tiles compile on one core; on the other, a second process compiles the per-character walk over
    # threads (batch 16 and more with lanes=False: the lane executor's reference in the tests, and the bench).
    threads = subprocess.Popen([sys.executable, __file__, "--threads"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    for name in graphs.names():
        play(name, 19)
    if cold:
        import determinism_run

        determinism_run.save(determinism_run.record_path(), determinism_run.outputs(graphs.names()))
    _, err = threads.communicate()
    if threads.returncode != 0:
        print(err, file=sys.stderr)
        return threads.returncode
    print(f"compiled-code cache warm in {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--threads"]:
        from animgraph import graphs

        sys.exit(play(graphs.names()[0], 16, lanes=False))
    sys.exit(main())
