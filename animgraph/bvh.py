"""BVH motion files: our own reader and writer (numpy, no BVH dependency).

Reading: any channel order per joint, position channels on any joint, End Sites
(kept as ``skeleton.end_sites`` {joint index: offset}, not as joints), CRLF/LF/CR
line ends mixed, ``scale`` multiplying positions and offsets.  A joint's Euler
channels compose in the file's order, ``R = R_c1 R_c2 R_c3`` (the BVH convention:
the first listed channel is the outermost rotation).  Position channels give the
joint's local position (they replace the OFFSET, as Blender reads them); joints
without them keep their offset.  The MOTION block is parsed in one numpy call.

Numbers are plain decimals (``-12``, ``+.5``, ``1e5``; no ``nan``, ``inf``, ``0x10`` or
``1_0``) within float32 range, also after ``scale``.  Every problem (duplicate joint
names, text that is not UTF-8, a bad ``scale`` ...) is one ``BVHError`` naming file:line.
``read_bvh`` parses without building, so callers can decide units and frames from the
data (``animgraph.clipfile``) and build once with ``build_bvh``.

Writing: ZYX Euler on every joint, positions on the root and on any joint whose
local position moves away from its offset; written to a temporary file in the
same directory and renamed, so a failed write leaves nothing behind.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np
from animgraph.jit import njit

from .errors import BVHError
from .fileio import atomic_write_text, read_bytes
from .maths import from_scaled_angle_axis, qmul, qrot, store4
from .pose import Clip, Skeleton

_AXES = {"x": 0, "y": 1, "z": 2}
_UNIT_AXES = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
_F32_MAX = float(np.finfo(np.float32).max)
_NUMERAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DIGITS = re.compile(r"[0-9]+")
# Bytes a MOTION block may hold: digits, signs, point, exponent and ASCII whitespace.
_MOTION_BYTES = np.zeros(256, bool)
_MOTION_BYTES[list(b"0123456789+-.eE \t\n\x0b\x0c")] = True
MAX_CHANNELS = 6  # per joint: 3 positions and 3 rotations


# ---------------------------------------------------------------- Euler kernels


@njit(cache=True)
def _axis_quat(axis, angle):
    """Quaternion of ``angle`` radians about coordinate axis 0, 1 or 2."""
    v = (angle if axis == 0 else 0.0, angle if axis == 1 else 0.0, angle if axis == 2 else 0.0)
    return from_scaled_angle_axis(v)


@njit(cache=True, entry=True)
def _euler_to_quat(angles, axes, counts, out):
    """``out`` (F,J,4) from Euler ``angles`` (F,J,3) rad applied in order ``axes`` (J,3), ``counts`` (J,) per joint."""
    for f in range(angles.shape[0]):
        for j in range(angles.shape[1]):
            q = (1.0, 0.0, 0.0, 0.0)
            for k in range(counts[j]):
                q = qmul(q, _axis_quat(axes[j, k], float(angles[f, j, k])))
            store4(out[f], j, q)


@njit(cache=True, entry=True)
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

    def line(self):
        """Line of the last token read."""
        return self.items[self.i - 1][1] if self.i else self.last_line

    def next(self, expected):
        if self.i >= len(self.items):
            raise BVHError(f"file ends early: expected {expected}", self.file, self.last_line)
        tok = self.items[self.i]
        self.i += 1
        return tok

    def number(self, expected):
        tok, line = self.next(expected)
        value, problem = _number(tok)
        if value is None:
            raise BVHError(f"expected {expected}, found {_show(tok)}{problem}", self.file, line)
        return value

    def expect(self, word):
        tok, line = self.next(repr(word))
        if tok != word:
            raise BVHError(f"expected {word!r}, found {_show(tok)}", self.file, line)
        return line


def _number(text):
    """(value, "") for a plain decimal numeral within float32 range, else (None, why it is not)."""
    if not _NUMERAL.fullmatch(text):
        return None, ""
    value = float(text)
    if not abs(value) <= _F32_MAX:
        return None, " (out of float32 range)"
    return value, ""


def _parse_joint(toks, name, parent, joints):
    """Parse one ROOT/JOINT body after its name; appends dicts to ``joints``."""
    index = len(joints)
    joint = {"name": name, "parent": parent, "offset": None, "channels": [], "end": None, "line": toks.line()}
    joints.append(joint)
    toks.expect("{")
    while True:
        tok, line = toks.next("OFFSET, CHANNELS, JOINT, End Site or '}'")
        key = tok.upper()
        if key == "OFFSET":
            joint["offset"] = [toks.number("an OFFSET number") for _ in range(3)]
        elif key == "CHANNELS":
            count_tok, count_line = toks.next("a channel count")
            if not _DIGITS.fullmatch(count_tok):
                raise BVHError(f"expected a channel count, found {_show(count_tok)}", toks.file, count_line)
            count = count_tok.lstrip("0") or "0"  # int() refuses over 4300 digits, zeros included
            if len(count) > 2 or int(count) > MAX_CHANNELS:
                raise BVHError(
                    f"joint {_show(name)} has {count_tok[:20]} channels (at most {MAX_CHANNELS})", toks.file, count_line
                )
            for _ in range(int(count)):
                ch, ch_line = toks.next(f"{count_tok} channel names")
                low = ch.lower()
                if len(low) != 9 or low[0] not in _AXES or low[1:] not in ("position", "rotation"):
                    raise BVHError(
                        f"unknown channel name {_show(ch)} (expected X/Y/Z followed by position or rotation)",
                        toks.file,
                        ch_line,
                    )
                if low[1:] == "rotation" and sum(k == "rotation" for k, _ in joint["channels"]) == 3:
                    raise BVHError(f"joint {_show(name)} has more than 3 rotation channels", toks.file, ch_line)
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
                raise BVHError(f"joint {_show(name)} has no OFFSET", toks.file, line)
            return
        else:
            raise BVHError(
                f"expected OFFSET, CHANNELS, JOINT, End Site or '}}', found {_show(tok)}", toks.file, line
            )


def _show(text, limit=40):
    """``repr`` of at most ``limit`` characters of ``text`` (for one-line messages)."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def _read_lines(path):
    """File lines (line ends normalised) as bytes, or a BVHError for missing files and directories."""
    raw = read_bytes(path, BVHError, "BVH")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # UTF-8 byte-order mark
    if not raw.strip():
        raise BVHError("empty file: expected HIERARCHY", path, 1)
    lines = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    if not lines[-1]:
        lines.pop()  # the final line end does not start another line
    return lines


def _text(lines, start, stop, file):
    """``lines[start:stop]`` decoded as UTF-8; a BVHError naming the first line that is not."""
    out = []
    for n in range(start, stop):
        try:
            out.append(lines[n].decode("utf-8"))
        except UnicodeDecodeError as e:
            bad = lines[n][e.start]
            raise BVHError(f"not UTF-8 text (byte 0x{bad:02x} at column {e.start + 1})", file, n + 1) from None
    return out


def _header_value(lines, n, key, file):
    """Value after ``key:`` on the next non-blank line at or after index ``n``; returns (text, next index)."""
    while n < len(lines) and not lines[n].strip():
        n += 1
    if n >= len(lines):
        raise BVHError(f"file ends early: expected '{key}:'", file, len(lines))
    text = _text(lines, n, n + 1, file)[0].strip()
    head, _, value = text.partition(":")
    if " ".join(head.split()).lower() != key.lower() or not value.strip():
        raise BVHError(f"expected '{key}: <value>', found {_show(text)}", file, n + 1)
    return value.strip(), n + 1


def _motion_error(tokens, channels, start, file):
    """The BVHError for the first token of ``tokens`` that is not a number in float32 range."""
    for k, tok in enumerate(tokens):
        n = k // channels
        try:
            text = tok.decode("utf-8")
        except UnicodeDecodeError:
            raise BVHError(f"not UTF-8 text on motion line {n + 1}", file, start + n + 1) from None
        value, problem = _number(text)
        if value is None:
            raise BVHError(
                f"expected a number on motion line {n + 1}, found {_show(text)}{problem}", file, start + n + 1
            )
    raise AssertionError("no bad motion token")  # pragma: no cover


def _motion(lines, start, frames, channels, file):
    """Motion values (frames, channels) from ``lines[start:]``, parsed in one numpy call."""
    body_lines = lines[start:]
    while body_lines and not body_lines[-1].strip():
        body_lines.pop()
    if len(body_lines) < frames:
        raise BVHError(
            f"file ends early: 'Frames: {frames}' but only {len(body_lines)} motion lines",
            file,
            start + len(body_lines),
        )
    body = b"\n".join(body_lines)
    # Tokens per line, vectorised over bytes: a token starts at non-space after space.
    b = np.frombuffer(body, dtype=np.uint8)
    space = (b == 32) | (b == 9) | (b == 10) | (b == 11) | (b == 12)
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    line_of = np.searchsorted(np.flatnonzero(b == 10), starts)  # newlines before each token
    counts = np.bincount(line_of, minlength=len(body_lines))
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
    values = None
    if _MOTION_BYTES[b].all():
        try:
            values = np.array(tokens, dtype=np.float64)
        except ValueError:
            pass
    if values is None or not (np.abs(values) <= _F32_MAX).all():
        _motion_error(tokens, channels, start, file)
    return values.reshape(frames, channels)


@dataclass
class BVHData:
    """A parsed BVH file before units are applied: joints, motion values (F, channels) in file units."""

    file: str
    joints: list  # dicts: name, parent, offset, channels [(kind, axis)], end, line (of the name)
    values: np.ndarray  # float64 (frames, channels): positions in file units, angles in degrees
    dt: float  # s
    frames_line: int  # line of 'Frames:'
    motion_line: int  # line of the first frame

    @property
    def frames(self):
        return self.values.shape[0]

    @property
    def name(self):
        return os.path.splitext(os.path.basename(self.file))[0]


def read_bvh(path):
    """Parse a BVH file into ``BVHData`` (file units, degrees); one BVHError naming file:line on any problem."""
    file = os.fspath(path)
    lines = _read_lines(file)
    n = 0
    while n < len(lines) and not lines[n].strip():
        n += 1
    if lines[n].strip().upper() != b"HIERARCHY":
        raise BVHError(f"expected HIERARCHY, found {_show(lines[n].decode('latin-1').strip())}", file, n + 1)
    motion = next((k for k in range(n + 1, len(lines)) if lines[k].strip().upper() == b"MOTION"), None)
    stop = len(lines) if motion is None else motion
    text = [""] * (n + 1) + _text(lines, n + 1, stop, file)
    toks = _Tokens(text, file, n + 1, stop)
    tok, line = toks.next("ROOT")
    if tok.upper() != "ROOT":
        raise BVHError(f"expected ROOT, found {_show(tok)}", file, line)
    name, _ = toks.next("the root joint name")
    joints = []
    try:
        _parse_joint(toks, name, -1, joints)
    except RecursionError:
        raise BVHError("joints nested too deeply", file, toks.line()) from None
    except BVHError as e:
        if motion is None and toks.i == len(toks.items) and not e.message.startswith("file ends early"):
            # The bad token is the file's last word and no MOTION follows: cut off mid-word, most likely.
            raise BVHError(f"{e.message}; the file ends there (truncated?)", e.file, e.line) from None
        raise
    if toks.i < len(toks.items):
        tok, line = toks.items[toks.i]
        raise BVHError(f"expected MOTION after the hierarchy, found {_show(tok)}", file, line)
    if motion is None:
        raise BVHError("file ends early: expected MOTION", file, len(lines))
    seen = {}
    for joint in joints:
        if joint["name"] in seen:
            raise BVHError(
                f"duplicate joint name {_show(joint['name'])} (first at line {seen[joint['name']]})",
                file,
                joint["line"],
            )
        seen[joint["name"]] = joint["line"]
    frames_text, k = _header_value(lines, motion + 1, "Frames", file)
    frames_line = k
    if not _DIGITS.fullmatch(frames_text):
        raise BVHError(f"expected a frame count after 'Frames:', found {_show(frames_text)}", file, k)
    dt_text, k = _header_value(lines, k, "Frame Time", file)
    dt, _ = _number(dt_text)
    if dt is None or not 1e-6 <= dt <= 1e4:
        raise BVHError(f"expected a positive frame time (1e-6 to 1e4 s), found {_show(dt_text)}", file, k)
    # Files print dt with few digits (.0083333): snap to the whole frame rate it means.
    fps = round(1.0 / dt)
    if fps > 0 and abs(1.0 / dt - fps) < 1e-2:
        dt = 1.0 / fps

    if len(frames_text.lstrip("0")) > 9:
        raise BVHError(f"absurd frame count {_show(frames_text, 20)} (at most 999999999)", file, frames_line)
    frames = int(frames_text.lstrip("0") or "0")
    if frames < 1:
        raise BVHError("the file has no frames ('Frames: 0')", file, frames_line)
    channels = sum(len(j["channels"]) for j in joints)
    values = _motion(lines, k, frames, channels, file)
    return BVHData(file, joints, values, dt, frames_line, k + 1)


def check_scale(scale, file=None):
    """``scale`` as a float; BVHError naming ``file`` unless it is a finite number > 0."""
    ok = isinstance(scale, (int, float, np.integer, np.floating)) and not isinstance(scale, bool)
    if not (ok and math.isfinite(scale) and scale > 0):
        raise BVHError(f"scale must be a finite number > 0, got {scale!r}", file)
    return float(scale)


def load_bvh(path, scale=1.0):
    """(Skeleton, Clip) from a BVH file; positions and offsets times ``scale`` (file units -> yours), local space."""
    scale = check_scale(scale, os.fspath(path))
    return build_bvh(read_bvh(path), scale)


def build_bvh(data, scale=1.0):
    """(Skeleton, Clip) of parsed ``BVHData``, positions and offsets times ``scale``; BVHError if they overflow float32."""
    scale = check_scale(scale, data.file)
    joints, values = data.joints, data.values
    j_count = len(joints)
    frames = data.frames
    offsets = np.array([j["offset"] for j in joints], np.float64) * scale
    for joint, off in zip(joints, offsets):
        ends = [off] if joint["end"] is None else [off, np.asarray(joint["end"]) * scale]
        if not all((np.abs(e) <= _F32_MAX).all() for e in ends):
            raise BVHError(f"joint {_show(joint['name'])}: OFFSET times scale {scale:g} overflows float32",
                           data.file, joint["line"])
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
    over = np.flatnonzero(~(np.abs(pos) <= _F32_MAX).all(axis=(1, 2)))
    if len(over):
        f = int(over[0])
        raise BVHError(f"positions times scale {scale:g} overflow float32 on motion line {f + 1}",
                       data.file, data.motion_line + f)
    rot = np.empty((frames, j_count, 4))
    _euler_to_quat(angles, axes, counts, rot)
    ends = {i: np.asarray(j["end"], np.float64) * scale for i, j in enumerate(joints) if j["end"] is not None}
    skel = Skeleton([j["name"] for j in joints], [j["parent"] for j in joints], offsets, end_sites=ends)
    clip = Clip(skel, pos, rot, dt=data.dt, name=data.name)
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
