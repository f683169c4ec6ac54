"""The exact Poisson test (estimators.poisson): against R's poisson.test, its guarantees, its power.

The reference values in tests/fixtures/poisson/reference.csv come from base R (R 4.2.2):
``Rscript tests/fixtures/poisson/make_reference.R > tests/fixtures/poisson/reference.csv``.
"""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimators.poisson import (
    garwood_interval,
    poisson_pmf,
    poisson_test,
    poisson_test_power,
    poisson_two_sided_p,
    rejection_region,
)

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "poisson" / "reference.csv"
CASES = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(REFERENCE.open())]
MAX_EXAMPLES = int(os.environ.get("ESTIMATORS_HYPOTHESIS_EXAMPLES", "60"))
SETTINGS = settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
means = st.floats(0.05, 300.0)


def test_the_reference_covers_both_sides_ties_and_zero_counts() -> None:
    assert len(CASES) >= 20
    assert any(c["count"] == 0 for c in CASES) and any(c["p_value"] == 1 for c in CASES)
    assert any(c["count"] < c["rate"] * c["exposure"] for c in CASES)
    assert any(c["count"] > c["rate"] * c["exposure"] for c in CASES)
    assert any(c["p_value"] < 1e-100 for c in CASES)  # a far tail: relative, not absolute, accuracy


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"x{c['count']:g}-T{c['exposure']:g}-r{c['rate']:g}")
def test_matches_r_poisson_test(case: dict[str, float]) -> None:
    r = poisson_test([case["count"]], [case["exposure"]], case["rate"], case["confidence"])
    assert r.p_value == pytest.approx(case["p_value"], rel=1e-9, abs=0)
    assert r.low == pytest.approx(case["low"], rel=1e-9, abs=1e-300)
    assert r.high == pytest.approx(case["high"], rel=1e-9)
    assert r.estimate == pytest.approx(case["estimate"], rel=1e-12)
    assert r.expected == pytest.approx(case["rate"] * case["exposure"], rel=1e-12)


def test_per_run_counts_exposures_and_rates_add_up() -> None:
    """The total of independent Poisson counts is Poisson with the summed mean: three runs equal one."""
    three = poisson_test([2, 0, 5], [10.0, 20.0, 5.0], [0.1, 0.1, 0.4])
    one = poisson_test([7], [35.0], 5.0 / 35.0)
    assert three.count == 7 and three.exposure == 35.0 and three.expected == pytest.approx(5.0)
    assert three.p_value == pytest.approx(one.p_value, rel=1e-12)
    assert (three.ratio, three.ratio_low, three.ratio_high) == pytest.approx((7 / 5, one.ratio_low, one.ratio_high))
    assert three.estimate == pytest.approx(7 / 35) and three.low == pytest.approx(one.low)


@pytest.mark.parametrize(
    ("counts", "exposures", "rate", "match"),
    [
        ([-1], [1.0], 1.0, "whole numbers"),
        ([1.5], [1.0], 1.0, "whole numbers"),
        ([], [], 1.0, "non-empty"),
        ([1], [math.nan], 1.0, "exposures"),
        ([1], [1.0], 0.0, "rate"),
        ([1], [0.0], 1.0, "total exposure"),
    ],
)
def test_bad_input_is_one_clear_error(counts, exposures, rate, match) -> None:
    with pytest.raises(ValueError, match=match):
        poisson_test(counts, exposures, rate)


@SETTINGS
@given(x=st.integers(0, 600), m=means)
def test_p_is_a_probability(x: int, m: float) -> None:
    assert 0.0 <= poisson_two_sided_p(x, m) <= 1.0


@SETTINGS
@given(m=means)
def test_p_is_one_at_the_mode(m: float) -> None:
    """floor(m) is the most probable count: every count is at most as probable, so p = 1."""
    assert poisson_two_sided_p(math.floor(m), m) == pytest.approx(1.0, abs=1e-12)


@SETTINGS
@given(m=means, step=st.integers(1, 5))
def test_p_falls_away_from_the_mean(m: float, step: int) -> None:
    """Further from the mean on one side, the count is less probable and its p-value no larger."""
    above = [k for k in range(math.ceil(m), math.ceil(m) + 60, step)]
    below = [k for k in range(math.floor(m), -1, -step)]
    for side in (above, below):
        ps = [poisson_two_sided_p(k, m) for k in side]
        assert all(b <= a * (1 + 1e-9) for a, b in zip(ps, ps[1:], strict=False))


@SETTINGS
@given(x=st.integers(0, 400), conf=st.floats(0.5, 0.999))
def test_garwood_interval_inverts_the_one_sided_tails(x: int, conf: float) -> None:
    """At the low end P(X >= x) = alpha/2, at the high end P(X <= x) = alpha/2 (the exact interval)."""
    from scipy import stats

    low, high = garwood_interval(x, conf)
    alpha = 1 - conf
    assert 0.0 <= low < x + 1 <= high or x == 0
    assert stats.poisson.cdf(x, high) == pytest.approx(alpha / 2, rel=1e-8)
    if x > 0:
        assert stats.poisson.sf(x - 1, low) == pytest.approx(alpha / 2, rel=1e-8)
    else:
        assert low == 0.0


def test_the_test_holds_its_level_exactly() -> None:
    """P(reject | H0) is at most the level (exact: summed over the rejection region)."""
    for m in (0.5, 2.0, 8.0, 30.0, 120.0):
        for level in (0.01, 0.05):
            size = float(np.sum(poisson_pmf(rejection_region(m, level), m)))
            assert 0.0 < size <= level, (m, level, size)


def test_power_is_exact_and_agrees_with_simulation() -> None:
    rng = np.random.default_rng(20261208)
    for m, factor in ((10.0, 2.0), (10.0, 0.5), (40.0, 0.5)):
        exact = poisson_test_power(m, factor * m, 0.05)
        region = set(rejection_region(m, 0.05).tolist())
        draws = rng.poisson(factor * m, size=20_000)
        simulated = float(np.mean([d in region for d in draws.tolist()]))
        assert abs(simulated - exact) < 4 * math.sqrt(exact * (1 - exact) / draws.size) + 1e-3
    assert poisson_test_power(10.0, 10.0, 0.05) <= 0.05  # at the null: the size
    assert poisson_test_power(50.0, 100.0, 0.05) > 0.99 and poisson_test_power(2.0, 4.0, 0.05) < 0.5
    with pytest.raises(ValueError, match="true_expected"):
        poisson_test_power(1.0, 20.0, 0.05)
