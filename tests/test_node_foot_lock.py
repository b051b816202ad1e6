"""foot_lock / ag.ops.FootLock: parameters, the inertialized lock, unlocking, IK pinning, velocities.

Velocities are checked against central differences of the node's own output stepped
from the same state with ``dt +- h`` (float64 kernel, h = 1e-5 s), relative to
max(|fd|, 1e-2); tolerance 1e-4.  Contacts come from ``animgraph.preprocess.foot_contacts``.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import animgraph as ag
from animgraph.node import BuildContext
from animgraph.nodes.foot_lock import (
    HOLD_SOFT,
    SOFT,
    ST,
    STATE_SIZE,
    FootLock,
    FootLockNode,
    foot_lock_update,
    held_toe,
    HOLD_TURN,
    update_hold,
)
from animgraph.ik import REACH_SOFT
from animgraph.preprocess import foot_contacts
from test_node_two_bone_ik import (
    FD_TOL,
    H,
    HIP,
    LEG_OFFSETS,
    LEG_PARENTS,
    TOE,
    as_pose,
    clip_motion,
    fd_errors,
    global64,
    leg_skeleton,
    report,
    straight_motion,
)

LEG = ("hip", "knee", "ankle", "toe")
CMU_LEFT_KNEE = (0.94, 0.342, 0.0)  # hinge of the CMU left knee in its own frame


def params(skel, joints=("left_hip", "left_knee", "left_foot", "left_toe"), radius=0.2, halflife=0.1, height=0.02,
           hinge=(1.0, 0.0, 0.0), **swing):
    node = FootLockNode(id="lock", joints=list(joints), unlock_radius=radius, halflife=halflife, foot_height=height,
                        hinge=hinge, **swing)
    return node.params(BuildContext(skeleton=skel))


def step64(p, parents, par, st, contact, dt):
    """One float64 update from state ``st`` (copied): (pose, locked (6,), new state)."""
    st = st.copy()
    locked = np.zeros(6)
    out = tuple(a.copy() for a in p)
    foot_lock_update(out, np.asarray(parents, np.int64), par, st, bool(contact), float(dt), locked, 0)
    return out, locked, st


def bent_leg(root_vel=(0.0, 0.0, 0.0)):
    """The synthetic leg standing with a bent knee, the pelvis moving at ``root_vel``."""
    rot = np.tile([1.0, 0.0, 0.0, 0.0], (5, 1))
    rot[2] = [math.cos(0.3), math.sin(0.3), 0.0, 0.0]  # knee bent 0.6 rad about x
    rot[3] = [math.cos(-0.3), math.sin(-0.3), 0.0, 0.0]  # foot back level
    vel = np.zeros((5, 3))
    vel[0] = root_vel
    return straight_motion(LEG_OFFSETS, rot, vel, np.zeros((5, 3)))


# ---------------------------------------------------------------- validity


def test_bad_parameters_are_refused():
    skel = leg_skeleton()
    ctx = BuildContext(skeleton=skel)
    ok = FootLockNode(id="lock", joints=list(LEG))
    # plant_halflife and lift_halflife: halflife's; clearance 0, forward_only off
    assert list(ok.params(ctx)) == [1, 2, 3, 4, 0.2, 0.1, 0.02, 1.0, 0.0, 0.0, 0.1, 0.0, 0.1, 0.0]
    assert list(ok.state(ctx)) == [0.0] * STATE_SIZE
    bad = [
        {"radius": 0.2},  # unknown key
        {"unlock_radius": -0.1},
        {"unlock_radius": 0.0},
        {"halflife": -1.0},
        {"halflife": 61.0},
        {"plant_halflife": -0.1},
        {"plant_halflife": float("inf")},
        {"lift_halflife": -0.01},
        {"clearance": -0.01},
        {"clearance": float("nan")},
        {"forward_only": "sometimes"},
        {"foot_height": float("nan")},
        {"joints": ["hip", "knee", "ankle"]},
        {"hinge": [0, 0, 0]},
    ]
    for extra in bad:
        with pytest.raises(ValidationError):
            FootLockNode(id="lock", **{"joints": list(LEG), **extra})
    with pytest.raises(ag.GraphError, match="'lock'.*'joints'.*unknown joint 'heel'"):
        FootLockNode(id="lock", joints=["hip", "knee", "heel", "toe"]).params(ctx)
    with pytest.raises(ag.GraphError, match="not an ancestor of toe"):
        FootLockNode(id="lock", joints=["pelvis", "hip", "knee", "pelvis"]).params(ctx)
    with pytest.raises(ValueError, match="FootLock unlock_radius: .*greater than 0"):
        FootLock(unlock_radius=-0.2)
    with pytest.raises(ValueError, match="unknown joint 'left_hip'"):
        FootLock().update(as_pose(bent_leg()(0.0)), skel, True, 1 / 60)  # default joints are CMU aliases


# ---------------------------------------------------------------- behaviour


def test_lock_blends_in_by_halflife_to_foot_height():
    # A still leg, contact from the first frame: the lock takes the toe's x, z at foot
    # height and the offset (toe height - foot height) decays as (1 + y t) e^(-y t).
    halflife, dt = 0.1, 1 / 60
    skel = leg_skeleton()
    local = as_pose(bent_leg()(0.0))
    toe = ag.ops.fk(local, LEG_PARENTS).pos[4].astype(float)
    height = toe[1] - 0.03  # within the leg's reach
    lock = FootLock(halflife=halflife, foot_height=height, joints=LEG)
    y = 2 * math.log(2) / halflife
    for n in range(40):
        out = lock.update(local, skel, True, dt)
        t = n * dt  # the first update locks (t = 0)
        decay = (1 + y * t) * math.exp(-y * t)
        want = height + (toe[1] - height) * decay
        np.testing.assert_allclose(lock.locked_pos, [toe[0], want, toe[2]], atol=1e-6)
        rate = -(toe[1] - height) * y * y * t * math.exp(-y * t)
        np.testing.assert_allclose(lock.locked_vel, [0, rate, 0], atol=1e-6)
        # The IK puts the toe on the lock.
        np.testing.assert_allclose(ag.ops.fk(out, LEG_PARENTS).pos[4], lock.locked_pos, atol=2e-6)
    # Contact ends: the lock position blends back to the animated toe the same way.
    held = lock.locked_pos.copy()
    for n in range(40):
        lock.update(local, skel, False, dt)
    np.testing.assert_allclose(lock.locked_pos, toe, atol=2e-3 * abs(held[1] - toe[1]) + 1e-6)


def test_lock_blends_in_by_plant_halflife_and_out_by_halflife():
    # The same still leg: with plant_halflife the offset decays by it while locked, and after
    # the contact ends the release blends back by halflife (both exact for the frame time).
    plant, halflife, dt = 0.03, 0.2, 1 / 60
    skel = leg_skeleton()
    local = as_pose(bent_leg()(0.0))
    toe = ag.ops.fk(local, LEG_PARENTS).pos[4].astype(float)
    height = toe[1] - 0.03
    lock = FootLock(halflife=halflife, plant_halflife=plant, foot_height=height, joints=LEG)
    y = 2 * math.log(2) / plant
    for n in range(12):
        lock.update(local, skel, True, dt)
        t = n * dt
        want = height + (toe[1] - height) * (1 + y * t) * math.exp(-y * t)
        np.testing.assert_allclose(lock.locked_pos[1], want, atol=1e-6)
    # The contact ends: the step up to the release was still locked (plant_halflife) ...
    lock.update(local, skel, False, dt)
    t = 12 * dt
    want = height + (toe[1] - height) * (1 + y * t) * math.exp(-y * t)
    np.testing.assert_allclose(lock.locked_pos[1], want, atol=1e-6)
    # ... and from there the offset from the animated toe decays by halflife.
    x0, v0 = lock.locked_pos[1] - toe[1], lock.locked_vel[1]
    y = 2 * math.log(2) / halflife
    for n in range(1, 20):
        lock.update(local, skel, False, dt)
        t = n * dt
        want = toe[1] + (x0 + (v0 + y * x0) * t) * math.exp(-y * t)
        np.testing.assert_allclose(lock.locked_pos[1], want, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.01, 0.5), st.floats(0.01, 0.5), st.floats(0.01, 0.5), st.lists(st.booleans(), min_size=4, max_size=10),
       st.integers(2, 9))
def test_lock_is_exact_for_any_frame_time(halflife, plant, lift, contacts, substeps):
    # A still leg and contacts that switch only at the ends of whole frames: stepping each frame
    # in ``substeps`` pieces gives the same lock (position and velocity) as one step per frame,
    # whatever the two half-lives: each decays in closed form over the steps it covers.
    skel = leg_skeleton()
    local = as_pose(bent_leg()(0.0))
    height = ag.ops.fk(local, LEG_PARENTS).pos[4, 1] - 0.03
    whole = FootLock(halflife=halflife, plant_halflife=plant, lift_halflife=lift, foot_height=height, joints=LEG)
    split = whole.copy()
    dt, before = 1 / 30, False
    for contact in contacts:
        whole.update(local, skel, contact, dt)
        for k in range(substeps):  # the switch happens at the frame's end, as for the whole step
            split.update(local, skel, contact if k == substeps - 1 else before, dt / substeps)
        before = contact
        np.testing.assert_allclose(split.locked_pos, whole.locked_pos, rtol=0, atol=1e-9)
        np.testing.assert_allclose(split.locked_vel, whole.locked_vel, rtol=0, atol=1e-8)


def test_clearance_keeps_the_free_toe_above_foot_height():
    # A still leg whose toe is 3 cm above foot height, never in contact: with a 5 cm clearance
    # the lock position rises to foot_height + 5 cm (the smooth max is the max this far out of
    # its band), the leg reaches it, and at rest its velocity is 0; without, it stays put.
    skel, dt = leg_skeleton(), 1 / 60
    local = as_pose(bent_leg()(0.0))
    toe = ag.ops.fk(local, LEG_PARENTS).pos[4].astype(float)
    height = toe[1] - 0.03
    lifted = FootLock(foot_height=height, clearance=0.05, joints=LEG)
    free = FootLock(foot_height=height, joints=LEG)
    out = lifted.update(local, skel, False, dt)
    np.testing.assert_allclose(lifted.locked_pos, [toe[0], height + 0.05, toe[2]], atol=1e-6)
    np.testing.assert_allclose(lifted.locked_vel, 0.0, atol=1e-9)
    np.testing.assert_allclose(ag.ops.fk(out, LEG_PARENTS).pos[4], lifted.locked_pos, atol=1e-5)
    free.update(local, skel, False, dt)
    np.testing.assert_allclose(free.locked_pos, toe, atol=1e-6)
    # Its own half-life: released from a lock at foot height, the toe rises by lift_halflife.
    lock = FootLock(foot_height=height, clearance=0.05, lift_halflife=0.02, halflife=0.2, joints=LEG)
    lock.update(local, skel, True, dt)
    for _ in range(40):
        lock.update(local, skel, True, dt)  # settled on the lock at foot height
    lock.update(local, skel, False, dt)  # the release: the step up to it was still locked
    x0, v0 = lock.locked_pos[1] - (height + 0.05), lock.locked_vel[1]
    assert x0 < -0.04
    y = 2 * math.log(2) / 0.02
    for n in range(1, 10):
        lock.update(local, skel, False, dt)
        t = n * dt
        want = height + 0.05 + (x0 + (v0 + y * x0) * t) * math.exp(-y * t)
        assert lock.locked_pos[1] == pytest.approx(want, abs=1e-6), n
        assert lock.locked_pos[2] == pytest.approx(toe[2], abs=1e-6)  # across: only the height moved


def test_a_toe_that_turns_back_is_held_on_a_plane_across_the_travel():
    """Hand cases of the hold, in a still model frame: the plane follows the furthest point, then keeps the toe."""
    still = (0.0, 0.0, 0.0)
    state = np.zeros(STATE_SIZE)
    travel = (0.0, 0.0, 1.0)

    def kept(p, v, travel=travel):
        update_hold(state, p, travel, 0.2)
        return held_toe(state, p, v, still, still)

    # Going forward: the plane follows HOLD_SOFT behind, and the toe is as animated.
    for z in (0.5, 0.52):
        p, v = (0.0, 0.0, z), (0.1, 0.0, 0.3)
        q, qv = kept(p, v)
        np.testing.assert_allclose(state[ST.hold_point:ST.hold_point + 3], (0.0, 0.0, z - HOLD_SOFT), atol=1e-15)
        np.testing.assert_allclose(q, p, atol=1e-15)
        np.testing.assert_allclose(qv, v, atol=1e-15)
    # Back by more than HOLD_SOFT: kept on the plane along the travel, as animated across it.
    q, qv = kept((0.02, 0.01, 0.48), (0.1, 0.05, -0.2))
    np.testing.assert_allclose(q, (0.02, 0.01, 0.52 - HOLD_SOFT), atol=1e-12)
    np.testing.assert_allclose(qv, (0.1, 0.05, 0.0), atol=1e-12)
    # In the band the plane stays and the smooth max has the toe between plane and animation;
    # HOLD_SOFT past the plane it is as animated again and the plane moves on.
    z = 0.52 - 0.5 * HOLD_SOFT
    q, qv = kept((0.0, 0.0, z), (0.0, 0.0, 1.0))
    assert state[ST.hold_point + 2] == pytest.approx(0.52 - HOLD_SOFT)
    assert z < q[2] < z + 0.2 * HOLD_SOFT and 0.0 < qv[2] < 1.0
    q, qv = kept((0.0, 0.0, 0.53), (0.0, 0.0, 1.0))
    assert state[ST.hold_point + 2] == pytest.approx(0.53 - HOLD_SOFT)
    np.testing.assert_allclose(q, (0.0, 0.0, 0.53), atol=1e-15)
    # Held back, then let go (the node's offset takes the jump) when the character stops, turns
    # more than HOLD_TURN away, or leaves the toe more than the radius behind; a new plane
    # then starts HOLD_SOFT behind the toe.
    for p, direction in (((0.0, 0.0, 0.5), still), ((0.0, 0.0, 0.5), (1.0, 0.0, 0.0)), ((0.0, 0.0, 0.3), travel)):
        kept((0.0, 0.0, 0.53), (0.0, 0.0, 1.0))
        kept((0.0, 0.0, 0.52), (0.0, 0.0, -1.0))
        assert state[ST.held] == 1.0 and state[ST.hold_point + 2] == pytest.approx(0.53 - HOLD_SOFT)
        q, qv = kept(p, (0.0, 0.0, -1.0), direction)
        np.testing.assert_allclose(q, p, atol=1e-15)
        np.testing.assert_allclose(qv, (0.0, 0.0, -1.0), atol=1e-15)
        assert state[ST.held] == (0.0 if direction == still else 1.0)
    assert HOLD_TURN == pytest.approx(math.cos(math.radians(45.0)))


def test_a_hold_lets_go_through_the_offset():
    """The pelvis walks on while the leg swings forward, then back (held), then the pelvis stops (let go).

    The lock position never goes back more than HOLD_SOFT while held, does not jump when the
    hold lets go (the offset takes the difference), and then returns to the animated toe.
    """
    skel, dt = leg_skeleton(), 1 / 60
    lock = FootLock(foot_height=0.0, forward_only=True, halflife=0.05, joints=LEG)
    pos, rot = LEG_OFFSETS.copy(), np.tile([1.0, 0.0, 0.0, 0.0], (5, 1))
    spin = np.zeros((5, 3))
    locked, animated, t = [], [], 0.0
    for walk, hip_spin, frames in ((0.5, -1.0, 12), (0.5, 2.0, 8), (0.0, 0.0, 30)):
        vel = np.zeros((5, 3))
        vel[0, 2] = walk
        spin[:] = 0.0
        spin[HIP, 0] = hip_spin  # about x: the toe, 0.9 m below, swings along z
        motion = straight_motion(pos, rot, vel, spin)
        for n in range(1, frames + 1):
            local = motion(n * dt)
            lock.update(as_pose(local), skel, False, dt)
            locked.append(lock.locked_pos.copy())
            animated.append(global64(local, LEG_PARENTS)[0][TOE])
        pos, rot = local[0].copy(), local[1].copy()
    locked, animated = np.array(locked, float), np.array(animated, float)
    held = locked[:20, 2]  # back at 1.3 m/s for 8 frames: not yet the unlock radius (0.2 m) behind
    assert np.max(np.maximum.accumulate(held) - held) <= HOLD_SOFT + 1e-6  # kept from going back
    assert animated[19, 2] < held.max() - 0.1  # while the animated toe did go back
    step = np.linalg.norm(np.diff(locked, axis=0), axis=1)
    assert step.max() < 0.05, step.max()  # no jump, the let-go at frame 20 included (toe speed <= 2.3 m/s)
    assert np.linalg.norm(locked[26] - locked[19]) > 0.05  # it did let go: the toe goes back to the animation
    assert np.linalg.norm(locked[-1] - animated[-1]) < 0.01  # back on the animation


@pytest.mark.parametrize("name, side", [("jog", "right"), ("run_stop", "left")])
def test_forward_only_free_toes_never_go_back(name, side):
    """On bundled clips whose free toes go back 5-6 mm against the root's travel, forward_only keeps
    that under HOLD_SOFT (measured along each frame's travel, integrated), and the toe never jumps."""
    skel, clip = ag.data.load(name)
    leg = [f"{side}_{j}" for j in ("hip", "knee", "foot", "toe")]
    contact = foot_contacts(skel, clip, joints=(leg[3],))[:, 0]
    pose = ag.ops.sample(clip, np.arange(clip.frames) * clip.dt)  # with its velocities
    world = ag.ops.fk(pose, skel.parents).pos.astype(float)
    root, toe = world[:, 0, [0, 2]], world[:, skel.index(leg[3])]
    fastest = np.linalg.norm(np.diff(toe, axis=0), axis=1).max()
    travel = np.gradient(root, axis=0)
    travel /= np.linalg.norm(travel, axis=1, keepdims=True)
    hinge = CMU_LEFT_KNEE if side == "left" else (0.94, -0.342, 0.0)
    back = {}
    for forward in (True, False):
        lock = FootLock(foot_height=0.035, hinge=hinge, joints=leg, forward_only=forward, plant_halflife=0.03)
        locked = []
        for f in range(clip.frames):
            lock.update(ag.Pose(*(a[f] for a in pose.as_tuple())), skel, contact[f], clip.dt)
            locked.append(lock.locked_pos.copy())
        locked = np.array(locked, float)
        ahead = np.einsum("ij,ij->i", np.gradient(locked[:, [0, 2]], axis=0), travel)
        back[forward] = max(float(np.max(np.maximum.accumulate(np.cumsum(ahead[a:b])) - np.cumsum(ahead[a:b])))
                            for a, b in _runs(np.flatnonzero(contact == 0)) if b - a > 1)
        step = np.linalg.norm(np.diff(locked, axis=0), axis=1)
        assert step.max() < 1.2 * fastest, forward  # no jump: never much faster than the animated toe
    assert back[True] <= HOLD_SOFT, back
    assert back[False] > 1.5 * HOLD_SOFT, back  # the clip's toes do go back: the test can fail


def _runs(frames):
    """(start, stop) of each run of consecutive frame indices in the sorted array ``frames``."""
    if len(frames) == 0:
        return []
    cuts = np.flatnonzero(np.diff(frames) > 1) + 1
    return [(int(r[0]), int(r[-1]) + 1) for r in np.split(frames, cuts)]


def test_unlock_radius_releases_the_lock():
    # The pelvis walks away at 1 m/s with the contact held: the lock lets go once the
    # animated toe is farther than the radius, and does not lock again until a new contact.
    radius, dt = 0.15, 1 / 100
    motion = bent_leg(root_vel=(0.0, 0.0, 1.0))
    par = params(leg_skeleton(), LEG, radius=radius, height=global64(motion(0.0), LEG_PARENTS)[0][4][1] - 0.01)
    st = np.zeros(STATE_SIZE)
    point = None
    for n in range(60):
        p = motion(n * dt)
        toe = global64(p, LEG_PARENTS)[0][4]
        _, locked, st = step64(p, LEG_PARENTS, par, st, True, dt)
        point = st[ST.point:ST.point + 3].copy() if point is None else point  # the locked point (at foot height)
        assert st[ST.lock] == (1.0 if np.linalg.norm(toe - point) <= radius else 0.0), n
    assert st[ST.lock] == 0.0
    # The released lock position converges to the animated toe.
    assert np.linalg.norm(locked[:3] - toe) < 0.05 * radius


def test_transitions_do_not_pop():
    # On the frame a contact starts or ends, position and velocity of the lock equal
    # those without the transition: the offset takes up the jump exactly.
    skel, clip = ag.data.load("walk")
    contact = foot_contacts(skel, clip, joints=("left_toe",))[:, 0]
    par = params(skel, hinge=CMU_LEFT_KNEE)
    st = np.zeros(STATE_SIZE)
    switches = 0
    for f in range(clip.frames):
        p = clip_motion(clip, f)(0.0)
        _, locked, new = step64(p, skel.parents, par, st, contact[f], clip.dt)
        if f > 0 and contact[f] != contact[f - 1]:
            same = st.copy()
            same[0] = float(contact[f])  # no edge: the state machine sees no change
            _, ref, _ = step64(p, skel.parents, par, same, contact[f], clip.dt)
            if new[1] != same[1]:  # a lock or release really happened
                switches += 1
                np.testing.assert_allclose(locked, ref, rtol=0, atol=1e-12)
        st = new
    assert switches >= 4


def test_toe_stays_locked_during_contacts(bundled_clip):
    # Half-life 0.05 s: after 0.15 s of lock the blend has settled; from then on, wherever
    # the leg can reach, the toe sits on the lock and the lock moves less than 3 mm.
    skel, clip = bundled_clip
    contact = foot_contacts(skel, clip, joints=("left_toe",))[:, 0]
    toe, hip, foot = (skel.index(j) for j in ("left_toe", "left_hip", "left_foot"))
    lock = FootLock(halflife=0.05, foot_height=0.035, hinge=CMU_LEFT_KNEE)
    anim = ag.ops.fk(ag.Pose(clip.pos, clip.rot), skel.parents).pos[:, toe]
    reach, lock_start = None, None
    since, checked, moved, slid = 0, 0, [0.0], [0.0]
    for f in range(clip.frames):
        out = lock.update(as_pose(clip_motion(clip, f)(0.0)), skel, contact[f], clip.dt)
        g = ag.ops.fk(out, skel.parents)
        if reach is None:
            reach = sum(np.linalg.norm(g.pos[j] - g.pos[skel.parents[j]]) for j in (foot, skel.parents[foot]))
        locked = lock.state[0, 1] > 0.5
        since = since + 1 if locked else 0
        if since * clip.dt >= 0.15 and np.linalg.norm(g.pos[foot] - g.pos[hip]) < REACH_SOFT * reach:
            assert np.linalg.norm(g.pos[toe] - lock.locked_pos) < 1e-4, f
            if lock_start != f - since:  # first checked frame of this lock
                lock_start, first, first_anim = f - since, lock.locked_pos.copy(), anim[f]
            moved.append(np.linalg.norm(lock.locked_pos - first))
            slid.append(np.linalg.norm(anim[f] - first_anim))
            checked += 1
    print(f"foot_lock {clip.name}: {checked} settled reachable locked frames; locked toe moved <= "
          f"{1000 * max(moved):.2f} mm where the animated toe slid {1000 * max(slid):.1f} mm")
    assert max(moved) < 3e-3  # m
    if clip.name in ("walk", "walk_turn", "run_stop"):
        assert checked > 20


def test_fresh_lock_mid_motion_matches_one_that_ran_from_the_start():
    # Half-life 0.02 s: between contacts the offset decays to nothing, so a FootLock made
    # there has the same state as the old one, and from then on gives the same output.
    skel, clip = ag.data.load("walk")
    contact = foot_contacts(skel, clip, joints=("left_toe",))[:, 0]
    old = FootLock(halflife=0.02, foot_height=0.035, hinge=CMU_LEFT_KNEE)
    fresh, start = None, None
    for f in range(clip.frames):
        local = as_pose(clip_motion(clip, f)(0.0))
        st = old.state
        if fresh is None and f > 100 and not contact[f - 1] and st[0, ST.lock] == 0.0 and np.abs(st[0, ST.off:]).max() < 1e-9:
            fresh, start = FootLock(halflife=0.02, foot_height=0.035, hinge=CMU_LEFT_KNEE), f
        a = old.update(local, skel, contact[f], clip.dt)
        if fresh is not None:
            b = fresh.update(local, skel, contact[f], clip.dt)
            np.testing.assert_allclose(fresh.locked_pos, old.locked_pos, rtol=0, atol=1e-9)
            np.testing.assert_allclose(fresh.locked_vel, old.locked_vel, rtol=0, atol=1e-8)
            for x, y in zip(b.as_tuple(), a.as_tuple()):
                np.testing.assert_allclose(x, y, rtol=0, atol=1e-6)
    assert start is not None and clip.frames - start > 60 and contact[start:].any()


def test_reset_and_batches():
    skel, clip = ag.data.load("walk")
    contact = foot_contacts(skel, clip, joints=("left_toe",))[:, 0]
    kw = dict(foot_height=0.035, hinge=CMU_LEFT_KNEE)
    single, other, batch = FootLock(**kw), FootLock(**kw), FootLock(**kw)
    frames = range(30, 130)
    for f in frames:
        single.update(ag.Pose(clip.pos[f], clip.rot[f]), skel, contact[f], clip.dt)
    single.reset()
    for f in frames:
        pose = ag.Pose(clip.pos[f], clip.rot[f])
        a = single.update(pose, skel, contact[f], clip.dt)
        b = other.update(ag.Pose(clip.pos[f + 50], clip.rot[f + 50]), skel, contact[f + 50], clip.dt)
        both = ag.Pose(*(np.stack([x, y]) for x, y in zip(pose.as_tuple(), (clip.pos[f + 50], clip.rot[f + 50]))))
        c = batch.update(both, skel, [contact[f], contact[f + 50]], clip.dt)
        np.testing.assert_array_equal(c.rot[0], a.rot)
        np.testing.assert_array_equal(c.rot[1], b.rot)
        np.testing.assert_array_equal(batch.locked_vel, np.stack([single.locked_vel, other.locked_vel]))
    assert contact[frames.start:frames.stop].any() and not contact[frames.start:frames.stop].all()
    with pytest.raises(ValueError, match="reset"):
        batch.update(ag.Pose(clip.pos[0], clip.rot[0]), skel, True, clip.dt)


# ---------------------------------------------------------------- velocities


def lock_fd_errors(skel, clip, frames, halflife=0.1, **swing):
    """FD errors of the foot lock stepped through ``frames`` of a clip (float64)."""
    contact = foot_contacts(skel, clip, joints=("left_toe",))[:, 0]
    par = params(skel, halflife=halflife, height=0.035, hinge=CMU_LEFT_KNEE, **swing)
    st = np.zeros(STATE_SIZE)
    errs, lock_errs = [], []
    for f in frames:
        motion = clip_motion(clip, f)

        def out_at(t):
            return step64(motion(t), skel.parents, par, st, contact[f], clip.dt + t)

        errs.append(fd_errors(lambda t: out_at(t)[0]))
        (_, lp, _), (_, lm, _) = out_at(H), out_at(-H)
        vel = (lp[:3] - lm[:3]) / (2 * H)
        locked = out_at(0.0)[1]
        lock_errs.append(np.linalg.norm(locked[3:] - vel) / max(np.linalg.norm(vel), 1e-2))
        st = out_at(0.0)[2]
    return errs, np.array(lock_errs)


def test_velocities_match_central_differences_on_clips(any_clip):
    skel, clip = any_clip
    frames = range(min(clip.frames, 600))
    errs, lock_errs = lock_fd_errors(skel, clip, frames)
    worst, p99 = report(f"foot_lock {clip.name}", errs + [lock_errs])
    assert worst < FD_TOL, f"{clip.name}: worst relative velocity error {worst:.2e}"


def test_swing_velocities_match_central_differences_on_clips(any_clip):
    """With the swing lifted (clearance, lift_halflife) and held forward: the smooth maxima's rates are exact too."""
    skel, clip = any_clip
    frames = range(min(clip.frames, 600))
    errs, lock_errs = lock_fd_errors(skel, clip, frames, clearance=0.05, lift_halflife=0.03, forward_only=True)
    worst, p99 = report(f"foot_lock swing {clip.name}", errs + [lock_errs])
    assert worst < FD_TOL, f"{clip.name}: worst relative velocity error {worst:.2e}"


# ---------------------------------------------------------------- node contract


def test_node_kernel_through_the_contract():
    skel, clip = ag.data.load("walk")
    contact = foot_contacts(skel, clip, joints=("left_toe",))[:, 0]
    node = FootLockNode(id="lock", joints=["left_hip", "left_knee", "left_foot", "left_toe"], foot_height=0.035,
                        hinge=CMU_LEFT_KNEE)
    ctx = BuildContext(skeleton=skel)
    par, st = node.params(ctx), node.state(ctx)
    J = len(skel)
    pose = tuple(np.zeros((2, J, n), np.float32) for n in (3, 4, 3, 3, 3, 3))
    sig = np.zeros(8)
    ins, outs = np.array([0, 7, -1], np.int64), np.array([1, 0], np.int64)  # contact at 7, locked at 0..5, no root motion
    db = (np.zeros((1, J, 3), np.float32), np.zeros((1, J, 4), np.float32), np.ones((1, J, 3), np.float32),
          skel.parents.astype(np.int64))
    ref = FootLock(foot_height=0.035, hinge=CMU_LEFT_KNEE)
    for f in range(40, 120):
        local = as_pose(clip_motion(clip, f)(0.0))
        for buf, a in zip(pose, local.as_tuple()):
            buf[0] = a
        sig[7] = float(contact[f])
        type(node).KERNEL(ins, outs, par, st, pose, sig, db, clip.dt)
        want = ref.update(local, skel, contact[f], clip.dt)
        for buf, a in zip(pose, want.as_tuple()):
            np.testing.assert_array_equal(buf[1], a)
        np.testing.assert_array_equal(sig[:3], ref.locked_pos)
        np.testing.assert_array_equal(sig[3:6], ref.locked_vel)
    assert contact[40:120].any() and not contact[40:120].all()
