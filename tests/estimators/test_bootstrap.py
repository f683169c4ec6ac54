"""Percentile and BCa bootstrap: agreement with scipy, degenerate data, seeding."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import estimators as E
from estimators.bootstrap import bootstrap_means, uniform_indices


def test_bca_matches_scipy_within_monte_carlo_error() -> None:
    d = np.random.default_rng(12).lognormal(0.0, 0.8, 300)
    ours = [E.bca_interval(d, 0.9, resamples=4000, seed=s) for s in range(4)]
    ref = [
        stats.bootstrap(
            (d,), np.mean, n_resamples=4000, method="BCa", confidence_level=0.9, rng=np.random.default_rng(100 + s)
        ).confidence_interval
        for s in range(4)
    ]
    ol, ou = np.array([r.lower for r in ours]), np.array([r.upper for r in ours])
    rl, ru = np.array([r.low for r in ref]), np.array([r.high for r in ref])
    # MC sd of an end: spread across seeds; difference of two 4-run means within 5 pooled SE
    for a, b in ((ol, rl), (ou, ru)):
        se = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 4)
        assert abs(a.mean() - b.mean()) < 5 * se + 1e-3 * np.std(d) / np.sqrt(d.size)


def test_percentile_matches_scipy_within_monte_carlo_error() -> None:
    d = np.random.default_rng(13).normal(1.0, 2.0, 200)
    ours = E.bootstrap_interval(d, 0.95, resamples=20000, seed=1)
    ref = stats.bootstrap(
        (d,), np.mean, n_resamples=20000, method="percentile", rng=np.random.default_rng(2)
    ).confidence_interval
    se_mean = np.std(d) / np.sqrt(d.size)
    # quantile MC sd ~ sqrt(q(1-q)/B) / phi(z_q) * se; 5 sd of the difference
    tol = 5 * np.sqrt(2) * np.sqrt(0.025 * 0.975 / 20000) / stats.norm.pdf(1.96) * se_mean
    assert abs(ours.lower - ref.low) < tol and abs(ours.upper - ref.high) < tol


def test_indices_are_uniform() -> None:
    bg = np.random.PCG64(0)
    for n in (2, 3, 6, 1000, 1025):
        v = uniform_indices(bg, n, 300_000)
        assert v.min() >= 0 and v.max() < n and v.dtype == np.int64
        counts = np.bincount(v, minlength=n)
        chi2 = float(np.sum((counts - v.size / n) ** 2 / (v.size / n)))
        assert stats.chi2.sf(chi2, n - 1) > 1e-4


def test_seeded_and_independent_of_worker_count() -> None:
    d = np.random.default_rng(3).normal(size=500)
    a = bootstrap_means(d, 5000, seed=42, workers=1)
    b = bootstrap_means(d, 5000, seed=42, workers=2)
    c = bootstrap_means(d, 5000, seed=43, workers=1)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert E.bca_interval(d, seed=9) == E.bca_interval(d, seed=9)


@pytest.mark.parametrize("method", ["bootstrap", "bca"])
@pytest.mark.parametrize(
    "d",
    [
        np.zeros(6),
        np.full(12, 3.5),
        np.array([1.0, 1.0, 1.0, 1.0, 5.0]),
        np.array([2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, -7.0]),
        np.array([0.0, 1.0]),
    ],
)
def test_degenerate_data_marked_never_nan(method: str, d: np.ndarray) -> None:
    res = E.interval(method, d, 0.9, resamples=999, seed=0)
    vals = (res.estimate, res.lower, res.upper)
    assert all(np.isfinite(v) for v in vals)
    assert res.degenerate == (np.ptp(d) == 0)  # degenerate means exactly: all contrasts equal
    assert res.lower <= res.estimate <= res.upper
    assert any("equal" in w for w in res.warnings)
    if np.ptp(d) == 0:
        assert res.lower == res.upper == res.estimate and res.pvalue is None
    else:
        assert res.lower < res.upper


def test_small_n_warns_under_coverage_and_large_n_does_not() -> None:
    small = E.bootstrap_interval(np.random.default_rng(1).normal(size=29), resamples=500)
    big = E.bootstrap_interval(np.random.default_rng(1).normal(size=30), resamples=500)
    assert any("under-cover" in w for w in small.warnings)
    assert not any("under-cover" in w for w in big.warnings)


@pytest.mark.parametrize("method", ["bootstrap", "bca"])
def test_bootstrap_p_values_invert_the_interval(method: str) -> None:
    d = np.random.default_rng(8).gamma(2.0, 1.0, 40) - 1.5
    for conf in (0.8, 0.9, 0.95):
        res = E.interval(method, d, conf, resamples=3000, seed=5)
        alpha = (1 - conf) / 2
        for thr in np.linspace(res.lower - 0.3, res.upper + 0.3, 41):
            up = E.Rule("upper", "<", float(thr))
            lo = E.Rule("lower", ">", float(thr))
            p_up = E.rule_pvalue(up, d, conf, method, resamples=3000, seed=5)
            p_lo = E.rule_pvalue(lo, d, conf, method, resamples=3000, seed=5)
            # away from the boundary (1e-9 in level) the decision and the p-value agree
            if abs(p_up - alpha) > 1e-9:
                assert E.rule_holds(up, res) == (p_up < alpha)
            if abs(p_lo - alpha) > 1e-9:
                assert E.rule_holds(lo, res) == (p_lo < alpha)


def test_indices_top_up_path_keeps_integer_dtype() -> None:
    # margin < 1 draws too few words on purpose, forcing the (normally rare) top-up path
    bg = np.random.PCG64(1)
    for n in (3, 5, 9, 17, 20, 33):
        for need in (1, 7, 60, 1000):
            v = uniform_indices(bg, n, need, margin=0.3)
            assert v.dtype == np.int64 and v.size == need
            assert v.min() >= 0 and v.max() < n
