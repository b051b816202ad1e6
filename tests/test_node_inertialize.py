"""inertialize node and ag.ops.Inertializer: parameters, degenerate cases, velocities, transitions.

The node is driven through its kernel exactly as the executor calls it: ``inertialize_node(ins,
outs, par, st, pose, sig, db, dt)`` with hand-built arrays (``Runner``).  Velocity tolerance:
central differences of the node's own output (steps h = 2e-4 s and 2h combined, float32 poses) agree with the
propagated velocities to ``VEL_TOL`` relative, the error divided by max(|v|, 1 unit/s).
"""

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from pydantic import ValidationError

import animgraph as ag
from animgraph.node import BuildContext
from animgraph.nodes.inertialize import JOINT, MOTION, PAR, ST, Inertialize, Inertializer
from animgraph.decay import CUBIC_RATE_PEAK, REST_PEAK, cubic_weights, rate_rest_weights
from animgraph.offsets import OVERSHOOT_ROT, overshoot_weights
from conftest import BUNDLED, load_any
from fd import central_velocities, from_rotvec, qconj, qmul, rotvec

DT = 1 / 60
H = 4e-4  # central-difference step (s): small against the clips' 1/120 s key spacing
T0 = 1 / 240  # frames at T0 + n DT fall mid-way between the clips' keys, where sampling is smooth
VEL_TOL = 1e-3  # relative (floor 1 m/s, 1 rad/s), central differences with Richardson extrapolation


# ---------------------------------------------------------------- helpers shared by the transition-node tests


def skeleton(joints):
    return ag.Skeleton([f"j{i}" for i in range(joints)], [-1] + list(range(joints - 1)), np.zeros((joints, 3)))


DB = (
    np.zeros((1, 1, 3), np.float32),
    np.zeros((1, 1, 4), np.float32),
    np.zeros((1, 1, 3), np.float32),
    np.zeros(1, np.int64),
)


class Runner:
    """One node driven through its numba kernel with hand-built contract arrays.

    The input pose sits in slot 2 and the output in slot 0 of a 3-slot pose buffer; the
    bool inputs (``transition`` or ``reset``/``jump``) sit at sig[3], sig[5]: indices that
    are not 0 so a kernel reading the wrong slot or offset fails.
    """

    def __init__(self, node, skel, events=1):
        ctx = BuildContext(skeleton=skel)
        self.par = node.params(ctx)
        self.st = node.state(ctx)
        self.kernel = type(node).KERNEL
        j = len(skel)
        self.pose = tuple(np.zeros((3, j, n), np.float32) for n in (3, 4, 3, 3, 3, 3))
        self.sig = np.zeros(8)
        # One locator per port (the node contract); optional inputs past the events unlinked.
        extra = len(node.inputs()) - 1 - events
        self.ins = np.array([2] + [3, 5][:events] + [-1] * extra, np.int64)
        self.events = events
        self.outs = np.array([0] * len(node.outputs()), np.int64)

    def step(self, inp, dt, *events):
        """The node's output for input pose ``inp`` after ``dt`` s, with the given bool events set."""
        for a, b in zip(self.pose, inp.as_tuple()):
            a[2] = b
        for k, i in enumerate(self.ins[1:1 + self.events]):
            self.sig[i] = float(events[k]) if k < len(events) else 0.0
        self.kernel(self.ins, self.outs, self.par, self.st, self.pose, self.sig, DB, dt)
        return ag.Pose(*(a[self.outs[0]].copy() for a in self.pose))

    def copy(self):
        return copy.deepcopy(self)


def rel_errors(fd, got):
    """Per-joint |fd - got| / max(|got|, 1)."""
    got = np.asarray(got, float)
    return np.linalg.norm(fd - got, axis=-1) / np.maximum(np.linalg.norm(got, axis=-1), 1.0)


def fd_errors(step, mid, t, source, h=H):
    """Relative errors (vel, ang, svl) of ``mid`` (the output at ``t``) against central differences.

    ``step(inp, dt)`` runs a copy of the node's state after ``t`` by ``dt`` (forwards and
    backwards).  The central differences at h and 2h are combined (Richardson, the 5-point
    stencil) so the error is O(h^4): mocap joints turn fast enough that the plain central
    difference's O(h^2) term alone reaches 1e-3 at h = 1e-4 s.
    """
    fd = []
    for k in (1, 2):
        plus = step(source(t + k * h), k * h)
        minus = step(source(t - k * h), -k * h)
        fd.append(central_velocities(plus, minus, k * h))
    return tuple(rel_errors((4 * a - b) / 3, got) for a, b, got in zip(fd[0], fd[1], (mid.vel, mid.ang, mid.svl)))


def clip_source(clip, stretch=False):
    """Input pose at time t: the clip sampled (cubic, clamped, exact velocities).

    Not looping: the clips' root translation does not loop, so a looping sample curves
    wildly in the first and last key segments.  Tests stay within the shortest clip (1.1 s).

    ``stretch`` adds smooth synthetic motion the clips lack, with its exact rate: every
    joint's offset and scale breathe, so position and scale velocities are tested too.
    """

    def source(t):
        p = ag.ops.sample(clip, t, mode="cubic", loop=False)
        if stretch:
            phase = 3.0 * t + np.arange(p.joints)[:, None] + np.arange(3) + len(clip.name)
            p.pos += 0.05 * np.sin(phase)
            p.vel += 0.15 * np.cos(phase)
            p.scl *= np.exp(0.3 * np.sin(phase + 1.0))
            p.svl += 0.9 * np.cos(phase + 1.0)
        return p

    return source


def other_clip(clip, t):
    """A second bundled clip to switch to at time ``t`` (same CMU skeleton), its root moved onto clip's.

    As a game would, the new clip starts where the character is (horizontally), so the
    transitions test the pose change, not a teleport of metres.
    """
    other = load_any("jog" if clip.name != "jog" else "walk")[1]
    gap = clip_source(clip)(t).pos[0] - clip_source(other)(t).pos[0]
    pos = other.pos.copy()
    pos[:, 0, [0, 2]] += gap[[0, 2]]
    return ag.Clip(other.skeleton, pos, other.rot, other.scl, other.dt, name=other.name)


def single(pos=(0, 0, 0), rot=(1, 0, 0, 0), scl=(1, 1, 1), vel=(0, 0, 0), ang=(0, 0, 0), svl=(0, 0, 0)):
    """A one-joint pose."""
    return ag.Pose([pos], [rot], [scl], [vel], [ang], [svl])


def assert_pose_close(a, b, tol, fields=("pos", "scl", "vel", "ang", "svl")):
    """Poses equal to ``tol`` (absolute and relative), rotations up to sign; tol 0: bit for bit."""
    if tol == 0:
        for f in fields + ("rot",):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
        return
    for f in fields:
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), atol=tol, rtol=tol, err_msg=f)
    d = np.abs(np.sum(a.rot.astype(float) * b.rot, axis=-1))
    np.testing.assert_allclose(d, 1.0, atol=tol, err_msg="rot")


def carried(p, h):
    """Pose ``p`` moved ``h`` s on at constant velocities (numpy, independent of the kernels)."""
    return ag.Pose(
        p.pos + h * p.vel,
        qmul(from_rotvec(h * np.asarray(p.ang, float)), p.rot),
        p.scl * np.exp(h * np.asarray(p.svl, float)),
        p.vel,
        p.ang,
        p.svl,
    )


def report(name, errs):
    e = np.concatenate([np.ravel(x) for x in errs])
    print(f"{name}: max {e.max():.2e}, p99 {np.percentile(e, 99):.2e} over {e.size} joint-frames")
    return e


# ---------------------------------------------------------------- validity


@pytest.mark.parametrize(
    "fields",
    [
        {"duration": -0.1},
        {"duration": math.nan},
        {"duration": math.inf},
        {"halflife": -1e-3},
        {"halflife": math.nan},
        {"mode": "linear"},
        {"decay": 0.2},
    ],
)
def test_bad_parameters_are_refused(fields):
    with pytest.raises(ValidationError):
        Inertialize(id="in", **fields)


@pytest.mark.parametrize(
    "kwargs", [{"duration": -1.0}, {"halflife": math.nan}, {"duration": 0.2, "halflife": 0.1}, {"duration": math.inf}]
)
def test_bad_inertializer_arguments_are_refused(kwargs):
    with pytest.raises(ValueError):
        Inertializer(**kwargs)


def test_ports_and_layout():
    node = Inertialize(id="in", mode="spring", halflife=0.2)
    assert [p.name for p in node.inputs()] == ["pose", "transition", "motion"]
    assert node.inputs()[1].optional and node.inputs()[1].signal == "bool"
    assert node.inputs()[2].optional and node.inputs()[2].signal == "motion"
    assert [p.name for p in node.outputs()] == ["pose", "motion"]
    ctx = BuildContext(skeleton=skeleton(4))
    np.testing.assert_array_equal(node.params(ctx), PAR.pack(cubic=0.0, length=0.2))
    # Header, per joint the previous output (19) and the offset (18), root-motion tail.
    assert (ST.SIZE, JOINT.prev, JOINT.off, JOINT.SIZE, MOTION.SIZE) == (3, 0, 19, 37, 12)
    assert node.state(ctx).shape == (ST.SIZE + JOINT.SIZE * 4 + MOTION.SIZE,) and not node.state(ctx).any()


def test_mismatched_poses_are_refused():
    inert = Inertializer(duration=0.2)
    with pytest.raises(ValueError):
        inert.transition(ag.Pose.identity(3), ag.Pose.identity(4))
    inert.transition(ag.Pose.identity(3), ag.Pose.identity(3))
    with pytest.raises(ValueError):
        inert.update(ag.Pose.identity(3, (2,)), DT)


# ---------------------------------------------------------------- parameters, hand-checked


def test_duration_cubic_decay_hand_checked():
    # Offset 1 m along x at rest, duration 0.5 s: half way, 2/8 - 3/4 + 1 = 0.5 m at -3 m/s.
    inert = Inertializer(duration=0.5)
    inert.transition(single(pos=(1, 0, 0)), single())
    out = inert.update(single(pos=(0, 2, 0), vel=(0, 1, 0)), 0.25)
    np.testing.assert_allclose(out.pos[0], [0.5, 2, 0], atol=1e-7)
    np.testing.assert_allclose(out.vel[0], [-3, 1, 0], atol=1e-6)
    # At the duration the offset and its rate are gone exactly.
    out = inert.update(single(pos=(0, 2, 0), vel=(0, 1, 0)), 0.25)
    np.testing.assert_array_equal(out.pos[0], [0, 2, 0])
    np.testing.assert_array_equal(out.vel[0], [0, 1, 0])


def test_a_fast_offset_decays_over_a_shorter_duration_and_never_swings_past_its_bound():
    """A knee shown turning 50 rad/s faster than the new input (a switch at 5x playback), duration 0.3 s: over the
    whole duration the cubic's rate term would carry it 2.2 rad on (4/27 |v0| T).  That term comes to rest as
    ``v0 t (1 - t/T')^3`` over the ``T'`` that keeps it at ``OVERSHOOT_ROT`` (its peak is 27/256 |v0| T'), the offset's
    own term over the whole duration (hand-computed), the start's rate kept exactly; a slow position offset keeps
    the full duration for both terms."""
    inert = Inertializer(duration=0.3)
    src = single(rot=from_rotvec([0.2, 0, 0]), ang=(50.0, 0, 0), vel=(0.5, 0, 0))
    inert.transition(src, single())
    short = OVERSHOOT_ROT / (50.0 * 27.0 / 256.0)  # 0.0948 s
    worst = 0.0
    for t in np.linspace(0.0, 0.3, 301):
        probe = copy.deepcopy(inert)
        out = probe.update(single(), t)
        x = rotvec(out.rot[0].astype(float))[0]
        worst = max(worst, x)
        s, u = min(t / short, 1.0), t / 0.3  # the rate term's quartic over the short duration, the offset's cubic over 0.3 s
        want = 0.2 * (2 * u**3 - 3 * u**2 + 1) + 50.0 * t * (1 - s) ** 3
        assert abs(x - want) < 2e-5, (t, x, want)
        assert abs(out.pos[0, 0] - 0.5 * 0.3 * (u**3 - 2 * u**2 + u)) < 1e-6, t
    assert worst <= 0.2 + OVERSHOOT_ROT + 1e-5, worst
    np.testing.assert_allclose(inert.update(single(), 0.0).ang[0], [50.0, 0, 0], rtol=1e-5)  # the start's rate


def test_rate_rest_weights_hand_checked():
    # Tail 1, v0 t (1 - t/T)^3, T = 0.4: at 0 no offset at rate v0; at T/4 its peak 27/256 T at rest; at T/2 T/16
    # at -1/4.  Tail 0 is the cubic's own rate term; tail 1/2 at T/2: T (1/2)(1/4)(3/4) = 3T/32 at -1/4.
    assert rate_rest_weights(0.4, 1.0, 0.0) == (0.0, 1.0)
    np.testing.assert_allclose(rate_rest_weights(0.4, 1.0, 0.1), (27 / 256 * 0.4, 0.0), atol=1e-15)
    np.testing.assert_allclose(rate_rest_weights(0.4, 1.0, 0.2), (0.4 / 16, -0.25), atol=1e-15)
    np.testing.assert_allclose(rate_rest_weights(0.4, 0.5, 0.2), (3 * 0.4 / 32, -0.25), atol=1e-15)
    for t in (0.0, 0.07, 0.2, 0.33):
        np.testing.assert_allclose(rate_rest_weights(0.4, 0.0, t), cubic_weights(0.4, t)[1::2], atol=1e-15)
    assert rate_rest_weights(0.4, 1.0, 0.4) == (0.0, 0.0) == rate_rest_weights(0.4, 0.3, 7.0)
    assert rate_rest_weights(1e-7, 1.0, 0.0) == (0.0, 0.0)  # below MIN_SECONDS: at rest at once
    assert REST_PEAK == 27 / 256 and CUBIC_RATE_PEAK == 4 / 27


def _acceleration_step_at_end(weights, duration, k=1):
    """The rate's acceleration just before ``duration`` (a one-sided float64 difference) minus the zero after it."""
    e = 1e-6 * duration
    return (weights(duration, duration - e)[k] - weights(duration, duration - 2 * e)[k]) / e


@settings(max_examples=60, deadline=None)
@given(hs.floats(1e-3, 3.0), hs.floats(0.0, 1.0))
def test_rate_rest_weights_come_to_rest_and_never_pass_their_peak(duration, tail):
    """Value and rate reach 0 at ``duration``, the acceleration steps there by 2 (1 - tail) / T (none with tail 1:
    C2; the cubic's 2/T with tail 0); the value stays in [0, the tails' mix of the two peaks times duration] (tight
    at 0 and 1); the rate is the value's central difference and the acceleration starts at -(4 + 2 tail)/T."""

    def weights(d, t):
        return rate_rest_weights(d, tail, t)

    grid = np.linspace(0.0, duration, 2001)
    xs = np.array([weights(duration, t)[0] for t in grid])
    peak = (1 - tail) * CUBIC_RATE_PEAK + tail * REST_PEAK
    assert xs.min() >= 0.0 and xs.max() <= peak * duration * (1 + 1e-12)
    for end, exact in ((0.0, CUBIC_RATE_PEAK), (1.0, REST_PEAK)):
        ends = np.array([rate_rest_weights(duration, end, t)[0] for t in grid])
        assert ends.max() >= exact * duration * (1 - 1e-5)  # the bound is tight: the peak the overshoot uses
    h = 1e-5 * duration
    for t in grid[1:-1:50]:
        fd = (weights(duration, t + h)[0] - weights(duration, t - h)[0]) / (2 * h)
        assert abs(fd - weights(duration, t)[1]) < 1e-8, t
    assert abs(_acceleration_step_at_end(weights, duration) - 2.0 * (1 - tail) / duration) < 1e-4 / duration
    assert abs(_acceleration_step_at_end(cubic_weights, duration, 3) - 2.0 / duration) < 1e-4 / duration
    acc0 = (weights(duration, h)[1] - 1.0) / h
    assert abs(acc0 + (4.0 + 2.0 * tail) / duration) < 1e-3 / duration


@settings(max_examples=60, deadline=None)
@given(hs.floats(0.0, 200.0), hs.floats(0.05, 1.0), hs.sampled_from([0.1, 0.5]))
def test_overshoot_weights_keep_the_rate_term_within_the_overshoot(speed, duration, overshoot):
    """Over the whole duration the rate term carries at most ``overshoot`` on and starts at the rate exactly; the
    offset's own weights are the cubic's untouched; the rate weight is the value weight's central difference; a
    slow rate keeps the cubic's weights exactly."""
    v0 = np.array([0.6, -0.8, 0.0]) * speed
    h = 1e-6 * duration
    worst = 0.0
    for t in np.linspace(0.0, duration, 801)[:-1]:
        w = cubic_weights(duration, t)
        got = overshoot_weights(duration, v0, overshoot, t, w)
        assert (got[0], got[2]) == (w[0], w[2])
        worst = max(worst, got[1] * speed)
        if speed * CUBIC_RATE_PEAK * duration <= overshoot:
            assert got == w
        if t > 2 * h:
            ahead = overshoot_weights(duration, v0, overshoot, t + h, cubic_weights(duration, t + h))
            back = overshoot_weights(duration, v0, overshoot, t - h, cubic_weights(duration, t - h))
            assert abs((ahead[1] - back[1]) / (2 * h) - got[3]) < 1e-5, t
    assert worst <= overshoot * (1 + 1e-9)
    assert overshoot_weights(duration, v0, overshoot, 0.0, cubic_weights(duration, 0.0))[1:4:2] == (0.0, 1.0)
    rest = overshoot / speed / REST_PEAK if speed * CUBIC_RATE_PEAK * duration > overshoot else math.inf
    if rest < duration:
        # Brought to rest at T' (the duration whose peak 27/256 |v0| T' is the overshoot) mid-transition with no
        # acceleration left, the bound reached at T'/4.
        def rate_term(_, t):
            return overshoot_weights(duration, v0, overshoot, t, cubic_weights(duration, t))

        assert abs(_acceleration_step_at_end(rate_term, rest, 3)) < 1e-4 / rest
        np.testing.assert_allclose(rate_term(None, rest)[1:4:2], (0.0, 0.0), atol=1e-12)
        assert abs(rate_term(None, rest / 4)[1] * speed - overshoot) < 1e-9


@pytest.mark.parametrize("overshoot", [0.1, 0.5])
@pytest.mark.parametrize("peak", [CUBIC_RATE_PEAK, REST_PEAK])
def test_overshoot_weights_are_continuous_in_the_rate(peak, overshoot):
    """Where the rate term starts being cut short (|v0| 4/27 T = overshoot) and where it starts ending before the
    transition (|v0| 27/256 T = overshoot) the weights change by as little as the rate does."""
    duration = 0.3
    edge = overshoot / (peak * duration)
    for t in np.linspace(0.0, duration, 61)[:-1]:
        w = cubic_weights(duration, t)
        below = overshoot_weights(duration, np.array([edge * (1 - 1e-9), 0, 0]), overshoot, t, w)
        above = overshoot_weights(duration, np.array([edge * (1 + 1e-9), 0, 0]), overshoot, t, w)
        np.testing.assert_allclose(below, above, atol=1e-8, err_msg=str(t))


def test_halflife_spring_decay_hand_checked():
    # Critically damped, y = 2 ln2 / halflife: x(t) = e^-yt (x0 + (v0 + y x0) t).
    h, x0, v0, t = 0.1, 0.4, -3.0, 0.07
    y = 2 * math.log(2) / h
    x = math.exp(-y * t) * (x0 + (v0 + y * x0) * t)
    v = math.exp(-y * t) * (v0 - (v0 + y * x0) * y * t)
    inert = Inertializer(halflife=h)
    inert.transition(single(pos=(0, x0, 0), vel=(0, v0, 0)), single())
    out = inert.update(single(), t)
    np.testing.assert_allclose(out.pos[0], [0, x, 0], atol=1e-7)
    np.testing.assert_allclose(out.vel[0], [0, v, 0], atol=1e-6)


def test_node_mode_duration_halflife_match_the_op():
    skel = skeleton(1)
    src = single(pos=(0.3, 0, 0), rot=from_rotvec([0, 0.8, 0]), scl=(2, 1, 1), vel=(1, 0, 0), ang=(0, 0, 2))
    dst = single(pos=(0, 0.2, 0), vel=(0, -1, 0), svl=(0.5, 0, 0))
    cases = [({"duration": 0.3}, {"duration": 0.3}), ({"mode": "spring", "halflife": 0.05}, {"halflife": 0.05})]
    for fields, kwargs in cases:
        node = Runner(Inertialize(id="in", **fields), skel)
        node.step(src, DT)  # shows src (first frame: no offset)
        op = Inertializer(**kwargs)
        op.transition(carried(src, DT), dst)
        assert_pose_close(node.step(dst, DT, True), op.update(dst, 0.0), 2e-6)
        for _ in range(5):
            assert_pose_close(node.step(dst, DT), op.update(dst, DT), 2e-6)


def test_rotation_and_scale_offsets_hand_checked():
    # Shown: 90 deg about z, scale 2; input: identity. Cubic, duration 1, half way: offset halves.
    inert = Inertializer(duration=1.0)
    inert.transition(single(rot=from_rotvec([0, 0, math.pi / 2]), scl=(2, 2, 2)), single())
    out = inert.update(single(), 0.5)
    np.testing.assert_allclose(rotvec(out.rot[0].astype(float)), [0, 0, math.pi / 4], atol=1e-6)
    np.testing.assert_allclose(out.scl[0], [2**0.5] * 3, rtol=1e-6)
    # Rate of the cubic at s = 0.5: -1.5 x0 / duration.
    np.testing.assert_allclose(out.ang[0], [0, 0, -1.5 * math.pi / 2], atol=1e-5)
    np.testing.assert_allclose(out.svl[0], [-1.5 * math.log(2)] * 3, atol=1e-5)


# ---------------------------------------------------------------- degenerate cases


@pytest.mark.parametrize("fields", [{"duration": 0.0}, {"mode": "spring", "halflife": 0.0}])
def test_zero_length_transition_is_a_cut(fields):
    skel = skeleton(1)
    node = Runner(Inertialize(id="in", **fields), skel)
    node.step(single(pos=(5, 0, 0), vel=(1, 0, 0)), DT)
    new = single(pos=(0, 1, 0), vel=(0, 2, 0))
    for flag in (True, False, False):
        out = node.step(new, DT, flag)
        np.testing.assert_array_equal(out.pos, new.pos)
        np.testing.assert_array_equal(out.vel, new.vel)
    for kwargs in ({"duration": 0.0}, {"halflife": 0.0}):
        op = Inertializer(**kwargs)
        op.transition(single(pos=(5, 0, 0)), new)
        np.testing.assert_array_equal(op.update(new, 0.0).pos, new.pos)


@pytest.mark.parametrize("fields", [{"mode": "cubic", "duration": 0.25}, {"mode": "spring", "halflife": 0.1}])
def test_a_transition_after_a_step_longer_than_the_decay_is_a_cut(fields):
    """Carrying the last output 1000 s at its velocity would put the pose kilometres away: nothing is carried."""
    node = Runner(Inertialize(id="in", **fields), skeleton(1))
    node.step(single(pos=(5, 0, 0), vel=(1, 0, 0)), DT)
    new = single(pos=(0, 1, 0), vel=(0, 2, 0))
    out = node.step(new, 1000.0, True)
    np.testing.assert_array_equal(out.pos, new.pos)
    np.testing.assert_array_equal(out.vel, new.vel)
    near = Runner(Inertialize(id="in", **fields), skeleton(1))  # a step within the decay still carries
    near.step(single(pos=(5, 0, 0), vel=(1, 0, 0)), DT)
    assert not np.allclose(near.step(new, DT, True).pos, new.pos)


def test_transition_on_the_first_frame_has_no_offset():
    node = Runner(Inertialize(id="in"), skeleton(1))
    new = single(pos=(0, 1, 0), vel=(0, 2, 0))
    out = node.step(new, DT, True)
    np.testing.assert_array_equal(out.pos, new.pos)
    np.testing.assert_array_equal(out.vel, new.vel)
    out = node.step(new, DT)
    np.testing.assert_array_equal(out.pos, new.pos)


def test_q_and_minus_q_give_no_offset():
    q = from_rotvec([0.3, -1.2, 0.5])
    inert = Inertializer(duration=0.4)
    inert.transition(single(rot=q, ang=(0, 1, 0)), single(rot=-q, ang=(0, 1, 0)))
    for dt in (0.0, 0.1, 0.1):
        out = inert.update(single(rot=-q, ang=(0, 1, 0)), dt)
        np.testing.assert_allclose(np.abs(np.sum(out.rot[0] * q)), 1.0, atol=1e-6)
        np.testing.assert_allclose(out.ang[0], [0, 1, 0], atol=1e-6)


def test_rotation_offset_takes_the_short_way():
    # +170 deg and -170 deg about y are 20 deg apart; given as -q too, the offset stays 20 deg.
    shown = from_rotvec([0, math.radians(170), 0])
    new = -from_rotvec([0, math.radians(-170), 0])
    inert = Inertializer(duration=1.0)
    inert.transition(single(rot=shown), single(rot=new))
    out = inert.update(single(rot=new), 0.5)
    # Half way, the offset is 10 deg: the output is at 180 deg, not at 0 deg (the long way).
    angle = np.degrees(np.linalg.norm(rotvec(qmul(out.rot[0], qconj(new)))))
    assert abs(angle - 10.0) < 1e-3
    assert abs(np.degrees(np.linalg.norm(rotvec(out.rot[0]))) - 180.0) < 1e-3


def test_retransition_mid_decay_carries_the_current_offset():
    skel = skeleton(1)
    node = Runner(Inertialize(id="in", duration=0.5), skel)
    a = single(pos=(0, 0, 0), vel=(1, 0, 0))
    b = single(pos=(2, 0, 0), vel=(0, 1, 0))
    c = single(pos=(-3, 0, 0), vel=(0, 0, -2))
    node.step(a, DT)
    node.step(b, DT, True)
    shown = node.step(b, DT)  # mid-decay: 1 frame into a 0.5 s decay
    out = node.step(c, DT, True)
    # The output continues from what was shown (carried one frame at its velocity), not from a or b.
    np.testing.assert_allclose(out.pos, shown.pos + DT * shown.vel, atol=1e-6)
    np.testing.assert_allclose(out.vel, shown.vel, atol=1e-6)
    # An Inertializer given the shown pose makes the same output: the offset is all the state.
    op = Inertializer(duration=0.5)
    op.transition(carried(shown, DT), c)
    assert_pose_close(op.update(c, 0.0), out, 1e-6)
    for _ in range(10):
        assert_pose_close(op.update(c, DT), node.step(c, DT), 1e-6)


def test_kernel_works_in_place_and_in_batches():
    rng = np.random.default_rng(3)
    shown = ag.Pose(rng.normal(size=(2, 3, 5, 3)), from_rotvec(rng.normal(size=(2, 3, 5, 3))),
                    vel=rng.normal(size=(2, 3, 5, 3)), ang=rng.normal(size=(2, 3, 5, 3)))
    new = ag.Pose(rng.normal(size=(2, 3, 5, 3)), from_rotvec(rng.normal(size=(2, 3, 5, 3))))
    batch = Inertializer(duration=0.3)
    batch.transition(shown, new)
    out = batch.update(new, 0.1)
    for i in range(2):
        for k in range(3):
            one = Inertializer(duration=0.3)
            one.transition(shown[i, k], new[i, k])
            assert_pose_close(one.update(new[i, k], 0.1), out[i, k], 1e-7)
    # Output slot aliasing the input slot (a planner may reuse a dead input's slot).
    aliased, apart = Runner(Inertialize(id="in"), skeleton(5)), Runner(Inertialize(id="in"), skeleton(5))
    aliased.outs[0] = 2
    for node in (aliased, apart):
        node.step(shown[0, 0], DT)
    assert_pose_close(aliased.step(new[0, 0], DT, True), apart.step(new[0, 0], DT, True), 0)
    assert_pose_close(aliased.step(new[0, 0], DT), apart.step(new[0, 0], DT), 0)


# ---------------------------------------------------------------- real clips


def switch_run(node, clip_a, clip_b, frames, switch, stretch=False):
    """Run ``node`` on clip a, then clip b from frame ``switch`` (transition set there).

    Returns the outputs, the inputs and the node's state after each frame.
    """
    src_a, src_b = clip_source(clip_a, stretch), clip_source(clip_b, stretch)
    outs, ins, states = [], [], []
    for n in range(frames):
        t = T0 + n * DT
        inp = src_a(t) if n < switch else src_b(t)
        outs.append(node.step(inp, DT, n == switch))
        ins.append(inp)
        states.append(node.copy())
    return outs, ins, states


@pytest.mark.parametrize("fields", [{"mode": "cubic", "duration": 0.27}, {"mode": "spring", "halflife": 0.08}])
def test_velocities_match_central_differences_on_clips(any_clip, fields):
    skel, clip = any_clip
    switch = 6
    other = other_clip(clip, T0 + switch * DT)
    node = Runner(Inertialize(id="in", **fields), skel)
    outs, _, states = switch_run(node, clip, other, 30, switch, stretch=True)
    src = clip_source(other, stretch=True)
    errs = []
    for n in range(switch + 1, 30, 2):
        t = T0 + n * DT
        errs.append(fd_errors(lambda inp, dt: states[n].copy().step(inp, dt), outs[n], t, src))
    e_vel = report(f"inertialize {fields['mode']} {clip.name} vel", [e[0] for e in errs])
    e_ang = report(f"inertialize {fields['mode']} {clip.name} ang", [e[1] for e in errs])
    e_svl = report(f"inertialize {fields['mode']} {clip.name} svl", [e[2] for e in errs])
    assert e_vel.max() < VEL_TOL and e_ang.max() < VEL_TOL and e_svl.max() < VEL_TOL


@pytest.mark.parametrize("fields", [{"mode": "cubic", "duration": 0.25}, {"mode": "spring", "halflife": 0.025}])
def test_transition_does_not_pop_and_converges(bundled_clip, fields):
    skel, clip = bundled_clip
    switch = 10
    other = other_clip(clip, T0 + switch * DT)
    node = Runner(Inertialize(id="in", **fields), skel)
    outs, ins, _ = switch_run(node, clip, other, 40, switch)
    before, at = outs[switch - 1], outs[switch]
    # The input jumps (another clip), the output does not: its position moves on at its velocity
    # and its velocity is exactly the one shown before (the previous output carried one frame).
    assert np.abs(ins[switch].rot - ins[switch - 1].rot).max() > 0.05
    assert_pose_close(at, carried(before, DT), 2e-5)
    # Converged: the cubic after its duration exactly, the spring after 20 half-lives (< 1e-4 of the offset).
    last = outs[-1]
    tol = 0.0 if fields["mode"] == "cubic" else 1e-4
    assert_pose_close(last, ins[-1], tol + 1e-6)


@pytest.mark.parametrize("kwargs", [{"duration": 0.2}, {"halflife": 0.008}])
def test_no_history_fresh_inertializer_matches_running_one(bundled_clip, kwargs):
    skel, clip = bundled_clip
    other = other_clip(clip, T0 + 5 * DT)
    src_a, src_b = clip_source(clip), clip_source(other)
    inputs = [src_b(T0 + n * DT) if 5 <= n < 9 else src_a(T0 + n * DT) for n in range(40)]
    run_long = Inertializer(**kwargs)
    shown = run_long.update(inputs[0], 0.0)
    for n in range(1, 40):
        if n in (5, 9):  # a transition, then another one mid-decay from what is shown
            run_long.transition(carried(shown, DT), inputs[n])
            shown = run_long.update(inputs[n], 0.0)
        else:
            shown = run_long.update(inputs[n], DT)
        if n == 9 + 13:
            # Once the offset has decayed (cubic: 0.2 s; spring: 32 half-lives), a fresh
            # inertializer agrees on its first update, velocities included.
            assert_pose_close(Inertializer(**kwargs).update(inputs[n], DT), shown, 0)
    # Mid-motion transition: fresh and running inertializers given the same shown and new poses
    # give the same outputs from then on: the offset is their whole state.
    t = T0 + 40 * DT
    fresh = Inertializer(**kwargs)
    for op in (fresh, run_long):
        op.transition(carried(shown, DT), src_b(t))
    assert_pose_close(fresh.update(src_b(t), 0.0), run_long.update(src_b(t), 0.0), 0)
    for k in range(1, 6):
        inp = src_b(t + k * DT)
        assert_pose_close(fresh.update(inp, DT), run_long.update(inp, DT), 0)
