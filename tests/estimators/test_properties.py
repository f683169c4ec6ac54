"""Property tests: ordering, equivariance under shift and scale, ratio back-transform."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimators as E

# Contrasts on a grid of quarters: equal values stay equal and distinct ones distinct under
# the shifts and scalings below, so ties (and so the Wilcoxon branch) are preserved exactly.
contrast_vectors = st.lists(st.integers(-400, 400), min_size=2, max_size=12).map(
    lambda v: np.array(v, dtype=np.float64) / 4.0
)
methods = st.sampled_from(E.UNBOUNDED_METHODS)
levels = st.sampled_from([0.5, 0.8, 0.9, 0.95])
# more examples locally: ESTIMATORS_HYPOTHESIS_EXAMPLES=600 python -m pytest tests/estimators
MAX_EXAMPLES = int(os.environ.get("ESTIMATORS_HYPOTHESIS_EXAMPLES", "60"))
SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RESAMPLES = 400


def run(method: str, d: np.ndarray, conf: float, scale: str = "difference") -> E.IntervalResult:
    return E.interval(method, d, conf, scale, resamples=RESAMPLES, seed=1)


def close(a: float, b: float, scale: float) -> bool:
    if np.isinf(a) or np.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, scale)


@SETTINGS
@given(d=contrast_vectors, method=methods, conf=levels)
def test_interval_is_ordered_and_contains_estimate(d: np.ndarray, method: str, conf: float) -> None:
    r = run(method, d, conf)
    assert not np.isnan([r.lower, r.estimate, r.upper]).any()
    assert r.lower <= r.estimate <= r.upper
    assert r.n == d.size and r.confidence == conf and r.method == method
    if r.attained_confidence is not None:
        assert 0.0 < r.attained_confidence <= 1.0
    if r.pvalue is not None:
        assert 0.0 <= r.pvalue <= 1.0


@SETTINGS
@given(d=contrast_vectors, method=methods, conf=levels, c=st.integers(-200, 200))
def test_shift_equivariance(d: np.ndarray, method: str, conf: float, c: int) -> None:
    shift = c / 4.0
    a, b = run(method, d, conf), run(method, d + shift, conf)
    mag = float(np.max(np.abs(d))) + abs(shift)
    assert a.degenerate == b.degenerate
    assert close(b.estimate, a.estimate + shift, mag)
    assert close(b.lower, a.lower + shift, mag)
    assert close(b.upper, a.upper + shift, mag)


@SETTINGS
@given(d=contrast_vectors, method=methods, conf=levels, s=st.floats(0.01, 100.0))
def test_scale_equivariance(d: np.ndarray, method: str, conf: float, s: float) -> None:
    a, b = run(method, d, conf), run(method, d * s, conf)
    mag = float(np.max(np.abs(d))) * s
    assert close(b.estimate, a.estimate * s, mag)
    assert close(b.lower, a.lower * s, mag)
    assert close(b.upper, a.upper * s, mag)
    if a.attained_confidence is not None:
        assert b.attained_confidence == a.attained_confidence


@pytest.mark.filterwarnings("ignore::estimators.RatioInputWarning")  # generated log ratios may all lie in [0.5, 2]
@SETTINGS
@given(d=contrast_vectors, method=methods, conf=levels)
def test_ratio_scale_is_exp_of_log_scale(d: np.ndarray, method: str, conf: float) -> None:
    logs = d / 100.0  # log ratios within about +-1
    r, l = run(method, logs, conf, "ratio"), run(method, logs, conf, "difference")
    assert np.allclose([r.estimate, r.lower, r.upper], np.exp([l.estimate, l.lower, l.upper]), rtol=1e-12, atol=0)
    assert r.lower <= r.estimate <= r.upper and r.lower >= 0.0


@pytest.mark.filterwarnings("ignore::estimators.RatioInputWarning")  # generated log ratios may all lie in [0.5, 2]
@SETTINGS
@given(
    ratios=st.lists(st.floats(0.2, 5.0), min_size=2, max_size=10),
    base=st.lists(st.floats(1.0, 1000.0), min_size=10, max_size=10),
)
def test_ratio_contrast_recovers_geometric_mean_ratio(ratios: list, base: list) -> None:
    b = np.array(base[: len(ratios)])
    a = b * np.array(ratios)
    d = E.paired_contrast(np.column_stack([a, b]), [1.0, -1.0], scale="ratio")
    assert np.allclose(d, np.log(ratios), atol=1e-12)
    r = E.t_interval(d, 0.9, scale="ratio")
    assert np.isclose(r.estimate, np.exp(np.mean(np.log(ratios))), rtol=1e-10)
