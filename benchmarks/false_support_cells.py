"""False-SUPPORTED cells of small samples: rare events and skew, fixed n and monitored looks, t / sign-flip /
betting, with and without a declared range (used by ``bench_false_support.py``; a benchmark, not a CI test).

Every data set is judged by the product's own gate logic (``gates.unit_verdict.judge_contrasts``: the rule's
decision, constant samples, the skew and rare-event warnings) at the levels the product gives each look
(``estimators.look_levels.gate_levels``). One primary gate, confidence 0.90 (a one-sided test at 0.05), the
null true in every population:

* ``rare restarts``: a - b = 10 extra restarts with probability 0.1, else 0 (mean 1.0); ``upper < 0.5``.
* ``lognormal``: a - b = min(e^Z, 20) minus its mean (mean exactly 0, right-skewed); ``upper < 0``.
* ``rare adverse``: 2 s faster, except 18 s slower in one stratum in ten (mean exactly 0); ``upper < 0``.
* ``normal``: N(0, 1) (mean 0); ``upper < 0`` (the control).

A declared range: the metric's ``[0, 20]``, so every contrast lies in ``[-20, 20]``. A data set is
*supported* when the gate passes at the final look or at an earlier look that stops (a pass with no skew
or rare-event warning); *unwarned* when that pass carries no warning in the decision line either: no skew
or rare-event warning and no "symmetry unchecked" note (a mean-targeting method below 15 units).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from estimators import Rule
from estimators.betting import betting_pass_rates
from estimators.look_levels import gate_levels
from gates.unit_verdict import Judgement, judge_contrasts

CONF = 0.90
RANGE = (-20.0, 20.0)
LOOKS = (6, 12, 18, 24, 30)
CAP = 20.0
#: E[min(e^Z, CAP)] for Z ~ N(0, 1): e^(1/2) Phi(ln CAP - 1) + CAP (1 - Phi(ln CAP))
_PHI = 0.5 * (1 + math.erf((math.log(CAP) - 1) / math.sqrt(2)))
CAPPED_MEAN = math.exp(0.5) * _PHI + CAP * 0.5 * math.erfc(math.log(CAP) / math.sqrt(2))


@dataclass(frozen=True)
class Population:
    """A population of contrasts whose mean makes the rule's null true."""

    name: str
    rule: Rule
    draw: Callable[[np.random.Generator, int, int], np.ndarray]


POPULATIONS = (
    Population("rare restarts", Rule("upper", "<", 0.5), lambda rng, reps, n: 10.0 * (rng.random((reps, n)) < 0.1)),
    Population(
        "lognormal",
        Rule("upper", "<", 0.0),
        lambda rng, reps, n: np.minimum(np.exp(rng.normal(size=(reps, n))), CAP) - CAPPED_MEAN,
    ),
    Population(
        "rare adverse", Rule("upper", "<", 0.0), lambda rng, reps, n: np.where(rng.random((reps, n)) < 0.1, 18.0, -2.0)
    ),
    Population("normal", Rule("upper", "<", 0.0), lambda rng, reps, n: rng.normal(size=(reps, n))),
)


@dataclass(frozen=True)
class Rates:
    supported: float
    unwarned: float
    reps: int

    @property
    def mc_error(self) -> float:
        """Three Monte Carlo standard errors of a rate at the nominal 0.05."""
        return 3 * math.sqrt(0.05 * 0.95 / self.reps)


def _levels(method: str, looks: tuple[int, ...], spending: str | None) -> list[float]:
    """The confidence each look's rule is decided at (1 - 2 nominal alpha; 0 where nothing is spent)."""
    if spending is None:
        return [CONF]
    return [lv.confidence or 0.0 for lv in gate_levels(method, CONF, looks, spending)]


def _betting_cell(pop: Population, data: np.ndarray, looks: tuple[int, ...]) -> Rates:
    """Betting needs no warnings and treats constant samples like any other: its verdict is its anytime
    p-value at each look (``estimators.betting.betting_pass_rates``, tested equal to the scalar path
    gates use), the first look that clears alpha stopping the study."""
    rule = pop.rule
    assert rule.threshold is not None and rule.quantity == "upper"
    pv = betting_pass_rates(data, rule.threshold, bounds=RANGE, confidence=CONF, horizon=looks[-1], looks=looks)
    supported = float(np.mean(np.any(pv.p_less_at <= (1 - CONF) / 2 * (1 + 1e-12), axis=1)))
    return Rates(supported, supported, data.shape[0])


class _Study:
    """One data set's walk through the looks under one reading (with or without a declared range)."""

    def __init__(self) -> None:
        self.done = self.supported = self.unwarned = False

    def look(self, judged: Judgement, final: bool, method: str) -> None:
        if self.done or judged.verdict != "pass" or (not final and judged.warned):
            return  # a warned pass does not stop the study (gates.looks)
        self.done = self.supported = True
        self.unwarned = not (judged.warned or judged.unchecked(method))


def cell(
    pop: Population, method: str, looks: tuple[int, ...], spending: str | None, reps: int, seed: int = 37
) -> tuple[Rates, Rates]:
    """``(with the declared range, without it)`` rates of one cell (``looks``: one n for a fixed design).
    The two readings differ only on constant samples (judged on the unseen bound, or unresolvable)."""
    rng = np.random.default_rng([seed, looks[-1], len(looks), zlib.crc32(pop.name.encode())])  # same data per method
    data = pop.draw(rng, reps, looks[-1])
    if method == "betting":
        rates = _betting_cell(pop, data, looks)
        return rates, rates
    confidences = _levels(method, looks, spending)
    counts = np.zeros((2, 2))
    for row in data:
        ranged, bare = _Study(), _Study()
        for k, (n, conf) in enumerate(zip(looks, confidences, strict=True)):
            if conf <= 0:
                continue
            final = k == len(looks) - 1
            args = (row[:n], pop.rule, conf, method, "difference", 9999, 0)
            judged = judge_contrasts(*args, levels=((1 - conf) / 2,), horizon=looks[-1])
            bare.look(judged, final, method)
            if judged.decision.constant:
                judged = judge_contrasts(*args, levels=((1 - conf) / 2,), bounds=RANGE, horizon=looks[-1])
            ranged.look(judged, final, method)
            if ranged.done and bare.done:
                break
        counts += [[ranged.supported, ranged.unwarned], [bare.supported, bare.unwarned]]
    return Rates(counts[0, 0] / reps, counts[0, 1] / reps, reps), Rates(counts[1, 0] / reps, counts[1, 1] / reps, reps)


DESIGNS: tuple[tuple[str, tuple[int, ...], str | None], ...] = (
    ("n=6", (6,), None),
    ("n=10", (10,), None),
    ("n=20", (20,), None),
    ("n=30", (30,), None),
    ("looks OBF", LOOKS, "obrien_fleming"),
    ("looks Pocock", LOOKS, "pocock"),
)
#: betting needs a range; t and sign-flip are read with and without one
METHODS = ("betting", "t", "signflip")


def skip_reason(method: str, looks: tuple[int, ...]) -> str | None:
    """Cells left out of the default run, and why."""
    if method == "signflip" and looks == (20,):
        return "exact sign-flip at n = 20 enumerates 2^20 sign patterns per data set (13 ms): run with --all"
    return None


__all__ = ["DESIGNS", "METHODS", "POPULATIONS", "Rates", "cell", "skip_reason"]
