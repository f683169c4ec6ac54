"""Phase energies: the bounds contain the simulated sensor's true energy, for counters and power-only meters."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collect.telemetry.analysis.energy import run_energy
from collect.telemetry.analysis.phases import intervals_of, phase_energy_total, run_phase_energies
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.sim import SimSensor, spec_signals

PHASES = ("compute", "replay", "checkpoint", "restore", "stall")
METERS = {
    "counter": ("energy_counter", {"counter_update_ms": 100.0}),
    "power_average": ("power_average", {"signals": "power_average", "update_ms": 100.0, "window_ms": 100.0}),
    "sparse_power": ("power_average", {"signals": "power_average", "update_ms": 495.0, "window_ms": 25.0}),
    "instant": ("power_instant", {"signals": "power_instant", "update_ms": 50.0}),
}


def _record(meter: str, schedule: list[tuple[str, float]], idle_ms: float, poll_ms: float, seed: int):
    signal, options = METERS[meter]
    sensor = SimSensor(clock="virtual", noise_w=20.0, seed=seed, **options)
    rec = Recorder(sensor, [signal], poll_ms)
    with rec:
        if idle_ms:
            with rec.phase("idle"):
                rec.advance(idle_ms)
        for name, ms in schedule:
            with rec.phase(name):
                rec.advance(ms)
    return sensor, signal, rec.trace()


schedules = st.lists(st.tuples(st.sampled_from(PHASES), st.floats(5.0, 900.0)), min_size=1, max_size=25)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    meter=st.sampled_from(sorted(METERS)),
    schedule=schedules,
    idle_ms=st.sampled_from([0.0, 300.0, 2000.0]),
    poll_ms=st.sampled_from([1.0, 7.0, 20.0]),
    seed=st.integers(0, 2**16),
)
def test_phase_bounds_contain_the_true_phase_energy(meter, schedule, idle_ms, poll_ms, seed):
    sensor, signal, trace = _record(meter, schedule, idle_ms, poll_ms, seed)
    p_min, p_max = sensor.power_range_w()
    phases = run_phase_energies(trace, signal, p_min, p_max)
    for name, pe in phases.items():
        spans = intervals_of(trace, name)
        truth = sum(sensor.true_energy_j(a, b) for a, b in spans)
        e = pe.energy
        slack = 1e-9 * max(1.0, abs(truth))
        assert e.lower_j - slack <= truth <= e.upper_j + slack, (name, e, truth)
        assert e.lower_j - slack <= e.estimate_j <= e.upper_j + slack
        assert pe.intervals == len(spans)
        assert math.isclose(pe.duration_ms, sum(b - a for a, b in spans) / 1e6)
    # the run's summary bounds each energy metric and the bounds are the same function's
    energy = run_energy(trace, signal, p_min, p_max)
    start = intervals_of(trace, "idle")[-1][1] if idle_ms else int(trace.poll_ns[0])
    end = int(max(trace.t_after_ns.max(initial=0), trace.poll_ns[-1]))
    truth = sensor.true_energy_j(start, end)
    assert abs(energy.metrics["energy"] - truth) <= energy.bounds["energy"] + 1e-9 * truth
    if idle_ms:
        idle_truth = sensor.true_energy_j(*intervals_of(trace, "idle")[0]) / (idle_ms / 1e3)
        assert abs(energy.metrics["idle_power"] - idle_truth) <= energy.bounds["idle_power"] + 1e-9
        assert set(energy.summary["metric_bounds"]) >= {"energy_checkpoint", "energy_net", "idle_power"}
    else:
        assert "energy_net" not in energy.metrics


def test_a_full_window_average_bounds_energy_tightly_and_a_sparse_one_does_not():
    """Averaging windows that tile time pin the energy down; a 25 ms window every 495 ms cannot."""
    schedule = [("compute", 4000.0), ("checkpoint", 600.0), ("compute", 4000.0)]
    widths = {}
    for meter in ("power_average", "sparse_power", "instant"):
        sensor, signal, trace = _record(meter, schedule, 0.0, 5.0, 3)
        p_min, p_max = sensor.power_range_w()
        e = phase_energy_total(trace, signal, "compute", p_min, p_max).energy
        widths[meter] = (e.upper_j - e.lower_j) / ((p_max - p_min) * 8.0)  # share of the power-range width
    assert widths["power_average"] < 0.2  # the edges and the 5 ms poll uncertainty of each update
    assert widths["sparse_power"] > 0.85
    assert widths["instant"] > 0.99


def test_support_counts_updates_inside_each_phase_and_skips_absent_phases():
    sensor, signal, trace = _record("counter", [("compute", 1000.0), ("checkpoint", 350.0)], 0.0, 5.0, 1)
    p_min, p_max = sensor.power_range_w()
    phases = run_phase_energies(trace, signal, p_min, p_max)
    assert 8 <= phases["compute"].updates <= 10
    assert 2 <= phases["checkpoint"].updates <= 3
    assert phases["restore"].intervals == 0 and phases["restore"].energy.upper_j == 0.0


def test_sim_signals_option():
    assert spec_signals("signals=power_average") == {"power_average"}
    assert spec_signals("") == {"energy_counter", "power_average", "power_instant"}
    info = SimSensor(signals="power_average+power_instant", window_ms=25.0).signals()
    assert set(info) == {"power_average", "power_instant"}
    assert info["power_average"].window_ms == 25.0 and info["power_instant"].window_ms == 0.0


def test_every_energy_metric_has_its_own_bound_and_none_borrows_the_totals():
    """A collected run's summary lists each energy metric's bound, the total's included; a metric
    absent from that list (an infinite bound) has no bound, so its gate is unresolvable, never
    judged by the total's bound."""
    from collect.ledger.records import TelemetrySummary

    sensor, signal, trace = _record("counter", [("compute", 1000.0), ("checkpoint", 350.0)], 0.0, 5.0, 1)
    p_min, p_max = sensor.power_range_w()
    energy = run_energy(trace, signal, p_min, p_max)
    summary = TelemetrySummary.model_validate(energy.summary)
    assert summary.bound_of("energy") == energy.bounds["energy"] == summary.bound
    assert summary.bound_of("energy_checkpoint") == energy.bounds["energy_checkpoint"] != summary.bound
    without_phase = summary.model_copy(update={"metric_bounds": {"energy": energy.bounds["energy"]}})
    assert without_phase.bound_of("energy_checkpoint") is None  # not the total's
    single = TelemetrySummary(bound=60.0)  # a signal backing one metric (an imported `<signal>.bound`)
    assert single.bound_of("energy") == 60.0
