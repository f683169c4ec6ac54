"""Where runs came from, in words, from their records: what a report says when a run kept no trace.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collect.ledger.columns import Record


def origin_of(record: Record) -> str:
    """'imported', 'collected by <collector>' or 'of unrecorded origin'."""
    code = record.code or {}
    if code.get("imported") or (record.source or "").startswith("import"):
        return "imported"
    collector = code.get("collector")
    return f"collected by {collector}" if isinstance(collector, str) and collector else "of unrecorded origin"


def origins_text(records: Iterable[Record]) -> str:
    """'12 runs collected by command', '6 runs collected by mylab.train and 2 imported runs', 'no runs'."""
    counts: dict[str, int] = {}
    for r in records:
        origin = origin_of(r)
        counts[origin] = counts.get(origin, 0) + 1
    parts = []
    for origin, n in counts.items():
        runs = "run" if n == 1 else "runs"
        parts.append(f"{n} imported {runs}" if origin == "imported" else f"{n} {runs} {origin}")
    if not parts:
        return "no runs"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def no_telemetry_reason(record: Record) -> str:
    """Why a run's record lists no telemetry trace, in words of what the run is."""
    origin = origin_of(record)
    if origin == "imported":
        return "an imported run keeps the numbers of its table, no trace"
    sensor = (record.code or {}).get("sensor")
    if sensor is not None:
        return f"it was {origin} with sensor {sensor}, and no telemetry trace was kept"
    return f"it was {origin}, which kept no telemetry trace for it"


__all__ = ["no_telemetry_reason", "origin_of", "origins_text"]
