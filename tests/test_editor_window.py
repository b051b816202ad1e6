"""The editor window under a (virtual) display: every shipped graph opens, plays and is screenshot.

Each window runs in a subprocess: without a display dearpygui aborts the whole process.
A screenshot is checked against the window's layout: the 3D viewport (right column)
must not be blank and must change between two frames of play.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from display import display  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = sorted((ROOT / "graphs").glob("*.json"))
WINDOW = (1000, 1800)  # rows, columns of a screenshot (editor.app.WINDOW)


def read_png(path):
    """(H, W, 3) uint8 pixels of a PNG."""
    from PIL import Image

    with Image.open(path) as img:
        return np.asarray(img.convert("RGB"))


def view_of(stdout):
    """(rows, columns) slices of the 3D view in the screenshot, from the line `--screenshot` prints."""
    m = re.search(r"3D view at x=(\d+) y=(\d+) size (\d+)x(\d+)", stdout)
    assert m, stdout
    x, y, w, h = map(int, m.groups())
    return slice(y, y + h), slice(x, x + w)


def edit(display, *args, timeout=900):
    env = dict(os.environ, DISPLAY=display)
    return subprocess.run([sys.executable, "-m", "animgraph", "edit", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("graph", GRAPHS, ids=lambda p: p.stem)
def test_every_shipped_graph_opens_and_its_skeleton_moves(graph, display, tmp_path):
    # The command's screenshot (``launch.screenshot_window``) at frames 2 and 40 of one window's play: one process
    # a graph (the command itself: the next test).
    env = dict(os.environ, DISPLAY=display)
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "editor_driver.py"), "shots", str(graph), str(tmp_path),
                          "2", "40"], capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    said = [line for line in run.stdout.splitlines() if "3D view at" in line]
    assert len(said) == 2 and "at frame 2;" in said[0] and "at frame 40;" in said[1], run.stdout
    shots = []
    for frames, line in zip((2, 40), said):
        img = read_png(tmp_path / f"{frames}.png")
        assert img.shape[:2] == WINDOW, img.shape
        assert img.std() > 10, "blank screenshot"
        shots.append(img[view_of(line)])
    a, b = shots
    assert a.std() > 5 and b.std() > 5, "blank viewport"
    changed = np.any(a != b, axis=2).mean()
    assert changed > 0.002, f"the viewport did not change between frames 2 and 40 ({changed:.4%} of pixels)"


def test_the_screenshot_command_writes_the_window_at_its_frame(display, tmp_path):
    out = tmp_path / "shot.png"
    run = edit(display, ROOT / "graphs" / "locomotion.json", "--screenshot", out, "--frames", 40)
    assert run.returncode == 0, run.stderr
    assert f"wrote {out} at frame 40;" in run.stdout, run.stdout
    img = read_png(out)
    assert img.shape[:2] == WINDOW and img.std() > 10, img.shape
    assert img[view_of(run.stdout)].std() > 5, "blank viewport"


def drive(display, mode, *args):
    """Run tests/editor_driver.py in ``mode``; its last stdout line as JSON."""
    env = dict(os.environ, DISPLAY=display)
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "editor_driver.py"), mode, *map(str, args)],
                         capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_links_made_and_broken_through_the_editor_callbacks(display, tmp_path):
    result = drive(display, "links", ROOT / "graphs" / "select_inertialize.json", tmp_path)
    assert result["links_drawn"] == result["links"] > 0
    assert result["after_delink"] is False and result["problem_after_delink"] and result["shown_on_node"]
    assert result["after_link"] is True and result["problems_after_link"] == []
    assert "refused" in result["refused"] and "mismatch" in result["refused"] and result["refused_unchanged"]
    assert result["asked"] and result["still_open"]
    assert result["undo"] and result["undo_back"]
    assert result["frame"] >= 45 and result["pops"] == []
    a, b = read_png(tmp_path / "a.png"), read_png(tmp_path / "b.png")
    assert a.std() > 10 and np.any(a != b)


def test_a_bad_graph_with_screenshot_is_one_line_and_exit_2(display, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "animgraph.graph", "version": 99, "nodes": []}')
    before = bad.read_bytes()
    run = edit(display, bad, "--screenshot", tmp_path / "x.png", "--frames", 1, timeout=120)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "newer" in run.stderr and str(bad) in run.stderr
    assert bad.read_bytes() == before and not (tmp_path / "x.png").exists()


def test_missing_editor_extra_is_one_line(tmp_path):
    """Without dearpygui importable, `animgraph edit` says how to install it and exits 2."""
    blocker = tmp_path / "dearpygui"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('blocked for the test')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    run = subprocess.run([sys.executable, "-m", "animgraph", "edit"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip() == "animgraph: the editor needs dearpygui: pip install 'animgraph[editor]'"


def test_the_pop_finder_marks_the_node_that_pops(display, tmp_path):
    """select_inertialize.json without its inertializer: switching clips pops, and the select is named."""
    data = json.loads((ROOT / "graphs" / "select_inertialize.json").read_text())
    data["nodes"] = [n for n in data["nodes"] if n["type"] != "inertialize"]
    smooth = next(n["id"] for n in json.loads((ROOT / "graphs" / "select_inertialize.json").read_text())["nodes"]
                  if n["type"] == "inertialize")
    links = []
    for src, dst in data["links"]:
        if dst.startswith(smooth + "."):
            continue
        if src.startswith(smooth + "."):
            src = {"pose": "pick.pose", "motion": "pick_motion.value"}[src.split(".")[1]]
        links.append([src, dst])
    data["links"] = links
    graph = tmp_path / "pops.json"
    graph.write_text(json.dumps(data))
    result = drive(display, "pops", graph)
    assert [node for _, node in result["pops"]] == ["pick"], result
    assert result["pops"][0][0] == result["switched"] and "pick" in result["marked"] and "pick" in result["timeline"]


_TIMELINE = {}


def timeline_run(display):
    """The driver's ``timeline`` scenario (play, scrub, then zoom), run once per process for the tests reading it."""
    if display not in _TIMELINE:
        _TIMELINE[display] = drive(display, "timeline")
    return _TIMELINE[display]


def test_the_timeline_scrubs_backwards_and_forwards_over_the_recording(display):
    result = timeline_run(display)
    assert result["paused"] and result["frame"] == 90 and result["range"] == [0, 90]
    for seek in result["seeks"]:  # each drag lands on its frame, shows that frame's pose, keeps the range
        assert seek["frame"] == seek["slider"] == seek["target"] and seek["same_pose"], seek
        assert seek["range"] == [0, 90], seek


def test_the_wheel_rolled_forward_zooms_in(display):
    d = timeline_run(display)["distance"]
    assert d[2] < d[1] < d[0] and d[3] == pytest.approx(d[0])


def clamped_graph(path):
    """walk played once (``loop: false``) at the rate of a graph input ``speed``."""
    path.write_text(json.dumps({
        "format": "animgraph.graph", "version": 2, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "speed", "type": "input", "signal": "scalar", "default": 1.0, "min": 0.0, "max": 3.0},
                  {"id": "walk", "type": "sample", "clip": "walk", "loop": False},
                  {"id": "out", "type": "output"}],
        "links": [["speed.value", "walk.rate"], ["walk.pose", "out.pose"]]}))
    return path


def restarts(run):
    """The frames after which the preview went back to frame 0."""
    return [a for a, b in zip(run, run[1:]) if b < a]


def test_loop_preview_restarts_after_a_clamped_clip_ends_keeping_the_inputs(display, tmp_path):
    result = drive(display, "looping", clamped_graph(tmp_path / "once.json"), 2.5)
    # speed 2: the clip's end is reached after clip_s / 2 s of play, then again after each restart.
    end = result["clip_s"] / 2.0 / result["dt"]
    back = restarts(result["loop_on"])
    assert len(back) >= 3 and all(abs(f - end) <= 2 for f in back), (back, end)
    assert result["inputs"] == {"speed": 2.0}
    assert restarts(result["loop_off"]) == [] and result["loop_off"][-1] > 2 * end  # unticked: it holds the end


def test_the_new_graph_walks_on_for_three_loops_without_a_restart_or_a_pop(display):
    result = drive(display, "looping", "new", 3)
    run = result["loop_on"]
    assert restarts(run) == [] and run[-1] >= 3 * result["clip_s"] / result["dt"] - 1
    assert result["pops"] == []


def test_discard_deletes_the_autosave_for_good(display, tmp_path):
    result = drive(display, "files", tmp_path, "discard")
    assert result["autosaved"] and result["asked"]
    assert not result["autosave_after_discard"] and not result["offered_after_discard"]


def test_a_read_only_graph_is_never_written_save_offers_save_as(display, tmp_path):
    result = drive(display, "files", tmp_path, "read_only")
    status = result["ro_status"]
    assert "read-only" in status and "ro.json" in status and "\n" not in status
    assert result["ro_save_as_offered"] and result["ro_bytes_same"] and result["ro_mode"] == "0o444"
    assert result["ro_dirty"]
    assert result["saved_as"] == [str(tmp_path / "as.json"), False, True]


def test_ctrl_n_o_s_and_shift_s(display, tmp_path):
    result = drive(display, "files", tmp_path, "shortcuts")
    # Ctrl+S saves (the file keeps its mode), Ctrl+Shift+S and Ctrl+O open their dialogs, Ctrl+N starts anew.
    assert result["ctrl_s"] == [False, 1.5, "0o640"]
    assert result["ctrl_shift_s"] and result["ctrl_o"] and result["ctrl_n"] == [True, True]
    assert result["opened"] == str(tmp_path / "w.json")


def _first_run(display, cache):
    env = {k: v for k, v in os.environ.items() if k != "ANIMGRAPH_EXECUTOR"}  # as a user runs it
    env |= {"DISPLAY": display, "ANIMGRAPH_CACHE": str(cache)}
    launched = time.time()
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "editor_driver.py"), "first_run", str(launched)],
                         capture_output=True, text=True, timeout=3000, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _timings(result):
    """Seconds from launch to the first frame and to the preview playing, the largest gap between frames, and the
    largest gap before a frame drawn in each state (the kernels' state, and 'playing')."""
    drawn = result["drawn"]
    playing = next(f[0] for f in drawn if f[2])
    gaps = {}
    for a, b in zip(drawn, drawn[1:]):
        state = "playing" if b[2] else b[1]
        gaps[state] = round(max(gaps.get(state, 0.0), b[0] - a[0]), 3)
    return {"first_frame": round(drawn[0][0], 2), "playing": round(playing, 2),
            "largest_gap": max(gaps.values()), "gaps": gaps}


@pytest.mark.slow(minutes=4.5)  # a cold compile in the editor's child
def test_first_run_compiles_in_the_child_only_and_the_window_keeps_drawing(display, tmp_path):
    """An empty cache and the real compile: the window's process compiles nothing and draws while the child
    compiles and while it loads the cached code.  The timings are printed, never asserted."""
    cold = _first_run(display, tmp_path / "cache")
    assert cold["child"] and cold["compiled"] == [], cold["compiled"]
    states = [f[1] for f in cold["drawn"]]
    assert states[0] == "checking" and "compiling" in states
    assert any(line.startswith("animgraph editor: kernels ready") for line in cold["said"]), cold["said"]
    # Frames drawn after the child finished and before the preview played (the cached code loading meanwhile).
    done = states.index("compiling") + states[states.index("compiling"):].index("loading")
    playing = next(i for i, f in enumerate(cold["drawn"]) if f[2])
    assert playing - done >= 1
    warm = _first_run(display, tmp_path / "cache")
    assert not warm["child"] and warm["compiled"] == [], warm["compiled"]
    print(f"\nfirst run, cold: {_timings(cold)}; warm: {_timings(warm)}")
