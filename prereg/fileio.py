"""Durable, atomic file writes shared by every writer in the toolkit (locks, artifacts, reports).

``atomic_write(path, data)`` writes to a temporary file beside ``path`` (created exclusively),
fsyncs it, optionally makes it read-only, renames it over ``path`` and fsyncs the folder, so a
reader sees either the old file or the whole new one, never a half-written file. The ledger is
append-only and has its own writer (``collect.ledger.store``).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from prereg.errors import InputError

#: folders whose files are scratch: a worker's private runs folder that its executor sends to the
#: driver and then deletes (the driver writes the durable copies). Writes under them skip fsync.
_SCRATCH: set[str] = set()


def scratch_folder(folder: str | os.PathLike[str], scratch: bool = True) -> None:
    """Mark (or unmark) ``folder`` as scratch for this process: :func:`atomic_write` and
    :func:`fsync_dir` then skip their fsyncs under it (nothing there needs to survive a crash)."""
    (_SCRATCH.add if scratch else _SCRATCH.discard)(os.path.abspath(folder))


def _durable(path: str | os.PathLike[str]) -> bool:
    if not _SCRATCH:
        return True
    where = os.path.abspath(path)
    return not any(where == root or where.startswith(root + os.sep) for root in _SCRATCH)


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """fsync a folder so a rename or creation inside it survives a crash."""
    if not _durable(folder):
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes, read_only: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically; ``read_only`` leaves it mode 0444."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)  # litter of an earlier process with this pid, killed mid-write
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if _durable(target):
                os.fsync(fh.fileno())
        if read_only:
            os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except OSError as err:  # e.g. disk full: say which file could not be written
        tmp.unlink(missing_ok=True)
        if err.filename is None:
            raise OSError(err.errno, f"cannot be written ({err.strerror or err})", str(target)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def write_text_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_write`); a folder or missing parent is an ``InputError``."""
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{target}: is a folder, not a file to write")
    parent = target.parent
    if not parent.is_dir():
        raise InputError(f"{parent}: no such folder")
    atomic_write(target, text.encode("utf-8"))


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


class UnreadableFile(InputError, ValueError):
    """An input that is not a regular file, cannot be opened, or is larger than its bound (exit 2)."""


def read_regular_file(path: str | os.PathLike[str], limit: int, follow_links: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` bytes; every input goes through this.

    The file is opened non-blocking (a FIFO never blocks the open), then ``fstat`` must say it is a
    regular file (a FIFO, device, socket or folder is refused before a byte is read) of at most
    ``limit`` bytes; at most ``limit + 1`` bytes are ever read (a file growing while read is
    refused too). ``follow_links=False`` also refuses a symbolic link. ``UnreadableFile`` otherwise.
    """
    p = Path(path)
    flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise UnreadableFile(f"{p}: no such file") from None
    except IsADirectoryError:
        raise UnreadableFile(f"{p}: is a folder, not a file") from None
    except OSError as err:
        if err.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            raise UnreadableFile(f"{p}: is a symbolic link; never followed") from None
        raise UnreadableFile(f"{p}: cannot be read ({err.strerror or err})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"{p}: is {_kind(st.st_mode)}, not a regular file; not read")
        if st.st_size > limit:
            raise UnreadableFile(f"{p}: is {st.st_size} bytes, larger than the {limit} bytes allowed; not read")
        chunks, total = [], 0
        while total <= limit:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except OSError as err:
                raise UnreadableFile(f"{p}: cannot be read ({err.strerror or err})") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise UnreadableFile(f"{p}: grew past the {limit} bytes allowed while it was read; not read")
        return b"".join(chunks)
    finally:
        os.close(fd)


PROTECTED_NAMES = ("ledger.jsonl", ".collect.lock")  # the run ledger and the runs folder's lock
PROTECTED_SUFFIXES = (".lock.json", ".yaml", ".yml", ".jsonl")  # locks, plans, ledgers and traces
_PROTECTED_MARKERS = (rb'"record":\s*"collect/run/v\d+"', rb'"format":\s*"prereg/lock/v\d+"',
                      rb"(?m)^schema:\s*['\"]?prereg/v1")


class OutputRefused(InputError, OSError):
    """An output path the toolkit will not write over (a ledger, lock, plan, trace, device...).

    Both an :class:`~prereg.errors.InputError` (exit 2) and an ``OSError`` (``errno``, ``strerror``,
    ``filename``), so callers catching either keep working; its message is ``filename: strerror``.
    """

    def __init__(self, errno_: int, strerror: str, filename: str) -> None:
        OSError.__init__(self, errno_, strerror, filename)
        self.message = f"{filename}: {strerror}"
        self.details = None


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_output(
    path: str | os.PathLike[str], force: bool = False, ours: Callable[[Path], bool] | None = None,
) -> None:
    """Refuse to write ``path`` over anything but a regular file the toolkit wrote (``OutputRefused``).

    Never written over, even with ``force``: a symbolic link, a folder, a device, a FIFO or socket;
    a run ledger, a runs-folder lock, a plan lock, a plan (``.yaml``), a trace (in a ``traces/``
    folder, or any ``.jsonl``) -- recognised by name or by their first bytes. An existing regular
    file for which ``ours(path)`` is true (the same kind of output, e.g. an earlier evaluation) is
    replaced; any other existing file only with ``force``. The parent folder must exist.
    """
    target = Path(path)
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise OutputRefused(2, "no such folder to write into", str(target.parent)) from None
        return
    if not stat.S_ISREG(mode):
        raise OutputRefused(17, f"exists and is {_kind(mode)}; never written over", str(target))
    name = target.name
    protected = name in PROTECTED_NAMES or name.endswith(PROTECTED_SUFFIXES) or target.parent.name == "traces"
    if not protected:
        try:
            with open(target, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            head = b""

        protected = any(re.search(marker, head) for marker in _PROTECTED_MARKERS)
    if protected:
        raise OutputRefused(17, "is a ledger, lock, plan or trace; never written over (choose another path)",
                            str(target))
    if ours is not None and ours(target):
        return
    if not force:
        raise OutputRefused(17, "exists and was not written by the toolkit as this kind of output; "
                                "use --force to replace it", str(target))


