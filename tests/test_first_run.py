"""The cold first run's compile helper (``animgraph.warm``) and numba's locked cache saves."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from animgraph import cache, executor, warm
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
def spy(key, names):
    proc = start(key, names)
    if proc is not None:
        helpers.append(proc)
    return proc
warm.start = spy
status = cli.main(["run", sys.argv[1], "--frames", "30", "--out", sys.argv[2]])
loaded = sum(1 for _, k, _ in executor.kernel_signatures() if sum(k.stats.cache_hits.values()))
print(json.dumps([status, [p.returncode for p in helpers], loaded]))
"""


def _run(tmp_path, name, env):
    out = tmp_path / f"{name}.npz"
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(GRAPH), str(out)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    status, helpers, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    return status, helpers, loaded, np.load(out)


@pytest.mark.skipif(not cache.saves_are_locked() or (os.cpu_count() or 1) < 2, reason="needs fcntl and 2 CPUs")
def test_cold_compile_in_two_processes_equals_one(tmp_path):
    # Cold, private cache: the helper starts, is reaped (an exit status, no zombie) and the main
    # process loads some kernels it compiled; the outputs equal a single-process compile's.
    status, helpers, loaded, two = _run(tmp_path, "two", {"ANIMGRAPH_CACHE": str(tmp_path / "cache"),
                                                         "ANIMGRAPH_COMPILE_JOBS": "2"})
    assert status == 0 and len(helpers) == 1 and helpers[0] is not None, helpers
    assert loaded > 0
    # Warm now: no helper.
    status, helpers, _, again = _run(tmp_path, "again", {"ANIMGRAPH_CACHE": str(tmp_path / "cache"),
                                                        "ANIMGRAPH_COMPILE_JOBS": "2"})
    assert status == 0 and helpers == []
    # One process (the user's cache, usually warm: compiled by one process).
    status, helpers, _, one = _run(tmp_path, "one", {"ANIMGRAPH_COMPILE_JOBS": "1"})
    assert status == 0 and helpers == []
    assert sorted(two.files) == sorted(one.files)
    for name in one.files:
        nan = one[name].dtype.kind == "f"  # bit-identical floats, NaN where the other has NaN
        assert np.array_equal(two[name], one[name], equal_nan=nan), name
        assert np.array_equal(again[name], one[name], equal_nan=nan), name


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
    used = {name for name in executor.kinds() if REGISTRY[name].KERNEL.signatures}
    assert used
    for name, kernel, sig in executor.kernel_signatures():
        if name in used:
            assert sig in kernel.signatures, (name, kernel.signatures, sig)


def test_cache_saves_are_locked():
    assert cache.saves_are_locked() == (os.name == "posix")
