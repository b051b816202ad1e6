"""Pure operator functions on poses: the maths of each node without a graph.

Each function lives beside its node in ``animgraph.nodes``; this module gathers them.
"""

from animgraph.nodes.bk import bk
from animgraph.nodes.fk import fk
from animgraph.nodes.sample import sample

__all__ = ["fk", "bk"]
__all__ += ["sample"]
