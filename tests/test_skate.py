"""animgraph.skate: foot skate and the backward hook measured from toe paths alone, on hand-made paths."""

import numpy as np
import pytest

from animgraph import skate

DT = 1 / 60


def stepping_path(slide=0.0, frames=240, period=60, stance=30, stride=0.6):
    """A toe that steps forward (+Z) each ``period`` frames: ``stance`` frames on the floor sliding ``slide`` m per frame, then a swing 4 to 10 cm up."""
    pos = np.zeros((frames, 3))
    z = 0.0
    for f in range(frames):
        k = f % period
        if k < stance:
            pos[f] = (0.0, 0.0, z)
            z += slide
        else:
            u = (k - stance + 1) / (period - stance)
            pos[f] = (0.0, 0.04 + 0.06 * np.sin(np.pi * u), z + stride * u)
            if k == period - 1:
                z += stride
    return pos


def test_still_toe_in_contact_has_no_skate():
    r = skate.toe_skate(stepping_path(0.0), DT)
    assert r["mean_mm"] == 0.0 and r["max_mm"] == 0.0
    assert r["contact_frames"] >= 4 * 29
    assert r["floor"] == 0.0


def test_sliding_toe_skates_two_mm_per_frame():
    r = skate.toe_skate(stepping_path(0.002), DT)
    assert r["mean_mm"] == pytest.approx(2.0, abs=0.05)
    assert r["max_mm"] == pytest.approx(2.0, abs=0.05)


def test_skate_is_per_60hz_frame_at_any_rate():
    # The same 0.12 m/s slide sampled at 120 Hz: 1 mm per frame there, 2 mm per 60 Hz frame.
    r = skate.toe_skate(stepping_path(0.001, frames=480, period=120, stance=60), DT / 2)
    assert r["mean_mm"] == pytest.approx(2.0, abs=0.05)


def test_two_toes_pool_their_contacts_each_on_its_own_floor():
    a, b = stepping_path(0.0), stepping_path(0.002) + (0.2, 0.05, 0.0)
    r = skate.toe_skate(np.stack([a, b], axis=1), DT)
    assert r["mean_mm"] == pytest.approx(1.0, abs=0.05)
    np.testing.assert_allclose(r["floor"], [0.0, 0.05])


def test_backward_hook():
    forward = (0.0, 0.0, 1.0)
    path = stepping_path(0.0)
    assert skate.backward_hook(path, forward, DT) == 0.0
    # Over the 0.1 s before each plant the toe reaches the plant point, goes 8 mm back, then comes to it.
    hooked = path.copy()
    for s in range(60, 240, 60):
        hooked[s - 6:s, 2] = hooked[s, 2] + np.array([-0.01, 0.0, -0.002, -0.005, -0.008, -0.004])
    assert skate.backward_hook(hooked, forward, DT) == pytest.approx(0.008, abs=1e-9)
    # Against a per-frame direction of travel, and going the other way, it is a forward move.
    assert skate.backward_hook(hooked, np.tile(forward, (240, 1)), DT) == pytest.approx(0.008, abs=1e-9)
    assert skate.backward_hook(hooked, (0.0, 0.0, -1.0), DT) == pytest.approx(0.01, abs=1e-9)  # the approach


def test_bad_arguments():
    with pytest.raises(ValueError, match="toe_pos"):
        skate.toe_skate(np.zeros((10, 2)), DT)
    with pytest.raises(ValueError, match="dt"):
        skate.toe_skate(np.zeros((10, 3)), 0.0)
    with pytest.raises(ValueError, match="travel"):
        skate.backward_hook(np.zeros((10, 3)), np.zeros((9, 3)), DT)


def test_bvh_round_trip(tmp_path):
    import animgraph as ag

    skel, clip = ag.data.load("walk")
    ag.save_bvh(tmp_path / "walk.bvh", skel, clip)
    pos, dt = skate.bvh_toes(tmp_path / "walk.bvh")
    assert dt == pytest.approx(clip.dt)
    np.testing.assert_allclose(pos, skate.clip_toes(skel, clip), atol=1e-3)
    assert skate.toe_skate(pos, dt)["contact_frames"] > 20
