"""The command line: --version, info numbers on every clip, one-line errors with exit status 2."""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.cli import COMMANDS, main

from conftest import BUNDLED, shared_path
from test_bvh import BAD, SMALL


def _info(capsys, *argv):
    assert main(["info", *argv, "--json"]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return json.loads(out.out, parse_constant=_no_constant)


def _no_constant(name):
    raise AssertionError(f"{name} is not JSON")


def _file(name):
    return str(ag.data.path(name)) if name in BUNDLED else str(shared_path(name))


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"animgraph {ag.__version__}"


# SOURCES.md: mean root speed (m/s, tolerance), total body turning (deg left +, tolerance)
INFO_EXPECT = {
    "cmu_12_01_walk.bvh": (0.9, 0.1, 5.0, 10.0),
    "cmu_16_45_run_jog.bvh": (4.0, 0.2, 0.0, 8.0),
    "cmu_16_36_run_jog.bvh": (2.7, 0.15, 0.0, 10.0),
    "cmu_16_23_walk_veer_left.bvh": (1.65, 0.1, 38.0, 10.0),
    "cmu_16_27_walk_90deg_left_turn.bvh": (1.6, 0.1, 90.0, 12.0),
    "cmu_131_02_start_walk_stop_slow.bvh": (0.2, 0.1, None, None),
}


@pytest.mark.parametrize("file", sorted(INFO_EXPECT))
def test_info_numbers_match_sources(file, capsys):
    speed, speed_tol, turn, turn_tol = INFO_EXPECT[file]
    s = _info(capsys, str(shared_path(file)))
    assert s["joints"] == 31 and s["fps"] == pytest.approx(120)
    # SOURCES.md: frame 0 is an added T-pose in 12_01 and the 16_xx clips; the 131_xx clips start with motion.
    assert s["tpose_dropped"] == (not file.startswith("cmu_131")), s["first_frame_rule"]
    assert s["duration"] == pytest.approx((s["frames"] - 1) / 120)
    assert abs(s["root_speed_mean"] - speed) < speed_tol, s
    if turn is not None:
        assert abs(s["turning"] - turn) < turn_tol, s


def test_info_text_and_bundled_name(capsys):
    assert main(["info", "run"]) == 0
    out = capsys.readouterr().out
    assert "31 joints" in out and "135: frame 0 dropped: T-pose detected (24 of 31 joints at rest" in out
    assert "1 file unit = 0.0564444 m (CMU cgspeed units): the rest pose is 26.6 units across" in out
    assert "120 fps" in out and "1.117 s" in out
    speed = float(out.split("root speed mean ")[1].split()[0])
    assert abs(speed - 4.0) < 0.2
    assert "deg (left positive)" in out
    # The same clip by path gives the same numbers.
    assert _info(capsys, "run")["root_speed_mean"] == _info(capsys, _file("run"))["root_speed_mean"]


def test_info_non_cmu_file_with_scale(tmp_path, capsys):
    path = tmp_path / "small.bvh"
    path.write_text(SMALL)
    s = _info(capsys, str(path), "--scale", "0.5")
    assert s["joints"] == 3 and s["frames"] == 2 and not s["tpose_dropped"]
    assert s["fps"] == pytest.approx(25) and s["metres_per_unit"] == 0.5
    assert s["convention"] is None


def _one_error_line(capsys, argv, where):
    assert main(argv) == 2
    out = capsys.readouterr()
    assert out.out == ""
    lines = out.err.splitlines()
    assert len(lines) == 1, out.err
    assert lines[0].startswith(f"animgraph: {where}"), lines[0]
    assert "Traceback" not in out.err
    return lines[0]


@pytest.mark.parametrize("case", sorted(BAD))
def test_info_bad_bvh_one_line_exit_2(case, tmp_path, capsys):
    text, line, words = BAD[case]
    path = tmp_path / f"{case}.bvh"
    path.write_text(text)
    msg = _one_error_line(capsys, ["info", str(path)], f"{path}:{line}: ")
    assert words.lower() in msg.lower()


def test_info_missing_directory_and_bad_scale(tmp_path, capsys):
    _one_error_line(capsys, ["info", str(tmp_path / "nope.bvh")], f"{tmp_path / 'nope.bvh'}: no such file")
    _one_error_line(capsys, ["info", str(tmp_path)], f"{tmp_path}: is a directory")
    path = tmp_path / "small.bvh"
    path.write_text(SMALL)
    _one_error_line(capsys, ["info", str(path), "--scale", "-1"], f"{path}: --scale must be positive")
    _one_error_line(capsys, ["info", str(path), "--scale", "nan"], f"{path}: --scale must be positive")


# ------------------------------------------------------------ units and frame 0 from the data


def test_info_cmu_names_in_metres_with_a_real_first_frame(tmp_path, capsys):
    """CMU joint names alone decide nothing: a jog saved in metres without its T-pose keeps every frame, in metres."""
    skel, clip = ag.data.load("jog")
    path = tmp_path / "jog_metres.bvh"
    ag.save_bvh(path, skel, clip)
    s = _info(capsys, str(path))
    assert s["frames"] == clip.frames and not s["tpose_dropped"]
    assert s["first_frame_rule"].startswith("frame 0 kept: no T-pose")
    assert s["metres_per_unit"] == 1.0 and "(metres)" in s["units_rule"]
    assert s["root_speed_mean"] == pytest.approx(_info(capsys, "jog")["root_speed_mean"], rel=0.02)


def test_info_units_from_the_rest_pose_size(tmp_path, capsys):
    """The same clip saved in centimetres reads as centimetres: the same speeds in m/s."""
    skel, clip = ag.data.load("run")
    path = tmp_path / "run_cm.bvh"
    ag.save_bvh(path, skel, clip, scale=100.0)
    s = _info(capsys, str(path))
    assert s["metres_per_unit"] == 0.01 and "(centimetres)" in s["units_rule"]
    assert s["root_speed_mean"] == pytest.approx(_info(capsys, "run")["root_speed_mean"], rel=0.02)
    # --scale overrides the rule.
    s = _info(capsys, str(path), "--scale", "0.02")
    assert s["metres_per_unit"] == 0.02 and s["units_rule"].endswith("(given)")


def test_info_scale_and_first_frame_override_on_bundled_names(capsys):
    plain = _info(capsys, "walk")
    scaled = _info(capsys, "walk", "--scale", "5")
    assert scaled["metres_per_unit"] == 5.0
    assert scaled["root_speed_mean"] == pytest.approx(plain["root_speed_mean"] * 5 / ag.data.CMU_SCALE, rel=1e-4)
    kept = _info(capsys, "walk", "--keep-first-frame")
    assert kept["frames"] == plain["frames"] + 1 and not kept["tpose_dropped"]
    assert kept["first_frame_rule"] == "frame 0 kept (given)"


def _tpose_only(tmp_path):
    """The bundled jog file cut to its first frame: a CMU file holding only its T-pose."""
    text = ag.data.path("jog").read_bytes().decode()
    head, motion = text.split("MOTION")
    lines = motion.strip().splitlines()
    path = tmp_path / "tpose_only.bvh"
    path.write_text(head + "MOTION\nFrames: 1\n" + lines[1] + "\n" + lines[2] + "\n")
    return path, head.count("\n") + 2  # the 'Frames:' line


def test_info_one_frame_cmu_file(tmp_path, capsys):
    path, frames_line = _tpose_only(tmp_path)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr()
    assert out.err == "" and "nan" not in out.out.lower()
    assert "frames     1: frame 0 kept: the file has one frame" in out.out
    s = _info(capsys, str(path))
    assert s["frames"] == 1 and s["root_speed_mean"] == 0.0
    _one_error_line(capsys, ["info", str(path), "--drop-first-frame"], f"{path}:{frames_line}: dropping frame 0")


def test_bad_arguments_exit_2(capsys):
    for argv in ([], ["nosuchcommand"], ["info"], ["info", "walk", "--scale", "abc"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
        assert "Traceback" not in capsys.readouterr().err


def test_commands_table_shape():
    """Every command row is (name, help, add_arguments, handler) with a _cmd_<name> handler."""
    for name, help_, add_arguments, handler in COMMANDS:
        assert help_ and callable(add_arguments) and handler.__name__ == f"_cmd_{name.replace('-', '_')}"


def test_console_script_subprocess(tmp_path):
    """The installed ``animgraph`` script: one stderr line and status 2 on a truncated file, nothing on stdout."""
    script = Path(sys.executable).with_name("animgraph")
    assert script.exists(), f"console script missing next to {sys.executable}: pip install -e ."
    path = tmp_path / "truncated.bvh"
    path.write_text(BAD["truncated_motion_line"][0])
    proc = subprocess.run([str(script), "info", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith(f"animgraph: {path}:25: ")
    ok = subprocess.run([str(script), "info", "walk_turn"], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "turning    +" in ok.stdout


def test_unwritable_cache_falls_back_with_one_warning(tmp_path):
    """A read-only home or cache (here: under a regular file, which stops root too) and a read-only install
    (numba's in-tree __pycache__ locator left out): import and validate work, with one warning line."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {k: v for k, v in os.environ.items() if k not in ("ANIMGRAPH_CACHE", "NUMBA_CACHE_DIR", "ANIMGRAPH_DEBUG")}
    env.update(HOME=str(blocker / "home"), XDG_CACHE_HOME=str(blocker / "cache"),
               NUMBA_CACHE_LOCATOR_CLASSES="UserProvidedCacheLocator,UserWideCacheLocator")
    from animgraph import graphs

    graph = graphs.path("blend")
    proc = subprocess.run([sys.executable, "-m", "animgraph", "validate", str(graph)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"OK {graph}")
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("animgraph: warning: cannot write the compiled-code cache"), lines
    assert str(blocker / "cache") in lines[0] and "using " in lines[0]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_cache_fallback_is_private(tmp_path, monkeypatch):
    """The fallback in the shared temporary directory is used only if it is this user's and not writable by others
    (compiled code from it is executed)."""
    from animgraph import cache

    monkeypatch.setattr(cache.tempfile, "tempdir", str(tmp_path))
    mine = tmp_path / f"animgraph-cache-{os.getuid()}"
    assert cache._private_temp_base() == mine and mine.stat().st_mode & 0o777 == 0o700
    mine.chmod(0o777)
    other = cache._private_temp_base()
    assert other != mine and other.parent == tmp_path and other.name.startswith("animgraph-cache-")


def _strict_json(text):
    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_json_outputs_are_strict_json(capsys, monkeypatch):
    """--json of info, bench and verify: a NaN or infinity becomes null, never the invalid tokens NaN/Infinity."""
    import numpy as np

    from animgraph import bench, cli, verify

    nan, inf = float("nan"), float("inf")
    monkeypatch.setattr(cli, "info", lambda file, *options, **named: {"file": file, "turning": nan, "speed": np.float32(inf)})
    assert main(["info", "walk", "--json"]) == 0
    assert _strict_json(capsys.readouterr().out) == {"file": "walk", "turning": None, "speed": None}

    monkeypatch.setattr(bench, "run_all", lambda quick=False, progress=None: {"results": [{"ns": nan, "x": [1, -inf]}]})
    assert main(["bench", "--json", "--quick"]) == 0
    assert _strict_json(capsys.readouterr().out) == {"results": [{"ns": None, "x": [1, None]}]}

    def fake_verify(clips, nodes=None, times=200, seed=0, as_json=False, out=None):
        print(json.dumps({"h": 1e-3, "rows": [{"node": "fk", "err": nan, "v": {"max": inf}}], "ok": False}), file=out)
        return 1

    monkeypatch.setattr(verify, "verify_table", fake_verify)
    assert main(["verify", "walk", "--json"]) == 1
    assert _strict_json(capsys.readouterr().out)["rows"] == [{"node": "fk", "err": None, "v": {"max": None}}]


def test_closed_stdout_stops_quietly():
    """``animgraph schema | head -0``: no 'Broken pipe' error line, no exception at exit."""
    proc = subprocess.Popen([sys.executable, "-m", "animgraph", "schema"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # before the command writes (its import takes longer)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141 and err == ""


def _compiling_run(monkeypatch):
    """Make ``animgraph run`` compile something first, as a cold cache does (a fresh jitted function each call)."""
    import numba

    from animgraph import runner

    original = runner.run_graph_file

    def run_graph_file(*args, **kwargs):
        numba.njit(lambda x: x + 1)(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(runner, "run_graph_file", run_graph_file)


def test_first_run_says_it_is_compiling(capsys, monkeypatch, tmp_path):
    """On a cold cache a command that runs kernels says so when it starts compiling (once, on stderr); warm, or
    failing before anything compiles, it says nothing of it."""
    from animgraph import cache, cli, executor, graphs

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert cache.is_cold()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "k.nbi").write_bytes(b"")
    assert not cache.is_cold()
    _compiling_run(monkeypatch)
    for cold, compiled in ((True, False), (False, False), (False, True)):
        # (False, False): another graph's executor is cached, not the one for this graph's node types.
        monkeypatch.setattr(cli.cache, "is_cold", lambda: cold)
        monkeypatch.setattr(executor, "compiled", lambda entry="run_serial", used=None, c=compiled: c)
        assert main(["run", str(graphs.path("blend")), "--frames", "1"]) == 0
        err = capsys.readouterr().err
        assert ("compiling the kernels" in err) != compiled and len(err.splitlines()) <= 1
    assert main(["validate", str(graphs.path("blend"))]) == 0  # validating compiles nothing
    assert "compiling" not in capsys.readouterr().err
    monkeypatch.setattr(cli.cache, "is_cold", lambda: True)
    (tmp_path / "bad.json").write_text("{")
    assert main(["run", str(tmp_path / "bad.json"), "--frames", "1"]) == 2  # a graph that does not load
    err = capsys.readouterr().err
    assert "compiling" not in err and len(err.splitlines()) == 1
    monkeypatch.undo()
    monkeypatch.setattr(cli.cache, "is_cold", lambda: True)
    # Refused after loading the graph, before compiling anything: one line, the error.
    assert main(["run", str(graphs.path("blend")), "--frames", "1", "--pose-output", "nope"]) == 2
    err = capsys.readouterr().err
    assert "compiling" not in err and len(err.splitlines()) == 1 and "nope" in err


def test_the_compile_line_comes_at_the_first_compile_and_once():
    import io

    import numba

    from animgraph import cli

    for compiles in (0, 1, 3):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), cli._compile_progress("9 s"):
            for _ in range(compiles):
                numba.njit(lambda x: x * 2)(3)
        assert err.getvalue().count("compiling the kernels") == min(compiles, 1), err.getvalue()
        assert compiles == 0 or "about 9 s" in err.getvalue()


def test_first_batch_run_says_it_is_compiling_the_lane_executor(capsys, monkeypatch):
    """A batch of 16 or more runs on lane tiles: their executor's first compile is announced too, with its estimate."""
    from animgraph import cli, executor, graphs

    monkeypatch.setattr(cli.cache, "is_cold", lambda: False)
    _compiling_run(monkeypatch)
    for compiled in (False, True):
        monkeypatch.setattr(executor, "compiled", lambda entry, used=None, c=compiled: c or entry != "run_tiles")
        assert main(["run", str(graphs.path("blend")), "--frames", "1", "--batch", "16"]) == 0
        err = capsys.readouterr().err
        assert ("compiling the kernels" in err) != compiled
        assert compiled or cli.COMPILE_ESTIMATE_TILES in err
    assert main(["run", str(graphs.path("blend")), "--frames", "1"]) == 0  # batch 1: the per-character executor
    assert "compiling" not in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["run", name] for name in graphs.names()] + [["demo"], ["demo", "--gaits"]])
def test_the_executor_chosen_before_the_plan_covers_the_plans_node_types(argv):
    """A command picks its executor before planning (to announce the compile and start its helper): it must have
    the node types the check adds (the events' weights, sync groups) too, or a cold first run would compile a
    partial executor and then the whole registry's."""
    from animgraph.cli import _node_types, build_parser

    graph = graphs.path(argv[1]) if argv[0] == "run" else graphs.path("gaits" if "--gaits" in argv else "locomotion")
    args = build_parser().parse_args([argv[0], str(graph), "--frames", "1"] if argv[0] == "run" else argv)
    assert _node_types(args) == ag.compile(graph).node_types
