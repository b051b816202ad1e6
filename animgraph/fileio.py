"""Atomic file writing: a temporary file beside the target, then a rename, so no half-written file.

Every ``OSError`` raised while writing names the target the caller gave, never the
temporary file (``x.bvh: No space left on device``).  ``check_writable`` and
``check_writable_dir`` find the usual problems (no such directory, a directory in the
way, no permission, a read-only file system) before a long computation starts.
"""

import os
import shutil
import tempfile
from pathlib import Path

from .errors import AnimgraphError

NAME_MAX = 255  # bytes in one file name on the usual file systems (ext4, APFS, NTFS in UTF-16 units)


def _temp(path):
    """A new empty private file beside ``path`` (its name starts with a dot and ends in .tmp)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return tmp


def _naming(err, path):
    """``err`` as an OSError about ``path`` (the file the user gave), keeping its errno and reason."""
    if err.filename == str(path):
        return err
    return OSError(err.errno, err.strerror or str(err), str(path))


def _publish(tmp, path):
    umask = os.umask(0)  # mkstemp makes the file private; give it the usual permissions
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def read_bytes(path, error, kind):
    """The bytes of user file ``path``, or ``error(message, path)`` (one line) when it cannot be read; ``kind`` names
    what it should be ("BVH", "glTF") for a directory given instead."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise error("no such file", path) from None
    except IsADirectoryError:
        raise error(f"is a directory, not a {kind} file", path) from None
    except PermissionError:
        raise error("permission denied", path) from None
    except OSError as e:
        raise error(f"cannot read: {e.strerror or e}", path) from None


def atomic_write(path, write, mode="wb"):
    """Call ``write(fileobj)`` on a temporary file beside ``path``, then rename it to ``path``."""
    path = Path(path)
    tmp = None
    try:
        tmp = _temp(path)
        kwargs = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
        with open(tmp, mode, **kwargs) as f:
            write(f)
        _publish(tmp, path)
    except OSError as err:
        raise _naming(err, path) from err
    finally:  # also on Ctrl-C and SIGTERM (the CLI turns it into an exception)
        if tmp is not None and os.path.exists(tmp):
            _remove(tmp)


def atomic_write_text(path, text):
    """Write UTF-8 text with LF line ends to ``path`` atomically."""
    atomic_write(path, lambda f: f.write(text), mode="w")


def write_together(files, make_dirs=False):
    """Write several files all or none: ``files`` is [(path, save)], ``save(tmp)`` writes a file at ``tmp``.

    Every file is written to a temporary beside its target first; only when all are
    written are they renamed, and if a rename fails the files already renamed are removed.
    With ``make_dirs`` missing directories are made first, and removed again on failure.
    """
    files = [(Path(path), save) for path, save in files]
    temps, done, made = {}, [], []
    try:
        for path, save in files:
            try:
                if make_dirs:
                    made += _make_dirs(path.parent)
                temps[path] = _temp(path)
                save(temps[path])
            except OSError as err:
                raise _naming(err, path) from err
        for path, _ in files:
            try:
                _publish(temps[path], path)
            except OSError as err:
                raise _naming(err, path) from err
            done.append(path)
    except BaseException:
        for path in done:
            _remove(path)
        for tmp in temps.values():
            _remove(tmp)
        for directory in reversed(made):
            try:
                directory.rmdir()
            except OSError:
                pass
        raise


def _make_dirs(directory):
    """Make ``directory`` and its missing parents; returns the ones made, outermost first."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for d in reversed(missing):
        d.mkdir()
    return missing[::-1]


def _cannot_write(directory):
    """Why no file can be created in existing ``directory`` (None if one can): tried, the only sure test as root,
    on read-only mounts or in /proc."""
    try:
        os.unlink(_temp(directory / "probe"))
    except OSError as err:
        return err.strerror or str(err)
    return None


def check_writable_dir(directory, what="--out"):
    """AnimgraphError unless files can be created in ``directory``, or it can be created (its nearest existing
    ancestor is a writable directory)."""
    directory = Path(directory)
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise AnimgraphError(f"{what} {directory}: {existing} is not a directory")
    why = _cannot_write(existing)
    if why:
        raise AnimgraphError(f"{what} {directory}: cannot write in {existing}: {why}")


def check_writable(path, what="--out", make_dirs=False):
    """AnimgraphError unless ``path`` can be written atomically: its directory exists (or, with ``make_dirs``,
    can be made) and is writable, ``path`` is not a directory and its name is not too long."""
    path = Path(path)
    parent = path.parent
    if len(os.fsencode(path.name)) > NAME_MAX:
        raise AnimgraphError(f"{what} {path}: file name longer than {NAME_MAX} bytes")
    if path.is_dir():
        raise AnimgraphError(f"{what} {path}: is a directory")
    if make_dirs and not parent.is_dir():
        check_writable_dir(parent, what)
        return
    if not parent.is_dir():
        raise AnimgraphError(f"{what} {path}: no such directory {parent}")
    why = _cannot_write(parent)
    if why:
        raise AnimgraphError(f"{what} {path}: cannot write in {parent}: {why}")


def check_space(path, need, what="--out"):
    """AnimgraphError when the file system of ``path`` has less than ``need`` bytes free (nothing if unknown)."""
    try:
        free = shutil.disk_usage(Path(path).parent).free
    except OSError:
        return
    if need > free:
        raise AnimgraphError(
            f"{what} {path}: needs about {format_size(need)} of disk space; {format_size(free)} is free")


def format_size(n):
    """Bytes as '1.5 GiB'."""
    for unit, scale in (("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n / 2 ** 10:.3g} KiB"


def available_memory():
    """Bytes the system can still give this process (MemAvailable, else free pages), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
