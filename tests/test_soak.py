"""Soak: the shipped locomotion graph stepped 1,000,000 frames for 4 characters.

Checked every 10,000 frames: every output finite, quaternions unit to 1e-5, and each
sample node's own clock equal to the exact ``(frames * dt) mod period`` (from the
frame count, in rational arithmetic) to 1e-9 s: the clock does not drift.  Inputs
change every 10,000 frames (gait switches, contacts on and off, playback rate), so
the inertializer and the foot locks go through their transitions all along.  Around
every switch and every wrap of the clip on show, no joint jumps: it moves at most
``1.5 * dt * max(|v_t|, |v_t+1|) + 1 mm`` between frames (root motion included).
"""

import math
from fractions import Fraction

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.executor import OP_STATE

FRAMES = 1_000_000
CHECK = 10_000
BATCH = 4


GAITS = ("walk", "jog", "run")
WINDOW = 2  # frames checked on each side of a switch or a wrap


def wrap_steps(played, rate, period, dt, steps):
    """Steps (0-based, of a block) that sample just past a wrap: step i samples at ``(played + i rate dt) mod period``."""
    at, out, k = played % period, [], 1
    while (i := math.ceil((k * period - at) / (rate * dt))) < steps:
        out.append(i)
        k += 1
    return out


def world(pose, parents):
    """Global positions and velocities (float64) of every character's output pose."""
    g = ag.ops.fk(pose.copy(), parents)
    return g.pos.astype(np.float64), g.vel.astype(np.float64)


def clock_error(clock, expected, period):
    """Distance of ``clock`` from ``expected`` on a circle of circumference ``period`` (s)."""
    d = abs(clock - expected) % period
    return min(d, period - d)


@pytest.mark.slow
def test_locomotion_soak_million_frames():
    plan = ag.compile(graphs.path("gaits"), batch=BATCH)
    inst = plan.instance(parallel=False)  # threads cost more than they save for 4 characters
    dt = Fraction(1, 60)
    samples = {nid: plan.ops[plan.op(nid), OP_STATE] for nid in ("walk", "jog", "run")}
    periods = {nid: Fraction(plan.clips[nid].frames) * Fraction(plan.clips[nid].dt) for nid in samples}
    played = {nid: Fraction(0) for nid in samples}  # exact seconds each clock has played
    step = inst.step
    parents = plan.skeleton.parents
    prev = None  # last frame's world pose
    checked = 0
    for block in range(FRAMES // CHECK):
        rate = Fraction(1) if block % 3 else Fraction(5, 4)
        gait = np.minimum(np.arange(BATCH) + block, 2)
        inst.set_inputs({"gait": gait, "rate": float(rate)})  # contacts: the clips' own
        watch = {}  # step -> characters whose shown clip wraps near it (or all, at the switch)
        for i in range(WINDOW):
            watch[i] = set(range(BATCH))
        for c in range(BATCH):
            nid = GAITS[gait[c]]
            for w in wrap_steps(played[nid], rate, periods[nid], dt, CHECK):
                for i in range(w - WINDOW, w + WINDOW):
                    watch.setdefault(i, set()).add(c)
        for i in range(CHECK):
            out = step(1 / 60)
            if i in watch or i + 1 in watch or i == CHECK - 1:
                now = world(out["out"], parents)
                if i in watch and prev is not None:
                    assert_no_jump(prev, now, sorted(watch[i]), (block, i))
                    checked += 1
                prev = now
            else:
                prev = None
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
    assert checked > 1000, checked


def assert_no_jump(prev, now, characters, where):
    """No joint of ``characters`` moved further than its speeds allow from ``prev`` to ``now`` (world pos, vel)."""
    (p0, v0), (p1, v1) = prev, now
    step = np.linalg.norm(p1 - p0, axis=-1)[characters]
    speed = np.maximum(np.linalg.norm(v0, axis=-1), np.linalg.norm(v1, axis=-1))[characters]
    ratio = step / (1.5 * speed / 60 + 1e-3)
    assert ratio.max() <= 1.0, (where, np.unravel_index(np.argmax(ratio), ratio.shape), ratio.max())
