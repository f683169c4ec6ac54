"""Ends what is left of a Ray instance ``collect run`` started for itself, once its driver is gone.

Run as a script (standard library only, nothing of the toolkit imported) in its own session, with
the Ray session's name as its argument and a pipe from the driver on its standard input. It blocks
reading that pipe: end of file comes when the driver closes it after ``ray.shutdown()``, or when
the kernel closes it because the driver died (``kill -9`` included). It then sends ``SIGKILL`` to
every process of this user whose command line names the session (the GCS, the raylet, Ray's
dashboard and runtime-env agents, workers), in a few rounds until none is left, and exits. Without
it, Ray's agents outlive a killed driver by about a minute (they wait on the dead GCS). Linux only
(reads ``/proc``); elsewhere it does nothing.
"""

from __future__ import annotations

import os
import signal
import sys
import time

ROUNDS = 5


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


def sweep(session: str) -> int:
    """SIGKILL the session's processes until none is left (at most ``ROUNDS`` rounds); how many were sent it."""
    killed = 0
    for _ in range(ROUNDS):
        pids = session_processes(session)
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
    if len(argv) != 1 or not argv[0].startswith("session_") or not os.path.isdir("/proc"):
        return 0
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    sweep(argv[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
