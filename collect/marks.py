"""The program's client: phase marks and progress reports from inside a program run by the
``command`` collector (standard library only).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ENV", "PROGRESS_ENV", "RESTART_ENV", "mark", "phase", "restart", "resumed", "step"]

ENV = "PREREG_MARKS"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _write(kind: str, name: str) -> None:
    path = os.environ.get(ENV)
    if not path:
        return
    if not _NAME.match(name):
        raise ValueError(f"phase name {name!r} must be 1-64 letters, digits, '_', '-' or '.'")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        before = time.monotonic_ns()
        line = f"{kind} {name} {before} "
        after = time.monotonic_ns()  # bounds the mark: the line is composed and written between them
        os.write(fd, f"{line}{after}\n".encode())
    finally:
        os.close(fd)


def mark(kind: str, name: str) -> None:
    """Append one ``begin`` or ``end`` line for phase ``name`` (a no-op without ``$PREREG_MARKS``)."""
    if kind not in ("begin", "end"):
        raise ValueError(f"mark kind must be 'begin' or 'end', not {kind!r}")
    _write(kind, name)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Mark the ``with`` block as phase ``name`` (see the module doc); the end is marked on an
    exception too."""
    mark("begin", name)
    try:
        yield
    finally:
        mark("end", name)


PROGRESS_ENV = "PREREG_PROGRESS"
RESTART_ENV = "PREREG_RESTART"
_conn: dict[int, socket.socket] = {}  # pid -> its connection (a forked child opens its own)


def _report(line: str) -> None:
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return
    sock = _conn.get(os.getpid())
    if sock is None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
        _conn[os.getpid()] = sock
    sock.sendall(line.encode("ascii") + b"\n")
    if sock.recv(1) != b"k":  # the collector is ending this program (a planned fault): wait for the kill
        sock.recv(1)


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, not {value!r}")
    return value


def step(n: int, *, tokens: int | None = None, loss: float | None = None) -> None:
    """Report that the program's state holds ``n`` completed steps (a no-op outside ``collect run``)."""
    line = f"step {_count('step', n)}"
    if tokens is not None:
        line += f" tokens={_count('tokens', tokens)}"
    if loss is not None:
        line += f" loss={float(loss)!r}"  # repr: 'nan' and 'inf' kept as such
    _report(line)


def resumed(n: int) -> None:
    """Report that this start of the program picks up from ``n`` completed steps (0: from scratch)."""
    _report(f"resumed {_count('resumed', n)}")


def restart() -> int:
    """Which start of the program this is: 0 first, ``k`` after the k-th planned fault."""
    value = os.environ.get(RESTART_ENV, "0")
    return int(value) if value.isdigit() else 0
