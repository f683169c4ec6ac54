"""Power and sample size for paired gates, planned from a pilot's paired contrasts.

Conventions (all on the analysis scale: differences, or natural-log ratios for ratio contrasts).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special, stats

from .rules import decide_rule
from .vocabulary import Rule
from .wilcoxon import hodges_lehmann

#: midpoints of the chi-square quantiles that expected power averages over
_EXPECTED_POINTS = 400
#: the largest block count the searches consider
MAX_BLOCKS = 100_000
SIDES = ("upper", "lower", "within")
_TOST_NODES = 192


@dataclass(frozen=True)
class Target:
    """What a gate tests, on the analysis scale: ``side`` (``upper``: pass when theta < ``high``;
    ``lower``: pass when theta > ``low``; ``within``: both) and the thresholds it needs."""

    side: str
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {self.side!r}")
        if self.side in ("lower", "within") and self.low is None:
            raise ValueError(f"a {self.side} target needs low")
        if self.side in ("upper", "within") and self.high is None:
            raise ValueError(f"a {self.side} target needs high")
        if self.side == "within" and not (self.low is not None and self.high is not None and self.low < self.high):
            raise ValueError("a within target needs low < high")

    @classmethod
    def of_rule(cls, rule: Rule | str, to_analysis: Callable[[float], float] = float) -> Target:
        """The target of a tested ``pass_if`` rule (thresholds mapped by ``to_analysis``, e.g. log)."""
        rule = Rule.parse(rule)
        if not rule.tested:
            raise ValueError(f"rule '{rule}' implies no test, so it has no power")
        if rule.quantity == "within":
            assert rule.low is not None and rule.high is not None
            return cls("within", to_analysis(rule.low), to_analysis(rule.high))
        assert rule.threshold is not None
        if rule.quantity == "upper":
            return cls("upper", high=to_analysis(rule.threshold))
        return cls("lower", low=to_analysis(rule.threshold))

    def holds(self, delta: float) -> bool:
        """Whether ``delta`` lies in the alternative (the gate can gain power as n grows)."""
        ok = True
        if self.low is not None:
            ok &= delta > self.low
        if self.high is not None:
            ok &= delta < self.high
        return bool(ok)


def _check(n: int, sd: float, alpha: float) -> None:
    if n < 2:
        raise ValueError(f"a paired t test needs at least 2 blocks, got {n}")
    if not (math.isfinite(sd) and sd > 0):
        raise ValueError(f"sd must be positive and finite, got {sd}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"one-sided alpha must be in (0, 0.5), got {alpha}")


def t_one_sided_power(n: int, delta: float, sd: float, target: Target, alpha: float) -> float:
    """Exact power of the paired t gate ``upper < high`` or ``lower > low`` (noncentral t)."""
    _check(n, sd, alpha)
    df = n - 1
    tc = float(stats.t.isf(alpha, df))
    if target.side == "upper":
        assert target.high is not None
        return float(stats.nct.cdf(-tc, df, (delta - target.high) * math.sqrt(n) / sd))
    if target.side == "lower":
        assert target.low is not None
        return float(stats.nct.sf(tc, df, (delta - target.low) * math.sqrt(n) / sd))
    raise ValueError("use t_tost_power for a within target")


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(_TOST_NODES)


def t_tost_power_many(
    n: int, delta: float, sds: ArrayLike, low: float, high: float, alpha: float
) -> NDArray[np.float64]:
    """:func:`t_tost_power` at each SD of ``sds`` (vectorised)."""
    sd = np.atleast_1d(np.asarray(sds, dtype=np.float64))
    _check(n, float(np.min(sd)), alpha)
    df = n - 1
    tc = float(stats.t.isf(alpha, df))
    se = sd / math.sqrt(n)
    # pass when low + tc s/sqrt(n) < m < high - tc s/sqrt(n); s = sd r / sqrt(df) with r ~ chi(df). Integrate
    # over r on [0, r_max] (the window is empty beyond), where the chi density is smooth and bounded.
    r_top = math.sqrt(float(special.chdtri(df, 1e-17)))
    r_max = np.minimum(math.sqrt(df) * (high - low) / (2.0 * tc * se), r_top)
    r = 0.5 * r_max[:, None] * (_GL_NODES[None, :] + 1.0)
    log_pdf = (
        (df - 1) * np.log(np.maximum(r, 1e-300))
        - 0.5 * r * r
        - ((df / 2.0 - 1.0) * math.log(2.0) + float(special.gammaln(df / 2.0)))
    )
    half = tc * se[:, None] * r / math.sqrt(df)
    hi = (high - half - delta) / se[:, None]
    lo = (low + half - delta) / se[:, None]
    window = np.maximum(0.0, special.ndtr(hi) - special.ndtr(lo)) * np.exp(log_pdf)
    value = 0.5 * r_max * (window @ _GL_WEIGHTS)
    return np.asarray(np.clip(value, 0.0, 1.0), dtype=np.float64)


def t_tost_power(n: int, delta: float, sd: float, low: float, high: float, alpha: float) -> float:
    """Exact power of the paired t TOST (``within [low, high]``, each side at ``alpha``); module doc.
    Gauss-Legendre quadrature over the chi distribution of the SD (within 1e-8 of the TOSTER values)."""
    return float(t_tost_power_many(n, delta, [sd], low, high, alpha)[0])


def t_power(n: int, delta: float, sd: float, target: Target, alpha: float) -> float:
    """Exact power of a paired t gate with ``target`` at ``n`` blocks (module doc)."""
    if target.side == "within":
        assert target.low is not None and target.high is not None
        return t_tost_power(n, delta, sd, target.low, target.high, alpha)
    return t_one_sided_power(n, delta, sd, target, alpha)


def blocks_needed(
    power_at: Callable[[int], float], target_power: float, n_min: int = 2, n_max: int = MAX_BLOCKS
) -> int | None:
    """Smallest ``n >= n_min`` with ``power_at(n) >= target_power`` (power increasing in n), or
    None when even ``n_max`` blocks fall short."""
    if not 0 < target_power < 1:
        raise ValueError(f"target power must be in (0, 1), got {target_power}")
    if power_at(n_min) >= target_power:
        return n_min
    hi = n_min
    while power_at(hi) < target_power:
        if hi >= n_max:
            return None
        hi = min(n_max, hi * 2)
    lo = hi // 2 if hi // 2 >= n_min else n_min  # power_at(lo) < target
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power_at(mid) >= target_power:
            hi = mid
        else:
            lo = mid
    return hi


def sd_upper_limit(sd: float, df: int, level: float = 0.80) -> float:
    """One-sided upper ``level`` confidence limit of a standard deviation ``sd`` with ``df``
    degrees of freedom: ``sd sqrt(df / chi2_{1 - level}(df))``."""
    if df < 1:
        raise ValueError(f"an SD limit needs df >= 1, got {df}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return float(sd * math.sqrt(df / stats.chi2.ppf(1.0 - level, df)))


def sd_draws(sd: float, df: int, points: int = _EXPECTED_POINTS) -> NDArray[np.float64]:
    """``points`` equally weighted values of sigma with ``sigma^2 ~ sd^2 df / chi2(df)`` (quantile midpoints)."""
    q = (np.arange(points) + 0.5) / points
    return np.asarray(sd * np.sqrt(df / stats.chi2.ppf(q, df)), dtype=np.float64)


def expected_power(power_of_sd: Callable[[float], float], sd: float, df: int, points: int = _EXPECTED_POINTS) -> float:
    """Power averaged over the pilot SD's uncertainty (module doc: ``sigma^2 ~ sd^2 df / chi2(df)``)."""
    return float(np.mean([power_of_sd(float(s)) for s in sd_draws(sd, df, points)]))


def expected_t_power(n: int, delta: float, sd: float, df: int, target: Target, alpha: float) -> float:
    """Expected power of a t gate at ``n`` blocks given a pilot SD ``sd`` on ``df`` degrees of freedom."""
    sig = sd_draws(sd, df)
    if target.side != "within":
        _check(n, sd, alpha)
        tc = float(stats.t.isf(alpha, n - 1))
        if target.side == "upper":
            assert target.high is not None
            return float(np.mean(stats.nct.cdf(-tc, n - 1, (delta - target.high) * math.sqrt(n) / sig)))
        assert target.low is not None
        return float(np.mean(stats.nct.sf(tc, n - 1, (delta - target.low) * math.sqrt(n) / sig)))
    assert target.low is not None and target.high is not None
    return float(np.mean(t_tost_power_many(n, delta, sig, target.low, target.high, alpha)))


def detectable_margin(
    n: int, delta: float, sd: float, target: Target, alpha: float, target_power: float = 0.8
) -> float | tuple[float, float]:
    """The threshold a t gate at ``n`` blocks needs to reach ``target_power`` at ``delta`` and ``sd``
    (module doc): ``high`` for ``upper``, ``low`` for ``lower``, ``(low, high)`` around the target's
    centre for ``within``."""
    _check(n, sd, alpha)
    span = 50.0 * sd + 1.0

    def power_with(m: float) -> float:
        if target.side == "upper":
            return t_power(n, delta, sd, Target("upper", high=delta + m), alpha)
        if target.side == "lower":
            return t_power(n, delta, sd, Target("lower", low=delta - m), alpha)
        assert target.low is not None and target.high is not None
        centre = (target.low + target.high) / 2.0
        return t_power(n, delta, sd, Target("within", centre - m, centre + m), alpha)

    lo = 0.0 if target.side != "within" else abs(delta - (target.low + target.high) / 2.0)  # type: ignore[operator]
    m = float(
        optimize.brentq(lambda x: power_with(x) - target_power, lo + 1e-12 * (1 + span), lo + span, xtol=1e-10 * sd)
    )
    if target.side == "upper":
        return delta + m
    if target.side == "lower":
        return delta - m
    assert target.low is not None and target.high is not None
    centre = (target.low + target.high) / 2.0
    return centre - m, centre + m


def shifted_pilot(d: ArrayLike, delta: float, method: str) -> NDArray[np.float64]:
    """The pilot contrasts centred on the method's estimate and shifted to ``delta`` (module doc)."""
    arr = np.asarray(d, dtype=np.float64)
    centre = hodges_lehmann(arr) if method == "wilcoxon" else float(np.mean(arr))
    return arr - centre + float(delta)


@dataclass(frozen=True)
class SimulatedPower:
    """Simulated power: ``power`` (share passing), its binomial ``se``, ``sims``, ``seed``; for a
    sequential design ``expected_blocks`` and ``stopped_at`` (share stopping at each look)."""

    power: float
    se: float
    sims: int
    seed: int
    expected_blocks: float | None = None
    stopped_at: tuple[float, ...] | None = None


def simulated_power(
    pilot: ArrayLike,
    delta: float,
    looks: Sequence[int],
    levels: Sequence[float],
    rule: Rule | str,
    method: str,
    scale: str = "difference",
    sims: int = 2000,
    seed: int = 0,
    resamples: int = 9999,
    futility: Sequence[float | None] | None = None,
    bounds: tuple[float, float] | None = None,
) -> SimulatedPower:
    """Power of a gate decided by :func:`estimators.decide_rule` on studies resampled from the pilot.

    ``looks`` are block counts (one entry: a fixed design), ``levels`` the nominal one-sided level
    at each (the gate's alpha for a fixed design), ``futility`` optional p-value bounds (stop when the
    rule's p-value exceeds them; non-binding designs may ignore them). A study stops at the first
    look that passes. ``delta`` and ``pilot`` are on the analysis scale; ``rule`` on the reported one.
    ``bounds``: the contrasts' declared range (``betting`` needs it; its bets are tuned to the last look):
    the shifted pilot is clipped to it, which can move its mean slightly toward the range's inside."""
    rule = Rule.parse(rule)
    base = shifted_pilot(pilot, delta, method)
    if bounds is not None:
        base = np.clip(base, bounds[0], bounds[1])
    rng = np.random.default_rng(seed)
    n_max = int(looks[-1])
    passes, blocks_used = 0, 0.0
    stops = np.zeros(len(looks))
    for _ in range(sims):
        study = rng.choice(base, size=n_max, replace=True)
        used = n_max
        for k, (n_k, a_k) in enumerate(zip(looks, levels, strict=True)):
            if a_k <= 0:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dec = decide_rule(
                    rule,
                    study[: int(n_k)],
                    1.0 - 2.0 * a_k,
                    method,
                    scale,
                    resamples,
                    seed,
                    bounds=bounds,
                    horizon=n_max,
                )
            if dec.holds:
                passes += 1
                used = int(n_k)
                stops[k] += 1
                break
            fut = futility[k] if futility is not None else None
            if k < len(looks) - 1 and fut is not None and dec.pvalue is not None and dec.pvalue > fut:
                used = int(n_k)
                stops[k] += 1
                break
        else:
            stops[-1] += 1
        blocks_used += used
    p = passes / sims
    return SimulatedPower(
        power=p,
        se=math.sqrt(max(p * (1 - p), 1e-12) / sims),
        sims=sims,
        seed=seed,
        expected_blocks=blocks_used / sims if len(looks) > 1 else float(n_max),
        stopped_at=tuple(float(x) for x in stops / sims),
    )


def sequential_t_power(
    n_looks: Sequence[int],
    levels: Sequence[float],
    delta: float,
    sd: float,
    target: Target,
    sims: int = 20_000,
    seed: int = 0,
    futility: Sequence[float | None] | None = None,
) -> SimulatedPower:
    """Power of a sequential paired t gate on normal contrasts (mean ``delta``, SD ``sd``), seeded
    and vectorised (the same t test as :func:`estimators.t_interval`); stops at the first pass."""
    n = np.array([int(x) for x in n_looks])
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((sims, int(n[-1]))) * sd + delta
    s1, s2 = np.cumsum(x, 1)[:, n - 1], np.cumsum(x * x, 1)[:, n - 1]
    mean = s1 / n
    se = np.sqrt(np.maximum(s2 - n * mean * mean, 1e-300) / (n - 1) / n)
    p_up = stats.t.cdf((mean - (target.high if target.high is not None else 0.0)) / se, n - 1)  # H0 theta >= high
    p_lo = stats.t.sf((mean - (target.low if target.low is not None else 0.0)) / se, n - 1)  # H0 theta <= low
    p = {"upper": p_up, "lower": p_lo, "within": np.maximum(p_up, p_lo)}[target.side]
    lv = np.array(levels)
    passed = p <= lv * (1 + 1e-12)
    stop_fut = np.zeros_like(passed)
    if futility is not None:
        fb = np.array([np.inf if f is None else f for f in futility])
        stop_fut = p > fb
        stop_fut[:, -1] = False
    first_pass = np.where(passed.any(1), passed.argmax(1), n.size)
    first_fut = np.where(stop_fut.any(1), stop_fut.argmax(1), n.size)
    win = first_pass < first_fut
    stop = np.minimum(np.minimum(first_pass, first_fut), n.size - 1)
    power = float(np.mean(win))
    return SimulatedPower(
        power=power,
        se=math.sqrt(max(power * (1 - power), 1e-12) / sims),
        sims=sims,
        seed=seed,
        expected_blocks=float(np.mean(n[stop])),
        stopped_at=tuple(float(np.mean(stop == k)) for k in range(n.size)),
    )


__all__ = [
    "SIDES",
    "SimulatedPower",
    "Target",
    "blocks_needed",
    "detectable_margin",
    "expected_power",
    "expected_t_power",
    "sd_draws",
    "sd_upper_limit",
    "sequential_t_power",
    "shifted_pilot",
    "simulated_power",
    "t_one_sided_power",
    "t_power",
    "t_tost_power",
]
