"""What a ledger record says about the evidence class of its metrics.

The classes themselves and how they combine (a number is as weak as its weakest source) are
defined once, in :mod:`estimators.vocabulary` (``EVIDENCE_ORDER``, ``weakest``, ``stronger``). A
gate reports the weakest of the plan's declaration and what the collector or sensor recorded; a
plan may not declare a metric stronger than its collector gives.
"""

from __future__ import annotations

from typing import Any


def recorded_evidence(record: Any, metric: str) -> str | None:
    """What a ledger record's ``evidence`` map says the collector gave for ``metric`` (None when it
    says nothing: an imported run, whose class is the plan's declaration)."""
    evidence = getattr(record, "evidence", None) or {}
    return evidence.get(metric)
