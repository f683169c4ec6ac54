"""Pure statistics on arrays: paired intervals, ratios, noninferiority, multiplicity, resolution.

Arrays or one long table in, frozen results out; no files, plans or gates, and no other toolkit package
imported (the leaf). Usage: ``docs/estimators.md``. Names load on first use (:mod:`estimators.lazy`), so
``import estimators`` loads no numpy or scipy.
"""

from __future__ import annotations

from .lazy import lazy_exports

_LOCATIONS: dict[str, str] = {
    "DegenerateContrastWarning": "rules",
    "IntervalResult": "_common",
    "ConfidenceInterval": "_common",
    "RatioInputWarning": "_common",
    "compare": "compare",
    "Comparison": "compare",
    "METHODS": "vocabulary",
    "BOUNDED_METHODS": "vocabulary",
    "UNBOUNDED_METHODS": "vocabulary",
    "MIN_BOOTSTRAP_N": "feasibility",
    "ResolutionCheck": "resolution",
    "Rule": "vocabulary",
    "RuleError": "vocabulary",
    "RuleDecision": "rules",
    "SCALES": "vocabulary",
    "VERDICTS": "vocabulary",
    "DECISIONS": "vocabulary",
    "EVIDENCE_ORDER": "vocabulary",
    "weakest": "vocabulary",
    "stronger": "vocabulary",
    "adjust_p_values": "rules",
    "bca_interval": "bootstrap",
    "betting_interval": "betting",
    "contrast_bounds": "betting",
    "bootstrap_interval": "bootstrap",
    "clears": "rules",
    "contrast_warnings": "feasibility",
    "decide_rule": "rules",
    "hodges_lehmann": "wilcoxon",
    "insufficient_blocks": "feasibility",
    "interval": "dispatch",
    "end_shift_per_bound": "resolution",
    "interval_bound": "resolution",
    "is_tested": "rules",
    "minimum_blocks": "feasibility",
    "one_sided_p_values": "dispatch",
    "paired_contrast": "contrast",
    "propagate_bounds": "contrast",
    "resolution_check": "resolution",
    "resolution_check_outcomes": "resolution",
    "rule_holds": "rules",
    "rule_pvalue": "rules",
    "signflip_interval": "signflip",
    "skewness": "feasibility",
    "t_interval": "tinterval",
    "trend_ends": "trend",
    "TrendEnds": "trend",
    "wilcoxon_interval": "wilcoxon",
}


__getattr__, __dir__ = lazy_exports(__name__, _LOCATIONS)


__all__ = sorted(_LOCATIONS)
