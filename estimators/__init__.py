"""Pure statistics on arrays: paired intervals, ratios, noninferiority, multiplicity, resolution.

Arrays (or one long table) in, frozen result objects out; no files, YAML, plans or gates. From a
table, one call::

    res = compare(runs, metric="energy_j", arm="policy", block="seed",
                  contrast="continue / restart", rule="upper < 1.05", method="t", confidence=0.90)
    res.estimate, res.confidence_interval(), res.pvalue, res.verdict

From arrays::

    d = paired_contrast(outcomes, [1, -1], scale="ratio")     # per-block log ratios
    res = interval("signflip", d, confidence=0.90, scale="ratio")
    rule_pvalue("upper < 1.05", res)

:mod:`estimators.vocabulary` defines the words every package shares (scales, methods, the one
:class:`Rule` type, verdicts, decisions, evidence classes); :mod:`estimators.expressions` parses a
contrast's text. This package imports no other package of the toolkit (it is the leaf every other
one may import). See ``docs/estimators.md`` for the constructions and conventions.

The package imports lazily (PEP 562): ``import estimators`` is cheap, and a name's module (and
numpy / scipy) is loaded on first use, so ``prereg validate`` can ask
:mod:`estimators.feasibility` without importing scipy.
"""

from __future__ import annotations

from typing import Any

from .lazy import LazyExports

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


_exports = LazyExports(__name__, _LOCATIONS)


def __getattr__(name: str) -> Any:
    """Load ``name`` from its module on first use (:mod:`estimators.lazy`)."""
    return _exports.load(name)


def __dir__() -> list[str]:
    return _exports.names()


__all__ = sorted(_LOCATIONS)
