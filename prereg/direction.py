"""Which way a gate's rule points, and how big its margin is, in words.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import Any

from estimators.expressions import Contrast
from estimators.vocabulary import Rule

RATIO_PLAUSIBLE = (0.5, 2.0)
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_OTHER_BOUND = {"upper": "lower", "lower": "upper", "estimate": "estimate"}


def sides(contrast: Contrast) -> tuple[list[str], list[str]]:
    """(first arms: positive coefficients, other arms: negative coefficients)."""
    pos = [a for a, c in contrast.coefficients.items() if c > 0]
    neg = [a for a, c in contrast.coefficients.items() if c < 0]
    return pos, neg


def is_interaction(contrast: Contrast) -> bool:
    """A difference of differences (two or more arms on each side): no arm is 'better'."""
    pos, neg = sides(contrast)
    return len(pos) >= 2 and len(neg) >= 2


def passes_when(rule: Rule) -> str | None:
    """'small' or 'large' (which contrast values pass), or None for a two-sided ``within``."""
    if rule.quantity == "within":
        return None
    return "small" if rule.op in ("<", "<=") else "large"


def rule_means(contrast: Contrast, rule: Rule, better: str) -> str | None:
    """'first_arm_better' / 'first_arm_worse' (what a pass shows), or None (two-sided, interaction)."""
    way = passes_when(rule)
    if way is None or is_interaction(contrast):
        return None
    good_is_small = better == "lower"
    return "first_arm_better" if (way == "small") == good_is_small else "first_arm_worse"


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def mirrored_rule(rule: Rule, scale: str) -> str:
    """The rule on the other side of the null: 'lower > -0.01' -> 'upper < 0.01'; ratios invert."""
    assert rule.op is not None and rule.threshold is not None
    x = rule.threshold
    mirrored = 1.0 / x if scale == "ratio" else (-x if x != 0 else 0.0)
    return f"{_OTHER_BOUND[rule.quantity]} {_MIRROR[rule.op]} {_fmt(mirrored)}"


def _arms_text(arms: list[str]) -> str:
    return arms[0] if len(arms) == 1 else "(" + " and ".join(arms) + ")"


def direction_problem(contrast: Contrast, rule: Rule, better: str, declared: str | None, metric: str) -> str | None:
    """Why the rule's direction contradicts the metric's ``better`` (or the declared intent), else None."""
    if is_interaction(contrast):
        if declared is not None:
            return (
                f"'direction' does not apply to an interaction ({contrast.text} compares differences, not "
                "arms); remove it"
            )
        return None
    means = rule_means(contrast, rule, better)
    intended = declared or "first_arm_better"
    if means is None or means == intended:
        return None
    pos, neg = sides(contrast)
    first, other = _arms_text(pos), _arms_text(neg)
    fixed = mirrored_rule(rule, contrast.scale)
    if intended == "first_arm_better":
        return (
            f"'{rule.text}' passes however much worse {first} is than {other} ({metric}: {better} is better), "
            f"so a pass cannot show that {first} is better or no worse. To claim {first} is better or at most "
            f"a margin worse, write 'pass_if: {fixed}' on this contrast; if a pass is meant to show {first} is "
            "worse, say so in the gate with 'direction: first_arm_worse'"
        )
    return (
        f"the gate declares 'direction: first_arm_worse', but '{rule.text}' passes when {first} is better than "
        f"{other} ({metric}: {better} is better); write 'pass_if: {fixed}' or remove 'direction'"
    )


def _pct(value: float) -> str:
    return f"{100 * value:.3g}%"


def ratio_margin_words(rule: Rule) -> str:
    """A ratio rule's margin as a percentage change: 'allows up to 400% higher', 'requires at least 5% lower'."""
    if rule.quantity == "within":
        assert rule.low is not None and rule.high is not None
        return f"both ends between {_pct(rule.low - 1)} and +{_pct(rule.high - 1)}".replace("+-", "-")
    x = rule.threshold
    assert x is not None
    if passes_when(rule) == "small":
        if x > 1:
            return f"allows up to {_pct(x - 1)} higher"
        return "requires lower" if x == 1 else f"requires at least {_pct(1 - x)} lower"
    if x < 1:
        return f"allows up to {_pct(1 - x)} lower"
    return "requires higher" if x == 1 else f"requires at least {_pct(x - 1)} higher"


def plan_warnings(plan: Any) -> list[tuple[tuple[Any, ...], str]]:
    """Accepted but suspicious: ratio margins outside [0.5, 2] (a percentage written as a ratio?)."""
    out: list[tuple[tuple[Any, ...], str]] = []
    lo, hi = RATIO_PLAUSIBLE
    for i, gate in enumerate(plan.gates):
        contrast, rule = gate.contrast, gate.pass_if
        if contrast.scale != "ratio":
            continue
        values = [v for v in (rule.threshold, rule.low, rule.high) if v is not None]
        odd = [v for v in values if not lo <= v <= hi]
        if odd:
            out.append(
                (
                    ("gates", i, "pass_if"),
                    f"ratio margin {', '.join(_fmt(v) for v in odd)} is outside [{lo:g}, {hi:g}]: '{rule.text}' "
                    f"{ratio_margin_words(rule)}. A ratio threshold is a ratio (5% higher is 1.05, not 5); "
                    "if this is meant, ignore this warning",
                )
            )
    return out
