"""Sequential stop of the sign-flip Monte Carlo: draw only until the rule's decision is settled.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._common import special

#: the resampling risk: the largest probability, over all data, that a stopped decision differs
#: from the decision of the full draw
RISK = 1e-3
FIRST_LOOK = 1024


def _clears(pvalue: float, level: float) -> bool:
    """:func:`estimators.rules.clears` (its tolerance), here to avoid an import circle."""
    return bool(pvalue <= level * (1.0 + 1e-12))


def critical_count(level: float, total: int) -> int:
    """The largest count ``c`` with ``(1 + c) / total`` clearing ``level`` (``-1`` if none does)."""
    c = math.floor(level * total) - 1
    while c + 1 <= total - 1 and _clears((2 + c) / total, level):
        c += 1
    while c >= 0 and not _clears((1 + c) / total, level):
        c -= 1
    return c


def looks(resamples: int, levels: Sequence[float]) -> list[int]:
    """The pattern counts at which the procedure looks before the full draw (module doc)."""
    first = FIRST_LOOK
    while first * min(levels) < 8:  # the first look must be able to settle the lowest level
        first *= 2
    out = []
    m = first
    while m < resamples:
        out.append(m)
        m *= 2
    return out


def p_grid(levels: Sequence[float]) -> NDArray[np.float64]:
    """The p grid of the bound: [0, 1] densely around each level, geometric towards 0."""
    parts = [np.array([0.0, 1.0]), np.linspace(0.0, 1.0, 1001), np.geomspace(1e-12, 1.0, 600)]
    parts += [np.linspace(t / 8, min(1.0, 8 * t), 2001) for t in levels]
    return np.unique(np.concatenate(parts))


def _bound_for(m: int, a: int, n_rest: int, c_lo: int, grid: NDArray[np.float64]) -> float:
    """``B_for(m, a)`` of the module doc."""
    need = c_lo - a + 1  # later exceedances that would overturn a stop for
    if need <= 0:
        return 1.0
    if need > n_rest:
        return 0.0
    sp = special()
    head = sp.bdtr(a, m, grid[:-1])  # P(S_m <= a) at the left end of each cell
    tail = sp.bdtrc(need - 1, n_rest, grid[1:])  # P(Bin >= need) at the right end
    return float(np.max(head * tail))


def _bound_against(m: int, a: int, n_rest: int, c_hi: int, grid: NDArray[np.float64]) -> float:
    """``B_against(m, a)`` of the module doc."""
    room = c_hi - a  # later exceedances that would still leave the full draw clearing t_hi
    if room < 0:
        return 0.0
    sp = special()
    head = sp.bdtrc(a - 1, m, grid[1:]) if a > 0 else np.ones(grid.size - 1)  # P(S_m >= a), right end
    tail = sp.bdtr(room, n_rest, grid[:-1])  # P(Bin <= room) at the left end
    return float(np.max(head * tail))


@dataclass(frozen=True)
class Stop:
    """Where the procedure stopped: ``patterns`` drawn of ``planned``, and the risk bound it used."""

    patterns: int
    planned: int
    risk: float
    settled: str  # "for", "against" or "full draw"

    @property
    def early(self) -> bool:
        """Whether fewer patterns than planned decide the rule."""
        return self.patterns < self.planned

    def note(self) -> str:
        """The warning a stopped result carries."""
        return (
            f"sequential Monte Carlo: stopped after {self.patterns} of {self.planned} sign patterns, the rule "
            f"settled beyond Monte Carlo error (the interval and p-values are those of the first "
            f"{self.patterns} patterns; the chance that this decision differs from the full "
            f"{self.planned}-pattern draw's is at most {self.risk:g})"
        )


class Tail:
    """One one-sided count followed through the looks: exceedances of ``mu`` in one direction."""

    def __init__(self, mu: float, greater: bool) -> None:
        self.mu, self.greater = mu, greater
        self.count = 0

    def add(self, means: NDArray[np.float64], empty: int) -> None:
        """Count the new patterns' exceedances (the empty pattern always counts, as in the p-value)."""
        hits = means <= self.mu if self.greater else means >= self.mu
        self.count += empty + int(np.count_nonzero(hits))


def settle(
    tails: list[Tail], m: int, resamples: int, levels: Sequence[float], eps: float, grid: NDArray[np.float64]
) -> str | None:
    """``"for"`` / ``"against"`` when the counts at look ``m`` settle the decision, else None."""
    t_lo, t_hi = min(levels), max(levels)
    total = resamples + 1
    c_lo, c_hi = critical_count(t_lo, total), critical_count(t_hi, total)
    n_rest = resamples - m
    verdicts: list[str | None] = []
    for tail in tails:
        a = tail.count
        p_m = (1 + a) / (m + 1)
        if a > c_hi:
            verdicts.append("against")
        elif _clears(p_m, t_lo) and (a + n_rest <= c_lo or _bound_for(m, a, n_rest, c_lo, grid) <= eps):
            verdicts.append("for")
        elif not _clears(p_m, t_hi) and _bound_against(m, a, n_rest, c_hi, grid) <= eps:
            verdicts.append("against")
        else:
            verdicts.append(None)
    if "against" in verdicts:  # one tail that misses settles a ``within`` rule against
        return "against"
    return "for" if all(v == "for" for v in verdicts) else None
