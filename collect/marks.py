"""Phase marks from inside a program run by the ``command`` collector (standard library only).

A program that ``collect run`` starts (``experiment.collector: command``) marks its phases so the
telemetry sampled outside it can be split by phase::

    from collect.marks import phase

    with phase("checkpoint"):
        save_checkpoint()

Each ``with`` block appends two lines to the file named by ``$PREREG_MARKS`` (the collector sets
it): ``begin NAME T_BEFORE_NS T_AFTER_NS`` on entry and ``end NAME T_BEFORE_NS T_AFTER_NS`` on
exit. The two times are the host's ``CLOCK_MONOTONIC`` in integer nanoseconds read just before and
just after the line is written (the bounds of the mark, as a sensor poll has), so the block itself
runs after the begin line's second time and before the end line's first. Phases nest (an inner
``end`` closes the innermost open phase of that name). ``NAME`` is letters, digits, ``_``, ``-``
and ``.``. Each line is written with one ``write`` on a file opened for appending, so lines from
threads or child processes of the program do not interleave inside a line.

Outside ``collect run`` (``$PREREG_MARKS`` unset or empty) every call does nothing, silently, so the
same program runs bare. A program in another language writes the same lines itself (see
``docs/command-collector.md``). This module imports nothing of the toolkit: it can be copied into a
project as a single file.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ENV", "mark", "phase"]

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
