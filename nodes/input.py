"""Graph input: a signal the caller sets per frame, per character, without re-planning.

The value and its rate live in the signal buffer; ``Instance.step(dt, {"id": v})``
writes them before the compiled call (``v`` or ``(v, rate)``; a scalar broadcasts to
every character, an array of length B sets each one).  The kernel itself does nothing.
A value given without a rate has rate 0.  Values and rates lie within ``±SIGNAL_MAX``
(1e9; ``step`` refuses others); scalar, int and vec3 values are clamped to ``[min, max]``.
"""

from typing import ClassVar, Literal, Optional

import numpy as np
from numba import njit
from pydantic import Field, model_validator

from animgraph.limits import SIGNAL_MAX, Signal, SignalValue
from animgraph.node import Node, Port, register

SIGNAL_KINDS = ("scalar", "vec3", "quat", "int", "bool")
CLAMPED = ("scalar", "int", "vec3")  # kinds whose values min and max bound


def signal_value(kind, value):
    """A field value as the float64 value part of a signal of ``kind`` (rate excluded)."""
    if kind == "scalar":
        return np.array([0.0 if value is None else float(value)])
    if kind == "vec3":
        v = np.zeros(3) if value is None else np.asarray(value, dtype=np.float64).reshape(-1)
        if v.shape != (3,):
            raise ValueError(f"a vec3 value needs 3 numbers, got {len(v)}")
        return v
    if kind == "quat":
        q = np.array([1.0, 0.0, 0.0, 0.0]) if value is None else np.asarray(value, dtype=np.float64).reshape(-1)
        if q.shape != (4,):
            raise ValueError(f"a quat value needs 4 numbers (w, x, y, z), got {len(q)}")
        n = np.linalg.norm(q)
        if not n > 0.5:
            raise ValueError(f"a quat value must be a unit quaternion (w, x, y, z), got norm {n:g}")
        return q / n
    if kind == "int":
        if value is None:
            return np.zeros(1)
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"an int value must be whole, got {value}")
        return np.array([float(int(value))])
    if kind == "bool":
        if value is None:
            return np.zeros(1)
        if value not in (0, 1, True, False):
            raise ValueError(f"a bool value must be true or false, got {value}")
        return np.array([1.0 if value else 0.0])
    raise ValueError(f"unknown signal kind {kind!r}")


def normalize_value(kind, value):
    """The JSON form of a signal value of ``kind`` (float, list, int or bool)."""
    v = signal_value(kind, value)
    if kind == "scalar":
        return float(v[0])
    if kind in ("vec3", "quat"):
        return [float(x) for x in v]
    if kind == "int":
        return int(v[0])
    return bool(v[0])


@njit(cache=True)
def run(ins, outs, par, st, pose, sig, db, dt):
    pass  # the runtime writes the value into sig[outs[0]:] before each frame


@register(run)
class Input(Node):
    """A graph input set by the caller each frame (value and rate), per character."""

    type: Literal["input"] = "input"
    signal: Literal["scalar", "vec3", "quat", "int", "bool"] = "scalar"
    default: SignalValue = Field(
        None,
        description="initial value (scalar: number, vec3: [x,y,z], quat: [w,x,y,z]; numbers within "
        f"±{SIGNAL_MAX:g}); none: zero/identity",
    )
    min: Optional[Signal] = Field(
        None, description=f"lowest value (scalar, int, vec3 components) within ±{SIGNAL_MAX:g}; step() clamps to it"
    )
    max: Optional[Signal] = Field(
        None, description=f"highest value (scalar, int, vec3 components) within ±{SIGNAL_MAX:g}; step() clamps to it"
    )

    OUTPUTS = (Port("value", "any", "", "the input value and its rate; its kind is the 'signal' field"),)
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
        return self

    def bounds(self):
        """(low, high) that step() clamps scalar, int and vec3 values to (the whole signal range by default)."""
        return (-SIGNAL_MAX if self.min is None else self.min, SIGNAL_MAX if self.max is None else self.max)

    def outputs(self):
        return (Port("value", self.signal, "", "the input value and its rate"),)
