"""animgraph: a node-graph character-animation runtime where every pose carries its velocities."""

__version__ = "0.1.0"

from .cache import configure_numba as _configure_numba

# Before any kernel module is imported: numba reads the cache location at decoration.
_configure_numba()

from . import kform, maths, ops  # noqa: E402,F401
from .errors import AnimgraphError, BVHError, GraphError  # noqa: E402,F401
from .pose import Clip, Pose, Skeleton  # noqa: E402,F401
from .graph import Graph  # noqa: E402,F401
from .runtime import compile  # noqa: E402,F401,A004
from . import data, names, preprocess  # noqa: E402,F401
from .bvh import load_bvh, save_bvh  # noqa: E402,F401
from .gltf import GLTFError, load_gltf, save_gltf  # noqa: E402,F401
