"""sample node: validity, interpolation cases, clamping and looping, exact velocities vs central FD.

Velocity checks use the 5-point central stencil (f(-2h), f(-h), f(h), f(2h)) inside one
key segment, where the interpolant is smooth (cubic positions are then differentiated
exactly).  Two tolerances, stated where used:
- float64 evaluation of the same kernels: relative error <= 1e-6 (the derivative is exact);
- the float32 Pose returned by ``ag.ops.sample``: |v - fd| <= 1e-3 |fd| + the FD noise of
  float32 output, NOISE * 2^-24 * |x| / h (|x| the size of the differenced quantity).
"""

import math

import numpy as np
import pytest
from pydantic import ValidationError

import animgraph as ag
from animgraph.node import REGISTRY, BuildContext, ClipRange
from animgraph.nodes.sample import KEY_WIDTH, PAR, ST, Sample, key_table, sample_keys_kernel, sample_kernel
from fd import from_rotvec, qconj, qmul, rotvec
from fdcheck import Pose64, check_fd32, central_fd, rel_errors, same_rot


def sample64(clip, times, mode, loop, rate=1.0):
    """``ag.ops.sample`` run into float64 buffers."""
    times = np.asarray(times, np.float64)
    out = Pose64(times.shape + (len(clip.skeleton),))
    for t, dst in zip(times.reshape(-1), out.items()):
        sample_kernel(clip.pos, clip.rot, clip.scl, 0, clip.frames, clip.dt, t, rate, mode == "cubic", loop, dst)
    return out


def chain(joints):
    return ag.Skeleton([f"j{i}" for i in range(joints)], [-1] + list(range(joints - 1)), np.zeros((joints, 3)))


def synthetic_clip(frames=24, joints=4, dt=1 / 30, seed=0, flips=True):
    """Random smooth-ish motion with non-unit scales and sign-flipped quaternion keys."""
    rng = np.random.default_rng(seed)
    pos = np.cumsum(rng.normal(size=(frames, joints, 3)) * 0.05, axis=0) + rng.normal(size=(1, joints, 3))
    rot = from_rotvec(np.cumsum(rng.normal(size=(frames, joints, 3)) * 0.2, axis=0))
    if flips:
        rot[rng.random((frames, joints)) < 0.3] *= -1
    scl = np.exp(np.cumsum(rng.normal(size=(frames, joints, 3)) * 0.03, axis=0))
    return ag.Clip(chain(joints), pos, rot, scl, dt=dt)


def mid_segment_times(clip, n, rng, loop, h):
    """Times whose 5-point stencil (+-2h) stays inside one key segment."""
    segments = clip.frames if loop else clip.frames - 1
    margin = 2.5 * h / clip.dt
    return (rng.integers(0, segments, n) + rng.uniform(margin, 1 - margin, n)) * clip.dt


MODES = [("linear", False), ("linear", True), ("cubic", False), ("cubic", True)]


# ------------------------------------------------------------------ validity


def test_validity_bad_parameters_refused():
    ok = Sample(id="s", clip="walk")
    assert (ok.mode, ok.loop, ok.rate, ok.time) == ("cubic", True, 1.0, None)
    bad = [
        {"clip": "walk", "speed": 2.0},  # unknown key
        {"clip": "walk", "mode": "quintic"},
        {"clip": "walk", "rate": 1e9},
        {"clip": "walk", "rate": float("nan")},
        {"clip": "walk", "time": float("inf")},
        {"clip": ""},
        {},  # clip is required
        {"clip": "walk", "loop": "sometimes"},
    ]
    for fields in bad:
        with pytest.raises(ValidationError):
            Sample(id="s", **fields)
    with pytest.raises(ValidationError):
        Sample(id="1bad", clip="walk")
    assert REGISTRY["sample"] is Sample


def test_op_refuses_bad_arguments():
    clip = synthetic_clip()
    with pytest.raises(ValueError, match="mode"):
        ag.ops.sample(clip, 0.1, mode="cubicc")
    with pytest.raises(ValueError, match="finite"):
        ag.ops.sample(clip, [0.1, float("nan")])
    with pytest.raises(ValueError, match="finite"):
        ag.ops.sample(clip, 0.1, rate=float("inf"))


def test_params_name_unknown_clip():
    ctx = BuildContext(skeleton=chain(2), clips={"walk": ClipRange(0, 10, 0.1)})
    with pytest.raises(ag.GraphError, match="run"):
        Sample(id="s", clip="run").params(ctx)


# ------------------------------------------------------------------ interpolation cases


@pytest.mark.parametrize("mode,loop", MODES)
def test_keys_are_reproduced(mode, loop):
    clip = synthetic_clip()
    pose = ag.ops.sample(clip, np.arange(clip.frames) * clip.dt, mode=mode, loop=loop)
    np.testing.assert_allclose(pose.pos, clip.pos, atol=1e-6)
    np.testing.assert_allclose(pose.scl, clip.scl, rtol=1e-6)
    assert same_rot(pose.rot, clip.rot, 1e-6)


def test_linear_midpoint_is_lerp_slerp_eerp():
    clip = synthetic_clip()
    k = 5
    pose = ag.ops.sample(clip, (k + 0.5) * clip.dt, mode="linear")
    np.testing.assert_allclose(pose.pos, 0.5 * (clip.pos[k] + clip.pos[k + 1]), atol=1e-6)
    np.testing.assert_allclose(pose.scl, np.sqrt(clip.scl[k] * clip.scl[k + 1]), rtol=1e-6)
    q0, q1 = clip.rot[k].astype(float), clip.rot[k + 1].astype(float)
    half = qmul(from_rotvec(0.5 * rotvec(qmul(q1, qconj(q0)))), q0)  # shortest-path slerp at 1/2
    assert same_rot(pose.rot, half, 1e-6)
    np.testing.assert_allclose(pose.vel, (clip.pos[k + 1] - clip.pos[k]) / clip.dt, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pose.ang, rotvec(qmul(q1, qconj(q0))) / clip.dt, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pose.svl, np.log(clip.scl[k + 1] / clip.scl[k]) / clip.dt, rtol=1e-5, atol=1e-5)


def test_cubic_is_exact_on_quadratic_tracks():
    """Catmull-Rom tangents are exact for quadratics, so cubic sampling reproduces them (and their rate)."""
    dt, frames = 0.1, 12
    t = np.arange(frames) * dt
    a, b, c = np.array([0.3, -1.0, 2.0]), np.array([1.0, 0.5, -0.2]), np.array([0.1, 0.2, 0.3])
    pos = (a * t[:, None] ** 2 + b * t[:, None] + c)[:, None, :]
    logs = 0.2 * pos
    rot = np.tile([1.0, 0.0, 0.0, 0.0], (frames, 1, 1))
    clip = ag.Clip(chain(1), pos, rot, np.exp(logs), dt=dt)
    ts = np.array([0.13, 0.37, 0.55, 0.91])  # away from the one-sided end tangents
    pose = ag.ops.sample(clip, ts, mode="cubic")
    expect = a * ts[:, None] ** 2 + b * ts[:, None] + c
    np.testing.assert_allclose(pose.pos[:, 0], expect, atol=2e-6)
    np.testing.assert_allclose(pose.vel[:, 0], 2 * a * ts[:, None] + b, atol=2e-5)
    np.testing.assert_allclose(pose.svl[:, 0], 0.2 * (2 * a * ts[:, None] + b), atol=2e-5)


@pytest.mark.parametrize("mode,loop", MODES)
def test_constant_spin_is_exact(mode, loop):
    """Keys exp(k w dt) q0: any mode interpolates exp(w t) q0 and reports ang = w exactly."""
    dt, frames = 1 / 30, 10
    w = np.array([2.0, -1.0, 3.0])  # rad/s, 0.125 rad per frame
    q0 = from_rotvec(np.array([0.3, 0.2, -0.5]))
    rot = qmul(from_rotvec(np.arange(frames)[:, None] * dt * w), q0)[:, None, :]
    clip = ag.Clip(chain(1), np.zeros((frames, 1, 3)), rot, dt=dt)
    # Looping, the keys next to the wrap see a jump in their tangents: stay off them.
    lo, hi = (1, frames - 2) if loop else (0, frames - 1)
    ts = np.linspace(lo * dt + 0.003, hi * dt - 0.003, 17)
    pose = ag.ops.sample(clip, ts, mode=mode, loop=loop, rate=1.0)
    assert same_rot(pose.rot[:, 0], qmul(from_rotvec(ts[:, None] * w), q0), 2e-6)
    np.testing.assert_allclose(pose.ang[:, 0], np.broadcast_to(w, (len(ts), 3)), rtol=1e-5)


def test_cubic_differs_from_linear_between_keys():
    clip = synthetic_clip()
    t = 7.3 * clip.dt
    lin, cub = (ag.ops.sample(clip, t, mode=m) for m in ("linear", "cubic"))
    assert np.abs(lin.pos - cub.pos).max() > 1e-4
    assert np.abs(lin.vel - cub.vel).max() > 1e-2


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_rate_scales_velocities_only(mode):
    clip = synthetic_clip()
    t = 6.4 * clip.dt
    one = ag.ops.sample(clip, t, mode=mode)
    fast = ag.ops.sample(clip, t, mode=mode, rate=-2.5)
    for f in ("pos", "rot", "scl"):
        np.testing.assert_array_equal(getattr(fast, f), getattr(one, f))
    for f in ("vel", "ang", "svl"):
        np.testing.assert_allclose(getattr(fast, f), -2.5 * getattr(one, f), rtol=1e-6, atol=1e-6)


def test_batch_times_give_batch_pose():
    clip = synthetic_clip()
    times = np.array([[0.1, 0.2, 0.3], [0.05, 0.4, 0.15]])
    pose = ag.ops.sample(clip, times, mode="cubic", loop=True)
    assert pose.batch == (2, 3) and pose.joints == 4
    single = ag.ops.sample(clip, 0.4, mode="cubic", loop=True)
    for f in ("pos", "rot", "vel", "ang"):
        np.testing.assert_array_equal(getattr(pose, f)[1, 1], getattr(single, f))


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_cubic_angular_velocity_continuous_across_keys(mode):
    """Rotation tangents are carried into each segment's chart, so ang has no jump at a key (cubic)."""
    clip = synthetic_clip(flips=True)
    k = 9
    before = ag.ops.sample(clip, (k - 1e-7) * clip.dt, mode=mode)
    after = ag.ops.sample(clip, (k + 1e-7) * clip.dt, mode=mode)
    jump = np.abs(after.ang - before.ang).max()
    if mode == "cubic":
        assert jump < 1e-3 * np.abs(after.ang).max()
    else:  # linear is only C0: the angular velocity steps at keys
        assert jump > 1e-2


# ------------------------------------------------------------------ degenerate cases and ends


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_before_start_and_after_end_clamp_with_zero_velocity(mode):
    clip = synthetic_clip()
    end = (clip.frames - 1) * clip.dt
    for t, key in ((-0.5, 0), (-1e-9, 0), (end + 1e-9, -1), (end + 3.0, -1), (end, -1)):
        pose = ag.ops.sample(clip, t, mode=mode, loop=False)
        np.testing.assert_allclose(pose.pos, clip.pos[key], atol=1e-6)
        assert same_rot(pose.rot, clip.rot[key], 1e-6)
        for f in ("vel", "ang", "svl"):
            assert not np.any(getattr(pose, f)), (t, f)
    # Playing forward from the first key moves; playing backward from the last key moves.
    assert np.abs(ag.ops.sample(clip, 0.0, mode=mode).vel).max() > 0.1
    assert np.abs(ag.ops.sample(clip, end, mode=mode, rate=-1.0).vel).max() > 0.1
    assert not np.any(ag.ops.sample(clip, 0.0, mode=mode, rate=-1.0).vel)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_loop_wraps_from_last_key_to_first(mode):
    clip = synthetic_clip()
    period = clip.frames * clip.dt
    ts = np.array([0.3, 1.1 * clip.dt, (clip.frames - 0.5) * clip.dt])
    base = ag.ops.sample(clip, ts, mode=mode, loop=True)
    for shift in (period, -period, 7 * period):
        other = ag.ops.sample(clip, ts + shift, mode=mode, loop=True)
        np.testing.assert_allclose(other.pos, base.pos, atol=1e-5)
        np.testing.assert_allclose(other.vel, base.vel, atol=1e-3)
    # Half way along the wrap segment, linear mode is the midpoint of the last and first keys.
    if mode == "linear":
        np.testing.assert_allclose(base.pos[2], 0.5 * (clip.pos[-1] + clip.pos[0]), atol=1e-6)
        np.testing.assert_allclose(base.vel[2], (clip.pos[0] - clip.pos[-1]) / clip.dt, rtol=1e-5, atol=1e-4)
    # The velocity across the wrap is the derivative of the interpolant there (a big jump
    # in this random clip: a small h keeps the FD's own truncation error down).
    h = clip.dt / 100
    t = np.array([(clip.frames - 0.5) * clip.dt, period - 3 * h, period + 3 * h])
    pose, vel, ang, svl = central_fd(lambda x: sample64(clip, x, mode, True), t, h)
    np.testing.assert_allclose(pose.vel, vel, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pose.ang, ang, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pose.svl, svl, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode,loop", MODES)
def test_zero_length_segments_and_single_frame(mode, loop):
    clip = synthetic_clip(frames=6)
    still = ag.Clip(clip.skeleton, np.repeat(clip.pos[:1], 6, 0), np.repeat(clip.rot[:1], 6, 0), dt=clip.dt)
    pose = ag.ops.sample(still, np.linspace(-0.1, 0.4, 11), mode=mode, loop=loop)
    assert np.all(np.isfinite(pose.pos)) and np.all(np.isfinite(pose.rot))
    for f in ("vel", "ang", "svl"):
        assert np.abs(getattr(pose, f)).max() < 1e-5
    one = ag.Clip(clip.skeleton, clip.pos[:1], clip.rot[:1], clip.scl[:1], dt=clip.dt)
    pose = ag.ops.sample(one, np.array([-1.0, 0.0, 0.01, 5.0]), mode=mode, loop=loop)
    np.testing.assert_allclose(pose.pos, np.broadcast_to(clip.pos[0], pose.pos.shape), atol=1e-6)
    for f in ("vel", "ang", "svl"):
        assert not np.any(getattr(pose, f))


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_opposite_quaternion_keys_do_not_spin(mode):
    """Keys q and -q are the same rotation: the shortest path between them stands still."""
    q = from_rotvec(np.array([0.4, -0.3, 1.2]))
    rot = np.array([q, -q, q, -q, -q])[:, None, :]
    clip = ag.Clip(chain(1), np.zeros((5, 1, 3)), rot, dt=0.1)
    pose = ag.ops.sample(clip, np.linspace(0.0, 0.4, 9) + 0.013, mode=mode)
    assert same_rot(pose.rot[:, 0], np.broadcast_to(q, (9, 4)), 1e-6)
    assert np.abs(pose.ang).max() < 1e-5


# ------------------------------------------------------------------ velocities vs central FD


@pytest.mark.parametrize("mode,loop", MODES)
def test_velocities_exact_on_synthetic_scaled_clip(mode, loop):
    """float64 kernels vs 5-point FD, with non-unit scales and flipped keys: rel. error <= 1e-6."""
    clip = synthetic_clip(frames=30, seed=3)
    rng = np.random.default_rng(4)
    h = clip.dt / 40  # fast random spins: keep the FD's O(h^4) truncation below 1e-6
    ts = mid_segment_times(clip, 60, rng, loop, h)
    pose, vel, ang, svl = central_fd(lambda x: sample64(clip, x, mode, loop, rate=1.7), ts, h)
    for v, ref in ((pose.vel, vel), (pose.ang, ang), (pose.svl, svl)):
        assert rel_errors(v, 1.7 * ref, 1e-2).max() <= 1e-6


@pytest.mark.parametrize("mode,loop", MODES)
def test_velocities_match_central_fd_on_real_clips(any_clip, mode, loop):
    """Real clips, both the float64 maths (rel <= 1e-6) and the float32 Pose (1e-3 rel + float32 FD noise)."""
    _, clip = any_clip
    rng = np.random.default_rng(5)
    h = clip.dt / 10
    ts = mid_segment_times(clip, 40, rng, loop, h)
    # A looping clip's wrap segment can jump a long way: a smaller h for the float64 check.
    pose, vel, ang, _ = central_fd(lambda x: sample64(clip, x, mode, loop), ts, h / 4)
    assert rel_errors(pose.vel, vel, 1e-2).max() <= 1e-6
    assert rel_errors(pose.ang, ang, 1e-2).max() <= 1e-6
    pose, vel, ang, _ = central_fd(lambda x: ag.ops.sample(clip, x, mode=mode, loop=loop), ts, h)
    size = np.abs(clip.pos).max()
    check_fd32(pose.vel, vel, size, h, "vel")
    check_fd32(pose.ang, ang, 2.0, h, "ang")


# ------------------------------------------------------------------ the node contract, sample_node() directly


class Harness:
    """Hand-built kernel arguments: the clip placed after junk frames in the graph's frame array."""

    def __init__(self, clip, node, slots=2, pad=7):
        rng = np.random.default_rng(9)
        junk = lambda n, c: rng.normal(size=(n, len(clip.skeleton), c)).astype(np.float32)  # noqa: E731
        cat = lambda a, c: np.ascontiguousarray(np.concatenate([junk(pad, c), a, junk(3, c)]))  # noqa: E731
        self.db = (cat(clip.pos, 3), cat(clip.rot, 4), cat(clip.scl, 3), clip.skeleton.parents)
        ctx = BuildContext(skeleton=clip.skeleton, clips={node.clip: ClipRange(pad, clip.frames, clip.dt, clip)})
        self.node = node
        self.par = node.params(ctx)
        self.ctx = ctx
        j = len(clip.skeleton)
        self.pose = tuple(np.zeros((slots, j, 4 if f == 1 else 3), np.float32) for f in range(6))
        self.sig = np.zeros(10)
        # time unlinked; the rate port fed the field as the planner feeds an unlinked port (a constant block)
        self.sig[6:8] = (node.rate, 0.0)
        self.ins = np.array([-1, 6], np.int64)
        self.outs = np.array([1, 8], np.int64)  # the pose in slot 1, time_left at sig[8:10]

    def reset(self, time=0.0):
        self.st = self.node.state(self.ctx, time)

    def step(self, dt):
        type(self.node).KERNEL(self.ins, self.outs, self.par, self.st, self.pose, self.sig, self.db, dt)
        return ag.Pose(*(a[1].copy() for a in self.pose))


def test_params_layout():
    clip = synthetic_clip()
    h = Harness(clip, Sample(id="s", clip="c", mode="linear", loop=False, rate=0.5))
    # The rate is a signal, not a parameter; then the events' source (op 0 outside a plan), their weight threshold,
    # no track points or ranges, and its own time line (not a sync group's: events do not look ahead).
    np.testing.assert_array_equal(h.par, [7, clip.frames, clip.dt, 0, 0, 0, 0, 0, 1e-5, 0, 0, 0])


@pytest.mark.parametrize("mode,loop", MODES)
def test_own_clock_first_frame_shows_reset_time(mode, loop):
    clip = synthetic_clip()
    h = Harness(clip, Sample(id="s", clip="c", mode=mode, loop=loop, rate=1.5))
    h.sig[0] = 1.5  # the rate input holds the field's value, as the executor provides it
    h.ins[1] = 0
    dt = 1 / 60
    t0 = 0.37
    h.reset(time=t0)
    for n in range(5):
        got = h.step(dt)
        want = ag.ops.sample(clip, t0 + 1.5 * dt * n, mode=mode, loop=loop, rate=1.5)
        for f in ("pos", "rot", "scl", "vel", "ang", "svl"):
            np.testing.assert_allclose(getattr(got, f), getattr(want, f), atol=1e-6, err_msg=f)
    assert h.st[ST.clock] == pytest.approx(t0 + 1.5 * dt * 5, abs=1e-12)


def test_own_clock_wraps_when_looping_and_stops_at_end_otherwise():
    clip = synthetic_clip()
    period = clip.frames * clip.dt
    end = (clip.frames - 1) * clip.dt
    dt = 1 / 60
    for loop in (True, False):
        h = Harness(clip, Sample(id="s", clip="c", mode="cubic", loop=loop))
        h.ins[1] = 0
        h.sig[0] = 1.0
        h.reset(time=end - 2 * dt)
        frames = [h.step(dt) for _ in range(2 * int(period / dt))]
        if loop:
            assert 0.0 <= h.st[ST.clock] < period
            t = (end - 2 * dt + len(frames) * dt) % period
            assert h.st[ST.clock] == pytest.approx(t, abs=1e-9)
            assert np.abs(frames[-1].vel).max() > 0.1
        else:
            assert h.st[ST.clock] == end
            np.testing.assert_allclose(frames[-1].pos, clip.pos[-1], atol=1e-6)
            assert not np.any(frames[-1].vel) and not np.any(frames[-1].ang)


def test_rate_input_and_field_fallback():
    clip = synthetic_clip()
    h = Harness(clip, Sample(id="s", clip="c", mode="linear", loop=True, rate=0.5))
    h.reset(0.21)
    slow = h.step(0.1)  # rate input unlinked: par holds the field's 0.5
    assert h.st[ST.clock] == pytest.approx(0.26)
    h.ins[1] = 4
    h.sig[4] = -2.0
    h.reset(0.21)
    back = h.step(0.1)
    assert h.st[ST.clock] == pytest.approx(0.01)
    np.testing.assert_allclose(back.vel, -4.0 * slow.vel, rtol=1e-5, atol=1e-6)


def test_time_input_drives_sampling_and_scales_velocity():
    clip = synthetic_clip()
    h = Harness(clip, Sample(id="s", clip="c", mode="cubic", loop=False, time=0.3))
    h.ins[0] = 2
    h.sig[2:4] = (0.3, 0.0)  # the field's constant: a static pose
    h.reset(5.0)
    got = h.step(1 / 60)
    want = ag.ops.sample(clip, 0.3, mode="cubic")
    np.testing.assert_array_equal(got.pos, want.pos)
    assert not np.any(got.vel) and not np.any(got.ang)
    h.sig[2:4] = (0.41, 0.75)  # a linked time moving at 0.75 s/s
    got = h.step(1 / 60)
    want = ag.ops.sample(clip, 0.41, mode="cubic", rate=0.75)
    for f in ("pos", "rot", "vel", "ang", "svl"):
        np.testing.assert_allclose(getattr(got, f), getattr(want, f), atol=1e-6)
    assert h.st[ST.clock] == 5.0  # the own clock is untouched while driven
    h.sig[2] = math.nan
    got = h.step(1 / 60)
    assert np.all(np.isfinite(got.pos)) and not np.any(got.vel)


# ------------------------------------------------------------------ the precomputed key table


def sample64_keys(clip, times, mode, loop, rate=1.0):
    """The key-table kernel (what the executor runs) into float64 buffers."""
    keys, unit = key_table(clip)
    flag = np.array([float(unit)], np.float32)
    times = np.asarray(times, np.float64)
    out = Pose64(times.shape + (len(clip.skeleton),))
    for t, dst in zip(times.reshape(-1), out.items()):
        sample_keys_kernel(clip.pos, keys, flag, 0, clip.frames, clip.dt, t, rate, mode == "cubic", loop, dst)
    return out


def edge_times(clip, rng):
    """Random times, every key, both ends and beyond them."""
    end = (clip.frames - 1) * clip.dt
    return np.concatenate([rng.uniform(-0.2, end + clip.dt + 0.2, 50), np.arange(clip.frames) * clip.dt,
                           [-1e-9, 0.0, end, end + 1e-9, clip.frames * clip.dt]])


@pytest.mark.parametrize("mode,loop", MODES)
def test_key_table_path_equals_reference_path(mode, loop):
    """Key table (executor) and keys read on the fly (reference) give bit-identical float64 results."""
    rng = np.random.default_rng(11)
    unit = synthetic_clip(frames=9, seed=2)
    unit = ag.Clip(unit.skeleton, unit.pos, unit.rot, dt=unit.dt)
    for clip in (synthetic_clip(frames=17, seed=1), unit, synthetic_clip(frames=2), synthetic_clip(frames=1)):
        ts = edge_times(clip, rng)
        for rate in (1.0, -0.7):
            a = sample64(clip, ts, mode, loop, rate)
            b = sample64_keys(clip, ts, mode, loop, rate)
            for f in ("pos", "rot", "scl", "vel", "ang", "svl"):
                np.testing.assert_array_equal(getattr(b, f), getattr(a, f), err_msg=f"{f} {clip.frames} frames")


def test_key_table_rows_hold_what_the_docstring_says():
    """Against numpy: unit key rotations, r1 = log(q_k+1 q_k^-1), m0 = mean key angular velocity, J(r1) m1 = w_k+1."""
    clip = synthetic_clip(frames=12, seed=5)
    keys, unit = key_table(clip)
    assert keys.shape == (12, 4, KEY_WIDTH) and keys.dtype == np.float32 and not unit
    q = clip.rot / np.linalg.norm(clip.rot, axis=-1, keepdims=True)
    np.testing.assert_allclose(keys[..., 0:4], q, atol=1e-7)
    r1 = rotvec(qmul(np.roll(q, -1, axis=0), qconj(q)))  # looping: the last key's segment wraps to the first
    np.testing.assert_allclose(keys[..., 4:7], r1, atol=2e-7)
    w = 0.5 * (np.roll(r1, 1, axis=0) + r1)  # angular velocity (rad per frame) at each key
    np.testing.assert_allclose(keys[..., 7:10], w, atol=2e-7)
    # m1 is the chart rate whose exp-map angular velocity at r1 is the next key's: J(r1) m1 = w_k+1.
    m1, eps = keys[..., 10:13].astype(float), 1e-6
    r = r1.astype(float)
    ang = rotvec(qmul(from_rotvec(r + eps * m1), qconj(from_rotvec(r - eps * m1)))) / (2 * eps)
    np.testing.assert_allclose(ang, np.roll(w, -1, axis=0), atol=1e-6)
    np.testing.assert_allclose(keys[..., 13:16], np.log(clip.scl), atol=1e-7)


def test_unit_scale_flag_and_skip():
    """Clips with every scale exactly 1 are flagged; their sample writes scale 1 and rate 0 exactly."""
    clip = synthetic_clip(frames=6)
    plain = ag.Clip(clip.skeleton, clip.pos, clip.rot, dt=clip.dt)
    assert key_table(plain)[1] and not key_table(clip)[1]
    almost = plain.scl.copy()
    almost[3, 2, 1] = np.nextafter(np.float32(1.0), np.float32(2.0))
    assert not key_table(ag.Clip(clip.skeleton, clip.pos, clip.rot, almost, dt=clip.dt))[1]
    pose = sample64_keys(plain, np.array([0.05, 0.11]), "cubic", True)
    assert np.all(pose.scl == 1.0) and np.all(pose.svl == 0.0)


@pytest.mark.parametrize("mode,loop", MODES)
def test_ops_sample_same_with_and_without_key_table(mode, loop):
    """ag.ops.sample builds the key table for many times at once, not for one: the results are the same."""
    clip = synthetic_clip(frames=10)
    ts = edge_times(clip, np.random.default_rng(12))
    many = ag.ops.sample(clip, ts, mode=mode, loop=loop, rate=1.3)  # len(ts) >= frames: key table
    for i in (0, 7, 41, len(ts) - 1):
        one = ag.ops.sample(clip, ts[i], mode=mode, loop=loop, rate=1.3)  # keys read on the fly
        for f in ("pos", "rot", "scl", "vel", "ang", "svl"):
            np.testing.assert_array_equal(getattr(many, f)[i], getattr(one, f))


@pytest.mark.parametrize("mode,loop", MODES)
def test_sample_node_reads_the_key_table_of_a_full_db(mode, loop):
    """With db[4], db[5] (as the executor passes them) sample_node() gives what it gives from the keys alone."""
    clip = synthetic_clip()
    node = Sample(id="s", clip="c", mode=mode, loop=loop, rate=1.5)
    h = Harness(clip, node)
    pad = int(h.par[PAR.start])
    rng = np.random.default_rng(13)
    junk = rng.normal(size=(pad, len(clip.skeleton), KEY_WIDTH)).astype(np.float32)
    keys, unit = key_table(clip)
    full = h.db + (np.concatenate([junk, keys, junk[:3]]),
                   np.concatenate([np.zeros(pad), np.full(clip.frames, float(unit)), np.zeros(3)]).astype(np.float32))
    h.ins[1], h.sig[0] = 0, 1.5
    h.reset(0.29)
    short = [h.step(1 / 60) for _ in range(4)]
    h.db = full
    h.reset(0.29)
    for want in short:
        got = h.step(1 / 60)
        for f in ("pos", "rot", "scl", "vel", "ang", "svl"):
            np.testing.assert_array_equal(getattr(got, f), getattr(want, f), err_msg=f)


def test_cubic_end_tangents_one_sided_when_clamped_central_when_looping():
    """At the first key a clamped clip moves at the one-sided difference, a looping one at the central one."""
    clip = synthetic_clip(frames=8, seed=6)
    q = clip.rot.astype(float)
    r_first = rotvec(qmul(q[1], qconj(q[0])))
    r_wrap = rotvec(qmul(q[0], qconj(q[-1])))
    r_last = rotvec(qmul(q[-1], qconj(q[-2])))
    end = (clip.frames - 1) * clip.dt
    clamped = sample64(clip, np.array([0.0]), "cubic", False)
    np.testing.assert_allclose(clamped.ang[0], r_first / clip.dt, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(clamped.vel[0], (clip.pos[1] - clip.pos[0]) / clip.dt, rtol=1e-6, atol=1e-6)
    looping = sample64(clip, np.array([0.0]), "cubic", True)
    np.testing.assert_allclose(looping.ang[0], 0.5 * (r_wrap + r_first) / clip.dt, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(looping.vel[0], 0.5 * (clip.pos[1] - clip.pos[-1]) / clip.dt, rtol=1e-6, atol=1e-6)
    # Played backwards from the last key of a clamped clip: the one-sided difference there.
    back = sample64(clip, np.array([end]), "cubic", False, rate=-1.0)
    np.testing.assert_allclose(back.ang[0], -r_last / clip.dt, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(back.vel[0], -(clip.pos[-1] - clip.pos[-2]) / clip.dt, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("t", [-1e17, 1e17, -1e300, 1e300, -5e-324])
@pytest.mark.parametrize("loop", [True, False])
def test_huge_times_read_inside_the_clip(t, loop):
    """A time too large to wrap exactly (the kernel's, past the API's +-1e6 s) still picks a segment inside the clip."""
    from animgraph.nodes.sample import segment

    frames, key_dt = 189, 1.0 / 120
    for rate in (1.0, -1.0):
        k, s, _ = segment(t, frames, key_dt, loop, rate)
        assert 0 <= k <= frames - 1 and 0.0 <= s <= 1.0
        if not loop:
            assert (k, s) == ((0, 0.0) if t < 0 else (frames - 2, 1.0))
    if abs(t) > 1e6:
        with pytest.raises(ValueError):  # the API keeps times within +-1e6 s
            ag.ops.sample(synthetic_clip(), t)


# ------------------------------------------------------------------ contacts


def contact_plan(loop=True, rate=1.0, root_motion=False):
    """A walk sample with contacts, its two contact outputs as graph outputs."""
    g = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 2, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "s", "type": "sample", "clip": "walk", "loop": loop, "rate": rate, "contacts": True,
                   "root_motion": root_motion},
                  {"id": "left", "type": "output", "signal": "bool"}, {"id": "right", "type": "output", "signal": "bool"},
                  {"id": "out", "type": "output"}],
        "links": [["s.left_contact", "left.value"], ["s.right_contact", "right.value"], ["s.pose", "out.pose"]]})
    return ag.compile(g)


def key_contacts(skel, clip):
    """(F, 2) bool: the clip's contact tracks (``animgraph.tracks``, tested against the detector in test_tracks) at
    its keys."""
    from animgraph import tracks

    return tracks.contacts_at(tracks.derive(skel, clip), np.arange(clip.frames) * clip.dt) > 0.5


@pytest.mark.parametrize("root_motion", [False, True])
def test_contacts_are_the_clips_at_the_nearest_key_and_wrap(root_motion):
    # Own clock at the clip's frame time: one key per step, twice round the loop.  The
    # root-relative variant gives the same contacts (the tracks of the clip as captured).
    skel, clip = ag.data.load("walk")
    want = key_contacts(skel, clip)
    assert want.any() and not want.all()
    inst = contact_plan(root_motion=root_motion).instance()
    inst.reset(0.0)
    for f in range(2 * clip.frames + 5):
        out = inst.step(clip.dt)
        got = [bool(np.asarray(out[side]).reshape(-1)[0]) for side in ("left", "right")]
        assert got == list(want[f % clip.frames]), f


def test_contacts_follow_rate_and_the_time_input():
    skel, clip = ag.data.load("walk")
    want = key_contacts(skel, clip)
    inst = contact_plan(rate=-2.0).instance()
    inst.reset(0.0)
    for n in range(clip.frames):  # backwards two keys a step, wrapping below 0; a third of a key off: still nearest
        out = inst.step(clip.dt)
        key = (-2 * n) % clip.frames
        assert bool(np.asarray(out["left"]).reshape(-1)[0]) == want[key, 0], n
    h = Harness(clip, Sample(id="s", clip="c", loop=False, contacts=True))
    from animgraph.nodes.sample import CLIP_TABLES

    def padded(t):  # the clip's table placed like its frames (after 7 junk frames, 3 after)
        a = t.build(clip)
        z = lambda n: np.zeros((n,) + a.shape[1:], np.float32)  # noqa: E731
        return np.ascontiguousarray(np.concatenate([z(7), a, z(3)]))

    h.db = h.db[:3] + (skel.parents.astype(np.int64),) + tuple(padded(t) for t in CLIP_TABLES)
    h.outs = np.array([1, 8, 4, 5], np.int64)  # pose slot 1, time_left at sig[8:10], the contacts at sig[4], sig[5]
    h.reset(0.0)
    h.ins[0] = 2
    for t in (0.0, 0.4 * clip.dt, 0.6 * clip.dt, 100.3 * clip.dt, -1.0, 1e3):
        h.sig[2:4] = (t, 1.0)
        h.step(1 / 60)
        key = int(min(max(round(t / clip.dt), 0), clip.frames - 1))  # clamped when not looping
        assert list(h.sig[4:6]) == list(want[key].astype(float)), t


def test_contacts_need_toes():
    clip = synthetic_clip()
    ctx = BuildContext(skeleton=clip.skeleton, clips={"c": ClipRange(0, clip.frames, clip.dt, clip)})
    with pytest.raises(ag.GraphError, match="'s'.*'contacts'.*left_toe"):
        Sample(id="s", clip="c", contacts=True).params(ctx)
    assert Sample(id="s", clip="c").params(ctx)[PAR.contacts] == 0.0


# ------------------------------------------------------------------ time left


def test_time_left_by_hand_on_the_own_clock():
    # (end - t) / rate forwards, t / |rate| backwards; its rate by the quotient rule with dt/dt_clock = rate:
    # d/dt (end - t) / r = (-r r - (end - t) r') / r^2, d/dt t / (-r) = (-r r + t r') / r^2.
    clip = synthetic_clip()
    end = (clip.frames - 1) * clip.dt
    h = Harness(clip, Sample(id="s", clip="c", mode="cubic", loop=False))
    for t0, rate, rate_dx in ((0.1, 1.0, 0.0), (0.37, 0.5, 0.0), (0.37, 1.7, 0.4), (0.5, -0.8, 0.0),
                              (0.62, -1.3, -0.9), (0.2, 0.25, -2.0)):
        h.reset(t0)
        h.sig[6:8] = (rate, rate_dx)
        h.step(1 / 60)
        if rate > 0:
            want = ((end - t0) / rate, (-rate * rate - (end - t0) * rate_dx) / rate**2)
        else:
            want = (t0 / -rate, (-rate * rate + t0 * rate_dx) / rate**2)
        np.testing.assert_allclose(h.sig[8:10], want, rtol=1e-12, err_msg=str((t0, rate, rate_dx)))
    for t0, rate in ((end, 1.0), (0.0, -1.0)):  # at the end it plays towards: held, nothing left
        h.reset(t0)
        h.sig[6:8] = (rate, 0.3)
        h.step(1 / 60)
        assert list(h.sig[8:10]) == [0.0, 0.0]


def test_time_left_is_never_when_looping_or_still():
    from animgraph.nodes.sample import TIME_LEFT_NEVER

    clip = synthetic_clip()
    for loop, rate in ((True, 1.0), (True, -2.0), (False, 0.0), (False, 1e-12)):
        h = Harness(clip, Sample(id="s", clip="c", loop=loop))
        h.reset(0.3)
        h.sig[6:8] = (rate, 0.5)
        h.step(1 / 60)
        assert list(h.sig[8:10]) == [TIME_LEFT_NEVER, 0.0], (loop, rate)
    assert TIME_LEFT_NEVER >= 1e9  # beyond any session a condition is meant to see


def test_time_left_follows_the_time_input():
    # Driven: the clock is the input, its rate is the playback rate (steady: its own rate is not carried).
    clip = synthetic_clip()
    end = (clip.frames - 1) * clip.dt
    h = Harness(clip, Sample(id="s", clip="c", loop=False, time=0.3))
    h.ins[0] = 2
    h.reset(0.0)
    for t, rate, want in ((0.41, 0.75, ((end - 0.41) / 0.75, -1.0)), (0.41, -2.0, (0.41 / 2.0, -1.0)),
                          (end + 1.0, 1.0, (0.0, 0.0)), (-1.0, 1.0, (end + 1.0, -1.0))):
        h.sig[2:4] = (t, rate)
        h.sig[6:8] = (1.0, 5.0)  # the rate port is not read while the time drives
        h.step(1 / 60)
        np.testing.assert_allclose(h.sig[8:10], want, rtol=1e-12, err_msg=str((t, rate)))
    h.sig[2:4] = (0.3, 0.0)  # the field's fixed time: a held pose never ends
    h.step(1 / 60)
    assert h.sig[8] >= 1e9 and h.sig[9] == 0.0


def time_left_plan(loop=False, batch=1, mode="cubic", clip="walk"):
    """A sample whose rate is the input ``r``; its pose and ``time_left`` are graph outputs."""
    g = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 2, "assets": {clip: f"animgraph:{clip}"},
        "nodes": [{"id": "r", "type": "input", "signal": "scalar", "default": 1.0, "min": -2.0, "max": 2.0},
                  {"id": "s", "type": "sample", "clip": clip, "mode": mode, "loop": loop},
                  {"id": "left", "type": "output", "signal": "scalar"}, {"id": "out", "type": "output"}],
        "links": [["r.value", "s.rate"], ["s.time_left", "left.value"], ["s.pose", "out.pose"]]})
    return ag.compile(g, batch=batch)


@pytest.mark.parametrize("forwards", [True, False])
def test_time_left_rate_matches_central_fd_under_a_ramped_rate(forwards):
    # The rate ramps linearly at ``a`` (its rate given with it) while the own clock runs it.  The clock
    # integrates the rate by steps (t += r dt), so it runs a dt/2 behind the ramp: the FD of the time
    # left sees its rate off by at most (a dt / 2) / |r| * 2 (the clock and the divisor), plus float noise.
    skel, clip = ag.data.load("walk")
    end = (clip.frames - 1) * clip.dt
    inst = time_left_plan().instance()
    dt, a = 1 / 960, (0.5 if forwards else -0.5)
    r0 = 0.6 if forwards else -0.6
    inst.reset(0.2 if forwards else end - 0.2)
    values, rates, speeds = [], [], []
    for n in range(900):  # ~0.94 s, the rate from 0.6 to ~1.07 in size
        r = r0 + a * n * dt
        out = np.asarray(inst.step(dt, {"r": (r, a)})["left"]).reshape(-1)
        values.append(out[0]), rates.append(out[1]), speeds.append(abs(r))
    values, rates, speeds = np.array(values), np.array(rates), np.array(speeds)
    fd = (values[2:] - values[:-2]) / (2 * dt)
    bound = abs(a) * dt / speeds[1:-1] + 1e-9
    assert np.all(np.abs(rates[1:-1] - fd) <= bound), np.abs(rates[1:-1] - fd).max()
    # The ramp matters: without its term (the time left times a / r) the rate would be off by far more.
    assert np.min(np.abs(values[1:-1] * a / speeds[1:-1])) > 100 * bound.max()
    assert values[-1] > 0.0  # still before the end: every difference was on the smooth part


def test_time_left_is_never_through_the_graph_when_looping():
    inst = time_left_plan(loop=True).instance()
    inst.reset(0.5)
    for r in (1.0, -1.5, 0.0):
        out = np.asarray(inst.step(1 / 60, {"r": (r, 0.2)})["left"]).reshape(-1)
        assert out[0] >= 1e9 and out[1] == 0.0


@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_time_left_on_lanes_equals_per_character(mode):
    # Batch 19: a full lane tile and a padded one; per-character rates in [-1, 1] (through zero), switched.
    from test_lane_executor import run_both

    values, rates = run_both(time_left_plan(batch=19, mode=mode), 400, seed=5)
    assert values <= 1e-5 and rates <= 1e-4
