"""Group-sequential boundaries: golden values (gsDesign, Jennison & Turnbull), an independent
check by scipy's multivariate normal, and properties of the spending and the bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from estimators import look_levels as L
from estimators import sequential as S
from estimators import spending as SP

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_gsdesign_obrien_fleming_golden() -> None:
    # gsDesign: sfLDOF, one-sided alpha 0.025, timing (0.5, 0.75, 1)
    d = S.design((0.5, 0.75, 1.0), 0.025, "obrien_fleming")
    assert [round(b.z_bound, 3) for b in d.looks] == [2.963, 2.359, 2.014]
    assert np.allclose([b.z_bound for b in d.looks], [2.963, 2.359, 2.014], atol=5e-4)
    assert np.allclose([b.cumulative_alpha for b in d.looks], [0.001525, 0.009649, 0.025], atol=1e-6)
    # the recursion's own crossing probabilities add up to the spending
    up, _ = S.crossing_probabilities(d.fractions, d.z_bounds, 0.0)
    assert np.allclose(np.cumsum(up), [0.001525, 0.009649, 0.025], atol=1e-6)
    assert np.allclose([b.nominal_alpha for b in d.looks], stats.norm.sf(d.z_bounds), rtol=1e-12)


@pytest.mark.parametrize(
    ("k", "pocock", "obf"), [(2, 2.178, 1.977), (3, 2.289, 2.004), (4, 2.361, 2.024), (5, 2.413, 2.040)]
)
def test_classical_constants_of_jennison_turnbull(k: int, pocock: float, obf: float) -> None:
    """Classical (not Lan-DeMets) two-sided 0.05 designs with equal spacing, Jennison & Turnbull
    Table 2.1 (C_P and C_B): the recursion's two-sided crossing probability at those constants."""
    t = [(j + 1) / k for j in range(k)]
    t[-1] = 1.0

    def total(bounds: list[float]) -> float:
        up, down = S.crossing_probabilities(t, bounds, 0.0, [-b for b in bounds])
        return sum(up) + sum(down)

    # the root lies within 5e-4 of the published constant (three decimals): the level brackets 0.05
    assert total([pocock - 5e-4] * k) > 0.05 > total([pocock + 5e-4] * k)
    shape = [math.sqrt(k / (j + 1)) for j in range(k)]
    assert total([(obf - 5e-4) * s for s in shape]) > 0.05 > total([(obf + 5e-4) * s for s in shape])


def test_single_look_is_the_fixed_design() -> None:
    for spec in ("obrien_fleming", "pocock", "power:2"):
        d = S.design([12], 0.05, spec)
        assert d.looks[0].z_bound == pytest.approx(stats.norm.isf(0.05), abs=1e-10)
        assert d.looks[0].nominal_alpha == pytest.approx(0.05, abs=1e-12)
        lv = L.gate_levels("t", 0.90, [12], spec)[0]
        assert lv.confidence == pytest.approx(0.90, abs=1e-12)


@pytest.mark.parametrize("spec", ["obrien_fleming", "pocock", "power:3"])
def test_boundary_matches_scipy_multivariate_normal(spec: str) -> None:
    """P(no crossing before k, Z_k >= b_k) by scipy's multivariate normal CDF (Genz), independent
    of the recursion: the cumulative crossing probability equals the spending."""
    t = (0.2, 0.4, 0.6, 0.8, 1.0)
    d = S.design(t, 0.025, spec)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    b = np.array(d.z_bounds)
    for k in range(1, len(t) + 1):
        mvn = stats.multivariate_normal(mean=np.zeros(k), cov=cov[:k, :k], seed=1, abseps=2e-6, releps=1e-6)
        no_cross = mvn.cdf(b[:k]) if k > 1 else stats.norm.cdf(b[0])
        assert 1 - no_cross == pytest.approx(d.looks[k - 1].cumulative_alpha, abs=2e-5)


@pytest.mark.slow
def test_power_against_monte_carlo() -> None:
    d = S.design([6, 12, 18, 24, 30], 0.05, "obrien_fleming", futility="nonbinding", beta=0.2)
    rng = np.random.default_rng(7)
    t = np.array(d.fractions)
    n = 200_000
    inc = rng.standard_normal((n, t.size)) * np.sqrt(np.diff(t, prepend=0.0)) + d.drift * np.diff(t, prepend=0.0)
    z = np.cumsum(inc, axis=1) / np.sqrt(t)
    up = z >= np.array(d.z_bounds)
    down = z < np.array(d.futility_z)
    first_up = np.where(up.any(1), up.argmax(1), 99)
    first_down = np.where(down.any(1), down.argmax(1), 99)
    se = math.sqrt(0.2 * 0.8 / n)
    assert np.mean(first_up < first_down) == pytest.approx(0.8, abs=4 * se)  # futility obeyed
    assert np.mean(up.any(1)) == pytest.approx(d.power(d.drift), abs=4 * se)  # ignored: non-binding
    assert d.power(d.drift, futility=True) == pytest.approx(0.8, abs=1e-6)
    stop = np.minimum(np.minimum(first_up, first_down), t.size - 1)
    assert np.mean(t[stop]) == pytest.approx(d.expected_fraction(d.drift, futility=True), abs=0.005)


def test_futility_is_non_binding_and_meets_at_the_end() -> None:
    plain = S.design([6, 12, 18], 0.05, "pocock")
    fut = S.design([6, 12, 18], 0.05, "pocock", futility="nonbinding", beta=0.1)
    assert fut.z_bounds == plain.z_bounds  # efficacy bounds ignore the futility bound
    assert fut.futility_z is not None and fut.futility_z[-1] == fut.z_bounds[-1]
    assert all(a <= b for a, b in zip(fut.futility_z, fut.z_bounds, strict=True))
    assert fut.power(fut.drift, futility=True) == pytest.approx(0.9, abs=1e-6)


def test_increments_for_exact_methods_and_small_t() -> None:
    looks = [6, 12, 18]
    exact = L.gate_levels("signflip", 0.90, looks, "pocock")
    assert [lv.basis for lv in exact] == ["increment"] * 3
    assert sum(lv.nominal_alpha for lv in exact) == pytest.approx(0.05, abs=1e-12)
    t = L.gate_levels("t", 0.90, looks, "pocock")
    assert [lv.basis for lv in t] == ["boundary"] * 3
    assert all(a.nominal_alpha >= b.nominal_alpha * (1 - 1e-12) for a, b in zip(t, exact, strict=True))
    small = L.gate_levels("t", 0.90, [L.T_BOUNDARY_MIN_BLOCKS - 1, 10], "pocock")
    assert small[0].basis == "increment"
    assert all(lv.confidence == pytest.approx(1 - 2 * lv.nominal_alpha) for lv in t)


def test_look_feasibility_for_exact_methods() -> None:
    # O'Brien-Fleming spends 1.2e-5 at a fifth of the information: six blocks can never pass a sign-flip
    lv = L.gate_levels("signflip", 0.90, [6, 12, 18, 24, 30], "obrien_fleming")
    assert L.look_feasibility("signflip", lv[0]) is not None
    assert "look 1" in (L.look_feasibility("signflip", lv[0]) or "")
    assert L.look_feasibility("signflip", lv[-1]) is None


@pytest.mark.parametrize("bad", ["obrien", "power", "power:", "power:-1", "power:x", "pocock:2", ""])
def test_spending_spec_errors(bad: str) -> None:
    with pytest.raises(ValueError):
        SP.parse_spending(bad)


def test_spending_spec_round_trip() -> None:
    for text in ("obrien_fleming", "pocock", "power:2", "power:0.5"):
        assert SP.parse_spending(text).spec() == text
    assert SP.parse_spending(" power:2.0 ").spec() == "power:2"


@pytest.mark.parametrize("bad", [[], [0, 3], [3, 3], [5, 4], [1.0, math.nan]])
def test_look_errors(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        SP.information_fractions(bad)


looks_strategy = (
    st.lists(st.integers(1, 60), min_size=1, max_size=6, unique=True).map(sorted).filter(lambda v: v[-1] >= 2)
)
specs = st.sampled_from(["obrien_fleming", "pocock", "power:1", "power:2", "power:3", "power:0.7"])
alphas = st.sampled_from([0.005, 0.025, 0.05, 0.1])


@SETTINGS
@given(looks=looks_strategy, spec=specs, alpha=alphas)
def test_spending_and_bound_properties(looks: list[int], spec: str, alpha: float) -> None:
    d = S.design(looks, alpha, spec)
    cum = [b.cumulative_alpha for b in d.looks]
    assert all(b >= a for a, b in zip(cum, cum[1:], strict=False))  # monotone
    assert cum[-1] == pytest.approx(alpha, abs=1e-15)  # all of alpha by the last look
    assert sum(b.alpha_increment for b in d.looks) == pytest.approx(alpha, rel=1e-12)
    up, _ = S.crossing_probabilities(d.fractions, d.z_bounds, 0.0)
    assert np.allclose(np.cumsum(up), cum, atol=1e-7)
    for b in d.looks:  # the boundary spends at least each look's increment at its own look
        assert b.nominal_alpha >= b.alpha_increment * (1 - 1e-9) - 1e-15  # (below 1e-15 nothing is spent)


@SETTINGS
@given(k=st.integers(2, 8), alpha=alphas)
def test_obrien_fleming_bounds_fall_with_equal_spacing(k: int, alpha: float) -> None:
    """Equally spaced looks: the O'Brien-Fleming-type bounds fall as information accrues (with uneven
    spacing they need not: a last look close to the one before can need a higher bound)."""
    z = S.design(list(range(1, k + 1)), alpha, "obrien_fleming").z_bounds
    assert all(b < a for a, b in zip(z, z[1:], strict=False))


def _t_false_pass_rate(looks: list[int], levels: list[float], sequences: int, seed: int) -> float:
    """Share of null sequences (normal contrasts, mean on the margin) whose t test passes at some look."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((sequences, looks[-1]))
    n = np.array(looks)
    s1, s2 = np.cumsum(x, 1)[:, n - 1], np.cumsum(x * x, 1)[:, n - 1]
    mean = s1 / n
    t = mean / np.sqrt((s2 - n * mean * mean) / (n - 1) / n)
    return float(np.mean((stats.t.sf(t, n - 1) <= np.array(levels)).any(axis=1)))


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["obrien_fleming", "pocock"])
def test_t_levels_hold_the_error_where_the_normal_levels_do_not(spec: str) -> None:
    looks = [2, 4, 6, 8, 10]
    t_lv = [lv.nominal_alpha for lv in L.gate_levels("t", 0.90, looks, spec)]
    z_lv = [b.nominal_alpha for b in S.design(looks, 0.05, spec).looks]
    assert t_lv[0] == pytest.approx(z_lv[0], rel=1e-12)  # the first look's t test is exact
    n = 100_000
    se = math.sqrt(0.05 * 0.95 / n)
    t_rate = _t_false_pass_rate(looks, t_lv, n, seed=11)
    assert abs(t_rate - 0.05) < 4 * se + 0.001  # 0.001: the levels' own simulation error
    if spec == "pocock":  # the canonical normal levels let too much through with 2 blocks per look
        assert _t_false_pass_rate(looks, z_lv, n, seed=11) > 0.05 + 4 * se


@pytest.mark.slow
def test_t_levels_approach_the_normal_levels_with_many_blocks() -> None:
    looks = [60, 120, 180]
    t_lv = [lv.nominal_alpha for lv in L.gate_levels("t", 0.95, looks, "pocock")]
    z_lv = [b.nominal_alpha for b in S.design(looks, 0.025, "pocock").looks]
    assert np.allclose(t_lv, z_lv, rtol=0.06)
