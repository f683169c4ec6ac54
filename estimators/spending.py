"""Alpha-spending functions and the plan's spending spec: standard library only.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

#: the spending families a plan may name (``power`` is written ``power:RHO``)
FAMILIES = ("obrien_fleming", "pocock", "power")
_STD = NormalDist()


def _check_fraction(t: float) -> float:
    t = float(t)
    if not math.isfinite(t) or t < 0.0 or t > 1.0:
        raise ValueError(f"information fraction must be in [0, 1], got {t!r}")
    return t


def _check_level(alpha: float, what: str = "alpha") -> float:
    alpha = float(alpha)
    if not math.isfinite(alpha) or not 0.0 < alpha < 1.0:
        raise ValueError(f"{what} must be in (0, 1), got {alpha!r}")
    return alpha


def obrien_fleming(t: float, alpha: float) -> float:
    """Lan-DeMets O'Brien-Fleming-type cumulative spending ``2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``
    for one-sided ``alpha`` at fraction ``t`` (gsDesign ``sfLDOF``)."""
    t, alpha = _check_fraction(t), _check_level(alpha)
    if t == 0.0:
        return 0.0
    if t == 1.0:
        return alpha
    z = _STD.inv_cdf(1.0 - alpha / 2.0) / math.sqrt(t)
    return min(alpha, math.erfc(z / math.sqrt(2.0)))  # 2 - 2 Phi(z) = erfc(z / sqrt 2), no cancellation


def pocock(t: float, alpha: float) -> float:
    """Lan-DeMets Pocock-type cumulative spending ``alpha ln(1 + (e - 1) t)``."""
    t, alpha = _check_fraction(t), _check_level(alpha)
    return alpha if t == 1.0 else alpha * math.log1p((math.e - 1.0) * t)


def power_spending(t: float, alpha: float, rho: float) -> float:
    """Kim-DeMets power-family cumulative spending ``alpha t^rho`` (``rho > 0``)."""
    t, alpha = _check_fraction(t), _check_level(alpha)
    if not math.isfinite(rho) or rho <= 0:
        raise ValueError(f"power spending needs rho > 0, got {rho!r}")
    return alpha * t**rho


@dataclass(frozen=True)
class Spending:
    """A parsed spending spec: ``family`` one of :data:`FAMILIES`, ``rho`` for ``power``."""

    family: str
    rho: float | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown spending function {self.family!r}; choose obrien_fleming, pocock or power:RHO")
        if (self.family == "power") != (self.rho is not None):
            raise ValueError("power spending needs rho (power:RHO); the other families take none")
        if self.rho is not None and (not math.isfinite(self.rho) or self.rho <= 0):
            raise ValueError(f"power spending needs rho > 0, got {self.rho!r}")

    def spent(self, t: float, alpha: float) -> float:
        """Cumulative one-sided level spent by fraction ``t``."""
        if self.family == "obrien_fleming":
            return obrien_fleming(t, alpha)
        if self.family == "pocock":
            return pocock(t, alpha)
        assert self.rho is not None
        return power_spending(t, alpha, self.rho)

    def cumulative(self, fractions: Sequence[float], alpha: float) -> tuple[float, ...]:
        """:meth:`spent` at each fraction (the last fraction must be 1, so the last value is alpha)."""
        return tuple(self.spent(t, alpha) for t in fractions)

    def spec(self) -> str:
        """The canonical text: ``obrien_fleming``, ``pocock`` or ``power:RHO`` (``power:2``)."""
        if self.family != "power":
            return self.family
        assert self.rho is not None
        return f"power:{self.rho:g}"

    def __str__(self) -> str:
        return self.spec()


def parse_spending(spec: str | Spending) -> Spending:
    """``obrien_fleming``, ``pocock`` or ``power:RHO`` (RHO a positive number) as a :class:`Spending`.

    Raises ValueError with a sentence saying what is allowed."""
    if isinstance(spec, Spending):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"spending must be text (obrien_fleming, pocock or power:RHO), got {spec!r}")
    text = spec.strip()
    if text in ("obrien_fleming", "pocock"):
        return Spending(text)
    family, sep, rest = text.partition(":")
    if family.strip() == "power" and sep:
        try:
            rho = float(rest)
        except ValueError:
            raise ValueError(f"spending {spec!r}: power:RHO needs a number RHO > 0 (e.g. power:2)") from None
        return Spending("power", rho)
    raise ValueError(f"unknown spending function {spec!r}; choose obrien_fleming, pocock or power:RHO (e.g. power:2)")


def information_fractions(looks: Sequence[int | float]) -> tuple[float, ...]:
    """Each look's share of the final look's information, ``n_k / n_K`` (blocks are information:
    for a mean of iid contrasts the information ``n / sigma^2`` is proportional to ``n``).

    ``looks`` must be positive and strictly increasing; the last fraction is exactly 1."""
    vals = [float(x) for x in looks]
    if not vals:
        raise ValueError("at least one look is needed")
    if any(not math.isfinite(x) or x <= 0 for x in vals):
        raise ValueError(f"looks must be positive, got {list(looks)}")
    if any(b <= a for a, b in zip(vals, vals[1:], strict=False)):
        raise ValueError(f"looks must be strictly increasing, got {list(looks)}")
    last = vals[-1]
    return tuple(x / last for x in vals[:-1]) + (1.0,)


def alpha_increments(fractions: Sequence[float], alpha: float, spending: str | Spending) -> tuple[float, ...]:
    """``alpha(t_k) - alpha(t_{k-1})`` per look (``alpha(t_0) = 0``): the level a look may use
    with *any* valid level-``alpha_k`` test. By the union bound (Bonferroni over looks) the
    chance of any false pass is at most ``sum_k alpha_k = alpha``: valid whatever the
    correlation between looks, and conservative (it ignores the positive correlation the
    group-sequential boundary exploits)."""
    s = parse_spending(spending)
    _check_level(alpha)
    cum = s.cumulative(fractions, alpha)
    out, prev = [], 0.0
    for c in cum:
        out.append(max(0.0, c - prev))
        prev = max(prev, c)
    return tuple(out)


__all__ = [
    "FAMILIES",
    "Spending",
    "alpha_increments",
    "information_fractions",
    "obrien_fleming",
    "parse_spending",
    "pocock",
    "power_spending",
]
