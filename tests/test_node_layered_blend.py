"""layered_blend node: validity, the mask by hand, end points against blend, exact velocities vs central FD, graph vs op.

Tolerances as the blend node's: hand cases 1e-5 (float32); float32 ops vs central FD through
``fdcheck.check_fd32`` (relative 1e-3 plus float32 rounding over the step).
"""

import numpy as np
import pytest
from pydantic import ValidationError

import animgraph as ag
from animgraph.node import REGISTRY
from animgraph.branches import mask_weights
from animgraph.nodes.layered_blend import LayeredBlend
from fdcheck import central_fd, check_fd32, random_pose, same_rot

FIELDS = ("pos", "rot", "scl", "vel", "ang", "svl")
#         0   1  2  3  4  5  6
PARENTS = [-1, 0, 1, 2, 1, 4, 0]  # root, spine, chest, head, arm, hand, leg


def test_validity_bad_parameters_refused():
    assert REGISTRY["layered_blend"] is LayeredBlend
    node = LayeredBlend(id="l", branches=[{"joint": "spine"}])
    assert node.alpha == 1.0 and node.branches[0].depth == 0
    for bad in ({"branches": []}, {"branches": [{"joint": "spine", "depth": -1}]},
                {"branches": [{"joint": "spine", "weight": 1.5}]}, {"branches": [{"joint": "spine", "extra": 1}]},
                {"branches": [{"joint": "spine"}], "alpha": 2.0}, {}):
        with pytest.raises(ValidationError):
            LayeredBlend(id="l", **bad)


def test_mask_by_hand():
    np.testing.assert_array_equal(mask_weights(PARENTS, [(1, 1.0, 0)]), [0, 1, 1, 1, 1, 1, 0])
    # Ramping in over 2 levels below the spine: 1/3, 2/3, then 1.
    np.testing.assert_allclose(mask_weights(PARENTS, [(1, 1.0, 2)]), [0, 1 / 3, 2 / 3, 1, 2 / 3, 1, 0])
    # Overlapping branches take the larger weight; a leaf branch covers itself only.
    np.testing.assert_allclose(mask_weights(PARENTS, [(1, 0.5, 0), (4, 1.0, 0), (6, 0.25, 3)]),
                               [0, 0.5, 0.5, 0.5, 1, 1, 0.0625])


def test_outside_is_base_inside_is_layer_and_between_is_blend():
    rng = np.random.default_rng(0)
    base, layer = random_pose(rng, 7), random_pose(rng, 7)
    mask = mask_weights(PARENTS, [(1, 1.0, 2)])
    out = ag.ops.layered_blend(base, layer, mask, 1.0, 0.0)
    for j in np.flatnonzero(mask == 0):
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(out, f)[j], getattr(base, f)[j])
    for j in np.flatnonzero(mask > 0):
        want = ag.ops.blend(base, layer, mask[j], 0.0)
        for f in FIELDS:
            if f == "rot":
                assert same_rot(out.rot[j], want.rot[j], 1e-6)
            else:
                np.testing.assert_allclose(getattr(out, f)[j], getattr(want, f)[j], atol=1e-5)
    # The weight's rate scales by the mask too.
    moving = ag.ops.layered_blend(base, layer, mask, 0.5, 2.0)
    want = ag.ops.blend(base, layer, 0.5 * mask[4], 2.0 * mask[4])
    np.testing.assert_allclose(moving.vel[4], want.vel[4], atol=1e-5)


def test_op_refuses_bad_arguments():
    rng = np.random.default_rng(1)
    base, layer = random_pose(rng, 3), random_pose(rng, 3)
    for mask in ([1.0, 0.0], [0.5, 2.0, 0.0], [np.nan, 0, 0]):
        with pytest.raises(ValueError, match="mask"):
            ag.ops.layered_blend(base, layer, mask)
    with pytest.raises(ValueError):
        ag.ops.layered_blend(base, layer, [1, 1, 1], float("nan"))


@pytest.mark.parametrize("name", ["walk", "run"])
def test_velocities_match_central_differences(name):
    """Walk under the run's upper body (ramping in), the weight swinging: vel, ang, svl vs central FD."""
    skel, clip = ag.data.load(name)
    _, other = ag.data.load("jog")
    mask = mask_weights(skel.parents, [(skel.index("spine"), 1.0, 2), (skel.index("left_hip"), 0.5, 0)])
    w = 2.0

    def at(t):
        alpha = 0.5 + 0.4 * np.sin(w * t)
        return ag.ops.layered_blend(ag.ops.sample(clip, t, "cubic", loop=True),
                                    ag.ops.sample(other, t, "cubic", loop=True), mask, alpha, 0.4 * w * np.cos(w * t))

    rng = np.random.default_rng(2)
    h = clip.dt / 10
    ts = (rng.integers(1, clip.frames - 2, 40) + rng.uniform(0.3, 0.7, 40)) * clip.dt
    pose, vel, ang, svl = central_fd(at, ts, h)
    check_fd32(pose.vel, vel, np.abs(clip.pos).max(), h, "vel")
    check_fd32(pose.ang, ang, 2.0, h, "ang")


def test_graph_node_matches_the_op():
    g = ag.Graph.from_dict({
        "format": "animgraph.graph", "version": 2, "assets": {"walk": "animgraph:walk", "jog": "animgraph:jog"},
        "nodes": [{"id": "a", "type": "sample", "clip": "walk"}, {"id": "b", "type": "sample", "clip": "jog"},
                  {"id": "w", "type": "input", "default": 0.7},
                  {"id": "mix", "type": "layered_blend", "branches": [{"joint": "spine", "depth": 1}]},
                  {"id": "out", "type": "output"}],
        "links": [["a.pose", "mix.base"], ["b.pose", "mix.layer"], ["w.value", "mix.alpha"], ["mix.pose", "out.pose"]],
    })
    plan = ag.compile(g)
    inst, python = plan.instance(), plan.instance(python=True)
    skel = plan.skeleton
    _, walk = ag.data.load("walk")
    _, jog = ag.data.load("jog")
    mask = mask_weights(skel.parents, [(skel.index("spine"), 1.0, 1)])
    for f in range(3):
        out = inst.step(1 / 60, {"w": (0.7, 0.5)})
        ref = python.step(1 / 60, {"w": (0.7, 0.5)})  # the executor against the op table walked in Python
        np.testing.assert_array_equal(out["out"].vel, ref["out"].vel)
        t = f / 60
        want = ag.ops.layered_blend(ag.ops.sample(walk, t, "cubic", loop=True), ag.ops.sample(jog, t, "cubic", loop=True),
                                    mask, 0.7, 0.5)
        np.testing.assert_allclose(out["out"].pos, want.pos, atol=1e-5)
        np.testing.assert_allclose(out["out"].vel, want.vel, atol=1e-4)
    with pytest.raises(ag.GraphError, match="tail"):
        g2 = g.model_copy(deep=True)
        g2.nodes[3].branches[0].joint = "tail"
        ag.compile(g2)
