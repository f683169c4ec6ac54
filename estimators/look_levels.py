"""The level each planned look of a gate may use, by the gate's method (from the spending of
:mod:`estimators.sequential`).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy import special

from .feasibility import insufficient_blocks
from .sequential import design
from .spending import Spending

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
        out[first : first + rows] = special.stdtr(n - 1, -mean / np.sqrt(var / n))
    return out


@lru_cache(maxsize=64)
def t_levels(
    looks: tuple[int, ...],
    increments: tuple[float, ...],
    z_levels: tuple[float, ...],
    sequences: int = T_SEQUENCES,
    seed: int = T_SEED,
) -> tuple[float, ...]:
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
        return "anytime", (
            "the whole alpha at every look: the betting p-value is anytime-valid (the capital is a "
            "test supermartingale, so by Ville's inequality it crosses 1 / alpha at any look with "
            "probability at most alpha); no spending is needed"
        )
    if method in BOUNDARY_METHODS and (first_look_blocks is None or first_look_blocks >= T_BOUNDARY_MIN_BLOCKS):
        return "boundary", (
            "group-sequential boundary of the sequential t statistics (alpha spent on their "
            "joint law under normal contrasts)"
        )
    if method in BOUNDARY_METHODS:
        return "increment", (
            f"alpha increments: the first look has {first_look_blocks} blocks, fewer than "
            f"{T_BOUNDARY_MIN_BLOCKS} for the t boundary; conservative"
        )
    return "increment", (
        f"alpha increments (valid for any level-alpha_k test, so for the exact and resampling "
        f"{method} test; conservative)"
    )


def gate_levels(
    method: str,
    confidence: float,
    looks: Sequence[int],
    spending: str | Spending,
    futility: str = "none",
    beta: float = 0.2,
    alpha: float | None = None,
) -> tuple[LookLevel, ...]:
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
        out.append(
            LookLevel(
                look=b.look,
                blocks=b.blocks,
                fraction=b.fraction,
                nominal_alpha=level,
                confidence=look_confidence(level),
                basis=basis,
                reason=reason,
                futility_p=b.futility_p,
            )
        )
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
    "ANYTIME_METHODS",
    "BOUNDARY_METHODS",
    "T_BOUNDARY_MIN_BLOCKS",
    "LookLevel",
    "gate_levels",
    "level_basis",
    "look_confidence",
    "look_feasibility",
    "t_levels",
]
