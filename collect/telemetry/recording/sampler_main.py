"""Entry point of the polling child (:mod:`collect.telemetry.recording.sampler`), kept small.

The parent starts ``python -c "...; main(FD)"`` with one end of a ``multiprocessing`` pipe open as
file descriptor ``FD``. This module imports nothing of the parent's program (its ``__main__`` is
never re-run, unlike ``multiprocessing``'s ``spawn``), reads what to poll from the pipe and runs the
sampler's child loop until told to stop.
"""

from __future__ import annotations

from multiprocessing.connection import Connection

from collect.telemetry.recording.sampler import child_main


def main(fd: int) -> None:
    """Poll as the parent asks over the pipe at file descriptor ``fd`` (see the sampler's protocol)."""
    conn = Connection(fd)
    try:
        spec, signals, poll_ms, nice, t0, parent_pid = conn.recv()
    except (EOFError, OSError):  # the parent went away before saying what to poll
        return
    try:
        child_main(conn, spec, signals, poll_ms, nice, t0, parent_pid)
    finally:
        conn.close()
