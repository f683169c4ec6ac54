"""The toolkit's shared words, defined once: scales, methods, pass rules, verdicts, decisions, evidence.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Scale = Literal["difference", "ratio"]
SCALES: tuple[Scale, ...] = ("difference", "ratio")

Method = Literal["t", "signflip", "wilcoxon", "bootstrap", "bca", "betting"]
METHODS: tuple[Method, ...] = ("t", "signflip", "wilcoxon", "bootstrap", "bca", "betting")
#: methods that need the contrast's range (a metric's declared ``range``): distribution-free for bounded values
BOUNDED_METHODS: tuple[Method, ...] = ("betting",)
#: methods that need nothing but the contrasts
UNBOUNDED_METHODS: tuple[Method, ...] = tuple(m for m in METHODS if m not in BOUNDED_METHODS)

#: a gate's verdict (see the README's "How to read the verdicts")
Verdict = Literal["pass", "fail", "refused", "unresolvable", "vacuous"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "refused", "unresolvable", "vacuous")

#: the claim's decision under the frozen rule
Decision = Literal["supported", "not_supported", "refused"]
DECISIONS: tuple[Decision, ...] = ("supported", "not_supported", "refused")

Multiplicity = Literal["none", "holm", "bonferroni"]
MULTIPLICITIES: tuple[Multiplicity, ...] = ("none", "holm", "bonferroni")

#: what one pair of a gate is: a stratum (mean of its replicates) or a replicate
AnalysisUnit = Literal["stratum", "replicate"]

#: evidence classes, strongest first: a sensor or real run > a simulator > assumed > none
Evidence = Literal["measured", "modeled", "prior", "unmeasured", "unavailable"]
EVIDENCE_ORDER: tuple[Evidence, ...] = ("measured", "modeled", "prior", "unmeasured", "unavailable")


def weakest(classes: Iterable[str]) -> str:
    """The weakest evidence class of ``classes`` (a number is as weak as its weakest source;
    unknown names count as the weakest of all)."""
    return max(classes, key=lambda c: EVIDENCE_ORDER.index(c) if c in EVIDENCE_ORDER else len(EVIDENCE_ORDER))


def stronger(declared: str, available: str) -> bool:
    """Whether ``declared`` claims more than ``available`` can give."""
    return weakest([declared, available]) != declared


RuleQuantity = Literal["upper", "lower", "estimate", "within"]
QUANTITIES: tuple[RuleQuantity, ...] = ("upper", "lower", "estimate", "within")
OPS: tuple[str, ...] = ("<", "<=", ">", ">=")
#: the comparisons a plan's ``pass_if`` may use per quantity
PLAN_OPS: dict[str, tuple[str, ...]] = {"upper": ("<", "<="), "lower": (">", ">="), "estimate": ("<", ">")}

_NUM = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_BOUND_TEXT = re.compile(rf"^\s*(upper|lower|estimate)\s*(<=|>=|<|>)\s*{_NUM}\s*$")
_WITHIN_TEXT = re.compile(rf"^\s*within\s*\[\s*{_NUM}\s*,\s*{_NUM}\s*\]\s*$")
RULE_FORMS = "'upper < X', 'upper <= X', 'lower > X', 'lower >= X', 'estimate < X', 'estimate > X', 'within [A, B]'"


#: fewest resamples a resampling method accepts (bootstrap, bca; sign-flip beyond its exact range)
MIN_RESAMPLES = 100


def min_resamples(confidence: float) -> int:
    """Fewest resamples at which a resampling interval at two-sided ``confidence`` can decide:
    :data:`MIN_RESAMPLES`, and enough that the smallest attainable p-value ``1 / (B + 1)`` is at
    most the per-tail ``alpha = (1 - confidence) / 2`` (below that a gate could never pass)."""
    alpha = (1.0 - confidence) / 2.0
    if not alpha > 0:
        return MIN_RESAMPLES
    return max(MIN_RESAMPLES, math.ceil(1.0 / (alpha * (1.0 + 1e-12)) - 1.0 - 1e-9))


class RuleError(ValueError):
    """A rule that is not one (bad text, unknown quantity or comparison, non-finite threshold)."""


@dataclass(frozen=True)
class Rule:
    """A pass rule; thresholds on the reported scale.

    ``quantity`` is ``upper``, ``lower``, ``estimate`` (compared with ``op`` to ``threshold``)
    or ``within`` (``low < lower`` and ``upper < high``: both interval ends strictly inside;
    ``op``/``threshold`` unused). ``str(rule)`` is the canonical text.
    """

    quantity: str
    op: str | None = None
    threshold: float | None = None
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if self.quantity not in QUANTITIES:
            raise RuleError(f"rule quantity must be one of {QUANTITIES}, got {self.quantity!r}")
        if self.quantity == "within":
            if self.low is None or self.high is None:
                raise RuleError("a 'within' rule needs low and high")
            if not (math.isfinite(self.low) and math.isfinite(self.high)):
                raise RuleError("the equivalence bounds must be finite numbers")
            if not self.low < self.high:
                raise RuleError(f"within [A, B] needs A < B (got [{self.low:g}, {self.high:g}])")
            object.__setattr__(self, "low", float(self.low))
            object.__setattr__(self, "high", float(self.high))
            return
        if self.op not in OPS:
            raise RuleError(f"rule op must be one of {OPS}, got {self.op!r}")
        if self.threshold is None or not math.isfinite(self.threshold):
            raise RuleError(f"rule '{self.quantity} {self.op}' needs a finite threshold")
        object.__setattr__(self, "threshold", float(self.threshold))

    @classmethod
    def parse(cls, text: object) -> Rule:
        """The rule a plan's ``pass_if`` text states (plan grammar only; ``RuleError`` otherwise)."""
        if isinstance(text, Rule):
            return text
        if not isinstance(text, str):
            raise RuleError("pass_if is a string such as 'upper < 0.02' or 'within [-0.1, 0.1]'")
        if m := _BOUND_TEXT.match(text):
            quantity, op, value = m.group(1), m.group(2), float(m.group(3))
            if op not in PLAN_OPS[quantity]:
                allowed = " or ".join(f"'{quantity} {o} X'" for o in PLAN_OPS[quantity])
                raise RuleError(f"'{quantity} {op}' is not a rule; use {allowed}")
            if not math.isfinite(value):
                raise RuleError("the threshold must be a finite number")
            return cls(quantity, op=op, threshold=value)
        if m := _WITHIN_TEXT.match(text):
            return cls("within", low=float(m.group(1)), high=float(m.group(2)))
        raise RuleError(f"not a rule; use one of {RULE_FORMS}")

    @property
    def text(self) -> str:
        """The canonical spelling (what the lock stores and hashes)."""
        if self.quantity == "within":
            return f"within [{self.low!r}, {self.high!r}]"
        return f"{self.quantity} {self.op} {self.threshold!r}"

    def __str__(self) -> str:
        return self.text

    @property
    def tested(self) -> bool:
        """True for rules that imply a one-sided null (``upper <``/``<=``, ``lower >``/``>=``,
        ``within``); ``estimate`` rules and the other directions are judged on the interval alone."""
        if self.quantity == "within":
            return True
        if self.quantity == "upper":
            return self.op in ("<", "<=")
        if self.quantity == "lower":
            return self.op in (">", ">=")
        return False


__all__ = [
    "AnalysisUnit",
    "BOUNDED_METHODS",
    "DECISIONS",
    "Decision",
    "EVIDENCE_ORDER",
    "Evidence",
    "METHODS",
    "MULTIPLICITIES",
    "MIN_RESAMPLES",
    "Method",
    "Multiplicity",
    "OPS",
    "PLAN_OPS",
    "QUANTITIES",
    "RULE_FORMS",
    "Rule",
    "RuleError",
    "RuleQuantity",
    "SCALES",
    "Scale",
    "UNBOUNDED_METHODS",
    "VERDICTS",
    "Verdict",
    "min_resamples",
    "stronger",
    "weakest",
]
