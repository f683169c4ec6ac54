"""Entry point of the polling child (:mod:`collect.telemetry.recording.sampler`), kept small.

More in ``docs/internals.md``.
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
