"""estimators.trend_ends: the fitted contrast at the covariate's ends, checked against statsmodels OLS."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimators import trend_ends


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(3, 30),
    seed=st.integers(0, 2**31 - 1),
    confidence=st.sampled_from([0.8, 0.9, 0.95]),
    slope=st.floats(-2, 2),
)
@pytest.mark.slow  # many generated cases or a reference library: the slow tier
def test_ends_equal_statsmodels_mean_prediction_interval(n: int, seed: int, confidence: float, slope: float) -> None:
    import statsmodels.api as sm

    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 5, n)
    d = 0.3 + slope * x + rng.normal(0, 0.5, n)
    ends = trend_ends(d, x, confidence)
    assert ends is not None and ends.df == n - 2
    fit = sm.OLS(d, sm.add_constant(x)).fit()
    at = np.array([[1.0, x.min()], [1.0, x.max()]])
    pred = fit.get_prediction(at)
    ci = pred.conf_int(alpha=1 - confidence)
    for end, mean, (lo, hi) in zip((ends.low, ends.high), pred.predicted_mean, ci, strict=True):
        assert end.estimate == pytest.approx(mean, rel=1e-9, abs=1e-9)
        assert end.lower == pytest.approx(lo, rel=1e-8, abs=1e-8)
        assert end.upper == pytest.approx(hi, rel=1e-8, abs=1e-8)
    assert ends.slope == pytest.approx(fit.params[1], rel=1e-9, abs=1e-9)


def test_ratio_scale_reports_ratios_and_degenerate_inputs_give_none() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0])
    d = np.log([0.8, 0.9, 1.1, 1.25])
    ends = trend_ends(d, x, 0.9, "ratio")
    assert ends is not None and ends.low.lower < ends.low.estimate < ends.low.upper
    assert 0.7 < ends.low.estimate < 0.9 and 1.1 < ends.high.estimate < 1.3
    assert trend_ends([0.1, 0.2], [1.0, 2.0]) is None  # two pairs: nothing left to estimate the spread
    assert trend_ends([0.1, 0.2, 0.3], [1.0, 1.0, 1.0]) is None  # one drawn value
    assert trend_ends([0.1, np.nan, 0.3], [1.0, 2.0, 3.0]) is None


def test_coverage_of_the_end_interval_under_the_model() -> None:
    """Simulated coverage of the low end's fitted mean at 90%: 2000 seeded datasets of n = 5."""
    rng = np.random.default_rng(7)
    hits = 0
    trials = 2000
    x = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    for _ in range(trials):
        d = 1.0 - 0.4 * x + rng.normal(0, 0.3, x.size)
        ends = trend_ends(d, x, 0.9)
        assert ends is not None
        hits += ends.low.lower <= 1.0 <= ends.low.upper
    assert abs(hits / trials - 0.9) < 0.02  # binomial sd 0.0067: three sd
