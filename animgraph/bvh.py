"""BVH motion files: our own reader and writer (numpy, no BVH dependency).

Reading: any channel order per joint, position channels on any joint, End Sites
(kept as ``skeleton.end_sites`` {joint index: offset}, not as joints), CRLF/LF/CR
line ends mixed, ``scale`` multiplying positions and offsets.  A joint's Euler
channels compose in the file's order, ``R = R_c1 R_c2 R_c3`` (the BVH convention:
the first listed channel is the outermost rotation).  Position channels give the
joint's local position (they replace the OFFSET, as Blender reads them); joints
without them keep their offset.  The MOTION block is parsed in one numpy call.

Writing: ZYX Euler on every joint, positions on the root and on any joint whose
local position moves away from its offset; written to a temporary file in the
same directory and renamed, so a failed write leaves nothing behind.
"""

from __future__ import annotations

import math
import os

import numpy as np
from numba import njit

from .errors import BVHError
from .fileio import atomic_write_text
from .maths import from_scaled_angle_axis, qmul, qrot, store4
from .pose import Clip, Skeleton

_AXES = {"x": 0, "y": 1, "z": 2}
_UNIT_AXES = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


# ---------------------------------------------------------------- Euler kernels


@njit(cache=True)
def _axis_quat(axis, angle):
    """Quaternion of ``angle`` radians about coordinate axis 0, 1 or 2."""
    v = (angle if axis == 0 else 0.0, angle if axis == 1 else 0.0, angle if axis == 2 else 0.0)
    return from_scaled_angle_axis(v)


@njit(cache=True)
def _euler_to_quat(angles, axes, counts, out):
    """``out`` (F,J,4) from Euler ``angles`` (F,J,3) rad applied in order ``axes`` (J,3), ``counts`` (J,) per joint."""
    for f in range(angles.shape[0]):
        for j in range(angles.shape[1]):
            q = (1.0, 0.0, 0.0, 0.0)
            for k in range(counts[j]):
                q = qmul(q, _axis_quat(axes[j, k], float(angles[f, j, k])))
            store4(out[f], j, q)


@njit(cache=True)
def _quat_to_euler_zyx(rot, out):
    """Euler angles (F,J,3) rad, order Z Y X (``R = Rz Ry Rx``), of unit quaternions ``rot`` (F,J,4)."""
    for f in range(rot.shape[0]):
        for j in range(rot.shape[1]):
            r = rot[f, j]
            q = (float(r[0]), float(r[1]), float(r[2]), float(r[3]))
            n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
            q = (q[0] / n, q[1] / n, q[2] / n, q[3] / n)
            c0 = qrot(q, (1.0, 0.0, 0.0))  # matrix column 0: (R00, R10, R20)
            c1 = qrot(q, (0.0, 1.0, 0.0))
            c2 = qrot(q, (0.0, 0.0, 1.0))
            cy = math.sqrt(c0[0] * c0[0] + c0[1] * c0[1])
            y = math.atan2(-c0[2], cy)
            if cy > 1e-9:
                z = math.atan2(c0[1], c0[0])
                x = math.atan2(c1[2], c2[2])
            else:
                # Gimbal lock (Y = +-90 deg): put the whole twist into X.
                z = 0.0
                x = math.atan2(-c2[1], c1[1])
            out[f, j, 0] = z
            out[f, j, 1] = y
            out[f, j, 2] = x


# ---------------------------------------------------------------- reading


class _Tokens:
    """Whitespace tokens of the HIERARCHY block with their 1-based line numbers."""

    def __init__(self, lines, file, start, stop):
        self.items = [(tok, n + 1) for n in range(start, stop) for tok in lines[n].split()]
        self.i = 0
        self.file = file
        self.last_line = stop

    def next(self, expected):
        if self.i >= len(self.items):
            raise BVHError(f"file ends early: expected {expected}", self.file, self.last_line)
        tok = self.items[self.i]
        self.i += 1
        return tok

    def number(self, expected):
        tok, line = self.next(expected)
        try:
            value = float(tok)
        except ValueError:
            raise BVHError(f"expected {expected}, found {tok!r}", self.file, line) from None
        if not math.isfinite(value):
            raise BVHError(f"expected {expected}, found {tok!r}", self.file, line)
        return value

    def expect(self, word):
        tok, line = self.next(repr(word))
        if tok != word:
            raise BVHError(f"expected {word!r}, found {tok!r}", self.file, line)
        return line


def _parse_joint(toks, name, parent, joints):
    """Parse one ROOT/JOINT body after its name; appends dicts to ``joints``."""
    index = len(joints)
    joint = {"name": name, "parent": parent, "offset": None, "channels": [], "end": None}
    joints.append(joint)
    toks.expect("{")
    while True:
        tok, line = toks.next("OFFSET, CHANNELS, JOINT, End Site or '}'")
        key = tok.upper()
        if key == "OFFSET":
            joint["offset"] = [toks.number("an OFFSET number") for _ in range(3)]
        elif key == "CHANNELS":
            count_tok, count_line = toks.next("a channel count")
            if not count_tok.isdigit():
                raise BVHError(f"expected a channel count, found {count_tok!r}", toks.file, count_line)
            for _ in range(int(count_tok)):
                ch, ch_line = toks.next(f"{count_tok} channel names")
                low = ch.lower()
                if len(low) != 9 or low[0] not in _AXES or low[1:] not in ("position", "rotation"):
                    raise BVHError(
                        f"unknown channel name {ch!r} (expected X/Y/Z followed by position or rotation)",
                        toks.file,
                        ch_line,
                    )
                if low[1:] == "rotation" and sum(k == "rotation" for k, _ in joint["channels"]) == 3:
                    raise BVHError(f"joint {name!r} has more than 3 rotation channels", toks.file, ch_line)
                joint["channels"].append((low[1:], _AXES[low[0]]))
        elif key == "JOINT":
            child, _ = toks.next("a joint name")
            _parse_joint(toks, child, index, joints)
        elif key == "END":
            toks.next("'Site'")
            toks.expect("{")
            toks.expect("OFFSET")
            joint["end"] = [toks.number("an End Site OFFSET number") for _ in range(3)]
            toks.expect("}")
        elif tok == "}":
            if joint["offset"] is None:
                raise BVHError(f"joint {name!r} has no OFFSET", toks.file, line)
            return
        else:
            raise BVHError(
                f"expected OFFSET, CHANNELS, JOINT, End Site or '}}', found {tok!r}", toks.file, line
            )


def _read_lines(path):
    """File lines (line ends normalised) as bytes, or a BVHError for missing files and directories."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise BVHError("no such file", path) from None
    except IsADirectoryError:
        raise BVHError("is a directory, not a BVH file", path) from None
    except PermissionError:
        raise BVHError("permission denied", path) from None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # UTF-8 byte-order mark
    if not raw.strip():
        raise BVHError("empty file: expected HIERARCHY", path, 1)
    lines = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    if not lines[-1]:
        lines.pop()  # the final line end does not start another line
    return lines


def _header_value(lines, n, key, file):
    """Value after ``key:`` on the next non-blank line at or after index ``n``; returns (text, next index)."""
    while n < len(lines) and not lines[n].strip():
        n += 1
    if n >= len(lines):
        raise BVHError(f"file ends early: expected '{key}:'", file, len(lines))
    text = lines[n].decode("latin-1").strip()
    head, _, value = text.partition(":")
    if " ".join(head.split()).lower() != key.lower() or not value.strip():
        raise BVHError(f"expected '{key}: <value>', found {text[:40]!r}", file, n + 1)
    return value.strip(), n + 1


def _motion(lines, start, frames, channels, file):
    """Motion values (frames, channels) from ``lines[start:]``, parsed in one numpy call."""
    body_lines = lines[start:]
    while body_lines and not body_lines[-1].strip():
        body_lines.pop()
    body = b"\n".join(body_lines)
    # Tokens per line, vectorised over bytes: a token starts at non-space after space.
    b = np.frombuffer(body, dtype=np.uint8)
    space = (b == 32) | (b == 9) | (b == 10) | (b == 11) | (b == 12)
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    line_of = np.searchsorted(np.flatnonzero(b == 10), starts)  # newlines before each token
    counts = np.bincount(line_of, minlength=len(body_lines))
    if len(body_lines) < frames:
        raise BVHError(
            f"file ends early: 'Frames: {frames}' but only {len(body_lines)} motion lines",
            file,
            start + len(body_lines),
        )
    bad = np.flatnonzero(counts != channels)
    if len(bad):
        n = int(bad[0])
        what = "a blank line" if counts[n] == 0 else f"{counts[n]} values"
        hint = " (truncated file?)" if n == len(body_lines) - 1 else ""
        raise BVHError(
            f"expected {channels} values on motion line {n + 1}, found {what}{hint}", file, start + n + 1
        )
    if len(body_lines) > frames:
        raise BVHError(
            f"'Frames: {frames}' but the file has {len(body_lines)} motion lines", file, start + frames + 1
        )
    tokens = body.split()
    try:
        values = np.array(tokens, dtype=np.float64)
    except ValueError:
        values = None
    if values is None or not np.isfinite(values).all():
        # Error path only: find the first bad token and its line.
        for k, tok in enumerate(tokens):
            try:
                ok = math.isfinite(float(tok))
            except ValueError:
                ok = False
            if not ok:
                n = k // channels
                raise BVHError(
                    f"expected a number on motion line {n + 1}, found {tok.decode('latin-1')!r}",
                    file,
                    start + n + 1,
                )
    return values.reshape(frames, channels)


def load_bvh(path, scale=1.0):
    """(Skeleton, Clip) from a BVH file; positions and offsets times ``scale`` (file units -> yours), local space."""
    file = os.fspath(path)
    lines = _read_lines(file)
    n = 0
    while n < len(lines) and not lines[n].strip():
        n += 1
    if lines[n].strip().upper() != b"HIERARCHY":
        raise BVHError(f"expected HIERARCHY, found {lines[n].decode('latin-1').strip()[:40]!r}", file, n + 1)
    motion = next((k for k in range(n + 1, len(lines)) if lines[k].strip().upper() == b"MOTION"), None)
    stop = len(lines) if motion is None else motion
    text = [ln.decode("utf-8", errors="replace") for ln in lines[:stop]]
    toks = _Tokens(text, file, n + 1, stop)
    tok, line = toks.next("ROOT")
    if tok.upper() != "ROOT":
        raise BVHError(f"expected ROOT, found {tok!r}", file, line)
    name, _ = toks.next("the root joint name")
    joints = []
    _parse_joint(toks, name, -1, joints)
    if toks.i < len(toks.items):
        tok, line = toks.items[toks.i]
        raise BVHError(f"expected MOTION after the hierarchy, found {tok!r}", file, line)
    if motion is None:
        raise BVHError("file ends early: expected MOTION", file, len(lines))
    frames_text, k = _header_value(lines, motion + 1, "Frames", file)
    frames_line = k
    if not frames_text.isdigit():
        raise BVHError(f"expected a frame count after 'Frames:', found {frames_text!r}", file, k)
    dt_text, k = _header_value(lines, k, "Frame Time", file)
    try:
        dt = float(dt_text)
    except ValueError:
        dt = float("nan")
    if not (math.isfinite(dt) and dt > 0):
        raise BVHError(f"expected a positive frame time, found {dt_text!r}", file, k)
    # Files print dt with few digits (.0083333): snap to the whole frame rate it means.
    fps = round(1.0 / dt)
    if fps > 0 and abs(1.0 / dt - fps) < 1e-2:
        dt = 1.0 / fps

    frames = int(frames_text)
    if frames < 1:
        raise BVHError("the file has no frames ('Frames: 0')", file, frames_line)
    channels = sum(len(j["channels"]) for j in joints)
    values = _motion(lines, k, frames, channels, file)
    return _build(joints, values, dt, scale, os.path.splitext(os.path.basename(file))[0])


def _build(joints, values, dt, scale, name):
    """Skeleton and Clip from parsed joints and the (F, channels) motion values."""
    j_count = len(joints)
    frames = values.shape[0]
    offsets = np.array([j["offset"] for j in joints], np.float64) * scale
    pos = np.repeat(offsets[None], frames, axis=0)
    angles = np.zeros((frames, j_count, 3))
    axes = np.zeros((j_count, 3), np.int64)
    counts = np.zeros(j_count, np.int64)
    col = 0
    for i, joint in enumerate(joints):
        for kind, axis in joint["channels"]:
            if kind == "position":
                pos[:, i, axis] = values[:, col] * scale
            else:
                axes[i, counts[i]] = axis
                angles[:, i, counts[i]] = np.radians(values[:, col])
                counts[i] += 1
            col += 1
    rot = np.empty((frames, j_count, 4))
    _euler_to_quat(angles, axes, counts, rot)
    ends = {i: np.asarray(j["end"], np.float32) * np.float32(scale) for i, j in enumerate(joints) if j["end"] is not None}
    skel = Skeleton([j["name"] for j in joints], [j["parent"] for j in joints], offsets, end_sites=ends)
    clip = Clip(skel, pos, rot, dt=dt, name=name)
    return skel, clip


# ---------------------------------------------------------------- writing


def _fmt(v):
    return "%.9g" % v


def save_bvh(path, skel, clip, scale=1.0):
    """Write ``clip`` (local space) as BVH with ZYX Euler channels; positions times ``scale`` (yours -> file units)."""
    path = os.fspath(path)
    j_count = len(skel)
    offsets = np.asarray(skel.offsets, np.float64)
    pos = np.asarray(clip.pos, np.float64)
    moving = np.abs(pos - offsets[None]).max(axis=0).max(axis=1) > 1e-6 * (1.0 + np.abs(offsets).max(axis=1))
    moving[0] = True  # the root always carries positions
    euler = np.empty((clip.frames, j_count, 3))
    _quat_to_euler_zyx(np.ascontiguousarray(clip.rot, np.float64), euler)
    euler = np.degrees(euler)
    end_sites = skel.end_sites
    children = [[] for _ in range(j_count)]
    for i, p in enumerate(skel.parents):
        if p >= 0:
            children[p].append(i)

    out = ["HIERARCHY"]
    columns = []

    def joint(i, depth):
        pad = "\t" * depth
        out.append(f"{pad}{'ROOT' if skel.parents[i] < 0 else 'JOINT'} {skel.names[i]}")
        out.append(f"{pad}{{")
        out.append(f"{pad}\tOFFSET " + " ".join(_fmt(v) for v in offsets[i] * scale))
        if moving[i]:
            out.append(f"{pad}\tCHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation")
            columns.append(pos[:, i] * scale)
        else:
            out.append(f"{pad}\tCHANNELS 3 Zrotation Yrotation Xrotation")
        columns.append(euler[:, i])
        for c in children[i]:
            joint(c, depth + 1)
        if not children[i]:
            end = end_sites.get(i)
            if end is None:
                # Blender wants a bone length: continue the parent-to-joint direction.
                end = offsets[i] * 0.5 if np.any(offsets[i]) else np.array([0.0, 0.1 / max(scale, 1e-9), 0.0])
            out.append(f"{pad}\tEnd Site")
            out.append(f"{pad}\t{{")
            out.append(f"{pad}\t\tOFFSET " + " ".join(_fmt(v) for v in np.asarray(end, np.float64) * scale))
            out.append(f"{pad}\t}}")
        out.append(f"{pad}}}")

    for r in range(j_count):
        if skel.parents[r] < 0:
            joint(r, 0)
    out += ["MOTION", f"Frames: {clip.frames}", f"Frame Time: {clip.dt:.9g}"]
    data = np.concatenate(columns, axis=1)
    row = " ".join(["%.9g"] * data.shape[1])
    out += [row % tuple(r) for r in data]
    text = "\n".join(out) + "\n"

    atomic_write_text(path, text)
