"""``animgraph validate / schema / run / demo``: happy paths in-process, every bad input exits 2 with one line.

Bad input must print exactly one stderr line naming the file, node or port, exit with
status 2, and leave the output directory empty (no file, no temporary file).
"""

import errno
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.cli import main

BLEND = str(graphs.path("blend"))


def run_cli(capsys, *argv):
    try:
        status = main([str(a) for a in argv])
    except SystemExit as stop:  # numbers refused by the argument parser, naming the option
        status = stop.code
    out, err = capsys.readouterr()
    return status, out, err


def test_validate_prints_ok_with_node_count(capsys):
    status, out, err = run_cli(capsys, "validate", BLEND)
    assert status == 0 and err == ""
    assert out.startswith(f"OK {BLEND}: 6 nodes")


def test_schema_is_json_with_every_node_type(capsys):
    status, out, _ = run_cli(capsys, "schema")
    assert status == 0
    schema = json.loads(out)
    tags = {d["properties"]["type"]["const"] for d in schema["$defs"].values() if "type" in d.get("properties", {})}
    assert {"sample", "blend", "select", "inertialize", "foot_lock", "input", "output"} <= tags


def test_run_writes_bvh_of_the_first_character(capsys, tmp_path):
    out = tmp_path / "blend.bvh"
    status, text, err = run_cli(capsys, "run", BLEND, "--frames", 30, "--batch", 2, "--input", "alpha=0.25",
                                "--out", out)
    assert status == 0, err
    assert "30 frames x 2 characters" in text and str(out) in text
    skel, clip = ag.load_bvh(out)
    assert clip.frames == 30 and len(skel) == 31 and clip.dt == pytest.approx(1 / 60)
    # The same run through the API: the file holds character 0's local pose (BVH keeps ~9 digits).
    inst = ag.compile(BLEND, batch=2).instance()
    for _ in range(30):
        pose = inst.step(1 / 60, {"alpha": 0.25})["out"]
    assert np.allclose(clip.pos[-1, 0], pose.pos[0, 0], atol=1e-5)
    assert np.allclose(np.abs((clip.rot[-1] * pose.rot[0]).sum(-1)), 1.0, atol=1e-5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blend.bvh"]


@pytest.mark.parametrize("name", graphs.names())
def test_run_writes_a_loadable_bvh_for_every_shipped_graph(capsys, tmp_path, name):
    """Graphs with several outputs (locomotion: a pose and two vec3) export their first pose output."""
    out = tmp_path / f"{name}.bvh"
    status, _, err = run_cli(capsys, "run", graphs.path(name), "--frames", 4, "--out", out)
    assert status == 0, err
    skel, clip = ag.load_bvh(out)
    assert clip.frames == 4 and len(skel) == 31
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_run_bvh_of_the_chosen_pose_output(capsys, tmp_path):
    """--pose-output picks one of several pose outputs; an unknown or non-pose name lists the pose outputs."""
    path = _graph_file(tmp_path, _blend_with(lambda d: (d["nodes"].append({"id": "jog_out", "type": "output"}),
                                                         d["links"].append(["jog.pose", "jog_out.pose"]))))
    out = tmp_path / "jog.bvh"
    status, _, err = run_cli(capsys, "run", path, "--frames", 5, "--out", out, "--pose-output", "jog_out")
    assert status == 0, err
    _, clip = ag.load_bvh(out)
    inst = ag.compile(path).instance()
    for _ in range(5):
        pose = inst.step(1 / 60)["jog_out"]
    assert np.allclose(clip.pos[-1, 0], pose.pos[0], atol=1e-5)
    for name, words in (("nope", ["'nope'", "no such output", "pose outputs: out, jog_out"]),
                        ("alpha", ["'alpha'", "no such output"])):
        status, text, err = run_cli(capsys, "run", path, "--frames", 5, "--out", tmp_path / "x.bvh",
                                    "--pose-output", name)
        assert_one_line_error(status, text, err, [str(path)] + words)
    loco = graphs.path("gaits")
    status, text, err = run_cli(capsys, "run", loco, "--frames", 2, "--out", tmp_path / "x.bvh",
                                "--pose-output", "left_locked")
    assert_one_line_error(status, text, err, [str(loco), "'left_locked'", "vec3", "not a pose", "pose outputs: out"])
    assert not (tmp_path / "x.bvh").exists()


def test_run_writes_npz_of_every_output(capsys, tmp_path):
    out = tmp_path / "loco.npz"
    status, _, err = run_cli(capsys, "run", graphs.path("gaits"), "--frames", 12, "--batch", 3, "--dt", 0.02,
                             "--input", "gait=2", "--out", out)
    assert status == 0, err
    data = np.load(out)
    assert data["out.pos"].shape == (12, 3, 31, 3) and data["out.rot"].shape == (12, 3, 31, 4)
    assert data["left_locked"].shape == (12, 3, 6) and float(data["dt"]) == 0.02
    assert list(data["joint_names"][:2]) == ["Hips", "LHipJoint"]
    assert all(np.isfinite(data[k]).all() for k in data.files if data[k].dtype.kind == "f")


def test_run_without_out_prints_a_summary(capsys):
    status, text, _ = run_cli(capsys, "run", graphs.path("select_inertialize"), "--frames", 5, "--input", "clip=1")
    assert status == 0 and "5 frames x 1 characters" in text and "outputs out (pose)" in text


def test_demo_writes_bvh_and_svg(capsys, tmp_path):
    out = tmp_path / "demo"
    status, text, err = run_cli(capsys, "demo", "--out", out, "--frames", 160)
    assert status == 0, err
    for words in ("searches", "transitions", "foot skate", "deviation", "us per frame"):
        assert words in text
    skel, clip = ag.load_bvh(out / "demo.bvh")
    assert clip.frames == 160 and len(skel) == 31
    root = ET.parse(out / "demo.svg").getroot()
    assert root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}polyline")) >= 2
    assert sorted(p.name for p in out.iterdir()) == ["demo.bvh", "demo.svg"]


def test_demo_gaits_writes_bvh_and_svg(capsys, tmp_path):
    out = tmp_path / "demo"
    status, text, err = run_cli(capsys, "demo", "--gaits", "--out", out, "--frames", 160)
    assert status == 0, err
    for words in ("walk -> jog", "jog -> run", "run -> walk", "locks", "foot skate", "velocities", "us per frame"):
        assert words in text
    skel, clip = ag.load_bvh(out / "demo.bvh")
    assert clip.frames == 160 and len(skel) == 31
    root = ET.parse(out / "demo.svg").getroot()
    assert root.tag.endswith("svg") and len(root.findall("{http://www.w3.org/2000/svg}polyline")) >= 5


def _graph_file(tmp_path, text):
    path = tmp_path / "graphs" / "g.json"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    return path


def _blend_with(change):
    data = json.loads(Path(BLEND).read_text(encoding="utf-8"))
    change(data)
    return json.dumps(data)


BAD_GRAPHS = {
    "malformed": ('{"format": "animgraph.graph", "version": 1, "nodes": [', ["invalid JSON", "line 1"]),
    "unknown type": (_blend_with(lambda d: d["nodes"][3].update(type="mixer")), ["'mix'", "unknown node type", "blend"]),
    "range": (_blend_with(lambda d: d["nodes"][0].update(rate=500.0)), ["'walk'", "rate"]),
    "dangling": (_blend_with(lambda d: d["links"].pop(1)), ["'mix'", "'b'", "not linked"]),
    "fed twice": (_blend_with(lambda d: d["links"].append(["walk.pose", "mix.b"])), ["'mix'", "'b'", "fed twice"]),
    "mismatch": (_blend_with(lambda d: d["links"].__setitem__(0, ["alpha.value", "mix.a"])),
                 ["'mix'", "'a'", "mismatch"]),
    "cycle": (_blend_with(lambda d: d["links"].__setitem__(0, ["mix.pose", "mix.a"])), ["cycle", "mix"]),
    "missing asset": (_blend_with(lambda d: d["assets"].update(walk="nowhere/walk.bvh")),
                      ["'walk'", "file not found"]),
    "newer version": (_blend_with(lambda d: d.update(version=7)), ["version 7", f"(version {ag.graph.VERSION})"]),
    "nested too deeply": ("[" * 100000 + "]" * 100000, ["nested deeper than"]),
}


def assert_one_line_error(status, out, err, words):
    assert status == 2
    lines = err.strip().splitlines()
    parser = ("animgraph run: argument", "animgraph demo: argument")  # numbers the argument parser refuses
    assert len(lines) == 1 and lines[0].startswith(("animgraph: ", *parser)), err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("case", sorted(BAD_GRAPHS))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_bad_graph_exits_2_with_one_line(capsys, tmp_path, case, command):
    text, words = BAD_GRAPHS[case]
    path = _graph_file(tmp_path, text)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    extra = ["--frames", 3, "--out", out_dir / "x.npz"] if command == "run" else []
    status, out, err = run_cli(capsys, command, path, *extra)
    assert_one_line_error(status, out, err, [str(path)] + words)
    assert list(out_dir.iterdir()) == []


BAD_RUNS = {
    "missing graph": (["run", "no/such/graph.json", "--frames", 3], ["no/such/graph.json", "cannot read"]),
    "unknown input": (["run", BLEND, "--frames", 3, "--input", "speed=1"], [BLEND, "'speed'", "unknown input", "alpha"]),
    "bad value": (["run", BLEND, "--frames", 3, "--input", "alpha=fast"], ["alpha=fast", "number"]),
    "not name=value": (["run", BLEND, "--frames", 3, "--input", "alpha"], ["'alpha'", "name=value"]),
    "nan input": (["run", BLEND, "--frames", 3, "--input", "alpha=nan"], [BLEND, "'alpha'", "not finite"]),
    "wrong width": (["run", BLEND, "--frames", 3, "--input", "alpha=1,2,3"], [BLEND, "'alpha'", "shape"]),
    "bad extension": (["run", BLEND, "--frames", 3, "--out", "{out}/x.txt"], ["x.txt", ".bvh, .glb, .gltf or .npz"]),
    "no directory": (["run", BLEND, "--frames", 3, "--out", "{out}/sub/x.bvh"], ["sub", "no such directory"]),
    "zero frames": (["run", BLEND, "--frames", 0, "--out", "{out}/x.bvh"], ["--frames", "got 0"]),
    "bad dt": (["run", BLEND, "--frames", 3, "--dt", "nan", "--out", "{out}/x.bvh"], ["--dt"]),
    "demo out is a file": (["demo", "--out", "{out}/file.txt", "--frames", 40], ["file.txt", "not a directory"]),
    "demo frames": (["demo", "--out", "{out}/d", "--frames", 3], ["--frames"]),
    "negative frames": (["run", BLEND, "--frames", -1], ["--frames", "got -1"]),
    "zero batch": (["run", BLEND, "--frames", 3, "--batch", 0], ["--batch", "got 0"]),
    "negative batch": (["run", BLEND, "--frames", 3, "--batch", -5], ["--batch", "got -5"]),
    "batch too big": (["run", BLEND, "--frames", 3, "--batch", 10 ** 11], ["--batch", "[1, 1048576]", "100000000000"]),
    "frames too big for memory": (["run", BLEND, "--frames", 10 ** 6, "--batch", 2 ** 20, "--out", "{out}/x.npz"],
                                  [BLEND, "--batch 1048576 with --frames 1000000", "x.npz", "would need about",
                                   "available"]),
    "frames past the limit": (["run", BLEND, "--frames", 10 ** 10], ["--frames", "[1, 1000000]", "10000000000"]),
    "demo frames past the limit": (["demo", "--out", "{out}/d", "--frames", 10 ** 11],
                                   ["--frames", "[1, 1000000]", "100000000000"]),
    "zero dt": (["run", BLEND, "--frames", 3, "--dt", 0], ["--dt", "[1e-09, 1000]", "got 0"]),
    "negative dt": (["run", BLEND, "--frames", 3, "--dt", -0.5], ["--dt", "[1e-09, 1000]", "got -0.5"]),
    "dt below a nanosecond": (["run", BLEND, "--frames", 3, "--dt", "1e-12"], ["--dt", "[1e-09, 1000]", "got 1e-12"]),
    "overflowing dt": (["run", BLEND, "--frames", 3, "--dt", "1e309"], ["--dt", "[1e-09, 1000]", "1e309"]),
    "dt at the float limit": (["run", BLEND, "--frames", 3, "--dt", "1.7e308"], ["--dt", "[1e-09, 1000]", "1.7e308"]),
    "int input not whole": (["run", graphs.path("gaits"), "--frames", 3, "--input", "gait=1.5"],
                            ["'gait'", "gait=1.5", "whole number"]),
    "int input too big": (["run", graphs.path("gaits"), "--frames", 3, "--input", "gait=1e20"],
                          ["'gait'", "gait=1e+20", "whole number"]),
    "bool input not 0 or 1": (["run", "{flag_graph}", "--frames", 3, "--input", "flag=2"], ["'flag'", "true, false"]),
    "infinite input": (["run", BLEND, "--frames", 3, "--input", "alpha=1e999"], ["'alpha'", "not finite"]),
    "null input": (["run", BLEND, "--frames", 3, "--input", "alpha=null"], ["alpha=null", "number"]),
}


@pytest.mark.parametrize("case", sorted(BAD_RUNS))
def test_bad_run_input_exits_2_with_one_line(capsys, tmp_path, case):
    argv, words = BAD_RUNS[case]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    if case == "demo out is a file":
        (out_dir / "file.txt").write_text("keep")
    before = sorted(p.name for p in out_dir.iterdir())
    flag_graph = tmp_path / "flag.json"  # a graph with a bool input (the shipped ones take contacts from clips)
    flag_graph.write_text(json.dumps({"format": "animgraph.graph", "version": 2, "nodes": [
        {"id": "flag", "type": "input", "signal": "bool"}, {"id": "seen", "type": "output", "signal": "bool"}],
        "links": [["flag.value", "seen.value"]]}))
    argv = [str(a).replace("{out}", str(out_dir)).replace("{flag_graph}", str(flag_graph)) for a in argv]
    status, out, err = run_cli(capsys, *argv)
    assert_one_line_error(status, out, err, words)
    assert sorted(p.name for p in out_dir.iterdir()) == before


def test_graph_file_not_utf8_exits_2(capsys, tmp_path):
    path = tmp_path / "latin1.json"
    text = Path(BLEND).read_text(encoding="utf-8").replace("Cross-fade", "Fondu enchaîné")
    path.write_bytes(text.encode("latin-1"))
    for command in (["validate", path], ["run", path, "--frames", 2]):
        assert_one_line_error(*run_cli(capsys, *command), [str(path), "not UTF-8"])


@pytest.mark.parametrize("argv", [
    ["run", BLEND, "--frames", "1e9"],
    ["run", BLEND],
    ["run", BLEND, "--frames", 2, "--batch", "many"],
    ["verify", "walk", "--seed", "-1"],
    ["verify", "walk", "--times", "0"],
    ["schema", "extra"],
    [],
])
def test_usage_errors_are_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in argv])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("animgraph"), err


def test_memory_estimate_names_the_out_file(capsys, tmp_path, monkeypatch):
    """A run bigger than the available memory is refused before it starts, saying how much it needs."""
    from animgraph import fileio

    monkeypatch.setattr(fileio, "available_memory", lambda: 2 ** 20)
    out = tmp_path / "x.npz"
    status, text, err = run_cli(capsys, "run", BLEND, "--frames", 1000, "--batch", 4, "--out", out)
    assert_one_line_error(status, text, err, [BLEND, "--batch 4", "--frames 1000", str(out), "1 MiB is available"])
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(fileio, "available_memory", lambda: None)  # unknown: no refusal
    assert run_cli(capsys, "run", BLEND, "--frames", 2)[0] == 0


def test_disk_space_is_checked_before_the_run(capsys, tmp_path, monkeypatch):
    from animgraph import fileio

    monkeypatch.setattr(fileio.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10 ** 6, 10 ** 6, 5000))
    for name in ("x.bvh", "x.npz"):
        out = tmp_path / name
        status, text, err = run_cli(capsys, "run", BLEND, "--frames", 100, "--out", out)
        assert_one_line_error(status, text, err, [f"--out {out}: needs about", "of disk space", "4.88 KiB is free"])
    assert list(tmp_path.iterdir()) == []


def test_internal_error_is_one_line_exit_1(capsys, monkeypatch):
    """A bug (not a user-input error): 'internal error' on one line, status 1; ANIMGRAPH_DEBUG adds the traceback."""
    from animgraph import runner

    def broken(path):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(runner, "validate", broken)
    monkeypatch.delenv("ANIMGRAPH_DEBUG", raising=False)
    status, out, err = run_cli(capsys, "validate", BLEND)
    assert status == 1 and out == ""
    assert err.splitlines() == [err.strip()] and "Traceback" not in err
    assert err.startswith("animgraph: internal error: ZeroDivisionError: float division by zero")
    monkeypatch.setenv("ANIMGRAPH_DEBUG", "1")
    status, out, err = run_cli(capsys, "validate", BLEND)
    assert status == 1 and err.startswith("Traceback") and "in broken" in err
    assert err.splitlines()[-1].startswith("animgraph: internal error: ZeroDivisionError")


def _unwritable_dir(tmp_path):
    """A directory no file can be created in: read-only for a user; as root (chmod does not stop root), /proc."""
    if os.geteuid() != 0:
        d = tmp_path / "read-only"
        d.mkdir()
        d.chmod(0o555)
        return d
    if not Path("/proc/self").is_dir():
        pytest.skip("running as root without /proc: no directory root cannot write in")
    return Path("/proc")


def test_unwritable_out_is_refused_before_the_run(capsys, tmp_path, monkeypatch):
    """run --out and demo --out: a directory the user cannot write in, a directory in the way, a name too long."""
    from animgraph import runtime

    def never(*args, **kwargs):
        raise AssertionError("the graph was compiled before --out was checked")

    monkeypatch.setattr(runtime, "compile", never)
    ro = _unwritable_dir(tmp_path)
    (tmp_path / "x.bvh").mkdir()
    long_name = tmp_path / ("n" * 300 + ".npz")
    for out, words in ((ro / "x.bvh", ["cannot write in", str(ro)]), (tmp_path / "x.bvh", ["is a directory"]),
                       (long_name, ["file name longer than"])):
        status, text, err = run_cli(capsys, "run", BLEND, "--frames", 2, "--out", out)
        assert_one_line_error(status, text, err, [f"--out {out}"] + words)
    (tmp_path / "demo" / "demo.svg").mkdir(parents=True)
    for out, words in ((ro / "demo", ["cannot write in", str(ro)]),
                       (tmp_path / "demo", ["demo.svg", "is a directory"])):
        status, text, err = run_cli(capsys, "demo", "--out", out, "--frames", 40)
        assert_one_line_error(status, text, err, [str(out)] + words)
        assert text == ""  # refused before the run, which prints
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == ["demo.svg"]  # no demo.bvh


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_disk_full_names_the_users_file(capsys, tmp_path, monkeypatch):
    """A full disk while writing --out: one line naming x.npz / x.bvh (not the temporary file), nothing left behind."""
    from animgraph import fileio

    def full_savez(f, **arrays):
        f.write(b"PK" * 1000)
        _enospc()

    monkeypatch.setattr(np, "savez", full_savez)
    out = tmp_path / "x.npz"
    status, text, err = run_cli(capsys, "run", BLEND, "--frames", 3, "--out", out)
    assert_one_line_error(status, text, err, [f"animgraph: {out}: No space left on device"])

    class FullFile(io.StringIO):
        def write(self, text):
            _enospc()

    real_open = open
    monkeypatch.setattr(fileio, "open", lambda path, mode="r", **kw: FullFile() if "w" in mode else real_open(path, mode, **kw),
                        raising=False)
    out = tmp_path / "x.bvh"
    status, text, err = run_cli(capsys, "run", BLEND, "--frames", 3, "--out", out)
    assert_one_line_error(status, text, err, [f"animgraph: {out}: No space left on device"])
    assert list(tmp_path.iterdir()) == []


def test_demo_writes_both_files_or_neither(capsys, tmp_path, monkeypatch):
    """The plot failing (disk full) after the BVH is written takes the BVH with it."""
    from animgraph import demo

    monkeypatch.setattr(demo, "atomic_write_text", _enospc, raising=False)
    out = tmp_path / "new" / "demo"
    status, text, err = run_cli(capsys, "demo", "--out", out, "--frames", 32)
    assert status == 2 and err.splitlines() == [f"animgraph: {out / 'demo.svg'}: No space left on device"], err
    assert list(tmp_path.iterdir()) == []  # nor the directories it made


def test_write_together_removes_the_first_when_the_second_rename_fails(tmp_path):
    from animgraph.fileio import write_together

    first, second = tmp_path / "a.bvh", tmp_path / "b.svg"

    def save_and_block(tmp):
        Path(tmp).write_text("b")
        second.mkdir()  # appears between the check and the rename

    with pytest.raises(OSError) as err:
        write_together([(first, lambda tmp: Path(tmp).write_text("a")), (second, save_and_block)])
    assert err.value.filename == str(second)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.svg"] and list(second.iterdir()) == []


SIGTERM_WHILE_WRITING = """
import signal, sys, time
import numpy as np
# A test run started under nohup hands its children SIGHUP ignored, and the CLI keeps an ignored signal
# ignored (as nohup asks): the command here starts as from a terminal, with the default.
if hasattr(signal, "SIGHUP"):
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
savez = np.savez

def slow_savez(f, **arrays):  # test hook: write the data, then hang inside the write until the signal
    savez(f, **arrays)
    print("writing", flush=True)
    time.sleep(120)

np.savez = slow_savez
from animgraph.cli import main
sys.exit(main(["run", sys.argv[1], "--frames", "50", "--batch", "4", "--out", sys.argv[2]]))
"""


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_while_writing_leaves_no_temporary_file(tmp_path, signame):
    """kill (SIGTERM) or a closed terminal (SIGHUP) during --out writing cleans up like Ctrl-C: one line, 128 + n."""
    signum = getattr(signal, signame, None)
    if signum is None:
        pytest.skip(f"no {signame} here")
    out = tmp_path / "x.npz"
    env = {k: v for k, v in os.environ.items() if k != "ANIMGRAPH_DEBUG"}
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_WHILE_WRITING, BLEND, str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline() == "writing\n"
        assert [p.name for p in tmp_path.iterdir()][0].endswith(".tmp")  # mid-write: the temporary is there
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum
    assert err.splitlines() == [f"animgraph: terminated ({signame})"], err
    assert list(tmp_path.iterdir()) == []


def test_console_script_runs_a_graph(tmp_path):
    script = Path(sys.executable).with_name("animgraph")
    assert script.exists(), "the animgraph console script is installed beside python"
    out = tmp_path / "x.npz"
    proc = subprocess.run([str(script), "run", BLEND, "--frames", "4", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert np.load(out)["out.pos"].shape == (4, 1, 31, 3)
