"""benchmarks/gpu_energy_check.py: its pure analysis on synthetic readings with a known answer (a
counter of known period, a boxcar power sensor of known window under a known square wave), its
tiny end-to-end plan, and its clean refusal on a machine without an NVIDIA GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.gpu_energy_analysis import (
    counter_mean_power_w,
    counter_period,
    coverage,
    duty,
    fit_window,
    gauge_period_ms,
    high_time_ns,
    mean_ratio,
    update_mids,
)
from tests.conftest import REPO

ROOT = REPO
MS = 1_000_000


def _polls(t_end_ns: int, poll_ns: float, rng: np.random.Generator, stalls: bool = False) -> tuple[np.ndarray, ...]:
    """Poll times (t_before, t_after) every ``poll_ns`` (20 us calls), optionally with random 0-30 ms stalls."""
    gaps = np.full(int(t_end_ns / poll_ns), poll_ns)
    if stalls:  # a loaded host: one poll in 20 is late by up to 30 ms
        late = rng.random(gaps.size) < 0.05
        gaps[late] += rng.uniform(0, 30 * MS, late.sum())
    t_before = np.cumsum(gaps).astype(np.int64)
    t_before = t_before[t_before < t_end_ns]
    return t_before, t_before + 20_000


def _counter_reads(
    period_ms: float, seconds: float, poll_ms: float, rng: np.random.Generator, stalls: bool = False
) -> tuple[np.ndarray, ...]:
    """A counter at 300 W that updates every ``period_ms`` (from a random phase), read by the polls."""
    t_before, t_after = _polls(int(seconds * 1e9), poll_ms * MS, rng, stalls)
    phase = rng.uniform(0, period_ms * MS)
    read_at = (t_before + t_after) // 2  # the driver answers somewhere inside the call
    updates_seen = np.floor((read_at - phase) / (period_ms * MS))
    value_mj = 1e6 + np.maximum(updates_seen, 0) * 300.0 * period_ms  # 300 W x period = mJ per update
    return t_before, t_after, value_mj


def test_counter_period_recovers_a_known_period_polled_fast() -> None:
    rng = np.random.default_rng(1)
    for period_ms in (20.0, 100.0):
        out = counter_period(*_counter_reads(period_ms, 10.0, 0.05, rng))
        assert out["toolkit_period_ms"] == pytest.approx(period_ms, rel=0.01)
        assert out["median_gap_ms"] == pytest.approx(period_ms, rel=0.01)
        conservative = out["conservative_period_ms"]
        assert conservative is not None and period_ms <= conservative <= period_ms + 0.2
        assert out["updates"] == pytest.approx(10_000 / period_ms, abs=2)


def test_a_stalling_poller_never_reads_the_counter_faster_than_it_is() -> None:
    rng = np.random.default_rng(2)
    for period_ms in (50.0, 100.0):
        out = counter_period(*_counter_reads(period_ms, 10.0, 1.0, rng, stalls=True))
        assert out["conservative_period_ms"] is not None and out["conservative_period_ms"] >= period_ms
        assert out["longest_interval_ms"] is not None and out["longest_interval_ms"] >= period_ms
        assert out["inner_period_ms"] is not None and out["inner_period_ms"] <= period_ms  # the other side


def _square_wave(periods_ms: list[float], seconds: float, gap_ms: float = 200.0) -> tuple[np.ndarray, ...]:
    """High/low edges (ns) of 50% square waves of each period in turn, and each segment's bounds."""
    on, off, segments, t = [], [], [], 1000 * MS
    for period in periods_ms:
        start = t
        n = int(seconds * 1000 / period)
        starts = start + np.arange(n) * period * MS
        on.append(starts)
        off.append(starts + period * MS / 2)
        t = start + n * period * MS
        segments.append((start, t))
        t += gap_ms * MS
    return np.concatenate(on), np.concatenate(off), np.array(segments, dtype=np.float64), t


def _boxcar_sensor(
    on: np.ndarray,
    off: np.ndarray,
    end_ns: float,
    window_ms: float,
    period_ms: float,
    delay_ms: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, ...]:
    """A power reading updated every ``period_ms``: 80 W + 320 W x the load's duty over the ``window_ms``
    ending ``delay_ms`` before the update (+ 1 W noise), polled every 0.25 ms."""
    updates = rng.uniform(0, period_ms * MS) + np.arange(int(end_ns / (period_ms * MS))) * period_ms * MS
    level = 80.0 + 320.0 * duty(on, off, updates - delay_ms * MS, window_ms * MS) + rng.normal(0, 1.0, updates.size)
    t_before, t_after = _polls(int(end_ns), 0.25 * MS, rng)
    k = np.searchsorted(updates, (t_before + t_after) / 2, side="right") - 1
    keep = k >= 0
    return t_before[keep], t_after[keep], np.round(level[k[keep]], 3)


PERIODS = [10.0, 25.0, 50.0, 100.0, 200.0, 1000.0]


@pytest.mark.parametrize(
    ("window_ms", "period_ms", "delay_ms", "expected_coverage"),
    [(25.0, 100.0, 10.0, 0.25), (100.0, 100.0, 0.0, 1.0), (1000.0, 100.0, 5.0, 1.0), (10.0, 20.0, 0.0, 0.5)],
)
def test_the_square_wave_fit_recovers_a_known_window_and_coverage(
    window_ms: float, period_ms: float, delay_ms: float, expected_coverage: float
) -> None:
    rng = np.random.default_rng(int(window_ms + period_ms))
    on, off, _segments, end = _square_wave(PERIODS, 3.0)
    t_before, t_after, value = _boxcar_sensor(on, off, end, window_ms, period_ms, delay_ms, rng)
    mids, values = update_mids(t_before, t_after, value)
    fit = fit_window(mids, values, on, off)
    assert fit.window_ms == pytest.approx(window_ms, rel=0.25)
    assert fit.r2 is not None and fit.r2 > 0.95
    assert fit.swing_w == pytest.approx(320.0, rel=0.1) and fit.low_w == pytest.approx(80.0, abs=10.0)
    measured_period, _ = gauge_period_ms(t_before, t_after, value)
    assert measured_period == pytest.approx(period_ms, rel=0.05)
    assert coverage(fit.window_ms, measured_period) == pytest.approx(expected_coverage, abs=0.08)


def test_a_reading_that_ignores_the_load_fits_no_window() -> None:
    rng = np.random.default_rng(3)
    on, off, _segments, end = _square_wave(PERIODS, 2.0)
    t_before, t_after = _polls(int(end), 0.25 * MS, rng)
    noise = np.round(250.0 + rng.normal(0, 1.0, int(end / (100 * MS)) + 1), 1)  # a new value every 100 ms
    mids, values = update_mids(t_before, t_after, noise[(t_before // (100 * MS)).astype(np.int64)])
    fit = fit_window(mids, values, on, off)
    assert fit.r2 is None or fit.r2 < 0.1


def test_part_time_sampling_shows_as_a_mean_off_the_counters() -> None:
    """A 25 ms window read every 100 ms, under a 100 ms square wave locked to it, sees only one level;
    a 1 s average sees the mean. The counter (every joule) gives the true mean power, 240 W."""
    rng = np.random.default_rng(4)
    on, off, segments, end = _square_wave([100.0], 6.0)
    true_w = 80.0 + 320.0 * 0.5
    t_before, t_after = _polls(int(end), 0.25 * MS, rng)
    read_at = (t_before + t_after) / 2
    last_update = np.floor(read_at / (20 * MS)) * 20 * MS  # the counter updates every 20 ms
    counter_mj = 1000.0 * (80.0 * last_update / 1e9 + 320.0 * high_time_ns(on, off, last_update) / 1e9)
    start, stop = segments[0][0] + 1e9, segments[0][1]  # after the first second: a 1 s average has filled
    counter_w = counter_mean_power_w(t_before, t_after, counter_mj, start, stop)
    assert counter_w == pytest.approx(true_w, rel=0.01)
    ratios = {}
    for window_ms in (25.0, 1000.0):
        updates = 30 * MS + np.arange(int(end / (100 * MS))) * 100 * MS  # in phase with the load's periods
        level = 80.0 + 320.0 * duty(on, off, updates, window_ms * MS)
        k = np.searchsorted(updates, read_at, side="right") - 1
        keep = k >= 0
        ratios[window_ms] = mean_ratio(t_before[keep], level[k[keep]], start, stop, counter_w)
    assert ratios[1000.0] == pytest.approx(1.0, abs=0.03)
    assert abs(ratios[25.0] - 1.0) > 0.3  # a quarter of each period, always the same quarter


@pytest.mark.parametrize(
    ("sensor", "device", "evidence"), [("nvml:index=0", "cuda", "measured"), ("sim:clock=virtual", "cpu", "modeled")]
)
def test_the_end_to_end_plan_is_valid_and_declares_what_its_sensor_gives(
    sensor: str, device: str, evidence: str
) -> None:
    """A plan error must not first show on a lent GPU: the plan validates, the collector takes its
    parameters, and the energy's declared evidence is the one the collector reports for the sensor."""
    from benchmarks.gpu_energy_e2e import RUNS, plan_yaml
    from prereg.plan import parse_plan
    from prereg_seed_studies.torch.collector import TorchMultisiteCollector, validate

    loaded = parse_plan(plan_yaml(sensor, device).encode())
    plan = loaded.plan
    params = dict(plan.experiment.params)
    assert params["sensor"] == sensor and params["device"] == device
    for arm in plan.arms.values():
        validate({**params, **arm})
    assert plan.metrics["energy"].evidence == evidence
    assert TorchMultisiteCollector.metric_evidence(params)["energy"] == evidence
    assert len(plan.arms) * len(plan.strata.factors["seed"]) == RUNS


@pytest.mark.subprocess
def test_without_a_gpu_the_whole_check_runs_on_a_simulated_meter(tmp_path: Path) -> None:
    """The plumbing of all three steps (load child, polling, collect probe, analysis, the tiny study,
    the table and the JSON) on a simulated meter whose counter updates every 100 ms."""
    pytest.importorskip("torch")
    out = tmp_path / "check.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_energy_check.py"),
            "--sensor",
            "sim:clock=real",
            "--load-device",
            "cpu",
            "--e2e-sensor",
            "sim:clock=virtual",
            "--e2e-device",
            "cpu",
            "--steady-s",
            "2",
            "--square-s",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(out.read_text())
    counter = result["counter"]
    # the update windows bracket the true 100 ms whatever the host's load: inner bound <= 100 <= outer bound
    assert counter["inner_period_ms"] <= 100.0 <= counter["conservative_period_ms"]
    assert counter["probe_period_ms"] is not None and counter["default_period_ms"] == 100.0
    assert result["power"]["power_usage"]["status"] != "ok"  # the simulated meter has no such signal
    assert result["e2e"]["status"] == "ok" and result["e2e"]["all_finite"] and len(result["e2e"]["runs"]) == 6
    assert "| 3 e2e | collect run + gates evaluate | ok" in proc.stdout


def test_an_earlier_result_is_never_replaced_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.gpu_energy_check import main

    out = tmp_path / "gpu_energy_check.json"
    out.write_text('{"an earlier run": true}\n')
    assert main(["--out", str(out)]) == 2
    assert out.read_text() == '{"an earlier run": true}\n'
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--force" in err[0]


@pytest.mark.subprocess(quick=True)  # under a second: it stops at NVML's init
def test_it_refuses_cleanly_without_a_gpu(tmp_path: Path) -> None:
    pytest.importorskip("pynvml")
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver: the refusal path cannot be exercised")
    except pynvml.NVMLError:
        pass
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_energy_check.py"), "--out", str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no NVIDIA GPU" in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.json").exists()
