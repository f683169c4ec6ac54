"""The sign-flip Monte Carlo's sequential stop: its risk bound, and its decisions against the full draw."""

from __future__ import annotations

import numpy as np
import pytest

from estimators import Rule, decide_rule, mc_stop
from estimators import _reference_cache as cache
from estimators._common import special


def _full_decision(rule: str, d: np.ndarray, resamples: int, seed: int, level: float) -> tuple[bool, float]:
    full = decide_rule(Rule.parse(rule), d, 0.90, "signflip", "difference", resamples, seed)
    return full.pvalue <= level * (1 + 1e-12), full.pvalue


@pytest.mark.parametrize(
    ("m", "a", "rest", "c"), [(1024, 20, 18_976, 999), (2048, 60, 17_952, 999), (1024, 3, 8_976, 99)]
)
def test_bound_for_covers_the_exact_risk_at_every_p(m: int, a: int, rest: int, c: int) -> None:
    """P(C_m <= a, C_N > c) computed exactly by convolution, at many p, is below the grid bound."""
    grid = mc_stop.p_grid([0.05])
    bound = mc_stop._bound_for(m, a, rest, c, grid)
    sp = special()
    for p in np.linspace(0.0005, 0.2, 400):
        s = np.arange(a + 1)
        head = np.exp(
            sp.gammaln(m + 1) - sp.gammaln(s + 1) - sp.gammaln(m - s + 1) + s * np.log(p) + (m - s) * np.log1p(-p)
        )
        exact = float(np.sum(head * sp.bdtrc(c - s, rest, p)))
        assert exact <= bound * (1 + 1e-9) + 1e-300


@pytest.mark.slow
def test_stopped_decisions_agree_with_the_full_draw_on_synthetic_streams() -> None:
    """The procedure on Bernoulli(p) streams (p near the levels, where stopping is risky), with a risk
    made large (0.2) so that wrong stops would show: the share of decisions that differ from the full
    draw's stays below it; with the shipped risk (1e-3) none differ."""
    rng = np.random.default_rng(20260101)
    resamples, levels = 20_000, (0.01, 0.05)
    total = resamples + 1
    c_lo, c_hi = mc_stop.critical_count(0.01, total), mc_stop.critical_count(0.05, total)
    marks = mc_stop.looks(resamples, levels)
    grid = mc_stop.p_grid(levels)
    for risk, trials in ((0.2, 300), (mc_stop.RISK, 300)):
        eps = risk / (2 * len(marks))
        wrong = stopped = 0
        for _ in range(trials):
            p = rng.choice([0.004, 0.008, 0.01, 0.012, 0.03, 0.045, 0.05, 0.055, 0.07])
            stream = rng.random(resamples) < p
            full = int(stream.sum())
            full_kind = "for" if full <= c_lo else "against" if full > c_hi else "middle"
            tail = mc_stop.Tail(0.0, False)
            for m in marks:
                tail.count = int(stream[:m].sum())
                settled = mc_stop.settle([tail], m, resamples, levels, eps, grid)
                if settled is not None:
                    stopped += 1
                    wrong += settled != full_kind
                    break
        assert stopped > trials // 4  # the procedure does stop (the test is not vacuous)
        assert wrong <= risk * trials
        if risk == mc_stop.RISK:
            assert wrong == 0


@pytest.mark.slow
def test_gate_decisions_agree_with_the_full_draw_on_many_seeds() -> None:
    """Real sign patterns: 150 seeds, contrasts whose rule p-value lies near alpha = 0.05 or alpha / K =
    0.01; every stopped decision is the full 20 000-pattern draw's at both levels, a result that ran to
    the full draw is the full draw's, and the procedure stops early for most seeds."""
    early = 0
    for seed in range(150):
        d = np.random.default_rng(seed).normal(0.0, 1.0, 40)
        # thresholds placing the full-draw p-value at about 0.003, 0.01, 0.05, 0.2 and 0.5
        for quantile in (0.003, 0.01, 0.05, 0.2, 0.5):
            u = float(
                d.mean()
                + np.quantile(np.random.default_rng(seed).standard_normal(4000), 1 - quantile)
                * d.std(ddof=1)
                / np.sqrt(d.size)
            )
            rule = f"upper < {u!r}"
            with cache.disabled():
                seq = decide_rule(
                    Rule.parse(rule), d, 0.90, "signflip", "difference", 20_000, seed, levels=(0.01, 0.05)
                )
            for level in (0.01, 0.05):
                full_holds, full_p = _full_decision(rule, d, 20_000, seed, level)
                assert (seq.pvalue <= level * (1 + 1e-12)) == full_holds, (seed, quantile, level, seq.pvalue, full_p)
            if seq.result.resamples < 20_000:
                early += 1
                assert "sequential Monte Carlo: stopped after" in seq.result.warnings[-1]
            else:
                assert seq.pvalue == _full_decision(rule, d, 20_000, seed, 0.05)[1]
    assert early > 300


def test_critical_count_matches_the_decision_rule() -> None:
    for total in (1025, 10_001, 100_001):
        for level in (0.05, 0.01, 0.025, 0.001):
            c = mc_stop.critical_count(level, total)
            assert (1 + c) / total <= level * (1 + 1e-12) < (2 + c) / total
