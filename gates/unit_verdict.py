"""One gate's verdict from its units' contrasts alone: the rule decided, the coverage warnings, constant samples.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from estimators import RatioInputWarning, contrast_warnings, decide_rule
from estimators.feasibility import symmetry_unchecked
from estimators.unseen import constant_verdict, judged_bounds
from estimators.vocabulary import Rule
from gates.caveats import data_warned


@dataclass
class Judgement:
    """``verdict`` (pass, fail, vacuous, unresolvable), the rule's ``decision`` (``estimators.RuleDecision``),
    the interval's and the data's ``warnings`` and the verdict's ``notes``."""

    verdict: str
    decision: Any
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def warned(self) -> bool:
        """A data-driven coverage warning (skew, rare events): a pass that should not stop a study early."""
        return data_warned(self.warnings)

    def unchecked(self, method: str) -> bool:
        """A mean-targeting interval on fewer units than the skew check needs (its symmetry unchecked)."""
        return self.decision.tested and symmetry_unchecked(method, self.decision.result.n)


def judge_contrasts(
    d: np.ndarray,
    rule: Rule,
    confidence: float,
    method: str,
    scale: str,
    resamples: int,
    seed: int,
    *,
    levels: Sequence[float] | None = None,
    bounds: tuple[float, float] | None = None,
    horizon: int | None = None,
    deterministic: bool = False,
) -> Judgement:
    """The verdict of ``rule`` on the units' contrasts ``d`` (analysis scale; module doc)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # the gate built these log ratios itself from positive values: the ratio-input guess is moot
        warnings.simplefilter("ignore", RatioInputWarning)
        decision = decide_rule(
            rule,
            d,
            confidence,
            method,
            scale,
            resamples,
            seed,
            levels=levels,
            bounds=judged_bounds(method, bounds, deterministic),
            horizon=horizon,
        )
    found = list(decision.result.warnings) + [str(w.message) for w in caught]
    found += list(contrast_warnings(d, method, scale, rule))
    judged = Judgement("pass" if decision.holds else "fail", decision, found)
    if decision.constant:
        _constant_verdict(judged, int(d.size), deterministic)
    return judged


def _constant_verdict(judged: Judgement, n: int, deterministic: bool) -> None:
    """Vacuous, judged on the unseen bound, or unresolvable (module doc)."""
    decision = judged.decision
    judged.verdict = constant_verdict(decision.holds, decision.unseen, deterministic)
    if deterministic:
        judged.notes.append(
            "every unit's contrast is the same value and the metric is declared deterministic (fixed by the design): "
            "no sampling variability and no p-value, so the rule "
            + ("could not have failed" if decision.holds else "fails on that single value")
        )
    elif decision.unseen:
        judged.notes.append(
            f"every one of the {n} units shows the same contrast: the interval is the widest mean consistent with {n} "
            "identical values inside the metric's declared range (an event at the range's end these units did not "
            "show), and the rule is judged on it"
        )
    else:
        judged.notes.append(
            f"every one of the {n} units shows the same contrast, but the metric is not declared deterministic: {n} "
            f"identical values cannot show a difference that occurs in fewer than about 1 in {n} units (a rare "
            "restart, a lost site), so they bound nothing; declare 'deterministic: true' on the metric if its value "
            "is fixed by the design, or its 'range' (the gate is then judged on the largest mean the sample cannot "
            "rule out)"
        )


__all__ = ["Judgement", "judge_contrasts"]
