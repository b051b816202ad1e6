"""Events (``animgraph.events``, ``Instance.events``): a sample's track instants and ranges, exact under any step.

References: the crossing times worked out here from the clock alone (a clock at a constant rate from
``start`` is at ``start + rate T`` at instance time ``T``, so a point ``x`` of the unwrapped time line is
crossed at ``T = (x - start) / rate``); the same graph stepped at other step sizes; ozz-animation's
track-triggering cases (one lap, the next lap, three laps in one step).
"""

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph.check import GraphWarning

LENGTH = 290 / 120  # s: the bundled walk's loop (290 keys at 120 fps)
TRACKS = [  # names, in time order per name
    {"name": "hit", "time": 0.25}, {"name": "hit", "time": 1.9},
    {"name": "step", "time": 0.0},
    {"name": "swing", "begin": 0.5, "end": 1.0},
    {"name": "wrap", "begin": 2.2, "end": 0.3},  # through the loop's end
    {"name": "blink", "begin": 1.4, "end": 1.4},  # zero length: a begin then an end
]


def graph(tmp_path, rate=1.0, start=0.0, driven=False, loop=True, rate_input=False):
    """A graph playing the walk with only ``TRACKS`` (no derived ones), on its own clock (its rate the field or an
    input ``r``) or its ``time`` input ``t``."""
    nodes = [{"id": "walk", "type": "sample", "clip": "walk", "rate": rate, "start": start, "loop": loop},
             {"id": "out", "type": "output"}]
    links = [["walk.pose", "out.pose"]]
    if driven:
        nodes.append({"id": "t", "type": "input", "min": -1e5, "max": 1e5})
        links.append(["t.value", "walk.time"])
    if rate_input:
        nodes.append({"id": "r", "type": "input", "default": rate, "min": -10, "max": 10})
        links.append(["r.value", "walk.rate"])
    data = {"format": "animgraph.graph", "version": 4,
            "assets": {"walk": {"path": "animgraph:walk", "loop": "auto", "derive": False, "tracks": TRACKS}},
            "nodes": nodes, "links": links}
    path = tmp_path / f"events_{rate}_{start}_{driven}_{loop}_{rate_input}.json".replace("-", "m")
    path.write_text(json.dumps(data))
    return path


def run(path, dts, times=None):
    """[(absolute time s, name, kind, detail)] for character 0 after stepping ``dts``; ``times``: the time input's
    value at each step (its rate: the ramp's)."""
    inst = ag.compile(path, events=4096).instance()
    out, t0 = [], 0.0
    for k, dt in enumerate(dts):
        rate = 0.0 if times is None or k == 0 else (times[k] - times[k - 1]) / dt
        inst.step(float(dt), None if times is None else {"t": (float(times[k]), float(rate))})
        got = inst.events()
        assert not got.lost.any()
        out += [(t0 + e.time, e.name, e.kind, e.detail) for e in got if e.character == 0]
        t0 += dt
    return out


def expected(rate, start, total):
    """The events of a looping clock at ``start + rate T`` s for ``T`` in [0, total] s, from the tracks alone:
    at ``T = 0`` the instants there and the ranges holding ``start``; then every point the clock passes, once per
    lap, a range opening at its begin going forward (its end going back) and closing the other way."""
    a, b = start, start + rate * total
    lo, hi = min(a, b), max(a, b)
    passes = []  # (T, order at one time, name, what)

    def laps(x0):
        return [x0 + m * LENGTH for m in range(math.floor((lo - x0) / LENGTH), math.ceil((hi - x0) / LENGTH) + 1)]

    for e in TRACKS:
        pts = [(e["time"], "instant")] if "time" in e else [(e["begin"], "begin"), (e["end"], "end")]
        for x0, what in pts:
            for x in laps(x0):
                if (rate > 0 and a < x <= b) or (rate < 0 and b <= x < a):
                    tie = (what == "end") if rate > 0 else (what == "begin")  # a zero-length range opens first
                    passes.append(((x - start) / rate, tie, e["name"], what))
    found, opened = [], {}
    for e in TRACKS:
        if "time" in e and abs((a - e["time"] + LENGTH / 2) % LENGTH - LENGTH / 2) < 1e-12:
            found.append((0.0, e["name"], "instant"))
        if "begin" in e and holds(e, a):
            found.append((0.0, e["name"], "begin"))
            opened[e["name"]] = True
    for T, _, name, what in sorted(passes):
        if what == "instant":
            found.append((T, name, "instant"))
            continue
        opens = (what == "begin") == (rate > 0)
        if opens != opened.get(name, False):
            found.append((T, name, "begin" if opens else "end"))
            opened[name] = opens
    return found


def holds(e, x):
    """Whether range entry ``e`` holds clip time ``x`` (wrapped into the loop)."""
    x = x % LENGTH
    b, n = e["begin"], e["end"]
    return (b <= x <= n) if b <= n else (x >= b or x <= n)


def same(got, want, tol=1e-6):
    """The same events: per (name, kind) the same number, at the same times within ``tol`` s."""
    def groups(events):
        out = {}
        for t, name, kind in events:
            out.setdefault((name, kind), []).append(t)
        return {k: np.sort(v) for k, v in out.items()}
    g, w = groups(got), groups(want)
    assert g.keys() == w.keys(), (sorted(g), sorted(w))
    for key in g:
        assert len(g[key]) == len(w[key]), (key, g[key], w[key])
        np.testing.assert_allclose(g[key], w[key], atol=tol, rtol=0, err_msg=str(key))


# ---------------------------------------------------------------- exact in time under any step


@pytest.mark.parametrize("rate", [1.0, -1.0, 2.5, -0.4])
def test_a_constant_rate_clock_fires_each_point_once_per_lap_at_its_time(tmp_path, rate):
    """Its clock moves from ``start + rate T`` to ``start + rate (T + dt)`` over each step (the frame shows the
    first: a reset's first frame shows its time), so a point fires at ``T = (x - start) / rate``."""
    dts = [1 / 60] * 400
    got = [g[:3] for g in run(graph(tmp_path, rate=rate, start=1.2), dts)]
    same(got, expected(rate, 1.2, sum(dts)))


@settings(max_examples=15, deadline=None)
@given(dts=st.lists(st.sampled_from([1 / 960, 1 / 60, 1 / 30, 0.37, 1.0, 2.9, 6.5]), min_size=1, max_size=12),
       rate=st.sampled_from([1.0, -1.0, 0.7, -2.2]))
def test_the_same_events_at_the_same_times_whatever_the_steps(tmp_path_factory, dts, rate):
    """Random step sizes, steps longer than the loop among them, forward and backward: the events of fine steps."""
    path = graph(tmp_path_factory.mktemp("ev"), rate=rate, start=0.9)
    total = sum(dts)
    fine = [total / 400] * 400
    # A point the clock reaches exactly as the run ends fires or not by the last bit of the sums: left out.
    inside = lambda events: [e[:3] for e in events if e[0] < total - 1e-9]  # noqa: E731
    same(inside(run(path, dts)), inside(run(path, fine)))


def test_a_time_input_on_a_ramp_fires_where_the_ramp_passes_each_point(tmp_path):
    """Driven by a time input at ``0.2 + 1.3 T`` s at the end of each step (unwrapped: the sample wraps it), each
    point fires at ``T = (x - 0.2) / 1.3``, at 30 Hz as at 960 Hz (after the first step, whose move starts there)."""
    path = graph(tmp_path, driven=True)
    out = {}
    for hz in (30, 960):
        n = int(4.0 * hz)
        ends = np.arange(1, n + 1) / hz
        out[hz] = [e[:3] for e in run(path, [1 / hz] * n, 0.2 + 1.3 * ends) if e[0] > 1 / 30 + 1e-9]
    assert len(out[30]) > 10
    same(out[30], out[960])
    for t, name, kind in out[30]:
        if kind == "instant":
            x = 0.2 + 1.3 * t
            assert any(abs((x - e["time"] + LENGTH / 2) % LENGTH - LENGTH / 2) < 1e-9 for e in TRACKS
                       if e["name"] == name and "time" in e), (t, name)


def test_sub_frame_times_of_the_plants_at_30_and_960_hz(tmp_path):
    """The bundled walk's derived plants on its own clock: each within 1e-6 s at 30 Hz of the 960 Hz run."""
    path = tmp_path / "plants.json"
    path.write_text(json.dumps({"format": "animgraph.graph", "version": 4, "assets": {"walk": "animgraph:walk"},
                                "nodes": [{"id": "walk", "type": "sample", "clip": "walk"},
                                          {"id": "out", "type": "output"}],
                                "links": [["walk.pose", "out.pose"]]}))
    runs = {hz: [e for e in run(path, [1 / hz] * (6 * hz)) if e[1].endswith("_plant")] for hz in (30, 960)}
    assert len(runs[30]) >= 10
    same([e[:3] for e in runs[30]], [e[:3] for e in runs[960]])


# ---------------------------------------------------------------- ozz-animation's track-triggering cases


@pytest.mark.parametrize("laps", [(0, 1), (1, 2), (0, 3)])
def test_ozz_ranges_of_a_looping_clip(tmp_path, laps):
    """A time input jumping over [0, 1], [1, 2] and [0, 3] laps in one step: each instant once per lap, in order,
    at the fraction of the step where the clock passes it (a point on the step's start fired the step before, one on
    its end fires now); each range opened and closed once per lap."""
    a, b = laps[0] * LENGTH, laps[1] * LENGTH
    plan = ag.compile(graph(tmp_path, driven=True), events=4096)
    inst = plan.instance()
    inst.step(1.0, {"t": a})
    inst.events()
    inst.step(1.0, {"t": b})
    jump = [(e.time, e.name, e.kind) for e in inst.events()]
    n = laps[1] - laps[0]
    hits = [t for t, name, _ in jump if name == "hit"]
    want = sorted((x + m * LENGTH - a) / (b - a) for m in range(laps[0], laps[1]) for x in (0.25, 1.9))
    np.testing.assert_allclose(hits, want, atol=1e-9)
    np.testing.assert_allclose([t for t, name, _ in jump if name == "step"], [(k + 1) / n for k in range(n)],
                               atol=1e-9)
    assert [k for _, name, k in jump if name == "swing"] == ["begin", "end"] * n
    assert [k for _, name, k in jump if name == "blink"] == ["begin", "end"] * n
    assert [k for _, name, k in jump if name == "wrap"] == ["end", "begin"] * n  # open at 0: it wraps


# ---------------------------------------------------------------- ranges pair up


@settings(max_examples=25, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["step", "step", "step", "long", "reset", "teleport", "back"]),
                              st.floats(0.0, 2.0)), min_size=1, max_size=40))
def test_every_begin_has_exactly_one_end_under_resets_and_teleports(tmp_path_factory, ops):
    plan = ag.compile(graph(tmp_path_factory.mktemp("ev"), rate=1.0), events=4096)
    inst = plan.instance()
    seen = []
    for op, x in ops:
        if op == "reset":
            inst.reset(x)
        elif op == "teleport":
            inst.teleport((x, 0.0, 0.0))
        elif op == "back":
            inst.set_param("walk", "rate", -1.5)
            inst.step(1 / 60)
        else:
            inst.step(3.1 if op == "long" else 1 / 60)
        seen += inst.events()
    inst.reset()
    seen += inst.events()
    for name in ("swing", "wrap", "blink"):
        depth = 0
        for e in seen:
            if e.name == name and e.kind != "instant":
                depth += 1 if e.kind == "begin" else -1
                assert depth in (0, 1), (name, seen)
        assert depth == 0, name
    details = {e.detail for e in seen if e.kind == "end"}
    assert details <= {"", "reset", "teleport"}


def test_a_reset_ends_what_is_open_and_a_teleport_reopens_it(tmp_path):
    inst = ag.compile(graph(tmp_path, start=0.6), events=64).instance()
    inst.step(1 / 60)
    opened = [(e.name, e.kind) for e in inst.events()]
    assert ("swing", "begin") in opened
    inst.teleport((1.0, 0.0, 0.0))
    ended = inst.events()
    assert [(e.name, e.kind, e.detail, e.step, e.time) for e in ended] == [("swing", "end", "teleport", 1, 0.0)]
    inst.step(1 / 60)
    assert ("swing", "begin") in [(e.name, e.kind) for e in inst.events()]
    inst.reset(0.0)
    assert [(e.name, e.kind, e.detail) for e in inst.events()] == [("swing", "end", "reset")]


# ---------------------------------------------------------------- delivery


def test_a_full_block_counts_what_it_loses_and_says_so(tmp_path):
    inst = ag.compile(graph(tmp_path), events=3).instance()
    for _ in range(3):
        inst.step(1.0)  # about 12 points crossed in all
    with pytest.warns(GraphWarning, match="events lost"):
        got = inst.events()
    assert len(got) == 3 and got.lost[0] > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert inst.events().lost[0] == 0  # the count starts again


def test_events_off_and_on_give_the_same_poses_and_save_state_keeps_the_pending_ones(tmp_path):
    path = graph(tmp_path)
    on, off = ag.compile(path, events=64).instance(), ag.compile(path, events=0).instance()
    for _ in range(50):
        a, b = on.step(1 / 30)["out"], off.step(1 / 30)["out"]
        np.testing.assert_array_equal(a.pos, b.pos)
    assert off.events() == [] and len(on.events()) > 0
    on.step(0.6)
    saved = on.save_state()
    first = on.events()
    on.load_state(saved)
    assert on.events() == first and len(first) > 0


def test_lanes_give_each_character_its_own_events(tmp_path):
    """A batch of 19 on lane tiles, each character at its own rate (forward and back), equals each one run alone."""
    path = graph(tmp_path, rate_input=True)
    rates = np.linspace(-2.0, 2.0, 19)
    inst = ag.compile(path, batch=19, events=512).instance()
    assert inst.lanes
    got = {c: [] for c in range(19)}
    for _ in range(90):
        inst.step(1 / 20, {"r": (rates, np.zeros(19))})
        for e in inst.events():
            got[e.character].append((e.step, round(e.time, 9), e.name, e.kind))
    for c in (0, 4, 9, 13, 18):
        alone = ag.compile(path, batch=1, events=512).instance()
        want = []
        for _ in range(90):
            alone.step(1 / 20, {"r": (float(rates[c]), 0.0)})
            want += [(e.step, round(e.time, 9), e.name, e.kind) for e in alone.events()]
        assert got[c] == want and (len(want) >= 10 or rates[c] == 0.0), c


def test_a_bad_capacity_is_refused(tmp_path):
    with pytest.raises(ag.GraphError, match="events must be a whole number"):
        ag.compile(graph(tmp_path), events=-1)


def test_run_writes_the_events_as_json_lines(tmp_path):
    """``animgraph run --events``: one object a line, ``at`` the time since the run began; the API's events."""
    import subprocess
    import sys

    path, out = graph(tmp_path, rate=1.3), tmp_path / "ev.jsonl"
    done = subprocess.run([sys.executable, "-m", "animgraph", "run", str(path), "--frames", "90", "--dt", "0.05",
                           "--events", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    want = run(path, [0.05] * 90)
    assert len(lines) == len(want) > 10
    same([(r["at"], r["name"], r["kind"]) for r in lines], [w[:3] for w in want], tol=1e-9)
    assert set(lines[0]) == {"character", "step", "time", "node", "name", "kind", "weight", "detail", "at"}
    for bad, says in ((tmp_path / "ev.txt", "must end in .jsonl"), (tmp_path / "no" / "ev.jsonl", "--events")):
        done = subprocess.run([sys.executable, "-m", "animgraph", "run", str(path), "--frames", "3",
                               "--events", str(bad)], capture_output=True, text=True)
        assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not bad.exists()


# ---------------------------------------------------------------- sync groups: one voice for the feet


def group_phase_crossings(phases):
    """How many times a phase (cycles, mod 1, sampled each step) passed 0 or 0.5 going forward."""
    u = np.unwrap(np.asarray(phases) * 2 * np.pi) / (2 * np.pi)
    return int(np.floor(u[-1] * 2) - np.floor(u[0] * 2))


def synced_steps(plan, speeds):
    """Step ``graphs/blend_space.json`` through ``speeds`` (one a step at 60 Hz): (events, group phases)."""
    inst = plan.instance()
    found, phases = [], []
    for s in speeds:
        inst.step(1 / 60, {"speed": float(s)})
        found += inst.events()
        phases.append(float(inst.port("__sync_gait", "phase")[0]))
    return found, phases


def test_a_blend_of_two_gaits_steps_once_per_plant_and_its_weight_is_the_leaders():
    """Halfway between walk and jog and at 2.4 m/s (jog's weight 0.7426 by hand): plants from one sample only, left
    and right in turn, one each time the group's phase passes 0 or 0.5; they carry the leader's weight."""
    from animgraph import graphs

    plan = ag.compile(graphs.path("blend_space"), events=512)
    for speed, leader, weight in ((2.4, "jog", (2.4 - 1.65) / (2.66 - 1.65)), (1.9, "walk", 1 - (1.9 - 1.65) / 1.01)):
        found, phases = synced_steps(plan, [speed] * 600)
        plants = [e for e in found if e.name.endswith("_plant")]
        assert {e.node for e in plants} == {leader}
        sides = [e.name for e in plants]
        assert all(a != b for a, b in zip(sides, sides[1:])), sides
        assert abs(len(plants) - group_phase_crossings(phases)) <= 1, (len(plants), group_phase_crossings(phases))
        np.testing.assert_allclose([e.weight for e in plants], weight, atol=1e-6)


def test_a_leader_change_mid_stride_neither_doubles_nor_drops_a_footstep():
    """The speed swings across the walk-jog midpoint every 0.13 s (mid-stride, many times a step): still one plant
    each time the phase passes 0 or 0.5, left and right in turn; the contacts pair up, the old leader's open one
    ending with detail 'leader'."""
    from animgraph import graphs

    middle = (1.65 + 2.66) / 2
    speeds = [middle + (0.05 if (k // 8) % 2 else -0.05) for k in range(900)]
    found, phases = synced_steps(ag.compile(graphs.path("blend_space"), events=512), speeds)
    plants = [e for e in found if e.name.endswith("_plant")]
    assert {e.node for e in plants} == {"walk", "jog"}  # both led at times
    sides = [e.name for e in plants]
    assert all(a != b for a, b in zip(sides, sides[1:])), sides
    assert abs(len(plants) - group_phase_crossings(phases)) <= 1
    for node in ("walk", "jog"):
        for name in ("left_contact", "right_contact"):
            kinds = [e.kind for e in found if e.node == node and e.name == name]
            assert all(a != b for a, b in zip(kinds, kinds[1:])) and (not kinds or kinds[0] == "begin"), kinds
    assert any(e.detail == "leader" for e in found if e.kind == "end")


def test_synced_plants_under_a_ramping_speed_land_within_a_fraction_of_a_step_whatever_the_steps():
    """The speed ramps 1.65 -> 3.9 m/s over 6 s (walk, jog, run weights changing all along): at 30 and 60 Hz the
    same plants, in the same order, as at 480 Hz, each within a quarter of the coarse step (the group's phase is
    integrated one step at a time, so the times are not exact; a member's events look ahead as an own clock's, so
    they are not a step late either)."""
    from animgraph import graphs

    plan = ag.compile(graphs.path("blend_space"), events=4096)

    def plants(hz):
        inst, dt, found, t0 = plan.instance(), 1.0 / hz, [], 0.0
        rate = (3.9 - 1.65) / 6.0
        for _ in range(6 * hz):
            inst.step(dt, {"speed": (1.65 + rate * t0, rate)})
            found += [(t0 + e.time, e.name) for e in inst.events() if e.name.endswith("_plant")]
            t0 += dt
        return found

    fine = plants(480)
    assert len(fine) >= 14
    for hz in (30, 60):
        coarse = plants(hz)
        assert [n for _, n in coarse] == [n for _, n in fine]
        spread = np.abs(np.array([t for t, _ in coarse]) - np.array([t for t, _ in fine]))
        assert spread.max() < 0.25 / hz, (hz, spread)


def test_under_the_weight_threshold_a_sample_says_nothing(tmp_path):
    """Two synced samples under a blend: at alpha 0 the run's notify is dropped (weight 0 < 1e-5), at 0.3 it
    comes with weight 0.3; a range open when the weight falls ends with detail 'weight'."""
    run_tracks = [{"name": "hit", "time": 0.2}, {"name": "hold", "begin": 0.0, "end": 1.0}]
    data = {"format": "animgraph.graph", "version": 4,
            "assets": {"walk": "animgraph:walk",
                       "run": {"path": "animgraph:run", "loop": "auto", "derive": True, "tracks": run_tracks}},
            "nodes": [{"id": "walk", "type": "sample", "clip": "walk", "sync_group": "g"},
                      {"id": "run", "type": "sample", "clip": "run", "sync_group": "g"},
                      {"id": "a", "type": "input", "min": 0, "max": 1},
                      {"id": "mix", "type": "blend"}, {"id": "out", "type": "output"}],
            "links": [["walk.pose", "mix.a"], ["run.pose", "mix.b"], ["a.value", "mix.alpha"],
                      ["mix.pose", "out.pose"]]}
    path = tmp_path / "weights.json"
    path.write_text(json.dumps(data))
    inst = ag.compile(path, events=512).instance()
    drops = hits = 0
    for k in range(12):  # 0.4 s at 0, then 0.4 s at 0.3, six times: the drops land at different times of the loop
        alpha = 0.3 if k % 2 else 0.0
        for _ in range(24):
            inst.step(1 / 60, {"a": alpha})
        got = [e for e in inst.events() if e.node == "run" and e.name in ("hit", "hold")]
        if alpha == 0.0:
            assert [(e.kind, e.detail) for e in got] in ([], [("end", "weight")])
            drops += len(got)
        else:
            assert all(abs(e.weight - 0.3) < 1e-9 for e in got)
            hits += sum(e.name == "hit" for e in got)
    assert drops >= 1 and hits >= 1  # the range was open at some drop; the notify spoke at 0.3


# ---------------------------------------------------------------- state machines and one-shots

SHOT_TRACKS = [{"name": "raise", "begin": 0.2, "end": 0.9}, {"name": "hit", "time": 0.5}]


def machine(tmp_path):
    """States a (the walk with ``TRACKS``), b (the run, its derived plants and contacts), c (the walk clamped,
    entered only past b and left only by travel's jump), by ``speed``, with a crossfade, a dead blend and an
    inertialization; under a one-shot of the wave (a range and an instant) fired and aborted by ``fire``/``abort``."""
    nodes = [
        {"id": "speed", "type": "input", "min": 0.0, "max": 4.0},
        {"id": "fire", "type": "input", "signal": "bool", "default": False},
        {"id": "abort", "type": "input", "signal": "bool", "default": False},
        {"id": "go", "type": "input", "signal": "int", "default": -1, "min": -1, "max": 2},
        {"id": "a_clip", "type": "sample", "clip": "walk"},
        {"id": "b_clip", "type": "sample", "clip": "run"},
        {"id": "c_clip", "type": "sample", "clip": "walk", "loop": False, "start": 0.4},
        {"id": "sm", "type": "state_machine", "start": "a",
         "states": [{"name": "a"}, {"name": "b"}, {"name": "c", "reset_on_enter": False}],
         "transitions": [{"from": "a", "to": "b", "when": "speed", "above": 1.0, "blend": "crossfade"},
                         {"from": "b", "to": "a", "when": "speed", "below": 0.5, "blend": "dead_blend"},
                         {"from": "b", "to": "c", "when": "speed", "above": 3.0}]},
        {"id": "shot_clip", "type": "sample", "clip": "wave", "loop": False},
        {"id": "shot", "type": "one_shot", "blend": "crossfade", "blend_in": 0.2, "blend_out": 0.3},
        {"id": "out", "type": "output"},
        {"id": "state", "type": "output", "signal": "int"},
    ]
    links = [["speed.value", "sm.speed"], ["go.value", "sm.travel"], ["a_clip.pose", "sm.a"],
             ["b_clip.pose", "sm.b"], ["c_clip.pose", "sm.c"], ["sm.pose", "shot.base"],
             ["shot_clip.pose", "shot.shot"], ["shot_clip.time_left", "shot.shot_time_left"],
             ["fire.value", "shot.fire"], ["abort.value", "shot.abort"], ["shot.pose", "out.pose"],
             ["sm.state", "state.value"]]
    data = {"format": "animgraph.graph", "version": 4,
            "assets": {"walk": {"path": "animgraph:walk", "loop": "auto", "derive": False, "tracks": TRACKS},
                       "run": "animgraph:run",
                       "wave": {"path": "animgraph:wave", "derive": False, "tracks": SHOT_TRACKS}},
            "nodes": nodes, "links": links}
    path = tmp_path / "machine.json"
    path.write_text(json.dumps(data))
    return path


def paired(seen):
    """Assert every range's begin has exactly one end, per character, node and name; the ends' details."""
    depth = {}
    for e in seen:
        if e.kind != "instant":
            key = (e.character, e.node, e.name)
            depth[key] = depth.get(key, 0) + (1 if e.kind == "begin" else -1)
            assert depth[key] in (0, 1), (key, e)
    assert not any(depth.values()), depth
    return {e.detail for e in seen if e.kind == "end"}


def test_a_state_machine_says_which_state_it_left_and_entered_when_its_state_output_changes(tmp_path):
    inst = ag.compile(machine(tmp_path), events=512).instance()
    speeds = [0.0] * 20 + [2.0] * 100 + [3.5] * 40 + [0.0] * 40 + [2.0] * 60 + [0.2] * 80
    names, states, seen = "abc", [], []
    for k, speed in enumerate(speeds):
        states.append(int(inst.step(1 / 60, {"speed": speed})["state"][0]))
        seen += inst.events()
    said = [(e.step, e.name, e.detail) for e in seen if e.node == "sm"]
    want = [(0, "entered", "a")]
    for k in range(1, len(states)):
        if states[k] != states[k - 1]:
            want += [(k, "left", names[states[k - 1]]), (k, "entered", names[states[k]])]
    assert said == want and len(want) >= 5
    assert all(e.time == 0.0 and e.kind == "instant" for e in seen if e.node == "sm")
    # A state's samples end their open ranges when the machine stops running them, and say so.
    left = [e for e in seen if e.kind == "end" and e.detail == "state_left"]
    assert left and {e.node for e in left} <= {"a_clip", "b_clip"}
    for e in left:
        state = names.index(e.node[0])
        assert states[e.step] != state  # ended once its state no longer shows
    # c is a dead end (only travel leaves it): the travel input's jump is said, with the state travelled to.
    inst.step(1 / 60, {"speed": 3.5})
    inst.step(1 / 60, {"speed": 3.5})
    assert int(inst.step(1 / 60, {"speed": 3.5})["state"][0]) == 2
    inst.events()
    inst.step(1 / 60, {"speed": 3.5, "go": 0})
    assert [(e.name, e.detail) for e in inst.events() if e.node == "sm"] == [
        ("travel_jump", "a"), ("left", "c"), ("entered", "a")]


def test_a_one_shot_says_fired_ended_and_aborted_and_its_clip_ends_its_ranges(tmp_path):
    inst = ag.compile(machine(tmp_path), events=512).instance()

    def steps(n, fire=False, abort=False):
        out = []
        for k in range(n):  # the edge on the first step only (an input keeps its last value)
            inst.step(1 / 60, {"fire": fire and k == 0, "abort": abort and k == 0})
            out += [e for e in inst.events() if e.node.startswith("shot")]  # not the state machine's walk
        return out

    steps(5)
    fired = steps(1, fire=True) + steps(45)  # 0.75 s into the wave: 'raise' open, 'hit' passed
    assert [(e.node, e.name, e.kind) for e in fired] == [
        ("shot", "fired", "instant"), ("shot_clip", "raise", "begin"), ("shot_clip", "hit", "instant")]
    aborted = steps(1, abort=True)
    assert [(e.node, e.name, e.kind, e.detail) for e in aborted] == [("shot", "aborted", "instant", "")]
    after = steps(30)  # the crossfade out runs the shot on: its range closes by the clock, then it stops
    assert [(e.node, e.name, e.kind, e.detail) for e in after] == [("shot_clip", "raise", "end", "")]
    # Fired again and aborted at 0.5 s: the fade out (0.3 s) stops the shot before 'raise' ends: ended as aborted.
    again = steps(1, fire=True) + steps(30) + steps(1, abort=True) + steps(40)
    assert [(e.name, e.kind, e.detail) for e in again] == [
        ("fired", "instant", ""), ("raise", "begin", ""), ("hit", "instant", ""), ("aborted", "instant", ""),
        ("raise", "end", "aborted")]
    # Re-fired while 'raise' is open: the restart ends it (aborted) and opens it again at 0.2 s.
    refired = steps(1, fire=True) + steps(30) + steps(1, fire=True) + steps(30)
    assert [(e.name, e.kind, e.detail) for e in refired] == [
        ("fired", "instant", ""), ("raise", "begin", ""), ("hit", "instant", ""), ("fired", "instant", ""),
        ("raise", "end", "aborted"), ("raise", "begin", ""), ("hit", "instant", "")]
    steps(1, abort=True)
    steps(60)
    # Played to its end: the shot ends by itself once its time left reaches the fade out.
    whole = steps(1, fire=True) + steps(200)
    assert [e.name for e in whole if e.node == "shot"] == ["fired", "ended"]
    assert paired(whole) <= {""}


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["step", "step", "step", "long", "speed", "fire", "abort", "travel",
                                               "reset", "teleport"]),
                              st.floats(0.0, 4.0)), min_size=1, max_size=50))
def test_every_begin_has_exactly_one_end_under_fires_aborts_state_changes_resets_and_teleports(tmp_path_factory, ops):
    plan = ag.compile(machine(tmp_path_factory.mktemp("sm")), batch=2, events=4096)
    inst = plan.instance()
    inputs = {"speed": np.zeros(2), "fire": np.zeros(2, bool), "abort": np.zeros(2, bool), "go": np.full(2, -1)}
    seen = []
    for k, (op, x) in enumerate(ops):
        c = k % 2  # each op acts on one of the two characters
        if op == "reset":
            inst.reset(x / 2.0)
        elif op == "teleport":
            inst.teleport((x, 0.0, 0.0))
        elif op in ("fire", "abort"):
            inputs[op][c] = not inputs[op][c]
        elif op == "travel":
            inputs["go"][c] = int(x) - 1
        elif op == "speed":
            inputs["speed"][c] = x
        else:
            inst.step(2.9 if op == "long" else 1 / 60, {k: v.copy() for k, v in inputs.items()})
        seen += inst.events()
    inst.reset()
    seen += inst.events()
    assert paired(seen) <= {"", "reset", "teleport", "state_left", "aborted", "ended", "weight"}
