"""``animgraph demo``: the stick script steering the motion-matching locomotion graph.

What the demo prints is pinned here against independent measures: the character's facing
against the stick's direction; the displacement's clamp; the toe paths of the BVH the demo
writes (``animgraph.skate``, which sees only positions); the pop finder (every node's output
against its own velocities) over the whole run.
"""

from __future__ import annotations

import numpy as np
import pytest

import animgraph as ag
from animgraph import demo, graphs
from animgraph.pops import PopFinder
from animgraph.skate import bvh_toes, contact_pairs, toe_skate

FRAMES = int(round(demo.DURATION / demo.DT))


@pytest.fixture(scope="module")
def runs():
    graph = ag.Graph.load(graphs.path("locomotion"))
    clamped = demo.simulate(graph, FRAMES)
    free = demo.simulate(graph, FRAMES, clamp=False)
    return clamped, demo.analyse(clamped), free, demo.analyse(free)


def test_the_script_asks_for_what_the_database_holds():
    assert demo.stick(0.5)[0].tolist() == [0.0, 0.0, 0.0]
    assert demo.stick(3.0)[0].tolist() == [0.0, 0.0, 0.4]
    assert demo.stick_direction(6.0) == pytest.approx(np.pi / 2)  # stick left: +X, a left turn
    value, rate = demo.stick(4.5 + demo.RAMP / 2)
    h = 1e-6
    fd = (demo.stick(4.5 + demo.RAMP / 2 + h)[0] - demo.stick(4.5 + demo.RAMP / 2 - h)[0]) / (2 * h)
    np.testing.assert_allclose(rate, fd, atol=1e-6)


def test_turns_end_within_ten_degrees_of_the_stick(runs):
    _, a, _, _ = runs
    assert [what for what, _ in a["turns"]] == ["turn 90 deg left", "turn back right"]
    for what, err in a["turns"]:
        assert err < demo.TURN_TOLERANCE, (what, err)


def test_the_clamp_holds_and_without_it_the_character_strays_further(runs):
    _, a, _, b = runs
    assert a["deviation_max"] <= 0.5 + 1e-6
    assert b["deviation_max"] > a["deviation_max"] - 1e-9


def test_it_matches_searches_and_travels(runs):
    rec, a, _, _ = runs
    assert a["searches"] > FRAMES * demo.DT / 0.1 * 0.9  # every 0.1 s at least
    assert 10 < a["transitions"] < a["searches"]
    assert 20.0 < a["distance"] < 35.0
    hips = a["out"]["world"][:, 0]
    assert np.linalg.norm(hips[-1, [0, 2]] - rec["simulation"][-1, [0, 2]]) < 0.5


def test_the_foot_locks_hold_the_toes_in_the_databases_contacts(runs):
    """Where the database says a foot is down, the locked toe moves under 3.5 mm a frame on average."""
    rec, a, _, _ = runs
    for i, side in enumerate(demo.FEET):
        toe = rec["skeleton"].index(f"{side}_toe")
        down = (rec["contact"][1:, i] > 0.5) & (rec["contact"][:-1, i] > 0.5)
        travel = {name: np.linalg.norm(np.diff(a[name]["world"][:, toe, [0, 2]], axis=0), axis=1)[down] * 1e3
                  for name in ("out", "unlocked")}
        assert down.sum() > 200
        assert travel["out"].mean() < 3.5, (side, travel["out"].mean())
        assert travel["out"].mean() < 0.6 * travel["unlocked"].mean(), side


def test_no_node_pops_over_the_whole_script():
    plan = ag.compile(graphs.path("locomotion"), reuse_slots=False)
    inst, finder = plan.instance(), PopFinder(plan)
    pops = []
    for f in range(FRAMES):
        inst.step(demo.DT, {"stick": demo.stick(f * demo.DT)})
        pop = finder.observe(inst, f, demo.DT)
        pops += [pop] if pop else []
    assert pops == [], pops[:3]


def test_main_prints_and_writes_a_bvh_whose_toes_give_the_printed_skate(tmp_path, capsys):
    assert demo.main(tmp_path, FRAMES) == 0
    text = capsys.readouterr().out
    for words in ("searches", "transitions", "foot skate", "with the clamp off", "turn 90 deg left ends"):
        assert words in text
    toes, dt = bvh_toes(tmp_path / "demo.bvh")
    assert dt == pytest.approx(demo.DT)
    skate = [toe_skate(toes[:, k], dt)["mean_mm"] for k in range(2)]
    printed = text.split("without -> with foot lock: ")[1].split(";")[0]
    for k, side in enumerate(demo.FEET):
        locked = float(printed.split(f"{side} ")[1].split(" -> ")[1].split(",")[0])
        assert locked == pytest.approx(skate[k], abs=0.06)
    assert contact_pairs(toes[:, 0, 1]).sum() > 100
    assert (tmp_path / "demo.svg").read_text().startswith("<svg")
