"""Start a ``command`` run's program, wait for it with a timeout, and leave no process behind.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from collect.collectors.command.supervisor import process_stats

SUPERVISOR = str(Path(__file__).with_name("supervisor.py"))
TAIL_BYTES = 1 << 20  # stdout / stderr kept per run (the last MiB of each)
GRACE_S = 5.0  # the supervisor's time to kill the group and exit after SIGTERM
PID_POLL_S = 0.005  # how often the supervisor's pipe is read until it reports the program's pid
READER_JOIN_S = 5.0  # a pipe still held by a process outside the group is given up on after this
#: supervisor exit codes of its own (the program's otherwise)
EXIT_NOT_STARTED = 127


@dataclass
class Finished:
    """How the program ended: its exit code (negative: the signal that ended it), the times, its output."""

    returncode: int
    timed_out: bool
    start_ns: int  # host CLOCK_MONOTONIC ns just before the supervisor was started
    end_ns: int  # ... just after it was seen to end
    stdout: bytes  # the last TAIL_BYTES
    stderr: bytes
    stdout_bytes: int  # everything the program wrote there
    stderr_bytes: int

    @property
    def seconds(self) -> float:
        """Wall time of the program, s."""
        return (self.end_ns - self.start_ns) / 1e9


class _Tail:
    """Reads a pipe to its end, keeping the last ``limit`` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self.pipe, self.limit = pipe, limit
        self.chunks: deque[bytes] = deque()
        self.kept = self.total = 0
        self.thread = threading.Thread(target=self._read, name="command-output", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        fd = self.pipe.fileno()
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self.total += len(chunk)
            self.chunks.append(chunk)
            self.kept += len(chunk)
            while self.kept - len(self.chunks[0]) >= self.limit:
                self.kept -= len(self.chunks.popleft())

    def result(self) -> bytes:
        self.thread.join(READER_JOIN_S)
        data = b"".join(self.chunks)
        return data[-self.limit :] if len(data) > self.limit else data


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the supervisor (and so the program's group): SIGTERM, then SIGKILL after ``GRACE_S``."""
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class _ExitWatch:
    """Waits for the supervisor to exit, waking as soon as it does: a pidfd (Linux 5.3+) polled
    with the timeout. ``Popen.wait(timeout)`` instead sleeps in steps of up to 50 ms, which added
    about 50 ms to every run (``benchmarks/bench_command.py``); it remains the fallback."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.fd: int | None = None
        try:
            self.fd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # not Linux, an old kernel, or a sandbox refusing it
            self.fd = None

    def within(self, seconds: float) -> bool:
        """Whether the supervisor exited (and was reaped) within ``seconds``."""
        if self.fd is None:
            try:
                self.proc.wait(seconds)
                return True
            except subprocess.TimeoutExpired:
                return False
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        if not poller.poll(max(0, math.ceil(seconds * 1000))):
            return False
        self.proc.wait()  # it has exited: reaped at once
        return True

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _Info:
    """The supervisor's reports on its pipe: the program's pid, and whether it finished cleaning up."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.data = b""

    def read(self) -> tuple[int | None, bool]:
        """(the program's pid or None, whether the supervisor said ``clean``); reads what is there, never blocks."""
        while True:
            try:
                chunk = os.read(self.fd, 4096)
            except BlockingIOError:
                break
            except OSError:
                break
            if not chunk:
                break
            self.data += chunk
        pid: int | None = None
        clean = False
        for line in self.data.decode("ascii", "replace").splitlines():
            if line.startswith("pid ") and line[4:].isdigit():
                pid = int(line[4:])
            clean = clean or line == "clean"
        return pid, clean

    def close(self) -> None:
        os.close(self.fd)


def _session_members(sid: int) -> list[int]:
    """Every process of session ``sid`` (``/proc``; empty without it)."""
    return [pid for pid, fields in process_stats() if len(fields) > 3 and int(fields[3]) == sid]


def _kill_program_tree(pid: int) -> None:
    """SIGKILL the program's process group and every process of its session (both have its pid as id)."""
    for _ in range(3):  # a process forking meanwhile is caught by the next round
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        members = _session_members(pid)
        for member in members:
            try:
                os.kill(member, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not members:
            return


def kill_tree(pid: int) -> None:
    """SIGKILL a running program's process group and session (``pid``: the program, as the supervisor
    reported it); the supervisor then kills its remaining descendants and ends as the program did."""
    _kill_program_tree(pid)


def run_program(
    argv: list[str],
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    on_tick: Callable[[], None] | None = None,
    tick_s: float = 0.05,
    on_pid: Callable[[int], None] | None = None,
) -> Finished:
    """Run ``argv`` in ``cwd`` with ``env`` (see the module doc); ``on_tick`` is called about every
    ``tick_s`` seconds while it runs, ``on_pid`` once with the program's pid as soon as the
    supervisor reports it. ``OSError`` when the supervisor itself cannot start."""
    start = time.monotonic_ns()
    info_read, info_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK) if hasattr(os, "pipe2") else os.pipe()
    os.set_blocking(info_read, False)
    info = _Info(info_read)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", SUPERVISOR, str(os.getpid()), str(info_write), *argv],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(info_write,),
        )
    except BaseException:
        info.close()
        raise
    finally:
        os.close(info_write)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Tail(proc.stdout, TAIL_BYTES), _Tail(proc.stderr, TAIL_BYTES)
    timed_out = False
    exited = _ExitWatch(proc)
    pid_told = on_pid is None
    try:
        deadline = start + int(timeout_s * 1e9)
        while True:
            left = (deadline - time.monotonic_ns()) / 1e9
            if left <= 0:
                timed_out = proc.poll() is None
                break
            ticking = on_tick is not None or not pid_told
            if exited.within(min(left, tick_s if pid_told else PID_POLL_S) if ticking else left):
                break
            if not pid_told:
                program, _ = info.read()
                if program is not None and on_pid is not None:
                    on_pid(program)
                    pid_told = True
            if on_tick is not None:
                on_tick()
    finally:
        exited.close()
        _stop(proc)
        end = time.monotonic_ns()
        program, clean = info.read()
        info.close()
        if program is not None and not clean:  # the supervisor was killed before it could clean up
            _kill_program_tree(program)
        stdout, stderr = out.result(), err.result()
        proc.stdout.close()
        proc.stderr.close()
    return Finished(proc.returncode, timed_out, start, end, stdout, stderr, out.total, err.total)
