"""The collector's side of a run's planned faults: the progress socket, and the faults fired.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field

from collect.collectors.command.process import kill_tree
from collect.collectors.command.supervisor import process_stats

PID_WAIT_S = 10.0  # a report that comes before the program's pid is known waits this long for it
MAX_LINE = 256


@dataclass(slots=True)
class Report:
    """One progress report: host monotonic ns, the attempt, and what it said."""

    t_ns: int
    attempt: int
    kind: str  # "step" or "resumed"
    step: int
    tokens: int | None = None
    loss: float | None = None


@dataclass
class Fault:
    """A planned fault: its point (in the plan's unit) and, once fired, what happened."""

    index: int
    planned: float
    fired_ns: int | None = None
    attempt: int | None = None
    step: int | None = None  # the program's reported progress when it fired
    killed: bool = False  # the kill reached a live process
    detail: str = ""


def parse_report(line: str) -> tuple[str, int, int | None, float | None] | None:
    fields = line.split()
    if len(fields) < 2 or fields[0] not in ("step", "resumed") or not fields[1].isdigit():
        return None
    tokens: int | None = None
    loss: float | None = None
    for extra in fields[2:]:
        key, _, value = extra.partition("=")
        try:
            if key == "tokens" and value.isdigit():
                tokens = int(value)
            elif key == "loss":
                loss = float(value)
            else:
                return None
        except ValueError:
            return None
    return fields[0], int(fields[1]), tokens, loss


def rank_process(root: int, rank: int) -> int | None:
    """The process of ``root``'s tree (itself included) whose environment has ``RANK=<rank>``."""
    children: dict[int, list[int]] = {}
    for pid, fields in process_stats():
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(pid)
    todo, wanted = [root], f"RANK={rank}".encode()
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if wanted in fh.read().split(b"\0"):
                    return pid
        except OSError:
            pass
        todo.extend(children.get(pid, []))
    return None


@dataclass
class FaultInjector:
    """Serves one run's progress socket and fires its planned faults (see the module doc); a context manager."""

    planned: list[float]
    unit: str = "step"
    action: str = "kill_tree"
    rank: int = 0
    reports: list[Report] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.faults = [Fault(i, p) for i, p in enumerate(self.planned)]
        self.folder = tempfile.mkdtemp(prefix="prereg-progress-")
        self.path = os.path.join(self.folder, "progress.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        self.server.listen(16)
        self.lock = threading.Lock()
        self.attempt = 0
        self.origin_ns = 0  # the run's first start
        self.pid: int | None = None
        self.pid_known = threading.Event()
        self.closed = False
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, name="command-progress", daemon=True).start()

    def __enter__(self) -> FaultInjector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving; remove the socket's folder (idempotent)."""
        with self.lock:
            self.closed = True
            conns, self.conns = self.conns, []
        for conn in conns:
            conn.close()
        self.server.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def begin_attempt(self, attempt: int, start_ns: int) -> None:
        """A start of the program begins (its pid is not known yet)."""
        with self.lock:
            self.attempt = attempt
            self.origin_ns = self.origin_ns or start_ns
            self.pid = None
            self.pid_known.clear()

    def set_pid(self, pid: int) -> None:
        """The running program's pid (its process group's id)."""
        with self.lock:
            self.pid = pid
        self.pid_known.set()

    @property
    def next_fault(self) -> Fault | None:
        return next((f for f in self.faults if f.fired_ns is None), None)

    def tick(self) -> None:
        """Fire a time-based fault that is due (``unit: s``)."""
        fault = self.next_fault
        if self.unit != "s" or fault is None or self.pid is None:
            return
        if (time.monotonic_ns() - self.origin_ns) / 1e9 >= fault.planned:
            self._fire(fault)

    def _last_step(self) -> int | None:
        mine = [r.step for r in self.reports if r.attempt == self.attempt and r.kind == "step"]
        return mine[-1] if mine else None

    def _fire(self, fault: Fault) -> None:
        with self.lock:
            if fault.fired_ns is not None or self.pid is None:
                return
            fault.fired_ns, fault.attempt, fault.step = time.monotonic_ns(), self.attempt, self._last_step()
            pid = self.pid
        if self.action == "kill_tree":
            try:
                os.kill(pid, 0)
                fault.killed = True
            except (ProcessLookupError, PermissionError):
                fault.detail = "the program had already ended"
            kill_tree(pid)
            return
        target = rank_process(pid, self.rank)
        if target is None:
            fault.detail = f"no process of the program had RANK={self.rank}"
            return
        try:
            os.kill(target, signal.SIGKILL)
            fault.killed = True
            fault.detail = f"killed pid {target} (RANK={self.rank})"
        except (ProcessLookupError, PermissionError) as err:
            fault.detail = f"RANK={self.rank} (pid {target}) could not be killed: {err}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with self.lock:
                if self.closed:
                    conn.close()
                    return
                self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="command-progress-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        while True:
            try:
                chunk = conn.recv(4096)
            except OSError:
                return
            if not chunk:
                return
            data += chunk
            while b"\n" in data:
                raw, data = data.split(b"\n", 1)
                if not self._report(raw.decode("ascii", "replace")):
                    return  # a fault ended the program: no answer
                try:
                    conn.sendall(b"k")
                except OSError:
                    return
            if len(data) > MAX_LINE:
                return

    def _report(self, line: str) -> bool:
        """Record one report; fire a step fault it reaches. Whether to answer (False: the program was killed)."""
        parsed = parse_report(line)
        if parsed is None:
            return True
        kind, step, tokens, loss = parsed
        with self.lock:
            self.reports.append(Report(time.monotonic_ns(), self.attempt, kind, step, tokens, loss))
        fault = self.next_fault
        if self.unit != "step" or kind != "step" or fault is None or step < fault.planned:
            return True
        self.pid_known.wait(PID_WAIT_S)
        self._fire(fault)
        return not (self.action == "kill_tree" and fault.killed)
