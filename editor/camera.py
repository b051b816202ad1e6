"""The preview's orbit camera: perspective projection to pixels and mouse-driven orbit, pan, zoom and framing.

World Y up, metres.  The eye sits ``distance`` from ``target`` in the direction
``(cos pitch sin yaw, sin pitch, cos pitch cos yaw)`` (pitch > 0 looks down on the
target); pixels have their origin at the top left with y down.  Mouse deltas are in
pixels.  Plain numpy, no dearpygui: the window calls ``project`` and draws.
"""

from __future__ import annotations

import math

import numpy as np

PITCH_MAX = math.radians(89.0)  # the view never turns to straight up or down (the up vector would flip)
DISTANCE_MIN, DISTANCE_MAX = 0.05, 1.0e4  # m


class OrbitCamera:
    """A camera turning about ``target``: ``yaw``, ``pitch`` (rad), ``distance`` (m), vertical ``fov`` (rad)."""

    def __init__(self, target=(0.0, 1.0, 0.0), yaw=0.6, pitch=0.25, distance=4.0, fov=math.radians(45.0),
                 near=0.05, orbit_speed=0.01):
        self.target = np.array(target, np.float64)
        self.yaw, self.pitch, self.distance, self.fov = float(yaw), float(pitch), float(distance), float(fov)
        self.near = float(near)  # m: points closer to the eye plane than this are not visible
        self.orbit_speed = float(orbit_speed)  # rad per pixel of mouse motion
        self.size = (1280, 720)  # pixels: the last viewport projected to, for pan and frame

    # ------------------------------------------------------------ view

    @property
    def eye(self):
        """The eye position (m)."""
        return self.target - self.distance * self.basis()[2]

    def basis(self):
        """(right, up, forward) unit vectors of the view in world space; forward points from the eye to the target."""
        cp, sp = math.cos(self.pitch), math.sin(self.pitch)
        forward = -np.array([cp * math.sin(self.yaw), sp, cp * math.cos(self.yaw)])
        right = np.cross(forward, (0.0, 1.0, 0.0))
        right /= np.linalg.norm(right)
        return right, np.cross(right, forward), forward

    def focal(self, height):
        """The focal length in pixels for a viewport ``height`` pixels tall."""
        return 0.5 * height / math.tan(0.5 * self.fov)

    def project(self, points, width, height):
        """Pixels (N, 2) of world ``points`` (N, 3) and whether each is visible (in front of the near plane).

        Points behind the near plane get NaN pixels: draw only the visible ones.
        """
        self.size = (width, height)
        p = np.asarray(points, np.float64).reshape(-1, 3) - self.eye
        right, up, forward = self.basis()
        x, y, z = p @ right, p @ up, p @ forward
        visible = z > self.near
        f = self.focal(height)
        with np.errstate(divide="ignore", invalid="ignore"):
            px = np.stack([0.5 * width + f * x / z, 0.5 * height - f * y / z], axis=1)
        px[~visible] = np.nan
        return px, visible

    # ------------------------------------------------------------ mouse

    def orbit(self, dx, dy):
        """Turn about the target by a drag of (dx, dy) pixels: right turns the view left, down looks from higher."""
        self.yaw -= dx * self.orbit_speed
        self.pitch = min(max(self.pitch + dy * self.orbit_speed, -PITCH_MAX), PITCH_MAX)

    def pan(self, dx, dy):
        """Slide the view so that what lies at the target's depth follows a drag of (dx, dy) pixels."""
        right, up, _ = self.basis()
        metres = self.distance / self.focal(self.size[1])  # per pixel at the target's depth
        self.target = self.target - right * (dx * metres) + up * (dy * metres)

    def zoom(self, factor):
        """Move towards the target by ``factor`` (> 1 closer, < 1 farther), within [5 cm, 10 km]."""
        if factor > 0.0 and math.isfinite(factor):
            self.distance = min(max(self.distance / factor, DISTANCE_MIN), DISTANCE_MAX)

    def frame(self, points, margin=1.15):
        """Aim at ``points`` (N, 3) (finite ones) and step back until their bounding sphere fits the last viewport."""
        p = np.asarray(points, np.float64).reshape(-1, 3)
        p = p[np.isfinite(p).all(axis=1)]
        if not len(p):
            return
        low, high = p.min(axis=0), p.max(axis=0)
        self.target = 0.5 * (low + high)
        radius = max(0.5 * float(np.linalg.norm(high - low)), 0.1) * margin
        width, height = self.size
        half = min(0.5 * self.fov, math.atan(math.tan(0.5 * self.fov) * width / height))  # the narrower half-angle
        self.distance = min(max(radius / math.sin(half), DISTANCE_MIN), DISTANCE_MAX)
