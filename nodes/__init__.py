"""Node types: one module per node (parameter model, ports, state, numba kernel).

Importing this package registers every node in ``animgraph.node.REGISTRY``.
"""

from . import bk, fk  # noqa: F401
from . import dead_blend, inertialize, tracking_spring  # noqa: F401
from . import constant, input, output  # noqa: F401
from . import additive, blend, sample, select  # noqa: F401
from . import foot_lock, look_at, two_bone_ik  # noqa: F401
