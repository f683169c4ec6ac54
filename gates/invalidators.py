"""Checking a plan's invalidators on the matched runs.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from collect.ledger.columns import Record
from collect.ledger.records import TelemetrySummary
from gates.failure_rate import check_failure_rate
from gates.fault_check import check_faults_landed
from gates.matching import Match
from prereg.schema import (
    ControlsIdentical,
    CounterSupport,
    FaultsLanded,
    LoggerCalibration,
    MetricBounds,
    Plan,
    SensorUpdatePeriod,
    Strata,
)
from prereg.schema_invalidators import FailureRate


@dataclass(frozen=True)
class InvalidatorCheck:
    """One invalidator's outcome."""

    id: str
    kind: str
    fired: bool
    observed: float | str | None
    threshold: float | str | None
    detail: str
    blocks: list[str]


def _telemetry_values(records: Sequence[Record], signal: str, read) -> tuple[list[tuple[str, float]], list[str]]:
    """(run_id, value) pairs from each run's telemetry, and the runs that lack it."""
    values, lacking = [], []
    for r in records:
        summary = r.telemetry.get(signal)
        value = read(summary) if summary is not None else None
        if value is None or not math.isfinite(value):
            lacking.append(r.run_id)
        else:
            values.append((r.run_id, float(value)))
    return values, lacking


def _lacking_detail(signal: str, lacking: list[str]) -> str:
    more = f" and {len(lacking) - 3} more" if len(lacking) > 3 else ""
    return f"no telemetry for {signal} in run(s) {', '.join(lacking[:3])}{more}"


def _telemetry_check(inv, records, read, limit: float, above_fires: bool, what: str, unit: str) -> tuple:
    values, lacking = _telemetry_values(records, inv.signal, read)
    if not records:
        return True, None, f"no runs to check {inv.signal} on"
    worst = (max if above_fires else min)(values, key=lambda x: x[1]) if values else None
    bad = [(rid, v) for rid, v in values if (v > limit if above_fires else v < limit)]
    parts = []
    if bad:
        rid, v = worst  # type: ignore[misc]
        side = "above" if above_fires else "below"
        parts.append(f"{len(bad)} run(s) with {what} {side} {limit:g}{unit}; worst {rid}: {v:g}{unit}")
    if lacking:
        parts.append(_lacking_detail(inv.signal, lacking))
    fired = bool(bad or lacking)
    observed = worst[1] if worst else None
    if not fired:
        bound = f"at most {limit:g}{unit}" if above_fires else f"at least {limit:g}{unit}"
        parts.append(f"all {len(values)} runs: {what} {bound} (worst {observed:g}{unit})")
    return fired, observed, "; ".join(parts)


def logger_ratio(summary: TelemetrySummary) -> float | None:
    """Achieved / requested poll interval of one run's telemetry summary (None when either is
    missing): the achieved interval over the run's worst stretch when the summary records it
    (``achieved_poll_worst_ms``), else the recorded ``achieved_poll_ms``."""
    achieved = summary.achieved_poll_worst_ms  # None in older summaries
    if achieved is None:
        achieved = summary.achieved_poll_ms
    if achieved is None or summary.requested_poll_ms is None:
        return None
    return float(achieved) / summary.requested_poll_ms


def _counter_support(inv: CounterSupport, records: Sequence[Record]) -> tuple:
    """Whole-run updates, or updates inside ``inv.phase`` over the runs in which that phase occurred."""
    if inv.phase is None:
        return _telemetry_check(inv, records, lambda s: s.updates, inv.min_updates, False, "updates", "")
    phase = inv.phase
    occurred, absent = [], 0
    for r in records:
        summary = r.telemetry.get(inv.signal)
        support = (summary.phases or {}).get(phase) if summary is not None else None
        if support is not None and support.intervals == 0:
            absent += 1
        else:
            occurred.append(r)
    fired, observed, detail = _telemetry_check(
        inv,
        occurred,
        lambda s: s.phases[phase].updates if s.phases and phase in s.phases else None,
        inv.min_updates,
        False,
        f"updates inside {phase}",
        "",
    )
    if absent:
        detail += f"; {absent} run(s) had no {phase} phase (nothing to resolve there)"
    if not occurred and absent:
        return False, None, f"no run had a {phase} phase ({absent} run(s)): nothing to resolve"
    return fired, observed, detail


def _metric_bounds(inv: MetricBounds, records: Sequence[Record]) -> tuple:
    low = -math.inf if inv.min is None else inv.min
    high = math.inf if inv.max is None else inv.max
    bad, seen = [], 0
    for r in records:
        value = r.metric(inv.metric)
        if value is None:
            continue
        seen += 1
        if not math.isfinite(value) or not low <= value <= high:
            bad.append((r.run_id, value))
    if not bad:
        return False, None, f"all {seen} recorded values of {inv.metric} are finite and within [{low:g}, {high:g}]"
    rid, value = bad[0]
    observed = "non-finite" if not math.isfinite(value) else value
    return (
        True,
        observed,
        f"{len(bad)} value(s) of {inv.metric} non-finite or outside [{low:g}, {high:g}]; first {rid}: {value:g}",
    )


def _controls(inv: ControlsIdentical, match: Match) -> tuple:
    control_blocks = [b for b in match.blocks.values() if Strata.selects(inv.where, b.stratum)]
    compared, worst, worst_where, incomplete = 0, 0.0, None, []
    for block in control_blocks:
        values = [r.metric(inv.metric) for r in block.records.values()]
        if len(block.records) < match.n_arms or any(v is None for v in values):
            incomplete.append(block.label)
            continue
        compared += 1
        if any(not math.isfinite(v) for v in values):  # type: ignore[arg-type]
            worst, worst_where = math.inf, block.label
            continue
        spread = max(values) - min(values)  # type: ignore[type-var, operator]
        if spread > worst:
            worst, worst_where = spread, block.label
    if compared == 0:
        return True, None, f"no complete control blocks where {inv.where} to compare"
    parts = []
    if worst > 0:
        parts.append(f"arms differ by {worst:g} in {inv.metric} in control block {worst_where}")
    if incomplete:
        parts.append(f"incomplete control blocks: {', '.join(incomplete[:3])}")
    if not parts:
        return False, 0.0, f"all arms identical in {inv.metric} in {compared} control block(s)"
    return True, worst, "; ".join(parts)


def check_invalidators(plan: Plan, match: Match) -> list[InvalidatorCheck]:
    """Evaluate every invalidator of ``plan`` on the matched runs."""
    records = match.records()
    gate_ids = [g.id for g in plan.gates]
    out = []
    for inv in plan.invalidators:
        threshold: float | str | None
        if isinstance(inv, MetricBounds):
            fired, observed, detail = _metric_bounds(inv, records)
            threshold = (
                f"[{'-inf' if inv.min is None else f'{inv.min:g}'}, {'inf' if inv.max is None else f'{inv.max:g}'}]"
            )
        elif isinstance(inv, CounterSupport):
            fired, observed, detail = _counter_support(inv, records)
            threshold = float(inv.min_updates)
        elif isinstance(inv, SensorUpdatePeriod):
            fired, observed, detail = _telemetry_check(
                inv, records, lambda s: s.effective_period_ms, inv.max_ms, True, "effective update period", " ms"
            )
            threshold = inv.max_ms
        elif isinstance(inv, LoggerCalibration):
            fired, observed, detail = _telemetry_check(
                inv, records, logger_ratio, inv.max_ratio, True, "achieved / requested poll interval", "x"
            )
            threshold = inv.max_ratio
        elif isinstance(inv, FaultsLanded):
            fired, observed, detail = check_faults_landed(match)
            threshold = "all landed, same in every arm"
        elif isinstance(inv, FailureRate):
            fired, observed, threshold, detail = check_failure_rate(plan, inv, records)
        else:
            fired, observed, detail = _controls(inv, match)
            threshold = "identical"
        blocks = gate_ids if inv.blocks == "all" else list(inv.blocks)
        out.append(InvalidatorCheck(inv.id, inv.kind, fired, observed, threshold, detail, blocks))
    return out


def check_invalidators_on(plan: Plan, subset: Match, full: list[InvalidatorCheck]) -> list[InvalidatorCheck]:
    """The invalidators evaluated on a subset of the match (one held-out family, the calibration
    strata). A ``controls_identical`` check whose ``where`` selects no block of the subset keeps its
    result on the whole match (``full``): its control blocks lie elsewhere, and firing for want of
    them would refuse a subset for a check that holds."""
    by_id = {c.id: c for c in full}
    out = []
    for inv, check in zip(plan.invalidators, check_invalidators(plan, subset), strict=True):
        if (
            isinstance(inv, ControlsIdentical)
            and inv.id in by_id
            and not any(Strata.selects(inv.where, b.stratum) for b in subset.blocks.values())
        ):
            check = by_id[inv.id]
        out.append(check)
    return out
