"""Every script in examples/ runs and prints what it says (in-process, in a temporary directory)."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))
SAYS = {
    "clip_velocities.py": ["propagated", "central difference", "head angular velocity"],
    "build_graph.py": ["head speed", "saved walk_to_jog.json"],
    "batch_run.py": ["100 characters", "now playing run", "ns each"],
    "export_gltf.py": ["wrote blend.glb: 31 joints, 61 cubic keys", "read back"],
    "states.py": ["-> walking", "-> running", "-> turning", "-> jog_turn_right", "-> idle", "wave fired again",
                  "wave blended out", "ended in idle"],
}


def test_every_example_is_listed():
    assert {p.name for p in EXAMPLES} == set(SAYS)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    for words in SAYS[path.name]:
        assert words in out, (path.name, words)
    if path.name == "build_graph.py":
        import animgraph as ag

        assert len(ag.Graph.load(tmp_path / "walk_to_jog.json").nodes) == 6
