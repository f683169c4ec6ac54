"""Durable, atomic file writes shared by every writer in the toolkit (locks, artifacts, reports).

``atomic_write(path, data)`` writes to a temporary file beside ``path`` (created exclusively),
fsyncs it, optionally makes it read-only, renames it over ``path`` and fsyncs the folder, so a
reader sees either the old file or the whole new one, never a half-written file. The ledger is
append-only and has its own writer (``collect.ledger``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """fsync a folder so a rename or creation inside it survives a crash."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes, read_only: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically; ``read_only`` leaves it mode 0444."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if read_only:
            os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def not_a_readable_file(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as an input file (None when it is a regular file): one clear message."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        return f"{p}: no such file"
    except PermissionError:
        return f"{p}: permission denied"
    except OSError as err:
        return f"{p}: cannot be read ({err.strerror or err})"
    if stat.S_ISDIR(mode):
        return f"{p}: is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return f"{p}: is a named pipe (FIFO), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return f"{p}: is a device, not a regular file"
    if not stat.S_ISREG(mode):
        return f"{p}: is not a regular file"
    return None
