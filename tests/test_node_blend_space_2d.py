"""blend_space_2d node: validity (collinear and duplicate points named), the triangulation
(Delaunay, tiling the hull), weights (hand barycentric and edge cases, sum 1, continuity along random paths, rates
against central differences, the same from any hint), the op (corners, edges, the nested three-way blend), and whole
graphs: velocities against central differences while the stick moves inside a triangle, only the live corners'
samples run, the lane executor equal to the per-character one.

Tolerances: weights 1e-12 (float64); weight rates against 5-point central differences at h = 1e-5, 1e-6 (the
weights are linear in the point inside a triangle or an edge's band); op positions against the weighted sum 1e-5
(float32 output); world velocities against central differences at h = 1 ms, 2e-3 relative; lanes 1e-5.
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph.errors import GraphError
from animgraph.nodes.blend_space_2d import BlendSpace2d, tables
from animgraph.triangulate import delaunay, hull_area, in_circle, locate, orient, space_weights
from fdcheck import world_velocity_errors

CLIPS = {"walk": "animgraph:walk", "jog": "animgraph:jog", "run": "animgraph:run",
         "walk_turn": "animgraph:walk_turn"}
# A walk / jog / run space by forward speed (y) and turn (x); the turning walk off to one side.
ENTRIES = [{"name": "walk", "at": [0.0, 1.0]}, {"name": "jog", "at": [0.0, 2.5]}, {"name": "run", "at": [0.0, 4.0]},
           {"name": "walk_turn", "at": [1.0, 1.0]}]


def node(entries=ENTRIES, **fields):
    return BlendSpace2d.model_validate({"id": "bs", "type": "blend_space_2d", "entries": entries, **fields})


def space_graph(entries=ENTRIES, clips=None, **fields):
    """One sample per entry (its clip by the entry's name, or ``clips[name]``: a clip and sample fields), an input
    ``stick`` (vec3: x and z read), the space, out."""
    nodes, links = [], [["stick.value", "bs.parameter"], ["bs.pose", "out.pose"]]
    for e in entries:
        clip, extra = (clips or {}).get(e["name"], (e["name"], {}))
        nodes.append({"id": f"s_{e['name']}", "type": "sample", "clip": clip, "root_motion": True, **extra})
        links += [[f"s_{e['name']}.pose", f"bs.{e['name']}"], [f"s_{e['name']}.motion", f"bs.{e['name']}_motion"]]
        nodes.append({"id": f"w_{e['name']}", "type": "output", "signal": "scalar"})
        links.append([f"bs.{e['name']}_weight", f"w_{e['name']}.value"])
    nodes += [{"id": "stick", "type": "input", "signal": "vec3", "default": [0.0, 0.0, 1.0]},
              {"id": "bs", "type": "blend_space_2d", "entries": entries, "sync_group": None, **fields},
              {"id": "out", "type": "output"}]
    return ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "assets": CLIPS, "nodes": nodes,
                               "links": links})


def weights(n, x, y, dx=0.0, dy=0.0, hint=0):
    """(dense weights, dense rates, where) of node ``n`` at (x, y) moving at (dx, dy), walked from ``hint``."""
    pts, tris, nbrs, hull = tables(n.params())
    idx, w, dw = np.zeros(3), np.zeros(3), np.zeros(3)
    count, where = space_weights(pts, tris, nbrs, hull, hint, x, y, dx, dy, idx, w, dw)
    out, rate = np.zeros(len(n.entries)), np.zeros(len(n.entries))
    for k in range(count):
        out[int(idx[k])], rate[int(idx[k])] = w[k], dw[k]
    return out, rate, where


# ------------------------------------------------------------------ validity


@pytest.mark.parametrize("fields, says", [
    ({"entries": [{"name": "a", "at": [0, 0]}]}, "at least 2"),
    ({"entries": [{"name": "a", "at": [0, 0]}, {"name": "b", "at": [1, 1]}]}, "entries 'a', 'b' all lie on one line"),
    ({"entries": [{"name": "a", "at": [0, 0]}, {"name": "b", "at": [1, 1]}, {"name": "c", "at": [3, 3]}]},
     "entries 'a', 'b', 'c' all lie on one line"),
    ({"entries": [{"name": "a", "at": [0, 0]}, {"name": "b", "at": [1, 0]}, {"name": "c", "at": [1, 0]}]},
     "entries 'b' and 'c' are at the same point [1, 0]"),
    ({"entries": [{"name": "a", "at": [0, 0]}, {"name": "a", "at": [1, 0]}, {"name": "c", "at": [0, 1]}]},
     "entry 'a' appears twice"),
    ({"entries": [{"name": "a", "at": [0, 0]}, {"name": "b", "at": [1, float("nan")]}, {"name": "c", "at": [0, 1]}]},
     "finite"),
    ({"entries": [{"name": "a", "at": [0, 0, 0]}, {"name": "b", "at": [1, 0]}, {"name": "c", "at": [0, 1]}]},
     "entries.0.at"),
    ({"entries": [{"name": "motion", "at": [0, 0]}, {"name": "b", "at": [1, 0]}, {"name": "c", "at": [0, 1]}]},
     "collides with a port name"),
    ({"parameter": [0.0, float("nan"), 0.0]}, "finite"),
])
def test_validity_bad_spaces_refused_naming_node_and_field(fields, says):
    data = {"id": "bs", "type": "blend_space_2d", "entries": ENTRIES} | fields
    graph = {"format": "animgraph.graph", "version": 1, "nodes": [data, {"id": "out", "type": "output"}],
             "links": [["bs.pose", "out.pose"]]}
    with pytest.raises(GraphError) as e:
        ag.Graph.from_dict(graph)
    text = str(e.value)
    assert "'bs'" in text and "\n" not in text, text
    assert says.lower() in text.lower(), text


def test_ports_bits_weights_and_sync_groups():
    n = node()
    assert [(p.name, p.signal) for p in n.inputs()][3:5] == [("walk_turn", "pose"), ("parameter", "vec3")]
    assert [p.name for p in n.outputs()][:3] == ["pose", "motion", "walk_weight"]
    assert n.early_ports() == (("parameter",), ("walk_weight", "jog_weight", "run_weight", "walk_turn_weight"))
    assert n.branch_bits()["walk_turn_motion"] == 3
    assert n.input_weights()["walk_turn"].port == "walk_turn_weight"
    assert n.sync_inputs() == {e["name"]: "bs" for e in ENTRIES}
    assert node(sync_group=None).sync_inputs() == {}


# ------------------------------------------------------------------ triangulation


def test_a_grid_gives_two_triangles_a_square_and_its_hull_keeps_collinear_points():
    grid = np.array([(x, y) for x in (-1, 0, 1) for y in (-1, 0, 1)], float)
    tris = delaunay(grid)
    assert len(tris) == 8 and all(orient(grid, *t) > 0 for t in tris)
    assert sum(orient(grid, *t) for t in tris) == pytest.approx(hull_area(grid))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-6, 6), st.integers(-6, 6)), min_size=3, max_size=14, unique=True),
       st.floats(0.1, 10.0))
def test_delaunay_tiles_the_hull_with_empty_circumcircles(points, scale):
    p = np.asarray(points, float) * scale
    assume(any(abs(orient(p, 0, 1, c)) > 1e-9 for c in range(len(p))))
    tris = delaunay(p)
    assert all(orient(p, *t) > 0 for t in tris)
    assert sum(orient(p, *t) for t in tris) == pytest.approx(hull_area(p), rel=1e-12)
    size = np.ptp(p, axis=0).max()
    for t in tris:
        for d in range(len(p)):
            if d not in t:
                assert in_circle(p, *t, d) <= 1e-9 * size ** 4


# ------------------------------------------------------------------ weights


SQUARE = [{"name": "a", "at": [0.0, 0.0]}, {"name": "b", "at": [2.0, 0.0]}, {"name": "c", "at": [0.0, 2.0]},
          {"name": "d", "at": [3.0, 3.0]}]  # triangles (a, b, c) and (b, d, c)


@pytest.mark.parametrize("x, y, want", [
    (0.5, 0.5, {0: 0.5, 1: 0.25, 2: 0.25}),  # barycentric in (a, b, c)
    (0.0, 0.0, {0: 1.0}),
    (1.0, 1.0, {1: 0.5, 2: 0.5}),  # on the shared edge
    (1.0, -1.0, {0: 0.5, 1: 0.5}),  # below edge a-b: its projection
    (-3.0, -1.0, {0: 1.0}),  # beyond corner a
    (-1.0, 1.5, {0: 0.25, 2: 0.75}),  # left of edge a-c
    (5 / 3, 5 / 3, {1: 1 / 3, 2: 1 / 3, 3: 1 / 3}),  # the centroid of (b, d, c)
    (2.0, 2.0, {1: 0.25, 2: 0.25, 3: 0.5}),
    (4.0, 4.0, {3: 1.0}),
])
def test_barycentric_and_nearest_edge_weights_by_hand(x, y, want):
    n = node(SQUARE)
    w = weights(n, x, y)[0]
    dense = np.zeros(4)
    for e, v in want.items():
        dense[e] = v
    np.testing.assert_allclose(w, dense, atol=1e-12)


def test_rates_inside_a_triangle_and_along_an_edge_by_hand():
    n = node(SQUARE)
    rate = weights(n, 0.5, 0.5, 0.4, 0.2)[1]  # (a, b, c): w_b = x / 2, w_c = y / 2
    np.testing.assert_allclose(rate, [-0.3, 0.2, 0.1, 0.0], atol=1e-12)
    rate = weights(n, 1.0, -1.0, 0.4, 5.0)[1]  # below a-b: only the slide along the edge counts
    np.testing.assert_allclose(rate, [-0.2, 0.2, 0.0, 0.0], atol=1e-12)
    rate = weights(n, -3.0, -1.0, 0.4, 0.3)[1]  # beyond a corner: still
    np.testing.assert_array_equal(rate, 0.0)


POINT = st.tuples(st.floats(-2.0, 6.0), st.floats(-2.0, 6.0))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-4, 4), st.integers(-4, 4)), min_size=3, max_size=9, unique=True),
       POINT, POINT, st.integers(0, 30))
def test_weights_sum_to_one_are_continuous_and_hint_free_along_random_paths(points, a, b, hint):
    p = np.asarray(points, float)
    assume(any(abs(orient(p, 0, 1, c)) > 1e-9 for c in range(len(p))))
    n = node([{"name": f"e{i}", "at": list(q)} for i, q in enumerate(p)])
    tris = n.triangulation()
    # the weights' Lipschitz bound: the steepest barycentric gradient (1 / the smallest height), edges' 1 / length
    heights = [abs(orient(p, *t)) / max(np.hypot(*(p[t[i]] - p[t[(i + 1) % 3]])) for i in range(3)) for t in tris]
    lipschitz = 2.0 / min(heights) + 1.0
    steps, prev, where = 300, None, 0
    for k in range(steps + 1):
        x, y = np.add(a, np.subtract(b, a) * k / steps)
        w, _, where = weights(n, x, y, hint=where)
        assert np.all(w >= 0) and w.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.count_nonzero(w) <= 3
        cold = weights(n, x, y, hint=hint % len(tris))[0]  # from any other hint: the same weights
        np.testing.assert_allclose(cold, w, atol=1e-9)
        if prev is not None:
            assert np.abs(w - prev).max() <= 3 * lipschitz * np.hypot(*np.subtract(b, a)) / steps + 1e-9
        prev = w


@settings(max_examples=60, deadline=None)
@given(POINT, st.tuples(st.floats(-3, 3), st.floats(-3, 3)))
def test_weight_rates_equal_central_differences_away_from_edge_crossings(p, v):
    n, h = node(SQUARE), 1e-5
    stencil = [weights(n, p[0] + k * h * v[0], p[1] + k * h * v[1]) for k in (-2, -1, 0, 1, 2)]
    live = [frozenset(np.flatnonzero(s[0])) for s in stencil]
    assume(len(set(live)) == 1 and len({s[2] for s in stencil}) == 1)  # no crossing inside the stencil
    rate = weights(n, *p, *v)[1]
    w = [s[0] for s in stencil]
    fd = (w[0] - 8 * w[1] + 8 * w[3] - w[4]) / (12 * h)
    np.testing.assert_allclose(rate, fd, atol=1e-6)


def test_the_walk_is_short_from_last_frames_triangle():
    grid = [{"name": f"g{i}", "at": [float(i % 5), float(i // 5)]} for i in range(25)]
    n = node(grid)
    pts, tris, nbrs, hull = tables(n.params())
    where = locate(pts, tris, nbrs, hull, 0, 0.3, 0.2)
    for k in range(1, 200):  # a slow path across the grid: each frame's triangle next to, or the same as, the last
        x, y = 0.3 + 3.4 * k / 200, 0.2 + 3.5 * k / 200
        now = locate(pts, tris, nbrs, hull, where, x, y)
        assert now == where or now in nbrs[int(where)] or any(nbrs[int(now)] == where) or \
            set(tris[int(now)]) & set(tris[int(where)])
        where = now


# ------------------------------------------------------------------ the op


def clip_poses(times=(0.2, 0.6, 1.0, 1.3)):
    skel, clip = ag.data.load("walk")
    return [ag.ops.sample(clip, t, "cubic") for t in times]


def test_op_at_a_corner_is_its_pose_on_an_edge_the_two_way_blend_inside_the_weighted_positions():
    poses, at = clip_poses(), [q["at"] for q in SQUARE]
    corner = ag.ops.blend_space_2d(poses, at, (2.0, 0.0), (0.0, 0.0))
    for f in ("pos", "rot", "vel", "ang"):
        np.testing.assert_array_equal(getattr(corner, f), getattr(poses[1], f))
    edge = ag.ops.blend_space_2d(poses, at, (1.0, 1.0), (0.2, -0.2))  # b-c edge, moving along it: w_c' = -0.1
    two = ag.ops.blend(poses[1], poses[2], 0.5, -0.1)
    for f in ("pos", "rot", "vel", "ang"):
        np.testing.assert_allclose(getattr(edge, f), getattr(two, f), atol=1e-5)
    inside = ag.ops.blend_space_2d(poses, at, (0.5, 0.5), (0.4, 0.2))
    want = 0.5 * poses[0].pos + 0.25 * poses[1].pos + 0.25 * poses[2].pos
    want_vel = (0.5 * poses[0].vel + 0.25 * poses[1].vel + 0.25 * poses[2].vel
                - 0.3 * poses[0].pos + 0.2 * poses[1].pos + 0.1 * poses[2].pos)
    np.testing.assert_allclose(inside.pos, want, atol=1e-5)
    np.testing.assert_allclose(inside.vel, want_vel, atol=1e-4)


def moving_pose(rng, joints):
    """``pose_at(t)``: a pose moving smoothly with exact velocities (positions on sines, rotations turning steadily)."""
    from fd import from_rotvec, qmul

    base, swing = rng.normal(size=(joints, 3)), rng.normal(size=(joints, 3))
    rot0, ang = from_rotvec(rng.normal(size=(joints, 3))), rng.normal(size=(joints, 3))

    def pose_at(t):
        t = np.atleast_1d(t)[:, None, None]
        rot = qmul(from_rotvec(ang * t), np.broadcast_to(rot0, t.shape[:1] + rot0.shape))
        spin = np.broadcast_to(ang, rot.shape[:-1] + (3,))
        return ag.Pose(base + swing * np.sin(t), rot, vel=swing * np.cos(t), ang=spin)

    return pose_at


@pytest.mark.parametrize("path", ["inside", "outside"])
def test_op_velocities_equal_central_differences(path):
    """Four smoothly moving poses; the point circles inside triangle (a, b, c) (three entries blended, nested) or
    slides outside below edge a-b (two): the float32 output's velocities against 5-point central differences."""
    from fdcheck import central_fd, check_fd32

    rng = np.random.default_rng(5)
    movers, at = [moving_pose(rng, 6) for _ in SQUARE], [q["at"] for q in SQUARE]

    def pose_at(t):
        t = np.atleast_1d(t)
        if path == "inside":
            xy = np.stack([0.5 + 0.3 * np.sin(3 * t), 0.4 + 0.2 * np.cos(2 * t)], -1)
            vxy = np.stack([0.9 * np.cos(3 * t), -0.4 * np.sin(2 * t)], -1)
        else:
            xy = np.stack([1.0 + 0.6 * np.sin(3 * t), -0.5 + 0.2 * np.cos(2 * t)], -1)
            vxy = np.stack([1.8 * np.cos(3 * t), -0.4 * np.sin(2 * t)], -1)
        return ag.ops.blend_space_2d([m(t) for m in movers], at, xy, vxy)

    t, h = np.array([0.4, 0.9, 1.3, 2.0]), 1e-3
    p0, vel, ang, _ = central_fd(pose_at, t, h)
    check_fd32(p0.vel, vel, np.abs(p0.pos).max(), h, "vel")
    check_fd32(p0.ang, ang, 1.0, h, "ang")


# ------------------------------------------------------------------ whole graphs


def stick_at(t):
    """A stick circling inside triangle (walk, jog, walk_turn): x in [0.15, 0.45], z in [1.3, 1.7]; with its rate."""
    w = 2 * np.pi / 3.0
    pos = np.array([0.3 + 0.15 * np.sin(w * t), 0.0, 1.5 + 0.2 * np.cos(w * t)])
    vel = np.array([0.15 * w * np.cos(w * t), 0.0, -0.2 * w * np.sin(w * t)])
    return pos, vel


@pytest.mark.parametrize("at", [0.5, 1.4])
def test_world_velocities_equal_central_differences_while_the_stick_moves(at):
    plan = ag.compile(space_graph())
    inst, parents = plan.instance(), plan.skeleton.parents
    clock, dt = 0.0, 1 / 60
    out = None
    while clock < at - 1e-9:
        step = min(dt, at - clock)
        clock += step
        out = inst.step(step, {"stick": stick_at(clock)})
    assert out["w_run"][0] == 0.0 and min(out[f"w_{e}"][0] for e in ("walk", "jog", "walk_turn")) > 0.05

    def step(h):
        nonlocal clock
        clock += h
        return inst.step(h, {"stick": stick_at(clock)})["out"]

    err, err_ang = world_velocity_errors(step, parents, 1e-3)
    assert err.max() < 2e-3 and err_ang.max() < 2e-3, (at, err.max(), err_ang.max())


def clock(inst, node_id, c=0):
    from animgraph.executor import OP_STATE
    from animgraph.nodes.sample import ST as SAMPLE_ST

    plan = inst.plan
    return float(inst.st[c, plan.ops[plan.op(node_id), OP_STATE] + SAMPLE_ST.clock])


@pytest.mark.parametrize("how", ["compiled", "python"])
def test_only_the_live_corners_samples_run(how):
    plan = ag.compile(space_graph())
    assert plan.checked.gates["s_run"] == [("bs", 4)]
    inst = plan.instance(python=how == "python", parallel=False)
    dt = 1 / 60
    for f in range(40):
        inst.step(dt, {"stick": stick_at(f * dt)})
    assert clock(inst, "s_run") == 0.0  # outside the triangle the stick circles in: never ran
    for e in ("walk", "jog", "walk_turn"):
        assert clock(inst, f"s_{e}") == pytest.approx(40 * dt)


def test_lane_executor_equals_the_per_character_one_with_characters_across_the_space():
    graph, batch = space_graph(), 17
    lanes = ag.compile(graph, batch=batch).instance(lanes=True)
    chars = ag.compile(graph, batch=batch).instance(lanes=False, parallel=False)
    rng = np.random.default_rng(3)
    centre = rng.uniform([-0.5, 0.0, 0.5], [1.5, 0.0, 4.5], (batch, 3))
    for f in range(120):
        t = f / 60
        swing = np.sin(t + np.arange(batch))
        pos = centre + np.stack([0.6 * swing, np.zeros(batch), 0.8 * np.cos(t) * np.ones(batch)], -1)
        vel = np.stack([0.6 * np.cos(t + np.arange(batch)), np.zeros(batch), -0.8 * np.sin(t) * np.ones(batch)], -1)
        a, b = lanes.step(1 / 60, {"stick": (pos, vel)}), chars.step(1 / 60, {"stick": (pos, vel)})
        for x, y in zip(a["out"].as_tuple(), b["out"].as_tuple()):
            np.testing.assert_allclose(x, y, atol=1e-5, rtol=1e-5)


def test_a_nan_stick_is_refused_by_the_input_changing_nothing():
    inst = ag.compile(space_graph()).instance(python=True)
    inst.step(1 / 60, {"stick": stick_at(0.0)})
    before = inst.st.copy()
    with pytest.raises(GraphError, match="stick"):
        inst.step(1 / 60, {"stick": ([0.3, 0.0, float("nan")], [0.0, 0.0, 0.0])})
    assert np.array_equal(inst.st, before)


def test_cli_refuses_collinear_points_naming_them_in_one_line_with_status_2(tmp_path, capsys):
    import json

    from animgraph.cli import main

    entries = [{"name": "slow", "at": [0, 1]}, {"name": "mid", "at": [0, 2]}, {"name": "fast", "at": [0, 4]}]
    data = {"format": "animgraph.graph", "version": 1,
            "nodes": [{"id": "bs", "type": "blend_space_2d", "entries": entries}, {"id": "out", "type": "output"}],
            "links": [["bs.pose", "out.pose"]]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "'bs'" in err and "'slow', 'mid', 'fast' all lie on one line" in err and "\n" not in err, err


def test_no_pop_as_the_stick_crosses_triangles_edges_and_the_hull():
    """A loop through both triangles, across their shared edge, out past the hull and back: the live corners change
    many times (paused samples resume) and the space never moves the pose without the velocity to match (the pop
    finder's defaults).  The bundled clips' own loop wraps may pop (walk_turn does not loop; the walk's first 0.25 s
    is capture noise): the finder names the sample then, never the space."""
    from animgraph.pops import PopFinder

    plan = ag.compile(space_graph(), reuse_slots=False)
    inst, finder = plan.instance(), PopFinder(plan)
    dt, pops, live = 1 / 60, [], set()
    for f in range(int(6.0 / dt)):
        t, w = f * dt, 2 * np.pi / 6.0
        pos = np.array([0.5 + 1.0 * np.sin(w * t), 0.0, 2.5 + 2.0 * np.sin(2 * w * t)])
        vel = np.array([1.0 * w * np.cos(w * t), 0.0, 4.0 * w * np.cos(2 * w * t)])
        out = inst.step(dt, {"stick": (pos, vel)})
        pop = finder.observe(inst, f, dt)
        pops += [pop] if pop else []
        live.add(tuple(e for e in ("walk", "jog", "run", "walk_turn") if out[f"w_{e}"][0] > 0))
    assert all(p.node.startswith("s_") for p in pops), [p for p in pops if not p.node.startswith("s_")][:3]
    assert len(pops) <= 3, pops  # a wrap or two of the samples, no more
    assert len(live) >= 5, live  # corners alone, edges, both triangles
