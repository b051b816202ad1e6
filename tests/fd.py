"""Independent float64 numpy helpers for finite-difference checks (not the library's kernels)."""

import numpy as np


def qmul(a, b):
    """Hamilton product of (...,4) w-first quaternion arrays."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, float), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, float), -1, 0)
    return np.stack([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ], axis=-1)


def qconj(q):
    q = np.array(q, float)
    q[..., 1:] *= -1
    return q


def rotvec(q):
    """Rotation vector (angle times axis, rad) of (...,4) quaternions, the short way round."""
    q = np.where(q[..., :1] < 0, -q, q)
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    angle = 2 * np.arctan2(s, q[..., :1])
    return q[..., 1:] * np.where(s > 1e-12, angle / np.maximum(s, 1e-300), 2.0)


def from_rotvec(v):
    """Quaternions of (...,3) rotation vectors."""
    v = np.asarray(v, float)
    angle = np.linalg.norm(v, axis=-1, keepdims=True)
    half = angle / 2
    k = np.where(angle > 1e-12, np.sin(half) / np.maximum(angle, 1e-300), 0.5)
    return np.concatenate([np.cos(half), v * k], axis=-1)


def central_velocities(plus, minus, h):
    """(vel, ang, svl) by central difference of two poses h seconds either side."""
    vel = (np.asarray(plus.pos, float) - minus.pos) / (2 * h)
    ang = rotvec(qmul(plus.rot, qconj(minus.rot))) / (2 * h)
    svl = (np.log(np.asarray(plus.scl, float)) - np.log(minus.scl)) / (2 * h)
    return vel, ang, svl


def qrot(q, v):
    """Rotate (...,3) vectors by (...,4) unit quaternions."""
    qv = np.concatenate([np.zeros(np.shape(v)[:-1] + (1,)), v], axis=-1)
    return qmul(qmul(q, qv), qconj(q))[..., 1:]


def fk_positions(pos, rot, scl, parents):
    """Global (pos, rot, scl) in float64 from local arrays (J,3)/(J,4): a plain FK, no velocities."""
    gp, gr, gs = np.array(pos, float), np.array(rot, float), np.array(scl, float)
    for j, p in enumerate(parents):
        if p >= 0:
            gp[j] = gp[p] + qrot(gr[p], gs[p] * pos[j])
            gr[j] = qmul(gr[p], rot[j])
            gs[j] = gs[p] * scl[j]
    return gp, gr, gs
