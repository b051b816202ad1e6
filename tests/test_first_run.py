"""The cold first run's compile helper (``animgraph.warm``) and numba's locked cache saves."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from animgraph import cache, executor, warm
from animgraph.jit import called_from_python
from animgraph.node import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "graphs" / "ik_lookat_footlock.json"

# Runs a graph in a fresh interpreter on the cache in the environment and reports, on its last
# stdout line, the helper's exit status (None: never started) and which kernels came from the cache.
_CHILD = r"""
import json, sys
from animgraph import cli, executor, warm
helpers = []
start = warm.start
def spy(key, names, cover=None):
    proc = start(key, names, cover)
    if proc is not None:
        helpers.append(proc)
    return proc
warm.start = spy
status = cli.main(["run", sys.argv[1], "--frames", "30", "--out", sys.argv[2]])
# Most node entries are inlined into the walk (node.py), so count every kernel of ours found in the cache: on a
# cold private cache each such hit is the helper's work.
import numba
ours = {id(v): v for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("animgraph")
        for v in list(vars(m).values()) if isinstance(v, numba.core.dispatcher.Dispatcher)}
loaded = sum(1 for k in ours.values() if sum(k.stats.cache_hits.values()))
covers = [list(m.COVERS) for m in executor._LOADED.values()]
print(json.dumps([status, [p.returncode for p in helpers], loaded, covers]))
"""


def _run(tmp_path, name, env, graph=GRAPH):
    out = tmp_path / f"{name}.npz"
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(graph), str(out)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    status, helpers, loaded, covers = json.loads(proc.stdout.strip().splitlines()[-1])
    said = proc.stderr.count("compiling the kernels")
    if name in ("two", "again"):  # the private cache: cold, then warm ("one" runs on the session's cache)
        assert said == (name == "two"), proc.stderr
    return status, helpers, loaded, covers, np.load(out)


@pytest.mark.slow(minutes=2.2)  # a cold compile
@pytest.mark.skipif(not cache.saves_are_locked() or (os.cpu_count() or 1) < 2, reason="needs fcntl and 2 CPUs")
def test_cold_compile_in_two_processes_equals_one(tmp_path):
    # Cold, private cache, as a user's first run: the executor has branches for the graph's node
    # types only; the helper starts, is reaped (an exit status, no zombie) and the main process
    # loads some kernels it compiled.  The outputs equal the whole registry's executor's, compiled
    # by one process, bit for bit.
    temp = tmp_path / "temp"  # where the helper's claims directory goes: removed when the helper is reaped
    temp.mkdir()
    cold = {"ANIMGRAPH_CACHE": str(tmp_path / "cache"), "ANIMGRAPH_COMPILE_JOBS": "2", "ANIMGRAPH_EXECUTOR": "",
            "TMPDIR": str(temp)}
    status, helpers, loaded, covers, two = _run(tmp_path, "two", cold)
    assert not [p for p in temp.iterdir() if p.name.startswith("animgraph-claims-")]
    types = sorted({n["type"] for n in json.loads(GRAPH.read_text())["nodes"]})
    assert status == 0 and len(helpers) == 1 and helpers[0] is not None, helpers
    assert loaded > 0
    assert [sorted(c) for c in covers] == [types] and len(types) < len(executor.kinds())
    # Warm now: no helper.
    status, helpers, _, _, again = _run(tmp_path, "again", cold)
    assert status == 0 and helpers == []
    # A graph of some of those node types, in a new process: it finds that executor on disk and shares it.
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk"},
                                 "nodes": [{"id": "a", "type": "sample", "clip": "walk"}, {"id": "out", "type": "output"}],
                                 "links": [["a.pose", "out.pose"]]}))
    status, helpers, _, covers, _ = _run(tmp_path, "again", cold, small)
    assert status == 0 and helpers == [] and [sorted(c) for c in covers] == [types]
    # One process, the whole registry (the session's cache: compiled by one process).
    status, helpers, _, covers, one = _run(tmp_path, "one", {"ANIMGRAPH_COMPILE_JOBS": "1", "ANIMGRAPH_EXECUTOR": "full"})
    assert status == 0 and helpers == [] and covers == [list(executor.kinds())]
    assert sorted(two.files) == sorted(one.files)
    for name in one.files:
        nan = one[name].dtype.kind == "f"  # bit-identical floats, NaN where the other has NaN
        assert np.array_equal(two[name], one[name], equal_nan=nan), name
        assert np.array_equal(again[name], one[name], equal_nan=nan), name


def test_children_import_the_installed_package_not_a_checkout_in_the_working_directory(tmp_path, monkeypatch):
    # `pip install . && animgraph demo` runs from the source checkout, whose animgraph/ is not importable
    # (nodes/ is mapped in by the install): a child Python that puts its working directory first fails.
    # The compile helper, the editor's warm-up child and bench's start-up child all run from such a directory.
    from animgraph import bench
    from animgraph.editor import warmup

    (tmp_path / "animgraph").mkdir()
    (tmp_path / "animgraph" / "__init__.py").write_text("raise ImportError('the checkout, not the package')\n")
    monkeypatch.chdir(tmp_path)
    proc = subprocess.run(warm.helper_argv(executor.kinds(), ["constant"]), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    child = warmup.start()
    out, _ = child.communicate(timeout=600)
    assert child.returncode == 0, out
    assert bench._startup_run(dict(os.environ))["total_s"] > 0


def test_a_kernel_is_claimed_once_across_processes(tmp_path):
    # The helper and the main process each claim a kernel before compiling it (warm.claim): the first asks wins.
    code = "import sys; from animgraph import warm; print(warm.claim(sys.argv[1], 3))"
    first = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert first.stdout.split() == ["True"], first.stderr
    assert warm.claim(str(tmp_path), 3) is False and warm.claim(str(tmp_path), 4) is True


def test_the_main_process_stops_waiting_for_a_helper_that_hangs_or_has_died(tmp_path, monkeypatch):
    # A "helper" that claimed every kernel and never finishes one: share() gives up after STALL seconds (the walk's
    # compile then does the work); one that has exited: share() does not wait at all.  finish() reaps both.
    cover = {"constant", "input"}
    for i in range(len(warm._work(cover))):
        (tmp_path / f"{i}.claim").touch()
    monkeypatch.setattr(warm, "STALL", 0.3)
    for code in ("import time; time.sleep(120)", "pass"):
        proc = subprocess.Popen([sys.executable, "-c", code])
        if code == "pass":
            proc.wait(timeout=60)
        monkeypatch.setitem(warm._HELPER, "test-key", (proc, str(tmp_path), cover))
        warm.share("test-key")  # returns: the test would hang here otherwise
        warm.finish()
        assert proc.returncode is not None and "test-key" not in warm._HELPER
        assert not tmp_path.exists()
        tmp_path.mkdir()
        for i in range(len(warm._work(cover))):
            (tmp_path / f"{i}.claim").touch()


def test_jobs_from_the_environment(monkeypatch):
    monkeypatch.setenv("ANIMGRAPH_COMPILE_JOBS", "1")
    assert warm.jobs() == 1
    assert warm.start("no-such-key", executor.kinds()) is None  # turned off: never a helper
    monkeypatch.setenv("ANIMGRAPH_COMPILE_JOBS", "nonsense")
    assert warm.jobs() == 1


def test_kernel_signatures_are_the_executors():
    # Each kernel called the way the executor calls it (walk_in_python: the same slices) has exactly the
    # signature the helper compiles for it.
    import animgraph as ag

    plan = ag.compile(GRAPH)
    inst = plan.instance(python=True)
    inst.step(1 / 60)
    # The graph's own node types (not "every kernel with a signature": earlier tests in this process may have
    # called other kernels, with other arguments).
    used = {plan.nodes[nid].type for nid in plan.order} & set(executor.kinds())
    # A Python call of a kernel runs its Python-callable twin (animgraph.jit): the signatures are the twin's.
    assert used and all(called_from_python(REGISTRY[name].KERNEL).signatures for name in used)
    for name, kernel, sig in executor.kernel_signatures():
        if name in used:
            called = called_from_python(kernel)
            assert sig in called.signatures, (name, called.signatures, sig)


def test_cache_saves_are_locked():
    assert cache.saves_are_locked() == (os.name == "posix")
