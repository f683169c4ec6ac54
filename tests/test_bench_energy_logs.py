"""The energy-logs benchmark's core (benchmarks/bench_energy_logs.py) on a tiny configuration, and its
coverage and power judgements on cases whose answer is known by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchmarks.bench_energy_logs import (
    COUNTER_KINDS,
    PATTERNS,
    POWER_KINDS,
    SAVING,
    Cell,
    continue_pattern,
    judge,
    restart_pattern,
    simulate,
    summary,
    table,
    true_log_ratio,
)
from estimators.vocabulary import Rule

RULE = Rule.parse("upper < 0.95")
NOISE = np.array([-0.01, 0.0, 0.012, -0.004, 0.006, -0.002])  # the blocks' log ratios about log(0.85)


def _study(systematic_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """Six pairs (continue, restart) whose log ratios are log(0.85) + NOISE, each run's arm-dependent
    bound ``systematic_fraction`` of its energy."""
    restart = np.full(6, 1000.0)
    estimates = np.column_stack([SAVING * np.exp(NOISE) * restart, restart])
    return estimates, systematic_fraction * estimates


def _t_interval(d: np.ndarray) -> tuple[float, float]:
    half = stats.t.ppf(0.95, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    return d.mean() - half, d.mean() + half


def test_coverage_is_the_t_interval_when_the_bounds_are_zero() -> None:
    estimates, systematic = _study(0.0)
    lo, hi = _t_interval(math.log(SAVING) + NOISE)
    inside, outside = (lo + hi) / 2, hi + 0.001
    assert judge(estimates, systematic, inside, RULE) == (True, True)
    assert judge(estimates, systematic, outside, RULE)[0] is False


def test_coverage_is_widened_by_the_resolution_shift() -> None:
    """A value just outside the t interval is covered once each run may be off by 0.5% against the
    claim: the shift is mean(b) + t_q ||b||_2 / sqrt(n (n - 1)) with b = 2 x -log(1 - 0.005)."""
    estimates, systematic = _study(0.005)
    lo, hi = _t_interval(math.log(SAVING) + NOISE)
    b = 2 * -math.log(1 - 0.005)
    shift = b + stats.t.ppf(0.95, 5) * math.sqrt(6 * b * b) / math.sqrt(30)
    assert judge(estimates, systematic, hi + 0.9 * shift, RULE)[0] is True
    assert judge(estimates, systematic, hi + 1.1 * shift, RULE)[0] is False
    assert judge(estimates, systematic, lo - 0.9 * shift, RULE)[0] is True


def test_power_counts_a_pass_only_when_the_bounds_cannot_change_it() -> None:
    """A true 15% saving passes ``upper < 0.95`` with tight bounds; with bounds of 10% of each run,
    or a run without a bound, the gate could change and does not count as decided."""
    assert judge(*_study(0.001), math.log(SAVING), RULE)[1] is True
    assert judge(*_study(0.10), math.log(SAVING), RULE)[1] is False
    estimates, systematic = _study(0.001)
    systematic[2, 1] = math.inf
    assert judge(estimates, systematic, math.log(SAVING), RULE) == (True, False)


def test_true_log_ratio_from_the_patterns() -> None:
    assert true_log_ratio("plain", 600.0) == pytest.approx(math.log(SAVING))
    run = continue_pattern(14.0, 1.0).run_energy()  # two whole swing periods: 0.85 x 300 W x 14 s
    assert run == pytest.approx(SAVING * 300 * 14)
    assert true_log_ratio("end-burst", 14.0) == pytest.approx(math.log(run / (300 * 14 + 200 * 2)))
    assert restart_pattern("start-power", 14.0, 1.0).start_w == 120.0


def test_a_tiny_run_of_every_cell() -> None:
    """Two studies of 10 s runs: every cell is filled, every run's guaranteed bounds held the truth,
    and the table flags a cell below the coverage goal."""
    cells = simulate(10.0, 100.0, 2, seed=5)
    assert set(cells) == {(k, 10.0, 100.0, p) for k in COUNTER_KINDS + POWER_KINDS for p in PATTERNS}
    for cell in cells.values():
        assert cell.studies == 2 and cell.runs == 24
        assert cell.held == cell.runs
        assert 0 <= cell.covered <= 2 and 0 <= cell.passed <= 2
    without_power = simulate(10.0, 20.0, 1, seed=5)
    assert {k for k, *_ in without_power} == set(COUNTER_KINDS)


def test_a_cell_is_flagged_only_when_below_the_goal_beyond_monte_carlo_error() -> None:
    """80% of 200 studies is below 90% (its 95% MC upper bound 85.5%); 80% of 10 is not (104.8%)."""
    few = Cell(studies=10, covered=8, passed=0, runs=120, held=120, systematic_pct=[1.0])
    many = Cell(studies=200, covered=160, passed=0, runs=2400, held=2400, systematic_pct=[1.0])
    rows = table({("zeus-1window", 10.0, 20.0, "plain"): few, ("zeus-1window", 10.0, 100.0, "plain"): many})
    first, second = rows.splitlines()[2:]
    assert "80.0 +- 12.6 |" in first and "below" not in first
    assert "80.0 +- 2.8 **below**" in second and "100.00" in second
    assert "80.0 +- 2.8 **below** (100 ms, plain)" in summary({("zeus-1window", 10.0, 100.0, "plain"): many})
