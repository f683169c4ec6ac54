"""The supervisor between ``collect run`` and a ``command`` run's program (standard library only).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
MAX_ROUNDS = 1000  # rounds of killing descendants (each round kills every one found; a fork bomb ends)
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


def _subreaper() -> bool:
    """Become a child subreaper (Linux 3.4+); whether the kernel accepted it."""
    if _PRCTL is None:
        return False
    return _PRCTL(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0  # type: ignore[operator]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def process_stats() -> Iterator[tuple[int, list[bytes]]]:
    """``(pid, fields)`` of every process ``/proc`` shows, ``fields`` those of ``/proc/PID/stat`` after
    the command name (``[state, ppid, pgrp, session, ...]``); nothing without ``/proc``."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        yield int(name), fields


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process ``/proc`` shows (empty without ``/proc``)."""
    return {pid: int(fields[1]) for pid, fields in process_stats() if len(fields) > 1}


def _descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (by parent pid in ``/proc``)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _reap_all() -> None:
    """Reap every child that has exited (zombies of killed descendants reparented here)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return


def _kill_descendants() -> None:
    """SIGKILL every descendant of this process, round after round until none is left, reaping them."""
    me = os.getpid()
    for _ in range(MAX_ROUNDS):
        left = _descendants(me)
        _reap_all()
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _reap_all()


def _tell(info_fd: int, line: str) -> None:
    try:
        os.write(info_fd, line.encode() + b"\n")
    except OSError:
        pass  # the parent is gone: nobody to tell


def _program_pre_exec() -> None:  # in the program, between fork and exec (this process has one thread)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    _death_signal(signal.SIGKILL)


def main(argv: list[str]) -> int:
    parent, info_fd, program = int(argv[0]), int(argv[1]), argv[2:]
    child: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if child:
            _kill_group(child[0])
        _kill_descendants()
        _tell(info_fd, "clean")
        os._exit(128 + signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, stop)
    _death_signal(signal.SIGTERM)
    if os.getppid() != parent:
        return 125
    _subreaper()
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # until the program's pid is known to stop()
    try:
        proc = subprocess.Popen(program, start_new_session=True, preexec_fn=_program_pre_exec)
    except OSError as err:
        print(f"cannot start {program[0]!r}: {err.strerror or err}", file=sys.stderr)
        return 127
    child.append(proc.pid)
    _tell(info_fd, f"pid {proc.pid}")
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # a stop that came meanwhile is handled now
    while True:  # until the program exits; orphans reparented here meanwhile are reaped as they die
        try:
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if ended is None or ended.si_pid == proc.pid:
            break
        try:
            os.waitpid(ended.si_pid, 0)
        except ChildProcessError:
            pass
    _kill_group(proc.pid)  # the program's pid is still held (not reaped): the group id is its own
    code = proc.wait()
    _kill_descendants()  # daemons that left the group, reparented here (subreaper)
    _tell(info_fd, "clean")
    if code < 0:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
