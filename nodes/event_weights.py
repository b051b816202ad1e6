"""Event weights: each sample's effective weight, for the events it sends (made by the planner).

The check (``animgraph.sync.add_event_weights``) adds one ``event_weights`` node to a graph whose
samples outside sync groups reach a pose output through a weight that can change (a blend's alpha,
a select's index, a state's or a blend-space entry's weight), and links its ``<sample>_weight``
outputs into their ``weight`` inputs: an event carries its source's effective weight
(``animgraph.weights``), and a sample under its ``event_min_weight`` says nothing
(``animgraph.events``).  A sync group gives its own members theirs.  A graph file never names it.
"""

from __future__ import annotations

from typing import List, Literal

import numpy as np
from pydantic import Field, model_validator

from animgraph.jit import njit
from animgraph.node import Port, fields, register
from animgraph.weights import MAX_VERTICES, WeightGraphNode, effective_weights

HEAD = fields("EventWeightsHead", sources=1, vertices=1, edges=1)


@njit(cache=True, inline="always")
def event_weights_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: the weight graph's vertices into the state, the sources' weights out (rate 0)."""
    effective_weights(ins, par, sig, HEAD.SIZE, int(par[HEAD.vertices]), int(par[HEAD.edges]), st)
    for s in range(int(par[HEAD.sources])):
        sig[outs[s]], sig[outs[s] + 1] = st[s], 0.0


@register(event_weights_node)
class EventWeights(WeightGraphNode):
    """The effective weights of samples outside sync groups, for their events (made by the planner)."""

    type: Literal["event_weights"] = "event_weights"
    sources: List[str] = Field(min_length=1, max_length=MAX_VERTICES,
                               description="the samples whose weights it gives (vertices 0, 1, ...)")

    CATEGORY = "signals"
    PLUMBING = True
    PLANNED = True
    FIELD_KINDS = {}
    EXAMPLE = {"sources": ["walk"], "sinks": [0]}

    @model_validator(mode="after")
    def _indices(self):
        if len(self.sources) > self.vertices:
            raise ValueError("sources: more than the vertices")
        return self

    def inputs(self):
        return tuple(Port(f"in{i}", kind, "", "a weight") for i, kind in enumerate(self.signals))

    def outputs(self):
        return tuple(Port(f"{s}_weight", "scalar", "", f"{s!r}'s effective weight (its events')") for s in self.sources)

    def params(self, ctx):
        return np.concatenate([HEAD.pack(sources=len(self.sources), vertices=self.vertices, edges=len(self.edges)),
                               self.weight_graph()])

    def state(self, ctx, time=0.0):
        """The vertices' weights, written every frame."""
        return np.zeros(self.vertices)
