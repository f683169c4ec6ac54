"""Time order: the plan precedes the data.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from collect.ledger.columns import Record
from collect.ledger.records import parse_utc
from prereg.schema import Plan

UNKNOWN_START = "start not recorded: that they followed the plan cannot be shown"


@dataclass
class TimeOrderCheck:
    """Runs that started before the plan (or an amendment) they are judged under, and unknown starts."""

    pre_existing: bool
    reason: str | None
    before_freeze: list[str] = field(default_factory=list)
    before_amendment: list[str] = field(default_factory=list)
    unknown_start: list[str] = field(default_factory=list)
    unreadable_start: list[str] = field(default_factory=list)

    @property
    def early(self) -> int:
        """How many runs started before the plan version they are judged under."""
        return len(self.before_freeze) + len(self.before_amendment)

    def refusal(self) -> str | None:
        """The decision-level refusal, or None (no early run, or pre-existing data declared)."""
        if not self.early or self.pre_existing:
            return None
        parts = []
        if self.before_freeze:
            parts.append(f"{len(self.before_freeze)} run(s) started before the plan was frozen")
        if self.before_amendment:
            parts.append(f"{len(self.before_amendment)} run(s) started before an amendment they are judged under")
        return (
            " and ".join(parts) + " (the plan does not declare pre-existing data. If that is what this "
            "study is, declare it: add 'data: {pre_existing: true, reason: ...}' to the plan YAML, record it "
            "with 'prereg amend PLAN.yaml --lock LOCK --runs RUNS --reason ...', and import or collect the "
            "runs again under the amended lock into a new runs folder; the reports then call it an analysis "
            "of pre-existing data)"
        )


def check_time_order(plan: Plan, lock: dict[str, Any], records: Sequence[Record]) -> TimeOrderCheck:
    """Compare every record's start with ``frozen_at`` and each amendment's ``amended_at``."""
    declared = plan.data is not None and plan.data.pre_existing
    check = TimeOrderCheck(declared, plan.data.reason if plan.data is not None else None)
    frozen = parse_utc(lock.get("frozen_at"))
    amendments = [(a.get("version"), parse_utc(a.get("amended_at")), a.get("amended_at")) for a in lock["amendments"]]
    for record in records:
        name = f"{record.run_id} (arm {record.arm})"
        if record.started_at is None:
            check.unknown_start.append(name)
            continue
        started = parse_utc(record.started_at)
        if started is None:
            check.unreadable_start.append(f"{name}: started_at {record.started_at!r} is not an ISO-8601 time")
            check.unknown_start.append(name)
            continue
        if frozen is not None and started < frozen:
            check.before_freeze.append(f"{name} started {record.started_at}, before the freeze at {lock['frozen_at']}")
            continue
        later = [(v, text) for v, t, text in amendments if t is not None and started < t]
        if later:
            version, text = later[-1]
            check.before_amendment.append(f"{name} started {record.started_at}, before amendment v{version} at {text}")
    return check
