"""The ``animgraph`` command line.

Each command is one ``_cmd_<name>(args)`` handler plus one ``_args_<name>(parser)``
that declares its arguments, listed once in ``COMMANDS``; to add a command write
those two functions and append a row.  Handlers return an exit status (0 on success).

``main`` is the last line of defence and always prints one stderr line, never a traceback:

- user-input errors (a bad or missing file, a bad graph, a run too big for memory) are
  ``AnimgraphError``, ``OSError`` or ``MemoryError``: ``animgraph: <file>:<line>: <problem>``, status 2;
  argparse's usage errors are one line too, status 2;
- anything else is a bug: ``animgraph: internal error: <type>: <message>``, status 1;
- Ctrl-C, SIGTERM and SIGHUP stop the command (files being written are removed): status 130, 143, 129;
  a closed stdout (``| head``) stops it quietly, status 141.

``ANIMGRAPH_DEBUG=1`` prints the traceback before the line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import traceback
from pathlib import Path

from . import __version__, cache
from .errors import AnimgraphError, BVHError

PROG = "animgraph"


# ---------------------------------------------------------------- info


def _args_info(p):
    p.add_argument("file", help="a BVH or glTF (.glb, .gltf) file, or the name of a bundled clip ("
                   + ", ".join(_bundled()) + ")")
    p.add_argument(
        "--scale",
        type=float,  # checked with the file named (``load_clip``)
        default=None,
        help="metres per file unit (default: decided from the rest pose's size, e.g. 0.0564444 for CMU "
        "cgspeed units; the rule and its numbers are printed)",
    )
    first = p.add_mutually_exclusive_group()
    first.add_argument("--keep-first-frame", action="store_const", dest="first_frame", const="keep",
                       help="keep frame 0 (default: dropped when the data shows an added T-pose)")
    first.add_argument("--drop-first-frame", action="store_const", dest="first_frame", const="drop",
                       help="drop frame 0 (an added T-pose) whatever the data says")
    p.set_defaults(first_frame="auto")
    p.add_argument("--loop", action="store_true",
                   help="the tracks of the clip played as a loop (ranges may wrap through the end)")
    p.add_argument("--json", action="store_true", help="print the numbers as one JSON object")


def _bundled():
    from . import data

    return data.names()


def load_clip(file, scale=None, first_frame="auto"):
    """(skeleton, clip, notes) of a BVH path or bundled clip name in metres; units and frame 0 decided from the data.

    ``scale`` (metres per file unit) and ``first_frame`` ("keep"/"drop") override the decisions of
    ``animgraph.clipfile``; ``notes`` holds the file, the units and the rules that decided.
    """
    from . import data
    from .clipfile import read_clip

    path = Path(file)
    if file in data.names() and not path.exists():
        path = data.path(file)
    elif not path.exists():
        raise BVHError(f"no such file (nor a bundled clip: {', '.join(data.names())})", file)
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise BVHError(f"--scale must be positive and finite, got {scale}", file)
    return read_clip(path, units="auto" if scale is None else scale, first_frame=first_frame)


def info(file, scale=None, first_frame="auto", loop=False):
    """Summary dict of a clip: joints, frames, rate (fps), duration (s), root speed (m/s), turning (deg, left +),
    and its derived tracks (``animgraph.tracks``; ``loop``: as a looping clip's).

    Numbers that are not finite are None (JSON null); the ``*_rule`` entries say what decided units and frame 0.
    """
    from .preprocess import root_stats
    from .tracks import derive

    skel, clip, notes = load_clip(file, scale, first_frame)
    stats = root_stats(skel, clip)
    return {
        "file": str(notes["file"]),
        "joints": len(skel),
        "root": skel.names[0],
        "names": list(skel.names),
        "convention": notes["convention"],
        "frames": clip.frames,
        "tpose_dropped": notes["first_frame_dropped"],
        "first_frame_rule": notes["first_frame_rule"],
        "fps": clip.fps,
        "duration": clip.duration,
        "metres_per_unit": notes["units"],
        "units_rule": notes["units_rule"],
        "root_speed_mean": _finite(stats["speed_mean"]),
        "root_speed_max": _finite(stats["speed_max"]),
        "root_distance": _finite(stats["distance"]),
        "turning": _finite(stats["turning"]),
        "tracks": derive(skel, clip, loop).to_json(),
    }


def _num(x, fmt, unit=""):
    return "n/a" if x is None else format(x, fmt) + unit


def _cmd_info(args):
    from .tracks import table

    s = info(args.file, args.scale, args.first_frame, args.loop)
    if args.json:
        print(json_text(s))
        return 0
    style = {"motionbuilder": "MotionBuilder-style", "3dsmax": "3dsMax-style"}.get(s["convention"])
    conv = f", CMU {style} names (canonical aliases installed)" if style else ""
    print(s["file"])
    print(f"  skeleton   {s['joints']} joints, root {s['root']}{conv}")
    print(f"  joints     {' '.join(s['names'])}")
    print(f"  frames     {s['frames']}: {s['first_frame_rule']}")
    print(f"  rate       {s['fps']:g} fps")
    print(f"  duration   {s['duration']:.3f} s")
    print(f"  units      {s['units_rule'].removeprefix('units: ')}")
    print(f"  root speed mean {_num(s['root_speed_mean'], '.2f')} m/s, max {_num(s['root_speed_max'], '.2f')} m/s")
    print(f"  distance   {_num(s['root_distance'], '.2f', ' m')}")
    print(f"  turning    {_num(s['turning'], '+.1f', ' deg')} (left positive)")
    t = s["tracks"]
    print(f"  tracks     derived from the toes, as a {'looping clip (period' if t['loop'] else 'clamped clip ('}"
          f" {t['length']:.3f} s), seconds:")
    for line in table(_tracks_of_json(t), indent="    "):
        print(line)
    return 0


def _tracks_of_json(data):
    """A Tracks from its ``to_json`` form (for printing)."""
    from .tracks import Tracks

    instants = {n: e["times"] for n, e in data["tracks"].items() if e["kind"] == "instants"}
    ranges = {n: e["ranges"] for n, e in data["tracks"].items() if e["kind"] == "ranges"}
    return Tracks(data["length"], data["loop"], instants, ranges,
                  tuple(n for n, e in data["tracks"].items() if e["derived"]))


# ---------------------------------------------------------------- tracks


def _args_tracks(p):
    p.add_argument("graph", help="a graph file (JSON)")
    p.add_argument("--json", action="store_true", help="print every asset's tracks as one JSON object")


def graph_tracks(path):
    """{asset: Tracks.to_json()} of a graph's clip assets; a database asset: {"ranges": {range name: ...}}."""
    from .assets import load_assets
    from .graph import Graph

    graph = Graph.load(path)
    _, clips = load_assets(graph)
    out = {}
    for name, clip in clips.items():
        db = getattr(clip, "database", None)
        if db is not None:
            out[name] = {"ranges": {db.names[r]: db.range_tracks(r).to_json() for r in range(db.ranges)}}
        else:
            out[name] = clip.tracks.to_json()
    return out


def _cmd_tracks(args):
    from .tracks import table

    assets = graph_tracks(args.graph)
    if args.json:
        print(json_text({"graph": str(args.graph), "assets": assets}))
        return 0
    print(f"{args.graph}: tracks in seconds (name, kind, count, derived or given, times; a range begin-end, "
          "begin~end when it wraps through the end)")
    for name, data in assets.items():
        parts = data["ranges"].items() if "ranges" in data and isinstance(data["ranges"], dict) else [(None, data)]
        for label, t in parts:
            what = f"database range {label!r}, " if label is not None else ""
            print(f"  {name}: {what}{'looping clip, period' if t['loop'] else 'clamped clip,'} {t['length']:.3f} s")
            for line in table(_tracks_of_json(t), indent="    "):
                print(line)
    return 0


# ---------------------------------------------------------------- verify


def _whole(minimum, maximum=None):
    """An argparse type: a whole number in [``minimum``, ``maximum``] (default: the limit of frame numbers)."""
    from .limits import INDEX_MAX

    maximum = INDEX_MAX if maximum is None else maximum

    def whole(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be a whole number in [{minimum}, {maximum}], got {value}")
        return value

    return whole


def _seconds(text):
    """An argparse type: a step in seconds, finite, in [DT_MIN, DT_MAX] (``Instance.step`` pauses below DT_MIN)."""
    from .limits import DT_MAX, DT_MIN

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and DT_MIN <= value <= DT_MAX):
        raise argparse.ArgumentTypeError(f"must be seconds in [{DT_MIN:g}, {DT_MAX:g}], got {text}")
    return value


def _args_verify(p):
    p.add_argument(
        "clips", nargs="*", metavar="CLIP", help="bundled clip names or BVH files (default: every bundled clip)"
    )
    p.add_argument("--node", action="append", metavar="TYPE", help="only this node type (repeatable)")
    p.add_argument("--times", type=_whole(1), default=200, help="random test times per node and clip (default 200)")
    p.add_argument("--seed", type=_whole(0, 2 ** 32 - 1), default=0,
                   help="seed of the test times and case choices (default 0)")
    p.add_argument("--json", action="store_true", help="print the rows as one JSON object")


def _cmd_verify(args):
    import io

    from . import verify

    from . import data

    clips = []
    for name in args.clips or data.locomotion():  # the wave action on request: verify wave
        skel, clip, _ = load_clip(name)
        clips.append((Path(name).stem, skel, clip))
    if not args.json:
        return verify.verify_table(clips, args.node, args.times, args.seed)
    text = io.StringIO()
    status = verify.verify_table(clips, args.node, args.times, args.seed, as_json=True, out=text)
    print(json_text(json.loads(text.getvalue())))
    return status


# ---------------------------------------------------------------- graphs


def _args_validate(p):
    p.add_argument("graph", help="a graph file (JSON)")


def _cmd_validate(args):
    from .runner import validate

    plan = validate(args.graph)
    for note in plan.warnings:
        print(f"{PROG}: warning: {args.graph}: {note}", file=sys.stderr)
    print(f"OK {args.graph}: {len(plan.graph.nodes)} nodes, {len(plan.order)} ops, {plan.n_slots} pose slots")
    return 0


def _args_schema(p):
    p.add_argument("--features", action="store_true",
                   help="the JSON Schema of feature schema files ('mm build --features') instead")


def _cmd_schema(args):
    from .graph import json_schema

    if args.features:
        from .features import Schema

        print(json.dumps(Schema.model_json_schema(), indent=2))
        return 0
    print(json.dumps(json_schema(), indent=2))
    return 0


def _args_run(p):
    p.add_argument("graph", help="a graph file (JSON)")
    from .limits import DT_MAX, DT_MIN, INDEX_MAX, MAX_BATCH, SIGNAL_MAX

    p.add_argument("--frames", type=_whole(1), required=True, help=f"frames to evaluate (1 to {INDEX_MAX})")
    p.add_argument("--batch", type=_whole(1, MAX_BATCH), default=1,
                   help=f"characters evaluated together (1 to {MAX_BATCH}, default 1)")
    p.add_argument("--dt", type=_seconds, default=1.0 / 60.0,
                   help=f"frame time in seconds, [{DT_MIN:g}, {DT_MAX:g}] (default 1/60)")
    p.add_argument(
        "--input", action="append", default=[], metavar="NAME=VALUE",
        help=f"set an input node for every character: a number, true/false or x,y,z, each within "
             f"[-{SIGNAL_MAX:g}, {SIGNAL_MAX:g}] (repeatable)",
    )
    p.add_argument("--out", help="write x.bvh, x.glb or x.gltf (+ x.bin) (first character's pose) or x.npz "
                                 "(every output)")
    p.add_argument("--pose-output", metavar="NAME",
                   help="the pose output node a .bvh or glTF holds (default: the graph's first pose output)")
    p.add_argument("--gltf-linear", action="store_true",
                   help="glTF with LINEAR keys (default: CUBICSPLINE, the run's exact velocities as tangents)")
    p.add_argument("--gltf-every", type=_whole(1), default=1, metavar="N",
                   help="glTF keys at every N-th frame (default 1: every frame); cubic tangents keep the curve between")
    p.add_argument("--events", metavar="FILE.jsonl",
                   help="write every character's events (footsteps, notifies: animgraph.events), one JSON object a line")


def _cmd_run(args):
    from .runner import run_graph_file

    s = run_graph_file(args.graph, args.frames, args.batch, args.dt, args.input, args.out, pose_output=args.pose_output,
                       gltf_linear=args.gltf_linear, gltf_every=args.gltf_every, events_out=args.events)
    line = f"{s['graph']}: {s['frames']} frames x {s['batch']} characters at dt {s['dt']:g} s"
    if s["frames"] > 1:
        per_frame = s["seconds"] / (s["frames"] - 1)
        line += (f"; {per_frame * 1e6:.1f} us per frame ({per_frame * 1e9 / s['batch']:.0f} ns per character), "
                 f"first frame {s['first_frame_seconds'] * 1e3:.0f} ms (executor load)")
    print(line)
    print("  outputs " + ", ".join(f"{k} ({v})" for k, v in s["outputs"].items()))
    if s["out"]:
        also = f" and {Path(s['out']).with_suffix('.bin')}" if s["out"].lower().endswith(".gltf") else ""
        print(f"  wrote {s['out']}{also}")
    if s["events_out"]:
        print(f"  wrote {s['events']} events to {s['events_out']}")
    return 0


def _args_demo(p):
    p.add_argument("--out", default="animgraph-demo", help="directory for demo.bvh and demo.svg (default ./animgraph-demo)")
    p.add_argument("--frames", type=_whole(1), default=None,
                   help="frames at 60 Hz (default: the whole stick script, 990; with --gaits 900)")
    p.add_argument("--gaits", action="store_true",
                   help="the clip-switching demo instead (graphs/gaits.json: walk, jog, run on prepared loops)")


def _cmd_demo(args):
    if args.gaits:
        from . import gaits_demo

        return gaits_demo.main(args.out, 900 if args.frames is None else args.frames)
    from . import demo

    return demo.main(args.out, args.frames)


def _args_bench(p):
    p.add_argument("--json", action="store_true", help="print one JSON object {machine, results}")
    p.add_argument("--quick", action="store_true", help="few repetitions and no cold-compile run (for tests)")


def _cmd_bench(args):
    from . import bench

    if args.json:
        print(json_text(bench.run_all(quick=args.quick)))
        return 0
    return bench.main(quick=args.quick)


# ---------------------------------------------------------------- motion matching


def _args_mm(p):
    from .features import WEIGHT_MAX

    sub = p.add_subparsers(dest="mm_command", metavar="ACTION")
    sub.required = True
    b = sub.add_parser("build", help="build a motion-matching database (.npz) from clips",
                       description="build a motion-matching database (.npz) from clips")
    b.add_argument("clips", nargs="+", metavar="CLIP",
                   help="'animgraph:NAME' (bundled: " + ", ".join(_bundled()) + ") or a BVH file")
    b.add_argument("--out", required=True, help="the database file to write (.npz)")
    b.add_argument("--features", metavar="SCHEMA", help="a feature schema JSON file (default: toe positions, toe "
                                                         "and hips velocities, trajectory at 20, 40, 60 frames); "
                                                         f"each group's weight in [0, {WEIGHT_MAX:g}], at least one "
                                                         "> 0 ('animgraph schema --features' prints its JSON Schema)")
    b.add_argument("--no-mirror", action="store_true", help="leave out the clips' mirror images")
    b.add_argument("--skip-short", action="store_true",
                   help="leave out (with a warning line) a clip too short to search (under 2 frames at 60 fps) "
                        "instead of refusing the build")
    b.set_defaults(handler=_cmd_mm_build)
    i = sub.add_parser("info", help="ranges, frames, features and skeleton hash of a database file",
                       description="ranges, frames, features and skeleton hash of a database file")
    i.add_argument("database", help="a database file written by 'animgraph mm build'")
    i.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    i.set_defaults(handler=_cmd_mm_info)


def _cmd_mm_build(args):
    import time

    from tqdm import tqdm

    from .database import build_from_paths
    from .features import Schema
    from .fileio import check_writable

    out = Path(args.out)
    if out.suffix.lower() != ".npz":
        raise AnimgraphError(f"--out {out}: the file name must end in .npz")
    check_writable(out)
    schema = Schema.load(args.features) if args.features else None
    start = time.perf_counter()
    with tqdm(total=len(args.clips) * (1 if args.no_mirror else 2), unit="range", file=sys.stderr, disable=None,
              leave=False) as bar:
        db = build_from_paths(args.clips, schema, not args.no_mirror, progress=lambda done, total, name: bar.update(),
                              skip_short=args.skip_short, warn=lambda line: bar.write(f"{PROG}: warning: {line}",
                                                                                        file=sys.stderr))
    seconds = time.perf_counter() - start
    db.save(out)
    print(f"{db.frames} frames ({db.frames * db.dt:.1f} s at {round(1 / db.dt)} fps) in {db.ranges} ranges, "
          f"{db.features.shape[1]} features, built in {seconds:.2f} s")
    print(f"  wrote {out}")
    return 0


def _cmd_mm_info(args):
    from .database import Database

    db = Database.load(args.database)
    searchable = int((db.search_stops - db.search_starts).sum())
    s = {
        "file": str(args.database), "frames": db.frames, "seconds": db.frames * db.dt, "ranges": db.ranges,
        "searchable_frames": searchable, "features": int(db.features.shape[1]),
        "groups": {g.name: {"kind": g.kind, "columns": [sl.start, sl.stop], "weight": g.weight}
                   for g, sl in zip(db.schema.groups, db.schema.slices().values())},
        "skeleton_joints": len(db.skeleton), "skeleton_hash": db.skeleton_hash,
        "range_names": list(db.names),
        "range_frames": [int(b - a) for a, b in zip(db.range_starts, db.range_stops)],
    }
    if args.json:
        print(json_text(s))
        return 0
    print(s["file"])
    print(f"  frames     {s['frames']} ({s['seconds']:.1f} s at 60 fps), {searchable} searchable")
    print(f"  ranges     {s['ranges']}")
    for name, n in zip(s["range_names"], s["range_frames"]):
        print(f"    {n:5d}  {name}")
    print(f"  features   {s['features']}: " + ", ".join(
        f"{k} ({v['kind']}, {v['columns'][1] - v['columns'][0]}, weight {v['weight']:g})" for k, v in s["groups"].items()))
    print(f"  skeleton   {s['skeleton_joints']} joints, hash {s['skeleton_hash']}")
    return 0


def _cmd_mm(args):
    return args.handler(args)


# ---------------------------------------------------------------- JSON


def _finite(value):
    """``value`` with every non-finite float (NaN, infinities) replaced by None, numpy scalars made Python ones."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(value):
    """Strict JSON text of ``value`` for ``--json``: never NaN or Infinity (a non-finite number is null)."""
    return json.dumps(_finite(value), allow_nan=False)


# ---------------------------------------------------------------- edit


def _args_edit(p):
    p.add_argument("graph", nargs="?", help="graph file to open (a new .json path starts a new graph to save there; "
                                            "none: a new graph on the bundled walk clip)")
    p.add_argument("--screenshot", metavar="PNG", help="open the graph, play --frames frames, write a PNG of the "
                                                       "whole window and exit (for tests and docs)")
    p.add_argument("--frames", type=_whole(0), default=60,
                   help="frames to play before --screenshot: the picture shows frame N (0: the first; default 60)")


def _cmd_edit(args):
    try:
        import dearpygui.dearpygui  # noqa: F401
    except ImportError:
        raise AnimgraphError("the editor needs dearpygui: pip install 'animgraph[editor]'") from None
    if args.screenshot is not None:
        from .fileio import check_writable

        if not args.screenshot.lower().endswith(".png"):
            raise AnimgraphError(f"--screenshot {args.screenshot!r}: the file name must end in .png")
        check_writable(args.screenshot, "--screenshot")  # before anything plays: a directory, no folder, no permission
    from .editor import launch

    return launch.main(args.graph, screenshot=args.screenshot, frames=args.frames)


# ---------------------------------------------------------------- registry

# (name, one-line help, add_arguments(parser), handler(args) -> exit status)
COMMANDS = [
    ("info", "skeleton, frames, rate, duration, root speed, turning and tracks of a BVH file", _args_info, _cmd_info),
    ("validate", "check a graph file: prints OK and its size, or the one-line error", _args_validate, _cmd_validate),
    ("schema", "print the JSON Schema of graph files", _args_schema, _cmd_schema),
    ("tracks", "every clip asset's tracks (foot contacts, plants, the graph's own) as a table or JSON", _args_tracks,
     _cmd_tracks),
    ("run", "evaluate a graph for N frames, optionally writing .bvh, .glb, .gltf or .npz", _args_run, _cmd_run),
    ("demo", "a scripted stick steering the motion-matching locomotion graph: prints what it did, writes a BVH and "
     "a plot", _args_demo,
     _cmd_demo),
    ("bench", "the benchmark suite (ns per character per frame, compile and start-up times)", _args_bench, _cmd_bench),
    ("verify", "every node's propagated velocities against central differences, as a table", _args_verify, _cmd_verify),
    ("mm", "motion matching: 'mm build' a database from clips, 'mm info' about one", _args_mm, _cmd_mm),
    ("edit", "open the node editor (needs the [editor] extra and a display)", _args_edit, _cmd_edit),
]


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line (status 2), like every other error."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {' '.join(message.split())} (see {self.prog} --help)\n")


def build_parser():
    """The argparse parser with every command of ``COMMANDS``."""
    parser = _Parser(
        prog=PROG, description="Node-graph character animation where every pose carries its velocities."
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help_, add_arguments, handler in COMMANDS:
        p = sub.add_parser(name, help=help_, description=help_)
        add_arguments(p)
        p.set_defaults(handler=handler)
    return parser


def _one_line(err):
    if isinstance(err, OSError) and err.filename is not None:
        text = f"{err.filename}: {err.strerror or err}"
    else:
        text = str(err)
    return " ".join(text.split())


class Terminated(BaseException):
    """Raised by the SIGTERM/SIGHUP handler so that cleanups (temporary files) run as on Ctrl-C."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum, frame):
    raise Terminated(signum)


STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


# Commands that run kernels: on a cold cache their first call compiles them.
_COMPILING = {_cmd_demo, _cmd_run, _cmd_verify, _cmd_bench}


COMPILING = f"{PROG}: compiling the kernels for this version (once: about {{}} on 2 cores)..."
COMPILE_ESTIMATE = "15 s"  # measured: `animgraph demo` on a cold cache, 2 idle cores: first frame 10.6 s (15.7 s in all)
# on a quiet day, 11.6 s (17.5 s) on a slow one, with the compile helper
COMPILE_ESTIMATE_ALL = "35 s"  # measured: the executor of every node type (verify, bench, a second graph's run):
# 35.6 and 36.1 s on 2 idle cores on a slow day (ANIMGRAPH_EXECUTOR=full, locomotion, empty cache), 61 s of CPU
COMPILE_ESTIMATE_TILES = "40 s"  # measured: `animgraph run --batch 64` on a cold cache, 2 idle cores: locomotion 26 s,
# blend 38 s


def _node_types(args):
    """Node types the command's graph's plan runs (None: every type; False: the graph does not load or check, the
    command says why).  The plan's, not the file's: the check adds node types (``plan.node_types``), and an executor
    without them would be followed by the whole registry's, compiling twice."""
    from . import graphs
    from .graph import Graph
    from .plan import node_types

    if args.handler is _cmd_run:
        path = args.graph
    elif args.handler is _cmd_demo:
        path = graphs.path("gaits" if args.gaits else "locomotion")
    else:
        return None  # verify and bench run every node type
    try:
        return node_types(Graph.load(path))
    except (AnimgraphError, OSError, ValueError):
        return False


class _compile_progress:
    """The first-run line on stderr, printed when numba starts the first compile (a command that fails
    before compiling says nothing of it); on a terminal, followed by ``k/N node kernels`` as numba
    finishes each of ``cover``'s kernels (the node types the executor compiles; default all).

    Anything unexpected in numba's events only loses the count (or prints the line at once), never the command.
    """

    def __init__(self, estimate=COMPILE_ESTIMATE, cover=None):
        self.estimate, self.cover = estimate, cover

    def __enter__(self):
        self.tty = sys.stderr.isatty()
        self.line = COMPILING.format(self.estimate)
        self.said = False
        self.listener = None
        try:
            from numba.core import event

            from .node import REGISTRY

            dispatchers = {id(getattr(n.KERNEL, "py_func", n.KERNEL)): n.KERNEL for name, n in REGISTRY.items()
                           if self.cover is None or name in self.cover}
            done = set()
            progress = self

            class Listener(event.Listener):
                def on_start(self, ev):
                    progress.say()

                def on_end(self, ev):
                    if not progress.tty:
                        return
                    # A kernel the compile helper (animgraph.warm) cached is loaded with no compile
                    # event: it counts once it has an overload, seen at the next event.
                    f = id(getattr(ev.data.get("dispatcher"), "py_func", None))
                    now = {k for k, d in dispatchers.items() if k == f or getattr(d, "overloads", None)}
                    if now - done:
                        done.update(now)
                        print(f"\r{progress.line} {len(done)}/{len(dispatchers)} node kernels", end="",
                              file=sys.stderr, flush=True)

            self.listener = Listener()
            event.register("numba:compile", self.listener)
        except Exception:  # noqa: BLE001 (a progress count is never worth a failure)
            self.listener = None
            self.say()
        return self

    def say(self):
        """Print the line, once."""
        if not self.said:
            self.said = True
            print(self.line, file=sys.stderr, end="" if self.tty else "\n", flush=True)

    def __exit__(self, *exc):
        if self.listener is not None:
            from numba.core import event

            event.unregister("numba:compile", self.listener)
        if self.tty and self.said:
            print(file=sys.stderr, flush=True)
        return False


def main(argv=None):
    """Run the command line; returns the exit status (2 for user-input errors, 1 for internal errors)."""
    args = build_parser().parse_args(argv)
    previous = {}
    try:
        for signum in STOP_SIGNALS:
            if signal.getsignal(signum) == signal.SIG_DFL:  # an ignored one (nohup) stays ignored
                previous[signum] = signal.signal(signum, _terminate)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        if args.handler in _COMPILING:
            from . import executor
            from .instance import LANES_ENV
            from .lanes import LANES
            from .plan import MAX_BATCH

            # A batch of LANES or more runs the lane executor (run_tiles): compiled on its own first use.
            # (A batch out of range is refused before anything compiles: no announcement for it.)
            tiles = LANES <= getattr(args, "batch", 1) <= MAX_BATCH and os.environ.get(LANES_ENV, "1") != "0"
            used = _node_types(args)
            if used is not False and (cache.is_cold() or not executor.compiled("run_serial", used)
                                      or (tiles and not executor.compiled("run_tiles", used))):
                # Loaded now rather than at the graph's plan: a compile helper starts at once (animgraph.warm).
                cover = executor.load(used).COVERS
                every = cover == executor.kinds()  # no partial executor: every node type compiles
                estimate = COMPILE_ESTIMATE_TILES if tiles else COMPILE_ESTIMATE_ALL if every else COMPILE_ESTIMATE
                with _compile_progress(estimate, cover):
                    return args.handler(args) or 0
        return args.handler(args) or 0
    except BrokenPipeError:  # stdout closed early (| head): stop quietly, like any filter
        try:  # and no second error when Python flushes stdout at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
    except (AnimgraphError, OSError) as err:
        return _fail(2, _one_line(err))
    except MemoryError as err:
        return _fail(2, f"out of memory{': ' + _one_line(err) if str(err) else ''}; ask for fewer frames or characters")
    except KeyboardInterrupt:
        return _fail(130, "interrupted")
    except Terminated as stop:
        return _fail(128 + stop.signum, f"terminated ({signal.Signals(stop.signum).name})")
    except Exception as err:
        text = _one_line(err)
        return _fail(1, f"internal error: {type(err).__name__}{': ' + text if text else ''} "
                        "(ANIMGRAPH_DEBUG=1 shows the traceback)")
    finally:
        for signum in previous:
            signal.signal(signum, signal.SIG_DFL)


def _fail(status, line):
    if os.environ.get("ANIMGRAPH_DEBUG", "") not in ("", "0"):
        traceback.print_exc()
    print(f"{PROG}: {line}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
