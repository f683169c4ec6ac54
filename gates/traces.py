"""Trace integrity as ``gates evaluate`` checks it: a changed trace refuses the gates whose numbers it sourced.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from collect.ledger.columns import Record
from collect.ledger.trace_check import trace_problems
from collect.telemetry.analysis.energy import ENERGY_METRICS
from gates.invalidators import InvalidatorCheck
from prereg.schema import Plan

CHECK_ID = "trace_integrity"
TELEMETRY_MARK = ".telemetry."
RUN_FOLDER_SUFFIX = ".run"  # the command collector's run folder: traces/<run_id>.run/
TraceRole = Literal["sensor", "program"]
_ROLE_FILES: dict[str, TraceRole] = {"metrics.json": "program", "marks.txt": "sensor"}  # inside a run folder


def trace_role(name: str) -> TraceRole | None:
    """What a trace (its name as the record lists it, ``traces/...``) is the source of (module doc)."""
    path = PurePosixPath(name)
    if TELEMETRY_MARK in path.name:
        return "sensor"
    if path.parent.name.endswith(RUN_FOLDER_SUFFIX) and len(path.parts) == 3:
        return _ROLE_FILES.get(path.name)
    return None


def sensor_metrics(plan: Plan) -> set[str]:
    """The plan's metrics computed from a sensor's trace: those backed by a declared signal, and the
    energy metrics the ``command`` collector computes when a sensor is configured."""
    out = {m for m, spec in plan.metrics.items() if spec.signal}
    experiment = plan.experiment
    if (
        experiment is not None
        and experiment.collector == "command"
        and str(experiment.params.get("sensor") or "none") != "none"
    ):
        out |= set(plan.metrics) & set(ENERGY_METRICS)
    return out


def program_metrics(plan: Plan) -> set[str]:
    """The plan's metrics a ``command`` program writes to its ``metrics.json`` (all but the sensor's)."""
    return set(plan.metrics) - sensor_metrics(plan)


def gates_sourced_by(plan: Plan, role: TraceRole) -> list[str]:
    """Ids of the gates whose metric a trace of ``role`` is the source of."""
    metrics = sensor_metrics(plan) if role == "sensor" else program_metrics(plan)
    return [g.id for g in plan.gates if g.metric in metrics]


def relies_on_telemetry(plan: Plan) -> list[str]:
    """Ids of the gates whose metric is backed by a telemetry signal (``gates_sourced_by`` sensor)."""
    return gates_sourced_by(plan, "sensor")


def _gates_of(plan: Plan, roles: set[TraceRole]) -> list[str]:
    """The gates a trace of any of ``roles`` sources, in the plan's order."""
    ids = {g for role in roles for g in gates_sourced_by(plan, role)}
    return [g.id for g in plan.gates if g.id in ids]


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
    present = {role for r in with_traces for t in r.traces if (role := trace_role(t)) is not None}
    bad = [(r.run_id, name, problem) for r in with_traces for name, problem in audit[r.run_id]]
    if not bad:
        return InvalidatorCheck(
            CHECK_ID,
            CHECK_ID,
            False,
            0.0,
            "every trace matches its recorded SHA-256",
            f"all {total} traces of {len(with_traces)} runs match their recorded SHA-256",
            _gates_of(plan, present | {"sensor"}),
        )
    roles = {role for _, name, _ in bad if (role := trace_role(name)) is not None}
    blocks = _gates_of(plan, roles)
    shown = "; ".join(f"run {rid}: {name} {problem}" for rid, name, problem in bad[:5])
    more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
    if blocks:
        effect = f"the gates on the metrics these files are the source of are refused ({', '.join(blocks)})"
    elif roles:
        effect = "no gate's metric comes from these files, so no gate is refused"
    else:
        effect = (
            "no gate relies on these traces (program output, event timelines or trajectories: they source "
            "no gate's number), so none is refused"
        )
    return InvalidatorCheck(
        CHECK_ID,
        CHECK_ID,
        True,
        float(len(bad)),
        "every trace matches its recorded SHA-256",
        f"{len(bad)} of {total} traces do not match their recorded SHA-256: {shown}{more}; " + effect,
        blocks,
    )
