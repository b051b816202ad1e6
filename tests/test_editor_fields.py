"""The details panel under a (virtual) display: every node type's every field edits through its widget;
an exception in a callback or a frame never closes the window; bad values are refused.

Each window runs tests/editor_fields_driver.py in a subprocess (dearpygui aborts without a display),
with the cache and config directories in the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from display import display  # noqa: F401 (fixture)

from animgraph.cache import cache_dir
from animgraph.node import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
# Every node type is added to a new graph (checked thoroughly) and to these: the largest graph of clip assets
# and the one of a motion-matching database.  The other shipped graphs hold only the same bundled clips, so
# their widgets offer the same choices (each opens and plays in test_editor_window).
FIELD_GRAPHS = [ROOT / "graphs" / "gaits.json", ROOT / "graphs" / "locomotion.json"]


def drive(display, tmp_path, mode, *args):
    """Run the driver in ``mode``; its last stdout line as JSON (no user cache or config dir is written)."""
    # The suite's compiled-code cache is shared (nothing but compiled code is written there); config and
    # autosaves go to tmp_path.
    env = dict(os.environ, DISPLAY=display, ANIMGRAPH_CACHE=str(cache_dir()),
               ANIMGRAPH_CONFIG=str(tmp_path / "config"), ANIMGRAPH_AUTOSAVE=str(tmp_path / "autosave"))
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "editor_fields_driver.py"), mode, *map(str, args)],
                         capture_output=True, text=True, timeout=1800, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1]), run.stderr


@pytest.mark.slow(minutes=1)  # ~600 edits, each validated and planned: minutes on a loaded 2-core machine
def test_every_node_type_every_field_edits_through_its_widget(display, tmp_path):
    result, stderr = drive(display, tmp_path, "fields", *FIELD_GRAPHS)
    assert result["graphs"] == ["new"] + [g.stem for g in FIELD_GRAPHS]
    assert result["types"] == sorted(t for t, cls in REGISTRY.items() if not cls.PLANNED)
    assert result["failures"] == [], "\n".join(result["failures"])
    assert result["unset"] == {}, result["unset"]  # every field took another valid value through its widget
    assert result["refused"] > 0 and result["alive"]
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr[-3000:]


def test_an_exception_in_a_callback_or_a_frame_keeps_the_window(display, tmp_path):
    graph = tmp_path / "blend.json"
    graph.write_text((ROOT / "graphs" / "blend.json").read_text())
    result, stderr = drive(display, tmp_path, "boundary", graph)
    assert result["edited"] and result["dirty"]
    assert result["alive"] and result["alive_after"] and result["edit_after"]
    # The autosave holds the unsaved edit made before the failure, beside the graph (in tmp_path).
    assert Path(result["autosave"]).parent == tmp_path and result["autosave_value"] == result["value"]
    status = result["status"]
    assert status.startswith("internal error: RuntimeError: injected failure") and "\n" not in status
    assert "autosaved" in status and result["dialog"]
    assert "Traceback" in result["clipboard"] and "injected failure" in result["clipboard"]
    assert result["frame_status"].startswith("internal error: RuntimeError: injected failure")
    assert stderr.count("RuntimeError: injected failure") == 2  # each failure's traceback on stderr too


def test_bad_values_are_refused_and_the_document_is_unchanged(display, tmp_path):
    graph = tmp_path / "blend.json"
    graph.write_text((ROOT / "graphs" / "blend.json").read_text())
    broken = tmp_path / "broken.bvh"
    broken.write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 6 Xposition\n")
    result, _ = drive(display, tmp_path, "bad_values", graph, broken)
    assert result["unchanged"] and result["widget"] == result["value"]  # refused, and the widget reverted
    status = result["status"]
    assert f"{result['high']:g}" in status and f"{result['low']:g}" in status and result["field"] in status
    assert result["bvh_unchanged"] and "broken.bvh" in result["bvh_status"] and "\n" not in result["bvh_status"]
    assert "not added" in result["bvh_status"]
    assert result["good_bvh_added"] and result["alive"]
