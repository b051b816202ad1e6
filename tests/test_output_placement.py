"""The output node's placement inputs: a linked ``position``/``rotation`` is the world placement, with velocities."""

import numpy as np
import pytest

import animgraph as ag

DT = 1 / 60
POS, VEL = np.array([1.0, 0.2, -3.0]), np.array([0.5, 0.0, 1.5])
YAW, SPIN = 0.7, 1.3  # rad, rad/s about +Y


def qrot(q, v):
    """``v`` rotated by unit quaternion ``q`` (w-first), numpy."""
    w, u = q[0], q[1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def qmul(a, b):
    return np.array([a[0] * b[0] - a[1:] @ b[1:], *(a[0] * b[1:] + b[0] * a[1:] + np.cross(a[1:], b[1:]))])


def yaw_quat(yaw):
    return np.array([np.cos(yaw / 2), 0.0, np.sin(yaw / 2), 0.0])


def placed_graph(position=True, rotation=True, motion=False):
    """A still clip frame placed by vec3/quat inputs (and a walking sample's motion, which must then be ignored)."""
    nodes = [{"id": "c", "type": "constant", "signal": "pose", "clip": "walk", "frame": 10},
             {"id": "p", "type": "input", "signal": "vec3"}, {"id": "r", "type": "input", "signal": "quat"},
             {"id": "s", "type": "sample", "clip": "walk", "root_motion": True}, {"id": "out", "type": "output"}]
    links = [["c.pose", "out.pose"]]
    links += [["p.value", "out.position"]] if position else []
    links += [["r.value", "out.rotation"]] if rotation else []
    links += [["s.motion", "out.motion"]] if motion else []
    used = {link[0].split(".")[0] for link in links}
    nodes = [n for n in nodes if n["id"] in used or n["id"] == "out"]
    return ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "assets": {"walk": "animgraph:walk"},
                               "nodes": nodes, "links": links})


def root(out):
    return (out.pos[0].astype(float), out.rot[0].astype(float), out.vel[0].astype(float), out.ang[0].astype(float))


def inputs(position=True, rotation=True):
    found = {}
    if position:
        found["p"] = (POS, VEL)
    if rotation:
        found["r"] = (yaw_quat(YAW), np.array([0.0, SPIN, 0.0]))
    return found


@pytest.mark.parametrize("motion", [False, True])
def test_linked_position_and_rotation_place_the_pose_with_their_velocities(motion):
    skel, walk = ag.data.load("walk")
    local_pos, local_rot = walk.pos[10, 0].astype(float), walk.rot[10, 0].astype(float)
    inst = ag.compile(placed_graph(motion=motion)).instance()
    for _ in range(3):  # the placement is the input's, frame after frame (root motion not integrated)
        pos, rot, vel, ang = root(inst.step(DT, inputs())["out"])
    q, w = yaw_quat(YAW), np.array([0.0, SPIN, 0.0])
    arm = qrot(q, local_pos)
    np.testing.assert_allclose(pos, POS + arm, atol=2e-6)
    np.testing.assert_allclose(vel, VEL + np.cross(w, arm), atol=2e-6)  # the leverage of the turning placement
    np.testing.assert_allclose(rot, qmul(q, local_rot), atol=2e-6)
    np.testing.assert_allclose(ang, w, atol=2e-6)


def test_an_unlinked_one_is_the_origin_or_the_identity():
    skel, walk = ag.data.load("walk")
    local_pos = walk.pos[10, 0].astype(float)
    pos, _, vel, _ = root(ag.compile(placed_graph(rotation=False)).instance().step(DT, inputs(rotation=False))["out"])
    np.testing.assert_allclose(pos, POS + local_pos, atol=2e-6)
    np.testing.assert_allclose(vel, VEL, atol=2e-6)
    pos, _, vel, _ = root(ag.compile(placed_graph(position=False)).instance().step(DT, inputs(position=False))["out"])
    np.testing.assert_allclose(pos, qrot(yaw_quat(YAW), local_pos), atol=2e-6)


def test_a_teleport_still_moves_a_linked_placement():
    inst = ag.compile(placed_graph()).instance()
    before = root(inst.step(DT, inputs())["out"])
    turn = yaw_quat(0.4)
    inst.teleport([2.0, 0.0, 1.0], turn)
    after = root(inst.step(DT, inputs())["out"])
    # W = teleport * input: the root turned about itself and moved; its velocities turned with it.
    np.testing.assert_allclose(after[0], before[0] + [2.0, 0.0, 1.0], atol=2e-6)
    np.testing.assert_allclose(after[1], qmul(turn, before[1]), atol=2e-6)
    np.testing.assert_allclose(after[2], qrot(turn, before[2]), atol=2e-6)
