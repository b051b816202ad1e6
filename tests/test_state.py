"""Instance.save_state / load_state: a rollback replays bit for bit; a wrong state is refused in one line.

The reference is always the same instance stepped on from the saved moment: after
``load_state`` every output of every later frame must be the identical array.
"""

import numpy as np
import pytest

import animgraph as ag
from animgraph import graphs

DT = 1 / 60


def drive(name, frame, batch):
    """Inputs that move on every shipped graph: switches every 7 frames, a weight, contacts, targets."""
    phase = (frame // 7) % 3
    known = {
        "clip": phase,
        "gait": np.arange(batch) % 3 if frame % 14 < 7 else phase,
        "alpha": (0.5 + 0.4 * np.sin(frame / 5.0), 0.4 * 12.0 * np.cos(frame / 5.0)),
        "rate": 1.0 + 0.2 * phase,
        "left_contact": (frame // 5) % 2 == 0,
        "right_contact": (frame // 5) % 2 == 1,
        "look_target": ((np.sin(frame / 9.0), 1.6, 2.0), (np.cos(frame / 9.0) * 60 / 9.0, 0.0, 0.0)),
        "hand_target": (0.3, 1.0 + 0.01 * frame, 0.4),
    }
    return known


def frozen(out):
    """Deep copies of step()'s outputs (its arrays are views rewritten by the next step)."""
    return {k: tuple(a.copy() for a in v.as_tuple()) if isinstance(v, ag.Pose) else (v.copy(),)
            for k, v in out.items()}


def assert_same(a, b, where):
    assert a.keys() == b.keys()
    for k in a:
        for x, y in zip(a[k], b[k]):
            np.testing.assert_array_equal(x, y, err_msg=f"{where}: output {k}")


def play(inst, name, frames, start, batch):
    """Outputs of ``frames`` steps driven from frame ``start``."""
    known = set(inst.plan.inputs)
    return [frozen(inst.step(DT, {k: v for k, v in drive(name, f, batch).items() if k in known}))
            for f in range(start, start + frames)]


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("name", graphs.names())
def test_rollback_replays_bit_for_bit(name, batch):
    inst = ag.compile(graphs.path(name), batch=batch).instance()
    k, m = 23, 25  # the saved moment sits between switches; the replay crosses several
    before = play(inst, name, k, 0, batch)[-1]
    saved = inst.save_state()
    first = play(inst, name, m, k, batch)
    views = inst.outputs
    inst.load_state(saved)
    assert inst.outputs is views
    assert_same(frozen(inst.outputs), before, "the output views after load")  # in place: they show frame k again
    again = play(inst, name, m, k, batch)
    for f, (x, y) in enumerate(zip(first, again)):
        assert_same(x, y, f"{name} frame {k + f}")
    # And the state can be loaded twice: a scrub back to the same moment.
    inst.load_state(saved)
    assert_same(play(inst, name, m, k, batch)[-1], first[-1], "second load")


def test_rollback_undoes_set_param_and_inputs():
    inst = ag.compile(graphs.path("select_inertialize")).instance()
    play(inst, "select_inertialize", 10, 0, 1)
    saved = inst.save_state()
    model = inst.nodes["smooth"]
    reference = [frozen(inst.step(DT, {"clip": 2})) for _ in range(20)]
    inst.load_state(saved)
    inst.set_param("smooth", "duration", 0.05)
    inst.set_inputs({"clip": 0})
    changed = [frozen(inst.step(DT)) for _ in range(20)]
    assert not np.array_equal(changed[-1]["out"][0], reference[-1]["out"][0])  # the edits did change the motion
    inst.load_state(saved)
    assert inst.nodes["smooth"] is model and inst.nodes["smooth"].duration == 0.3
    # The input is restored too: stepping without inputs continues the saved input (frame 9's clip), ...
    held = frozen(inst.step(DT))
    inst.load_state(saved)
    assert_same(frozen(inst.step(DT, {"clip": drive("", 9, 1)["clip"]})), held, "saved input")
    # ... and the original edits replay exactly.
    inst.load_state(saved)
    for f, want in enumerate(reference):
        assert_same(frozen(inst.step(DT, {"clip": 2})), want, f"frame {f}")


def test_state_moves_between_instances_of_one_plan():
    plan = ag.compile(graphs.path("select_dead_blend"), batch=2)
    a, b = plan.instance(), plan.instance()
    play(a, "select_dead_blend", 17, 0, 2)
    b.load_state(a.save_state())
    for f in range(17, 40):
        inputs = {"clip": (f // 7) % 3}
        assert_same(frozen(a.step(DT, inputs)), frozen(b.step(DT, inputs)), f"frame {f}")


def test_wrong_states_are_refused_in_one_line():
    path = graphs.path("select_inertialize")
    plan = ag.compile(path)
    inst = plan.instance()
    inst.step(DT)
    before = frozen(inst.outputs)
    other_plan = ag.compile(path).instance().save_state()  # the same file compiled again: a new layout owner
    other_batch = ag.compile(path, batch=2).instance().save_state()
    for bad, says in [(None, "NoneType"), ({"chars": 1}, "dict"), (other_plan, "another plan"),
                      (other_batch, "another plan")]:
        with pytest.raises(ag.GraphError, match=says) as e:
            inst.load_state(bad)
        assert "\n" not in str(e.value)
    assert_same(frozen(inst.outputs), before, "after refusals")  # nothing changed
