"""Measure a notebook cell or your own training loop: energy with guaranteed bounds, per phase.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from collect.telemetry.analysis.bounds import EnergyEstimate
from collect.telemetry.analysis.energy import run_energy
from collect.telemetry.analysis.phases import PhaseEnergy
from collect.telemetry.analysis.resolution import update_period
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.base import Sensor, SensorError
from collect.telemetry.sensors.registry import open_sensor
from collect.traces.telemetry import Trace
from prereg.errors import InputError

#: the energy signals tried in order when none is named: the cumulative counter first
SIGNAL_PREFERENCE = ("energy_counter", "power_average", "power_usage", "power_instant")
POLL_MS_RANGE = (0.1, 60_000.0)


class MeasureError(InputError):
    """``collect.measure`` was used wrongly (a phase ended twice, a result read too early...)."""


@dataclass(frozen=True)
class Measured:
    """What a measurement found: energies in J (each with lower and upper bounds that contain the
    truth), durations and periods in ms, and the same summary dict a collected run's record holds."""

    signal: str
    evidence: str  # "measured" (a real meter) or "modeled" (the simulator, a modeled replay)
    energy: EnergyEstimate  # the whole measurement (from the end of an ``idle`` phase, if any)
    phases: dict[str, PhaseEnergy]  # every marked phase name: summed energy, duration, intervals, updates
    effective_period_ms: float | None  # how often the signal's value actually changed
    achieved_poll_ms: float | None  # median gap between polls
    metrics: dict[str, float]  # energy, energy_<phase> (J), idle_power (W), *_net: as a collected run's
    summary: dict[str, Any]  # the ledger's telemetry summary: updates, bound, metric_bounds, phases...


class Measurement:
    """The handle ``collect.measure`` returns (see the module doc); a context manager."""

    def __init__(
        self, sensor: str, signal: str | None = None, poll_ms: float = 10.0, mode: str = "auto", nice: int = 10
    ) -> None:
        if not isinstance(sensor, str) or not sensor.strip():
            raise MeasureError("collect.measure needs a sensor spec: 'nvml[:index=N]', 'sim:...' or 'replay:PATH'")
        lo, hi = POLL_MS_RANGE
        if not isinstance(poll_ms, (int, float)) or not lo <= poll_ms <= hi:
            raise MeasureError(f"poll_ms must be a number of ms from {lo:g} to {hi:g}, not {poll_ms!r}")
        if mode not in ("auto", "process", "thread"):
            raise MeasureError(f"mode must be 'auto', 'process' or 'thread', not {mode!r}")
        self.spec, self.poll_ms, self.mode, self.nice = sensor, float(poll_ms), mode, nice
        self.signal = signal
        self.sensor: Sensor | None = None
        self._rec: Recorder | None = None
        self._open: list[tuple[str, AbstractContextManager[Any]]] = []
        self._state = "new"  # new -> running -> done
        self._trace: Trace | None = None
        self._result: Measured | None = None

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Measurement:
        """Open the sensor and start polling (the first poll happens now)."""
        if self._state != "new":
            raise MeasureError("this measurement has already run; call collect.measure(...) again for another")
        sensor = open_sensor(self.spec)  # SensorError: unknown or unopenable spec
        try:
            signal = self.signal or _default_signal(sensor, self.spec)
            if signal not in sensor.signals():
                raise MeasureError(
                    f"sensor {self.spec!r} has no signal {signal!r}; it has {', '.join(sorted(sensor.signals()))}"
                )
            if signal in sensor.unavailable:
                raise MeasureError(f"sensor {self.spec!r} cannot read {signal} ({sensor.unavailable[signal]})")
            try:
                rec = Recorder(sensor, [signal], self.poll_ms, spec=self.spec, nice=self.nice, mode=self.mode)
            except ValueError as err:  # e.g. mode="process" for a sensor that must stay in-process
                raise MeasureError(f"sensor {self.spec!r}: {err}") from None
            rec.start()  # SensorError when the polling child cannot open its sensor
        except BaseException:
            sensor.close()
            raise
        self.sensor, self.signal, self._rec, self._state = sensor, signal, rec, "running"
        return self

    def stop(self) -> Measured:
        """Stop polling, close the sensor and summarise; ``MeasureError`` if a phase was left open
        (the sampler is stopped first, and the open phases end now)."""
        left_open = self._halt()
        if left_open:
            raise MeasureError(f"phase(s) {', '.join(repr(n) for n in left_open)} begun and never ended")
        return self.result()

    def _halt(self, quiet: bool = False) -> list[str]:
        """Stop the sampler and close the sensor, whatever happens; the names of phases left open.
        ``quiet``: a sensor error at stop is dropped (the block's own exception wins)."""
        if self._state != "running":
            raise MeasureError("this measurement is not running (start it with a with block or .start())")
        self._state = "done"
        rec, sensor = self._rec, self.sensor
        assert rec is not None and sensor is not None
        left_open = [name for name, _ in self._open]
        try:
            while self._open:
                self._open.pop()[1].__exit__(None, None, None)
            try:
                rec.stop()
            except SensorError:
                if not quiet:
                    raise
            self._trace = rec.trace()
        finally:
            sensor.close()
        return left_open

    def __enter__(self) -> Measurement:
        return self.start()

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.stop()
        elif self._state == "running":
            self._halt(quiet=True)

    # --- time and phases -------------------------------------------------------------------------
    def begin(self, name: str) -> None:
        """Begin phase ``name`` (nestable: end the inner one first)."""
        rec = self._running(f"begin phase {name!r}")
        if not isinstance(name, str) or not name.strip():
            raise MeasureError(f"a phase needs a non-empty name, not {name!r}")
        mark = rec.phase(name)
        mark.__enter__()
        self._open.append((name, mark))

    def end(self, name: str) -> None:
        """End phase ``name``: the innermost open phase (``MeasureError`` otherwise)."""
        self._running(f"end phase {name!r}")
        if not self._open or name not in [n for n, _ in self._open]:
            raise MeasureError(f"phase {name!r} is not open (never begun, or already ended)")
        inner = self._open[-1][0]
        if inner != name:
            raise MeasureError(
                f"phase {name!r} cannot end while {inner!r}, begun inside it, is open; end {inner!r} first"
            )
        self._open.pop()[1].__exit__(None, None, None)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """``with m.phase("compute"): ...``: :meth:`begin` on entry, :meth:`end` on exit (also when
        the block raises)."""
        self.begin(name)
        try:
            yield
        finally:
            if self._state == "running" and self._open and self._open[-1][0] == name:
                self.end(name)

    def advance(self, ms: float) -> None:
        """Let ``ms`` pass: on a virtual clock (``sim:clock=virtual``, ``replay:PATH``) polling at every
        deadline inside it; on a real clock, sleep."""
        rec = self._running("advance")
        if not isinstance(ms, (int, float)) or not ms >= 0:
            raise MeasureError(f"advance takes a duration of at least 0 ms, not {ms!r}")
        rec.advance(float(ms))

    def _running(self, what: str) -> Recorder:
        if self._state != "running" or self._rec is None:
            when = "before it started" if self._state == "new" else "after it ended"
            raise MeasureError(f"cannot {what} {when}: use it inside 'with collect.measure(...) as m:'")
        return self._rec

    # --- results ---------------------------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        """Every poll and the phases (after the block)."""
        if self._trace is None:
            raise MeasureError("the trace is ready once the measurement has ended (after its with block)")
        return self._trace

    @property
    def summary(self) -> dict[str, Any]:
        """The telemetry summary a collected run carries (see :class:`Measured`)."""
        return self.result().summary

    def result(self) -> Measured:
        """What the measurement found (computed once, after the block)."""
        if self._result is None:
            trace, sensor = self.trace, self.sensor
            assert sensor is not None and self.signal is not None
            names = [p.name for p in trace.phases]
            p_min, p_max = sensor.power_range_w()
            try:
                energy = run_energy(trace, self.signal, p_min, p_max, phases=names)
            except ValueError as err:
                raise MeasureError(f"nothing to summarise: {err}") from None
            assert energy.total is not None
            period = update_period(trace, self.signal)
            self._result = Measured(
                self.signal,
                energy.summary["evidence"],
                energy.total,
                {n: energy.phases[n] for n in dict.fromkeys(names)},
                period.effective_period_ms,
                period.achieved_poll_ms,
                energy.metrics,
                energy.summary,
            )
        return self._result


def _default_signal(sensor: Sensor, spec: str) -> str:
    """The first energy signal the sensor can read (:data:`SIGNAL_PREFERENCE`)."""
    for name in SIGNAL_PREFERENCE:
        if name in sensor.signals() and name not in sensor.unavailable:
            return name
    raise MeasureError(
        f"sensor {spec!r} offers no readable energy or power signal "
        f"({', '.join(SIGNAL_PREFERENCE)}); name one with signal="
    )


def measure(
    sensor: str = "nvml", signal: str | None = None, poll_ms: float = 10.0, mode: str = "auto", nice: int = 10
) -> Measurement:
    """A measurement of ``sensor`` (a spec as ``collect probe --sensor`` takes: ``nvml``,
    ``nvml:index=N``, ``sim:...``, ``replay:PATH``), polling ``signal`` (default: the energy
    counter, else a power signal) every ``poll_ms`` ms; use it as ``with collect.measure(...) as m:``
    (see the module doc). ``mode``: ``auto`` (a child process where the sensor allows, else a
    thread), ``process`` or ``thread``; ``nice``: the sampler's lowered priority (Linux)."""
    return Measurement(sensor, signal, poll_ms, mode, nice)
