"""Shared fixtures: bundled clips, and the test-only CMU clips read from ../shared."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Every test (and every command a test starts) runs on the whole registry's executor, compiled
# once for the session: a cold cache would otherwise compile one executor per graph's node
# types (animgraph.executor.load).  Tests of that first-run path unset this themselves.
os.environ.setdefault("ANIMGRAPH_EXECUTOR", "full")


@pytest.hookimpl(trylast=True)  # after the terminal reporter is set up, to say what it did
def pytest_configure(config):
    """Under pytest-xdist, fill the compiled-code cache once in the controller before the workers start
    (``tests/warm_cache.py``: otherwise every worker compiles the same executor at once)."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", 0):
        return  # a worker (the controller warmed it) or a run in one process (its first test compiles)
    if config.option.collectonly:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:  # a cold cache takes minutes here: say so before the silence
        reporter.write_line("warming the compiled-code cache before the workers start "
                            "(seconds when warm; on an empty cache about 1.5 minutes on 2 cores)")
    run = subprocess.run([sys.executable, str(Path(__file__).with_name("warm_cache.py"))], capture_output=True,
                         text=True, timeout=3600)
    line = (run.stdout.strip().splitlines() or [""])[-1]
    if run.returncode != 0:  # the tests that compile will say what fails; the cache is only slower to fill
        line = f"warming the compiled-code cache failed (status {run.returncode}): {run.stderr.strip()[-2000:]}"
    if reporter is not None:
        reporter.write_line(line)
    else:
        print(line, file=sys.stderr)


def _random_order(config):
    """Whether pytest-random-order shuffles this run (then its order stands)."""
    try:
        from random_order.config import Config
    except ImportError:
        return False
    return Config(config).is_enabled


def _weight(item):
    """A ``slow`` test's rough cost, ``@pytest.mark.slow(minutes=...)``: minutes on a loaded 2-core machine (a
    quarter if not said).  Only the order of the run depends on it, never a result."""
    return float(item.get_closest_marker("slow").kwargs.get("minutes", 0.25))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the ``slow`` tests first in the workers' shares, the heaviest first, each to the share
    with the least slow work so far; the rest after them in collection order.

    ``--dist worksteal`` hands each worker a contiguous share of the collection and moves queued tests
    from a busy worker to an idle one, but never a running one: a test of minutes started last is the
    run's tail.  Started first and spread, the few long tests run side by side while the short ones fill
    in.  Every worker computes the same order (xdist requires it); a shuffled run (``--random-order``)
    keeps its own order.
    """
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    if workers < 2 or _random_order(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if not slow:
        return
    rest = [item for item in items if not item.get_closest_marker("slow")]
    shares, left = [], len(items)
    for i in range(workers):  # the shares' sizes as worksteal's first distribution cuts them
        shares.append(left // (workers - i))
        left -= shares[-1]
    dealt, load = [[] for _ in range(workers)], [0.0] * workers
    for item in sorted(slow, key=_weight, reverse=True):  # stable: equal weights keep collection order
        w = load.index(min(load))
        dealt[w].append(item)
        load[w] += _weight(item)
    order, at = [], 0
    for size, mine in zip(shares, dealt):
        fill = max(0, size - len(mine))
        order += mine + rest[at:at + fill]
        at += fill
    order += rest[at:]
    items[:] = order


@pytest.fixture(autouse=True, scope="session")
def _editor_files_in_tmp(tmp_path_factory):
    """The editor's autosaves and recent-files list in the session's temporary directory, never the user's
    (every command a test starts inherits this environment)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ANIMGRAPH_AUTOSAVE", str(tmp_path_factory.mktemp("autosave")))
        mp.setenv("ANIMGRAPH_CONFIG", str(tmp_path_factory.mktemp("config")))
        yield


ROOT = Path(__file__).resolve().parents[1]
SHARED_MOCAP = Path(os.environ.get("ANIMGRAPH_SHARED", ROOT.parent / "shared")) / "data" / "mocap"

# The demo's five bundled clips: the per-node fixtures below run over these.
BUNDLED = ["walk", "walk_turn", "jog", "run", "run_stop"]
# The four more bundled for the motion-matching database; ``ag.data.names()`` is BUNDLED + MM_BUNDLED.
MM_BUNDLED = ["jog_turn_left", "jog_turn_right", "run_veer_right", "walk_stop"]
TEST_ONLY = [
    "cmu_12_01_walk.bvh",
    "cmu_131_01_start_walk_stop.bvh",
    "cmu_131_02_start_walk_stop_slow.bvh",
    "cmu_131_03_start_hop_spin_stop.bvh",
]


def shared_path(name):
    """Path of a clip in ../shared/data/mocap, or skip the test saying why."""
    path = SHARED_MOCAP / name
    if not path.exists():
        pytest.skip(f"{path} is absent: test-only CMU clips live in ../shared, never in the repo")
    return path


def load_any(name):
    """(skeleton, clip) in metres with the T-pose dropped: a bundled name or a shared file name."""
    import animgraph as ag

    if name in BUNDLED + MM_BUNDLED:
        return ag.data.load(name)
    return ag.data.load_cmu(shared_path(name))


ALL_CLIPS = BUNDLED + TEST_ONLY


@pytest.fixture(params=ALL_CLIPS)
def any_clip(request):
    """Each bundled and shared clip in turn, as (skeleton, clip)."""
    return load_any(request.param)


@pytest.fixture(params=BUNDLED)
def bundled_clip(request):
    """Each bundled clip in turn, as (skeleton, clip)."""
    return load_any(request.param)
