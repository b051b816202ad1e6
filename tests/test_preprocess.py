"""Clip preprocessing: Savitzky-Golay smoothing, resampling, simulation bone, foot contacts, mirroring."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph import preprocess as pp

from conftest import load_any


# ------------------------------------------------------------ Savitzky-Golay


@settings(max_examples=50, deadline=None)
@given(order=st.integers(0, 4), half=st.integers(2, 12), n=st.integers(5, 80), seed=st.integers(0, 2**31))
def test_savgol_preserves_polynomials_of_its_order(order, half, n, seed):
    """Exact (1e-8 relative) for degree <= order, everywhere including the ends."""
    rng = np.random.default_rng(seed)
    t = np.linspace(-1.0, 2.0, n)
    coef = rng.normal(size=(order + 1, 3))
    x = np.stack([np.polyval(coef[:, k], t) for k in range(3)], axis=1)
    y = pp.savgol(x, 2 * half + 1, order)
    assert y.shape == x.shape
    np.testing.assert_allclose(y, x, atol=1e-8 * (1 + np.abs(x).max()))


def test_savgol_smooths_what_it_cannot_represent():
    """A degree order+1 term is changed, and white noise loses most of its variance."""
    t = np.arange(101.0)
    cubic = (t - 50.0) ** 3
    assert np.abs(pp.savgol(cubic, 11, 2) - cubic).max() > 1.0
    noise = np.random.default_rng(1).normal(size=(2000, 2))
    assert pp.savgol(noise, 31, 3)[50:-50].var() < 0.25 * noise.var()
    # The axis argument: smoothing along axis 1 equals smoothing the transpose.
    np.testing.assert_allclose(pp.savgol(noise[:200].T, 9, 2, axis=1), pp.savgol(noise[:200], 9, 2).T)


# ------------------------------------------------------------ resampling


def _angle(a, b):
    """Rotation angle (rad) between unit quaternion arrays: 2 atan2(|vec(conj(a) b)|, |w(conj(a) b)|)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    w = (a * b).sum(-1)
    v = a[..., :1] * b[..., 1:] - b[..., :1] * a[..., 1:] - np.cross(a[..., 1:], b[..., 1:])
    return 2 * np.arctan2(np.linalg.norm(v, axis=-1), np.abs(w))


def test_resample_same_rate_is_identity():
    _, clip = ag.data.load("walk_turn")
    out = pp.resample(clip, 120)
    assert out.frames == clip.frames and out.dt == clip.dt
    np.testing.assert_array_equal(out.pos, clip.pos)
    np.testing.assert_array_equal(out.rot, clip.rot)


def test_resample_double_rate_hits_frames_and_slerps_between():
    _, clip = ag.data.load("jog")
    out = pp.resample(clip, 240)
    assert out.frames == 2 * clip.frames - 1 and out.fps == pytest.approx(240)
    np.testing.assert_allclose(out.pos[::2], clip.pos, atol=1e-6)
    assert _angle(out.rot[::2], clip.rot).max() < 1e-6  # float32 rounding of unit quaternions
    # Odd frames: positions halfway, rotations the geodesic midpoint (equal angle to both sides).
    np.testing.assert_allclose(out.pos[1::2], 0.5 * (clip.pos[:-1] + clip.pos[1:]), atol=1e-6)
    a, b = _angle(out.rot[1::2], clip.rot[:-1]), _angle(out.rot[1::2], clip.rot[1:])
    np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(a + b, _angle(clip.rot[:-1], clip.rot[1:]), atol=1e-6)


def test_resample_down_keeps_every_fourth_frame():
    _, clip = ag.data.load("run")
    out = pp.resample(clip, 30)
    assert out.frames == (clip.frames - 1) // 4 + 1
    np.testing.assert_allclose(out.pos, clip.pos[::4], atol=1e-6)
    assert _angle(out.rot, clip.rot[::4]).max() < 1e-6


# ------------------------------------------------------------ simulation bone

# SOURCES.md's descriptions: (mean speed m/s, tolerance, total turning deg left+, tolerance)
ROOT_EXPECT = {
    "cmu_12_01_walk.bvh": (0.9, 0.1, 5.0, 10.0),          # "nearly straight", 0.9 m/s
    "walk": (1.65, 0.1, 38.0, 10.0),                      # 16_23 veers 37-40 deg left
    "walk_turn": (1.6, 0.1, 90.0, 12.0),                  # 16_27 body heading ~90 deg left
    "jog": (2.7, 0.15, 0.0, 10.0),                        # 16_36 heading change ~5 deg
    "run": (4.0, 0.2, 0.0, 8.0),                          # 16_45 heading change ~3 deg
    "run_stop": (None, None, 0.0, 8.0),                   # 16_57 straight, slows to a stop
    "cmu_131_03_start_hop_spin_stop.bvh": (None, None, -352.0, 15.0),  # a full spin (to the right)
}


@pytest.mark.parametrize("name", sorted(ROOT_EXPECT))
def test_root_track_matches_sources(name):
    skel, clip = load_any(name)
    speed, speed_tol, turn, turn_tol = ROOT_EXPECT[name]
    pos, rot = pp.root_track(skel, clip)
    assert pos.shape == (clip.frames, 3) and rot.shape == (clip.frames, 4)
    assert np.all(pos[:, 1] == 0) and np.all(rot[:, [1, 3]] == 0)
    np.testing.assert_allclose(np.linalg.norm(rot, axis=1), 1, atol=1e-6)
    stats = pp.root_stats(skel, clip)
    if speed is not None:
        assert abs(stats["speed_mean"] - speed) < speed_tol, stats
    assert abs(stats["turning"] - turn) < turn_tol, stats


def test_root_track_run_stop_and_swing():
    skel, clip = ag.data.load("run_stop")
    pos, _ = pp.root_track(skel, clip)
    speed = np.linalg.norm(np.gradient(pos.astype(float), clip.dt, axis=0), axis=1)
    assert speed[:12].mean() > 2.8  # "starts mid-run at about 3.3 m/s"
    assert speed[-48:].max() < 0.3  # "then stands about 0.5 s"
    assert abs(pp.root_stats(skel, clip)["distance"] - 2.9) < 0.2
    skel, clip = load_any("cmu_131_01_start_walk_stop.bvh")
    _, rot = pp.root_track(skel, clip)
    yaw = np.degrees(pp.facing_angle(rot.astype(float)))
    assert 75 < np.abs(yaw - yaw[0]).max() < 115  # "heading swings about 90 deg and comes back"
    assert abs(yaw[-1] - yaw[0]) < 25


def test_facing_follows_the_hips():
    """A clip whose hips turn at a constant rate gives that yaw rate (independent of smoothing)."""
    skel, clip = ag.data.load("run")
    clip = pp.resample(clip, 120)
    yaw = np.linspace(0.0, np.pi / 2, clip.frames)  # 90 deg left over the clip
    turn = np.stack([np.cos(yaw / 2), 0 * yaw, np.sin(yaw / 2), 0 * yaw], axis=1)
    clip.rot[:, 0] = turn
    clip.pos[:, 0] = [0.0, 1.0, 0.0]
    _, rot = pp.root_track(skel, clip)
    np.testing.assert_allclose(pp.facing_angle(rot.astype(float)), yaw, atol=1e-4)


# ------------------------------------------------------------ foot contacts


def _onsets(contacts):
    """Sorted (frame, column) of contact starts."""
    d = np.diff(contacts.astype(int), axis=0)
    frames, cols = np.nonzero(d == 1)
    return sorted(zip(frames + 1, cols))


@pytest.mark.parametrize("name", ["walk", "walk_turn", "cmu_12_01_walk.bvh"])
def test_walk_contacts_alternate(name):
    skel, clip = load_any(name)
    contacts = pp.foot_contacts(skel, clip)
    assert contacts.shape == (clip.frames, 2) and contacts.dtype == bool
    sides = [c for _, c in _onsets(contacts)]
    assert len(sides) >= 2
    assert all(a != b for a, b in zip(sides, sides[1:])), sides
    duty = contacts.mean(axis=0)
    assert np.all((duty > 0.35) & (duty < 0.65)), duty  # a walk: each toe down about half the time
    assert (~contacts.any(axis=1)).mean() < 0.1  # walking has (almost) no flight phase


def test_run_contacts_have_flight_and_stop_stands():
    skel, clip = ag.data.load("run")
    contacts = pp.foot_contacts(skel, clip)
    assert (~contacts.any(axis=1)).mean() > 0.4  # running: both feet off most of the time
    assert np.all(contacts.mean(axis=0) < 0.35)
    skel, clip = ag.data.load("run_stop")
    contacts = pp.foot_contacts(skel, clip)
    assert contacts[-36:].all()  # standing at the end: both feet planted


def test_median_filter_removes_single_frame_flicker():
    x = np.array([0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0], bool)
    np.testing.assert_array_equal(pp.median_filter_bool(x, 3), [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0])


# ------------------------------------------------------------ mirroring


def test_mirror_twice_is_identity():
    skel, clip = ag.data.load("walk_turn")
    skel2, clip2 = skel, pp.mirror(skel, clip)
    back = pp.mirror(clip2.skeleton, clip2)
    np.testing.assert_array_equal(back.pos, clip.pos)
    np.testing.assert_array_equal(back.rot, clip.rot)
    np.testing.assert_array_equal(back.skeleton.offsets, skel2.offsets)


def test_mirror_reflects_the_body():
    """The mirrored left toe is the reflected right toe (model space), and left turns become right turns."""
    skel, clip = ag.data.load("walk_turn")
    m = pp.mirror(skel, clip)
    g = pp.global_positions(skel, clip)
    gm = pp.global_positions(m.skeleton, m)
    for a, b in [("left_toe", "right_toe"), ("left_hand", "right_hand"), ("head", "head")]:
        np.testing.assert_allclose(gm[:, skel.index(a)], g[:, skel.index(b)] * [-1, 1, 1], atol=1e-5)
    turn = pp.root_stats(skel, clip)["turning"]
    assert pp.root_stats(m.skeleton, m)["turning"] == pytest.approx(-turn, abs=0.5)
    contacts = pp.foot_contacts(skel, clip)
    np.testing.assert_array_equal(pp.foot_contacts(m.skeleton, m), contacts[:, ::-1])


@settings(max_examples=40, deadline=None)
@given(period=st.integers(20, 60), first=st.integers(0, 30), miss=st.floats(-1, 1), seed=st.integers(0, 10**6))
def test_loop_cut_finds_where_a_periodic_motion_repeats(period, first, miss, seed):
    """Joints on closed curves of one period (frames): from a cut off two periods by up to its window (a third of a
    period, so one period is out of reach), the cut found is two periods long, and only an allowed pair is taken."""
    rng = np.random.default_rng(seed)
    window = period // 3
    miss, first = int(round(miss * window)), first + window + 3  # clear of the first frame's one-sided motion
    frames = first + 2 * period + 2 * window
    t = 2 * np.pi * np.arange(frames)[:, None, None] / period
    amp, ph = rng.uniform(0.1, 1.0, (2, 4, 3)), rng.uniform(0, 2 * np.pi, (2, 4, 3))
    glob = amp[0] * np.sin(t + ph[0]) + amp[1] * np.sin(2 * t + ph[1])  # (F, 4 joints, 3)
    feats = pp.repeat_features(glob, 1 / 60)
    a, b = pp.loop_cut(feats, first, first + 2 * period + miss, window)
    assert b - a == 2 * period
    c, d = pp.loop_cut(feats, first, first + 2 * period + miss, window, allowed=lambda x, y: x != a)
    assert c != a and d - c == 2 * period
