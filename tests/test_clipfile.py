"""Deciding units, an added T-pose frame 0 and the name map from a BVH file's data."""

import numpy as np
import pytest

import animgraph as ag
from animgraph.clipfile import CMU_SCALE, detect_tpose, detect_units, read_clip, rest_size

from conftest import BUNDLED


def test_rest_size_counts_end_sites():
    # root at 0, child 2 up, End Site 1 further up, a side joint 0.5 across.
    assert rest_size([[5, 5, 5], [0, 2, 0], [0.5, 0, 0]], [-1, 0, 0], {1: [0, 1, 0]}) == pytest.approx(3.0)


@pytest.mark.parametrize(
    "size, unit, word",
    [(1.7, 1.0, "metres"), (1.1, 1.0, "metres"), (26.6, CMU_SCALE, "CMU"), (67.0, 0.0254, "inches"),
     (175.0, 0.01, "centimetres"), (1800.0, 0.001, "millimetres"), (7.0, 1.0, "metres assumed"),
     (0.0, 1.0, "metres assumed")],
)
def test_detect_units(size, unit, word):
    got, rule = detect_units(size)
    assert got == unit and word in rule
    assert f"{size:.3g} units across" in rule or "no size" in rule


def _rotations(angles_deg, axis=(0.0, 0.0, 1.0)):
    """Unit quaternions (F,J,4) of ``angles_deg`` (F,J) about ``axis``."""
    half = np.radians(np.asarray(angles_deg, np.float64)) / 2
    q = np.zeros(half.shape + (4,))
    q[..., 0] = np.cos(half)
    q[..., 1:] = np.sin(half)[..., None] * np.asarray(axis)
    return q


def test_detect_tpose_hand_made():
    frames = np.arange(40)
    motion = 30 + 20 * np.sin(frames[:, None] * 0.1 + np.arange(8))  # 8 joints, smooth, about 2 deg per frame
    assert not detect_tpose(_rotations(motion))[0]
    tpose = np.vstack([np.zeros((1, 8)), motion])
    drop, rule = detect_tpose(_rotations(tpose))
    assert drop and rule.startswith("frame 0 dropped: T-pose detected (8 of 8 joints at rest in frame 0, 0 in frame 1")
    # A clip that really starts at rest and moves away smoothly keeps frame 0.
    ease = np.linspace(0, 1, 40)[:, None] * motion
    assert not detect_tpose(_rotations(ease))[0]
    # A rest frame 0 followed by a clip full of equally large jumps is no added T-pose.
    jumpy = np.vstack([np.zeros((1, 8)), 60 * (np.arange(39)[:, None] % 2) + motion[1:]])
    assert not detect_tpose(_rotations(jumpy))[0]
    # One frame: kept.
    drop, rule = detect_tpose(_rotations(np.zeros((1, 8))))
    assert not drop and "one frame" in rule


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_files_decide_like_data_load(name):
    skel, clip, notes = read_clip(ag.data.path(name))
    ref_skel, ref = ag.data.load(name)
    assert notes["units"] == CMU_SCALE and notes["first_frame_dropped"] and notes["convention"] == "motionbuilder"
    first, cut = ag.data._GLITCHED.get(name, (0, 0))  # data.load also drops the bundled clip's glitched frames
    np.testing.assert_array_equal(clip.pos[first:clip.frames - cut], ref.pos)
    np.testing.assert_array_equal(clip.rot[first:clip.frames - cut], ref.rot)
    assert skel.aliases == ref_skel.aliases


def test_read_clip_options(tmp_path):
    path = ag.data.path("run")
    skel, clip, notes = read_clip(path, units=1.0, first_frame="keep", names="none")
    raw_skel, raw = ag.load_bvh(path)
    np.testing.assert_array_equal(clip.pos, raw.pos)
    assert skel.aliases == {} and notes["convention"] is None
    with pytest.raises(ag.BVHError, match="first_frame must be one of"):
        read_clip(path, first_frame="maybe")
    small = tmp_path / "small.bvh"
    ag.save_bvh(small, ag.Skeleton(["a", "b"], [-1, 0], [[0, 0, 0], [0, 1, 0]]),
                ag.Clip(ag.Skeleton(["a", "b"], [-1, 0], [[0, 0, 0], [0, 1, 0]]),
                        np.zeros((2, 2, 3)), _rotations(np.zeros((2, 2)))))
    with pytest.raises(ag.BVHError, match="no CMU convention") as err:
        read_clip(small, names="cmu")
    assert str(err.value).startswith(str(small))
