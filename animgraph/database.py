"""The motion-matching database: clips at 60 fps, root-relative, with foot contacts and normalised features.

``build(clips)`` prepares each clip (and its mirror image, so left turns give right
turns) and stacks every frame of every range into one array set (``Database``);
``save``/``Database.load`` write and read it as an ``.npz`` (format "animgraph.mmdb",
version 2; version 1 stored ``scale`` divided by the group weights and is read by undoing that);
``check`` is the one validator of a database's contents, run on every build before
anything is written and on every read; ``cached_build`` keeps built databases on disk keyed by content;
``bundled()`` is the database of the nine bundled clips.

Per range: resampled to 60 fps (``preprocess.resample``), the root joint made relative
to the simulation bone (``preprocess.root_motion_clip``, which also gives the bone's
root motion), toe contacts (the clip's contact tracks, ``animgraph.tracks``, detected once
at 60 fps once per clip and read at the 60 fps frame times; a mirror image's swapped), raw features
(``animgraph.features``), then one normalisation over all frames.

Search rule: a range's searchable frames are ``[start + SEARCH_SKIP_START, stop -
SEARCH_SKIP_END)``: the first frames' velocities and root track rest on one-sided fits,
and the last frames leave a matched frame something to play before the next search
(never less than one successor frame).  A range too short for both keeps its frames
``[start, stop - 1)``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import cache, preprocess, tracks
from .errors import AnimgraphError
from .features import FPS, Schema, normalisation, range_features
from .fileio import atomic_write
from .names import install_aliases
from .pose import Clip, Pose, Skeleton

FORMAT = "animgraph.mmdb"
VERSION = 2
REBUILD = "rebuild it with `animgraph mm build`"
UNIT_TOLERANCE = 1e-3  # how far a stored rotation's norm may be from 1
BUNDLED_PREFIX = "animgraph:"
CONTACT_JOINTS = ("left_toe", "right_toe")
SEARCH_SKIP_START = 3  # frames at a range's start never matched
SEARCH_SKIP_END = 10  # frames at a range's end never matched (1/6 s: more than a usual search interval)
MIRRORED = " (mirrored)"


def skeleton_hash(skel):
    """sha256 hex of the joint names, parents and offsets rounded to 1 mm."""
    mm = np.round(np.asarray(skel.offsets, np.float64) * 1000.0).astype(np.int64) + 0  # + 0: no -0
    text = json.dumps([list(skel.names), [int(p) for p in skel.parents], mm.tolist()])
    return hashlib.sha256(text.encode()).hexdigest()


def search_window(start, stop):
    """(first, stop) searchable frames of the range [start, stop) (module docstring's rule)."""
    first, last = start + SEARCH_SKIP_START, stop - SEARCH_SKIP_END
    if last <= first:
        first, last = start, max(start, stop - 1)
    return first, last


@dataclass(eq=False)
class Database:
    """Every frame of every range at ``dt`` = 1/60 s; poses local with the root relative to the simulation bone.

    ``pos`` (F,J,3) m, ``rot`` (F,J,4) w-first, ``scl`` (F,J,3) float32; ``motion`` (F,6)
    the bone's velocity (m/s) and angular velocity (rad/s) in its own frame; ``contacts``
    (F,2) left/right toe 0/1; ``range_starts``/``range_stops``/``search_starts``/
    ``search_stops`` (R,) int64 frame indices; ``names`` (R,) clip names; ``features``
    (F,D) float32 = (raw - ``offset``) / ``scale`` * ``schema.weights()``, ``offset`` and ``scale`` (D,) float64.
    """

    skeleton: Skeleton
    schema: Schema
    pos: np.ndarray
    rot: np.ndarray
    scl: np.ndarray
    motion: np.ndarray
    contacts: np.ndarray
    range_starts: np.ndarray
    range_stops: np.ndarray
    names: list
    search_starts: np.ndarray
    search_stops: np.ndarray
    features: np.ndarray
    offset: np.ndarray
    scale: np.ndarray
    dt: float = 1.0 / FPS
    skeleton_hash: str = ""
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self):
        if not self.skeleton_hash:
            self.skeleton_hash = skeleton_hash(self.skeleton)

    @property
    def frames(self):
        return len(self.pos)

    @property
    def ranges(self):
        return len(self.range_starts)

    def __repr__(self):
        return (f"Database({self.frames} frames, {self.ranges} ranges, {self.features.shape[1]} features, "
                f"skeleton {self.skeleton_hash[:12]})")

    def normalise(self, raw):
        """Raw feature rows (..., D) as the database's normalised, weighted float32 features."""
        return ((np.asarray(raw, np.float64) - self.offset) / self.scale * self.schema.weights()).astype(np.float32)

    def range_of(self, frame):
        """Index of the range holding ``frame``."""
        return int(np.searchsorted(self.range_stops, frame, side="right"))

    def range_tracks(self, r):
        """The contact tracks of range ``r`` (``animgraph.tracks.Tracks``, seconds from the range's start), from its
        60 fps contacts (a mirrored range's are the mirror image's: left and right swapped)."""
        start, stop = int(self.range_starts[r]), int(self.range_stops[r])
        return tracks.from_contacts(self.contacts[start:stop] > 0.5, self.dt)

    def as_clip(self):
        """A Clip of every frame (root relative to the simulation bone), contacts attached, ``clip.database = self``."""
        clip = Clip(self.skeleton, self.pos, self.rot, self.scl, self.dt, name="database",
                    contacts=self.contacts > 0.5, contact_joints=list(CONTACT_JOINTS))
        clip.database = self
        return clip

    # ------------------------------------------------------------ file

    def arrays(self):
        """{entry: array} of the ``.npz`` file (no pickled objects)."""
        skel = self.skeleton
        ends = sorted(skel.end_sites)
        return {
            "format": np.array(FORMAT),
            "version": np.array(VERSION, np.int64),
            "schema": np.array(self.schema.to_json()),
            "skeleton_names": np.array(skel.names, dtype=str),
            "skeleton_parents": np.asarray(skel.parents, np.int32),
            "skeleton_offsets": np.asarray(skel.offsets, np.float32),
            "skeleton_end_joints": np.asarray(ends, np.int64),
            "skeleton_end_offsets": np.asarray([skel.end_sites[j] for j in ends], np.float32).reshape(-1, 3),
            "skeleton_hash": np.array(self.skeleton_hash),
            "dt": np.array(self.dt, np.float64),
            "pos": self.pos, "rot": self.rot, "scl": self.scl, "motion": self.motion, "contacts": self.contacts,
            "range_starts": self.range_starts, "range_stops": self.range_stops,
            "names": np.array(list(self.names), dtype=str).reshape(-1),
            "search_starts": self.search_starts, "search_stops": self.search_stops,
            "features": self.features, "offset": self.offset, "scale": self.scale,
        }

    def save(self, path):
        """Write the database to ``path`` (.npz) atomically: a temporary file, then a rename."""
        arrays = self.arrays()
        atomic_write(path, lambda f: np.savez(f, **arrays))

    @classmethod
    def load(cls, path):
        """The database in ``path``; one-line AnimgraphError naming the file if it is not a readable one."""
        path = Path(path)
        entries = _read_npz(path)
        try:
            db = _from_entries(cls, entries)
            check(db)
        except _Bad as e:
            raise AnimgraphError(f"{path}: {_rebuild_hint(e, entries)}") from None
        db.path = path
        return db


# ---------------------------------------------------------------- build


@dataclass
class _Range:
    name: str
    clip: Clip  # root-relative, 60 fps
    motion: np.ndarray
    contacts: np.ndarray
    raw: np.ndarray


def clip_tracks(label, skel, clip):
    """The clip's derived tracks (``animgraph.tracks``: its contacts, detected once, at 60 fps)."""
    try:
        for joint in CONTACT_JOINTS:
            skel.index(joint)
    except ValueError as e:
        raise AnimgraphError(f"{label}: foot contacts need the joints {', '.join(CONTACT_JOINTS)}: {e}") from None
    return tracks.clip_tracks(skel, clip)


def _prepare(name, label, skel, clip, schema, joints, found=None):
    """One range from a clip in metres: 60 fps, root-relative, contacts (the tracks ``found``, default the clip's own,
    at the 60 fps frame times), raw features."""
    found = clip_tracks(label, skel, clip) if found is None else found
    if abs(clip.fps - FPS) > 1e-6:
        clip = preprocess.resample(clip, FPS)
    contacts = tracks.contacts_at(found, np.arange(clip.frames) / FPS)
    rel, motion = preprocess.root_motion_clip(skel, clip, loop=False)
    from .poseops import fk_frames

    local = fk_frames(Pose(rel.pos, rel.rot, rel.scl), skel.parents).pos
    yaw = preprocess.facing_angle(np.asarray(rel.root_rot, np.float64))
    raw = range_features(schema, joints, local, rel.root_pos, yaw, 1.0 / FPS)
    return _Range(name, rel, motion, contacts.astype(np.float32), raw)


def _same_topology(first, skel):
    return list(first.names) == list(skel.names) and np.array_equal(first.parents, skel.parents)


def frames_at_fps(clip):
    """Frames of ``clip`` once resampled to the database's 60 fps (``preprocess.resample``'s count)."""
    if abs(clip.fps - FPS) <= 1e-6:
        return clip.frames
    return int(math.floor((clip.frames - 1) / (clip.fps / FPS) + 1e-9)) + 1


BYTES_PER_JOINT_FRAME = 400  # per joint and range frame: about twice the peak tracemalloc measured (218 B, walk, jog)


def memory_needed(clips, schema, mirror):
    """Estimated peak bytes of ``build``: every range's frames at 60 fps, joints and features."""
    ranges = 2 if mirror else 1
    return sum(ranges * frames_at_fps(c) * (len(s) * BYTES_PER_JOINT_FRAME + schema.dim * 8 * 4)
               for _, s, c in clips)


def build(clips, schema=None, mirror=True, progress=None, labels=None, skip_short=False, warn=None):
    """A Database of ``clips``, a list of ``(name, Skeleton, Clip)`` in metres sharing one skeleton topology.

    ``schema``: a ``features.Schema`` (default ``Schema.default()``); ``mirror``: add each
    clip's mirror image (named ``NAME (mirrored)``); ``progress(done, total, name)`` is
    called after each range; ``labels``: how errors name each clip (its file as the user
    gave it; default the names). A clip too short to search (``search_window``) is refused,
    or with ``skip_short`` left out with ``warn(line)``. The result passes ``check``, or
    AnimgraphError naming the clip: nothing is returned to write.
    """
    from . import fileio
    from .fileio import format_size

    schema = Schema.default() if schema is None else schema
    clips = list(clips)
    labels = [n for n, _, _ in clips] if labels is None else list(labels)
    if not clips:
        raise AnimgraphError("a motion-matching database needs at least one clip")
    first_name, first_skel, _ = clips[0]
    for label, (name, skel, clip) in zip(labels, clips):
        if not _same_topology(first_skel, skel) or clip.pos.shape[1] != len(first_skel):
            diff = next((f"joint {i}: {a!r} vs {b!r}" for i, (a, b) in enumerate(zip(skel.names, first_skel.names))
                         if a != b), "the parents differ")
            raise AnimgraphError(
                f"{label}: its skeleton ({len(skel)} joints, root {skel.names[0]!r}) has other joint names or parents "
                f"than {labels[0]}'s ({len(first_skel)} joints; {diff}): a database holds one skeleton")
    kept = []
    for label, (name, skel, clip) in zip(labels, clips):
        n = frames_at_fps(clip)
        first, last = search_window(0, n)
        if last > first:
            kept.append((label, name, skel, clip))
            continue
        line = f"{label}: {n} frame{'s' * (n != 1)} at {FPS} fps ({clip.frames} in the file): too short to search"
        if not skip_short:
            raise AnimgraphError(line + " (a clip needs at least 2 frames at 60 fps; --skip-short leaves it out)")
        if warn:
            warn(line + ": left out")
    if not kept:
        raise AnimgraphError("no clip long enough to search is left: a database needs one")
    need, avail = memory_needed([c[1:] for c in kept], schema, mirror), fileio.available_memory()
    if avail is not None and need > avail:
        big = sorted(kept, key=lambda c: -frames_at_fps(c[3]) * len(c[2]))[:3]
        raise AnimgraphError(
            f"mm build: the database would need about {format_size(need)} of memory; {format_size(avail)} is "
            "available (largest clips: " + ", ".join(f"{c[0]} ({frames_at_fps(c[3])} frames at {FPS} fps)"
                                                       for c in big) + ")")
    try:
        joints = schema.joint_indices(first_skel)
    except AnimgraphError as e:
        raise AnimgraphError(f"{e} (in the skeleton of {labels[0]})") from None
    total = len(kept) * (2 if mirror else 1)
    ranges, where = [], []
    label = labels[0]
    try:
        for label, name, skel, clip in kept:
            found = clip_tracks(label, skel, clip)  # one detection per clip, its mirror image's swapped
            ranges.append(_prepare(name, label, skel, clip, schema, joints, found))
            where.append(label)
            if progress:
                progress(len(ranges), total, name)
            if mirror:
                mclip = preprocess.mirror(skel, clip)
                ranges.append(_prepare(name + MIRRORED, label, mclip.skeleton, mclip, schema, joints,
                                       found.mirrored()))
                where.append(f"{label} (mirrored)")
                if progress:
                    progress(len(ranges), total, name + MIRRORED)
        db = _assemble(first_skel, schema, ranges)
    except MemoryError:
        raise AnimgraphError(f"mm build: out of memory at {label} (about {format_size(need)} estimated for "
                             f"{total} ranges); build from fewer or shorter clips") from None
    try:
        check(db, lambda r: where[r])
    except _Bad as e:
        raise AnimgraphError(f"the database built from these clips is not valid: {e}") from None
    return db


def _assemble(skel, schema, ranges):
    lengths = np.array([r.clip.frames for r in ranges], np.int64)
    stops = np.cumsum(lengths)
    starts = stops - lengths
    window = np.array([search_window(a, b) for a, b in zip(starts, stops)], np.int64).reshape(-1, 2)
    raw = np.concatenate([r.raw for r in ranges])
    offset, scale = normalisation(schema, raw)

    def cat(get, dtype):
        return np.ascontiguousarray(np.concatenate([get(r) for r in ranges]), dtype=dtype)

    return Database(
        skeleton=skel, schema=schema,
        pos=cat(lambda r: r.clip.pos, np.float32), rot=cat(lambda r: r.clip.rot, np.float32),
        scl=cat(lambda r: r.clip.scl, np.float32), motion=cat(lambda r: r.motion, np.float32),
        contacts=cat(lambda r: r.contacts, np.float32),
        range_starts=starts, range_stops=stops, names=[r.name for r in ranges],
        search_starts=np.ascontiguousarray(window[:, 0]), search_stops=np.ascontiguousarray(window[:, 1]),
        features=((raw - offset) / scale * schema.weights()).astype(np.float32), offset=offset, scale=scale,
    )


# ---------------------------------------------------------------- clips by label


def _source(label):
    """(name, file) of a clip label: ``animgraph:NAME`` (bundled) or a BVH path; AnimgraphError if missing."""
    from . import data

    label = os.fspath(label)
    if label.startswith(BUNDLED_PREFIX):
        name = label[len(BUNDLED_PREFIX):]
        if name not in data.names():
            raise AnimgraphError(f"{label}: no bundled clip {name!r} (bundled: {', '.join(data.names())})")
        return name, data.path(name)
    path = Path(label)
    if not path.is_file():
        raise AnimgraphError(f"{label}: no such clip file" + (" (bundled clips are named animgraph:NAME)"
                                                                  if label in data.names() else ""))
    return path.stem, path


def load_clips(paths):
    """[(name, Skeleton, Clip)] in metres of clip labels (``animgraph:NAME`` or BVH paths, read like ``animgraph
    info``: units, an added T-pose and CMU names decided from the data)."""
    from . import data
    from .clipfile import read_clip

    out = []
    for label in paths:
        name, file = _source(label)
        if os.fspath(label).startswith(BUNDLED_PREFIX):
            skel, clip = data.load(name)
        else:
            skel, clip, _ = read_clip(file, name=name)
        out.append((name, skel, clip))
    return out


def build_from_paths(paths, schema=None, mirror=True, progress=None, skip_short=False, warn=None):
    """``build`` of the clips named by labels (``animgraph:NAME`` or BVH paths); errors name each by its label."""
    return build(load_clips(paths), schema, mirror, progress, labels=[os.fspath(p) for p in paths],
                 skip_short=skip_short, warn=warn)


# ---------------------------------------------------------------- cache


def _code_hash():
    """sha256 of the modules that decide a database's contents (a changed rule never loads a stale file)."""
    from . import data

    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for p in (here / "features.py", here / "database.py", here / "preprocess.py", here / "tracks.py",
              Path(data.__file__)):
        h.update(p.read_bytes())
    return h.hexdigest()


def cache_key(paths, schema=None, mirror=True):
    """sha256 hex of the clips' file contents, the schema JSON, ``mirror``, the format version and the code."""
    schema = Schema.default() if schema is None else schema
    h = hashlib.sha256()
    h.update(f"{FORMAT} {VERSION} mirror={bool(mirror)}\n".encode())
    h.update(schema.to_json().encode())
    h.update(_code_hash().encode())
    for label in paths:
        name, file = _source(label)
        h.update(f"\n{name}\n".encode())
        h.update(hashlib.sha256(Path(file).read_bytes()).digest())
    return h.hexdigest()


def cache_path(key):
    """Where the database of ``key`` is cached: ``<cache dir>/mmdb/<key>.npz``."""
    return cache.cache_dir() / "mmdb" / f"{key[:32]}.npz"


def cached_build(paths, schema=None, mirror=True, progress=None):
    """``build_from_paths``, kept on disk under the cache directory by ``cache_key``; the next call loads it."""
    key = cache_key(paths, schema, mirror)
    path = cache_path(key)
    if path.is_file():
        try:
            db = Database.load(path)
            if schema is not None and schema._path is not None:
                db.schema._path = schema._path
            return db
        except AnimgraphError:
            pass  # a damaged cache file: build again and replace it
    db = build_from_paths(paths, schema, mirror, progress)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db.save(path)
    except OSError as e:
        print(f"animgraph: warning: cannot cache the database in {path}: {e}", file=sys.stderr)
    return db


@functools.lru_cache(maxsize=1)
def _bundled():
    from . import data

    return cached_build([BUNDLED_PREFIX + n for n in data.locomotion()], None, mirror=True)


def bundled():
    """The database of every bundled clip and its mirror image, default schema (cached on disk and in memory)."""
    return _bundled()




# ---------------------------------------------------------------- reading


class _Bad(Exception):
    """A problem with a database file's contents (the message; the caller names the file)."""


PER_FRAME = ("pos", "rot", "scl", "motion", "contacts", "features")


def check(db, where=None):
    """_Bad naming the first problem of ``db``'s contents (the caller names the file), else nothing.

    Every array finite; rotations unit (norm within ``UNIT_TOLERANCE`` of 1); joint scales and
    feature scales positive; ranges tiling the frames (checked by the reader) and
    each range's search window the one ``search_window`` gives, with at least one frame.
    ``where(r)`` names range ``r`` (default: its clip name).
    """
    where = where or (lambda r: repr(db.names[r]) if r < len(db.names) else f"#{r}")
    starts, stops = np.asarray(db.range_starts), np.asarray(db.range_stops)

    def at(frame):
        r = min(int(np.searchsorted(stops, frame, side="right")), len(stops) - 1)
        return f"frame {frame} (range {where(r)}, its frame {frame - int(starts[r])})"

    for key in PER_FRAME:
        a = np.asarray(getattr(db, key))
        bad = ~np.isfinite(a.reshape(len(a), -1)).all(axis=1)
        if bad.any():
            raise _Bad(f"entry {key!r} holds NaN or infinite values at {at(int(np.argmax(bad)))}")
    for key in ("offset", "scale"):
        if not np.all(np.isfinite(getattr(db, key))):
            raise _Bad(f"entry {key!r} holds NaN or infinite values")
    if not np.all(np.asarray(db.scale) > 0):
        raise _Bad(f"entry 'scale' must be positive (column {int(np.argmax(~(np.asarray(db.scale) > 0)))})")
    norm = np.linalg.norm(np.asarray(db.rot, np.float64), axis=-1)
    off = np.abs(norm - 1.0) > UNIT_TOLERANCE
    if off.any():
        f, j = np.unravel_index(int(np.argmax(off)), off.shape)
        raise _Bad(f"entry 'rot' holds a rotation of norm {norm[f, j]:.6g} (not a unit quaternion) at {at(int(f))}, "
                   f"joint {db.skeleton.names[j]!r}")
    scl = np.asarray(db.scl)
    if not np.all(scl > 0):
        f = int(np.argmax(~(scl > 0).reshape(len(scl), -1).all(axis=1)))
        raise _Bad(f"entry 'scl' holds a scale <= 0 at {at(f)}")
    for r, (a, b) in enumerate(zip(starts.tolist(), stops.tolist())):
        first, last = search_window(a, b)
        if last <= first:
            raise _Bad(f"range {where(r)} has {b - a} frame{'s' * (b - a != 1)} at {FPS} fps: too short to search "
                       f"(a range needs at least 2)")
        if (int(db.search_starts[r]), int(db.search_stops[r])) != (first, last):
            raise _Bad(f"range {where(r)}: search window {int(db.search_starts[r])}..{int(db.search_stops[r])} "
                       f"is not the rule's {first}..{last} (edited or corrupt)")


def _read_npz(path):
    """{entry: array} of every entry of the .npz at ``path``; AnimgraphError naming it if unreadable."""
    if not path.exists():
        raise AnimgraphError(f"{path}: no such database file")
    if path.is_dir():
        raise AnimgraphError(f"{path}: is a directory, not a database file")
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise AnimgraphError(f"{path}: cannot read: {e.strerror or e}") from None
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):  # every .npz is a zip file
        raise AnimgraphError(f"{path}: not a motion-matching database (not an .npz file)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except OSError as e:
        if isinstance(e, FileNotFoundError) or e.errno is not None:
            raise AnimgraphError(f"{path}: cannot read: {e.strerror or e}") from None
        raise AnimgraphError(f"{path}: not a readable .npz file (truncated or corrupt?): {_short(e)}") from None
    except MemoryError:
        raise AnimgraphError(f"{path}: corrupt: an entry declares an array too large to read") from None
    except Exception as e:  # zipfile, zlib, numpy's header parser, pickle refusal: all say 'not a readable file'
        raise AnimgraphError(f"{path}: not a readable .npz file (truncated or corrupt?): {_short(e)}") from None


def _short(err):
    text = " ".join(str(err).split())
    return f"{type(err).__name__}" + (f": {text[:120]}" if text else "")


def _text(entries, key):
    a = _entry(entries, key)
    if a.shape != () or a.dtype.kind != "U":
        raise _Bad(f"entry {key!r} must be one text string, got {a.dtype} {a.shape}")
    return str(a)


def _entry(entries, key):
    if key not in entries:
        raise _Bad(f"missing entry {key!r}")
    return entries[key]


def _array(entries, key, kind, shape):
    """Entry ``key`` checked: dtype kind ('f', 'i', 'U') and ``shape`` (None matches any length)."""
    a = _entry(entries, key)
    ok = a.dtype.kind in ("iu" if kind == "i" else kind) and a.ndim == len(shape) and all(
        s is None or s == n for s, n in zip(shape, a.shape))
    if not ok:
        want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise _Bad(f"entry {key!r} must be {dict(f='float', i='integer', U='text')[kind]} of shape {want}, "
                   f"got {a.dtype} {a.shape}")
    if kind == "f" and key not in PER_FRAME and not np.all(np.isfinite(a)):  # per-frame ones: ``check``, by frame
        raise _Bad(f"entry {key!r} holds NaN or infinite values")
    return a


def _rebuild_hint(err, e):
    """``err``'s text, plus how to rebuild the file when its version is older than this one's."""
    version = e.get("version")
    old = version is not None and version.shape == () and version.dtype.kind in "iu" and 1 <= int(version) < VERSION
    if old and REBUILD not in str(err):
        return f"{err} (a version-{int(version)} database: {REBUILD})"
    return str(err)


def _from_entries(cls, e):
    """A Database from the .npz entries; _Bad naming the first problem."""
    if "format" not in e:
        raise _Bad("not a motion-matching database (no 'format' entry)")
    fmt = _text(e, "format")
    if fmt != FORMAT:
        raise _Bad(f"not a motion-matching database (format {fmt!r}, expected {FORMAT!r})")
    version = _entry(e, "version")
    if version.shape != () or version.dtype.kind not in "iu":
        raise _Bad(f"entry 'version' must be one integer, got {version.dtype} {version.shape}")
    version = int(version)
    if version > VERSION:
        raise _Bad(f"database version {version} is newer than this animgraph reads (version {VERSION}); "
                   "upgrade animgraph or rebuild it with 'animgraph mm build'")
    if version < 1:
        raise _Bad(f"database version {version} is not a valid version (1 to {VERSION}); {REBUILD}")
    try:
        schema = Schema.from_json(_text(e, "schema"), where="entry 'schema'")
    except AnimgraphError as err:
        raise _Bad(str(err)) from None
    names = _array(e, "skeleton_names", "U", (None,))
    j = len(names)
    parents = _array(e, "skeleton_parents", "i", (j,))
    offsets = _array(e, "skeleton_offsets", "f", (j, 3))
    end_joints = _array(e, "skeleton_end_joints", "i", (None,))
    end_offsets = _array(e, "skeleton_end_offsets", "f", (len(end_joints), 3))
    if np.any((end_joints < 0) | (end_joints >= j)):
        raise _Bad("entry 'skeleton_end_joints' names joints that do not exist")
    try:
        skel = Skeleton(list(names), parents, offsets, end_sites=dict(zip(end_joints.tolist(), end_offsets)))
    except ValueError as err:
        raise _Bad(f"bad skeleton: {err}") from None
    install_aliases(skel)
    stored_hash = _text(e, "skeleton_hash")
    if stored_hash != skeleton_hash(skel):
        raise _Bad(f"skeleton hash mismatch: the file says {stored_hash[:16]}..., its skeleton hashes to "
                   f"{skeleton_hash(skel)[:16]}... (edited or corrupt)")
    dt = _array(e, "dt", "f", ())
    if abs(float(dt) - 1.0 / FPS) > 1e-12:
        raise _Bad(f"entry 'dt' must be 1/{FPS} s, got {float(dt)!r}")
    pos = _array(e, "pos", "f", (None, j, 3))
    f = len(pos)
    d = schema.dim
    arrays = dict(
        pos=pos, rot=_array(e, "rot", "f", (f, j, 4)), scl=_array(e, "scl", "f", (f, j, 3)),
        motion=_array(e, "motion", "f", (f, 6)), contacts=_array(e, "contacts", "f", (f, 2)),
        features=_array(e, "features", "f", (f, d)), offset=_array(e, "offset", "f", (d,)),
        scale=_array(e, "scale", "f", (d,)),
    )
    starts = _array(e, "range_starts", "i", (None,))
    r = len(starts)
    ranges = dict(range_starts=starts, range_stops=_array(e, "range_stops", "i", (r,)),
                  search_starts=_array(e, "search_starts", "i", (r,)),
                  search_stops=_array(e, "search_stops", "i", (r,)))
    clip_names = _array(e, "names", "U", (r,))
    a, b = ranges["range_starts"], ranges["range_stops"]
    if r == 0 or a[0] != 0 or b[-1] != f or np.any(b <= a) or np.any(a[1:] != b[:-1]):
        raise _Bad(f"ranges must tile the {f} frames in order (starts {a[:4].tolist()}..., stops {b[:4].tolist()}...)")
    sa, sb = ranges["search_starts"], ranges["search_stops"]
    if np.any(sa < a) or np.any(sb > b) or np.any(sb < sa):
        raise _Bad("search windows must lie inside their ranges")
    if version == 1:  # version 1 stored scale / weight (weights were > 0 then)
        arrays["scale"] = arrays["scale"] * schema.weights()
    dtypes = dict(pos=np.float32, rot=np.float32, scl=np.float32, motion=np.float32, contacts=np.float32,
                  features=np.float32, offset=np.float64, scale=np.float64)
    arrays = {k: np.ascontiguousarray(v, dtype=dtypes[k]) for k, v in arrays.items()}
    ranges = {k: np.ascontiguousarray(v, dtype=np.int64) for k, v in ranges.items()}
    return cls(skeleton=skel, schema=schema, names=[str(n) for n in clip_names], dt=1.0 / FPS,
               skeleton_hash=stored_hash, **arrays, **ranges)
