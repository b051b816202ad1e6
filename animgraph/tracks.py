"""Clip tracks: the feet's contacts and plants, detected once per clip, and an animator's named moments, in seconds.

A clip's ``Tracks`` holds named tracks of two kinds, each a sorted float64 array per name
(what compiled code will take as it is):

- **instants**: times (s), strictly increasing: ``left_plant``, ``right_plant``, a user's ``hit``;
- **ranges**: ``(begin, end)`` rows (s), begins strictly increasing: ``left_contact``,
  ``right_contact``, a user's ``swing``.  On a looping clip a row with ``end < begin`` wraps
  through the end: it covers ``[begin, length)`` and ``[0, end]``.

Times run over ``[0, length]``: ``length`` is a clamped clip's duration ``(F - 1) dt``, or a
looping clip's period ``F dt`` (the sample node plays the last key back into the first; a
looping clip's times are taken modulo the period, so ``length`` itself is not a time on it).

Derived tracks (``derive``) come from the one contact detector, ``preprocess.foot_contacts``
on the toes, run once per clip at ``DETECT_FPS`` (the clip resampled unless it is at that
rate): its thresholds act on speeds by central differences, whose noise grows with the
frame rate (at 120 fps a toe's speed stops falling on jitter frames before it settles, and a
lock taken there is dragged), so one rate makes the rule the same for every clip.  Each run
of contact frames ``a..b`` is the range ``[a dt, b dt]`` (a run on the last frame ends at the
clip's last key); on a looping clip a run ending on the last frame and one starting on frame
0 are one range wrapping through the end.  A foot's plant is its touch-down, one per stance:
a foot's contacts with no contact of the other foot starting between them are one stance (a
foot pivoting in a turn may lift its toe for a moment; it does not step twice), planted where
its first contact begins (a footstep's sound, and the instant gaits of different stance lengths
line up at: a walk's toe is down for a third of its cycle, a run's for a sixth, so the middles
of their contacts sit at different moments of the step), so plants alternate left and right
whenever the feet do.  A foot already down on the clip's first frame (not by a contact wrapping
through a loop's end) touched down before the clip began: that stance has no plant.  Everything that reads contacts (the sample node's ``left_contact``/
``right_contact`` at the clip's keys, the motion-matching database at its 60 fps frames)
evaluates these ranges at its own frame times (``contacts_at``), so they agree.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from .errors import AnimgraphError

TOES = ("left_toe", "right_toe")  # the contact detector's joints (canonical names)
CONTACTS = ("left_contact", "right_contact")  # derived ranges, left then right
PLANTS = ("left_plant", "right_plant")  # derived instants: the touch-down of each stance
DERIVED = {"left_contact": "ranges", "right_contact": "ranges", "left_plant": "instants", "right_plant": "instants"}
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
EPS = 1e-9  # s: a frame time this close to a range's end is inside it (rounding of a * dt against k * dt)
DETECT_FPS = 60  # frames/s the contact detector runs at, whatever the clip's rate (the database's)


class TrackError(AnimgraphError):
    """A track that does not fit its clip: names the track and the value (the caller adds graph and asset)."""

    def __init__(self, track, message):
        self.track = track
        super().__init__(f"track {track!r}: {message}")


@dataclass(eq=False)
class Tracks:
    """Named instants (s, sorted) and ranges ((N, 2) begin, end in s) of one clip; ``derived``: the detector's names."""

    length: float
    loop: bool = False
    instants: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    derived: tuple = ()

    def names(self):
        """Every track name, sorted."""
        return sorted({*self.instants, *self.ranges})

    def inside(self, name, times):
        """Bool array: whether each time (s) lies in one of the ranges ``name`` (no such track: all False)."""
        return inside(self.ranges.get(name, np.zeros((0, 2))), np.asarray(times, np.float64), self.loop,
                      self.length)

    def flat(self, names):
        """(offsets (len(names) + 1,) int64, rows (M, 2) float64) of the tracks ``names`` in order, for compiled code:
        track ``i`` is ``rows[offsets[i]:offsets[i + 1]]``, an instant as (time, time), a range as (begin, end)."""
        parts = [self.ranges[n] if n in self.ranges else np.repeat(self.instants.get(n, np.zeros(0))[:, None], 2, 1)
                 for n in names]
        offsets = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
        rows = np.ascontiguousarray(np.concatenate(parts or [np.zeros((0, 2))]).reshape(-1, 2), np.float64)
        return offsets, rows

    def mirrored(self):
        """These tracks of the mirror image: every ``left_*`` track named ``right_*`` and the other way round."""
        swap = lambda n: _swap_side(n)  # noqa: E731
        return Tracks(self.length, self.loop, {swap(k): v.copy() for k, v in self.instants.items()},
                      {swap(k): v.copy() for k, v in self.ranges.items()}, tuple(swap(n) for n in self.derived))

    def cut(self, begin, end):
        """These tracks of the loop cut from ``[begin, end)`` s (whole gait cycles: ``phase.whole_cycles``), its times
        from 0: instants inside it; ranges clipped to it, one running through ``end`` and one from ``begin`` (the
        same stance, cut by the loop's seam) joined into one wrapping row."""
        length = float(end - begin)
        instants = {k: v[(v >= begin - EPS) & (v < end - EPS)] - begin for k, v in self.instants.items()}
        ranges = {}
        for name, rows in self.ranges.items():
            kept = []
            for b, e in rows:
                if e < b:  # a row wrapping through the original loop's end: the part after its start
                    e = b + (e + self.length - b)
                lo, hi = max(b, begin) - begin, min(e, end) - begin
                if hi > lo or (hi == lo and begin <= b < end):
                    kept.append([lo, hi])
            if len(kept) >= 2 and kept[0][0] <= EPS and kept[-1][1] >= length - EPS:
                kept = [[kept[-1][0], kept[0][1]]] + kept[1:-1]  # the seam's stance: one row wrapping
            ranges[name] = np.asarray(sorted(kept), np.float64).reshape(-1, 2)
        return Tracks(length, True, instants, ranges, self.derived)

    def entries(self):
        """The graph file's form: ``{"name", "time"}`` and ``{"name", "begin", "end"}`` dicts, by name then time."""
        out = []
        for name in self.names():
            out += [{"name": name, "time": float(t)} for t in self.instants.get(name, ())]
            out += [{"name": name, "begin": float(b), "end": float(e)} for b, e in self.ranges.get(name, ())]
        return out

    def to_json(self):
        """{"length", "loop", "tracks": {name: {"kind", "derived", "times" | "ranges"}}}: seconds, for printing."""
        tracks = {}
        for name in self.names():
            entry = {"kind": "instants" if name in self.instants else "ranges", "derived": name in self.derived}
            if name in self.instants:
                entry["times"] = [round(float(t), 6) for t in self.instants[name]]
            else:
                entry["ranges"] = [[round(float(b), 6), round(float(e), 6)] for b, e in self.ranges[name]]
            tracks[name] = entry
        return {"length": self.length, "loop": self.loop, "tracks": tracks}


def table(tracks, indent="    "):
    """Text lines of ``tracks``: per name its kind, count and times (s; a range as begin-end, '~' when it wraps)."""
    rows = []
    for name, entry in tracks.to_json()["tracks"].items():
        if entry["kind"] == "instants":
            values = [f"{t:.3f}" for t in entry["times"]]
        else:
            values = [f"{b:.3f}{'-' if e >= b else '~'}{e:.3f}" for b, e in entry["ranges"]]
        source = "derived" if entry["derived"] else "given"
        rows.append(f"{indent}{name:<14} {entry['kind']:<8} {len(values):>3}  {source:<7}  {' '.join(values) or '-'}")
    return rows or [f"{indent}(none)"]


def _swap_side(name):
    for a, b in (("left_", "right_"), ("right_", "left_")):
        if name.startswith(a):
            return b + name[len(a):]
    return name


def inside(ranges, times, loop, length):
    """Bool array: whether each time (s) lies in a row of ``ranges`` (N, 2), a looping clip's times wrapped first."""
    t = np.asarray(times, np.float64)
    if loop and length > 0:
        t = t - length * np.floor(t / length)
    out = np.zeros(t.shape, bool)
    for begin, end in np.asarray(ranges, np.float64).reshape(-1, 2):
        if end >= begin:
            out |= (t >= begin - EPS) & (t <= end + EPS)
        else:  # wraps through the end of a looping clip
            out |= (t >= begin - EPS) | (t <= end + EPS)
    return out


def contacts_at(tracks, times):
    """(N, 2) float32 1.0 where ``left_contact`` / ``right_contact`` cover each time (s), else 0."""
    return np.stack([tracks.inside(n, times) for n in CONTACTS], axis=-1).astype(np.float32)


def clip_length(clip, loop):
    """Seconds the clip's tracks span: the period ``frames * dt`` if looping, else the duration ``(frames - 1) dt``."""
    return clip.frames * clip.dt if loop else clip.duration


def has_feet(skel):
    """Whether ``skel`` has the contact detector's joints (``TOES``, canonical names)."""
    try:
        for t in TOES:
            skel.index(t)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- derivation


def runs(column):
    """(start, last) frame pairs (int) of the runs of True in a bool column."""
    d = np.diff(np.concatenate([[0], np.asarray(column, np.int8), [0]]))
    return list(zip(np.flatnonzero(d == 1).tolist(), (np.flatnonzero(d == -1) - 1).tolist()))


def from_contacts(contacts, dt, loop=False, duration=None, period=None, down_at_start=None):
    """Derived Tracks of per-frame contacts (F, 2) bool, left and right, at frame time ``dt`` (s) (module docstring).

    ``duration``: the time (s) of the clip's last key, where a contact on the last frame ends (default
    ``(F - 1) dt``); ``period``: a looping clip's period (default ``F dt``); ``down_at_start``: per foot,
    whether it was already down on the first frame (default: the first row of ``contacts``).
    """
    contacts = np.asarray(contacts, bool)
    frames = len(contacts)
    duration = (frames - 1) * dt if duration is None else float(duration)
    period = frames * dt if period is None else float(period)
    if down_at_start is None:
        down_at_start = contacts[0] if frames else (False, False)
    early = np.asarray(down_at_start, bool).reshape(2)
    feet, unknown = [], {}  # per foot: (begin, end) s; on a loop a contact through the end has end >= period
    for side in range(2):
        rs = runs(contacts[:, side])
        spans = [(a * dt, duration if b == frames - 1 else b * dt) for a, b in rs]
        if loop and len(rs) > 1 and rs[0][0] == 0 and rs[-1][1] == frames - 1:
            spans = spans[1:-1] + [(spans[-1][0], period + spans[0][1])]
        elif spans and frames and early[side]:
            unknown[side] = spans[0][0]  # down before the clip began: its touch-down is not in the clip
        feet.append(spans)
    ranges = {}
    for name, spans in zip(CONTACTS, feet):
        rows = np.array([(b, e - period if e >= period else e) for b, e in spans], np.float64).reshape(-1, 2)
        ranges[name] = rows[np.argsort(rows[:, 0], kind="stable")]  # a wrapping row sorts by its begin
    instants = {name: [] for name in PLANTS}
    for side, begin in stances(feet):
        if unknown.get(side) != begin:
            instants[PLANTS[side]].append(begin)
    instants = {name: np.unique(np.array(times, np.float64)) for name, times in instants.items()}
    return Tracks(float(period if loop else duration), bool(loop), instants, ranges, tuple(CONTACTS + PLANTS))


def stances(feet):
    """(side, touch-down s) of each stance: a foot's contacts in order of begin with none of the other foot's
    beginning between them are one stance (a pivoting foot lifting its toe does not step twice), touching down where
    its first contact begins."""
    order = sorted((a, side) for side, spans in enumerate(feet) for a, _ in spans)
    out = []
    for a, side in order:
        if not out or out[-1][0] != side:
            out.append((side, a))
    return out


def detection_clip(clip):
    """The clip as the contact detector sees it: at ``DETECT_FPS`` (``preprocess.resample``, unless already there)."""
    from .preprocess import resample

    return clip if abs(clip.fps - DETECT_FPS) <= 1e-6 else resample(clip, DETECT_FPS)


def derive(skel, clip, loop=False):
    """Derived Tracks of a clip: ``preprocess.foot_contacts`` on its toes at ``DETECT_FPS``; empty without toes."""
    from .preprocess import contact_candidates, settle_starts

    if not has_feet(skel):
        return Tracks(float(clip_length(clip, loop)), bool(loop))
    det = detection_clip(clip)
    found, speed = contact_candidates(skel, det, joints=TOES)
    return from_contacts(settle_starts(found, speed), det.dt, loop, clip.duration, clip.frames * clip.dt,
                         down_at_start=found[0] if len(found) else None)


def clip_tracks(skel, clip, loop=False):
    """The tracks the clip carries (``clip.tracks``, set at asset load), else derived from it now."""
    tracks = getattr(clip, "tracks", None)
    return tracks if tracks is not None else derive(skel, clip, loop)


# ---------------------------------------------------------------- user tracks


def check_entries(entries):
    """TrackError for entries that cannot be a clip's tracks whatever the clip (the kinds, order and names).

    ``entries``: objects or dicts with ``name`` and ``time`` (an instant) or ``begin``/``end`` (a range).
    """
    kinds, last = {}, {}
    for e in entries:
        name, kind = _get(e, "name"), "instants" if _get(e, "time") is not None else "ranges"
        if not isinstance(name, str) or not NAME.match(name):
            raise TrackError(name, "a track name is an identifier (letters, digits and _, not starting with a digit)")
        if kinds.setdefault(name, kind) != kind:
            raise TrackError(name, "holds both instants and ranges: a track is one kind")
        if DERIVED.get(name, kind) != kind:
            got = "a range" if kind == "ranges" else "an instant"
            raise TrackError(name, f"a derived track's entries are {DERIVED[name]}, got {got}")
        t = _get(e, "time") if kind == "instants" else _get(e, "begin")
        what = "time" if kind == "instants" else "begin"
        if name in last and not t > last[name]:
            raise TrackError(name, f"{what} {t:g} s listed after {last[name]:g} s: a track's {kind} go in "
                                   f"increasing {what}, each {what} once")
        last[name] = t


def _get(entry, key):
    return entry.get(key) if isinstance(entry, dict) else getattr(entry, key, None)


def build(skel, clip, entries=(), derive_tracks=True, loop=False):
    """The Tracks of a clip asset: derived ones (unless ``derive_tracks`` is false), each name the asset gives replacing
    the derived track of that name; TrackError naming the track and value for a time outside the clip, a range
    ending before it begins on a clamped clip, or a derived track given for a clip without feet.
    """
    check_entries(entries)
    length = float(clip_length(clip, loop))
    given = {_get(e, "name") for e in entries}
    replaced = sorted(given & set(DERIVED))
    if derive_tracks and replaced and not has_feet(skel):
        raise TrackError(replaced[0], "replaces a derived track, but the clip has no feet: the contact detector "
                                      f"needs the joints {' and '.join(TOES)}")
    if not derive_tracks:
        tracks = Tracks(length, bool(loop))
    else:
        tracks = derive(skel, clip, loop)
        tracks = Tracks(length, bool(loop), {k: v for k, v in tracks.instants.items() if k not in given},
                        {k: v for k, v in tracks.ranges.items() if k not in given},
                        tuple(n for n in tracks.derived if n not in given))
    where = "[0, {:g}) s (the looping clip's period)" if loop else "[0, {:g}] s (the clip's duration)"
    fits = (lambda t: 0.0 <= t < length) if loop else (lambda t: 0.0 <= t <= length + EPS)
    for e in entries:
        name = _get(e, "name")
        if _get(e, "time") is not None:
            values = [("time", float(_get(e, "time")))]
        else:
            values = [("begin", float(_get(e, "begin"))), ("end", float(_get(e, "end")))]
        for key, t in values:
            if not (math.isfinite(t) and fits(t)):
                raise TrackError(name, f"{key} {t:g} s is outside the clip: {where.format(length)}")
        if len(values) == 1:
            tracks.instants[name] = np.append(tracks.instants.get(name, np.zeros(0)), values[0][1])
            continue
        (_, b), (_, t) = values
        if t < b and not loop:
            raise TrackError(name, f"end {t:g} s before begin {b:g} s: only a looping clip's range wraps through "
                                   "the end")
        tracks.ranges[name] = np.vstack([tracks.ranges.get(name, np.zeros((0, 2))), [[b, t]]])
    return tracks
