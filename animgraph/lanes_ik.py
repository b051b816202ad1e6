"""Two-bone IK over one lane tile: ``ik.apply_two_bone`` at full weight in float32, exact velocities.

The solve is ``ik.knee_turn`` and ``ik.hip_swing``, generic over the float type and written
with selects instead of branches, inlined into the lane loop by LLVM (``forceinline``) so it
packs; the soft reach clamp's ``exp(-v)`` is then ``maths.exp_neg``'s float32 series, as
libm's exp would keep the loop scalar.

Weight is 1 with rate 0 (the ozz chain's); ``weighted_rotation`` is then the identity.
The chain's globals come from tile passes like ``fk_tile`` along the path from the root to
the end joint only, into scratch (never read and written in the same lane loop).
"""

import numpy as np
from animgraph.jit import njit

from animgraph.ik import hip_swing, knee_turn
from animgraph.lanes import ANG, JOINT, LANES, ROT, copy_joint, kmul_joint, load_lane, store_lane3, store_lane4
from animgraph.lanes import fk_tile
from animgraph.lanes_ops import KEY, ONE, blend_tile, sample_linear_tile
from animgraph.maths import qinv, qmul, qrot, vadd, vsub

F32 = np.float32
SOLVED = 14  # per lane: q_hip (4), w_hip (3), q_knee (4), w_knee (3)


# ---------------------------------------------------------------- one character, float32, branch-free


@njit(inline="always")
def local_under(par, rot, ang):
    """Local rotation and angular velocity under global parent ``par`` giving global ``rot``/``ang`` (``kdiv``)."""
    inv = qinv(par[1])
    return qmul(inv, rot), qrot(inv, vsub(ang, par[4]))


# ---------------------------------------------------------------- the kernel over a tile


@njit(inline="always")
def path_globals(local, path, first, last, glob, parent):
    """Globals of ``path[first..last-1]`` into ``glob`` joints ``first+1..last`` (joint 0: the identity parent)."""
    for i in range(first, last):
        copy_joint(glob, i, parent, 0)
        kmul_joint(parent, 0, local, path[i], glob, i + 1)


# error_model numpy: a float divide by zero gives inf (then selected away), not a check and a branch.
@njit(cache=True, error_model="numpy")
def two_bone_ik_tile(local, path, ia, ib, ic, hinge, tpos, tvel, out, glob, parent, solved):
    """``ops.two_bone_ik`` (weight 1) of every lane of ``local`` into ``out`` (a separate buffer, or ``local``).

    ``path``: the joints from a root down to the end joint (``ik_path``), ``ia``/``ib``/``ic``
    the positions of root, mid and end in it; ``hinge`` (3,) float32; ``tpos``/``tvel``
    lane-minor float32 (3 * LANES) targets in model space.  Scratch: ``glob`` float32
    ((len(path) + 1) * JOINT) with joint 0 the identity (``ik_scratch``), ``parent`` (JOINT),
    ``solved`` (SOLVED * LANES).
    """
    if local.ctypes.data != out.ctypes.data:  # in place, only the chain's two joints are written
        for i in range(out.shape[0]):
            out[i] = local[i]
    hinge = (F32(hinge[0]), F32(hinge[1]), F32(hinge[2]))
    path_globals(local, path, 0, ic + 1, glob, parent)
    ja, jb = path[ia], path[ib]
    at_a, at_b = ja * JOINT, jb * JOINT
    # The solve writes only ``solved``: one output buffer keeps LLVM's overlap checks few enough to pack the loop.
    for lane in range(LANES):
        a = load_lane(glob, ia + 1, lane)
        b = load_lane(glob, ib + 1, lane)
        c = load_lane(glob, ic + 1, lane)
        tp = (tpos[lane], tpos[LANES + lane], tpos[2 * LANES + lane])
        tv = (tvel[lane], tvel[LANES + lane], tvel[2 * LANES + lane])
        q_knee, w_knee = knee_turn(a, b, c, tp, tv, hinge)
        q_hip, w_hip = hip_swing(a, b, c, tp, tv, hinge, q_knee, w_knee)
        store_lane4(solved, lane, q_hip)
        store_lane3(solved, 4 * LANES + lane, w_hip)
        store_lane4(solved, 7 * LANES + lane, q_knee)
        store_lane3(solved, 11 * LANES + lane, w_knee)
    for lane in range(LANES):
        pa = load_lane(glob, ia, lane)
        a = load_lane(glob, ia + 1, lane)
        q_hip = (solved[lane], solved[LANES + lane], solved[2 * LANES + lane], solved[3 * LANES + lane])
        w_hip = (solved[4 * LANES + lane], solved[5 * LANES + lane], solved[6 * LANES + lane])
        rot, ang = local_under(pa, qmul(q_hip, a[1]), vadd(w_hip, qrot(q_hip, a[4])))
        store_lane4(out, at_a + ROT * LANES + lane, rot)
        store_lane3(out, at_a + ANG * LANES + lane, ang)
    # The mid joint's parent after the hip turn, from the stored (float32) hip, as ik does.
    path_globals(out, path, ia, ib, glob, parent)
    for lane in range(LANES):
        pb = load_lane(glob, ib, lane)
        b = load_lane(glob, ib + 1, lane)
        q_hip = (solved[lane], solved[LANES + lane], solved[2 * LANES + lane], solved[3 * LANES + lane])
        w_hip = (solved[4 * LANES + lane], solved[5 * LANES + lane], solved[6 * LANES + lane])
        q_knee = (solved[7 * LANES + lane], solved[8 * LANES + lane], solved[9 * LANES + lane],
                  solved[10 * LANES + lane])
        w_knee = (solved[11 * LANES + lane], solved[12 * LANES + lane], solved[13 * LANES + lane])
        rot_b = qmul(q_hip, qmul(q_knee, b[1]))
        ang_b = vadd(w_hip, qrot(q_hip, vadd(w_knee, qrot(q_knee, b[4]))))
        rot, ang = local_under(pb, rot_b, ang_b)
        store_lane4(out, at_b + ROT * LANES + lane, rot)
        store_lane3(out, at_b + ANG * LANES + lane, ang)


# ---------------------------------------------------------------- setup and batch wrapper


def ik_path(parents, root, mid, end):
    """(path int64 from a root down to ``end``, positions of root, mid and end in it)."""
    chain = [end]
    while parents[chain[-1]] >= 0:
        chain.append(int(parents[chain[-1]]))
    path = np.array(chain[::-1], np.int64)
    where = {int(j): i for i, j in enumerate(path)}
    if root not in where or mid not in where or not where[root] < where[mid] < where[end]:
        raise ValueError(f"joints {root}, {mid}, {end} are not a chain of ancestors")
    return path, where[root], where[mid], where[end]


def ik_scratch(path):
    """(glob, parent, solved) scratch for ``two_bone_ik_tile``: glob's joint 0 is the identity kineform."""
    glob = np.zeros((len(path) + 1) * JOINT, np.float32)
    glob[(ROT * LANES):(ROT * LANES + LANES)] = 1.0  # rot w
    glob[(7 * LANES):(10 * LANES)] = 1.0  # scl (lanes.SCL = 7)
    return glob, np.empty(JOINT, np.float32), np.empty(SOLVED * LANES, np.float32)


def lane_targets(values, batch):
    """Lane-minor (tiles, 3 * LANES) float32 from per-character (batch, 3) or one (3,) target, padded with the last."""
    from animgraph.lanes import tile_count

    v = np.broadcast_to(np.asarray(values, np.float64), (batch, 3))
    v = np.concatenate([v, np.repeat(v[-1:], tile_count(batch) * LANES - batch, axis=0)])
    return np.ascontiguousarray(v.reshape(-1, LANES, 3).transpose(0, 2, 1), np.float32).reshape(-1, 3 * LANES)


def two_bone_ik(local, parents, joints, target_pos, target_vel=(0.0, 0.0, 0.0), hinge=(1.0, 0.0, 0.0)):
    """``ops.two_bone_ik(local, parents, joints, target_pos, target_vel, hinge=hinge)`` through tiles (indices)."""
    from animgraph.lanes import pack_tiles, unpack_tiles

    batch = local.batch[0]
    path, ia, ib, ic = ik_path(np.asarray(parents), *joints)
    hinge = np.asarray(hinge, np.float64)
    hinge = (hinge / np.linalg.norm(hinge)).astype(np.float32)
    tiles = pack_tiles(local)
    out = np.empty_like(tiles)
    tp, tv = lane_targets(target_pos, batch), lane_targets(target_vel, batch)
    glob, parent, solved = ik_scratch(path)
    for t in range(tiles.shape[0]):
        two_bone_ik_tile(tiles[t], path, ia, ib, ic, hinge, tp[t], tv[t], out[t], glob, parent, solved)
    return unpack_tiles(out, batch)


# ---------------------------------------------------------------- the full ozz chain on tiles


@njit(cache=True)
def chain_ik_tiles(tab_a, frames_a, dt_a, unit_a, tab_b, frames_b, dt_b, unit_b, loop, times, rate, coef, alpha,
                   alpha_vel, parents, left, right, hinge, targets, out):
    """``lanes_ops.chain_tiles`` with two-bone IK on both legs between the blend and FK.

    ``left``/``right``: ``ik_leg`` arrays (path, then root, mid, end positions); ``targets``
    float32 (4, 3 * LANES): left pos, left vel, right pos, right vel, lane-minor (the same for every tile).
    """
    size = out.shape[1]
    ta, tb = np.empty(size, np.float32), np.empty(size, np.float32)
    mixed, legged = np.empty(size, np.float32), np.empty(size, np.float32)
    rows, sv, parent = np.empty(LANES, np.int64), np.empty(2 * LANES, np.float32), np.empty(JOINT, np.float32)
    keys = np.empty(KEY * LANES, np.float32)
    solved = np.empty(SOLVED * LANES, np.float32)
    glob = np.zeros((max(left.shape[0], right.shape[0]) - 3 + 1) * JOINT, np.float32)
    for i in range(LANES):  # joint 0 of glob: the identity kineform (rot w and scale 1)
        glob[ROT * LANES + i] = ONE
        for c in range(3):
            glob[(7 + c) * LANES + i] = ONE
    for t in range(out.shape[0]):
        lane_times = times[t * LANES:(t + 1) * LANES]
        sample_linear_tile(tab_a, frames_a, dt_a, loop, unit_a, lane_times, rate, ta, rows, sv, keys)
        sample_linear_tile(tab_b, frames_b, dt_b, loop, unit_b, lane_times, rate, tb, rows, sv, keys)
        blend_tile(ta, tb, coef, alpha, alpha_vel, mixed)
        n = left.shape[0] - 3
        two_bone_ik_tile(mixed, left[:n], left[n], left[n + 1], left[n + 2], hinge, targets[0], targets[1], legged,
                         glob, parent, solved)
        n = right.shape[0] - 3
        two_bone_ik_tile(legged, right[:n], right[n], right[n + 1], right[n + 2], hinge, targets[2], targets[3], mixed,
                         glob, parent, solved)
        fk_tile(mixed, parents, out[t], parent)


def ik_leg(parents, joints):
    """One int64 array: ``ik_path``'s path, then the positions of root, mid and end in it (``chain_ik_tiles``)."""
    path, ia, ib, ic = ik_path(parents, *joints)
    return np.concatenate([path, [ia, ib, ic]]).astype(np.int64)
