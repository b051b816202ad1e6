"""The editor's autosaves and recent-files list, in temporary directories (never the real home)."""

import json
import os
from pathlib import Path

import pytest

import animgraph.graphs as shipped
from animgraph.editor import files
from animgraph.editor.document import Document


@pytest.fixture(autouse=True)
def dirs(tmp_path, monkeypatch):
    """Cache and config directories in tmp_path; HOME too, so nothing can reach the real one."""
    for var in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "ANIMGRAPH_AUTOSAVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANIMGRAPH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ANIMGRAPH_CONFIG", str(tmp_path / "config"))
    (tmp_path / "work").mkdir()
    return tmp_path


def edited(path):
    """A document saved at ``path``, then changed."""
    doc = Document.new()
    doc.save(path)
    doc.move("walk", (99, 99))
    return doc


def older(path, than):
    """Make ``path`` older than ``than`` (no sleeping, no clock)."""
    t = than.stat().st_mtime_ns
    os.utime(path, ns=(t - 10**9, t - 10**9))


def test_autosave_beside_the_graph(dirs):
    path = dirs / "work" / "g.json"
    doc = edited(path)
    auto = files.write_autosave(doc)
    assert auto == files.autosave_path(path) == path.parent / ".g.autosave.json"
    assert auto.read_text() == doc.to_json()
    older(path, auto)
    assert files.pending_autosave(path) == auto
    restored = files.restore_autosave(path)
    assert restored.to_json() == doc.to_json() and restored.dirty and restored.path == path
    files.discard_autosave(path)
    assert not auto.exists() and files.pending_autosave(path) is None


def test_autosave_only_when_dirty_and_only_if_it_differs(dirs):
    path = dirs / "work" / "g.json"
    doc = Document.new()
    doc.save(path)
    assert not files.write_autosave(doc).exists()  # nothing unsaved: nothing written
    doc.move("walk", (1, 2))
    auto = files.write_autosave(doc)
    doc.save()  # the file now holds what the autosave holds
    older(path, auto)
    assert files.pending_autosave(path) is None
    doc.move("walk", (3, 4))
    files.write_autosave(doc)
    os.utime(auto, ns=(path.stat().st_mtime_ns - 10**9,) * 2)  # an autosave older than the file is stale
    assert files.pending_autosave(path) is None


def test_untitled_autosave_in_the_cache(dirs):
    doc = Document.new()
    doc.add_node("blend")
    auto = files.write_autosave(doc)
    assert auto == dirs / "cache" / "autosave" / "untitled.json"
    assert files.pending_autosave(None) == auto
    assert files.restore_autosave(None).to_json() == doc.to_json()
    files.discard_autosave(None)
    assert files.pending_autosave(None) is None


def test_xdg_cache_when_no_animgraph_cache(dirs, monkeypatch):
    monkeypatch.delenv("ANIMGRAPH_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(dirs / "xdg"))
    assert files.autosave_path(None) == dirs / "xdg" / "animgraph" / "autosave" / "untitled.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert files.autosave_path(None) == dirs / "home" / ".cache" / "animgraph" / "autosave" / "untitled.json"


def cached(path):
    auto = files.autosave_path(path)
    assert auto.parent == files.cache_dir() and auto.name.startswith(Path(path).stem)
    return auto


def test_read_only_places_autosave_in_the_cache(dirs):
    cached(shipped.path("blend"))  # the installed graphs count as read-only
    if Path("/proc/self").is_dir():
        cached(Path("/proc/self/g.json"))  # no file can be made there, as root too
    ro = dirs / "ro"
    ro.mkdir()
    doc = edited(ro / "g.json")
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: a 0o555 directory is writable")
        auto = cached(ro / "g.json")
        assert files.write_autosave(doc) == auto and files.pending_autosave(ro / "g.json") == auto
        assert files.restore_autosave(ro / "g.json").to_json() == doc.to_json()
    finally:
        ro.chmod(0o755)


def test_cached_autosave_keeps_relative_assets_pointing_at_their_files(dirs, monkeypatch):
    data = Document.new().graph.to_dict() | {"assets": {"walk": "clips/w.bvh"}}
    path = dirs / "work" / "g.json"
    path.write_text(json.dumps(data))
    doc = Document.open(path)
    doc.move("walk", (5, 5))
    monkeypatch.setattr(files, "_writable_dir", lambda directory: False)  # as a read-only directory, as root too
    auto = cached(path)
    assert files.write_autosave(doc) == auto
    older(path, auto)
    back = files.restore_autosave(path)
    assert back.to_json() == doc.to_json() and back.path == path
    assert (back.graph.base_dir / back.graph.assets["walk"]).resolve() == (dirs / "work" / "clips" / "w.bvh")


def test_two_graphs_of_one_name_do_not_share_a_cached_autosave(dirs):
    assert files._cached(dirs / "a" / "g.json") != files._cached(dirs / "b" / "g.json")


def test_recent_files_order_cap_and_missing(dirs):
    made = []
    for i in range(12):
        made.append(dirs / "work" / f"g{i}.json")
        made[-1].write_text("{}")
        files.add_recent(made[-1])
    assert files.recent_files() == [p.resolve() for p in made[::-1][:10]]
    files.add_recent(made[5])  # again: to the front, once
    assert files.recent_files()[:2] == [made[5].resolve(), made[11].resolve()]
    assert len(files.recent_files()) == 10
    made[11].unlink()
    assert made[11].resolve() not in files.recent_files()
    assert (dirs / "config" / "recent.json").is_file()


@pytest.mark.parametrize("text", ["{not json", '{"a": 1}', "[1, 2]", ""])
def test_corrupt_recent_list_is_ignored(dirs, text):
    (dirs / "config").mkdir()
    (dirs / "config" / "recent.json").write_text(text)
    assert files.recent_files() == []
    (dirs / "work" / "g.json").write_text("{}")
    files.add_recent(dirs / "work" / "g.json")
    assert files.recent_files() == [(dirs / "work" / "g.json").resolve()]


def test_recent_list_in_xdg_config(dirs, monkeypatch):
    monkeypatch.delenv("ANIMGRAPH_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs / "xdg"))
    (dirs / "work" / "g.json").write_text("{}")
    files.add_recent(dirs / "work" / "g.json")
    assert json.loads((dirs / "xdg" / "animgraph" / "recent.json").read_text()) == [
        str((dirs / "work" / "g.json").resolve())]


def test_the_autosave_directory_is_configurable(dirs, monkeypatch):
    monkeypatch.setenv("ANIMGRAPH_AUTOSAVE", str(dirs / "elsewhere"))
    doc = Document.new()
    doc.move("walk", (5, 5))
    assert files.write_autosave(doc) == dirs / "elsewhere" / "untitled.json"
    assert files.pending_autosave(None) == dirs / "elsewhere" / "untitled.json"
    assert not (dirs / "cache" / "autosave").exists()


def test_a_read_only_graph_is_never_written(dirs):
    from animgraph.editor.document import ReadOnlyError

    path = dirs / "work" / "ro.json"
    Document.new().save(path)
    os.chmod(path, 0o444)
    before = path.read_bytes()
    doc = Document.open(path)
    doc.move("walk", (9, 9))
    with pytest.raises(ReadOnlyError, match="read-only") as err:
        doc.save()
    assert str(path) in str(err.value) and "\n" not in str(err.value)
    assert path.read_bytes() == before and os.stat(path).st_mode & 0o777 == 0o444 and doc.dirty
    doc.save(dirs / "work" / "other.json")  # saving it under another name works
    assert not doc.dirty and Document.open(dirs / "work" / "other.json").position("walk") == (9.0, 9.0)


def test_saving_keeps_the_file_mode(dirs):
    path = dirs / "work" / "g.json"
    Document.new().save(path)
    os.chmod(path, 0o600)
    doc = Document.open(path)
    doc.move("walk", (3, 3))
    doc.save()
    assert os.stat(path).st_mode & 0o777 == 0o600 and Document.open(path).position("walk") == (3.0, 3.0)
