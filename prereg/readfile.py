"""Reading an input file: a bounded regular file, never a FIFO, device or (optionally) a link.

Every input of the toolkit (plans, locks, tables, evaluations, traces) is read through
:func:`read_regular_file`; :func:`not_a_readable_file` says in one sentence why a path cannot be
read. Re-exported by :mod:`prereg.fileio`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from prereg.errors import InputError


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words ('a symbolic link', 'a device'...), from its ``st_mode``."""
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
            raise UnreadableFile(f"{p}: is {file_kind(st.st_mode)}, not a regular file; not read")
        if st.st_size > limit:
            raise UnreadableFile(f"{p}: is {st.st_size} bytes, larger than the {limit} bytes allowed; not read")
        try:
            data = read_at_most(fd, limit + 1)
        except OSError as err:
            raise UnreadableFile(f"{p}: cannot be read ({err.strerror or err})") from None
        if len(data) > limit:
            raise UnreadableFile(f"{p}: grew past the {limit} bytes allowed while it was read; not read")
        return data
    finally:
        os.close(fd)


def read_at_most(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes read from the descriptor ``fd`` (fewer at its end), in 1 MiB reads: a caller
    that allows ``limit`` bytes asks for ``limit + 1`` and refuses a longer result (a file that grew)."""
    chunks, total = [], 0
    while total < size:
        chunk = os.read(fd, min(1 << 20, size - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
