"""Graph input: a signal the caller sets per frame, per character, without re-planning.

``Instance.step(dt, {"id": v})`` writes what the caller gives (``v`` or ``(v, rate)``; a
scalar broadcasts to every character, an array of length B sets each one) into the
input's *caller block*, which the plan lays right after its output block: the value, the
rate, and a flag set when no rate was given.  Each frame the kernel turns it into the output:

- a rate given is taken as it is (and stays until set again, like the value);
- a scalar or vec3 given without a rate gets the rate of its change over the step,
  ``(v - v_prev) / dt``: exact for a value that moves linearly within the step, 0 on the
  first step and after a reset or a teleport (a dt of 0 keeps the last rate);
  int, bool, quat and trajectory values without a rate have rate 0;
- ``smooth`` (a half-life in s, scalar and vec3 only) passes the value through a
  critically damped spring: the target moves linearly over the step from ``v - rate dt`` to
  ``v`` and the spring's offset from it decays exactly (``animgraph.decay.spring_decay``),
  so the output's rate is the exact derivative of its value, whatever the caller sets.

Values and rates lie within ``±SIGNAL_MAX`` (1e9; ``step`` refuses others; a derived rate is
clamped to it); scalar, int and vec3 values are clamped to ``[min, max]``.
"""

from typing import ClassVar, Literal, Optional

import numpy as np
from numba import njit
from pydantic import Field, model_validator

from animgraph.decay import spring_decay
from animgraph.limits import MIN_SECONDS, SECONDS_MAX, SIGNAL_MAX, Signal, SignalValue, normalize_value, signal_value
from animgraph.node import SIGNAL_SIZE, Node, Port, fields, port_indices, register

SIGNAL_KINDS = ("scalar", "vec3", "quat", "int", "bool", "trajectory")
CLAMPED = ("scalar", "int", "vec3")  # kinds whose values min and max bound
DERIVED = ("scalar", "vec3")  # kinds whose rate, when none is given, comes from the change over the step
VALUE_SIZE = {"scalar": 1, "vec3": 3, "quat": 4, "int": 1, "bool": 1, "trajectory": 12}

OUTPUTS = (Port("value", "any", "", "the input value and its rate; its kind is the 'signal' field"),)
OUT = port_indices("InputOut", OUTPUTS)


# The caller block (after the output block of SIGNAL_SIZE numbers): the value, the rate, then DERIVE_FLAG.
# width, size: the value's and the signal's numbers; derive: 1 for DERIVED kinds; smooth: half-life (s), 0 off
PAR = fields("InputPar", width=1, size=1, derive=1, smooth=1)
# started: 0 on the first frame and after a reset or teleport; prev, rate: the last value and its rate;
# x, v: the spring's value and rate
ST = fields("InputSt", started=1, prev=3, rate=3, x=3, v=3)


def caller_block(kind):
    """Numbers of an input's caller block: its signal's block and the flag 'no rate given' (1.0)."""
    return SIGNAL_SIZE[kind] + 1


@njit(cache=True)
def input_kernel(sig, out, par, st, dt):
    """Write the output block at ``sig[out:]`` from the caller block after it (module doc); ``dt`` in s."""
    n, size = int(par[PAR.width]), int(par[PAR.size])
    given = out + size
    if par[PAR.derive] == 0.0:
        for i in range(size):
            sig[out + i] = sig[given + i]
        return
    derive, started, halflife = sig[given + size] != 0.0, st[ST.started] != 0.0, par[PAR.smooth]
    for i in range(n):
        v = sig[given + i]
        if not derive:
            rate = sig[given + n + i]
        elif not started:
            rate = 0.0
        elif dt > 0.0:
            rate = min(max((v - st[ST.prev + i]) / dt, -SIGNAL_MAX), SIGNAL_MAX)
        else:
            rate = st[ST.rate + i]
        x, xv = v, rate
        if halflife >= MIN_SECONDS and started:
            # The offset from a target moving at ``rate`` from v - rate dt to v decays as a spring's.
            e, u = spring_decay(st[ST.x + i] - (v - rate * dt), st[ST.v + i] - rate, halflife, dt)
            x, xv = v + e, rate + u
        st[ST.prev + i], st[ST.rate + i], st[ST.x + i], st[ST.v + i] = v, rate, x, xv
        sig[out + i], sig[out + n + i] = x, xv
    st[ST.started] = 1.0


@njit(cache=True, inline="always")
def input_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the output from what the caller wrote (value, given or derived rate, spring)."""
    input_kernel(sig, outs[OUT.value], par, st, dt)


@register(input_node)
class Input(Node):
    """A graph input set by the caller each frame (value and rate), per character."""

    type: Literal["input"] = "input"
    signal: Literal["scalar", "vec3", "quat", "int", "bool", "trajectory"] = "scalar"
    default: SignalValue = Field(
        None,
        description="initial value (scalar: number, vec3: [x,y,z], quat: [w,x,y,z], trajectory: 3 positions x,z "
        f"then 3 facings x,z; numbers within ±{SIGNAL_MAX:g}); none: zero/identity/at rest",
    )
    min: Optional[Signal] = Field(
        None, description=f"lowest value (scalar, int, vec3 components) within ±{SIGNAL_MAX:g}; step() clamps to it"
    )
    max: Optional[Signal] = Field(
        None, description=f"highest value (scalar, int, vec3 components) within ±{SIGNAL_MAX:g}; step() clamps to it"
    )

    smooth: Optional[float] = Field(
        None, ge=0.0, le=SECONDS_MAX, allow_inf_nan=False,
        description=f"scalar and vec3: half-life (s, [0, {SECONDS_MAX:g}]) of a critically damped spring the value "
        "passes through, for callers who set steps; none: the value as set")

    CATEGORY = "signals"
    FIELD_KINDS = {"signal": "signal", "default": "value"}
    PLUMBING = True
    OUTPUTS = OUTPUTS
    GRAPH_INPUT: ClassVar[bool] = True

    @model_validator(mode="after")
    def _check_default(self):
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}")
        if self.default is not None:
            self.default = normalize_value(self.signal, self.default)
            if self.signal in CLAMPED:
                low = -SIGNAL_MAX if self.min is None else self.min
                high = SIGNAL_MAX if self.max is None else self.max
                if not np.all((low <= signal_value(self.signal, self.default))
                              & (signal_value(self.signal, self.default) <= high)):
                    raise ValueError(f"default {self.default} is outside [min, max] = [{low:g}, {high:g}]")
        if self.smooth is not None and self.signal not in DERIVED:
            raise ValueError(f"smooth: only a scalar or vec3 input is smoothed, not a {self.signal}")
        return self

    def caller_size(self):
        """Numbers of the block the caller writes (the planner lays it right after the output block)."""
        return caller_block(self.signal)

    def params(self, ctx):
        return PAR.pack(width=VALUE_SIZE[self.signal], size=SIGNAL_SIZE[self.signal],
                        derive=float(self.signal in DERIVED), smooth=self.smooth or 0.0)

    def state(self, ctx, time=0.0):
        return np.zeros(ST.SIZE)

    @staticmethod
    def restart(state):
        """Mark rows of this node's state (n, ST.SIZE) as on their first frame again (a teleport: no rate across it)."""
        state[:, ST.started] = 0.0

    def bounds(self):
        """(low, high) that step() clamps scalar, int and vec3 values to (the whole signal range by default)."""
        return (-SIGNAL_MAX if self.min is None else self.min, SIGNAL_MAX if self.max is None else self.max)

    def outputs(self):
        return (Port("value", self.signal, "", "the input value and its rate"),)
