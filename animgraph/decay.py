"""Offset decays used by inertialization, dead blending, foot locking and the tracking spring.

Every decay here is linear in the starting offset ``x0`` and its rate ``v0``, so each is
given by four weights ``(xx, xv, vx, vv)``: ``t`` seconds later the offset is
``xx*x0 + xv*v0`` and its rate ``vx*x0 + vv*v0``; vectors decay per component with the
same weights.

- ``two_rate_weights``: the offset obeys ``x'' + (a+b) x' + a b x = 0``, a sum of two
  exponentials with rates ``a`` and ``b`` (1/s); exact for any ``t``, coincident rates included.
- ``spring_weights``: the critically damped spring by half-life (both rates ``2 ln2 / halflife``),
  never overshoots for a resting offset.
- ``cubic_weights``: the Hermite cubic that reaches zero offset with zero rate at ``duration``.
- ``rate_rest_weights``: a rate alone brought to rest over ``duration``, ``v0 t (1 - t/T)^2 (1 - tail t/T)``:
  ``tail`` 0 is the cubic's own rate term, whose acceleration steps by ``2 v0 / T`` at ``T``; ``tail`` 1
  is ``v0 t (1 - t/T)^3``, zero offset, rate and acceleration at ``T`` (C2).  A fast rate cut short of
  the cubic's duration (``offsets.overshoot_weights``) ends with tail 1: its end then falls
  mid-transition, where a step would be felt as a jolt, and where a finite difference of the output
  (``animgraph verify``) straddling it measures the step, not the velocity.

``spring_decay`` / ``cubic_decay`` apply these to one scalar; ``kform_extrapolate`` carries
a kineform forward with exponentially decaying velocities (dead blending).

A half-life or duration below ``MIN_SECONDS`` (1 µs) acts as 0, an instant cut: dividing by
it would give rates (and offset velocities) that overflow to inf and then to NaN.
"""

import math

from animgraph.jit import njit

from .maths import from_scaled_angle_axis, qmul, vadd, vexp, vmul, vscale

LN2 = math.log(2.0)
MIN_SECONDS = 1e-6  # shorter half-lives and durations act as 0 (must match animgraph.limits)
MAX_RATE = 2.0 * LN2 / MIN_SECONDS  # faster decay rates (1/s) act as infinite: a cut
CUBIC_RATE_PEAK = 4.0 / 27.0  # largest s (1 - s)^2 (at s = 1/3): the cubic's rate term carries at most this |v0| duration
REST_PEAK = 27.0 / 256.0  # largest s (1 - s)^3 (at s = 1/4): rate_rest_weights with tail 1 carries at most this |v0| duration


@njit(cache=True, entry=True)
def halflife_rate(halflife):
    """Exponential rate ln2 / halflife (1/s); infinite for a half-life below MIN_SECONDS (or NaN)."""
    if not halflife >= MIN_SECONDS:
        return math.inf
    return LN2 / halflife


@njit(cache=True)
def two_rate_weights(a, b, t):
    """Weights of ``x'' + (a+b) x' + a b x = 0`` after ``t`` s, rates ``a, b >= 0`` in 1/s (inf: instant)."""
    if t == 0.0:
        return 1.0, 0.0, 0.0, 1.0
    if a > b:
        a, b = b, a
    if b > MAX_RATE:
        b = math.inf  # a faster rate is a cut: a * b would overflow
    if a > MAX_RATE:
        a = math.inf
    if a == math.inf:
        return 0.0, 0.0, 0.0, 0.0
    ea = math.exp(-a * t)
    if b == math.inf:
        # The fast mode is gone at once: a first-order decay at rate a.
        return ea, 0.0, -a * ea, 0.0
    # d = (e^-at - e^-bt) / (b - a), via expm1 so that b -> a gives t e^-at without cancellation.
    gap = b - a
    d = ea * t if gap == 0.0 else ea * (-math.expm1(-gap * t)) / gap
    eb = math.exp(-b * t)
    return ea + a * d, d, -a * b * d, eb - a * d


@njit(cache=True)
def spring_weights(halflife, t):
    """Weights of the critically damped offset decay by half-life (s); below MIN_SECONDS: no offset."""
    if not halflife >= MIN_SECONDS:
        return 0.0, 0.0, 0.0, 0.0
    y = 2.0 * LN2 / halflife
    return two_rate_weights(y, y, t)


@njit(cache=True)
def cubic_weights(duration, t):
    """Weights of the cubic offset decay over ``duration`` (s); zero from ``duration`` on (below MIN_SECONDS: at once)."""
    if t >= duration or not duration >= MIN_SECONDS:
        return 0.0, 0.0, 0.0, 0.0
    s = t / duration
    return (
        2.0 * s**3 - 3.0 * s**2 + 1.0,
        (s**3 - 2.0 * s**2 + s) * duration,
        (6.0 * s**2 - 6.0 * s) / duration,
        3.0 * s**2 - 4.0 * s + 1.0,
    )


@njit(cache=True)
def rate_rest_weights(duration, tail, t):
    """Weights ``(xv, vv)`` (s, 1) of ``v0 t (1 - t/duration)^2 (1 - tail t/duration)`` and its rate; zero from ``duration`` on.

    ``tail`` in [0, 1]; the largest value is at most ``(1 - tail) CUBIC_RATE_PEAK + tail REST_PEAK``
    times ``|v0| duration`` (a mix of ``s (1-s)^2`` and ``s (1-s)^3``).  Below MIN_SECONDS: at rest at once.
    """
    if t >= duration or not duration >= MIN_SECONDS:
        return 0.0, 0.0
    s = t / duration
    return t * (1.0 - s) ** 2 * (1.0 - tail * s), (1.0 - s) * (1.0 - 3.0 * s - 2.0 * tail * s * (1.0 - 2.0 * s))


@njit(cache=True)
def decay_weights(cubic, length, t):
    """Cubic weights over ``length`` s if ``cubic``, else spring weights with half-life ``length`` s."""
    if cubic:
        return cubic_weights(length, t)
    return spring_weights(length, t)


@njit(cache=True)
def spring_decay(x0, v0, halflife, t):
    """Offset and its rate ``t`` seconds after starting at ``(x0, v0)``, half-life in seconds."""
    w = spring_weights(halflife, t)
    return w[0] * x0 + w[1] * v0, w[2] * x0 + w[3] * v0


@njit(cache=True)
def cubic_decay(x0, v0, duration, t):
    """Offset and its rate ``t`` seconds after starting at ``(x0, v0)``; zero from ``duration`` on."""
    w = cubic_weights(duration, t)
    return w[0] * x0 + w[1] * v0, w[2] * x0 + w[3] * v0


@njit(cache=True)
def decay3(w, x0, v0):
    """A vec3 offset and its rate from weights ``w`` and the starting vec3s ``x0``, ``v0``."""
    return vadd(vscale(x0, w[0]), vscale(v0, w[1])), vadd(vscale(x0, w[2]), vscale(v0, w[3]))


@njit(cache=True)
def coast(rate, t):
    """Distance factor ``(1 - e^-rate t) / rate`` (s) and velocity factor ``e^-rate t``; rate 0: ``t`` and 1."""
    if rate == 0.0:
        return t, 1.0
    if rate > MAX_RATE:
        return 0.0, 0.0
    return -math.expm1(-rate * t) / rate, math.exp(-rate * t)


@njit(cache=True)
def kform_extrapolate(k, rate, t):
    """Kineform ``k`` carried ``t`` s on with its velocities decaying at ``rate`` (1/s, 0: constant, inf: held).

    ``pos + vel (1 - e^-rate t)/rate``, rotation and log-scale likewise (each about a fixed
    axis, so the angular velocity stays exact); velocities times ``e^-rate t``.
    """
    pos, rot, scl, vel, ang, svl = k
    dist, fade = coast(rate, t)
    return (
        vadd(pos, vscale(vel, dist)),
        qmul(from_scaled_angle_axis(vscale(ang, dist)), rot),
        vmul(scl, vexp(vscale(svl, dist))),
        vscale(vel, fade),
        vscale(ang, fade),
        vscale(svl, fade),
    )
