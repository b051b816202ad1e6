"""Clip preprocessing for motion matching: resampling, the simulation bone, foot contacts, mirroring.

Everything is plain functions on arrays and clips (metres, seconds, Y up).

- ``savgol``: Savitzky-Golay smoothing, the least-squares polynomial fit of each
  window evaluated at its centre (and, near the ends, at the edge samples of the
  first/last full window), so polynomials up to the filter's order pass unchanged.
- ``root_track``: the simulation bone (code-vs-data-driven-displacement): an
  upper-spine joint projected to the ground and smoothed gives its position; the
  hips' forward axis projected to the ground and smoothed gives its facing, a
  rotation about +Y.  Facing angle is ``atan2(f.x, f.z)``: 0 along +Z, positive
  turning left (+Z towards +X, the character's left in CMU data).
- ``foot_contacts``: slow, low joints are planted; a median filter removes flicker.  It is
  the one contact detector: ``animgraph.tracks`` runs it once per clip and everything else
  reads the tracks it gives.
- ``mirror``: reflect across the YZ plane (X is lateral in CMU data: left joints
  sit at +X) and swap left and right joints (and left and right tracks).
"""

from __future__ import annotations

import copy

import numpy as np
from animgraph.jit import njit

from .maths import load4, qrot, qslerp, store3, store4
from .names import mirror_indices
from .pose import Clip, Pose, Skeleton
from .poseops import additive_frames, difference_frames, fk_frames

FORWARD = np.array([0.0, 0.0, 1.0])  # the CMU rest pose faces +Z
UP = 1  # Y
REPEAT_SPAN = 0.05  # s each side of a frame over which repeat_features takes a joint's velocity
REPEAT_MOTION = 0.1  # s: in repeat_features a joint 1 m/s off weighs as one 0.1 m out of place


# ---------------------------------------------------------------- smoothing


def savgol(x, window, order, axis=0):
    """Savitzky-Golay smoothed ``x`` along ``axis`` (same units); ``window`` samples (odd), polynomial ``order``."""
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[axis]
    window = min(int(window) | 1, n if n % 2 else n - 1)
    order = min(int(order), window - 1)
    if window < 1 or n < 2:
        return x.copy()
    h = window // 2
    t = np.arange(-h, h + 1, dtype=np.float64)
    a = np.vander(t, order + 1, increasing=True)
    hat = a @ np.linalg.pinv(a)  # (window, window): sample values -> fitted values in the window
    xm = np.moveaxis(x, axis, 0)
    out = np.empty_like(xm)
    windows = np.lib.stride_tricks.sliding_window_view(xm, window, axis=0)  # (n-window+1, ..., window)
    out[h : n - h] = windows @ hat[h]
    out[:h] = np.tensordot(hat[:h], xm[:window], axes=(1, 0))
    out[n - h :] = np.tensordot(hat[h + 1 :], xm[n - window :], axes=(1, 0))
    return np.moveaxis(out, 0, axis)


def _odd_frames(seconds, dt):
    return max(1, int(round(seconds / dt)) | 1)


# ---------------------------------------------------------------- resampling


@njit(cache=True, entry=True)
def _slerp_frames(rot, index, frac, out):
    """``out[k, j] = slerp(rot[index[k], j], rot[index[k]+1, j], frac[k])`` for (F,J,4) rotations."""
    last = rot.shape[0] - 1
    for k in range(out.shape[0]):
        i = index[k]
        for j in range(rot.shape[1]):
            a = load4(rot[i], j)
            if frac[k] == 0.0 or i >= last:
                store4(out[k], j, a)
            else:
                store4(out[k], j, qslerp(a, load4(rot[i + 1], j), frac[k]))


def _sample_positions(x, index, frac):
    nxt = np.minimum(index + 1, len(x) - 1)
    f = frac.reshape((-1,) + (1,) * (x.ndim - 1))
    return x[index] + f * (x[nxt] - x[index])


def _sample_rotations(rot, index, frac):
    rot = np.asarray(rot, dtype=np.float64)
    shape = rot.shape
    flat = np.ascontiguousarray(rot.reshape(shape[0], -1, 4))
    out = np.empty((len(index), flat.shape[1], 4))
    _slerp_frames(flat, index, frac, out)
    return out.reshape((len(index),) + shape[1:])


def resample(clip, fps):
    """``clip`` at ``fps`` frames/s over the same duration (s): positions lerped, rotations slerped, scales eerped."""
    ratio = clip.fps / float(fps)  # source frames per new frame
    count = int(np.floor((clip.frames - 1) / ratio + 1e-9)) + 1
    s = np.arange(count) * ratio
    index = np.minimum(np.floor(s + 1e-9).astype(np.int64), clip.frames - 1)
    frac = np.where(index >= clip.frames - 1, 0.0, np.maximum(s - index, 0.0))
    pos = _sample_positions(clip.pos.astype(np.float64), index, frac)
    rot = _sample_rotations(clip.rot, index, frac)
    scl = np.exp(_sample_positions(np.log(clip.scl.astype(np.float64)), index, frac))
    out = Clip(clip.skeleton, pos, rot, scl, dt=1.0 / fps, name=clip.name,
               contact_joints=list(clip.contact_joints))
    nearest = np.minimum(np.round(s).astype(np.int64), clip.frames - 1)
    if clip.contacts is not None:
        out.contacts = np.asarray(clip.contacts)[nearest]
    if clip.root_pos is not None:
        out.root_pos = _sample_positions(np.asarray(clip.root_pos, np.float64), index, frac).astype(np.float32)
        out.root_rot = _sample_rotations(clip.root_rot, index, frac).astype(np.float32)
    out.tags = {
        tag: [(int(round(a / ratio)), int(round(b / ratio))) for a, b in ranges] for tag, ranges in clip.tags.items()
    }
    return out


# ---------------------------------------------------------------- simulation bone


def global_positions(skel, clip):
    """Model-space joint positions (F,J,3) in metres of a clip's local pose."""
    return fk_frames(Pose(clip.pos, clip.rot, clip.scl), skel.parents).pos


@njit(cache=True, entry=True)
def _rotate_rows(rot, v, out):
    """``out[k] = rot[k] * v``: vec3 ``v`` rotated by each quaternion of ``rot`` (F,4)."""
    for k in range(rot.shape[0]):
        store3(out, k, qrot(load4(rot, k), (v[0], v[1], v[2])))


def facing_angle(rot):
    """Yaw (rad, about +Y, left positive, unwrapped) of quaternions (F,4) from the rotation (w, 0, sin, 0)."""
    return np.unwrap(2.0 * np.arctan2(rot[:, 2], rot[:, 0]))


def _joint_or_root(skel, joint):
    """Index of ``joint``; the root (0) when it is the default canonical name and the skeleton lacks it."""
    try:
        return skel.index(joint)
    except ValueError:
        if joint in ("chest", "hips"):
            return 0
        raise


def root_track(skel, clip, spine="chest", hips="hips", window=0.5, order=3):
    """Simulation bone per frame: positions (F,3) on the ground (m) and rotations (F,4) about +Y, world space.

    Position: ``spine`` joint projected to y=0, Savitzky-Golay smoothed over ``window``
    seconds.  Facing: the ``hips`` joint's +Z axis projected to the ground, smoothed
    the same way, renormalised.  Skeletons without the canonical CMU names use
    their root joint for both.
    """
    glob = fk_frames(Pose(clip.pos, clip.rot, clip.scl), skel.parents)
    frames = _odd_frames(window, clip.dt)
    pos = glob.pos[:, _joint_or_root(skel, spine)].astype(np.float64)
    pos[:, UP] = 0.0
    pos = savgol(pos, frames, order)
    pos[:, UP] = 0.0
    fwd = np.empty((clip.frames, 3))
    _rotate_rows(np.ascontiguousarray(glob.rot[:, _joint_or_root(skel, hips)], np.float64), FORWARD, fwd)
    fwd[:, UP] = 0.0
    fwd /= np.maximum(np.linalg.norm(fwd, axis=1, keepdims=True), 1e-9)
    fwd = savgol(fwd, frames, order)
    yaw = np.arctan2(fwd[:, 0], fwd[:, 2])
    rot = np.zeros((clip.frames, 4))
    rot[:, 0] = np.cos(yaw / 2)
    rot[:, 2] = np.sin(yaw / 2)
    return pos.astype(np.float32), rot.astype(np.float32)


def root_stats(skel, clip):
    """Simulation-bone summary: dict of mean/max ground speed (m/s), path length (m), total turning (deg, left +)."""
    pos, rot = root_track(skel, clip)
    vel = np.gradient(pos.astype(np.float64), clip.dt, axis=0) if clip.frames > 1 else np.zeros((1, 3))
    speed = np.linalg.norm(vel, axis=1)
    step = np.linalg.norm(np.diff(pos, axis=0), axis=1)
    yaw = facing_angle(rot.astype(np.float64))
    return {
        "speed_mean": float(speed.mean()),
        "speed_max": float(speed.max()),
        "distance": float(step.sum()),
        "turning": float(np.degrees(yaw[-1] - yaw[0])),
    }


# ---------------------------------------------------------------- foot contacts


def median_filter_bool(x, window):
    """Majority vote over ``window`` frames (odd) of a bool array (F,...); the ends repeat the edge frames."""
    x = np.asarray(x, dtype=bool)
    h = int(window) // 2
    if h == 0 or len(x) == 0:
        return x.copy()
    padded = np.concatenate([np.repeat(x[:1], h, axis=0), x, np.repeat(x[-1:], h, axis=0)])
    votes = np.lib.stride_tricks.sliding_window_view(padded, 2 * h + 1, axis=0).sum(axis=-1)
    return votes > h


def world_positions(skel, clip):
    """World joint positions (F,J,3) m: model space, placed by the clip's simulation bone when it has one (a root-relative clip)."""
    pos = global_positions(skel, clip)
    if clip.root_pos is None:
        return pos
    out = np.empty_like(pos)
    rot = np.ascontiguousarray(clip.root_rot, np.float32)
    for j in range(pos.shape[1]):
        _rotate_each(rot, np.ascontiguousarray(pos[:, j]), out[:, j])
    return out + np.asarray(clip.root_pos, np.float32)[:, None]


@njit(cache=True)
def _rotate_each(rot, v, out):
    """``out[k] = rot[k] * v[k]``: each row of ``v`` (F,3) rotated by its quaternion (F,4)."""
    for k in range(rot.shape[0]):
        store3(out, k, qrot(load4(rot, k), (v[k, 0], v[k, 1], v[k, 2])))


def settle_starts(contacts, speed):
    """Contacts (F,C) whose runs start no earlier than the toe's first speed minimum (``speed`` (F,C) m/s) in them.

    A toe still slowing down is not planted yet: a lock taken there would be dragged on.
    """
    out = np.array(contacts, dtype=bool)
    for c in range(out.shape[1]):
        col = out[:, c]
        starts = np.flatnonzero(col & ~np.concatenate([[False], col[:-1]]))
        for s in starts:
            f = s
            while f + 1 < len(col) and col[f + 1] and speed[f + 1, c] < speed[f, c]:
                f += 1
            col[s:f] = False
    return out


def foot_contacts(skel, clip, joints=("left_toe", "right_toe"), speed=0.5, height=0.04, window=0.05):
    """Contacts (F,C) bool: joint speed below ``speed`` m/s and height above its lowest point below ``height`` m.

    Positions are in the world (``world_positions``: a root-relative clip is placed by its
    simulation bone); speed is their central difference.  A median filter over ``window``
    seconds removes single-frame flicker, then each contact starts where the toe's speed
    stops falling (``settle_starts``).
    """
    return settle_starts(*contact_candidates(skel, clip, joints, speed, height, window))


def contact_candidates(skel, clip, joints=("left_toe", "right_toe"), speed=0.5, height=0.04, window=0.05):
    """(contacts (F,C) bool before ``settle_starts``, speeds (F,C) m/s): ``foot_contacts`` up to its last step."""
    idx = [skel.index(j) for j in joints]
    pos = world_positions(skel, clip)[:, idx].astype(np.float64)
    vel = np.gradient(pos, clip.dt, axis=0) if clip.frames > 1 else np.zeros_like(pos)
    norm = np.linalg.norm(vel, axis=-1)
    slow = norm < speed
    low = pos[..., UP] - pos[..., UP].min(axis=0) < height
    return median_filter_bool(slow & low, _odd_frames(window, clip.dt)), norm


# ---------------------------------------------------------------- mirroring

_REFLECT = np.array([-1.0, 1.0, 1.0], np.float32)  # across the YZ plane
_REFLECT_Q = np.array([1.0, 1.0, -1.0, -1.0], np.float32)  # S R S for S = diag(-1, 1, 1)


def mirror_skeleton(skel):
    """Skeleton with left and right offsets swapped and reflected across the YZ plane (names unchanged)."""
    m = mirror_indices(skel)
    ends = {i: skel.end_sites[m[i]] * _REFLECT for i in range(len(skel)) if m[i] in skel.end_sites}
    return Skeleton(skel.names, skel.parents, skel.offsets[m] * _REFLECT, aliases=skel.aliases, end_sites=ends)


def mirror(skel, clip):
    """Mirrored clip (local space, new mirrored skeleton): reflected across the YZ plane, left/right swapped."""
    m = mirror_indices(skel)
    out_skel = mirror_skeleton(skel)
    out = copy.copy(clip)
    out.skeleton = out_skel
    out.pos = clip.pos[:, m] * _REFLECT
    out.rot = clip.rot[:, m] * _REFLECT_Q
    out.scl = clip.scl[:, m].copy()
    if clip.root_pos is not None:
        out.root_pos = np.asarray(clip.root_pos) * _REFLECT
        out.root_rot = np.asarray(clip.root_rot) * _REFLECT_Q
    if clip.contacts is not None and clip.contact_joints:
        cols = {skel.index(n): c for c, n in enumerate(clip.contact_joints)}
        order = [cols.get(m[skel.index(n)], c) for c, n in enumerate(clip.contact_joints)]
        out.contacts = np.asarray(clip.contacts)[:, order]
    out.tags = copy.deepcopy(clip.tags)
    out.contact_joints = list(clip.contact_joints)
    if clip.tracks is not None:
        out.tracks = clip.tracks.mirrored()
    return out


# ---------------------------------------------------------------- root motion


def motion_track(root_pos, root_rot, dt):
    """Root motion per frame (F,6): the simulation bone's velocity (m/s) and angular velocity (rad/s) in its own frame.

    Central differences of the bone's ground path and unwrapped facing (one-sided,
    second order, at the ends); the angular velocity turns about +Y only.
    """
    frames = len(root_pos)
    out = np.zeros((frames, 6))
    if frames < 2:
        return out.astype(np.float32)
    order = 2 if frames > 2 else 1
    vel = np.gradient(np.asarray(root_pos, np.float64), dt, axis=0, edge_order=order)
    yaw = facing_angle(np.asarray(root_rot, np.float64))
    c, s = np.cos(yaw), np.sin(yaw)
    # Into the bone's frame: rotate by -yaw about +Y (yaw turns +Z towards +X).
    out[:, 0] = c * vel[:, 0] - s * vel[:, 2]
    out[:, 1] = vel[:, 1]
    out[:, 2] = s * vel[:, 0] + c * vel[:, 2]
    out[:, 4] = np.gradient(yaw, dt, edge_order=order)
    return out.astype(np.float32)


def seamless(pose):
    """Local pose (F,J) whose last frame runs into its first: the mismatch spread over the clip (additive offsets).

    The frame after the last, carried one frame on at its velocities (by difference
    of the last two frames), should be the first; frame k gets k/F of the offset that
    makes it so, so the loop's wrap moves no joint further than a frame's motion.
    """
    frames = pose.pos.shape[0]
    if frames < 3:
        return pose
    last, before = pose[frames - 1], pose[frames - 2]
    after = additive_frames(last, difference_frames(last, before), 1.0)  # one more frame at the last frame's rate
    seam = difference_frames(pose[0], after)
    seams = Pose(*(np.broadcast_to(x, (frames,) + x.shape).copy() for x in seam.as_tuple()))
    return additive_frames(pose, seams, np.arange(frames) / frames)


def repeat_features(glob, dt):
    """(F, D) features where a motion repeats, of model-space joint positions ``glob`` (F,J,3) m at ``dt`` s: the
    positions and, times ``REPEAT_MOTION`` s, their velocity over +-``REPEAT_SPAN`` s (one-sided at the ends)."""
    glob = np.asarray(glob, np.float64)
    frames = len(glob)
    h = max(1, int(round(REPEAT_SPAN / dt)))
    lo, hi = np.maximum(np.arange(frames) - h, 0), np.minimum(np.arange(frames) + h, frames - 1)
    span = np.maximum(hi - lo, 1)[:, None, None] * dt
    motion = (glob[hi] - glob[lo]) / span
    return np.concatenate([glob.reshape(frames, -1), REPEAT_MOTION * motion.reshape(frames, -1)], axis=1)


def loop_cut(feats, begin, end, window, allowed=None):
    """(first, end) frames of the loop ``[first, end)`` near ``[begin, end)`` whose frame ``end`` best repeats ``first``.

    ``feats``: ``repeat_features`` of the clip (F, D); each end moves at most ``window`` frames;
    ``allowed(first, end)`` may refuse a pair (a gait loop keeps its whole cycles).  A loop cut where
    the pose and its motion repeat needs the least seam (``seamless``).
    """
    frames = len(feats)
    best, cut = np.inf, (begin, end)
    for a in range(max(0, begin - window), min(frames - 1, begin + window) + 1):
        for b in range(max(a + 2, end - window), min(frames - 1, end + window) + 1):
            cost = float(np.sum((feats[a] - feats[b]) ** 2))
            if cost < best and (allowed is None or allowed(a, b)):
                best, cut = cost, (a, b)
    return cut


def root_motion_clip(skel, clip, loop=False):
    """(clip with each root joint relative to the simulation bone, root motion (F,6)) for root-motion sampling.

    The bone is ``root_track``'s (ground projection of the upper spine, facing of the
    hips); the returned clip's roots move only as much as the body sways about it,
    and ``motion_track`` gives the bone's own velocities, which an integrator (the
    graph's output node) adds up.  ``loop``: the root-relative pose is made seamless
    (``seamless``), so a looping clip's wrap neither jumps the pose nor the root.
    """
    from . import kform

    root_pos, root_rot = root_track(skel, clip)
    sim = Pose(root_pos[:, None], root_rot[:, None])
    pose = Pose(clip.pos.copy(), clip.rot.copy(), clip.scl.copy())
    for r in np.flatnonzero(skel.parents < 0):
        rel = kform.div(sim, Pose(clip.pos[:, r:r + 1], clip.rot[:, r:r + 1], clip.scl[:, r:r + 1]))
        pose.pos[:, r], pose.rot[:, r] = rel.pos[:, 0], rel.rot[:, 0]
    if loop:
        pose = seamless(pose)
    out = copy.copy(clip)
    out.pos, out.rot, out.scl = pose.pos, pose.rot, pose.scl
    out.root_pos, out.root_rot = root_pos, root_rot
    return out, motion_track(root_pos, root_rot, clip.dt)
