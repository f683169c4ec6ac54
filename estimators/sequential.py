"""Group-sequential boundaries: the nominal level each planned look of a gate may use.

Setting. A gate tests a one-sided null at level ``alpha = (1 - confidence) / 2`` (its pass rule
``upper < u``, ``lower > l``, or each side of ``within [l, h]``). With interim looks after
``n_1 < ... < n_K`` complete blocks (the last is the plan's full count) the information fractions
are ``t_k = n_k / n_K`` and a spending function (:mod:`estimators.spending`) says how much of
``alpha`` may be spent by each look. Two ways to turn that into a per-look nominal level:

* **boundary** (t gates): the canonical joint distribution. The standardised statistics
  ``Z_k`` of a mean of iid contrasts are jointly normal with ``corr(Z_j, Z_k) = sqrt(t_j / t_k)``
  and means ``drift * sqrt(t_k)`` (Jennison & Turnbull 2000, ch. 3). The efficacy bounds
  ``b_k`` solve ``P_0(Z_1 < b_1, ..., Z_{k-1} < b_{k-1}, Z_k >= b_k) = alpha(t_k) - alpha(t_{k-1})``
  by the Armitage-McPherson-Rowe recursion: the sub-density of the score ``S_k = Z_k sqrt(t_k)``
  on the continuation region is carried from look to look by numerical integration (Simpson's
  rule on a fine grid, Jennison & Turnbull ch. 19), and each ``b_k`` is found by root finding.
  The canonical design's nominal one-sided level is ``1 - Phi(b_k)``
  (:attr:`LookBoundary.nominal_alpha`; the gsDesign values). A t gate does not use it as is: its
  statistic estimates the variance, and applying ``1 - Phi(b_k)`` to t-test p-values lets more
  than alpha through (measured, 200 000 null sequences of normal contrasts, one-sided 0.05, five
  looks of 6 blocks each: 0.0514 with O'Brien-Fleming, 0.0526 with Pocock; 0.0575 with 2 blocks
  per look). So a t gate spends the same alpha increments on the joint law of the *sequential t
  statistics* (:func:`t_levels`): look 1 at its increment (a t test is exact under normality),
  look k at the level at which the null sequences not stopped before cross with probability
  ``alpha(t_k) - alpha(t_{k-1})``, found from :data:`T_SEQUENCES` seeded null sequences (the law
  depends only on the block counts; Jennison & Turnbull 1991 compute it exactly). Measured with
  those levels (independent seed): 0.0497 / 0.0502 at 6 blocks per look, 0.0488 / 0.0499 at 2.
* **increment** (sign-flip, Wilcoxon, bootstrap, BCa): ``alpha_k = alpha(t_k) - alpha(t_{k-1})``. By the
  union bound the chance of a false pass at any look is at most ``sum alpha_k = alpha`` for *any*
  valid level-``alpha_k`` tests, whatever their correlation: valid for exact tests on few blocks,
  and conservative (it gives up the correlation between looks that the boundary uses).

From nominal level to the gate's interval (how a look slots into :func:`estimators.decide_rule`).
A look's nominal one-sided level ``a_k`` replaces the gate's ``alpha``: the gate is evaluated with
``confidence_k = 1 - 2 a_k`` (:attr:`LookLevel.confidence`), so the interval is the two-sided
``1 - 2 a_k`` interval of the gate's own method, and the rule passes exactly when its one-sided
p-value is at most ``a_k`` (:func:`estimators.clears`), boundary included. ``within [l, h]`` is
two one-sided tests, each at ``a_k`` (an intersection-union test: each side's sequential test
has level alpha, so the pair does). A look with nothing to spend (``a_k = 0``) cannot pass
(``confidence_k`` is None); the plan's freeze check refuses such a look, or one where the
method's smallest attainable p-value exceeds ``a_k`` (:func:`look_feasibility`).

Looks too small to pass. O'Brien-Fleming spending releases ``2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``
by fraction ``t``: 6.9e-19 at 3 of 30 blocks with confidence 0.99, 7e-27 at 2 of 60 with 0.90.
Such a level is a correct level, but no interval can be computed at it: ``1 - 2 a_k`` is 1 in
double precision below ``a_k`` of about ``2**-54`` (and a t gate on 3 blocks would need
``t > 10^8`` at 6.9e-19). Rounding the level up would spend alpha the plan did not release, so
:func:`look_confidence` gives such a look no confidence, like a look with nothing to spend: the
gate can never pass there, and the freeze check refuses the look by number (exit 2) with
"move the look later, spend more alpha early, or drop it". Smaller levels that still have a
confidence are kept as they are: recovering ``a_k`` from ``1 - 2 a_k`` errs by at most ``2**-55``
(3e-17) in absolute terms, nothing for type I error.

Futility (optional, non-binding). A lower bound ``a_k`` on the Z scale from beta-spending: at a
design drift ``delta`` (the mean of ``Z_K``),
``P_delta(continue to k, Z_k < a_k) = beta(t_k) - beta(t_{k-1})``, and ``delta`` is solved so that
the last futility bound meets the last efficacy bound, ``a_K = b_K``: the design then has power
exactly ``1 - beta`` at ``delta`` when the futility stops are taken (gsDesign's non-binding
construction, with the plan's fixed blocks in place of its sample-size inflation). The efficacy bounds are computed ignoring the futility bound, so stopping for futility
(or not) never raises the type I error: the futility bound may be overruled. A gate stops for
futility at look ``k < K`` when its rule's one-sided p-value exceeds ``1 - Phi(a_k)``
(:attr:`LookBoundary.futility_p`).

Multiplicity across gates composes by calling these functions with each gate's share: with
Bonferroni over ``m`` gates pass ``alpha / m``; ``require: all`` (intersection-union) needs no
share. Units: fractions are dimensionless, levels are probabilities, z values standard-normal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, special

from .feasibility import insufficient_blocks
from .spending import Spending, alpha_increments, information_fractions, parse_spending

#: a t gate uses the sequential t boundary when its first look has at least this many blocks
T_BOUNDARY_MIN_BLOCKS = 2
#: null sequences simulated to spend alpha on the sequential t statistics' joint law, and the seed
T_SEQUENCES = 200_000
T_SEED = 20_270_001
#: fewest simulated crossings a look's t level is calibrated from (else the canonical normal level)
T_MIN_EVENTS = 50
#: methods whose per-look level is the group-sequential boundary (when the blocks allow)
BOUNDARY_METHODS = ("t",)
#: methods whose p-values are anytime-valid: the whole alpha at every look
ANYTIME_METHODS = ("betting",)
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


def sequential_power(fractions: Sequence[float], upper: Sequence[float], drift: float,
                     lower: Sequence[float] | None = None) -> float:
    """Probability of crossing an efficacy bound at some look at ``drift`` (with the futility bound
    ``lower`` obeyed when given: the power if futility stops are taken)."""
    return float(sum(crossing_probabilities(fractions, upper, drift, lower)[0]))


def expected_fraction(fractions: Sequence[float], upper: Sequence[float], drift: float,
                      lower: Sequence[float] | None = None) -> float:
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


def futility_bounds(fractions: Sequence[float], upper: Sequence[float], beta: float,
                    spending: str | Spending, drift: float | None = None) -> tuple[tuple[float, ...], float]:
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
        out.append(LookBoundary(
            look=k + 1, fraction=tk, z_bound=b, nominal_alpha=float(special.ndtr(-b)),
            alpha_increment=inc[k], cumulative_alpha=cum[k],
            blocks=int(looks[k]) if blocks else None,
            futility_z=a, futility_p=None if a is None else float(special.ndtr(-a)),
        ))
    return SequentialDesign(alpha=float(alpha), spending=s.spec(), looks=tuple(out), futility=futility,
                            beta=beta if futility != "none" else None,
                            beta_spending=bs.spec() if futility != "none" else None, drift=drift)


@dataclass(frozen=True)
class LookLevel:
    """The level one gate uses at one look.

    ``nominal_alpha`` one-sided (each side of ``within``); ``confidence`` the two-sided
    ``1 - 2 nominal_alpha`` to pass to the gate's interval (None when nothing is spent: the look
    cannot pass); ``basis`` ``boundary`` or ``increment``; ``reason`` says why in words;
    ``futility_p`` as in :class:`LookBoundary`."""

    look: int
    blocks: int | None
    fraction: float
    nominal_alpha: float
    confidence: float | None
    basis: str
    reason: str
    futility_p: float | None = None


def _t_p_values(looks: tuple[int, ...], sequences: int, seed: int) -> NDArray[np.float64]:
    """One-sided t-test p-values (H0: mean <= 0) at each look of ``sequences`` null sequences of
    standard normal contrasts (seeded; chunked so memory stays near 32 MB)."""
    n = np.array(looks)
    idx = n - 1
    out = np.empty((sequences, n.size))
    rng = np.random.default_rng(seed)
    step = max(256, 4_000_000 // int(n[-1]))
    for first in range(0, sequences, step):
        rows = min(step, sequences - first)
        x = rng.standard_normal((rows, int(n[-1])))
        s1 = np.cumsum(x, axis=1)[:, idx]
        s2 = np.cumsum(x * x, axis=1)[:, idx]
        mean = s1 / n
        var = np.maximum(s2 - n * mean * mean, 1e-300) / (n - 1)
        out[first:first + rows] = special.stdtr(n - 1, -mean / np.sqrt(var / n))
    return out


@lru_cache(maxsize=64)
def t_levels(looks: tuple[int, ...], increments: tuple[float, ...], z_levels: tuple[float, ...],
             sequences: int = T_SEQUENCES, seed: int = T_SEED) -> tuple[float, ...]:
    """Nominal levels for a sequential t test on ``looks`` blocks spending ``increments``.

    Look 1 uses its increment (each t test is exact under normality). Look ``k > 1`` uses the level
    ``a_k`` at which, among ``sequences`` seeded null sequences of normal contrasts not stopped
    earlier, a share ``increments[k]`` of all sequences has ``p_k <= a_k``: the sequential t
    statistics' own joint law (Jennison & Turnbull 1991 compute it exactly; here by simulation,
    which depends only on the block counts). Where an increment gives fewer than
    :data:`T_MIN_EVENTS` simulated crossings the canonical normal level ``z_levels[k]`` is used."""
    p = _t_p_values(looks, sequences, seed)
    alive = np.ones(sequences, dtype=bool)
    out = []
    for k, inc in enumerate(increments):
        if k == 0:
            a = inc
        elif inc * sequences < T_MIN_EVENTS:
            a = z_levels[k]
        else:
            pk = np.sort(p[alive, k])
            j = inc * sequences  # crossings wanted among all sequences, all of them still alive
            lo = int(math.floor(j))
            a = float(pk[lo - 1] + (j - lo) * (pk[min(lo, pk.size - 1)] - pk[lo - 1]))
        out.append(float(a))
        alive &= p[:, k] > a
    return tuple(out)


def level_basis(method: str, first_look_blocks: int | None) -> tuple[str, str]:
    """``(basis, reason)``: ``anytime`` for betting gates (the whole alpha at every look), ``boundary``
    for t gates (at least :data:`T_BOUNDARY_MIN_BLOCKS` blocks at the first look), ``increment``
    otherwise (module doc)."""
    if method in ANYTIME_METHODS:
        return "anytime", ("the whole alpha at every look: the betting p-value is anytime-valid (the capital is a "
                           "test supermartingale, so by Ville's inequality it crosses 1 / alpha at any look with "
                           "probability at most alpha); no spending is needed")
    if method in BOUNDARY_METHODS and (first_look_blocks is None or first_look_blocks >= T_BOUNDARY_MIN_BLOCKS):
        return "boundary", ("group-sequential boundary of the sequential t statistics (alpha spent on their "
                            "joint law under normal contrasts)")
    if method in BOUNDARY_METHODS:
        return "increment", (f"alpha increments: the first look has {first_look_blocks} blocks, fewer than "
                             f"{T_BOUNDARY_MIN_BLOCKS} for the t boundary; conservative")
    return "increment", (f"alpha increments (valid for any level-alpha_k test, so for the exact and resampling "
                         f"{method} test; conservative)")


def gate_levels(method: str, confidence: float, looks: Sequence[int], spending: str | Spending,
                futility: str = "none", beta: float = 0.2, alpha: float | None = None) -> tuple[LookLevel, ...]:
    """Per look, the level a gate with ``method`` and two-sided ``confidence`` uses (module doc).

    The gate's one-sided alpha is ``(1 - confidence) / 2`` unless ``alpha`` gives its share
    (e.g. ``alpha / m`` under Bonferroni). ``looks`` are block counts, the last the plan's."""
    a = (1.0 - confidence) / 2.0 if alpha is None else float(alpha)
    blocks = tuple(int(x) for x in looks)
    d = design(blocks, a, spending, futility, beta)
    basis, reason = level_basis(method, blocks[0])
    if basis == "anytime":
        nominal = tuple(a for _ in d.looks)
    elif basis == "boundary":
        nominal = t_levels(blocks, tuple(b.alpha_increment for b in d.looks), tuple(b.nominal_alpha for b in d.looks))
    else:
        nominal = tuple(b.alpha_increment for b in d.looks)
    out = []
    for b, level in zip(d.looks, nominal, strict=True):
        out.append(LookLevel(
            look=b.look, blocks=b.blocks, fraction=b.fraction, nominal_alpha=level,
            confidence=look_confidence(level), basis=basis, reason=reason,
            futility_p=b.futility_p,
        ))
    return tuple(out)


def look_confidence(nominal_alpha: float) -> float | None:
    """The two-sided confidence ``1 - 2 nominal_alpha`` a look's interval is computed at, or None
    when it cannot be: nothing is spent, or so little (below about ``2**-54``, 5.6e-17, as
    O'Brien-Fleming spends at a first look of a few blocks out of many) that ``1 - 2 nominal_alpha``
    is 1 in double precision. Such a look cannot pass (module doc, "Looks too small to pass")."""
    confidence = 1.0 - 2.0 * nominal_alpha
    return confidence if nominal_alpha > 0 and confidence < 1.0 else None


def look_feasibility(method: str, level: LookLevel, resamples: int | None = None) -> str | None:
    """A sentence saying why ``method`` can never pass at this look's level with its blocks, or None."""
    if level.confidence is None:
        return f"look {level.look}: the spending releases no alpha here, so no gate can pass at it"
    if level.blocks is None:
        return None
    why = insufficient_blocks(method, level.confidence, level.blocks, resamples, "blocks")
    return None if why is None else f"look {level.look} (nominal one-sided {level.nominal_alpha:.3g}): {why}"


__all__ = [
    "BOUNDARY_METHODS",
    "T_BOUNDARY_MIN_BLOCKS",
    "LookBoundary",
    "LookLevel",
    "SequentialDesign",
    "crossing_probabilities",
    "design",
    "design_drift",
    "efficacy_bounds",
    "expected_fraction",
    "fixed_drift",
    "futility_bounds",
    "gate_levels",
    "level_basis",
    "look_confidence",
    "look_feasibility",
    "sequential_power",
]
