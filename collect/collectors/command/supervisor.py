"""The supervisor between ``collect run`` and a ``command`` run's program (standard library only).

Run as a script (``python -I -S supervisor.py PARENT_PID PROGRAM ARGS...``) by
:mod:`collect.collectors.command.process`. It:

1. asks the kernel for ``SIGTERM`` when the thread that started it exits (``PR_SET_PDEATHSIG``),
   then exits at once if its parent is already gone (it died before the request took effect);
2. starts the program in a session and process group of its own (``setsid``), the program itself
   asking for ``SIGKILL`` should the supervisor die;
3. waits for the program *without reaping it* (``waitid`` with ``WNOWAIT``), so the program's pid
   -- its process group's id -- cannot be reused, then kills the whole group (``SIGKILL``: the
   program's children and grandchildren that stayed in it), then reaps the program;
4. on ``SIGTERM`` (the parent died, or asks to stop the run) or ``SIGINT``/``SIGHUP``, kills the
   group the same way and exits;
5. exits with the program's status: its exit code, or the signal that ended it (by raising it on
   itself), so the parent sees what the program did.

A grandchild that leaves the group (``setsid``, a daemon) is beyond its reach.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _prctl() -> object | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def _death_signal(sig: int) -> None:
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, sig, 0, 0, 0)  # type: ignore[operator]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _program_pre_exec() -> None:  # in the program, between fork and exec (this process has one thread)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    _death_signal(signal.SIGKILL)


def main(argv: list[str]) -> int:
    parent, program = int(argv[0]), argv[1:]
    child: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if child:
            _kill_group(child[0])
        os._exit(128 + signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, stop)
    _death_signal(signal.SIGTERM)
    if os.getppid() != parent:
        return 125
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # until the program's pid is known to stop()
    try:
        proc = subprocess.Popen(program, start_new_session=True, preexec_fn=_program_pre_exec)
    except OSError as err:
        print(f"cannot start {program[0]!r}: {err.strerror or err}", file=sys.stderr)
        return 127
    child.append(proc.pid)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # a stop that came meanwhile is handled now
    while True:
        try:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            break
    _kill_group(proc.pid)  # the program's pid is still held (not reaped): the group id is its own
    code = proc.wait()
    if code < 0:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
