"""Foot skate measured from toe paths alone: no contact tracks, no propagated velocities.

An independent check of any animation (a BVH written by ``animgraph demo``, a motion-matching
run, a clip): the toe is in contact where it is low (near its floor) on two consecutive
frames, and skate is how far it travels horizontally between them.  Y up, metres.

- ``toe_skate(toe_pos, dt)``: floor = the toe's 5th-percentile height; a contact pair is two
  consecutive frames both within ``CONTACT_HEIGHT`` of the floor; skate = the XZ distance
  between them, reported in mm per 60 Hz frame (travel / dt / 60: the same speed reads the
  same at any frame rate).
- ``backward_hook(toe_pos, travel, dt)``: the largest retreat of the toe against the
  direction of travel in the ``HOOK_WINDOW`` s before a contact starts (m): a lock point
  taken after the toe passed it pulls the toe back just before the plant.
- ``bvh_toes`` / ``clip_toes``: world toe paths (F, K, 3) to measure.
"""

from __future__ import annotations

import numpy as np

CONTACT_HEIGHT = 0.03  # m above the floor: a toe this low is on the ground
FLOOR_PERCENTILE = 5.0  # the floor is the toe's 5th-percentile height (robust to a few frames under it)
HOOK_WINDOW = 0.1  # s before a contact start that backward_hook looks at
REFERENCE_DT = 1.0 / 60.0  # skate is reported per frame at 60 Hz
TOES = ("left_toe", "right_toe")


def _paths(toe_pos):
    """(K, F, 3) float64 from (F, 3) or (F, K, 3) world positions."""
    p = np.asarray(toe_pos, np.float64)
    if p.ndim == 2 and p.shape[-1] == 3:
        return p[None]
    if p.ndim == 3 and p.shape[-1] == 3:
        return np.moveaxis(p, 1, 0)
    raise ValueError(f"toe_pos must be (F, 3) or (F, K, 3) positions, got shape {p.shape}")


def _check_dt(dt):
    dt = float(dt)
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt must be a positive number of seconds, got {dt!r}")
    return dt


def contact_pairs(y, floor=None):
    """(F-1,) bool: frames f and f+1 both within ``CONTACT_HEIGHT`` m of ``floor`` (default: 5th-percentile of ``y``)."""
    y = np.asarray(y, np.float64)
    floor = np.percentile(y, FLOOR_PERCENTILE) if floor is None else floor
    low = y - floor < CONTACT_HEIGHT
    return low[:-1] & low[1:]


def toe_skate(toe_pos, dt):
    """Horizontal toe travel during contacts: mean_mm, max_mm (mm per 60 Hz frame), contact_frames, floor (m).

    ``toe_pos`` (F, 3) or (F, K, 3) world positions (m, Y up) at ``dt`` s per frame; each
    toe has its own floor (``floor`` is then (K,)), the pairs of all toes are pooled.
    """
    dt = _check_dt(dt)
    paths = _paths(toe_pos)
    skates, floors = [], []
    for p in paths:
        floor = float(np.percentile(p[:, 1], FLOOR_PERCENTILE)) if len(p) else 0.0
        pairs = contact_pairs(p[:, 1], floor) if len(p) > 1 else np.zeros(0, bool)
        step = np.linalg.norm(np.diff(p[:, [0, 2]], axis=0), axis=-1) if len(p) > 1 else np.zeros(0)
        skates.append(step[pairs] * (REFERENCE_DT / dt))  # metres per 60 Hz frame
        floors.append(floor)
    s = np.concatenate(skates) if skates else np.zeros(0)
    return {
        "mean_mm": float(s.mean() * 1e3) if s.size else 0.0,
        "max_mm": float(s.max() * 1e3) if s.size else 0.0,
        "contact_frames": int(s.size),
        "floor": floors[0] if len(floors) == 1 else np.array(floors),
    }


def backward_hook(toe_pos, travel, dt):
    """Largest retreat (m) of a toe against the travel direction in the ``HOOK_WINDOW`` s before any contact start.

    ``toe_pos`` (F, 3) or (F, K, 3) world positions; ``travel`` the direction of travel,
    (3,) or per frame (F, 3) (its XZ part is used: the root's velocity, say).  A contact
    starts on the first frame of a run of ``contact_pairs``.  The retreat is the largest
    fall of the toe's progress along the travel direction (at the contact start) between
    any two frames of the window, so a toe that only moves forward scores 0.
    """
    dt = _check_dt(dt)
    paths = _paths(toe_pos)
    frames = paths.shape[1]
    travel = np.asarray(travel, np.float64)
    travel = np.broadcast_to(travel, (frames, 3)) if travel.shape == (3,) else travel
    if travel.shape != (frames, 3):
        raise ValueError(f"travel must be (3,) or ({frames}, 3), got {travel.shape}")
    window = max(1, int(round(HOOK_WINDOW / dt)))
    worst = 0.0
    for p in paths:
        if frames < 2:
            continue
        pairs = contact_pairs(p[:, 1])
        starts = np.flatnonzero(pairs & ~np.concatenate([[False], pairs[:-1]]))
        for s in starts:
            d = travel[s, [0, 2]]
            n = np.linalg.norm(d)
            if s == 0 or n < 1e-9:
                continue  # no window before it, or no direction to go back against
            x = p[max(0, s - window):s + 1][:, [0, 2]] @ (d / n)
            worst = max(worst, float(np.max(np.maximum.accumulate(x) - x)))
    return worst


def clip_toes(skel, clip, toes=TOES):
    """Model-space toe positions (F, K, 3) m of a clip's local pose (FK); world space for a clip whose root travels."""
    from .ops import fk
    from .pose import Pose

    idx = [skel.index(t) for t in toes]
    return fk(Pose(clip.pos, clip.rot, clip.scl), skel.parents).pos[:, idx].astype(np.float64)


def bvh_toes(path, toes=TOES, scale=1.0):
    """(world toe positions (F, K, 3) m, frame time s) of a BVH file (``scale``: file units -> m)."""
    from .bvh import load_bvh
    from .names import install_aliases

    skel, clip = load_bvh(path, scale=scale)
    return clip_toes(install_aliases(skel), clip, toes), clip.dt


def report(pos, dt, travel=None):
    """``toe_skate`` of world toe paths, plus ``hook_mm`` (``backward_hook`` in mm) when ``travel`` is given."""
    out = toe_skate(pos, dt)
    if travel is not None:
        out["hook_mm"] = 1e3 * backward_hook(pos, travel, dt)
    return out
