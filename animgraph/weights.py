"""Effective weights in the compiled step: how much of a source reaches the pose outputs (sync groups, events).

A source's *effective weight* is the largest, over paths along pose links from it to a graph output,
of the product of the weights the nodes on the path give the inputs it enters by
(``Node.input_weights``).  The planner turns those paths into a small *weight graph*
(``animgraph.sync``): vertices (the sources first, then the nodes on their paths), the sinks (pose
outputs, weight 1), and edges ``src -> dst``, each with the weight ``dst`` gives ``src``: a constant,
an int signal in a range (a select's index), or a clamped line of a scalar signal (a blend's alpha).
Its parameters (``pack``): the sinks' flags (one per vertex), then the edges (``EDGE`` numbers each),
in an order where every destination's own edges come first, so one pass gives every vertex.
"""

from __future__ import annotations

import math
from typing import Annotated, List, Literal, Optional, Tuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .jit import njit
from .node import Node, fields

MAX_VERTICES = 1024
EDGE = fields("WeightEdge", src=1, dst=1, input=1, scale=1, offset=1, lo=1, hi=1, has_range=1)
Bound = Annotated[float, Field(ge=-1e6, le=1e6, allow_inf_nan=False)]
WEIGHT_KINDS = ("scalar", "int", "bool")  # the signals a weight graph reads


class Edge(BaseModel):
    """A link of the weight graph: vertex ``src`` feeds ``dst``, which gives it the weight of ``input``."""

    model_config = ConfigDict(extra="forbid")
    src: int = Field(ge=0, le=MAX_VERTICES)
    dst: int = Field(ge=0, le=MAX_VERTICES)
    input: int = Field(-1, ge=-1, le=MAX_VERTICES, description="signal input giving the weight; -1: the constant offset")
    scale: float = Field(1.0, ge=-1e6, le=1e6, allow_inf_nan=False)
    offset: float = Field(0.0, ge=-1e6, le=1e6, allow_inf_nan=False)
    between: Optional[Tuple[Bound, Bound]] = Field(None, description="weight 1 when the int input lies in [lo, hi]")


class WeightGraphNode(Node):
    """A planned node that carries a weight graph (a sync group, the events' weights): its fields, checked."""

    signals: List[Literal[WEIGHT_KINDS]] = Field(default_factory=list, max_length=MAX_VERTICES,
                                                 description="kinds of the signal inputs in0, in1, ...")
    vertices: int = Field(1, ge=1, le=MAX_VERTICES, description="vertices of the weight graph (its sources first)")
    sinks: List[Annotated[int, Field(ge=0, le=MAX_VERTICES)]] = Field(default_factory=list, max_length=MAX_VERTICES,
                                                                      description="the vertices that are pose outputs")
    edges: List[Edge] = Field(default_factory=list, max_length=4 * MAX_VERTICES,
                              description="the weight graph's links, sources last (animgraph.sync)")

    @model_validator(mode="after")
    def _weight_graph_indices(self):
        if any(not 0 <= v < self.vertices for v in self.sinks):
            raise ValueError("sinks: vertex out of range")
        for e in self.edges:
            if e.src >= self.vertices or e.dst >= self.vertices or e.input >= len(self.signals):
                raise ValueError(f"edge {e.src}->{e.dst}: index out of range")
        return self

    def weight_graph(self):
        """The weight graph's parameters (``pack``)."""
        return pack(self.vertices, self.sinks, self.edges)


def pack(vertices, sinks, edges):
    """The weight graph's parameters: a sink flag per vertex, then the edges (``EDGE`` numbers each)."""
    flags = np.zeros(vertices)
    flags[list(sinks)] = 1.0
    rows = [EDGE.pack(src=e.src, dst=e.dst, input=e.input, scale=e.scale,
                      offset=min(max(e.offset, 0.0), 1.0) if e.input < 0 else e.offset,
                      lo=e.between[0] if e.between else 0.0, hi=e.between[1] if e.between else 0.0,
                      has_range=e.between is not None) for e in edges]
    return np.concatenate([flags, *rows])


@njit(cache=True)
def edge_weight(ins, par, sig, row):
    """The weight an edge's destination gives its source: a constant, an int in a range, or a clamped line."""
    k = int(par[row + EDGE.input])
    if k < 0:
        return par[row + EDGE.offset]
    x = sig[ins[k]]
    if par[row + EDGE.has_range] > 0.5:
        x = math.floor(x + 0.5)  # as select rounds its index
        return 1.0 if par[row + EDGE.lo] <= x <= par[row + EDGE.hi] else 0.0
    return min(max(par[row + EDGE.offset] + par[row + EDGE.scale] * x, 0.0), 1.0)


@njit(cache=True)
def effective_weights(ins, par, sig, at, vertices, edges, w):
    """Each vertex's effective weight into ``w`` from the weight graph packed at ``par[at:]`` (``pack``): the sinks
    1, then the largest product over paths, one pass over the edges."""
    for v in range(vertices):
        w[v] = par[at + v]
    first = at + vertices
    for e in range(edges):
        row = first + e * EDGE.SIZE
        src, dst = int(par[row + EDGE.src]), int(par[row + EDGE.dst])
        w[src] = max(w[src], w[dst] * edge_weight(ins, par, sig, row))
