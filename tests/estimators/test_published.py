"""Validation against published values (R datasets) and reference implementations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import estimators as E

# R `sleep` data: extra hours of sleep, same 10 subjects under two drugs.
G1 = np.array([0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0])
G2 = np.array([1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4])
# R ?wilcox.test depression data (Hollander & Wolfe): first and second visit.
X = np.array([1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30])
Y = np.array([0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29])


def sleep_d() -> np.ndarray:
    return E.paired_contrast(np.column_stack([G2, G1]), [1.0, -1.0])


def test_sleep_t_interval_matches_r_and_scipy() -> None:
    res = E.t_interval(sleep_d(), 0.95)
    assert res.estimate == pytest.approx(1.58, abs=1e-12)
    # R: t.test(extra ~ group, data = sleep, paired = TRUE) -> 95% CI 0.7001142 2.4598858
    assert res.lower == pytest.approx(0.7001142, abs=5e-8)
    assert res.upper == pytest.approx(2.4598858, abs=5e-8)
    ref = stats.ttest_rel(G2, G1)
    ci = ref.confidence_interval(0.95)
    assert abs(res.lower - ci.low) < 1e-10 and abs(res.upper - ci.high) < 1e-10
    assert abs(res.pvalue - ref.pvalue) < 1e-10
    assert res.df == 9 and res.method == "t" and res.sidedness == "two-sided"
    assert res.confidence_interval() == (res.lower, res.upper)


@pytest.mark.parametrize("conf", [0.5, 0.8, 0.9, 0.99])
def test_t_interval_matches_scipy_at_other_levels(conf: float) -> None:
    res = E.t_interval(sleep_d(), conf)
    ci = stats.ttest_rel(G2, G1).confidence_interval(conf)
    assert abs(res.lower - ci.low) < 1e-10 and abs(res.upper - ci.high) < 1e-10


@pytest.mark.parametrize("low, high", [(0.5, 2.5), (-1.0, 3.0), (1.0, 2.0), (0.0, 1.7)])
def test_tost_matches_statsmodels(low: float, high: float) -> None:
    from statsmodels.stats.weightstats import ttost_paired  # lazy: statsmodels takes a second to import

    p = E.rule_pvalue(E.Rule("within", low=low, high=high), sleep_d(), 0.90, "t")
    p_ref, (_, p1, _), (_, p2, _) = ttost_paired(G2, G1, low, high)
    assert abs(p - p_ref) < 1e-10
    # the two one-sided pieces are the bound rules' p-values
    assert abs(E.rule_pvalue(E.Rule("lower", ">", low), sleep_d(), 0.9, "t") - p1) < 1e-10
    assert abs(E.rule_pvalue(E.Rule("upper", "<", high), sleep_d(), 0.9, "t") - p2) < 1e-10


@pytest.mark.parametrize("low, high", [(0.8, 1.25), (0.9, 1.6), (1.1, 1.5)])
def test_ratio_tost_matches_statsmodels_log_transform(low: float, high: float) -> None:
    from statsmodels.stats.weightstats import ttost_paired  # lazy: statsmodels takes a second to import

    a, b = G2 + 5.0, G1 + 5.0  # positive outcomes
    d = E.paired_contrast(np.column_stack([a, b]), [1.0, -1.0], scale="ratio")
    p = E.rule_pvalue(E.Rule("within", low=low, high=high), d, 0.9, "t", scale="ratio")
    p_ref = ttost_paired(a, b, low, high, transform=np.log)[0]
    assert abs(p - p_ref) < 1e-10
    res = E.t_interval(d, 0.95, scale="ratio")
    ci = stats.ttest_rel(np.log(a), np.log(b)).confidence_interval(0.95)
    assert abs(np.log(res.lower) - ci.low) < 1e-10 and abs(np.log(res.upper) - ci.high) < 1e-10
    assert res.estimate == pytest.approx(np.exp(np.mean(np.log(a / b))), rel=1e-12)
    assert res.null == 1.0 and res.scale == "ratio"


def test_depression_hodges_lehmann_matches_r() -> None:
    # R: wilcox.test(x, y, paired = TRUE, conf.int = TRUE)
    #    -> (pseudo)median 0.46, 95 percent CI 0.010 0.786, V = 40, p-value = 0.03906
    res = E.wilcoxon_interval(X - Y, 0.95)
    assert res.estimate == pytest.approx(0.46, abs=1e-12)
    assert res.lower == pytest.approx(0.010, abs=1e-12)
    assert res.upper == pytest.approx(0.786, abs=1e-12)
    # achieved level = 1 - 2 P(V <= 5), n = 9: P(V <= 5) = 10/512
    assert res.attained_confidence == pytest.approx(1 - 2 * 10 / 512, abs=1e-15)
    assert res.exact and not res.monte_carlo and res.warnings == ()
    assert res.pvalue == pytest.approx(stats.wilcoxon(X, Y, method="exact").pvalue, abs=1e-12)
    assert res.pvalue == pytest.approx(20 / 512, abs=1e-15)


def test_wilcoxon_exact_p_values_match_scipy_without_ties() -> None:
    rng = np.random.default_rng(7)
    for n in (5, 8, 13, 20):
        d = rng.normal(0.4, 1.0, n)
        res = E.wilcoxon_interval(d, 0.9)
        ref = stats.wilcoxon(d, method="exact").pvalue
        assert res.pvalue == pytest.approx(ref, rel=1e-12)
        for mu, alt in ((0.3, "greater"), (-0.2, "less")):
            p_g, p_l = E.one_sided_p_values("wilcoxon", d, mu)
            ref1 = stats.wilcoxon(d - mu, method="exact", alternative=alt).pvalue
            assert (p_g if alt == "greater" else p_l) == pytest.approx(ref1, rel=1e-12)
