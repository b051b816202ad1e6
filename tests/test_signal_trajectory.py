"""The trajectory signal kind: its layout, its values (unit facings), and inputs, constants and outputs of it."""

import numpy as np
import pytest

import animgraph as ag
from animgraph.limits import TRAJECTORY_REST, normalize_value, signal_value
from animgraph.node import SIGNAL_SIZE, SIGNALS, TRAJECTORY

DT = 1 / 60
VALUE = [0.1, 0.5, 0.2, 1.0, 0.4, 1.5, 0.0, 2.0, 3.0, 4.0, -1.0, 0.0]  # facings (0, 2), (3, 4), (-1, 0): not unit
UNIT = VALUE[:6] + [0.0, 1.0, 0.6, 0.8, -1.0, 0.0]


def graph(nodes, links):
    return ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "nodes": nodes, "links": links})


def test_layout_is_the_documented_one():
    # [p1x, p1z, p2x, p2z, p3x, p3z, d1x, d1z, d2x, d2z, d3x, d3z], then the 12 rates in the same order.
    assert SIGNAL_SIZE["trajectory"] == 24 and "trajectory" in SIGNALS
    assert (TRAJECTORY.pos, TRAJECTORY.facing, TRAJECTORY.pos_rate, TRAJECTORY.facing_rate) == (0, 6, 12, 18)


def test_values_get_unit_facings_and_bad_ones_are_refused():
    np.testing.assert_allclose(signal_value("trajectory", VALUE), UNIT, rtol=1e-15)
    np.testing.assert_array_equal(signal_value("trajectory", None), TRAJECTORY_REST)
    assert normalize_value("trajectory", VALUE) == pytest.approx(UNIT, rel=1e-15)
    with pytest.raises(ValueError, match="12 numbers"):
        signal_value("trajectory", [0.0] * 11)
    with pytest.raises(ValueError, match="unit directions"):
        signal_value("trajectory", [0.0] * 12)


def test_an_input_passes_value_and_rate_to_an_output():
    nodes = [{"id": "tr", "type": "input", "signal": "trajectory", "default": VALUE},
             {"id": "out", "type": "output", "signal": "trajectory"}]
    inst = ag.compile(graph(nodes, [["tr.value", "out.value"]])).instance()
    np.testing.assert_allclose(inst.step(DT)["out"], UNIT + [0.0] * 12, rtol=1e-15)
    rate = np.arange(12.0)
    scaled = VALUE[:6] + [3.0 * x for x in VALUE[6:]]  # the same directions
    out = inst.step(DT, {"tr": (scaled, rate)})["out"]
    np.testing.assert_allclose(out, np.concatenate([UNIT, rate]), rtol=1e-15)
    with pytest.raises(ag.GraphError, match="'tr'.*non-zero facings"):
        inst.set_inputs({"tr": [1.0] * 6 + [0.0] * 6})
    with pytest.raises(ag.GraphError, match="'tr'"):
        inst.set_inputs({"tr": [1.0] * 3})
    np.testing.assert_allclose(inst.step(DT)["out"], np.concatenate([UNIT, rate]), rtol=1e-15)  # refused: unchanged


def test_a_constant_has_zero_rates_and_kinds_must_match():
    nodes = [{"id": "c", "type": "constant", "signal": "trajectory", "value": VALUE},
             {"id": "out", "type": "output", "signal": "trajectory"}]
    out = ag.compile(graph(nodes, [["c.value", "out.value"]])).instance().step(DT)["out"]
    np.testing.assert_allclose(out, UNIT + [0.0] * 12, rtol=1e-15)
    nodes[0]["signal"] = "vec3"
    nodes[0]["value"] = [1.0, 2.0, 3.0]
    with pytest.raises(ag.GraphError, match="out"):
        ag.compile(graph(nodes, [["c.value", "out.value"]]))
    with pytest.raises(ag.GraphError, match="'c'"):
        graph([{"id": "c", "type": "constant", "signal": "trajectory", "value": [1.0] * 4}], [])
