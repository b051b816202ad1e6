"""State machines and blend spaces opened in the editor window under Xvfb, through the window's callbacks
(tests/editor_inner_driver.py): a machine built from nothing, saved, validated and run; played with the active state
read from the window; a blend space's entry dragged and undone; the preview's buttons; the graph canvas's live marks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from display import display, driver_result  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
def drive(display, mode, *args):
    """The driver's JSON result for ``mode`` (each run once per session)."""
    return driver_result("editor_inner_driver.py", display, mode, *args, timeout=900)


@pytest.fixture(scope="module")
def built(display, tmp_path_factory):
    out = tmp_path_factory.mktemp("machine")
    return drive(display, "build", out), out


def test_a_double_click_opens_the_machine_with_a_breadcrumb_back(built):
    r, _ = built
    is_inner, crumb, graph_hidden, here, states = r["opened"]
    assert is_inner and crumb and graph_hidden and "state_machine" in here
    assert states == ["a", "any", "b", "c"]  # the example's states, and 'any' for its from-any transition
    assert r["back"] == [True, True, True]


def test_states_are_deleted_added_and_renamed_and_the_outer_pins_follow(built):
    r, _ = built
    assert r["delete_steps"] == 1  # Del of two states: one undo step
    assert r["emptied"] == [["a", "any"], 0, ["a"]]
    assert r["states"] == ["any", "idle", "run", "walk"]
    assert r["titles"]["idle"] == "idle : start state" and r["titles"]["walk"] == "walk : state"
    assert r["pose_pins"] == ["idle", "walk", "run"]
    # The rename of the new state undone (it is 'state1' again), then redone.
    assert r["undo_redo"] == [["any", "idle", "state1"], ["any", "idle", "walk"]]


def test_transitions_drawn_as_links_are_picked_by_a_click_and_set_in_the_details_panel(built):
    r, _ = built
    assert r["picked"] == [["transition", 0], ["transition", 1], ["transition", 2]]
    assert r["links_drawn"] == [["any.out", "idle.in"], ["idle.out", "walk.in"], ["walk.out", "run.in"]]
    assert r["transitions"] == [
        {"from": "idle", "to": "walk", "when": "speed", "above": 0.5, "duration": 0.3},
        {"from": "walk", "to": "run", "when": "speed", "above": 2.0, "blend": "crossfade"},
        {"from": "any", "to": "idle", "when": "speed", "below": 0.2, "priority": -1}]
    assert r["tip"] == [True, "walk -> run: when speed > 2; 0.25 s crossfade, priority 0"]


def test_the_built_machine_saves_validates_and_runs(built, tmp_path):
    r, out = built
    path = out / "machine.json"
    assert r["problems"] == [] and r["saved"] == [str(path), False]
    saved = json.loads(path.read_text())
    machine = next(n for n in saved["nodes"] if n["type"] == "state_machine")
    assert [s["name"] for s in machine["states"]] == ["idle", "walk", "run"] and machine["start"] == "idle"
    assert ["input.value", "state_machine.speed"] in saved["links"]
    assert set(saved["editor"]["states"]["state_machine"]) >= {"idle", "walk", "run"}
    for args in (["validate", path], ["run", path, "--frames", 90, "--input", "input=3.0", "--out",
                                      tmp_path / "run.npz"]):
        done = subprocess.run([sys.executable, "-m", "animgraph", *map(str, args)], capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "run.npz").exists()


def test_playing_the_highlighted_state_follows_the_input_and_the_transition_shows_its_progress(display, tmp_path):
    # graphs/states.json with its machine open, paused and stepped: speed 0 -> 1.2 crosses idle -> walking (above
    # 0.3, inertialized over 0.4 s).  The state is read from the title colour the window draws.
    r = drive(display, "live", ROOT / "graphs" / "states.json", tmp_path)
    assert r["opened"] and r["before"] == "idle"
    states = [s for _, s, _ in r["seen"]]
    assert states[-1] == "walking" and "idle" not in states[states.index("walking"):]
    running = [t for _, _, t in r["seen"] if t]
    assert running and all(t[:2] == ["idle", "walking"] for t in running)
    progress = [t[2] for t in running]
    assert progress == sorted(progress) and progress[0] < 0.1 and progress[-1] > 0.9
    assert r["seen"][-1][2] is None  # over: no transition drawn
    assert (tmp_path / "machine_live.png").exists()
    # Every transition of the file's machine drawn with its condition over its link (two share "turn > 0.5").
    assert r["labels"] == ["jog_left_left_s < 0.3", "jog_right_left_s < 0.3", "speed < 0.1", "speed < 2",
                           "speed > 0.3", "speed > 2.5", "turn < -0.5", "turn > 0.5", "turn > 0.5",
                           "turn_left_s < 0.4"]
    px, py, x, y, h = r["walking_in"]  # the arrowhead's point: walking's 'in' pin, on its left edge
    assert x - 12 < px < x and y < py < y + h


def test_a_blend_space_opens_shows_its_live_weights_and_an_entry_dragged_is_undone(display, tmp_path):
    r = drive(display, "space", ROOT / "graphs" / "blend_space.json", tmp_path)
    assert r["opened"] == [True, "> gait (blend space)", True]
    # The speed input moved through walk (1.65), jog (2.66), run (3.94): the point and weights as drawn.
    points = [p for p, _ in r["live"]]
    assert points == pytest.approx([1.65, 2.2, 2.66, 3.3, 3.94])
    weights = [w for _, w in r["live"]]
    assert weights[0]["walk"] == pytest.approx(1.0) and weights[2]["jog"] == pytest.approx(1.0)
    assert weights[4]["run"] == pytest.approx(1.0) and 0.0 < weights[1]["jog"] < 1.0
    low, high, back = r["plot_heights"]
    assert high > low + 300 and back == low  # maximized (Ctrl+Space) and back
    # A real drag of the jog entry to 3.0: one undo step; Ctrl+Z puts it back.
    assert r["grabbed"] == "jog" and r["drag_steps"] == 1
    assert r["moved"][0] == 1.65 and r["moved"][1] == pytest.approx(3.0, abs=0.02) and r["moved"][2] == 3.94
    assert r["undone"]
    # The same in a 2-D space: forward dragged to about [0.5, 1.5], undone.
    assert r["opened_2d"] and r["drag_steps_2d"] == 1 and r["undone_2d"]
    assert r["moved_2d"][1] == pytest.approx([0.5, 1.5], abs=0.02)
    assert r["closed_by_undo"] == [True, True, False]  # undoing the node's addition closes its view, no error


def test_preview_buttons_fire_a_one_shot_and_travel_a_machine(display, tmp_path):
    # graphs/states.json plus an int input 'go' linked to loco.travel; paused and stepped.
    r = drive(display, "actions", ROOT / "graphs" / "states.json", tmp_path)
    assert "wave_shot|fire" in r["buttons"] and "loco|travel:running" in r["buttons"]
    assert r["fire_enabled"] and not r["abort_enabled"]  # abort: no graph input feeds it
    assert r["before"] == 0.0
    active = [a for a, _, _ in r["fire"]]
    assert active[0] == 1.0 and all(a == 1.0 for a in active[:20])  # the wave plays
    assert not any(held for _, _, held in r["fire"])  # the fire input pulsed: back to false after one step
    travel = r["travel"]
    assert "running" in travel and travel.index("running") > travel.index("walking")  # idle -> walking -> running


def test_the_graph_canvas_while_playing_dims_skipped_nodes_weights_links_ticks_events_and_tips_links(display,
                                                                                                      tmp_path):
    # graphs/states.json walking (speed 1.2 for 60 frames): read from the items' themes and the widgets.
    r = drive(display, "marks", ROOT / "graphs" / "states.json", tmp_path)
    dimmed = set(r["dimmed"])
    assert {"run", "run_left_lock", "run_right_lock", "walk_turn", "jog_left", "jog_right", "wave_clip"} <= dimmed
    assert not dimmed & {"walk", "walk_left_lock", "walk_right_lock", "loco", "out", "speed"}
    assert r["link_weights"]["loco.walking"] == 4 and r["link_weights"]["loco.running"] == 0  # 4: full weight
    assert r["event_ticks"] >= 2 and "walk." in r["event_list"] and "plant" in r["event_list"]
    tips = {tuple(link): (shown, text) for link, shown, text in r["hovered"]}
    assert tips, "no link's middle was clear of the nodes"
    for (src, dst), (shown, text) in tips.items():
        assert shown and text.startswith(f"{src} -> {dst}\n"), text
    if ("speed.value", "loco.speed") in tips:
        assert "scalar: 1.2" in tips[("speed.value", "loco.speed")][1]
    assert any("pose: root speed" in text for _, text in tips.values())
    assert not r["tip_after"]  # the mouse off the links: no tip
