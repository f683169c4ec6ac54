"""The out-of-process poller: a child process owns the sensor and polls it on its own clock.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import select
import signal
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from collect.telemetry.recording.parent_death import set_parent_death_signal
from collect.telemetry.sensors.base import SensorError
from collect.telemetry.sensors.registry import open_sensor

_MS = 1_000_000
#: spec kinds the child can open from their spec string (replay and virtual clocks stay in-process)
CHILD_KINDS = ("sim", "nvml")
JOIN_S = 10.0
#: the folder holding the ``collect`` package this module belongs to: the child imports the same code
_ROOT = str(Path(__file__).resolve().parents[3])
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from collect.telemetry.recording.sampler_main import main; main(int(sys.argv[2]))"
)


Columns = dict[str, list[Any]]


def _empty_columns() -> Columns:
    return {"signal": [], "t_before_ns": [], "t_after_ns": [], "value": [], "status": [], "driver_ts_us": []}


def child_main(
    conn: Connection, spec: str, signals: list[str], poll_ms: float, nice: int, t0: int | None, parent_pid: int
) -> None:
    """The child's whole life: open the sensor, poll until told to stop, send everything back."""
    set_parent_death_signal(signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent's Ctrl-C is the parent's to handle
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass

    try:
        sensor = open_sensor(spec)
    except SensorError as err:
        conn.send(("error", str(err)))
        return
    try:
        if t0 is not None and hasattr(sensor, "_t0"):
            sensor._t0 = t0  # the simulator's clock origin: one clock with the parent's phases
        conn.send(("ready", None))
        _poll_loop(conn, sensor, signals, poll_ms)
    finally:
        sensor.close()


def _poll_loop(conn: Connection, sensor: Any, signals: list[str], poll_ms: float) -> None:
    cols = _empty_columns()
    polls: list[int] = []
    hook = getattr(sensor, "set_phase", None)
    step = int(poll_ms * _MS)
    error: str | None = None
    next_ns = sensor.now_ns()
    c_sig, c_tb, c_ta = cols["signal"], cols["t_before_ns"], cols["t_after_ns"]
    c_val, c_st, c_drv = cols["value"], cols["status"], cols["driver_ts_us"]
    while True:
        while polls and _ready(conn):  # commands (rare, small) once the first poll is taken
            try:
                kind, arg = conn.recv()
            except (EOFError, OSError):  # the parent is gone
                return
            if kind == "phase" and hook is not None:
                hook(arg)
            elif kind == "snap":
                conn.send(("data", cols, polls, error))
            elif kind == "stop":
                conn.send(("data", cols, polls, error))
                return
        if error is not None:  # a read failed: wait for the parent to collect the error
            if not _wait(conn, None):
                return
            continue
        now = sensor.now_ns()
        if now < next_ns:
            # one wake-up per poll: select(2) sleeps to the microsecond (poll(2), behind
            # Connection.poll, only to whole ms), and a command or a closed pipe ends it at once
            if not _wait(conn, (next_ns - now) / 1e9):
                return
            continue
        polls.append(now)
        try:
            readings = sensor.read(signals)
        except SensorError as err:
            error = str(err)
            readings = []
        for r in readings:
            c_sig.append(r.signal)
            c_tb.append(r.t_before_ns)
            c_ta.append(r.t_after_ns)
            c_val.append(r.value)
            c_st.append(r.status)
            c_drv.append(r.driver_ts_us)
        next_ns += step
        now = sensor.now_ns()
        if next_ns <= now:  # late: poll again at once, but do not burst to catch up
            next_ns = now


def _ready(conn: Connection) -> bool:
    try:
        return conn.poll()
    except (EOFError, OSError):
        return True  # recv() then reports the closed pipe


def _wait(conn: Connection, timeout: float | None) -> bool:
    """Sleep until a command arrives or ``timeout`` s pass (microsecond resolution); False when
    the pipe is gone."""
    try:
        select.select([conn.fileno()], [], [], timeout)
    except (OSError, ValueError):  # a closed pipe
        return False
    return True


class ProcessPoller:
    """The parent's handle on the polling child (see the module doc)."""

    def __init__(self, spec: str, signals: list[str], poll_ms: float, nice: int = 10, t0: int | None = None) -> None:
        self.spec, self.signals, self.poll_ms, self.nice, self.t0 = spec, list(signals), poll_ms, nice, t0
        self._conn: Connection | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.columns: Columns = _empty_columns()
        self.poll_ns: list[int] = []
        self.error: str | None = None

    def start(self) -> None:
        """Start the child and wait until its sensor is open (``SensorError`` if it cannot be)."""
        parent, child = mp.Pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, _ROOT, str(child.fileno())],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError as err:
            parent.close()
            raise SensorError(f"cannot start the telemetry sampler for {self.spec!r}: {err}") from None
        finally:
            child.close()
        self._conn, self._proc = parent, proc
        try:
            parent.send((self.spec, self.signals, self.poll_ms, self.nice, self.t0, os.getpid()))
            kind, arg = parent.recv()
        except (EOFError, OSError):
            self._finish()
            raise SensorError(f"telemetry sampler for {self.spec!r} exited before opening the sensor") from None
        if kind == "error":
            self._finish()
            raise SensorError(str(arg))

    def phase(self, name: str) -> None:
        """Tell the child's sensor the phase changed (only sensors with a ``set_phase`` hook)."""
        if self._conn is not None:
            self._conn.send(("phase", name))

    def _collect(self, command: str) -> None:
        assert self._conn is not None
        try:
            self._conn.send((command, None))
            _, cols, polls, error = self._conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self.error = self.error or f"telemetry sampler for {self.spec!r} died"
            return
        self.columns, self.poll_ns, self.error = cols, polls, error

    def snapshot(self) -> None:
        """Fetch what was recorded so far (while running)."""
        if self._conn is not None:
            self._collect("snap")

    def stop(self) -> None:
        """Collect everything, join the child; raises ``SensorError`` if a read failed there."""
        if self._conn is not None:
            self._collect("stop")
            self._finish()
        if self.error is not None:
            raise SensorError(self.error)

    def _finish(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            try:
                self._proc.wait(JOIN_S)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
