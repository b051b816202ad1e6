"""The lane tile: pack/unpack round trip, fk_tile equals ops.fk, the lane ops (lanes_ops) equal ag.ops, and the
lane kernels compile to packed float32 SIMD; the one-character blend and sample loops pack across joints."""

import platform
import re

import numba
import numpy as np
import pytest
from llvmlite import binding

import animgraph as ag
from animgraph import lanes, lanes_ik, lanes_ops
from animgraph.bench import LEGS, chain_assets
from animgraph.jit import called_from_python
from animgraph.nodes.sample import key_table
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


def machine_code(kernel, *args):
    """``kernel``'s machine code for ``args``, disassembled (AT&T), as numba's on-disk cache holds it; or None.

    The call compiles into the cache once (later sessions load it); the object code the process runs is
    read back from the cache file, so nothing compiles again to be inspected.  None without objdump or a
    cached object (then ``packed_ops`` compiles afresh)."""
    import shutil
    import subprocess
    import tempfile

    objdump, cache = shutil.which("objdump"), getattr(kernel, "_cache", None)
    if objdump is None or not hasattr(cache, "_cache_file"):  # no objdump, or not a cache=True kernel
        return None
    kernel(*args)
    sig = tuple(kernel.typeof_pyval(a) for a in args)
    payload = cache._cache_file.load(cache._index_key(sig, kernel.targetctx.codegen()))
    if payload is None or payload[0][1] != "object":  # (name, kind, (object code, bitcode))
        return None
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(payload[0][2][0])
        f.flush()
        run = subprocess.run([objdump, "-d", "--no-show-raw-insn", f.name], capture_output=True, text=True,
                             timeout=300)
    return run.stdout if run.returncode == 0 and run.stdout.strip() else None


def assembly(kernel, *args):
    """``kernel``'s assembly for ``args``: its cached machine code disassembled, else compiled afresh, uncached."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip(f"the packed-SIMD check reads x86 assembly; this machine is {platform.machine()}")
    if not binding.get_host_cpu_features().get("avx2", False):
        pytest.skip("this x86 CPU has no AVX2, so no 256-bit packed float32 to look for")
    kernel = called_from_python(kernel)  # the same function's code, with the wrapper a call from here needs
    code = machine_code(kernel, *args)
    if code is not None:
        return code
    # inspect_asm is empty for code loaded from numba's cache: compile the same function and
    # options afresh, uncached.
    options = {k: v for k, v in kernel.targetoptions.items() if k != "nopython"}
    fresh = numba.njit(**options)(kernel.py_func)
    fresh(*args)
    return "\n".join(fresh.inspect_asm().values())


def packed_ops(kernel, *args):
    """The packed float32 mul/add/FMA instructions in ``kernel``'s machine code for ``args``."""
    return {m.group(1) for m in PACKED.finditer(assembly(kernel, *args))}


def assert_packed(found):
    assert {"vmulps"} <= found and found & {"vaddps", "vfmadd231ps", "vfmadd213ps", "vfmsub231ps"}, found


PACKED_DOUBLE = re.compile(r"\b(v(?:mul|add|sub|fn?madd\d{3}|fn?msub\d{3})pd)\s+%?[yz]mm")


def packed_double_ops(kernel, *args):
    """``packed_ops`` for 256- or 512-bit packed float64 instructions (the one-character kernels compute in float64)."""
    return {m.group(1) for m in PACKED_DOUBLE.finditer(assembly(kernel, *args))}


def test_one_character_blend_and_sample_pack_across_joints():
    """The scalar path's hot joint loops (batch 1) on flat views: 4 joints per float64 instruction.

    The blend's rotation loop packs only with the vectorizer option ``animgraph.cache`` sets.
    """
    from animgraph.nodes.blend import near_rot_rows
    from animgraph.nodes.sample import lerp_rows, linear_rotation_rows
    from animgraph.lanes_ops import near_weights

    _, a = walk_batch(1)
    _, b = walk_batch(1, seed=1)
    a, b = (tuple(x[0] for x in p.as_tuple()) for p in (a, b))
    rot, ang = np.empty_like(a[1]), np.empty_like(a[4])
    flat = [x.reshape(-1) for x in (a[1], a[4], b[1], b[4], rot, ang)]
    found = packed_double_ops(near_rot_rows, *flat[:4], near_weights(0.3, a[1]), 0.0, *flat[4:])
    assert {"vmulpd"} <= found and found & {"vfmadd231pd", "vfmadd213pd", "vaddpd"}, found
    skel, walk = ag.data.load("walk")
    keys = key_table(walk)[0]
    found = packed_double_ops(linear_rotation_rows, 0.4, keys[3], 30.0, rot, ang)
    assert {"vmulpd"} <= found, found
    found = packed_double_ops(lerp_rows, 0.4, walk.pos[3], walk.pos[4], 30.0, np.empty_like(a[0]), np.empty_like(a[0]))
    assert {"vmulpd"} <= found, found


def test_fk_tile_compiles_to_packed_float32_simd():
    skel, local = walk_batch(16)
    tile = lanes.pack_tiles(local)[0]
    assert_packed(packed_ops(lanes.fk_tile, tile, skel.parents.astype(np.int64), np.empty_like(tile),
                             np.empty(lanes.JOINT, np.float32)))


# ---------------------------------------------------------------- lane ops against ag.ops


def with_scales(clip, seed):
    """``clip`` with random non-uniform scales, so the log-scale channels are exercised."""
    scl = np.exp(np.random.default_rng(seed).uniform(-0.3, 0.3, clip.pos.shape))
    return ag.Clip(clip.skeleton, clip.pos, clip.rot, scl, dt=clip.dt)


@pytest.mark.parametrize("batch", (1, 16, 17, 100))
@pytest.mark.parametrize("loop, rate", ((True, 1.0), (False, -1.5)))
def test_sample_linear_tile_equals_ops_sample(batch, loop, rate):
    _, walk = ag.data.load("walk")
    _, chain = chain_assets()
    for clip in (walk, chain["a"], with_scales(walk, batch)):
        # Past both ends too: a clamped clip holds its end keys still, a looping one wraps.
        times = np.random.default_rng(batch).uniform(-0.2, clip.duration + 0.2, batch)
        times[0] = clip.dt * 3  # on a key: the segment in the direction of play
        want = ag.ops.sample(clip, times, "linear", loop=loop, rate=rate)
        assert_pose_close(lanes_ops.sample_linear(clip, key_table(clip)[0], times, loop, rate), want)


@pytest.mark.parametrize("batch", (1, 16, 17, 100))
def test_blend_tile_equals_ops_blend(batch):
    skel, a = walk_batch(batch, seed=batch)
    _, b = walk_batch(batch, seed=batch + 1000)
    for alpha, alpha_vel in ((0.7, 0.0), (0.3, 1.5), (0.0, 0.0), (1.0, -2.0)):
        assert_pose_close(lanes_ops.blend(a, b, alpha, alpha_vel), ag.ops.blend(a, b, alpha, alpha_vel),
                          rtol=5e-5)


@pytest.mark.parametrize("batch", (1, 16, 17, 100))
def test_blend_tile_far_rotations_and_scales(batch):
    # Random kineforms: rotations up to 180 degrees apart (the weight series at its worst), non-unit scales.
    rng = np.random.default_rng(batch)
    a, b = (random_kforms(rng, batch * 3, scale_spread=0.2) for _ in range(2))
    a, b = (ag.Pose(*(x.reshape(batch, 3, -1) for x in p.as_tuple())) for p in (a, b))
    assert_pose_close(lanes_ops.blend(a, b, 0.3, 0.8), ag.ops.blend(a, b, 0.3, 0.8), rtol=2e-4)


def test_chain_tiles_equals_ops():
    skel, clips = chain_assets()
    batch = 17
    times = np.random.default_rng(4).uniform(0.0, 4.0, lanes.tile_count(batch) * lanes.LANES)
    tab_a, unit_a = lanes_ops.lane_key_table(clips["a"], key_table(clips["a"])[0])
    tab_b, unit_b = lanes_ops.lane_key_table(clips["b"], key_table(clips["b"])[0])
    out = np.empty((lanes.tile_count(batch), len(skel) * lanes.JOINT), np.float32)
    a, b = clips["a"], clips["b"]
    lanes_ops.chain_tiles(tab_a, a.frames, a.dt, unit_a, tab_b, b.frames, b.dt, unit_b, True, times, 1.0,
                          lanes_ops.slerp_coefficients(0.7), *lanes_ops.lane_weights(0.7), skel.parents.astype(np.int64),
                          out)
    t = times[:batch]
    want = ag.ops.fk(ag.ops.blend(ag.ops.sample(a, t, "linear", loop=True), ag.ops.sample(b, t, "linear", loop=True),
                                  0.7), skel.parents)
    assert_pose_close(lanes.unpack_tiles(out, batch), want, rtol=5e-5)


def test_lane_ops_compile_to_packed_float32_simd():
    _, walk = ag.data.load("walk")
    table, unit = lanes_ops.lane_key_table(walk, key_table(walk)[0])
    tile = np.empty(len(walk.skeleton) * lanes.JOINT, np.float32)
    assert_packed(packed_ops(lanes_ops.sample_linear_tile, table, walk.frames, walk.dt, True, unit,
                             np.linspace(0.0, 1.0, lanes.LANES), 1.0, tile, np.empty(lanes.LANES, np.int64),
                             np.empty(2 * lanes.LANES, np.float32),
                             np.empty(lanes_ops.KEY * lanes.LANES, np.float32)))
    _, a = walk_batch(16)
    _, b = walk_batch(16, seed=1)
    ta, tb = lanes.pack_tiles(a)[0], lanes.pack_tiles(b)[0]
    assert_packed(packed_ops(lanes_ops.blend_tile, ta, tb, lanes_ops.slerp_coefficients(0.7),
                             *lanes_ops.lane_weights(0.7), np.empty_like(ta)))


@pytest.mark.parametrize("batch", (1, 16, 17, 100))
def test_two_bone_ik_tile_equals_ops_two_bone_ik(batch):
    skel, clips = chain_assets()
    rng = np.random.default_rng(batch)
    local = ag.ops.sample(clips["a"], rng.uniform(0.0, 3.0, batch), "linear", loop=True)
    # The chain's fixed target on the left leg; moving targets, some out of reach (the soft clamp), on the right.
    targets = (((0.09, 0.15, 0.1), (0.0, 0.0, 0.0)), (rng.normal(size=(batch, 3)) * 0.6, rng.normal(size=(batch, 3))))
    for leg, (tpos, tvel) in zip(LEGS, targets):
        joints = tuple(skel.index(j) for j in leg)
        want = ag.ops.two_bone_ik(local, skel, joints, tpos, tvel)
        assert_pose_close(lanes_ik.two_bone_ik(local, skel.parents, joints, tpos, tvel), want, rtol=5e-5)


def test_chain_ik_tiles_equals_ops():
    skel, clips = chain_assets()
    batch = 17
    times = np.random.default_rng(5).uniform(0.0, 4.0, lanes.tile_count(batch) * lanes.LANES)
    a, b = clips["a"], clips["b"]
    tab_a, unit_a = lanes_ops.lane_key_table(a, key_table(a)[0])
    tab_b, unit_b = lanes_ops.lane_key_table(b, key_table(b)[0])
    legs = [lanes_ik.ik_leg(skel.parents, tuple(skel.index(j) for j in leg)) for leg in LEGS]
    target_pos = [(0.09, 0.15, 0.1), (-0.09, 0.15, 0.1)]
    targets = np.concatenate([lanes_ik.lane_targets(v, lanes.LANES) for p in target_pos for v in (p, (0.0, 0.0, 0.0))])
    out = np.empty((lanes.tile_count(batch), len(skel) * lanes.JOINT), np.float32)
    lanes_ik.chain_ik_tiles(tab_a, a.frames, a.dt, unit_a, tab_b, b.frames, b.dt, unit_b, True, times, 1.0,
                            lanes_ops.slerp_coefficients(0.7), *lanes_ops.lane_weights(0.7),
                            skel.parents.astype(np.int64), legs[0], legs[1],
                            np.array([1.0, 0.0, 0.0], np.float32), targets, out)
    t = times[:batch]
    pose = ag.ops.blend(ag.ops.sample(a, t, "linear", loop=True), ag.ops.sample(b, t, "linear", loop=True), 0.7)
    for leg, target in zip(LEGS, target_pos):
        pose = ag.ops.two_bone_ik(pose, skel, leg, target)
    assert_pose_close(lanes.unpack_tiles(out, batch), ag.ops.fk(pose, skel.parents), rtol=5e-5)


def test_two_bone_ik_tile_compiles_to_packed_float32_simd():
    skel, clips = chain_assets()
    tile = lanes.pack_tiles(ag.ops.sample(clips["a"], np.linspace(0.0, 1.0, 16), "linear"))[0]
    path, ia, ib, ic = lanes_ik.ik_path(skel.parents, *(skel.index(j) for j in LEGS[0]))
    glob, parent, solved = lanes_ik.ik_scratch(path)
    tpos, tvel = lanes_ik.lane_targets((0.0, 0.1, 0.1), 16)[0], lanes_ik.lane_targets((0.0, 0.0, 0.0), 16)[0]
    assert_packed(packed_ops(lanes_ik.two_bone_ik_tile, tile, path, ia, ib, ic, np.array([1.0, 0.0, 0.0], np.float32),
                             tpos, tvel, np.empty_like(tile), glob, parent, solved))
