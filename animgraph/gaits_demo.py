"""``animgraph demo``: the shipped locomotion graph on the bundled walk, jog and run.

The bundled clips are short takes whose root travels a few metres, so played in a
loop they would snap back every period.  The demo prepares each one the way a game
prepares its locomotion set (``locomotion_clip``):

1. the root is re-expressed relative to the simulation bone (``preprocess.root_track``)
   and the bone's path is straightened onto +Z, its arc length kept: the planted feet
   stay (nearly) still and every clip faces +Z;
2. one gait cycle ``[a, b)`` is cut where the pose and its motion match best, and the
   small mismatch at the seam is spread over the cycle with an additive offset;
3. the cycle is repeated with the root carried forward, so the clip is continuous for
   ``distance`` metres, and it is *timed in metres*: one clip second is one metre.

All three clips then sit at the same root position for the same clock, so the
graph's shared ``rate`` input is the ground speed in m/s, a gait switch moves the
root by nothing, and the inertializer only hides the change of gait.  Contacts are
detected on the original clips (their contact tracks, ``animgraph.tracks``, in seconds: the prepared
clip is timed in metres) and carried by the prepared clip as its contact track, which
the graph's sample nodes output at their clocks for the foot locks.  Without locks the
graph's locks get a constant ``false`` contact instead (``unlocked``).

Foot skate is measured on the result by ``animgraph.skate`` from the toe paths alone,
with and without the locks (``skate_report``), as it would be on any BVH.

The graph gets the prepared clips through ``compile(..., assets=...)``; run on its
own (``animgraph run graphs/locomotion.json``) it plays the bundled clips as they are,
with root motion: each sample node separates the simulation bone, the output node
integrates its motion, so looping and switching never move the character back.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import data, kform, preprocess, skate, tracks
from .errors import AnimgraphError
from .fileio import atomic_write_text, check_writable, write_together
from .pose import FIELDS, Clip, Pose
from .svgplot import Panel, runs

GAITS = ("walk", "jog", "run")
SCHEDULE = ("walk", "jog", "run", "walk")  # one quarter of the demo each
RAMP = 0.6  # s: speed ramp from one gait's natural speed to the next's
DT = 1.0 / 60.0
MIN_CYCLE = 0.5  # s: shortest gait cycle considered
FEET = ("left", "right")
FINE = 40  # the velocity check runs the demo again at FINE times the frame rate (2400 Hz)
START = 5.0  # m: where the sample clocks start (a cycle or more into the prepared clips)
BYTES_PER_FRAME = 250_000  # peak memory per frame, measured: ~215 kB (the runs, the 10x finer one, their analysis)


@dataclass
class LocomotionClip:
    """A prepared clip: timed in metres (``clip.dt`` is metres per frame), contacts (F,2), natural speed m/s."""

    name: str
    clip: Clip
    contacts: np.ndarray
    speed: float
    cycle: tuple  # (first frame, stop frame) of the cycle in the bundled clip
    seconds: float  # cycle duration at the natural speed


def _root_relative(skel, clip):
    """Local pose (F,J) with the root relative to the simulation bone, its path straightened onto +Z."""
    root_pos, root_rot = preprocess.root_track(skel, clip)
    sim = Pose(root_pos[:, None], root_rot[:, None])
    roots = [j for j in range(len(skel)) if skel.parents[j] < 0]
    pose = Pose(clip.pos.copy(), clip.rot.copy(), clip.scl.copy())
    for r in roots:
        rel = kform.div(sim, Pose(clip.pos[:, r:r + 1], clip.rot[:, r:r + 1], clip.scl[:, r:r + 1]))
        pose.pos[:, r], pose.rot[:, r] = rel.pos[:, 0], rel.rot[:, 0]
    step = np.linalg.norm(np.diff(root_pos.astype(np.float64), axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(step)])
    pose.pos[:, roots, 2] += arc[:, None].astype(np.float32)
    return pose, arc, roots


def _find_cycle(skel, pose, arc, dt):
    """Frames (a, b) with b - a >= MIN_CYCLE s where the in-place pose and its motion match best."""
    glob = preprocess.global_positions(skel, Clip(skel, pose.pos, pose.rot, pose.scl, dt)).astype(np.float64)
    glob[..., 2] -= arc[:, None]  # in place: remove the forward progress
    h = max(1, int(round(preprocess.REPEAT_SPAN / dt)))
    idx = np.arange(h, len(glob) - h)  # frames with the motion's whole span
    feats = preprocess.repeat_features(glob, dt)[idx]
    sq = (feats**2).sum(axis=1)
    dist = sq[:, None] + sq[None, :] - 2.0 * feats @ feats.T
    lag = idx[None, :] - idx[:, None]
    dist[lag < int(math.ceil(MIN_CYCLE / dt))] = np.inf
    i, j = np.unravel_index(np.argmin(dist), dist.shape)
    if not np.isfinite(dist[i, j]):
        raise AnimgraphError(f"clip shorter than one {MIN_CYCLE} s cycle")
    return int(idx[i]), int(idx[j])


def locomotion_clip(name, distance=100.0):
    """Bundled clip ``name`` as a straight, seamless, metre-timed cycle repeated over ``distance`` metres."""
    from .ops import additive, difference

    skel, clip = data.load(name)
    contacts = tracks.contacts_at(tracks.derive(skel, clip), np.arange(clip.frames) * clip.dt) > 0.5
    pose, arc, roots = _root_relative(skel, clip)
    a, b = _find_cycle(skel, pose, arc, clip.dt)
    n, length = b - a, float(arc[b] - arc[a])
    cycle = Pose(*(x[a:b].copy() for x in pose.as_tuple()))
    cycle.pos[:, roots, 2] -= np.float32(arc[a])
    # Spread the seam's mismatch: frame k gets k/n of the offset taking frame b (one cycle back) to frame a.
    end = Pose(*(x[b].copy() for x in pose.as_tuple()))
    end.pos[roots, 2] -= np.float32(arc[b])
    seam = difference(Pose(*(x[0].copy() for x in cycle.as_tuple())), end)
    seam = Pose(*(np.broadcast_to(x, (n,) + x.shape).copy() for x in seam.as_tuple()))
    cycle = additive(cycle, seam, np.arange(n) / n)

    repeats = int(math.ceil(distance / length)) + 1
    tiled = [np.concatenate([x] * repeats) for x in (cycle.pos, cycle.rot, cycle.scl)]
    tiled[0][:, roots, 2] += (np.repeat(np.arange(repeats), n) * length)[:, None].astype(np.float32)
    out = Clip(skel, tiled[0], tiled[1], tiled[2], dt=length / n)
    out.name = f"{name} (straight cycle, 1 clip second = 1 m)"
    speed = length / (n * clip.dt)
    out.contacts, out.contact_joints = np.tile(contacts[a:b], (repeats, 1)), ["left_toe", "right_toe"]
    return LocomotionClip(name, out, out.contacts, speed, (a, b), n * clip.dt)


# ---------------------------------------------------------------- schedule


def _smoothstep(u):
    u = min(max(u, 0.0), 1.0)
    return u * u * (3.0 - 2.0 * u), 6.0 * u * (1.0 - u)


def schedule(t, total, speeds):
    """(gait index, speed m/s, its rate m/s^2) at time ``t`` of a ``total`` s demo: walk, jog, run, walk."""
    quarter = total / len(SCHEDULE)
    k = min(int(t // quarter), len(SCHEDULE) - 1)
    gait = GAITS.index(SCHEDULE[k])
    if k == 0:
        return gait, speeds[gait], 0.0
    prev = speeds[GAITS.index(SCHEDULE[k - 1])]
    s, ds = _smoothstep((t - k * quarter) / RAMP)
    return gait, prev + (speeds[gait] - prev) * s, (speeds[gait] - prev) * ds / RAMP


# ---------------------------------------------------------------- run


def unlocked(graph):
    """``graph`` (a Graph) with every foot lock's contact fed a constant ``false``: the locks never engage."""
    from .graph import Graph

    data = graph.to_dict()
    locks = {n["id"] for n in data["nodes"] if n["type"] == "foot_lock"}
    data["nodes"].append({"id": "no_contact", "type": "constant", "signal": "bool", "value": False})
    data["links"] = [["no_contact.value", dst] if dst.split(".")[0] in locks and dst.endswith(".contact") else [src, dst]
                     for src, dst in data["links"]]
    return Graph.from_dict(data, file=graph.path)


def simulate(frames, locks=True, clips=None, dt=DT):
    """Run graphs/locomotion.json for ``frames`` frames of ``dt`` s; returns a dict of per-frame arrays."""
    from . import graphs
    from .graph import Graph
    from .runtime import compile as compile_graph

    total = frames * dt
    # Metres to cover: the start, then at most the fastest bundled gait (about 4 m/s) all along.
    clips = clips or {g: locomotion_clip(g, distance=START + total * 4.5 + 5.0) for g in GAITS}
    speeds = [clips[g].speed for g in GAITS]
    graph = Graph.load(graphs.path("gaits"))
    plan = compile_graph(graph if locks else unlocked(graph), batch=1, assets={g: clips[g].clip for g in GAITS})
    inst = plan.instance()
    # Start one cycle in: a looping clip's first segment interpolates from its last frame,
    # which on an unrolled clip is far ahead.  Every sample clock starts at the same metre.
    clock = START
    inst.reset(clock)
    skel = plan.skeleton

    rec = {f: np.empty((frames, len(skel), 4 if f == "rot" else 3), np.float32) for f in FIELDS}
    rec.update(gait=np.empty(frames, int), speed=np.empty(frames), contact=np.zeros((frames, 2), bool),
               step_s=np.empty(frames), locked=np.empty((frames, 2, 6)))
    for f in range(frames):
        gait, speed, accel = schedule(f * dt, total, speeds)
        lc = clips[GAITS[gait]]
        period = lc.clip.frames * lc.clip.dt
        key = int(round((clock % period) / lc.clip.dt)) % lc.clip.frames
        contact = lc.contacts[key]  # recorded either way (the graph's samples give the locks theirs)
        start = time.perf_counter()
        out = inst.step(dt, {"gait": gait, "rate": (speed, accel)})
        rec["step_s"][f] = time.perf_counter() - start
        for name in FIELDS:
            rec[name][f] = getattr(out["out"], name)
        rec["locked"][f] = out["left_locked"], out["right_locked"]
        rec["gait"][f], rec["speed"][f], rec["contact"][f] = gait, speed, contact
        clock += speed * dt  # the sample nodes' own clock: sampled at clock, then advanced by rate * dt
    rec["skeleton"], rec["clips"], rec["plan"], rec["dt"] = skel, clips, plan, dt
    return rec


def analyse(rec):
    """Transitions, lock events, foot slide and the velocity check of a ``simulate`` record."""
    from .ops import fk

    skel = rec["skeleton"]
    glob = fk(Pose(*(rec[f] for f in FIELDS)), skel.parents)
    pos, vel = glob.pos.astype(np.float64), glob.vel.astype(np.float64)
    dt = rec["dt"]
    # Fourth-order central differences (Richardson on steps h and 2h) at 2400 Hz: the walk's
    # fast capture flicks (a toe at 50 rad/s), played 2.4 times faster just after the switch
    # from run, are beyond what a plain central difference resolves at 600 Hz (1.04 m/s of
    # truncation error that shrinks with the step; a velocity error would not).
    fd = (8.0 * (pos[3:-1] - pos[1:-3]) - (pos[4:] - pos[:-4])) / (12.0 * dt)
    err = np.linalg.norm(vel[2:-2] - fd, axis=-1)
    worst_frame, worst_joint = np.unravel_index(np.argmax(err), err.shape)
    gait = rec["gait"]
    changes = np.flatnonzero(np.diff(gait)) + 1
    toes = [skel.index(f"{side}_toe") for side in FEET]
    contact = rec["contact"]
    starts = (contact[1:] & ~contact[:-1]).sum(axis=0) + contact[0]
    ends = (~contact[1:] & contact[:-1]).sum(axis=0)
    ground = np.linalg.norm(vel[:, toes][..., [0, 2]], axis=-1)  # toe ground speed (F, 2)
    return {
        "glob_pos": pos,
        "glob_vel": vel,
        "transitions": [(int(f), GAITS[gait[f - 1]], GAITS[gait[f]]) for f in changes],
        "locks": starts,
        "releases": ends,
        "toe_height": pos[:, toes, 1],
        "toe_ground_speed": ground,
        "slide": float(ground[contact].mean()) if contact.any() else 0.0,
        "fd_median": float(np.median(err)),
        "fd_p99": float(np.percentile(err, 99)),
        "fd_max": float(err.max()),
        "fd_worst": (skel.names[worst_joint], float((worst_frame + 2) * dt)),
        "distance": float(pos[-1, 0, 2] - pos[0, 0, 2]),
        "skate": skate.report(pos[:, toes], dt, np.gradient(pos[:, 0], axis=0)),  # from the toe paths alone
    }


def main(out_dir="animgraph-demo", frames=900):
    """The ``animgraph demo`` command: run, print what happened, write demo.bvh and demo.svg to ``out_dir``."""
    from .bvh import save_bvh
    from .runner import check_memory

    if not (isinstance(frames, int) and frames >= 8 * len(SCHEDULE)):
        raise AnimgraphError(f"--frames must be a whole number >= {8 * len(SCHEDULE)}, got {frames!r}")
    out_dir = Path(out_dir)
    files = (out_dir / "demo.bvh", out_dir / "demo.svg")
    for path in files:  # before the run: a directory in the way, no permission, a read-only disk
        check_writable(path, make_dirs=True)
    check_memory(frames * BYTES_PER_FRAME, f"--frames {frames}")

    locked = simulate(frames, locks=True)
    free = simulate(frames, locks=False, clips=locked["clips"])
    a, b = analyse(locked), analyse(free)
    # Velocities against central differences ten times finer, where FD's own error is small.
    fine = analyse(simulate(frames * FINE, locks=True, clips=locked["clips"], dt=DT / FINE))
    skel, clips = locked["skeleton"], locked["clips"]

    from . import graphs

    print(f"animgraph demo: {graphs.path('gaits')}")
    print("  clips        " + ", ".join(
        f"{g} {clips[g].speed:.2f} m/s (cycle {clips[g].seconds:.2f} s)" for g in GAITS)
        + ": straight, seamless, timed in metres (rate = speed)")
    print(f"  frames       {frames} at {1 / DT:g} Hz ({frames * DT:.1f} s), 1 character, {a['distance']:.1f} m travelled")
    print("  transitions  " + (", ".join(f"{f * DT:.2f} s {x} -> {y}" for f, x, y in a["transitions"]) or "none")
          + " (inertialized)")
    print("  foot locks   " + ", ".join(
        f"{side} {a['locks'][i]} locks / {a['releases'][i]} releases" for i, side in enumerate(FEET)))
    print(f"  foot slide   toe ground speed in contact: {b['slide']:.3f} m/s unlocked -> {a['slide']:.3f} m/s locked")
    print(f"  foot skate   {skate_line(b['skate'])} unlocked -> {skate_line(a['skate'])} locked")
    print(f"  velocities   every joint's propagated velocity vs 4th-order central differences at {FINE / DT:g} Hz: median "
          f"{fine['fd_median']:.4f} m/s, 99% {fine['fd_p99']:.3f} m/s, max {fine['fd_max']:.2f} m/s "
          f"({fine['fd_worst'][0]} at {fine['fd_worst'][1]:.2f} s)")
    steps = locked["step_s"][1:]
    print(f"  time         {np.median(steps) * 1e6:.1f} us per frame (median step, inputs included; "
          f"first frame {locked['step_s'][0]:.2f} s, which loads or compiles the executor)")

    clip = Clip(skel, locked["pos"], locked["rot"], locked["scl"], dt=DT)
    svg = plot_svg(locked, a, b)
    # Both files or neither (a plot that cannot be written takes the BVH with it).
    write_together([(files[0], lambda tmp: save_bvh(tmp, skel, clip)),
                    (files[1], lambda tmp: atomic_write_text(tmp, svg))], make_dirs=True)
    print(f"  wrote        {out_dir / 'demo.bvh'} ({frames} frames), {out_dir / 'demo.svg'}")
    return 0


def skate_line(r):
    """One line of an ``animgraph.skate.report``."""
    return (f"{r['mean_mm']:.1f} mm/frame mean (max {r['max_mm']:.0f}) over {r['contact_frames']} low toe frames, "
            f"hook {r.get('hook_mm', 0.0):.1f} mm")


# ---------------------------------------------------------------- plot

COLORS = {"walk": "#dcefdc", "jog": "#f6efd2", "run": "#f6dcdc", "left": "#1f77b4", "right": "#e6731a"}


def plot_svg(rec, locked, free):
    """An SVG (text) of the demo: speed and gaits, toe heights with contacts, toe ground speed with and without locks."""
    frames = len(rec["gait"])
    t = np.arange(frames) * DT
    t1 = frames * DT
    width, left = 960, 70
    w = width - left - 30
    speed_hi = math.ceil(max(rec["speed"].max(), np.linalg.norm(locked["glob_vel"][:, 0, [0, 2]], axis=-1).max()))
    p1 = Panel(left, 40, w, 170, t1, 0.0, speed_hi)
    height_hi = max(0.3, float(np.ceil(locked["toe_height"].max() * 10) / 10))
    p2 = Panel(left, 260, w, 150, t1, 0.0, height_hi)
    slide_hi = 1.0  # m/s: the scale of a sliding planted foot, not of a swinging one
    p3 = Panel(left, 460, w, 150, t1, 0.0, slide_hi)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="660" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>']

    gait = rec["gait"]
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(gait)) + 1, [frames]])
    for s0, s1 in zip(bounds[:-1], bounds[1:]):
        name = GAITS[gait[s0]]
        out.append(p1.band(t[s0], t[s1 - 1] + DT, COLORS[name]))
        out.append(f'<text x="{(p1.px(t[s0]) + p1.px(t[s1 - 1])) / 2:.1f}" y="{p1.y + 16}" font-size="12" '
                   f'text-anchor="middle" fill="#555">{name}</text>')
    for f, _, _ in locked["transitions"]:
        for p in (p1, p2, p3):
            out.append(f'<line x1="{p.px(t[f]):.1f}" y1="{p.y}" x2="{p.px(t[f]):.1f}" y2="{p.y + p.h}" '
                       'stroke="#888" stroke-dasharray="4 3"/>')
    hips = np.linalg.norm(locked["glob_vel"][:, 0, [0, 2]], axis=-1)
    out += p1.axes("speed (m/s): input (black), hips ground speed from the propagated velocities (grey)",
                   np.arange(0, speed_hi + 0.01, 1.0))
    out.append(p1.line(t, hips, "#999", 1.0))
    out.append(p1.line(t, rec["speed"], "#000", 2.0))

    out += p2.axes("toe height (m): left (blue), right (orange); contacts shaded", np.round(np.linspace(0, height_hi, 4), 2))
    for i, side in enumerate(FEET):
        lo, hi = (0.0, 0.5 * height_hi) if i == 0 else (0.5 * height_hi, height_hi)
        for s0, s1 in runs(rec["contact"][:, i]):
            out.append(p2.band(t[s0], t[s1 - 1] + DT, COLORS[side], lo, hi, 0.15))
    for i, side in enumerate(FEET):
        out.append(p2.line(t, locked["toe_height"][:, i], COLORS[side]))

    out += p3.axes("left toe ground speed (m/s, clipped at 1): locked (blue) and without locks (grey); contacts shaded",
                   np.round(np.linspace(0, slide_hi, 4), 2))
    for s0, s1 in runs(rec["contact"][:, 0]):
        out.append(p3.band(t[s0], t[s1 - 1] + DT, COLORS["left"], opacity=0.12))
    out.append(p3.line(t, np.minimum(free["toe_ground_speed"][:, 0], slide_hi), "#999", 1.0))
    out.append(p3.line(t, np.minimum(locked["toe_ground_speed"][:, 0], slide_hi), COLORS["left"]))
    out.append(f'<text x="{left + w / 2}" y="650" font-size="12" text-anchor="middle">time (s)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
