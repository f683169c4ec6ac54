"""Tracker runs -> ``collect import`` rows: each matched to its planned run, by the tag ``prereg.run_id``
(checked against the other ``prereg.*`` tags) or by declared fields (``--match seed=params.seed``).

Every problem is said naming the tracker run; nothing is imported unless every matched run fits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from collect.engine.runs import PlannedRun
from collect.importing.planned import RUN_ID_TAG, level_text, planned_runs, planned_tags, seed_column
from collect.importing.trackers.base import TrackerProblem, TrackerRun, iso
from prereg.schema import Plan

MATCH_COLUMNS = ("arm", "replicate", "seed")  # besides the stratum factors
MAX_ERRORS = 20


@dataclass
class Matched:
    """The rows to import (one per matched tracker run, ``labels`` naming each row's tracker run), each
    row's record fields besides the row's (``source``, ``provenance``, a failed run's ``error``) by planned
    run id, and the tracker runs that carry no match (left out, counted)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    unmatched: list[TrackerRun] = field(default_factory=list)


def parse_match(pairs: Sequence[str], plan: Plan) -> dict[str, str]:
    """``--match COLUMN=FIELD`` pairs as a mapping; COLUMN is arm, replicate, seed or a stratum factor;
    FIELD is ``params.NAME``, ``tags.NAME``, ``name`` or ``run_id``."""
    columns = [*plan.strata.factors, *MATCH_COLUMNS]
    out: dict[str, str] = {}
    for pair in pairs:
        column, sep, where = pair.partition("=")
        column, where = column.strip(), where.strip()
        if not sep or not column or not where:
            raise TrackerProblem(f"--match {pair!r}: write COLUMN=FIELD, e.g. seed=params.seed")
        if column not in columns:
            raise TrackerProblem(f"--match {pair!r}: {column!r} is not arm, replicate, seed or a stratum factor")
        if not (where in ("name", "run_id") or where.startswith(("params.", "tags."))):
            raise TrackerProblem(f"--match {pair!r}: the field is params.NAME, tags.NAME, name or run_id")
        if column in out:
            raise TrackerProblem(f"--match: {column!r} is given twice")
        out[column] = where
    missing = [c for c in ("arm", *plan.strata.factors) if c not in out]
    if out and missing:
        raise TrackerProblem(f"--match: say where each run's {', '.join(missing)} is (arm and every stratum factor)")
    if out and "replicate" not in out and "seed" not in out and plan.strata.replicates > 1:
        raise TrackerProblem("--match: the plan has several replicates; say where each run's replicate or seed is")
    return out


def _field(run: TrackerRun, where: str) -> str | None:
    if where == "name":
        return run.name or None
    if where == "run_id":
        return run.run_id
    kind, _, key = where.partition(".")
    value = (run.params if kind == "params" else run.tags).get(key)
    return None if value is None else level_text(value)


def _planned_text(plan: Plan, run: PlannedRun, column: str) -> str:
    if column == "arm":
        return run.arm
    if column == "replicate":
        return str(run.replicate)
    if column == "seed" and "seed" not in plan.strata.factors:
        return str(run.seed)
    return level_text(run.stratum[column])


def _by_tags(run: TrackerRun, plan: Plan, by_id: Mapping[str, PlannedRun]) -> tuple[PlannedRun | None, str | None]:
    given = run.tags.get(RUN_ID_TAG)
    if given is None:
        return None, None
    planned = by_id.get(given.strip())
    if planned is None:
        return (
            None,
            f"{run.label()}: tag {RUN_ID_TAG} = {given!r} is not a run of this plan ('collect plan LOCK' lists them)",
        )
    for tag, want in planned_tags(plan, planned).items():
        have = run.tags.get(tag)
        if have is not None and have.strip() != want:
            return None, f"{run.label()}: tag {tag} = {have!r}, but planned run {planned.run_id} has {want!r}"
    return planned, None


def _by_fields(
    run: TrackerRun, plan: Plan, runs: Sequence[PlannedRun], match: Mapping[str, str]
) -> tuple[PlannedRun | None, str | None]:
    given = {column: _field(run, where) for column, where in match.items()}
    if any(v is None for v in given.values()):
        return None, None
    found = [p for p in runs if all(_planned_text(plan, p, c) == v for c, v in given.items())]
    shown = ", ".join(f"{c}={v}" for c, v in given.items())
    if not found:
        return None, f"{run.label()}: {shown} is no planned run (narrow the runs read, or correct --match)"
    if len(found) > 1:
        return None, f"{run.label()}: {shown} fits {len(found)} planned runs; --match the replicate or the seed too"
    return found[0], None


def match_runs(
    runs: Sequence[TrackerRun], plan: Plan, plan_sha256: str, source: str, match: Mapping[str, str] | None = None
) -> Matched:
    """The rows of ``runs`` that match planned runs (module doc); ``TrackerProblem`` listing what does not fit."""
    planned = planned_runs(plan, plan_sha256)
    by_id = {p.run_id: p for p in planned}
    out = Matched()
    errors: list[str] = []
    claimed: dict[str, TrackerRun] = {}
    for run in runs:
        hit, error = _by_fields(run, plan, planned, match) if match else _by_tags(run, plan, by_id)
        if error is not None:
            errors.append(error)
            continue
        if hit is None:
            out.unmatched.append(run)
            continue
        if hit.run_id in claimed:
            errors.append(
                f"{run.label()} and {claimed[hit.run_id].label()} are both planned run {hit.run_id} (stratum "
                f"{hit.stratum}, arm {hit.arm}, replicate {hit.replicate}): a planned run has one record; "
                "delete or filter out the one that is not it"
            )
            continue
        claimed[hit.run_id] = run
        row, row_errors = _row(run, hit, plan)
        if row_errors:
            errors += row_errors
            continue
        out.rows.append(row)
        out.labels.append(run.label())
        out.updates[hit.run_id] = {"source": f"import:{source} run {run.run_id}", "provenance": provenance(run)}
        if run.status == "failed":
            out.updates[hit.run_id]["error"] = f"the {run.tracker} run is recorded as failed ({run.label()})"
    if not errors and not out.rows:
        how = f"--match {', '.join(f'{c}={w}' for c, w in (match or {}).items())}" if match else f"the tag {RUN_ID_TAG}"
        errors.append(
            f"{source}: none of its {len(runs)} runs is matched by {how}; set the tags 'collect plan LOCK --tracker "
            "...' prints on each run, or match runs made before the plan with --match COLUMN=FIELD"
        )
    if errors:
        extra = [f"... and {len(errors) - MAX_ERRORS} more"] if len(errors) > MAX_ERRORS else []
        raise TrackerProblem(f"{source}: nothing imported:\n" + "\n".join(errors[:MAX_ERRORS] + extra))
    return out


def provenance(run: TrackerRun) -> dict[str, Any]:
    """A record's ``provenance`` (``collect.ledger.records.Provenance``) for ``run``."""
    return {
        "tracker": run.tracker,
        "uri": run.uri,
        "run_id": run.run_id,
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "git_commit": run.git_commit,
        "content_sha256": run.content_sha256(),
        "files": run.files,
    }


def _row(run: TrackerRun, planned: PlannedRun, plan: Plan) -> tuple[dict[str, Any], list[str]]:
    """The import row of ``run`` as ``planned``, or the errors naming it."""
    if run.status == "running":
        return {}, [f"{run.label()}: still running (no end recorded); import it once it has ended"]
    errors = []
    metrics: dict[str, Any] = {}
    for name in plan.metrics:
        if name in run.values:
            value = run.values[name]
            if not math.isfinite(value):
                errors.append(f"{run.label()}: metric {name} is {value!r}; a run's value must be a finite number")
            metrics[name] = value
        elif run.status == "complete":
            errors.append(f"{run.label()}: {name}: {run.missing.get(name, 'not read')}")
    row: dict[str, Any] = {
        "run_id": planned.run_id,
        "arm": planned.arm,
        **planned.stratum,
        "replicate": planned.replicate,
        "status": run.status,
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        **metrics,
    }
    if seed_column(plan) == "seed":
        row["seed"] = planned.seed
    return {k: v for k, v in row.items() if v is not None}, errors


__all__ = ["Matched", "match_runs", "parse_match", "provenance"]
