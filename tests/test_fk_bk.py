"""FK and BK: FK then BK is the identity at any scale; FK velocities are central differences."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import animgraph as ag
from fd import fk_positions, from_rotvec, qconj, qmul, rotvec
from test_kform import assert_kform_close, random_kforms


def random_parents(rng, joints):
    return np.array([-1] + [int(rng.integers(0, i)) for i in range(1, joints)])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_fk_then_bk_is_identity_at_any_scale(seed, joints):
    rng = np.random.default_rng(seed)
    parents = random_parents(rng, joints)
    local = random_kforms(rng, joints, scale_spread=0.3)
    # Keep chains from compounding scale to float32 overflow: shorten offsets instead.
    local.pos *= 0.3
    assert_kform_close(ag.ops.bk(ag.ops.fk(local, parents), parents), local, tol=1e-3)


def test_fk_batches_match_single_items():
    rng = np.random.default_rng(1)
    parents = random_parents(rng, 10)
    items = [random_kforms(rng, 10) for _ in range(6)]
    batch = ag.Pose(*(np.stack([getattr(p, f) for p in items]).reshape(2, 3, 10, -1)
                      for f in ag.pose.FIELDS))
    out = ag.ops.fk(batch, parents)
    for n, p in enumerate(items):
        single = ag.ops.fk(p, parents)
        np.testing.assert_array_equal(out.pos[n // 3, n % 3], single.pos)
        np.testing.assert_array_equal(out.ang[n // 3, n % 3], single.ang)


def test_fk_hand_checked_chain():
    # Root spinning at 1 rad/s about Y; child 1 m along x: moves at 1 m/s along -z.
    parents = [-1, 0]
    local = ag.Pose([[0, 0, 0], [1, 0, 0]], [[1, 0, 0, 0], [1, 0, 0, 0]],
                    ang=[[0, 1, 0], [0, 0, 0]])
    g = ag.ops.fk(local, parents)
    np.testing.assert_allclose(g.pos[1], [1, 0, 0])
    np.testing.assert_allclose(g.vel[1], [0, 0, -1], atol=1e-7)
    np.testing.assert_allclose(g.ang[1], [0, 1, 0])


def straight_local_motion(clip, frame, t):
    """Local (pos, rot, vel, ang) float64 arrays moving along straight lines and constant spins.

    Velocities are the central differences of the clip around ``frame``, so the
    motion's exact derivative at t = 0 is known without the sample node.
    """
    dt = clip.dt
    pos, rot = clip.pos.astype(float), clip.rot.astype(float)
    vel = (pos[frame + 1] - pos[frame - 1]) / (2 * dt)
    ang = rotvec(qmul(rot[frame + 1], qconj(rot[frame - 1]))) / (2 * dt)
    return pos[frame] + t * vel, qmul(from_rotvec(ang * t), rot[frame]), vel, ang


FK_TOL = 1e-4  # |fd - vel| / (1 + |fd|), m/s and rad/s: float32 FK vs float64 FD, h = 10 us
H = 1e-5


def test_fk_velocities_match_central_differences_on_clips(any_clip):
    skel, clip = any_clip
    rng = np.random.default_rng(7)
    ones = np.ones((len(skel), 3))
    worst = 0.0
    for frame in rng.integers(1, clip.frames - 1, size=12):
        pos, rot, vel, ang = straight_local_motion(clip, frame, 0.0)
        g = ag.ops.fk(ag.Pose(pos, rot, vel=vel, ang=ang), skel.parents)
        gp, gr, _ = fk_positions(*straight_local_motion(clip, frame, H)[:2], ones, skel.parents)
        gm, gq, _ = fk_positions(*straight_local_motion(clip, frame, -H)[:2], ones, skel.parents)
        fd_vel = (gp - gm) / (2 * H)
        fd_ang = rotvec(qmul(gr, qconj(gq))) / (2 * H)
        for fd, got in ((fd_vel, g.vel), (fd_ang, g.ang)):
            worst = max(worst, (np.abs(fd - got) / (1 + np.abs(fd))).max())
    print(f"{clip.name}: worst FK velocity error {worst:.2e}")
    assert worst < FK_TOL, f"{clip.name}: worst FK velocity error {worst:.2e}"
