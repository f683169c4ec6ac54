"""Finding a Ray cluster's processes on this machine (Linux ``/proc``), for tests that check none is left."""

from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a process, None when gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), fields[0].decode()


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def session_processes(session: str) -> list[int]:
    """Live (non-zombie) processes of this user whose command line holds ``session`` (Ray's session name)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            info = _stat(int(entry))
            if info is not None and info[1] not in ("Z", "X") and session.encode() in cmdline(int(entry)):
                found.append(int(entry))
    return found


def descendants(roots: set[int]) -> set[int]:
    """Every live descendant of ``roots``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        info = _stat(int(entry)) if entry.isdigit() else None
        if info is not None and info[1] not in ("Z", "X"):
            children.setdefault(info[0], []).append(int(entry))
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def task_workers(prefix: bytes = b"ray::run_task") -> set[int]:
    """Ray worker processes running a run of a sweep (their command line is the task's name)."""
    return {int(e) for e in os.listdir("/proc") if e.isdigit() and cmdline(int(e)).startswith(prefix)}
