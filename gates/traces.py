"""Trace integrity as ``gates evaluate`` checks it: a changed trace refuses the gates relying on it.

Every trace a run wrote beside the ledger is hashed in its record (``collect.ledger.store``). The
record chain proves the records; this check re-hashes the traces of the matched runs. A run's
*telemetry* trace (``<run_id>.telemetry.*``, the raw sensor polls) is what its energy metrics,
their bounds and its signal summaries were computed from, so when one changed, every gate on a
signal-backed metric is refused (``refused_by: trace_integrity``). Other traces (event timelines,
NLL trajectories) back no gate's number: a change there is reported (the check fires, naming
each file) but refuses nothing. The check appears among the invalidators as ``trace_integrity``
whenever the matched runs have traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from collect.ledger.columns import Record
from collect.traces.check import trace_problems
from gates.invalidators import InvalidatorCheck
from prereg.schema import Plan

CHECK_ID = "trace_integrity"
TELEMETRY_MARK = ".telemetry."


def relies_on_telemetry(plan: Plan) -> list[str]:
    """Ids of the gates whose metric is backed by a telemetry signal."""
    return [g.id for g in plan.gates if plan.metrics[g.metric].signal]


TraceAudit = dict[str, list[tuple[str, str]]]  # run id -> (trace name, what is wrong) of its failing traces


def audit_traces(records: Sequence[Record], runs_dir: Path) -> TraceAudit:
    """Every trace of ``records`` re-hashed once; subsets of the runs (a family, the calibration
    strata) are checked from this audit without reading a trace again."""
    return {r.run_id: trace_problems(runs_dir, r) for r in records if r.traces}


def check_traces(plan: Plan, records: Sequence[Record], audit: TraceAudit) -> InvalidatorCheck | None:
    """The ``trace_integrity`` check over ``records`` (None when none of them has a trace), read from
    ``audit`` (:func:`audit_traces` of these records or of a superset)."""
    with_traces = [r for r in records if r.traces]
    if not with_traces:
        return None
    total = sum(len(r.traces) for r in with_traces)
    bad = [(r.run_id, name, problem) for r in with_traces for name, problem in audit[r.run_id]]
    if not bad:
        return InvalidatorCheck(CHECK_ID, CHECK_ID, False, 0.0, "every trace matches its recorded SHA-256",
                                f"all {total} traces of {len(with_traces)} runs match their recorded SHA-256",
                                relies_on_telemetry(plan))
    telemetry_bad = [b for b in bad if TELEMETRY_MARK in b[1]]
    blocks = relies_on_telemetry(plan) if telemetry_bad else []
    shown = "; ".join(f"run {rid}: {name} {problem}" for rid, name, problem in bad[:5])
    more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
    if telemetry_bad:
        effect = ("the gates on signal-backed metrics are refused (their numbers came from these traces)"
                  if blocks else "no gate's metric is signal-backed, so no gate is refused")
    else:
        effect = "no gate relies on these traces (event timelines or trajectories), so none is refused"
    return InvalidatorCheck(CHECK_ID, CHECK_ID, True, float(len(bad)), "every trace matches its recorded SHA-256",
                            f"{len(bad)} of {total} traces do not match their recorded SHA-256: {shown}{more}; "
                            + effect, blocks)
