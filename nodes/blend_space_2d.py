"""2-D blend space: entries (pose inputs) at points of a plane, blended by where a 2-D ``parameter`` lies.

The parameter is a vec3 whose x and z are read (a stick or a velocity on the ground: Y is up),
matched to the entries' points ``[x, y]``; its rate gives the weights' rates.  At plan time the
points are triangulated (Delaunay, ``animgraph.triangulate``).  Inside a triangle the weights are the
parameter's barycentric coordinates; outside the hull, those of its projection onto the nearest
hull edge (clamped to the edge): the two corners' ``1 - s`` and ``s``, or one corner alone.
Their rates are the same linear maps of the parameter's rate (0 where the projection clamps).
The weights sum to 1 and are continuous along any path; a weight below ``spaces.LIVE_MIN``
counts as 0.  A last-triangle hint in the state starts each frame's short walk
(``triangulate.locate``): nothing is searched.

The pose is the blend of the live entries (``animgraph.spaces``: up to three, as two nested
two-way blends with their weights' rates, exact velocities), the root motion ``motion`` the
same weights' sum of the entries' ``<entry>_motion`` inputs (unlinked: still).

As in ``blend_space_1d``: an early kernel writes the weights (outputs ``<entry>_weight``) and
the live mask before the entries' nodes, which run only while their entry's weight is
non-zero; an entry whose weight becomes non-zero is not restarted (its clips resume where they
paused, or follow their sync group); ``sync_group`` ("", the default: the node's id; ``null``: none)
puts the samples feeding the entries into one sync group unless they name another.
"""

from __future__ import annotations

import math
from typing import ClassVar, List, Literal, Optional, Tuple

import numpy as np
from pydantic import Field, model_validator

from animgraph.args import broadcast_poses, check_scales, node_model, numbers
from animgraph.events import reason_id
from animgraph.jit import njit
from animgraph.limits import Part, Signal
from animgraph.node import Node, Port, Weight, fields, register, slot
from animgraph.pose import Pose, pose_arg
from animgraph.spaces import (GROUP, IDENTIFIER, blend_entries, blend_motions, publish_weights, refuse_entry_names,
                              renamed_ports)
from animgraph.stencil import stencil
from animgraph.triangulate import HULL, NBR, TRI, delaunay, mesh, refuse_degenerate, space_weights

MAX_ENTRIES = 32  # the live mask's bits
# Parameters: counts, then the points (x, y per entry), the triangles' corners, their neighbours, the hull edges.
PAR = fields("BlendSpace2dPar", entries=1, triangles=1, hull=1)
# State: the entries needed now and those entered now (bit masks, see animgraph.node's branches; none ever entered), the
# walk's hint (a triangle, or -1 - a hull edge), the last finite parameter (x, z); the live entries (ascending index),
# their weights and rates (the early kernel tells the pose kernel).
ST = fields("BlendSpace2dSt", live=1, entered=1, why=1, hint=1, last=2, count=1, idx=3, w=3, dw=3)
OUT = fields("BlendSpace2dOut", pose=1, motion=1)  # then <entry>_weight


@njit(cache=True)
def tables(par):
    """(points (N, 2), triangles (M, 3), neighbours (M, 3), hull (H, 5)) as views of the parameters."""
    n, m, h = int(par[PAR.entries]), int(par[PAR.triangles]), int(par[PAR.hull])
    at = PAR.SIZE
    pts = par[at:at + 2 * n].reshape((n, 2))
    at += 2 * n
    tris = par[at:at + TRI * m].reshape((m, TRI))
    at += TRI * m
    nbrs = par[at:at + NBR * m].reshape((m, NBR))
    at += NBR * m
    return pts, tris, nbrs, par[at:at + HULL * h].reshape((h, HULL))


@njit(cache=True, own_code=True)
def blend_space_2d_weights(ins, outs, par, st, pose, sig, db, dt):
    """The early kernel: the weights and rates from the parameter's x and z, their outputs, the entries needed now."""
    n = int(par[PAR.entries])
    at = ins[n]
    x, y, dx, dy = sig[at], sig[at + 2], sig[at + 3], sig[at + 5]
    if not (math.isfinite(x) and math.isfinite(y)):  # a computed parameter gone bad: hold the last one still
        x, y, dx, dy = st[ST.last], st[ST.last + 1], 0.0, 0.0
    if not (math.isfinite(dx) and math.isfinite(dy)):
        dx, dy = 0.0, 0.0
    st[ST.last], st[ST.last + 1] = x, y
    idx, w, dw = st[ST.idx:ST.idx + 3], st[ST.w:ST.w + 3], st[ST.dw:ST.dw + 3]
    pts, tris, nbrs, hull = tables(par)
    count, where = space_weights(pts, tris, nbrs, hull, int(st[ST.hint]), x, y, dx, dy, idx, w, dw)
    st[ST.count], st[ST.hint] = count, where
    st[ST.live], st[ST.entered] = float(publish_weights(outs, OUT.SIZE, sig, n, count, idx, w, dw)), 0.0


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def blend_space_2d_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the live entries blended at the early kernel's weights; their root motions summed."""
    n, count = int(par[PAR.entries]), int(st[ST.count])
    idx, w, dw = st[ST.idx:ST.idx + 3], st[ST.w:ST.w + 3], st[ST.dw:ST.dw + 3]
    p0 = slot(pose, ins[int(idx[0])])
    p1 = slot(pose, ins[int(idx[1])]) if count > 1 else p0
    p2 = slot(pose, ins[int(idx[2])]) if count > 2 else p0
    blend_entries(p0, p1, p2, count, w, dw, slot(pose, outs[OUT.pose]))
    blend_motions(sig, ins[n + 1:2 * n + 1], idx, count, w, outs[OUT.motion])


class Entry2d(Part):
    """One entry: its name is also the name of its pose input (and ``<name>_motion``, ``<name>_weight``)."""

    FIELD_KINDS: ClassVar[dict] = {"at": "axis"}  # the editor's vector widget (of as many numbers as the value has)

    name: str = Field(pattern=IDENTIFIER, max_length=64, description="the entry's name (an identifier)")
    at: Tuple[Signal, Signal] = Field(description="the point [x, y] where this entry shows alone (parameter x, z)")

    @classmethod
    def next_item(cls, items):
        """The editor's new entry after ``items`` (dicts): the last one copied, one right of the rightmost point."""
        points = [i["at"] for i in items if isinstance(i, dict) and isinstance(i.get("at"), (list, tuple))
                  and len(i["at"]) == 2 and all(isinstance(c, (int, float)) for c in i["at"])]
        if not points:
            return dict(items[-1])
        return dict(items[-1]) | {"at": [max(p[0] for p in points) + 1.0, float(points[-1][1])]}


@register(blend_space_2d_node, early=blend_space_2d_weights)
class BlendSpace2d(Node):
    """Entries at 2-D points, the triangle around the parameter blended (barycentric); only its corners run."""

    type: Literal["blend_space_2d"] = "blend_space_2d"
    entries: List[Entry2d] = Field(min_length=2, max_length=MAX_ENTRIES, description="the entries, each a pose input")
    parameter: Tuple[Signal, Signal, Signal] = Field((0.0, 0.0, 0.0), description=(
        "the parameter while its input is unlinked (x and z are read)"))
    sync_group: Optional[str] = Field("", pattern=GROUP, max_length=64, description=(
        "the sync group of the samples feeding the entries (\"\": the node's id; null: none)"))

    CATEGORY = "blends"
    FIELD_KINDS = {"entries": "branches", "parameter": "axis", "sync_group": "name"}
    LIVE_FIELD, ENTERED_FIELD, WHY_FIELD = ST.live, ST.entered, ST.why
    EXAMPLE = {"entries": [{"name": "idle", "at": [0.0, 0.0]}, {"name": "forward", "at": [0.0, 1.0]},
                           {"name": "left", "at": [-1.0, 0.0]}, {"name": "right", "at": [1.0, 0.0]}]}

    @model_validator(mode="after")
    def _consistent(self):
        names = [e.name for e in self.entries]
        refuse_entry_names(names)
        refuse_degenerate(self.points(), names)
        delaunay(self.points())  # a failure is the file's error, at load
        return self

    def points(self):
        return np.asarray([e.at for e in self.entries], np.float64)

    def triangulation(self):
        """Counter-clockwise triangles (M, 3) of entry indices: the Delaunay triangulation of the points."""
        return delaunay(self.points())

    @classmethod
    def follow_edit(cls, old, new):
        """An entry renamed in the editor: the links to its ports follow the new name."""
        return new, renamed_ports(old, new)

    def inputs(self):
        return (tuple(Port(e.name, "pose", "local", f"pose at {list(e.at)}") for e in self.entries)
                + (Port("parameter", "vec3", "", "where in the space: x and z (and their rates)"),)
                + tuple(Port(f"{e.name}_motion", "motion", "", f"root motion of {e.name!r}", True)
                        for e in self.entries))

    def outputs(self):
        return (Port("pose", "pose", "local", "the live entries blended"),
                Port("motion", "motion", "", "the live entries' root motions blended (unlinked: still)"),
                *(Port(f"{e.name}_weight", "scalar", "", f"weight of {e.name!r} and its rate (1/s)")
                  for e in self.entries))

    def params(self, ctx=None):
        tris = self.triangulation()
        nbrs, hull = mesh(tris)
        head = PAR.pack(entries=len(self.entries), triangles=len(tris), hull=len(hull))
        return np.concatenate([head, self.points().reshape(-1), *(np.asarray(a, np.float64).reshape(-1)
                                                                  for a in (tris, nbrs, hull))])

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


def blend_space_2d(poses, at, parameter, parameter_vel=(0.0, 0.0)):
    """The blend of ``poses`` (a sequence of local Poses, one batch shape) placed at the points ``at`` (N, 2) by
    ``parameter`` ((2,) or one per batch item: x, y in the points' plane) moving at ``parameter_vel`` (per second)."""
    poses = [pose_arg(p, f"poses[{i}]") for i, p in enumerate(poses)]
    fields = {"entries": [{"name": f"e{i}", "at": list(np.asarray(a, np.float64))} for i, a in enumerate(at)]}
    node = node_model(BlendSpace2d, fields, "at")
    if len(poses) != len(node.entries):
        raise ValueError(f"{len(poses)} poses for {len(node.entries)} points")
    check_scales(*poses)
    shape, poses = broadcast_poses(*poses, names=[f"poses[{i}]" for i in range(len(poses))])
    xy, dxy = numbers(parameter, "parameter"), numbers(parameter_vel, "parameter_vel")
    try:
        xy, dxy = (np.broadcast_to(a, shape + (2,)).reshape(-1, 2) for a in (xy, dxy))
    except ValueError:
        raise ValueError(f"parameter and its rate must be (2,) or {shape + (2,)}, got {xy.shape}, "
                         f"{dxy.shape}") from None
    pts, tris, nbrs, hull = tables(node.params())
    out = Pose.identity(poses[0].joints, shape)
    idx, w, dw = np.zeros(3), np.zeros(3), np.zeros(3)
    items = [p.items() for p in poses]
    for b, dst in enumerate(out.items()):
        count = space_weights(pts, tris, nbrs, hull, 0, xy[b, 0], xy[b, 1], dxy[b, 0], dxy[b, 1], idx, w, dw)[0]
        p0 = items[int(idx[0])][b]
        p1 = items[int(idx[1])][b] if count > 1 else p0
        p2 = items[int(idx[2])][b] if count > 2 else p0
        blend_entries(p0, p1, p2, count, w, dw, dst)
    return out


def verify_blend_space_2d(m, t, h, rng):
    """Four entries (the clip, backwards, and each half a second on) at (0, 0), (1, 0), (0, 1), (1.2, 1.3): the
    parameter circles inside the first triangle (three entries blended, nested), and slides along outside its bottom
    edge (that edge's two entries, the projection's weights)."""
    at = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.2, 1.3)]

    def poses(s):
        return [m.pose(s), m.other(s), m.pose(s + 0.5), m.other(s + 0.5)]

    def inside(s):
        w, dw = m.weight(s)
        return blend_space_2d(poses(s), at, np.stack([0.1 + 0.3 * w, 0.35 - 0.2 * w], -1),
                              np.stack([0.3 * dw, -0.2 * dw], -1))

    def outside(s):
        w, dw = m.weight(s)
        return blend_space_2d(poses(s), at, np.stack([w, np.full_like(w, -0.4)], -1),
                              np.stack([dw, np.zeros_like(dw)], -1))

    return [stencil(inside, t, h), stencil(outside, t, h)]


BlendSpace2d.OP, BlendSpace2d.VERIFY = blend_space_2d, verify_blend_space_2d
