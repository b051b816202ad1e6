"""Running a graph file for N frames: inputs given as text, a progress bar, outputs written atomically.

This is what ``animgraph run`` and ``animgraph validate`` do, as functions:

- ``validate(path)`` loads, checks and plans a graph (no compiling) and returns the plan;
- ``run(path, frames, batch, dt, inputs, out, pose_output)`` evaluates it and writes ``out``:
  ``.bvh`` the first character's local pose sequence of one pose output (``pose_output``,
  default the first; on the graph's skeleton), ``.glb``/``.gltf`` the same as glTF 2.0 with the
  run's exact local velocities as cubic tangents (``gltf_linear``: LINEAR keys), ``.npz`` every
  output of every character and frame.

Every user-input problem is an ``AnimgraphError`` (one line naming file, node and port);
nothing is written unless the whole run succeeded.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .check import GraphWarning
from .errors import AnimgraphError, GraphError
from . import fileio
from .fileio import atomic_write, check_space, check_writable, format_size
from .limits import DT_MAX, DT_MIN, SIGNAL_MAX
from .node import SIGNAL_SIZE
from .pose import FIELDS, Clip, Pose

OUT_SUFFIXES = (".bvh", ".glb", ".gltf", ".npz")
POSE_SUFFIXES = (".bvh", ".glb", ".gltf")  # files of the first character's pose
PROGRESS_DELAY = 0.5  # s: the bar appears only on runs longer than this


def validate(path):
    """The plan of graph file ``path`` (checked, assets loaded, tables laid out, nothing compiled)."""
    from .graph import Graph
    from .plan import make_plan

    return make_plan(Graph.load(path), batch=1, warn=False)


def parse_input(text):
    """``'name=value'`` -> (name, value): a number, true/false, or a list as ``1,2,3`` or ``[1, 2, 3]``."""
    name, sep, raw = text.partition("=")
    name, raw = name.strip(), raw.strip()
    if not sep or not name or not raw:
        raise AnimgraphError(f"--input {text!r}: expected name=value")
    try:
        value = json.loads(raw)
    except ValueError:
        try:
            value = [float(v) for v in raw.split(",")] if "," in raw else float(raw)
        except ValueError:
            raise AnimgraphError(
                f"--input {text!r}: cannot read {raw!r} as a number, true/false or a list like 1,2,3"
            ) from None
    if isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        value = [float(v) for v in value]
    elif isinstance(value, bool):
        value = float(value)
    elif isinstance(value, (int, float)):
        value = float(value)
    else:
        raise AnimgraphError(f"--input {text!r}: a value is a number, true/false or a list of numbers")
    return name, value


def check_input_kinds(plan, values):
    """Refuse an int input that is not a whole number an int32 holds, a bool input that is not true/false/0/1
    (no silent rounding or overflow), or a number not finite or past the limit of signal values; before anything
    runs or compiles."""
    for name, value in values.items():
        kind = plan.inputs.get(name, (None, None))[1]
        numbers = value if isinstance(value, list) else [value]
        text = ",".join(f"{v:g}" for v in numbers)
        if kind is not None and not all(math.isfinite(v) for v in numbers):
            raise GraphError(f"--input {name}={text}: a value is not finite", name, "value", plan.file)
        if kind == "int" and isinstance(value, float) and not (value.is_integer() and abs(value) < 2 ** 31):
            raise GraphError(f"--input {name}={value:g}: an int input takes a whole number of at most 9 digits",
                             name, "value", plan.file)
        if kind == "bool" and isinstance(value, float) and value not in (0.0, 1.0):
            raise GraphError(f"--input {name}={value:g}: a bool input takes true, false, 1 or 0", name, "value",
                             plan.file)
        if kind is not None and not all(abs(v) <= SIGNAL_MAX for v in numbers):
            raise GraphError(f"--input {name}={text}: outside [-{SIGNAL_MAX:g}, {SIGNAL_MAX:g}] (the limit of signal "
                             "values)", name, "value", plan.file)


def file_size(plan, frames, out):
    """Estimated bytes of ``out``: .bvh ~13 characters per channel value, glTF 3 float32 keys per channel value
    (cubic), .npz every recorded array uncompressed."""
    if out.suffix.lower() == ".bvh":
        return frames * plan.joints * 6 * 13
    if out.suffix.lower() in POSE_SUFFIXES:
        return frames * plan.joints * 10 * 3 * 4
    return frames * plan.batch * sum(
        plan.joints * (5 * 3 + 4) * 4 if kind == "pose" else SIGNAL_SIZE[kind] * 8 for kind, _, _ in plan.outputs.values())


def memory_needed(plan, frames, out):
    """Estimated bytes of a run: every character's pose slots, signals and state, and the frames recorded for
    ``out``."""
    pose_bytes = plan.joints * (5 * 3 + 4) * 4  # float32 pos scl vel ang svl (3) and rot (4) per joint
    per_character = plan.n_slots * pose_bytes + (len(plan.sig_init) + plan.n_state) * 8
    need = plan.batch * per_character
    if out is not None and out.suffix.lower() in POSE_SUFFIXES:
        # one character's pose, then float64 channels and ~16-character numbers, a few copies of each, to write it
        need += frames * (pose_bytes + plan.joints * 6 * 72)
    elif out is not None:
        need += file_size(plan, frames, out) * 5 // 4  # the recorded arrays and the finiteness check's bool copy
    return need


def check_memory(need, what):
    """An AnimgraphError '<what> would need about N of memory; M is available' when ``need`` bytes are more than
    the system has available (nothing when that is unknown)."""
    avail = fileio.available_memory()  # looked up at the call: tests stand in a small figure
    if avail is not None and need > avail:
        raise AnimgraphError(
            f"{what} would need about {format_size(need)} of memory; {format_size(avail)} is available")


def check_out(out):
    """``out`` as a Path with a known suffix that can be written (``fileio.check_writable``), or AnimgraphError."""
    if out is None:
        return None
    out = Path(out)
    if out.suffix.lower() not in OUT_SUFFIXES:
        raise AnimgraphError(f"--out {out}: the output file must end in .bvh, .glb, .gltf or .npz")
    check_writable(out)
    return out


class Recorder:
    """Copies of the given outputs per frame (first character only when ``first_only``); others are ignored."""

    def __init__(self, outputs, frames, first_only):
        self.arrays = {}
        self.first_only = first_only
        self.ids = tuple(outputs)
        for nid, value in outputs.items():
            for key, a in _arrays(nid, value):
                shape = a.shape[1:] if first_only and a.ndim > _tail(key) else a.shape
                self.arrays[key] = np.empty((frames,) + shape, a.dtype)

    def record(self, frame, outputs):
        for nid in self.ids:
            for key, a in _arrays(nid, outputs[nid]):
                self.arrays[key][frame] = a[0] if self.first_only and a.ndim > _tail(key) else a


def _tail(key):
    """Number of trailing axes of one character's array under ``key`` (pose fields: 2, signals: 1)."""
    return 2 if key.rsplit(".", 1)[-1] in FIELDS else 1


def _arrays(nid, value):
    if isinstance(value, Pose):
        return [(f"{nid}.{f}", getattr(value, f)) for f in FIELDS]
    return [(nid, value)]


def _first_bad(arrays):
    """(key, frame) of the first non-finite value, or None."""
    for key, a in arrays.items():
        bad = ~np.isfinite(a.reshape(a.shape[0], -1)).all(axis=1)
        if bad.any():
            return key, int(np.argmax(bad))
    return None


def _progress(frames, enabled):
    from tqdm import tqdm

    # disable=None: tqdm shows the bar only when stderr is a terminal; delay: only on long runs.
    return tqdm(
        total=frames, unit="frame", file=sys.stderr, disable=None if enabled else True,
        delay=PROGRESS_DELAY, leave=False,
    )


def pick_pose_output(plan, name=None):
    """The id of pose output ``name`` (default: the first pose output, None if there is none), or an AnimgraphError."""
    poses = [nid for nid, (kind, _, _) in plan.outputs.items() if kind == "pose"]
    if name is None:
        return poses[0] if poses else None
    if name not in poses:
        kind = plan.outputs[name][0] if name in plan.outputs else None
        why = f"is a {kind} output, not a pose" if kind else "no such output"
        raise GraphError(f"--pose-output {name!r}: {why} (pose outputs: {', '.join(poses) or 'none'})", file=plan.file)
    return name


def run_graph_file(path, frames, batch=1, dt=1.0 / 60.0, inputs=(), out=None, progress=True, pose_output=None,
                   gltf_linear=False, gltf_every=1, events_out=None):
    """Evaluate graph file ``path`` for ``frames`` frames of ``dt`` s on ``batch`` characters; write ``out``.

    ``inputs`` are ``'name=value'`` texts (applied to every character before frame 0);
    ``pose_output`` names the output a ``.bvh``, ``.glb`` or ``.gltf`` holds (default: the first pose output);
    ``gltf_linear`` writes glTF LINEAR keys instead of cubic ones with the velocities as tangents;
    ``gltf_every`` keeps every n-th frame (0, n, 2n, ...) as a glTF key; ``events_out`` a ``.jsonl`` file for
    the events of every step (``event_record``).
    Returns a summary dict (frames, batch, dt, seconds, outputs, written files, events).
    """
    from .runtime import compile as compile_graph

    if not (isinstance(frames, int) and frames >= 1):
        raise AnimgraphError(f"--frames must be a whole number >= 1, got {frames!r}")
    if not (isinstance(batch, int) and batch >= 1):
        raise AnimgraphError(f"--batch must be a whole number >= 1, got {batch!r}")
    if not (isinstance(dt, float) and math.isfinite(dt) and DT_MIN <= dt <= DT_MAX):
        raise AnimgraphError(f"--dt must be seconds in [{DT_MIN:g}, {DT_MAX:g}], got {dt!r}")
    out = check_out(out)
    if events_out is not None:
        events_out = Path(events_out)
        if events_out.suffix.lower() != ".jsonl":
            raise AnimgraphError(f"--events {events_out}: the events file must end in .jsonl")
        check_writable(events_out, "--events")
    if not (isinstance(gltf_every, int) and gltf_every >= 1):
        raise AnimgraphError(f"--gltf-every must be a whole number >= 1, got {gltf_every!r}")
    if (gltf_linear or gltf_every != 1) and (out is None or out.suffix.lower() not in (".glb", ".gltf")):
        given = "--gltf-linear" if gltf_linear else f"--gltf-every {gltf_every}"
        raise AnimgraphError(f"{given} applies to a glTF output: --out x.glb or x.gltf")
    values = dict(parse_input(text) for text in inputs)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", GraphWarning)
        plan = compile_graph(path, batch=batch)
    for w in caught:
        print(f"animgraph: warning: {w.message}", file=sys.stderr)
    file = plan.file
    check_input_kinds(plan, values)
    check_memory(memory_needed(plan, frames, out), f"{file}: --batch {batch}" + (
        f" with --frames {frames} recorded for {out}" if out is not None else ""))
    if out is not None:
        check_space(out, file_size(plan, frames, out))
    pose = pick_pose_output(plan, pose_output)
    if out is not None and out.suffix.lower() in POSE_SUFFIXES and pose is None:
        raise GraphError(f"a {out.suffix.lower()} output needs a pose output node", file=file)
    inst = plan.instance()
    inst.set_inputs(values)  # unknown names and bad values fail here, before any frame

    recorder = None
    if out is not None:
        first_only = out.suffix.lower() in POSE_SUFFIXES
        recorder = Recorder({pose: inst.outputs[pose]} if first_only else inst.outputs, frames, first_only)
    first, start = float("nan"), time.perf_counter()
    found, lost = [], 0
    with _progress(frames, progress) as bar:
        for f in range(frames):
            outputs = inst.step(dt)
            if events_out is not None:
                with warnings.catch_warnings():  # a full block is counted here and said once, below
                    warnings.simplefilter("ignore", GraphWarning)
                    got = inst.events()
                found += [event_record(e, dt) for e in got]
                lost += int(got.lost.sum())
            if recorder is not None:
                recorder.record(f, outputs)
            else:
                _check_finite(outputs, f, file)
            if f == 0:  # frame 0 also loads (or compiles) the executor: timed apart
                first, start = time.perf_counter() - start, time.perf_counter()
            bar.update(1)
    seconds = time.perf_counter() - start if frames > 1 else float("nan")
    if recorder is not None:
        bad = _first_bad(recorder.arrays)
        if bad:
            key, f = bad
            raise GraphError(f"output {key} is not finite at frame {f}: nothing written", file=file)
        if out.suffix.lower() == ".bvh":
            _write_bvh(out, plan, recorder.arrays, pose, dt)
        elif out.suffix.lower() in POSE_SUFFIXES:
            _write_gltf(out, plan, recorder.arrays, pose, dt, not gltf_linear, gltf_every)
        else:
            _write_npz(out, plan, recorder.arrays, dt)
    if events_out is not None:
        if lost:
            print(f"animgraph: warning: {file}: {lost} events lost (more than {plan.event_capacity} in one frame "
                  "for a character)", file=sys.stderr)
        fileio.atomic_write(events_out, lambda f: f.writelines(json.dumps(r) + "\n" for r in found), mode="w")
    return {
        "graph": str(file),
        "frames": frames,
        "batch": batch,
        "dt": dt,
        "seconds": seconds,  # frames 1 to the end (nan for a single frame)
        "first_frame_seconds": first,
        "outputs": {nid: kind for nid, (kind, _, _) in plan.outputs.items()},
        "out": str(out) if out is not None else None,
        "events_out": str(events_out) if events_out is not None else None,
        "events": len(found),
    }


def event_record(event, dt):
    """One line of ``--events``: an ``Event`` as a dict, with ``at`` the time since the run began (s), every step
    ``dt`` s long."""
    out = event._asdict()
    out["at"] = event.step * dt + event.time
    return out


def _check_finite(outputs, frame, file):
    for nid, value in outputs.items():
        for key, a in _arrays(nid, value):
            if not np.isfinite(a).all():
                raise GraphError(f"output {key} is not finite at frame {frame}", file=file)


def _write_bvh(out, plan, arrays, nid, dt):
    """The first character's pose sequence as BVH (a global pose output is made local first)."""
    from .bvh import save_bvh

    pose = _local_pose(plan, arrays, nid)
    save_bvh(out, plan.skeleton, Clip(plan.skeleton, pose.pos, pose.rot, pose.scl, dt=dt))


def _local_pose(plan, arrays, nid):
    """The first character's recorded pose sequence of output ``nid`` as a local Pose (F, J) with its velocities."""
    from .ops import bk

    pose = Pose(*(arrays[f"{nid}.{f}"] for f in FIELDS))
    if plan.checked.spaces.get((nid, "pose", "out")) == "global":
        pose = bk(pose, plan.skeleton.parents)
    return pose


def _write_gltf(out, plan, arrays, nid, dt, cubic, every=1):
    """The first character's pose sequence as glTF (every ``every``-th frame a key), the run's local velocities as
    the cubic keys' tangents."""
    from .gltf import save_gltf

    pose = _local_pose(plan, arrays, nid)[::every]
    clip = Clip(plan.skeleton, pose.pos, pose.rot, pose.scl, dt=dt * every,
                name=Path(plan.file).stem if plan.file else "")
    save_gltf(out, plan.skeleton, clip, cubic=cubic, vel=pose.vel, ang=pose.ang, svl=pose.svl)


def _write_npz(out, plan, arrays, dt):
    """Every output array (frames, batch, ...) plus dt and the skeleton, written to a temporary file then renamed."""
    extra = {"dt": np.float64(dt)}
    if plan.skeleton is not None:
        extra["joint_names"] = np.array(plan.skeleton.names)
        extra["parents"] = np.asarray(plan.skeleton.parents)
    batch = plan.batch
    data = {k: (a[:, None] if batch == 1 else a) for k, a in arrays.items()}  # always (frames, batch, ...)
    atomic_write(out, lambda f: np.savez(f, **data, **extra))


