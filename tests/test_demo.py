"""The demo's own measurements: velocities against differences, the root carried on, feet locked.

The velocity check once reported 1.04 m/s: plain central differences at 600 Hz cannot
follow the walk's fast capture flicks played 2.4 times faster right after the switch from
run (the error shrank with the step, so it was the differences', not the velocities').
"""

import numpy as np
import pytest

from animgraph import demo

FRAMES = 900


@pytest.fixture(scope="module")
def clips():
    return {g: demo.locomotion_clip(g, distance=demo.START + FRAMES / 60 * 4.5 + 5.0) for g in demo.GAITS}


def test_velocity_check_is_small_and_shrinks_with_the_step(clips):
    """Propagated velocities vs fourth-order differences: small, and smaller at a finer step (truncation only)."""
    coarse = demo.analyse(demo.simulate(FRAMES * 10, clips=clips, dt=demo.DT / 10))
    fine = demo.analyse(demo.simulate(FRAMES * demo.FINE, clips=clips, dt=demo.DT / demo.FINE))
    assert fine["fd_max"] < 0.15, fine["fd_worst"]
    assert fine["fd_max"] < coarse["fd_max"]
    assert fine["fd_median"] < 2e-3


def test_locks_reduce_slide_and_the_root_travels_on(clips):
    locked = demo.analyse(demo.simulate(FRAMES, clips=clips))
    free = demo.analyse(demo.simulate(FRAMES, locks=False, clips=clips))
    assert locked["slide"] < 0.5 * free["slide"]
    hips = locked["glob_pos"][:, 0, [0, 2]]
    assert np.linalg.norm(np.diff(hips, axis=0), axis=-1).max() < 5.0 / 60  # never snaps back
    assert locked["distance"] > 30.0
