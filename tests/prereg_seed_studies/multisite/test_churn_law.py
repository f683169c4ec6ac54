"""The churn law: closed forms against independent numerics, the Monte Carlo against the law."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from prereg_seed_studies.multisite import churn_law as law

# (lam, C, R): lam*C from 1e-12 to 20, R from 0 to far beyond the MTBF
GRID = [
    (lam, C, R)
    for lam, C, R in itertools.product([1e-9, 1e-6, 1e-4, 1e-2, 1.0], [1e-3, 1.0, 300.0, 1e4], [0.0, 30.0, 1e5])
    if lam * C <= 20
]


def _log_eff_slope(w: float, lam: float, C: float) -> float:
    """d/dw log efficiency, written without Lambert W (R drops out)."""
    return 1.0 / w - lam / (-math.expm1(-lam * (w + C)))


def _numeric_optimum(lam: float, C: float, R: float) -> tuple[float, float]:
    """Independent of the closed form: maximise efficiency with ``minimize_scalar`` (bounded) over
    (0, 1/lam]; efficiency is flat at its maximum, so this locates w* only to ~sqrt(machine eps).
    Then refine with ``minimize_scalar`` (bounded) of the first-order residual |w d/dw log eff|
    around that point, which has a sharp minimum. Returns (coarse, refined)."""
    hi = 1.0 / lam
    coarse = minimize_scalar(
        lambda w: -law.efficiency(w, lam, C, R),
        bounds=(hi * 1e-12, hi),
        method="bounded",
        options={"xatol": hi * 1e-15, "maxiter": 5000},
    ).x
    fine = minimize_scalar(
        lambda u: abs(coarse * (1 + u) * _log_eff_slope(coarse * (1 + u), lam, C)),
        bounds=(-1e-3, 1e-3),
        method="bounded",
        options={"xatol": 1e-15, "maxiter": 5000},
    ).x
    return coarse, coarse * (1 + fine)


@pytest.mark.parametrize(("lam", "C", "R"), GRID)
def test_exact_optimum_matches_numeric_optimisation(lam: float, C: float, R: float) -> None:
    w_star = law.optimal_interval(lam, C)
    coarse, refined = _numeric_optimum(lam, C, R)
    assert refined == pytest.approx(w_star, rel=1e-9)
    assert coarse == pytest.approx(w_star, rel=1e-5)
    # no point the optimiser found is better than w*, beyond rounding
    assert law.efficiency(coarse, lam, C, R) <= law.efficiency(w_star, lam, C, R) * (1 + 1e-13)
    assert law.optimal_efficiency(lam, C, R) == pytest.approx(law.efficiency(w_star, lam, C, R), rel=1e-10)
    assert law.efficiency_loss(w_star, lam, C, R) == pytest.approx(0.0, abs=1e-10)


def test_optimum_is_independent_of_restart_cost() -> None:
    for lam, C, _ in GRID:
        w_star = law.optimal_interval(lam, C)
        for R in (0.0, 1.0, 1e3, 1e7):
            _, refined = _numeric_optimum(lam, C, R)
            assert refined == pytest.approx(w_star, rel=1e-9)


def test_lambert_branch_matches_series_at_the_seam() -> None:
    # a = lam*C just below and above 1e-4, where the series start hands over to lambertw
    below, above = law.optimal_interval(1.0, 1e-4 * (1 - 1e-12)), law.optimal_interval(1.0, 1e-4)
    assert below == pytest.approx(above, rel=1e-10)
    assert law.optimal_interval(1.0, 800.0) == 1.0  # lam*C huge: w* -> MTBF


@given(a=st.floats(1e-10, 30.0), frac=st.floats(1e-4, 0.5))
@settings(max_examples=200, deadline=None)
def test_exact_optimum_beats_its_neighbours(a: float, frac: float) -> None:
    lam, C, R = 1e-3, a * 1e3, 50.0
    w = law.optimal_interval(lam, C)
    best = law.efficiency(w, lam, C, R)
    assert law.efficiency(w * (1 + frac), lam, C, R) <= best
    assert law.efficiency(w * (1 - frac), lam, C, R) <= best
    assert 0 < best < 1 and 0 < lam * w < 1


def test_young_and_daly_approach_exact_as_lam_c_vanishes() -> None:
    lam = 1e-4
    prev_young = prev_daly = math.inf
    for a in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8):
        C = a / lam
        w = law.optimal_interval(lam, C)
        err_young = abs(law.young_interval(lam, C) / w - 1)
        err_daly = abs(law.daly_interval(lam, C) / w - 1)
        err_daly1 = abs(law.daly_first_order_interval(lam, C, R=C) / w - 1)  # lam R -> 0 with lam C
        assert err_young < prev_young and err_daly < prev_daly
        assert err_young == pytest.approx(math.sqrt(2 * a) / 3, rel=0.3)  # leading error term
        assert err_daly <= 0.2 * err_young  # second order in sqrt(lam C)
        assert err_daly1 <= 2 * err_young + 2 * a
        prev_young, prev_daly = err_young, err_daly
    assert prev_young < 1e-4 and prev_daly < 1e-7
    # Daly's first-order form keeps R: it overshoots by ~sqrt(1 + lam R) when R is not small
    assert law.daly_first_order_interval(lam, 1e-3, R=3 / lam) / law.young_interval(lam, 1e-3) == pytest.approx(2.0)


@pytest.mark.parametrize(("mtbf_min", "expected_min"), [(24 * 60, 117), (6 * 60, 57), (15, 9.1)])
def test_daly_higher_order_reproduces_the_papers_examples(mtbf_min: float, expected_min: float) -> None:
    # Daly (2006) Figs. 3-5: delta = 5 min, R = 10 min -> tau_opt 117, 57, 9.1 min
    got = law.daly_interval(1 / mtbf_min, 5.0)
    assert round(got, 1 if expected_min < 10 else 0) == expected_min
    assert law.daly_interval(1.0, 2.5) == 1.0  # C >= 2M: M


def test_segment_time_matches_its_definition() -> None:
    lam, C, R, w = 1 / 3600, 120.0, 300.0, 900.0
    assert law.segment_time(w, lam, C, R) == pytest.approx((3600 + 300) * math.expm1((w + C) / 3600), rel=1e-14)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError):
            law.efficiency(bad, lam, C, R)
        with pytest.raises(ValueError):
            law.optimal_interval(bad, C)


# ----------------------------------------------------------------------------- jobs and pools
def test_synchronous_job_efficiency_collapses_with_workers() -> None:
    lam, C, R = 1 / 86_400, 60.0, 120.0
    n = np.arange(1, 2001)
    eff = np.array([law.optimal_efficiency(law.job_rate(lam, int(k)), C, R) for k in n])
    assert np.all(np.diff(eff) < 0)
    thr = n * eff
    peak = int(np.argmax(thr))
    assert 0 < peak < n.size - 1 and thr[-1] < thr[peak]  # more workers eventually cost throughput
    assert law.pool_throughput([lam] * 10, C, R) == pytest.approx(10 * law.optimal_efficiency(10 * lam, C, R))
    assert law.job_rate([1e-3, 2e-3, 3e-3]) == pytest.approx(6e-3)


def _brute_best_k(base_rate: float, n_base: int, flaky: float, C: float, R: float, kmax: int) -> np.ndarray:
    """Throughput for k = 0..kmax with each job's optimum found by minimize_scalar (no Lambert W)."""
    out = []
    for k in range(kmax + 1):
        rate = n_base * base_rate + k * flaky
        res = minimize_scalar(
            lambda w, rate=rate: -law.efficiency(w, rate, C, R),
            bounds=(1e-9 / rate, 1 / rate),
            method="bounded",
            options={"xatol": 1e-12 / rate},
        )
        out.append((n_base + k) * -res.fun)
    return np.array(out)


@pytest.mark.parametrize(
    ("base_rate", "n_base", "flaky", "C", "R"),
    [
        (1 / 86_400, 8, 1 / 3_600, 60.0, 120.0),
        (1 / 86_400, 1, 1 / 20_000, 30.0, 0.0),
        (1 / 36_000, 8, 1 / 3_600, 120.0, 300.0),
        (1 / 1e6, 4, 1 / 50_000, 10.0, 600.0),
        (1 / 500, 2, 1 / 400, 5.0, 5.0),
    ],
)
def test_admission_threshold_against_brute_force(
    base_rate: float, n_base: int, flaky: float, C: float, R: float
) -> None:
    k = law.admission_threshold(base_rate, n_base, flaky, C, R)
    kmax = max(40, 3 * k)
    thr = _brute_best_k(base_rate, n_base, flaky, C, R, kmax)
    brute = int(np.argmax(thr))
    assert brute < kmax  # the brute-force range covers the maximum
    assert k == brute or thr[k] == pytest.approx(thr[brute], rel=1e-9)
    if k + 1 <= kmax:
        assert thr[k + 1] < thr[k]  # the next admission lowers throughput
    assert law.admission_threshold(base_rate, n_base, flaky, C, R, max_flaky=0) == 0


def test_break_even_rate_separates_helpful_from_harmful_admissions() -> None:
    base_rate, n_base, C, R = 1 / 86_400, 8, 60.0, 120.0
    base = law.pool_throughput([base_rate] * n_base, C, R)
    for k in (1, 4):
        r = law.break_even_rate(base_rate, n_base, C, R, k=k)
        assert law.pool_throughput([base_rate] * n_base + [r * (1 - 1e-6)] * k, C, R) > base
        assert law.pool_throughput([base_rate] * n_base + [r * (1 + 1e-6)] * k, C, R) < base
        assert law.pool_throughput([base_rate] * n_base + [r] * k, C, R) == pytest.approx(base, rel=1e-10)
    # far flakier than break-even: admit none
    assert law.admission_threshold(base_rate, n_base, 20 * law.break_even_rate(base_rate, n_base, C, R), C, R) == 0


def test_throughput_is_not_unimodal_in_flaky_workers() -> None:
    # just above the one-worker break-even rate, one flaky worker lowers throughput, yet a dozen
    # raise it: efficiency loss is concave in the job's rate. The threshold is the global best.
    base_rate, n_base, C, R = 1 / 86_400, 8, 60.0, 120.0
    flaky = 1.01 * law.break_even_rate(base_rate, n_base, C, R)
    thr = _brute_best_k(base_rate, n_base, flaky, C, R, 40)
    assert thr[1] < thr[0] and thr.max() > thr[0]
    k = law.admission_threshold(base_rate, n_base, flaky, C, R)
    assert k == int(np.argmax(thr)) and k > 5


# ---------------------------------------------------------------------------------- Monte Carlo
MC_CASES = [  # (w, rate, C, R): light, heavy and very heavy failure regimes
    (851.3, 1 / 3600, 120.0, 300.0),
    (96.0, 32 / 3600, 120.0, 300.0),
    (50.0, 1 / 100, 40.0, 0.0),
    (3000.0, 1 / 86_400, 10.0, 1000.0),
]


@pytest.mark.parametrize(("w", "rate", "C", "R"), MC_CASES)
def test_monte_carlo_agrees_with_the_law_within_its_interval(w: float, rate: float, C: float, R: float) -> None:
    exact = law.efficiency(w, rate, C, R)
    covered = 0
    for seed in range(20):
        mc = law.mc_efficiency(w, rate, C, R, segments=4000, seed=seed)
        assert mc.lower < mc.estimate < mc.upper and mc.n == 4000
        half = (mc.upper - mc.lower) / 2
        if seed < 5:
            assert abs(mc.estimate - exact) <= 1.5 * half
        covered += mc.lower <= exact <= mc.upper
    assert covered / 20 >= 0.8  # nominal 95 %


def test_monte_carlo_is_seeded_and_narrows_with_segments() -> None:
    args = (851.3, 1 / 3600, 120.0, 300.0)
    assert law.mc_efficiency(*args, segments=2000, seed=7) == law.mc_efficiency(*args, segments=2000, seed=7)
    assert law.mc_efficiency(*args, segments=2000, seed=7) != law.mc_efficiency(*args, segments=2000, seed=8)
    small, big = law.mc_efficiency(*args, segments=1000), law.mc_efficiency(*args, segments=64_000)
    assert (big.upper - big.lower) < (small.upper - small.lower) / 6


def _event_loop(
    gaps: np.ndarray, rate: float, T: float, n_full: int, R: float, T_last: float
) -> tuple[float, int, list[float]]:
    """Reference: the same history one event at a time (exposed clock; restarts failure-free).
    Returns wall time, failures and each full segment's wall time."""
    t, failures, it, seg, prev = 0.0, 0, iter(gaps / rate), [], 0.0
    next_fail = next(it)
    for i, length in enumerate([T] * n_full + ([T_last] if T_last > 0 else [])):
        while t + length > next_fail:
            failures += 1
            t = next_fail
            next_fail += next(it)
        t += length
        if i < n_full:
            seg.append(t + R * failures - prev)
            prev = t + R * failures
    return t + R * failures, failures, seg


@pytest.mark.parametrize(
    ("rate", "T", "n_full", "R", "T_last"),
    [
        (1 / 100, 60.0, 300, 20.0, 0.0),
        (1 / 100, 60.0, 300, 20.0, 35.0),
        (1 / 10, 30.0, 50, 0.0, 12.5),
        (1 / 1000, 1.0, 2000, 5.0, 0.25),
        (1 / 50, 80.0, 0, 3.0, 70.0),
    ],
)
def test_vectorised_history_equals_an_event_loop(rate: float, T: float, n_full: int, R: float, T_last: float) -> None:
    for seed in range(3):
        hist = law.simulate_job(law.GapStream(seed), rate, T, n_full, R, T_last=T_last, stats=True)
        wall, failures, seg = _event_loop(law.GapStream(seed).take(hist.failures + 1), rate, T, n_full, R, T_last)
        assert hist.failures == failures
        assert hist.wall_s == pytest.approx(wall, rel=1e-12)
        if n_full >= 2:
            assert hist.segment_stats is not None
            assert hist.segment_stats[0] == pytest.approx(np.mean(seg), rel=1e-12)
            assert hist.segment_stats[1] == pytest.approx(np.var(seg, ddof=1), rel=1e-9)


def test_gap_stream_prefix_does_not_depend_on_how_much_is_read() -> None:
    a, b = law.GapStream(3), law.GapStream(3)
    first = a.take(10).copy()
    assert np.array_equal(a.take(100_000)[:10], first)
    assert np.array_equal(b.take(50_000), a.take(50_000))
