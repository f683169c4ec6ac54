"""``collect import``'s time-order warning: rows whose runs started before the plan they are imported under.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from collect.ledger.records import parse_utc
from collect.ledger.store import RunRecord
from prereg.schema import Plan


class EarlyRunsWarning(UserWarning):
    """Imported runs started before the plan version they are judged under (``collect.importing.time_order``)."""


def early_runs_message(
    records: Sequence[RunRecord], lock_data: Mapping[str, Any], plan: Plan, lock_path: str = "LOCK"
) -> str | None:
    """The warning for ``records`` that started before the freeze or the last amendment, or None
    (none did, or the plan declares pre-existing data)."""
    if plan.data is not None and plan.data.pre_existing:
        return None
    frozen_text = str(lock_data.get("frozen_at") or "")
    amendments = list(lock_data.get("amendments") or [])
    frozen = parse_utc(frozen_text)
    amended_text = str(amendments[-1].get("amended_at") or "") if amendments else ""
    version = amendments[-1].get("version") if amendments else None
    amended = parse_utc(amended_text)
    before_freeze = before_amendment = 0
    for record in records:
        started = parse_utc(record.started_at)
        if started is None:
            continue
        if frozen is not None and started < frozen:
            before_freeze += 1
        elif amended is not None and started < amended:
            before_amendment += 1
    if not before_freeze and not before_amendment:
        return None
    parts = []
    if before_freeze:
        parts.append(
            f"{before_freeze} of the {len(records)} rows imported started before the plan was frozen ({frozen_text})"
        )
    if before_amendment:
        parts.append(
            f"{before_amendment} started before amendment v{version} ({amended_text}) under which they are judged"
        )
    return (
        "; ".join(parts) + ". 'gates evaluate' will refuse the decision on them: the plan does not declare "
        "pre-existing data. If this study does analyse runs made before its plan, say so: add 'data: "
        "{pre_existing: true, reason: ...}' to the plan YAML, record it with 'prereg amend PLAN.yaml --lock "
        f"{lock_path} --runs RUNS --reason ...' (the lock keeps the change and its time), and import the table "
        "again under the amended lock into a new runs folder; every report then says the study analyses "
        "pre-existing data. Otherwise collect runs that start after the freeze"
    )


__all__ = ["EarlyRunsWarning", "early_runs_message"]
