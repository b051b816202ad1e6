"""Graph inputs: rates given, rates derived from the change over the step, and the ``smooth`` spring.

References: hand-computed differences ``(v - v_prev) / dt``; the closed form of a critically
damped spring's step response; central finite differences of the output value, and of the
world joint positions of shipped graphs (numpy FK, ``animgraph.pops.world``) whose weight
input is ramped without a rate.
"""

import math

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs
from animgraph.pops import world

DT = 1 / 60


def graph(nodes, links):
    return ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "assets": {}, "nodes": nodes,
                               "links": links})


def signals(**fields):
    """Scalar ``w``, vec3 ``v``, int ``n`` and bool ``b`` inputs, each on an output of its own."""
    kinds = {"w": "scalar", "v": "vec3", "n": "int", "b": "bool"}
    nodes = [{"id": k, "type": "input", "signal": s, **fields.get(k, {})} for k, s in kinds.items()]
    nodes += [{"id": k + "o", "type": "output", "signal": s} for k, s in kinds.items()]
    return graph(nodes, [[f"{k}.value", f"{k}o.value"] for k in kinds])


def test_rate_without_one_given_is_the_change_over_the_step():
    inst = ag.compile(signals()).instance()
    out = inst.step(DT, {"w": 0.5, "v": [1.0, 2.0, 3.0], "n": 2, "b": True})
    np.testing.assert_array_equal(out["wo"], [0.5, 0.0]), "the first step has no previous value: rate 0"
    np.testing.assert_array_equal(out["vo"], [1, 2, 3, 0, 0, 0])
    out = inst.step(DT, {"w": 0.75, "v": [1.0, 1.0, 4.0], "n": 1, "b": False})
    np.testing.assert_allclose(out["wo"], [0.75, 0.25 / DT], rtol=1e-12)
    np.testing.assert_allclose(out["vo"], [1, 1, 4, 0, -1 / DT, 1 / DT], rtol=1e-12)
    assert out["no"].tolist() == [1] and out["bo"].tolist() == [0]  # int and bool: a value only
    out = inst.step(DT / 2, {"w": 1.0})
    np.testing.assert_allclose(out["wo"], [1.0, 0.25 / (DT / 2)], rtol=1e-12)
    out = inst.step(DT)
    np.testing.assert_array_equal(out["wo"], [1.0, 0.0]), "a value left alone has not changed: rate 0"
    np.testing.assert_array_equal(out["vo"][3:], [0, 0, 0])
    out = inst.step(DT, {"w": (0.5, 7.0)})
    np.testing.assert_array_equal(out["wo"], [0.5, 7.0]), "a rate given overrides"
    np.testing.assert_array_equal(inst.step(DT)["wo"], [0.5, 7.0]), "and stays until set again"
    np.testing.assert_allclose(inst.step(DT, {"w": 0.6})["wo"], [0.6, 0.1 / DT], rtol=1e-12)
    np.testing.assert_allclose(inst.step(0.0, {"w": 0.9})["wo"], [0.9, 0.1 / DT], rtol=1e-12), "dt 0 keeps the rate"
    np.testing.assert_allclose(inst.step(DT, {"w": 1.0})["wo"], [1.0, 0.1 / DT], rtol=1e-12)


def test_rate_is_zero_after_a_reset_or_a_teleport_and_per_character():
    inst = ag.compile(signals(), batch=3).instance()
    inst.step(DT, {"w": [0.0, 1.0, 2.0]})
    out = inst.step(DT, {"w": [0.5, 1.0, 1.0]})
    np.testing.assert_allclose(out["wo"][:, 1], [0.5 / DT, 0.0, -1 / DT], rtol=1e-12)
    inst.reset(characters=[1])
    inst.teleport([1.0, 0.0, 0.0], characters=[2])
    out = inst.step(DT, {"w": [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(out["wo"], [[1.0, 0.5 / DT], [2.0, 0.0], [3.0, 0.0]], rtol=1e-12)
    out = inst.step(DT, {"w": [1.5, 2.5, 3.5]})
    np.testing.assert_allclose(out["wo"][:, 1], [0.5 / DT] * 3, rtol=1e-12), "then derived again"


def test_a_value_held_at_its_bound_moves_no_further():
    inst = ag.compile(signals(w={"min": 0.0, "max": 1.0})).instance()
    inst.step(DT, {"w": 0.9})
    np.testing.assert_allclose(inst.step(DT, {"w": 1.5})["wo"], [1.0, 0.1 / DT], rtol=1e-9)
    np.testing.assert_array_equal(inst.step(DT, {"w": 2.0})["wo"], [1.0, 0.0])


def test_smooth_is_a_critically_damped_step_response():
    """A step of the target (its rate given as 0) from rest: ``x = 1 - (1 + y t) e^(-y t)``, ``y = 2 ln2 / half-life``."""
    halflife = 0.2
    inst = ag.compile(signals(w={"smooth": halflife}, v={"smooth": halflife})).instance()
    inst.step(DT, {"w": 0.0, "v": [0.0, 0.0, 0.0]})
    y = 2 * math.log(2) / halflife
    for k in range(1, 40):
        out = inst.step(DT, {"w": (1.0, 0.0), "v": ([2.0, 0.0, -1.0], [0.0, 0.0, 0.0])})
        t = k * DT
        x, dx = 1 - (1 + y * t) * math.exp(-y * t), y * y * t * math.exp(-y * t)
        np.testing.assert_allclose(out["wo"], [x, dx], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(out["vo"], [2 * x, 0, -x, 2 * dx, 0, -dx], rtol=1e-9, atol=1e-12)


def test_smooth_rates_match_central_differences():
    """A step, a ramp and a sine set without rates: the spring's rate is the derivative of its value.

    The step is a ramp over one frame, which bends the spring's path sharply within it: the
    central difference is checked away from it (the trapezoid rule then shows no jump over it).
    """
    inst = ag.compile(signals(w={"smooth": 0.05})).instance()
    dt = 1 / 240
    ts = np.arange(480) * dt
    targets = (ts > 0.3) + 0.5 * np.maximum(ts - 1.0, 0.0) + 0.2 * np.sin(9 * ts)
    xs, vs = np.array([inst.step(dt, {"w": float(target)})["wo"].copy() for target in targets]).T
    fd = (xs[2:] - xs[:-2]) / (2 * dt)
    away = (ts[1:-1] < 0.3 - 2 * dt) | (ts[1:-1] > 0.4)  # the step bends the path hard for about a half-life
    assert np.abs(vs).max() > 1.0
    # 0.03 where the ramp starts (an acceleration jump of about 30/s², over dt/4); a missing rate term is O(1)
    assert np.abs(fd - vs[1:-1])[away].max() < 0.05, np.abs(fd - vs[1:-1])[away].max()
    trapezoid = np.abs(np.diff(xs) - 0.5 * (vs[1:] + vs[:-1]) * dt)
    assert trapezoid.max() < 0.05 * (targets.max() - targets.min()), trapezoid.max()
    assert abs(xs[-1] - targets[-1]) < 0.05, "it follows the ramp and the sine"


def test_smooth_only_for_scalars_and_vec3s():
    with pytest.raises(ag.GraphError, match="smooth"):
        ag.compile(graph([{"id": "n", "type": "input", "signal": "int", "smooth": 0.1}], []))


def ramp_errors(name, given=None):
    """Per frame and joint: world velocity minus the central difference (m/s), and the speed, under a rate-less ramp.

    ``alpha`` goes 0.2 -> 0.7 over 1 s at 120 Hz (the clips' own rate: the difference then
    sees their motion well); ``given`` instead gives that rate with each value.
    """
    plan = ag.compile(graphs.path(name))
    inst = plan.instance()
    dt = 1 / 120
    xs, vs = [], []
    for f in range(120):
        alpha = 0.2 + 0.5 * f * dt
        out = inst.step(dt, {"alpha": alpha if given is None else (alpha, given)})
        x, v = world(out["out"], plan.skeleton.parents)
        xs.append(x)
        vs.append(v)
    xs, vs = np.array(xs), np.array(vs)
    fd = (xs[2:] - xs[:-2]) / (2 * dt)
    # From the ramp's third frame: its first step has rate 0 (no previous value).
    return np.linalg.norm(fd - vs[1:-1], axis=-1)[2:], np.linalg.norm(vs[1:-1], axis=-1)[2:]


@pytest.mark.parametrize("name", ["additive", "blend"])
def test_weight_ramped_without_a_rate_moves_the_joints_at_their_velocities(name):
    """A weight moved by a caller who gives no rate: world velocities match central differences of FK positions."""
    err, speed = ramp_errors(name)
    assert err[:, 0].max() < 0.01, err[:, 0].max()  # the hips
    assert (err / (0.01 + 0.1 * speed)).max() < 1.0, err.max()  # fingers: the clips' own motion at 120 Hz


def test_a_weight_rate_taken_as_zero_misses_the_weights_term():
    """The check above has teeth: with rate 0 given (the old rate of a value alone) the hips are off."""
    assert ramp_errors("additive", given=0.0)[0][:, 0].max() > 0.5
