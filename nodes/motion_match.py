"""Motion matching: play a database of clips, jumping to the frame whose features best match a query.

The database (a graph asset ``{"database": ...}``, ``animgraph.database``) holds 60 fps
root-relative frames (each root joint relative to the simulation bone) with their root
motion and foot contacts, and normalised features per frame (foot and hip positions and
velocities in the bone's frame, the future trajectory's positions and facings).  Each frame
the node plays on at the database's rate (a frame's ``dt`` is the step since the last frame,
as in ``inertialize``); it searches every ``interval`` s, when a foot plants, or when the
``trajectory`` input changes sharply (not within ``hold`` s of a switch), and always when
the clip ends.  The query is the features of the frame that plays next, its trajectory part
taken from the input (in the simulation object's own frame, as the database's) and
normalised like the database.  ``animgraph.search.boxed`` finds the best frame (exactly
brute force's) among the clips the ``tags`` filters keep; it replaces the playing one only
when it beats that next frame by ``margin`` (every other frame also pays
``transition_cost``) and is not within ``near`` s of it in the same clip.  A switch is
hidden by inertialization (a spring of ``halflife``, ``animgraph.offsets``), so position and
velocity stay continuous.  A reset starts from the database's stillest frame.

Between database frames the pose is linear in position and log-scale and uniform in
rotation (``exp(s log(q1 q0^-1)) q0``), so each frame interval has constant exact
velocities: ``(p1 - p0)/T``, ``log(q1 q0^-1)/T``, ``(log s1 - log s0)/T``.

Tables: the features and the two levels of boxes are packed row-major (``dims`` floats a row)
at the start of the database's block of each ``MAX_FEATURES``-wide table, so the search reads
contiguous (rows, dims) arrays.  State: the header ``ST``, per joint the previous output
and its offset (``JOINT``), the root-motion tail (``MOTION``).
"""

import math
from typing import List, Literal

import numpy as np
from animgraph.jit import njit
from pydantic import Field

from animgraph.errors import GraphError
from animgraph.kernels import KFORM, copy_pose, state_pose
from animgraph.limits import seconds_field
from animgraph.maths import qinv, qlog, qexp, qmul, store_kform, vadd, vexp, vlog, vscale, vsub
from animgraph.node import (DB_POS, DB_ROT, DB_SCL, ClipTable, Node, Port, db_indices, fields,
                            port_indices, register, slot)
from animgraph.offsets import OFFSET, inertialize_kernel, motion_offset, record_offsets, still_active
from animgraph.pose import Pose
from animgraph.search import LARGE, SMALL, boxed, build_boxes, incumbent
from animgraph.stencil import FRAME, STEPS

MAX_FEATURES = 32  # widest feature vector the node's tables hold
QUERY = 12  # the trajectory's values in a query: 3 positions (x, z) then 3 facings (x, z)

INPUTS = (Port("trajectory", "trajectory", "", "desired future of the simulation object, in its own frame"),)
OUTPUTS = (
    Port("pose", "pose", "local", "the matched frames, root-relative, switches inertialized"),
    Port("motion", "motion", "", "root motion of the matched frames, inertialized alike"),
    Port("changed", "bool", "", "1 on the frame a new database frame was chosen"),
    Port("left_contact", "bool", "", "the database's left foot contact"),
    Port("right_contact", "bool", "", "the database's right foot contact"),
    Port("searched", "bool", "", "1 on a frame that searched the database"),
    Port("cost", "scalar", "", "the best frame's cost at the last search (normalised feature units squared)"),
)
IN, OUT = port_indices("MotionMatchIn", INPUTS), port_indices("MotionMatchOut", OUTPUTS)

# Search settings; where the database sits in the frame array (start, frames), its feature width and
# box counts; the trajectory's feature columns with the normalisation; then 4 range tables (ranges each).
PAR = fields("MotionMatchPar", interval=1, margin=1, transition_cost=1, sharp=1, near=1, hold=1, halflife=1,
             frame_dt=1, start=1, frames=1, dims=1, small=1, large=1, columns=QUERY, offset=QUERY, gain=QUERY,
             ranges=1)
RANGE_STARTS, RANGE_STOPS, SEARCH_STARTS, SEARCH_STOPS = range(4)
# frame: the playing frame in the graph's frame array (fractional); timer: s since the last search;
# shown/elapsed/active: the inertializer's; left/right: last contacts; traj: the last search's trajectory
ST = fields("MotionMatchSt", frame=1, timer=1, shown=1, elapsed=1, active=1, left=1, right=1, searches=1,
            switches=1, traj=QUERY)
JOINT = fields("MotionMatchJoint", prev=KFORM, off=OFFSET)
MOTION = fields("MotionMatchMotion", last=6, offset=6)


# ---------------------------------------------------------------- per-frame tables from the database


def database_of(clip):
    """The ``animgraph.database.Database`` a database asset's clip carries, or None."""
    return getattr(clip, "database", None)


def _packed(clip, rows_of):
    """(F, MAX_FEATURES) float32: the database's (rows, dims) array ``rows_of(db)`` packed row-major at the start."""
    out = np.zeros((clip.frames, MAX_FEATURES), np.float32)
    db = database_of(clip)
    if db is not None:
        rows = np.ascontiguousarray(rows_of(db), np.float32).reshape(-1)
        out.reshape(-1)[:rows.size] = rows
    return out


def _per_frame(clip, name, width):
    """(F, width) float32: the database's per-frame array ``name``; zeros for a plain clip."""
    db = database_of(clip)
    return np.zeros((clip.frames, width), np.float32) if db is None else np.asarray(getattr(db, name), np.float32)


def _boxes(db):
    """(small min, small max, large min, large max) of the database's features, cached on it."""
    if getattr(db, "_boxes", None) is None:
        features = np.ascontiguousarray(db.features, np.float32)
        db._boxes = build_boxes(features, SMALL) + build_boxes(features, LARGE)
    return db._boxes


CLIP_TABLES = (
    ClipTable("features", (MAX_FEATURES,), lambda c: _packed(c, lambda d: d.features)),
    ClipTable("root_motion", (6,), lambda c: _per_frame(c, "motion", 6)),
    ClipTable("contacts", (2,), lambda c: _per_frame(c, "contacts", 2)),
    ClipTable("small_min", (MAX_FEATURES,), lambda c: _packed(c, lambda d: _boxes(d)[0])),
    ClipTable("small_max", (MAX_FEATURES,), lambda c: _packed(c, lambda d: _boxes(d)[1])),
    ClipTable("large_min", (MAX_FEATURES,), lambda c: _packed(c, lambda d: _boxes(d)[2])),
    ClipTable("large_max", (MAX_FEATURES,), lambda c: _packed(c, lambda d: _boxes(d)[3])),
)
FEATURES, ROOT_MOTION, CONTACTS, SMALL_MIN, SMALL_MAX, LARGE_MIN, LARGE_MAX = db_indices(CLIP_TABLES)


def trajectory_columns(db):
    """(columns, offset, gain) (12,) of the trajectory signal's values among the database's features: a value v
    is the feature (v - offset) * gain (gain = group weight / scale)."""
    columns = np.full(QUERY, -1.0)
    offset, gain = np.zeros(QUERY), np.ones(QUERY)
    weights = db.schema.weights()
    slices = db.schema.slices()
    for g in db.schema.groups:
        if g.kind not in ("trajectory_position", "trajectory_direction"):
            continue
        if len(g.offsets) != 3:
            raise ValueError(f"feature group {g.name!r} has {len(g.offsets)} offsets; the trajectory signal holds 3")
        at = 0 if g.kind == "trajectory_position" else 6
        cols = np.arange(slices[g.name].start, slices[g.name].stop)
        columns[at:at + 6] = cols
        offset[at:at + 6], gain[at:at + 6] = db.offset[cols], weights[cols] / db.scale[cols]
    return columns, offset, gain


MIRRORED = " (mirrored)"  # the suffix of a mirrored range's name (``animgraph.database``)
SIDES = {"left": "right", "right": "left"}


def range_tags(name):
    """A database range's tags: the words of its clip's name ("jog_turn_left": jog, turn, left); a mirror image
    has "mirrored" and its left and right swapped (the mirror of a left turn is a right turn)."""
    mirrored = name.endswith(MIRRORED)
    base = name[:-len(MIRRORED)] if mirrored else name
    words = {w for w in base.lower().replace("-", "_").replace(" ", "_").split("_") if w}
    return {SIDES.get(w, w) for w in words} | {"mirrored"} if mirrored else words


def search_ranges(db, include=(), exclude=()):
    """(starts, stops) (R,) int64: the searchable frames of the ranges kept by the tag filters (others emptied)."""
    starts, stops = np.array(db.search_starts, np.int64), np.array(db.search_stops, np.int64)
    for r, name in enumerate(db.names):
        tags = range_tags(name)
        if (include and not tags & set(include)) or tags & set(exclude):
            stops[r] = starts[r]
    return starts, stops


def rest_frame(db, starts, stops):
    """The searchable frame (of ``starts``/``stops``) that moves least: root speed plus turn rate times 1 m.

    The first search of a reset asks from this frame's pose: a character appears standing
    unless its input asks otherwise, instead of in whatever pose the first clip starts in.
    """
    motion = np.asarray(db.motion, np.float64)
    still = np.linalg.norm(motion[:, :3], axis=1) + np.linalg.norm(motion[:, 3:], axis=1)
    searchable = np.zeros(len(still), bool)
    for a, b in zip(starts, stops):
        searchable[a:b] = True
    return int(np.argmin(np.where(searchable, still, np.inf)))


# ---------------------------------------------------------------- kernel


@njit(cache=True)
def frame_pose(db, frame, frame_dt, out):
    """The pose between frames ``floor(frame)`` and the next, with the interval's constant exact velocities."""
    i = int(math.floor(frame))
    s = frame - i
    cpos, crot, cscl = db[DB_POS], db[DB_ROT], db[DB_SCL]
    inv_t = 1.0 / frame_dt
    for j in range(cpos.shape[1]):
        p0 = (float(cpos[i, j, 0]), float(cpos[i, j, 1]), float(cpos[i, j, 2]))
        p1 = (float(cpos[i + 1, j, 0]), float(cpos[i + 1, j, 1]), float(cpos[i + 1, j, 2]))
        q0 = (float(crot[i, j, 0]), float(crot[i, j, 1]), float(crot[i, j, 2]), float(crot[i, j, 3]))
        q1 = (float(crot[i + 1, j, 0]), float(crot[i + 1, j, 1]), float(crot[i + 1, j, 2]), float(crot[i + 1, j, 3]))
        l0 = vlog((float(cscl[i, j, 0]), float(cscl[i, j, 1]), float(cscl[i, j, 2])))
        l1 = vlog((float(cscl[i + 1, j, 0]), float(cscl[i + 1, j, 1]), float(cscl[i + 1, j, 2])))
        d = qmul(q1, qinv(q0))
        if d[0] < 0.0:
            d = (-d[0], -d[1], -d[2], -d[3])
        turn = vscale(qlog(d), 2.0)  # rotation vector of the interval
        vel, dl = vscale(vsub(p1, p0), inv_t), vscale(vsub(l1, l0), inv_t)
        k = (vadd(p0, vscale(vsub(p1, p0), s)), qmul(qexp(vscale(turn, 0.5 * s)), q0),
             vexp(vadd(l0, vscale(vsub(l1, l0), s))), vel, vscale(turn, inv_t), dl)
        store_kform(out, j, k)


@njit(cache=True)
def packed_rows(table, start, rows, dims):
    """The (rows, dims) float32 array packed at the start of a table's block from frame ``start``."""
    width = table.shape[1]
    flat = table.reshape(table.shape[0] * width)
    return flat[start * width:start * width + rows * dims].reshape((rows, dims))


@njit(cache=True)
def range_table(par, k):
    """Range table ``k`` (RANGE_STARTS, ...) of the parameters, database-relative frames as int64 (R,)."""
    n = int(par[PAR.ranges])
    out = np.empty(n, np.int64)
    for r in range(n):
        out[r] = int(par[PAR.SIZE + k * n + r])
    return out


@njit(cache=True)
def range_stop(par, frame):
    """The end (exclusive, database-relative) of the range holding database frame ``frame``."""
    starts, stops = range_table(par, RANGE_STARTS), range_table(par, RANGE_STOPS)
    for r in range(starts.shape[0]):
        if starts[r] <= frame < stops[r]:
            return stops[r]
    return frame + 1


@njit(cache=True)
def search_frame(db, par, query, successor):
    """(frame, cost): the best searchable database frame for ``query``; ``successor`` (or -1) kept unless beaten by
    the margin (its cost then is the successor's, less the margin)."""
    start, frames, dims = int(par[PAR.start]), int(par[PAR.frames]), int(par[PAR.dims])
    small, large = int(par[PAR.small]), int(par[PAR.large])
    features = packed_rows(db[FEATURES], start, frames, dims)
    starts, stops = range_table(par, SEARCH_STARTS), range_table(par, SEARCH_STOPS)
    searchable = False
    for r in range(starts.shape[0]):
        searchable = searchable or starts[r] <= successor < stops[r]
    cost, index = incumbent(features, query, successor if searchable else -1, np.float32(par[PAR.margin]))
    index, cost = boxed(features, starts, stops, query, cost, index, np.float32(par[PAR.transition_cost]),
                        packed_rows(db[SMALL_MIN], start, small, dims), packed_rows(db[SMALL_MAX], start, small, dims),
                        packed_rows(db[LARGE_MIN], start, large, dims), packed_rows(db[LARGE_MAX], start, large, dims))
    return index, cost


@njit(cache=True)
def near(par, a, b):
    """Whether database frames ``a`` and ``b`` lie in one range within ``PAR.near`` frames: a jump not worth making."""
    if abs(a - b) > par[PAR.near]:
        return False
    return range_stop(par, a) == range_stop(par, b)


@njit(cache=True)
def make_query(db, par, sig, at, frame, query, traj):
    """The query (float32, dims): database frame ``frame``'s features, its trajectory part ``sig[at:]`` normalised."""
    features = packed_rows(db[FEATURES], int(par[PAR.start]), int(par[PAR.frames]), int(par[PAR.dims]))
    for c in range(query.shape[0]):
        query[c] = features[frame, c]
    for k in range(QUERY):
        traj[k] = (sig[at + k] - par[PAR.offset + k]) * par[PAR.gain + k]
        col = int(par[PAR.columns + k])
        if col >= 0:
            query[col] = np.float32(traj[k])


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): long, and a search costs far more than the call
def motion_match_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: play on, search when due, switch with an inertialized offset."""
    out = slot(pose, outs[OUT.pose])
    joints = out[0].shape[0]
    prev = state_pose(st, ST.SIZE + JOINT.prev * joints, joints)
    at = ST.SIZE + JOINT.off * joints
    off = st[at:at + OFFSET * joints].reshape((joints, OFFSET))
    tail = ST.SIZE + JOINT.SIZE * joints
    start, frame_dt, halflife = int(par[PAR.start]), par[PAR.frame_dt], par[PAR.halflife]
    shown = st[ST.shown] > 0.5
    frame = st[ST.frame] - start + (dt / frame_dt if shown else 0.0)  # database-relative from here on
    stop = range_stop(par, int(st[ST.frame]) - start)
    force = frame >= stop - 1  # the range ends: its last frame has no successor to play toward
    if force:
        frame = stop - 1.0 - 1e-6
    st[ST.timer] += dt
    i = int(frame)
    contacts = db[CONTACTS]
    planted = (contacts[start + i, 0] > 0.5 and st[ST.left] < 0.5) or (contacts[start + i, 1] > 0.5 and
                                                                         st[ST.right] < 0.5)
    query = np.zeros(int(par[PAR.dims]), np.float32)
    traj = np.empty(QUERY, np.float64)
    succ = i if force or not shown else i + 1  # the frame playing on shows next: the query's pose part
    make_query(db, par, sig, ins[IN.trajectory], succ, query, traj)
    change = 0.0
    for k in range(QUERY):
        change += (traj[k] - st[ST.traj + k]) ** 2
    sharp = shown and math.sqrt(change) > par[PAR.sharp]
    switched = False
    sig[outs[OUT.searched]] = 0.0
    sig[outs[OUT.cost] + 1] = 0.0
    due = planted or sharp or st[ST.timer] >= par[PAR.interval]
    if not shown or force or (due and st[ST.elapsed] >= par[PAR.hold]):
        best, cost = search_frame(db, par, query, -1 if force or not shown else succ)
        sig[outs[OUT.cost]] = cost
        st[ST.timer] = 0.0
        st[ST.searches] += 1.0
        sig[outs[OUT.searched]] = 1.0
        for k in range(QUERY):
            st[ST.traj + k] = traj[k]
        if best >= 0 and not (shown and not force and near(par, best, succ)):
            frame = float(best)
            switched = shown
            st[ST.switches] += 1.0
    i = int(frame)
    frame_pose(db, start + frame, frame_dt, out)
    live = outs[OUT.motion]
    for c in range(6):
        sig[live + c] = db[ROOT_MOTION][start + i, c]
    motion_offset(sig, live, live, st[tail + MOTION.last:tail + MOTION.last + 6],
                  st[tail + MOTION.offset:tail + MOTION.offset + 6], switched, switched, False, halflife,
                  0.0 if switched else st[ST.elapsed] + dt)
    if switched:
        st[ST.elapsed] = 0.0  # seconds since the last switch: the offset's age, and what ``hold`` waits for
        # The previous output carried one step on is what would show now; after a step longer than the
        # offset would take to decay, that carry means nothing (metres per 1000 s of velocity): a cut.
        carry = halflife > 0.0 and still_active(False, halflife, dt)
        st[ST.active] = 1.0 if carry else 0.0
        if carry:
            record_offsets(prev, out, dt, off)
    else:
        st[ST.elapsed] += dt
    if st[ST.active] > 0.5 and not still_active(False, halflife, st[ST.elapsed]):
        st[ST.active] = 0.0
    inertialize_kernel(out, off, st[ST.active] > 0.5, False, halflife, st[ST.elapsed], out)
    copy_pose(out, prev)
    st[ST.frame] = start + frame
    st[ST.shown] = 1.0
    st[ST.left], st[ST.right] = contacts[start + i, 0], contacts[start + i, 1]
    sig[outs[OUT.changed]] = 1.0 if switched else 0.0
    sig[outs[OUT.left_contact]] = contacts[start + i, 0]
    sig[outs[OUT.right_contact]] = contacts[start + i, 1]


@register(motion_match_node)
class MotionMatch(Node):
    """Play a motion database, jumping to the frame that best matches the trajectory (inertialized switches)."""

    type: Literal["motion_match"] = "motion_match"
    database: str = Field(description="the database asset ({\"database\": ...}) to play")
    interval: float = seconds_field(0.1, "seconds between searches (a plant, a range end or a sharp input "
                                         "change searches at once)")
    margin: float = Field(0.01, ge=0.0, le=1e6, allow_inf_nan=False,
                          description="a new frame must beat the playing frame's successor by this cost")
    transition_cost: float = Field(0.0, ge=0.0, le=1e6, allow_inf_nan=False,
                                   description="cost added to every frame but the playing frame's successor")
    sharp: float = Field(0.5, ge=0.0, le=1e6, allow_inf_nan=False,
                         description="a change of the normalised trajectory this large searches at once")
    hold: float = seconds_field(0.2, "after a switch, play this long before the next search (a clip's end still "
                                     "searches): switches in quick succession drag the feet")
    near: float = seconds_field(0.2, "a best frame this close to the playing one in the same clip keeps playing "
                                    "(no jump back and forth in one clip)")
    halflife: float = seconds_field(0.1, "inertialization half-life of a switch (s); 0 cuts")
    tags: List[str] = Field([], max_length=64, description="search only the clips with one of these tags (the words "
                            "of a clip's name, 'mirrored' for mirror images); empty: every clip")
    exclude_tags: List[str] = Field([], max_length=64, description="never search the clips with one of these tags")

    CATEGORY = "locomotion"
    FIELD_KINDS = {"database": "clip", "tags": "tags", "exclude_tags": "tags"}
    EXAMPLE = {"database": "db"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS
    CLIP_TABLES = CLIP_TABLES

    def _db(self, ctx):
        rng = ctx.clip(self, "database", self.database)
        db = database_of(rng.clip)
        if db is None:
            raise GraphError(f"asset {self.database!r} is a clip, not a motion database ({{\"database\": ...}})",
                             self.id, "database")
        return rng, db

    def params(self, ctx):
        rng, db = self._db(ctx)
        try:
            columns, offset, gain = trajectory_columns(db)
        except ValueError as e:
            raise GraphError(f"asset {self.database!r}: {e}", self.id, "database") from None
        dims = db.features.shape[1]
        if dims > MAX_FEATURES:
            raise GraphError(f"asset {self.database!r} has {dims} features; motion_match takes at most "
                             f"{MAX_FEATURES}", self.id, "database")
        boxes = _boxes(db)
        head = PAR.pack(interval=self.interval, margin=self.margin, transition_cost=self.transition_cost,
                        sharp=self.sharp, near=round(self.near / db.dt), hold=self.hold, halflife=self.halflife,
                        frame_dt=db.dt, start=rng.start, frames=len(db.features), dims=dims, small=len(boxes[0]),
                        large=len(boxes[2]), columns=columns, offset=offset, gain=gain, ranges=len(db.range_starts))
        tables = [db.range_starts, db.range_stops, *self._searched(db)]
        return np.concatenate([head] + [np.asarray(t, np.float64) for t in tables])

    def _searched(self, db):
        """The searchable frames the tag filters keep; a GraphError naming the field when a tag or the filter
        leaves nothing."""
        known = set().union(*(range_tags(n) for n in db.names))
        for field in ("tags", "exclude_tags"):
            unknown = sorted(set(getattr(self, field)) - known)
            if unknown:
                raise GraphError(f"no clip of asset {self.database!r} has the tag(s) {unknown} (tags: "
                                 f"{', '.join(sorted(known))})", self.id, field)
        if not np.any(np.asarray(db.search_stops) > np.asarray(db.search_starts)):
            raise GraphError(f"asset {self.database!r} has no frame to search: its clips are too short "
                             f"({', '.join(str(int(b - a)) for a, b in zip(db.range_starts, db.range_stops))} "
                             "frames at 60 fps)", self.id, "database")
        starts, stops = search_ranges(db, self.tags, self.exclude_tags)
        if not np.any(stops > starts):
            raise GraphError(f"the tag filters leave no clip of asset {self.database!r} to search", self.id,
                             "exclude_tags" if self.exclude_tags else "tags")
        return starts, stops

    def state(self, ctx, time=0.0):
        """Nothing shown yet: the first frame searches from the database's frame nearest to standing still."""
        rng, db = self._db(ctx)
        st = np.zeros(ST.SIZE + JOINT.SIZE * len(ctx.skeleton) + MOTION.SIZE)
        st[ST.frame] = rng.start + rest_frame(db, *self._searched(db))
        return st


# ---------------------------------------------------------------- op


class MotionMatcher:
    """Motion matching without a graph: the node's kernel and state on one database, one character.

    ``MotionMatcher(database, **fields)`` (an ``animgraph.database.Database`` and the node's
    fields); ``update(trajectory, dt)`` with the 12 trajectory values (positions x, z then
    facings x, z, in the simulation object's frame) returns a dict: ``pose`` (local Pose,
    root relative to the simulation bone), ``motion`` (vel, ang) body frame, ``changed``,
    ``searched`` (bools), ``contacts`` (2,) and ``cost``.  ``reset()`` starts over.
    """

    def __init__(self, database, **options):
        from animgraph.args import node_model
        from animgraph.node import BuildContext, ClipRange

        node = node_model(MotionMatch, {"database": "db", **options}, "motion_match")
        clip = database.as_clip()
        ctx = BuildContext(database.skeleton, {"db": ClipRange(0, clip.frames, clip.dt, clip)})
        self.database, self.par, self._initial = database, node.params(ctx), node.state(ctx)
        self.db = (clip.pos, clip.rot, clip.scl, np.asarray(database.skeleton.parents, np.int32),
                   *(table.build(clip) for table in CLIP_TABLES))
        joints = len(database.skeleton)
        self._pose = tuple(np.zeros((1, joints, n), np.float32) for n in (3, 4, 3, 3, 3, 3))
        self._ins = np.array([0], np.int64)
        self._outs = np.array([-1, 24, 30, 31, 32, 33, 34], np.int64)  # pose slot 0, then signal offsets
        self._outs[OUT.pose] = 0
        self.reset()

    def reset(self):
        """Back to nothing shown: the next update searches the whole database."""
        self.st = self._initial.copy()
        self._sig = np.zeros(36)  # the trajectory, then the outputs (the cost holds between searches)

    @property
    def frame(self):
        """The playing database frame (fractional)."""
        return float(self.st[ST.frame])

    def update(self, trajectory, dt):
        """Play ``dt`` s on, searching as the node does; the outputs as a dict (see the class)."""
        traj = np.asarray(trajectory, np.float64).reshape(-1)
        if traj.shape != (QUERY,) or not np.all(np.isfinite(traj)):
            raise ValueError(f"trajectory must be {QUERY} finite numbers (positions x, z, then facings x, z)")
        if not (math.isfinite(dt) and dt >= 0.0):
            raise ValueError(f"dt must be a finite number of seconds >= 0, got {dt}")
        sig = self._sig
        sig[:QUERY] = traj
        motion_match_node(self._ins, self._outs, self.par, self.st, self._pose, sig, self.db, float(dt))
        o = self._outs
        return {"pose": Pose(*(a[0].copy() for a in self._pose)),
                "motion": (sig[o[OUT.motion]:o[OUT.motion] + 3].copy(),
                           sig[o[OUT.motion] + 3:o[OUT.motion] + 6].copy()),
                "changed": sig[o[OUT.changed]] > 0.5, "searched": sig[o[OUT.searched]] > 0.5,
                "contacts": np.array([sig[o[OUT.left_contact]], sig[o[OUT.right_contact]]]),
                "cost": float(sig[o[OUT.cost]])}


# ---------------------------------------------------------------- verify


def arc_trajectory(speed, turn, offsets=(1.0 / 3.0, 2.0 / 3.0, 1.0)):
    """The 12 trajectory values of a body going ``speed`` m/s on a circle turning ``turn`` rad/s (left positive)."""
    t = np.asarray(offsets)
    if abs(turn) < 1e-9:
        pos = np.stack([np.zeros(3), speed * t], -1)
    else:
        r = speed / turn
        pos = np.stack([r * (1.0 - np.cos(turn * t)), r * np.sin(turn * t)], -1)
    facing = np.stack([np.sin(turn * t), np.cos(turn * t)], -1)
    return np.concatenate([pos.ravel(), facing.ravel()])


SWITCH_RETRIES = 20  # resets tried per test time (a switch falls from the pause on in about 1 run in 50)


def verify_trajectory(s):
    """The verify case's wish at time ``s``: speeding up and slowing down, weaving left and right."""
    return arc_trajectory(1.6 + 1.2 * math.sin(0.7 * s), 1.1 * math.sin(0.45 * s + 0.5))


def _stencil_at(db, t0, h, rng):
    """The matcher's poses at ``t0 + k h`` (k in STEPS), stepped at 60 Hz from a reset 0.5 to 2 s before.

    Piecewise linear between database frames: a pause first puts the stencil's centre mid-interval.  A switch
    from the pause on is a discrete event (its inertialized start is only C1, and it moves the frame's phase, so
    the stencil may straddle a frame where the velocity steps): that run starts again from another reset, as
    ``animgraph.verify`` holds events still over the stencil.  After ``SWITCH_RETRIES`` the last run stands.
    """
    for _ in range(SWITCH_RETRIES):
        matcher = MotionMatcher(db, interval=0.15)
        clock = t0 - rng.uniform(0.5, 2.0)
        first = t0 + STEPS[0] * h
        matcher.update(verify_trajectory(clock), 0.0)
        while clock + FRAME < first:
            clock += FRAME
            matcher.update(verify_trajectory(clock), FRAME)
        frac = (matcher.frame + (t0 - clock) / db.dt) % 1.0
        shown = [matcher.update(verify_trajectory(clock), ((0.5 - frac) % 1.0) * db.dt),
                 matcher.update(verify_trajectory(first), first - clock)]
        for k0, k in zip(STEPS, STEPS[1:]):
            shown.append(matcher.update(verify_trajectory(t0 + k * h), (k - k0) * h))
        if not any(o["changed"] for o in shown):
            break
    return [o["pose"] for o in shown[1:]]


def verify_motion_match(m, t, h, rng):
    """The bundled database matched to a weaving wish, searching every 0.15 s, its switches inertialized."""
    from animgraph.database import bundled

    db = bundled()
    per_time = [_stencil_at(db, float(tg), h, rng) for tg in np.ravel(t)]
    return [[Pose(*(np.stack([p[k].as_tuple()[i] for p in per_time]) for i in range(6)))
             for k in range(len(STEPS))]]


MotionMatch.OP, MotionMatch.VERIFY = MotionMatcher, verify_motion_match
