"""Filling the compiled-code cache in a separate process, so the editor's window never freezes.

numba holds the GIL while it compiles, so a compile in the editor's process (or a thread of
it) would stall the window for minutes on a first run.  The editor instead starts ``python
-m animgraph.editor.warmup [GRAPH...]``, which does in its own process everything the
editor's preview does: reads the clips (printing ``ASSETS_READY`` once the clip readers are
compiled), then plans and plays the new graph, the given graphs and every shipped graph on
the whole registry's executor (so every node kernel, every plan-time table builder and the
executor itself land in the on-disk cache), writes a marker and prints its time.  The
editor's own process then only loads cached code.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from animgraph import cache

ASSETS_READY = "animgraph editor: clips readable"  # the child's line once reading a clip compiles nothing
MARKER = "editor_ready_{key}"  # in the cache directory: what the child leaves when it has warmed everything


def _marker():
    from animgraph import executor

    return cache.cache_dir() / "executor" / MARKER.format(key=executor.full_key())


def executor_is_cached():
    """Whether everything the preview compiles is in the on-disk cache (so the editor's process compiles nothing)."""
    from animgraph import executor

    cache.configure_numba()
    return executor.compiled() and _marker().is_file()  # the whole registry's: a graph may use any node type


def start(*graphs):
    """Start the warm-up child process over ``graphs`` (stdout/stderr to a pipe); returns the ``subprocess.Popen``."""
    # -P: a source checkout in the working directory must not shadow the installed package (see animgraph.warm).
    return subprocess.Popen([sys.executable, "-P", "-m", "animgraph.editor.warmup", *map(str, graphs)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)


def _documents(graphs):
    """The new graph, then ``graphs``, then the shipped ones (a file that cannot be read is left out)."""
    import animgraph.graphs
    from animgraph.errors import AnimgraphError

    from .document import Document

    docs = [Document.new()]
    shipped = sorted(Path(animgraph.graphs.__file__).parent.glob("*.json"))
    for path in [*graphs, *shipped]:
        try:
            docs.append(Document.open(path))
        except (AnimgraphError, OSError):
            continue
    return docs


def play(doc, frames=3):
    """Plan ``doc`` as the preview does and play a few frames, a seek included (the preview's every call)."""
    from animgraph import executor

    from .player import Player

    result = doc.validate(reuse_slots=False)
    if result.plan is None:
        return
    result.plan.executor = executor.load()
    player = Player(result.plan)
    for _ in range(frames):
        player.step()
    player.seek(1)


def load_cached():
    """Load the cached executor and the preview's code into this process (what the first plan will call)."""
    from .document import Document

    play(Document.new(), frames=1)


def compile_executor(graphs=(), say=print):
    """Compile (or load) everything the editor's preview calls, over the new, given and shipped graphs; seconds."""
    t0 = time.perf_counter()
    docs = _documents(graphs)
    for doc in docs:
        doc.skeleton()
    say(ASSETS_READY)
    for doc in docs:
        play(doc)
    marker = _marker()
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    return time.perf_counter() - t0


def main(argv=None):
    """Entry of the child process: prints ``ASSETS_READY``, then one line with the time taken."""
    graphs = sys.argv[1:] if argv is None else argv
    seconds = compile_executor(graphs, say=lambda line: print(line, flush=True))
    print(f"animgraph editor: kernels ready in {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
