"""The same graph, inputs and steps give bit-identical outputs whatever the compiled-code cache holds.

Every shipped graph, batch 1 (the per-character walk) and 19 (lane tiles, a full and a padded
one), run by ``determinism_run`` twice: once by code compiled in that process on an empty cache
(the whole registry's executor, ``ANIMGRAPH_EXECUTOR=full``), then in a fresh process on the
cache that compile filled, graphs in the other order, the executor chosen as by default and
loaded.  (A partial executor's outputs equal the whole one's, and a compile helper's code the
main process's: ``test_first_run``.)

The compiled leg is the test-suite warm-up's own compile when it found the shared cache empty (a
clean checkout, CI: ``tests/warm_cache.py`` records the run then); otherwise this test compiles
it here, on a private empty cache, in one process.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import determinism_run  # beside the tests (pytest puts their folder on the path)
import pytest

from animgraph import graphs

RUN = Path(determinism_run.__file__)


def _run(tmp_path, tag, env, names):
    out = tmp_path / f"{tag}.npz"
    proc = subprocess.run([sys.executable, str(RUN), str(out), *names], capture_output=True, text=True,
                          timeout=3600, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    # A cold compile prints what the user needs (that it compiles), never numba's warnings.
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]
    return np.load(out)


@pytest.mark.slow(minutes=9)  # without the warm-up's record: a cold compile of the whole registry's executor
def test_outputs_do_not_depend_on_what_the_cache_holds(tmp_path):
    names = graphs.names()
    record = determinism_run.record_path()
    if record.is_file():  # compiled by the warm-up on the empty shared cache: load from that cache
        cold, shared = np.load(record), {}
    else:
        private = str(tmp_path / "cache")
        # One process compiles (no compile helper: its bit-identical code is test_first_run's; here it would only
        # take CPU from this one).
        cold = _run(tmp_path, "cold", {"ANIMGRAPH_CACHE": private, "ANIMGRAPH_EXECUTOR": "full",
                                       "ANIMGRAPH_COMPILE_JOBS": "1"}, names)
        shared = {"ANIMGRAPH_CACHE": private}
    loaded = _run(tmp_path, "loaded", {**shared, "ANIMGRAPH_EXECUTOR": ""}, names[::-1])
    assert sorted(cold.files) == sorted(loaded.files)
    assert {k.split()[0] for k in cold.files} == set(names)
    for key in cold.files:
        assert np.array_equal(cold[key], loaded[key], equal_nan=cold[key].dtype.kind == "f"), key
