"""motion_match: the node plays a database, picks what a float64 brute force picks, switches without pops.

Independent references: a numpy float64 search over the database's searchable frames for
the chosen frame; the database's own root motion for how fast the character goes; central
differences of the node's output for its velocities; the pop finder (every output against
its own velocities) for the switches.
"""

from __future__ import annotations

import numpy as np
import pytest

import animgraph as ag
from fd import qmul, rotvec
from animgraph.database import bundled
from animgraph.nodes.motion_match import (MotionMatcher, arc_trajectory, range_tags, rest_frame,
                                          trajectory_columns)
from animgraph.pops import PopFinder, world

DT = 1 / 60
CLIPS = ["animgraph:walk", "animgraph:walk_turn", "animgraph:walk_stop", "animgraph:jog", "animgraph:run"]


@pytest.fixture(scope="module")
def db():
    return bundled()


def graph(**fields):
    return ag.Graph.model_validate({
        "format": "animgraph.graph", "version": 3, "assets": {"db": {"database": CLIPS}},
        "nodes": [{"id": "traj", "type": "input", "signal": "trajectory"},
                  {"id": "mm", "type": "motion_match", "database": "db", **fields},
                  {"id": "out", "type": "output"},
                  {"id": "changed", "type": "output", "signal": "bool"}],
        "links": [["traj.value", "mm.trajectory"], ["mm.pose", "out.pose"], ["mm.motion", "out.motion"],
                  ["mm.changed", "changed.value"]]})


# ---------------------------------------------------------------- validity


def test_validity():
    bad = graph()
    bad.assets["db"] = ag.graph.DatabaseSpec(database=["animgraph:no_such_clip"])
    with pytest.raises(ag.GraphError) as err:
        ag.compile(bad)
    assert "'db'" in str(err.value) and "mm" in str(err.value)
    clip = ag.Graph.model_validate({
        "format": "animgraph.graph", "version": 3, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "traj", "type": "input", "signal": "trajectory"},
                  {"id": "mm", "type": "motion_match", "database": "walk"}, {"id": "out", "type": "output"}],
        "links": [["traj.value", "mm.trajectory"], ["mm.pose", "out.pose"]]})
    with pytest.raises(ag.GraphError, match="not a motion database"):
        ag.compile(clip)
    with pytest.raises(ValueError, match="margin"):
        MotionMatcher(bundled(), margin=-1.0)
    with pytest.raises(ValueError, match="trajectory must be 12"):
        MotionMatcher(bundled()).update(np.zeros(11), DT)


# ---------------------------------------------------------------- search


def _brute_force(db, query):
    """Lowest float64 cost over the searchable frames (ties: the lowest frame)."""
    cost = ((db.features.astype(np.float64) - query) ** 2).sum(axis=1)
    searchable = np.zeros(len(cost), bool)
    for a, b in zip(db.search_starts, db.search_stops):
        searchable[a:b] = True
    return int(np.argmin(np.where(searchable, cost, np.inf)))


@pytest.mark.parametrize("speed,turn", [(0.0, 0.0), (1.5, 0.0), (1.6, 0.9), (2.5, -0.7), (4.0, 0.0)])
def test_the_first_search_is_the_brute_force_choice(db, speed, turn):
    """From a reset the node asks from the standing frame's pose with the wished trajectory."""
    matcher = MotionMatcher(db, margin=0.0)
    wish = arc_trajectory(speed, turn)
    matcher.update(wish, DT)
    columns, offset, gain = trajectory_columns(db)
    query = db.features[rest_frame(db, db.search_starts, db.search_stops)].astype(np.float64)
    query[columns.astype(int)] = db.normalise(np.zeros(db.features.shape[1]) + 0)[columns.astype(int)]  # shape only
    query[columns.astype(int)] = ((wish - db.offset[columns.astype(int)]) / db.scale[columns.astype(int)]
                                  * db.schema.weights()[columns.astype(int)]).astype(np.float32)
    assert np.allclose((wish - offset) * gain, query[columns.astype(int)], rtol=1e-6, atol=1e-6)
    assert int(matcher.frame) == _brute_force(db, query)


def test_a_reset_stands_and_a_wish_gets_the_speed_asked_for(db):
    matcher = MotionMatcher(db)
    out = matcher.update(arc_trajectory(0.0, 0.0), DT)
    # The database has no clip that stands for long: its stops end at 0.05 to 0.3 m/s.
    assert np.linalg.norm(out["motion"][0]) < 0.5, "standing wish: a (nearly) standing frame"
    for speed in (1.5, 3.9):
        speeds = []
        for f in range(150):
            out = matcher.update(arc_trajectory(speed, 0.0), DT)
            speeds.append(np.linalg.norm(out["motion"][0]))
        assert abs(np.mean(speeds[60:]) - speed) < 0.45 * speed, (speed, np.mean(speeds[60:]))


def test_contacts_are_the_playing_frames(db):
    matcher = MotionMatcher(db)
    for f in range(120):
        out = matcher.update(arc_trajectory(1.5, 0.5 * np.sin(f / 20)), DT)
        np.testing.assert_array_equal(out["contacts"], db.contacts[int(matcher.frame)])


def test_between_searches_it_plays_on_at_the_database_rate(db):
    matcher = MotionMatcher(db, interval=10.0, sharp=1e6)
    matcher.update(arc_trajectory(1.5, 0.0), DT)
    start = matcher.frame
    out = matcher.update(arc_trajectory(1.5, 0.0), 0.25 * db.dt)
    assert not out["searched"] or out["changed"]
    if not out["changed"]:
        assert matcher.frame == pytest.approx(start + 0.25)


def test_after_a_switch_it_holds_unless_its_clip_ends(db):
    """Searching every frame, switches still come at least ``hold`` apart, but at a clip's end."""
    matcher = MotionMatcher(db, interval=0.0, sharp=0.0, hold=0.25)
    last, gaps = None, []
    for f in range(600):
        before = matcher.frame
        out = matcher.update(_steer(f), DT)
        if out["changed"]:
            ends = before + 2.0 >= db.range_stops[db.range_of(int(before))]
            if last is not None and not ends:
                gaps.append(f - last)
            last = f
    assert len(gaps) > 10 and min(gaps) * DT >= 0.25 - 1e-9, gaps


def test_tags_are_the_words_of_a_clips_name_and_a_mirror_swaps_sides():
    assert range_tags("jog_turn_left") == {"jog", "turn", "left"}
    assert range_tags("jog_turn_left (mirrored)") == {"jog", "turn", "right", "mirrored"}
    assert range_tags("walk") == {"walk"}


@pytest.mark.parametrize("tags,exclude", [(["run"], []), (["walk", "jog"], ["mirrored"]), ([], ["stop", "turn"])])
def test_tag_filters_keep_the_search_in_the_clips_they_name(db, tags, exclude):
    matcher = MotionMatcher(db, tags=tags, exclude_tags=exclude, interval=0.05)
    seen = set()
    for f in range(300):
        matcher.update(_steer(f), DT)
        name = db.names[db.range_of(int(matcher.frame))]
        seen.add(name)
        assert not tags or range_tags(name) & set(tags), name
        assert not range_tags(name) & set(exclude), name
    assert len(seen) >= 1


def test_a_tag_no_clip_has_or_filters_that_leave_nothing_name_the_field():
    with pytest.raises(ag.GraphError, match="no clip .* has the tag.*'crawl'") as err:
        ag.compile(graph(tags=["crawl"]))
    assert "mm" in str(err.value) and "tags" in str(err.value)
    with pytest.raises(ag.GraphError, match="leave no clip") as err:
        ag.compile(graph(tags=["run"], exclude_tags=["run"]))
    assert "exclude_tags" in str(err.value)


def _short_database(tmp_path, frames):
    """A database file of the walk's first ``frames`` frames (120 fps BVH), and a graph naming it."""
    from animgraph.database import build

    skel, walk = ag.data.load("walk")
    short = ag.Clip(skel, walk.pos[:frames], walk.rot[:frames], dt=1 / 120)
    build([("short", skel, short)]).save(tmp_path / "short.npz")
    g = graph()
    g.assets["db"] = ag.graph.DatabaseSpec(database=str(tmp_path / "short.npz"))
    return g


def test_a_database_too_short_to_search_names_the_node_and_field(tmp_path):
    """A clip of 1 frame at 60 fps: the build refuses it; a file holding such a range (written past the build's
    check) is refused where a graph reads it, naming the node, its field and the file."""
    from animgraph import database

    skel, walk = ag.data.load("walk")
    short = ag.Clip(skel, walk.pos[:2], walk.rot[:2], dt=1 / 120)
    with pytest.raises(ag.AnimgraphError, match="^short: 1 frame at 60 fps .*too short to search"):
        database.build([("short", skel, short)])
    schema = database.Schema.default()
    raw = database._assemble(skel, schema, [database._prepare("short", "short", skel, short, schema,
                                                              schema.joint_indices(skel))])
    raw.save(tmp_path / "short.npz")
    g = graph()
    g.assets["db"] = ag.graph.DatabaseSpec(database=str(tmp_path / "short.npz"))
    with pytest.raises(ag.GraphError, match="range 'short' has 1 frame at 60 fps: too short to search") as err:
        ag.compile(g)
    assert err.value.node == "mm" and err.value.port == "database" and "short.npz" in str(err.value)


@pytest.mark.parametrize("frames", [3, 12])
def test_a_tiny_database_and_hostile_steps_stay_on_the_ground(tmp_path, frames):
    """Switching every few frames (the clips end), with steps of 0, 5e-324 and 1000 s between: finite, grounded."""
    inst = ag.compile(_short_database(tmp_path, frames), batch=2).instance()
    for dt in (DT, 0.0, 1000.0, 5e-324, DT, DT, DT, DT):
        out = inst.step(dt, {"traj": np.stack([_steer(1), _steer(200)])})
        assert np.all(np.isfinite(out["out"].pos)) and np.all(np.isfinite(out["out"].vel))
        assert np.all(np.abs(out["out"].pos[:, 0, 1] - 0.95) < 0.3), out["out"].pos[:, 0]  # the hips' height


# ---------------------------------------------------------------- motion


@pytest.fixture(scope="module")
def plan():
    return ag.compile(graph(), reuse_slots=False)


def _steer(f):
    """A wish that speeds up, turns both ways and slows down."""
    return arc_trajectory(1.0 + 2.5 * (f > 120) * (f < 240), 1.2 * np.sin(f / 40.0))


@pytest.mark.parametrize("seed", range(6))
def test_velocities_are_five_point_differences_across_searches_and_switches(db, seed):
    """Steered for 0.5 to 2 s (searching every 0.15 s, switching), then stepped by h around a time: exact rates."""
    from animgraph.nodes.motion_match import _stencil_at
    from animgraph.stencil import STEPS

    h = 3e-4
    poses = _stencil_at(db, 3.0 + seed, h, np.random.default_rng(seed))
    at = {k: p for k, p in zip(STEPS, poses)}
    pos = {k: p.pos.astype(np.float64) for k, p in at.items()}
    fd = (pos[-2] - 8 * pos[-1] + 8 * pos[1] - pos[2]) / (12 * h)
    np.testing.assert_allclose(at[0].vel, fd, atol=2e-3 * (1 + np.abs(fd).max()))
    q0 = at[0].rot.astype(np.float64)
    conj = q0 * np.array([1.0, -1.0, -1.0, -1.0])
    r = {k: rotvec(qmul(at[k].rot.astype(np.float64), conj)) for k in (-2, -1, 1, 2)}
    fd_ang = (r[-2] - 8 * r[-1] + 8 * r[1] - r[2]) / (12 * h)
    np.testing.assert_allclose(at[0].ang, fd_ang, atol=2e-3 * (1 + np.abs(fd_ang).max()))


def test_switches_never_pop(plan):
    """The pop finder (positions against their own velocities, every node) flags no frame, switches included."""
    inst = plan.instance()
    finder = PopFinder(plan, output="out")
    pops, switches = [], 0
    for f in range(360):
        out = inst.step(DT, {"traj": _steer(f)})
        switches += int(out["changed"][0] > 0.5)
        pop = finder.observe(inst, f, DT)
        if pop is not None:
            pops.append(pop)
    assert switches >= 5
    assert pops == [], pops[:3]


def test_history_free_reset_and_batch_characters_agree(plan):
    """Two characters given the same wishes play the same frames; a reset one starts over like a new one.

    (A reset keeps the world placement, so the root's position is compared in height only.)
    """
    plan2 = ag.compile(graph(), batch=2)
    inst = plan2.instance()
    for f in range(90):
        out = inst.step(DT, {"traj": _steer(f)})
    np.testing.assert_array_equal(out["out"].pos[0], out["out"].pos[1])
    inst.reset(characters=[1])
    fresh = ag.compile(graph()).instance()
    a = inst.step(DT, {"traj": _steer(0)})["out"]
    b = fresh.step(DT, {"traj": _steer(0)})["out"]
    np.testing.assert_allclose(a.pos[1, 1:], b.pos[1:], atol=1e-6)
    np.testing.assert_allclose(a.pos[1, 0, 1], b.pos[0, 1], atol=1e-6)
    np.testing.assert_allclose(a.vel[1, 1:], b.vel[1:], atol=1e-5)


def test_compiled_matches_python_dispatch():
    """The executor's compiled call and the op table walked in Python (python=True) agree frame by frame."""
    plan = ag.compile(graph(), batch=2)
    compiled, python = plan.instance(parallel=False), plan.instance(python=True)
    for f in range(40):
        wish = {"traj": np.stack([_steer(f), _steer(f + 50)])}
        a, b = compiled.step(DT, wish), python.step(DT, wish)
        np.testing.assert_allclose(a["out"].pos, b["out"].pos, atol=1e-6)
        np.testing.assert_allclose(a["out"].vel, b["out"].vel, atol=1e-5)
        np.testing.assert_array_equal(a["changed"], b["changed"])
    np.testing.assert_allclose(compiled.st, python.st, atol=1e-6)
