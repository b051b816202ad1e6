"""Motion-matching search: the frame of a feature database nearest to a query.

The database is ``features``, float32 (F, D), C-contiguous, already normalised and
weighted, so the cost of frame ``i`` is ``sum_d (query[d] - features[i, d])**2`` in
normalised units squared.  Only frames inside the searchable ranges
``[starts[r], stops[r])`` (int64, ascending, non-overlapping) are candidates.  A
candidate pays ``transition_cost`` on top of its cost and wins only when it is strictly
below the best so far, which starts at the incumbent (``incumbent``): ties keep the
lowest frame index.

- ``brute``: every frame in order, each cost summed dimension by dimension in index
  order and abandoned as soon as the partial sum reaches the best.
- ``boxed``: the same search with two levels of bounding boxes over consecutive frames
  (``LARGE`` frames, then ``SMALL``): a box whose lower bound on the cost cannot beat the
  best is skipped whole.  Its answer is bit-identical to ``brute``'s (see its docstring).
- ``scan``: every cost into a buffer, the inner loop over frames of the transposed
  database so that it compiles to packed SIMD, then the first minimum.

Features should be finite.  A NaN cost never wins; a NaN feature at most makes its
dimension's term of a box bound 0 (a NaN corner: the clamp's ``max``/``min`` keep the
query), still a lower bound; a NaN query makes every bound NaN, which never skips a box.
So the answer is still brute's (``test_a_nan_feature_skips_no_other_frame``).
"""

import numpy as np
from animgraph.jit import njit

SMALL = 16  # frames per small box
LARGE = 64  # frames per large box: a whole number of small boxes
assert LARGE % SMALL == 0
CHECK_EVERY = 4  # dimensions summed between early-termination tests (the unrolled body below)
SCAN_BLOCK = 256  # frames whose costs ``scan`` keeps at once (1 KiB, stays in L1)


# ---------------------------------------------------------------- checks


@njit(cache=True)
def check_ranges(frames, starts, stops):
    """Raise ValueError unless the ranges are ascending, non-overlapping and inside [0, frames)."""
    if starts.shape[0] != stops.shape[0]:
        raise ValueError("starts and stops must have the same length")
    previous = 0
    for r in range(starts.shape[0]):
        if starts[r] < previous or stops[r] < starts[r] or stops[r] > frames:
            raise ValueError("ranges must be ascending, non-overlapping and inside [0, frames)")
        previous = stops[r]


# ---------------------------------------------------------------- costs and bounds


@njit(cache=True, inline="always")
def frame_cost_until(features, i, query, transition_cost, best):
    """Cost of frame ``i`` (units²), summed in dimension order; stops early, with a partial sum, once it cannot win.

    The test comes every ``CHECK_EVERY`` dimensions: a branch per dimension costs more
    than the few extra terms it saves, and where it is tested never changes the sum.
    """
    dims = features.shape[1]
    acc = np.float32(0)
    d = 0
    while d + CHECK_EVERY <= dims:
        x0 = query[d] - features[i, d]
        x1 = query[d + 1] - features[i, d + 1]
        x2 = query[d + 2] - features[i, d + 2]
        x3 = query[d + 3] - features[i, d + 3]
        acc += x0 * x0
        acc += x1 * x1
        acc += x2 * x2
        acc += x3 * x3
        if acc + transition_cost >= best:
            return acc
        d += CHECK_EVERY
    while d < dims:
        x = query[d] - features[i, d]
        acc += x * x
        d += 1
    return acc


@njit(cache=True)
def bound_shrink(dims):
    """float32 factor that makes a box bound summed in any order safe against a frame cost summed in order.

    Summing ``dims`` non-negative float32 terms in any order is within a factor
    ``1 +- g`` of their exact sum, ``g = (dims - 1) u / (1 - (dims - 1) u)``, ``u = 2**-24``,
    gradual underflow included (a sum that underflows is exact).  So a bound ``B`` and a
    frame cost ``C`` whose terms satisfy ``b_d <= c_d`` obey ``B <= C (1 + g) / (1 - g)``,
    and ``B * (1 - 4 dims u) <= C`` in exact arithmetic (``4 dims u >= 2g`` while
    ``dims u`` is small); rounding that product to float32 keeps it ``<= C`` because
    ``C`` is a float32 and rounding is monotonic.  ``1 - dims * 2**-22`` is exact in float32.
    """
    return np.float32(max(0.0, 1.0 - dims * 2.0 ** -22))


# Reassociation lets LLVM sum the terms with packed SIMD in any order (``bound_shrink``
# covers that); no ``contract``, so each term is still the rounded float32 square.
@njit(cache=True, fastmath={"reassoc"})
def box_bound(box_min, box_max, b, query):
    """Lower bound (units²), before ``bound_shrink``, on the cost of every frame in box ``b``: summed in any order, all dims.

    Every dimension is summed: with packed SIMD the whole row costs a few instructions,
    less than the early-exit tests of an in-order sum would.
    """
    acc = np.float32(0)
    for d in range(box_min.shape[1]):
        x = query[d] - min(max(query[d], box_min[b, d]), box_max[b, d])
        acc += x * x
    return acc


@njit(cache=True)
def incumbent(features, query, current, margin):
    """(cost - margin, current) of the current frame (units²), or (inf, -1) when ``current < 0``.

    The incumbent pays no transition cost; a candidate must beat its cost by ``margin``.
    """
    if current < 0:
        return np.float32(np.inf), np.int64(-1)
    if current >= features.shape[0] or query.shape[0] != features.shape[1]:
        raise ValueError("current frame or query length does not match the features")
    cost = frame_cost_until(features, current, query, np.float32(0), np.float32(np.inf))
    return cost - np.float32(margin), np.int64(current)


@njit(cache=True, entry=True)
def build_boxes(features, size):
    """(min, max), float32 (ceil(F/size), D): box b bounds the features of frames [b*size, min((b+1)*size, F))."""
    frames, dims = features.shape
    boxes = (frames + size - 1) // size
    box_min = np.empty((boxes, dims), np.float32)
    box_max = np.empty((boxes, dims), np.float32)
    for b in range(boxes):
        first = b * size
        last = min(first + size, frames)
        for d in range(dims):
            lo = features[first, d]
            hi = lo
            for i in range(first + 1, last):
                v = features[i, d]
                lo = min(lo, v)
                hi = max(hi, v)
            box_min[b, d] = lo
            box_max[b, d] = hi
    return box_min, box_max


# ---------------------------------------------------------------- searches


@njit(cache=True)
def brute(features, starts, stops, query, best_cost, best_index, transition_cost):
    """(index, cost in units²) of the best frame: every frame in ascending order, strict improvement only.

    ``(best_cost, best_index)`` is the incumbent (``incumbent``), (inf, -1) for none, and is
    returned unchanged when no frame beats it.  ``cost`` excludes the transition cost.
    """
    check_ranges(features.shape[0], starts, stops)
    if query.shape[0] != features.shape[1]:
        raise ValueError("query length must equal the number of feature columns")
    tc = np.float32(transition_cost)
    best = np.float32(best_cost)
    index = np.int64(best_index)
    winner = best  # without the transition cost
    for r in range(starts.shape[0]):
        for i in range(starts[r], stops[r]):
            cost = frame_cost_until(features, i, query, tc, best)
            if cost + tc < best:
                best = cost + tc
                winner = cost
                index = i
    return index, winner


@njit(cache=True)
def boxed(features, starts, stops, query, best_cost, best_index, transition_cost,
          small_min, small_max, large_min, large_max):
    """``brute``'s answer, bit for bit, skipping large then small boxes (``build_boxes``, ``LARGE``, ``SMALL``) that cannot win.

    Exact because a box's bound never exceeds the float32 cost of any frame in it.  Per
    dimension ``|q - clamp(q, min, max)| <= |q - f|`` holds exactly for ``min <= f <= max``
    (the box corners are feature values, copied exactly), and rounding to float32 is
    monotonic in subtraction and squaring, so each float32 term of the bound is <= the
    frame's.  The bound sums its terms in any order (packed SIMD, ``box_bound``); scaled by
    ``bound_shrink`` it stays <= the frame's in-order float32 sum.  A box is skipped only
    when ``bound + transition_cost >= best``, and then no frame in it could have passed
    brute's strict ``cost + transition_cost < best`` against the same best, so both searches
    see the same sequence of improvements.  Large boxes are tested a range at a time, against
    the best at the range's start: the best only falls, so a box skipped then would be
    skipped later too.  A box may straddle two ranges or cover
    unsearchable frames: it is still a lower bound for the frames that are searched.
    Costs must stay below float32 overflow (the error bound of ``bound_shrink`` needs finite sums).
    """
    frames = features.shape[0]
    check_ranges(frames, starts, stops)
    if query.shape[0] != features.shape[1]:
        raise ValueError("query length must equal the number of feature columns")
    if small_min.shape[0] != (frames + SMALL - 1) // SMALL or large_min.shape[0] != (frames + LARGE - 1) // LARGE:
        raise ValueError("boxes must be built with build_boxes(features, SMALL) and build_boxes(features, LARGE)")
    tc = np.float32(transition_cost)
    shrink = bound_shrink(features.shape[1])
    best = np.float32(best_cost)
    index = np.int64(best_index)
    winner = best  # without the transition cost
    kept = np.empty(large_min.shape[0], np.int64)  # once per call: the large boxes of a range that may win
    for r in range(starts.shape[0]):
        start, stop = starts[r], stops[r]
        if start >= stop:
            continue
        # The range's large boxes tested first, without a branch: the bounds overlap in the
        # pipeline and half of them failing at random costs no mispredictions.
        count = 0
        for large in range(start // LARGE, (stop - 1) // LARGE + 1):
            kept[count] = large
            count += not box_bound(large_min, large_max, large, query) * shrink + tc >= best  # NaN: kept
        for k in range(count):
            i = max(kept[k] * LARGE, start)
            large_end = min((kept[k] + 1) * LARGE, stop)
            while i < large_end:
                small = i // SMALL
                small_end = min((small + 1) * SMALL, large_end)
                if box_bound(small_min, small_max, small, query) * shrink + tc >= best:
                    i = small_end
                    continue
                while i < small_end:
                    cost = frame_cost_until(features, i, query, tc, best)
                    if cost + tc < best:
                        best = cost + tc
                        winner = cost
                        index = i
                    i += 1
    return index, winner


@njit(cache=True)
def scan(features_t, starts, stops, query, best_cost, best_index, transition_cost):
    """``brute``'s answer from every cost (units²) computed block by block over ``features_t`` (D, F).

    The inner loop runs over frames, so it compiles to packed float32 SIMD; each frame's
    cost is still summed in dimension order, and without ``fastmath`` (no fused
    multiply-adds, no reassociation) it is the very float32 sum brute computes: the
    answer is brute's exactly.  Were it compiled with ``fastmath``, costs could differ from
    brute's by float32 rounding, and the index with them on near-ties.
    """
    dims, frames = features_t.shape
    check_ranges(frames, starts, stops)
    if query.shape[0] != dims:
        raise ValueError("query length must equal the number of feature rows of features_t")
    tc = np.float32(transition_cost)
    best = np.float32(best_cost)
    index = np.int64(best_index)
    winner = best  # without the transition cost
    costs = np.empty(SCAN_BLOCK, np.float32)  # once per call, reused by every block
    for r in range(starts.shape[0]):
        for first in range(starts[r], stops[r], SCAN_BLOCK):
            count = min(SCAN_BLOCK, stops[r] - first)
            costs[:count] = 0
            for d in range(dims):
                q = query[d]
                row = features_t[d, first:first + count]
                for j in range(count):
                    diff = q - row[j]
                    costs[j] += diff * diff
            for j in range(count):
                if costs[j] + tc < best:
                    best = costs[j] + tc
                    winner = costs[j]
                    index = first + j
    return index, winner


# ---------------------------------------------------------------- diagnostics

@njit(cache=True)
def dims_summed(features, i, query, transition_cost, best):
    """How many dimensions ``frame_cost_until`` sums for frame ``i`` before it stops (the same float32 sums)."""
    dims = features.shape[1]
    acc = np.float32(0)
    d = 0
    while d + CHECK_EVERY <= dims:
        for k in range(d, d + CHECK_EVERY):
            x = query[k] - features[i, k]
            acc += x * x
        d += CHECK_EVERY
        if acc + transition_cost >= best:
            return d
    return dims


COUNTS = ("large_tested", "large_skipped", "small_tested", "small_skipped", "frames", "frame_dims", "index")


@njit(cache=True)
def boxed_counts(features, starts, stops, query, best_cost, best_index, transition_cost,
                 small_min, small_max, large_min, large_max):
    """int64 counts named by ``COUNTS`` of what ``boxed`` does for one query (the bench's pruning statistics).

    The same loop as ``boxed``, counting boxes tested and skipped, frames whose cost is
    summed and the dimensions summed for them (early termination included); the last
    entry is the index found, ``boxed``'s.
    """
    tc = np.float32(transition_cost)
    shrink = bound_shrink(features.shape[1])
    best = np.float32(best_cost)
    counts = np.zeros(len(COUNTS), np.int64)
    counts[6] = best_index
    kept = np.empty(large_min.shape[0], np.int64)
    for r in range(starts.shape[0]):
        start, stop = starts[r], stops[r]
        if start >= stop:
            continue
        count = 0
        for large in range(start // LARGE, (stop - 1) // LARGE + 1):
            kept[count] = large
            count += not box_bound(large_min, large_max, large, query) * shrink + tc >= best  # NaN: kept
        counts[0] += (stop - 1) // LARGE + 1 - start // LARGE
        counts[1] += (stop - 1) // LARGE + 1 - start // LARGE - count
        for k in range(count):
            i = max(kept[k] * LARGE, start)
            large_end = min((kept[k] + 1) * LARGE, stop)
            while i < large_end:
                small = i // SMALL
                small_end = min((small + 1) * SMALL, large_end)
                counts[2] += 1
                if box_bound(small_min, small_max, small, query) * shrink + tc >= best:
                    counts[3] += 1
                    i = small_end
                    continue
                while i < small_end:
                    cost = frame_cost_until(features, i, query, tc, best)
                    counts[4] += 1
                    counts[5] += dims_summed(features, i, query, tc, best)
                    if cost + tc < best:
                        best = cost + tc
                        counts[6] = i
                    i += 1
    return counts
