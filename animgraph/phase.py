"""A clip's gait phase from its plant markers: time (s) <-> phase (cycles), both ways, for sync groups.

A gait cycle is two steps: the left foot's plant is phase 0 (mod 1), the right foot's 0.5.  Between
consecutive plants (``left_plant``/``right_plant`` instants, ``animgraph.tracks``) the phase runs
linearly, half a cycle per segment (a whole cycle when the same foot plants twice in a row: the
other foot's step is missing, and the feet keep their phases).  So clips of different lengths, or
starting on opposite feet, line up plant to plant.

The phase here is *unwrapped*: ``u`` grows through the clip, starting at the first marker's phase
(0 or 0.5).  A looping clip of period ``L`` wraps from its last marker through the end to its first
marker at ``t0 + L``: half a cycle when the last plant is the other foot's, a whole one when the same
foot's; so ``C`` cycles per loop, a whole number; its times are taken modulo ``L`` and its phases
modulo ``C``.  A captured clip rarely ends where it began, so a sync group plays its looping clips
cut to their whole cycles (``whole_cycles``: first plant to the same foot's last, the ends moved to
where the pose repeats: the sample node's ``cycles``).  A clamped clip's phase
runs before its first and after its last marker at the nearest segment's rate and stops at the
clip's ends (time 0 and its duration), where its time stands still.

``markers`` builds the table at plan time; ``phase_at`` and ``time_at`` are the compiled maps (a
short walk over a handful of segments, no search structure needed).
"""

from __future__ import annotations

import math

import numpy as np

from animgraph.jit import njit

LEFT, RIGHT = 0.0, 0.5  # the phase (mod 1) of each foot's plant


class MarkerError(ValueError):
    """A clip whose plants cannot give a phase (fewer than two alternating plants)."""


def markers(left, right, length, loop):
    """(times (n,) s, phases (n,) cycles, cycles per loop, period s) from the plant instants of each foot.

    ``left``/``right``: plant times (s) in ``[0, length]``; ``length``: a looping clip's period or a
    clamped clip's duration (s).  A looping clip's table ends with its wrap marker (the first marker +
    ``length``); cycles per loop is 0 for a clamped clip.  MarkerError when the clip has no plant of one
    foot (a phase needs at least one step of each foot).
    """
    times, phases = _plants(left, right)
    if not loop:
        return np.asarray(times, np.float64), np.asarray(phases, np.float64), 0.0, float(length)
    wrap = phases[-1] + _step(phases[-1], phases[0])
    times.append(times[0] + float(length))
    phases.append(wrap)
    return np.asarray(times, np.float64), np.asarray(phases, np.float64), wrap - phases[0], float(length)


def whole_cycles(left, right):
    """(first plant, the last plant of the same foot) in s: the clip's whole gait cycles, or None under one cycle."""
    times, phases = _plants(left, right)
    same = [k for k in range(1, len(phases)) if abs((phases[k] - phases[0]) % 1.0) < 1e-9]
    return (times[0], times[same[-1]]) if same else None


def _plants(left, right):
    """([plant times], [unwrapped phases]) of both feet in time order (MarkerError as ``markers``)."""
    left, right = np.asarray(left, np.float64).reshape(-1), np.asarray(right, np.float64).reshape(-1)
    if len(left) == 0 or len(right) == 0:
        lacks = "left_plant" if len(left) == 0 else "right_plant"
        raise MarkerError(f"has no {lacks} marker: a phase needs at least one plant of each foot")
    events = sorted([(float(t), LEFT) for t in left] + [(float(t), RIGHT) for t in right])
    times, phases = [events[0][0]], [events[0][1]]
    for t, foot in events[1:]:
        if t <= times[-1]:
            raise MarkerError(f"two plants at {t:g} s: the feet plant at different times")
        phases.append(phases[-1] + _step(phases[-1], foot))
        times.append(t)
    return times, phases


def _step(phase, foot):
    """Phase from a plant at ``phase`` to the next plant of ``foot``: half a cycle, a whole one for the same foot."""
    return 0.5 if abs((phase - foot) % 1.0 - 0.5) < 1e-9 else 1.0


@njit(cache=True)
def _segment(xs, x):
    """Index k of the segment [xs[k], xs[k+1]] holding x (clamped to the first and last segments)."""
    k = 0
    while k < len(xs) - 2 and x >= xs[k + 1]:
        k += 1
    return k


@njit(cache=True)
def phase_at(times, phases, loop, period, t):
    """(phase u (cycles), du/dt (cycles/s)) of clip time ``t`` (s): wrapped into the loop (``period`` s from the
    first marker), or clamped to ``[0, period]`` (a clamped clip's duration) and extrapolated."""
    if loop:
        t0 = times[0]
        t = t0 + (t - t0) % period
        if t >= t0 + period:
            t = t0
    else:
        t = min(max(t, 0.0), period)
    k = _segment(times, t)
    slope = (phases[k + 1] - phases[k]) / (times[k + 1] - times[k])
    return phases[k] + (t - times[k]) * slope, slope


@njit(cache=True)
def time_at(times, phases, loop, length, cycles, u):
    """(clip time t (s), dt/du (s/cycle), du/dt of its segment (cycles/s)) at phase ``u`` (cycles).

    A looping clip takes ``u`` modulo its cycles per loop, a time past the clip's ``length`` (s: its
    period, for a wrap through the end) coming round to its start; a clamped clip (``length`` its
    duration) stops at its ends, where ``dt/du`` is 0 (the time stands still while the phase goes on).
    """
    if loop:
        u0 = phases[0]
        u = u0 + (u - u0) % cycles
        if u >= u0 + cycles:
            u = u0
    k = _segment(phases, u)
    slope = (phases[k + 1] - phases[k]) / (times[k + 1] - times[k])
    t = times[k] + (u - phases[k]) / slope
    if loop:
        if t >= length:
            t -= length
        if t < 0.0 or t >= length:  # rounding at the wrap
            t = 0.0
        return t, 1.0 / slope, slope
    if t <= 0.0:
        return 0.0, 0.0, slope
    if t >= length:
        return length, 0.0, slope
    return t, 1.0 / slope, slope


@njit(cache=True)
def nearest_cycle(u, target):
    """The whole number k making ``target + k`` the nearest to ``u`` (a member joining a group keeps its step)."""
    return float(math.floor(u - target + 0.5))
