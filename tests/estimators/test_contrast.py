"""Paired contrasts, bound propagation, argument validation, degenerate contrasts."""

from __future__ import annotations

import numpy as np
import pytest

import estimators as E


def test_difference_and_interaction_contrasts() -> None:
    y = np.array([[3.0, 1.0, 2.0, 5.0], [4.0, 4.5, 1.0, 0.0]])
    assert np.allclose(E.paired_contrast(y[:, :2], [1, -1]), [2.0, -0.5])
    assert np.allclose(E.paired_contrast(y, [1, -1, -1, 1]), [5.0, -1.5])


def test_ratio_contrast_is_log_ratio() -> None:
    y = np.array([[2.0, 1.0], [3.0, 6.0]])
    assert np.allclose(E.paired_contrast(y, [1, -1], scale="ratio"), np.log([2.0, 0.5]))


@pytest.mark.parametrize(
    "y, c, scale, match",
    [
        (np.array([[1.0, 0.0]]), [1, -1], "ratio", "positive"),
        (np.array([[1.0, -2.0]]), [1, -1], "ratio", "positive"),
        (np.array([[1.0, np.nan]]), [1, -1], "difference", "NaN"),
        (np.array([[1.0, np.inf]]), [1, -1], "ratio", "NaN or inf"),
        (np.array([[1.0, 2.0]]), [1, 1], "difference", "sum to 0"),
        (np.array([[1.0, 2.0]]), [1, -1, 0], "difference", "length"),
        (np.array([1.0, 2.0]), [1, -1], "difference", "2-D"),
        (np.array([[1.0, 2.0]]), [1, -1], "log", "scale"),
    ],
)
def test_paired_contrast_errors(y: np.ndarray, c: list, scale: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        E.paired_contrast(y, c, scale)


def test_propagate_bounds() -> None:
    y = np.array([[10.0, 8.0], [4.0, 5.0]])
    assert np.allclose(E.propagate_bounds(y, [1, -1], 0.5), [1.0, 1.0])
    assert np.allclose(E.propagate_bounds(y, [2, -2], [0.1, 0.3]), [0.8, 0.8])
    got = E.propagate_bounds(y, [1, -1], 1.0, scale="ratio")
    assert np.allclose(got, [-np.log(0.9) - np.log(7 / 8), -np.log(0.75) - np.log(0.8)])
    # worst case is attained: moving each value to a bound end reaches it
    x, b = 10.0, 1.0
    assert -np.log(1 - b / x) == pytest.approx(max(abs(np.log((x + b) / x)), abs(np.log((x - b) / x))))
    assert np.isinf(E.propagate_bounds(y, [1, -1], [[5.0, 0.0]], "ratio")).tolist() == [False, True]
    with pytest.raises(ValueError):
        E.propagate_bounds(y, [1, -1], -0.1)


@pytest.mark.parametrize("method", E.UNBOUNDED_METHODS)
def test_argument_validation(method: str) -> None:
    with pytest.raises(ValueError, match="confidence"):
        E.interval(method, [0.1, 0.2, 0.3], 1.0)
    with pytest.raises(ValueError, match="confidence"):
        E.interval(method, [0.1, 0.2, 0.3], 0.0)
    with pytest.raises(ValueError, match="at least 2"):
        E.interval(method, [0.1], 0.9)
    with pytest.raises(ValueError, match="NaN"):
        E.interval(method, [0.1, np.nan, 0.3], 0.9)
    with pytest.raises(ValueError, match="scale"):
        E.interval(method, [0.1, 0.2, 0.3], 0.9, scale="percent")
    with pytest.raises(ValueError, match="1-D"):
        E.interval(method, [[0.1, 0.2], [0.3, 0.4]], 0.9)


def test_unknown_method_and_bad_resamples() -> None:
    with pytest.raises(ValueError, match="unknown interval method"):
        E.interval("jackknife", [0.1, 0.2, 0.3], 0.9)
    with pytest.raises(ValueError, match="resamples"):
        E.bootstrap_interval([0.1, 0.2, 0.3], 0.9, resamples=10)


@pytest.mark.parametrize("method", E.UNBOUNDED_METHODS)
@pytest.mark.parametrize(
    "d",
    [np.full(6, 0.02), np.zeros(4), np.array([1e-320, 2e-320, 1e-320, 2e-320])],  # last: std underflows to 0
)
def test_constant_contrasts_give_marked_degenerate_interval(method: str, d: np.ndarray) -> None:
    res = E.interval(method, d, 0.9, resamples=500)
    assert res.degenerate
    assert res.lower == res.upper == res.estimate
    assert res.pvalue is None  # never t = inf / p = 0
    assert any("no sampling variability" in w for w in res.warnings)
    assert np.isfinite(res.estimate)


@pytest.mark.parametrize("method", E.UNBOUNDED_METHODS)
def test_contrasts_differing_by_an_ulp_vary(method: str) -> None:
    d = 5.0 + np.array([0, 1e-15, -1e-15, 0, 1e-15, -1e-15])  # distinct floats, ~2e-16 relative
    res = E.interval(method, d, 0.8, resamples=500)
    assert not res.degenerate and np.isfinite(res.estimate)
    assert res.lower <= res.estimate <= res.upper


def test_ratio_results_are_back_transformed() -> None:
    d = np.log(np.array([0.9, 0.95, 0.85, 1.02, 0.93, 0.88]))
    for method in E.UNBOUNDED_METHODS:
        r = E.interval(method, d, 0.9, "ratio", resamples=999)
        dd = E.interval(method, d, 0.9, "difference", resamples=999)
        assert r.scale == "ratio" and r.null == 1.0 and dd.null == 0.0
        assert r.estimate == pytest.approx(np.exp(dd.estimate), rel=1e-12)
        assert r.lower == pytest.approx(np.exp(dd.lower), rel=1e-12)
        assert r.upper == pytest.approx(np.exp(dd.upper), rel=1e-12)
        assert r.pvalue == dd.pvalue
        assert r.analysis_scale() == pytest.approx((dd.estimate, dd.lower, dd.upper), rel=1e-12)
