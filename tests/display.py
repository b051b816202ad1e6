"""A display for window tests: the session's DISPLAY, else a private Xvfb server started here.

Without either, window tests skip with the reason, or fail when ``CI=true`` (CI installs
Xvfb through ``.ci/install-display``, so a missing display there is a broken set-up).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_RESULTS = {}  # (driver, display, mode, args) -> the driver's JSON result: each scenario runs once per session


def _ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(reason):
    """Skip (or fail under CI=true) a test that needs a display."""
    if _ci():
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def driver_result(driver, display, mode, *args, timeout=900):
    """The last stdout line, as JSON, of ``python tests/<driver> mode args...`` on ``display`` (run once per session,
    a failure's stderr in the assertion)."""
    key = (driver, display, mode, args)
    if key not in _RESULTS:
        env = dict(os.environ, DISPLAY=display)
        done = subprocess.run([sys.executable, str(Path(__file__).with_name(driver)), mode, *map(str, args)],
                              capture_output=True, text=True, timeout=timeout, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        _RESULTS[key] = json.loads(done.stdout.strip().splitlines()[-1])
    return _RESULTS[key]


def start_xvfb(size="1920x1080x24"):
    """(process, ':N') of a new Xvfb server on a free display number, or (None, reason)."""
    if shutil.which("Xvfb") is None:
        return None, "no display: DISPLAY is unset and Xvfb is not installed (run .ci/install-display)"
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", size, "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()
    if not number:
        proc.kill()
        return None, "Xvfb did not start"
    return proc, f":{number}"


@pytest.fixture(scope="session")
def display():
    """The DISPLAY value window subprocesses use."""
    try:
        import dearpygui  # noqa: F401
    except ImportError:
        missing("dearpygui is not installed (pip install -e '.[test,editor]')")
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    proc, value = start_xvfb()
    if proc is None:
        missing(value)
    yield value
    proc.terminate()
    proc.wait(timeout=10)
