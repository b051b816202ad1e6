"""``animgraph bench``: how fast graphs run, velocities included.

1. ``chain65``: the chain used to compare with ozz-animation's benchmark: a synthetic
   65-joint humanoid, two 100-frame 30 fps clips of random keys, two samples (forward
   playback, linear like ozz, stepped at 60 Hz), a 0.3/0.7 blend, two-bone IK on both legs
   and FK to model space, for 1 and 1000 characters on one thread
   (``numba.set_num_threads(1)``, as ozz's figure is) and for 1000 on every thread;
2. every shipped graph on the bundled skeleton, batch 1 and 64;
3. the compiled executor against Python dispatch of the same chain (the ``ag.ops``
   functions called from a Python loop per frame), and the largest difference of results;
4. start-up: plan + compile in a fresh process with an empty cache (cold), the same with
   the cache filled (warm), and the Python overhead of one ``step()`` call;
5. motion-matching search (``animgraph.search``): brute, boxed and scan on a synthetic
   gait-like database (``synthetic_database``) and on the bundled one, one query per
   call, one thread, with boxed's pruning statistics (``search.boxed_counts``);
6. ``lanes/fk65/1000``: FK alone over 1000 chain65 characters, one thread, in lane tiles
   (``animgraph.lanes``) against today's per-character FK kernel, in ns per joint per character;
7. ``lanes/chain65/1000``: the whole chain on lane tiles (``animgraph.lanes_ops``, ``animgraph.lanes_ik``)
   called directly, one thread, µs per character, beside the per-character executor
   (``instance(lanes=False)``); both also without the IK;
8. ``state_machine8/1000``: an 8-state machine over the bundled clips (``machine8_graph``: each state
   two cubic samples and a blend), 1000 characters in its start state, none mid-transition, one
   thread; ``/one-state`` the same characters running only that state's sub-graph (every state has
   the same ops, so it is as costly as any); ``/mixed`` the characters spread over the 8 states by
   the ``travel`` input, timed once no transition runs.

Batches of 16 and more run on the lane executor (``executor.run_tiles``); ``chain65/1000/per-character``
is the same chain on the per-character executor, for the before/after.

Every time is the median of repeated runs.  Nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from animgraph.jit import njit

from .poseops import fk_kernel

DT = 1.0 / 60.0
CHAIN_ALPHA = 0.7  # weight of clip b: the 0.3/0.7 blend
LEGS = (("left_hip", "left_knee", "left_foot"), ("right_hip", "right_knee", "right_foot"))


# ---------------------------------------------------------------- the ozz chain


def humanoid65():
    """A synthetic 65-joint humanoid (metres, Y up, facing +Z): legs, spine, head, arms with 4-joint fingers."""
    from .pose import Skeleton

    names, parents, offsets = [], [], []

    def add(name, parent, offset):
        names.append(name)
        parents.append(names.index(parent) if parent else -1)
        offsets.append(offset)

    add("hips", None, (0.0, 0.95, 0.0))
    for side, sx in (("left", 1.0), ("right", -1.0)):
        add(f"{side}_hip", "hips", (0.09 * sx, -0.05, 0.0))
        add(f"{side}_knee", f"{side}_hip", (0.0, -0.42, 0.0))
        add(f"{side}_foot", f"{side}_knee", (0.0, -0.42, 0.0))
        add(f"{side}_toe", f"{side}_foot", (0.0, -0.06, 0.12))
        add(f"{side}_toe_end", f"{side}_toe", (0.0, 0.0, 0.05))
    for name, parent, up in (("spine", "hips", 0.1), ("spine1", "spine", 0.12), ("spine2", "spine1", 0.12),
                             ("neck", "spine2", 0.12), ("head", "neck", 0.1), ("head_end", "head", 0.15)):
        add(name, parent, (0.0, up, 0.0))
    for side, sx in (("left", 1.0), ("right", -1.0)):
        add(f"{side}_collar", "spine2", (0.05 * sx, 0.08, 0.0))
        add(f"{side}_shoulder", f"{side}_collar", (0.12 * sx, 0.0, 0.0))
        add(f"{side}_elbow", f"{side}_shoulder", (0.28 * sx, 0.0, 0.0))
        add(f"{side}_hand", f"{side}_elbow", (0.26 * sx, 0.0, 0.0))
        for k, finger in enumerate(("thumb", "index", "middle", "ring", "pinky")):
            parent = f"{side}_hand"
            for seg in range(4):
                name = f"{side}_{finger}{seg}"
                add(name, parent, (0.08 * sx, 0.0, 0.04 - 0.02 * k) if seg == 0 else (0.03 * sx, 0.0, 0.0))
                parent = name
    assert len(names) == 65
    return Skeleton(names, np.array(parents, np.int32), np.array(offsets, np.float32))


def random_clip(skel, seed, frames=100, fps=30.0):
    """A clip of random keys: every joint turned up to 0.4 rad about a random axis each frame, the root jittered."""
    from .maths import from_scaled_angle_axis
    from .pose import Clip

    rng = np.random.default_rng(seed)
    joints = len(skel)
    axes = rng.normal(size=(frames, joints, 3))
    axes *= rng.uniform(0.0, 0.4, size=(frames, joints, 1)) / np.linalg.norm(axes, axis=-1, keepdims=True)
    rot = np.array([[from_scaled_angle_axis(tuple(a)) for a in row] for row in axes])
    pos = np.broadcast_to(skel.offsets, (frames, joints, 3)).copy()
    pos[:, 0] += rng.normal(scale=0.02, size=(frames, 3))
    return Clip(skel, pos, rot, dt=1.0 / fps)


def chain_graph():
    """The chain as a Graph: sample a and b, blend 0.3/0.7, two-bone IK on both legs, FK, output."""
    from .graph import Graph

    nodes = [
        {"id": "a", "type": "sample", "clip": "a", "mode": "linear"},
        {"id": "b", "type": "sample", "clip": "b", "mode": "linear"},
        {"id": "mix", "type": "blend", "alpha": CHAIN_ALPHA},
    ]
    links = [["a.pose", "mix.a"], ["b.pose", "mix.b"]]
    last = "mix"
    for (root, mid, end), sx in zip(LEGS, (1.0, -1.0)):
        side = root.split("_")[0]
        nodes.append({"id": f"{side}_target", "type": "constant", "signal": "vec3", "value": [0.09 * sx, 0.15, 0.1]})
        nodes.append({"id": f"{side}_ik", "type": "two_bone_ik", "root": root, "mid": mid, "end": end})
        links += [[f"{last}.pose", f"{side}_ik.pose"], [f"{side}_target.value", f"{side}_ik.target"]]
        last = f"{side}_ik"
    nodes += [{"id": "fk", "type": "fk"}, {"id": "out", "type": "output"}]
    links += [[f"{last}.pose", "fk.pose"], ["fk.pose", "out.pose"]]
    return Graph.from_dict({"format": "animgraph.graph", "version": 1,
                            "description": "ozz benchmark chain", "nodes": nodes, "links": links})


def chain_assets():
    """(skeleton, {'a': clip, 'b': clip}) for ``chain_graph``."""
    skel = humanoid65()
    return skel, {"a": random_clip(skel, 1), "b": random_clip(skel, 2)}


def chain_python(skel, clips, frames):
    """The chain by Python dispatch of the ``ag.ops`` functions, one character: (seconds per frame, last pose)."""
    from . import ops

    parents = skel.parents
    targets = [(0.09, 0.15, 0.1), (-0.09, 0.15, 0.1)]
    times = []
    out = None
    for f in range(frames):
        start = time.perf_counter()
        t = f * DT
        a = ops.sample(clips["a"], t, mode="linear", loop=True)
        b = ops.sample(clips["b"], t, mode="linear", loop=True)
        pose = ops.blend(a, b, CHAIN_ALPHA)
        for joints, target in zip(LEGS, targets):
            pose = ops.two_bone_ik(pose, skel, joints, target)
        out = ops.fk(pose, parents)
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


# ---------------------------------------------------------------- timing


def time_steps(inst, steps, repeats, inputs=None):
    """Median seconds per ``inst.step`` over ``repeats`` runs of ``steps`` steps (after one warm-up step)."""
    inst.step(DT, inputs)
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            inst.step(DT)
        runs.append((time.perf_counter() - start) / steps)
    return statistics.median(runs)


def _result(name, seconds, batch, **extra):
    return {"name": name, "ns_per_character": seconds * 1e9 / batch, "us_per_step": seconds * 1e6,
            "batch": batch, **extra}


def machine():
    """Cores, CPU model, Python, numba version and threading layer of this machine."""
    import numba

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel function has run yet
        layer = f"not initialised (configured: {numba.config.THREADING_LAYER})"
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "threading_layer": layer,
    }


@njit(cache=True)
def fk_characters(local, parents, out):
    """Today's FK kernel (float64 maths, one character at a time) over kernel tuples of (B, J, 3|4) arrays."""
    for n in range(local[0].shape[0]):
        fk_kernel((local[0][n], local[1][n], local[2][n], local[3][n], local[4][n], local[5][n]), parents,
                  (out[0][n], out[1][n], out[2][n], out[3][n], out[4][n], out[5][n]))


def median_seconds(call, calls, repeats):
    """Median seconds per ``call()`` over ``repeats`` runs of ``calls`` calls (after one warm-up call)."""
    call()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        runs.append((time.perf_counter() - start) / calls)
    return statistics.median(runs)


# ---------------------------------------------------------------- suites


def bench_chain(quick):
    """(1) and (3): the ozz chain on one thread and all threads, and Python dispatch of the same chain."""
    import numba

    from .runtime import compile as compile_graph

    skel, clips = chain_assets()
    graph = chain_graph()
    all_threads = numba.config.NUMBA_NUM_THREADS
    results = []
    plans = {}
    reps = 3 if quick else 7
    # The all-threads entry is named so on any machine (one CPU included): names never collide.
    for batch, threads, steps, lanes, every in ((1, 1, 200 if quick else 2000, None, False),
                                                (1000, 1, 2 if quick else 10, None, False),
                                                (1000, all_threads, 2 if quick else 10, None, True),
                                                (1000, 1, 2 if quick else 10, False, False)):
        numba.set_num_threads(threads)
        if batch not in plans:
            plans[batch] = compile_graph(graph, batch=batch, assets=clips)
        plan = plans[batch]
        inst = plan.instance(lanes=lanes)
        seconds = time_steps(inst, steps, reps)
        name = f"chain65/{batch}" + ("/all-threads" if every else "") + ("/per-character" if lanes is False else "")
        results.append(_result(name, seconds, batch, threads=threads, joints=len(skel), ops=len(plan.order),
                               velocities=True, lanes=inst.lanes))
    numba.set_num_threads(all_threads)

    # (3) Python dispatch of the same chain, one character, and the executor's agreement with it.
    frames = 5 if quick else 60
    py_seconds, py_out = chain_python(skel, clips, frames)
    inst = plans[1].instance()
    for _ in range(frames):
        out = inst.step(DT)["out"]
    diff = max(float(np.abs(getattr(out, f) - getattr(py_out, f)).max()) for f in ("pos", "rot", "vel", "ang"))
    exe = next(r for r in results if r["name"] == "chain65/1")
    results.append(_result("dispatch/chain65/python", py_seconds, 1, joints=len(skel),
                           executor_speedup=py_seconds / (exe["us_per_step"] * 1e-6), max_abs_diff=diff))
    return results


def bench_chain_ops(quick):
    """Where the chain's time goes: the chain cut after each op (100 characters, one thread), differences."""
    import numba

    from .graph import Graph
    from .runtime import compile as compile_graph

    skel, clips = chain_assets()
    full = chain_graph().to_dict()
    cuts = [("output (of a constant pose)", None), ("a (sample)", ["a"]), ("b + mix (sample, blend)", ["a", "b", "mix"]),
            ("left_ik (two_bone_ik)", ["a", "b", "mix", "left_target", "left_ik"]),
            ("right_ik (two_bone_ik)", ["a", "b", "mix", "left_target", "left_ik", "right_target", "right_ik"]),
            ("fk", ["a", "b", "mix", "left_target", "left_ik", "right_target", "right_ik", "fk"])]
    batch, steps, reps = 100, 20, 5
    numba.set_num_threads(1)
    previous, results = 0.0, []
    try:
        for label, keep in cuts:
            if keep is None:
                nodes = [{"id": "rest", "type": "constant", "signal": "pose"}]
                links = [["rest.pose", "out.pose"]]
            else:
                nodes = [n for n in full["nodes"] if n["id"] in keep]
                links = [x for x in full["links"] if x[0].split(".")[0] in keep and x[1].split(".")[0] in keep]
                links.append([f"{keep[-1]}.pose", "out.pose"])
            nodes.append({"id": "out", "type": "output"})
            g = Graph.from_dict({"format": "animgraph.graph", "version": 1, "nodes": nodes, "links": links})
            seconds = time_steps(compile_graph(g, batch=batch, assets=clips, skeleton=skel).instance(), steps, reps)
            results.append(_result(f"chain65/op/{label.split()[0]}", seconds - previous, batch, threads=1,
                                   note=f"{label}: chain up to it minus chain before it"))
            previous = seconds
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return results


def bench_graphs(quick):
    """(2) every shipped graph on the bundled skeleton, batch 1 and 64."""
    from . import graphs
    from .runtime import compile as compile_graph

    results = []
    for name in graphs.names():
        for batch in (1, 64):
            plan = compile_graph(graphs.path(name), batch=batch)
            steps = (20 if quick else 500) if batch == 1 else (3 if quick else 50)
            seconds = time_steps(plan.instance(), steps, 3 if quick else 7)
            results.append(_result(f"graph/{name}/{batch}", seconds, batch, joints=plan.joints, ops=len(plan.order)))
    return results


def bench_step_overhead(quick):
    """Python overhead of one ``step()``: a graph of one input and one scalar output, batch 1."""
    from .graph import Graph
    from .runtime import compile as compile_graph

    g = Graph.from_dict({
        "format": "animgraph.graph", "version": 1,
        "nodes": [{"id": "x", "type": "input"}, {"id": "out", "type": "output", "signal": "scalar"}],
        "links": [["x.value", "out.value"]],
    })
    inst = compile_graph(g).instance()
    steps = 2000 if quick else 20000
    seconds = time_steps(inst, steps, 3 if quick else 7)
    with_input = _time_with_input(inst, steps, 3 if quick else 7)
    return [
        _result("step/overhead", seconds, 1, note="trivial graph (input -> output), batch 1"),
        _result("step/overhead+input", with_input, 1, note="the same, setting one scalar input per call"),
    ]


def _time_with_input(inst, steps, repeats):
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(steps):
            inst.step(DT, {"x": 0.5})
        runs.append((time.perf_counter() - start) / steps)
    return statistics.median(runs)


_STARTUP = r"""
import json, sys, time
t0 = time.perf_counter()
import animgraph as ag
from animgraph import bench
t1 = time.perf_counter()
skel, clips = bench.chain_assets()
graph = bench.chain_graph()
t2 = time.perf_counter()
plan = ag.compile(graph, batch=1, assets=clips)
t3 = time.perf_counter()
plan.instance().step(1 / 60)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "plan_s": t3 - t2, "first_step_s": t4 - t3, "total_s": t4 - t0}))
"""


def _startup_run(env):
    # -P: the installed animgraph, never a source checkout in the working directory (see animgraph.warm).
    proc = subprocess.run([sys.executable, "-P", "-c", _STARTUP], env=env, capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"start-up subprocess failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_startup(quick):
    """(4) cold plan+compile with an empty cache, then warm start from it, each in a fresh process."""
    results = []
    if quick:
        # A cold compile takes minutes: --quick only measures a warm start from this process's cache.
        times = _startup_run(dict(os.environ))
        results.append({"name": "startup/warm", "ns_per_character": None, **times,
                        "note": "fresh process, this environment's cache (--quick skips the cold compile)"})
        return results
    with tempfile.TemporaryDirectory(prefix="animgraph-bench-cache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env["ANIMGRAPH_CACHE"] = cache
        for name in ("startup/cold", "startup/warm"):
            times = _startup_run(env)
            note = "fresh process, empty cache" if name.endswith("cold") else "fresh process, cache from the cold run"
            results.append({"name": name, "ns_per_character": None, **times, "note": note})
    return results


# ---------------------------------------------------------------- motion-matching search

BOX_DIAGONAL = 6.5  # mean small-box diagonal of real gait data, normalised units
QUERY_NOISE = 0.1  # std of the noise added per feature to a database frame to make a query, normalised units


def synthetic_database(frames, dims, seed, latents=6):
    """(features float32 (F, D), starts, stops int64): gait-like curves in clips of 200-600 frames at 60 fps.

    Each clip moves ``latents`` oscillators (0.5-3 Hz, one speed factor 0.8-1.25 and
    random phases per clip); every column is a fixed random mix of their sines and
    cosines plus 2% noise, so columns are correlated as real features are.  Columns are
    normalised (zero mean, unit std), then all scaled by one factor so that the mean
    small-box diagonal, over boxes of ``search.SMALL`` frames, of
    ``sqrt(sum_d (max_d - min_d)**2)`` is ``BOX_DIAGONAL``.  The last 10 frames of each
    clip are not searchable (as a trajectory feature needs future frames).
    """
    from .search import SMALL, build_boxes

    rng = np.random.default_rng(seed)
    mix_sin, mix_cos = rng.normal(size=(latents, dims)), rng.normal(size=(latents, dims))
    hertz = rng.uniform(0.5, 3.0, latents)
    x = np.empty((frames, dims))
    starts, stops, at = [], [], 0
    while at < frames:
        length = min(int(rng.integers(200, 601)), frames - at)
        phase = 2 * np.pi * (hertz * rng.uniform(0.8, 1.25))[None, :] * (np.arange(length)[:, None] * DT)
        phase += rng.uniform(0, 2 * np.pi, latents)
        x[at:at + length] = np.sin(phase) @ mix_sin + np.cos(phase) @ mix_cos
        starts.append(at)
        stops.append(max(at, at + length - 10))
        at += length
    x += 0.02 * rng.normal(size=x.shape) * x.std(0)
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    x *= np.float32(BOX_DIAGONAL / box_diagonal(x, SMALL, build_boxes))
    return x, np.array(starts, np.int64), np.array(stops, np.int64)


def box_diagonal(features, size, build_boxes):
    """Mean over boxes of ``size`` frames of the box diagonal ``sqrt(sum_d (max - min)**2)`` (normalised units)."""
    box_min, box_max = build_boxes(features, size)
    return float(np.sqrt(((box_max.astype(np.float64) - box_min) ** 2).sum(axis=1)).mean())


def bench_search_database(label, features, starts, stops, queries=300, seed=0, kinds=("brute", "boxed", "scan")):
    """``mm/<kind>/<label>`` entries for any database: median us per query over ``queries`` queries, one thread.

    A query is a searchable frame plus ``QUERY_NOISE`` normal noise per feature; the search
    starts from that frame as the incumbent (margin 0, no transition cost), as a
    motion-matching node searching from the frame it plays does.  Times are taken around
    each call from Python; ``dispatch_us`` is the median of the same call over no ranges
    (numba's argument unboxing), which a compiled caller does not pay.
    """
    from . import search

    rng = np.random.default_rng(seed)
    searchable = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)])
    sources = rng.choice(searchable, queries)
    query_rows = (features[sources] + rng.normal(0, QUERY_NOISE, (queries, features.shape[1]))).astype(np.float32)
    small, large = search.build_boxes(features, search.SMALL), search.build_boxes(features, search.LARGE)
    features_t = np.ascontiguousarray(features.T)
    calls = {"brute": lambda s, e, *a: search.brute(features, s, e, *a),
             "boxed": lambda s, e, *a: search.boxed(features, s, e, *a, *small, *large),
             "scan": lambda s, e, *a: search.scan(features_t, s, e, *a)}
    none = np.zeros(0, np.int64)
    results, times, answers = [], {}, {}
    for kind in kinds:
        call = calls[kind]
        per_query, found = [], []
        for row, source in zip(query_rows, sources):
            best_cost, best_index = search.incumbent(features, row, source, 0.0)
            call(starts, stops, row, best_cost, best_index, 0.0)  # first call compiles or loads
            start = time.perf_counter()
            found.append(call(starts, stops, row, best_cost, best_index, 0.0))
            per_query.append(time.perf_counter() - start)
        dispatch = []
        for _ in range(50):
            start = time.perf_counter()
            call(none, none, query_rows[0], np.float32(np.inf), -1, 0.0)
            dispatch.append(time.perf_counter() - start)
        times[kind], answers[kind] = statistics.median(per_query), found
        us = times[kind] * 1e6
        results.append({**_result(f"mm/{kind}/{label}", times[kind], 1, threads=1), "us_per_query": us,
                        "dispatch_us": statistics.median(dispatch) * 1e6, "frames": len(features),
                        "dims": features.shape[1], "queries": queries,
                        "small_box_diagonal": box_diagonal(features, search.SMALL, search.build_boxes),
                        "note": f"{len(features):,} frames x {features.shape[1]} features, median over {queries} queries"})
    if "boxed" in kinds:
        counts = np.zeros(len(search.COUNTS), np.int64)
        for row, source in zip(query_rows, sources):
            counts += search.boxed_counts(features, starts, stops, row, *search.incumbent(features, row, source, 0.0),
                                          0.0, *small, *large)
        c = dict(zip(search.COUNTS, counts.tolist()))
        stats = {"large_skipped": c["large_skipped"] / max(c["large_tested"], 1),
                 "small_skipped": c["small_skipped"] / max(c["small_tested"], 1),
                 "large_tested_per_query": c["large_tested"] / queries,
                 "small_tested_per_query": c["small_tested"] / queries,
                 "frames_per_query": c["frames"] / queries, "frames_searched_fraction": c["frames"] / queries / len(searchable),
                 "dims_per_frame": c["frame_dims"] / max(c["frames"], 1)}
        for r in results:
            if r["name"].startswith("mm/boxed/"):
                r.update(stats)
                r["note"] += (f"; skips {stats['large_skipped']:.0%} of large, {stats['small_skipped']:.0%} of small boxes"
                              f" tested, sums {stats['frames_per_query']:.0f} frames x {stats['dims_per_frame']:.1f} dims")
    if "brute" in answers:
        for r in results:
            kind = r["name"].split("/")[1]
            r["agrees_with_brute"] = answers[kind] == answers["brute"]
    if "boxed" in times and "scan" in times:
        for r in results:
            if r["name"].startswith("mm/boxed/"):
                r["boxed_over_scan"] = times["boxed"] / times["scan"]
                r["note"] += f"; boxed/scan {r['boxed_over_scan']:.3f}"
    return results


def bench_search(quick):
    """(5) brute, boxed and scan at 53,500 x 27 and on the bundled database; the full run adds 200,000 frames.

    The 200,000-frame database comes from the same generator and seed as the 53,500 one (so
    the same latent mix and the same box-diagonal calibration): another seed is another
    gait, whose pruning differs by 20% either way and would blur the scaling.
    """
    import numba

    from .database import bundled

    numba.set_num_threads(1)  # the searches are serial; said for the record
    try:
        results = bench_search_database("53500", *synthetic_database(53500, 27, seed=1), queries=100 if quick else 500)
        db = bundled()
        results += bench_search_database("bundled", np.ascontiguousarray(db.features, np.float32), db.search_starts,
                                         db.search_stops, queries=100 if quick else 500)
        if not quick:
            results += bench_search_database("200000", *synthetic_database(200000, 27, seed=1), queries=200)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return results


def bench_lanes(quick):
    """(6) FK of 1000 chain65 characters on one thread: lane tiles against today's FK kernel, per joint."""
    from . import lanes, ops
    from .pose import Pose

    skel, clips = chain_assets()
    batch, joints = 1000, len(skel)
    local = ops.sample(clips["a"], np.random.default_rng(0).uniform(0.0, clips["a"].duration, batch))
    parents = skel.parents.astype(np.int64)
    tiles = lanes.pack_tiles(local)
    tiles_out = np.empty_like(tiles)
    today_out = Pose.identity(joints, (batch,))
    calls, reps = (5, 3) if quick else (50, 7)
    seconds = median_seconds(lambda: lanes.fk_tiles(tiles, parents, tiles_out), calls, reps)
    today = median_seconds(lambda: fk_characters(local.as_tuple(), parents, today_out.as_tuple()), calls, reps)
    got = lanes.unpack_tiles(tiles_out, batch)
    diff = max(float(np.abs(getattr(got, f) - getattr(today_out, f)).max()) for f in ("pos", "rot", "vel", "ang"))
    per_joint = seconds * 1e9 / (batch * joints)
    today_per_joint = today * 1e9 / (batch * joints)
    return [_result("lanes/fk65/1000", seconds, batch, threads=1, joints=joints, lanes=lanes.LANES,
                    ns_per_joint=per_joint, today_ns_per_joint=today_per_joint, max_abs_diff=diff,
                    note=f"FK only: {per_joint:.2f} ns per joint-character in tiles of {lanes.LANES} "
                         f"(pack/unpack not included), today's FK kernel {today_per_joint:.1f}; "
                         f"max |difference| {diff:.2g}")]


def bench_lanes_chain(quick):
    """(7) The chain on lane tiles (sample a, b, blend, IK both legs, FK) against today's executor, 1000, one thread.

    Both sides are also measured without the two IK nodes.
    """
    import numba

    from . import lanes, lanes_ik, lanes_ops, ops
    from .graph import Graph
    from .nodes.sample import key_table
    from .runtime import compile as compile_graph

    skel, clips = chain_assets()
    batch, joints = 1000, len(skel)
    a, b = clips["a"], clips["b"]
    tab_a, unit_a = lanes_ops.lane_key_table(a, key_table(a)[0])
    tab_b, unit_b = lanes_ops.lane_key_table(b, key_table(b)[0])
    coef = lanes_ops.slerp_coefficients(CHAIN_ALPHA)
    alpha, alpha_vel = lanes_ops.lane_weights(CHAIN_ALPHA)
    parents = skel.parents.astype(np.int64)
    legs = [lanes_ik.ik_leg(skel.parents, tuple(skel.index(j) for j in leg)) for leg in LEGS]
    target_pos = [(0.09 * sx, 0.15, 0.1) for sx in (1.0, -1.0)]  # chain_graph's constant targets
    targets = np.concatenate([lanes_ik.lane_targets(v, lanes.LANES) for p in target_pos for v in (p, (0.0, 0.0, 0.0))])
    hinge = np.array([1.0, 0.0, 0.0], np.float32)  # the two_bone_ik node's default
    times = np.zeros(lanes.tile_count(batch) * lanes.LANES)  # every character on the same clock, as the graph's
    out = np.empty((lanes.tile_count(batch), joints * lanes.JOINT), np.float32)

    def step(ik):
        times[:] += DT  # forward playback at 60 Hz
        if ik:
            lanes_ik.chain_ik_tiles(tab_a, a.frames, a.dt, unit_a, tab_b, b.frames, b.dt, unit_b, True, times, 1.0,
                                    coef, alpha, alpha_vel, parents, legs[0], legs[1], hinge, targets, out)
        else:
            lanes_ops.chain_tiles(tab_a, a.frames, a.dt, unit_a, tab_b, b.frames, b.dt, unit_b, True, times, 1.0,
                                  coef, alpha, alpha_vel, parents, out)

    steps, reps = (2, 3) if quick else (20, 7)
    full = chain_graph().to_dict()
    no_ik = {**full, "nodes": [n for n in full["nodes"] if "ik" not in n["id"] and "target" not in n["id"]],
             "links": [["a.pose", "mix.a"], ["b.pose", "mix.b"], ["mix.pose", "fk.pose"], ["fk.pose", "out.pose"]]}
    numba.set_num_threads(1)
    try:
        seconds_no_ik = median_seconds(lambda: step(False), steps, reps)
        seconds = median_seconds(lambda: step(True), steps, reps)
        today = time_steps(compile_graph(chain_graph(), batch=batch, assets=clips).instance(lanes=False), steps, reps)
        today_no_ik = time_steps(compile_graph(Graph.from_dict(no_ik), batch=batch, assets=clips).instance(lanes=False),
                                 steps, reps)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    t = times[:batch]
    pose = ops.blend(ops.sample(a, t, "linear", loop=True), ops.sample(b, t, "linear", loop=True), CHAIN_ALPHA)
    for leg, target in zip(LEGS, target_pos):
        pose = ops.two_bone_ik(pose, skel, leg, target)
    want = ops.fk(pose, skel.parents)
    got = lanes.unpack_tiles(out, batch)
    diff = max(float(np.abs(getattr(got, f) - getattr(want, f)).max()) for f in ("pos", "rot", "vel", "ang"))
    us, us_no_ik = seconds * 1e6 / batch, seconds_no_ik * 1e6 / batch
    today_us, today_no_ik_us = today * 1e6 / batch, today_no_ik * 1e6 / batch
    return [_result("lanes/chain65/1000", seconds, batch, threads=1, joints=joints, lanes=lanes.LANES, ik=True,
                    us_per_character=us, no_ik_us_per_character=us_no_ik, today_us_per_character=today_us,
                    today_no_ik_us_per_character=today_no_ik_us, max_abs_diff=diff,
                    note=f"sample a, sample b, blend, IK both legs, FK in tiles of {lanes.LANES}: {us:.2f} us per "
                         f"character (the per-character executor {today_us:.1f}); without IK {us_no_ik:.2f} "
                         f"({today_no_ik_us:.1f}); max |difference| from ag.ops {diff:.2g}")]

MACHINE8_DURATION = 0.1  # s, every transition of machine8_graph


def machine8_graph(one_state=False):
    """8 states (``m0`` .. ``m7``), each a blend of two cubic samples of the bundled clips, a ring of transitions on a
    bool ``go`` (never set here) and the ``travel`` input; ``one_state``: state ``m0``'s sub-graph straight to the
    output instead of the machine."""
    from . import data
    from .graph import Graph

    clips = data.locomotion()
    states = [f"m{k}" for k in range(8)]
    nodes, links = [], []
    for k, name in enumerate(states[:1] if one_state else states):
        a, b = clips[k % len(clips)], clips[(k + 1) % len(clips)]
        nodes += [{"id": f"{name}_a", "type": "sample", "clip": a, "mode": "cubic"},
                  {"id": f"{name}_b", "type": "sample", "clip": b, "mode": "cubic", "rate": 0.8},
                  {"id": f"{name}_mix", "type": "blend", "alpha": 0.4}]
        links += [[f"{name}_a.pose", f"{name}_mix.a"], [f"{name}_b.pose", f"{name}_mix.b"]]
    if one_state:
        links.append(["m0_mix.pose", "out.pose"])
    else:
        nodes += [{"id": "go", "type": "input", "signal": "bool"},
                  {"id": "travel", "type": "input", "signal": "int", "min": 0, "max": 7},
                  {"id": "sm", "type": "state_machine", "start": "m0", "states": [{"name": n} for n in states],
                   "transitions": [{"from": a, "to": b, "when": "go", "duration": MACHINE8_DURATION}
                                   for a, b in zip(states, states[1:] + states[:1])]}]
        links += [[f"{n}_mix.pose", f"sm.{n}"] for n in states]
        links += [["go.value", "sm.go"], ["travel.value", "sm.travel"], ["sm.pose", "out.pose"]]
    nodes.append({"id": "out", "type": "output"})
    return Graph.from_dict({"format": "animgraph.graph", "version": 1, "description": "8-state machine benchmark",
                            "assets": {c: f"animgraph:{c}" for c in clips}, "nodes": nodes, "links": links})


def machine8_settle(inst, targets):
    """Travel every character to its state in ``targets`` and step until each is there with no transition running:
    (states occupied, characters still mid-transition)."""
    inst.step(DT, {"travel": targets})
    for _ in range(int(8 * (MACHINE8_DURATION / DT + 2))):  # 7 hops at most along the ring
        state, since = inst.port("sm", "state")[..., 0], inst.port("sm", "time_in_state")[..., 0]
        if np.array_equal(state, targets) and np.all(since >= MACHINE8_DURATION):
            break
        inst.step(DT)
    state, since = inst.port("sm", "state")[..., 0], inst.port("sm", "time_in_state")[..., 0]
    return len(set(state.tolist())), int(np.sum((since < MACHINE8_DURATION) | (state != targets)))


def bench_state_machine(quick, batch=1000):
    """(8) The 8-state machine with every character in one state, its one state alone, and the characters mixed."""
    import numba

    from .runtime import compile as compile_graph

    steps, reps = (2, 3) if quick else (10, 7)
    numba.set_num_threads(1)
    results, seconds = [], {}
    try:
        for label, one_state, targets in (("", False, np.zeros(batch)), ("/one-state", True, None),
                                          ("/mixed", False, np.arange(batch) % 8)):
            plan = compile_graph(machine8_graph(one_state), batch=batch)
            inst = plan.instance()
            extra = {}
            if targets is not None:
                occupied, moving = machine8_settle(inst, targets.astype(np.int64))
                extra = {"states_occupied": occupied, "mid_transition": moving}
            name = f"state_machine8/{batch}{label}"
            seconds[label] = time_steps(inst, steps, reps)
            results.append(_result(name, seconds[label], batch, threads=1, joints=plan.joints, ops=len(plan.order),
                                   lanes=inst.lanes, **extra))
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    for r, label in zip(results, ("", "/one-state", "/mixed")):
        r["over_one_state"] = seconds[label] / seconds["/one-state"]
        if label != "/one-state":
            r["note"] = (f"{r['over_one_state']:.2f}x the one state alone; {r['states_occupied']} state(s) occupied, "
                         f"{r['mid_transition']} mid-transition")
    return results


def run_all(quick=False, progress=None):
    """Every benchmark: {'machine': ..., 'results': [...]}; ``progress(text)`` is told what runs."""
    say = progress or (lambda text: None)
    results = []
    for title, suite in (("ozz chain and Python dispatch", bench_chain), ("chain ops", bench_chain_ops),
                         ("lane tiles (FK)", bench_lanes), ("lane tiles (chain)", bench_lanes_chain),
                         ("state machine (8 states)", bench_state_machine),
                         ("shipped graphs", bench_graphs), ("step() overhead", bench_step_overhead),
                         ("motion-matching search", bench_search),
                         ("start-up (cold compile takes minutes)", bench_startup)):
        if quick and suite is bench_chain_ops:
            continue
        say(title)
        results += suite(quick)
    return {"machine": machine(), "quick": quick, "results": results}


def _fmt(v, unit=""):
    if v is None:
        return ""
    if v >= 100:
        return f"{v:,.0f}{unit}"
    return f"{v:.3g}{unit}"


def report(data):
    """The benchmark as a text table."""
    m = data["machine"]
    lines = [
        f"machine  {m['cpu']}, {m['cores']} cores; Python {m['python']}, numpy {m['numpy']}, numba {m['numba']} "
        f"({m['numba_threads']} threads, threading layer {m['threading_layer']})",
        "",
        f"{'benchmark':34} {'batch':>6} {'threads':>7} {'ns/character':>13} {'us/step':>10}  notes",
    ]
    for r in data["results"]:
        if r["name"].startswith("startup/"):
            continue
        notes = []
        if "executor_speedup" in r:
            notes.append(f"executor is {r['executor_speedup']:.0f}x faster; max |difference| {r['max_abs_diff']:.2g}")
        if "ops" in r:
            notes.append(f"{r['ops']} ops, {r['joints']} joints")
        if "note" in r:
            notes.append(r["note"])
        lines.append(f"{r['name']:34} {r['batch']:>6} {r.get('threads', ''):>7} {_fmt(r['ns_per_character']):>13} "
                     f"{_fmt(r['us_per_step']):>10}  {'; '.join(notes)}")
    for r in data["results"]:
        if r["name"].startswith("startup/"):
            lines.append(f"{r['name']:34} import {r['import_s']:.2f} s, plan {r['plan_s']:.3f} s, first step "
                         f"(executor load or compile) {r['first_step_s']:.2f} s, total {r['total_s']:.2f} s; {r['note']}")
    lines += ["", "Reference (ozz-animation, same chain, no velocities, 1000 characters, one thread): about 6,300 ns "
              "per character.  Target for step(): at most 5 us of Python overhead."]
    return "\n".join(lines)


def main(json_output=False, quick=False):
    """The ``animgraph bench`` command."""
    say = None if json_output else (lambda text: print(f"running: {text} ...", file=sys.stderr, flush=True))
    data = run_all(quick=quick, progress=say)
    if json_output:
        print(json.dumps(data))
    else:
        print(report(data))
    return 0
