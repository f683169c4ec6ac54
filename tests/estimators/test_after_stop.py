"""Estimates after a group-sequential stop (``estimators.after_stop``): R rpact's values, and what
the construction guarantees.

Reference: ``tests/fixtures/rpact/reference.json``, written by ``tests/fixtures/rpact/make_reference.R``
(rpact 3.3.4: ``getFinalPValue``, ``getFinalConfidenceInterval``, ``getRepeatedConfidenceIntervals``
on one-sample means, one-sided O'Brien-Fleming and Pocock type alpha spending, stops at look 1, 2,
3 and the final look, both directions, the normal approximation and the t test).

Tolerance: p-values relative 1e-6, estimates and interval ends absolute 1e-6 (the effects are of
order 1, the standard deviations about 1). rpact finds each root to 1e-6 on the standardized effect
(``C_ANALYSIS_TOLERANCE_DEFAULT``) and integrates on its own grid; ours finds roots to 1e-10 on
Simpson's rule with 801 points per look. The largest difference measured is 2.5e-7.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import special, stats

from estimators import sequential as S
from estimators.after_stop import after_stop, ordering_probability, repeated_intervals, stopping_look, z_from_pvalue
from estimators.tinterval import t_interval

REFERENCE = Path(__file__).parents[1] / "fixtures" / "rpact" / "reference.json"
SCENARIOS: list[dict[str, Any]] = json.loads(REFERENCE.read_text())
P_RTOL, EFFECT_ATOL = 1e-6, 1e-6


def _arr(s: dict[str, Any], key: str) -> NDArray[np.float64]:
    return np.atleast_1d(np.asarray(s[key], dtype=float))


def _observed(s: dict[str, Any]) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(overall means, their standard errors, z statistics) from the summary data, by scipy."""
    mean, sd, n = _arr(s, "overall_means"), _arr(s, "overall_sds"), _arr(s, "overall_n")
    se = sd / np.sqrt(n)
    stat = (1 if s["direction_upper"] else -1) * (mean - s["theta_h0"]) / se
    p = special.ndtr(-stat) if s["normal_approximation"] else stats.t.sf(stat, n - 1)
    return mean, se, np.array([z_from_pvalue(float(x)) for x in p])


@pytest.mark.parametrize("s", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_matches_rpact(s: dict[str, Any]) -> None:
    mean, se, z = _observed(s)
    crit, rates = _arr(s, "critical_values"), _arr(s, "information_rates")
    assert np.allclose(special.ndtr(-z), _arr(s, "overall_pvalues"), rtol=1e-9, atol=0)
    k = stopping_look(z, crit) or len(z)
    assert k == s["final_stage"]
    r = after_stop(rates, crit, s["alpha"], k, z[k - 1], mean[k - 1], se[k - 1], s["theta_h0"], s["direction_upper"])
    assert r.ordering_pvalue == pytest.approx(s["final_pvalue"], rel=P_RTOL)
    assert r.median_unbiased == pytest.approx(s["median_unbiased"], abs=EFFECT_ATOL)
    assert [r.final_lower, r.final_upper] == pytest.approx(s["final_ci"], abs=EFFECT_ATOL)
    dfs = None if s["normal_approximation"] else list(_arr(s, "overall_n") - 1)
    rci = repeated_intervals(mean, se, special.ndtr(-crit[: len(mean)]), dfs)
    assert [x.lower for x in rci] == pytest.approx(list(_arr(s, "rci_lower")), abs=EFFECT_ATOL)
    assert [x.upper for x in rci] == pytest.approx(list(_arr(s, "rci_upper")), abs=EFFECT_ATOL)


@pytest.mark.parametrize("s", [s for s in SCENARIOS if s["final_stage"] > 1][:3], ids=lambda s: s["name"])
def test_own_bounds_match_rpact(s: dict[str, Any]) -> None:
    """The project's own boundary (``estimators.sequential``) is rpact's, and with it the estimates."""
    spending = {"asOF": "obrien_fleming", "asP": "pocock"}[s["type_of_design"]]
    rates = tuple(float(x) for x in _arr(s, "information_rates"))
    own = S.efficacy_bounds(rates, s["alpha"], spending)
    assert own == pytest.approx(list(_arr(s, "critical_values")), abs=1e-5)
    mean, se, z = _observed(s)
    k = s["final_stage"]
    r = after_stop(rates, own, s["alpha"], k, z[k - 1], mean[k - 1], se[k - 1], s["theta_h0"], s["direction_upper"])
    assert r.ordering_pvalue == pytest.approx(s["final_pvalue"], rel=1e-4)
    assert [r.median_unbiased, r.final_lower, r.final_upper] == pytest.approx(
        [s["median_unbiased"], *s["final_ci"]], abs=1e-5
    )


def test_single_look_is_the_fixed_design() -> None:
    """One look: the ordering p-value is the fixed-design p-value, the median-unbiased estimate the
    naive one, the final interval the usual ``estimate -/+ z se``."""
    z, est, se = 2.3, 0.46, 0.2
    r = after_stop([1.0], [1.96], 0.025, 1, z, est, se)
    assert r.ordering_pvalue == pytest.approx(stats.norm.sf(z), rel=1e-12)
    assert r.median_unbiased == est
    assert [r.final_lower, r.final_upper] == pytest.approx([est - 1.959964 * se, est + 1.959964 * se], abs=1e-6)


def test_no_earlier_spending_gives_the_fixed_design_through_the_recursion() -> None:
    """A final look whose earlier looks spend nothing (bound inf): the recursion's ordering p-value,
    median-unbiased estimate and interval are the fixed design's at the final look."""
    z, se = 2.1, 0.25
    est = 0.3 + z * se
    r = after_stop([0.4, 1.0], [math.inf, 1.96], 0.025, 2, z, est, se, null=0.3)
    assert r.ordering_pvalue == pytest.approx(stats.norm.sf(z), rel=1e-8)
    assert r.median_unbiased == pytest.approx(est, abs=1e-8)
    q = stats.norm.isf(0.025)
    assert [r.final_lower, r.final_upper] == pytest.approx([est - q * se, est + q * se], abs=1e-7)


def test_early_stop_pulls_the_estimate_towards_the_null() -> None:
    """A stop at look 2 just past its bound: the median-unbiased estimate lies below the naive one
    (the winner's curse), the ordering p-value is below the alpha spent by look 2."""
    t = (1 / 3, 2 / 3, 1.0)
    b = S.efficacy_bounds(t, 0.025, "obrien_fleming")
    z, se = b[1] + 0.1, 0.2
    r = after_stop(t, b, 0.025, 2, z, z * se, se)
    assert r.median_unbiased < r.naive_estimate
    assert r.final_lower > 0  # a rejection: the final interval excludes the null
    spent = sum(S.crossing_probabilities(t, b, 0.0)[0][:2])
    assert r.ordering_pvalue < spent < 0.025


def test_ordering_is_monotone_in_the_look_and_the_statistic() -> None:
    t = (0.25, 0.5, 0.75, 1.0)
    b = S.efficacy_bounds(t, 0.025, "pocock")
    at_two = [ordering_probability(t, b, 2, z, 0.0) for z in (b[1], b[1] + 0.5, b[1] + 1.0)]
    assert at_two[0] > at_two[1] > at_two[2]
    first = ordering_probability(t, b, 1, b[0], 0.0)
    assert first < ordering_probability(t, b, 2, b[1], 0.0)
    assert all(first <= ordering_probability(t, b, 2, z, 0.0) for z in (b[1] + 2.0, 10.0))
    assert ordering_probability(t, b, 4, b[3], 0.0) == pytest.approx(0.025, abs=2e-6)


def test_repeated_interval_is_the_t_interval_at_the_looks_level() -> None:
    """With t quantiles the repeated interval is the gate's own t interval at ``1 - 2 a_k``."""
    d = np.random.default_rng(7).normal(0.4, 1.0, size=17)
    a = 0.004
    ref = t_interval(d, confidence=1 - 2 * a)
    (rci,) = repeated_intervals([d.mean()], [d.std(ddof=1) / math.sqrt(d.size)], [a], [d.size - 1])
    assert [rci.lower, rci.upper] == pytest.approx([ref.lower, ref.upper], rel=1e-10)
    (inf,) = repeated_intervals([0.1], [1.0], [0.0])
    assert inf.lower == -math.inf and inf.upper == math.inf


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="stop_look"):
        after_stop([0.5, 1.0], [2.5, 2.0], 0.025, 3, 2.0, 0.5, 0.2)
    with pytest.raises(ValueError, match="one efficacy bound per look"):
        after_stop([0.5, 1.0], [2.5], 0.025, 1, 2.0, 0.5, 0.2)
    with pytest.raises(ValueError, match="std_error"):
        after_stop([0.5, 1.0], [2.5, 2.0], 0.025, 2, 2.0, 0.5, 0.0)
    with pytest.raises(ValueError, match="p-value"):
        z_from_pvalue(0.0)


@pytest.mark.slow
@pytest.mark.parametrize("theta", [0.0, 2.8])
def test_ordering_is_uniform_under_the_truth_by_simulation(theta: float) -> None:
    """Simulated O'Brien-Fleming trials at drift ``theta`` (0: the null; 2.8: about 80% power):
    ``u = P_theta(stop at least as extreme as observed)`` is uniform (a Kolmogorov-Smirnov test at
    1e-3, 300 seeded trials), so the ordering p-value (``u`` at 0) is a valid p-value and
    ``P(median-unbiased <= theta) = 1/2``, ``P(final interval covers theta) = 1 - 2 alpha``;
    ``after_stop`` agrees with ``u`` on those events."""
    t = (1 / 3, 2 / 3, 1.0)
    b = S.efficacy_bounds(t, 0.025, "obrien_fleming")
    rng = np.random.default_rng(20_261_208)
    u: list[float] = []
    for rep in range(300):
        s = np.cumsum(rng.normal(theta * np.diff((0.0, *t)), np.sqrt(np.diff((0.0, *t)))))
        z = s / np.sqrt(t)
        k = stopping_look(z, b) or 3
        u.append(ordering_probability(t, b, k, z[k - 1], theta * math.sqrt(t[k - 1])))
        se = 1 / math.sqrt(t[k - 1])  # the effect theta: Z_k = theta sqrt(t_k) + noise, estimate Z_k / sqrt(t_k)
        if rep < 8:
            r = after_stop(t, b, 0.025, k, z[k - 1], z[k - 1] * se, se)
            assert (r.median_unbiased <= theta) == (u[-1] >= 0.5)
            assert (r.final_lower <= theta <= r.final_upper) == (0.025 <= u[-1] <= 0.975)
    assert stats.kstest(u, "uniform").pvalue > 1e-3
