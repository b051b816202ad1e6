"""trajectory_point: a point ahead on a trajectory as a vec3 target, rates exact."""

import numpy as np
import pytest

import animgraph as ag
from animgraph.node import TRAJECTORY
from animgraph.nodes.trajectory_point import moving_trajectory, trajectory_point


def test_validity():
    with pytest.raises(ValueError, match="point"):
        trajectory_point(moving_trajectory(0.0), point=3)
    with pytest.raises(ValueError, match="distance"):
        trajectory_point(moving_trajectory(0.0), distance=-1.0)
    with pytest.raises(ValueError, match="trajectory must be"):
        trajectory_point(np.zeros(12))


def test_hand_computed_point_and_rate():
    traj = np.zeros(TRAJECTORY.SIZE)
    traj[TRAJECTORY.pos + 4:TRAJECTORY.pos + 6] = (1.0, 3.0)        # point 2 at x=1, z=3
    traj[TRAJECTORY.facing + 4:TRAJECTORY.facing + 6] = (0.6, 0.8)  # facing
    traj[TRAJECTORY.pos_rate + 4:TRAJECTORY.pos_rate + 6] = (0.5, 2.0)
    traj[TRAJECTORY.facing_rate + 4:TRAJECTORY.facing_rate + 6] = (0.8, -0.6)  # turning at 1 rad/s
    pos, vel = trajectory_point(traj, point=2, distance=2.0, height=1.5)
    np.testing.assert_allclose(pos, [1.0 + 1.2, 1.5, 3.0 + 1.6])
    np.testing.assert_allclose(vel, [0.5 + 1.6, 0.0, 2.0 - 1.2])


@pytest.mark.parametrize("point", [0, 1, 2])
def test_rates_are_central_differences(point):
    t, h = np.linspace(0.0, 5.0, 41), 1e-5
    pos, vel = trajectory_point(moving_trajectory(t), point=point, distance=2.5)
    fd = (trajectory_point(moving_trajectory(t + h), point=point, distance=2.5)[0]
          - trajectory_point(moving_trajectory(t - h), point=point, distance=2.5)[0]) / (2 * h)
    np.testing.assert_allclose(vel, fd, atol=1e-6)


def test_standing_still_looks_ahead_of_the_facing():
    traj = np.zeros(TRAJECTORY.SIZE)
    traj[TRAJECTORY.facing:TRAJECTORY.facing + 6] = (0.0, 1.0) * 3
    pos, vel = trajectory_point(traj)
    np.testing.assert_allclose(pos, [0.0, 1.6, 2.0])
    np.testing.assert_allclose(vel, 0.0)


def test_a_graph_feeds_a_controllers_trajectory_to_a_look_at():
    graph = ag.Graph.model_validate({
        "format": "animgraph.graph", "version": 2, "assets": {"walk": "animgraph:walk"},
        "nodes": [{"id": "stick", "type": "input", "signal": "vec3", "default": [0.5, 0.0, 0.5]},
                  {"id": "ctrl", "type": "controller"}, {"id": "ahead", "type": "trajectory_point"},
                  {"id": "walk", "type": "sample", "clip": "walk"},
                  {"id": "look", "type": "look_at", "joint": "head"},
                  {"id": "target", "type": "output", "signal": "vec3"}, {"id": "out", "type": "output"}],
        "links": [["stick.value", "ctrl.stick"], ["ctrl.trajectory", "ahead.trajectory"],
                  ["ahead.target", "look.target"], ["walk.pose", "look.pose"], ["look.pose", "out.pose"],
                  ["ahead.target", "target.value"]]})
    inst = ag.compile(graph).instance()
    traj = []
    for _ in range(30):
        out = inst.step(1 / 60)
        traj.append(out["target"].copy())
    pos, vel = trajectory_point(np.asarray(inst.port("ctrl", "trajectory")))
    np.testing.assert_allclose(traj[-1], np.concatenate([pos, vel]), atol=1e-9)


def test_compiled_matches_python_dispatch():
    graph = ag.Graph.model_validate({
        "format": "animgraph.graph", "version": 2, "assets": {},
        "nodes": [{"id": "traj", "type": "input", "signal": "trajectory"}, {"id": "ahead", "type": "trajectory_point"},
                  {"id": "target", "type": "output", "signal": "vec3"}],
        "links": [["traj.value", "ahead.trajectory"], ["ahead.target", "target.value"]]})
    plan = ag.compile(graph, batch=3)
    compiled, python = plan.instance(parallel=False), plan.instance(python=True)
    for t in np.linspace(0.0, 2.0, 7):
        values = moving_trajectory(np.array([t, t + 1, t + 2]))
        wish = {"traj": (values[:, :12], values[:, 12:])}
        np.testing.assert_allclose(compiled.step(1 / 60, wish)["target"], python.step(1 / 60, wish)["target"], atol=1e-12)
