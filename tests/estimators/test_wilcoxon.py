"""Wilcoxon / Hodges–Lehmann: exact distribution, ties and zeros, large n."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import estimators as E
from estimators.wilcoxon import _walsh


def brute_signed_rank_p(d: np.ndarray, mu: float) -> tuple[float, float]:
    """Enumerate the sign-flip distribution of the ranks 1..n (untied statistic V) and compare
    it with the Walsh-average counts on each side of mu (Tukey's identity)."""
    n = d.size
    i, j = np.triu_indices(n)
    w = (d[i] + d[j]) / 2
    t_gt, t_lt = np.sum(w > mu), np.sum(w < mu)
    pats = np.array(list(itertools.product([0.0, 1.0], repeat=n)))
    v = pats @ np.arange(1, n + 1)
    return float(np.mean(v >= t_gt)), float(np.mean(v >= t_lt))


def brute_interval(d: np.ndarray, alpha: float) -> tuple[float, float]:
    """Invert the brute-force test on every Walsh average and every gap midpoint; the accepted
    set must be contiguous (checked) and its closure is the interval."""
    w = np.unique(_walsh(d))
    pts = np.concatenate([[w[0] - 1.0], w, 0.5 * (w[1:] + w[:-1]), [w[-1] + 1.0]])
    pts.sort()
    ok = np.array([min(brute_signed_rank_p(d, mu)) > alpha for mu in pts])
    idx = np.flatnonzero(ok)
    assert idx.size and np.all(np.diff(idx) == 1), "accepted set is not an interval"
    lo, hi = pts[idx[0]], pts[idx[-1]]
    lo = w[w <= lo].max() if np.any(w <= lo) else -np.inf
    hi = w[w >= hi].min() if np.any(w >= hi) else np.inf
    return float(lo), float(hi)


TIED = [
    np.array([1.0, 1.0, 2.0, -0.5, 3.0, 3.0, 0.0, 1.5]),  # ties and a zero
    np.array([0.2, 0.2, 0.2, -0.1, 0.5, 0.9, -0.3, 0.2, 1.1]),
    np.array([2.0, 2.0, -1.0, -1.0, 4.0, 0.0, 0.0, 3.0, 1.0, 5.0]),
    np.array([1.3, 2.3, 0.4, 0.6, 1.3, 2.0, 0.6, 0.7, 0.4, -0.9]),  # issue 10, case 5
]


@pytest.mark.parametrize("d", TIED)
@pytest.mark.parametrize("conf", [0.8, 0.9])
def test_ties_interval_equals_brute_force_inversion(d: np.ndarray, conf: float) -> None:
    res = E.wilcoxon_interval(d, conf)
    lo, hi = brute_interval(d, (1 - conf) / 2)
    assert res.lower == pytest.approx(lo, abs=1e-12)
    assert res.upper == pytest.approx(hi, abs=1e-12)
    assert res.exact and any("ties" in w for w in res.warnings)
    assert 0 < res.attained_confidence <= 1


def test_ties_p_values_equal_enumeration() -> None:
    d = np.array([1.0, 1.0, 2.0, -0.5, 3.0, 3.0, 0.0, 1.5, 2.0])
    for mu in (0.0, 1.0, 0.25, 1.5, -0.5, 2.75):
        assert E.one_sided_p_values("wilcoxon", d, mu) == pytest.approx(brute_signed_rank_p(d, mu), abs=1e-12)


@pytest.mark.parametrize("d", TIED)
def test_ties_are_conservative_against_any_jitter(d: np.ndarray) -> None:
    """Breaking the ties by a tiny jitter can only lower the p-values (never raise them)."""
    rng = np.random.default_rng(0)
    for mu in (0.0, float(np.median(d)), 0.45, 1.3):
        p = E.one_sided_p_values("wilcoxon", d, mu)
        for _ in range(20):
            q = E.one_sided_p_values("wilcoxon", d + rng.uniform(-1e-7, 1e-7, d.size), mu)
            assert q[0] <= p[0] + 1e-12 and q[1] <= p[1] + 1e-12


def test_issue_case_rule_p_value_agrees_with_interval() -> None:
    """d from issue 10: the interval's lower end is 0.4, so `lower > 0.45` fails and its
    p-value must not clear alpha = 0.05 (it was 0.0449 with an inconsistent construction)."""
    d = TIED[3]
    res = E.wilcoxon_interval(d, 0.9)
    assert (res.lower, res.upper) == pytest.approx((0.4, 1.35))
    p = E.rule_pvalue(E.Rule("lower", ">", 0.45), d, 0.9, "wilcoxon")
    assert p > 0.05
    assert E.rule_pvalue(E.Rule("lower", ">", 0.39), d, 0.9, "wilcoxon") <= 0.05


def test_one_tie_moves_an_end_no_further_than_the_data() -> None:
    """A 0.014 change in one value moves each end by at most 0.014 (order statistics)."""
    rng = np.random.default_rng(12)
    d = np.round(rng.normal(3.0, 2.0, 12), 1)
    for i in range(d.size):
        e = d.copy()
        e[i] += 0.014
        a, b = E.wilcoxon_interval(d, 0.95), E.wilcoxon_interval(e, 0.95)
        assert abs(a.lower - b.lower) <= 0.014 + 1e-12
        assert abs(a.upper - b.upper) <= 0.014 + 1e-12


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


def test_large_n_with_ties_uses_flagged_normal_approximation() -> None:
    d = np.round(np.random.default_rng(4).normal(0.5, 1.0, 420), 1)
    res = E.wilcoxon_interval(d, 0.9)
    assert not res.exact and any("normal approximation" in w for w in res.warnings)
    assert any("ties" in w for w in res.warnings)
    assert res.lower <= res.estimate <= res.upper
    for mu in (res.lower - 1e-9, res.upper + 1e-9):
        p = E.one_sided_p_values("wilcoxon", d, mu)
        assert min(p) <= 0.05  # just outside the interval: rejected
    p = E.one_sided_p_values("wilcoxon", d, res.lower)
    assert min(p) > 0.05  # the end itself is accepted (closed interval)
