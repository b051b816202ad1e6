"""``animgraph verify``: every node's propagated velocities against finite differences of its output.

Each node has one *case* in its node file (``VERIFY``): a short function that runs the node's op on
inputs moving with a clip and returns the op's outputs at the stencil times
``t + k h`` (``k`` in ``STEPS``) around a batch of random test times ``t``.  The inputs
carry exact velocities (``Motion``): the clip sampled with cubic interpolation, its
scales wobbling smoothly so that scale velocities move too; the clip played backwards
as a second pose; a weight swinging with its rate; targets riding on a joint's global
trajectory.  Stateful ops are stepped as in a game: a transition (or a contact) some
frames before ``t``, game frames up to the first stencil time, then on through the
stencil, so the checked frame is a live one with history, not a reset.  No state is
copied: each stencil time is the next frame of one run, and as every decay in these ops
is exact for any step, the outputs lie on one smooth trajectory.  A node type registered
without a case gets a failing row, so a new node cannot go unchecked.

Use: ``animgraph verify [CLIP ...] [--node TYPE] [--times N] [--seed S] [--json]``, or
``run`` / ``verify_clip`` from Python.

The check, per joint and test time, on the output's ``vel``, ``ang`` and ``svl`` at ``t``:
the fourth-order central difference ``d = (x(t-2s) - 8x(t-s) + 8x(t+s) - x(t+2s)) / 12s``
(positions as they are, rotations as ``log(q(t+ks) q(t)^-1)``, scales as ``log(scl)``)
and the relative error ``|d - v| / (1 + |d|)`` (units m/s, rad/s, 1/s; the 1 is the floor
under which the error counts as absolute).  A row passes when the largest error over
every joint and time is at most its tolerance (``TOL``, footnoted where looser).

Steps: the outputs are float32, so their rounding (about ``6e-8 |x| / s``, more where an
op amplifies its inputs' rounding, as IK near a straight leg does) grows as the step
shrinks, while the bundled clips (120 fps motion capture, with dropouts) turn so sharply
between keys that the two-point difference at s = 1 ms is off by up to 8 % (its error
is ``s^2 x'''/6``).  So the difference is the five-point one (error ``s^4``), taken at
three steps, ``s = h, 2h, 4h`` (``h = 0.3 ms`` at 120 fps), and each vector's error is the
smallest of the three: where the op is right, one of them is far under the tolerance
(rounding spoils the short steps, truncation the long ones); a wrong velocity is off
at all three.  Test times stay ``8h`` clear of the clip's keys, where the cubic
interpolant is only C1: a stencil across a key would measure the jump of the
acceleration, not the op.  Discrete events (a contact switching) are held still over the
stencil likewise.
"""

from __future__ import annotations

import math
import textwrap
import time as _time
import zlib
from functools import cached_property

import numpy as np

from . import kform, ops
from .node import CATEGORIES, REGISTRY
from .errors import AnimgraphError
from .pose import Clip, Pose
from .stencil import FRAME, STEPS, advance, identity_rot, play, ramp, stencil  # noqa: F401 (cases use them)

H = 3e-4  # difference step h (s); the differences use steps h, 2h and 4h
TOL = 1e-3  # relative error every node must reach (see the module docstring)
# node -> (looser tolerance, why it is needed), printed as the table's footnotes.  None is
# needed: the closest to TOL is foot_lock (up to 8e-4 over 60 seeds x clips), where IK on
# the nearly straight locked leg amplifies the float32 rounding of its input pose (with
# float64 inputs the same case agrees to 1e-4).
TOLERANCES = {}
SCALES = (1, 2, 4)  # steps of the five-point differences, in steps of h
FIVE_POINT = np.array([1.0, -8.0, 8.0, -1.0]) / 12.0  # weights of x(t-2s), x(t-s), x(t+s), x(t+2s), over s
GROUP = 20  # test times run together (one batch; stateful ops share one transition lag)
WOBBLE = 0.05  # amplitude of the scales' log-wobble


# ---------------------------------------------------------------- the moving inputs


def wobbled(clip, amount=WOBBLE):
    """Copy of ``clip`` whose scales are multiplied by ``exp(amount sin(2 pi f t + phase))``, per joint and axis."""
    t = np.arange(clip.frames)[:, None, None] * clip.dt
    j = np.arange(clip.pos.shape[1])[None, :, None]
    a = np.arange(3)[None, None, :]
    freq = 0.4 + 0.15 * ((j + 2 * a) % 5)  # Hz: slow against the keys
    scl = clip.scl * np.exp(amount * np.sin(2 * np.pi * freq * t + 0.7 * j + 2.1 * a))
    return Clip(clip.skeleton, clip.pos, clip.rot, scl, clip.dt, name=clip.name)


def _chain(skel, names):
    """Indices of the canonical joint ``names``, else of the first chain as long below the root (else ValueError)."""
    try:
        return [skel.index(n) for n in names]
    except ValueError:
        pass
    for j in range(len(skel)):
        chain = [j]
        while len(chain) < len(names) and skel.parents[chain[0]] > 0:
            chain.insert(0, int(skel.parents[chain[0]]))
        if len(chain) == len(names):
            return chain
    raise ValueError(f"the skeleton has no chain of {len(names)} joints below its root (for {', '.join(names)})")


class Motion:
    """Inputs moving with one clip, each with its exact rate: no differencing anywhere."""

    def __init__(self, skel, clip):
        self.skel = skel
        self.clip = clip
        self.parents = skel.parents
        self.end = clip.duration
        # A still pose (zero velocities): what additive poses are made against.
        self.reference = Pose(clip.pos[0], clip.rot[0], clip.scl[0])

    @cached_property
    def leg(self):
        """Hip, knee, foot and toe joints: the canonical left leg, else the first 4-joint chain."""
        return _chain(self.skel, ("left_hip", "left_knee", "left_foot", "left_toe"))

    @cached_property
    def head(self):
        """The head joint, else the deepest joint."""
        try:
            return self.skel.index("head")
        except ValueError:
            depth = [0] * len(self.skel)
            for j, p in enumerate(self.parents):
                depth[j] = depth[p] + 1 if p >= 0 else 0
            return int(np.argmax(depth))

    @cached_property
    def contacts(self):
        """Per frame: whether the leg's toe is on the ground (``preprocess.foot_contacts``)."""
        from .preprocess import foot_contacts

        return foot_contacts(self.skel, self.clip, joints=(self.leg[3],))[:, 0]

    def pose(self, t):
        """The clip at times ``t`` (s), cubic: local pose."""
        return ops.sample(self.clip, t, "cubic")

    def other(self, t):
        """A second moving pose: the clip played backwards from its end."""
        return ops.sample(self.clip, self.end - t, "cubic", rate=-1.0)

    def glob(self, t):
        """The clip's model-space pose."""
        return ops.fk(self.pose(t), self.parents)

    def weight(self, t):
        """A weight swinging through [0.1, 0.9] at 0.8 Hz, and its rate (1/s)."""
        w = 2 * np.pi * 0.8
        return 0.5 + 0.4 * np.sin(w * t), 0.4 * w * np.cos(w * t)

    def look_target(self, t):
        """(pos, vel) of a point 1 m in front of the hips (+Z), swinging side to side and up and down, model space."""
        w = 2 * np.pi * 0.6
        pos = np.stack([0.4 * np.sin(w * t), 0.2 * np.cos(w * t), np.ones_like(t)], -1)
        vel = np.stack([0.4 * w * np.cos(w * t), -0.2 * w * np.sin(w * t), np.zeros_like(t)], -1)
        point = kform.mul(self.glob(t)[:, 0], Pose(pos, identity_rot(t), vel=vel))
        return point.pos, point.vel

    def reach_target(self, t):
        """(pos, vel) of a point circling 0.1 m around a spot 0.1 m above the animated foot, model space."""
        foot = self.glob(t)[:, self.leg[2]]
        w = 2 * np.pi * 1.1
        c, s = np.cos(w * t), np.sin(w * t)
        pos = foot.pos + np.stack([0.1 * c, 0.1 + 0.1 * s, 0.1 * s], -1)
        vel = foot.vel + np.stack([-0.1 * w * s, 0.1 * w * c, 0.1 * w * c], -1)
        return pos, vel

    def contact(self, t):
        """Whether the leg's toe is on the ground at times ``t`` (per frame, from the clip)."""
        frame = np.clip(np.rint(np.asarray(t) / self.clip.dt).astype(int), 0, self.clip.frames - 1)
        return self.contacts[frame]


# ---------------------------------------------------------------- the cases
# Each node file declares its case (``VERIFY``): (motion, test times t (G,), step h, rng) ->
# list of stencils, each the op's outputs (Pose, batch G) at the times t + k h, k in STEPS
# (``animgraph.stencil``).  Graph plumbing (``PLUMBING``) has nothing to differentiate.


def cases():
    """{node type: its verify case} from the registry, in kind order."""
    return {kind: REGISTRY[kind].VERIFY for kind in sorted(REGISTRY) if REGISTRY[kind].VERIFY is not None}


def plumbing():
    """Node types that are graph plumbing (no op, no case)."""
    return tuple(kind for kind in sorted(REGISTRY) if REGISTRY[kind].PLUMBING)


# ---------------------------------------------------------------- the comparison


def _qmul_conj(a, b):
    """``a b^-1`` of (...,4) unit quaternion arrays, float64."""
    aw, ax, ay, az = np.moveaxis(np.asarray(a, np.float64), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b, np.float64), -1, 0)
    return np.stack(
        [
            aw * bw + ax * bx + ay * by + az * bz,
            -aw * bx + ax * bw - ay * bz + az * by,
            -aw * by + ax * bz + ay * bw - az * bx,
            -aw * bz - ax * by + ay * bx + az * bw,
        ],
        axis=-1,
    )


def _rotvec(q):
    """Rotation vectors (rad) of (...,4) quaternion arrays, the short way round (numpy, float64)."""
    q = np.where(q[..., :1] < 0.0, -q, q)
    s = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    return q[..., 1:] * np.where(s > 1e-12, 2.0 * np.arctan2(s, q[..., :1]) / np.maximum(s, 1e-300), 2.0)


def differences(outputs, h, m):
    """(vel, ang, svl) by the five-point central difference with step ``m h`` over a stencil's outputs (float64)."""
    at = dict(zip(STEPS, outputs))
    centre = at[0]
    points = [at[k * m] for k in (-2, -1, 1, 2)]
    vel = sum(c * np.asarray(p.pos, np.float64) for c, p in zip(FIVE_POINT, points))
    ang = sum(c * _rotvec(_qmul_conj(p.rot, centre.rot)) for c, p in zip(FIVE_POINT, points))
    svl = sum(c * np.log(np.asarray(p.scl, np.float64)) for c, p in zip(FIVE_POINT, points))
    return vel / (m * h), ang / (m * h), svl / (m * h)


def relative_error(fd, v):
    """``|fd - v| / (1 + |fd|)`` per vector, flattened."""
    return (np.linalg.norm(fd - v, axis=-1) / (1.0 + np.linalg.norm(fd, axis=-1))).ravel()


def stencil_errors(outputs, h):
    """Relative errors (lin, ang, svl) of the velocities at ``t``: per vector, the smallest over the SCALES."""
    centre = outputs[STEPS.index(0)]
    fds = [differences(outputs, h, m) for m in SCALES]
    return tuple(
        np.min([relative_error(fd[k], v) for fd in fds], axis=0)
        for k, v in enumerate((centre.vel, centre.ang, centre.svl))
    )


# ---------------------------------------------------------------- rows


def node_names():
    """Every operator node type (all but graph plumbing), by palette category then name."""
    order = {c: i for i, c in enumerate(CATEGORIES)}
    kinds = [k for k in REGISTRY if not REGISTRY[k].PLUMBING]
    return sorted(kinds, key=lambda k: (order.get(REGISTRY[k].CATEGORY, len(order)), k))


def step_for(clip):
    """The difference step h (s): H, or less for clips whose keys are closer than 28 H."""
    return min(H, clip.dt / 28.0)


def draw_times(clip, n, h, rng):
    """``n`` times (s) inside the clip, each more than ``8h`` from a key."""
    if clip.frames < 2:
        raise ValueError(f"clip {clip.name!r} has {clip.frames} frame: verify needs motion")
    margin = (STEPS[-1] + 0.25) * h / clip.dt
    key = rng.integers(0, clip.frames - 1, n)
    return (key + rng.uniform(margin, 1.0 - margin, n)) * clip.dt


def verify_node(motion, node, times=200, seed=0):
    """One row (dict): the errors of ``node``'s case on ``motion`` at ``times`` random times."""
    clip = motion.clip.name
    row = {"node": node, "clip": clip, "times": times, "h": step_for(motion.clip)}
    row["tolerance"] = TOLERANCES.get(node, (TOL, ""))[0]
    row.update({c: math.nan for c in COLUMNS}, ok=False, note="", seconds=0.0)
    case = cases().get(node)
    if case is None:
        return dict(row, note="no verify case: declare VERIFY in its node file")
    rng = np.random.default_rng([seed, zlib.crc32(node.encode()), zlib.crc32(clip.encode())])
    h = row["h"]
    t_all = draw_times(motion.clip, times, h, rng)
    errors = ([], [], [])
    began = _time.perf_counter()
    try:
        for g in range(0, times, GROUP):
            for outputs in case(motion, t_all[g : g + GROUP], h, rng):
                for acc, e in zip(errors, stencil_errors(outputs, h)):
                    acc.append(e)
    except Exception as err:  # a broken or missing op fails its row, not the whole table
        return dict(row, note=f"{type(err).__name__}: {' '.join(str(err).split())}")
    for key, acc in zip(("lin", "ang", "svl"), errors):
        e = np.concatenate(acc)
        e = np.where(np.isnan(e), np.inf, e)  # a NaN velocity is an error, not a pass
        row[key + "_max"] = float(np.max(e))
        row[key + "_p99"] = float(np.percentile(e, 99, method="higher"))
    row["ok"] = all(row[k + "_max"] <= row["tolerance"] for k in ("lin", "ang", "svl"))
    row["seconds"] = _time.perf_counter() - began
    return row


def verify_clip(skel, clip, nodes=None, times=200, seed=0, wobble=WOBBLE):
    """Rows (dicts) for each node (default: all) on one clip; see the module docstring for what is measured."""
    motion = Motion(skel, wobbled(clip, wobble))
    for node in nodes or node_names():
        yield verify_node(motion, node, times, seed)


# ---------------------------------------------------------------- report

COLUMNS = ("lin_max", "lin_p99", "ang_max", "ang_p99", "svl_max", "svl_p99")


def header(times, seed):
    """The lines above the table."""
    return [
        f"propagated velocities vs central differences of each op's own output: {times} random times "
        f"per node and clip, seed {seed}",
        f"error = |fd - v| / (1 + |fd|) per joint (vel m/s, ang rad/s, svl 1/s), fd the 5-point difference "
        f"at h, 2h or 4h (h = {H * 1e3:g} ms), whichever is closest",
        f"a row passes when its largest error is <= {TOL:g}",
        "",
        f"{'node':<16} {'clip':<12}" + "".join(f"{c.replace('_', ' '):>9}" for c in COLUMNS) + "  result",
    ]


def format_row(row):
    """One aligned table line."""

    def num(x):
        return f"{x:9.1e}" if not math.isnan(x) else f"{'-':>9}"

    result = "pass" if row["ok"] else "FAIL"
    if row["tolerance"] != TOL:
        result += f" (tol {row['tolerance']:g}*)"
    line = f"{row['node']:<16} {row['clip'][:12]:<12}" + "".join(num(row[c]) for c in COLUMNS) + f"  {result}"
    return line + (f"  {row['note']}" if row["note"] else "")


def footnotes(rows):
    """Lines explaining the looser tolerances used in ``rows``."""
    used = sorted({r["node"] for r in rows if r["node"] in TOLERANCES})
    return [
        textwrap.fill(f"* {n}: tolerance {TOLERANCES[n][0]:g}: {TOLERANCES[n][1]}", 100, subsequent_indent="  ")
        for n in used
    ]


def verify_table(clips, nodes=None, times=200, seed=0, as_json=False, out=None):
    """Verify ``nodes`` (default: all) on ``clips`` [(label, skeleton, clip)], print the table; 0 if all pass, else 1.

    The table streams row by row to ``out`` (default stdout); with ``as_json`` one JSON
    object is printed at the end instead.
    """
    import json
    import sys

    out = out or sys.stdout
    unknown = [n for n in nodes or () if n not in node_names()]
    if unknown:
        raise AnimgraphError(f"unknown node {unknown[0]!r} (nodes: {', '.join(node_names())})")
    if times < 1:
        raise AnimgraphError(f"--times must be at least 1, got {times}")
    for label, _, clip in clips:
        if clip.frames < 2:
            raise AnimgraphError(f"{label}: a clip of {clip.frames} frame has no motion to verify")
    rows = []
    if not as_json:
        print("\n".join(header(times, seed)), file=out, flush=True)
    for label, skel, clip in clips:
        clip = Clip(skel, clip.pos, clip.rot, clip.scl, clip.dt, name=label)
        for row in verify_clip(skel, clip, nodes, times, seed):
            rows.append(row)
            if not as_json:
                print(format_row(row), file=out, flush=True)
    ok = all(r["ok"] for r in rows)
    if as_json:
        info = {"times": times, "seed": seed, "h": H, "tolerance": TOL, "measure": "|fd - v| / (1 + |fd|)"}
        clean = [{k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in r.items()} for r in rows]
        print(json.dumps(dict(info, rows=clean, ok=ok)), file=out)
    else:
        failed = sum(not r["ok"] for r in rows)
        notes = footnotes(rows)
        print("\n".join([""] + notes + [f"{len(rows) - failed} of {len(rows)} rows pass"]), file=out)
    return 0 if ok else 1
