"""Bundled CMU motion-capture clips (see SOURCES.md here), loaded in metres with the T-pose dropped.

A bundled clip also drops its first frames where the capture is broken (``_GLITCHED``):
``walk``'s first three frames hold the right arm at identity, two of the next five
throw the left arm out for one frame, and its last frame throws the left hand: jumps that
every loop of the clip would replay.  ``jog_turn_left`` and ``walk_stop`` start with the right
arm shaking for a few frames; those are dropped too.

``names()`` lists them (``locomotion()`` the gaits, without the ``wave`` action), ``load(name)`` returns ``(Skeleton, Clip)`` with the
canonical joint names of ``animgraph.names`` installed as aliases, ``path(name)``
gives the file, and ``load_cmu(path)`` does the same for any cgspeed CMU BVH file,
dropping frame 0 only where the data shows an added T-pose (``animgraph.clipfile``:
the 16_xx and 12_01 conversions have one, the 131_xx ones start with motion).
Loads are cached; every call returns fresh copies, so callers may modify them.
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

from ..clipfile import CMU_SCALE, read_clip

__all__ = ["CMU_SCALE", "load", "load_cmu", "locomotion", "names", "path"]

_DIR = Path(__file__).resolve().parent
_FILES = {
    "walk": "cmu_16_23_walk_veer_left.bvh",
    "walk_turn": "cmu_16_27_walk_90deg_left_turn.bvh",
    "jog": "cmu_16_36_run_jog.bvh",
    "run": "cmu_16_45_run_jog.bvh",
    "run_stop": "cmu_16_57_run_jog_sudden_stop.bvh",
    # For the motion-matching database (SOURCES.md allows exactly these four more).
    "jog_turn_left": "cmu_16_41_jog_90deg_left_turn.bvh",
    "jog_turn_right": "cmu_16_43_jog_90deg_right_turn.bvh",
    "run_veer_right": "cmu_16_49_run_veer_right.bvh",
    "walk_stop": "cmu_16_34_slow_walk_stop.bvh",
    # An action for one-shots (not a gait): the first 2.75 s of 13_26, as SOURCES.md allows.
    "wave": "cmu_13_26_wave_excerpt.bvh",
}
ACTIONS = ("wave",)  # bundled clips that are not locomotion: kept out of the motion-matching database


# (first good frame after the T-pose, frames dropped at the end) of bundled clips with capture glitches there.
# jog_turn_left and walk_stop open with the whole right arm chain shaking (300-1000 m/s^2 at six joints at
# once, frames 1-8 and 1-12); their ends are clean, as are the other new clips' (a check of per-frame
# joint accelerations far above each joint's median).
_GLITCHED = {"walk": (8, 1), "jog_turn_left": (9, 0), "walk_stop": (13, 0)}


def names():
    """Names of the bundled clips."""
    return list(_FILES)


def locomotion():
    """Names of the bundled locomotion clips (every one but the actions): the motion-matching database's."""
    return [n for n in _FILES if n not in ACTIONS]


def path(name):
    """File path of a bundled clip; ValueError listing the valid names if unknown."""
    if name not in _FILES:
        raise ValueError(f"unknown bundled clip {name!r}; valid names: {', '.join(_FILES)}")
    return _DIR / _FILES[name]


def _copy(pair):
    skel, clip = pair
    skel = copy.deepcopy(skel)
    clip = copy.deepcopy(clip)
    clip.skeleton = skel
    return skel, clip


@functools.lru_cache(maxsize=32)
def _load_cached(file, mtime_ns, name, first_frame):
    skel, clip, _ = read_clip(file, units=CMU_SCALE, first_frame=first_frame, names="cmu", name=name)
    return skel, clip


def load_cmu(file, name=None, first_frame="auto"):
    """(Skeleton, Clip) of a cgspeed CMU BVH file in metres, canonical aliases installed.

    ``first_frame``: "auto" drops frame 0 when it is an added T-pose (``clipfile.detect_tpose``),
    "drop" or "keep" decide; dropping the only frame is a BVHError naming the 'Frames:' line.
    """
    file = os.fspath(file)
    try:
        mtime = os.stat(file).st_mtime_ns
    except OSError:
        mtime = 0  # read_bvh reports the missing file or directory
    name = name or Path(file).stem
    return _copy(_load_cached(os.path.abspath(file), mtime, name, first_frame))


def load(name):
    """(Skeleton, Clip) of a bundled clip (see ``names()``) in metres at 120 fps, T-pose (and glitched frames) dropped."""
    skel, clip = load_cmu(path(name), name=name)
    first, cut = _GLITCHED.get(name, (0, 0))
    if first or cut:
        keep = slice(first, clip.frames - cut)
        clip.pos, clip.rot, clip.scl = clip.pos[keep].copy(), clip.rot[keep].copy(), clip.scl[keep].copy()
    return skel, clip
