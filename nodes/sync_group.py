"""Sync group: the clock of samples that play in step, a gait phase shared through their plant markers.

The planner makes one per group of samples (``animgraph.sync``: a sample's ``sync_group`` field, or the
entries of a blend space) and links its ``<sample>_time`` outputs into the members' ``time`` inputs; a
graph file never needs to name it.  Per character it keeps the group's unwrapped phase ``Φ`` (cycles,
``animgraph.phase``) and each member's whole-cycle offset ``k_m``; member ``m`` plays its clip at the time
its own markers give for the phase ``Φ + k_m``, so every member's phase equals the group's (mod 1).

The phase advances at the weight-blended phase rate of the members,

    Φ' = Σ w_m ρ_m u_m'(t_m) / Σ w_m,

``w_m`` a member's effective weight (the largest over paths to a pose output of the product of the
weights the nodes on the path give it: ``Node.input_weights``), ``ρ_m`` its playback rate (its ``rate``
input or field) and ``u_m'`` the phase rate of its clip at the time it shows (cycles per clip second).
With all weights 0 the last rate is kept.  A member's time then moves at ``Φ' dt_m/du``, its sample's
velocities scaled by that rate, so the whole graph's velocities stay exact; the weights' own rates enter
through the blends' terms.  The *leader* (output ``leader``) is the member of largest weight; a change of
leader changes no phase and no rate; only the leader's plants and contacts become events (``<sample>_leads``
into each member's ``leads`` input, its effective weight into its ``weight``: ``animgraph.events``), so a blend
of two gaits steps once per plant.  The first frame after a reset takes ``Φ`` from the first member's
``start`` and gives each other member the offset that keeps it nearest its own start (its own step).
The phase is integrated forward one step at a time (explicit: the rate depends on the weights at the
frame), so a group's clips depend on the steps taken, as a sample's own clock with a changing rate does.
"""

from __future__ import annotations

from typing import List, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from animgraph.jit import njit
from animgraph.errors import GraphError
from animgraph.limits import RATE_MAX, TIME_MAX
from animgraph.node import Port, fields, register
from animgraph.phase import MarkerError, markers, nearest_cycle, phase_at, time_at
from animgraph.tracks import clip_tracks
from animgraph.weights import MAX_VERTICES, WeightGraphNode, effective_weights

MAX_MEMBERS = 64
HEAD = fields("SyncGroupHead", members=1, vertices=1, edges=1)
MEMBER = fields("SyncGroupMember", markers_at=1, markers=1, loop=1, length=1, period=1, cycles=1, start=1, rate=1,
                rate_input=1, vertex=1)
# State: aligned since the reset, the unwrapped phase (cycles), its last rate (cycles/s), the reset time (s), the
# leader; then per member its whole-cycle offset, then per vertex its effective weight.
ST = fields("SyncGroupSt", aligned=1, phase=1, rate=1, time=1, leader=1)
# Outputs: these, then each member's time (``<sample>_time``), then each one's effective weight
# (``<sample>_weight``) and whether it leads (``<sample>_leads``), in member order: a member's events read the last two.
OUTPUTS = (Port("phase", "scalar", "", "the group's phase (cycles, mod 1: 0 left plant, 0.5 right) and its rate"),
           Port("leader", "int", "", "index of the member of largest effective weight"),
           Port("leader_weight", "scalar", "", "that member's effective weight"))
OUT = fields("SyncGroupOut", phase=1, leader=1, leader_weight=1)  # port indices; members' times from OUT.SIZE


class Member(BaseModel):
    """A sample in the group: its clip and how it would play alone."""

    model_config = ConfigDict(extra="forbid")
    sample: str = Field(min_length=1, description="the member sample's node id (names its time output)")
    clip: str = Field(min_length=1, description="its clip asset")
    variant: str = Field("", description="the variant of the clip it plays (Node.clip_variants)")
    loop: bool = True
    start: float = Field(0.0, ge=-TIME_MAX, le=TIME_MAX, allow_inf_nan=False, description="its start time (s)")
    rate: float = Field(1.0, ge=-RATE_MAX, le=RATE_MAX, allow_inf_nan=False,
                        description="its playback rate when rate_input is -1")
    rate_input: int = Field(-1, ge=-1, le=MAX_VERTICES, description="index of the signal input carrying its rate; -1: "
                            "the field")
    vertex: int = Field(ge=0, le=MAX_VERTICES, description="its vertex in the weight graph")


@njit(cache=True)
def member_markers(par, m):
    """(times, phases, loop, length, period, cycles) of member ``m``'s marker table (``animgraph.phase``)."""
    row = HEAD.SIZE + m * MEMBER.SIZE
    at, n = int(par[row + MEMBER.markers_at]), int(par[row + MEMBER.markers])
    return (par[at:at + n], par[at + n:at + 2 * n], par[row + MEMBER.loop] > 0.5, par[row + MEMBER.length],
            par[row + MEMBER.period], par[row + MEMBER.cycles])


@njit(cache=True)
def align(par, st, offsets):
    """After a reset: the phase of the first member at its start, and each member's offset nearest its own start."""
    members = int(par[HEAD.members])
    for m in range(members):
        times, phases, loop, length, period, cycles = member_markers(par, m)
        row = HEAD.SIZE + m * MEMBER.SIZE
        u, slope = phase_at(times, phases, loop, period, par[row + MEMBER.start] + st[ST.time])
        if m == 0:
            st[ST.phase], st[ST.rate] = u, par[row + MEMBER.rate] * slope
        offsets[m] = nearest_cycle(u, st[ST.phase])
    st[ST.aligned] = 1.0


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def sync_group_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: weights, the phase rate, each member's time and its rate; the phase advanced by dt."""
    members = int(par[HEAD.members])
    offsets, w = st[ST.SIZE:ST.SIZE + members], st[ST.SIZE + members:]
    if st[ST.aligned] < 0.5:
        align(par, st, offsets)
    effective_weights(ins, par, sig, HEAD.SIZE + members * MEMBER.SIZE, int(par[HEAD.vertices]), int(par[HEAD.edges]),
                      w)  # the weight graph (animgraph.weights) after the members
    phase, num, den, leader, best = st[ST.phase], 0.0, 0.0, 0, -1.0
    for m in range(members):
        times, phases, loop, length, period, cycles = member_markers(par, m)
        row = HEAD.SIZE + m * MEMBER.SIZE
        k = int(par[row + MEMBER.rate_input])
        rate = par[row + MEMBER.rate] if k < 0 else sig[ins[k]]
        weight = w[int(par[row + MEMBER.vertex])]
        slope = time_at(times, phases, loop, length, cycles, phase + offsets[m])[2]
        num += weight * rate * slope
        den += weight
        if weight > best:
            leader, best = m, weight
    rate = num / den if den > 0.0 else st[ST.rate]
    for m in range(members):
        times, phases, loop, length, period, cycles = member_markers(par, m)
        t, dtdu, _ = time_at(times, phases, loop, length, cycles, phase + offsets[m])
        at = outs[OUT.SIZE + m]
        sig[at], sig[at + 1] = t, rate * dtdu
        at = outs[OUT.SIZE + members + m]  # its events' weight, and whether it leads (only the leader's feet speak)
        sig[at], sig[at + 1] = w[int(par[HEAD.SIZE + m * MEMBER.SIZE + MEMBER.vertex])], 0.0
        sig[outs[OUT.SIZE + 2 * members + m]] = 1.0 if m == leader else 0.0
    sig[outs[OUT.phase]], sig[outs[OUT.phase] + 1] = phase % 1.0, rate
    sig[outs[OUT.leader]] = leader
    sig[outs[OUT.leader_weight]] = best
    st[ST.phase], st[ST.rate], st[ST.leader] = phase + rate * dt, rate, leader


@register(sync_group_node)
class SyncGroup(WeightGraphNode):
    """The shared clock of samples in step: a gait phase through their plant markers (made by the planner)."""

    type: Literal["sync_group"] = "sync_group"
    members: List[Member] = Field(min_length=1, max_length=MAX_MEMBERS, description="the samples in step")

    CATEGORY = "signals"
    PLUMBING = True  # the planner makes it: a graph's own clock, checked through the graphs that sync
    PLANNED = True
    FIELD_KINDS = {}
    EXAMPLE = {"members": [{"sample": "walk", "clip": "walk", "vertex": 0}], "sinks": [0]}
    RESET = "a reset to time t realigns the members at their starts plus t (the state's reset time)"

    @model_validator(mode="after")
    def _indices(self):
        n = len(self.signals)
        for m in self.members:
            if m.rate_input >= n or m.vertex >= self.vertices:
                raise ValueError(f"member {m.sample!r}: rate_input or vertex out of range")
        if len({m.sample for m in self.members}) != len(self.members):
            raise ValueError("members: a sample joins a group once")
        return self

    def inputs(self):
        return tuple(Port(f"in{i}", kind, "", "a weight or a member's rate") for i, kind in enumerate(self.signals))

    def outputs(self):
        return (*OUTPUTS, *(Port(f"{m.sample}_time", "scalar", "", f"the time (s) {m.sample!r} plays and its rate")
                            for m in self.members),
                *(Port(f"{m.sample}_weight", "scalar", "", f"{m.sample!r}'s effective weight (its events')")
                  for m in self.members),
                *(Port(f"{m.sample}_leads", "bool", "", f"whether {m.sample!r} leads (its feet's events speak)")
                  for m in self.members))

    def params(self, ctx):
        tables, rows = [], []
        graph = self.weight_graph()
        at = HEAD.SIZE + len(self.members) * MEMBER.SIZE + len(graph)
        for m in self.members:
            r = ctx.clip(self, "members", m.clip, m.variant)
            length = (r.frames if m.loop else r.frames - 1) * r.dt
            tracks = clip_tracks(ctx.skeleton, r.clip, m.loop)
            try:
                times, phases, cycles, period = markers(tracks.instants.get("left_plant", ()),
                                                    tracks.instants.get("right_plant", ()), length, m.loop)
            except MarkerError as e:
                raise GraphError(f"clip {m.clip!r} {e}: it cannot sync", node=m.sample, port="sync_group") from None
            rows.append(MEMBER.pack(markers_at=at, markers=len(times), loop=m.loop, length=length, period=period,
                                    cycles=cycles,
                                    start=m.start, rate=m.rate, rate_input=m.rate_input, vertex=m.vertex))
            tables += [times, phases]
            at += 2 * len(times)
        head = HEAD.pack(members=len(self.members), vertices=self.vertices, edges=len(self.edges))
        return np.concatenate([head, *rows, graph, *tables])

    def state(self, ctx, time=0.0):
        """Not yet aligned: the first frame aligns the members at their starts plus ``time``."""
        st = np.zeros(ST.SIZE + len(self.members) + self.vertices)
        st[ST.time] = time
        return st
