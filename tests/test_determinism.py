"""The same graph, inputs and steps give bit-identical outputs whatever the compiled-code cache holds.

Every shipped graph, batch 1 (the per-character walk) and 19 (lane tiles, a full and a padded
one), in two fresh processes sharing one cold compile: on an empty private cache with
``ANIMGRAPH_EXECUTOR=full`` (the whole registry's executor compiled in that process), then on
the cache that run filled, graphs in the other order, the executor chosen as by default and
loaded.  (A partial executor's outputs equal the whole one's: ``test_first_run``.)
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from animgraph import graphs

_CHILD = r"""
import sys
import numpy as np
import animgraph as ag
from animgraph import graphs

out = {}
for name in sys.argv[2:]:
    for batch in (1, 19):
        inst = ag.compile(graphs.path(name), batch=batch).instance()
        known = inst.plan.inputs
        for frame in range(24):
            inputs = {"clip": (frame // 8) % 3, "gait": np.arange(batch) % 3, "rate": 1.0 + 0.1 * (frame % 3),
                      "alpha": (0.5 + 0.4 * np.sin(frame / 5.0), 0.4 * 12.0 * np.cos(frame / 5.0)),
                      "left_contact": (frame // 6) % 2 == 0, "right_contact": (frame // 6) % 2 == 1,
                      "look_target": (np.sin(frame / 7.0), 1.6, 2.0)}
            res = inst.step(1 / 60, {k: v for k, v in inputs.items() if k in known})
            for nid, v in res.items():
                for i, x in enumerate(v.as_tuple() if isinstance(v, ag.Pose) else (v,)):
                    out[f"{name} {batch} {nid} {i} {frame}"] = np.array(x)
np.savez(sys.argv[1], **out)
"""


def _run(tmp_path, tag, env, names):
    out = tmp_path / f"{tag}.npz"
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(out), *names], capture_output=True, text=True,
                          timeout=3600, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    # A cold compile prints what the user needs (that it compiles), never numba's warnings.
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]
    return np.load(out)


@pytest.mark.slow(minutes=9)  # a cold compile of the whole registry's executor, per character and in lane tiles
def test_outputs_do_not_depend_on_what_the_cache_holds(tmp_path):
    names = graphs.names()
    private = str(tmp_path / "cache")
    # One process compiles (no compile helper: its bit-identical code is test_first_run's; here it would only
    # take CPU from this one).
    cold = _run(tmp_path, "cold", {"ANIMGRAPH_CACHE": private, "ANIMGRAPH_EXECUTOR": "full",
                                   "ANIMGRAPH_COMPILE_JOBS": "1"}, names)
    loaded = _run(tmp_path, "loaded", {"ANIMGRAPH_CACHE": private, "ANIMGRAPH_EXECUTOR": ""}, names[::-1])
    assert sorted(cold.files) == sorted(loaded.files)
    assert {k.split()[0] for k in cold.files} == set(names)
    for key in cold.files:
        assert np.array_equal(cold[key], loaded[key], equal_nan=cold[key].dtype.kind == "f"), key
