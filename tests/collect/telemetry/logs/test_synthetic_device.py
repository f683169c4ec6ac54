"""The synthetic device and its logs: exact energy, the tools' layouts, and bounds that hold the truth.

Each log the device's writers produce is converted by the real converter
(``collect.telemetry.logs.formats.FORMATS``) with the device's power range and declared counter
period; the guaranteed bounds of the interval the trace covers (what ``run_energy`` takes) must
hold the device's exact energy of that interval, over seeded phases, counter periods (20-1000 ms),
run lengths and power patterns that include arm-dependent edges (a burst at the run's end, another
power at its start) and a square wave aliased with the driver's update period.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collect.telemetry.analysis.phases import interval_energy
from collect.telemetry.logs import synthetic
from collect.telemetry.logs.common import LogOptions
from collect.telemetry.logs.formats import FORMATS
from collect.telemetry.logs.synthetic_device import EnergyCounter, PowerGauge, PowerPattern
from collect.telemetry.logs.synthetic_writers import (
    SyntheticLog,
    codecarbon_csv,
    dcgm_dmon,
    dmon_sample_times,
    nvidia_smi_csv,
    smi_poll_times,
    zeus_csv,
)

RANGE_W = (50.0, 700.0)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pattern(kind: str, run_s: float, scale: float) -> PowerPattern:
    extra: dict[str, float] = {
        "plain": {},
        "end-burst": {"end_burst_w": 250.0, "end_burst_s": min(2.0, run_s / 3)},
        "start-power": {"start_w": 90.0, "start_s": min(5.0, run_s / 2)},
        # +200 W for 75 ms of every 100 ms: a part-time reading of 25 ms per 100 ms may miss it entirely
        "aliased": {"square_w": 200.0, "square_period_s": 0.1, "square_duty": 0.75},
    }[kind]
    return PowerPattern(run_s=run_s, scale=scale, **extra)


PATTERNS = st.sampled_from(["plain", "end-burst", "start-power", "aliased"])


def _bounds(log: SyntheticLog, signal: str, options: LogOptions) -> tuple[float, float, float, int, int]:
    """``(estimate, lower, upper, a_ns, b_ns)`` of the run's interval as ``run_energy`` takes it."""
    trace = FORMATS[log.fmt](log.text, "synthetic", options)
    a = int(trace.poll_ns[0])
    b = int(max(int(trace.t_after_ns.max()), int(trace.poll_ns[-1])))
    e = interval_energy(trace, signal, a, b, *RANGE_W)
    return e.estimate_j, e.lower_j, e.upper_j, a, b


def _holds(log: SyntheticLog, pattern: PowerPattern, signal: str, options: LogOptions) -> None:
    estimate, lower, upper, a, b = _bounds(log, signal, options)
    truth = log.true_energy_j(pattern, a, b)
    assert lower <= truth <= upper, (log.fmt, signal, lower, truth, upper)
    assert lower <= estimate <= upper


# --- the device ----------------------------------------------------------------------------------


@given(
    kind=PATTERNS,
    run_s=st.floats(1.0, 50.0),
    a=st.floats(-3.0, 60.0),
    span=st.floats(0.0, 20.0),
    phase=st.floats(0.0, 6.28),
)
@SETTINGS
def test_pattern_energy_is_the_integral_of_its_power(
    kind: str, run_s: float, a: float, span: float, phase: float
) -> None:
    """The exact energy matches a fine midpoint integral of the power, steps and all."""
    base = _pattern(kind, run_s, 1.1)
    pattern = PowerPattern(**{**base.__dict__, "swing_phase_rad": phase})
    b = a + span
    edges = np.linspace(a, b, 100_001)
    numeric = float(np.sum(pattern.power((edges[:-1] + edges[1:]) / 2)) * (b - a) / 100_000)
    # a step inside one of the 100 000 slices is off by at most its jump times the slice
    assert float(pattern.energy(a, b)) == pytest.approx(numeric, abs=1e-9 + 20 * 700 * (b - a) / 100_000)


def test_pattern_run_energy_by_hand() -> None:
    """A burst and a start power add exactly their rectangles; the swing integrates to its cosines."""
    plain = PowerPattern(run_s=14.0, swing_w=40.0, swing_period_s=7.0)
    assert plain.run_energy() == pytest.approx(300 * 14.0)  # two whole swing periods
    burst = PowerPattern(run_s=14.0, end_burst_w=200.0, end_burst_s=2.0, scale=0.5)
    assert burst.run_energy() == pytest.approx(0.5 * (300 * 14.0 + 400.0))
    start = PowerPattern(run_s=14.0, start_w=100.0, start_s=3.5, swing_period_s=7.0)
    swing_first = 40 * 7 / (2 * math.pi) * (1 - math.cos(math.pi))  # the first half period of the swing
    assert start.run_energy() == pytest.approx(300 * 14.0 - (300 * 3.5 + swing_first) + 100 * 3.5)
    assert float(plain.energy(-2.0, 0.0)) == pytest.approx(2 * plain.idle_w)


def test_counter_holds_the_floor_of_the_energy_at_its_updates() -> None:
    pattern = PowerPattern(run_s=30.0)
    counter = EnergyCounter(pattern, period_s=0.25, phase_s=0.1, offset_mj=5)
    t = np.array([0.05, 0.1, 0.2, 0.349, 0.351, 10.0])
    updates = np.array([-0.15, 0.1, 0.1, 0.1, 0.35, 9.85])
    expected = 5 + np.floor(pattern.cumulative(updates) * 1000)
    assert counter.read_mj(t).tolist() == expected.astype(np.int64).tolist()


def test_gauge_models() -> None:
    """``average``: the mean over the last second at the last update; ``part-time``: the mean over
    the last 25 ms of each period, which an aliased square wave hides from it."""
    pattern = _pattern("aliased", 60.0, 1.0)
    average = PowerGauge(pattern, "average", phase_s=0.025)
    part = PowerGauge(pattern, "part-time", phase_s=0.025, window_s=0.1)
    t = np.array([10.06])
    assert average.read_w(t)[0] == pytest.approx(float(pattern.energy(9.025, 10.025)))
    assert part.read_w(t)[0] == pytest.approx(float(pattern.energy(10.0, 10.025)) / 0.025)
    # the square (+200 W) is on in [k 100 + 25, (k + 1) 100) ms; updates at k 100 + 25 ms see it not at all
    assert part.read_w(t)[0] < average.read_w(t)[0] - 100
    ten = PowerGauge(pattern, "part-time", phase_s=0.025, window_s=1.0)  # a 1 s mean of ten such slices
    assert ten.read_w(t)[0] == pytest.approx(
        sum(float(pattern.energy(10.0 - k / 10, 10.025 - k / 10)) for k in range(10)) / 0.25
    )


# --- the writers, as the tools lay their logs out --------------------------------------------------


def test_logs_have_the_tools_layouts() -> None:
    pattern = PowerPattern(run_s=20.0)
    counter = EnergyCounter(pattern, 0.1, 0.03)
    gauge = PowerGauge(pattern)
    zeus = zeus_csv(counter, window_s=5.0).text.splitlines()
    assert zeus[0] == "start_time,window_name,elapsed_time,gpu0_energy" and len(zeus) == 5
    carbon = codecarbon_csv(counter).text.splitlines()
    assert carbon[0].startswith("timestamp,project_name,run_id,duration,") and len(carbon) == 3  # 15 s and the stop
    assert carbon[1].startswith("2026-12-03T10:15:16,codecarbon,")
    dmon = dcgm_dmon(counter, gauge, 1.0, dmon_sample_times(20.0, 1.0, 0.5)).text.splitlines()
    assert dmon[0].split() == ["#Entity", "POWER", "TOTEC"] and dmon[1].split() == ["ID", "W", "mJ"]
    assert len(dmon) == 22 and dmon[2].startswith("GPU 0     ")
    smi = nvidia_smi_csv(gauge, smi_poll_times(20.0, 0.1)).text.splitlines()
    assert smi[0] == "timestamp, power.draw [W]" and len(smi) == 202
    assert smi[1].startswith("2026/12/03 10:15:01.002, ") and smi[1].endswith(" W")


def test_hour_long_logs_hold_every_poll() -> None:
    """An hour at 100 ms: nvidia-smi's 36 001 polls (the last at the run's end) and a header, dmon's
    36 000 samples (one per whole delay)."""
    pattern = PowerPattern(run_s=3600.0)
    gauge = PowerGauge(pattern)
    assert nvidia_smi_csv(gauge, smi_poll_times(3600.0, 0.1)).text.count("\n") == 36_002
    dmon = dcgm_dmon(EnergyCounter(pattern), gauge, 0.1, dmon_sample_times(3600.0, 0.1, 0.05))
    assert dmon.text.count("GPU 0") == 36_000


def test_dmon_samples_outside_their_slot_are_refused() -> None:
    pattern = PowerPattern(run_s=5.0)
    with pytest.raises(ValueError, match="sample k"):
        dcgm_dmon(EnergyCounter(pattern), None, 1.0, [0.5, 2.5])


# --- bounds that hold the truth -------------------------------------------------------------------

RUN_S = st.floats(3.0, 90.0)
PERIOD_MS = st.sampled_from([20.0, 50.0, 100.0, 250.0, 1000.0])
FRACTION = st.floats(0.0, 0.999)
SCALE = st.floats(0.8, 1.15)


@given(
    kind=PATTERNS,
    run_s=RUN_S,
    period_ms=PERIOD_MS,
    phase=FRACTION,
    offset=FRACTION,
    scale=SCALE,
    windows=st.sampled_from([None, 1.0, 7.5]),
)
@SETTINGS
def test_zeus_bounds_hold_the_truth(
    kind: str, run_s: float, period_ms: float, phase: float, offset: float, scale: float, windows: float | None
) -> None:
    pattern = _pattern(kind, run_s, scale)
    counter = EnergyCounter(pattern, period_ms / 1000, phase * period_ms / 1000)
    log = zeus_csv(counter, window_s=windows, start_offset_s=offset)
    _holds(log, pattern, "energy_counter", LogOptions(power_range_w=RANGE_W, counter_period_ms=period_ms))


@given(kind=PATTERNS, run_s=RUN_S, period_ms=PERIOD_MS, phase=FRACTION, offset=FRACTION, scale=SCALE)
@SETTINGS
def test_codecarbon_bounds_hold_the_truth(
    kind: str, run_s: float, period_ms: float, phase: float, offset: float, scale: float
) -> None:
    pattern = _pattern(kind, run_s, scale)
    counter = EnergyCounter(pattern, period_ms / 1000, phase * period_ms / 1000)
    log = codecarbon_csv(counter, every_s=15.0, start_offset_s=offset)
    _holds(log, pattern, "energy_counter", LogOptions(power_range_w=RANGE_W, counter_period_ms=period_ms))


@given(
    kind=PATTERNS,
    run_s=RUN_S,
    period_ms=PERIOD_MS,
    phase=FRACTION,
    offset=FRACTION,
    scale=SCALE,
    delay_ms=st.sampled_from([100.0, 1000.0]),
    gauge_phase=FRACTION,
    seed=st.integers(0, 2**31),
)
@SETTINGS
def test_dcgm_bounds_hold_the_truth(
    kind: str,
    run_s: float,
    period_ms: float,
    phase: float,
    offset: float,
    scale: float,
    delay_ms: float,
    gauge_phase: float,
    seed: int,
) -> None:
    """``TOTEC`` with the declared period; ``POWER`` under the ``average`` model (a true 1 s average)."""
    pattern = _pattern(kind, run_s, scale)
    counter = EnergyCounter(pattern, period_ms / 1000, phase * period_ms / 1000)
    gauge = PowerGauge(pattern, "average", phase_s=gauge_phase * 0.1)
    delay = delay_ms / 1000
    log = dcgm_dmon(counter, gauge, delay, dmon_sample_times(run_s, delay, offset * 0.9 * delay, 0.05 * delay, seed))
    options = LogOptions(power_range_w=RANGE_W, counter_period_ms=period_ms, poll_ms=delay_ms, power_model="average")
    _holds(log, pattern, "energy_counter", options)
    _holds(log, pattern, "power_average", options)


@given(
    kind=PATTERNS,
    run_s=RUN_S,
    model=st.sampled_from(["average", "part-time"]),
    gauge_phase=FRACTION,
    latency=st.floats(0.0, 0.02),
    offset=FRACTION,
    scale=SCALE,
    poll_ms=st.sampled_from([100.0, 250.0, 1000.0]),
    seed=st.integers(0, 2**31),
)
@SETTINGS
def test_nvidia_smi_bounds_hold_the_truth(
    kind: str,
    run_s: float,
    model: str,
    gauge_phase: float,
    latency: float,
    offset: float,
    scale: float,
    poll_ms: float,
    seed: int,
) -> None:
    """``power.draw`` under the model the device follows: its guaranteed bounds hold the truth."""
    pattern = _pattern(kind, run_s, scale)
    gauge = PowerGauge(pattern, model, phase_s=gauge_phase * 0.1)  # type: ignore[arg-type]
    polls = smi_poll_times(run_s, poll_ms / 1000, latency, 0.003, seed)
    log = nvidia_smi_csv(gauge, polls, start_offset_s=offset)
    _holds(log, pattern, "power_average", LogOptions(power_range_w=RANGE_W, power_model=model))  # type: ignore[arg-type]


def test_a_counter_log_of_a_long_run_is_tight() -> None:
    """Not only valid: an hour's counter log is bounded to well under 0.1% (the edges alone)."""
    pattern = _pattern("end-burst", 3600.0, 1.0)
    counter = EnergyCounter(pattern, 0.1, 0.042)
    log = dcgm_dmon(counter, None, 0.1, dmon_sample_times(3600.0, 0.1, 0.03))
    estimate, lower, upper, a, b = _bounds(
        log, "energy_counter", LogOptions(power_range_w=RANGE_W, counter_period_ms=100.0, poll_ms=100.0)
    )
    truth = log.true_energy_j(pattern, a, b)
    assert lower <= truth <= upper and (upper - lower) / truth < 1e-3


#: SHA-256 of the examples' logs as the writers before the device wrote them (they must not change)
LEGACY = {
    "nvidia_smi_log": "0fddf3ca1fe4b3bb802964c52a03323a990bf3528252563d950318974aac0287",
    "nvidia_smi_log_nounits": "3b56b8681690c1e0e4cd81c98affe7488fa3a700ba91b70dd79bb8a32c422637",
    "dcgm_log": "86d49014370571e9440a050af8a8d791670e44b335be1ba12313996f309dc076",
    "zeus_log": "0d1f0186dfb74d99fa165b587e2f8ee1b27bb1f242f66d735c56aab274a69150",
    "codecarbon_log": "d21bad0fd554d08c16ef12a166c195117b494a05a409cf13a12308061a1426a0",
}


def test_the_legacy_writers_are_byte_identical() -> None:
    """The examples' curve and writers (``synthetic``) write what they always wrote; the device is
    reachable from the same module."""
    outputs = {
        "nvidia_smi_log": synthetic.nvidia_smi_log(30.0),
        "nvidia_smi_log_nounits": synthetic.nvidia_smi_log(
            12.0, poll_ms=250, units_in_cells=False, gpus=(0, 1), scale=1.5
        ),
        "dcgm_log": synthetic.dcgm_log(30.0, stuck=(5.0, 7.0)),
        "zeus_log": synthetic.zeus_log([(0.0, 8.5, "a"), (8.5, 8.5, "b"), (20.0, 0.05, "c")]),
        "codecarbon_log": synthetic.codecarbon_log(61.0),
    }
    assert {k: hashlib.sha256(v.encode()).hexdigest() for k, v in outputs.items()} == LEGACY
    assert synthetic.PowerPattern is PowerPattern and synthetic.zeus_csv is zeus_csv
