"""The logger-calibration invalidator fires where the logger cannot keep its requested rate, and
only there: energy study 1's meter answers too slowly for its 20 ms polls (so it fires, as the seed
study's logger could not keep its rate), study 2's keeps them; the achieved interval over the worst
stretch catches a logger that fell behind for a stretch, which the median hides, and is not fooled
by single late polls of a logger that kept its schedule."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from collect.ledger.records import TelemetrySummary
from collect.telemetry.analysis.energy import run_energy
from collect.telemetry.analysis.resolution import achieved_poll_worst
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.base import SensorError
from collect.telemetry.sensors.registry import open_sensor
from collect.telemetry.sensors.sim import SimSensor
from gates.invalidators import check_invalidators, logger_ratio
from prereg.plan import load_plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
_MS = 1_000_000


def _recorded_summary(params: dict) -> dict:
    """One run's telemetry summary as torch.multisite records it, with the plan's sensor and poll
    interval: an idle baseline, then compute with a checkpoint, on the sensor's virtual clock."""
    spec, signal = params["sensor"], params["energy_signal"]
    sensor = open_sensor(spec)
    rec = Recorder(sensor, [signal], params["poll_ms"], spec=spec)
    with rec:
        for phase, ms in (("idle", 2000), ("compute", 3000), ("checkpoint", 600), ("compute", 1500)):
            with rec.phase(phase):
                rec.advance(ms)
    p_min, p_max = sensor.power_range_w()
    summary = run_energy(rec.trace(), signal, p_min, p_max).summary
    sensor.close()
    return summary


def _logger_check(study: str):
    plan = load_plan(EXAMPLES / f"{study}.yaml").plan
    params = plan.experiment.params  # type: ignore[union-attr]
    summary = TelemetrySummary(**_recorded_summary(params))
    runs = [
        SimpleNamespace(run_id=f"r{i}", telemetry={params["energy_signal"]: summary}, metric=lambda name: None)
        for i in range(3)
    ]
    checks = {c.id: c for c in check_invalidators(plan, SimpleNamespace(records=lambda: runs))}  # type: ignore[arg-type]
    return checks["logger_keeps_up"], summary


def test_study1_logger_cannot_keep_20_ms_and_the_invalidator_fires() -> None:
    check, summary = _logger_check("energy-study1")
    assert summary.requested_poll_ms == 20.0
    assert summary.achieved_poll_ms == pytest.approx(45.0, rel=0.01)  # the meter answers every 45 ms
    assert check.fired and check.observed == pytest.approx(2.25, rel=0.01) and check.threshold == 1.5
    assert "achieved / requested poll interval above 1.5x" in check.detail
    assert "total_interaction" in check.blocks and "sparse_keeps_learning" not in check.blocks


def test_study2_logger_keeps_its_rate_and_the_invalidator_holds() -> None:
    check, summary = _logger_check("energy-study2")
    assert summary.achieved_poll_ms == pytest.approx(summary.requested_poll_ms, rel=0.01)
    assert not check.fired and check.observed == pytest.approx(1.0, rel=0.01)


def _summary(**fields: float | None) -> TelemetrySummary:
    return TelemetrySummary(updates=100, effective_period_ms=100.0, bound=1.0, evidence="modeled", **fields)


def test_the_ratio_prefers_the_worst_stretch_when_recorded() -> None:
    assert logger_ratio(_summary(requested_poll_ms=20.0, achieved_poll_ms=30.0)) == pytest.approx(1.5)
    assert logger_ratio(_summary(requested_poll_ms=20.0)) is None
    assert logger_ratio(_summary(achieved_poll_ms=20.0)) is None
    stalled = SimpleNamespace(requested_poll_ms=20.0, achieved_poll_ms=20.0, achieved_poll_worst_ms=80.0)
    assert logger_ratio(stalled) == pytest.approx(4.0)  # type: ignore[arg-type]


def _schedule(
    rng: np.random.Generator, poll_ms: float, seconds: float, late_ms: float, stall: tuple[float, float] | None = None
) -> np.ndarray:
    """Poll starts of the sampler's schedule (fixed deadlines, a late poll taken at once, no
    bursts), each wake-up late by up to ``late_ms``; ``stall``: (start, length) in ms of a stretch
    in which the logger got no CPU at all."""
    step, polls, next_ns, now = int(poll_ms * _MS), [], 0, 0
    while now < seconds * 1e9:
        now = max(now, next_ns) + int(rng.uniform(0, late_ms) * _MS)
        if stall is not None and stall[0] * _MS <= now < (stall[0] + stall[1]) * _MS:
            now = int((stall[0] + stall[1]) * _MS)
        polls.append(now)
        now += 20_000  # the read
        next_ns += step
        if next_ns <= now:
            next_ns = now
    return np.array(polls, dtype=np.int64)


def test_the_worst_stretch_sees_a_stall_the_median_hides_and_ignores_jitter() -> None:
    rng = np.random.default_rng(5)
    kept = _schedule(rng, 20.0, 20.0, late_ms=19.0)  # every poll up to 19 ms late: the schedule holds
    gaps = np.diff(kept) / _MS
    assert np.percentile(gaps, 95) > 30.0  # single gaps are far from 20 ms ...
    assert achieved_poll_worst(kept, 20.0) < 21.0  # ... but the logger kept its rate over every stretch
    stalled = _schedule(rng, 20.0, 20.0, late_ms=1.0, stall=(8000.0, 900.0))  # no poll for 0.9 s
    assert np.median(np.diff(stalled) / _MS) < 21.0  # the median hides it
    assert achieved_poll_worst(stalled, 20.0) > 1.5 * 20.0
    assert achieved_poll_worst(stalled[:5], 20.0) == pytest.approx(np.diff(stalled[:5]).mean() / _MS)
    assert achieved_poll_worst(stalled[:1], 20.0) is None


def test_a_slow_meter_holds_up_the_poller_not_the_workload() -> None:
    """On the virtual clock, a meter answering in 45 ms makes the 20 ms poller fall behind (every
    poll waits for the previous answer, no bursts to catch up) while the workload's phases keep
    their length: the same clock and phases as with a prompt meter."""
    clocks, phases, polls = [], [], []
    for latency in (0, 45):
        sensor = SimSensor(clock="virtual", signals="power_average", update_ms=495, read_latency_ms=latency)
        rec = Recorder(sensor, ["power_average"], 20.0)
        with rec:
            with rec.phase("compute"):
                rec.advance(3000)
        trace = rec.trace()
        clocks.append(sensor.now_ns())
        phases.append([(p.start_ns, p.end_ns) for p in trace.phases])
        polls.append(np.diff(trace.poll_ns) / _MS)
        rows = trace.rows("power_average")
        assert np.all(rows["t_after_ns"] - rows["t_before_ns"] >= latency * _MS)  # the answer came that late
    assert clocks[0] == clocks[1] and phases[0] == phases[1]
    assert np.allclose(polls[0], 20.0) and np.all(polls[1] >= 45.0) and np.all(polls[1] < 45.1)


@pytest.mark.parametrize("value", [-1.0, 60_001.0])
def test_read_latency_out_of_range_is_refused(value: float) -> None:
    with pytest.raises(SensorError, match="read_latency_ms"):
        SimSensor(clock="virtual", read_latency_ms=value)
