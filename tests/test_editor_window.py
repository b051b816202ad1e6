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
    shots = []
    for frames in (2, 40):
        out = tmp_path / f"{graph.stem}_{frames}.png"
        run = edit(display, graph, "--screenshot", out, "--frames", frames)
        assert run.returncode == 0, run.stderr
        img = read_png(out)
        assert img.shape[:2] == WINDOW, img.shape
        assert img.std() > 10, "blank screenshot"
        shots.append(img[view_of(run.stdout)])
    a, b = shots
    assert a.std() > 5 and b.std() > 5, "blank viewport"
    changed = np.any(a != b, axis=2).mean()
    assert changed > 0.002, f"the viewport did not change between frames 2 and 40 ({changed:.4%} of pixels)"


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


def test_compiling_in_a_child_process_never_freezes_the_window(display):
    result = drive(display, "compiling", ROOT / "graphs" / "blend.json")
    assert result["drawn"] > 20, result  # 3 s of a child 'compile' while the window kept drawing
    assert any("compiling kernels (first run only" in s for s in result["said"])
    assert result["kernels"] == "ready" and result["player"] and result["added"]
