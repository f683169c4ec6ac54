"""The skew check: its direction, its false-alarm and detection rates (seeded simulation), the
symmetry note below the n it needs, and the resamples minimum."""

from __future__ import annotations

import numpy as np
import pytest

import estimators as E
from estimators.feasibility import SKEW_CHECK_MIN_N, skew_flagged, symmetry_note, symmetry_unchecked
from estimators.vocabulary import MIN_RESAMPLES, min_resamples

R = 2000  # a rate near 0.1 has Monte Carlo SE about 0.007


def rate(kind: str, n: int, rule: E.Rule | None, seed: int) -> float:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(R, n))
    if kind == "lognormal":
        x = np.exp(x)
    elif kind == "left":
        x = -np.exp(x)
    return float(np.mean([skew_flagged(row, rule) is not None for row in x]))


@pytest.mark.parametrize("rule", [E.Rule("upper", "<", 0.0), E.Rule("lower", ">", 0.0), None])
def test_false_alarms_on_normal_contrasts_are_about_ten_percent(rule):
    for n in (6, 10, 20):
        assert 0.07 < rate("normal", n, rule, 100 + n) < 0.13


def test_detection_of_lognormal_skew_against_an_upper_rule():
    upper = E.Rule("upper", "<", 0.0)
    assert rate("lognormal", 6, upper, 1) > 0.45
    assert rate("lognormal", SKEW_CHECK_MIN_N, upper, 2) > 0.85
    assert rate("lognormal", 20, upper, 3) > 0.93


def test_the_check_looks_in_the_direction_that_threatens_the_rule():
    upper, lower = E.Rule("upper", "<", 0.0), E.Rule("lower", ">", 0.0)
    assert rate("lognormal", 20, lower, 4) < 0.01  # right skew does not threaten a lower bound
    assert rate("left", 20, lower, 5) > 0.93 and rate("left", 20, upper, 6) < 0.01
    assert rate("lognormal", 20, E.Rule("within", low=-1.0, high=1.0), 7) > 0.9


def test_warning_text_names_direction_and_remedy():
    d = np.array([0.01, 0.02, 0.015, 0.03, 0.02, 0.01, 0.025, 2.5])
    (w,) = E.contrast_warnings(d, "t", "difference", E.Rule("upper", "<", 5.0))
    assert "skewed to the right, which threatens an upper bound" in w and "log-ratio contrast" in w
    assert E.contrast_warnings(d, "t", "difference", E.Rule("lower", ">", -5.0)) == ()


def test_symmetry_note_only_for_mean_methods_below_the_check_n():
    for method in ("t", "signflip", "bootstrap", "bca"):
        assert symmetry_unchecked(method, SKEW_CHECK_MIN_N - 1) and not symmetry_unchecked(method, SKEW_CHECK_MIN_N)
    assert not symmetry_unchecked("wilcoxon", 6)
    note = symmetry_note("t", 8)
    assert note is not None and "n = 8 cannot check" in note and symmetry_note("t", 40) is None


def test_resamples_minimum_matches_what_the_estimators_accept():
    d = np.random.default_rng(0).normal(size=20)
    assert min_resamples(0.9) == MIN_RESAMPLES == 100 and min_resamples(0.99) == 199
    E.bootstrap_interval(d, 0.9, resamples=MIN_RESAMPLES)
    with pytest.raises(ValueError, match="resamples must be an integer >= 100"):
        E.bootstrap_interval(d, 0.9, resamples=MIN_RESAMPLES - 1)
    # at 199 resamples the smallest bootstrap p-value 1/200 clears alpha = 0.005; at 198 it cannot
    far = d - 50.0
    assert E.decide_rule(E.Rule("upper", "<", 0.0), far, 0.99, "bootstrap", resamples=199).holds
    assert not E.decide_rule(E.Rule("upper", "<", 0.0), far, 0.99, "bootstrap", resamples=198).holds
