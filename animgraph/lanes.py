"""The lane tile: LANES characters side by side, and kernels whose innermost loop runs over them.

A pose tile of J joints is one flat float32 array of ``J * CHANNELS * LANES`` numbers:
joint-major, then channel (pos 3, rot 4 w-first, scl 3, vel 3, ang 3, svl 3), then lane,
so channel ``k`` of joint ``j`` for character ``l`` is ``tile[(j * CHANNELS + k) * LANES + l]``.
Consecutive characters are consecutive floats, so a loop over lanes with LANES a
compile-time constant loads and stores whole SIMD registers.

The maths is written once for one character, in ``animgraph.maths`` (``kmul``), generic over
the float type: here it runs on float32 lanes, inlined into the lane loop.  What keeps the
loop packed (measured): flat 1-D buffers (a 2-D ``a[k, l]`` view has a runtime row stride
and stays scalar), float32 constants (a Python float literal promotes the sum to float64:
``maths.const``), no allocation and no branches inside the lane loop.
"""

import numpy as np
from animgraph.jit import njit

from animgraph.maths import kmul
from animgraph.pose import Pose
from animgraph.views import alive, borrowed

LANES = 16  # characters per tile: a multiple of the SIMD width (8 float32 in AVX2, 16 in AVX-512)
POS, ROT, SCL, VEL, ANG, SVL = 0, 3, 7, 10, 13, 16  # first channel of each field
WIDTHS = (3, 4, 3, 3, 3, 3)  # channels of each field, in FIELDS order
CHANNELS = 19
JOINT = CHANNELS * LANES  # floats per joint in a tile

# No kernel is compiled with fastmath flags (``contract`` fused a * b + c): with them, which products
# LLVM fuses depends on the code around a kernel once inlined (the partial or whole executor, aliasing
# proved or not), so the same graph rounded differently in a process that compiled it and one that
# loaded it from the cache (``tests/test_determinism.py``).  The hot sums fuse explicitly instead
# (``maths.madd``: the CPU alone decides), so every compile rounds alike.


# ---------------------------------------------------------------- packing


def tile_count(batch):
    """Tiles needed for ``batch`` characters."""
    return -(-batch // LANES)


def pack_tiles(pose):
    """Tiles ``(ceil(B / LANES), J * CHANNELS * LANES)`` float32 from a Pose batch (B, J, ...).

    Lanes past the last character copy it, so padded lanes hold a valid pose (no NaN, no zero quaternion).
    """
    if not isinstance(pose, Pose) or len(pose.batch) != 1:
        raise ValueError(f"pose must be a Pose with one batch axis (B, J, ...), got {type(pose).__name__} "
                         f"{getattr(pose, 'batch', '')}")
    batch, joints = pose.batch[0], pose.joints
    channels = np.concatenate(pose.as_tuple(), axis=-1)  # (B, J, CHANNELS)
    padded = np.concatenate([channels, np.repeat(channels[-1:], tile_count(batch) * LANES - batch, axis=0)])
    lanes_last = padded.reshape(-1, LANES, joints, CHANNELS).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(lanes_last, np.float32).reshape(-1, joints * JOINT)


def unpack_tiles(tiles, batch):
    """The Pose (batch, J, ...) of the first ``batch`` lanes of ``tiles`` (as from ``pack_tiles``)."""
    tiles = np.asarray(tiles, np.float32)
    if tiles.ndim != 2 or tiles.shape[1] % JOINT or tiles.shape[0] != tile_count(batch):
        raise ValueError(f"tiles must have shape ({tile_count(batch)}, J * {JOINT}) for {batch} characters, "
                         f"got {tiles.shape}")
    joints = tiles.shape[1] // JOINT
    channels = tiles.reshape(-1, joints, CHANNELS, LANES).transpose(0, 3, 1, 2).reshape(-1, joints, CHANNELS)
    ends = np.cumsum(WIDTHS)
    return Pose(*(np.ascontiguousarray(channels[:batch, :, e - w:e]) for e, w in zip(ends, WIDTHS)))


# ---------------------------------------------------------------- one lane of a tile


@njit(inline="always")
def lane3(tile, at):
    return (tile[at], tile[at + LANES], tile[at + 2 * LANES])


@njit(inline="always")
def lane4(tile, at):
    return (tile[at], tile[at + LANES], tile[at + 2 * LANES], tile[at + 3 * LANES])


@njit(inline="always")
def store_lane3(tile, at, v):
    tile[at], tile[at + LANES], tile[at + 2 * LANES] = v[0], v[1], v[2]


@njit(inline="always")
def store_lane4(tile, at, q):
    tile[at], tile[at + LANES], tile[at + 2 * LANES], tile[at + 3 * LANES] = q[0], q[1], q[2], q[3]


@njit(inline="always")
def load_lane(tile, joint, lane):
    """Kineform of character ``lane`` at ``joint``."""
    at = joint * JOINT + lane
    return (lane3(tile, at + POS * LANES), lane4(tile, at + ROT * LANES), lane3(tile, at + SCL * LANES),
            lane3(tile, at + VEL * LANES), lane3(tile, at + ANG * LANES), lane3(tile, at + SVL * LANES))


@njit(inline="always")
def store_lane(tile, joint, lane, k):
    """Write kineform ``k`` of character ``lane`` at ``joint``."""
    at = joint * JOINT + lane
    store_lane3(tile, at + POS * LANES, k[0])
    store_lane4(tile, at + ROT * LANES, k[1])
    store_lane3(tile, at + SCL * LANES, k[2])
    store_lane3(tile, at + VEL * LANES, k[3])
    store_lane3(tile, at + ANG * LANES, k[4])
    store_lane3(tile, at + SVL * LANES, k[5])


# ---------------------------------------------------------------- kernels over a tile


@njit(inline="always")
def kmul_joint(a, a_joint, b, b_joint, out, out_joint):
    """``out[out_joint] = a[a_joint] * b[b_joint]`` for every lane.

    ``out`` should be a buffer other than ``a`` and ``b``: results are right either way, but
    LLVM only packs the loop when it can tell the stores from the loads.
    """
    for lane in range(LANES):
        store_lane(out, out_joint, lane, kmul(load_lane(a, a_joint, lane), load_lane(b, b_joint, lane)))


@njit(inline="always")
def copy_joint(src, src_joint, dst, dst_joint):
    s, d = src_joint * JOINT, dst_joint * JOINT
    for i in range(JOINT):
        dst[d + i] = src[s + i]


@njit(cache=True)
def fk_tile(local, parents, out, parent=None):
    """Global pose tile ``out`` from local pose tile ``local`` (joints ordered parents first).

    ``parent`` is scratch for one joint (``JOINT`` float32): each parent is copied there first
    because a lane loop that reads and writes the same buffer stays scalar (LLVM cannot
    rule out overlap).  Without it, one is allocated per call.  The loop uses a borrowed view
    of it: a counted array costs two atomic operations at each use in the loop.
    """
    own = np.empty(JOINT, np.float32) if parent is None else parent
    scratch = borrowed(own)
    for j in range(parents.shape[0]):
        p = parents[j]
        if p < 0:
            copy_joint(local, j, out, j)
        else:
            copy_joint(out, p, scratch, 0)
            kmul_joint(scratch, 0, local, j, out, j)
    alive(own)


@njit(cache=True)
def fk_tiles(local, parents, out):
    """``fk_tile`` on each row of ``local`` and ``out`` (tiles, J * JOINT), as from ``pack_tiles``."""
    parent = np.empty(JOINT, np.float32)
    for t in range(local.shape[0]):
        fk_tile(local[t], parents, out[t], parent)


def fk(local, parents):
    """Global Pose (B, J, ...) from a local Pose (B, J, ...) through tiles: ``ops.fk`` in float32 lanes."""
    tiles = pack_tiles(local)
    out = np.empty_like(tiles)
    fk_tiles(tiles, np.asarray(parents, np.int64), out)
    return unpack_tiles(out, local.batch[0])


# ---------------------------------------------------------------- the executor's tiles (one per LANES characters)


@njit(inline="always")
def tile_slot(tile, slot, joints):
    """Pose slot ``slot`` of an executor tile (every slot's ``joints * JOINT`` floats, one after the other)."""
    size = joints * JOINT
    return tile[slot * size:(slot + 1) * size]


def identity_tiles(tiles, slots, joints):
    """Executor tiles (tiles, slots * joints * JOINT) float32 holding identity poses (rot w 1, scale 1, at rest)."""
    out = np.zeros((tiles, slots, joints, CHANNELS, LANES), np.float32)
    out[:, :, :, ROT] = 1.0
    out[:, :, :, SCL:SCL + 3] = 1.0
    return out.reshape(tiles, -1)
