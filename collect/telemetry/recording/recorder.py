"""The recorder: poll a sensor at a requested interval, keep every poll, mark phases.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from collect.telemetry.analysis.bounds import ledger_summary
from collect.telemetry.recording.sampler import CHILD_KINDS, ProcessPoller
from collect.telemetry.sensors.base import Reading, Sensor, SensorError
from collect.traces.telemetry import Phase, Trace

_MS = 1_000_000


class Recorder:
    """See the module doc. ``poll_ms`` is the requested poll interval in milliseconds."""

    def __init__(
        self, sensor: Sensor, signals: Sequence[str], poll_ms: float, spec: str = "", nice: int = 10, mode: str = "auto"
    ) -> None:
        if mode not in ("auto", "process", "thread"):
            raise ValueError("mode must be 'auto', 'process' or 'thread'")
        if not poll_ms > 0:
            raise ValueError("poll_ms must be > 0")
        known = sensor.signals()
        unknown = [s for s in signals if s not in known]
        if unknown:
            raise KeyError(f"unknown signal(s) {unknown}; this sensor has {sorted(known)}")
        self.sensor = sensor
        self.signals = list(signals)
        self.poll_ms = float(poll_ms)
        self.nice = nice
        self.spec = spec
        self.virtual = bool(getattr(sensor, "virtual", False))
        self._readings: list[Reading] = []
        self._poll_ns: list[int] = []
        self._phases: list[Phase] = []
        self._depth = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_ns = 0
        can_child = spec.partition(":")[0] in CHILD_KINDS and not self.virtual
        if mode == "process" and not can_child:
            raise ValueError(f"sensor {spec!r} cannot be polled from a child process")
        self.mode = "process" if can_child and mode != "thread" else ("virtual" if self.virtual else "thread")
        self._child: ProcessPoller | None = None
        self._columns: dict[str, list[Any]] | None = None  # what the child recorded

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Recorder:
        """Begin polling (a background thread on a real clock; the first poll happens now)."""
        self._next_ns = self.sensor.now_ns()
        if self.virtual:
            self._poll_once()
            return self
        if self.mode == "process":
            child = ProcessPoller(self.spec, self.signals, self.poll_ms, self.nice, getattr(self.sensor, "_t0", None))
            child.start()  # SensorError when the child cannot open the sensor (it is joined)
            self._child = child
            return self
        self._thread = threading.Thread(target=self._loop, name="telemetry-recorder", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop polling (joins the thread or the child; ``SensorError`` if the child's read failed)."""
        self._stop.set()
        if self._child is not None:
            child, self._child = self._child, None
            try:
                child.stop()
            finally:
                self._poll_ns = list(child.poll_ns)
                self._columns = child.columns
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.stop()
            return
        try:  # the block's own exception wins over a sensor error reported at stop
            self.stop()
        except SensorError:
            pass

    def _poll_once(self) -> None:
        self._poll_ns.append(self.sensor.now_ns())
        readings = self.sensor.read(self.signals)
        self._readings.extend(readings)
        self._next_ns += int(self.poll_ms * _MS)
        if self.virtual and readings:  # a slow meter's answer comes later: the poller waits for it,
            answered = max(r.t_after_ns for r in readings)  # and does not burst to catch up
            self._next_ns = max(self._next_ns, answered)

    def _loop(self) -> None:
        if self.nice:
            try:  # Linux: a thread has its own nice value; the training thread keeps priority
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)
            except (AttributeError, OSError):
                pass
        while not self._stop.is_set():
            self._poll_once()
            now = self.sensor.now_ns()
            if self._next_ns <= now:  # late: poll again at once, but do not burst to catch up
                self._next_ns = now
                continue
            self._stop.wait((self._next_ns - now) / 1e9)

    # --- time and phases -------------------------------------------------------------------------
    def advance(self, ms: float) -> None:
        """Let ``ms`` pass: on a virtual clock, step through it polling at every deadline."""
        if not self.virtual:
            time.sleep(ms / 1e3)
            return
        end = self.sensor.now_ns() + int(ms * _MS)
        while self._next_ns <= end:
            now = self.sensor.now_ns()
            if self._next_ns > now:
                self.sensor.advance(self._next_ns - now)  # type: ignore[attr-defined]
            self._poll_once()
        now = self.sensor.now_ns()
        if end > now:
            self.sensor.advance(end - now)  # type: ignore[attr-defined]

    @contextmanager
    def phase(self, name: str) -> Iterator[Phase]:
        """Mark a phase (nestable); the sensor's ``set_phase`` hook is told on entry and exit."""
        hook = getattr(self.sensor, "set_phase", None)
        mark = Phase(name, self.sensor.now_ns(), -1, self._depth)
        self._phases.append(mark)
        self._depth += 1
        if hook:
            hook(name)
            if self._child is not None:
                self._child.phase(name)
        try:
            yield mark
        finally:
            mark.end_ns = self.sensor.now_ns()
            self._depth -= 1
            if hook:
                after = self._open_phase_name() or "idle"
                hook(after)
                if self._child is not None:
                    self._child.phase(after)

    def hint(self, name: str) -> None:
        """Tell the sensor's ``set_phase`` hook (and the polling child's) that the load is now phase
        ``name``'s, without marking a phase: for phases marked elsewhere and added to the trace
        afterwards (a ``command`` run's marks file). A real GPU ignores it, as it ignores phases."""
        hook = getattr(self.sensor, "set_phase", None)
        if hook:
            hook(name)
            if self._child is not None:
                self._child.phase(name)

    def _open_phase_name(self) -> str | None:
        open_phases = [p for p in self._phases if p.end_ns < 0]
        return open_phases[-1].name if open_phases else None

    # --- results ---------------------------------------------------------------------------------
    def trace(self) -> Trace:
        """Everything recorded so far (call after :meth:`stop` for a complete trace)."""
        phases = [Phase(p.name, p.start_ns, p.end_ns, p.depth) for p in self._phases]
        if self._child is not None:
            self._child.snapshot()
            self._poll_ns, self._columns = list(self._child.poll_ns), self._child.columns
        if self._columns is not None:
            trace = trace_from_columns(
                self._columns,
                self.sensor.signals(),
                self.poll_ms,
                self._poll_ns,
                phases,
                self.spec,
                self.sensor.evidence,
            )
        else:
            trace = Trace.from_readings(
                list(self._readings),
                self.sensor.signals(),
                self.poll_ms,
                list(self._poll_ns),
                [Phase(p.name, p.start_ns, p.end_ns, p.depth) for p in self._phases],
                self.spec,
                self.sensor.evidence,
            )
        trace.power_range_w = self.sensor.power_range_w()
        return trace

    def ledger_summary(self, signal: str = "energy_counter", joules_per_unit: float = 1.0) -> dict[str, object]:
        """The ledger's telemetry summary of ``signal`` over the whole recording (see
        :func:`collect.telemetry.analysis.bounds.ledger_summary`), with the sensor's power range."""
        trace = self.trace()
        if trace.poll_ns.size == 0:
            raise ValueError("nothing recorded yet")
        p_min, p_max = self.sensor.power_range_w()
        end = int(max(trace.t_after_ns.max(initial=0), trace.poll_ns[-1]))
        return ledger_summary(trace, signal, int(trace.poll_ns[0]), end, p_min, p_max, joules_per_unit)

    def achieved_poll_ms(self) -> tuple[float | None, float | None]:
        """Median and 95th percentile of the achieved poll interval (ms), or None before 2 polls."""
        starts = np.array(self._poll_ns, dtype=np.int64)
        if starts.size < 2:
            return None, None
        gaps = np.diff(starts) / _MS
        return float(np.median(gaps)), float(np.percentile(gaps, 95))


def trace_from_columns(
    cols: dict[str, list[Any]],
    signals: dict[str, Any],
    requested_poll_ms: float,
    poll_ns: list[int],
    phases: list[Phase],
    sensor: str,
    evidence: str,
) -> Trace:
    """The Trace of the child's columns (the same arrays :meth:`Trace.from_readings` builds)."""

    def floats(values: list[Any]) -> np.ndarray:
        return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

    return Trace(
        signal=np.array(cols["signal"], dtype=object),
        t_before_ns=np.array(cols["t_before_ns"], dtype=np.int64),
        t_after_ns=np.array(cols["t_after_ns"], dtype=np.int64),
        value=floats(cols["value"]),
        status=np.array(cols["status"], dtype=object),
        driver_ts_us=floats(cols["driver_ts_us"]),
        signals=signals,
        requested_poll_ms=requested_poll_ms,
        poll_ns=np.array(poll_ns, dtype=np.int64),
        phases=phases,
        sensor=sensor,
        evidence=evidence,
    )
