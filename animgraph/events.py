"""Events: what happened inside a step, for the caller (footsteps, notifies), as data, exact in time under any step.

Each character's signal buffer begins with its *event block* (the planner puts it there): a header
``[capacity, count, lost, step]`` then up to ``capacity`` records of ``REC`` floats::

    step (the instance's step index), time (s after the step began), source (the op index),
    name (an id into the plan's event names), kind (INSTANT, BEGIN, END), weight, detail (a name id; 0: none)

A node writes with ``emit``; a full block counts the event as lost instead (``Instance.events``
reports it: never silent).  ``Instance`` stamps the step index into the header before each step and
reads the records out, in time order per character, only when asked; a plan with no node that emits
gets capacity 0 (a four-float header, nothing written).

Clock crossings (``clock_events``): a clip's tracks are points on its time line -- instants, and the
begin and end of each range -- and a step moves the clock from ``a`` to ``b`` (s, unwrapped: a
looping clip's points repeat every ``length`` s, so a step longer than the clip crosses each point
once per lap, in order).  Forward (``b > a``) the points in ``(a, b]`` fire, backward those in
``[b, a)``, so a point on a step boundary fires once; the event's time within the step is
``dt (x - a) / (b - a)``: exact for a clock that moves at a constant rate over the step.  A range
opens when its begin is crossed forward or its end backward, and closes the other way; each keeps
an open flag, so a begin is always followed by exactly one end.  A range
ended early -- by a reset, a teleport (their hooks), or its source falling *muted* -- is marked
*interrupted*, and opens again (a begin at time 0 of a step) where it holds the clock once the source
speaks; a *fresh* clock (after a reset) also opens the ranges holding it and fires the instants at
``a`` itself.  A source is muted below its weight threshold (detail ``weight``), and for the foot's
tracks (plants and contacts) when it does not lead its sync group (``leader``): a muted source
emits nothing, and the ranges it had open end.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from animgraph.jit import njit

CAP, COUNT, LOST, STEP = range(4)  # the event block's header
HEAD = 4
R_STEP, R_TIME, R_SOURCE, R_NAME, R_KIND, R_WEIGHT, R_DETAIL = range(7)  # one record
REC = 7
INSTANT, BEGIN, END = 0, 1, 2
KINDS = ("instant", "begin", "end")
# Points of a clip's time line (``points``): position (s), name id, what it is, the range row it bounds, whether
# it is the foot's (a plant or a contact: only a sync group's leader emits those).
P_AT, P_NAME, P_WHAT, P_ROW, P_FOOT = range(5)
POINT = 5
AN_INSTANT, A_BEGIN, AN_END = 0.0, 1.0, 2.0
# Its ranges (``points``' second table): begin and end (s), name id, the foot's.
G_BEGIN, G_END, G_NAME, G_FOOT = range(4)
RANGE = 4
CLOSED, OPEN, INTERRUPTED = 0.0, 1.0, -1.0  # a range's flag; interrupted: ended early, to reopen where it holds
FOOT = ("left_plant", "right_plant", "left_contact", "right_contact")  # the foot's tracks, derived or given
DEFAULT_CAPACITY = 64  # records per character between two Instance.events() calls
MAX_EVENTS = 1 << 16  # the most a plan may ask for
# Detail names every plan knows, in id order after the empty detail (0): why a range ended early.
REASONS = ("state_left", "aborted", "weight", "reset", "teleport", "leader", "ended")
REASON_WEIGHT, REASON_LEADER = REASONS.index("weight"), REASONS.index("leader")


class Event(NamedTuple):
    """One event: ``time`` in s after step ``step`` began; ``kind`` instant, begin or end; ``detail`` or ''."""

    character: int
    step: int
    time: float
    node: str
    name: str
    kind: str
    weight: float
    detail: str


class Names:
    """The plan's event names and details: one id per string (0 is the empty detail), ``REASONS`` first."""

    def __init__(self):
        self.strings = [""]
        self._ids = {"": 0}
        for reason in REASONS:
            self.id(reason)

    def id(self, name):
        """The id of ``name``, added when new."""
        if name not in self._ids:
            self._ids[name] = len(self.strings)
            self.strings.append(name)
        return self._ids[name]


def block(capacity):
    """The event block a fresh signal buffer starts with: the header and ``capacity`` empty records."""
    out = np.zeros(HEAD + REC * capacity)
    out[CAP] = capacity
    return out


def reason_id(reason):
    """The detail id of a range's early end ``reason`` (one of ``REASONS``): the same in every plan's ``Names``."""
    return REASONS.index(reason) + 1


def points(tracks, names):
    """(points (n, POINT), ranges (r, RANGE)) float64 of ``tracks`` (``animgraph.tracks.Tracks``) for
    ``clock_events``: every instant, and each range's begin and end, sorted by position (on a loop a range may
    wrap through the end); and the ranges, one row each.  ``names``: the plan's ``Names``."""
    rows, spans = [], []
    for name in tracks.names():
        nid, foot = names.id(name), float(name in FOOT)
        for t in tracks.instants.get(name, ()):
            rows.append((float(t), nid, AN_INSTANT, -1.0, foot))
        for begin, end in tracks.ranges.get(name, np.zeros((0, 2))):
            rows.append((float(begin), nid, A_BEGIN, float(len(spans)), foot))
            rows.append((float(end), nid, AN_END, float(len(spans)), foot))
            spans.append((float(begin), float(end), nid, foot))
    # By position; at one position a begin before its end (a zero-length range opens, then closes).
    rows.sort(key=lambda r: (r[P_AT], r[P_WHAT] == AN_END))
    return np.array(rows, np.float64).reshape(-1, POINT), np.array(spans, np.float64).reshape(-1, RANGE)


@njit(cache=True)
def emit(sig, source, name, kind, time, weight, detail):
    """Write one record into the event block at the start of ``sig`` (one character's signals), or count it lost."""
    n = int(sig[COUNT])
    if n >= sig[CAP]:
        sig[LOST] += 1.0
        return
    at = HEAD + REC * n
    sig[at + R_STEP] = sig[STEP]
    sig[at + R_TIME] = time
    sig[at + R_SOURCE] = source
    sig[at + R_NAME] = name
    sig[at + R_KIND] = kind
    sig[at + R_WEIGHT] = weight
    sig[at + R_DETAIL] = detail
    sig[COUNT] = n + 1


@njit(cache=True)
def holds(begin, end, x, loop):
    """Whether the range ``[begin, end]`` holds clock time ``x`` (s, within the clip; on a loop it may wrap)."""
    if loop and end < begin:
        return x >= begin or x <= end
    return begin <= x <= end


@njit(cache=True)
def muted(foot, weight, threshold, leads):
    """The detail id a source's events are muted with (0: not muted): below its ``threshold``, or the foot's
    tracks (``foot``) of a sync group member that does not lead."""
    if weight < threshold:
        return 1.0 + REASON_WEIGHT
    if foot > 0.5 and not leads:
        return 1.0 + REASON_LEADER
    return 0.0


@njit(cache=True)
def _fire(sig, source, pts, k, forward, opened, time, weight, threshold, leads):
    """Point ``k`` of ``pts`` crossed (``forward`` or not) at ``time`` s into the step: its event, if any."""
    if muted(pts[k, P_FOOT], weight, threshold, leads) > 0.0:
        return
    what, name = pts[k, P_WHAT], pts[k, P_NAME]
    if what == AN_INSTANT:
        emit(sig, source, name, INSTANT, time, weight, 0.0)
        return
    row = int(pts[k, P_ROW])
    opens = (what == A_BEGIN) == forward
    if opens and opened[row] == CLOSED:
        opened[row] = OPEN
        emit(sig, source, name, BEGIN, time, weight, 0.0)
    elif not opens and opened[row] == OPEN:
        opened[row] = CLOSED
        emit(sig, source, name, END, time, weight, 0.0)


@njit(cache=True)
def settle_ranges(sig, source, spans, opened, x, loop, fresh, weight, threshold, leads):
    """At a step's start (clock at ``x`` s, within the clip): end each open range its source is muted for (detail
    ``weight`` or ``leader``), marking it interrupted; reopen (begin, time 0) each interrupted one that holds the
    clock once the source speaks again, and on a fresh clock each one that holds it."""
    for row in range(spans.shape[0]):
        quiet = muted(spans[row, G_FOOT], weight, threshold, leads)
        if opened[row] == OPEN:
            if quiet > 0.0:
                opened[row] = INTERRUPTED
                emit(sig, source, spans[row, G_NAME], END, 0.0, weight, quiet)
        elif quiet == 0.0 and (fresh or opened[row] == INTERRUPTED):
            opened[row] = CLOSED
            if holds(spans[row, G_BEGIN], spans[row, G_END], x, loop):
                opened[row] = OPEN
                emit(sig, source, spans[row, G_NAME], BEGIN, 0.0, weight, 0.0)


@njit(cache=True)
def close_ranges(sig, source, spans, opened, detail):
    """End each open range (detail id ``detail``: why, ``REASONS``) at the step's start, marking it interrupted: it
    opens again where it holds the clock when its source runs on (a restart clears the flags instead)."""
    for row in range(spans.shape[0]):
        if opened[row] == OPEN:
            opened[row] = INTERRUPTED
            emit(sig, source, spans[row, G_NAME], END, 0.0, 1.0, detail)


@njit(cache=True)
def clock_events(sig, source, pts, spans, opened, a, b, loop, length, fresh, dt, weight, threshold, leads):
    """The events of a clock moving from ``a`` to ``b`` s over a step of ``dt`` s (module doc).

    ``pts``/``spans`` the clip's points and ranges (``points``), ``opened`` one open flag per range (the
    node's state), ``length`` the loop's period or the clamped clip's duration (s); a clamped clock is held
    in ``[0, length]``.  ``weight`` goes with every event; ``threshold`` and ``leads`` may mute the source
    (``muted``).  Stops walking once the block is full (each crossing past it counts as lost).
    """
    n = pts.shape[0]
    if n == 0 or sig[CAP] == 0.0 or not (math.isfinite(a) and math.isfinite(b)):
        return
    if not loop:
        a, b = min(max(a, 0.0), length), min(max(b, 0.0), length)
    x = a - length * math.floor(a / length) if loop and length > 0.0 else a
    settle_ranges(sig, source, spans, opened, x, loop, fresh, weight, threshold, leads)
    if fresh:
        for k in range(n):
            if pts[k, P_WHAT] == AN_INSTANT and _at(pts[k, P_AT], x, loop, length) and \
                    muted(pts[k, P_FOOT], weight, threshold, leads) == 0.0:
                emit(sig, source, pts[k, P_NAME], INSTANT, 0.0, weight, 0.0)
    if b == a:
        return
    forward = b > a
    span = b - a
    if not loop or length <= 0.0:
        for j in range(n):
            k = j if forward else n - 1 - j
            x = pts[k, P_AT]
            if (forward and a < x <= b) or (not forward and b <= x < a):
                _fire(sig, source, pts, k, forward, opened, dt * (x - a) / span, weight, threshold, leads)
        return
    # A loop: walk the points lap by lap from the first one past a, in the direction of travel.
    lap = math.floor(a / length)
    k = 0
    if forward:
        while k < n and lap * length + pts[k, P_AT] <= a:
            k += 1
    else:
        k = n - 1
        while k >= 0 and lap * length + pts[k, P_AT] >= a:
            k -= 1
    while True:
        if forward and k == n:
            k, lap = 0, lap + 1
        elif not forward and k < 0:
            k, lap = n - 1, lap - 1
        x = lap * length + pts[k, P_AT]
        if (forward and x > b) or (not forward and x < b):
            return
        if sig[COUNT] >= sig[CAP]:  # full: the crossings left are counted, not walked (a long step on a short clip)
            sig[LOST] += _crossings(pts, min(x, b), max(x, b), length)
            return
        _fire(sig, source, pts, k, forward, opened, dt * (x - a) / span, weight, threshold, leads)
        k += 1 if forward else -1


@njit(cache=True)
def _at(p, x, loop, length):
    """Whether point position ``p`` is clock time ``x`` (on a loop: either end of the period)."""
    return p == x or (loop and abs(p - x) == length)


@njit(cache=True)
def _crossings(pts, lo, hi, length):
    """How many of a loop's points (repeating every ``length`` s) lie in ``[lo, hi]`` s."""
    total = 0.0
    for k in range(pts.shape[0]):
        p = pts[k, P_AT]
        total += max(0.0, math.floor((hi - p) / length) - math.ceil((lo - p) / length) + 1.0)
    return total


def read(sig, sources, names, batch):
    """The events in the blocks of ``sig`` (B, n) for characters ``0..batch-1``, emptied: (events, lost per character).

    ``sources`` node id per op index, ``names`` the plan's ``Names``; events sorted by (character, step, time).
    """
    out, lost = [], np.zeros(batch, np.int64)
    for c in range(batch):
        row = sig[c]
        n = int(row[COUNT])
        recs = row[HEAD:HEAD + REC * n].reshape(n, REC)
        for r in recs:
            out.append(Event(c, int(r[R_STEP]), float(r[R_TIME]), sources[int(r[R_SOURCE])],
                             names.strings[int(r[R_NAME])], KINDS[int(r[R_KIND])], float(r[R_WEIGHT]),
                             names.strings[int(r[R_DETAIL])]))
        lost[c] = int(row[LOST])
        row[COUNT] = row[LOST] = 0.0
    out.sort(key=lambda e: (e.character, e.step, e.time))  # stable: one node's events keep their order
    return out, lost
