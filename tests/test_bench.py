"""``animgraph bench --json --quick``: the structure of the report (never its timings)."""

import json
import math

from animgraph import graphs
from animgraph.cli import main


def test_bench_json_structure(capsys):
    assert main(["bench", "--json", "--quick"]) == 0
    out = capsys.readouterr().out
    data = json.loads(out)
    assert set(data) == {"machine", "quick", "results"} and data["quick"] is True
    machine = data["machine"]
    for key in ("cores", "cpu", "numba", "threading_layer", "numba_threads"):
        assert key in machine
    results = {r["name"]: r for r in data["results"]}
    expected = {"chain65/1", "chain65/1000", "chain65/1000/all-threads", "chain65/1000/per-character",
                "dispatch/chain65/python", "step/overhead", "step/overhead+input", "startup/warm", "lanes/fk65/1000", "lanes/chain65/1000",
                "mm/brute/53500", "mm/boxed/53500", "mm/scan/53500",
                "mm/brute/bundled", "mm/boxed/bundled", "mm/scan/bundled"}
    expected |= {f"graph/{name}/{batch}" for name in graphs.names() for batch in (1, 64)}
    expected |= {"state_machine8/1000", "state_machine8/1000/one-state", "state_machine8/1000/mixed"}
    assert expected <= set(results)
    for name, r in results.items():
        if name.startswith("startup/"):
            assert r["ns_per_character"] is None
            assert all(r[k] >= 0 for k in ("import_s", "plan_s", "first_step_s", "total_s"))
            assert "skips the cold compile" in r["note"]
        else:
            assert math.isfinite(r["ns_per_character"]) and r["ns_per_character"] > 0
            assert r["batch"] >= 1 and math.isclose(r["us_per_step"] * 1e3 / r["batch"], r["ns_per_character"])
    assert results["chain65/1"]["threads"] == 1 and results["chain65/1000"]["threads"] == 1
    assert results["chain65/1000"]["batch"] == 1000 and results["chain65/1"]["joints"] == 65
    assert results["chain65/1000"]["lanes"] and not results["chain65/1000/per-character"]["lanes"]
    assert not results["chain65/1"]["lanes"]
    lane = results["lanes/fk65/1000"]
    assert lane["threads"] == 1 and lane["joints"] == 65 and lane["lanes"] == 16
    assert lane["ns_per_joint"] > 0 and lane["today_ns_per_joint"] > 0 and lane["max_abs_diff"] < 1e-3
    chain = results["lanes/chain65/1000"]
    assert chain["threads"] == 1 and chain["joints"] == 65 and chain["lanes"] == 16 and chain["ik"] is True
    assert chain["us_per_character"] > 0 and chain["no_ik_us_per_character"] > 0 and chain["max_abs_diff"] < 1e-3
    assert chain["today_us_per_character"] > 0 and chain["today_no_ik_us_per_character"] > 0
    for kind in ("brute", "boxed", "scan"):
        r = results[f"mm/{kind}/53500"]
        assert r["us_per_query"] > 0 and r["agrees_with_brute"] and r["frames"] == 53500 and r["dims"] == 27
        r = results[f"mm/{kind}/bundled"]
        assert r["us_per_query"] > 0 and r["agrees_with_brute"] and r["frames"] > 1000 and r["dims"] == 27
    assert math.isclose(results["mm/boxed/53500"]["small_box_diagonal"], 6.5, rel_tol=1e-3)
    for label in ("53500", "bundled"):
        r = results[f"mm/boxed/{label}"]
        assert 0 <= r["large_skipped"] <= 1 and 0 <= r["small_skipped"] <= 1 and 1 <= r["dims_per_frame"] <= 27
        assert 0 < r["frames_searched_fraction"] <= 1 and r["frames_per_query"] > 0
    assert results["mm/boxed/53500"]["boxed_over_scan"] > 0
    # The executor computes what the ag.ops functions composed by hand compute.
    assert results["dispatch/chain65/python"]["max_abs_diff"] < 1e-4


def test_humanoid65_is_a_humanoid():
    from animgraph.bench import LEGS, humanoid65

    skel = humanoid65()
    assert len(skel) == 65 and (skel.parents < range(65)).all()
    for leg in LEGS:
        hip, knee, foot = (skel.index(j) for j in leg)
        assert skel.parents[knee] == hip and skel.parents[foot] == knee


def test_chain_entry_names_are_distinct_on_one_cpu(monkeypatch):
    """With one thread available the all-threads entry is still ``chain65/1000/all-threads`` (it once took ``chain65/1000``)."""
    import numba

    from animgraph import bench

    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    names = [r["name"] for r in bench.bench_chain(True)]
    assert len(names) == len(set(names))
    assert {"chain65/1000", "chain65/1000/all-threads", "chain65/1000/per-character"} <= set(names)


def test_state_machine_entries_for_a_tiny_batch():
    """The three entries at batch 20 (a full lane tile and a padded one): all in one state or spread over all 8,
    none mid-transition, and the one-state graph runs only that state's ops."""
    from animgraph import bench

    results = {r["name"]: r for r in bench.bench_state_machine(True, batch=20)}
    one, mixed, alone = (results[f"state_machine8/20{s}"] for s in ("", "/mixed", "/one-state"))
    assert (one["states_occupied"], one["mid_transition"]) == (1, 0)
    assert (mixed["states_occupied"], mixed["mid_transition"]) == (8, 0)
    # samples, blends, inputs, machine, out; + 1: the events' weights (the blends' alphas weigh the samples' events)
    assert alone["ops"] == 3 + 1 + 1 and one["ops"] == mixed["ops"] == 8 * 3 + 3 + 1 + 1
    for r in results.values():
        assert r["batch"] == 20 and r["threads"] == 1 and math.isfinite(r["ns_per_character"])
        assert math.isclose(r["over_one_state"] * alone["ns_per_character"], r["ns_per_character"])


def test_machine8_in_its_start_state_shows_what_the_one_state_graph_shows():
    """No transition ever starts (``go`` stays false): the machine's output is its start state's sub-graph's."""
    import numpy as np

    from animgraph import bench
    from animgraph.runtime import compile as compile_graph

    machine = compile_graph(bench.machine8_graph(), batch=3).instance()
    alone = compile_graph(bench.machine8_graph(one_state=True), batch=3).instance()
    for _ in range(30):
        a, b = machine.step(bench.DT)["out"], alone.step(bench.DT)["out"]
        for f in ("pos", "rot", "vel", "ang"):
            np.testing.assert_allclose(getattr(a, f), getattr(b, f), atol=1e-6, err_msg=f)
    assert not np.any(machine.port("sm", "state"))
