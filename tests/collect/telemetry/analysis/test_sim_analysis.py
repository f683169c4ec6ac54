"""The simulated sensor, the recorder and the analysis: periods, counter support, honest bounds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collect.ledger.store import TelemetrySummary
from collect.telemetry.analysis.bounds import (
    energy_from_counter,
    energy_from_power,
    idle_subtracted,
    ledger_summary,
    phase_energy,
)
from collect.telemetry.analysis.resolution import update_period, updates_in, value_changes
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.base import SensorError
from collect.telemetry.sensors.registry import open_sensor
from collect.telemetry.sensors.sim import SimSensor
from collect.traces.telemetry import TraceError, read_trace, write_trace
from prereg.errors import RetiredFormat
from tests.helpers import run


def record(
    sensor: SimSensor, poll_ms: float, phases: list[tuple[str, float]], signals=("energy_counter", "power_average")
):
    rec = Recorder(sensor, list(signals), poll_ms)
    rec.start()
    for name, ms in phases:
        with rec.phase(name):
            rec.advance(ms)
    rec.stop()
    return rec.trace()


@pytest.mark.parametrize("period_ms", [20, 100, 495])
@pytest.mark.parametrize("poll_ms", [1, 5, 13, 20])
def test_update_periods_detected_within_5_percent(period_ms, poll_ms):
    sensor = SimSensor(clock="virtual", update_ms=period_ms, counter_update_ms=period_ms, window_ms=min(25, period_ms))
    trace = record(sensor, poll_ms, [("compute", max(4000, 30 * period_ms))])
    for signal in ("energy_counter", "power_average"):
        estimate = update_period(trace, signal)
        assert estimate.effective_period_ms == pytest.approx(period_ms, rel=0.05), signal
        assert estimate.driver_period_ms == pytest.approx(period_ms, rel=0.01)
        assert estimate.achieved_poll_ms == pytest.approx(poll_ms, rel=0.01)


phase_names = st.sampled_from(["idle", "compute", "checkpoint", "stall"])


@settings(max_examples=40, deadline=None)
@given(
    phases=st.lists(st.tuples(phase_names, st.floats(1, 700)), min_size=1, max_size=5),
    counter_ms=st.sampled_from([20.0, 100.0, 495.0]),
    poll_ms=st.floats(2, 40),
    noise_w=st.floats(0, 60),
    seed=st.integers(0, 1000),
)
def test_phase_energy_bounds_contain_the_truth(phases, counter_ms, poll_ms, noise_w, seed):
    sensor = SimSensor(clock="virtual", counter_update_ms=counter_ms, noise_w=noise_w, seed=seed)
    trace = record(sensor, poll_ms, phases)
    p_min, p_max = sensor.power_range_w()
    for mark in trace.phases:
        truth = sensor.true_energy_j(mark.start_ns, mark.end_ns)
        for estimate in (
            energy_from_counter(trace, mark.start_ns, mark.end_ns, p_min, p_max),
            energy_from_power(trace, mark.start_ns, mark.end_ns, p_min, p_max),
        ):
            assert estimate.lower_j - 1e-9 <= truth <= estimate.upper_j + 1e-9, (mark, estimate, truth)
            assert estimate.lower_j <= estimate.estimate_j <= estimate.upper_j


def test_counter_bounds_are_tight_when_supported_and_wide_when_not():
    sensor = SimSensor(clock="virtual", counter_update_ms=100, noise_w=5)
    trace = record(sensor, 1, [("compute", 3000), ("checkpoint", 30), ("compute", 500)])
    p_min, p_max = sensor.power_range_w()
    long_phase, short_phase = trace.phases[0], trace.phases[1]
    long_e = energy_from_counter(trace, long_phase.start_ns, long_phase.end_ns, p_min, p_max)
    # the partial end intervals (< one 100 ms update period each) are bounded by the power range
    assert long_e.updates >= 28 and (long_e.upper_j - long_e.lower_j) <= (p_max - p_min) * 2 * 0.1 + 0.01
    assert long_e.lower_j <= sensor.true_energy_j(long_phase.start_ns, long_phase.end_ns) <= long_e.upper_j
    short = energy_from_counter(trace, short_phase.start_ns, short_phase.end_ns, p_min, p_max)
    truth = sensor.true_energy_j(short_phase.start_ns, short_phase.end_ns)
    assert short.updates == 0 and updates_in(trace, "energy_counter", short_phase.start_ns, short_phase.end_ns) == 0
    assert short.lower_j <= truth <= short.upper_j
    assert short.upper_j - short.lower_j >= 0.5 * truth  # as wide as it should be
    assert "no counter update" in short.notes[0]


def test_counter_wrap_corrected_when_the_modulus_is_known():
    sensor = SimSensor(clock="virtual", wrap_mj=200_000)  # wraps every 200 J, about every 0.7 s
    trace = record(sensor, 5, [("compute", 3000)])
    mark = trace.phases[0]
    truth = sensor.true_energy_j(mark.start_ns, mark.end_ns)
    p_min, p_max = sensor.power_range_w()
    corrected = energy_from_counter(trace, mark.start_ns, mark.end_ns, p_min, p_max, wrap_mj=200_000)
    assert corrected.lower_j <= truth <= corrected.upper_j and corrected.upper_j - corrected.lower_j < 70
    assert value_changes(trace, "energy_counter", 200_000).resets == []
    unknown = energy_from_counter(trace, mark.start_ns, mark.end_ns, p_min, p_max)  # modulus not given
    assert unknown.method == "power-range" and "reset" in unknown.notes[0]
    assert unknown.lower_j <= truth <= unknown.upper_j


def test_counter_reset_is_marked_and_later_phases_still_bounded():
    sensor = SimSensor(clock="virtual", reset_at_ms=1000)
    trace = record(sensor, 5, [("compute", 900), ("checkpoint", 300), ("compute", 1500)])
    p_min, p_max = sensor.power_range_w()
    assert len(value_changes(trace, "energy_counter").resets) == 1
    spanning = trace.phases[1]
    e = energy_from_counter(trace, spanning.start_ns, spanning.end_ns, p_min, p_max)
    assert e.method == "power-range"
    after = trace.phases[2]
    e = energy_from_counter(trace, after.start_ns, after.end_ns, p_min, p_max)
    truth = sensor.true_energy_j(after.start_ns, after.end_ns)
    assert e.method == "counter" and e.lower_j <= truth <= e.upper_j and e.upper_j - e.lower_j < 70


def test_idle_baseline_and_subtraction():
    sensor = SimSensor(clock="virtual", idle_w=60, power_w=300, noise_w=0)
    trace = record(sensor, 2, [("idle", 2000), ("compute", 2000)])
    p_min, p_max = sensor.power_range_w()
    idle = phase_energy(trace, "idle", p_min, p_max)
    compute = phase_energy(trace, "compute", p_min, p_max)
    above = idle_subtracted(compute, idle, 2.0, 2.0)
    assert above.lower_j <= 480.0 <= above.upper_j and above.estimate_j == pytest.approx(480, rel=0.05)
    assert "sensitivity" in above.notes[0]


def test_ledger_summary_is_a_valid_telemetry_summary():
    sensor = SimSensor(clock="virtual")
    trace = record(sensor, 20, [("compute", 5000)])
    mark = trace.phases[0]
    p_min, p_max = sensor.power_range_w()
    summary = TelemetrySummary.model_validate(
        ledger_summary(trace, "energy_counter", mark.start_ns, mark.end_ns, p_min, p_max)
    )
    assert summary.evidence == "modeled" and summary.updates >= 48
    assert summary.effective_period_ms == pytest.approx(100, rel=0.05)
    assert summary.requested_poll_ms == 20 and summary.achieved_poll_ms == pytest.approx(20, rel=0.01)
    assert 0 < summary.bound < 70  # J: about one update interval of energy at each end
    rec = Recorder(sensor, ["energy_counter"], 20)
    rec.start()
    with rec.phase("compute"):
        rec.advance(1000)
    whole = TelemetrySummary.model_validate(rec.ledger_summary())
    assert whole.updates >= 8 and whole.evidence == "modeled"


@pytest.mark.parametrize("parquet", [True, False])
def test_trace_round_trip(tmp_path, monkeypatch, parquet):
    if not parquet:
        import builtins

        real_import = builtins.__import__

        def no_pyarrow(name, *args, **kwargs):
            if name.startswith("pyarrow"):
                raise ImportError("no pyarrow")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    else:
        pytest.importorskip("pyarrow")
    sensor = SimSensor(clock="virtual")
    trace = record(sensor, 7, [("compute", 500), ("checkpoint", 100)])
    files = write_trace(trace, tmp_path / "traces" / "run-1")
    assert files[0].name.endswith(".parquet" if parquet else ".csv.gz")
    back = read_trace(tmp_path / "traces" / "run-1")
    assert np.array_equal(back.value, trace.value, equal_nan=True)
    assert np.array_equal(back.t_before_ns, trace.t_before_ns) and list(back.signal) == list(trace.signal)
    assert [(p.name, p.start_ns, p.end_ns) for p in back.phases] == [
        (p.name, p.start_ns, p.end_ns) for p in trace.phases
    ]
    meta = json.loads((tmp_path / "traces" / "run-1.meta.json").read_text())
    assert meta["format"] == "collect/trace/v2" and meta["requested_poll_ms"] == 7


def test_a_v1_trace_is_one_message_and_a_v2_meta_must_name_its_evidence(tmp_path):
    trace = record(SimSensor(clock="virtual"), 7, [("compute", 200)])
    write_trace(trace, tmp_path / "run")
    meta_path = tmp_path / "run.meta.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "format": "collect/trace/v1"}))
    with pytest.raises(RetiredFormat, match="written in collect/trace/v1 by prereg-toolkit 0.1.x") as err:
        read_trace(tmp_path / "run")
    assert err.value.exit_code == 2
    meta_path.write_text(json.dumps({k: v for k, v in meta.items() if k != "evidence"}))
    with pytest.raises(TraceError, match="not a valid trace description"):  # never read as "measured"
        read_trace(tmp_path / "run")


def test_replay_shows_only_what_was_recorded(tmp_path):
    sensor = SimSensor(clock="virtual", counter_update_ms=100)
    trace = record(sensor, 10, [("compute", 2000)])
    write_trace(trace, tmp_path / "run")
    replay = open_sensor(f"replay:{tmp_path / 'run'}")
    again = record(replay, 1, [("compute", 1900)], signals=("energy_counter",))  # faster polls: no new updates
    assert update_period(again, "energy_counter").effective_period_ms == pytest.approx(100, rel=0.05)
    with pytest.raises(SensorError):
        open_sensor(f"replay:{tmp_path / 'missing'}")


def test_recorder_on_the_real_clock_and_nested_phases():
    sensor = SimSensor(clock="real", update_ms=20, counter_update_ms=20, window_ms=10)
    rec = Recorder(sensor, ["energy_counter"], poll_ms=5)
    with rec:
        with rec.phase("compute"):
            rec.advance(150)
            with rec.phase("checkpoint"):
                rec.advance(60)
    trace = rec.trace()
    median, p95 = rec.achieved_poll_ms()
    # what the recorder guarantees whatever the machine's load: every poll kept, in order, and the achieved
    # interval it reports is the one its polls show (a loaded machine polls slower; the trace says so)
    assert trace.poll_ns.size >= 1 and bool(np.all(np.diff(trace.poll_ns) > 0))
    gaps_ms = np.diff(trace.poll_ns) / 1e6
    assert median == (pytest.approx(float(np.median(gaps_ms))) if gaps_ms.size else None)
    assert [(p.name, p.depth) for p in trace.phases] == [("compute", 0), ("checkpoint", 1)]
    outer, inner = trace.phases
    assert outer.start_ns <= inner.start_ns < inner.end_ns <= outer.end_ns


def test_bad_specs_and_signals():
    for spec, words in [
        ("sim:warp=9", "unknown sensor option"),
        ("sim:update_ms=abc", "not a valid float"),
        ("sim:window_ms=50,update_ms=20", "must not exceed"),
        ("gpu", "unknown sensor"),
    ]:
        with pytest.raises(SensorError, match=words):
            open_sensor(spec)
    with pytest.raises(KeyError):
        Recorder(SimSensor(clock="virtual"), ["temperature_gpu"], 10)


@pytest.mark.subprocess(quick=True)
def test_probe_console_script():
    proc = run(
        "collect",
        "probe",
        "--sensor",
        "sim:clock=virtual,update_ms=495,counter_update_ms=100",
        "--poll-ms",
        "20",
        "--seconds",
        "5",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    signals = json.loads(proc.stdout)["signals"]
    assert signals["power_average"]["effective_period_ms"] == pytest.approx(495, rel=0.05)
    assert signals["energy_counter"]["effective_period_ms"] == pytest.approx(100, rel=0.05)
    assert signals["energy_counter"]["evidence"] == "modeled"
    assert signals["energy_counter"]["resolvable_j"] == pytest.approx(2 * 300 * 0.1, rel=0.05)
    text = run("collect", "probe", "--sensor", "sim:clock=virtual", "--seconds", "2").stdout
    assert "resolves energy differences of about" in text
    bad = run("collect", "probe", "--sensor", "sim:nonsense=1")
    assert bad.returncode == 2 and "cannot open sensor" in bad.stderr
    assert run("collect", "probe", "--sensor", "sim:clock=virtual", "--poll-ms", "0").returncode == 2
