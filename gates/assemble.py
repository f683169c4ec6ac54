"""Assembling the evaluation artifact from a verified lock and a ledger (no terminal output here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collect.ledger.columns import LedgerColumns
from collect.ledger.looks import LookRecord, look_sha256
from collect.ledger.store import GENESIS, Ledger
from gates.aa_pairs import aa_refusals, evaluate_aa_pairs
from gates.artifact import (
    AmendmentSummary,
    BlockRow,
    Controls,
    Evaluation,
    GateResult,
    GroupTally,
    InvalidatorResult,
    LedgerIdentity,
    LockReference,
    Resolution,
    RunAccounting,
    TimeOrder,
)
from gates.artifact_families import ComparatorChoice, FamilyResult, RankingCell
from gates.artifact_monitoring import MonitoringResult
from gates.code_identity import check_code_identity, code_identity_refusal
from gates.comparator import choose_comparator, resolve_gates, uses_comparator
from gates.descriptive import descriptive_metrics, failed_run_entries
from gates.families import combine_decisions, evaluate_families
from gates.integrity import check_ledger
from gates.invalidators import check_invalidators
from gates.looks import conclude, locate, look_fields, plan_at, restrict, settle
from gates.matching import block_label, match_ledger
from gates.numbers import encode_number
from gates.phase_support import phase_support
from gates.plausibility import decision_warning
from gates.provenance import check_plan_yaml, check_predecessors, other_plan_note, predecessor_refusal
from gates.refusal import Refusal, as_refusals
from gates.seals import check_seals
from gates.timeorder import check_time_order
from gates.traces import audit_traces, check_traces
from gates.verdicts import GateOutcome, decide, evaluate_gates, gate_blocks
from prereg._version import __version__
from prereg.lock import genesis_hash, utc_now
from prereg.lock_seal import lock_seal, version_count
from prereg.schema import Plan


def _number_or_text(value: Any) -> Any:
    return encode_number(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _gate_result(o: GateOutcome, plan: Plan) -> GateResult:
    rule = o.gate.pass_if
    r = o.result
    margin = [rule.low, rule.high] if rule.quantity == "within" else [rule.threshold]
    resolution = None
    if o.resolution is not None:
        resolution = Resolution(
            interval_bound=encode_number(o.resolution.interval_bound),
            could_change=o.resolution.could_change,
            extremes=[[encode_number(x) for x in pair] for pair in o.resolution.extremes],
        )
    return GateResult(
        id=o.gate.id,
        metric=o.gate.metric,
        unit=plan.metrics[o.gate.metric].unit,
        contrast=o.gate.contrast.text,
        scale=o.scale,
        role=o.gate.role,
        group=o.gate.group,
        verdict=o.verdict,
        estimate=encode_number(r.estimate) if r else None,
        lower=encode_number(r.lower) if r else None,
        upper=encode_number(r.upper) if r else None,
        confidence=o.gate.confidence,
        attained_confidence=r.attained_confidence if r else None,
        method=o.gate.method,
        n_pairs=o.n_pairs,
        analysis_unit=o.analysis_unit,
        rule=o.gate.pass_if,
        margin=[float(m) for m in margin if m is not None],
        null=1.0 if o.scale == "ratio" else 0.0,
        pvalue=o.pvalue,
        pvalue_adjusted=o.pvalue_adjusted,
        evidence=o.evidence,
        evidence_declared=declared if (declared := plan.metrics[o.gate.metric].evidence) != o.evidence else None,
        direction=o.gate.direction,
        refused_by=o.refused_by,
        notes=o.notes,
        warnings=o.warnings,
        resolution=resolution,
        arm_medians={k: encode_number(v) for k, v in o.arm_medians.items()},
    )


def build_evaluation(
    lock: dict[str, Any],
    plan: Plan,
    ledger: Ledger | LedgerColumns,
    lock_path: Path,
    history: list[LookRecord] | None = None,
) -> Evaluation:
    """Match, check invalidators, evaluate gates, decide; return the artifact (``ledger`` read column-wise,
    ``collect.ledger.columns``, or record by record).

    A monitored plan (``monitoring:``) is evaluated at its point of the frozen run order, with the
    look ledger's earlier records ``history`` (:mod:`gates.looks`).
    Raises ``gates.integrity.LedgerTampered`` when the ledger's hash chain does not verify.
    """
    ledger = ledger if isinstance(ledger, LedgerColumns) else LedgerColumns.from_ledger(ledger)
    chain = check_ledger(ledger)
    match = match_ledger(plan, lock["plan_sha256"], ledger)
    point = locate(plan, lock["plan_sha256"], ledger, history or []) if plan.monitoring is not None else None
    if point is not None:  # only the prefix of the run order reached; primary gates at the look's levels
        match, plan = restrict(point, match), plan_at(point)
    checks = check_invalidators(plan, match)
    audit = audit_traces(match.records(), ledger.path.parent)
    traces = check_traces(plan, match.records(), audit)
    if traces is not None:
        checks.append(traces)
    choice: ComparatorChoice | None = None
    families: list[FamilyResult] = []
    ranking: list[RankingCell] = []
    unchosen: dict[str, list[Refusal]] = {}  # gates refused because no comparator could be chosen
    if plan.comparator is not None:
        choice = choose_comparator(plan, match, audit, checks)
        original, (plan, unchosen) = plan, resolve_gates(plan, choice)
    outcomes = evaluate_gates(plan, match, checks, unchosen)
    if choice is not None and choice.arm is not None:
        for o, gate in zip(outcomes, original.gates, strict=True):
            if uses_comparator(gate, original):
                o.notes.insert(
                    0, f"{choice.name} = {choice.arm}: chosen from the calibration runs only, by the frozen rule"
                )
    decision, reason = decide(outcomes)
    monitoring: MonitoringResult | None = None
    interim: list[Refusal] = []
    if point is not None:
        decision, reason, interim, monitoring = conclude(point, outcomes, decision, reason)
    if plan.strata.family_factor is not None:
        families, ranking = evaluate_families(plan, match, unchosen, choice, audit, checks)
        decision, reason = combine_decisions((decision, reason), families)
    time_order = check_time_order(plan, lock, match.records())
    predecessors = check_predecessors(plan, lock_path.parent)
    # the runs were recorded under this lock as it stands
    refusals = interim + as_refusals("seal", check_seals(lock, ledger.records).refusals())
    code_identity = check_code_identity(plan, match.records())
    late, changed = time_order.refusal(), predecessor_refusal(predecessors)
    differs = code_identity_refusal(code_identity)
    refusals += [Refusal(kind="time_order", reason=late)] if late else []
    refusals += [Refusal(kind="predecessor", reason=changed)] if changed else []
    refusals += [Refusal(kind="code_identity", reason=differs)] if differs else []
    aa_pairs = evaluate_aa_pairs(plan, match)  # A/A pairs: the pipeline's own false alarms (gates.aa_pairs)
    refusals += aa_refusals(aa_pairs)
    if refusals:  # outside the gates: the data or the plan's basis cannot be shown to be what it says
        decision = "refused"
        reason = "; ".join(r.reason for r in refusals) + (f"; gates: {reason}" if reason else "")
    monitoring = settle(monitoring, decision)
    reason += decision_warning(
        [(o.gate.id, o.gate.role, o.notes + o.warnings) for o in outcomes],  # gates.plausibility
        {o.gate.id for o in outcomes if o.verdict == "pass"},
    )
    other_hashes: dict[str, int] = {}
    for sha in ledger.columns["prereg_sha256"]:
        if sha != lock["plan_sha256"]:
            other_hashes[sha] = other_hashes.get(sha, 0) + 1
    control_blocks = [b for b in match.blocks.values() if b.control]
    groups: dict[str, GroupTally] = {}
    for o in outcomes:
        if o.gate.group:
            tally = groups.setdefault(o.gate.group, GroupTally(total=0, counts={}))
            tally.total += 1
            tally.counts[o.verdict] = tally.counts.get(o.verdict, 0) + 1
    blocks = []
    gblocks = gate_blocks(match)
    stored = ledger.columns["metrics"]
    for i, block in enumerate(gblocks):
        # a stored metric is already its artifact encoding: a finite float, "NaN" / "Infinity" / "-Infinity"
        # or None (encode_value(record.metric(m)) gives back exactly the stored value)
        metrics = {arm: stored[row] for arm, row in block.rows.items()}
        values = {metric: {arm: m.get(metric) for arm, m in metrics.items()} for metric in plan.metrics}
        contrasts = {o.gate.id: encode_number(o.contrasts[i]) if o.contrasts[i] is not None else None for o in outcomes}
        blocks.append(
            BlockRow(
                block=block.label, stratum=block.stratum, replicate=block.replicate, contrasts=contrasts, values=values
            )
        )
    evaluation = Evaluation(
        prereg_sha256=lock["plan_sha256"],
        genesis_plan_sha256=genesis_hash(lock),
        study=plan.study,
        title=plan.title,
        claim=plan.decision.claim,
        scope=plan.scope,
        frozen_at=lock["frozen_at"],
        amendments=[
            AmendmentSummary(
                version=a["version"],
                amended_at=a["amended_at"],
                reason=a["reason"],
                post_data=a["post_data"],
                runs_checked=a["runs_checked"],
            )
            for a in lock["amendments"]
        ],
        ledger=LedgerIdentity(
            path=str(ledger.path),
            sha256=ledger.sha256,
            records=ledger.size,
            torn_tail=ledger.torn_tail,
            chain=chain.status,
            head_sha256=chain.head,
        ),
        runs=RunAccounting(
            planned=match.planned,
            matched=match.matched,
            missing=[t for _, t in match.missing] + [f"{t} (calibration)" for _, t in match.missing_calibration],
            failed=[t for _, t in match.failed],
            duplicate=[t for _, t in match.duplicate],
            unplanned=[t for _, t in match.unplanned],
            other_plan=[t for _, t in match.other_plan],
            ledger_problems=match.ledger_problems,
        ),
        decision=decision,
        decision_reason=reason,
        multiplicity=plan.decision.multiplicity,
        gates=[_gate_result(o, plan) for o in outcomes],
        groups=groups,
        invalidators=[
            InvalidatorResult(
                id=c.id,
                kind=c.kind,
                fired=c.fired,
                observed=_number_or_text(c.observed),
                threshold=_number_or_text(c.threshold),
                detail=c.detail,
                blocks=c.blocks,
            )
            for c in checks
        ],
        blocks=blocks,
        predecessors=predecessors,
        toolkit_version=__version__,
        evaluated_at=utc_now(),
        decision_refused_by=refusals,
        time_order=TimeOrder(
            pre_existing=time_order.pre_existing,
            reason=time_order.reason,
            before_freeze=time_order.before_freeze,
            before_amendment=time_order.before_amendment,
            unknown_start=time_order.unknown_start,
            unreadable_start=time_order.unreadable_start,
        ),
        plan_yaml=check_plan_yaml(lock, lock_path),
        controls=Controls(
            blocks=[block_label(b.stratum, b.replicate) for b in control_blocks], paired=bool(plan.strata.pair_controls)
        )
        if control_blocks
        else None,
        other_plan_note=other_plan_note(lock, other_hashes, lock_path),
        superseded_by=list(lock.get("superseded_by", [])),
        phase_support=phase_support(plan, match.records()),
        comparator=choice,
        families=families,
        ranking=ranking,
        lock=LockReference(path=str(lock_path), version=version_count(lock), seal=lock_seal(lock)),
        code_identity=code_identity,
        monitoring=monitoring,
        failed_runs=failed_run_entries(plan, lock["plan_sha256"], ledger, match),
        descriptive_metrics=descriptive_metrics(plan, ledger, match),
        aa_pairs=aa_pairs,
    )
    return _with_looks_head(evaluation, ledger, history or []) if monitoring is not None else evaluation


def _with_looks_head(evaluation: Evaluation, ledger: LedgerColumns, history: list[LookRecord]) -> Evaluation:
    """The artifact naming the look ledger's head once its look is recorded: the hash of the record
    ``gates.looks.look_fields`` makes of it, appended after ``history`` (``collect.ledger.looks``)."""
    m = evaluation.monitoring
    assert m is not None
    fields = look_fields(
        m,
        evaluation.gates,
        evaluation.decision,
        ledger,
        evaluation.prereg_sha256,
        evaluation.lock.seal if evaluation.lock else None,
        evaluation.evaluated_at,
    )
    prev = (history[-1].record_sha256 or GENESIS) if history else GENESIS
    head = look_sha256(fields, m.sequence, prev)
    return evaluation.model_copy(update={"monitoring": m.model_copy(update={"looks_head": head})})
