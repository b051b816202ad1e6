"""glTF 2.0 out and in: a skinned skeleton and its animation, cubic tangents from the exact velocities.

Axes: glTF is y-up, right-handed, metres, seconds, as animgraph is inside: coordinates map
unchanged, and quaternions only reorder, animgraph's (w, x, y, z) to glTF's (x, y, z, w).

Writing (``save_gltf``): one node per joint holding its rest transform (offset, no rotation,
unit scale), a skin listing the joints with their inverse bind matrices, a small tapered box per
bone (parent to child, or to an End Site) skinned rigidly to it so that viewers show the
character, and per joint translation, rotation and scale channels.  ``CUBICSPLINE`` keys take
their in and out tangents from the velocities: ``vel`` for translation, ``0.5 (0, ang) q`` for
rotation (``ang`` left-multiplies, as in a local ``Pose``), ``scl * svl`` for scale.  ``.glb`` is
one binary file; ``.gltf`` is JSON with its buffer in a ``.bin`` beside it.  Both are written to
temporary files and renamed, so a failed write leaves nothing behind.

Reading (``load_gltf``): the first skin's joints (their parents the nearest joint up the node
tree; the transforms of nodes between joints, or above the roots, folded in as rest transforms)
and one animation's translation, rotation and scale channels on them, ``LINEAR``, ``STEP`` and
``CUBICSPLINE``, resampled at one frame time (the median key spacing of the sampler with the
most keys, snapped to a whole frame rate; keys on that grid are kept exactly).  Every problem
is one ``GLTFError`` naming the file and the element (``accessors[3]``).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import struct
import urllib.parse
from pathlib import Path

import numpy as np

from .errors import AnimgraphError, one_line
from .fileio import atomic_write, read_bytes, write_together
from .pose import Clip, Skeleton

GENERATOR = "animgraph"
FLOAT, BYTE, UBYTE, SHORT, USHORT, UINT = 5126, 5120, 5121, 5122, 5123, 5125
ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER = 34962, 34963
GLB_MAGIC, JSON_CHUNK, BIN_CHUNK = b"glTF", 0x4E4F534A, 0x004E4942
_COMPONENTS = {BYTE: "<i1", UBYTE: "<u1", SHORT: "<i2", USHORT: "<u2", UINT: "<u4", FLOAT: "<f4"}
_NORMALIZE = {BYTE: 127.0, UBYTE: 255.0, SHORT: 32767.0, USHORT: 65535.0}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
_PATHS = ("translation", "rotation", "scale")
# Required extensions that only touch what load_gltf never reads (meshes, materials, textures, lights).
_HARMLESS = ("KHR_draco_mesh_compression", "KHR_mesh_quantization", "KHR_lights_punctual", "KHR_materials_",
             "KHR_texture_", "EXT_texture_", "KHR_mesh_variants")
MAX_FRAMES = 1_000_000  # frames a loaded animation may resample to ...
MAX_SAMPLES = 10_000_000  # ... and frames times joints (about 0.25 GB per float64 track array)
_F32_MAX = float(np.finfo(np.float32).max)


class GLTFError(AnimgraphError):
    """A glTF file that cannot be read; names the file and the element (``accessors[3]``)."""

    def __init__(self, message, file=None, element=None):
        self.message = message
        self.file = file
        self.element = element
        super().__init__(message)

    def __str__(self):
        where = [str(self.file) if self.file else "<gltf>"] + ([self.element] if self.element else [])
        return one_line(": ".join(where + [self.message]))


# ---------------------------------------------------------------- quaternions (w, x, y, z), vectorised


def _qmul(a, b):
    """Hamilton products ``a * b`` of quaternion arrays (..., 4), w-first."""
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def _qrot(q, v):
    """Vectors ``v`` (..., 3) rotated by unit quaternions ``q`` (..., 4), w-first."""
    u, w = q[..., 1:], q[..., :1]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def _continuous(rot):
    """Unit quaternions (F, J, 4) with signs flipped so that each frame lies in the previous one's hemisphere."""
    rot = np.array(rot, np.float64)
    for f in range(1, len(rot)):
        flip = np.sum(rot[f] * rot[f - 1], axis=-1) < 0.0
        rot[f, flip] *= -1.0
    return rot


def _matrix_to_trs(m):
    """(translation (3,), rotation (4,) w-first, scale (3,)) of an affine 4x4 matrix (row-major)."""
    t = m[:3, 3].copy()
    a = m[:3, :3].copy()
    s = np.linalg.norm(a, axis=0)
    if np.linalg.det(a) < 0.0:
        s[0] = -s[0]
    r = a / np.where(s == 0.0, 1.0, s)
    # Rotation matrix to quaternion (Shepperd): the largest of w, x, y, z first.
    tr = np.trace(r)
    cands = [tr, r[0, 0], r[1, 1], r[2, 2]]
    k = int(np.argmax(cands))
    if k == 0:
        w = math.sqrt(max(1.0 + tr, 0.0)) / 2.0
        q = [w, (r[2, 1] - r[1, 2]) / (4 * w), (r[0, 2] - r[2, 0]) / (4 * w), (r[1, 0] - r[0, 1]) / (4 * w)]
    else:
        i, j, n = (k - 1), k % 3, (k + 1) % 3
        x = math.sqrt(max(1.0 + r[i, i] - r[j, j] - r[n, n], 0.0)) / 2.0
        q = [0.0] * 4
        q[0] = (r[n, j] - r[j, n]) / (4 * x)
        q[1 + i] = x
        q[1 + j] = (r[j, i] + r[i, j]) / (4 * x)
        q[1 + n] = (r[n, i] + r[i, n]) / (4 * x)
    q = np.array(q)
    norm = np.linalg.norm(q)
    return t, (q / norm if norm > 0 and np.isfinite(norm) else np.array([1.0, 0.0, 0.0, 0.0])), s


# ---------------------------------------------------------------- writing


class _Buffer:
    """The binary buffer being built, with its buffer views and accessors."""

    def __init__(self):
        self.parts, self.size, self.views, self.accessors = [], 0, [], []

    def add(self, array, kind, component=FLOAT, target=None, bounds=False):
        """Index of a new accessor of ``array`` (count, width) as glTF ``kind`` ('VEC3', ...), in its own view."""
        dtype = np.dtype(_COMPONENTS[component])
        a = np.ascontiguousarray(np.asarray(array).reshape(len(array), -1), dtype)
        data = a.tobytes()
        view = {"buffer": 0, "byteOffset": self.size, "byteLength": len(data)}
        if target is not None:
            view["target"] = target
        self.views.append(view)
        self.parts.append(data + b"\0" * (-len(data) % 4))
        self.size += len(self.parts[-1])
        accessor = {"bufferView": len(self.views) - 1, "componentType": component, "count": len(a), "type": kind}
        if bounds:
            cast = float if component == FLOAT else int
            accessor["min"] = [cast(v) for v in a.min(axis=0)]
            accessor["max"] = [cast(v) for v in a.max(axis=0)]
        self.accessors.append(accessor)
        return len(self.accessors) - 1

    def data(self):
        return b"".join(self.parts)


def _rest_globals(skel):
    """Global rest positions (J, 3) float64: offsets summed down the hierarchy (rest rotations are identity)."""
    offsets = np.asarray(skel.offsets, np.float64)
    out = np.zeros_like(offsets)
    for i, p in enumerate(skel.parents):
        out[i] = offsets[i] + (out[p] if p >= 0 else 0.0)
    return out


def _box(head, tail, width):
    """Vertices (24, 3), normals (24, 3) and triangles (12, 3) of a box tapering from ``head`` to ``tail``."""
    axis = tail - head
    axis = axis / np.linalg.norm(axis)
    side = np.cross(axis, [0.0, 1.0, 0.0] if abs(axis[1]) < 0.9 else [1.0, 0.0, 0.0])
    side /= np.linalg.norm(side)
    up = np.cross(side, axis)
    ring = [(-1, -1), (1, -1), (1, 1), (-1, 1)]
    corners = [head + width * (a * side + b * up) for a, b in ring]
    corners += [tail + 0.4 * width * (a * side + b * up) for a, b in ring]
    faces = [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    centre = np.mean(corners, axis=0)
    verts, normals, tris = [], [], []
    for face in faces:
        quad = [corners[k] for k in face]
        normal = np.cross(quad[1] - quad[0], quad[2] - quad[0])
        if np.dot(normal, np.mean(quad, axis=0) - centre) < 0.0:
            quad, normal = quad[::-1], -normal
        base = len(verts)
        verts += quad
        normals += [normal / np.linalg.norm(normal)] * 4
        tris += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    return np.array(verts), np.array(normals), np.array(tris)


def _body(skel):
    """(vertices, normals, triangles, joint of each vertex): a tapered box per bone in the global rest pose."""
    glob = _rest_globals(skel)
    bones = [(p, glob[p], glob[c]) for c, p in enumerate(skel.parents) if p >= 0]
    bones += [(j, glob[j], glob[j] + np.asarray(e, np.float64)) for j, e in skel.end_sites.items()]
    bones = [b for b in bones if np.linalg.norm(b[2] - b[1]) > 1e-4]
    if not bones:  # no bone has a length: a 5 cm box standing on the first joint
        bones = [(0, glob[0], glob[0] + [0.0, 0.05, 0.0])]
    verts, normals, tris, joints = [], [], [], []
    for joint, head, tail in bones:
        length = np.linalg.norm(tail - head)
        v, n, t = _box(head, tail, min(0.12 * length, 0.04))
        tris.append(t + sum(len(x) for x in verts))
        verts.append(v)
        normals.append(n)
        joints.append(np.full(len(v), joint))
    return np.concatenate(verts), np.concatenate(normals), np.concatenate(tris), np.concatenate(joints)


def _derivatives(clip):
    """(vel, ang, svl) (F, J, 3) of ``clip`` by central differences (one-sided at the ends; zero for one frame)."""
    pos = np.asarray(clip.pos, np.float64)
    rot = _continuous(clip.rot)
    logs = np.log(np.maximum(np.abs(np.asarray(clip.scl, np.float64)), 1e-30))
    if clip.frames < 2:
        zero = np.zeros_like(pos)
        return zero, zero, zero
    lo = np.r_[0, np.arange(clip.frames - 2), clip.frames - 2]
    hi = np.r_[1, np.arange(2, clip.frames), clip.frames - 1]
    span = (hi - lo)[:, None, None] * clip.dt
    d = _qmul(rot[hi], rot[lo] * [1.0, -1.0, -1.0, -1.0])  # rot[hi] rot[lo]^-1, parent side
    d *= np.where(d[..., :1] < 0.0, -1.0, 1.0)
    sin = np.linalg.norm(d[..., 1:], axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(sin, d[..., :1])
    axis = d[..., 1:] / np.where(sin > 0.0, sin, 1.0)
    return (pos[hi] - pos[lo]) / span, axis * angle / span, (logs[hi] - logs[lo]) / span


def _velocity(value, name, shape):
    if value is None:
        return None
    a = np.asarray(value, np.float64)
    if a.shape != shape or not np.isfinite(a).all():
        raise ValueError(f"{name} must be a finite array of shape {shape} (local, per frame), got {a.shape}")
    return a


def gltf_document(skel, clip, *, cubic=True, vel=None, ang=None, svl=None, name=None):
    """(glTF JSON dict, binary buffer bytes) of ``clip`` on ``skel``: see ``save_gltf``."""
    if not isinstance(skel, Skeleton) or not isinstance(clip, Clip):
        raise ValueError("save_gltf takes a Skeleton and a Clip")
    if len(skel) != len(clip.skeleton):
        raise ValueError(f"the clip has {len(clip.skeleton)} joints, the skeleton {len(skel)}")
    frames, joints = clip.frames, len(skel)
    shape = (frames, joints, 3)
    vel, ang, svl = (_velocity(v, n, shape) for v, n in ((vel, "vel"), (ang, "ang"), (svl, "svl")))
    cubic = bool(cubic) and frames > 1  # one key has no curve: LINEAR holds it
    if cubic and (vel is None or ang is None or svl is None):
        fd = _derivatives(clip)
        vel, ang, svl = (given if given is not None else est for given, est in zip((vel, ang, svl), fd))
    buf = _Buffer()

    verts, normals, tris, owner = _body(skel)
    weights = np.zeros((len(verts), 4), np.float32)
    weights[:, 0] = 1.0
    joint_ids = np.zeros((len(verts), 4), np.int64)
    joint_ids[:, 0] = owner
    primitive = {
        "attributes": {
            "POSITION": buf.add(verts, "VEC3", target=ARRAY_BUFFER, bounds=True),
            "NORMAL": buf.add(normals, "VEC3", target=ARRAY_BUFFER),
            "JOINTS_0": buf.add(joint_ids, "VEC4", UBYTE if joints <= 256 else USHORT, target=ARRAY_BUFFER),
            "WEIGHTS_0": buf.add(weights, "VEC4", target=ARRAY_BUFFER),
        },
        "indices": buf.add(tris.reshape(-1, 1), "SCALAR", USHORT if len(verts) < 65536 else UINT,
                           target=ELEMENT_ARRAY_BUFFER),
        "mode": 4,
    }
    glob = _rest_globals(skel)
    inverse_bind = np.tile(np.eye(4), (joints, 1, 1))
    inverse_bind[:, :3, 3] = -glob
    ibm = buf.add(np.transpose(inverse_bind, (0, 2, 1)).reshape(joints, 16), "MAT4")  # column-major

    nodes = []
    for j in range(joints):
        node = {"name": skel.names[j], "translation": [float(v) for v in skel.offsets[j]]}
        kids = [c for c, p in enumerate(skel.parents) if p == j]
        if kids:
            node["children"] = kids
        nodes.append(node)
    roots = [j for j in range(joints) if skel.parents[j] < 0]
    nodes.append({"name": "body", "mesh": 0, "skin": 0})
    top = roots[0]
    if len(roots) > 1:  # a skin's joints need one common root: a plain node above the skeleton's roots
        top = len(nodes)
        nodes.append({"name": "skeleton", "children": roots})

    times = np.arange(frames, dtype=np.float64) * clip.dt
    time_acc = buf.add(times.astype(np.float32)[:, None], "SCALAR", bounds=True)
    rot = _continuous(clip.rot)
    pos, scl = np.asarray(clip.pos, np.float64), np.asarray(clip.scl, np.float64)
    tracks = {"translation": (pos, vel), "scale": (scl, None if svl is None else scl * svl)}
    if cubic:
        dq = 0.5 * _qmul(np.concatenate([np.zeros(ang.shape[:-1] + (1,)), ang], axis=-1), rot)
        tracks["rotation"] = (rot[..., [1, 2, 3, 0]], dq[..., [1, 2, 3, 0]])
    else:
        tracks["rotation"] = (rot[..., [1, 2, 3, 0]], None)
    samplers, channels = [], []
    for j in range(joints):
        for path in _PATHS:
            values, tangents = tracks[path]
            width = values.shape[-1]
            out = np.stack([tangents[:, j], values[:, j], tangents[:, j]], axis=1) if cubic else values[:, j]
            out = out.reshape(-1, width)
            if not np.isfinite(out.astype(np.float32)).all():
                raise ValueError(f"joint {skel.names[j]!r}: {path} values or tangents are not finite in float32")
            samplers.append({"input": time_acc, "output": buf.add(out, f"VEC{width}"),
                             "interpolation": "CUBICSPLINE" if cubic else "LINEAR"})
            channels.append({"sampler": len(samplers) - 1, "target": {"node": j, "path": path}})

    doc = {
        "asset": {"version": "2.0", "generator": GENERATOR},
        "scene": 0,
        "scenes": [{"name": name or clip.name or "animgraph", "nodes": [top, joints]}],
        "nodes": nodes,
        "skins": [{"joints": list(range(joints)), "inverseBindMatrices": ibm, "skeleton": top}],
        "meshes": [{"name": "body", "primitives": [primitive]}],
        "animations": [{"name": name or clip.name or "animation", "samplers": samplers, "channels": channels}],
        "accessors": buf.accessors,
        "bufferViews": buf.views,
        "buffers": [{"byteLength": buf.size}],
    }
    return doc, buf.data()


def _path(path):
    """``path`` as a str; ValueError unless it is a str or path-like."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a file name (str or path-like), got {type(path).__name__}")
    return os.fspath(path)


def _glb(doc, data):
    """The bytes of a binary glTF (.glb): header, JSON chunk (space-padded), BIN chunk (zero-padded)."""
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8")
    text += b" " * (-len(text) % 4)
    data += b"\0" * (-len(data) % 4)
    total = 12 + 8 + len(text) + 8 + len(data)
    return (struct.pack("<4sII", GLB_MAGIC, 2, total) + struct.pack("<II", len(text), JSON_CHUNK) + text
            + struct.pack("<II", len(data), BIN_CHUNK) + data)


def save_gltf(path, skel, clip, *, cubic=True, vel=None, ang=None, svl=None):
    """Write ``clip`` (local, metres, seconds) on ``skel`` as glTF 2.0: ``.glb``, or ``.gltf`` and a ``.bin`` beside.

    ``cubic``: CUBICSPLINE keys whose tangents are the local velocities ``vel`` (m/s), ``ang`` (rad/s,
    left-multiplying) and ``svl`` (1/s, d/dt log scale), each (F, J, 3), e.g. from a graph's pose
    output; those not given are central differences of the clip.  ``cubic=False``: LINEAR keys.
    Returns the paths written.
    """
    path = Path(_path(path))
    suffix = path.suffix.lower()
    if suffix not in (".glb", ".gltf"):
        raise ValueError(f"{path}: a glTF file name ends in .glb or .gltf")
    doc, data = gltf_document(skel, clip, cubic=cubic, vel=vel, ang=ang, svl=svl)
    if suffix == ".glb":
        doc["buffers"][0]["byteLength"] = len(data)
        blob = _glb(doc, data)
        atomic_write(path, lambda f: f.write(blob))
        return [path]
    bin_path = path.with_suffix(".bin")
    doc["buffers"][0]["uri"] = urllib.parse.quote(bin_path.name)
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"

    def write_json(tmp):
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)

    def write_bin(tmp):
        with open(tmp, "wb") as f:
            f.write(data)

    write_together([(bin_path, write_bin), (path, write_json)])
    return [path, bin_path]


# ---------------------------------------------------------------- reading


def _kind(value):
    """A short name of a JSON value's type for messages."""
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


class _Reader:
    """A parsed glTF document with typed, range-checked access; each error names ``self.file`` and the element."""

    def __init__(self, file, doc, glb_bin):
        self.file, self.doc, self.glb_bin = file, doc, glb_bin
        self.buffers, self.views = {}, {}

    def error(self, element, message):
        return GLTFError(message, self.file, element)

    def items(self, name):
        """The top-level array ``name`` (empty when absent); each entry must be an object."""
        value = self.doc.get(name, [])
        if not isinstance(value, list):
            raise self.error(name, f"must be an array, found {_kind(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.error(f"{name}[{i}]", f"must be an object, found {_kind(item)}")
        return value

    def field(self, obj, key, where, kind, default=None, required=False):
        """``obj[key]`` checked to be of ``kind`` ('index', 'int', 'number', 'str', 'bool', 'list', 'dict')."""
        if key not in obj:
            if required:
                raise self.error(where, f"has no {key!r}")
            return default
        value = obj[key]
        ok = {"index": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
              "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
              "str": lambda v: isinstance(v, str), "bool": lambda v: isinstance(v, bool),
              "list": lambda v: isinstance(v, list), "dict": lambda v: isinstance(v, dict)}[kind](value)
        if not ok:
            what = {"index": "an index (a whole number >= 0)", "int": "a whole number", "number": "a finite number",
                    "str": "a string", "bool": "true or false", "list": "an array", "dict": "an object"}[kind]
            raise self.error(f"{where}.{key}", f"must be {what}, found {_kind(value)} {_short(value)}")
        return value

    def ref(self, obj, key, where, array, required=True):
        """The index ``obj[key]`` into top-level ``array``, checked in range (None when absent and not required)."""
        i = self.field(obj, key, where, "index", required=required)
        if i is not None and i >= len(self.items(array)):
            raise self.error(f"{where}.{key}", f"{array}[{i}] does not exist ({len(self.items(array))} {array})")
        return i

    def numbers(self, obj, key, where, count, default):
        """``obj[key]`` as a float64 array of ``count`` finite numbers, or ``default``."""
        value = self.field(obj, key, where, "list", default)
        if value is default:
            return np.array(default, np.float64)
        if len(value) != count or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                          and math.isfinite(v) for v in value):
            raise self.error(f"{where}.{key}", f"must be {count} finite numbers, found {_short(value)}")
        return np.array(value, np.float64)

    def buffer(self, i):
        """The bytes of ``buffers[i]`` (GLB chunk, data: URI or a file beside the glTF), at least byteLength long."""
        if i in self.buffers:
            return self.buffers[i]
        where = f"buffers[{i}]"
        spec = self.items("buffers")[i]
        length = self.field(spec, "byteLength", where, "index", required=True)
        uri = self.field(spec, "uri", where, "str")
        if uri is None:
            if i != 0 or self.glb_bin is None:
                raise self.error(where, "has no uri and the file has no GLB binary chunk")
            data = self.glb_bin
        elif uri.startswith("data:"):
            head, comma, body = uri.partition(",")
            if not comma or not head.endswith(";base64"):
                raise self.error(f"{where}.uri", "a data: URI must be base64 (data:...;base64,...)")
            try:
                data = base64.b64decode(body, validate=True)
            except (binascii.Error, ValueError):
                raise self.error(f"{where}.uri", "the data: URI is not valid base64") from None
        else:
            name = urllib.parse.unquote(uri)
            if urllib.parse.urlsplit(uri).scheme or os.path.isabs(name):
                raise self.error(f"{where}.uri", f"{_short(uri)}: only files beside the glTF file are read")
            full = os.path.join(os.path.dirname(os.path.abspath(self.file)), name)
            try:
                with open(full, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise self.error(f"{where}.uri", f"cannot read {_short(name)}: {e.strerror or e}") from None
        if len(data) < length:
            raise self.error(where, f"holds {len(data)} bytes but its byteLength is {length} (truncated?)")
        self.buffers[i] = data
        return data

    def view(self, i):
        """(bytes of ``bufferViews[i]``, its byteStride or None)."""
        if i in self.views:
            return self.views[i]
        where = f"bufferViews[{i}]"
        spec = self.items("bufferViews")[i]
        data = self.buffer(self.ref(spec, "buffer", where, "buffers"))
        offset = self.field(spec, "byteOffset", where, "index", 0)
        length = self.field(spec, "byteLength", where, "index", required=True)
        stride = self.field(spec, "byteStride", where, "index")
        if stride is not None and not (4 <= stride <= 252 and stride % 4 == 0):
            raise self.error(f"{where}.byteStride", f"must be a multiple of 4 from 4 to 252, found {stride}")
        if offset + length > len(data):
            raise self.error(where, f"bytes {offset} to {offset + length} lie past the end of its buffer "
                                    f"({len(data)} bytes)")
        self.views[i] = (memoryview(data)[offset:offset + length], stride)
        return self.views[i]

    def accessor(self, i, kinds, components=(FLOAT,), where=None):
        """``accessors[i]`` as a float64 array (count, width), normalized integers scaled, all finite."""
        where = f"accessors[{i}]" + (f" ({where})" if where else "")
        spec = self.items("accessors")[i]
        component = self.field(spec, "componentType", where, "int", required=True)
        kind = self.field(spec, "type", where, "str", required=True)
        count = self.field(spec, "count", where, "index", required=True)
        normalized = self.field(spec, "normalized", where, "bool", False)
        if kind not in kinds:
            raise self.error(where, f"type {_short(kind)}: expected {' or '.join(kinds)}")
        allowed = [c for c in components if c == FLOAT or normalized]
        if component not in allowed:
            names = {FLOAT: "float", BYTE: "normalized byte", UBYTE: "normalized unsigned byte",
                     SHORT: "normalized short", USHORT: "normalized unsigned short", UINT: "unsigned int"}
            raise self.error(where, f"componentType {component}{'' if normalized else ' (not normalized)'}: "
                                    f"expected {' or '.join(names[c] for c in components)}")
        if count < 1:
            raise self.error(where, "count must be at least 1")
        if "sparse" in spec:
            raise self.error(f"{where}.sparse", "sparse accessors are not supported here")
        width = _WIDTH[kind]
        dtype = np.dtype(_COMPONENTS[component])
        size = dtype.itemsize * width
        view_index = self.ref(spec, "bufferView", where, "bufferViews", required=False)
        if view_index is None:
            if count > MAX_FRAMES * 3:
                raise self.error(where, f"count {count} without a bufferView is too many zeros")
            values = np.zeros((count, width))
        else:
            data, stride = self.view(view_index)
            offset = self.field(spec, "byteOffset", where, "index", 0)
            stride = stride or size
            if stride < size:
                raise self.error(where, f"its bufferView's byteStride {stride} is less than one element ({size})")
            end = offset + stride * (count - 1) + size
            if end > len(data):
                raise self.error(where, f"{count} elements from byte {offset} need {end} bytes; its "
                                        f"bufferViews[{view_index}] has {len(data)}")
            raw = np.ndarray((count, width), dtype, buffer=data, offset=offset, strides=(stride, dtype.itemsize))
            values = raw.astype(np.float64)
        if normalized and component != FLOAT:
            values = np.maximum(values / _NORMALIZE[component], -1.0)
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            raise self.error(where, f"element {int(np.argmax(bad))} is not finite")
        return values


def _short(value, limit=40):
    """``repr`` of at most ``limit`` characters of ``value`` (for one-line messages)."""
    text = repr(value)
    return text[:limit] + ("..." if len(text) > limit else "")


def _parse(file):
    """(JSON document dict, GLB binary chunk or None) of a .glb or .gltf file; GLTFError naming the problem."""
    raw = read_bytes(file, GLTFError, "glTF")
    glb_bin = None
    if raw[:4] == GLB_MAGIC:
        if len(raw) < 20:
            raise GLTFError("a GLB file shorter than its 12-byte header and first chunk header (truncated?)", file,
                            "GLB header")
        _, version, length = struct.unpack_from("<4sII", raw)
        if version != 2:
            raise GLTFError(f"GLB version {version}: only version 2 is read", file, "GLB header")
        if length > len(raw):
            raise GLTFError(f"the header says {length} bytes, the file has {len(raw)} (truncated?)", file, "GLB header")
        chunks, at = [], 12
        while at + 8 <= length:
            size, kind = struct.unpack_from("<II", raw, at)
            if at + 8 + size > length:
                raise GLTFError(f"chunk {len(chunks)} of {size} bytes runs past the end of the file (truncated?)",
                                file, "GLB chunks")
            chunks.append((kind, raw[at + 8:at + 8 + size]))
            at += 8 + size
        if not chunks or chunks[0][0] != JSON_CHUNK:
            raise GLTFError("the first chunk must be the JSON chunk", file, "GLB chunks")
        text = chunks[0][1]
        if len(chunks) > 1 and chunks[1][0] == BIN_CHUNK:
            glb_bin = chunks[1][1]
    else:
        text = raw
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:]
    try:
        doc = json.loads(text.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as e:
        raise GLTFError(f"not a glTF file: not UTF-8 JSON (byte {e.start})", file) from None
    except RecursionError:
        raise GLTFError("not a glTF file: JSON nested too deeply", file) from None
    except ValueError as e:
        raise GLTFError(f"not a glTF file: bad JSON ({str(e)[:80]})", file) from None
    if not isinstance(doc, dict):
        raise GLTFError(f"not a glTF file: the JSON is {_kind(doc)}, not an object", file)
    return doc, glb_bin


def _check_asset(r):
    """The ``asset`` version is 2.x and every required extension is one load_gltf can ignore."""
    asset = r.field(r.doc, "asset", "glTF", "dict", required=True)
    version = r.field(asset, "version", "asset", "str", required=True)
    if version.split(".")[0] != "2":
        raise r.error("asset.version", f"{_short(version)}: only glTF 2.x is read")
    required = r.field(r.doc, "extensionsRequired", "glTF", "list", [])
    for k, ext in enumerate(required):
        if not isinstance(ext, str):
            raise r.error(f"extensionsRequired[{k}]", f"must be a string, found {_kind(ext)}")
        if not ext.startswith(_HARMLESS):
            raise r.error(f"extensionsRequired[{k}]", f"extension {_short(ext)} is required but not supported")


def _node_tree(r):
    """(parent of each node or -1, preorder rank of each node); GLTFError on a child listed twice or a cycle."""
    nodes = r.items("nodes")
    parent = [-1] * len(nodes)
    for i, node in enumerate(nodes):
        for k, child in enumerate(r.field(node, "children", f"nodes[{i}]", "list", [])):
            where = f"nodes[{i}].children[{k}]"
            if not (isinstance(child, int) and not isinstance(child, bool) and 0 <= child < len(nodes)):
                raise r.error(where, f"must be a node index below {len(nodes)}, found {_short(child)}")
            if child == i or parent[child] != -1:
                raise r.error(where, f"node {child} is listed as a child twice (or of itself)")
            parent[child] = i
    rank, order = [-1] * len(nodes), 0
    for root in (i for i in range(len(nodes)) if parent[i] == -1):
        stack = [root]
        while stack:
            i = stack.pop()
            rank[i], order = order, order + 1
            stack += reversed(r.doc["nodes"][i].get("children", []))
    if -1 in rank:
        raise r.error(f"nodes[{rank.index(-1)}]", "is in a cycle of children")
    return parent, rank


def _node_trs(r, i):
    """(translation, rotation w-first, scale) of ``nodes[i]``'s own transform (a matrix decomposed)."""
    node, where = r.doc["nodes"][i], f"nodes[{i}]"
    if "matrix" in node:
        m = r.numbers(node, "matrix", where, 16, None).reshape(4, 4).T  # column-major in the file
        if not np.allclose(m[3], [0.0, 0.0, 0.0, 1.0]):
            raise r.error(f"{where}.matrix", "is not affine (its last row is not 0 0 0 1)")
        return _matrix_to_trs(m)
    t = r.numbers(node, "translation", where, 3, [0.0, 0.0, 0.0])
    q = r.numbers(node, "rotation", where, 4, [0.0, 0.0, 0.0, 1.0])[[3, 0, 1, 2]]
    s = r.numbers(node, "scale", where, 3, [1.0, 1.0, 1.0])
    norm = np.linalg.norm(q)
    if not norm > 1e-6:
        raise r.error(f"{where}.rotation", "is a zero quaternion")
    return t, q / norm, s


def _compose(a, b):
    """TRS ``a`` then ``b`` as one TRS the way animgraph composes frames (exact at uniform scale)."""
    return a[0] + _qrot(a[1], a[2] * b[0]), _qmul(a[1], b[1]), a[2] * b[2]


def _skeleton(r):
    """(joint node indices in parent-first order, parents, names, rest TRS per joint, static TRS above each)."""
    skins = r.items("skins")
    if not skins:
        raise r.error("skins", "the file has no skin: animgraph reads a skinned skeleton (a skin lists its joints)")
    skin = skins[0]
    joints = r.field(skin, "joints", "skins[0]", "list", required=True)
    nodes = r.items("nodes")
    if not joints:
        raise r.error("skins[0].joints", "is empty")
    for k, j in enumerate(joints):
        if not (isinstance(j, int) and not isinstance(j, bool) and 0 <= j < len(nodes)):
            raise r.error(f"skins[0].joints[{k}]", f"must be a node index below {len(nodes)}, found {_short(j)}")
    if len(set(joints)) != len(joints):
        raise r.error("skins[0].joints", "lists a node twice")
    ibm = r.ref(skin, "inverseBindMatrices", "skins[0]", "accessors", required=False)
    if ibm is not None:
        mats = r.accessor(ibm, ("MAT4",), where="skins[0].inverseBindMatrices")
        if len(mats) < len(joints):
            raise r.error("skins[0].inverseBindMatrices", f"has {len(mats)} matrices for {len(joints)} joints")
    parent, rank = _node_tree(r)
    order = sorted(joints, key=lambda n: rank[n])
    index = {n: k for k, n in enumerate(order)}
    parents, above = [], []
    identity = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), np.ones(3))
    for n in order:
        chain, p = [], parent[n]
        while p != -1 and p not in index:
            chain.append(p)
            p = parent[p]
        parents.append(index[p] if p != -1 else -1)
        static = identity
        for q in reversed(chain):
            static = _compose(static, _node_trs(r, q))
        above.append(static)
    names, seen = [], set()
    for n in order:
        name = nodes[n].get("name")
        base = name if isinstance(name, str) and name else f"node{n}"
        name, k = base, 2
        while name in seen:
            name, k = f"{base}_{k}", k + 1
        seen.add(name)
        names.append(name)
    return order, parents, names, [_node_trs(r, n) for n in order], above


def _pick_animation(r, joint_nodes, animation):
    """Index of the animation to read: ``animation`` (index or name), or the first with a channel on a joint."""
    animations = r.items("animations")
    if isinstance(animation, int) and not isinstance(animation, bool):
        if not 0 <= animation < len(animations):
            raise r.error("animations", f"no animation {animation} (the file has {len(animations)})")
        return animation
    if isinstance(animation, str):
        names = [a.get("name") for a in animations]
        if animation not in names:
            raise r.error("animations", f"no animation named {animation!r} (names: {names})")
        return names.index(animation)
    if animation is not None:
        raise ValueError(f"animation must be an index, a name or None, got {animation!r}")
    for a, anim in enumerate(animations):
        for channel in anim.get("channels", []) if isinstance(anim.get("channels"), list) else []:
            target = channel.get("target") if isinstance(channel, dict) else None
            node = target.get("node") if isinstance(target, dict) else None
            if isinstance(node, int) and node in joint_nodes and target.get("path") in _PATHS:
                return a
    raise r.error("animations", "no animation has a translation, rotation or scale channel on the skin's joints")


def _channels(r, a, joint_nodes):
    """{(joint node, path): (times (K,), values (K, C) or (K, 3, C) for CUBICSPLINE, interpolation)}."""
    anim, where = r.doc["animations"][a], f"animations[{a}]"
    samplers = r.field(anim, "samplers", where, "list", required=True)
    channels = r.field(anim, "channels", where, "list", required=True)
    out = {}
    for c, channel in enumerate(channels):
        cw = f"{where}.channels[{c}]"
        if not isinstance(channel, dict):
            raise r.error(cw, f"must be an object, found {_kind(channel)}")
        target = r.field(channel, "target", cw, "dict", required=True)
        node = r.field(target, "node", f"{cw}.target", "index")
        path = r.field(target, "path", f"{cw}.target", "str", required=True)
        if node not in joint_nodes or path not in _PATHS:
            continue
        if (node, path) in out:
            raise r.error(cw, f"a second channel on node {node}'s {path}")
        s = r.field(channel, "sampler", cw, "index", required=True)
        if s >= len(samplers) or not isinstance(samplers[s], dict):
            raise r.error(f"{cw}.sampler", f"{where}.samplers[{s}] does not exist or is not an object")
        sampler, sw = samplers[s], f"{where}.samplers[{s}]"
        interp = r.field(sampler, "interpolation", sw, "str", "LINEAR")
        if interp not in ("LINEAR", "STEP", "CUBICSPLINE"):
            raise r.error(f"{sw}.interpolation", f"{_short(interp)}: expected LINEAR, STEP or CUBICSPLINE")
        times = r.accessor(r.ref(sampler, "input", sw, "accessors"), ("SCALAR",), where=f"{sw}.input")[:, 0]
        if times[0] < 0.0 or (np.diff(times) <= 0.0).any():
            raise r.error(f"{sw}.input", "key times must be >= 0 and strictly increasing")
        width = 4 if path == "rotation" else 3
        comps = (FLOAT, BYTE, UBYTE, SHORT, USHORT) if path == "rotation" else (FLOAT,)
        values = r.accessor(r.ref(sampler, "output", sw, "accessors"), (f"VEC{width}",), comps, f"{sw}.output")
        per_key = 3 if interp == "CUBICSPLINE" else 1
        if len(values) != per_key * len(times):
            raise r.error(f"{sw}.output", f"{len(values)} values for {len(times)} {interp} keys (expected "
                                          f"{per_key * len(times)})")
        if interp == "CUBICSPLINE":
            values = values.reshape(len(times), 3, width)
        if path == "rotation":
            keys = values[:, 1] if interp == "CUBICSPLINE" else values
            norm = np.linalg.norm(keys, axis=-1)
            if (norm < 1e-6).any():
                raise r.error(f"{sw}.output", f"rotation key {int(np.argmax(norm < 1e-6))} is a zero quaternion")
            values = values[..., [3, 0, 1, 2]]  # (x, y, z, w) -> (w, x, y, z)
        out[(node, path)] = (times, values, interp)
    return out


def _frame_time(tracks):
    """One frame time (s) for all channels: the median key spacing of the one with the most keys, whole-rate."""
    longest = max((t for t, _, _ in tracks.values()), key=len)
    if len(longest) < 2:
        return 1.0 / 30.0
    dt = float(np.median(np.diff(longest)))
    fps = round(1.0 / dt)
    if fps > 0 and abs(1.0 / dt - fps) < 1e-3 * fps:
        dt = 1.0 / fps
    return dt


def _sample(times, values, interp, grid, dt, rotation):
    """Values (N, C) of one sampler at ``grid`` times (s): held outside its keys, keys on the grid exact."""
    if len(times) == 1:
        v = values[0, 1] if interp == "CUBICSPLINE" else values[0]
        return np.repeat(v[None], len(grid), axis=0)
    i = np.clip(np.searchsorted(times, grid, side="right") - 1, 0, len(times) - 2)
    span = times[i + 1] - times[i]
    s = np.clip((grid - times[i]) / span, 0.0, 1.0)
    tol = 1e-3 * dt
    s = np.where(np.abs(grid - times[i]) <= tol, 0.0, np.where(np.abs(grid - times[i + 1]) <= tol, 1.0, s))[:, None]
    if interp == "CUBICSPLINE":
        v0, b0, v1, a1 = values[i, 1], values[i, 2], values[i + 1, 1], values[i + 1, 0]
        s2, s3 = s * s, s * s * s
        h = span[:, None]
        out = ((2 * s3 - 3 * s2 + 1) * v0 + h * (s3 - 2 * s2 + s) * b0 + (-2 * s3 + 3 * s2) * v1
               + h * (s3 - s2) * a1)
        if rotation:
            norm = np.linalg.norm(out, axis=-1, keepdims=True)
            out = np.where(norm > 1e-9, out / np.where(norm > 1e-9, norm, 1.0), v0 / np.linalg.norm(v0, axis=-1,
                                                                                                   keepdims=True))
        return out
    v0, v1 = values[i], values[i + 1]
    if interp == "STEP":
        return np.where(s >= 1.0, v1, v0)
    if not rotation:
        return v0 + s * (v1 - v0)
    v0 = v0 / np.linalg.norm(v0, axis=-1, keepdims=True)
    v1 = v1 / np.linalg.norm(v1, axis=-1, keepdims=True)
    d = np.sum(v0 * v1, axis=-1, keepdims=True)
    v1, d = np.where(d < 0.0, -v1, v1), np.abs(d)
    angle = np.arccos(np.clip(d, -1.0, 1.0))
    sin = np.sin(angle)
    near = sin < 1e-6
    safe = np.where(near, 1.0, sin)
    w0 = np.where(near, 1.0 - s, np.sin((1.0 - s) * angle) / safe)
    w1 = np.where(near, s, np.sin(s * angle) / safe)
    out = w0 * v0 + w1 * v1
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def _resample(tracks, order, rest, above, grid, dt, pos, rot, scl):
    """Fill ``pos``/``rot``/``scl`` (F, J, ...) with each joint's channels at ``grid`` (rest where it has none)."""
    for k, n in enumerate(order):
        own = rest[k]
        t = tracks.get((n, "translation"))
        q = tracks.get((n, "rotation"))
        s = tracks.get((n, "scale"))
        local = (own[0][None] if t is None else _sample(t[0], t[1], t[2], grid, dt, False),
                 own[1][None] if q is None else _sample(q[0], q[1], q[2], grid, dt, True),
                 own[2][None] if s is None else _sample(s[0], s[1], s[2], grid, dt, False))
        pos[:, k], rot[:, k], scl[:, k] = _compose(tuple(x[None] for x in above[k]), local)


def load_gltf(path, animation=None):
    """(Skeleton, Clip) of a glTF 2.0 file's first skin and one animation (local, metres, seconds, w-first).

    ``animation``: an index or a name; by default the first animation with a channel on the
    skin's joints.  Every problem in the file is one ``GLTFError`` naming the file and the element.
    """
    file = _path(path)
    r = _Reader(file, *_parse(file))
    _check_asset(r)
    order, parents, names, rest, above = _skeleton(r)
    joint_nodes = {n: k for k, n in enumerate(order)}
    a = _pick_animation(r, joint_nodes, animation)
    tracks = _channels(r, a, joint_nodes)
    if not tracks:
        raise r.error(f"animations[{a}]", "has no translation, rotation or scale channel on the skin's joints")
    dt = _frame_time(tracks)
    start = min(t[0] for t, _, _ in tracks.values())
    stop = max(t[-1] for t, _, _ in tracks.values())
    frames = (stop - start) / dt + 1.0
    if not frames <= MAX_FRAMES or frames * len(order) > MAX_SAMPLES:
        raise r.error(f"animations[{a}]", f"{stop - start:g} s at {1 / dt:g} frames per second is {frames:.0f} frames "
                                          f"for {len(order)} joints (too many)")
    frames = int(round(frames))
    grid = start + np.arange(frames) * dt
    joints = len(order)
    pos = np.empty((frames, joints, 3))
    rot = np.empty((frames, joints, 4))
    scl = np.empty((frames, joints, 3))
    with np.errstate(all="ignore"):  # overflow shows as non-finite values, refused below
        _resample(tracks, order, rest, above, grid, dt, pos, rot, scl)
    with np.errstate(over="ignore", invalid="ignore"):
        for name, values in (("translation", pos), ("rotation", rot), ("scale", scl)):
            bad = ~np.isfinite(values.astype(np.float32)).all(axis=(1, 2))
            if bad.any():
                raise r.error(f"animations[{a}]", f"{name} is not finite in float32 at frame {int(np.argmax(bad))}")
    offsets = np.array([_compose(above[k], rest[k])[0] for k in range(joints)])
    if not np.isfinite(offsets.astype(np.float32)).all():
        raise r.error("nodes", "a joint's rest translation is not finite in float32")
    skel = Skeleton(names, parents, offsets)
    anim_name = r.doc["animations"][a].get("name")
    name = anim_name if isinstance(anim_name, str) and anim_name else Path(file).stem
    return skel, Clip(skel, pos, rot, scl, dt=dt, name=name)
