"""BVH reader and writer: round trips on every clip, hand-checked channel orders, malformed files."""

import os

import numpy as np
import pytest

import animgraph as ag
from animgraph.bvh import load_bvh, save_bvh
from animgraph.errors import BVHError
from animgraph.ops import fk

from conftest import BUNDLED, TEST_ONLY, shared_path

ROUND_TRIP_TOL = 1e-5  # file units (positions) and quaternion components (up to sign)


def _file(name):
    return ag.data.path(name) if name in BUNDLED else shared_path(name)


def _quat_close(a, b):
    """Largest component difference between quaternion arrays, up to sign per quaternion."""
    return np.minimum(np.abs(a - b).max(-1), np.abs(a + b).max(-1)).max()


@pytest.mark.parametrize("name", BUNDLED + TEST_ONLY)
def test_round_trip_every_clip(name, tmp_path):
    skel, clip = load_bvh(_file(name))
    out = tmp_path / "rt.bvh"
    save_bvh(out, skel, clip)
    skel2, clip2 = load_bvh(out)
    assert skel2.names == skel.names
    assert np.array_equal(skel2.parents, skel.parents)
    assert np.abs(skel2.offsets - skel.offsets).max() <= ROUND_TRIP_TOL
    assert clip2.frames == clip.frames and clip2.dt == pytest.approx(clip.dt, rel=1e-9)
    assert np.abs(clip2.pos - clip.pos).max() <= ROUND_TRIP_TOL
    assert _quat_close(clip2.rot, clip.rot) <= ROUND_TRIP_TOL
    # Only the root moves its position in these files, so only it gets position channels.
    header = out.read_text().split("MOTION")[0]
    assert header.count("CHANNELS 6") == 1
    assert sorted(os.listdir(tmp_path)) == ["rt.bvh"]  # no temp file left behind


def test_cmu_layout_and_line_ends():
    # 16_23 mixes CRLF and LF (SOURCES.md); the reader must not care.
    raw = ag.data.path("walk").read_bytes()
    assert b"\r\n" in raw and b"ROOT Hips\n" in raw
    skel, clip = load_bvh(ag.data.path("walk"))
    assert len(skel) == 31 and clip.frames == 300
    assert clip.fps == pytest.approx(120.0)
    assert skel.names[:3] == ["Hips", "LHipJoint", "LeftUpLeg"]
    assert list(skel.parents[:6]) == [-1, 0, 1, 2, 3, 4]
    np.testing.assert_allclose(skel.offsets[2], [1.57358, -1.76629, 0.73362], atol=1e-6)
    # Joints without position channels carry their offset as local position.
    np.testing.assert_allclose(clip.pos[:, 2], np.broadcast_to(skel.offsets[2], (300, 3)), atol=0)
    np.testing.assert_allclose(clip.pos[0, 0], [-10.793, 17.3174, -33.0451], atol=1e-5)
    np.testing.assert_allclose(skel.end_sites[5], [0.0, 0.0, 1.10557], atol=1e-6)
    # Unit quaternions, float32.
    assert clip.rot.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(clip.rot, axis=-1), 1.0, atol=1e-6)


def test_scale_multiplies_positions_and_offsets():
    _, clip = load_bvh(ag.data.path("run"))
    skel_s, clip_s = load_bvh(ag.data.path("run"), scale=0.5)
    np.testing.assert_allclose(clip_s.pos, clip.pos * 0.5, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(clip_s.rot, clip.rot)


def _rot_matrix(axis, deg):
    a = np.radians(deg)
    c, s = np.cos(a), np.sin(a)
    m = {"X": [[1, 0, 0], [0, c, -s], [0, s, c]],
         "Y": [[c, 0, s], [0, 1, 0], [-s, 0, c]],
         "Z": [[c, -s, 0], [s, c, 0], [0, 0, 1]]}[axis]
    return np.array(m)


def _quat_matrix(q):
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


SMALL = """HIERARCHY
ROOT root
{
  OFFSET 1 2 3
  CHANNELS 3 Yrotation Xposition Zposition
  JOINT a
  {
    OFFSET 0 1 0
    CHANNELS 4 Xrotation Yposition Zrotation Yrotation
    JOINT b
    {
      OFFSET 2 0 0
      CHANNELS 2 Zrotation Xrotation
      End Site
      {
        OFFSET 0 0.5 0
      }
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.04
90 5 6 30 7 45 60 0 0
90 5 6 0 -1.5 0 0 90 0
"""


def test_other_channel_orders_and_non_root_positions(tmp_path):
    path = tmp_path / "small.bvh"
    path.write_text(SMALL)
    skel, clip = load_bvh(path)
    assert skel.names == ["root", "a", "b"] and list(skel.parents) == [-1, 0, 1]
    assert clip.fps == pytest.approx(25.0) and clip.frames == 2
    # Root: only X and Z positions are channels, Y keeps the offset.
    np.testing.assert_allclose(clip.pos[:, 0], [[5, 2, 6], [5, 2, 6]])
    # Joint a: Yposition channel replaces the offset's Y.
    np.testing.assert_allclose(clip.pos[:, 1], [[0, 7, 0], [0, -1.5, 0]])
    np.testing.assert_allclose(clip.pos[:, 2], [[2, 0, 0], [2, 0, 0]])
    # Rotations compose in the file's channel order: R = R_first R_second R_third.
    expect = {
        (0, 0): _rot_matrix("Y", 90),
        (0, 1): _rot_matrix("X", 30) @ _rot_matrix("Z", 45) @ _rot_matrix("Y", 60),
        (0, 2): np.eye(3),
        (1, 2): _rot_matrix("Z", 90),
    }
    for (f, j), m in expect.items():
        np.testing.assert_allclose(_quat_matrix(clip.rot[f, j].astype(np.float64)), m, atol=1e-6)
    # Hand-computed FK of frame 1: root turns 90 deg about Y, so a child offset
    # (0,-1.5,0) stays, and b's offset (2,0,0) maps to (0,0,-2).
    pose = ag.Pose(clip.pos[1], clip.rot[1])
    glob = fk(pose, skel.parents)
    np.testing.assert_allclose(glob.pos[1], [5, 0.5, 6], atol=1e-6)
    np.testing.assert_allclose(glob.pos[2], [5, 0.5, 4], atol=1e-6)
    # Round trip through the ZYX writer keeps the moving non-root position as channels.
    out = tmp_path / "out.bvh"
    save_bvh(out, skel, clip)
    skel2, clip2 = load_bvh(out)
    assert out.read_text().count("Xposition") == 2  # root and joint a
    np.testing.assert_allclose(clip2.pos, clip.pos, atol=1e-6)
    assert _quat_close(clip2.rot, clip.rot) <= 1e-6
    np.testing.assert_allclose(skel2.offsets, skel.offsets)


def test_writer_gimbal_lock(tmp_path):
    """Y = +-90 deg (ZYX gimbal lock) still writes the same rotation."""
    text = SMALL.replace("90 5 6 30 7 45 60 0 0", "0 5 6 0 7 0 0 10 90").replace(
        "90 5 6 0 -1.5 0 0 90 0", "0 5 6 0 7 0 0 -20 -90")
    text = text.replace("CHANNELS 2 Zrotation Xrotation", "CHANNELS 2 Xrotation Yrotation")
    (tmp_path / "g.bvh").write_text(text)
    skel, clip = load_bvh(tmp_path / "g.bvh")
    save_bvh(tmp_path / "o.bvh", skel, clip)
    _, clip2 = load_bvh(tmp_path / "o.bvh")
    assert _quat_close(clip2.rot, clip.rot) <= 1e-6


# ------------------------------------------------------------ malformed files

BAD = {
    # name: (file text, expected line, words the message must contain)
    "truncated_hierarchy": (SMALL[: SMALL.index("      End Site")], 13, "ends early"),
    "truncated_motion_line": (SMALL[: SMALL.rindex("90 0")], 25, "truncated"),
    # cut mid-word in the hierarchy: the bad last word is blamed on the cut
    "cut_in_channel_name": (SMALL[: SMALL.index("Xrotation\n      End") + 4], 13,
                            "unknown channel name 'Xrot' (expected X/Y/Z followed by position or rotation); "
                            "the file ends there (truncated?)"),
    "cut_in_offset": (SMALL[: SMALL.index("0.5 0")] + "5e", 16, "found '5e'; the file ends there (truncated?)"),
    "missing_frames": (SMALL.replace("Frames: 2", "Frames: 3"), 25, "ends early"),
    "wrong_channel_count": (SMALL.replace("90 5 6 30 7 45 60 0 0", "90 5 6 30 7 45 60 0"), 24, "expected 9 values"),
    "non_numeric": (SMALL.replace("90 5 6 0 -1.5", "90 5 6 0 abc"), 25, "expected a number"),
    "nan_value": (SMALL.replace("90 5 6 0 -1.5", "90 5 6 0 nan"), 25, "expected a number"),
    "unknown_channel": (SMALL.replace("Zrotation Xrotation", "Zrotation Wrotation"), 13, "unknown channel"),
    "bad_offset": (SMALL.replace("OFFSET 2 0 0", "OFFSET 2 x 0"), 12, "OFFSET"),
    "no_hierarchy": ("HELLO\n", 1, "HIERARCHY"),
    "empty": ("", 1, "empty"),
    "blank_only": ("\r\n  \n", 1, "empty"),
    "no_motion": (SMALL[: SMALL.index("MOTION")], 20, "MOTION"),
    "bad_frame_time": (SMALL.replace("0.04", "fast"), 23, "frame time"),
    "extra_lines": (SMALL.replace("Frames: 2", "Frames: 1"), 25, "motion lines"),
    "duplicate_joint_name": (SMALL.replace("JOINT b", "JOINT a"), 10, "duplicate joint name 'a' (first at line 6)"),
    "float32_overflow": (SMALL.replace("90 5 6 0 -1.5", "90 5 6 0 1e39"), 25, "out of float32 range"),
    "inf_value": (SMALL.replace("90 5 6 0 -1.5", "90 5 6 0 -inf"), 25, "expected a number"),
    "hex_value": (SMALL.replace("90 5 6 0 -1.5", "90 5 6 0 0x10"), 25, "expected a number"),
    "underscore_value": (SMALL.replace("90 5 6 0 -1.5", "90 5 6 0 1_0"), 25, "expected a number"),
    "offset_overflow": (SMALL.replace("OFFSET 2 0 0", "OFFSET 2 1e999 0"), 12, "out of float32 range"),
    "nan_offset": (SMALL.replace("OFFSET 2 0 0", "OFFSET 2 nan 0"), 12, "OFFSET"),
    "many_frames": (SMALL.replace("Frames: 2", "Frames: 999999999"), 25, "ends early"),
    "absurd_frames": (SMALL.replace("Frames: 2", "Frames: " + "9" * 5000), 22, "absurd frame count"),
    "absurd_channel_count": (SMALL.replace("CHANNELS 2 Z", "CHANNELS " + "0" * 5000 + "7 Z"), 13, "at most 6"),
    "unicode_digit_count": (SMALL.replace("CHANNELS 2 Z", "CHANNELS \u00b2 Z"), 13, "channel count"),
    "too_many_channels": (SMALL.replace("CHANNELS 2 Z", "CHANNELS 99 Z"), 13, "at most 6"),
    "denormal_frame_time": (SMALL.replace("0.04", "1e-320"), 23, "frame time"),
    "nan_frame_time": (SMALL.replace("0.04", "nan"), 23, "frame time"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_bvh_names_file_and_line(case, tmp_path):
    text, line, words = BAD[case]
    path = tmp_path / f"{case}.bvh"
    path.write_bytes(text.encode())
    with pytest.raises(BVHError) as err:
        load_bvh(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:{line}: "), msg
    assert words.lower() in msg.lower(), msg
    assert err.value.line == line and err.value.file == str(path)
    assert "\n" not in msg


def test_crlf_line_numbers_count_the_same(tmp_path):
    text, line, _ = BAD["non_numeric"]
    path = tmp_path / "crlf.bvh"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    with pytest.raises(BVHError) as err:
        load_bvh(path)
    assert err.value.line == line


def test_byte_order_mark_and_cr_only_line_ends(tmp_path):
    path = tmp_path / "bom.bvh"
    path.write_bytes(b"\xef\xbb\xbf" + SMALL.replace("\n", "\r").encode())
    skel, clip = load_bvh(path)
    assert skel.names == ["root", "a", "b"] and clip.frames == 2


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(BVHError, match="no such file") as err:
        load_bvh(tmp_path / "nope.bvh")
    assert str(tmp_path / "nope.bvh") in str(err.value)
    with pytest.raises(BVHError, match="directory") as err:
        load_bvh(tmp_path)
    assert str(err.value).startswith(str(tmp_path))


def test_failed_write_leaves_nothing(tmp_path):
    skel, clip = load_bvh(ag.data.path("run"))
    target = tmp_path / "out.bvh"
    target.write_text("previous")
    clip.pos = clip.pos[:, :5]  # inconsistent with the skeleton: writing must fail
    with pytest.raises(Exception):
        save_bvh(target, skel, clip)
    assert target.read_text() == "previous"
    assert sorted(os.listdir(tmp_path)) == ["out.bvh"]


def test_not_utf8_names_the_line(tmp_path):
    for old, new, line in ((b"JOINT b", b"JOINT \xff\xfe", 10), (b"90 5 6 0 -1.5", b"90 5 6 0 \xff", 25)):
        path = tmp_path / "latin.bvh"
        path.write_bytes(SMALL.encode().replace(old, new))
        with pytest.raises(BVHError, match="not UTF-8") as err:
            load_bvh(path)
        assert err.value.line == line and str(err.value).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize("scale", [0, -1.0, float("nan"), float("inf"), "2", True, None])
def test_bad_scale_refused(scale, tmp_path):
    path = tmp_path / "small.bvh"
    path.write_text(SMALL)
    with pytest.raises(BVHError, match="scale must be a finite number > 0") as err:
        load_bvh(path, scale=scale)
    assert str(err.value).startswith(str(path))


def test_scale_overflowing_float32_names_the_line(tmp_path):
    path = tmp_path / "big.bvh"
    path.write_text(SMALL.replace("90 5 6 0 -1.5", "90 5 6e30 0 -1.5"))
    assert np.isfinite(load_bvh(path)[1].pos).all()
    with pytest.raises(BVHError, match="overflow float32") as err:
        load_bvh(path, scale=1e10)
    assert err.value.line == 25
    path.write_text(SMALL.replace("OFFSET 2 0 0", "OFFSET 2e30 0 0"))
    with pytest.raises(BVHError, match="overflows float32") as err:
        load_bvh(path, scale=1e10)
    assert err.value.line == 10


def test_odd_numerals_and_whitespace_read_as_numbers(tmp_path):
    """``+.5``, ``-0``, ``1e1``, ``5.``, tabs, CRLF and no final line end all read as plain numbers."""
    text = SMALL.replace("90 5 6 0 -1.5 0 0 90 0", "9e1\t+5.\t6 -0 -.15E1 0 +0 90. 0").replace("\n", "\r\n").rstrip()
    path = tmp_path / "odd.bvh"
    path.write_text(text, newline="")
    _, odd = load_bvh(path)
    path.write_text(SMALL)
    _, plain = load_bvh(path)
    np.testing.assert_array_equal(odd.pos, plain.pos)
    np.testing.assert_array_equal(odd.rot, plain.rot)
