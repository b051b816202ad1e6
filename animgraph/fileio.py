"""Atomic file writing: a temporary file beside the target, then a rename, so no half-written file."""

import os
import tempfile
from pathlib import Path


def atomic_write(path, write, mode="wb"):
    """Call ``write(fileobj)`` on a temporary file beside ``path``, then rename it to ``path``."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        kwargs = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
        with os.fdopen(fd, mode, **kwargs) as f:
            write(f)
        umask = os.umask(0)  # mkstemp makes the file private; give it the usual permissions
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path, text):
    """Write UTF-8 text with LF line ends to ``path`` atomically."""
    atomic_write(path, lambda f: f.write(text), mode="w")
