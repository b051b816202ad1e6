"""Branches of a skeleton as a per-joint weight mask: a layered blend's, and a one-shot's over part of the body.

A branch is a joint and every joint below it, at a weight that ramps in over ``depth`` levels
below the branch's root (level k gets ``(k + 1) / (depth + 1)`` of the weight); where branches
overlap, the largest weight counts.  (Unreal's "layered blend per bone" and its blend depth.)
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from .limits import JointName, Part, unit_field

MAX_BRANCHES = 64
MAX_DEPTH = 64


class Branch(Part):
    """One branch of the mask: a joint and everything below it."""

    joint: JointName = Field(description="root joint of the branch (name or index)")
    weight: float = unit_field(1.0, "weight of the layer on this branch")
    depth: int = Field(0, ge=0, le=MAX_DEPTH, description=f"levels below the root over which the weight ramps in "
                                                          f"[0, {MAX_DEPTH}]")


def mask_weights(parents, branches):
    """Per-joint mask weights (J,) in [0, 1] from ``(root joint index, weight, depth)`` branches (``parents[j] < j``)."""
    parents = np.asarray(parents)
    mask = np.zeros(len(parents))
    for root, weight, depth in branches:
        level = np.full(len(parents), -1)
        level[root] = 0
        for j in range(root + 1, len(parents)):
            if parents[j] >= 0 and level[parents[j]] >= 0:
                level[j] = level[parents[j]] + 1
        inside = level >= 0
        mask[inside] = np.maximum(mask[inside], weight * np.minimum(1.0, (level[inside] + 1) / (depth + 1)))
    return mask


def branch_mask(ctx, node, field, branches):
    """The mask (J,) of ``branches`` (``Branch`` models) on ``ctx``'s skeleton; an unknown joint is a GraphError naming
    ``node`` and ``field``."""
    roots = [(ctx.joint(node, field, b.joint), b.weight, b.depth) for b in branches]
    return mask_weights(ctx.skeleton.parents, roots)
