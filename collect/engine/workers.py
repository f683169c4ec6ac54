"""Pool workers that never outlive the process that started them.

``worker_init`` is the ``ProcessPoolExecutor`` initializer of ``collect run --jobs N``:

1. On Linux it asks the kernel for ``SIGKILL`` when the parent dies (``prctl(PR_SET_PDEATHSIG)``
   through ctypes), so a ``kill -9`` of ``collect run`` takes its workers with it at once.
2. A daemon thread checks the parent pid every ``WATCH_S`` seconds and exits the worker when it
   changed (re-parented to init or a subreaper): the fallback where prctl is unavailable (macOS)
   or the parent died before prctl took effect.
3. It closes descriptors of the runs folder's lock inherited through ``fork`` (without unlocking
   them), so a worker can never keep the lock alive.

``watch_driver`` guards the workers of a Ray instance that ``collect run --executor ray`` started
for itself: they are children of Ray's raylet, not of ``collect run`` (so no parent-death signal
reaches them, and nothing was inherited through ``fork``: Ray starts them by ``exec``, and the lock
is opened close-on-exec). Each Ray task calls it first; once per process it starts a daemon thread
that exits the worker when the driver, named by pid and start time (:func:`process_identity`, so a
recycled pid is not mistaken for it), is gone or a zombie. On a cluster (``RAY_ADDRESS``) Ray ends
a dead driver's tasks itself, and the driver's pid means nothing on other machines: not used there.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

from collect.ledger.runlock import close_inherited

PR_SET_PDEATHSIG = 1
WATCH_S = 0.5


def set_parent_death_signal(sig: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(WATCH_S)


def process_identity(pid: int | None = None) -> tuple[int, int]:
    """``(pid, start time in clock ticks since boot)`` of a process (this one by default); the start
    time is 0 where ``/proc`` is unavailable, and -1 when the process is gone or a zombie."""
    pid = os.getpid() if pid is None else pid
    if not os.path.exists("/proc/self/stat"):  # no procfs (macOS): the pid alone
        return pid, 0 if _exists(pid) else -1
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
    except OSError:
        return pid, -1
    if fields[0] in (b"Z", b"X"):  # state: a zombie is dead, only not yet reaped
        return pid, -1
    return pid, int(fields[19])  # field 22 of stat, the 20th after the name


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _driver_alive(pid: int, start: int) -> bool:
    now = process_identity(pid)[1]
    return now != -1 and (start == 0 or now == 0 or now == start)


def _watch_driver(pid: int, start: int) -> None:
    while True:
        time.sleep(WATCH_S)
        if not _driver_alive(pid, start):
            os._exit(1)


_watched: tuple[int, int] | None = None
_watch_lock = threading.Lock()


def watch_driver(pid: int, start: int) -> None:
    """Exit this process when the process ``(pid, start)`` is gone (see the module doc); idempotent."""
    global _watched
    with _watch_lock:
        if _watched == (pid, start):
            return
        if not _driver_alive(pid, start):  # it died before this worker got its first task
            os._exit(1)
        _watched = (pid, start)
    threading.Thread(target=_watch_driver, args=(pid, start), name="driver-watchdog", daemon=True).start()


def worker_init(parent_pid: int, inherited_lock_fds: list[int]) -> None:
    """Initializer of every pool worker (see the module doc)."""
    close_inherited(inherited_lock_fds)
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="parent-watchdog", daemon=True).start()
