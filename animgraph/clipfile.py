"""Reading a BVH (or glTF) file the way its data asks: its units, an added T-pose frame 0, the CMU name map.

A glTF file (.glb or .gltf: ``animgraph.gltf.load_gltf``) is in metres by the glTF spec; frame 0
and the names are decided as for BVH.

Each decision is a plain function that returns the decision and the rule that made
it, with the numbers, so ``animgraph info`` prints why and graph assets (format
version 2) decide the same way.

- **Units** from the rest pose's size (the largest side of the bounding box of the
  joints and End Sites, in file units): of the known units, the one that makes that
  size nearest a 1.7 m human wins, if it lands within 0.8-3.4 m; otherwise metres.
- **Frame 0** is an added T-pose when it sits at rest (at least half the joints'
  rotations within 1 deg of identity), at least a quarter of the joints leave rest
  in frame 1, and the jump from frame 0 to 1 (largest joint rotation) is at least
  30 deg and 4 times the 95th percentile of the later frame-to-frame jumps.  A
  one-frame file keeps its frame.
- **Names**: the canonical CMU aliases (``animgraph.names``) when the joint names
  follow a CMU convention.
"""

from __future__ import annotations

import math

import numpy as np

from .bvh import build_bvh, check_scale, read_bvh
from .errors import BVHError
from .names import convention, install_aliases
from .pose import Clip, Skeleton

CMU_SCALE = (1.0 / 0.45) * 2.54 / 100.0  # metres per cgspeed CMU unit ((1/0.45) inch)

# Known units, metres per file unit.
UNITS = {
    "metres": 1.0,
    "CMU cgspeed units": CMU_SCALE,
    "inches": 0.0254,
    "centimetres": 0.01,
    "millimetres": 0.001,
}
HUMAN_SIZE = 1.7  # m, what a rest pose measures in the right unit
SIZE_RANGE = (0.8, 3.4)  # m, accepted sizes in the chosen unit

REST_ANGLE = 1.0  # deg: a joint is at rest when its rotation is this close to identity
JUMP_MIN = 30.0  # deg: the frame 0 -> 1 jump of an added T-pose is at least this ...
JUMP_RATIO = 4.0  # ... and this many times the 95th percentile of the later jumps

FIRST_FRAME = ("auto", "keep", "drop")
NAMES = ("auto", "cmu", "none")


def rest_size(offsets, parents, end_sites=None):
    """Largest side (file units) of the bounding box of the rest pose's joints and End Sites."""
    offsets = np.asarray(offsets, np.float64).reshape(-1, 3)
    glob = np.zeros_like(offsets)
    points = []
    for i, p in enumerate(parents):
        glob[i] = offsets[i] + (glob[p] if p >= 0 else 0.0)
        points.append(glob[i])
        if end_sites and end_sites.get(i) is not None:
            points.append(glob[i] + np.asarray(end_sites[i], np.float64))
    points = np.array(points)
    return float((points.max(axis=0) - points.min(axis=0)).max())


def detect_units(size):
    """(metres per file unit, rule) from the rest-pose ``size`` in file units (see the module docstring)."""
    if not (math.isfinite(size) and size > 0):
        return 1.0, f"units: 1 file unit = 1 m (metres assumed: the rest pose has no size, {size:g})"
    name, unit = min(UNITS.items(), key=lambda kv: abs(math.log(size * kv[1] / HUMAN_SIZE)))
    metres = size * unit
    lo, hi = SIZE_RANGE
    if lo <= metres <= hi:
        return unit, (f"units: 1 file unit = {unit:.6g} m ({name}): the rest pose is {size:.3g} units across, "
                      f"{metres:.2f} m in {name}, the unit nearest a {HUMAN_SIZE:g} m human")
    return 1.0, (f"units: 1 file unit = 1 m (metres assumed): the rest pose is {size:.3g} units across and no "
                 f"known unit makes that {lo:g}-{hi:g} m")


def _angles(a, b):
    """Rotation angle (deg) between unit quaternions ``a`` and ``b`` (..., 4), w-first."""
    d = np.abs((np.asarray(a, np.float64) * np.asarray(b, np.float64)).sum(-1))
    return np.degrees(2.0 * np.arccos(np.clip(d, 0.0, 1.0)))


def detect_tpose(rot):
    """(whether frame 0 is an added T-pose, rule) from local rotations ``rot`` (F,J,4), w-first."""
    rot = np.asarray(rot, np.float64)
    frames, joints = rot.shape[:2]
    if frames < 2:
        return False, "frame 0 kept: the file has one frame, nothing to compare it with"
    at_rest = _angles(rot[:2], np.array([1.0, 0.0, 0.0, 0.0])) < REST_ANGLE
    n0, n1 = int(at_rest[0].sum()), int(at_rest[1].sum())
    leave = int((at_rest[0] & ~at_rest[1]).sum())
    steps = _angles(rot[:-1], rot[1:]).max(axis=1)
    jump = float(steps[0])
    later = float(np.percentile(steps[1:], 95)) if frames > 2 else 0.0
    numbers = (f"{n0} of {joints} joints at rest in frame 0, {n1} in frame 1; the frame 0->1 jump is "
               f"{jump:.1f} deg, the later frame-to-frame jumps {later:.1f} deg (95th percentile)")
    tpose = 2 * n0 >= joints and 4 * leave >= joints and jump >= max(JUMP_MIN, JUMP_RATIO * later)
    if tpose:
        return True, f"frame 0 dropped: T-pose detected ({numbers})"
    return False, f"frame 0 kept: no T-pose ({numbers})"


GLTF_SUFFIXES = (".glb", ".gltf")


def is_gltf(path):
    """Whether ``path`` names a glTF file (.glb or .gltf, any case)."""
    return str(path).lower().endswith(GLTF_SUFFIXES)


def _read_gltf(path, units):
    """(skel, clip, file, units, units rule, error(message)) of a glTF file: metres by the glTF spec unless given."""
    from .gltf import GLTFError, load_gltf

    file = str(path)
    skel, clip = load_gltf(path)

    def error(message, line=None):
        return GLTFError(message, file)

    if units == "auto":
        return skel, clip, file, 1.0, "units: 1 file unit = 1 m (glTF is in metres)", error
    units = check_scale(units, file)
    if units != 1.0:
        skel = Skeleton(skel.names, skel.parents, skel.offsets * units)
        clip = Clip(skel, clip.pos * units, clip.rot, clip.scl, clip.dt, name=clip.name)
    return skel, clip, file, units, f"units: 1 file unit = {units:.6g} m (given)", error


def read_clip(path, units="auto", first_frame="auto", names="auto", name=None):
    """(Skeleton, Clip, notes) of a BVH or glTF (.glb/.gltf) file in metres, deciding what ``"auto"`` leaves open
    from the data.

    ``units``: metres per file unit, or ``"auto"``; ``first_frame``: ``"auto"``, ``"keep"`` or
    ``"drop"``; ``names``: ``"auto"`` (CMU aliases if the names follow a CMU convention), ``"cmu"``
    (required) or ``"none"``.  ``notes``: ``file``, ``units``, ``first_frame_dropped``, ``convention``
    and the rules that decided (``units_rule``, ``first_frame_rule``, ``names_rule``).
    """
    if first_frame not in FIRST_FRAME:
        raise BVHError(f"first_frame must be one of {', '.join(FIRST_FRAME)}, got {first_frame!r}", str(path))
    if names not in NAMES:
        raise BVHError(f"names must be one of {', '.join(NAMES)}, got {names!r}", str(path))
    if is_gltf(path):
        skel, clip, file, units, units_rule, error = _read_gltf(path, units)
    else:
        data = read_bvh(path)
        file = data.file
        if units == "auto":
            offsets = [j["offset"] for j in data.joints]
            ends = {i: j["end"] for i, j in enumerate(data.joints) if j["end"] is not None}
            units, units_rule = detect_units(rest_size(offsets, [j["parent"] for j in data.joints], ends))
        else:
            units = check_scale(units, data.file)
            units_rule = f"units: 1 file unit = {units:.6g} m (given)"
        skel, clip = build_bvh(data, units)

        def error(message, line=None):
            return BVHError(message, data.file, line)

    if first_frame == "auto":
        drop, frame_rule = detect_tpose(clip.rot)
    else:
        drop = first_frame == "drop"
        frame_rule = f"frame 0 {'dropped' if drop else 'kept'} (given)"
    if drop:
        if clip.frames < 2:
            raise error("dropping frame 0 (the T-pose) leaves no frames (the clip has one frame)",
                        None if is_gltf(path) else data.frames_line)
        clip = Clip(skel, clip.pos[1:], clip.rot[1:], clip.scl[1:], clip.dt, name=clip.name)

    conv = convention(skel.names)
    if names == "cmu" and conv is None:
        raise error("names: 'cmu' but the joint names follow no CMU convention (see animgraph.names)")
    if names != "none" and conv is not None:
        install_aliases(skel)
        names_rule = f"names: CMU {conv} names, canonical aliases installed"
    else:
        names_rule = "names: file names only" + (" (given)" if names == "none" else ", no CMU convention")
    if name is not None:
        clip.name = name
    notes = {
        "file": file,
        "units": units,
        "units_rule": units_rule,
        "first_frame_dropped": drop,
        "first_frame_rule": frame_rule,
        "convention": conv if names != "none" else None,
        "names_rule": names_rule,
    }
    return skel, clip, notes
