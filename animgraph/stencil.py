"""The verify stencil: how a node's verify case evaluates its op around test times (see ``animgraph.verify``).

A bottom-layer module: node files import it for their ``verify_case`` without importing
the verify command (which imports every node).  A case is ``(motion, t (G,), h, rng) ->
list of stencils``, each the op's outputs (Pose, batch G) at the times ``t + k h``, ``k``
in ``STEPS``; ``motion`` is the verify command's ``Motion`` (a clip's inputs with exact
velocities: ``pose(t)``, ``other(t)``, ``glob(t)``, ``weight(t)``, targets, contacts).
"""

from __future__ import annotations

import math

import numpy as np

STEPS = (-8, -4, -2, -1, 0, 1, 2, 4, 8)  # stencil times, in steps of h
FRAME = 1.0 / 60.0  # game frame (s) the stateful cases step at before the stencil


def identity_rot(t):
    """(..., 4) identity quaternions (w-first), one per time in ``t``."""
    rot = np.zeros(np.shape(t) + (4,))
    rot[..., 0] = 1.0
    return rot


def ramp(offset, at=0.7, rate=0.5):
    """Weight ``at + rate * offset`` and its rate, one per call (look_at and two_bone_ik take one weight per batch)."""
    return at + rate * float(np.ravel(offset)[0]), rate


def stencil(f, t, h):
    """``f(t + k h)`` for every stencil point ``k`` in STEPS: a stateless op's outputs."""
    return [f(t + k * h) for k in STEPS]


def advance(step, start, stop):
    """Call ``step(times, dt)`` in equal steps of at most FRAME from ``start`` to ``stop``; the last output."""
    span = float(np.ravel(stop - start)[0])
    n = max(1, math.ceil(span / FRAME - 1e-9))
    out = None
    for k in range(1, n + 1):
        out = step(start + span * k / n, span / n)
    return out


def play(step, start, t, h):
    """A stateful op's outputs at the stencil points: stepped from ``start`` to the first, then through the rest."""
    outs = [advance(step, start, t + STEPS[0] * h)]
    for k0, k in zip(STEPS, STEPS[1:]):
        outs.append(step(t + k * h, (k - k0) * h))
    return outs
