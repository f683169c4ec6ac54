"""Per-phase counter support across the matched runs: which phases the meter resolves.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from collect.ledger.columns import Record
from gates.artifact import PhaseSupportRow
from prereg.schema import CounterSupport, Plan


def phase_support(plan: Plan, records: Sequence[Record]) -> list[PhaseSupportRow]:
    """One row per (signal, phase) any matched run's telemetry summary describes."""
    required: dict[tuple[str, str], int] = {}
    for inv in plan.invalidators:
        if isinstance(inv, CounterSupport) and inv.phase is not None:
            key = (inv.signal, inv.phase)
            required[key] = max(required.get(key, 0), inv.min_updates)
    seen: dict[tuple[str, str], tuple[list[int], list[float], int]] = {}
    for record in records:
        for signal, summary in record.telemetry.items():
            for phase, support in (summary.phases or {}).items():
                updates, durations, without = seen.setdefault((signal, phase), ([], [], 0))
                if support.intervals == 0:
                    seen[(signal, phase)] = (updates, durations, without + 1)
                else:
                    updates.append(support.updates)
                    durations.append(support.duration_ms)
    rows = []
    for (signal, phase), (updates, durations, without) in seen.items():
        need = required.get((signal, phase))
        low = min(updates) if updates else None
        rows.append(
            PhaseSupportRow(
                signal=signal,
                phase=phase,
                runs=len(updates),
                runs_without=without,
                min_updates=low,
                median_updates=float(statistics.median(updates)) if updates else None,
                max_updates=max(updates) if updates else None,
                median_duration_ms=float(statistics.median(durations)) if durations else None,
                required=need,
                enough=None if need is None or low is None else low >= need,
            )
        )
    return rows
