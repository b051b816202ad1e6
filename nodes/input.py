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

import math
from typing import ClassVar, Literal, Optional

import numpy as np
from animgraph.jit import njit
from pydantic import Field, model_validator

from animgraph.decay import spring_decay
from animgraph.errors import GraphError
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

    def write_input(self, op, rows):
        """Hook: ``check(value) -> write()`` of what the caller sets (module doc) into the caller block of ``rows``."""
        return _checker(self, op, rows)

    def teleport(self, op, rows, pos_delta, rot_delta):
        """Hook: a rate from the change across a teleport would be a jump's: the next frame is a first one."""
        block = op.st[rows]  # a copy (rows index it): written back
        self.restart(block)
        op.st[rows] = block

    def bounds(self):
        """(low, high) that step() clamps scalar, int and vec3 values to (the whole signal range by default)."""
        return (-SIGNAL_MAX if self.min is None else self.min, SIGNAL_MAX if self.max is None else self.max)

    def outputs(self):
        return (Port("value", self.signal, "", "the input value and its rate"),)


def _unit_facings(a, fail, given):
    """Trajectory values (n, 12) with their three facings (x, z) made unit; ``fail`` on a zero facing."""
    a = a.copy()
    facings = a[:, 6:].reshape(-1, 3, 2)
    facings /= np.max(np.abs(facings), axis=2, keepdims=True).clip(1e-300)
    norm = np.linalg.norm(facings, axis=2, keepdims=True)
    if not np.all(norm > 0.5):
        fail(f"a trajectory value needs non-zero facings (its last 6 numbers), got {given!r}")
    a[:, 6:] = (facings / norm).reshape(-1, 6)
    return a


def _checker(node, op, rows):
    """``check(value) -> write()``: one input's value (and rate) checked, clamped, and its write into the caller block.

    A value applies to every character of ``rows``, or one per character (a leading axis of ``len(rows)``).
    """
    kind, name, file = node.signal, op.id, op.file
    n, size, batch = VALUE_SIZE[kind], SIGNAL_SIZE[kind], len(rows)
    off = int(op.outs[OUT.value]) + size  # the caller block, right after the output block
    every = batch == op.sig.shape[0] and np.array_equal(rows, np.arange(batch))
    sig, at = op.sig, slice(None) if every else rows  # every character: a plain slice (no index array)
    value_col, rate_col, no_rate_col = off, off + 1 if size > 1 else None, off + size  # no_rate: derive the rate
    value_block, rate_block, derived = slice(off, off + n), slice(off + n, off + size), kind in DERIVED
    low, high = node.bounds() if kind in CLAMPED else (-SIGNAL_MAX, SIGNAL_MAX)

    def put(col, values):
        sig[at, col] = values

    def fail(why):
        raise GraphError(why, name, "value", file)

    def number(v, what):
        """A finite float within the signal range from a Python number (bool and int included)."""
        x = float(v)
        if not math.isfinite(x):
            fail(f"{what} is not finite: {v!r}")
        if not -SIGNAL_MAX <= x <= SIGNAL_MAX:
            fail(f"{what} {v!r} is outside [-{SIGNAL_MAX:g}, {SIGNAL_MAX:g}]")
        return x

    def parse(v, width, what):
        if isinstance(v, (str, bytes, dict, set)) or v is None:
            fail(f"{what} must be a number or an array of numbers, got {type(v).__name__} {v!r}")
        try:
            a = np.asarray(v)
        except (TypeError, ValueError):
            fail(f"{what} must be a number or a regular array of numbers, got {v!r}")
        if a.dtype.kind not in "biuf":
            fail(f"{what} must be a number or an array of numbers, got {a.dtype} {v!r}")
        a = a.astype(np.float64)
        if a.shape == (width,) or (width == 1 and a.shape == ()):
            a = a.reshape(1, width)
        elif a.shape == (batch, width) or (width == 1 and a.shape == (batch,)):
            a = a.reshape(batch, width)
        else:
            fail(f"{what} of shape {a.shape}: expected ({width},) or ({batch}, {width}) for a {kind} input")
        if not np.all(np.isfinite(a)):
            fail(f"{what} is not finite: {v!r}")
        if not np.all(np.abs(a) <= SIGNAL_MAX):
            fail(f"{what} is outside [-{SIGNAL_MAX:g}, {SIGNAL_MAX:g}]: {v!r}")
        return a

    def single(x, rate, no_rate):
        """The write of one number (and rate, or none) to every character, clamped to [low, high]."""
        if kind == "bool":
            x = float(x != 0)
        elif kind in CLAMPED and not low <= x <= high:
            x, rate = min(max(x, low), high), 0.0  # held at the bound: no rate
        if kind == "int":
            x = float(math.floor(x + 0.5))

        def write():
            put(value_col, x)
            if rate_col is not None:
                put(rate_col, rate)
            put(no_rate_col, float(no_rate and derived))

        return write

    def check(value):
        t = type(value)
        if t is float or t is int or t is bool:
            if n != 1:
                fail(f"a {kind} input needs {n} numbers, got {value!r}")
            return single(number(value, "value"), 0.0, True)
        if t is tuple and len(value) == 2 and size > n:
            val, rate = value
            if n == 1 and type(val) in (float, int) and type(rate) in (float, int):  # fast path: scalar, rate
                return single(number(val, "value"), number(rate, "rate"), False)
        elif t is tuple and size == n:
            fail(f"a {kind} input has no rate: give the value only")
        else:
            val, rate = value, None
        a = parse(val, n, "value")
        r = np.zeros((1, size - n)) if rate is None else parse(rate, size - n, "rate")
        if kind == "quat":
            a = a / np.max(np.abs(a), axis=1, keepdims=True).clip(1e-300)
            norm = np.linalg.norm(a, axis=1, keepdims=True)
            if not np.all(norm > 0.5):
                fail(f"a quat value needs a non-zero norm, got {val!r}")
            a = a / norm
        elif kind == "trajectory":
            a = _unit_facings(a, fail, val)
        elif kind == "bool":
            a = (a != 0).astype(np.float64)
        elif kind in CLAMPED:
            held = (a < low) | (a > high)
            if np.any(held):
                a = np.clip(a, low, high)
                if size > n:
                    r = np.where(held, 0.0, r)  # held at the bound: no rate
            if kind == "int":
                a = np.floor(a + 0.5)

        def write():
            put(value_block, a)
            if size > n:
                put(rate_block, r)
            put(no_rate_col, float(rate is None and derived))

        return write

    return check
