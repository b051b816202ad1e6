"""Sample a clip at any time: linear (2 keys) or cubic Hermite (4 keys), exact velocities.

Between key k and key k+1 at fraction ``s = t/dt - k`` every channel is a Hermite curve
``x(s) = h00 x_k + h10 m_k + h01 x_k1 + h11 m_k1`` whose key tangents ``m`` are central
differences of the neighbouring keys (Catmull-Rom; linear mode is ``h00 = 1-s, h01 = s``).
Positions interpolate as they are, scales as ``log(scl)``.  Rotations are interpolated in
the chart at key k: ``r = log(q q_k^-1)`` as a rotation vector, so ``r_k = 0`` and
``r_k1 = log(q_k1 q_k^-1)`` (shortest path).  A key's tangent is its angular velocity
``w_k = (log(q_k+1 q_k^-1) - log(q_k-1 q_k^-1)) / 2`` (per frame), mapped into the chart
by the inverse left Jacobian, so the angular velocity is continuous across keys.  Then
``rot = exp(r) q_k`` and ``ang = J(r) dr/dt`` (left Jacobian): the exact derivative.
Every velocity is ``d/ds`` divided by the clip's ``dt`` and multiplied by the playback
rate; a looping clip interpolates from its last key back to its first like any other
segment (period = frames * dt); a clamped clip holds its end keys with zero velocity.

Everything that does not depend on the sampling time is computed once per clip, at plan
time, into a key table (``key_table``, the node's ``db[KEYS]``): per key and joint the
normalized rotation ``q_k``, ``r1``, the chart tangents ``m_k`` and ``m_k1`` (those of a
looping clip; a clamped clip's one-sided end tangents are both ``r1``) and ``log(scl)``, all
rounded to float32.  Per sample and joint there remain the Hermite weights, one exp map and
(cubic) its left Jacobian from the same sin and cos; linear mode needs no Jacobian, since
``dr/ds = r1`` is parallel to ``r = s r1`` and ``J(r) r1 = r1``, and takes its exp map from
the Taylor series (``maths.qexp_series``: ``|r| <= pi``, no sin or cos).  Clips whose scales are all
exactly 1 skip the scale channels (``db[UNIT_SCALE]``).  ``sample_kernel`` builds the same rows on the
fly from the clip's keys, so both paths give identical results.

Root motion (``root_motion: true``): the node asks the planner for a root-relative variant
of the clip (``clip_variant``, ``preprocess.root_motion_clip``): each root joint relative to
the simulation bone (the upper spine projected to the ground, facing with the hips); its
table ``db[ROOT_MOTION]`` holds per frame the bone's velocity and turn rate in its own
frame (``preprocess.motion_track``), which the node interpolates like a channel and
outputs, times the playback rate, as a ``motion`` signal.  The graph's output node
integrates that signal into the character's placement, so a looping clip whose root
travels plays on without snapping back (a looping variant is also made seamless: the
mismatch between its last and first frame is spread over the clip), and a switch or
blend of motions (``select``/``blend`` with ``signal: motion``, carried through
``inertialize``/``dead_blend``) changes the velocity, never the position.

Contacts (``contacts: true``): per clip a table of the toes' contacts (``contact_table``: the
clip's ``left_contact``/``right_contact`` tracks, ``animgraph.tracks``, at its key times; a
root-relative variant keeps the tracks of the clip as captured), output as
``left_contact``/``right_contact`` at the key *nearest* the sampled time: the same time as the
pose, so looping, rate and the ``time`` input move them alike.

Sync (``sync_group``, ``animgraph.sync``): samples of one group play in step, plant to plant; the group's
node (``nodes/sync_group.py``) drives their ``time`` inputs, each at the time its own clip's plant markers give
for the group's phase and that time's rate, so the velocities below stay exact.

Events (``animgraph.events``): the instants and ranges of the played clip's tracks (the derived plants and
contacts, an asset's own) that the node's clock passes in a step go to the caller (``Instance.events``): on the
own clock its advance from the time this frame shows by ``rate * dt`` (a point fires at ``(x - start) / rate`` s
after a reset, whatever the steps), driven by ``time`` the move from the last step's time to this one's (a looping
clip's time given modulo the loop moves the lap its rate says, so a wrap is not a backward jump); forward or
backward, through loops, every lap of a long step.  A sync group's time shows the step's start as an own clock
does, so a member's events look ahead as an own clock's: on from its time at its rate, from where the last step's
crossings ended.  A reset or teleport ends the ranges open (detail ``reset``, ``teleport``); after a teleport they
reopen; so does the branch that stops running the node (``sample_closing``).  Events carry the ``weight`` input
(the planner links the effective weight: ``animgraph.sync``) and are dropped under ``event_min_weight``; in a sync
group only the member that ``leads`` turns its plants and contacts into events.

Time left (``time_left``, always output): the seconds until the clip's end at the current playback
rate (its start when the rate is negative), ``R / |rate|`` with ``R`` the clip seconds still to
play from the sampled time; ``TIME_LEFT_NEVER`` with rate 0 for a looping clip, a rate of 0, or
more than that far away.  Its rate: the clip time moves at ``rate``, so ``dR/dt = -|rate|`` and
``d/dt (R / |rate|) = -1 - (R / |rate|) d|rate|/dt / |rate|``, with ``d|rate|/dt`` from the
``rate`` signal's own rate.  Driven by the ``time`` input, the rate is the time's rate, whose
own rate the signal does not carry: it is taken as 0 (exact for a time moving at a steady rate,
such as a state machine's ``<state>_time``).  So "leave when the clip is about to end" is a
scalar condition ``below`` on it.
"""

import copy
import math
from typing import ClassVar, Literal, Optional

import numpy as np
from animgraph.jit import njit
from pydantic import Field, PrivateAttr

from animgraph.maths import (
    ang_to_sa_dx,
    from_scaled_angle_axis_ang,
    load3,
    load4,
    qexp_series,
    qinv,
    qmul,
    qnormalize,
    store3,
    store4,
    to_scaled_angle_axis,
    vadd,
    vexp,
    vlog,
    vscale,
    vsub,
)
from animgraph.kernels import basis, get3, keys, put3, segment, set_row3, set_row4
from animgraph.lanes import LANES, tile_slot
from animgraph.lanes_ops import sample_clip_cubic_tile, sample_clip_tile
from animgraph.limits import RATE_MAX, TIME_MAX
from animgraph.node import (
    DB_POS,
    DB_ROT,
    DB_PARENTS,
    DB_SCL,
    ClipTable,
    Node,
    Port,
    db_indices,
    fields,
    port_indices,
    register,
    slot,
)
from animgraph.errors import GraphError
from animgraph.events import CAP, POINT, RANGE, clock_events, close_ranges, points, reason_id
from animgraph.phase import MarkerError, whole_cycles
from animgraph.poseops import fk_frames
from animgraph.preprocess import loop_cut, motion_track, repeat_features, root_motion_clip, seamless
from animgraph.tracks import EPS, TOES, clip_tracks, contacts_at, has_feet
from animgraph.pose import Clip, Pose, number, numbers
from animgraph.stencil import stencil
from animgraph.views import alive, borrowed, flat

ZERO = (0.0, 0.0, 0.0)
ONE = (1.0, 1.0, 1.0)
KEY_WIDTH = 16  # key table columns: rot (4), r1 (3), m0 (3), m1 (3), log scl (3)
ROT, R1, M0, M1, LOG_SCL = 0, 4, 7, 10, 13
LOOP_CUT_WINDOW = 0.15  # s each end of a gait-cycle loop may move to where the pose repeats (cycle_clip)
TABLE_SAMPLES_PER_FRAME = 3  # ops.sample builds the key table for at least frames / 3 times (break-even)

INPUTS = (
    Port("time", "scalar", "", "sampling time (s) and its rate; unlinked and null: own clock", True),
    Port("rate", "scalar", "", "playback rate of the own clock (default: field rate)", True),
    Port("weight", "scalar", "", "the weight its events carry (a sync group links its effective weight; default 1)",
         True),
    Port("leads", "bool", "", "whether it leads its sync group: only the leader emits the foot's plants and "
         "contacts (a sync group links it; default true)", True),
)
# The motion output exists only with root_motion, the contacts only with contacts (``Sample.outputs``):
# motion is second when present, the contacts follow.
OUTPUTS = (
    Port("pose", "pose", "local", "sampled local pose with velocities"),
    Port("time_left", "scalar", "", "seconds until the clip's end (start, playing backwards) at the current rate "
         "and its rate; 1e9 when looping or at rate 0"),
    Port("motion", "motion", "", "root motion: the simulation bone's velocity and angular velocity in its own frame"),
    Port("left_contact", "bool", "", "the left toe is planted at the sampled time (the clip's nearest key)"),
    Port("right_contact", "bool", "", "the right toe is planted at the sampled time (the clip's nearest key)"),
)
IN, OUT = port_indices("SampleIn", INPUTS), port_indices("SampleOut", OUTPUTS)
# The clip's frames in the graph's frame array, its frame time (s), and the flags of the fields (the rate is a
# signal: the planner feeds an unlinked rate port its field).
# Then for events: their source (its op index), the events' weight threshold, and the numbers of points and
# ranges of its clip's tracks, which follow (``animgraph.events.points``: POINT, then RANGE numbers each).
PAR = fields("SamplePar", start=1, frames=1, key_dt=1, cubic=1, loop=1, root_motion=1, contacts=1, source=1,
             min_weight=1, points=1, ranges=1, ahead=1)
# The own clock (s); for events the time input's last time (s; ahead: where the last step's crossings ended) and
# whether the clock is fresh (after a reset);
# then one flag per range of the clip's tracks (``animgraph.events``: closed, open or interrupted).
ST = fields("SampleSt", clock=1, last=1, fresh=1)
TIME_LEFT_NEVER = 1e9  # s: the time left of a clip that never ends (looping, or at rate 0)


@njit(cache=True)
def hermite(w, x0, m0, x1, m1):
    """Hermite curve value (or d/ds, given derivative weights) from key values x and tangents m."""
    return vadd(vadd(vscale(x0, w[0]), vscale(m0, w[1])), vadd(vscale(x1, w[2]), vscale(m1, w[3])))


@njit(cache=True)
def tangents(xm, x0, x1, x2, span0, span1):
    """Central-difference tangents (per frame) at keys k and k+1."""
    return vscale(vsub(x1, xm), 1.0 / span0), vscale(vsub(x2, x0), 1.0 / span1)


@njit(cache=True)
def rel(q, q0):
    """Rotation vector of ``q`` relative to ``q0`` on the left, the short way round."""
    return to_scaled_angle_axis(qmul(q, qinv(q0)))


@njit(cache=True)
def chart_tangents(r_prev, r1, r_next):
    """Rotation tangents (rad per frame) at keys k and k+1 in the chart at key k.

    ``r_prev``, ``r1``, ``r_next``: rotation vectors of the segments k-1 -> k, k -> k+1 and
    k+1 -> k+2.  The keys' angular velocities are central differences; the one at k+1
    enters the chart through the inverse left Jacobian.
    """
    return vscale(vadd(r_prev, r1), 0.5), ang_to_sa_dx(r1, vscale(vadd(r1, r_next), 0.5))


@njit(cache=True)
def f32(v):
    """vec3 rounded to float32, as the key table stores it."""
    return (np.float64(np.float32(v[0])), np.float64(np.float32(v[1])), np.float64(np.float32(v[2])))


@njit(cache=True)
def f32q(q):
    """Quaternion rounded to float32, as the key table stores it."""
    return (np.float64(np.float32(q[0])), np.float64(np.float32(q[1])), np.float64(np.float32(q[2])),
            np.float64(np.float32(q[3])))


@njit(cache=True, entry=True)
def fill_key_table(rot, scl, out):
    """Key table (F, J, KEY_WIDTH) of one clip's rotations (F, J, 4) and scales (F, J, 3) into ``out``.

    The rows ``key_rotation`` builds on the fly, each segment's rotation vector computed once.
    """
    frames = rot.shape[0]
    qn = np.empty((frames, 4))
    r1 = np.empty((frames, 3))
    for j in range(rot.shape[1]):
        for f in range(frames):
            store4(qn, f, qnormalize(load4(rot[f], j)))
        for f in range(frames):
            store3(r1, f, rel(load4(qn, (f + 1) % frames), load4(qn, f)))
        for f in range(frames):
            m0, m1 = chart_tangents(load3(r1, (f - 1) % frames), load3(r1, f), load3(r1, (f + 1) % frames))
            row = out[f]
            store4(row, j, load4(qn, f))  # columns ROT = 0 .. 3
            put3(row, j, R1, load3(r1, f))
            put3(row, j, M0, m0)
            put3(row, j, M1, m1)
            put3(row, j, LOG_SCL, vlog(load3(scl[f], j)))


def key_table(clip):
    """(float32 key table (F, J, KEY_WIDTH), whether every scale is exactly 1) of ``clip``, for sampling."""
    out = np.empty((clip.frames, len(clip.skeleton), KEY_WIDTH), np.float32)
    fill_key_table(np.ascontiguousarray(clip.rot), np.ascontiguousarray(clip.scl), out)
    return out, bool(np.all(clip.scl == 1.0))


def unit_scale_table(clip):
    """(F,) 1.0 on every frame of a clip whose scales are all exactly 1 (its scale channels are skipped), else 0."""
    return np.full(clip.frames, float(np.all(clip.scl == 1.0)), np.float32)


def root_motion_table(clip):
    """(F, 6) the simulation bone's velocity (m/s) and angular velocity (rad/s) in its own frame; zero without a bone."""
    if clip.root_pos is None:
        return np.zeros((clip.frames, 6), np.float32)
    return motion_track(clip.root_pos, clip.root_rot, clip.dt)


def contact_table(clip):
    """(F, 2) 1.0 where the left / right toe is planted at each key, else 0: the clip's ``left_contact`` /
    ``right_contact`` tracks (``animgraph.tracks``: set at asset load, else derived now) at the key times.

    A clip that carries its own per-frame contacts for both toes (``clip.contacts``) gives those instead.
    """
    skel = clip.skeleton
    if clip.contacts is not None and all(t in clip.contact_joints for t in TOES):
        cols = [list(clip.contact_joints).index(t) for t in TOES]
        return np.asarray(clip.contacts, bool)[:, cols].astype(np.float32)
    return contacts_at(clip_tracks(skel, clip), np.arange(clip.frames) * clip.dt)


# The sample node's per-frame tables (``db[KEYS]`` ... in its kernel), computed per clip at plan time.
CLIP_TABLES = (
    ClipTable("keys", ("joints", KEY_WIDTH), lambda clip: key_table(clip)[0]),
    ClipTable("unit_scale", (), unit_scale_table),
    ClipTable("root_motion", (6,), root_motion_table),
    ClipTable("contacts", (2,), contact_table),
)
KEYS, UNIT_SCALE, ROOT_MOTION, CONTACTS = db_indices(CLIP_TABLES)


@njit(cache=True)
def key_rotation(rot, frames, k, j, cubic):
    """(q_k, r1, m0, m1) of key ``k`` of joint ``j`` as the key table holds them, from the clip's keys.

    Linear sampling does not use the tangents: zero unless ``cubic``.
    """
    q0 = qnormalize(load4(rot[k], j))
    q1 = qnormalize(load4(rot[(k + 1) % frames], j))
    r1 = rel(q1, q0)
    if not cubic:
        return f32q(q0), f32(r1), ZERO, ZERO
    qm = qnormalize(load4(rot[(k - 1) % frames], j))
    q2 = qnormalize(load4(rot[(k + 2) % frames], j))
    m0, m1 = chart_tangents(rel(q0, qm), r1, rel(q2, q1))
    return f32q(q0), f32(r1), f32(m0), f32(m1)


@njit(cache=True)
def log_key(scl, j):
    """log(scale) of joint ``j`` in a clip frame, as the key table holds it."""
    return f32(vlog(load3(scl, j)))


@njit(cache=True, error_model="numpy")
def rotation_at(w, dw, cubic, q0, r1, m0, m1):
    """Rotation ``exp(r(s)) q0`` on the chart curve of one segment and its angular velocity per frame."""
    if cubic:
        e, ang = from_scaled_angle_axis_ang(hermite(w, ZERO, m0, r1, m1), hermite(dw, ZERO, m0, r1, m1))
        return qmul(e, q0), ang
    # Linear: r = s r1 moves along itself, where the left Jacobian is the identity.
    return linear_rotation(w[2], q0, r1), r1


@njit(inline="always")
def linear_rotation(s, q0, r1):
    """``exp(s r1) q0``: |r1| <= pi (the short way round), so the half angle is at most pi/2 and the exp map's
    series needs no sin or cos."""
    return qmul(qexp_series(vscale(r1, 0.5 * s)), q0)


@njit(cache=True, error_model="numpy")
def channel_at(w, dw, cubic, xm, x0, x1, x2, span0, span1):
    """Hermite curve of one vec3 channel and its derivative per frame, from keys k-1 .. k+2."""
    m0 = ZERO
    m1 = ZERO
    if cubic:
        m0, m1 = tangents(xm, x0, x1, x2, span0, span1)
    return hermite(w, x0, m0, x1, m1), hermite(dw, x0, m0, x1, m1)


@njit(cache=True)
def sample_kernel(cpos, crot, cscl, start, frames, key_dt, t, rate, cubic, loop, out):
    """Write the local pose of clip frames ``start..start+frames-1`` at time ``t`` (s) into ``out``.

    Velocities are the time derivative of the interpolant times ``rate``.  The reference
    path: key-table rows are built on the fly (the same values ``key_table`` stores).
    """
    k, s, moving = segment(t, frames, key_dt, loop, rate)
    km, k0, k1, k2, span0, span1 = keys(k, frames, loop)
    w, dw = basis(s, cubic)
    vs = rate / key_dt if moving else 0.0
    rot = crot[start:start + frames]
    first, last = not loop and k == 0, not loop and k == frames - 2
    for j in range(out[0].shape[0]):
        p, dp = channel_at(w, dw, cubic, load3(cpos[start + km], j), load3(cpos[start + k0], j),
                           load3(cpos[start + k1], j), load3(cpos[start + k2], j), span0, span1)
        store3(out[0], j, p)
        store3(out[3], j, vscale(dp, vs))
        lm = ZERO
        l2 = ZERO
        if cubic:  # the outer keys only shape the tangents
            lm = log_key(cscl[start + km], j)
            l2 = log_key(cscl[start + k2], j)
        ls, dls = channel_at(w, dw, cubic, lm, log_key(cscl[start + k0], j), log_key(cscl[start + k1], j), l2,
                             span0, span1)
        store3(out[2], j, vexp(ls))
        store3(out[5], j, vscale(dls, vs))
        q0, r1, m0, m1 = key_rotation(rot, frames, k, j, cubic)
        q, ang = rotation_at(w, dw, cubic, q0, r1, r1 if first else m0, r1 if last else m1)
        store4(out[1], j, q)
        store3(out[4], j, vscale(ang, vs))


@njit(cache=True, error_model="numpy")
def channel_rows(w, dw, cubic, xm, x0, x1, x2, c, span0, span1, vs, exp_values, out_x, out_dx):
    """Every joint's vec3 channel (columns ``c..c+2`` of key rows k-1 .. k+2) and its rate times ``vs``.

    ``exp_values``: the channel is a log-scale, write ``exp`` of it.
    """
    for j in range(out_x.shape[0]):
        x, dx = channel_at(w, dw, cubic, get3(xm, j, c), get3(x0, j, c), get3(x1, j, c), get3(x2, j, c), span0, span1)
        store3(out_x, j, vexp(x) if exp_values else x)
        store3(out_dx, j, vscale(dx, vs))


@njit(cache=True, error_model="numpy")
def rotation_rows(w, dw, cubic, row, first, last, vs, out_rot, out_ang):
    """Every joint's rotation and angular velocity from key table row k.

    ``first``/``last``: the segment is a clamped clip's first/last, with one-sided end tangents.
    """
    for j in range(out_rot.shape[0]):
        r1 = get3(row, j, R1)
        m0 = r1 if first else get3(row, j, M0)
        m1 = r1 if last else get3(row, j, M1)
        q, ang = rotation_at(w, dw, cubic, load4(row, j), r1, m0, m1)  # columns ROT = 0 .. 3
        store4(out_rot, j, q)
        store3(out_ang, j, vscale(ang, vs))


@njit(cache=True, error_model="numpy")
def linear_rows(s, x0, x1, c, vs, exp_values, out_x, out_dx):
    """``channel_rows`` of a linear sample: the same sums, without the Hermite tangents' zero terms."""
    for j in range(out_x.shape[0]):
        a, b = get3(x0, j, c), get3(x1, j, c)
        x = vadd(vscale(a, 1.0 - s), vscale(b, s))
        store3(out_x, j, vexp(x) if exp_values else x)
        store3(out_dx, j, vscale(vsub(b, a), vs))


@njit(cache=True, error_model="numpy")
def lerp_rows(s, x0, x1, vs, out_x, out_dx):
    """``linear_rows`` of positions, keys ``x0``, ``x1`` (J, 3): one loop over every number, packed by LLVM."""
    a_, b_, x, dx = flat(x0), flat(x1), flat(out_x), flat(out_dx)
    for i in range(x.size):
        a, b = np.float64(a_[i]), np.float64(b_[i])
        x[i] = a * (1.0 - s) + b * s
        dx[i] = (b - a) * vs


@njit(cache=True, error_model="numpy")
def linear_rotation_rows(s, row, vs, out_rot, out_ang):
    """``rotation_rows`` of a linear sample (``rotation_at``'s linear case on every joint).

    On flat views with the key table's row width a constant, so LLVM packs joints.
    """
    keys, rot, ang = flat(row), flat(out_rot), flat(out_ang)
    for j in range(rot.size // 4):
        k = j * KEY_WIDTH
        q0 = (np.float64(keys[k + ROT]), np.float64(keys[k + ROT + 1]), np.float64(keys[k + ROT + 2]),
              np.float64(keys[k + ROT + 3]))
        r1 = (np.float64(keys[k + R1]), np.float64(keys[k + R1 + 1]), np.float64(keys[k + R1 + 2]))
        set_row4(rot, j, linear_rotation(s, q0, r1))
        set_row3(ang, j, vscale(r1, vs))


@njit(cache=True, error_model="numpy")
def sample_keys_kernel(cpos, ktab, unit, start, frames, key_dt, t, rate, cubic, loop, out):
    """``sample_kernel`` reading the precomputed key table ``ktab`` and unit-scale flags ``unit`` (``CLIP_TABLES``).

    One pass over the joints per channel: short loops without per-joint branches (the mode
    is chosen once: a per-joint ``if cubic`` measured 0.4 us of a 65-joint linear sample).
    """
    k, s, moving = segment(t, frames, key_dt, loop, rate)
    km, k0, k1, k2, span0, span1 = keys(k, frames, loop)
    w, dw = basis(s, cubic)
    vs = rate / key_dt if moving else 0.0
    km, k0, k1, k2 = km + start, k0 + start, k1 + start, k2 + start
    unit_scale = unit[start] > 0.5
    if unit_scale:
        scl, svl = flat(out[2]), flat(out[5])  # flat loops: a slice fill costs more per call
        for i in range(scl.size):
            scl[i], svl[i] = 1.0, 0.0
    if not cubic:
        lerp_rows(s, cpos[k0], cpos[k1], vs, out[0], out[3])
        if not unit_scale:
            linear_rows(s, ktab[k0], ktab[k1], LOG_SCL, vs, True, out[2], out[5])
        linear_rotation_rows(s, ktab[k0], vs, out[1], out[4])
        return
    channel_rows(w, dw, cubic, cpos[km], cpos[k0], cpos[k1], cpos[k2], 0, span0, span1, vs, False, out[0], out[3])
    if not unit_scale:
        channel_rows(w, dw, cubic, ktab[km], ktab[k0], ktab[k1], ktab[k2], LOG_SCL, span0, span1, vs, True,
                     out[2], out[5])
    rotation_rows(w, dw, cubic, ktab[k0], not loop and k == 0, not loop and k == frames - 2, vs, out[1], out[4])


@njit(cache=True)
def advance(clock, step, frames, key_dt, loop):
    """The clock (s) after playing ``step`` seconds: wrapped to one period, or clamped to the clip."""
    clock += step
    if loop:
        period = frames * key_dt
        clock -= period * math.floor(clock / period)
        if clock >= period:
            clock = 0.0
        return clock
    return min(max(clock, 0.0), (frames - 1) * key_dt)


@njit(cache=True, own_code=True)
def sample_db(db, start, frames, key_dt, t, rate, cubic, loop, out):
    """Sample from the graph's clip database: its key table when it has one (``db[KEYS]``), else the keys."""
    if len(db) > KEYS:  # a constant when numba compiles: the other branch is pruned
        sample_keys_kernel(db[DB_POS], db[KEYS], db[UNIT_SCALE], start, frames, key_dt, t, rate, cubic, loop, out)
    else:
        sample_kernel(db[DB_POS], db[DB_ROT], db[DB_SCL], start, frames, key_dt, t, rate, cubic, loop, out)


@njit(cache=True, error_model="numpy")
def motion_at(motion, start, frames, key_dt, t, rate, cubic, loop):
    """Root motion (velocity m/s, angular velocity rad/s, the bone's frame) at time ``t`` (s), times ``rate``.

    The per-frame root motion rows are interpolated like any channel (values, not
    derivatives); a clamped clip at or past an end does not move.
    """
    k, s, moving = segment(t, frames, key_dt, loop, rate)
    km, k0, k1, k2, span0, span1 = keys(k, frames, loop)
    w, dw = basis(s, cubic)
    scale = rate if moving else 0.0
    km, k0, k1, k2 = km + start, k0 + start, k1 + start, k2 + start
    vel, _ = channel_at(w, dw, cubic, get3(motion, km, 0), get3(motion, k0, 0), get3(motion, k1, 0),
                        get3(motion, k2, 0), span0, span1)
    ang, _ = channel_at(w, dw, cubic, get3(motion, km, 3), get3(motion, k0, 3), get3(motion, k1, 3),
                        get3(motion, k2, 3), span0, span1)
    return vscale(vel, scale), vscale(ang, scale)


@njit(cache=True)
def put_motion(sig, at, db, start, frames, key_dt, t, rate, cubic, loop):
    """Write the root motion at time ``t`` (from ``db[ROOT_MOTION]``) into the signal block ``sig[at:at+6]``."""
    if len(db) > ROOT_MOTION:  # a constant when numba compiles: a db without root motion leaves it zero
        vel, ang = motion_at(db[ROOT_MOTION], start, frames, key_dt, t, rate, cubic, loop)
        for c in range(3):
            sig[at + c] = vel[c]
            sig[at + 3 + c] = ang[c]


@njit(cache=True)
def nearest_key(t, frames, key_dt, loop):
    """The key nearest to time ``t`` (s): wrapped like the pose when looping, clamped to the clip otherwise."""
    u = math.floor(t / key_dt + 0.5)
    if loop:
        k = u - frames * math.floor(u / frames)
        return int(k) if 0.0 <= k < frames else 0  # rounding of a time too large to wrap exactly
    return int(min(max(u, 0.0), frames - 1.0))


@njit(cache=True)
def put_contacts(sig, left, right, db, start, frames, key_dt, t, loop):
    """Write the contacts (1.0 / 0.0) of the key nearest ``t`` (from ``db[CONTACTS]``) to ``sig[left]``, ``sig[right]``."""
    if len(db) > CONTACTS:  # a constant when numba compiles: a db without the table leaves them 0
        row = db[CONTACTS][start + nearest_key(t, frames, key_dt, loop)]
        sig[left] = 1.0 if row[0] > 0.5 else 0.0
        sig[right] = 1.0 if row[1] > 0.5 else 0.0


@njit(cache=True)
def sample_time(ins, par, st, sig):
    """Sampling time (s) and rate of one character: the time port's, or the own clock and the rate port (or field)."""
    if ins[IN.time] >= 0:
        # Driven: sample at time.x, the time's own rate scales the velocities.
        t, rate = sig[ins[IN.time]], sig[ins[IN.time] + 1]
        if not (math.isfinite(t) and math.isfinite(rate)):
            return 0.0, 0.0
        return t, rate
    rate = sig[ins[IN.rate]]  # the planner feeds an unlinked rate port its field
    return st[ST.clock], rate if math.isfinite(rate) else 0.0


@njit(cache=True)
def time_left(t, rate, rate_dx, frames, key_dt, loop):
    """Seconds (and their rate) until the clip's end, its start when ``rate`` < 0, from clip time ``t`` (s).

    ``rate`` (s/s) and its rate ``rate_dx`` (1/s); ``TIME_LEFT_NEVER`` with rate 0 when it never ends (module doc).
    """
    if loop or rate == 0.0:
        return TIME_LEFT_NEVER, 0.0
    remaining = (frames - 1) * key_dt - t if rate > 0.0 else t
    if remaining <= 0.0:  # at (or past) the end it plays towards: the clip holds
        return 0.0, 0.0
    speed = abs(rate)
    left = remaining / speed
    if not left < TIME_LEFT_NEVER:
        return TIME_LEFT_NEVER, 0.0
    speed_dx = rate_dx if rate > 0.0 else -rate_dx
    return left, -1.0 - left * speed_dx / speed


@njit(cache=True)
def rate_rate(ins, sig):
    """The playback rate's own rate (1/s): the ``rate`` signal's on the own clock, 0 when the time input drives."""
    if ins[IN.time] >= 0 or ins[IN.rate] < 0:
        return 0.0
    dx = sig[ins[IN.rate] + 1]
    return dx if math.isfinite(dx) else 0.0


@njit(cache=True, own_code=True)
def sample_signals(ins, outs, par, st, sig, db, t, rate, dt):
    """After the pose: the time left, root motion and contacts at time ``t``, and the own clock advanced by
    ``rate * dt``."""
    start, frames, key_dt = int(par[PAR.start]), int(par[PAR.frames]), par[PAR.key_dt]
    cubic, loop, root_motion = par[PAR.cubic] > 0.5, par[PAR.loop] > 0.5, par[PAR.root_motion] > 0.5
    left, left_dx = time_left(t, rate, rate_rate(ins, sig), frames, key_dt, loop)
    sig[outs[OUT.time_left]] = left
    sig[outs[OUT.time_left] + 1] = left_dx
    if root_motion:
        put_motion(sig, outs[OUT.motion], db, start, frames, key_dt, t, rate, cubic, loop)
    if par[PAR.contacts] > 0.5:
        c = OUT.motion + 1 if root_motion else OUT.motion  # the contact ports follow the optional motion port
        put_contacts(sig, outs[c], outs[c + 1], db, start, frames, key_dt, t, loop)
    sample_events(ins, par, st, sig, t, rate, dt)
    if ins[IN.time] < 0:
        st[ST.clock] = advance(t, rate * dt, frames, key_dt, loop)


@njit(cache=True)
def sample_events(ins, par, st, sig, t, rate, dt):
    """This step's events of the clip's tracks (``animgraph.events.clock_events``): the crossings of the own clock's
    advance from ``t`` by ``rate * dt``, or of the time input's move from its last time to ``t`` (s), at the
    ``weight`` input's weight; the foot's only while it ``leads``."""
    n, r = int(par[PAR.points]), int(par[PAR.ranges])
    if n == 0 or sig[CAP] == 0.0:
        return
    frames, key_dt, loop = int(par[PAR.frames]), par[PAR.key_dt], par[PAR.loop] > 0.5
    fresh = st[ST.fresh] > 0.5
    length = frames * key_dt if loop else (frames - 1) * key_dt
    if ins[IN.time] >= 0 and par[PAR.ahead] > 0.5:
        # A sync group's time shows the step's start, as an own clock: on from it at its rate, from where the last
        # step's crossings ended (no point twice, none missed, if the group's next time is off that line).
        a = t if fresh else st[ST.last]
        if loop and length > 0.0:  # the time is given modulo the loop: its lap nearest a
            t += length * math.floor((a - t) / length + 0.5)
        b = t + rate * dt
        st[ST.last] = b - length * math.floor(b / length) if loop and length > 0.0 else b
    elif ins[IN.time] >= 0:
        a, b = (t if fresh else st[ST.last]), t
        st[ST.last] = t
        if loop and length > 0.0:  # a time given modulo the loop moves the lap its rate says
            b += length * math.floor((a + rate * dt - b) / length + 0.5)
    else:
        a, b = t, t + rate * dt
    weight = sig[ins[IN.weight]] if ins[IN.weight] >= 0 else 1.0
    leads = sig[ins[IN.leads]] > 0.5 if ins[IN.leads] >= 0 else True
    pts = par[PAR.SIZE:PAR.SIZE + POINT * n].reshape((n, POINT))
    spans = par[PAR.SIZE + POINT * n:PAR.SIZE + POINT * n + RANGE * r].reshape((r, RANGE))
    clock_events(sig, par[PAR.source], pts, spans, st[ST.SIZE:], a, b, loop, length, fresh, dt,
                 weight if math.isfinite(weight) else 0.0, par[PAR.min_weight], leads)
    st[ST.fresh] = 0.0


@njit(cache=True, entry=True, own_code=True)
def sample_closing(par, st, sig, why):
    """Its branch stops or restarts it (``animgraph.gates``; ``why`` the detail id, -1 neither): the ranges it has
    open end."""
    r = int(par[PAR.ranges])
    if why < 0.0 or r == 0 or sig[CAP] == 0.0:
        return
    at = PAR.SIZE + POINT * int(par[PAR.points])
    close_ranges(sig, par[PAR.source], par[at:at + RANGE * r].reshape((r, RANGE)), st[ST.SIZE:], why)


@njit(cache=True, inline="always")
def sample_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: sample the clip at the time port's time, or on the own clock (advanced by rate * dt)."""
    t, rate = sample_time(ins, par, st, sig)
    sample_db(db, int(par[PAR.start]), int(par[PAR.frames]), par[PAR.key_dt], t, rate, par[PAR.cubic] > 0.5,
              par[PAR.loop] > 0.5, slot(pose, outs[OUT.pose]))
    sample_signals(ins, outs, par, st, sig, db, t, rate, dt)


@njit(cache=True, own_code=True)
def sample_tile(ins, outs, par, st, tile, sig, db, dt):
    """The executor's call on a lane tile, from the key table in float32 (``lanes_ops.sample_clip_tile``,
    ``sample_clip_cubic_tile``)."""
    if len(db) <= KEYS:  # a constant when numba compiles
        return False
    start, frames, key_dt, loop = int(par[PAR.start]), int(par[PAR.frames]), par[PAR.key_dt], par[PAR.loop] > 0.5
    own_t, own_r = np.empty(LANES), np.empty(LANES)
    times, rates = borrowed(own_t), borrowed(own_r)  # uncounted in the loops
    for lane in range(LANES):
        times[lane], rates[lane] = sample_time(ins, par, st[lane], sig[lane])
    out = tile_slot(tile, outs[OUT.pose], db[DB_PARENTS].shape[0])
    unit = db[UNIT_SCALE][start] > 0.5
    if par[PAR.cubic] > 0.5:
        sample_clip_cubic_tile(db[DB_POS], db[KEYS], unit, start, frames, key_dt, loop, times, rates, out)
    else:
        sample_clip_tile(db[DB_POS], db[KEYS], unit, start, frames, key_dt, loop, times, rates, out)
    for lane in range(LANES):
        sample_signals(ins, outs, par, st[lane], sig[lane], db, times[lane], rates[lane], dt)
    alive(own_t), alive(own_r)
    return True


@register(sample_node, tile=sample_tile, closing=sample_closing)
class Sample(Node):
    """Play a clip: its local pose with exact velocities, on its own clock or at a given time."""

    type: Literal["sample"] = "sample"
    _ahead: bool = PrivateAttr(False)  # its time input is a sync group's (``sync_member``): events look ahead
    CLIP_TABLES: ClassVar[tuple] = CLIP_TABLES
    clip: str = Field(min_length=1, description="clip asset name")
    mode: Literal["linear", "cubic"] = "cubic"
    loop: bool = True
    rate: float = Field(
        1.0, ge=-RATE_MAX, le=RATE_MAX, allow_inf_nan=False, description=f"playback rate [-{RATE_MAX:g}, {RATE_MAX:g}]"
    )
    time: Optional[float] = Field(
        None, ge=-TIME_MAX, le=TIME_MAX, allow_inf_nan=False,
        description=f"fixed sampling time [-{TIME_MAX:g}, {TIME_MAX:g}] s; null runs the node's own clock",
    )
    start: float = Field(
        0.0, ge=-TIME_MAX, le=TIME_MAX, allow_inf_nan=False,
        description="where the own clock starts (s) on a reset and on entering its state (a clip's lead-in skipped)",
    )
    root_motion: bool = Field(
        False,
        description="separate the simulation bone: the pose comes out relative to it (root joints) and its "
        "motion comes out of the 'motion' port, for the output node to integrate; a looping clip is made seamless",
    )
    sync_group: Optional[str] = Field(
        None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="play in step with the other samples of this group, plant to plant (animgraph.sync); null: "
        "alone, or in the group of a blend space it feeds",
    )
    cycles: bool = Field(
        False,
        description="a looping sample plays its clip's whole gait cycles, from its first plant to the last plant of "
        "that foot (animgraph.phase), cut where the pose repeats: a sync group plays its looping samples so",
    )
    event_min_weight: float = Field(
        1e-5, ge=0.0, le=1.0, allow_inf_nan=False,
        description="events of a weight under this are dropped, and its open ranges end (animgraph.events)",
    )
    contacts: bool = Field(
        False,
        description="output 'left_contact' and 'right_contact': the clip's contact tracks (left_contact, "
        "right_contact: derived from its toes, or the asset's own) at the key nearest the sampled time",
    )

    CATEGORY = "sources"
    EVENTS = True
    EVENT_WEIGHT = "weight"  # the planner links its effective weight there (animgraph.sync.add_event_weights)
    RESET = ("a reset to time t sets the clock to t: the initial row is a reset to 0 s; its hook first ends the open "
             "ranges (events)")
    FIELD_KINDS = {"clip": "clip", "mode": "enum", "sync_group": "name"}
    INPUTS = INPUTS
    MOTION: ClassVar[Port] = OUTPUTS[OUT.motion]
    CONTACTS: ClassVar[tuple] = OUTPUTS[OUT.left_contact:]
    OUTPUTS = OUTPUTS[:OUT.motion]

    def outputs(self):
        return self.OUTPUTS + ((self.MOTION,) if self.root_motion else ()) + (self.CONTACTS if self.contacts else ())

    def warnings(self):
        if self.sync_group is not None and self.time is not None:
            return [f"plays at its fixed time {self.time:g} s: its sync_group {self.sync_group!r} is ignored"]
        return []

    def sync_member(self):
        """A sample can sync: the group then drives its ``time`` input, and its rate weighs in the group's (a sample at
        a fixed time has no clock to share: none).  A looping one plays its whole cycles (``cycles``), where the loop
        goes plant to plant."""
        if self.time is not None:
            return None
        driven = self.model_copy(update={"cycles": True} if self.loop else {})
        driven._ahead = True  # the group's time shows the step's start: its events look ahead, as an own clock's
        return {"group": self.sync_group, "clip": self.clip, "variant": driven._variant(), "loop": self.loop,
                "start": self.start, "rate": self.rate, "rate_port": "rate", "time_port": "time",
                "weight_port": "weight", "leads_port": "leads", "driven": driven}

    def _variant(self):
        if self.cycles and self.loop:
            return "root_cycles" if self.root_motion else "cycles"
        return ("root_loop" if self.loop else "root") if self.root_motion else ""

    def clip_variants(self):
        variant = self._variant()
        return ((self.clip, variant),) if variant else ()

    @classmethod
    def clip_variant(cls, skeleton, clip, variant):
        """The root-relative clip (``root`` or seamless ``root_loop``) with its simulation bone; ``cycles`` /
        ``root_cycles``: the whole gait cycles (``cycle_clip``)."""
        if variant in ("cycles", "root_cycles"):
            return cycle_clip(skeleton, clip, variant == "root_cycles")
        if variant not in ("root", "root_loop"):
            return super().clip_variant(skeleton, clip, variant)
        out = root_motion_clip(skeleton, clip, loop=variant == "root_loop")[0]
        # The tracks of the clip as captured, not of the seamless variant (``contact_table``).
        out.tracks = clip_tracks(skeleton, clip)
        return out

    def params(self, ctx):
        r = ctx.clip(self, "clip", self.clip, self._variant())
        if self.contacts and not has_feet(ctx.skeleton):
            raise GraphError(f"contacts need the skeleton's toes {' and '.join(TOES)} (canonical names)",
                             node=self.id, port="contacts")
        pts, spans = self._points(ctx)
        head = PAR.pack(start=r.start, frames=r.frames, key_dt=r.dt, cubic=self.mode == "cubic", loop=self.loop,
                        root_motion=self.root_motion, contacts=self.contacts, source=ctx.event_source(self),
                        min_weight=self.event_min_weight, points=len(pts), ranges=len(spans), ahead=self._ahead)
        return np.concatenate([head, pts.reshape(-1), spans.reshape(-1)])

    def state(self, ctx, time=0.0):
        """The own clock (s), set so that the first frame after a reset to ``time`` shows ``start + time``; a fresh
        clock for events, no range open."""
        _, spans = self._points(ctx)
        return np.concatenate([ST.pack(clock=self.start + time, last=0.0, fresh=1.0), np.zeros(len(spans))])

    def _points(self, ctx):
        """(points, ranges) of the played clip's tracks (``animgraph.events.points``): none without a clip."""
        r = ctx.clip(self, "clip", self.clip, self._variant())
        tracks = getattr(r.clip, "tracks", None)
        if tracks is None:
            return np.zeros((0, POINT)), np.zeros((0, RANGE))
        return points(tracks, ctx.event_names())

    def reset(self, op, rows, state):
        """End the ranges open for ``rows`` (detail ``reset``), then the state row at the reset time."""
        end_ranges(op, rows, "reset")
        op.st[rows] = state

    def teleport(self, op, rows, pos_delta, rot_delta):
        """End the ranges open for ``rows`` (detail ``teleport``); those holding the clock reopen on the next step."""
        end_ranges(op, rows, "teleport")


def end_ranges(op, rows, reason):
    """Write an ``end`` (detail ``reason``) for each range open for characters ``rows``, and mark it interrupted
    (it opens again on the next step where it holds the clock): a hook's work."""
    for c in rows:
        sample_closing(op.par, op.st[c], op.sig[c], float(reason_id(reason)))


def cycle_clip(skel, clip, root_motion):
    """The clip's whole gait cycles as a loop: frames from its first plant to (not including) the last plant of that
    foot (``phase.whole_cycles`` on its tracks), each end moved by up to ``LOOP_CUT_WINDOW`` to where the pose and
    its motion repeat best (``preprocess.loop_cut``, keeping the same plants inside), root-relative with
    ``root_motion``, the seam's small mismatch spread over them (``preprocess.seamless``); tracks cut alike.  A clip
    without a plant of each foot or a whole cycle: the plain loop (root-relative and seamless with ``root_motion``)."""
    tracks = clip_tracks(skel, clip, True)
    try:
        span = whole_cycles(tracks.instants.get("left_plant", ()), tracks.instants.get("right_plant", ()))
    except MarkerError:
        span = None
    base = root_motion_clip(skel, clip)[0] if root_motion else clip
    if span is None:
        out = root_motion_clip(skel, clip, loop=True)[0] if root_motion else copy.copy(clip)
        out.tracks = tracks
        return out
    # The frames at or before the two plants: the loop [f0, f1) holds the first and not the last.
    f0, f1 = (int(math.floor(t / clip.dt + 1e-6)) for t in span)
    feet = [np.asarray(tracks.instants.get(n, ()), np.float64) for n in ("left_plant", "right_plant")]
    inside = lambda a, b: [np.count_nonzero((p >= a * clip.dt - EPS) & (p < b * clip.dt - EPS)) for p in feet]  # noqa: E731
    whole = inside(f0, f1)
    rel = base if root_motion else root_motion_clip(skel, clip)[0]
    feats = repeat_features(fk_frames(Pose(rel.pos, rel.rot, rel.scl), skel.parents).pos, clip.dt)
    f0, f1 = loop_cut(feats, f0, f1, int(round(LOOP_CUT_WINDOW / clip.dt)), lambda a, b: inside(a, b) == whole)
    part = Pose(base.pos[f0:f1], base.rot[f0:f1], base.scl[f0:f1])
    if root_motion:
        part = seamless(part)
    out = copy.copy(base)
    out.pos, out.rot, out.scl = (np.ascontiguousarray(x) for x in (part.pos, part.rot, part.scl))
    if base.root_pos is not None:
        out.root_pos, out.root_rot = base.root_pos[f0:f1], base.root_rot[f0:f1]
    out.contacts = None if clip.contacts is None else clip.contacts[f0:f1]
    out.tracks = tracks.cut(f0 * clip.dt, f1 * clip.dt)
    return out


def sample(clip: Clip, time, mode="linear", loop=False, rate=1.0):
    """Local pose of ``clip`` at ``time`` (s, scalar or array: a batch); velocities times ``rate``."""
    if not isinstance(clip, Clip):
        raise ValueError(f"clip must be a Clip, got {type(clip).__name__}")
    if not isinstance(mode, str) or mode not in ("linear", "cubic"):
        raise ValueError(f"sample mode must be 'linear' or 'cubic', got {mode!r}")
    times = numbers(time, "time")
    if not np.all(np.abs(times) <= TIME_MAX):
        raise ValueError(f"sample time must be within ±{TIME_MAX:g} s")
    rate = number(rate, "rate", -RATE_MAX, RATE_MAX)
    out = Pose.identity(len(clip.skeleton), times.shape)
    cubic, loop = mode == "cubic", bool(loop)
    if times.size * TABLE_SAMPLES_PER_FRAME >= clip.frames:
        # Enough samples to pay for the clip's key table (the results are the same either way).
        ktab, unit = key_table(clip)
        flag = np.array([float(unit)], np.float32)
        pos = np.ascontiguousarray(clip.pos)  # the kernel's loops take C arrays (views.flat)
        for t, dst in zip(times.reshape(-1), out.items()):
            sample_keys_kernel(pos, ktab, flag, 0, clip.frames, clip.dt, float(t), float(rate), cubic, loop, dst)
        return out
    for t, dst in zip(times.reshape(-1), out.items()):
        sample_kernel(clip.pos, clip.rot, clip.scl, 0, clip.frames, clip.dt, float(t), float(rate), cubic, loop, dst)
    return out


def verify_sample(m, t, h, rng):
    """The clip itself, cubic or linear, played forwards or backwards (rate -1)."""
    mode = rng.choice(["cubic", "linear"])
    if rng.random() < 0.5:
        return [stencil(lambda s: sample(m.clip, s, mode), t, h)]
    return [stencil(lambda s: sample(m.clip, m.end - s, mode, rate=-1.0), t, h)]


Sample.OP, Sample.VERIFY = sample, verify_sample
