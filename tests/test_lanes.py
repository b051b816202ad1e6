"""The lane tile: pack/unpack round trip, fk_tile equals ops.fk, and fk_tile compiles to packed float32 SIMD."""

import platform
import re

import numba
import numpy as np
import pytest
from llvmlite import binding

import animgraph as ag
from animgraph import lanes
from animgraph.pose import FIELDS
from test_kform import random_kforms

BATCHES = (1, 15, 16, 17, 100)


def walk_batch(batch, seed=0):
    """(skeleton, local Pose (batch, J, ...)) of the walk clip, each character at its own time."""
    skel, clip = ag.data.load("walk")
    times = np.random.default_rng(seed).uniform(0.0, clip.duration, batch)
    return skel, ag.ops.sample(clip, times)


def assert_pose_close(got, want, rtol=2e-5):
    """Each field equal to float32 precision relative to the field's largest magnitude."""
    for f in FIELDS:
        a, b = getattr(got, f), getattr(want, f)
        assert a.shape == b.shape, f
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())), err_msg=f)


def test_pack_rejects_an_unbatched_pose():
    with pytest.raises(ValueError, match="one batch axis"):
        lanes.pack_tiles(ag.Pose.identity(3))


@pytest.mark.parametrize("batch", BATCHES)
def test_pack_unpack_round_trip(batch):
    _, local = walk_batch(batch)
    tiles = lanes.pack_tiles(local)
    assert tiles.dtype == np.float32 and tiles.flags.c_contiguous
    assert tiles.shape == (-(-batch // lanes.LANES), local.joints * lanes.CHANNELS * lanes.LANES)
    back = lanes.unpack_tiles(tiles, batch)
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(back, f), getattr(local, f), err_msg=f)


def test_tile_layout_is_channel_major_lane_minor():
    _, local = walk_batch(17)
    tiles = lanes.pack_tiles(local)
    j, lane = 5, 3
    at = (j * lanes.CHANNELS + lanes.ROT + 2) * lanes.LANES + lane  # rot.y of joint 5, character 3
    assert tiles[0, at] == local.rot[lane, j, 2]
    # Tile 1 holds character 16 in lane 0; its padded lanes copy it (the last character).
    at = (j * lanes.CHANNELS + lanes.VEL) * lanes.LANES
    np.testing.assert_array_equal(tiles[1, at:at + lanes.LANES], local.vel[16, j, 0])


@pytest.mark.parametrize("batch", BATCHES)
def test_fk_tile_equals_ops_fk_on_the_walk(batch):
    skel, local = walk_batch(batch, seed=batch)
    assert_pose_close(lanes.fk(local, skel.parents), ag.ops.fk(local, skel.parents))


def test_fk_tile_equals_ops_fk_at_non_uniform_scale():
    # The walk has unit scales; random kineforms exercise the scale-expansion and svl terms.
    rng = np.random.default_rng(3)
    joints = 12
    parents = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, joints)])
    local = random_kforms(rng, 40 * joints, scale_spread=0.2)
    local = ag.Pose(*(a.reshape(40, joints, -1) for a in local.as_tuple()))
    assert_pose_close(lanes.fk(local, parents), ag.ops.fk(local, parents), rtol=5e-5)


def test_fk_tile_with_and_without_scratch_agree():
    skel, local = walk_batch(16)
    tile = lanes.pack_tiles(local)[0]
    parents = skel.parents.astype(np.int64)
    a, b = np.empty_like(tile), np.empty_like(tile)
    lanes.fk_tile(tile, parents, a)
    lanes.fk_tile(tile, parents, b, np.empty(lanes.JOINT, np.float32))
    np.testing.assert_array_equal(a, b)


PACKED = re.compile(r"\b(v(?:mul|add|fn?madd\d{3}|fn?msub\d{3})ps)\s+%?([yz]mm)")


def test_fk_tile_compiles_to_packed_float32_simd():
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip(f"the packed-SIMD check reads x86 assembly; this machine is {platform.machine()}")
    if not binding.get_host_cpu_features().get("avx2", False):
        pytest.skip("this x86 CPU has no AVX2, so no 256-bit packed float32 to look for")
    # inspect_asm is empty for code loaded from numba's cache: compile the same function and
    # options afresh, uncached.
    options = {k: v for k, v in lanes.fk_tile.targetoptions.items() if k != "nopython"}
    fresh = numba.njit(**options)(lanes.fk_tile.py_func)
    skel, local = walk_batch(16)
    tile = lanes.pack_tiles(local)[0]
    fresh(tile, skel.parents.astype(np.int64), np.empty_like(tile), np.empty(lanes.JOINT, np.float32))
    asm = "\n".join(fresh.inspect_asm().values())
    found = {m.group(1) for m in PACKED.finditer(asm)}
    assert {"vmulps"} <= found and found & {"vaddps", "vfmadd231ps", "vfmadd213ps", "vfmsub231ps"}, found
