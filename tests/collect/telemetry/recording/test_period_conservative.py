"""The effective update period never flatters the meter: late, long polls (a loaded host) can only
make it look longer than the true period, and an idle host still reads it within a poll interval.

No wall clock: the polls are drawn from seeded distributions, or the sampler's own loop is driven
by a fake clock (the simulator's virtual one) whose wake-ups and reads a loaded host makes late.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collect.telemetry.analysis.resolution import update_period
from collect.telemetry.recording import sampler
from collect.telemetry.recording.probe import probe_sentence, probe_trace
from collect.telemetry.recording.recorder import trace_from_columns
from collect.telemetry.sensors.base import Reading, SignalInfo
from collect.telemetry.sensors.sim import SimSensor
from collect.traces.telemetry import Trace

PERIOD_MS = 50.0
_MS = 1_000_000
COUNTER = {"energy_counter": SignalInfo("energy_counter", "mJ", "counter", "modeled")}
GAUGE = {"power_average": SignalInfo("power_average", "W", "gauge", "modeled")}


def polled_meter(
    seed: int,
    poll_ms: float,
    late_ms: float,
    stall_p: float,
    read_ms: float,
    seconds: float = 6.0,
    unchanged_p: float = 0.0,
) -> Trace:
    """A meter updating every 50 ms (from a random phase), polled as the sampler polls (fixed
    deadlines, a late poll taken at once without bursts) on a host that wakes the poller late
    (exponential, mean ``late_ms``; with probability ``stall_p`` a stall of up to 400 ms) and
    makes each read take up to ``read_ms`` (the value is the one at a random instant inside it).
    With ``unchanged_p`` an update leaves the value unchanged (a gauge that repeats itself)."""
    rng = np.random.default_rng(seed)
    offset_ns = int(rng.uniform(0, PERIOD_MS) * _MS)
    period_ns = int(PERIOD_MS * _MS)
    n_updates = int(seconds * 1000 / PERIOD_MS) + 1000  # the last poll may start late: room for 50 s more
    steps = np.where(rng.random(n_updates) < unchanged_p, 0.0, 1.0 + rng.random(n_updates))
    values = np.cumsum(steps)  # the value after each update (a repeat where the step is 0)
    step_ns, end_ns = int(poll_ms * _MS), int(seconds * 1e9)
    polls, before, after, value = [], [], [], []
    now = next_ns = 0
    while now < end_ns:
        now = max(now, next_ns) + int(rng.exponential(late_ms) * _MS if late_ms else 0)
        if rng.random() < stall_p:
            now += int(rng.uniform(0, 400) * _MS)
        polls.append(now)
        took = int(rng.uniform(0.02, max(read_ms, 0.02)) * _MS)
        seen = now + int(rng.uniform(0, 1) * took)
        k = (seen - offset_ns) // period_ns  # the last update at or before the instant read
        before.append(now)
        after.append(now + took)
        value.append(0.0 if k < 0 else float(values[k]))
        now += took
        next_ns += step_ns
        if next_ns <= now:
            next_ns = now
    n = len(polls)
    return Trace(
        signal=np.array(["energy_counter"] * n, dtype=object),
        t_before_ns=np.array(before, dtype=np.int64),
        t_after_ns=np.array(after, dtype=np.int64),
        value=np.array(value),
        status=np.array(["ok"] * n, dtype=object),
        driver_ts_us=np.full(n, np.nan),
        signals=COUNTER,
        requested_poll_ms=poll_ms,
        poll_ns=np.array(polls, dtype=np.int64),
        sensor="synthetic",
        evidence="modeled",
    )


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    poll_ms=st.floats(1, 60),
    late_ms=st.floats(0, 60),
    stall_p=st.floats(0, 0.3),
    read_ms=st.floats(0, 45),
)
def test_a_loaded_host_never_reads_a_50_ms_meter_below_50_ms(seed, poll_ms, late_ms, stall_p, read_ms) -> None:
    trace = polled_meter(seed, poll_ms, late_ms, stall_p, read_ms, seconds=4.0)
    estimate = update_period(trace, "energy_counter")
    assert estimate.updates >= 2
    assert estimate.effective_period_ms is not None and estimate.effective_period_ms >= PERIOD_MS, estimate


@pytest.mark.parametrize("poll_ms", [1.0, 5.0, 13.0, 20.0, 45.0])
@pytest.mark.parametrize("unchanged_p", [0.0, 0.05])
def test_an_idle_host_reads_the_period_within_a_poll_interval(poll_ms: float, unchanged_p: float) -> None:
    """Polls on time and 20 us reads: the estimate is the period within one poll interval, and an
    occasional update that left the value unchanged is still counted (not read as a longer period)."""
    for seed in range(10):
        trace = polled_meter(seed, poll_ms, 0.0, 0.0, 0.0, seconds=4.0, unchanged_p=unchanged_p)
        estimate = update_period(trace, "energy_counter")
        assert estimate.effective_period_ms is not None and estimate.period_lower_ms is not None
        assert PERIOD_MS <= estimate.effective_period_ms <= PERIOD_MS + poll_ms, (seed, estimate)
        if unchanged_p == 0.0:  # every update seen: the true period lies between the two ends
            assert estimate.period_lower_ms <= PERIOD_MS


def test_fewer_than_two_changes_give_no_period() -> None:
    trace = polled_meter(0, 5.0, 0.0, 0.0, 0.0, seconds=0.06)
    estimate = update_period(trace, "energy_counter")
    assert estimate.updates <= 1 and estimate.effective_period_ms is None and estimate.period_lower_ms is None


class LoadedHostSensor:
    """The simulator on its virtual clock, read by a loaded host: the thread is descheduled for a
    random time before and after each read (the reading's window spans both)."""

    def __init__(self, sim: SimSensor, rng: np.random.Generator, read_ms: float) -> None:
        self.sim, self.rng, self.read_ms = sim, rng, read_ms
        self.virtual = True

    def now_ns(self) -> int:
        return self.sim.now_ns()

    def read(self, signals: list[str]) -> list[Reading]:
        before = self.sim.now_ns()
        self.sim.advance(int(self.rng.uniform(0, self.read_ms) * _MS))
        inner = self.sim.read(signals)
        self.sim.advance(int(self.rng.uniform(0, self.read_ms) * _MS))
        after = self.sim.now_ns()
        return [Reading(r.signal, before, after, r.value, r.unit, r.status, r.driver_ts_us) for r in inner]


class FakeConn:
    """The parent's end of the pipe as the poll loop sees it: ``stop`` once the fake clock passes ``end_ns``."""

    def __init__(self, sensor: LoadedHostSensor, end_ns: int) -> None:
        self.sensor, self.end_ns = sensor, end_ns
        self.sent: list[Any] = []

    def poll(self) -> bool:
        return self.sensor.now_ns() >= self.end_ns

    def recv(self) -> tuple[str, None]:
        return ("stop", None)

    def send(self, message: Any) -> None:
        self.sent.append(message)


@pytest.mark.parametrize("seed", range(8))
def test_the_sampler_on_a_loaded_fake_clock_never_flatters_the_meter(seed: int, monkeypatch) -> None:
    """The sampler's own poll loop (the child's) asked for 5 ms polls of a 50 ms meter, on a fake
    clock where every wake-up is late (up to 60 ms) and every read is descheduled (up to 2 x 20 ms):
    the period it records is never read below 50 ms, by the analysis or by ``collect probe``."""
    rng = np.random.default_rng(seed)
    sim = SimSensor(clock="virtual", update_ms=PERIOD_MS, counter_update_ms=PERIOD_MS, window_ms=25, seed=seed)
    sensor = LoadedHostSensor(sim, rng, read_ms=20.0)

    def late_wake(conn: object, timeout: float | None) -> bool:
        """select(2) on a loaded host: sleeps the timeout, then waits for a core."""
        sim.advance(int((timeout or 0.0) * 1e9) + int(rng.exponential(15.0) * _MS) + int(rng.uniform(0, 45) * _MS))
        return True

    monkeypatch.setattr(sampler, "_wait", late_wake)
    conn = FakeConn(sensor, end_ns=8_000 * _MS)
    signals = ["energy_counter", "power_average", "power_instant"]
    sampler._poll_loop(conn, sensor, signals, 5.0)  # type: ignore[arg-type]
    ((kind, cols, polls, error),) = conn.sent
    assert kind == "data" and error is None and len(polls) > 50
    trace = trace_from_columns(cols, sim.signals(), 5.0, polls, [], "sim:clock=virtual", "modeled")
    gaps_ms = np.diff(trace.poll_ns) / _MS
    assert np.median(gaps_ms) > 5.0 * 2  # the host really was loaded: polls far slower than asked
    for signal in signals:
        estimate = update_period(trace, signal)
        assert estimate.updates > 20
        assert estimate.effective_period_ms is not None and estimate.effective_period_ms >= PERIOD_MS, estimate
    for probe in probe_trace(trace, {}):
        assert probe.effective_period_ms is not None and probe.effective_period_ms >= PERIOD_MS
        assert f"an update every {probe.effective_period_ms:.4g} ms at most" in probe_sentence(probe)
