"""Pure operator functions on poses: the maths of each node without a graph.

Each function lives beside its node in ``animgraph.nodes``; this module gathers them.
"""

from animgraph.nodes.bk import bk
from animgraph.nodes.fk import fk
from animgraph.nodes.dead_blend import DeadBlender
from animgraph.nodes.inertialize import Inertializer
from animgraph.nodes.tracking_spring import TrackingSpring
from animgraph.nodes.additive import additive, difference
from animgraph.nodes.blend import blend
from animgraph.nodes.sample import sample
from animgraph.nodes.select import select
from animgraph.nodes.foot_lock import FootLock
from animgraph.nodes.look_at import look_at
from animgraph.nodes.two_bone_ik import two_bone_ik

__all__ = ["fk", "bk"]
__all__ += ["Inertializer", "DeadBlender", "TrackingSpring"]
__all__ += ["sample", "blend", "additive", "difference", "select"]
__all__ += ["look_at", "two_bone_ik", "FootLock"]
