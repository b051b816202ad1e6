"""Fuzzing the database reader: any file loads (and then passes the validator) or raises one AnimgraphError line
naming the file; nothing else.

The seed is a real database built from a few frames of the bundled walk; hypothesis replaces
entries with random arrays (shapes, dtypes, values), writes odd values into real entries,
drops entries, and truncates or flips the file's bytes.
"""

from __future__ import annotations

import atexit
import io
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import animgraph as ag
from animgraph import database
from animgraph.database import Database
from animgraph.errors import AnimgraphError

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_DIR = Path(tempfile.mkdtemp(prefix="mmdb-fuzz-"))
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)  # one per test process, gone with it
ODD = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e38, -1e38, 3.5e38, 1e-45, -1.0, 2.0, 1e300, 5e-324]


@lru_cache(maxsize=1)
def seed():
    """The entries of a real database: 40 frames of the walk and its mirror image."""
    skel, walk = ag.data.load("walk")
    db = database.build([("walk", skel, ag.Clip(skel, walk.pos[:40], walk.rot[:40], dt=walk.dt))])
    return {k: np.array(v) for k, v in db.arrays().items()}


def check_loads_or_one_line(entries=None, raw=None):
    """The property: the file loads and passes ``database.check``, or one AnimgraphError line names it."""
    path = _DIR / "fuzz.npz"
    if raw is None:
        buf = io.BytesIO()
        np.savez(buf, **entries)
        raw = buf.getvalue()
    path.write_bytes(raw)
    try:
        db = Database.load(path)
    except AnimgraphError as e:
        text = str(e)
        assert text.startswith(str(path) + ": ") and "\n" not in text and "\r" not in text, text
        return None
    database.check(db)  # what loaded is what the validator accepts
    for a in (db.pos, db.rot, db.scl, db.features, db.scale):
        assert np.isfinite(a).all()
    assert np.all(np.abs(np.linalg.norm(db.rot.astype(np.float64), axis=-1) - 1) <= database.UNIT_TOLERANCE)
    assert np.all(db.search_stops > db.search_starts)
    return db


KEYS = sorted(seed())
DTYPES = st.sampled_from([np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_, np.complex64, "U3", "S2"])


def test_the_seed_loads():
    assert check_loads_or_one_line(dict(seed())) is not None


@FUZZ
@given(key=st.sampled_from(KEYS), array=hnp.arrays(DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, max_side=5)))
def test_an_entry_replaced_by_a_random_array(key, array):
    entries = dict(seed())
    entries[key] = array
    check_loads_or_one_line(entries)


@FUZZ
@given(key=st.sampled_from(KEYS), where=st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=4),
       value=st.sampled_from(ODD) | st.floats(allow_nan=True, allow_infinity=True))
def test_odd_values_written_into_a_real_entry(key, where, value):
    entries = dict(seed())
    a = entries[key].copy()
    if a.size == 0 or a.dtype.kind not in "fiu":
        return
    flat = a.reshape(-1)
    for w in where:
        try:
            flat[int(w * flat.size)] = value
        except (OverflowError, ValueError):  # NaN or a huge value into an integer entry: not writable there
            return
    entries[key] = a
    check_loads_or_one_line(entries)


@FUZZ
@given(drop=st.lists(st.sampled_from(KEYS), max_size=3), scale=st.floats(-2, 2), key=st.sampled_from(
    ["pos", "rot", "scl", "motion", "features", "offset", "scale", "range_stops", "search_starts"]))
def test_entries_dropped_or_scaled(drop, scale, key):
    entries = {k: v for k, v in seed().items() if k not in drop}
    if key in entries:
        entries[key] = (entries[key] * scale).astype(entries[key].dtype)
    check_loads_or_one_line(entries)


@FUZZ
@given(cut=st.floats(0, 1), flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
                                           max_size=6))
def test_truncated_and_flipped_bytes(cut, flips):
    buf = io.BytesIO()
    np.savez(buf, **seed())
    raw = bytearray(buf.getvalue())
    for where, byte in flips:
        raw[int(where * len(raw))] = byte
    check_loads_or_one_line(raw=bytes(raw[:max(1, int(len(raw) * cut))]) if cut < 1 else bytes(raw))


@pytest.mark.parametrize("version", [-1, 0, 1, 3, 2 ** 40])
def test_every_version_loads_or_says_what_to_do(version):
    entries = dict(seed())
    entries["version"] = np.array(version, np.int64)
    if version == 1:
        entries["scale"] = entries["scale"] / database.Schema.from_json(str(entries["schema"])).weights()
    db = check_loads_or_one_line(entries)
    if version == 1:
        assert db is not None and np.allclose(db.scale, seed()["scale"], rtol=1e-15)
    elif version != database.VERSION:
        assert db is None
