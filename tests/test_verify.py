"""``animgraph verify``: it runs every operator node and passes them, it can fail, bad input exits 2.

The tolerances are verify's own (``verify.TOL`` = 1e-3 relative, ``|fd - v| / (1 + |fd|)``,
looser only where ``verify.TOLERANCES`` says why); these tests check that the table covers
every registered operator node, that every row passes on a bundled clip, and that a
velocity off by 1 % (or NaN) fails its row, so the check cannot pass vacuously.
"""

import io
import importlib
import json

import numpy as np
import pytest

import animgraph as ag
from animgraph import verify
from animgraph.cli import main
from animgraph.node import REGISTRY

CLIP = "run"  # the shortest bundled clip
TIMES = 60  # the table test; the failure tests use fewer


@pytest.fixture(scope="module")
def clip():
    return ag.data.load(CLIP)


@pytest.fixture(scope="module")
def table(clip):
    out = io.StringIO()
    status = verify.verify_table([(CLIP, *clip)], times=TIMES, out=out)
    return status, out.getvalue()


def rows_of(text):
    """{node: line split in fields} of the table's rows."""
    return {f[0]: f for f in (line.split() for line in text.splitlines()) if len(f) >= 9 and f[1] == CLIP}


def test_table_lists_every_registered_operator_node(table):
    import animgraph.nodes  # noqa: F401  (registers every node type)

    operators = set(REGISTRY) - set(verify.plumbing())
    assert operators, "no node types registered"
    assert operators <= set(rows_of(table[1]))
    assert set(verify.cases()) <= set(rows_of(table[1]))


def test_every_row_passes_on_a_bundled_clip(table):
    status, text = table
    failing = [" ".join(f) for f in rows_of(text).values() if f[8] != "pass"]
    assert not failing, "\n".join(failing)
    assert status == 0
    assert text.rstrip().endswith(f"{len(rows_of(text))} of {len(rows_of(text))} rows pass")


def _spoil(op, how):
    """``op`` with its output velocities spoiled: scaled by 1.01 or set to NaN on one joint."""

    def spoiled(*args, **kwargs):
        pose = op(*args, **kwargs)
        for field in ("vel", "ang", "svl"):
            v = getattr(pose, field)
            if how == "nan":
                v[..., 3, :] = np.nan
            else:
                v *= 1.01
        return pose

    return spoiled


@pytest.mark.parametrize("node,op", [("blend", "blend"), ("sample", "sample"), ("additive", "additive")])
@pytest.mark.parametrize("how", ["scaled", "nan"])
def test_a_wrong_velocity_fails_its_row(monkeypatch, clip, node, op, how):
    module = importlib.import_module(f"animgraph.nodes.{node}")  # the case calls its node file's own op
    monkeypatch.setattr(module, op, _spoil(getattr(module, op), how))
    (row,) = verify.verify_clip(*clip, [node], times=20)
    assert not row["ok"]
    for key in ("lin_max", "ang_max", "svl_max"):
        assert row[key] > verify.TOL


def test_a_wrong_velocity_in_a_stateful_op_fails_its_row(monkeypatch, clip):
    class Spoiled(ag.ops.Inertializer):
        update = _spoil(ag.ops.Inertializer.update, "scaled")

    monkeypatch.setattr(importlib.import_module("animgraph.nodes.inertialize"), "Inertializer", Spoiled)
    (row,) = verify.verify_clip(*clip, ["inertialize"], times=20)
    assert not row["ok"] and row["lin_max"] > verify.TOL and row["ang_max"] > verify.TOL


def test_a_broken_op_or_a_node_without_a_case_fails_its_row(monkeypatch, clip):
    def broken(*args, **kwargs):
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(REGISTRY["select"], "VERIFY", broken)
    monkeypatch.setitem(REGISTRY, "newly_added", type("NewlyAdded", (), {"VERIFY": None, "PLUMBING": False,
                                                                        "CATEGORY": "blends"}))
    select, new = verify.verify_clip(*clip, ["select", "newly_added"], times=5)
    assert not select["ok"] and "broken on purpose" in select["note"]
    assert not new["ok"] and "no verify case" in new["note"]
    assert "newly_added" in verify.node_names()


def test_cli_json_and_exit_status(capsys):
    assert main(["verify", CLIP, "--node", "select", "--node", "fk", "--times", "10", "--seed", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["seed"] == 3 and report["times"] == 10
    assert [(r["node"], r["clip"], r["ok"]) for r in report["rows"]] == [("select", CLIP, True), ("fk", CLIP, True)]


@pytest.mark.parametrize(
    "argv,words",
    [
        (["verify", "no_such_clip"], "no_such_clip"),
        (["verify", CLIP, "--node", "no_such_node"], "no_such_node"),
        (["verify", CLIP, "--times", "0"], "--times"),
    ],
)
def test_cli_bad_input_is_one_line_and_status_2(capsys, argv, words):
    try:
        status = main(argv)
    except SystemExit as done:  # argument errors end in argparse, on one line too
        status = done.code
    assert status == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("animgraph") and words in lines[0]
    assert "Traceback" not in captured.err


def test_motion_match_stencils_hold_its_switches_out(clip):
    """A search switch is only C1 and moves the frame's phase, so the case draws a run that switches from its
    pause on again: seed 1 on this clip put one at a stencil's centre (a 3e-3 error, the acceleration's step)."""
    (row,) = verify.verify_clip(*clip, ["motion_match"], times=200, seed=1)
    assert row["ok"], row
