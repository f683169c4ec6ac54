"""Files of a runs folder opened safely: no symbolic links, nothing but regular files (part of ``collect.ledger.store``)."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

from collect.ledger.records import TRACES_DIR


def open_no_follow(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a symbolic link or anything but a regular file, with a clear error."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK):
            raise OSError(err.errno, "is a symbolic link; never followed out of the runs folder", str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "is not a regular file", str(path))
    return fd


def trace_path(runs_dir: str | os.PathLike[str], name: str) -> Path:
    """``RUNS/name`` for a trace named in a record, refusing paths outside ``RUNS/traces`` and links."""
    parts = Path(name).parts
    if len(parts) < 2 or parts[0] != TRACES_DIR or ".." in parts or Path(name).is_absolute():
        raise OSError(errno.EINVAL, "trace path outside the runs folder's traces/", name)
    folder = Path(runs_dir)
    for depth in range(1, len(parts) + 1):
        if (folder.joinpath(*parts[:depth])).is_symlink():
            raise OSError(
                errno.ELOOP,
                "is a symbolic link; never followed out of the runs folder",
                str(folder.joinpath(*parts[:depth])),
            )
    return folder / name


def hash_trace(runs_dir: str | os.PathLike[str], name: str, fsync: bool = False) -> str:
    """SHA-256 of ``RUNS/name`` (a trace), refusing links and paths outside ``RUNS/traces``."""
    fd = open_no_follow(trace_path(runs_dir, name), os.O_RDONLY)
    digest = hashlib.sha256()
    try:
        if fsync:
            os.fsync(fd)
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except OSError as err:
            raise OSError(err.errno, err.strerror or str(err), str(path)) from None
        view = view[written:]
