"""The compiled executor: one numba function that walks a plan's op table for every character.

Its source is generated from the node registry (one ``elif kind == i`` branch per
node type, calling that type's ``KERNEL``) and written to the compiled-code cache
directory as ``executor_<key>.py``, where ``key`` hashes the kernel sources, the
node registry and the numba/Python versions: numba's on-disk cache for it can
never be stale, and a graph edit (new tables) never recompiles.  Every slot index
comes from the tables, never from a literal, so each kernel is compiled once.
On a cold cache, ``load(used)`` gives the first graph one with branches for its own node
types only (the same kind codes and kernels): a first run compiles what it uses, about
half of everything for the demo.  A graph of other node types compiles the whole one.

Arguments of ``run_serial``/``run_parallel`` (B characters), few and flat so that
a call costs little Python::

    table   int64:  header [n_ops, ops_at, io_at, parents_at, n_sig, slots, joints, frames],
                    the op table (OP_WIDTH per op: kind, ins start, outs start = ins stop, outs
                    stop (into io), par start, par stop, state start, state stop, gates start,
                    gates stop (into io)), io (port locators: pose slot or signal offset, -1
                    unlinked; then the gates, ``animgraph.gates``), the parents; the columns
                    are named once below (``N_OPS`` ..., ``OP_KIND`` ...).  A kind code past
                    the node types' is a node type's early kernel (``early_kind``).
    par     float64 (P,):   parameters of every op (shared by the characters)
    chars   float64 (B, n_sig + S): per character, the signal buffer then the state
    vecs    float32 (B, 5, slots, J, 3): per character, pos scl vel ang svl of every slot
    rots    float32 (B, slots, J, 4): per character, rot of every slot
    clipbuf float32: clip_pos, clip_rot, clip_scl of every frame (F*J*10), then each node
                    type's ``CLIP_TABLES`` in kind and declaration order (F * its per-frame size)
    dt      float: frame time (s)

Inside, each character's pose tuple ``(vecs[c, 0], rots[c], vecs[c, 1], ...)`` and the
``db`` tuples (``dbs``: the core ``clip_db``, and for each node type with tables the core
followed by its own) are C-contiguous views, so kernels see the arrays the node contract
describes.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import tempfile
from pathlib import Path

import numba
from animgraph.jit import njit

from . import cache
from .errors import GraphError
from .node import REGISTRY
from .views import rows

_LOADED = {}  # covered node types -> executor module
_FULL_COMPILED = {}  # registry -> True once its whole executor is known compiled

# The int64 table, named once here and used everywhere (planner, generated executor, Python reference):
# its header, then one row per op of OP_WIDTH columns (ranges into io, par and the state).
N_OPS, OPS_AT, IO_AT, PARENTS_AT, N_SIG, SLOTS, JOINTS, FRAMES = range(8)
HEADER_WIDTH = 8
OP_KIND, OP_INS, OP_OUTS, OP_OUTS_END, OP_PAR, OP_PAR_END, OP_STATE, OP_STATE_END, OP_GATE, OP_GATE_END = range(10)
OP_WIDTH = 10


@njit(cache=True, entry=True)
def clip_db(table, clipbuf):
    """What every kernel's ``db`` begins with (see ``animgraph.node``): views of ``clipbuf`` and the table's parents."""
    parents_at, joints, frames = table[PARENTS_AT], table[JOINTS], table[FRAMES]
    f3, f4 = frames * joints * 3, frames * joints * 4
    if 2 * f3 + f4 > clipbuf.shape[0]:
        raise ValueError("clip_db: the clip buffer is shorter than its table says")
    return (
        rows(clipbuf, 0, (frames, joints, 3)),
        rows(clipbuf, f3, (frames, joints, 4)),
        rows(clipbuf, f3 + f4, (frames, joints, 3)),
        table[parents_at:parents_at + joints],
    )


def _table_view(shape):
    """Source lines taking one table of per-frame ``shape`` from ``clipbuf`` at ``at`` (and moving ``at`` on)."""
    dims = ["joints" if d == "joints" else str(int(d)) for d in shape]
    size = " * ".join(["frames", *dims])
    return f"rows(clipbuf, at, (frames, {', '.join(dims)}))" if dims else f"clipbuf[at:at + {size}]", f"at += {size}"


def _dbs_source(names):
    """Source of ``dbs(table, clipbuf)``: the core db, then the db of every node type with ``CLIP_TABLES``."""
    lines = [
        "@njit(cache=True)",
        "def dbs(table, clipbuf):",
        "    db = clip_db(table, clipbuf)",
        f"    joints, frames = table[{JOINTS}], table[{FRAMES}]",
        "    at = frames * joints * 10  # after clip_pos, clip_rot, clip_scl",
    ]
    out, n = ["db"], 0
    for i, name in enumerate(names):
        specs = REGISTRY[name].CLIP_TABLES
        if not specs:
            continue
        views = []
        for t in specs:
            view, move = _table_view(t.shape)
            lines += [f"    t{n} = {view}  # {name}.{t.name}", f"    {move}"]
            views.append(f"t{n}")
            n += 1
        lines.append(f"    db{i} = (db[0], db[1], db[2], db[3], {', '.join(views)})")
        out.append(f"db{i}")
    lines += ["    if at > clipbuf.shape[0]:",
              "        raise ValueError('dbs: the clip buffer is shorter than its tables')",
              f"    return ({', '.join(out)},)"]
    return lines


def kinds():
    """Node type names in op-kind order (the executor's ``kind`` codes index this tuple)."""
    return tuple(sorted(REGISTRY))


def _kernel_ref(name, which="KERNEL"):
    """(module, attribute) through which the generated module imports a node type's kernel (or ``TILE_KERNEL``)."""
    kernel = getattr(REGISTRY[name], which)
    py = getattr(kernel, "py_func", kernel)
    module, attr = py.__module__, py.__name__
    if getattr(sys.modules.get(module), attr, None) is not kernel:
        raise GraphError(f"node type {name!r}: its kernel {module}.{attr} is not importable by name")
    return module, attr


def early_kind(names, i):
    """The kind code of node type ``names[i]``'s early kernel (``animgraph.node``): past every node type's own."""
    return len(names) + i


def _early(names, use):
    """The kinds in ``use`` whose node types have an early kernel."""
    return [i for i in use if REGISTRY[names[i]].EARLY_KERNEL is not None]


def _closing(names, use):
    """The kinds in ``use`` whose node types have a closing kernel (``animgraph.gates``)."""
    return [i for i in use if REGISTRY[names[i]].CLOSING_KERNEL is not None]


def _dispatch(kinds, names, indent, call, early=()):
    """Source lines ``if kind == i:`` / ``elif ...`` for the op kinds ``kinds``, each followed by ``call(i)``, then
    for the ``early`` ones the same with ``call(i, True)`` (the early kernel, ``e{i}``)."""
    lines = []
    cases = [(i, f"{i}", names[i], call(i)) for i in kinds]
    cases += [(i, f"{early_kind(names, i)}", f"{names[i]}, early", call(i, True)) for i in early]
    for n, (_, code, label, text) in enumerate(cases):
        lines.append(f"{indent}{'if' if n == 0 else 'elif'} kind == {code}:  # {label}")
        lines.append(f"{indent}    {text}")
    return lines


def _call(i, own, early=False, state="x", pose="pose", sig="s"):
    """Source of one kernel call for kind ``i`` (``early``: its early kernel) with the walk's arguments."""
    return f"{'e' if early else 'k'}{i}(ins, outs, p, {state}, {pose}, {sig}, {_db(i, own)}, dt)"


def _db(i, own):
    """The ``db`` a kind-``i`` kernel gets: its own (node types with ``CLIP_TABLES``) or the core one."""
    return f"db{i}" if i in own else "db"


def source(names, cover=None):
    """Python source of the executor module for node types ``names`` (in kind order).

    ``cover``: the node types given a branch (default: all of ``names``); the kind codes stay
    those of ``names``, so every plan's table runs on it unchanged if its kinds are covered.
    """
    cover = names if cover is None else cover
    use = [i for i, name in enumerate(names) if name in cover]
    lines = [
        '"""Generated by animgraph.executor from the node registry: do not edit."""',
        "",
        "import numpy as np",
        "from numba import prange",
        "",
        "from animgraph.jit import njit",
        "",
        "from animgraph.executor import clip_db",
        "from animgraph.gates import gate_open, gate_why",
        "from animgraph.views import alive, borrowed, rows",
        "",
    ]
    lines.append("from animgraph.lanes import LANES")
    lines.append("from animgraph.tilewalk import chars_to_output, make_current, mark_written, slot_to_output")
    for i in use:
        name = names[i]
        module, attr = _kernel_ref(name)
        lines.append(f"from {module} import {attr} as k{i}  # {name}")
        if REGISTRY[name].TILE_KERNEL is not None:
            module, attr = _kernel_ref(name, "TILE_KERNEL")
            lines.append(f"from {module} import {attr} as t{i}  # {name}, lane tiles")
        if REGISTRY[name].EARLY_KERNEL is not None:
            module, attr = _kernel_ref(name, "EARLY_KERNEL")
            lines.append(f"from {module} import {attr} as e{i}  # {name}, early")
        if REGISTRY[name].CLOSING_KERNEL is not None:
            module, attr = _kernel_ref(name, "CLOSING_KERNEL")
            lines.append(f"from {module} import {attr} as c{i}  # {name}, closing")
    lines.append(f"\nKINDS = {tuple(names)!r}")
    lines.append(f"COVERS = {tuple(names[i] for i in use)!r}  # the kinds with a branch below\n")
    own = [i for i, name in enumerate(names) if REGISTRY[name].CLIP_TABLES]
    dbs = ", ".join(["db"] + [f"db{i}" for i in own])
    lines += ["", *_dbs_source(names), ""]
    head = f"def character(c, table, par, chars, vecs, rots, {dbs}, dt):"
    body = [
        f"n_ops, ops_at, io_at, n_sig = table[{N_OPS}], table[{OPS_AT}], table[{IO_AT}], table[{N_SIG}]",
        "v = vecs[c]",
        "pose = (v[0], rots[c], v[1], v[2], v[3], v[4])",
        "s = chars[c, 0:n_sig]",
        "t = chars[c, n_sig:]",
        "for i in range(n_ops):",
        f"    o = ops_at + {OP_WIDTH} * i",
        f"    kind = table[o + {OP_KIND}]",
        f"    ins = table[io_at + table[o + {OP_INS}]:io_at + table[o + {OP_OUTS}]]",
        f"    outs = table[io_at + table[o + {OP_OUTS}]:io_at + table[o + {OP_OUTS_END}]]",
        f"    p = par[table[o + {OP_PAR}]:table[o + {OP_PAR_END}]]",
        f"    x = t[table[o + {OP_STATE}]:table[o + {OP_STATE_END}]]",
        f"    g0, g1 = table[o + {OP_GATE}], table[o + {OP_GATE_END}]",
        "    if g0 < g1:",
        *_dispatch(_closing(names, use), names, "        ",
                   lambda i: f"c{i}(p, x, s, gate_why(table, io_at + g0, io_at + g1, t))"),
        "        if not gate_open(table, io_at + g0, io_at + g1, t, x, par):",
        "            continue",
    ]
    body += _dispatch(use, names, "    ", lambda i, e=False: _call(i, own, e), _early(names, use))
    args = "table, par, chars, vecs, rots, clipbuf, dt"
    borrow = "table, par, chars, vecs, rots, clipbuf = " + ", ".join(
        f"borrowed({a})" for a in ("table", "par", "chars", "vecs", "rots", "clipbuf"))
    # run_serial holds the per-character walk itself rather than calling ``character``: each
    # numba function's machine code is generated for everything it calls, so a separate
    # ``character`` would make a cold start generate the code of every kernel twice.
    # run_parallel (batch > 1) keeps calling it: its prange body is outlined anyway.
    lines += ["", "", "@njit(cache=True)", head, *("    " + b for b in body)]
    lines += [
        "",
        "",
        "@njit(cache=True, entry=True)",
        f"def run_serial({args}):",
        f"    {borrow}",
        f"    {dbs}, = dbs(table, clipbuf)",
        "    for c in range(chars.shape[0]):",
        *("        " + b for b in body),
        "",
        "",
        "@njit(cache=True, parallel=True, entry=True)",
        f"def run_parallel({args}):",
        f"    {borrow}",
        f"    {dbs}, = dbs(table, clipbuf)",
        "    for c in prange(chars.shape[0]):",
        # int64: numba lowers a prange index as uint64, and ``character`` would compile twice (int64 while typing)
        f"        character(np.int64(c), table, par, chars, vecs, rots, {dbs}, dt)",
        "",
        *_tiles_source(names, use, own, dbs, args, borrow),
    ]
    return "\n".join(lines)


def _tiles_source(names, use, own, dbs, args, borrow):
    """Source of ``run_tiles``: the op table walked once per tile of LANES characters (see ``animgraph.node``).

    An op whose type has a tile kernel runs on the whole tile; otherwise (or when that kernel
    returns False) its scalar kernel runs lane by lane on the characters' own slots.  A pose
    slot lives in the tile, in the characters' slots, or both: ``in_tile``/``in_chars`` say
    where it is current, and a slot is copied across (``tilewalk.slot_in``, ``slot_out``)
    only when an op of the other kind reads it, so a run of scalar ops costs what the
    per-character executor costs.  At the end the ``keep`` slots (the outputs) are copied to
    ``out_vecs``/``out_rots``, the instance's output arrays.  ``work`` holds one tile per
    thread, reused for every tile that thread walks (``animgraph.tilewalk``).

    Each op is one pass of the loop over the table with nothing carried from one op to the next but
    the two currency flags, so an op a tile does not need can be skipped with one test at the top of
    the loop (state machines, blend spaces), and state is only in ``chars``, per character.
    """
    tiled = [i for i in use if REGISTRY[names[i]].TILE_KERNEL is not None]
    head = args.replace(", clipbuf, dt", "")
    lines = [
        "",
        "# Tiles over numba's threads: each of ``work``'s rows walks every n-th tile (numba's thread count is not read:",
        "# it would keep the function out of the cache).  Measured: the walk as a function of its own runs 1.5x",
        "# faster than the same walk written in the loop.",
        "@njit(cache=True, parallel=True, entry=True)",
        f"def run_tiles({args.replace(', dt', '')}, work, pose_io, keep, out_vecs, out_rots, dt):",
        f"    {borrow}",
        "    work, pose_io, keep = borrowed(work), borrowed(pose_io), borrowed(keep)",
        "    out_vecs, out_rots = borrowed(out_vecs), borrowed(out_rots)",
        f"    {dbs}, = dbs(table, clipbuf)",
        "    n_tiles = chars.shape[0] // LANES",
        "    n_work = min(work.shape[0], n_tiles)  # one per thread at most: fewer threads walk several in turn",
        "    for w in prange(n_work):",
        f"        own = np.zeros(2 * table[{SLOTS}], np.bool_)",
        "        flags = borrowed(own)",
        "        for t in range(w, n_tiles, n_work):",
        f"            walk_tile(np.int64(t), {head}, {dbs}, work[w], flags, pose_io, keep, out_vecs, out_rots, dt)",
        "        alive(own)",
        "",
        "",
        "@njit(cache=True)",
        f"def walk_tile(t, {head}, {dbs}, tile, flags, pose_io, keep, out_vecs, out_rots, dt):",
        f"    n_ops, ops_at, io_at, n_sig = table[{N_OPS}], table[{OPS_AT}], table[{IO_AT}], table[{N_SIG}]",
        f"    n_slots = table[{SLOTS}]",
        "        c0 = t * LANES",
        "        sg = chars[c0:c0 + LANES, 0:n_sig]",
        "        in_tile, in_chars = flags[0:n_slots], flags[n_slots:2 * n_slots]",
        "        in_tile[:] = False",
        "        in_chars[:] = False",
        "        for i in range(n_ops):",
        f"            o = ops_at + {OP_WIDTH} * i",
        f"            kind = table[o + {OP_KIND}]",
        f"            a0, a1, a2 = table[o + {OP_INS}], table[o + {OP_OUTS}], table[o + {OP_OUTS_END}]",
        "            ins = table[io_at + a0:io_at + a1]",
        "            outs = table[io_at + a1:io_at + a2]",
        f"            p = par[table[o + {OP_PAR}]:table[o + {OP_PAR_END}]]",
        f"            s0, s1 = n_sig + table[o + {OP_STATE}], n_sig + table[o + {OP_STATE_END}]",
        f"            g0, g1 = io_at + table[o + {OP_GATE}], io_at + table[o + {OP_GATE_END}]",
        "            live = LANES  # the lanes this op runs for: all, unless it is gated (animgraph.gates)",
        "            if g0 < g1:",
        "                live = 0",
        "                for lane in range(LANES):",
        *_dispatch(_closing(names, use), names, " " * 20,
                   lambda i: f"c{i}(p, chars[c0 + lane, s0:s1], sg[lane], gate_why(table, g0, g1, "
                             "chars[c0 + lane, n_sig:]))"),
        "                    if gate_open(table, g0, g1, chars[c0 + lane, n_sig:], chars[c0 + lane, s0:s1], par):",
        "                        live += 1",
        "                if live == 0:",
        "                    continue",
        "            done = False",
    ]
    if tiled:
        lines += [
            f"            if live == LANES and ({' or '.join(f'kind == {i}' for i in tiled)}):",
            "                make_current(tile, table, io_at, a0, a1, pose_io, c0, vecs, rots, in_tile, in_chars, True)",
        ]
        lines += _dispatch(tiled, names, " " * 16,
                           lambda i: f"done = t{i}(ins, outs, p, chars[c0:c0 + LANES, s0:s1], tile, sg, {_db(i, own)}, dt)")
    lines += [
        "            if done:",
        "                mark_written(table, io_at, a1, a2, pose_io, in_tile, in_chars)",
        "                continue",
        "            make_current(tile, table, io_at, a0, a1, pose_io, c0, vecs, rots, in_chars, in_tile, False)",
        "            for lane in range(LANES):",
        "                c = c0 + lane",
        "                if live < LANES and not gate_open(table, g0, g1, chars[c, n_sig:], chars[c, s0:s1], par):",
        "                    continue",
        "                v = vecs[c]",
        "                pose = (v[0], rots[c], v[1], v[2], v[3], v[4])",
        "                s = chars[c, 0:n_sig]",
        "                x = chars[c, s0:s1]",
    ]
    lines += _dispatch(use, names, " " * 16, lambda i, e=False: _call(i, own, e), _early(names, use))
    lines += [
        "            mark_written(table, io_at, a1, a2, pose_io, in_chars, in_tile)",
        "        for k in range(keep.shape[0]):",
        "            if in_tile[keep[k]]:",
        "                slot_to_output(tile, keep[k], k, c0, out_vecs, out_rots)",
        "            else:  # written by a scalar kernel, or not this frame",
        "                chars_to_output(keep[k], k, c0, vecs, rots, out_vecs, out_rots)",
        "",
    ]
    body = lines.index("        c0 = t * LANES")  # written one level deeper than walk_tile's body: dedent
    return lines[:body] + [line[4:] for line in lines[body:]]


def _key(text, names):
    """Hash of everything the compiled executor (with branches for node types ``names``) depends on."""
    h = hashlib.sha256()
    h.update(cache.source_hash().encode())
    h.update(text.encode())
    from . import lanes  # noqa: F401  (the generated module imports it)

    from . import gates, tilewalk  # noqa: F401

    modules = {_kernel_ref(n)[0] for n in names} | {"animgraph.lanes", "animgraph.tilewalk"}
    modules |= {_kernel_ref(n, "TILE_KERNEL")[0] for n in names if REGISTRY[n].TILE_KERNEL is not None}
    modules |= {_kernel_ref(n, "EARLY_KERNEL")[0] for n in names if REGISTRY[n].EARLY_KERNEL is not None}
    modules.add("animgraph.gates")
    for module in sorted(modules):
        h.update(Path(inspect.getfile(sys.modules[module])).read_bytes())
    h.update(f"{numba.__version__} {sys.version}".encode())
    return h.hexdigest()[:20]


def _write_once(path, text):
    """Write ``text`` to ``path`` unless it is already there; atomic, so concurrent writers are safe."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".executor.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)  # mkstemp makes it private; it is an ordinary cache file
    os.replace(tmp, path)


def cache_path(key):
    """Where the generated executor module for ``key`` lives."""
    return cache.cache_dir() / "executor" / f"executor_{key}.py"


def load(used=None):
    """The executor module for the node types ``used`` (default: the whole registry); generated and imported once.

    A cold cache compiles only the branches the first graph uses (``used``: its node types),
    which is what a first run waits for; a graph of other node types then compiles the whole
    registry's executor, which serves every graph from then on, so a graph edit never compiles
    (``_cover``).  ``ANIMGRAPH_EXECUTOR=full`` always takes the whole one.
    """
    names = kinds()
    return _module(names, _cover(names, used))


def _module(names, cover, helper=True):
    """The executor module with branches for ``cover``; on a cold cache ``helper`` starts a compile helper."""
    if cover in _LOADED:
        return _LOADED[cover]
    text = source(names, cover)
    key = _key(text, cover)
    path = cache_path(key)
    _write_once(path, text)
    modname = f"animgraph._executor_{key}"
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    module.KEY, module.PATH = key, path
    _LOADED[cover] = module
    if helper and not _compiled(key):
        from . import warm

        warm.start(key, names, cover)  # a helper process compiles half the kernels meanwhile
    return module


FULL_ENV = "ANIMGRAPH_EXECUTOR"  # "full": every plan runs on the whole registry's executor, compiled or not


def _any_module(names):
    """A loaded executor module (their ``dbs`` are all the same), else the whole one, without a compile helper."""
    return next(iter(_LOADED.values()), None) or _module(names, names, helper=False)


def _cover(names, used):
    """The node types ``load(used)`` gives branches (see ``load``).

    The first executor a cold cache compiles covers ``used`` only; a later graph it covers
    shares it; a graph with other node types gets the whole registry's, compiled once for
    good, so at most one partial executor is ever compiled before graph edits stop compiling.
    """
    if used is None or os.environ.get(FULL_ENV, "").strip().lower() == "full":
        return names
    used = set(used)
    unknown = used - set(names)
    if unknown:
        raise GraphError(f"unknown node type {sorted(unknown)[0]!r}")
    cover = tuple(name for name in names if name in used)
    if cover == names or _full_compiled(names):
        return names
    first = _partial_cover(names)
    if first is None:
        return cover
    return first if used <= set(first) else names


def _partial_cover(names):
    """The node types of this version's partial executor, loaded in this process or compiled on disk; else None."""
    for cover in _LOADED:
        if cover != names:
            return cover
    try:
        files = sorted(cache_path("").parent.glob("executor_*.py"))
    except OSError:
        return None
    for path in files:
        try:
            found = re.search(r"^COVERS = (\(.*\))", path.read_text(encoding="utf-8"), re.M)
            cover = tuple(ast.literal_eval(found.group(1))) if found else None
        except (OSError, ValueError, SyntaxError):
            continue
        if cover and cover != names and set(cover) <= set(names):
            key = _key(source(names, cover), cover)
            if path.name == f"executor_{key}.py" and _compiled(key):
                return cover
    return None


def _full_compiled(names):
    """Whether the whole registry's executor is compiled (on disk or in this process); remembered once true."""
    if _FULL_COMPILED.get(names):
        return True
    module = _LOADED.get(names)
    done = bool(module is not None and module.run_serial.overloads) or _compiled(_key(source(names), names))
    if done:
        _FULL_COMPILED[names] = True
    return done


def _compiled(key, entry="run_serial"):
    """Whether numba's disk cache holds ``entry`` of executor ``key`` (then a first call only loads code).

    Looked up in numba's cache directory, and beside the generated module (``__pycache__``),
    where numba caches it when no cache directory is configured.
    """
    roots = (Path(numba.config.CACHE_DIR or cache.cache_dir() / "numba"), cache_path(key).parent / "__pycache__")
    try:
        return any(any(root.rglob(f"executor_{key}.{entry}-*.nbi")) for root in roots if root.is_dir())
    except OSError:
        return False


def compiled(entry="run_serial", used=None):
    """Whether ``load(used)``'s executor has ``entry`` (``run_serial``, ``run_tiles``) compiled on disk."""
    names = kinds()
    cover = _cover(names, used)
    return _compiled(_key(source(names, cover), cover), entry)


def full_key():
    """The cache key of the whole registry's executor (what the editor's warm-up marker is named after)."""
    names = kinds()
    return _key(source(names), names)


def covers(module, used):
    """Whether executor ``module`` has a branch for every node type in ``used``."""
    return set(used) <= set(module.COVERS)


def walk_in_python(table, par, chars, vecs, rots, clipbuf, dt):
    """The executor's loop in Python, calling each node type's kernel: a reference for tests and benchmarks.

    The same arguments as ``run_serial``; the slices have the executor's types, so each
    kernel is compiled once for both.
    """
    from .gates import gate_open, gate_why

    names = kinds()
    kernels = [REGISTRY[name].KERNEL for name in names] + [REGISTRY[name].EARLY_KERNEL for name in names]
    closing = [REGISTRY[name].CLOSING_KERNEL for name in names]
    n_ops, ops_at, io_at, n_sig = (int(x) for x in table[[N_OPS, OPS_AT, IO_AT, N_SIG]])
    every = iter(_any_module(names).dbs(table, clipbuf))  # the core db, then those of node types with tables
    core = next(every)
    db = [next(every) if REGISTRY[name].CLIP_TABLES else core for name in names] * 2
    dt = float(dt)
    for c in range(chars.shape[0]):
        v = vecs[c]
        pose = (v[0], rots[c], v[1], v[2], v[3], v[4])
        s, t = chars[c, :n_sig], chars[c, n_sig:]
        for i in range(n_ops):
            row = table[ops_at + OP_WIDTH * i:ops_at + OP_WIDTH * (i + 1)]
            kind, x = row[OP_KIND], t[row[OP_STATE]:row[OP_STATE_END]]
            g0, g1 = io_at + row[OP_GATE], io_at + row[OP_GATE_END]
            if g0 < g1 and kind < len(names) and closing[kind] is not None:
                closing[kind](par[row[OP_PAR]:row[OP_PAR_END]], x, s, gate_why(table, g0, g1, t))
            if g0 < g1 and not gate_open(table, g0, g1, t, x, par):
                continue
            kernels[kind](table[io_at + row[OP_INS]:io_at + row[OP_OUTS]],
                          table[io_at + row[OP_OUTS]:io_at + row[OP_OUTS_END]],
                          par[row[OP_PAR]:row[OP_PAR_END]], x, pose, s, db[kind], dt)


def kernel_signatures():
    """``[(name, kernel, argument types)]`` in kind order: each kernel's numba signature as ``run_serial`` calls it.

    Derived from tiny arguments sliced the way the generated walk slices its own (a
    contiguous 1-D slice of a C array is C in numpy's typeof and in numba's typing alike;
    ``walk_in_python`` relies on the same), so compiling a kernel with these types fills
    exactly the cache entry ``run_serial``'s compile looks up (``animgraph.warm``).
    """
    import numpy as np

    names = kinds()
    joints, frames, n_sig = 2, 2, 2
    table = np.zeros(HEADER_WIDTH + joints, np.int64)
    table[[N_OPS, OPS_AT, IO_AT, PARENTS_AT, N_SIG, SLOTS, JOINTS, FRAMES]] = (
        0, HEADER_WIDTH, HEADER_WIDTH, HEADER_WIDTH, n_sig, 1, joints, frames)
    per_frame = joints * 10 + sum(int(np.prod(t.frame_shape(joints), dtype=np.int64))
                                  for name in names for t in REGISTRY[name].CLIP_TABLES)
    clipbuf = np.zeros(frames * per_frame, np.float32)
    par, chars = np.zeros(1), np.zeros((1, n_sig + 1))
    vecs, rots = np.zeros((1, 5, 1, joints, 3), np.float32), np.zeros((1, 1, joints, 4), np.float32)
    # The Python body of the generated ``dbs`` gives views of the same types as its compiled self.
    every = iter(_any_module(names).dbs.py_func(table, clipbuf))
    core = next(every)
    v = vecs[0]
    pose = (v[0], rots[0], v[1], v[2], v[3], v[4])
    s, t = chars[0, 0:n_sig], chars[0, n_sig:]
    ins = table[HEADER_WIDTH:HEADER_WIDTH]
    out = []
    for name in names:
        db = next(every) if REGISTRY[name].CLIP_TABLES else core
        args = (ins, ins, par[0:0], t[0:0], pose, s, db, 1.0 / 60.0)
        out.append((name, REGISTRY[name].KERNEL, tuple(numba.typeof(a) for a in args)))
        if REGISTRY[name].EARLY_KERNEL is not None:
            out.append((name, REGISTRY[name].EARLY_KERNEL, tuple(numba.typeof(a) for a in args)))
    return out
