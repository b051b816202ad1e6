"""Kineforms on arrays: compose moving frames with their velocities, exactly.

``mul``, ``div`` and ``inv`` take any objects with the six fields ``pos rot scl
vel ang svl`` (a ``Pose``, say) of matching leading shape and return a ``Pose``.
"""

import numpy as np
from animgraph.jit import njit

from .maths import kdiv, kinv, kmul, load_kform, store_kform
from .pose import FIELDS, Pose, numbers


def _flat(k, name="a"):
    missing = [f for f in FIELDS if not hasattr(k, f)]
    if missing:
        raise ValueError(f"{name} must have the six kineform fields {FIELDS}, {type(k).__name__} lacks {missing}")
    arrays = [numbers(getattr(k, f), f"{name}.{f}", np.float32) for f in FIELDS]
    shape = arrays[0].shape[:-1]
    for f, a in zip(FIELDS, arrays):
        if a.ndim < 1 or a.shape[-1] != (4 if f == "rot" else 3) or a.shape[:-1] != shape:
            raise ValueError(f"{name}.{f} has shape {a.shape}: expected {shape + (4 if f == 'rot' else 3,)}")
    return tuple(np.ascontiguousarray(a.reshape(-1, a.shape[-1])) for a in arrays), shape


def _empty(n):
    return tuple(np.empty((n, 4 if f == "rot" else 3), np.float32) for f in FIELDS)


@njit(cache=True)
def _mul_rows(a, b, out):
    for i in range(out[0].shape[0]):
        store_kform(out, i, kmul(load_kform(a, i), load_kform(b, i)))


@njit(cache=True, entry=True)
def _div_rows(a, b, out):
    for i in range(out[0].shape[0]):
        store_kform(out, i, kdiv(load_kform(a, i), load_kform(b, i)))


@njit(cache=True)
def _inv_rows(a, out):
    for i in range(out[0].shape[0]):
        store_kform(out, i, kinv(load_kform(a, i)))


def _binary(kernel, a, b):
    fa, shape = _flat(a)
    fb, shape_b = _flat(b, "b")
    if shape != shape_b:
        raise ValueError(f"kineform shapes differ: {shape} and {shape_b}")
    out = _empty(fa[0].shape[0])
    kernel(fa, fb, out)
    return Pose(*(o.reshape(shape + o.shape[-1:]) for o in out))


def mul(a, b):
    """``b`` expressed in moving frame ``a`` -> in ``a``'s parent space (leverage and scale terms)."""
    return _binary(_mul_rows, a, b)


def div(a, b):
    """The kineform ``x`` with ``mul(a, x) == b``: ``b`` re-expressed in moving frame ``a``."""
    return _binary(_div_rows, a, b)


def inv(a):
    """The kineform ``x`` with ``mul(a, x)`` the identity at rest."""
    fa, shape = _flat(a)
    out = _empty(fa[0].shape[0])
    _inv_rows(fa, out)
    return Pose(*(o.reshape(shape + o.shape[-1:]) for o in out))
