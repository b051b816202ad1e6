"""Bundled CMU motion-capture clips (see SOURCES.md here), loaded in metres with the T-pose dropped.

A bundled clip also drops its first frames where the capture is broken (``_GLITCHED``):
``walk``'s first three frames hold the right arm at identity, two of the next five
throw the left arm out for one frame, and its last frame throws the left hand: jumps that
every loop of the clip would replay.

``names()`` lists them, ``load(name)`` returns ``(Skeleton, Clip)`` with the
canonical joint names of ``animgraph.names`` installed as aliases, ``path(name)``
gives the file, and ``load_cmu(path)`` does the same for any cgspeed CMU BVH file.
Loads are cached; every call returns fresh copies, so callers may modify them.
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

from ..bvh import load_bvh
from ..names import install_aliases

# One CMU unit in metres: the cgspeed conversion's (1/0.45) inch.
CMU_SCALE = (1.0 / 0.45) * 2.54 / 100.0

_DIR = Path(__file__).resolve().parent
_FILES = {
    "walk": "cmu_16_23_walk_veer_left.bvh",
    "walk_turn": "cmu_16_27_walk_90deg_left_turn.bvh",
    "jog": "cmu_16_36_run_jog.bvh",
    "run": "cmu_16_45_run_jog.bvh",
    "run_stop": "cmu_16_57_run_jog_sudden_stop.bvh",
}


# (first good frame after the T-pose, frames dropped at the end) of bundled clips with capture glitches there.
_GLITCHED = {"walk": (8, 1)}


def names():
    """Names of the bundled clips."""
    return list(_FILES)


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
def _load_cached(file, mtime_ns, name):
    skel, clip = load_bvh(file, scale=CMU_SCALE)
    install_aliases(skel)
    # Frame 0 of the cgspeed files is an added T-pose, not motion.
    clip.pos = clip.pos[1:].copy()
    clip.rot = clip.rot[1:].copy()
    clip.scl = clip.scl[1:].copy()
    clip.name = name
    return skel, clip


def load_cmu(file, name=None):
    """(Skeleton, Clip) of a cgspeed CMU BVH file in metres, T-pose frame dropped, canonical aliases installed."""
    file = os.fspath(file)
    try:
        mtime = os.stat(file).st_mtime_ns
    except OSError:
        mtime = 0  # load_bvh reports the missing file or directory
    name = name or Path(file).stem
    return _copy(_load_cached(os.path.abspath(file), mtime, name))


def load(name):
    """(Skeleton, Clip) of a bundled clip (see ``names()``) in metres at 120 fps, T-pose (and glitched frames) dropped."""
    skel, clip = load_cmu(path(name), name=name)
    first, cut = _GLITCHED.get(name, (0, 0))
    if first or cut:
        keep = slice(first, clip.frames - cut)
        clip.pos, clip.rot, clip.scl = clip.pos[keep].copy(), clip.rot[keep].copy(), clip.scl[keep].copy()
    return skel, clip
