"""The runs folder's writer lock: one writer at a time, never outliving it, never defeated by a deleted file.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from prereg.errors import InputError
from prereg.jsoncodec import loads

LOCK_NAME = ".collect.lock"
_held: dict[str, list[int]] = {}  # folder -> descriptors (folder, file) held by this process


class RunsBusy(InputError, OSError):
    """Another live process holds the runs folder's lock (exit 2; also an ``OSError``: ``filename: strerror``)."""

    def __init__(self, errno_: int, strerror: str, filename: str) -> None:
        OSError.__init__(self, errno_, strerror, filename)
        self.message = f"{filename}: {strerror}"
        self.details = None


def lock_path(runs_dir: str | os.PathLike[str]) -> Path:
    """``RUNS/.collect.lock``."""
    return Path(runs_dir) / LOCK_NAME


def _describe(fd: int) -> str:
    try:
        raw = os.pread(fd, 4096, 0)
        info = loads(raw) if raw else {}
        if not isinstance(info, dict):
            return "an unknown process"
        return f"pid {info.get('pid')} on {info.get('host')}, '{info.get('command')}', since {info.get('since')}"
    except (ValueError, OSError):
        return "an unknown process"


def _lock_folder(folder: Path) -> int | None:
    """An exclusive ``flock`` on the folder's own descriptor (``RunsBusy`` when another writer holds it);
    None where the filesystem cannot lock a folder (NFS emulates ``flock`` with POSIX locks, which need
    a descriptor open for writing): then only the file's lock holds."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunsBusy(
            errno.EBUSY,
            f"another writer is using this runs folder ({_describe_file(folder)}); wait for "
            "it to finish (the lock goes away with its holder)",
            str(folder),
        ) from None
    except OSError as err:
        os.close(fd)
        if err.errno in (errno.EBADF, errno.ENOLCK, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            return None
        raise
    except BaseException:
        os.close(fd)
        raise
    return fd


def _describe_file(folder: Path) -> str:
    """The holder as ``.collect.lock`` describes it (read without locking, never through a link)."""
    try:
        fd = os.open(lock_path(folder), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return "an unknown process; its description file is gone"
    try:
        return _describe(fd) if stat.S_ISREG(os.fstat(fd).st_mode) else "an unknown process"
    finally:
        os.close(fd)


def _lock_file(folder: Path, command: str) -> int:
    """``.collect.lock`` created or opened (never through a link), flocked, and describing this process."""
    path = lock_path(folder)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise OSError(
                err.errno, "is a symbolic link; refusing to use it as the runs folder's lock", str(path)
            ) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "is not a regular file; refusing to use it as a lock", str(path))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # a holder without the folder lock (an older toolkit): still a writer
            raise RunsBusy(
                errno.EBUSY,
                f"another writer is using this runs folder ({_describe(fd)}); wait for it to finish "
                "(the lock goes away with its holder)",
                str(folder),
            ) from None
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command[:200],
            "since": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
            "python": sys.executable,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def runs_lock(runs_dir: str | os.PathLike[str], command: str) -> Iterator[None]:
    """Hold the exclusive writer lock of ``runs_dir`` (created if needed) for the ``with`` block.

    Locks the folder's own descriptor first (what decides), then ``.collect.lock`` (what describes
    the holder). Raises ``RunsBusy`` naming the holder when another process holds it. Re-entrant
    within one process (an import inside a run, a test calling the engine twice) by folder.
    """
    folder = Path(runs_dir)
    folder.mkdir(parents=True, exist_ok=True)
    key = str(folder.resolve())
    if key in _held:
        yield
        return
    folder_fd = _lock_folder(Path(key))
    fds = [] if folder_fd is None else [folder_fd]
    try:
        fds.append(_lock_file(folder, command))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    _held[key] = fds
    try:
        yield
    finally:
        _held.pop(key, None)
        for fd in reversed(fds):
            os.close(fd)  # releases the flocks


def held_descriptors() -> list[int]:
    """Descriptors of the locks this process holds (a forked worker closes them)."""
    return [fd for fds in _held.values() for fd in fds]


def close_inherited(fds: list[int]) -> None:
    """In a forked worker: close inherited lock descriptors without unlocking the parent's lock."""
    _held.clear()
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
