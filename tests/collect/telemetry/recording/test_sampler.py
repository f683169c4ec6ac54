"""The out-of-process poller: same trace contents, phases on one clock, errors, no orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from multiprocessing import Pipe
from typing import Any

import numpy as np
import pytest

from collect.telemetry.analysis.bounds import ledger_summary
from collect.telemetry.analysis.resolution import value_changes
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.recording.sampler import _poll_loop
from collect.telemetry.sensors.base import Reading, SensorError
from collect.telemetry.sensors.sim import SimSensor
from collect.traces.telemetry import Trace
from tests.conftest import REPO

SPEC = "sim:clock=real,update_ms=20,counter_update_ms=20,window_ms=10"
HANG_S = 60.0  # only to catch a hang

sys.path.insert(0, str(REPO / "benchmarks"))
from _baseline_telemetry import old_value_changes, synthetic_trace  # noqa: E402 - the loop the vectorised code replaced


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its reparented init) counts as dead
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def test_process_poller_records_every_poll_and_phases() -> None:
    sensor = SimSensor(clock="real", update_ms=20, counter_update_ms=20, window_ms=10)
    rec = Recorder(sensor, ["energy_counter", "power_average"], poll_ms=5, spec=SPEC)
    assert rec.mode == "process"
    before_ns = sensor.now_ns()
    with rec:
        child = rec._child
        assert child is not None and child._proc is not None
        pid = child._proc.pid
        with rec.phase("compute"):
            rec.advance(150)
            with rec.phase("checkpoint"):
                rec.advance(60)
        mid = rec.trace()  # a snapshot while running
        assert mid.poll_ns.size >= 1  # the first poll is taken before the block runs
    after_ns = sensor.now_ns()
    assert not _alive(pid) and rec._child is None
    trace = rec.trace()
    median, _ = rec.achieved_poll_ms()
    # what the recorder guarantees whatever the machine's load: every poll kept, in order, and the achieved
    # interval it reports is the one its polls show (a loaded machine polls slower; the trace says so)
    assert trace.poll_ns.size >= 1 and bool(np.all(np.diff(trace.poll_ns) > 0))
    gaps_ms = np.diff(trace.poll_ns) / 1e6
    assert median == (pytest.approx(float(np.median(gaps_ms))) if gaps_ms.size else None)
    assert trace.signal.size == 2 * trace.poll_ns.size  # every poll of every signal
    assert set(trace.signal) == {"energy_counter", "power_average"}
    assert [(p.name, p.depth) for p in trace.phases] == [("compute", 0), ("checkpoint", 1)]
    outer, inner = trace.phases
    assert outer.start_ns <= inner.start_ns < inner.end_ns <= outer.end_ns
    # one clock: the child's polls lie between two readings of the parent's clock
    assert before_ns <= trace.poll_ns[0] and trace.poll_ns[-1] <= after_ns
    assert trace.t_before_ns.dtype == np.int64 and trace.value.dtype == np.float64
    assert trace.requested_poll_ms == 5.0 and trace.sensor == SPEC
    summary = rec.ledger_summary()
    assert summary["updates"] and summary["requested_poll_ms"] == 5.0


def test_thread_mode_and_virtual_clock_stay_in_process() -> None:
    virtual = Recorder(SimSensor(clock="virtual"), ["energy_counter"], 10, spec="sim:clock=virtual")
    assert virtual.mode == "virtual"
    with virtual:
        virtual.advance(100)
    assert virtual.trace().poll_ns.size == 11
    thread = Recorder(SimSensor(clock="real"), ["energy_counter"], 5, spec=SPEC, mode="thread")
    assert thread.mode == "thread"
    with thread:
        deadline = time.monotonic() + HANG_S  # busy cores may hold the polling thread back: wait for its polls
        while len(thread._poll_ns) < 2 and time.monotonic() < deadline:
            thread.advance(30)
    assert thread.trace().poll_ns.size >= 2
    no_spec = Recorder(SimSensor(clock="real"), ["energy_counter"], 5)
    assert no_spec.mode == "thread"
    with pytest.raises(ValueError):
        Recorder(SimSensor(clock="virtual"), ["energy_counter"], 5, spec="sim:clock=virtual", mode="process")


def test_open_error_in_the_child_is_the_same_sensor_error() -> None:
    with pytest.raises(SensorError) as expected:
        SimSensor.from_spec("warp=9")
    rec = Recorder(SimSensor(clock="real"), ["energy_counter"], 5, spec="sim:warp=9", mode="process")
    with pytest.raises(SensorError) as got:
        rec.start()
    assert str(got.value) == str(expected.value)
    assert rec._child is None


class _Failing(SimSensor):
    def __init__(self) -> None:
        super().__init__(clock="real")
        self.reads = 0

    def read(self, signals: Sequence[str]) -> list[Reading]:
        self.reads += 1
        if self.reads > 2:
            raise SensorError("GPU is lost (NVML_ERROR_GPU_IS_LOST)")
        return super().read(signals)


def test_read_error_is_reported_with_what_came_before() -> None:
    parent, child = Pipe()
    sensor = _Failing()
    loop = threading.Thread(target=_poll_loop, args=(child, sensor, ["energy_counter"], 1.0), daemon=True)
    loop.start()
    deadline = time.monotonic() + 60
    while sensor.reads < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    parent.send(("stop", None))
    kind, cols, polls, error = parent.recv()
    loop.join(60)
    assert kind == "data" and error == "GPU is lost (NVML_ERROR_GPU_IS_LOST)"
    assert len(cols["signal"]) == 2 and len(polls) == 3


def test_vectorised_unwrap_equals_the_loop() -> None:
    for wrap in (None, 1000, 2**32):
        trace = synthetic_trace(20_000, 1000)
        trace.value[5000] = 3.0  # a reset in the middle
        old, new = old_value_changes(trace, "energy_counter", wrap), value_changes(trace, "energy_counter", wrap)
        assert np.array_equal(old.lo_ns, new.lo_ns) and np.array_equal(old.hi_ns, new.hi_ns)
        assert np.array_equal(old.value, new.value) and old.resets == new.resets
        assert old.first_value == new.first_value and old.first_hi_ns == new.first_hi_ns
        summary = ledger_summary(trace, "energy_counter", 1_000_000_000, 19_000_000_000, 50.0, 700.0, wrap_mj=wrap)
        assert summary["updates"]


@pytest.mark.subprocess
def test_no_orphan_when_the_parent_is_killed(tmp_path) -> None:
    script = textwrap.dedent(f"""
        import sys, time
        from collect.telemetry.recording.recorder import Recorder
        from collect.telemetry.sensors.registry import open_sensor
        rec = Recorder(open_sensor({SPEC!r}), ["energy_counter"], 5, spec={SPEC!r})
        rec.start()
        print(rec._child._proc.pid, flush=True)
        time.sleep(600)
    """)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        assert _alive(child)
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
        deadline = time.monotonic() + 60  # only to catch a hang
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_trace_columns_match_from_readings() -> None:
    from collect.telemetry.recording.recorder import trace_from_columns

    readings = [
        Reading("energy_counter", 1, 2, 5.0, "mJ", "ok", 7),
        Reading("power_average", 3, 4, None, "W", "error", None),
    ]
    cols: dict[str, list[Any]] = {
        "signal": [r.signal for r in readings],
        "t_before_ns": [1, 3],
        "t_after_ns": [2, 4],
        "value": [5.0, None],
        "status": ["ok", "error"],
        "driver_ts_us": [7.0, None],
    }
    sensor = SimSensor(clock="virtual")
    a = Trace.from_readings(readings, sensor.signals(), 1.0, [1, 3], [], "s", "modeled")
    b = trace_from_columns(cols, sensor.signals(), 1.0, [1, 3], [], "s", "modeled")
    for name in ("signal", "t_before_ns", "t_after_ns", "value", "status", "driver_ts_us", "poll_ns"):
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=name in ("value", "driver_ts_us")), name


def test_child_is_joined_when_the_block_raises() -> None:
    rec = Recorder(SimSensor(clock="real"), ["energy_counter"], 2, spec="sim:clock=real")
    with pytest.raises(RuntimeError, match="training failed"):
        with rec:
            assert rec._child is not None and rec._child._proc is not None
            pid = rec._child._proc.pid
            with rec.phase("compute"):
                raise RuntimeError("training failed")
    assert rec._child is None and not _alive(pid)
    assert rec.trace().poll_ns.size >= 1 and rec.trace().phases[0].end_ns >= 0
