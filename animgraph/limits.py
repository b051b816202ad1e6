"""Accepted ranges of every number that enters the runtime: node fields, graph inputs, ``step``.

Each range is chosen so that whatever passes validation keeps the kernels finite in float32
(max ~3.4e38) and float64; every node field is declared with one of the types below, so
the JSON Schema (``animgraph schema``) states its bounds.

- times: ``|t| <= TIME_MAX`` s (sampling times, reset times);
- playback rates: ``|rate| <= RATE_MAX``;
- durations and half-lives: ``0 <= s <= SECONDS_MAX`` s; below ``MIN_SECONDS`` they act as 0
  (an instant cut; ``animgraph.decay`` does the same for callers of the kernels);
- distances: ``|d| <= DISTANCE_MAX`` m;
- axes: components ``|c| <= AXIS_MAX`` (normalized by the node);
- signal values and rates (graph inputs, constants, their min/max): ``|v| <= SIGNAL_MAX``;
- joint indices and frame numbers: ``0 <= i <= INDEX_MAX``;
- a step: ``0 <= dt <= DT_MAX`` s (0 is allowed: a paused frame); below ``DT_MIN`` it acts as 0;
- characters per plan: ``1 <= batch <= MAX_BATCH``.

``signal_value``/``normalize_value`` check a signal field's value (input defaults, constants)
and give it as the float64 values of the signal or as its JSON form (a trajectory's: its 12
numbers, facings made unit).
"""

import typing
from typing import Annotated, Literal, Tuple, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictStr, model_validator

TIME_MAX = 1e6
RATE_MAX = 100.0
SECONDS_MAX = 60.0
MIN_SECONDS = 1e-6
DISTANCE_MAX = 1e4
AXIS_MAX = 1e6
SIGNAL_MAX = 1e9
INDEX_MAX = 1_000_000
DT_MAX = 1e3
# A step shorter than this (s) is a pause: a rate derived across it is a jump's, and float32 lanes would see 0.
DT_MIN = 1e-9
MAX_BATCH = 1 << 20  # characters per plan


def seconds_field(default, description, **kw):
    """A duration or half-life field: 0..SECONDS_MAX s, finite; shorter than MIN_SECONDS acts as 0."""
    return Field(default, ge=0.0, le=SECONDS_MAX, allow_inf_nan=False,
                 description=f"{description} (s, [0, {SECONDS_MAX:g}]; below {MIN_SECONDS:g} acts as 0)", **kw)


def unit_field(default, description):
    """A weight or proportion field in [0, 1]."""
    return Field(default, ge=0.0, le=1.0, allow_inf_nan=False, description=f"{description} [0, 1]")


def cut_seconds(value):
    """``value`` seconds, or 0.0 when it is below MIN_SECONDS (an instant cut, never a division by ~0)."""
    value = float(value)
    return 0.0 if value < MIN_SECONDS else value


Signal = Annotated[float, Field(ge=-SIGNAL_MAX, le=SIGNAL_MAX, allow_inf_nan=False)]
SignalInt = Annotated[int, Field(ge=-int(SIGNAL_MAX), le=int(SIGNAL_MAX))]
AxisComponent = Annotated[float, Field(ge=-AXIS_MAX, le=AXIS_MAX, allow_inf_nan=False)]
Axis = Tuple[AxisComponent, AxisComponent, AxisComponent]
JointIndex = Annotated[int, Field(ge=0, le=INDEX_MAX)]
JointName = Union[StrictStr, JointIndex]
SignalValue = Union[bool, SignalInt, Signal, Annotated[list[Signal], Field(min_length=1, max_length=12)], None]
TRAJECTORY_VALUE = 12  # numbers of a trajectory value: 3 positions (x, z), then 3 facings (x, z)
# A trajectory standing still, facing ahead: positions at the origin, facings +Z.
TRAJECTORY_REST = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0)


def signal_value(kind, value):
    """A field value as the float64 value part of a signal of ``kind`` (rate excluded)."""
    if isinstance(value, list) and kind in ("scalar", "int", "bool"):
        raise ValueError(f"{'an' if kind == 'int' else 'a'} {kind} value is one {'number' if kind != 'bool' else 'true or false'}, "
                         f"got a list of {len(value)}")
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
    if kind == "trajectory":
        return trajectory_value(value)
    raise ValueError(f"unknown signal kind {kind!r}")


def trajectory_value(value):
    """A trajectory value (12 numbers: positions x, z (m), then facings x, z) with unit facings; None: at rest."""
    v = np.array(TRAJECTORY_REST) if value is None else np.asarray(value, dtype=np.float64).reshape(-1).copy()
    if v.shape != (TRAJECTORY_VALUE,):
        raise ValueError(f"a trajectory value needs {TRAJECTORY_VALUE} numbers (3 positions x, z, then 3 facings "
                         f"x, z), got {len(v)}")
    facings = v[6:].reshape(3, 2)
    n = np.linalg.norm(facings, axis=1, keepdims=True)
    if not np.all(n > 0.5):
        raise ValueError(f"a trajectory's facings must be unit directions (x, z), got norms {np.ravel(n).tolist()}")
    v[6:] = (facings / n).ravel()
    return v


def normalize_value(kind, value):
    """The JSON form of a signal value of ``kind`` (float, list, int or bool)."""
    v = signal_value(kind, value)
    if kind == "scalar":
        return float(v[0])
    if kind in ("vec3", "quat", "trajectory"):
        return [float(x) for x in v]
    if kind == "int":
        return int(v[0])
    return bool(v[0])


def refuse_text(cls, data):
    """``data`` for model ``cls``, or a ValueError where text stands for a number or flag ("0.3", "yes"): pydantic
    would convert it, and a graph file is meant to say what it means."""
    if isinstance(data, dict):
        for key, value in data.items():
            info = cls.model_fields.get(key) if isinstance(key, str) else None
            items = value if isinstance(value, (list, tuple)) else [value]
            if info is not None and any(isinstance(v, str) for v in items) and not takes_text(info.annotation):
                raise ValueError(f"{key}: expected a number, integer or flag, not the text {value!r}")
    return data


def takes_text(annotation):
    """Whether a field annotation accepts a str (str itself, a Literal of strings, or a union holding one)."""
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return any(isinstance(a, str) for a in typing.get_args(annotation))
    return any(takes_text(a) for a in typing.get_args(annotation))


class Part(BaseModel):
    """Base of a model nested in a node's fields (a state, a transition, a branch): unknown keys and text for
    numbers refused, as in the node itself."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_text_for_numbers(cls, data):
        return refuse_text(cls, data)
