"""Evidence classes, strongest first, and how classes combine: a number is as weak as its weakest source.

``measured`` (a sensor or a real run) > ``modeled`` (a simulator) > ``prior`` (assumed) >
``unmeasured`` > ``unavailable``. A gate reports the weakest of the plan's declaration and what
the collector or sensor recorded; a plan may not declare a metric stronger than its collector gives.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

EVIDENCE_ORDER = ("measured", "modeled", "prior", "unmeasured", "unavailable")  # strongest first


def weakest(classes: Iterable[str]) -> str:
    """The weakest class of ``classes`` (unknown names count as the weakest of all)."""
    return max(classes, key=lambda c: EVIDENCE_ORDER.index(c) if c in EVIDENCE_ORDER else len(EVIDENCE_ORDER))


def stronger(declared: str, available: str) -> bool:
    """Whether ``declared`` claims more than ``available`` can give."""
    return weakest([declared, available]) != declared


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
