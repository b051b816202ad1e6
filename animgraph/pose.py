"""Skeleton, Pose and Clip: the runtime's data model (Y up, metres, seconds)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FIELDS = ("pos", "rot", "scl", "vel", "ang", "svl")


def _f32(a, shape_tail, name):
    a = np.ascontiguousarray(a, dtype=np.float32)
    if a.ndim < 2 or a.shape[-1] != shape_tail:
        raise ValueError(f"{name} must have shape (..., J, {shape_tail}), got {a.shape}")
    return a


class Skeleton:
    """Joint names, parent indices (``parents[i] < i``, root -1) and rest offsets (J,3) in metres.

    ``aliases`` maps extra names (e.g. canonical ``left_foot``) to joint indices;
    ``end_sites`` maps a joint index to the offset (m) of its BVH End Site.
    """

    def __init__(self, names, parents, offsets, aliases=None, end_sites=None):
        self.names = [str(n) for n in names]
        self.parents = np.asarray(parents, dtype=np.int32)
        self.offsets = np.asarray(offsets, dtype=np.float32).reshape(-1, 3)
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
        """Kernel tuples of (J, 3|4) views, one per batch item (one for an unbatched pose)."""
        flat = [a.reshape((-1,) + a.shape[-2:]) for a in self.as_tuple()]
        return [tuple(a[n] for a in flat) for n in range(flat[0].shape[0])]

    def __getitem__(self, index):
        """Index the batch axes (or the joint axis of an unbatched pose)."""
        return Pose(*(np.asarray(a[index]) for a in self.as_tuple()))


@dataclass
class Clip:
    """Local joint tracks at a fixed frame time ``dt`` (s): ``pos`` (F,J,3) m, ``rot`` (F,J,4), ``scl`` (F,J,3).

    Optional per-frame tracks: ``contacts`` (F,C) bool with ``contact_joints`` names,
    ``tags`` {name: [(start, stop) frame ranges]}, ``root_pos`` (F,3) / ``root_rot``
    (F,4), the simulation bone in world space.
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

    def __post_init__(self):
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
