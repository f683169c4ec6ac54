"""What a ledger record says about the evidence class of its metrics.

The classes themselves and how they combine (a number is as weak as its weakest source) are
defined once, in :mod:`estimators.vocabulary` (``EVIDENCE_ORDER``, ``weakest``, ``stronger``). A
gate reports the weakest of the plan's declaration and what the collector or sensor recorded; a
plan may not declare a metric stronger than its collector gives.
"""

from __future__ import annotations

from typing import Any


def recorded_evidence(record: Any, metric: str) -> str | None:
    """What a ledger record says the collector gave for ``metric`` (None when it says nothing).

    Reads the record's ``evidence`` map, and for records written before it existed the collector's
    identity in ``code`` (``metric_evidence`` per metric, or one ``evidence`` for all).
    """
    evidence = getattr(record, "evidence", None) or {}
    if metric in evidence:
        return evidence[metric]
    code = getattr(record, "code", None) or {}
    per_metric = code.get("metric_evidence")
    if isinstance(per_metric, dict) and isinstance(per_metric.get(metric), str):
        return per_metric[metric]
    if isinstance(code.get("evidence"), str):
        return code["evidence"]
    return None
