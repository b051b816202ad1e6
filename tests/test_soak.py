"""Soaks: the shipped locomotion graph stepped 1,000,000 frames for 2 characters; every shipped graph under random inputs.

Checked every 10,000 frames: every output finite, quaternions unit to 1e-5, and each
sample node's own clock equal to the exact ``(frames * dt) mod period`` (from the
frame count, in rational arithmetic) to 1e-9 s: the clock does not drift.  Inputs
change every 10,000 frames (gait switches, contacts on and off, playback rate), so
the inertializer and the foot locks go through their transitions all along.  Around
every switch and every wrap of the clip on show, no joint jumps: it moves at most
``1.5 * dt * max(|v_t|, |v_t+1|) + 1 mm`` between frames (root motion included).

Every shipped graph, three seeds (one character each), 20 s at 960 Hz, inputs within their
declared ranges (an unbounded one within its default ± 1): scalars and vec3s moved by
smoothsteps over 0.25 s, ints and bools switched, every 0.3-1.5 s; once with the rates given,
once without (the input node derives them).  World joint positions ``x`` and velocities ``v``
from FK of each pose output (``animgraph.pops.world``): no frame has
``|x(t+dt) - x(t) - (v(t) + v(t+dt)) dt / 2| > 5 mm`` (at 960 Hz the trapezoid's truncation of
capture motion stays near 2 mm; a jump does not).
"""

import math
from fractions import Fraction

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs, pops
from animgraph.executor import OP_STATE
from animgraph.limits import SIGNAL_MAX

FRAMES = 1_000_000
CHECK = 10_000
BATCH = 2  # characters: 0 walks, jogs, then runs; 1 jogs, then runs (more would repeat these)


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


@pytest.mark.slow(minutes=1.5)
def test_locomotion_soak_million_frames():
    plan = ag.compile(graphs.path("gaits"), batch=BATCH)
    inst = plan.instance(parallel=False)  # threads cost more than they save for 2 characters
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


# ---------------------------------------------------------------- every shipped graph under random inputs

SOAK_SECONDS = 20.0
SOAK_RATE = 960  # steps per second: the trapezoid's truncation of fast capture motion stays far below the bound
SOAK_SEEDS = (1, 2, 3)
SOAK_BOUND = 0.005  # m: |x(t+dt) - x(t) - (v(t) + v(t+dt)) dt / 2| of any joint on any frame
EASE = 0.25  # s: a scalar or vec3 input moves to its next value by a smoothstep over this long
CHUNK = 960  # frames recorded before their world positions are computed at once


def input_box(node, kind):
    """(low, high) per component that the soak draws an input's values from: its declared range, else default ± 1."""
    width = 3 if kind == "vec3" else 1
    default = np.broadcast_to(np.asarray(node.default if node.default is not None else 0.0, float), (width,))
    low, high = node.bounds()
    low = np.where(low <= -SIGNAL_MAX, default - 1.0, low)
    high = np.where(high >= SIGNAL_MAX, default + 1.0, high)
    return np.broadcast_to(low, (width,)), np.broadcast_to(high, (width,))


def input_schedule(plan, seeds, frames, dt):
    """Per input: values and rates (frames, B, n) for characters driven by ``seeds`` (one each).

    Every 0.3-1.5 s (each input on its own clock) a scalar or vec3 sets off to a new value
    within its box, moving there by a smoothstep over ``EASE`` s (rates its exact derivative);
    an int takes a new whole value in its range, a bool flips.
    """
    t = np.arange(frames) * dt
    out = {}
    for k, (nid, (_, kind)) in enumerate(sorted(plan.inputs.items())):
        node = plan.nodes[nid]
        low, high = input_box(node, kind)
        width = len(low)
        values, rates = np.zeros((frames, len(seeds), width)), np.zeros((frames, len(seeds), width))
        for c, seed in enumerate(seeds):
            rng = np.random.default_rng([seed, k])
            at, value = 0.0, rng.uniform(low, high)
            values[:, c] = value
            while (at := at + rng.uniform(0.3, 1.5)) < t[-1]:
                if kind in ("scalar", "vec3"):
                    new = rng.uniform(low, high)
                    s = np.clip((t - at) / EASE, 0.0, 1.0)[:, None]
                    moving = (t >= at)[:, None]
                    values[:, c] = np.where(moving, value + (new - value) * s * s * (3 - 2 * s), values[:, c])
                    rates[:, c] = np.where(moving, (new - value) * 6 * s * (1 - s) / EASE, rates[:, c])
                elif kind == "bool":
                    new = 1.0 - value
                    values[t >= at, c] = new
                else:  # int
                    new = np.floor(rng.uniform(low, high + 1)).clip(low, high)
                    values[t >= at, c] = new
                value = new
        out[nid] = (kind, values, rates)
    return out


def soak(name, seeds=SOAK_SEEDS, seconds=SOAK_SECONDS, rate=SOAK_RATE, with_rates=True):
    """The worst trapezoid residual (m) of any joint of any pose output, with (frame, character, joint) where."""
    plan = ag.compile(graphs.path(name), batch=len(seeds))
    inst = plan.instance(parallel=False)
    dt, frames = 1.0 / rate, int(round(seconds * rate))
    schedule = input_schedule(plan, seeds, frames, dt)
    poses = [(nid, loc) for nid, (kind, loc, _) in plan.outputs.items() if kind == "pose"]
    parents = np.asarray(plan.skeleton.parents, np.int64)
    groups = pops.levels(parents)
    space = {nid: plan.checked.spaces.get((nid, "pose", "out")) for nid, _ in poses}
    worst, where, last = 0.0, None, {}
    buffers = {nid: [np.zeros((CHUNK, *a.shape), np.float32) for a in inst.outputs[nid].as_tuple()] for nid, _ in poses}
    for start in range(0, frames, CHUNK):
        n = min(CHUNK, frames - start)
        for i in range(n):
            f = start + i
            inputs = {}
            for nid, (kind, values, rates) in schedule.items():
                v = values[f] if kind == "vec3" else values[f, :, 0]
                if kind in ("scalar", "vec3") and with_rates:
                    inputs[nid] = (v, rates[f] if kind == "vec3" else rates[f, :, 0])
                else:
                    inputs[nid] = v
            out = inst.step(dt, inputs)
            for nid, _ in poses:
                for buf, a in zip(buffers[nid], out[nid].as_tuple()):
                    buf[i] = a
        for nid, _ in poses:
            six = [b[:n] for b in buffers[nid]]
            x, v = (six[0], six[3]) if space[nid] == "global" else pops.world(six, parents, groups)
            x, v = np.asarray(x, np.float64), np.asarray(v, np.float64)
            if nid in last:
                x, v = np.concatenate([last[nid][0], x]), np.concatenate([last[nid][1], v])
                first = start - 1
            else:
                first = start
            err = np.linalg.norm(x[1:] - x[:-1] - 0.5 * (v[1:] + v[:-1]) * dt, axis=-1)
            if err.size and err.max() > worst:
                f, c, j = np.unravel_index(np.argmax(err), err.shape)
                worst, where = float(err.max()), (nid, first + int(f) + 1, seeds[c], plan.skeleton.names[j])
            last[nid] = (x[-1:], v[-1:])
    return worst, where


# Fixed for issue 23 (20 s x 3 seeds at 960 Hz): the IK's hard fold clamp (now a C2 band of a third of the
# floor) and upper band (exact to 0.97 M: an arm target entering reach at 14 m/s bent the elbow at
# 34 m/s within a step; was 0.98); the root swing's spin along the hinge axis (ik.root_swing); the cubic inertializer's
# rate term (a gait switch at 4-5x playback swung knees 2 rad on, folding feet through the hips under the locks;
# now brought to rest within offsets.OVERSHOOT_ROT).  gaits declares rate [0, 4]: at 5x the jog's own arm swing
# leaves 3 mm of trapezoid truncation at 960 Hz (5.4 mm just after a switch), with no jump.


@pytest.mark.slow
@pytest.mark.parametrize("with_rates", [True, False], ids=["rates", "no_rates"])
@pytest.mark.parametrize("name", graphs.names())
def test_every_graph_moves_at_its_velocities_under_random_inputs(name, with_rates):
    """Random inputs within their ranges for 20 s at 960 Hz, three seeds: no joint leaves its velocities by 5 mm."""
    worst, where = soak(name, with_rates=with_rates)
    print(f"{name} {'rates' if with_rates else 'no rates'}: worst {worst * 1e3:.2f} mm at {where}")
    assert worst <= SOAK_BOUND, (name, with_rates, worst, where)
