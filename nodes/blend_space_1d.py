"""1-D blend space: entries (pose inputs) at values of a scalar ``parameter``, blended by where it lies.

Sorted by ``at``, the parameter ``x`` between two neighbouring entries ``a_k <= x <= a_k+1``
gives them weights ``1 - s`` and ``s``, ``s = (x - a_k) / (a_k+1 - a_k)``, at rates ``-+ x' /
(a_k+1 - a_k)`` (``x'`` the parameter's rate); below the first entry or above the last the
nearest entry alone, at rate 0.  The weights sum to 1 and are continuous in ``x``; a weight
below ``spaces.LIVE_MIN`` counts as 0.  The pose is the blend of the live entries
(``animgraph.spaces``: at most two here, the two-way blend with its weight's rate term), the
root motion ``motion`` the same weights' sum of the entries' ``<entry>_motion`` inputs
(unlinked: still).

Only the live entries' nodes run: an early kernel computes the weights (outputs
``<entry>_weight``: weight and rate, 0 for the others) before the entries' nodes, and the
planner gates every node needed only through one entry's inputs on that entry's weight being
non-zero (``animgraph.node``, branches).  An entry whose weight becomes non-zero is not
restarted: a blend space's clips keep playing (and a sync group keeps them in step), so they
resume where they paused; only the node's own reset restarts them.  ``sync_group`` ("", the default:
the node's id; ``null``: none) puts the samples feeding the entries into one sync group
(``animgraph.sync``) unless they name another.
"""

from __future__ import annotations

import math
from typing import List, Literal, Optional

import numpy as np
from pydantic import Field, model_validator

from animgraph.args import broadcast_poses, check_scales, node_model, weights
from animgraph.events import reason_id
from animgraph.jit import njit
from animgraph.limits import Part, Signal
from animgraph.node import Node, Port, Weight, fields, register, slot
from animgraph.pose import Pose, pose_arg
from animgraph.spaces import (GROUP, IDENTIFIER, LIVE_MIN, blend_entries, blend_motions, publish_weights,
                              refuse_entry_names, renamed_ports)
from animgraph.stencil import stencil

MAX_ENTRIES = 32  # the live mask's bits
# Parameters: the entry count, then the entries' values in ascending order and their entry indices.
PAR = fields("BlendSpace1dPar", entries=1)
# State: the entries needed now and those entered now (bit masks, see animgraph.node's branches; none ever entered), the
# last finite parameter; the live entries (ascending index), their weights and rates (the early kernel tells the pose
# kernel).
ST = fields("BlendSpace1dSt", live=1, entered=1, why=1, last=1, count=1, idx=3, w=3, dw=3)
OUT = fields("BlendSpace1dOut", pose=1, motion=1)  # then <entry>_weight


@njit(cache=True)
def line_weights(ats, order, x, dx, idx, w, dw):
    """The live entries at ``x`` moving at ``dx``: indices (ascending) into ``idx``, weights into ``w``, rates (1/s)
    into ``dw``, from the entries' values ``ats`` (ascending) and their indices ``order``; returns their count."""
    n = ats.shape[0]
    k = 0
    while k < n - 2 and x > ats[k + 1]:
        k += 1
    span = ats[k + 1] - ats[k]
    s, ds = (x - ats[k]) / span, dx / span
    if not s > LIVE_MIN:  # at or below a_k (NaN too: the caller holds a finite parameter)
        idx[0], w[0], dw[0] = order[k], 1.0, 0.0
        return 1
    if s > 1.0 - LIVE_MIN:
        idx[0], w[0], dw[0] = order[k + 1], 1.0, 0.0
        return 1
    lo, hi = order[k], order[k + 1]
    first = 0 if lo < hi else 1
    idx[first], w[first], dw[first] = lo, 1.0 - s, -ds
    idx[1 - first], w[1 - first], dw[1 - first] = hi, s, ds
    return 2


@njit(cache=True, own_code=True)
def blend_space_1d_weights(ins, outs, par, st, pose, sig, db, dt):
    """The early kernel: the weights and rates from the parameter, their outputs, and the entries needed now."""
    n = int(par[PAR.entries])
    at = ins[n]
    x, dx = sig[at], sig[at + 1]
    if not math.isfinite(x):  # a computed parameter gone bad: hold the last one still
        x, dx = st[ST.last], 0.0
    if not math.isfinite(dx):
        dx = 0.0
    st[ST.last] = x
    idx, w, dw = st[ST.idx:ST.idx + 3], st[ST.w:ST.w + 3], st[ST.dw:ST.dw + 3]
    count = line_weights(par[PAR.SIZE:PAR.SIZE + n], par[PAR.SIZE + n:PAR.SIZE + 2 * n], x, dx, idx, w, dw)
    st[ST.count] = count
    st[ST.live], st[ST.entered] = float(publish_weights(outs, OUT.SIZE, sig, n, count, idx, w, dw)), 0.0


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def blend_space_1d_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the live entries blended at the early kernel's weights; their root motions summed."""
    n, count = int(par[PAR.entries]), int(st[ST.count])
    idx, w, dw = st[ST.idx:ST.idx + 3], st[ST.w:ST.w + 3], st[ST.dw:ST.dw + 3]
    p0 = slot(pose, ins[int(idx[0])])
    p1 = slot(pose, ins[int(idx[1])]) if count > 1 else p0
    blend_entries(p0, p1, p0, count, w, dw, slot(pose, outs[OUT.pose]))
    blend_motions(sig, ins[n + 1:2 * n + 1], idx, count, w, outs[OUT.motion])


class Entry1d(Part):
    """One entry: its name is also the name of its pose input (and ``<name>_motion``, ``<name>_weight``)."""

    name: str = Field(pattern=IDENTIFIER, max_length=64, description="the entry's name (an identifier)")
    at: Signal = Field(description="the parameter value where this entry shows alone")

    @classmethod
    def next_item(cls, items):
        """The editor's new entry after ``items`` (dicts): the last one copied, one past the largest value."""
        ats = [i["at"] for i in items if isinstance(i, dict) and isinstance(i.get("at"), (int, float))]
        return dict(items[-1]) | {"at": max(ats) + 1.0 if ats else 0.0}


@register(blend_space_1d_node, early=blend_space_1d_weights)
class BlendSpace1d(Node):
    """Entries at values of a scalar parameter, the two around it blended (piecewise linear); only they run."""

    type: Literal["blend_space_1d"] = "blend_space_1d"
    entries: List[Entry1d] = Field(min_length=2, max_length=MAX_ENTRIES, description="the entries, each a pose input")
    parameter: Signal = Field(0.0, description="the parameter while its input is unlinked")
    sync_group: Optional[str] = Field("", pattern=GROUP, max_length=64, description=(
        "the sync group of the samples feeding the entries (\"\": the node's id; null: none)"))

    CATEGORY = "blends"
    FIELD_KINDS = {"entries": "branches", "sync_group": "name"}
    LIVE_FIELD, ENTERED_FIELD, WHY_FIELD = ST.live, ST.entered, ST.why
    EXAMPLE = {"entries": [{"name": "walk", "at": 1.0}, {"name": "jog", "at": 2.5}, {"name": "run", "at": 4.0}]}

    @model_validator(mode="after")
    def _consistent(self):
        refuse_entry_names([e.name for e in self.entries])
        seen = {}
        for e in self.entries:
            if e.at in seen:
                raise ValueError(f"entries {seen[e.at]!r} and {e.name!r} are both at {e.at:g}")
            seen[e.at] = e.name
        return self

    @classmethod
    def follow_edit(cls, old, new):
        """An entry renamed in the editor: the links to its ports follow the new name."""
        return new, renamed_ports(old, new)

    def inputs(self):
        return (tuple(Port(e.name, "pose", "local", f"pose at parameter {e.at:g}") for e in self.entries)
                + (Port("parameter", "scalar", "", "where in the space (and its rate)"),)
                + tuple(Port(f"{e.name}_motion", "motion", "", f"root motion of {e.name!r}", True)
                        for e in self.entries))

    def outputs(self):
        return (Port("pose", "pose", "local", "the live entries blended"),
                Port("motion", "motion", "", "the live entries' root motions blended (unlinked: still)"),
                *(Port(f"{e.name}_weight", "scalar", "", f"weight of {e.name!r} and its rate (1/s)")
                  for e in self.entries))

    def params(self, ctx=None):
        order = sorted(range(len(self.entries)), key=lambda i: self.entries[i].at)
        return np.concatenate([PAR.pack(entries=len(self.entries)),
                               np.asarray([self.entries[i].at for i in order], np.float64),
                               np.asarray(order, np.float64)])

    def state(self, ctx=None, time=0.0):
        """No weights yet; an entry's nodes stop with the detail ``weight`` (its weight fell to 0)."""
        st = np.zeros(ST.SIZE, np.float64)
        st[ST.why] = reason_id("weight")
        return st

    def early_ports(self):
        """The parameter is read, and the weights written, before the entries' nodes run."""
        return ("parameter",), tuple(f"{e.name}_weight" for e in self.entries)

    def branch_bits(self):
        """Each entry's pose and motion inputs are needed only while its weight is non-zero (bit: its index)."""
        return {f"{e.name}{end}": i for i, e in enumerate(self.entries) for end in ("", "_motion")}

    def input_weights(self):
        return {f"{e.name}{end}": Weight(f"{e.name}_weight") for e in self.entries for end in ("", "_motion")}

    def sync_inputs(self):
        """Every entry joins the node's sync group (``sync_group``; "" the node's id; null: none)."""
        if self.sync_group is None:
            return {}
        return {e.name: self.sync_group or self.id for e in self.entries}


def blend_space_1d(poses, at, parameter, parameter_vel=0.0):
    """The blend of ``poses`` (a sequence of local Poses, one batch shape) placed at the values ``at`` by
    ``parameter`` (a number or one per batch item) moving at ``parameter_vel`` (per second)."""
    poses = [pose_arg(p, f"poses[{i}]") for i, p in enumerate(poses)]
    node = node_model(BlendSpace1d, {"entries": [{"name": f"e{i}", "at": a} for i, a in enumerate(at)]}, "at")
    if len(poses) != len(node.entries):
        raise ValueError(f"{len(poses)} poses for {len(node.entries)} values of at")
    check_scales(*poses)
    shape, poses = broadcast_poses(*poses, names=[f"poses[{i}]" for i in range(len(poses))])
    x, dx = weights(shape, parameter, parameter_vel, names=("parameter", "parameter_vel"))
    par, n = node.params(), len(poses)
    out = Pose.identity(poses[0].joints, shape)
    idx, w, dw = np.zeros(3), np.zeros(3), np.zeros(3)
    items = [p.items() for p in poses]
    for b, dst in enumerate(out.items()):
        count = line_weights(par[PAR.SIZE:PAR.SIZE + n], par[PAR.SIZE + n:], x[b], dx[b], idx, w, dw)
        p0 = items[int(idx[0])][b]
        p1 = items[int(idx[1])][b] if count > 1 else p0
        blend_entries(p0, p1, p0, count, w, dw, dst)
    return out


def verify_blend_space_1d(m, t, h, rng):
    """Three entries (the clip, backwards, half a second on) at 0, 1, 2; the parameter swings inside [0.1, 1.9]
    without crossing the middle one's value inside a stencil (each stencil stays on one side)."""
    side = 0.0 if rng.random() < 0.5 else 1.0

    def at(s):
        w, dw = m.weight(s)
        return blend_space_1d([m.pose(s), m.other(s), m.pose(s + 0.5)], [0.0, 1.0, 2.0], side + w, dw)

    return [stencil(at, t, h)]


BlendSpace1d.OP, BlendSpace1d.VERIFY = blend_space_1d, verify_blend_space_1d
