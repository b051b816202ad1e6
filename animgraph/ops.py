"""Pure operator functions on poses: the maths of each node without a graph.

Each node file declares its op (``OP``: a function or a small class) beside its kernel;
this module gathers them from the node registry, so a new node file's op is here with no
edit: ``ag.ops.blend``, ``ag.ops.Inertializer``, ...
"""

import animgraph.nodes  # noqa: F401  (registers every node type)
from animgraph.node import REGISTRY


def _ops():
    """{name: op} of every registered node type that has one."""
    found = {}
    for kind in sorted(REGISTRY):
        op = REGISTRY[kind].OP
        if op is not None:
            found[op.__name__] = op
    return found


globals().update(_ops())
__all__ = sorted(_ops())
