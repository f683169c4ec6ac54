"""The ``faults_landed`` invalidator: every arm of a stratum met the same planned faults, and each landed.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import Any

from gates.matching import Match


def _faults(record: Any) -> dict[str, Any] | None:
    code = getattr(record, "code", None) or {}
    faults = code.get("faults") if isinstance(code, dict) else None
    return faults if isinstance(faults, dict) else None


def check_faults_landed(match: Match) -> tuple[bool, float | None, str]:
    """(fired, observed, detail) over every matched block (see the module doc)."""
    unlanded: list[str] = []
    differing: list[str] = []
    unrecorded: list[str] = []
    per_arm: dict[str, list[int]] = {}  # arm -> [landed, planned]
    for block in match.blocks.values():
        schedules: dict[str, tuple[float, ...]] = {}
        for arm, record in block.records.items():
            faults = _faults(record)
            if faults is None:
                unrecorded.append(f"{record.run_id} ({arm}, {block.label})")
                continue
            schedules[arm] = tuple(float(p) for p in faults.get("planned", []))
            counts = per_arm.setdefault(arm, [0, 0])
            for row in faults.get("record", []):
                counts[1] += 1
                if row.get("landed"):
                    counts[0] += 1
                else:
                    unlanded.append(
                        f"{block.label} {arm}: fault at {row.get('planned'):g} ({row.get('why') or 'did not land'})"
                    )
        if len(set(schedules.values())) > 1:
            differing.append(f"{block.label}: " + "; ".join(f"{arm} {list(s)}" for arm, s in schedules.items()))
    landed = ", ".join(f"{arm} {c[0]}/{c[1]}" for arm, c in sorted(per_arm.items()))
    parts = []
    if differing:
        parts.append(f"arms met different planned faults in {len(differing)} block(s): {differing[0]}")
    if unlanded:
        more = f" and {len(unlanded) - 2} more" if len(unlanded) > 2 else ""
        parts.append(f"{len(unlanded)} planned fault(s) did not land: {'; '.join(unlanded[:2])}{more}")
    if unrecorded:
        more = f" and {len(unrecorded) - 2} more" if len(unrecorded) > 2 else ""
        parts.append(
            f"{len(unrecorded)} run(s) record no planned faults (collected without the plan's "
            f"failures?): {', '.join(unrecorded[:2])}{more}"
        )
    if parts:
        parts.append(f"landed per arm: {landed}" if landed else "no run recorded its faults")
        return True, float(len(unlanded) + len(differing) + len(unrecorded)), "; ".join(parts)
    return (
        False,
        0.0,
        (
            f"every planned fault landed ({landed}); every arm of each of {len(match.blocks)} "
            "block(s) met the same faults"
        ),
    )
