"""graphs/blend_space.json: walk, jog and run by speed in one blend space, its clips in one sync group.

Skate is measured by the toe-path rule alone (``animgraph.skate``) on the BVH ``animgraph run`` writes, the
same graph with sync off beside it; velocities against central differences of the whole graph.
"""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.skate import bvh_toes, toe_skate
from fdcheck import world_velocity_errors

DT = 1 / 60
ENTRIES = {"walk": 1.65, "jog": 2.66, "run": 3.94}  # the clips' mean root speeds (m/s, ``animgraph info``)


def unsynced(tmp_path):
    """The example with its blend space's sync turned off (``sync_group: null``), its samples still playing whole
    gait cycles (``cycles`` in the file), so only the sync differs."""
    data = json.loads(graphs.path("blend_space").read_text())
    assert all(node.get("cycles") for node in data["nodes"] if node["type"] == "sample")
    for node in data["nodes"]:
        if node["type"] == "blend_space_1d":
            node["sync_group"] = None
    path = tmp_path / "unsynced.json"
    path.write_text(json.dumps(data))
    return path


def skate(graph, speed, tmp_path):
    """Mean toe skate (mm per 60 Hz frame) of 10 s of the graph at ``speed``, from the BVH the CLI writes."""
    out = tmp_path / "run.bvh"
    subprocess.run([sys.executable, "-m", "animgraph", "run", str(graph), "--frames", "600", "--input",
                    f"speed={speed}", "--out", str(out)], check=True, capture_output=True)
    pos, dt = bvh_toes(out)
    return toe_skate(pos, dt)["mean_mm"]


@pytest.mark.slow(minutes=1)
def test_sync_keeps_the_feet_from_sliding_at_five_speeds(tmp_path):
    """At each entry's speed its clip alone; halfway between two entries the blend in step skates no more than twice
    the worse of the two alone, and out of step (the same clips, each its whole cycles, free-running) at least twice
    as much as in step: the left foot of one clip on the right foot of the other."""
    off = unsynced(tmp_path)
    alone = {name: skate(graphs.path("blend_space"), at, tmp_path) for name, at in ENTRIES.items()}
    pairs = [("walk", "jog"), ("jog", "run")]
    for a, b in pairs:
        middle = (ENTRIES[a] + ENTRIES[b]) / 2
        synced, free = skate(graphs.path("blend_space"), middle, tmp_path), skate(off, middle, tmp_path)
        assert synced <= 2 * max(alone[a], alone[b]), (a, b, synced, alone)
        assert free >= 2 * synced, (a, b, free, synced)


def test_the_graph_runs_across_its_range_with_the_group_in_step():
    plan = ag.compile(graphs.path("blend_space"), batch=1)
    inst = plan.instance()
    group = next(nid for nid in plan.order if plan.nodes[nid].type == "sync_group")
    assert [m.sample for m in plan.nodes[group].members] == list(ENTRIES)
    for f in range(600):
        speed = 1.65 + (3.94 - 1.65) * (0.5 - 0.5 * math.cos(f * 0.02))
        out = inst.step(DT, {"speed": speed})["out"]
        assert np.all(np.isfinite(out.pos)) and np.all(np.isfinite(out.vel))
    phase_at = plan.located[(group, "phase")]
    assert 0.0 <= inst.sig[0, phase_at] < 1.0 and inst.sig[0, phase_at + 1] > 0.5  # cycles/s: moving forward


def test_whole_graph_velocities_match_central_differences_while_speed_ramps():
    plan = ag.compile(graphs.path("blend_space"), batch=1)
    inst = plan.instance()
    parents = plan.skeleton.parents
    group = next(nid for nid in plan.order if plan.nodes[nid].type == "sync_group")
    members = [m.sample for m in plan.nodes[group].members]
    state, h = {"speed": 1.8, "dt": 0.0}, 1e-3

    def step(dt):
        state["speed"] = min(state["speed"] + 0.2 * dt, 3.9)  # a ramp at 0.2 m/s per s, with its rate
        state["dt"] = dt
        return inst.step(dt, {"speed": (state["speed"], 0.2)})["out"]

    def clean():
        """No clip key, plant marker, loop wrap or entry in the stencil's six steps (each a kink of some rate)."""
        nxt = state["speed"] + 0.2 * (state["dt"] + 6 * h)
        if any(state["speed"] < at <= nxt for at in ENTRIES.values()):
            return False
        for sid in members:
            at = plan.located[(group, f"{sid}_time")]
            t, rate = inst.sig[0, at], inst.sig[0, at + 1]
            lo = t + state["dt"] * rate
            hi = lo + 6 * h * rate
            key = plan.clips[plan.nodes[sid].clip].dt
            if math.floor(lo / key) != math.floor(hi / key):
                return False
        return True

    for f in range(20):
        step(DT)
    checked = 0
    while checked < 6 and state["speed"] < 3.8:
        if not clean():
            step(1.7e-3)
            continue
        err, err_ang = world_velocity_errors(step, parents, h)
        assert err.max() < 2e-3 and err_ang.max() < 2e-3, (state["speed"], err.max(), err_ang.max())
        checked += 1
        for f in range(25):
            step(DT)
    assert checked == 6


def test_lane_executor_equals_the_per_character_one():
    batch = 19
    lanes = ag.compile(graphs.path("blend_space"), batch=batch).instance(lanes=True)
    chars = ag.compile(graphs.path("blend_space"), batch=batch).instance(lanes=False, parallel=False)
    for f in range(200):
        speed = 2.8 + 1.1 * np.sin(0.03 * f + np.arange(batch))
        a, b = lanes.step(DT, {"speed": speed})["out"], chars.step(DT, {"speed": speed})["out"]
        for field in ("pos", "rot"):  # values to 1e-5, rates relative to their scale (tests/test_lane_executor.py)
            assert np.abs(getattr(a, field) - getattr(b, field)).max() <= 1e-5, (f, field)
        for field in ("vel", "ang"):
            x, y = getattr(a, field), getattr(b, field)
            assert (np.abs(x - y) / np.maximum(1.0, np.abs(y))).max() <= 1e-4, (f, field)
