"""Pruning of old versions' compiled-code directories (``animgraph.cache.prune``), on a temporary cache root."""

import os
import time

from animgraph import cache

DAY = 86400.0


def _version(root, name, age_days, now):
    path = root / name
    (path / "numba").mkdir(parents=True)
    (path / "numba" / "k.nbi").write_bytes(b"x")
    os.utime(path, (now - age_days * DAY, now - age_days * DAY))
    return path


def test_prunes_old_versions_a_few_at_a_time_never_the_current(tmp_path):
    now = time.time()
    current = _version(tmp_path, "0" * 16, 400, now)  # old mtime, but in use: touched, kept
    old = [_version(tmp_path, f"{i:016x}", 30 + i, now) for i in range(1, 4)]
    recent = _version(tmp_path, "f" * 16, 3, now)
    other = tmp_path / "autosave"  # not a version directory: never removed, however old
    other.mkdir()
    os.utime(other, (now - 400 * DAY, now - 400 * DAY))

    removed = cache.prune(current, days=14, at_most=2, now=now)
    assert removed == [old[2], old[1]]  # the oldest first, two at a time
    assert current.is_dir() and time.time() - current.stat().st_mtime < 60
    assert old[0].is_dir() and recent.is_dir() and other.is_dir()

    assert cache.prune(current, days=14, at_most=2, now=now) == [old[0]]
    assert cache.prune(current, days=14, at_most=2, now=now) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["0" * 16, "f" * 16, "autosave"])


def test_prune_of_a_missing_or_unreadable_root_does_nothing(tmp_path):
    assert cache.prune(tmp_path / "missing" / ("a" * 16)) == []


def test_configure_prunes_beside_the_current_version(tmp_path, monkeypatch):
    monkeypatch.setenv("ANIMGRAPH_CACHE", str(tmp_path))
    now = time.time()
    stale = _version(tmp_path, "1" * 16, 60, now)
    cache.configure_numba()
    assert not stale.exists() and cache.cache_dir().is_dir()


def test_the_llvm_options_are_part_of_the_version(monkeypatch):
    """Code compiled under other LLVM options (another vectorizer threshold) is another version's."""
    now = cache.source_hash()
    monkeypatch.setattr(cache, "LLVM_OPTIONS", ("-vectorize-scev-check-threshold=32",))
    assert cache.source_hash() != now
    monkeypatch.undo()
    assert cache.source_hash() == now
