"""Argument checks and broadcasting shared by the op functions and node models (plain Python, no kernels).

Each raises ValueError with a message naming the argument; node models turn that into a
GraphError naming the node.  Poses, joints and axes as in ``animgraph.pose`` (m, s, rad).
"""

import numpy as np

from .pose import Pose, numbers, parents_arg, pose_arg

# ---------------------------------------------------------------- joints and axes


def check_chain(parents, root, mid, end):
    """Message saying why ``root -> mid -> end`` is not a chain of ancestors, or '' if it is."""

    def ancestor(anc, j):
        j = parents[j]
        while j >= 0:
            if j == anc:
                return True
            j = parents[j]
        return False

    if not ancestor(root, mid):
        return f"root joint {root} is not an ancestor of mid joint {mid}"
    if not ancestor(mid, end):
        return f"mid joint {mid} is not an ancestor of end joint {end}"
    return ""


def check_axis(axis, what="axis"):
    """``axis`` as a unit float tuple; ValueError if it is not a finite non-zero 3-vector."""
    try:
        a = np.asarray(axis, dtype=np.float64)
    except (TypeError, ValueError):
        a = np.zeros(0)
    if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-6:
        raise ValueError(f"{what} must be a finite non-zero 3-vector, got {axis!r}")
    if np.max(np.abs(a)) > 1e100:
        a = a / np.max(np.abs(a))  # no overflow in the norm of huge components
    return tuple(float(x) for x in a / np.linalg.norm(a))


# ---------------------------------------------------------------- skeletons, targets, batches


def skeleton_parents(skel_or_parents, local=None):
    """(parents int64, skeleton or None) from a Skeleton or a parents array (checked against pose ``local``)."""
    if local is not None:
        return parents_arg(skel_or_parents, pose_arg(local, "local").joints)
    if hasattr(skel_or_parents, "parents") and hasattr(skel_or_parents, "index"):
        return np.asarray(skel_or_parents.parents, dtype=np.int64), skel_or_parents
    return numbers(skel_or_parents, "parents").astype(np.int64), None


def joint_index(skel, parents, joint):
    """Index of a joint given by index, or by name/alias when a Skeleton is given; ValueError if unknown."""
    if skel is not None:
        return skel.index(joint)
    if isinstance(joint, (int, np.integer)) and -len(parents) <= joint < len(parents):
        return int(joint) % len(parents)
    raise ValueError(f"joint {joint!r}: pass a Skeleton to use names, or an index below {len(parents)}")


def per_item(values, batch, size, name="target"):
    """``values`` broadcast to the batch shape and flattened to ``(items, size)`` float64 rows (ValueError naming ``name``)."""
    v = numbers(values, name)
    try:
        return np.broadcast_to(v, tuple(batch) + (size,)).reshape(-1, size)
    except ValueError:
        raise ValueError(f"{name} of shape {v.shape} does not match {tuple(batch) + (size,)}") from None


def broadcast_poses(*poses, names=("a", "b")):
    """The batch shape common to ``poses`` and the poses broadcast to it (copies where needed)."""
    for p, name in zip(poses, names):
        pose_arg(p, name)
    joints = {p.joints for p in poses}
    if len(joints) != 1:
        raise ValueError(f"poses have different joint counts: {sorted(joints)}")
    try:
        shape = np.broadcast_shapes(*(p.batch for p in poses))
    except ValueError:
        raise ValueError(f"poses have batch shapes {[p.batch for p in poses]} that do not broadcast") from None
    return shape, [
        p if p.batch == shape else Pose(*(np.array(np.broadcast_to(a, shape + a.shape[-2:])) for a in p.as_tuple()))
        for p in poses
    ]


def weights(shape, *values, names=("alpha", "alpha_vel")):
    """Scalars or per-batch arrays broadcast to batch ``shape`` as flat float64 arrays; finite or ValueError."""
    out = []
    for v, name in zip(values, names):
        v = numbers(v, name)
        try:
            out.append(np.broadcast_to(v, shape).reshape(-1))
        except ValueError:
            raise ValueError(f"{name} of shape {v.shape} does not match the batch {shape}") from None
    return out


def check_scales(*poses):
    """ValueError unless every scale is positive (scales blend in log space)."""
    for p in poses:
        if not np.all(p.scl > 0):
            raise ValueError("scales must be positive to blend in log space")


# ---------------------------------------------------------------- node ops without a graph


def node_model(cls, options, name):
    """The node model ``cls(id="op", **options)`` of an op; its first validation error a ValueError naming ``name``."""
    from pydantic import ValidationError

    try:
        return cls(id="op", **options)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"{name} {where + ': ' if where else ''}{first['msg']}") from None


def signal_pair(value, shape, name, rate_shape=None):
    """``(value, rate)`` float64 arrays (..., *shape) and (..., *rate_shape) from a pair, or the value alone (rate 0).

    ``rate_shape`` defaults to ``shape``; ValueError naming ``name`` unless finite numbers of those shapes.
    """
    rate_shape = shape if rate_shape is None else rate_shape
    x, rate = value if isinstance(value, tuple) and len(value) == 2 else (value, None)
    x = numbers(x, name)
    rate = np.zeros(x.shape[:x.ndim - len(shape)] + rate_shape) if rate is None else numbers(rate, f"{name} rate")
    for a, want in ((x, shape), (rate, rate_shape)):
        if a.shape[a.ndim - len(want):] != want:
            raise ValueError(f"{name} must be (value, rate) of shapes (..., {', '.join(map(str, shape))}) "
                             f"and (..., {', '.join(map(str, rate_shape))}), got {x.shape} and {rate.shape}")
    return x, rate
