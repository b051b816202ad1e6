"""Skeleton, Pose and Clip: the runtime's data model (Y up, metres, seconds)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FIELDS = ("pos", "rot", "scl", "vel", "ang", "svl")


def numbers(value, name, dtype=np.float64):
    """``value`` as a finite numeric array; ValueError naming ``name`` for text, None, ragged lists or NaN/inf."""
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        raise ValueError(f"{name} must be a number or an array of numbers, got {type(value).__name__} {value!r}")
    try:
        a = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or a regular array of numbers, got {value!r}") from None
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a number or an array of numbers, got {a.dtype} {value!r}")
    a = a.astype(dtype)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return a


def number(value, name, low=-np.inf, high=np.inf):
    """``value`` as a finite float in ``[low, high]``; ValueError naming ``name`` otherwise."""
    a = numbers(value, name)
    if a.shape != ():
        raise ValueError(f"{name} must be one number, got shape {a.shape}")
    x = float(a)
    if not low <= x <= high:
        raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {x:g}")
    return x


def pose_arg(value, name):
    """``value`` if it is a Pose; ValueError naming the argument otherwise."""
    if not isinstance(value, Pose):
        raise ValueError(f"{name} must be a Pose, got {type(value).__name__}")
    return value


def parents_arg(value, joints, name="parents"):
    """(parents int64, Skeleton or None) from a Skeleton or parents array for ``joints`` joints; ValueError otherwise."""
    skel = value if isinstance(value, Skeleton) else None
    parents = numbers(value.parents if skel is not None else value, name, np.float64)
    if parents.ndim != 1 or not np.all(parents == np.round(parents)):
        raise ValueError(f"{name} must be a Skeleton or a 1-D array of joint indices")
    parents = parents.astype(np.int64)
    if len(parents) != joints:
        raise ValueError(f"{name} has {len(parents)} joints, the pose {joints}")
    if not np.all((parents >= -1) & (parents < np.arange(joints))):
        raise ValueError(f"{name} must list each joint's parent before it (root -1)")
    return parents, skel


def _f32(a, shape_tail, name):
    a = np.ascontiguousarray(numbers(a, name, np.float32)) if a is not None else a  # kernels take C arrays
    if a is None or a.ndim < 2 or a.shape[-1] != shape_tail:
        raise ValueError(f"{name} must have shape (..., J, {shape_tail}), got {getattr(a, 'shape', None)}")
    return a


class Skeleton:
    """Joint names, parent indices (``parents[i] < i``, root -1) and rest offsets (J,3) in metres.

    ``aliases`` maps extra names (e.g. canonical ``left_foot``) to joint indices;
    ``end_sites`` maps a joint index to the offset (m) of its BVH End Site.
    """

    def __init__(self, names, parents, offsets, aliases=None, end_sites=None):
        if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
            raise ValueError(f"names must be a list of joint names, got {type(names).__name__}")
        self.names = [str(n) for n in names]
        self.parents = numbers(parents, "parents").astype(np.int32)
        self.offsets = numbers(offsets, "offsets", np.float32)
        if self.offsets.size % 3:
            raise ValueError(f"offsets must have shape (J, 3), got {self.offsets.shape}")
        self.offsets = self.offsets.reshape(-1, 3)
        j = len(self.names)
        if self.parents.shape != (j,) or self.offsets.shape != (j, 3):
            raise ValueError(
                f"skeleton has {j} names but parents {self.parents.shape} and offsets {self.offsets.shape}"
            )
        for i, p in enumerate(self.parents):
            if not (-1 <= p < i):
                raise ValueError(
                    f"joint {i} ({self.names[i]!r}) has parent {p}: parents must come before children"
                )
        if len(set(self.names)) != j:
            raise ValueError("joint names must be unique")
        # Extra names (e.g. canonical 'left_foot') that resolve to joint indices.
        self.aliases = dict(aliases or {})
        self.end_sites = {int(k): np.asarray(v, np.float32) for k, v in (end_sites or {}).items()}

    def __len__(self):
        return len(self.names)

    def __repr__(self):
        return f"Skeleton({len(self)} joints, root={self.names[0]!r})"

    def index(self, joint):
        """Index of a joint given by index, name or alias; ValueError naming the joint if unknown."""
        if isinstance(joint, (int, np.integer)):
            if not -len(self) <= joint < len(self):
                raise ValueError(f"joint index {joint} out of range for {len(self)} joints")
            return int(joint) % len(self)
        if not isinstance(joint, str):
            raise ValueError(f"joint must be a name or an index, got {type(joint).__name__} {joint!r}")
        if joint in self.aliases:
            return self.aliases[joint]
        try:
            return self.names.index(joint)
        except ValueError:
            raise ValueError(f"unknown joint {joint!r}") from None

    def children(self, joint):
        """Indices of the direct children of a joint."""
        i = self.index(joint)
        return [c for c, p in enumerate(self.parents) if p == i]

    def rest_pose(self):
        """Local rest pose: offsets as positions, identity rotations, unit scales, zero velocities."""
        j = len(self)
        pose = Pose.identity(j)
        pose.pos[:] = self.offsets
        return pose


@dataclass
class Pose:
    """Joint transforms with their velocities, float32 structure of arrays.

    ``pos`` (...,J,3) m, ``rot`` (...,J,4) unit quaternion w-first, ``scl`` (...,J,3),
    ``vel`` (...,J,3) m/s, ``ang`` (...,J,3) rad/s left-multiplying (parent frame in a
    local pose), ``svl`` (...,J,3) d/dt log(scl) in 1/s.  Leading axes are a batch.
    """

    pos: np.ndarray
    rot: np.ndarray
    scl: np.ndarray = None
    vel: np.ndarray = None
    ang: np.ndarray = None
    svl: np.ndarray = None

    def __post_init__(self):
        self.pos = _f32(self.pos, 3, "pos")
        self.rot = _f32(self.rot, 4, "rot")
        if self.rot.shape[:-1] != self.pos.shape[:-1]:
            raise ValueError(f"rot {self.rot.shape} does not match pos {self.pos.shape}")
        shape = self.pos.shape
        self.scl = np.ones(shape, np.float32) if self.scl is None else _f32(self.scl, 3, "scl")
        for name in ("vel", "ang", "svl"):
            v = getattr(self, name)
            setattr(self, name, np.zeros(shape, np.float32) if v is None else _f32(v, 3, name))
        for name in ("scl", "vel", "ang", "svl"):
            if getattr(self, name).shape != shape:
                raise ValueError(f"{name} {getattr(self, name).shape} does not match pos {shape}")

    @classmethod
    def identity(cls, joints, batch=()):
        """Identity transforms at rest for ``joints`` joints and a batch shape."""
        shape = tuple(batch) + (joints,)
        rot = np.zeros(shape + (4,), np.float32)
        rot[..., 0] = 1.0
        return cls(np.zeros(shape + (3,), np.float32), rot)

    @property
    def joints(self):
        return self.pos.shape[-2]

    @property
    def batch(self):
        return self.pos.shape[:-2]

    def as_tuple(self):
        """The six arrays in kernel order ``(pos, rot, scl, vel, ang, svl)``."""
        return (self.pos, self.rot, self.scl, self.vel, self.ang, self.svl)

    def copy(self):
        return Pose(*(a.copy() for a in self.as_tuple()))

    def items(self):
        """Kernel tuples of C-contiguous (J, 3|4) views, one per batch item (one for an unbatched pose).

        An array assigned to a field after construction that is not C-contiguous gives copies.
        """
        flat = [np.ascontiguousarray(a).reshape((-1,) + a.shape[-2:]) for a in self.as_tuple()]
        return [tuple(a[n] for a in flat) for n in range(flat[0].shape[0])]

    def __getitem__(self, index):
        """Index the batch axes (or the joint axis of an unbatched pose)."""
        return Pose(*(np.asarray(a[index]) for a in self.as_tuple()))


@dataclass
class Clip:
    """Local joint tracks at a fixed frame time ``dt`` (s): ``pos`` (F,J,3) m, ``rot`` (F,J,4), ``scl`` (F,J,3).

    Optional per-frame tracks: ``contacts`` (F,C) bool with ``contact_joints`` names,
    ``tags`` {name: [(start, stop) frame ranges]}, ``root_pos`` (F,3) / ``root_rot``
    (F,4), the simulation bone in world space; ``tracks`` (``animgraph.tracks.Tracks``): named
    instants and ranges in seconds, set when a graph loads the clip as an asset.
    """

    skeleton: Skeleton
    pos: np.ndarray
    rot: np.ndarray
    scl: np.ndarray = None
    dt: float = 1.0 / 60.0
    contacts: np.ndarray = None
    contact_joints: list = field(default_factory=list)
    tags: dict = field(default_factory=dict)
    root_pos: np.ndarray = None
    root_rot: np.ndarray = None
    name: str = ""
    tracks: object = None

    def __post_init__(self):
        if not isinstance(self.skeleton, Skeleton):
            raise ValueError(f"skeleton must be a Skeleton, got {type(self.skeleton).__name__}")
        self.pos = _f32(self.pos, 3, "pos")
        self.rot = _f32(self.rot, 4, "rot")
        if self.scl is None:
            self.scl = np.ones_like(self.pos)
        self.scl = _f32(self.scl, 3, "scl")
        j = len(self.skeleton)
        if self.pos.ndim != 3 or self.pos.shape[1] != j:
            raise ValueError(f"clip pos must be (F, {j}, 3), got {self.pos.shape}")
        if self.rot.shape[:2] != self.pos.shape[:2] or self.scl.shape != self.pos.shape:
            raise ValueError("clip pos, rot and scl must have the same frames and joints")
        if len(self.pos) < 1:
            raise ValueError("a clip needs at least one frame")
        self.dt = number(self.dt, "clip dt")
        if not self.dt > 0:
            raise ValueError(f"clip dt must be positive, got {self.dt}")
        self.dt = float(self.dt)

    @property
    def frames(self):
        return self.pos.shape[0]

    @property
    def fps(self):
        return 1.0 / self.dt

    @property
    def duration(self):
        """Length in seconds from the first to the last frame."""
        return (self.frames - 1) * self.dt

    def __repr__(self):
        return f"Clip({self.name!r}, {self.frames} frames @ {self.fps:g} fps, {len(self.skeleton)} joints)"
