"""Wilcoxon / Hodges–Lehmann: exact distribution, ties and zeros, large n."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

import estimators as E
from estimators.wilcoxon import _walsh


def brute_signed_rank_p(d: np.ndarray, mu: float) -> tuple[float, float]:
    """Enumerate the permutation distribution of the signed midranks (zeros dropped)."""
    e = d - mu
    e = e[e != 0]
    if e.size == 0:
        return 1.0, 1.0
    r = stats.rankdata(np.abs(e))
    t_obs = r[e > 0].sum()
    pats = np.array(list(itertools.product([0.0, 1.0], repeat=e.size)))
    t = pats @ r
    return float(np.mean(t >= t_obs - 1e-9)), float(np.mean(t <= t_obs + 1e-9))


def brute_interval(d: np.ndarray, alpha: float) -> tuple[float, float]:
    """Invert the brute-force test on every Walsh average and every gap midpoint."""
    w = np.unique(_walsh(d))
    pts = np.concatenate([[w[0] - 1.0], w, 0.5 * (w[1:] + w[:-1]), [w[-1] + 1.0]])
    pts.sort()
    acc = [mu for mu in pts if min(brute_signed_rank_p(d, mu)) > alpha]
    lo, hi = min(acc), max(acc)
    # closure: an accepted open gap extends to the Walsh average at its end
    lo = w[w <= lo].max() if np.any(w <= lo) else -np.inf
    hi = w[w >= hi].min() if np.any(w >= hi) else np.inf
    return float(lo), float(hi)


@pytest.mark.parametrize(
    "d",
    [
        np.array([1.0, 1.0, 2.0, -0.5, 3.0, 3.0, 0.0, 1.5]),  # ties and a zero
        np.array([0.2, 0.2, 0.2, -0.1, 0.5, 0.9, -0.3, 0.2, 1.1]),
        np.array([2.0, 2.0, -1.0, -1.0, 4.0, 0.0, 0.0, 3.0, 1.0, 5.0]),
    ],
)
@pytest.mark.parametrize("conf", [0.8, 0.9])
def test_ties_interval_equals_brute_force(d: np.ndarray, conf: float) -> None:
    res = E.wilcoxon_interval(d, conf)
    lo, hi = brute_interval(d, (1 - conf) / 2)
    assert res.lower == pytest.approx(lo, abs=1e-12)
    assert res.upper == pytest.approx(hi, abs=1e-12)
    assert res.exact and any("ties" in w for w in res.warnings)
    assert 0 < res.attained_confidence <= 1
    assert res.attained_confidence != conf  # a discrete level, reported as such


def test_ties_p_values_equal_enumeration() -> None:
    d = np.array([1.0, 1.0, 2.0, -0.5, 3.0, 3.0, 0.0, 1.5, 2.0])
    for mu in (0.0, 1.0, 0.25, 1.5, -0.5, 2.75):
        assert E.one_sided_p_values("wilcoxon", d, mu) == pytest.approx(
            brute_signed_rank_p(d, mu), abs=1e-12
        )


def test_no_ties_interval_equals_brute_force() -> None:
    d = np.random.default_rng(2).normal(0.3, 1.0, 9)
    res = E.wilcoxon_interval(d, 0.9)
    lo, hi = brute_interval(d, 0.05)
    assert (res.lower, res.upper) == pytest.approx((lo, hi), abs=1e-12)
    assert res.estimate == pytest.approx(np.median(_walsh(d)))


def test_small_n_gives_unbounded_interval_instead_of_silent_level_drop() -> None:
    res = E.wilcoxon_interval(np.array([0.3, 1.2, -0.4, 0.8, 0.5]), 0.95)  # P(V=0)=1/32 > 0.025
    assert res.lower == -np.inf and res.upper == np.inf
    assert any("unbounded" in w for w in res.warnings)


def test_large_n_uses_flagged_normal_approximation_close_to_exact() -> None:
    rng = np.random.default_rng(9)
    d = rng.normal(0.1, 1.0, 2000)
    res = E.wilcoxon_interval(d, 0.95)
    assert not res.exact and any("normal approximation" in w for w in res.warnings)
    assert res.lower < res.estimate < res.upper
    assert res.attained_confidence == pytest.approx(0.95, abs=1e-4)
    # at n = 400 (exact) vs 401 (normal) the two constructions nearly coincide
    d400 = rng.normal(0.0, 1.0, 401)
    a = E.wilcoxon_interval(d400[:400], 0.9)
    b = E.wilcoxon_interval(d400, 0.9)
    assert a.exact and not b.exact
    assert abs(a.attained_confidence - 0.9) < 1e-3 and abs(b.attained_confidence - 0.9) < 1e-3
    assert abs(a.lower - b.lower) < 0.05 and abs(a.upper - b.upper) < 0.05


def test_large_n_with_ties_uses_tie_corrected_normal() -> None:
    d = np.round(np.random.default_rng(4).normal(0.5, 1.0, 120), 1)
    res = E.wilcoxon_interval(d, 0.9)
    assert not res.exact and any("tie correction" in w for w in res.warnings)
    assert res.lower <= res.estimate <= res.upper
