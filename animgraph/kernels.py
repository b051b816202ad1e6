"""Bottom-layer numba helpers every node kernel may import: pose copies, array columns, state poses, joint globals.

A node module imports helpers from here, from ``animgraph.maths`` (vector, quaternion
and kineform maths) and from the other core modules named by what they hold
(``animgraph.ik``, ``animgraph.offsets``, ``animgraph.decay``), never from another node
module (``tests/test_layers.py`` checks).  This module imports no node module.

Pose slots: ``animgraph.node.slot(pose, i)`` gives slot ``i`` as a pose tuple, beside the
kernel contract it belongs to.  A pose tuple is ``(pos, rot, scl, vel, ang, svl)`` of
(J, 3|4) arrays (float32 slots, or float64 views of a state array, see ``state_pose``);
units as in ``animgraph.pose``: m, unit quaternions (w, x, y, z), m/s, rad/s, 1/s.
Getters return float64 tuples (``np.float64``, not ``float()``: see ``animgraph.maths``).
"""

import math

import numpy as np
from numba import types

from animgraph.jit import njit
from numba.extending import overload

from .maths import kdiv, kidentity, kmul, load_kform, store3, store4
from .views import flat

# ---------------------------------------------------------------- columns of arrays


@njit(cache=True)
def get3(a, j, c):
    """Columns ``c..c+2`` of row ``j`` of a 2-D array as a float64 vec3 (units of the array)."""
    return (np.float64(a[j, c]), np.float64(a[j, c + 1]), np.float64(a[j, c + 2]))


@njit(cache=True)
def put3(a, j, c, v):
    """Write vec3 ``v`` into columns ``c..c+2`` of row ``j`` of a 2-D array (units of the array)."""
    a[j, c] = v[0]
    a[j, c + 1] = v[1]
    a[j, c + 2] = v[2]


@njit(cache=True)
def read3(a, i):
    """Entries ``i..i+2`` of a flat array (signal buffer, state) as a float64 vec3 (units of the array)."""
    return (np.float64(a[i]), np.float64(a[i + 1]), np.float64(a[i + 2]))


@njit(cache=True)
def write3(a, i, v):
    """Write vec3 ``v`` into entries ``i..i+2`` of a flat array (signal buffer, state)."""
    a[i] = v[0]
    a[i + 1] = v[1]
    a[i + 2] = v[2]


# Rows of flat (``views.flat``) pose arrays, in the array's element type: a joint loop reading
# them with a constant stride is one LLVM can pack across joints.


@njit(inline="always")
def row3(a, j):
    """Row ``j`` of a flat (J * 3) array as a vec3 in its element type."""
    return (a[3 * j], a[3 * j + 1], a[3 * j + 2])


@njit(inline="always")
def row4(a, j):
    """Row ``j`` of a flat (J * 4) array as a quaternion (w, x, y, z) in its element type."""
    return (a[4 * j], a[4 * j + 1], a[4 * j + 2], a[4 * j + 3])


@njit(inline="always")
def row3_64(a, j):
    """Row ``j`` of a flat (J * 3) array as a float64 vec3."""
    v = row3(a, j)
    return (np.float64(v[0]), np.float64(v[1]), np.float64(v[2]))


@njit(inline="always")
def row4_64(a, j):
    """Row ``j`` of a flat (J * 4) array as a float64 quaternion."""
    q = row4(a, j)
    return (np.float64(q[0]), np.float64(q[1]), np.float64(q[2]), np.float64(q[3]))


@njit(inline="always")
def set_row3(a, j, v):
    """Write vec3 ``v`` into row ``j`` of a flat (J * 3) array."""
    a[3 * j] = v[0]
    a[3 * j + 1] = v[1]
    a[3 * j + 2] = v[2]


@njit(inline="always")
def set_row4(a, j, q):
    """Write quaternion ``q`` into row ``j`` of a flat (J * 4) array."""
    a[4 * j] = q[0]
    a[4 * j + 1] = q[1]
    a[4 * j + 2] = q[2]
    a[4 * j + 3] = q[3]


@njit(inline="always")
def flat_pose(pose):
    """Pose tuple ``pose`` (C-contiguous) as a tuple of its six flat views (``views.flat``)."""
    return (flat(pose[0]), flat(pose[1]), flat(pose[2]), flat(pose[3]), flat(pose[4]), flat(pose[5]))


@njit(inline="always")
def row_kform(f, j):
    """Kineform of joint ``j`` of a ``flat_pose`` in float64 (``maths.load_kform`` with constant row strides)."""
    return (row3_64(f[0], j), row4_64(f[1], j), row3_64(f[2], j), row3_64(f[3], j), row3_64(f[4], j),
            row3_64(f[5], j))


@njit(inline="always")
def set_row_kform(f, j, k):
    """Write kineform ``k`` into joint ``j`` of a ``flat_pose`` (``maths.store_kform`` on flat rows)."""
    set_row3(f[0], j, k[0])
    set_row4(f[1], j, k[1])
    set_row3(f[2], j, k[2])
    set_row3(f[3], j, k[3])
    set_row3(f[4], j, k[4])
    set_row3(f[5], j, k[5])


# ---------------------------------------------------------------- whole poses


def copy_rows(src, dst):
    """Copy the 2-D array ``src`` into ``dst`` of the same shape (any float types; the same array is fine).

    Loops rather than ``dst[:] = src``: numba's slice assignment links a formatted
    shape-error message (its unicode machinery) into every caller, seconds of cold
    compile for a plain copy.  The values written are the same (one cast per element).
    Compiled, two C-contiguous arrays copy as one flat loop, which LLVM packs: a 65-joint
    pose measured 0.05 us that way, 0.5 us row by row (3 or 4 numbers a row).
    """
    if src.shape[0] != dst.shape[0] or src.shape[1] != dst.shape[1]:
        raise ValueError("copy_rows: the arrays' shapes differ")
    for j in range(dst.shape[0]):
        for k in range(dst.shape[1]):
            dst[j, k] = src[j, k]


@overload(copy_rows)
def _copy_rows_overload(src, dst):
    if not (isinstance(src, types.Array) and isinstance(dst, types.Array)):
        return None
    if src.layout == "C" and dst.layout == "C":
        def copy_flat(src, dst):
            if src.shape[0] != dst.shape[0] or src.shape[1] != dst.shape[1]:
                raise ValueError("copy_rows: the arrays' shapes differ")
            a, b = flat(src), flat(dst)
            for i in range(b.size):
                b[i] = a[i]
        return copy_flat
    return copy_rows


@njit(cache=True)
def copy_pose(src, dst):
    """Copy pose tuple ``src`` into ``dst`` (same space and units; any float types; the same arrays are fine)."""
    # Plain loops (copy_rows): a slice assignment costs several times more per call and compiles a
    # shape-error message into every kernel that copies.
    copy_rows(src[0], dst[0])
    copy_rows(src[1], dst[1])
    copy_rows(src[2], dst[2])
    copy_rows(src[3], dst[3])
    copy_rows(src[4], dst[4])
    copy_rows(src[5], dst[5])


KFORM = 19  # floats of one kineform stored by ``state_pose``: pos 3, rot 4, scl 3, vel 3, ang 3, svl 3


@njit(cache=True)
def state_pose(st, o, joints):
    """The ``joints`` kineform rows stored flat at ``st[o:]`` (19 floats a joint) as a pose tuple of (J, 3|4) views.

    Layout: pos (3J), rot (4J), scl (3J), vel (3J), ang (3J), svl (3J); the space is
    whatever the node stored (units as in any pose tuple).
    """
    j3 = 3 * joints
    return (
        st[o : o + j3].reshape((joints, 3)),
        st[o + j3 : o + j3 + 4 * joints].reshape((joints, 4)),
        st[o + 7 * joints : o + 7 * joints + j3].reshape((joints, 3)),
        st[o + 10 * joints : o + 10 * joints + j3].reshape((joints, 3)),
        st[o + 13 * joints : o + 13 * joints + j3].reshape((joints, 3)),
        st[o + 16 * joints : o + 16 * joints + j3].reshape((joints, 3)),
    )


# ---------------------------------------------------------------- joint globals of a local pose


@njit(cache=True, inline="always")
def joint_global(local, parents, j):
    """Global (model-space) kineform of joint ``j`` of local pose tuple ``local``, by FK along its ancestors only (root first, as FK does); identity for -1."""
    return joint_global_below(local, parents, -1, kidentity(), j)


@njit(cache=True, inline="always")
def joint_global_below(local, parents, anc, g_anc, j):
    """Global kineform of joint ``j`` given ``g_anc``, the global kineform of its ancestor ``anc`` (or ``j`` itself, or -1 and the identity).

    FK from ``anc`` down to ``j``, in FK's order, so the result is the same as ``joint_global(local, parents, j)``.
    """
    depth = 0
    p = j
    while p != anc:
        depth += 1
        p = parents[p]
    g = g_anc
    for level in range(depth - 1, -1, -1):
        a = j
        for _ in range(level):
            a = parents[a]
        g = kmul(g, load_kform(local, a))
    return g


@njit(cache=True)
def set_global_rotation(pose, parents, j, rot, ang):
    """Give joint ``j`` of local pose tuple ``pose`` the global (model-space) rotation ``rot`` turning at ``ang`` (rad/s)."""
    set_rotation_under(pose, j, joint_global(pose, parents, parents[j]), rot, ang)


@njit(cache=True, inline="always")
def set_rotation_under(pose, j, par, rot, ang):
    """``set_global_rotation`` given ``par``, the global kineform of ``j``'s parent (only its rot and ang are read)."""
    # Only rot and ang of the quotient are used; they do not depend on the other fields.
    loc = kdiv(par, (par[0], rot, par[2], par[3], ang, par[5]))
    store4(pose[1], j, loc[1])
    store3(pose[4], j, loc[4])


@njit(cache=True)
def weight_input(sig, at):
    """A blend weight and its rate (1/s) from the scalar signal at ``sig[at]``.

    An unlinked weight port is fed a constant block from its field by the planner, so ``at`` is always a
    signal.  Held at the ends of [0, 1]: a clamped weight does not move (NaN counts as 0).
    """
    alpha, alpha_vel = sig[at], sig[at + 1]
    if not alpha > 0.0:
        return 0.0, 0.0
    if alpha > 1.0:
        return 1.0, 0.0
    return alpha, alpha_vel



# ---------------------------------------------------------------- kernels called without a graph

# One empty pose slot and an empty clip database: the ``pose`` and ``db`` of an op that calls its
# signal-only kernel directly (no poses, no clips read).
NO_POSE = tuple(np.zeros((1, 1, n), np.float32) for n in (3, 4, 3, 3, 3, 3))
NO_DB = (np.zeros((1, 1, 3), np.float32), np.zeros((1, 1, 4), np.float32), np.zeros((1, 1, 3), np.float32),
         np.zeros(1, np.int32))


@njit(cache=True)
def segment(t, frames, key_dt, loop, rate):
    """Key index k, fraction s in [0, 1] and whether the clip moves at time ``t`` (s).

    On a key the segment is chosen in the direction of play, so the velocity is the
    derivative along the playing direction; a clamped clip at or past an end does not move.
    """
    u = t / key_dt
    if frames == 1:
        return 0, 0.0, False
    if loop:
        u = u - frames * math.floor(u / frames)
        if not 0.0 <= u < frames:  # rounding of a tiny negative time, or a time too large to wrap exactly
            u = 0.0
        k = min(int(math.floor(u)), frames - 1)
        s = u - k
        if s == 0.0 and rate < 0.0:
            return (k - 1) % frames, 1.0, True
        return k, s, True
    last = frames - 1
    if u <= 0.0:
        return 0, 0.0, u == 0.0 and rate > 0.0
    if u >= last:
        return last - 1, 1.0, u == last and rate < 0.0
    k = min(int(math.floor(u)), last - 1)
    s = u - k
    if s == 0.0 and rate < 0.0:
        return k - 1, 1.0, True
    return k, s, True


@njit(cache=True)
def keys(k, frames, loop):
    """Keys k-1, k, k+1, k+2 (wrapped or clamped) and the frame spans of the tangents at k and k+1."""
    if loop:
        return (k - 1) % frames, k, (k + 1) % frames, (k + 2) % frames, 2.0, 2.0
    km = max(k - 1, 0)
    k1 = min(k + 1, frames - 1)
    k2 = min(k + 2, frames - 1)
    return km, k, k1, k2, max(float(k1 - km), 1.0), max(float(k2 - k), 1.0)


@njit(cache=True)
def basis(s, cubic):
    """Hermite weights of (x_k, m_k, x_k1, m_k1) at ``s`` and their derivatives d/ds."""
    if not cubic:
        return (1.0 - s, 0.0, s, 0.0), (-1.0, 0.0, 1.0, 0.0)
    s2 = s * s
    s3 = s2 * s
    w = (2.0 * s3 - 3.0 * s2 + 1.0, s3 - 2.0 * s2 + s, 3.0 * s2 - 2.0 * s3, s3 - s2)
    dw = (6.0 * s2 - 6.0 * s, 3.0 * s2 - 4.0 * s + 1.0, 6.0 * s - 6.0 * s2, 3.0 * s2 - 2.0 * s)
    return w, dw
