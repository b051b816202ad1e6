"""Fuzzing the BVH reader: any bytes load (with finite arrays) or raise one BVHError naming the file; nothing else.

Seeds are the real CMU files cut to a few frames; hypothesis truncates them, mutates
bytes, swaps line ends and whitespace, and puts odd numerals in place of numbers.
"""

import atexit
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import animgraph as ag
from animgraph.bvh import load_bvh
from animgraph.cli import info
from animgraph.clipfile import read_clip
from animgraph.errors import BVHError

from conftest import SHARED_MOCAP

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEED_FRAMES = 3
ODD_NUMERALS = [b"1e5", b"+.5", b"-0", b"1_0", b"0x10", b"inf", b"-inf", b"nan", b"NaN", b"1e39", b"-1e999",
                b"1e-400", b"1e308", b".", b"-", b"e5", b"1e", b"++1", b"1.2.3", b"\xc2\xb2", b"0.", b"00012",
                b"9" * 5000, b"0" * 5000 + b"7"]
NUMBER = re.compile(rb"[-+]?[0-9.]+(?:e[-+]?[0-9]+)?")


@lru_cache(maxsize=1)
def seeds():
    """The mocap files (shared, else bundled) cut to their first SEED_FRAMES frames, as bytes."""
    files = sorted(SHARED_MOCAP.glob("*.bvh")) or [ag.data.path(n) for n in ag.data.names()]
    out = []
    for f in files:
        raw = f.read_bytes()
        head, motion = raw.split(b"MOTION", 1)
        lines = motion.replace(b"\r\n", b"\n").strip().split(b"\n")
        out.append(head + b"MOTION\n" + b"Frames: %d\n" % SEED_FRAMES + lines[1] + b"\n"
                   + b"\n".join(lines[2:2 + SEED_FRAMES]) + b"\n")
    return out


_DIR = tempfile.mkdtemp(prefix="bvh-fuzz-")
atexit.register(shutil.rmtree, _DIR, ignore_errors=True)  # one per test process, gone with it


def check_loads_or_bvh_error(data):
    """The property: ``data`` as a file loads with finite arrays or raises one BVHError naming the file."""
    path = os.path.join(_DIR, "fuzz.bvh")
    with open(path, "wb") as fh:
        fh.write(data)
    for read in (load_bvh, read_clip):
        try:
            skel, clip = read(path)[:2]
        except BVHError as e:
            msg = str(e)
            assert msg.startswith(path) and "\n" not in msg and "\r" not in msg, msg
            continue
        assert clip.frames >= 1 and len(skel) >= 1
        for a in (skel.offsets, clip.pos, clip.rot, clip.scl, *skel.end_sites.values()):
            assert np.isfinite(a).all()
    try:
        summary = info(path)
    except BVHError:
        return
    json.dumps(summary, allow_nan=False)  # what `animgraph info --json` prints: no NaN, no inf


seed_index = st.integers(0, 100)


@FUZZ
@given(seed_index, st.floats(0.0, 1.0))
def test_truncated(i, frac):
    s = seeds()[i % len(seeds())]
    check_loads_or_bvh_error(s[: int(len(s) * frac)])


@FUZZ
@given(seed_index, st.lists(st.tuples(st.floats(0.0, 1.0, exclude_max=True), st.integers(0, 255)), max_size=8))
def test_byte_mutations(i, edits):
    s = bytearray(seeds()[i % len(seeds())])
    for where, byte in edits:
        s[int(where * len(s))] = byte
    check_loads_or_bvh_error(bytes(s))


@FUZZ
@given(st.sampled_from([b"", b"HIERARCHY\n", b"HIERARCHY\nROOT a\n{\n"]), st.binary(max_size=400))
def test_garbage(prefix, junk):
    check_loads_or_bvh_error(prefix + junk)


@FUZZ
@given(seed_index, st.sampled_from([b"\r\n", b"\r", b"\n", b"\n\n"]), st.sampled_from([b" ", b"\t", b" \t ", b"\x0b"]),
       st.booleans())
def test_odd_whitespace_reads_the_same(i, eol, space, final_eol):
    s = seeds()[i % len(seeds())]
    odd = s.replace(b"\r\n", b"\n").replace(b" ", space).replace(b"\n", eol)
    if not final_eol:
        odd = odd.rstrip(b"\r\n")
    check_loads_or_bvh_error(odd)
    if eol == b"\n\n":  # blank lines inside the motion block are errors
        return
    path = os.path.join(_DIR, "odd.bvh")
    Path(path).write_bytes(odd)
    _, got = load_bvh(path)
    Path(path).write_bytes(s)
    _, want = load_bvh(path)
    np.testing.assert_array_equal(got.pos, want.pos)
    np.testing.assert_array_equal(got.rot, want.rot)


@FUZZ
@given(seed_index, st.lists(st.tuples(st.floats(0.0, 1.0, exclude_max=True), st.sampled_from(ODD_NUMERALS)),
                            min_size=1, max_size=3))
def test_odd_numerals(i, edits):
    s = seeds()[i % len(seeds())]
    spans = [m.span() for m in NUMBER.finditer(s)]
    for where, numeral in edits:
        a, b = spans[int(where * len(spans))]
        s = s[:a] + numeral.ljust(b - a)[: max(b - a, len(numeral))] + s[b:]
        spans = [m.span() for m in NUMBER.finditer(s)]
    check_loads_or_bvh_error(s)


@FUZZ
@given(seed_index, st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap"]), st.floats(0.0, 1.0, exclude_max=True)),
                            min_size=1, max_size=3))
def test_line_edits(i, edits):
    lines = seeds()[i % len(seeds())].split(b"\n")
    for op, where in edits:
        k = int(where * len(lines))
        if op == "drop":
            del lines[k]
        elif op == "dup":
            lines.insert(k, lines[k])
        elif k + 1 < len(lines):
            lines[k], lines[k + 1] = lines[k + 1], lines[k]
        if not lines:
            break
    check_loads_or_bvh_error(b"\n".join(lines))


def test_odd_numerals_each_load_or_name_the_line(tmp_path):
    """Each odd numeral in a motion line: a plain decimal loads, anything else is a BVHError at that line."""
    s = seeds()[0]
    head, motion = s.split(b"Frame Time:")
    first = head.count(b"\n") + 2  # line of the first frame
    for numeral in ODD_NUMERALS:
        path = tmp_path / "n.bvh"
        rows = motion.split(b"\n")
        rows[1] = numeral + rows[1][rows[1].index(b" "):]
        path.write_bytes(head + b"Frame Time:" + b"\n".join(rows))
        plain = re.fullmatch(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", numeral)
        if plain and abs(float(numeral)) < 3.4e38:
            assert np.isfinite(load_bvh(path)[1].pos).all()
        else:
            with pytest.raises(BVHError) as err:
                load_bvh(path)
            assert err.value.line == first, (numeral, str(err.value))


def test_info_on_fuzzed_files_exits_0_or_2_with_one_line(tmp_path):
    """The installed command on a few fuzzed files: status 0 with valid JSON, or status 2 with one stderr line."""
    script = Path(sys.executable).with_name("animgraph")
    rng = random.Random(7)
    s = seeds()[0]
    cases = [s[: len(s) // 2], s.replace(b"\n", b"\r\n").rstrip(), s[:-40] + b"1e39 nan\n",
             bytes(rng.randrange(256) if rng.random() < 0.01 else b for b in s)]
    statuses = set()
    for k, data in enumerate(cases):
        path = tmp_path / f"fuzz{k}.bvh"
        path.write_bytes(data)
        proc = subprocess.run([str(script), "info", str(path), "--json"], capture_output=True, text=True, timeout=120)
        statuses.add(proc.returncode)
        assert proc.returncode in (0, 2), proc.stderr
        if proc.returncode == 0:
            assert proc.stderr == ""
            json.loads(proc.stdout, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))
        else:
            assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
            assert proc.stderr.startswith(f"animgraph: {path}"), proc.stderr
    assert statuses == {0, 2}


@FUZZ
@given(seed_index, st.lists(st.tuples(st.floats(0.0, 1.0, exclude_max=True), st.floats(0.0, 1.0, exclude_max=True)),
                            min_size=1, max_size=3))
def test_hierarchy_token_swaps(i, edits):
    """A hierarchy token replaced by another of the file's (duplicate joint names, counts in odd places ...)."""
    s = seeds()[i % len(seeds())]
    head, motion = s.split(b"MOTION", 1)
    for a, b in edits:
        # Half the time among the joint names, else among all tokens.
        names = [m.span(1) for m in re.finditer(rb"(?:ROOT|JOINT)\s+(\S+)", head)]
        spans = names if a < 0.5 else [m.span() for m in re.finditer(rb"\S+", head)]
        a = a * 2 % 1.0
        (a0, a1), (b0, b1) = spans[int(a * len(spans))], spans[int(b * len(spans))]
        head = head[:a0] + head[b0:b1] + head[a1:]
    check_loads_or_bvh_error(head + b"MOTION" + motion)
