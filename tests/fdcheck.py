"""Central finite-difference checks of propagated velocities, in numpy (independent of maths.py).

Built on the quaternion helpers of fd.py.

``central_fd`` differentiates any ``pose_at(times)`` with the 5-point central stencil; ``Pose64``
lets a test run the product kernels into float64 buffers, separating the maths (checked
at ~1e-6) from float32 output rounding (checked by ``check_fd32`` with an explicit noise
term ``NOISE * 2^-24 * |x| / h``).
"""

import numpy as np

from fd import from_rotvec, qconj, qmul, rotvec

C5 = np.array([1.0, -8.0, 8.0, -1.0]) / 12.0
OFFSETS = (-2, -1, 1, 2)
EPS32 = 2.0**-24
NOISE = 8.0  # stencil gain 1.5, x2 for quaternion -> angle, and margin


def same_rot(a, b, tol):
    """Unit quaternions ``a`` and ``b`` are the same rotation within ``tol`` radians."""
    return np.abs(rotvec(qmul(np.asarray(a, float), qconj(np.asarray(b, float))))).max() <= tol


def central_fd(pose_at, t, h):
    """(pose, vel, ang, svl): 5-point central differences of ``pose_at(times)`` at times ``t``."""
    p0 = pose_at(t)
    ps = [pose_at(t + k * h) for k in OFFSETS]
    r0 = np.asarray(p0.rot, np.float64)
    vel = sum(c * np.asarray(p.pos, np.float64) for c, p in zip(C5, ps)) / h
    ang = sum(c * rotvec(qmul(np.asarray(p.rot, np.float64), qconj(r0))) for c, p in zip(C5, ps)) / h
    svl = sum(c * np.log(np.asarray(p.scl, np.float64)) for c, p in zip(C5, ps)) / h
    return p0, vel, ang, svl


def rel_errors(v, ref, floor):
    """Per-vector |v - ref| / max(|ref|, floor)."""
    return np.linalg.norm(v - ref, axis=-1) / np.maximum(np.linalg.norm(ref, axis=-1), floor)


def check_fd32(v, ref, size, h, what):
    """float32 check: |v - fd| <= 1e-3 |fd| + NOISE eps32 size / h."""
    err = np.linalg.norm(v - ref, axis=-1)
    tol = 1e-3 * np.linalg.norm(ref, axis=-1) + NOISE * EPS32 * size / h
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    assert np.all(err <= tol), f"{what}: error {err[worst]:.3g} > tol {tol[worst]:.3g} at {worst}"


class Pose64:
    """float64 pose buffers for running the kernels without float32 rounding."""

    def __init__(self, shape):
        self.pos, self.vel, self.ang, self.svl = (np.zeros(shape + (3,)) for _ in range(4))
        self.scl = np.ones(shape + (3,))
        self.rot = np.zeros(shape + (4,))

    @classmethod
    def like(cls, pose):
        """A float64 copy of any object with the six pose fields."""
        out = cls(np.shape(pose.pos)[:-1])
        for f, a in zip(out.as_tuple(), pose.as_tuple()):
            f[...] = a
        return out

    def as_tuple(self):
        return (self.pos, self.rot, self.scl, self.vel, self.ang, self.svl)

    def items(self):
        """Kernel tuples of (J, 3|4) float64 views, one per batch item."""
        flat = [a.reshape((-1,) + a.shape[-2:]) for a in self.as_tuple()]
        return [tuple(a[n] for a in flat) for n in range(flat[0].shape[0])]


def random_pose(rng, joints, batch=(), speed=1.0):
    """A random ag.Pose: unit rotations of either sign, positive scales, random velocities."""
    import animgraph as ag

    shape = tuple(batch) + (joints,)
    rot = from_rotvec(rng.normal(size=shape + (3,)) * 1.5)
    rot *= np.where(rng.random(shape + (1,)) < 0.5, -1.0, 1.0)
    return ag.Pose(
        rng.normal(size=shape + (3,)),
        rot,
        np.exp(rng.normal(size=shape + (3,)) * 0.3),
        rng.normal(size=shape + (3,)) * speed,
        rng.normal(size=shape + (3,)) * speed,
        rng.normal(size=shape + (3,)) * speed * 0.3,
    )


def world_velocity_errors(step, parents, h):
    """Whole-graph check: relative errors of the world velocities of a pose output against 5-point central
    differences of its world positions (and of its rotations, for the angular velocities).

    ``step(h)`` advances the instance by ``h`` s and returns the output pose; it is called six times
    and the last five frames are the stencil (nodes count a frame's dt either as the step since
    the last frame or as the step to the next: only frames after two steps of h are evenly spaced
    for both).  Returns per joint ``(|fd - v| / (1 + |fd|), the same for angular velocity)``, as
    ``animgraph verify`` measures them.
    """
    from animgraph import ops

    frames = []
    for k in range(6):
        out = step(h)
        if k >= 1:
            g = ops.fk(out, parents)
            frames.append(tuple(np.asarray(getattr(g, f), np.float64) for f in ("pos", "vel", "rot", "ang")))
    pos, vel, rot, ang = (np.stack([f[i] for f in frames]) for i in range(4))
    fd = (pos[0] - 8 * pos[1] + 8 * pos[3] - pos[4]) / (12 * h)
    err = np.linalg.norm(fd - vel[2], axis=-1) / (1 + np.linalg.norm(fd, axis=-1))
    r = [rotvec(qmul(rot[k], qconj(rot[2]))) for k in range(5)]
    fd_ang = (r[0] - 8 * r[1] + 8 * r[3] - r[4]) / (12 * h)
    err_ang = np.linalg.norm(fd_ang - ang[2], axis=-1) / (1 + np.linalg.norm(fd_ang, axis=-1))
    return err, err_ang
