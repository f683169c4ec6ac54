"""estimators.trend_pvalues: the t tests of the fitted contrast at the covariate's ends (statsmodels OLS
t_test), dual to trend_ends' intervals, and the flip's intersection-union p-value."""

from __future__ import annotations

import numpy as np
import pytest

from estimators import trend_ends
from estimators.trend_pvalues import TrendEndTests, flip_pvalue, trend_end_pvalues


@pytest.mark.slow  # a reference library (statsmodels): the slow tier
@pytest.mark.parametrize("seed", range(6))
def test_end_pvalues_equal_statsmodels_t_tests_of_the_fitted_mean(seed: int) -> None:
    import statsmodels.api as sm

    rng = np.random.default_rng(seed)
    n = 3 + seed * 3
    x = rng.uniform(0, 5, n)
    d = -0.2 + 0.1 * seed * x + rng.normal(0, 0.5, n)
    tests = trend_end_pvalues(d, x)
    assert tests is not None and tests.df == n - 2
    fit = sm.OLS(d, sm.add_constant(x)).fit()
    for x0, p, sign in ((x.min(), tests.low_pvalue, tests.low_sign), (x.max(), tests.high_pvalue, tests.high_sign)):
        ref = fit.t_test(np.array([[1.0, x0]]))
        assert p == pytest.approx(float(ref.pvalue), rel=1e-8, abs=1e-12)
        assert sign == int(np.sign(np.ravel(ref.effect)[0]))


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.99])
def test_an_end_p_value_below_alpha_exactly_when_the_interval_excludes_the_null(confidence: float) -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        x = rng.uniform(0, 3, 5)
        d = rng.normal(0.3 * (x - 1.5), 0.4)
        tests, ends = trend_end_pvalues(d, x), trend_ends(d, x, confidence)
        assert tests is not None and ends is not None
        for p, end in ((tests.low_pvalue, ends.low), (tests.high_pvalue, ends.high)):
            excludes = end.lower > 0 or end.upper < 0
            assert (p < 1 - confidence) == excludes


def test_the_flip_p_value_needs_opposite_signs_and_takes_the_larger_end() -> None:
    assert flip_pvalue(TrendEndTests(0.01, 0.03, -1, 1, 3)) == 0.03
    assert flip_pvalue(TrendEndTests(0.01, 0.03, 1, 1, 3)) == 1.0  # the same side at both ends: no flip
    assert flip_pvalue(None) == 1.0


def test_no_test_without_a_fit_or_without_residual_spread() -> None:
    assert trend_end_pvalues([0.1, 0.2], [1.0, 2.0]) is None
    assert trend_end_pvalues([0.1, 0.2, 0.3], [1.0, 1.0, 1.0]) is None
    assert trend_end_pvalues([0.1, np.nan, 0.3], [1.0, 2.0, 3.0]) is None
    assert trend_end_pvalues([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) is None  # an exact line: no sampling test


def test_under_a_flat_null_the_flip_p_value_is_valid() -> None:
    """P(flip p <= u) <= u for a contrast null at every x (simulated, 3 pairs as in the controller study)."""
    rng = np.random.default_rng(5)
    ps = []
    for _ in range(4000):
        x = np.log(rng.uniform(0.5, 5.0, 3))
        ps.append(flip_pvalue(trend_end_pvalues(rng.normal(0.0, 0.1, 3), x)))
    p = np.array(ps)
    for u in (0.01, 0.05, 0.1, 0.2):
        assert np.mean(p <= u) <= u  # the flip rate is far below u: each end alone is a level-u test
