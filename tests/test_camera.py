"""The orbit camera: projections computed by hand (pinhole: offset·focal/depth), invariants of orbit, pan, zoom
and framing, near-plane culling."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animgraph.editor.camera import OrbitCamera

W, H = 800, 600
angles = st.floats(-3.0, 3.0)
pitches = st.floats(-1.4, 1.4)


def camera(yaw=0.6, pitch=0.25, distance=4.0, target=(0.3, 1.0, -0.2)):
    return OrbitCamera(target=target, yaw=yaw, pitch=pitch, distance=distance)


def centre():
    return np.array([W / 2, H / 2])


def test_hand_computed_front_view():
    cam = camera(yaw=0.0, pitch=0.0, distance=5.0, target=(0.0, 1.0, 0.0))
    np.testing.assert_allclose(cam.eye, [0.0, 1.0, 5.0])  # yaw 0, pitch 0: on +Z looking down -Z
    f = 0.5 * H / math.tan(0.5 * cam.fov)
    px, visible = cam.project([[1.0, 1.0, 0.0], [0.0, 1.5, 0.0], [0.0, 1.0, -5.0]], W, H)
    assert visible.all()
    np.testing.assert_allclose(px, [[W / 2 + f / 5, H / 2], [W / 2, H / 2 - 0.5 * f / 5], [W / 2, H / 2]])


@settings(max_examples=50, deadline=None)
@given(angles, pitches, st.floats(0.5, 50.0))
def test_the_target_projects_to_the_centre(yaw, pitch, distance):
    cam = camera(yaw, pitch, distance)
    px, visible = cam.project(cam.target, W, H)
    assert visible[0]
    np.testing.assert_allclose(px[0], centre(), atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(angles, pitches)
def test_points_further_along_the_view_project_closer_to_the_centre(yaw, pitch):
    cam = camera(yaw, pitch)
    right, up, forward = cam.basis()
    depths = np.array([0.5, 1.0, 4.0, 10.0, 100.0])
    points = cam.eye + 0.5 * right + 0.3 * up + depths[:, None] * forward
    px, visible = cam.project(points, W, H)
    assert visible.all()
    off = np.linalg.norm(px - centre(), axis=1)
    assert np.all(np.diff(off) < 0)
    np.testing.assert_allclose(off, cam.focal(H) * math.hypot(0.5, 0.3) / depths)  # offset times focal over depth


@settings(max_examples=50, deadline=None)
@given(angles, pitches, st.floats(-300, 300), st.floats(-300, 300))
def test_orbit_keeps_the_target_in_the_centre(yaw, pitch, dx, dy):
    cam = camera(yaw, pitch)
    other = cam.target + (0.4, 0.2, -0.3)
    before = cam.project(other, W, H)[0]
    distance = cam.distance
    cam.orbit(dx, dy)
    np.testing.assert_allclose(cam.project(cam.target, W, H)[0][0], centre(), atol=1e-9)
    assert abs(cam.pitch) < math.pi / 2 and cam.distance == distance
    np.testing.assert_allclose(np.linalg.norm(cam.eye - cam.target), distance)
    if abs(dx) > 10:
        assert np.linalg.norm(cam.project(other, W, H)[0] - before) > 1.0  # it did turn


@settings(max_examples=50, deadline=None)
@given(angles, pitches, st.floats(-200, 200), st.floats(-200, 200))
def test_pan_moves_the_focal_plane_by_the_drag(yaw, pitch, dx, dy):
    cam = camera(yaw, pitch)
    right, up, forward = cam.basis()
    on_plane = cam.target + 0.7 * right - 0.4 * up  # at the target's depth
    twice = cam.eye + 2.0 * (on_plane - cam.eye)  # twice as deep: moves half as far
    before, _ = cam.project([on_plane, twice], W, H)
    cam.pan(dx, dy)
    after, _ = cam.project([on_plane, twice], W, H)
    np.testing.assert_allclose(after[0] - before[0], [dx, dy], atol=1e-6)
    np.testing.assert_allclose(after[1] - before[1], [dx / 2, dy / 2], atol=1e-6)


def test_near_plane_culling():
    cam = camera()
    right, up, forward = cam.basis()
    points = [cam.eye - forward, cam.eye + 0.5 * cam.near * forward + right, cam.eye + 2 * cam.near * forward,
              cam.eye]
    px, visible = cam.project(points, W, H)
    assert visible.tolist() == [False, False, True, False]
    assert np.isnan(px[~visible]).all() and np.isfinite(px[visible]).all()


def test_zoom_scales_the_distance_and_keeps_the_target():
    cam = camera(distance=4.0)
    cam.zoom(2.0)
    assert cam.distance == 2.0
    np.testing.assert_allclose(cam.project(cam.target, W, H)[0][0], centre(), atol=1e-9)
    cam.zoom(1e9)
    assert cam.distance == pytest.approx(0.05)
    for bad in (0.0, -1.0, float("nan")):
        cam.zoom(bad)
        assert cam.distance == pytest.approx(0.05)


@pytest.mark.parametrize("size", [(800, 600), (400, 900)])
def test_frame_fits_the_points(size):
    rng = np.random.default_rng(5)
    points = rng.normal(size=(50, 3)) * (3.0, 0.5, 1.0) + (10.0, 1.0, -4.0)
    cam = camera()
    cam.project(points, *size)  # the viewport it frames for
    cam.frame(np.vstack([points, [[np.nan, 0, 0]]]))  # non-finite points are ignored
    np.testing.assert_allclose(cam.target, 0.5 * (points.min(axis=0) + points.max(axis=0)))
    px, visible = cam.project(points, *size)
    assert visible.all()
    assert np.all((px >= 0) & (px <= size))
    spread = px.max(axis=0) - px.min(axis=0)
    assert spread.max() > 0.25 * min(size)  # and not a speck in the middle
