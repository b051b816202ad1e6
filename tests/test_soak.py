"""Soak: the shipped locomotion graph stepped 1,000,000 frames for 4 characters.

Checked every 10,000 frames: every output finite, quaternions unit to 1e-5, and each
sample node's own clock equal to the exact ``(frames * dt) mod period`` (from the
frame count, in rational arithmetic) to 1e-9 s: the clock does not drift.  Inputs
change every 10,000 frames (gait switches, contacts on and off, playback rate), so
the inertializer and the foot locks go through their transitions all along.
"""

from fractions import Fraction

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs

FRAMES = 1_000_000
CHECK = 10_000
BATCH = 4


def clock_error(clock, expected, period):
    """Distance of ``clock`` from ``expected`` on a circle of circumference ``period`` (s)."""
    d = abs(clock - expected) % period
    return min(d, period - d)


@pytest.mark.slow
def test_locomotion_soak_million_frames():
    plan = ag.compile(graphs.path("locomotion"), batch=BATCH)
    inst = plan.instance(parallel=False)  # threads cost more than they save for 4 characters
    dt = Fraction(1, 60)
    samples = {nid: plan.ops[plan.op(nid), 6] for nid in ("walk", "jog", "run")}
    periods = {nid: Fraction(plan.clips[nid].frames) * Fraction(plan.clips[nid].dt) for nid in samples}
    played = {nid: Fraction(0) for nid in samples}  # exact seconds each clock has played
    step = inst.step
    for block in range(FRAMES // CHECK):
        rate = Fraction(1) if block % 3 else Fraction(5, 4)
        inst.set_inputs({"gait": np.arange(BATCH) + block, "rate": float(rate),
                         "left_contact": np.arange(BATCH) % 2 == block % 2, "right_contact": block % 4 == 1})
        for _ in range(CHECK):
            out = step(1 / 60)
        for nid in samples:
            played[nid] += CHECK * rate * dt
        pose = out["out"]
        assert all(np.isfinite(a).all() for a in pose.as_tuple()), block
        assert np.isfinite(out["left_locked"]).all() and np.isfinite(out["right_locked"]).all(), block
        assert np.abs(np.linalg.norm(pose.rot, axis=-1) - 1).max() < 1e-5, block
        for nid, at in samples.items():
            expected = float(played[nid] % periods[nid])
            for c in range(BATCH):
                assert clock_error(inst.st[c, at], expected, float(periods[nid])) < 1e-9, (block, nid, c)
