"""Pure statistics on arrays: paired intervals, ratios, noninferiority, multiplicity, resolution.

Arrays in, frozen result objects out; no files, YAML, plans or gates. Typical use::

    d = paired_contrast(outcomes, [1, -1], scale="ratio")     # per-block log ratios
    res = interval("signflip", d, confidence=0.90, scale="ratio")
    rule_holds(Rule("upper", "<", 1.05), res)

See ``docs/estimators.md`` for the constructions and conventions.
"""

from ._common import METHODS, SCALES, IntervalResult
from .bootstrap import bca_interval, bootstrap_interval
from .contrast import paired_contrast, propagate_bounds
from .dispatch import interval, one_sided_p_values
from .feasibility import MIN_BOOTSTRAP_N, contrast_warnings, insufficient_blocks, minimum_blocks, skewness
from .rules import (
    DegenerateContrastWarning,
    ResolutionCheck,
    Rule,
    RuleDecision,
    adjust_p_values,
    clears,
    decide_rule,
    is_tested,
    interval_bound,
    resolution_check,
    resolution_check_outcomes,
    rule_holds,
    rule_p_value,
)
from .signflip import signflip_interval
from .tinterval import t_interval
from .wilcoxon import hodges_lehmann, wilcoxon_interval

__all__ = [
    "METHODS",
    "MIN_BOOTSTRAP_N",
    "RuleDecision",
    "clears",
    "contrast_warnings",
    "decide_rule",
    "insufficient_blocks",
    "is_tested",
    "minimum_blocks",
    "skewness",
    "SCALES",
    "DegenerateContrastWarning",
    "IntervalResult",
    "ResolutionCheck",
    "Rule",
    "adjust_p_values",
    "bca_interval",
    "bootstrap_interval",
    "hodges_lehmann",
    "interval",
    "interval_bound",
    "one_sided_p_values",
    "paired_contrast",
    "propagate_bounds",
    "resolution_check",
    "resolution_check_outcomes",
    "rule_holds",
    "rule_p_value",
    "signflip_interval",
    "t_interval",
    "wilcoxon_interval",
]
