"""Motion-matching search: brute against a float64 numpy reference, boxed and scan against brute."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animgraph.search import (COUNTS, LARGE, SMALL, bound_shrink, box_bound, boxed, boxed_counts, brute, build_boxes,
                              dims_summed, incumbent, scan)

INF = np.float32(np.inf)


def reference(features, starts, stops, query, best_cost=math.inf, transition_cost=0.0):
    """Lowest-index frame of least float64 cost + transition cost below best_cost: (index, cost) or (-1, inf)."""
    frames = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)] + [np.zeros(0, np.int64)])
    if frames.size == 0:
        return -1, math.inf
    costs = ((features[frames].astype(np.float64) - query.astype(np.float64)) ** 2).sum(axis=1)
    k = int(np.argmin(costs))  # argmin takes the first of equal minima
    if costs[k] + transition_cost >= best_cost:
        return -1, math.inf
    return int(frames[k]), float(costs[k])


def searches(features, starts, stops, query, best_cost=INF, best_index=-1, transition_cost=0.0):
    """(brute, boxed, scan) answers for one query."""
    starts = np.asarray(starts, np.int64)
    stops = np.asarray(stops, np.int64)
    small = build_boxes(features, SMALL)
    large = build_boxes(features, LARGE)
    args = (starts, stops, query, np.float32(best_cost), best_index, transition_cost)
    return (brute(features, *args), boxed(features, *args, *small, *large),
            scan(np.ascontiguousarray(features.T), *args))


def smooth_database(frames, dims, seed, lengths=(5, 300)):
    """Smooth random curves in ranges of random lengths (some shorter than a box), separated by unsearchable gaps."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames)[:, None] / 60.0
    freqs = rng.uniform(0.2, 3.0, (3, dims))
    x = sum(rng.normal(size=dims) * np.sin(2 * np.pi * f * t + rng.uniform(0, 7, dims)) for f in freqs)
    x += 0.05 * rng.normal(size=(frames, dims))
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    starts, stops, at = [], [], int(rng.integers(0, 7))
    while at < frames:
        stop = min(at + int(rng.integers(*lengths)), frames)
        starts.append(at)
        stops.append(stop)
        at = stop + int(rng.integers(0, 20))
    return x, np.array(starts, np.int64), np.array(stops, np.int64)


# ---------------------------------------------------------------- hand cases


def test_boxes_cover_their_frames():
    features = np.arange(2 * 37, dtype=np.float32).reshape(37, 2)
    features[5, 1] = -3.0
    bmin, bmax = build_boxes(features, 16)
    assert bmin.shape == bmax.shape == (3, 2) and bmin.dtype == np.float32
    assert bmin[0].tolist() == [0.0, -3.0] and bmax[0].tolist() == [30.0, 31.0]
    assert bmin[2].tolist() == [64.0, 65.0] and bmax[2].tolist() == [72.0, 73.0]  # the last box: frames 32..36
    assert build_boxes(np.zeros((0, 4), np.float32), 16)[0].shape == (0, 4)


def test_box_bound_scaled_never_exceeds_an_in_order_cost():
    # Terms of very different sizes, so that the SIMD order of box_bound rounds differently from
    # the in-order sum; tight boxes (one frame each) make the bound equal the cost but for rounding.
    rng = np.random.default_rng(5)
    for dims in (1, 3, 8, 13, 27, 32, 45):
        shrink = bound_shrink(dims)
        assert shrink == np.float32(1 - dims * 2.0 ** -22)
        features = (rng.normal(size=(400, dims)) * 10.0 ** rng.integers(-4, 4, (400, dims))).astype(np.float32)
        for size in (1, 16):
            bmin, bmax = build_boxes(features, size)
            for n in range(40):
                query = (features[n * 7] + rng.normal(0, 0.3, dims) * 10.0 ** rng.integers(-4, 3, dims)).astype(np.float32)
                for b in range(len(bmin)):
                    bound = np.float32(box_bound(bmin, bmax, b, query) * shrink)
                    costs = [incumbent(features, query, i, 0.0)[0] for i in range(b * size, min((b + 1) * size, 400))]
                    assert bound <= min(costs)
                    if size == 1:
                        assert bound == pytest.approx(costs[0], rel=2e-5)
    assert bound_shrink(2 ** 22) == 0 and bound_shrink(2 ** 23) == 0


def test_hand_case_against_reference():
    features = np.array([[0, 0], [1, 0], [0, 2], [3, 3], [1, 1], [0.5, 0.5]], np.float32)
    query = np.array([0.9, 0.9], np.float32)
    for starts, stops in (([0], [6]), ([0, 3], [2, 5]), ([5], [6]), ([1, 2], [2, 4])):
        expected = reference(features, starts, stops, query)
        for index, cost in searches(features, starts, stops, query):
            assert index == expected[0] and cost == pytest.approx(expected[1], rel=1e-6)
    assert searches(features, [0], [6], query)[0][0] == 4


def test_transition_cost_and_incumbent():
    features = np.array([[0.0], [1.0], [2.0], [3.0]], np.float32)
    query = np.array([2.1], np.float32)
    cost, index = incumbent(features, query, 3, 0.0)
    assert index == 3 and cost == pytest.approx(0.81)
    # Frame 2 (cost 0.01) beats the incumbent's 0.81 even after a transition cost of 0.5 ...
    for answer in searches(features, [0], [4], query, cost, index, 0.5):
        assert answer[0] == 2 and answer[1] == pytest.approx(0.01, rel=1e-5)
    # ... but not after 0.9, nor with a margin that makes it beat 0.81 by more than 0.5.
    for answer in searches(features, [0], [4], query, cost, index, 0.9):
        assert answer == (3, cost)
    cost, index = incumbent(features, query, 3, 0.5)
    assert cost == pytest.approx(0.31)
    for answer in searches(features, [0], [4], query, cost, index, 0.35):
        assert answer == (3, cost)
    for answer in searches(features, [0], [4], query, cost, index, 0.25):
        assert answer[0] == 2
    assert incumbent(features, query, -1, 0.2) == (np.inf, -1)


def test_ties_keep_the_lowest_index():
    rng = np.random.default_rng(3)
    features = rng.normal(size=(300, 5)).astype(np.float32)
    features[[40, 130, 260]] = features[200]
    query = features[200] + np.float32(0.01)
    for answer in searches(features, [0], [300], query):
        assert answer[0] == 40
    for answer in searches(features, [50, 150], [140, 300], query):
        assert answer[0] == 130
    # A frame equal to the incumbent's cost does not replace it.
    cost, index = incumbent(features, query, 260, 0.0)
    for answer in searches(features, [0], [300], query, cost, index):
        assert answer == (260, cost)


def test_empty_ranges_and_no_ranges():
    features = np.ones((40, 3), np.float32)
    query = np.zeros(3, np.float32)
    for starts, stops in (([], []), ([5], [5]), ([0, 10, 39], [0, 10, 39])):
        for answer in searches(features, starts, stops, query):
            assert answer == (-1, np.inf)
        for answer in searches(features, starts, stops, query, np.float32(2.0), 7):
            assert answer == (7, 2.0)
    for answer in searches(features, [3, 20], [3, 21], query):
        assert answer == (20, 3.0)


def test_bad_ranges_and_query_are_refused():
    features = np.zeros((10, 2), np.float32)
    query = np.zeros(2, np.float32)
    for starts, stops in (([0], [11]), ([5], [4]), ([0, 3], [5, 8]), ([0], [])):
        with pytest.raises(ValueError):
            searches(features, starts, stops, query)
    with pytest.raises(ValueError):
        searches(features, [0], [10], np.zeros(3, np.float32))


def test_a_nan_feature_skips_no_other_frame():
    # A NaN feature must not hide the other frames of its boxes, nor a NaN query find any frame.
    rng = np.random.default_rng(8)
    features = rng.normal(size=(300, 6)).astype(np.float32)
    features[64, 2] = np.nan  # the first frame of a small and a large box: their bounds become NaN
    for k in range(20):
        frame = 65 + 3 * k
        query = (features[frame] + rng.normal(0, 0.01, 6)).astype(np.float32)
        expected = brute(features, np.array([0]), np.array([300]), query, INF, -1, 0.0)
        assert expected[0] == frame
        for answer in searches(features, [0], [300], query):
            assert answer == expected
    query[3] = np.nan
    for answer in searches(features, [0], [300], query):
        assert answer == (-1, np.inf)


def test_tight_boxes_at_the_boundary():
    # Constant blocks of LARGE frames: every box bound equals its frames' cost exactly, so a bound
    # that overshot by one rounding step would skip the winner against a best one step above it.
    rng = np.random.default_rng(4)
    features = np.repeat(rng.normal(size=(23, 6)), LARGE, axis=0).astype(np.float32)[:-5]
    for k in range(20):
        query = (features[LARGE * k + 3] + rng.normal(0, 0.5, 6)).astype(np.float32)
        index, cost = brute(features, np.array([0]), np.array([len(features)]), query, INF, -1, 0.0)
        assert index % LARGE == 0
        above = np.nextafter(np.float32(cost), INF)
        for answer in searches(features, [0], [len(features)], query, above, -1):
            assert answer == (index, cost)
        for answer in searches(features, [0], [len(features)], query, np.float32(cost), -1):
            assert answer == (-1, cost)


# ---------------------------------------------------------------- boxed == brute, bit for bit


def test_boxed_is_brute_on_many_queries():
    features, starts, stops = smooth_database(5001, 13, seed=1)
    assert (stops - starts < SMALL).any() and len(starts) > 10
    small, large = build_boxes(features, SMALL), build_boxes(features, LARGE)
    features_t = np.ascontiguousarray(features.T)
    rng = np.random.default_rng(2)
    for n in range(1000):
        frame = int(rng.integers(len(features)))
        noise = (0.01, 0.3, 3.0, 30.0)[n % 4]  # near a frame ... far from every frame
        query = (features[frame] + rng.normal(0, noise, 13)).astype(np.float32)
        best_cost, best_index = INF, -1
        if n % 3:
            best_cost, best_index = incumbent(features, query, frame, (0.0, 0.1)[(n // 3) % 2])
        transition = (0.0, 0.05, 1.0)[(n // 4) % 3]
        args = (starts, stops, query, best_cost, best_index, transition)
        expected = brute(features, *args)
        got = boxed(features, *args, *small, *large)
        assert got == expected, n  # float32 costs come back as exact Python floats: == is bit-identical
        vec = scan(features_t, *args)
        assert vec[1] == pytest.approx(expected[1], rel=1e-5, abs=1e-6), n
        assert vec == expected, n  # scan is compiled without fastmath: its sums are brute's (see its docstring)
        if best_index < 0 and transition == 0.0:  # float32 near-ties may pick another frame: compare costs
            assert expected[1] == pytest.approx(reference(features, starts, stops, query)[1], rel=1e-5, abs=1e-5), n


@settings(max_examples=200, deadline=None)
@given(frames=st.integers(0, 150), dims=st.integers(1, 9), seed=st.integers(0, 2**32 - 1),
       transition=st.sampled_from([0.0, 0.25, 2.0]), margin=st.sampled_from([None, 0.0, 0.5]),
       levels=st.sampled_from([None, 4, 16]))
def test_boxed_is_brute_property(frames, dims, seed, transition, margin, levels):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(frames, dims)).astype(np.float32)
    if levels:  # few distinct values: many exact ties
        features = (np.round(features * levels / 4) / (levels / 4)).astype(np.float32)
    cuts = np.sort(rng.integers(0, frames + 1, 2 * int(rng.integers(0, 6))))
    starts, stops = cuts[0::2], cuts[1::2]
    query = rng.normal(size=dims).astype(np.float32)
    best_cost, best_index = INF, -1
    if margin is not None and frames:
        best_cost, best_index = incumbent(features, query, int(rng.integers(frames)), margin)
    answers = searches(features, starts, stops, query, best_cost, best_index, transition)
    assert answers[1] == answers[0]
    assert answers[2][1] == pytest.approx(answers[0][1], rel=1e-5, abs=1e-6)
    if best_index < 0:
        index, cost = reference(features, starts, stops, query, transition_cost=transition)
        assert answers[0][1] == pytest.approx(cost, rel=1e-5, abs=1e-6)
        if index < 0:
            assert answers[0] == (-1, np.inf)


def test_boxed_counts_describe_boxed():
    features, starts, stops = smooth_database(3000, 13, seed=6)
    small, large = build_boxes(features, SMALL), build_boxes(features, LARGE)
    rng = np.random.default_rng(7)
    searched = int((stops - starts).sum())
    for n in range(50):
        frame = int(rng.integers(len(features)))
        query = (features[frame] + rng.normal(0, 0.1, 13)).astype(np.float32)
        best_cost, best_index = incumbent(features, query, frame, 0.0) if n % 2 else (INF, -1)
        args = (starts, stops, query, best_cost, best_index, 0.05)
        c = dict(zip(COUNTS, boxed_counts(features, *args, *small, *large).tolist()))
        assert c["index"] == boxed(features, *args, *small, *large)[0]
        assert 0 <= c["large_skipped"] <= c["large_tested"] and 0 <= c["small_skipped"] <= c["small_tested"]
        assert c["small_tested"] <= (c["large_tested"] - c["large_skipped"]) * (LARGE // SMALL)
        assert c["frames"] <= min(searched, (c["small_tested"] - c["small_skipped"]) * SMALL)
        assert c["frames"] <= c["frame_dims"] <= 13 * c["frames"]
        if best_index < 0:
            assert c["large_skipped"] < c["large_tested"] and c["frames"] > 0  # nothing to skip against at first


def test_dims_summed_stops_where_frame_cost_until_does():
    features = np.ones((1, 10), np.float32)
    query = np.zeros(10, np.float32)
    assert dims_summed(features, 0, query, np.float32(0), INF) == 10
    assert dims_summed(features, 0, query, np.float32(0), np.float32(4.0)) == 4  # 4 >= 4 after the first block
    assert dims_summed(features, 0, query, np.float32(0), np.float32(4.5)) == 8
    assert dims_summed(features, 0, query, np.float32(1), np.float32(8.5)) == 8
    assert dims_summed(features, 0, query, np.float32(0), np.float32(8.5)) == 10
