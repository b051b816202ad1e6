"""Bundled clips, the CMU loader and the canonical joint-name map."""

import hashlib
import re

import numpy as np
import pytest

import animgraph as ag
from animgraph import names as nm
from animgraph.bvh import load_bvh
from animgraph.data import CMU_SCALE

from conftest import BUNDLED, MM_BUNDLED, SHARED_MOCAP, TEST_ONLY, shared_path

EVERY_BUNDLED = BUNDLED + MM_BUNDLED + ["wave"]


def test_names_and_paths():
    assert ag.data.names() == ["walk", "walk_turn", "jog", "run", "run_stop",
                               "jog_turn_left", "jog_turn_right", "run_veer_right", "walk_stop", "wave"]
    assert ag.data.locomotion() == ag.data.names()[:-1]
    for name in ag.data.names():
        assert ag.data.path(name).is_file()


def test_walk_drops_its_glitched_first_frames():
    """walk's first captured frames hold the right arm at identity: a jump every loop would replay."""
    skel, clip = ag.data.load("walk")
    _, raw = load_bvh(ag.data.path("walk"))
    arm = skel.index("right_shoulder") if "right_shoulder" in skel.aliases else skel.index("RightArm")
    assert np.all(raw.rot[1:4, arm] == [1, 0, 0, 0]) and not np.any(np.all(clip.rot[:, arm] == [1, 0, 0, 0], axis=-1))


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError) as err:
        ag.data.load("sprint")
    assert "'sprint'" in str(err.value)
    for name in BUNDLED:
        assert name in str(err.value)


def test_sources_sha256_match_the_files():
    """The bundled files are exactly the ones SOURCES.md names (sha256), CMU acknowledgement included."""
    sources = (ag.data.path("walk").parent / "SOURCES.md").read_text()
    assert "mocap.cs.cmu.edu" in sources and "NSF EIA-0196217" in sources
    sums = dict((f, h) for h, f in re.findall(r"([0-9a-f]{64})\s+(\S+\.bvh)", sources))
    assert len(sums) == 10
    for name in EVERY_BUNDLED:
        path = ag.data.path(name)
        assert sums[path.name] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_bundled_byte_identical_to_shared():
    for name in BUNDLED + MM_BUNDLED:
        path = ag.data.path(name)
        assert path.read_bytes() == shared_path(path.name).read_bytes()


def test_wave_is_the_first_frames_of_13_26_byte_for_byte():
    """The wave excerpt: 13_26's header and first 331 frame lines unchanged, its Frames: count 331."""
    mine = ag.data.path("wave").read_bytes().split(b"\n")
    full = shared_path("cmu_13_26_direct_traffic_wave.bvh").read_bytes().split(b"\n")
    at = next(k for k, line in enumerate(full) if line.startswith(b"Frames:"))
    assert mine[:at] == full[:at] and mine[at].strip() == b"Frames: 331" and mine[at + 1] == full[at + 1]
    assert mine[at + 2:at + 2 + 331] == full[at + 2:at + 2 + 331] and mine[at + 2 + 331:] == [b""]


@pytest.mark.parametrize("name", EVERY_BUNDLED)
def test_load_metres_tpose_dropped(name):
    skel, clip = ag.data.load(name)
    _, raw = load_bvh(ag.data.path(name))
    first, cut = ag.data._GLITCHED.get(name, (0, 0))  # capture glitches after the T-pose and at the end
    keep = slice(1 + first, raw.frames - cut)
    assert clip.name == name
    assert clip.frames == raw.frames - 1 - first - cut
    np.testing.assert_allclose(clip.pos, raw.pos[keep] * CMU_SCALE, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(clip.rot, raw.rot[keep])
    assert clip.fps == pytest.approx(120.0)
    # Metres: hips about a metre up, head to toe about 1.3 m in the rest pose (SOURCES.md).
    assert 0.8 < clip.pos[:, 0, 1].mean() < 1.1
    rest = ag.ops.fk(skel.rest_pose(), skel.parents).pos
    height = rest[skel.index("head"), 1] - rest[[skel.index("left_toe"), skel.index("right_toe")], 1].min()
    assert 1.1 < height < 1.5


def test_load_returns_independent_copies():
    skel, clip = ag.data.load("run")
    clip.pos[:] = 0.0
    skel.aliases.clear()
    skel2, clip2 = ag.data.load("run")
    assert np.abs(clip2.pos).max() > 0.5
    assert clip2.skeleton is skel2 and skel2.index("left_foot") == 4


@pytest.mark.parametrize("file", TEST_ONLY)
def test_load_cmu_shared_clips(file):
    skel, clip = ag.data.load_cmu(shared_path(file))
    assert len(skel) == 31 and clip.name == file[:-4]
    assert set(nm.CANONICAL) <= set(skel.aliases)


def test_name_map_both_conventions():
    mb, _ = ag.data.load("walk")
    max_, _ = ag.data.load_cmu(shared_path("cmu_131_01_start_walk_stop.bvh"))
    assert nm.convention(mb.names) == "motionbuilder" and nm.convention(max_.names) == "3dsmax"
    # The same canonical name is the same joint (same topology, same index) in both.
    for canon in nm.CANONICAL:
        assert mb.index(canon) == max_.index(canon), canon
    spot = {"left_foot": ("LeftFoot", "LeftAnkle"), "left_toe": ("LeftToeBase", "LeftToe"),
            "left_shoulder": ("LeftArm", "LeftShoulder"), "left_collar": ("LeftShoulder", "LeftCollar"),
            "neck": ("Neck", "lowerneck"), "chest": ("Spine1", "Chest2"), "right_hand": ("RightHand", "RightWrist")}
    for canon, (a, b) in spot.items():
        assert mb.names[mb.index(canon)] == a and max_.names[max_.index(canon)] == b
    # File names still resolve, and are the convention's own joint.
    assert mb.index("LeftShoulder") == mb.index("left_collar")
    assert max_.index("LeftShoulder") == max_.index("left_shoulder")
    assert len(nm.CANONICAL) == 31 and len(set(nm.CANONICAL)) == 31


def test_name_map_sides_match_geometry():
    """Every left_* joint sits at +X in the rest pose (X is lateral in CMU), its right_* mirror at -X."""
    skel, _ = ag.data.load("walk")
    rest = ag.ops.fk(skel.rest_pose(), skel.parents).pos
    mirror = nm.mirror_indices(skel)
    for canon, other in nm.MIRROR.items():
        i, k = skel.index(canon), skel.index(other)
        assert mirror[i] == k and mirror[k] == i
        # The pelvis and collar joints start on the centre line; their children are lateral.
        if canon.startswith("left_") and canon not in ("left_pelvis", "left_collar"):
            assert rest[i, 0] > 0.0 > rest[k, 0], canon
            np.testing.assert_allclose(rest[i, 1:], rest[k, 1:], atol=0.03)
        elif canon == other:
            assert abs(rest[i, 0]) < 0.01, canon


def test_non_cmu_skeleton_gets_no_aliases():
    skel = ag.Skeleton(["root", "LeftArm", "RightArm"], [-1, 0, 0], np.zeros((3, 3)))
    nm.install_aliases(skel)
    assert skel.aliases == {}
    assert nm.mirror_indices(skel) == [0, 2, 1]


def test_load_cmu_drops_frame_0_only_where_the_data_shows_a_tpose(tmp_path):
    """SOURCES.md: the 131_xx conversions start with motion; 12_01 and the 16_xx ones have an added T-pose."""
    for file in ("cmu_131_01_start_walk_stop.bvh", "cmu_12_01_walk.bvh"):
        _, raw = load_bvh(shared_path(file))
        _, clip = ag.data.load_cmu(shared_path(file))
        assert clip.frames == raw.frames - (not file.startswith("cmu_131"))
        np.testing.assert_array_equal(clip.rot, raw.rot[raw.frames - clip.frames:])


def test_load_cmu_tpose_only_file(tmp_path):
    text = ag.data.path("jog").read_bytes().decode()
    head, motion = text.split("MOTION")
    path = tmp_path / "tpose_only.bvh"
    path.write_text(head + "MOTION\nFrames: 1\n" + "\n".join(motion.strip().splitlines()[1:3]) + "\n")
    _, clip = ag.data.load_cmu(path)
    assert clip.frames == 1
    with pytest.raises(ag.BVHError, match="leaves no frames") as err:
        ag.data.load_cmu(path, first_frame="drop")
    assert err.value.line == head.count("\n") + 2
