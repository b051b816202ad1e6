"""Graph assets given as paths: version 2 reads them as `animgraph info` does, version 1 raw as before."""

import json

import numpy as np
import pytest

import animgraph as ag
from animgraph import graph as graph_mod
from animgraph.data import CMU_SCALE

POSE_TOL = 1e-6  # m


def _graph(tmp_path, assets, version=2, time=0.5):
    data = {
        "format": "animgraph.graph", "version": version, "assets": assets,
        "nodes": [{"id": "play", "type": "sample", "clip": "jog", "mode": "cubic", "loop": True},
                  {"id": "out", "type": "output"}],
        "links": [["play.pose", "out.pose"]],
    }
    path = tmp_path / f"g{version}.json"
    path.write_text(json.dumps(data))
    return ag.Graph.load(path)


def _play(graph, frames=5):
    inst = ag.compile(graph).instance()
    return np.array([inst.step(1 / 60)["out"].pos for _ in range(frames)])


def test_version_2_path_to_a_bundled_file_plays_like_the_bundled_name(tmp_path):
    path = str(ag.data.path("jog"))
    by_path = _play(_graph(tmp_path, {"jog": path}))
    by_name = _play(_graph(tmp_path, {"jog": "animgraph:jog"}))
    assert np.abs(by_path - by_name).max() <= POSE_TOL
    assert 0.5 < np.abs(by_name[..., 1]).max() < 2.0  # metres, not CMU units
    # The planned clip is the bundled one: metres, T-pose dropped, canonical names.
    plan = ag.compile(_graph(tmp_path, {"jog": {"path": path}}))
    _, jog = ag.data.load("jog")
    assert plan.clips["jog"].frames == jog.frames
    assert plan.skeleton.index("left_foot") == 4


def test_version_1_path_still_loads_raw(tmp_path):
    path = str(ag.data.path("jog"))
    plan = ag.compile(_graph(tmp_path, {"jog": path}, version=1))
    skel, raw = ag.load_bvh(path)
    assert plan.clips["jog"].frames == raw.frames  # T-pose kept
    np.testing.assert_array_equal(plan.db[0][: raw.frames], raw.pos)  # file units
    assert plan.skeleton.aliases == {}
    scaled = ag.compile(_graph(tmp_path, {"jog": {"path": path, "scale": CMU_SCALE}}, version=1))
    np.testing.assert_allclose(scaled.db[0][: raw.frames], raw.pos * CMU_SCALE, rtol=1e-6, atol=1e-7)


def test_version_2_options_override_the_data(tmp_path):
    path = str(ag.data.path("jog"))
    _, raw = ag.load_bvh(path, scale=0.5)
    plan = ag.compile(_graph(tmp_path, {"jog": {"path": path, "units": 0.5, "first_frame": "keep", "names": "none"}}))
    np.testing.assert_array_equal(plan.db[0][: raw.frames], raw.pos)
    assert plan.skeleton.aliases == {}
    bundled = ag.compile(_graph(tmp_path, {"jog": {"path": "animgraph:jog", "first_frame": "keep"}}))
    assert bundled.clips["jog"].frames == raw.frames


def test_asset_options_of_the_other_version_are_refused(tmp_path):
    path = str(ag.data.path("jog"))
    with pytest.raises(ag.GraphError, match="'first_frame' needs version 2"):
        _graph(tmp_path, {"jog": {"path": path, "first_frame": "drop"}}, version=1)
    with pytest.raises(ag.GraphError, match="'scale' is version 1's"):
        _graph(tmp_path, {"jog": {"path": path, "scale": 2.0}}, version=2)
    with pytest.raises(ag.GraphError, match="asset 'jog'"):
        _graph(tmp_path, {"jog": {"path": path, "units": -1}}, version=2)


def test_a_one_frame_asset_asked_to_drop_its_tpose_names_the_line(tmp_path):
    text = ag.data.path("jog").read_bytes().decode()
    head, motion = text.split("MOTION")
    (tmp_path / "tpose.bvh").write_text(head + "MOTION\nFrames: 1\n" + "\n".join(motion.strip().splitlines()[1:3]) + "\n")
    g = _graph(tmp_path, {"jog": {"path": "tpose.bvh", "first_frame": "drop"}})
    with pytest.raises(ag.GraphError) as err:
        ag.compile(g)
    assert f"tpose.bvh:{head.count(chr(10)) + 2}: dropping frame 0" in str(err.value)
    assert (err.value.node, err.value.port) == ("play", "clip")


def test_versions_round_trip_as_loaded(tmp_path):
    v1 = _graph(tmp_path, {"jog": {"path": "x.bvh", "scale": 0.01}}, version=1)
    assert json.loads(v1.to_json())["version"] == 1
    v2 = _graph(tmp_path, {"jog": {"path": "x.bvh", "units": 0.01, "names": "cmu"}})
    saved = json.loads(v2.to_json())
    assert saved["version"] == 2 and graph_mod.VERSION == 4  # saved as loaded, not as the newest
    assert saved["assets"] == {"jog": {"path": "x.bvh", "units": 0.01, "names": "cmu"}}
    for version in (1, 2, 3):
        assert ag.Graph.from_dict({"format": "animgraph.graph", "version": version}).to_dict()["version"] == version
    v3 = _graph(tmp_path, {"jog": "animgraph:jog", "db": {"database": ["animgraph:jog"], "mirror": False}}, version=3)
    assert json.loads(v3.to_json())["assets"]["db"] == {"database": ["animgraph:jog"], "mirror": False}
    with pytest.raises(ag.GraphError, match="'database' asset needs version 3"):
        _graph(tmp_path, {"jog": "animgraph:jog", "db": {"database": "x.npz"}}, version=2)
    schema = ag.Graph.json_schema()
    props = schema["$defs"]["AssetSpec"]["properties"]
    assert {"units", "first_frame", "names", "scale"} <= set(props)
    assert all(props[k]["description"] for k in ("units", "first_frame", "names"))


@pytest.mark.parametrize("version", [1, 2])
def test_an_asset_file_is_read_again_only_when_it_changes(tmp_path, monkeypatch, version):
    # The editor plans on every edit: the same file version (path, mtime, size, options) is not read twice.
    import shutil

    from animgraph import assets, bvh, clipfile

    reads = []
    for module, name in ((bvh, "load_bvh"), (clipfile, "read_clip")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, **k: reads.append(a[0]) or _real(*a, **k))
    file = tmp_path / "jog.bvh"
    shutil.copy(ag.data.path("jog"), file)
    graph = _graph(tmp_path, {"jog": str(file)}, version=version)
    first = assets.load_assets(graph)[1]["jog"]
    again = assets.load_assets(graph)[1]["jog"]
    assert len(reads) == 1 and again is first
    # Another version of the file (its size changes): read again, and what it holds is what is planned.
    text = file.read_text()
    file.write_text(text.replace("MOTION", "MOTION", 1) + "\n")
    changed = assets.load_assets(graph)[1]["jog"]
    assert len(reads) == 2 and changed is not first
    assert np.array_equal(changed.pos, first.pos)
