"""Bad arguments to the public API: one ValueError (GraphError for graphs and instances) naming the
argument, never a bare TypeError/AttributeError/UnicodeDecodeError/RecursionError; and a step
that fails changes nothing."""

import numpy as np
import pytest

import animgraph as ag

DT = 1 / 60


def test_errors_are_value_errors():
    assert issubclass(ag.AnimgraphError, ValueError)
    assert issubclass(ag.GraphError, ag.AnimgraphError) and issubclass(ag.BVHError, ag.AnimgraphError)


# ---------------------------------------------------------------- Instance.step / set_inputs


@pytest.fixture(scope="module")
def signals():
    nodes = [{"id": "w", "type": "input", "signal": "scalar", "default": 0.25},
             {"id": "c", "type": "input", "signal": "scalar", "min": -1.0, "max": 1.0},
             {"id": "n", "type": "input", "signal": "int", "default": 3},
             {"id": "v", "type": "input", "signal": "vec3"},
             {"id": "q", "type": "input", "signal": "quat"}]
    nodes += [{"id": f"{x}o", "type": "output", "signal": s} for x, s in
              (("w", "scalar"), ("c", "scalar"), ("n", "int"), ("v", "vec3"), ("q", "quat"))]
    links = [[f"{x}.value", f"{x}o.value"] for x in "wcnvq"]
    graph = ag.Graph.from_dict({"format": "animgraph.graph", "version": 1, "nodes": nodes, "links": links})
    return ag.compile(graph, batch=2)


def snapshot(out):
    return {k: np.array(v, copy=True) for k, v in out.items()}


@pytest.mark.parametrize("bad, words", [
    ("0.3", "got str"), (None, "got NoneType"), ({}, "got dict"), (b"1", "got bytes"),
    ([0.1, 0.2, 0.3], "shape"), ([[0.1], [0.2, 0.3]], "regular array"), (1j, "complex"),
    (float("nan"), "not finite"), (1e300, "outside"), ((0.5, "fast"), "str"), ((0.5, 1e10), "outside"),
])
def test_failed_step_names_the_input_and_changes_nothing(signals, bad, words):
    inst = signals.instance()
    before = snapshot(inst.step(DT, {"w": 0.5}))
    with pytest.raises(ag.GraphError, match=words) as info:
        inst.step(DT, {"v": [1.0, 2.0, 3.0], "n": 7, "w": bad})  # the first two are fine
    assert info.value.node == "w" and "w" in str(info.value)
    after = snapshot(inst.step(0.0))
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


def test_failed_dt_applies_no_input(signals):
    inst = signals.instance()
    before = snapshot(inst.step(DT))
    for dt in (-1e-9, float("nan"), float("inf"), 1e3 + 1, "0.1", None, True):
        with pytest.raises(ag.GraphError, match="dt"):
            inst.step(dt, {"w": 0.9})
    after = snapshot(inst.step(0.0))
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])


def test_dt_edges_are_accepted(signals):
    inst = signals.instance()
    for dt in (0.0, 0, 5e-324, 1e3, np.float32(DT)):
        inst.step(dt)


def test_int_input_refuses_huge_values_and_rounds_half_up(signals):
    inst = signals.instance()
    for huge in (1e300, -1e300, 10**30, 2e9):
        with pytest.raises(ag.GraphError, match="outside"):
            inst.step(DT, {"n": huge})
    assert inst.step(DT, {"n": 1e9})["no"][0, 0] == 1e9
    assert inst.step(DT, {"n": -2.5})["no"][0, 0] == -2.0
    assert inst.step(DT, {"n": np.array([1.5, 2.49])})["no"][:, 0].tolist() == [2.0, 2.0]


def test_input_is_clamped_to_its_min_and_max_with_rate_zero(signals):
    inst = signals.instance()
    out = inst.step(DT, {"c": (5.0, 2.0)})
    np.testing.assert_array_equal(out["co"], [[1.0, 0.0], [1.0, 0.0]])
    out = inst.step(DT, {"c": ([-3.0, 0.5], 2.0)})
    np.testing.assert_array_equal(out["co"], [[-1.0, 0.0], [0.5, 2.0]])


def test_zero_quaternion_is_refused(signals):
    inst = signals.instance()
    with pytest.raises(ag.GraphError, match="non-zero"):
        inst.step(DT, {"q": [0.0, 0.0, 0.0, 0.0]})
    out = inst.step(DT, {"q": [1e9, 1e9, 0.0, 0.0]})
    np.testing.assert_allclose(out["qo"][0, :4], [2 ** -0.5, 2 ** -0.5, 0, 0])


def test_inputs_must_be_a_dict_and_reset_time_in_range(signals):
    inst = signals.instance()
    with pytest.raises(ag.GraphError, match="dict"):
        inst.step(DT, [("w", 0.3)])
    with pytest.raises(ag.GraphError, match="reset time"):
        inst.reset(-1e17)
    with pytest.raises(ag.GraphError, match="reset time"):
        inst.reset("soon")
    with pytest.raises(ag.GraphError, match="characters"):
        inst.reset(0.0, characters=[5])
    inst.reset(1e6)


# ---------------------------------------------------------------- compile and Graph


@pytest.mark.parametrize("kwargs, words", [
    ({"graph": 123}, "graph must be"), ({"batch": "2"}, "batch"), ({"batch": 0}, "batch"), ({"batch": True}, "batch"),
    ({"batch": 2 ** 40}, "batch"), ({"assets": 5}, "assets"), ({"assets": {"x": "walk.bvh"}}, "assets"),
    ({"skeleton": "hips"}, "skeleton"),
])
def test_compile_names_the_bad_argument(kwargs, words):
    graph = kwargs.pop("graph", ag.Graph.from_dict({"format": "animgraph.graph", "version": 1}))
    with pytest.raises(ag.GraphError, match=words):
        ag.compile(graph, **kwargs)


@pytest.mark.parametrize("kwargs, words", [
    ({"nodes": 1}, "nodes"), ({"nodes": [{"id": "x", "type": "nope"}]}, "unknown node type"),
    ({"links": [["a", "b"]]}, "link 0"), ({"nodes": [{"id": "m", "type": "blend", "alpha": "0.3"}]}, "alpha.*text"),
    ({"nodes": [{"id": "m", "type": "look_at", "joint": "head", "forward": ["1", 0, 0]}]}, "forward.*text"),
])
def test_graph_constructor_raises_graph_error(kwargs, words):
    with pytest.raises(ag.GraphError, match=words):
        ag.Graph(**kwargs)


@pytest.mark.parametrize("data, words", [
    (b"\xff\xfe{}", "not UTF-8"), (b"[" * 100_000 + b"]" * 100_000, "nested"), (b"[1, 2]", "JSON object"),
    (b'{"format": "animgraph.graph", "format": "animgraph.graph", "version": 1}', "duplicate key 'format'"),
    (b'{"format": "animgraph.graph", "version": 1, "editor": {"x": 1e309}}', "too large"),
    (b'{"format": "animgraph.graph", "version": 1, "editor": {"x": ' + b"9" * 5000 + b"}}", "digits"),
    (b'{"format": "animgraph.graph", "version": 1, "editor": {"x": ' + b"[" * 40 + b"]" * 40 + b"}}", "nested"),
    (b'{"format": "animgraph.graph", "version": 1, "nodes": 5}', "nodes"),
    (b'{"format": "animgraph.graph", "version": 1, "nodes": [{"id": "w", "type": "input", "default": 1e300}]}',
     "node 'w' port 'default'.*less than or equal to 1000000000"),
])
def test_load_names_the_file(tmp_path, data, words):
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    with pytest.raises(ag.GraphError, match=words) as info:
        ag.Graph.load(path)
    assert "bad.json" in str(info.value) and "\n" not in str(info.value)


def test_load_rejects_a_non_path():
    with pytest.raises(ag.GraphError, match="path"):
        ag.Graph.load(12)


# ---------------------------------------------------------------- ops and data constructors


@pytest.fixture(scope="module")
def walk():
    skel, clip = ag.data.load("walk")
    return skel, clip, ag.ops.sample(clip, 0.1)


def bad_calls(skel, clip, pose):
    """(name of the bad argument, call) for each public function given a wrong argument."""
    par = skel.parents
    return [
        ("clip", lambda: ag.ops.sample(None, 0.0)),
        ("time", lambda: ag.ops.sample(clip, "0.3")),
        ("time", lambda: ag.ops.sample(clip, -1e17)),
        ("rate", lambda: ag.ops.sample(clip, 0.0, rate="fast")),
        ("mode", lambda: ag.ops.sample(clip, 0.0, mode=3)),
        ("local", lambda: ag.ops.fk(None, par)),
        ("parents", lambda: ag.ops.fk(pose, par[:-1])),
        ("parents", lambda: ag.ops.fk(pose, "hips")),
        ("global_", lambda: ag.ops.bk([1, 2], par)),
        ("parents", lambda: ag.ops.bk(pose, np.arange(len(par)))),
        ("a", lambda: ag.ops.blend(1, pose, 0.5)),
        ("b", lambda: ag.ops.blend(pose, "p", 0.5)),
        ("alpha", lambda: ag.ops.blend(pose, pose, "0.3")),
        ("alpha_vel", lambda: ag.ops.blend(pose, pose, 0.3, None)),
        ("base", lambda: ag.ops.additive(None, pose, 1.0)),
        ("add", lambda: ag.ops.additive(pose, 3, 1.0)),
        ("side", lambda: ag.ops.additive(pose, pose, 1.0, side=["parent"])),
        ("local", lambda: ag.ops.look_at(3, skel, "head", (0, 1, 1))),
        ("target_pos", lambda: ag.ops.look_at(pose, skel, "head", "there")),
        ("joint", lambda: ag.ops.look_at(pose, skel, ["head"], (0, 1, 1))),
        ("weight", lambda: ag.ops.look_at(pose, skel, "head", (0, 1, 1), weight=2.0)),
        ("forward", lambda: ag.ops.look_at(pose, skel, "head", (0, 1, 1), forward="z")),
        ("joints", lambda: ag.ops.two_bone_ik(pose, skel, 5, (0, 1, 1))),
        ("target_vel", lambda: ag.ops.two_bone_ik(pose, skel, ("right_shoulder", "right_elbow", "right_hand"),
                                                  (0, 1, 1), target_vel=[1, 2])),
        ("duration", lambda: ag.ops.Inertializer(duration="0.2")),
        ("halflife", lambda: ag.ops.Inertializer(halflife=-1.0)),
        ("src", lambda: ag.ops.Inertializer().transition(None, pose)),
        ("dt", lambda: ag.ops.Inertializer().update(pose, -DT)),
        ("input", lambda: ag.ops.Inertializer().update("pose", DT)),
        ("duration", lambda: ag.ops.DeadBlender(duration=[0.5])),
        ("pose", lambda: ag.ops.DeadBlender().transition(None)),
        ("dt", lambda: ag.ops.DeadBlender().update(pose, "1")),
        ("halflife", lambda: ag.ops.FootLock(halflife="x")),
        ("unlock_radius", lambda: ag.ops.FootLock(unlock_radius=float("inf"))),
        ("dt", lambda: ag.ops.FootLock().update(pose, skel, True, None)),
        ("contact", lambda: ag.ops.FootLock().update(pose, skel, "yes", DT)),
        ("a", lambda: ag.kform.mul(1, pose)),
        ("b", lambda: ag.kform.div(pose, object())),
        ("a", lambda: ag.kform.inv(None)),
        ("poses", lambda: ag.ops.select(5, 0)),
        ("pos", lambda: ag.Pose("a", "b")),
        ("rot", lambda: ag.Pose(np.zeros((2, 3)), None)),
        ("names", lambda: ag.Skeleton(1, [-1], [[0, 0, 0]])),
        ("parents", lambda: ag.Skeleton(["a"], ["root"], [[0, 0, 0]])),
        ("offsets", lambda: ag.Skeleton(["a"], [-1], "zero")),
        ("skeleton", lambda: ag.Clip(None, np.zeros((1, 1, 3)), np.zeros((1, 1, 4)))),
        ("dt", lambda: ag.Clip(skel, clip.pos, clip.rot, dt="fast")),
    ]


def test_public_functions_name_the_bad_argument(walk):
    skel, clip, pose = walk
    for name, call in bad_calls(skel, clip, pose):
        try:
            call()
        except ValueError as e:
            assert name in str(e), f"{name}: {e}"
            assert "\n" not in str(e), str(e)
        else:
            pytest.fail(f"{name}: accepted")


def test_tracking_spring_names_the_bad_field():
    with pytest.raises(ValueError, match="TrackingSpring position_halflife: .*less than or equal to 60") as info:
        ag.ops.TrackingSpring("scalar", position_halflife=1e9)
    assert "\n" not in str(info.value)
