"""Counter reads pinned by the declared update period (collect/telemetry/analysis/bounds.py): the
guaranteed bounds hold the true energy, one window keeps its logged energy, and the arm-dependent
part bounds the mean error over the counter's phase."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collect.telemetry.analysis.bounds import energy_from_counter
from collect.telemetry.logs.common import Column, LogOptions, build_trace, signal
from collect.telemetry.logs.formats import FORMATS

T0 = 1_796_292_901_000_000_000  # ns since the epoch, a log's first moment
P_MAX = 2000.0


def _cumulative(t_s: np.ndarray, levels: np.ndarray, step_s: float) -> np.ndarray:
    """The exact energy (J) from 0 to ``t_s`` of a piecewise-constant power (``levels`` W, each ``step_s`` long)."""
    edges = np.concatenate([[0.0], np.cumsum(levels * step_s)])
    k = np.clip((t_s // step_s).astype(int), 0, levels.size - 1)
    return edges[k] + levels[k] * (t_s - k * step_s)


def _trace(
    read_s: np.ndarray, levels: np.ndarray, step_s: float, period_s: float, phase_s: float, declared_ms: float | None
):
    """A counter updating every ``period_s`` (first update at ``phase_s``), read at ``read_s`` (1 ms reads)."""
    updates = np.floor((read_s - phase_s) / period_s) * period_s + phase_s
    value_mj = np.floor(_cumulative(np.maximum(updates, 0.0), levels, step_s) * 1000.0)
    t = (T0 + np.round(read_s * 1e9)).astype(np.int64)
    options = LogOptions(counter_period_ms=declared_ms, period_basis="test") if declared_ms else LogOptions()
    column = Column(signal("energy_counter", "mJ", "counter"), value_mj)
    return build_trace(t, t + 1_000_000, {"energy_counter": column}, "test", options)


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    period_ms=st.sampled_from([20.0, 100.0, 1000.0]),
    reads=st.integers(2, 40),
    slack=st.sampled_from([1.0, 1.5]),
)
def test_declared_period_bounds_hold_the_truth(seed: int, period_ms: float, reads: int, slack: float) -> None:
    rng = np.random.default_rng(seed)
    step_s, levels = 0.37, rng.uniform(0.0, P_MAX, 400)  # any power the range allows, changing every 0.37 s
    period_s = period_ms / 1000.0
    read_s = np.sort(rng.uniform(1.5, 140.0, reads))
    trace = _trace(read_s, levels, step_s, period_s, rng.uniform(0, period_s), period_ms * slack)
    for _ in range(5):
        a, b = np.sort(rng.uniform(0.5, 145.0, 2))
        a_ns, b_ns = T0 + int(a * 1e9), T0 + int(b * 1e9)
        e = energy_from_counter(trace, a_ns, b_ns, 0.0, P_MAX)
        truth = _cumulative(np.array([b]), levels, step_s)[0] - _cumulative(np.array([a]), levels, step_s)[0]
        assert e.lower_j - 1e-6 <= truth <= e.upper_j + 1e-6
        assert e.lower_j <= e.estimate_j <= e.upper_j and 0.0 <= e.systematic_bound_j <= e.bound_j


def test_one_zeus_window_keeps_its_logged_energy() -> None:
    text = "start_time,window_name,elapsed_time,gpu0_energy\n1796292901.5,train,66.1,20484.0\n"
    trace = FORMATS["zeus"](text, "run.zeus.csv", LogOptions(counter_period_ms=100.0, period_basis="test"))
    e = energy_from_counter(trace, trace.phase("train").start_ns, trace.phase("train").end_ns, 0.0, P_MAX)
    assert e.estimate_j == 20484.0  # what Zeus measured, not the power range's midpoint times 66.1 s
    # each end is known to within one update period at the power range, whatever the window's length
    assert e.bound_j <= 2 * P_MAX * 0.1 + 0.01
    assert trace.signals["energy_counter"].period_ms == 100.0
    whole = trace.phase("log")  # the log's span (to the end read's last microsecond): one window, no join
    assert energy_from_counter(trace, whole.start_ns, whole.end_ns, 0.0, P_MAX).bound_j <= 2 * P_MAX * 0.1 + 0.01


def test_one_codecarbon_row_keeps_its_logged_energy() -> None:
    header = (
        "timestamp,project_name,run_id,duration,emissions,emissions_rate,cpu_power,gpu_power,ram_power,"
        "cpu_energy,gpu_energy,ram_energy,energy_consumed"
    )
    row = (
        "2026-12-03T10:16:08,codecarbon,9adda612-4ce8-49d0-9a55-e3b071a7b885,67.1,0.001,1e-06,42.5,300.0,10.0,"
        "0.0007,0.005,0.0002,0.0059"
    )
    trace = FORMATS["codecarbon"](f"{header}\n{row}\n", "emissions.csv", LogOptions(counter_period_ms=100.0))
    mark = trace.phase("log")
    e = energy_from_counter(trace, mark.start_ns, mark.end_ns, 0.0, P_MAX)
    assert math.isclose(e.estimate_j, 0.005 * 3.6e6)  # 18000 J, the logged GPU energy
    assert e.bound_j <= 2 * P_MAX * 0.1 + 0.01


def test_a_counter_stalled_longer_than_its_declared_period_is_not_pinned_by_it() -> None:
    read_s = np.arange(1.0, 60.0, 0.1)
    levels = np.full(200, 300.0)
    updates = np.floor(read_s / 0.1) * 0.1
    updates[(updates >= 20.0) & (updates < 23.0)] = 20.0  # the driver stops updating for 3 s
    value_mj = np.floor(_cumulative(updates, levels, 1.0) * 1000.0)
    t = (T0 + np.round(read_s * 1e9)).astype(np.int64)
    trace = build_trace(
        t,
        t + 1_000_000,
        {"energy_counter": Column(signal("energy_counter", "mJ", "counter"), value_mj)},
        "test",
        LogOptions(counter_period_ms=100.0),
    )
    a, b = T0 + int(21.0e9), T0 + int(22.5e9)
    e = energy_from_counter(trace, a, b, 0.0, P_MAX)
    assert e.lower_j <= 1.5 * 300.0 <= e.upper_j


def test_the_arm_dependent_part_bounds_the_mean_error_over_the_counter_phase() -> None:
    """Two runs of equal length and base power, one ending in a 700 W checkpoint burst: over the
    counter's phase the mean error of each differs by no more than their arm-dependent parts."""
    rng = np.random.default_rng(7)
    step_s = 0.05
    base = np.full(int(70 / step_s), 250.0)
    burst = base.copy()
    burst[int(59.5 / step_s) : int(60.0 / step_s)] = 700.0  # the last half second of the run
    period_s = 0.1
    mean_error, systematic = {}, {}
    for name, levels in (("plain", base), ("burst", burst)):
        errors = []
        for _ in range(400):
            read_s = np.array([10.0, 60.0])  # one window: the run's start and end reads
            trace = _trace(read_s, levels, step_s, period_s, rng.uniform(0, period_s), 100.0)
            e = energy_from_counter(trace, T0 + int(10e9), T0 + int(60e9), 0.0, P_MAX)
            truth = _cumulative(np.array([60.0]), levels, step_s)[0] - _cumulative(np.array([10.0]), levels, step_s)[0]
            errors.append(e.estimate_j - truth)
            systematic[name] = e.systematic_bound_j
        mean_error[name] = float(np.mean(errors))
    assert abs(mean_error["burst"] - mean_error["plain"]) <= systematic["burst"] + systematic["plain"]
    assert abs(mean_error["burst"]) > 5.0  # the burst's edge does bias the reading (here by about P/2 x 450 W)


def test_contiguous_zeus_windows_store_their_sum_and_their_joins_bound_it_above() -> None:
    energies = [2500.2, 2600.1, 2550.3, 2540.9, 2533.5]
    lines = ["start_time,window_name,elapsed_time,gpu0_energy"]
    lines += [f"{1796292901.0 + 8.5 * i!r},epoch,8.5,{e!r}" for i, e in enumerate(energies)]
    trace = FORMATS["zeus"]("\n".join(lines) + "\n", "w.zeus.csv", LogOptions(counter_period_ms=100.0))
    whole = trace.phase("log")
    e = energy_from_counter(trace, whole.start_ns, whole.end_ns, 0.0, P_MAX)
    assert e.estimate_j == pytest.approx(sum(energies))  # what the windows logged, together
    # the two ends within one period each; each of the 4 joins may have missed one update, above only
    assert sum(energies) - e.lower_j <= P_MAX * 0.1 + 0.01
    assert e.upper_j - sum(energies) <= P_MAX * 0.1 * (1 + 4) + 0.01
    assert e.systematic_bound_j < 0.01 * sum(energies)
