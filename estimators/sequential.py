"""Group-sequential boundaries: the nominal level each planned look of a gate may use.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from .spending import Spending, alpha_increments, information_fractions, parse_spending

FUTILITY = ("none", "nonbinding")
_GRID = 801  # Simpson points per look (odd)
_SD_RANGE = 12.0  # grid half-width in standard deviations where a side is unbounded


def _phi(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _simpson_weights(m: int, h: float) -> NDArray[np.float64]:
    w = np.ones(m)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * h / 3.0


class _Recursion:
    """The sub-density of ``S_k`` on the continuation region, carried look by look.

    ``fractions`` t_k, ``drift`` the mean of ``Z_K`` (``E S_k = drift * t_k``, ``var S_k = t_k``)."""

    def __init__(self, fractions: Sequence[float], drift: float) -> None:
        self.t = [float(x) for x in fractions]
        self.drift = float(drift)
        self.grid: NDArray[np.float64] | None = None  # S values of the previous look's continuation
        self.density: NDArray[np.float64] | None = None  # sub-density times Simpson weights
        self.k = 0  # looks consumed

    def _kernel_args(self, s_next: NDArray[np.float64] | float) -> tuple[NDArray[np.float64], float]:
        k, t = self.k, self.t
        dt = t[k] - t[k - 1]
        assert self.grid is not None
        arg = (np.asarray(s_next)[..., None] - self.grid[None, :] - self.drift * dt) / math.sqrt(dt)
        return arg, dt

    def upper_tail(self, z: float) -> float:
        """``P(continued to look k, Z_k >= z)`` for the look about to be taken."""
        if math.isinf(z):
            return 0.0 if z > 0 else self.mass()
        tk = self.t[self.k]
        if self.k == 0:
            return float(special.ndtr(-(z - self.drift * math.sqrt(tk))))
        arg, _ = self._kernel_args(z * math.sqrt(tk))
        assert self.density is not None
        return float(special.ndtr(-arg[0]) @ self.density)

    def lower_tail(self, z: float) -> float:
        """``P(continued to look k, Z_k < z)``."""
        if math.isinf(z):
            return self.mass() if z > 0 else 0.0
        tk = self.t[self.k]
        if self.k == 0:
            return float(special.ndtr(z - self.drift * math.sqrt(tk)))
        arg, _ = self._kernel_args(z * math.sqrt(tk))
        assert self.density is not None
        return float(special.ndtr(arg[0]) @ self.density)

    def mass(self) -> float:
        """Probability of reaching the look about to be taken."""
        if self.k == 0 or self.density is None:
            return 1.0
        return float(np.sum(self.density))

    def advance(self, lower: float, upper: float) -> None:
        """Take the look with continuation region ``lower < Z_k < upper``."""
        tk = self.t[self.k]
        sd, mean = math.sqrt(tk), self.drift * tk
        lo = lower * sd if math.isfinite(lower) else mean - _SD_RANGE * sd
        hi = upper * sd if math.isfinite(upper) else mean + _SD_RANGE * sd
        lo, hi = max(lo, mean - _SD_RANGE * sd), min(hi, mean + _SD_RANGE * sd)
        if hi <= lo:  # nothing continues
            self.grid, self.density = np.array([mean]), np.zeros(1)
            self.k += 1
            return
        grid = np.linspace(lo, hi, _GRID)
        w = _simpson_weights(_GRID, (hi - lo) / (_GRID - 1))
        if self.k == 0:
            dens = _phi((grid - mean) / sd) / sd
        else:
            arg, dt = self._kernel_args(grid)
            assert self.density is not None
            dens = (_phi(arg) / math.sqrt(dt)) @ self.density
        self.grid, self.density = grid, dens * w
        self.k += 1


def _check_inputs(fractions: Sequence[float], alpha: float) -> tuple[float, ...]:
    t = tuple(float(x) for x in fractions)
    if not t or any(not 0 < x <= 1 for x in t) or any(b <= a for a, b in zip(t, t[1:], strict=False)):
        raise ValueError(f"information fractions must be strictly increasing in (0, 1], got {list(fractions)}")
    if t[-1] != 1.0:
        raise ValueError(f"the last information fraction must be 1 (the full plan), got {t[-1]}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"one-sided alpha must be in (0, 0.5), got {alpha}")
    return t


def _solve_upper(rec: _Recursion, target: float) -> float:
    """The z with ``P(continue, Z_k >= z) = target`` (inf when nothing is to be spent)."""
    if target <= 1e-15:
        return math.inf
    if rec.k == 0:
        return float(-special.ndtri(target) + rec.drift * math.sqrt(rec.t[0]))
    f = lambda z: rec.upper_tail(z) - target  # noqa: E731
    lo, hi = -10.0, 40.0
    if f(lo) <= 0:
        return -math.inf
    return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12, maxiter=200))


def _solve_lower(rec: _Recursion, target: float) -> float:
    """The z with ``P(continue, Z_k < z) = target`` (-inf when nothing is to be spent)."""
    if target <= 1e-15:
        return -math.inf
    f = lambda z: rec.lower_tail(z) - target  # noqa: E731
    lo, hi = -40.0, 40.0
    if f(hi) <= 0:
        return math.inf
    return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12, maxiter=200))


def efficacy_bounds(fractions: Sequence[float], alpha: float, spending: str | Spending) -> tuple[float, ...]:
    """One-sided efficacy z bounds ``b_k`` at ``fractions`` for level ``alpha`` (module doc);
    ``inf`` where the spending releases nothing at that look."""
    t = _check_inputs(fractions, alpha)
    inc = alpha_increments(t, alpha, spending)
    rec, out = _Recursion(t, 0.0), []
    for k in range(len(t)):
        b = _solve_upper(rec, inc[k])
        out.append(b)
        if k < len(t) - 1:
            rec.advance(-math.inf, b)
    return tuple(out)


def crossing_probabilities(
    fractions: Sequence[float], upper: Sequence[float], drift: float, lower: Sequence[float] | None = None
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per look, ``(P(stop for efficacy at k), P(stop for futility at k))`` at ``drift`` (the mean
    of ``Z_K``), with continuation ``lower_k < Z_k < upper_k`` (no futility when ``lower`` is None)."""
    t = tuple(float(x) for x in fractions)
    low = tuple(lower) if lower is not None else (-math.inf,) * len(t)
    rec, up, down = _Recursion(t, drift), [], []
    for k in range(len(t)):
        a, b = low[k], upper[k]
        a = min(a, b)
        up.append(rec.upper_tail(b))
        down.append(rec.lower_tail(a))
        if k < len(t) - 1:
            rec.advance(a, b)
    return tuple(up), tuple(down)


def sequential_power(
    fractions: Sequence[float], upper: Sequence[float], drift: float, lower: Sequence[float] | None = None
) -> float:
    """Probability of crossing an efficacy bound at some look at ``drift`` (with the futility bound
    ``lower`` obeyed when given: the power if futility stops are taken)."""
    return float(sum(crossing_probabilities(fractions, upper, drift, lower)[0]))


def expected_fraction(
    fractions: Sequence[float], upper: Sequence[float], drift: float, lower: Sequence[float] | None = None
) -> float:
    """Expected information fraction at stopping (times ``n_K``: expected blocks) at ``drift``."""
    t = tuple(float(x) for x in fractions)
    up, down = crossing_probabilities(t, upper, drift, lower)
    stop = [u + d for u, d in zip(up, down, strict=True)]
    reach_last = 1.0 - sum(stop[:-1])
    return float(sum(tk * s for tk, s in zip(t[:-1], stop[:-1], strict=True)) + t[-1] * reach_last)


def fixed_drift(alpha: float, power: float) -> float:
    """The drift giving power ``power`` to a single-look one-sided z test at level ``alpha``:
    ``z_{1-alpha} + z_{power}``."""
    return float(-special.ndtri(alpha) + special.ndtri(power))


def design_drift(fractions: Sequence[float], upper: Sequence[float], power: float) -> float:
    """The drift at which the efficacy-only design has power ``power``."""
    f = lambda d: sequential_power(fractions, upper, d) - power  # noqa: E731
    return float(optimize.brentq(f, -5.0, 20.0, xtol=1e-10))


def futility_bounds(
    fractions: Sequence[float],
    upper: Sequence[float],
    beta: float,
    spending: str | Spending,
    drift: float | None = None,
) -> tuple[tuple[float, ...], float]:
    """Non-binding futility z bounds by beta-spending, and the drift used (module doc).

    With ``drift`` None it is solved so that the last futility bound meets the last efficacy bound;
    with a given ``drift`` the last bound is set equal to the efficacy bound."""
    t = tuple(float(x) for x in fractions)
    if not 0 < beta < 1:
        raise ValueError(f"beta must be in (0, 1), got {beta}")
    inc = alpha_increments(t, beta, spending)

    def bounds(d: float) -> tuple[list[float], float]:
        rec, out = _Recursion(t, d), []
        for k in range(len(t) - 1):
            a = min(_solve_lower(rec, inc[k]), upper[k])
            out.append(a)
            rec.advance(a, upper[k])
        return out, rec.lower_tail(upper[-1]) - inc[-1]

    if drift is None:
        lo, hi = 0.0, 20.0
        if bounds(lo)[1] <= 0:
            drift = lo
        else:
            drift = float(optimize.brentq(lambda d: bounds(d)[1], lo, hi, xtol=1e-10))
    out, _ = bounds(drift)
    return tuple(out) + (float(upper[-1]),), float(drift)


@dataclass(frozen=True)
class LookBoundary:
    """One planned look of a group-sequential design (one-sided, efficacy upper).

    ``fraction`` t_k; ``blocks`` n_k when the design was made from block counts; ``z_bound`` the
    efficacy bound b_k (inf: nothing to spend here); ``nominal_alpha`` ``1 - Phi(b_k)`` (the level a
    t-type test uses at this look); ``alpha_increment`` ``alpha(t_k) - alpha(t_{k-1})`` (the level
    any valid test may use: conservative); ``cumulative_alpha`` ``alpha(t_k)``; ``futility_z`` the
    non-binding futility bound a_k (None without futility) and ``futility_p`` ``1 - Phi(a_k)``: stop
    for futility when the rule's one-sided p-value exceeds it."""

    look: int
    fraction: float
    z_bound: float
    nominal_alpha: float
    alpha_increment: float
    cumulative_alpha: float
    blocks: int | None = None
    futility_z: float | None = None
    futility_p: float | None = None


@dataclass(frozen=True)
class SequentialDesign:
    """A group-sequential design: its looks, the spending and the (optional) futility design.

    ``drift`` is the design drift (mean of ``Z_K``) at which the design has power ``1 - beta``
    with its futility stops taken (the futility bounds are built at it); None without futility."""

    alpha: float
    spending: str
    looks: tuple[LookBoundary, ...]
    futility: str = "none"
    beta: float | None = None
    beta_spending: str | None = None
    drift: float | None = None

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(b.fraction for b in self.looks)

    @property
    def z_bounds(self) -> tuple[float, ...]:
        return tuple(b.z_bound for b in self.looks)

    @property
    def futility_z(self) -> tuple[float, ...] | None:
        if self.futility == "none":
            return None
        return tuple(-math.inf if b.futility_z is None else b.futility_z for b in self.looks)

    def power(self, drift: float, futility: bool = False) -> float:
        """Power at ``drift`` (mean of Z_K); ``futility`` True obeys the futility bound."""
        return sequential_power(self.fractions, self.z_bounds, drift, self.futility_z if futility else None)

    def expected_fraction(self, drift: float, futility: bool = False) -> float:
        """Expected information fraction at stopping at ``drift``."""
        return expected_fraction(self.fractions, self.z_bounds, drift, self.futility_z if futility else None)


def design(
    looks: Sequence[int | float],
    alpha: float,
    spending: str | Spending = "obrien_fleming",
    futility: str = "none",
    beta: float = 0.2,
    beta_spending: str | Spending | None = None,
) -> SequentialDesign:
    """The design for ``looks`` at one-sided ``alpha``: block counts n_k (integers), or information
    fractions (floats, the last 1.0).

    ``futility``: ``none`` or ``nonbinding`` (beta-spending with ``beta_spending``, default the
    alpha spending family, at the drift where the design has power ``1 - beta``, module doc)."""
    if futility not in FUTILITY:
        raise ValueError(f"futility must be one of {FUTILITY}, got {futility!r}")
    s = parse_spending(spending)
    blocks = all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in looks)
    t = _check_inputs(information_fractions(looks) if blocks else looks, alpha)
    bounds = efficacy_bounds(t, alpha, s)
    inc = alpha_increments(t, alpha, s)
    cum = s.cumulative(t, alpha)
    fut: tuple[float, ...] | None = None
    drift = None
    bs = parse_spending(beta_spending) if beta_spending is not None else s
    if futility == "nonbinding":
        fut, drift = futility_bounds(t, bounds, beta, bs)
    out = []
    for k, tk in enumerate(t):
        b = bounds[k]
        a = fut[k] if fut is not None else None
        out.append(
            LookBoundary(
                look=k + 1,
                fraction=tk,
                z_bound=b,
                nominal_alpha=float(special.ndtr(-b)),
                alpha_increment=inc[k],
                cumulative_alpha=cum[k],
                blocks=int(looks[k]) if blocks else None,
                futility_z=a,
                futility_p=None if a is None else float(special.ndtr(-a)),
            )
        )
    return SequentialDesign(
        alpha=float(alpha),
        spending=s.spec(),
        looks=tuple(out),
        futility=futility,
        beta=beta if futility != "none" else None,
        beta_spending=bs.spec() if futility != "none" else None,
        drift=drift,
    )


__all__ = [
    "LookBoundary",
    "SequentialDesign",
    "crossing_probabilities",
    "design",
    "design_drift",
    "efficacy_bounds",
    "expected_fraction",
    "fixed_drift",
    "futility_bounds",
    "sequential_power",
]
