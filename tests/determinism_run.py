"""The determinism test's run: every given shipped graph, batch 1 and 19, 24 frames of varied inputs, every output.

``python tests/determinism_run.py OUT.npz GRAPH...`` saves them (``tests/test_determinism.py`` runs it in fresh
processes); ``tests/warm_cache.py`` records the same run from the code it compiled on an empty cache
(``record_path``), which the test then compares with a fresh process that loads that code.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np


def outputs(names):
    """{"graph batch node field frame": array} over ``names``, each at batch 1 (per character) and 19 (lane tiles)."""
    import animgraph as ag
    from animgraph import graphs

    out = {}
    for name in names:
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
    return out


def save(path, out):
    """Write ``out`` to ``path`` (.npz) through a temporary file, so a reader never sees half of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, **out)
    os.replace(tmp, path)


def record_path():
    """Where the warm-up keeps this run's outputs from code compiled on an empty cache: in the compiled-code cache
    of these sources, named after this file's text (a changed run is never compared with an old record)."""
    from animgraph import cache

    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return cache.cache_dir() / "tests" / f"determinism-cold-{digest}.npz"


if __name__ == "__main__":
    save(sys.argv[1], outputs(sys.argv[2:]))
