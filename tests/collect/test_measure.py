"""``collect.measure``: the summary a collected run carries, bounds that hold, clear errors, no sampler left."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import collect
from collect.measurement import MeasureError
from collect.telemetry.analysis.energy import run_energy
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.base import SensorError
from collect.telemetry.sensors.sim import SimSensor
from collect.traces.telemetry import read_trace, write_trace
from prereg.errors import InputError
from tests.conftest import REPO

ROOT = REPO
VIRTUAL = "sim:clock=virtual,counter_update_ms=20,update_ms=50,window_ms=25"
REAL = "sim:clock=real,counter_update_ms=20,update_ms=20,window_ms=10"
HANG_S = 120  # only to catch a hang


def _timeline(m: object) -> None:
    """The same phases and times, for a Measurement or a Recorder (both have phase and advance)."""
    with m.phase("idle"):  # type: ignore[attr-defined]
        m.advance(300)  # type: ignore[attr-defined]
    for _ in range(3):
        with m.phase("compute"):  # type: ignore[attr-defined]
            m.advance(170)  # type: ignore[attr-defined]
            with m.phase("allreduce"):  # type: ignore[attr-defined]
                m.advance(40)  # type: ignore[attr-defined]
        with m.phase("checkpoint"):  # type: ignore[attr-defined]
            m.advance(90)  # type: ignore[attr-defined]
    m.advance(30)  # type: ignore[attr-defined]


def test_virtual_clock_summary_equals_the_recorders_and_its_bounds_hold() -> None:
    with collect.measure(VIRTUAL, poll_ms=5) as m:
        _timeline(m)
    result = m.result()

    sensor = SimSensor.from_spec(VIRTUAL.partition(":")[2])
    rec = Recorder(sensor, ["energy_counter"], 5, spec=VIRTUAL)
    with rec:
        _timeline(rec)
    expected = run_energy(
        rec.trace(), "energy_counter", *sensor.power_range_w(), phases=["idle", "compute", "allreduce", "checkpoint"]
    )
    assert m.summary == expected.summary and result.metrics == expected.metrics
    assert set(result.phases) == {"idle", "compute", "allreduce", "checkpoint"}
    assert result.summary["phases"]["compute"]["intervals"] == 3 and result.evidence == "modeled"

    sim = m.sensor
    assert isinstance(sim, SimSensor)
    trace = m.trace
    start = next(p for p in trace.phases if p.name == "idle").end_ns  # energy counts from the idle window's end
    end = int(max(trace.t_after_ns.max(), trace.poll_ns[-1]))
    truth = sim.true_energy_j(start, end)
    assert result.energy.lower_j <= truth <= result.energy.upper_j
    for name, pe in result.phases.items():
        spans = [(p.start_ns, p.end_ns) for p in trace.phases if p.name == name]
        true_phase = sum(sim.true_energy_j(a, b) for a, b in spans)
        assert pe.energy.lower_j <= true_phase <= pe.energy.upper_j, name
        assert pe.updates == result.summary["phases"][name]["updates"]
    assert result.effective_period_ms == pytest.approx(20.0, rel=0.05)
    assert result.achieved_poll_ms == pytest.approx(5.0, rel=0.05)
    assert "idle_power" in result.metrics and "energy_compute_net" in result.metrics


def test_power_only_meter_and_a_named_signal(tmp_path: Path) -> None:
    with collect.measure("sim:clock=virtual,signals=power_average,update_ms=100,window_ms=100", poll_ms=10) as m:
        with m.phase("compute"):
            m.advance(1000)
    result = m.result()
    assert result.signal == "power_average" and result.energy.method == "power"
    truth = m.sensor.true_energy_j(int(m.trace.poll_ns[0]), int(m.trace.poll_ns[-1]))  # type: ignore[union-attr]
    assert result.energy.lower_j <= truth <= result.energy.upper_j
    with collect.measure(VIRTUAL, signal="power_instant", poll_ms=10) as m2:
        m2.advance(200)
    assert m2.result().signal == "power_instant" and m2.result().phases == {}


def test_the_trace_is_writable_and_replays_to_the_same_summary(tmp_path: Path) -> None:
    with collect.measure(VIRTUAL, poll_ms=5) as m:
        _timeline(m)
    base = tmp_path / "measured"
    write_trace(m.trace, base)
    again = read_trace(base)
    assert again.poll_ns.size == m.trace.poll_ns.size and [p.name for p in again.phases] == [
        p.name for p in m.trace.phases
    ]
    with collect.measure(f"replay:{base}", poll_ms=5) as r:  # replay: a virtual clock, time passes by advance
        with r.phase("compute"):
            r.advance(100)
    assert r.result().phases["compute"].duration_ms == pytest.approx(100.0, abs=0.1)


def test_real_clock_sampler_runs_in_a_child_process_and_is_gone_after() -> None:
    before = {t.ident for t in threading.enumerate()}
    with collect.measure(REAL, poll_ms=5) as m:
        rec = m._rec
        assert rec is not None and rec.mode == "process" and rec._child is not None
        proc = rec._child._proc
        assert proc is not None
        with m.phase("compute"):
            m.advance(200)
    assert proc.poll() is not None  # the child was joined
    assert {t.ident for t in threading.enumerate()} <= before
    result = m.result()
    assert result.phases["compute"].updates >= 1 and result.summary["requested_poll_ms"] == 5.0


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_the_sampler_stops_when_the_block_raises(mode: str) -> None:
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(RuntimeError, match="training failed"):
        with collect.measure(REAL, poll_ms=2, mode=mode) as m:
            rec = m._rec
            assert rec is not None and rec.mode == mode
            proc = rec._child._proc if rec._child is not None else None
            m.begin("compute")
            raise RuntimeError("training failed")
    assert rec._child is None and rec._thread is None
    if mode == "process":
        assert proc is not None and proc.poll() is not None
    assert {t.ident for t in threading.enumerate()} <= before
    assert m.trace.phases[0].end_ns >= m.trace.phases[0].start_ns  # the open phase was closed
    with pytest.raises(MeasureError):
        m.begin("after")


@pytest.mark.subprocess
def test_a_script_without_a_main_guard_runs_to_completion(tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(f"""
        import time
        import collect

        print("top of the script", flush=True)   # printed once: the sampler never re-runs this file
        with collect.measure({REAL!r}, poll_ms=5) as m:
            with m.phase("compute"):
                time.sleep(0.3)
        result = m.result()
        print("energy", result.energy.lower_j <= result.energy.estimate_j <= result.energy.upper_j,
              result.phases["compute"].updates > 0, m._rec.mode)
    """)
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("top of the script") == 1
    assert "energy True True process" in proc.stdout


def test_unknown_sensor_and_signal_are_one_clear_error() -> None:
    with pytest.raises(SensorError, match="unknown sensor 'gpu0'"):
        with collect.measure("gpu0"):
            pass
    with pytest.raises(SensorError, match="unknown sensor option .warp."):
        collect.measure("sim:clock=virtual,warp=9").start()
    with pytest.raises(MeasureError, match="no signal 'joules'"):
        collect.measure(VIRTUAL, signal="joules").start()
    for bad in (dict(poll_ms=0), dict(poll_ms=float("nan")), dict(mode="fork")):
        with pytest.raises(MeasureError):
            collect.measure(VIRTUAL, **bad)  # type: ignore[arg-type]
    with pytest.raises(MeasureError, match="cannot be polled from a child process"):
        collect.measure(VIRTUAL, mode="process").start()
    assert issubclass(MeasureError, InputError) and issubclass(SensorError, InputError)


def test_phase_misuse_is_one_clear_error() -> None:
    m = collect.measure(VIRTUAL, poll_ms=5)
    with pytest.raises(MeasureError, match="before it started"):
        m.begin("compute")
    with pytest.raises(MeasureError, match="after its with block"):
        _ = m.summary
    with m:
        m.begin("compute")
        m.advance(50)
        m.end("compute")
        with pytest.raises(MeasureError, match="'compute' is not open"):
            m.end("compute")  # ended twice
        with pytest.raises(MeasureError, match="not open"):
            m.end("checkpoint")  # never begun
        m.begin("outer")
        m.begin("inner")
        with pytest.raises(MeasureError, match="end 'inner' first"):
            m.end("outer")
        m.end("inner")
        m.end("outer")
        with pytest.raises(MeasureError, match="non-empty name"):
            m.begin("")
        with pytest.raises(MeasureError, match="at least 0 ms"):
            m.advance(-1)
    with pytest.raises(MeasureError, match="after it ended"):
        m.end("outer")
    with pytest.raises(MeasureError, match="already run"):
        m.start()
    assert [p.name for p in m.trace.phases] == ["compute", "outer", "inner"]

    left = collect.measure(VIRTUAL, poll_ms=5)
    with pytest.raises(MeasureError, match="'forgotten' begun and never ended"):
        with left:
            left.begin("forgotten")
            left.advance(20)
    assert left.trace.phases[0].end_ns > left.trace.phases[0].start_ns  # closed at the end, sensor closed
