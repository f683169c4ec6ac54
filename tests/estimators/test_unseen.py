"""What n identical contrasts cannot rule out (estimators.unseen): checked against exact probabilities of
distributions built to sit on the null, and against the rule p-value the interval must agree with."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import estimators as E
from estimators.unseen import unseen_interval, unseen_one_sided

RANGE = (-20.0, 20.0)


def test_thirty_zeros_bound_the_mean_at_1_9_on_a_range_of_plus_minus_20():
    res = unseen_interval(np.zeros(30), 0.90, "difference", "t", RANGE)
    assert math.isclose(res.upper, 20 * (1 - 0.05 ** (1 / 30)), rel_tol=1e-12)
    assert math.isclose(res.upper, 1.9007, abs_tol=1e-4) and math.isclose(res.lower, -res.upper, rel_tol=1e-12)
    assert not res.degenerate and res.bounds == RANGE


@settings(max_examples=300, deadline=None)
@given(
    atoms=st.lists(st.floats(-20, 19.5), min_size=1, max_size=4),
    weights=st.lists(st.floats(0.01, 1), min_size=5, max_size=5),
    n=st.integers(2, 40),
    conf=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
    mu=st.floats(-19, 19.9),
)
def test_a_constant_sample_rejects_a_true_null_at_most_alpha_of_the_time(atoms, weights, n, conf, mu):
    """Exact, not simulated: a distribution on the range with atoms below ``mu`` and the rest of its mass at
    the range's top, its mean at least ``mu`` (H0 of ``upper < mu`` true). The test rejects only when all n
    draws equal one atom whose p-value clears alpha: that probability is a sum of p_c^n, at most alpha."""
    low, high = RANGE
    below = sorted({a for a in atoms if a < mu})
    if not below:
        return
    w = np.array(weights[: len(below)])
    # scale the atoms' mass so the mean is exactly mu (the hardest null): sum p_c c + (1 - sum p_c) high = mu
    total = (high - mu) / float(np.sum(w * (high - np.array(below))))
    p = w * total
    assert math.isclose(float(np.sum(p * np.array(below)) + (1 - p.sum()) * high), mu, rel_tol=1e-9, abs_tol=1e-9)
    alpha = (1 - conf) / 2
    reject = sum(pc**n for c, pc in zip(below, p, strict=True) if unseen_one_sided(c, n, mu, (low, high))[1] <= alpha)
    assert reject <= alpha * (1 + 1e-9)


@settings(max_examples=200, deadline=None)
@given(value=st.floats(-19, 19), n=st.integers(2, 60), conf=st.sampled_from([0.8, 0.9, 0.95]), offset=st.floats(-3, 3))
def test_the_interval_is_the_set_of_thresholds_its_p_value_does_not_reject(value, n, conf, offset):
    d = np.full(n, value)
    res = unseen_interval(d, conf, "difference", "t", RANGE)
    alpha = (1 - conf) / 2
    for threshold in (res.upper + offset, res.lower + offset):
        if (
            not RANGE[0] < threshold < RANGE[1]
            or abs(threshold - res.upper) < 1e-9
            or abs(threshold - res.lower) < 1e-9
        ):
            continue
        dec = E.decide_rule(E.Rule("upper", "<", threshold), d, conf, "t", bounds=RANGE)
        assert dec.unseen and dec.constant and dec.pvalue is not None
        assert dec.holds == (threshold > res.upper) == (dec.pvalue <= alpha)


def test_the_issue_case_rare_restarts_never_pass_on_a_constant_sample():
    """a - b = 10 extra restarts with probability 0.1, else 0 (mean 1.0); rule 'upper < 0.5'. A sample of
    zeros (probability 0.9^n) once passed as vacuous; inside the range [-20, 20] it fails at every n to 30."""
    for n in (6, 10, 20, 30):
        dec = E.decide_rule(E.Rule("upper", "<", 0.5), np.zeros(n), 0.90, "t", bounds=RANGE)
        assert dec.unseen and not dec.holds and dec.result.upper > 0.5


def test_without_a_range_a_constant_sample_has_no_test_and_a_deterministic_one_is_judged_on_its_value():
    dec = E.decide_rule(E.Rule("upper", "<", 0.5), np.zeros(8), 0.90, "t")
    assert dec.constant and not dec.unseen and dec.pvalue is None and dec.result.degenerate
