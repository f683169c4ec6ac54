"""What a ledger record says about the evidence class of its metrics.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import Any


def recorded_evidence(record: Any, metric: str) -> str | None:
    """What a ledger record's ``evidence`` map says the collector gave for ``metric`` (None when it
    says nothing: an imported run, whose class is the plan's declaration)."""
    evidence = getattr(record, "evidence", None) or {}
    return evidence.get(metric)
