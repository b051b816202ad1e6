"""The motion-matching feature schema, and the raw features of one clip range.

A schema is a list of groups, each a block of feature columns with one weight::

    {"groups": [
      {"name": "foot_pos", "kind": "position", "joints": ["left_toe", "right_toe"]},
      {"name": "traj_pos", "kind": "trajectory_position", "offsets": [20, 40, 60]}]}

Every value is in the simulation bone's frame at the frame matched ("root space":
relative to the bone's position, turned by the inverse of its facing; Y up, m, m/s):

- ``position`` / ``velocity``: each joint's model position (m) / world velocity (m/s)
  in root space, 3 columns per joint (x, y, z).
- ``trajectory_position``: the bone's future ground position (x, z) in m at each of
  ``offsets`` frames ahead (60 fps frames): ``[p1x, p1z, p2x, p2z, ...]``.
- ``trajectory_direction``: the bone's future facing as a unit ground direction (x, z),
  ``(sin a, cos a)`` for the yaw ``a`` turned since now: ``[d1x, d1z, d2x, d2z, ...]``.

The two trajectory blocks with offsets (20, 40, 60) are exactly the runtime's
``trajectory`` signal (``animgraph.node.TRAJECTORY``) at 1/3, 2/3 and 1 s.

Velocities are central differences of the world positions (second-order one-sided at a
range's ends).  Trajectory points past a range's last frame are extrapolated
(``extend_track``): the bone keeps the mean velocity (in its own frame) and turn rate of
the range's last ``EXTRAPOLATE_SECONDS``, moving on an arc; so a short clip's late frames
still have features, and a clip that ends standing extrapolates standing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from .errors import AnimgraphError
from .fileio import atomic_write_text

FPS = 60  # frames per second of every database, and the unit of ``offsets``
MAX_OFFSET = 600  # frames (10 s): the furthest an extrapolated trajectory point may lie
WEIGHT_MAX = 1e3  # a group's largest weight: normalised features (about weight x a few) stay far inside float32
EXTRAPOLATE_SECONDS = 0.25  # the window (s) at a range's end whose mean motion the extrapolation continues
KINDS = ("position", "velocity", "trajectory_position", "trajectory_direction")
JOINT_KINDS = ("position", "velocity")


class Group(BaseModel):
    """One block of feature columns: what is measured, of which joints or at which offsets, and its weight."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, description="unique name of the group")]
    kind: Literal["position", "velocity", "trajectory_position", "trajectory_direction"]
    joints: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list, description="position/velocity: joint names (canonical, file names or aliases)")
    offsets: list[Annotated[int, Field(ge=1, le=MAX_OFFSET)]] = Field(
        default_factory=list, description=f"trajectory kinds: frames ahead at {FPS} fps (1..{MAX_OFFSET})")
    weight: float = Field(1.0, ge=0, le=WEIGHT_MAX, allow_inf_nan=False,
                          description=f"the group's weight in the search distance, [0, {WEIGHT_MAX:g}]; 0 leaves "
                          "the group out (at least one group weighs more than 0)")

    @model_validator(mode="after")
    def _fits_kind(self):
        if self.kind in JOINT_KINDS:
            if not self.joints:
                raise ValueError(f"group {self.name!r}: a {self.kind} group needs 'joints'")
            if self.offsets:
                raise ValueError(f"group {self.name!r}: a {self.kind} group takes no 'offsets'")
        else:
            if not self.offsets:
                raise ValueError(f"group {self.name!r}: a {self.kind} group needs 'offsets'")
            if self.joints:
                raise ValueError(f"group {self.name!r}: a {self.kind} group takes no 'joints'")
        return self

    @property
    def dim(self):
        """Number of feature columns: 3 per joint, 2 per offset."""
        return 3 * len(self.joints) if self.kind in JOINT_KINDS else 2 * len(self.offsets)


class Schema(BaseModel):
    """The feature groups of a motion-matching database, in column order."""

    model_config = ConfigDict(extra="forbid")

    groups: list[Group] = Field(min_length=1)

    _path: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _unique(self):
        seen = set()
        for g in self.groups:
            if g.name in seen:
                raise ValueError(f"two groups are named {g.name!r}")
            seen.add(g.name)
        if not any(g.weight > 0 for g in self.groups):
            raise ValueError("every group weighs 0: at least one group needs a weight > 0 to search by")
        return self

    @classmethod
    def default(cls):
        """Toe positions, toe and hips velocities, and the trajectory at 20, 40, 60 frames (1/3, 2/3, 1 s).

        The weights favour the trajectory (1.5) over the toes' positions (0.75): measured on the
        demo's stick script, equal weights leave a character standing still for seconds after
        the stick is pushed (the database has no clip that starts walking from a stand, so
        leaving the standing pose must be worth the pose's mismatch).
        """
        return cls(groups=[
            Group(name="foot_position", kind="position", joints=["left_toe", "right_toe"], weight=0.75),
            Group(name="foot_velocity", kind="velocity", joints=["left_toe", "right_toe"]),
            Group(name="hips_velocity", kind="velocity", joints=["hips"]),
            Group(name="trajectory_position", kind="trajectory_position", offsets=[20, 40, 60], weight=1.5),
            Group(name="trajectory_direction", kind="trajectory_direction", offsets=[20, 40, 60], weight=1.5),
        ])

    @classmethod
    def load(cls, path):
        """Schema from a JSON file; AnimgraphError naming the file on any problem."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise AnimgraphError(f"{path}: no such feature schema file") from None
        except (OSError, UnicodeDecodeError) as e:
            raise AnimgraphError(f"{path}: cannot read the feature schema: {e}") from None
        schema = cls.from_json(text, where=str(path))
        schema._path = path
        return schema

    @classmethod
    def from_json(cls, text, where="<schema>"):
        """Schema from JSON text; AnimgraphError naming ``where`` on any problem."""
        try:
            return cls.model_validate(json.loads(text))
        except json.JSONDecodeError as e:
            raise AnimgraphError(f"{where}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
        except RecursionError:
            raise AnimgraphError(f"{where}: JSON nested too deeply to be a feature schema") from None
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"])
            raise AnimgraphError(f"{where}: {loc + ': ' if loc else ''}{err['msg']}") from None

    def to_json(self):
        """JSON text (the form ``load`` reads), one group per line."""
        lines = [json.dumps(g.model_dump(exclude_defaults=True)) for g in self.groups]
        return '{"groups": [\n  ' + ",\n  ".join(lines) + "\n]}\n"

    def save(self, path):
        """Write ``to_json()`` to ``path`` atomically."""
        atomic_write_text(path, self.to_json())

    @property
    def where(self):
        """The schema's file for error messages ('the default feature schema' if none)."""
        return str(self._path) if self._path else "the default feature schema"

    @property
    def dim(self):
        """Total number of feature columns."""
        return sum(g.dim for g in self.groups)

    def slices(self):
        """{group name: slice of its feature columns}."""
        out, at = {}, 0
        for g in self.groups:
            out[g.name] = slice(at, at + g.dim)
            at += g.dim
        return out

    def columns(self):
        """Label of every feature column, in order ('foot_position.left_toe.x', 'trajectory_position.20.z', ...)."""
        labels = []
        for g in self.groups:
            if g.kind in JOINT_KINDS:
                labels += [f"{g.name}.{j}.{a}" for j in g.joints for a in "xyz"]
            else:
                labels += [f"{g.name}.{k}.{a}" for k in g.offsets for a in "xz"]
        return labels

    def weights(self):
        """(D,) float64: each feature column's group weight."""
        return np.concatenate([np.full(g.dim, float(g.weight)) for g in self.groups])

    def max_offset(self):
        """The furthest trajectory offset in frames (0 without trajectory groups)."""
        return max((max(g.offsets) for g in self.groups if g.offsets), default=0)

    def joint_indices(self, skel):
        """{group name: joint indices} of the joint groups; AnimgraphError naming the schema file, group and joint."""
        out = {}
        for g in self.groups:
            if g.kind not in JOINT_KINDS:
                continue
            idx = []
            for j in g.joints:
                try:
                    idx.append(skel.index(j))
                except ValueError:
                    raise AnimgraphError(
                        f"{self.where}: group {g.name!r}: unknown joint {j!r} (the skeleton has "
                        f"{len(skel)} joints, e.g. {', '.join(skel.names[:4])}, or canonical names like left_toe)"
                    ) from None
            out[g.name] = idx
        return out


# ---------------------------------------------------------------- raw features


def to_root(x, z, yaw):
    """Ground vectors (x, z) turned into the frame of a bone facing ``yaw`` (rad, left +): rotated by -yaw."""
    c, s = np.cos(yaw), np.sin(yaw)
    return c * x - s * z, s * x + c * z


def extend_track(pos, yaw, frames, dt=1.0 / FPS):
    """The bone's ground track (F+frames, 2) m and yaw (F+frames,) rad, continued ``frames`` past the end.

    The continuation keeps the mean velocity in the bone's own frame and the mean turn
    rate of the last ``EXTRAPOLATE_SECONDS`` (at least one frame step), on an arc
    (midpoint rule per frame); a one-frame track stays where it is.
    """
    pos = np.asarray(pos, np.float64)
    yaw = np.asarray(yaw, np.float64)
    n = len(pos)
    if frames <= 0:
        return pos.copy(), yaw.copy()
    back = min(n - 1, max(1, int(round(EXTRAPOLATE_SECONDS / dt))))
    if back == 0:
        return np.concatenate([pos, np.repeat(pos[-1:], frames, 0)]), np.concatenate([yaw, np.repeat(yaw[-1], frames)])
    step = np.diff(pos[-back - 1:], axis=0) / dt  # world velocity per step (m/s)
    mid = 0.5 * (yaw[-back - 1:-1] + yaw[-back:])
    lx, lz = to_root(step[:, 0], step[:, 1], mid)
    vx, vz = lx.mean(), lz.mean()
    spin = (yaw[-1] - yaw[-back - 1]) / (back * dt)
    k = np.arange(1, frames + 1)
    ext_yaw = yaw[-1] + spin * k * dt
    half = yaw[-1] + spin * (k - 0.5) * dt
    c, s = np.cos(half), np.sin(half)
    moves = np.stack([c * vx + s * vz, -s * vx + c * vz], axis=1) * dt  # local velocity turned by +yaw
    ext_pos = pos[-1] + np.cumsum(moves, axis=0)
    return np.concatenate([pos, ext_pos]), np.concatenate([yaw, ext_yaw])


def trajectory_features(pos, yaw, offsets, direction):
    """(F, 2K) future ground positions (m) or facing directions at ``offsets`` frames, in each frame's bone frame.

    ``pos`` (F+E, 2) and ``yaw`` (F+E,) are the extended track (``extend_track``) with
    E >= max(offsets); F = len(track) - E.
    """
    extra = max(offsets)
    frames = len(yaw) - extra
    now = np.arange(frames)
    out = np.empty((frames, 2 * len(offsets)))
    for k, off in enumerate(offsets):
        if direction:
            turn = yaw[now + off] - yaw[now]
            out[:, 2 * k], out[:, 2 * k + 1] = np.sin(turn), np.cos(turn)
        else:
            d = pos[now + off] - pos[now]
            out[:, 2 * k], out[:, 2 * k + 1] = to_root(d[:, 0], d[:, 1], yaw[now])
    return out


def range_features(schema, joints, local_pos, root_pos, yaw, dt=1.0 / FPS):
    """Raw features (F, D) float64 of one range.

    ``joints``: ``schema.joint_indices(skel)``; ``local_pos`` (F,J,3) model positions in the
    bone's frame (FK of the root-relative clip); ``root_pos`` (F,3) the bone's world
    position; ``yaw`` (F,) its unwrapped facing (rad, left +).
    """
    frames = len(yaw)
    out = np.empty((frames, schema.dim))
    root_pos = np.asarray(root_pos, np.float64)
    track, track_yaw = extend_track(root_pos[:, [0, 2]], yaw, schema.max_offset(), dt)
    c, s = np.cos(yaw)[:, None], np.sin(yaw)[:, None]
    for g, sl in zip(schema.groups, schema.slices().values()):
        if g.kind == "position":
            block = local_pos[:, joints[g.name]]
        elif g.kind == "velocity":
            p = np.asarray(local_pos[:, joints[g.name]], np.float64)
            world = np.empty_like(p)  # bone frame -> world: turn by +yaw, add the bone's position
            world[..., 0] = c * p[..., 0] + s * p[..., 2] + root_pos[:, None, 0]
            world[..., 1] = p[..., 1] + root_pos[:, None, 1]
            world[..., 2] = -s * p[..., 0] + c * p[..., 2] + root_pos[:, None, 2]
            if frames > 1:
                vel = np.gradient(world, dt, axis=0, edge_order=2 if frames > 2 else 1)
            else:
                vel = np.zeros_like(world)
            block = np.empty_like(vel)
            block[..., 0], block[..., 2] = to_root(vel[..., 0], vel[..., 2], yaw[:, None])
            block[..., 1] = vel[..., 1]
        else:
            block = trajectory_features(track, track_yaw, g.offsets, g.kind == "trajectory_direction")
        out[:, sl] = np.asarray(block, np.float64).reshape(frames, -1)
    return out


def normalisation(schema, raw):
    """(offset (D,), scale (D,)) float64: per group the column means, and the group's std averaged over its columns
    (1 where that std is 0 or not finite), so ``(raw - offset) / scale * schema.weights()`` has group std = weight."""
    raw = np.asarray(raw, np.float64)
    offset = raw.mean(axis=0) if len(raw) else np.zeros(schema.dim)
    scale = np.ones(schema.dim)
    for sl in schema.slices().values():
        std = float(raw[:, sl].std(axis=0).mean()) if len(raw) else 0.0
        scale[sl] = std if std > 1e-9 and math.isfinite(std) else 1.0
    return offset, scale
