"""Sign-flip interval: closed form (subset means) against brute-force test inversion."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import estimators as E
from estimators.signflip import EXACT_MAX_N, subset_means


def brute_pvalues(d: np.ndarray, mus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Enumerate all 2^n sign patterns of sum_i s_i (d_i - mu) at every mu on a grid."""
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=d.size)))  # (2^n, n)
    e = d[None, :] - mus[:, None]  # (grid, n)
    t = e @ signs.T  # (grid, 2^n)
    t_obs = e.sum(axis=1, keepdims=True)
    tol = 1e-9
    return np.mean(t >= t_obs - tol, axis=1), np.mean(t <= t_obs + tol, axis=1)


@pytest.mark.parametrize("n, seed, conf", [(6, 1, 0.9), (7, 2, 0.95), (8, 3, 0.8), (10, 4, 0.9)])
def test_interval_equals_brute_force_inversion(n: int, seed: int, conf: float) -> None:
    rng = np.random.default_rng(seed)
    d = rng.standard_exponential(n) - 0.8  # skewed, continuous
    res = E.signflip_interval(d, conf)
    alpha = (1 - conf) / 2
    span = d.max() - d.min()
    grid = np.linspace(d.min() - 0.1 * span, d.max() + 0.1 * span, 20001)
    step = grid[1] - grid[0]
    p_g, p_l = brute_pvalues(d, grid)
    accepted = grid[(p_g > alpha) & (p_l > alpha)]
    # the accepted set is an interval whose ends agree with the closed form to one grid step
    assert accepted.size > 0
    assert np.all(np.diff(accepted) < 1.5 * step), "brute-force confidence set is not an interval"
    assert abs(accepted.min() - res.lower) <= step
    assert abs(accepted.max() - res.upper) <= step
    k = int(np.floor(alpha * 2**n))
    assert res.attained_confidence == pytest.approx(1 - 2 * k / 2**n)
    assert res.exact and not res.monte_carlo and res.estimate == pytest.approx(d.mean())


def test_one_sided_p_values_equal_enumeration() -> None:
    rng = np.random.default_rng(11)
    d = rng.normal(0.5, 1.0, 9)
    mus = np.array([-1.0, 0.0, 0.37, 0.5, 1.2, d[3], d[:4].mean()])
    p_g, p_l = brute_pvalues(d, mus)
    for mu, g, l in zip(mus, p_g, p_l, strict=True):
        got = E.one_sided_p_values("signflip", d, float(mu))
        assert got == pytest.approx((g, l), abs=1e-12)


def test_subset_means_are_all_nonempty_subset_means() -> None:
    d = np.array([0.3, -1.1, 2.0, 0.7])
    expected = sorted(np.mean(c) for r in range(1, 5) for c in itertools.combinations(d, r))
    assert np.allclose(np.sort(subset_means(d)), expected, atol=1e-14)


def test_too_few_pairs_gives_unbounded_interval_with_warning() -> None:
    res = E.signflip_interval(np.array([0.1, 0.4, -0.2, 0.3, 0.5]), 0.95)  # 2^5 * 0.025 < 1
    assert res.lower == -np.inf and res.upper == np.inf
    assert res.attained_confidence == 1.0
    assert any("unbounded" in w for w in res.warnings)
    ratio = E.signflip_interval(np.array([0.1, 0.4, -0.2, 0.3, 0.5]), 0.95, scale="ratio")
    assert ratio.lower == 0.0 and ratio.upper == np.inf


def test_monte_carlo_beyond_exact_limit_agrees_with_enumeration() -> None:
    n = EXACT_MAX_N + 2
    d = np.random.default_rng(5).normal(0.2, 1.0, n)
    res = E.signflip_interval(d, 0.9, resamples=20000, seed=3)
    assert res.monte_carlo and not res.exact and res.resamples == 20000 and res.seed == 3
    assert any("Monte Carlo" in w for w in res.warnings)
    exact = np.sort(subset_means(d))  # 4M means: the exact answer for comparison
    k = int(np.floor(0.05 * 2**n))
    # MC quantile error: the ranks of the MC ends within the exact set have sd about
    # sqrt(alpha (1 - alpha) / B) * 2^n; allow 5 sd in rank.
    rank_sd = np.sqrt(0.05 * 0.95 / 20000) * 2**n
    lo_rank = np.searchsorted(exact, res.lower)
    hi_rank = np.searchsorted(exact, res.upper)
    assert abs(lo_rank - (k - 1)) < 5 * rank_sd
    assert abs(hi_rank - (exact.size - k)) < 5 * rank_sd
    again = E.signflip_interval(d, 0.9, resamples=20000, seed=3)
    assert again == res  # seeded: reproducible
