"""Rules, rule p-values, multiplicity and measurement resolution."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import estimators as E


def contrasts(seed: int = 0, n: int = 8, loc: float = 0.3) -> np.ndarray:
    return np.random.default_rng(seed).normal(loc, 1.0, n)


def test_rule_holds_on_each_quantity() -> None:
    res = E.IntervalResult(estimate=1.0, lower=0.5, upper=1.5, confidence=0.9, method="t", n=6)
    assert E.rule_holds(E.Rule("upper", "<", 1.6), res)
    assert not E.rule_holds(E.Rule("upper", "<", 1.5), res)
    assert E.rule_holds(E.Rule("upper", "<=", 1.5), res)
    assert E.rule_holds(E.Rule("lower", ">", 0.4), res)
    assert not E.rule_holds(E.Rule("lower", ">=", 0.6), res)
    assert E.rule_holds(E.Rule("estimate", ">=", 1.0), res)
    assert E.rule_holds(E.Rule("within", low=0.4, high=1.6), res)
    assert not E.rule_holds(E.Rule("within", low=0.5, high=1.6), res)  # strict: both inside
    assert not E.rule_holds(E.Rule("within", low=0.0, high=1.2), res)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(quantity="median", op="<", threshold=1.0),
        dict(quantity="upper", op="!=", threshold=1.0),
        dict(quantity="upper", op="<"),
        dict(quantity="upper", op="<", threshold=float("nan")),
        dict(quantity="within", low=1.0),
        dict(quantity="within", low=2.0, high=1.0),
    ],
)
def test_bad_rules_rejected(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        E.Rule(**kwargs)


@pytest.mark.parametrize("rule", [E.Rule("estimate", "<", 1.0), E.Rule("upper", ">", 0.0), E.Rule("lower", "<=", 0.0)])
def test_rules_without_a_null_have_no_p_value(rule: E.Rule) -> None:
    with pytest.raises(ValueError, match="no one-sided null"):
        E.rule_pvalue(rule, contrasts(), 0.9, "t")


@pytest.mark.parametrize("conf", [0.8, 0.9, 0.95])
def test_t_rule_holds_iff_p_below_alpha(conf: float) -> None:
    alpha = (1 - conf) / 2
    for seed in range(5):
        d = contrasts(seed, n=6)
        res = E.t_interval(d, conf)
        for thr in np.linspace(res.lower - 0.5, res.upper + 0.5, 37):
            for rule in (E.Rule("upper", "<", thr), E.Rule("lower", ">", thr)):
                p = E.rule_pvalue(rule, d, conf, "t")
                assert E.rule_holds(rule, res) == (p < alpha)
            within = E.Rule("within", low=thr - 1.5, high=thr + 0.2)
            p = E.rule_pvalue(within, d, conf, "t")
            assert E.rule_holds(within, res) == (p < alpha)


@pytest.mark.parametrize("method", ["signflip", "wilcoxon"])
def test_exact_rule_holds_iff_p_at_most_alpha(method: str) -> None:
    conf, alpha = 0.9, 0.05
    for seed in range(4):
        d = contrasts(seed, n=9)
        res = E.interval(method, d, conf)
        # thresholds off the lattice of subset means / Walsh averages (random offsets)
        rng = np.random.default_rng(seed + 100)
        for thr in rng.uniform(res.lower - 0.5, res.upper + 0.5, 40):
            for rule in (E.Rule("upper", "<", thr), E.Rule("lower", ">", thr)):
                p = E.rule_pvalue(rule, d, conf, method)
                assert E.rule_holds(rule, res) == (p <= alpha)


def test_ratio_rule_thresholds_are_on_ratio_scale() -> None:
    a = np.array([10.0, 12.0, 9.5, 11.0, 10.4, 12.5])
    b = np.array([10.5, 12.2, 10.1, 11.9, 10.6, 13.0])
    d = E.paired_contrast(np.column_stack([a, b]), [1, -1], scale="ratio")
    res = E.t_interval(d, 0.9, scale="ratio")
    assert res.upper < 1.0
    rule = E.Rule("upper", "<", 1.0)
    assert E.rule_holds(rule, res) and E.rule_pvalue(rule, d, 0.9, "t", "ratio") < 0.05
    with pytest.raises(ValueError, match="positive"):
        E.rule_pvalue(E.Rule("upper", "<", -1.0), d, 0.9, "t", "ratio")


def test_constant_contrasts_warn_instead_of_silent_zero_p() -> None:
    d = np.full(6, 0.01)
    with pytest.warns(E.DegenerateContrastWarning):
        p = E.rule_pvalue(E.Rule("upper", "<", 0.02), d, 0.9, "t")
    assert p == 0.0
    with pytest.warns(E.DegenerateContrastWarning):
        assert E.rule_pvalue(E.Rule("upper", "<", 0.0), d, 0.9, "signflip") == 1.0


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
@pytest.mark.parametrize("method", ["none", "holm", "bonferroni"])
def test_adjust_p_values_match_statsmodels(method: str) -> None:
    from statsmodels.stats.multitest import multipletests  # lazy: statsmodels takes a second to import

    rng = np.random.default_rng(0)
    cases = [
        rng.uniform(0, 0.2, 7),
        np.array([0.01, 0.04, 0.04, 0.03, 0.5]),
        np.array([0.3]),
        np.array([0.0, 1.0, 0.02, 0.02]),
    ]
    for p in cases:
        ours = E.adjust_p_values(p, method)
        if method == "none":
            assert np.array_equal(ours, p)
        else:
            ref = multipletests(p, alpha=0.05, method=method)[1]
            assert np.allclose(ours, ref, atol=1e-15, rtol=0)


def test_adjust_p_values_validates() -> None:
    with pytest.raises(ValueError):
        E.adjust_p_values([0.1, 1.2], "holm")
    with pytest.raises(ValueError):
        E.adjust_p_values([0.1, np.nan], "holm")
    with pytest.raises(ValueError):
        E.adjust_p_values([0.1], "hochberg")


@pytest.mark.parametrize("method", ["t", "signflip", "wilcoxon", "bootstrap", "bca"])
def test_resolution_flips_with_wide_bounds_not_narrow(method: str) -> None:
    d = contrasts(3, n=12, loc=-0.8)
    res = E.interval(method, d, 0.9, resamples=2000)
    rule = E.Rule("upper", "<", res.upper + 0.05)  # holds, with a 0.05 margin
    narrow = E.resolution_check(rule, d, np.full(d.size, 0.001), 0.9, method, resamples=2000)
    wide = E.resolution_check(rule, d, np.full(d.size, 0.2), 0.9, method, resamples=2000)
    assert narrow.holds and not narrow.could_change and narrow.resolvable
    assert wide.holds and wide.could_change and not wide.resolvable
    assert wide.holds_at_extremes == (True, False)
    # the shift bound: max block bound for order-statistic methods, larger for t
    assert wide.interval_bound >= 0.2 - 1e-12


def test_resolution_within_uses_widened_and_narrowed_interval() -> None:
    d = contrasts(4, n=10, loc=0.0)
    res = E.t_interval(d, 0.9)
    rule = E.Rule("within", low=res.lower - 0.1, high=res.upper + 0.1)
    ok = E.resolution_check(rule, d, np.full(10, 0.01), 0.9, "t")
    bad = E.resolution_check(rule, d, np.full(10, 0.2), 0.9, "t")
    assert ok.holds and not ok.could_change
    assert bad.holds and bad.could_change
    (wl, wu), (nl, nu) = bad.extremes
    assert wl < res.lower < nl and nu < res.upper < wu


def test_t_interval_bound_is_attained_bound_under_perturbations() -> None:
    d = contrasts(5, n=6)
    b = np.random.default_rng(6).uniform(0.01, 0.1, 6)
    bound = E.interval_bound("t", b, 0.9)
    base = E.t_interval(d, 0.9)
    signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * 6)).reshape(6, -1).T
    for s in signs:  # every vertex of the bound box
        r = E.t_interval(d + s * b, 0.9)
        assert abs(r.lower - base.lower) <= bound + 1e-12
        assert abs(r.upper - base.upper) <= bound + 1e-12


def test_resolution_from_outcomes_ratio_and_infinite_bound() -> None:
    a = np.array([100.0, 120.0, 95.0, 110.0, 104.0, 125.0])
    b = np.array([110.0, 131.0, 104.0, 119.0, 115.0, 137.0])
    rule = E.Rule("upper", "<", 0.97)
    fine = E.resolution_check_outcomes(rule, np.column_stack([a, b]), [1, -1], 0.01, 0.9, "t", "ratio")
    coarse = E.resolution_check_outcomes(rule, np.column_stack([a, b]), [1, -1], 5.0, 0.9, "t", "ratio")
    assert fine.holds and not fine.could_change
    assert coarse.could_change
    hopeless = E.resolution_check_outcomes(
        rule, np.column_stack([a, b]), [1, -1], [[0.0, 200.0]], 0.9, "signflip", "ratio"
    )
    assert hopeless.interval_bound == np.inf and hopeless.could_change


def test_no_warnings_leak_from_normal_rule_evaluation() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        E.rule_pvalue(E.Rule("upper", "<", 1.0), contrasts(), 0.9, "wilcoxon")
