"""``animgraph demo``: a scripted stick steering the motion-matching locomotion graph.

``graphs/locomotion.json``: controller -> motion_match (database of the nine bundled clips,
mirrored) -> foot locks on the database's contacts -> look-at along the travel, the
character placed by the displacement node (adjusted towards the simulation by velocity,
clamped).  The stick script (``SCRIPT``): stand, walk ahead, turn 90 degrees left, turn back
right, speed up to a run, stop.  The camera stays looking along +Z (stick x is the
camera's right, world -X; a stick to the left steers towards +X, a left turn).

What it measures, from the run and the BVH it writes (``animgraph.skate``): searches and
transitions; foot skate during contacts with and without the foot locks (the graph's
``out`` and ``unlocked`` outputs, the same run); the largest character-simulation distance
with the displacement's clamp on, and in a second run with it off; how close the
character's facing came to the stick's direction at the end of each turn.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from .errors import AnimgraphError
from .fileio import atomic_write_text, check_writable, write_together
from .pose import Clip, Pose
from .skate import contact_pairs
from .svgplot import Panel, runs

DT = 1.0 / 60.0
RAMP = 0.3  # s: the stick moves from one scripted value to the next in this long (smoothstep)
# (from time s, stick x, stick z, what it is): held from that time on, after the ramp.
SCRIPT = (
    (0.0, 0.0, 0.0, "stand"),
    (1.0, 0.0, 0.4, "walk ahead"),
    (4.5, -0.4, 0.0, "turn 90 deg left"),
    (8.0, 0.0, 0.4, "turn back right"),
    (11.0, 0.0, 1.0, "speed up to a run"),
    (14.0, 0.0, 0.0, "stop"),
)
DURATION = 16.5  # s
FEET = ("left", "right")
TURN_TOLERANCE = 10.0  # degrees: a scripted turn must end this close to the stick's direction
MIN_FRAMES = 30  # half a second: enough for the skate measure's floor and a search or two
BYTES_PER_FRAME = 60_000  # peak memory per frame (two recorded runs and their analysis), rounded up


def _smoothstep(u):
    u = np.clip(u, 0.0, 1.0)
    return u * u * (3.0 - 2.0 * u), np.where((u > 0.0) & (u < 1.0), 6.0 * u * (1.0 - u), 0.0)


def stick(t):
    """The scripted stick at time ``t`` (s): (value (3,), rate (3,)) in camera space."""
    value, rate = np.zeros(3), np.zeros(3)
    for (t0, x0, z0, _), (t1, x1, z1, _) in zip(SCRIPT, SCRIPT[1:]):
        if t < t1:
            break
        w, dw = _smoothstep((t - t1) / RAMP)
        value = np.array([x0 + w * (x1 - x0), 0.0, z0 + w * (z1 - z0)])
        rate = np.array([x1 - x0, 0.0, z1 - z0]) * dw / RAMP
    if t < SCRIPT[1][0]:
        value = np.array([SCRIPT[0][1], 0.0, SCRIPT[0][2]])
    return value, rate


def stick_direction(t):
    """The world yaw (rad, 0 along +Z, left positive) the stick points to at ``t``, or None when released."""
    value, _ = stick(t)
    if np.hypot(value[0], value[2]) < 1e-6:
        return None
    return math.atan2(-value[0], value[2])  # camera yaw 0: the camera's right is world -X


def _yaw(rot):
    """Yaw (rad) of w-first quaternions about +Y: the facing ``(sin, cos)`` of +Z turned."""
    fwd_x = 2.0 * (rot[..., 1] * rot[..., 3] + rot[..., 0] * rot[..., 2])
    fwd_z = 1.0 - 2.0 * (rot[..., 1] ** 2 + rot[..., 2] ** 2)
    return np.arctan2(fwd_x, fwd_z)


def simulate(graph, frames, clamp=True, dt=DT):
    """Run ``graph`` with the scripted stick: a dict of per-frame records (local poses, signals, step times)."""
    from . import compile as compile_graph

    plan = compile_graph(graph)
    inst = plan.instance()
    if not clamp:
        inst.set_param("place", "clamp_distance", 0.0)
        inst.set_param("place", "clamp_angle", 0.0)
    joints = plan.joints
    rec = {"skeleton": plan.skeleton, "step_s": np.empty(frames)}
    for name in ("out", "unlocked"):
        rec[name] = {k: np.empty((frames, joints, 4 if k == "rot" else 3), np.float32)
                     for k in ("pos", "rot", "scl", "vel")}
    for key, width in (("simulation", 3), ("heading", 4), ("facing", 4), ("deviation", 1), ("changed", 1),
                       ("searched", 1), ("cost", 1), ("contact", 2), ("stick", 3)):
        rec[key] = np.empty((frames, width))
    for f in range(frames):
        value, rate = stick(f * dt)
        began = time.perf_counter()
        out = inst.step(dt, {"stick": (value, rate)})
        rec["step_s"][f] = time.perf_counter() - began
        for name in ("out", "unlocked"):
            for k in ("pos", "rot", "scl", "vel"):
                rec[name][k][f] = getattr(out[name], k)
        rec["simulation"][f] = out["simulation"][:3]
        rec["facing"][f] = out["facing"][:4]
        rec["heading"][f] = out["heading"][:4]
        rec["deviation"][f] = out["deviation"][0]
        rec["changed"][f], rec["searched"][f], rec["cost"][f] = out["changed"][0], out["searched"][0], out["cost"][0]
        rec["contact"][f] = out["left_contact"][0], out["right_contact"][0]
        rec["stick"][f] = value
    return rec


def world_positions(rec, name):
    """(F, J, 3) world joint positions (m) of a recorded pose output, by forward kinematics."""
    from .ops import fk

    r = rec[name]
    return fk(Pose(r["pos"], r["rot"], r["scl"]), rec["skeleton"].parents).pos.astype(np.float64)


def turn_errors(rec, dt=DT):
    """(segment, degrees) for each scripted turn: the character's facing against the stick at the turn's end."""
    out = []
    for (t0, _, _, what), (t1, _, _, _) in zip(SCRIPT, SCRIPT[1:]):
        if not what.startswith("turn"):
            continue
        f = min(int(round(t1 / dt)) - 1, len(rec["heading"]) - 1)
        want = stick_direction(t1 - dt)
        err = (_yaw(rec["heading"][f]) - want + math.pi) % (2 * math.pi) - math.pi
        out.append((what, abs(math.degrees(err))))
    return out


def analyse(rec, dt=DT):
    """The numbers the demo prints: searches, transitions, skate with and without locks, deviation, turns."""
    from .skate import backward_hook, toe_skate

    skel = rec["skeleton"]
    toes = [skel.index(f"{side}_toe") for side in FEET]
    result = {"frames": len(rec["step_s"]), "searches": int(rec["searched"].sum()),
              "transitions": int(rec["changed"].sum()), "deviation_max": float(rec["deviation"].max()),
              "turns": turn_errors(rec, dt)}
    for name in ("out", "unlocked"):
        world = world_positions(rec, name)
        feet = [toe_skate(world[:, j], dt) for j in toes]
        for i, j in enumerate(toes):  # the same travel on the frame pairs the database marks as contacts
            down = (rec["contact"][1:, i] > 0.5) & (rec["contact"][:-1, i] > 0.5)
            step = np.linalg.norm(np.diff(world[:, j, [0, 2]], axis=0), axis=1) * 1e3 * (DT / dt)
            feet[i]["track_mm"] = float(step[down].mean()) if down.any() else 0.0
        travel = np.gradient(world[:, 0], axis=0)  # the hips' direction of travel, per frame
        result[name] = {"feet": feet, "world": world,
                        "skate_mm": float(np.mean([s["mean_mm"] for s in feet])),
                        "hook_mm": 1e3 * max(backward_hook(world[:, j], travel, dt) for j in toes)}
    result["distance"] = float(np.linalg.norm(np.diff(rec["simulation"][:, [0, 2]], axis=0), axis=1).sum())
    return result


def main(out_dir="animgraph-demo", frames=None):
    """The ``animgraph demo`` command: run, print what happened, write demo.bvh and demo.svg to ``out_dir``."""
    from . import graphs
    from .bvh import save_bvh
    from .graph import Graph
    from .runner import check_memory

    frames = int(round(DURATION / DT)) if frames is None else frames
    if not (isinstance(frames, int) and frames >= MIN_FRAMES):
        raise AnimgraphError(f"--frames must be a whole number >= {MIN_FRAMES}, got {frames!r}")
    out_dir = Path(out_dir)
    files = (out_dir / "demo.bvh", out_dir / "demo.svg")
    for path in files:  # before the run: a directory in the way, no permission, a read-only disk
        check_writable(path, make_dirs=True)
    check_memory(frames * BYTES_PER_FRAME, f"--frames {frames}")

    graph = Graph.load(graphs.path("locomotion"))
    rec = simulate(graph, frames)
    a = analyse(rec)
    free = simulate(graph, frames, clamp=False)
    b = analyse(free)
    skel = rec["skeleton"]

    print(f"animgraph demo: {graphs.path('locomotion')}")
    print("  stick        " + ", ".join(f"{t0:g} s {what}" for t0, _, _, what in SCRIPT))
    print(f"  frames       {frames} at {1 / DT:g} Hz ({frames * DT:.1f} s), 1 character, "
          f"{a['distance']:.1f} m travelled")
    print(f"  matching     {a['searches']} searches, {a['transitions']} transitions (inertialized)")
    skate = ", ".join(f"{side} {a['unlocked']['feet'][i]['mean_mm']:.1f} -> {a['out']['feet'][i]['mean_mm']:.1f}"
                      for i, side in enumerate(FEET))
    track = ", ".join(f"{side} {a['unlocked']['feet'][i]['track_mm']:.1f} -> {a['out']['feet'][i]['track_mm']:.1f}"
                      for i, side in enumerate(FEET))
    print(f"  foot skate   mean toe travel per 60 Hz frame in contact (toe within 3 cm of its floor two frames "
          f"running), mm, without -> with foot lock: {skate}; on the database's contact frames: {track}; "
          f"toe back against the travel before a plant at most {a['out']['hook_mm']:.1f} mm")
    print(f"  deviation    character to simulation at most {b['deviation_max']:.2f} m with the clamp off, "
          f"{a['deviation_max']:.2f} m with it on (clamp {_clamp(graph):.2f} m)")
    print("  turns        " + ", ".join(f"{what} ends {err:.1f} deg from the stick" for what, err in a["turns"]))
    steps = rec["step_s"][1:]
    print(f"  time         {np.median(steps) * 1e6:.0f} us per frame (median step; first frame "
          f"{rec['step_s'][0]:.2f} s, which loads or compiles the executor)")

    out = rec["out"]
    clip = Clip(skel, out["pos"], out["rot"], out["scl"], dt=DT)
    svg = plot_svg(rec, a)
    write_together([(files[0], lambda tmp: save_bvh(tmp, skel, clip)),
                    (files[1], lambda tmp: atomic_write_text(tmp, svg))], make_dirs=True)
    print(f"  wrote        {files[0]} ({frames} frames, metres), {files[1]}")
    return 0


def _clamp(graph):
    return next(n.clamp_distance for n in graph.nodes if n.id == "place")


# ---------------------------------------------------------------- plot

COLORS = {"left": "#1f77b4", "right": "#e6731a", "simulation": "#999999", "character": "#000000"}


def plot_svg(rec, a, dt=DT):
    """An SVG (text): the paths from above, toe heights with contacts, toe skate, search cost per frame."""
    frames = len(rec["step_s"])
    t = np.arange(frames) * dt
    t1 = frames * dt
    width, left = 960, 70
    w = width - left - 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="1080" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>']

    # From above: x to the right is world -X (the camera's right), up is +Z.
    sim = rec["simulation"]
    char = a["out"]["world"][:, 0]
    xs, zs = np.concatenate([-sim[:, 0], -char[:, 0]]), np.concatenate([sim[:, 2], char[:, 2]])
    span = max(np.ptp(xs), np.ptp(zs), 1.0) * 1.05
    cx, cz, side = 0.5 * (xs.max() + xs.min()), 0.5 * (zs.max() + zs.min()), 330.0
    top = Panel(left + (w - side) / 2, 40, side, side, 1.0, 0.0, 1.0)

    def path(x, z, color, width_px):
        px = top.x + side * (0.5 + (x - cx) / span)
        py = top.y + side * (0.5 - (z - cz) / span)
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py))
        return f'<polyline fill="none" stroke="{color}" stroke-width="{width_px}" points="{pts}"/>'

    out.append(f'<rect x="{top.x}" y="{top.y}" width="{side}" height="{side}" fill="none" stroke="#444"/>')
    out.append(f'<text x="{top.x}" y="{top.y - 6}" font-size="13">from above ({span:.1f} m across): simulation '
               f'(grey), character hips (black)</text>')
    out.append(path(-sim[:, 0], sim[:, 2], COLORS["simulation"], 3.0))
    out.append(path(-char[:, 0], char[:, 2], COLORS["character"], 1.2))

    world = a["out"]["world"]
    skel = rec["skeleton"]
    toes = [skel.index(f"{s}_toe") for s in FEET]
    heights = world[:, toes, 1]
    height_hi = max(0.3, float(np.ceil(heights.max() * 10) / 10))
    p2 = Panel(left, 420, w, 150, t1, 0.0, height_hi)
    out += p2.axes("toe height (m): left (blue), right (orange); database contacts shaded",
                   np.round(np.linspace(0, height_hi, 4), 2))
    for i, foot in enumerate(FEET):
        lo, hi = (0.0, 0.5 * height_hi) if i == 0 else (0.5 * height_hi, height_hi)
        for s0, s1 in runs(rec["contact"][:, i] > 0.5):
            out.append(p2.band(t[s0], t[s1 - 1] + dt, COLORS[foot], lo, hi, 0.15))
        out.append(p2.line(t, heights[:, i], COLORS[foot]))

    skate_hi = 10.0  # mm per frame: the scale of a sliding planted foot, not of a swinging one
    p3 = Panel(left, 620, w, 150, t1, 0.0, skate_hi)
    out += p3.axes("toe travel per frame where the toe is within 3 cm of its floor (mm, clipped at 10): with foot "
                   "lock (colour), without (grey)",
                   np.round(np.linspace(0, skate_hi, 3), 1))
    for i, foot in enumerate(FEET):
        for name, color in (("unlocked", "#bbbbbb"), ("out", COLORS[foot])):
            toe = a[name]["world"][:, toes[i]]
            pairs = contact_pairs(toe[:, 1])
            travel = np.linalg.norm(np.diff(toe[:, [0, 2]], axis=0), axis=1) * 1e3 * (DT / dt)
            for f in np.flatnonzero(pairs):
                out.append(f'<circle cx="{p3.px(t[f + 1]):.1f}" cy="{p3.py(min(travel[f], skate_hi)):.1f}" r="1.3" '
                           f'fill="{color}"/>')
    cost = np.where(rec["searched"][:, 0] > 0.5, rec["cost"][:, 0], np.nan)
    cost_hi = max(1.0, float(np.nanmax(cost)) if np.isfinite(cost).any() else 1.0)
    p4 = Panel(left, 820, w, 150, t1, 0.0, cost_hi)
    out += p4.axes("search cost at each search (normalised units squared); transitions as dashed lines",
                   np.round(np.linspace(0, cost_hi, 3), 1))
    for f in np.flatnonzero(rec["changed"][:, 0] > 0.5):
        out.append(f'<line x1="{p4.px(t[f]):.1f}" y1="{p4.y}" x2="{p4.px(t[f]):.1f}" y2="{p4.y + p4.h}" '
                   'stroke="#bbb" stroke-dasharray="3 3"/>')
    for f in np.flatnonzero(np.isfinite(cost)):
        out.append(f'<circle cx="{p4.px(t[f]):.1f}" cy="{p4.py(cost[f]):.1f}" r="1.6" fill="#333"/>')
    out.append(f'<text x="{left + w / 2}" y="1010" font-size="12" text-anchor="middle">time (s)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
