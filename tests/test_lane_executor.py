"""The lane executor (``executor.run_tiles``): tiles of ``lanes.LANES`` characters, op by op.

It must give what the per-character executor gives: every shipped graph, batch 19 (one full
tile and one padded), 600 frames with per-character inputs changing under it, within 1e-5
(m, rad, and signal values); rates (velocities) within 1e-4 of their scale (at least 1):
float32 lane maths against the float64 scalar maths, whose own outputs are float32.  Op types without a tile kernel, and tile kernels that
decline a tile (a weight other than 1, cubic sampling), run lane by lane on slots copied out
of the tile, which is bit-identical.  Padded lanes are never output; characters stay independent.
"""

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs, lanes
from animgraph.bench import LEGS, chain_assets, chain_graph
from animgraph.graph import Graph
from animgraph.runtime import compile as compile_graph

B = 19  # one full tile and one with 13 padded lanes
FIELDS = ("pos", "rot", "scl", "vel", "ang", "svl")
RATES = ("vel", "ang", "svl")


def random_inputs(plan, rng):
    """Per-character values for every scalar, bool and vec3 input of ``plan``, within the input's bounds."""
    out = {}
    for nid, (_, kind) in plan.inputs.items():
        node = plan.nodes[nid]
        if kind in ("scalar", "vec3"):
            low, high = node.bounds()
            if max(low, -1.0) <= min(high, 1.0):  # near 0 where the range allows (a speed from 1.65 m/s does not)
                low, high = max(low, -1.0), min(high, 1.0)
            out[nid] = rng.uniform(low, high, size=(plan.batch,) if kind == "scalar" else (plan.batch, 3))
        elif kind == "bool":
            out[nid] = rng.integers(0, 2, size=plan.batch).astype(float)
    return out


VALUE_SIZE = {"scalar": 1, "vec3": 3, "quat": 4, "int": 1, "bool": 1, "trajectory": 12, "motion": 0}


def rate_error(a, b):
    """Largest difference of two rate arrays, relative to their scale (at least 1)."""
    return float(np.abs(a - b).max()) / max(1.0, float(np.abs(a).max())) if a.size else 0.0


def compare(plan, want, got):
    """Largest differences of two step outputs: (values in m and rad, rates relative to their scale)."""
    values = rates = 0.0
    for key, a in want.items():
        b = got[key]
        if isinstance(a, ag.Pose):
            for f in FIELDS:
                assert getattr(b, f).shape == getattr(a, f).shape, (key, f)  # no broadcast hides a character
                if f in RATES:
                    rates = max(rates, rate_error(getattr(a, f), getattr(b, f)))
                else:
                    values = max(values, float(np.abs(getattr(a, f) - getattr(b, f)).max()))
        else:  # a signal block: its value, then its rate (a root motion is all rate)
            n = VALUE_SIZE[plan.outputs[key][0]]
            values = max(values, float(np.abs(a[..., :n] - b[..., :n]).max()) if n else 0.0)
            rates = max(rates, rate_error(a[..., n:], b[..., n:]))
    return values, rates


def run_both(plan, frames, seed, every=50):
    """Step a per-character and a lane instance of ``plan`` alike; the largest differences seen."""
    chars, tiles = plan.instance(lanes=False), plan.instance(lanes=True)
    assert tiles.lanes and not chars.lanes
    rng = np.random.default_rng(seed)
    worst = (0.0, 0.0)
    for f in range(frames):
        inputs = random_inputs(plan, rng) if f % every == 0 else None
        dt = float(rng.choice([1 / 60, 1 / 30, 0.004]))
        want, got = chars.step(dt, inputs), tiles.step(dt, inputs)
        worst = tuple(max(w, d) for w, d in zip(worst, compare(plan, want, got)))
    return worst


@pytest.mark.parametrize("name", graphs.names())
def test_shipped_graph_on_lanes_equals_per_character(name):
    values, rates = run_both(compile_graph(graphs.path(name), batch=B), 600, seed=len(name))
    assert values <= 1e-5 and rates <= 1e-4, (values, rates)


def test_chain_on_lanes_equals_per_character():
    # Every op of the ozz chain has a tile kernel: float32 lane maths against the float64 kernels.
    skel, clips = chain_assets()
    values, rates = run_both(compile_graph(chain_graph(), batch=B, assets=clips), 200, seed=1)
    assert values <= 1e-5 and rates <= 1e-4, (values, rates)


def test_in_place_ik_equals_ik_into_its_own_slot():
    # The chain's IK ops run in place (Node.IN_PLACE); a debug plan gives each its own slot.  Bit for bit, on
    # tiles (weight 1, and a mixed tile run lane by lane) and per character.
    skel, clips = chain_assets()
    w = np.ones(40)
    w[20] = 0.5
    for lanes in (True, False):
        plain = compile_graph(weighted_chain(), batch=40, assets=clips).instance(lanes=lanes)
        debug = compile_graph(weighted_chain(), batch=40, assets=clips, reuse_slots=False).instance(lanes=lanes)
        ik = plain.plan.order.index("left_ik")
        assert plain.plan.io[plain.plan.ops[ik, 1]] == plain.plan.io[plain.plan.ops[ik, 2]], "in place"
        for _ in range(5):
            a, b = plain.step(1 / 60, {"w": w})["out"], debug.step(1 / 60, {"w": w})["out"]
            for u, v in zip(a.as_tuple(), b.as_tuple()):
                np.testing.assert_array_equal(u, v)


def weighted_chain():
    """The chain with the left leg's IK weight an input (1 on some tiles, mixed on others)."""
    d = chain_graph().to_dict()
    d["nodes"].append({"id": "w", "type": "input", "signal": "scalar", "default": 1.0, "min": 0.0, "max": 1.0})
    d["links"].append(["w.value", "left_ik.weight"])
    return Graph.from_dict(d)


@pytest.mark.parametrize("mixed", [20, 36])
def test_tile_kernel_declines_a_mixed_tile(mixed):
    # A thread's one tile serves several tiles in turn (``tilewalk``): a tile run lane by lane after or before
    # tiles on tile kernels leaves nothing behind for them, and finds nothing of theirs.
    skel, clips = chain_assets()
    plan = compile_graph(weighted_chain(), batch=40, assets=clips)
    chars, tiles = plan.instance(lanes=False), plan.instance(lanes=True)
    w = np.ones(40)
    w[mixed] = 0.5  # the second or third tile runs lane by lane, the others on tiles
    for _ in range(30):
        want, got = chars.step(1 / 60, {"w": w}), tiles.step(1 / 60, {"w": w})
    values, rates = compare(plan, want, got)
    assert values <= 1e-5 and rates <= 1e-4
    assert not np.allclose(got["out"].pos[mixed], got["out"].pos[0], atol=1e-3)  # the half weight took effect


def test_slot_copies_lay_out_characters_as_pack_tiles():
    # tilewalk's copies between a tile and the characters' slots against lanes.pack_tiles (numpy), both ways.
    from animgraph import tilewalk

    rng = np.random.default_rng(3)
    rows, slots, joints, slot, c0 = 3 * lanes.LANES, 3, 11, 1, lanes.LANES
    vecs = rng.normal(size=(rows, 5, slots, joints, 3)).astype(np.float32)
    rots = rng.normal(size=(rows, slots, joints, 4)).astype(np.float32)
    tile = np.zeros(slots * joints * lanes.JOINT, np.float32)
    tilewalk.slot_in(tile, slot, c0, vecs, rots)
    v = vecs[c0:c0 + lanes.LANES, :, slot]
    want = lanes.pack_tiles(ag.Pose(v[:, 0], rots[c0:c0 + lanes.LANES, slot], v[:, 1], v[:, 2], v[:, 3], v[:, 4]))
    size = joints * lanes.JOINT
    np.testing.assert_array_equal(tile[slot * size:(slot + 1) * size], want[0])
    assert not tile[:slot * size].any() and not tile[(slot + 1) * size:].any()
    back_v, back_r = np.zeros_like(vecs), np.zeros_like(rots)
    tilewalk.slot_out(tile, slot, c0, back_v, back_r)
    np.testing.assert_array_equal(back_v[c0:c0 + lanes.LANES, :, slot], v)
    np.testing.assert_array_equal(back_r[c0:c0 + lanes.LANES, slot], rots[c0:c0 + lanes.LANES, slot])
    back_v[c0:c0 + lanes.LANES, :, slot], back_r[c0:c0 + lanes.LANES, slot] = 0.0, 0.0
    assert not back_v.any() and not back_r.any()  # nothing else written
    # The outputs' own arrays (out_vecs[k, field], out_rots[k]: characters, joints, 3|4), from the tile and from
    # the characters' slots alike.
    for k in (0, 1):
        out_v, out_r = np.zeros((2, 5, rows, joints, 3), np.float32), np.zeros((2, rows, joints, 4), np.float32)
        if k == 0:
            tilewalk.slot_to_output(tile, slot, k, c0, out_v, out_r)
        else:
            tilewalk.chars_to_output(slot, k, c0, vecs, rots, out_v, out_r)
        np.testing.assert_array_equal(out_v[k, :, c0:c0 + lanes.LANES], v.transpose(1, 0, 2, 3))
        np.testing.assert_array_equal(out_r[k, c0:c0 + lanes.LANES], rots[c0:c0 + lanes.LANES, slot])
        out_v[k, :, c0:c0 + lanes.LANES], out_r[k, c0:c0 + lanes.LANES] = 0.0, 0.0
        assert not out_v.any() and not out_r.any()


def test_padded_lanes_are_never_output_and_characters_are_independent():
    skel, clips = chain_assets()
    plan = compile_graph(weighted_chain(), batch=17, assets=clips)
    alone, ref = plan.instance(lanes=True), plan.instance(lanes=True)
    w = np.ones(17)
    w[16] = 0.0  # the last character, alone in its tile with 15 padded lanes
    for _ in range(3):
        got, same = alone.step(1 / 60, {"w": w})["out"], ref.step(1 / 60)["out"]
    assert got.pos.shape == (17, len(skel), 3)
    np.testing.assert_array_equal(got.pos[:16], same.pos[:16])
    assert not np.allclose(got.pos[16], same.pos[16], atol=1e-4)
    assert np.all(np.isfinite(got.pos))
    # The padded lanes took the last character's inputs, so its tile agrees on the IK weight.
    n_sig = len(plan.sig_init)
    np.testing.assert_array_equal(alone.chars[17:, :n_sig], np.broadcast_to(alone.chars[16, :n_sig], (15, n_sig)))


def test_state_reset_and_teleport_on_lanes():
    plan = compile_graph(graphs.path("locomotion"), batch=B)
    inst, ref = plan.instance(lanes=True), plan.instance(lanes=False)
    for i in (inst, ref):
        for _ in range(20):
            i.step(1 / 60)
    saved, shown = inst.save_state(), inst.outputs["out"].copy()
    first = [inst.step(1 / 60)["out"].copy() for _ in range(10)][-1]
    inst.load_state(saved)
    np.testing.assert_array_equal(inst.outputs["out"].pos, shown.pos)  # the outputs show the loaded frame
    np.testing.assert_array_equal(inst.outputs["out"].vel, shown.vel)
    again = [inst.step(1 / 60)["out"].copy() for _ in range(10)][-1]
    np.testing.assert_array_equal(first.pos, again.pos)
    for _ in range(10):
        ref.step(1 / 60)
    for i in (inst, ref):
        i.reset(0.5, characters=[3, 18])
        i.teleport((1.0, 0.0, 2.0), characters=[18])
    for _ in range(5):
        a, b = ref.step(1 / 60)["out"], inst.step(1 / 60)["out"]
    assert compare(plan, {"out": a}, {"out": b})[0] <= 1e-5


def test_debug_plan_ports_on_lanes():
    skel, clips = chain_assets()
    plan = compile_graph(chain_graph(), batch=B, assets=clips, reuse_slots=False)
    chars, tiles = plan.instance(lanes=False), plan.instance(lanes=True)
    for _ in range(3):
        chars.step(1 / 60)
        tiles.step(1 / 60)
    for node in ("a", "mix", "left_ik", "fk"):
        want, got = chars.port(node, "pose"), tiles.port(node, "pose")
        np.testing.assert_allclose(got.pos, want.pos, atol=1e-5)


def test_lanes_follow_batch_and_environment(monkeypatch):
    skel, clips = chain_assets()
    assert not compile_graph(chain_graph(), batch=lanes.LANES - 1, assets=clips).instance().lanes
    plan = compile_graph(chain_graph(), batch=lanes.LANES, assets=clips)
    assert plan.instance().lanes
    assert not plan.instance(parallel=False).lanes
    monkeypatch.setenv("ANIMGRAPH_LANES", "0")
    assert not plan.instance().lanes


def test_every_leg_of_the_chain_has_a_tile_kernel():
    # The chain's op types run on tiles (none falls back lane by lane): what the benchmark measures.
    from animgraph.node import REGISTRY

    types = {n["type"] for n in chain_graph().to_dict()["nodes"]} - {"constant"}
    assert all(REGISTRY[t].TILE_KERNEL is not None for t in types), types
    assert LEGS


def test_sample_tile_compiles_to_packed_float32_simd():
    # The executor's linear sample reads the graph's clip database (not a lane key table): still packed.
    from test_lanes import assert_packed, packed_ops

    from animgraph.lanes_ops import sample_clip_cubic_tile, sample_clip_tile
    from animgraph.nodes.sample import key_table

    _, walk = ag.data.load("walk")
    ktab = key_table(walk)[0]
    out = np.empty(len(walk.skeleton) * lanes.JOINT, np.float32)
    for kernel in (sample_clip_tile, sample_clip_cubic_tile):
        assert_packed(packed_ops(kernel, np.ascontiguousarray(walk.pos, np.float32), ktab, True, 0, walk.frames,
                                 walk.dt, True, np.linspace(0.0, 1.0, lanes.LANES), np.ones(lanes.LANES), out))


@pytest.mark.parametrize("mode", ("linear", "cubic"))
@pytest.mark.parametrize("loop", (True, False))
@pytest.mark.parametrize("scaled", (False, True))
def test_sample_tile_at_any_time(mode, loop, scaled):
    # Times on keys, between them, at and past both ends, played forwards and backwards; scales or not.
    skel, walk = ag.data.load("walk")
    scl = np.exp(np.random.default_rng(2).normal(scale=0.1, size=walk.pos.shape)) if scaled else None
    clip = ag.Clip(skel, walk.pos, walk.rot, scl=scl, dt=walk.dt)
    g = Graph.from_dict({"format": "animgraph.graph", "version": 1, "nodes": [
        {"id": "t", "type": "input", "signal": "scalar", "min": -100.0, "max": 100.0},
        {"id": "s", "type": "sample", "clip": "c", "mode": mode, "loop": loop},
        {"id": "out", "type": "output"}], "links": [["t.value", "s.time"], ["s.pose", "out.pose"]]})
    plan = compile_graph(g, batch=B, assets={"c": clip})
    end = (walk.frames - 1) * walk.dt
    times = np.array([0.0, walk.dt, 3 * walk.dt, 0.3, end, end - walk.dt, end + walk.dt, -walk.dt, -0.5, 1.0, 2.0,
                      end + 1.0, 0.123, 0.5 * walk.dt, 7.77, 0.0, walk.dt * 10, end * 0.5, 0.01])
    rates = np.where(np.arange(B) % 3 == 0, -1.0, 1.3)
    chars, tiles = plan.instance(lanes=False), plan.instance(lanes=True)
    want, got = chars.step(0.0, {"t": (times, rates)}), tiles.step(0.0, {"t": (times, rates)})
    values, rate_err = compare(plan, want, got)
    assert values <= 1e-5 and rate_err <= 1e-4, (values, rate_err)


def test_hostile_inputs_on_lanes():
    # Targets and times at the input bounds (1e9), rates of 1e9, a zero-length target, dt 0 and 1000 s:
    # every lane stays finite and matches the per-character executor.
    skel, clips = chain_assets()
    d = chain_graph().to_dict()
    d["nodes"] = [dict(n, mode="cubic") if n["id"] == "a" else n for n in d["nodes"] if n["id"] != "left_target"]
    d["nodes"] += [{"id": "left_target", "type": "input", "signal": "vec3"},
                   {"id": "t", "type": "input", "signal": "scalar", "min": -1e9, "max": 1e9},
                   {"id": "w", "type": "input", "signal": "scalar", "default": 0.5, "min": 0.0, "max": 1.0}]
    d["links"] += [["t.value", "a.time"], ["w.value", "mix.alpha"]]
    plan = compile_graph(Graph.from_dict(d), batch=17, assets=clips)
    chars, tiles = plan.instance(lanes=False), plan.instance(lanes=True)
    cases = [((1e9, 1e9, -1e9), (1e9, 0.0, 0.0), (1e9, 1e9), 1.0), ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (-1e9, 1.0),
                                                                      (0.0, 1e9)),
             ((1e-30, 0.0, 0.0), (0.0, -1e9, 0.0), (3.0, -1e9), (1.0, -1e9))]
    for target, target_vel, t, w in cases:
        inputs = {"left_target": (target, target_vel), "t": t, "w": w}
        for dt in (0.0, 1000.0, 1 / 60):
            want, got = chars.step(dt, inputs), tiles.step(dt, inputs)
            assert all(np.all(np.isfinite(getattr(got["out"], f))) for f in FIELDS)
            assert compare(plan, want, got)[0] <= 1e-5
