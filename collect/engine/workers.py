"""Pool workers that never outlive the process that started them.

``worker_init`` is the ``ProcessPoolExecutor`` initializer of ``collect run --jobs N``:

1. On Linux it asks the kernel for ``SIGKILL`` when the parent dies (``prctl(PR_SET_PDEATHSIG)``
   through ctypes), so a ``kill -9`` of ``collect run`` takes its workers with it at once.
2. A daemon thread checks the parent pid every ``WATCH_S`` seconds and exits the worker when it
   changed (re-parented to init or a subreaper): the fallback where prctl is unavailable (macOS)
   or the parent died before prctl took effect.
3. It closes descriptors of the runs folder's lock inherited through ``fork`` (without unlocking
   them), so a worker can never keep the lock alive.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from collect.ledger.runlock import close_inherited
from collect.telemetry.recording.parent_death import set_parent_death_signal

WATCH_S = 0.5


def _watch_parent(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)
        time.sleep(WATCH_S)


def worker_init(parent_pid: int, inherited_lock_fds: list[int]) -> None:
    """Initializer of every pool worker (see the module doc)."""
    close_inherited(inherited_lock_fds)
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="parent-watchdog", daemon=True).start()
