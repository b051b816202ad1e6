"""Shared fixtures: bundled clips, and the test-only CMU clips read from ../shared."""

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_MOCAP = Path(os.environ.get("ANIMGRAPH_SHARED", ROOT.parent / "shared")) / "data" / "mocap"

# The demo's five bundled clips: the per-node fixtures below run over these.
BUNDLED = ["walk", "walk_turn", "jog", "run", "run_stop"]
# The four more bundled for the motion-matching database; ``ag.data.names()`` is BUNDLED + MM_BUNDLED.
MM_BUNDLED = ["jog_turn_left", "jog_turn_right", "run_veer_right", "walk_stop"]
TEST_ONLY = [
    "cmu_12_01_walk.bvh",
    "cmu_131_01_start_walk_stop.bvh",
    "cmu_131_02_start_walk_stop_slow.bvh",
    "cmu_131_03_start_hop_spin_stop.bvh",
]


def shared_path(name):
    """Path of a clip in ../shared/data/mocap, or skip the test saying why."""
    path = SHARED_MOCAP / name
    if not path.exists():
        pytest.skip(f"{path} is absent: test-only CMU clips live in ../shared, never in the repo")
    return path


def load_any(name):
    """(skeleton, clip) in metres with the T-pose dropped: a bundled name or a shared file name."""
    import animgraph as ag

    if name in BUNDLED + MM_BUNDLED:
        return ag.data.load(name)
    return ag.data.load_cmu(shared_path(name))


ALL_CLIPS = BUNDLED + TEST_ONLY


@pytest.fixture(params=ALL_CLIPS)
def any_clip(request):
    """Each bundled and shared clip in turn, as (skeleton, clip)."""
    return load_any(request.param)


@pytest.fixture(params=BUNDLED)
def bundled_clip(request):
    """Each bundled clip in turn, as (skeleton, clip)."""
    return load_any(request.param)


def rotvec(q):
    """Rotation vectors (..., 3) of w-first unit quaternions (float64), the short way: for finite differences."""
    q = q * np.where(q[..., :1] < 0, -1.0, 1.0)
    n = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    return 2.0 * np.arctan2(n, q[..., :1]) * q[..., 1:] / np.maximum(n, 1e-300)


def qmul(a, b):
    """Products of w-first quaternions (float64), written out so tests need no kernel to check one."""
    w1, x1, y1, z1 = np.moveaxis(a, -1, 0)
    w2, x2, y2, z2 = np.moveaxis(b, -1, 0)
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], -1)

