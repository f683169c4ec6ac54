"""Power and sample size: TOSTER golden values, noncentral-t power against simulation, the pilot SD's
limit and expected power, and simulated power of exact methods."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from estimators import power as P


def test_toster_power_t_tost_paired_golden() -> None:
    # TOSTER power_t_TOST(n = 10, delta = 0, sd = 1 / sqrt(2), eqb = 1.5, alpha = 0.05, type = "paired")
    assert P.t_tost_power(10, 0.0, 1.0, -1.5, 1.5, 0.05) == pytest.approx(0.9932305, abs=1e-6)
    assert P.t_tost_power(10, 0.0, math.sqrt(2), -1.5, 1.5, 0.05) == pytest.approx(0.8509744, abs=1e-6)


@pytest.mark.parametrize(
    ("n", "delta", "sd", "low", "high"), [(3, 0.1, 1.0, -1.0, 1.2), (6, -0.2, 0.5, -0.6, 0.6), (2, 0.0, 0.5, -1.0, 1.2)]
)
def test_tost_power_against_simulation(n: int, delta: float, sd: float, low: float, high: float) -> None:
    rng = np.random.default_rng(n)
    x = rng.standard_normal((200_000, n)) * sd + delta
    m, se = x.mean(1), x.std(1, ddof=1) / math.sqrt(n)
    tc = stats.t.isf(0.05, n - 1)
    sim = float(np.mean((m - tc * se > low) & (m + tc * se < high)))
    assert P.t_tost_power(n, delta, sd, low, high, 0.05) == pytest.approx(sim, abs=4 * math.sqrt(0.25 / 200_000))


def test_one_sided_power_is_the_noncentral_t_and_matches_simulation() -> None:
    target = P.Target("upper", high=0.5)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((200_000, 12))
    t = (x.mean(1) - 0.5) / (x.std(1, ddof=1) / math.sqrt(12))
    sim = float(np.mean(t <= -stats.t.isf(0.05, 11)))
    assert P.t_power(12, 0.0, 1.0, target, 0.05) == pytest.approx(sim, abs=0.005)
    lower = P.Target("lower", low=-0.5)  # the mirror image
    assert P.t_power(12, 0.0, 1.0, lower, 0.05) == pytest.approx(P.t_power(12, 0.0, 1.0, target, 0.05), abs=1e-12)
    # at the margin the power is alpha
    assert P.t_power(12, 0.5, 1.0, target, 0.05) == pytest.approx(0.05, abs=1e-12)


def test_blocks_needed_is_the_smallest_n() -> None:
    target = P.Target("upper", high=0.5)
    n = P.blocks_needed(lambda k: P.t_power(k, 0.0, 1.0, target, 0.05), 0.8)
    assert n is not None
    assert P.t_power(n, 0.0, 1.0, target, 0.05) >= 0.8 > P.t_power(n - 1, 0.0, 1.0, target, 0.05)
    # the normal-theory formula is a close lower bound
    z = (stats.norm.isf(0.05) + stats.norm.ppf(0.8)) ** 2 / 0.25
    assert z <= n <= z + 3
    assert P.blocks_needed(lambda k: 0.1, 0.8, n_max=64) is None


def test_sd_upper_limit_and_expected_power() -> None:
    assert P.sd_upper_limit(1.0, 9, 0.8) == pytest.approx(math.sqrt(9 / stats.chi2.ppf(0.2, 9)))
    target = P.Target("upper", high=0.5)
    exp = P.expected_t_power(27, 0.0, 1.0, 9, target, 0.05)
    # by simulation: sigma drawn from the pilot's distribution, then a study, then the t test
    rng = np.random.default_rng(2)
    sig = np.sqrt(9 / rng.chisquare(9, 100_000))
    x = rng.standard_normal((100_000, 27)) * sig[:, None]
    t = (x.mean(1) - 0.5) / (x.std(1, ddof=1) / math.sqrt(27))
    assert exp == pytest.approx(float(np.mean(t <= -stats.t.isf(0.05, 26))), abs=0.006)
    assert exp < P.t_power(27, 0.0, 1.0, target, 0.05)  # uncertainty about the SD costs power here
    tost = P.Target("within", -0.8, 0.8)
    assert P.expected_t_power(20, 0.0, 0.6, 9, tost, 0.05) == pytest.approx(
        P.expected_power(lambda s: P.t_power(20, 0.0, s, tost, 0.05), 0.6, 9), abs=1e-9
    )


def test_detectable_margin_gives_the_target_power() -> None:
    target = P.Target("upper", high=0.5)
    m = P.detectable_margin(20, 0.1, 1.0, target, 0.05, 0.8)
    assert isinstance(m, float)
    assert P.t_power(20, 0.1, 1.0, P.Target("upper", high=m), 0.05) == pytest.approx(0.8, abs=1e-6)
    lo, hi = P.detectable_margin(20, 0.0, 1.0, P.Target("within", -1.0, 1.0), 0.05, 0.9)  # type: ignore[misc]
    assert P.t_tost_power(20, 0.0, 1.0, lo, hi, 0.05) == pytest.approx(0.9, abs=1e-6)


def test_target_of_rule() -> None:
    assert P.Target.of_rule("upper < 1.05", math.log) == P.Target("upper", high=math.log(1.05))
    assert P.Target.of_rule("within [-1, 2]") == P.Target("within", -1.0, 2.0)
    with pytest.raises(ValueError):
        P.Target.of_rule("estimate < 1")


@pytest.mark.slow
def test_simulated_power_of_an_exact_method_is_seeded_and_close_to_t() -> None:
    pilot = np.random.default_rng(4).standard_normal(40)
    sim = P.simulated_power(pilot, 0.0, [16], [0.05], "upper < 0.7", "signflip", sims=400, seed=3)
    again = P.simulated_power(pilot, 0.0, [16], [0.05], "upper < 0.7", "signflip", sims=400, seed=3)
    assert sim == again
    sd = float(np.std(pilot, ddof=1))
    t = P.t_power(16, 0.0, sd, P.Target("upper", high=0.7), 0.05)
    assert abs(sim.power - t) < 4 * sim.se + 0.05  # the sign-flip test is nearly as powerful as t here
    # at the margin it passes about alpha of the time
    null = P.simulated_power(pilot, 0.7, [16], [0.05], "upper < 0.7", "signflip", sims=400, seed=3)
    assert null.power < 0.05 + 4 * math.sqrt(0.05 * 0.95 / 400)
