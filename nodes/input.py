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

from animgraph.limits import SIGNAL_MAX, Signal, SignalValue, normalize_value, signal_value
from animgraph.node import Node, Port, port_indices, register

SIGNAL_KINDS = ("scalar", "vec3", "quat", "int", "bool", "trajectory")
CLAMPED = ("scalar", "int", "vec3")  # kinds whose values min and max bound

OUTPUTS = (Port("value", "any", "", "the input value and its rate; its kind is the 'signal' field"),)
OUT = port_indices("InputOut", OUTPUTS)


@njit(cache=True, inline="always")
def input_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: nothing (the runtime writes the value into ``sig[outs[OUT.value]:]`` before each frame)."""
    pass


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
        return self

    def bounds(self):
        """(low, high) that step() clamps scalar, int and vec3 values to (the whole signal range by default)."""
        return (-SIGNAL_MAX if self.min is None else self.min, SIGNAL_MAX if self.max is None else self.max)

    def outputs(self):
        return (Port("value", self.signal, "", "the input value and its rate"),)
