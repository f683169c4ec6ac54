"""Ends what is left of a Ray instance ``collect run`` started for itself, once its driver is gone.

Run as a script (standard library only, nothing of the toolkit imported) in its own session, with
the Ray session's name and the driver's pid as its arguments and a pipe from the driver on its
standard input. While it waits on that pipe it notes, every ``WATCH_S``, the driver's descendants
(the GCS, the raylet, Ray's dashboard and runtime-env agents, workers: Ray renames them, so their
command lines no longer name the session) with their start times. End of file comes when the
driver closes the pipe after ``ray.shutdown()``, or when the kernel closes it because the driver
died (``kill -9`` included). It then sends ``SIGKILL`` to every noted process still alive with the
same start time (never a recycled pid), their descendants, and every process of this user whose
command line names the session, in a few rounds until none is left, and exits. Without
it, Ray's agents outlive a killed driver by about a minute (they wait on the dead GCS). Linux only
(reads ``/proc``); elsewhere it does nothing.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

ROUNDS = 5
WATCH_S = 0.25


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a live process, None when gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[19])


def descendants(roots: set[int]) -> dict[int, int]:
    """pid -> start time of every live descendant of ``roots``."""
    parents: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None:
                parents.setdefault(info[0], []).append(int(entry))
                starts[int(entry)] = info[1]
    found: dict[int, int] = {}
    todo = list(roots)
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found[child] = starts[child]
                todo.append(child)
    return found


def session_processes(session: str) -> list[int]:
    """Pids of this user's processes whose command line holds ``session`` (this one excepted)."""
    found = []
    me, uid = os.getpid(), os.getuid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if session.encode() in cmdline:
            found.append(int(entry))
    return found


def sweep(session: str, noted: dict[int, int] | None = None) -> int:
    """SIGKILL the session's processes (and the ``noted`` ones still alive with the same start time, and
    their descendants) until none is left (at most ``ROUNDS`` rounds); how many were sent it."""
    killed = 0
    me = os.getpid()
    for _ in range(ROUNDS):
        alive = {pid for pid, start in (noted or {}).items() if (_stat(pid) or (0, -1))[1] == start}
        pids = sorted((set(session_processes(session)) | alive | set(descendants(alive))) - {me})
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.2)
    return killed


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[0].startswith("session_") or not argv[1].isdigit() or not os.path.isdir("/proc"):
        return 0
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    driver, noted = int(argv[1]), {}
    stdin = sys.stdin.fileno()
    while True:
        noted.update(descendants({driver}))
        noted.pop(os.getpid(), None)
        try:
            ready = select.select([stdin], [], [], WATCH_S)[0]
            if ready and not os.read(stdin, 4096):
                break  # end of file: the driver is done, or gone
        except OSError:
            break
    sweep(argv[0], noted)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
