"""Offset decays used by inertialization and foot locking (scalar, applied per component).

``spring_decay`` is the critically damped spring by half-life (exact solution,
never overshoots for a resting offset); ``cubic_decay`` is the Hermite cubic that
reaches zero offset with zero velocity at ``duration``.
"""

import math

from numba import njit

LN2 = math.log(2.0)


@njit(cache=True)
def spring_decay(x0, v0, halflife, t):
    """Offset and its rate ``t`` seconds after starting at ``(x0, v0)``, half-life in seconds."""
    if halflife <= 0.0:
        return 0.0, 0.0
    y = 2.0 * LN2 / halflife
    j1 = v0 + x0 * y
    e = math.exp(-y * t)
    return e * (x0 + j1 * t), e * (v0 - j1 * y * t)


@njit(cache=True)
def cubic_decay(x0, v0, duration, t):
    """Offset and its rate ``t`` seconds after starting at ``(x0, v0)``; zero from ``duration`` on."""
    if t >= duration or duration <= 0.0:
        return 0.0, 0.0
    s = t / duration
    x = x0 * (2.0 * s**3 - 3.0 * s**2 + 1.0) + v0 * duration * (s**3 - 2.0 * s**2 + s)
    v = x0 * (6.0 * s**2 - 6.0 * s) / duration + v0 * (3.0 * s**2 - 4.0 * s + 1.0)
    return x, v
