"""select node: validity, ports from count, clamping, the changed event and its reset, velocities passed through.

Tolerances: the selected pose is copied bit for bit (exact equality); the velocity check
is the float32 FD check of fdcheck.py (1e-3 |fd| + NOISE 2^-24 |x| / h).
"""

import numpy as np
import pytest
from pydantic import ValidationError

import animgraph as ag
from animgraph.node import REGISTRY
from animgraph.nodes.select import ST, Select
from fdcheck import central_fd, check_fd32, random_pose

FIELDS = ("pos", "rot", "scl", "vel", "ang", "svl")


def assert_same(a, b):
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


# ------------------------------------------------------------------ validity


def test_validity_bad_parameters_refused():
    node = Select(id="s")
    assert (node.count, node.index) == (2, 0)
    for fields in ({"count": 0}, {"count": 1000}, {"index": -1}, {"count": 3, "index": 3}, {"choice": 1}, {"index": 1.5}):
        with pytest.raises(ValidationError):
            Select(id="s", **fields)
    assert REGISTRY["select"] is Select


def test_ports_follow_count():
    node = Select(id="s", count=4)
    names = [p.name for p in node.inputs()]
    assert names == ["in0", "in1", "in2", "in3", "index"]
    assert all(p.signal == "pose" and p.space == "any" for p in node.inputs()[:4])
    assert node.inputs()[4].signal == "int"
    assert [(p.name, p.signal) for p in node.outputs()] == [("pose", "pose"), ("changed", "bool")]


def test_op_refuses_bad_arguments():
    pose = random_pose(np.random.default_rng(0), 2)
    with pytest.raises(ValueError, match="at least one"):
        ag.ops.select([], 0)
    with pytest.raises(ValueError, match="integer"):
        ag.ops.select([pose, pose], 0.5)


# ------------------------------------------------------------------ op


def test_op_selects_and_clamps():
    rng = np.random.default_rng(1)
    poses = [random_pose(rng, 3) for _ in range(3)]
    assert_same(ag.ops.select(poses, 1), poses[1])
    assert_same(ag.ops.select(poses, -4), poses[0])
    assert_same(ag.ops.select(poses, 99), poses[2])
    out = ag.ops.select(poses, 2)
    out.pos[...] = 0.0  # a copy, not a view
    assert np.any(poses[2].pos != 0.0)


def test_op_picks_per_batch_item():
    rng = np.random.default_rng(2)
    poses = [random_pose(rng, 3, batch=(4,)) for _ in range(3)]
    out = ag.ops.select(poses, np.array([2, 0, 1, 7]))
    for n, k in enumerate([2, 0, 1, 2]):
        assert_same(out[n], poses[k][n])


# ------------------------------------------------------------------ the node contract, select_node() directly


class Harness:
    """``count`` poses in slots 0..count-1, the output in slot ``count``; index at sig[0], changed at sig[1]."""

    def __init__(self, node, poses, linked=True):
        self.node = node
        self.poses = poses
        self.pose = tuple(
            np.ascontiguousarray(np.stack([getattr(p, f) for p in poses] + [np.zeros_like(getattr(poses[0], f))]))
            for f in FIELDS
        )
        # sig[0]: a linked index; sig[1]: changed; sig[2]: the field, as the planner feeds an unlinked index port
        self.sig = np.array([0.0, 0.0, node.index])
        self.ins = np.array(list(range(node.count)) + [0 if linked else 2], np.int64)
        self.outs = np.array([node.count, 1], np.int64)
        self.par = node.params(None)
        self.reset()

    def reset(self):
        self.st = self.node.state(None, 0.0)

    def step(self, index=None):
        if index is not None:
            self.sig[0] = index
        type(self.node).KERNEL(self.ins, self.outs, self.par, self.st, self.pose, self.sig, (), 1 / 60)
        return ag.Pose(*(a[self.node.count].copy() for a in self.pose)), self.sig[1]


def test_node_copies_selected_pose_and_fires_changed():
    rng = np.random.default_rng(3)
    poses = [random_pose(rng, 4) for _ in range(3)]
    h = Harness(Select(id="s", count=3), poses)
    indices = [1, 1, 2, 2, 0, 5, 2, -3, np.nan]
    selected = [1, 1, 2, 2, 0, 2, 2, 0, 0]
    changed = [0, 0, 1, 0, 1, 1, 0, 1, 0]
    for index, k, c in zip(indices, selected, changed):
        out, fired = h.step(index)
        assert_same(out, poses[k])
        assert fired == c, (index, fired)


def test_first_frame_after_reset_is_not_a_change():
    poses = [random_pose(np.random.default_rng(4), 2) for _ in range(2)]
    h = Harness(Select(id="s"), poses)
    assert h.step(1)[1] == 0.0
    assert h.step(0)[1] == 1.0
    h.reset()
    assert h.st[ST.index] == -1.0
    assert h.step(1)[1] == 0.0


def test_unlinked_index_uses_field_and_single_input_works():
    rng = np.random.default_rng(5)
    poses = [random_pose(rng, 2) for _ in range(3)]
    h = Harness(Select(id="s", count=3, index=2), poses, linked=False)
    for _ in range(3):
        out, fired = h.step()
        assert_same(out, poses[2])
        assert fired == 0.0
    h = Harness(Select(id="s", count=1), poses[:1])
    assert_same(h.step(4)[0], poses[0])


def test_output_aliasing_an_input_slot_is_harmless():
    rng = np.random.default_rng(6)
    poses = [random_pose(rng, 2) for _ in range(2)]
    h = Harness(Select(id="s"), poses)
    h.outs[0] = 1  # the executor reused in1's slot for the output
    h.sig[0] = 1
    type(h.node).KERNEL(h.ins, h.outs, h.par, h.st, h.pose, h.sig, (), 1 / 60)
    np.testing.assert_array_equal(h.pose[0][1], poses[1].pos)
    h.sig[0] = 0
    type(h.node).KERNEL(h.ins, h.outs, h.par, h.st, h.pose, h.sig, (), 1 / 60)
    np.testing.assert_array_equal(h.pose[0][1], poses[0].pos)


# ------------------------------------------------------------------ velocities vs central FD


def test_selected_velocities_match_central_fd_on_real_clips(bundled_clip):
    """Select between the clip and the clip half a second later, per batch item: the velocities pass through."""
    _, clip = bundled_clip
    rng = np.random.default_rng(7)
    h = clip.dt / 10
    ts = (rng.integers(0, clip.frames, 30) + rng.uniform(0.25, 0.75, 30)) * clip.dt
    which = rng.integers(0, 2, ts.shape)

    def at(t):
        a = ag.ops.sample(clip, t, mode="cubic", loop=True)
        b = ag.ops.sample(clip, t + 61 * clip.dt, mode="cubic", loop=True)
        return ag.ops.select([a, b], which)

    pose, vel, ang, _ = central_fd(at, ts, h)
    check_fd32(pose.vel, vel, np.abs(clip.pos).max(), h, "vel")
    check_fd32(pose.ang, ang, 2.0, h, "ang")
