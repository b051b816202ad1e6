"""Filling the compiled-code cache in a separate process, so the editor's window never freezes.

numba holds the GIL while it compiles, so a compile in a thread would stall the UI for
a minute and more on a first run.  The editor instead starts ``python -m
animgraph.editor.warmup``, which compiles the executor (and through it every kernel)
into the on-disk cache, and keeps drawing; once the child exits, loading the executor
in the editor's own process only reads the cache (a fraction of a second).
"""

from __future__ import annotations

import subprocess
import sys
import time

from animgraph import cache


def executor_is_cached():
    """Whether the serial executor of this version is in the on-disk cache (so loading it compiles nothing)."""
    from animgraph import executor

    cache.configure_numba()
    return executor.compiled()  # the whole registry's: the editor's graphs may use any node type


def start():
    """Start the warm-up child process (stdout/stderr to a pipe); returns the ``subprocess.Popen``."""
    # -P: a source checkout in the working directory must not shadow the installed package (see animgraph.warm).
    return subprocess.Popen([sys.executable, "-P", "-m", "animgraph.editor.warmup"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def compile_executor():
    """Compile (or load) the serial executor by running one frame of a small graph; returns seconds taken."""
    import animgraph as ag

    t0 = time.perf_counter()
    graph = ag.Graph(assets={"walk": "animgraph:walk"},
                     nodes=[{"id": "walk", "type": "sample", "clip": "walk"}, {"id": "out", "type": "output"}],
                     links=[["walk.pose", "out.pose"]])
    ag.compile(graph).instance(parallel=False).step(1 / 60)
    return time.perf_counter() - t0


def main():
    """Entry of the child process: prints one line with the time taken."""
    print(f"animgraph editor: kernels ready in {compile_executor():.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
