"""Held-out families judged one by one, the hindsight yardstick, and the ranking under uncertainty.

For a plan with ``strata.family_factor``: every gate on each held-out family alone (a refusal stays
in its family, and refuses the pooled gates), the best fixed candidate in hindsight (reported, never a
gate), the ranking per family x region (:mod:`gates.ranking`, its error held over the cells by
:mod:`gates.ranking_control`), and the claim
(:func:`combine_decisions`) needing the pooled gates and every family.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gates.artifact_families import ComparatorChoice, FamilyGate, FamilyResult, Hindsight, RankingCell
from gates.comparator import statistic
from gates.invalidators import InvalidatorCheck, check_invalidators_on
from gates.matching import Block, Match
from gates.numbers import encode_number
from gates.ranking import CellEvidence, prepare_cell
from gates.ranking_control import control_ranking
from gates.refusal import Refusal
from gates.traces import TraceAudit, check_traces
from gates.verdicts import GateOutcome, decide, evaluate_gates, gate_blocks
from prereg.family_checks import held_out_families
from prereg.schema import Plan, Scalar, level_key


def family_keep(plan: Plan, family: Scalar) -> Any:
    """A stratum test for one family. A problem naming no family level, or a level that is not one
    of the plan's families, touches every family."""
    factor = plan.strata.family_factor
    assert factor is not None
    key = level_key(family)
    planned = {level_key(v) for v in plan.strata.factors[factor]}

    def keep(st: dict[str, Any]) -> bool:
        if not isinstance(st, dict) or factor not in st:
            return True
        level = level_key(st[factor])
        return level == key or level not in planned

    return keep


def _family_gate(o: GateOutcome) -> FamilyGate:
    r = o.result
    return FamilyGate(
        id=o.gate.id,
        contrast=o.gate.contrast.text,
        role=o.gate.role,
        verdict=o.verdict,
        estimate=encode_number(r.estimate) if r else None,
        lower=encode_number(r.lower) if r else None,
        upper=encode_number(r.upper) if r else None,
        confidence=o.gate.confidence,
        n_pairs=o.n_pairs,
        pvalue_adjusted=o.pvalue_adjusted,
        refused_by=list(o.refused_by),
        notes=list(o.notes),
    )


def _finite(blocks: list[Block], arm: str, metric: str) -> list[float]:
    """The arm's finite values of ``metric`` over ``blocks`` (runs lacking it are left out)."""
    return [
        v for b in blocks if arm in b.records and (v := b.records[arm].metric(metric)) is not None and math.isfinite(v)
    ]


def _medians(plan: Plan, blocks: list[Block], metrics: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        out[metric] = {}
        for arm in plan.arms:
            column = _finite(blocks, arm, metric)
            out[metric][arm] = encode_number(float(np.median(column))) if column else None
    return out


def _hindsight(plan: Plan, blocks: list[Block]) -> Hindsight | None:
    rule = plan.comparator
    if rule is None:
        return None
    sign = 1.0 if plan.metrics[rule.metric].better == "lower" else -1.0
    values: dict[str, float | None] = {}
    incomplete = []
    for arm in [*rule.candidates, rule.challenger]:
        column = _finite(blocks, arm, rule.metric)
        if len(column) < len(blocks):
            incomplete.append(arm)
        values[arm] = statistic(column, rule.statistic) if column else None
    ranked = [a for a in rule.candidates if values[a] is not None and a not in incomplete]
    best = min(ranked, key=lambda a: (sign * values[a], rule.candidates.index(a))) if ranked else None  # type: ignore[operator]
    note = (
        f"arm(s) {', '.join(incomplete)} lack runs on this family, so they are not ranked in hindsight"
        if incomplete
        else None
    )
    return Hindsight(
        metric=rule.metric,
        statistic=rule.statistic,
        best_arm=best,
        values={a: encode_number(v) for a, v in values.items()},
        note=note,
    )


def evaluate_family(
    plan: Plan,
    match: Match,
    family: Scalar,
    refusals: dict[str, list[Refusal]],
    audit: TraceAudit | None,
    metrics: list[str],
    full_checks: list[InvalidatorCheck],
) -> tuple[FamilyResult, Match, list[str]]:
    """One held-out family: its gates, decision, yardstick and descriptive medians."""
    sub = match.subset(family_keep(plan, family))
    checks = check_invalidators_on(plan, sub, full_checks)
    trace = check_traces(plan, sub.records(), audit) if audit is not None else None
    if trace is not None:
        checks.append(trace)
    outcomes = evaluate_gates(plan, sub, checks, refusals)
    decision, reason = decide(outcomes)
    blocks = gate_blocks(sub)
    fired = [c.id for c in checks if c.fired]
    result = FamilyResult(
        family=family,
        blocks=len(blocks),
        decision=decision,
        decision_reason=reason,
        gates=[_family_gate(o) for o in outcomes],
        hindsight=_hindsight(plan, blocks),
        medians=_medians(plan, blocks, metrics),
        invalidators_fired=fired,
    )
    blocking = [c.id for c in checks if c.fired and c.blocks]
    return result, sub, blocking


def combine_decisions(pooled: tuple[str, str], families: list[FamilyResult]) -> tuple[str, str]:
    """The claim needs the pooled gates and every held-out family's gates (refused first, as per gate)."""
    parts = [("pooled", *pooled)] + [(f"family {f.family}", f.decision, f.decision_reason) for f in families]
    for decision in ("refused", "not_supported"):
        hit = [f"{label}: {reason}" for label, d, reason in parts if d == decision]
        if hit:
            return decision, "; ".join(hit)
    vacuous = [str(f.family) for f in families if any(g.role == "primary" and g.verdict == "vacuous" for g in f.gates)]
    flag = (
        f"; vacuous (could not have failed) in famil{'y' if len(vacuous) == 1 else 'ies'} {', '.join(vacuous)}"
        if vacuous
        else ""
    )
    return "supported", f"pooled and in each of the {len(families)} held-out families: {pooled[1]}{flag}"


def regions_of(plan: Plan, blocks: list[Block]) -> list[dict[str, Scalar]]:
    """The distinct region-factor levels of ``blocks``, in order (one empty region without region factors)."""
    factors = list(plan.strata.region_factors or {})
    seen: dict[tuple[str, ...], dict[str, Scalar]] = {}
    for b in blocks:
        seen.setdefault(tuple(level_key(b.stratum[f]) for f in factors), {f: b.stratum[f] for f in factors})
    return list(seen.values()) or [{}]


def _in_region(block: Block, region: dict[str, Scalar]) -> bool:
    return all(level_key(block.stratum[f]) == level_key(v) for f, v in region.items())


def evaluate_families(
    plan: Plan,
    match: Match,
    refusals: dict[str, list[Refusal]],
    choice: ComparatorChoice | None,
    audit: TraceAudit | None,
    full_checks: list[InvalidatorCheck],
) -> tuple[list[FamilyResult], list[RankingCell]]:
    """Every held-out family's result, and the ranking cells of each family x region."""
    metrics = list(plan.metrics)
    families: list[FamilyResult] = []
    cells: list[RankingCell | CellEvidence] = []
    for family in held_out_families(plan):
        result, sub, blocking = evaluate_family(plan, match, family, refusals, audit, metrics, full_checks)
        families.append(result)
        if plan.comparator is None:
            continue
        blocks = gate_blocks(sub)
        for region in regions_of(plan, blocks):
            cell_blocks = [b for b in blocks if _in_region(b, region)]
            missing = [
                text
                for arm, text in sub.missing + sub.duplicate + sub.unplanned + sub.other_plan
                if arm in (plan.comparator.challenger, choice.arm if choice else None)
                and _in_region_text(sub, text, region)
            ]
            cells.append(prepare_cell(plan, family, region, cell_blocks, choice, missing, blocking))
    return families, control_ranking(plan, cells) if plan.comparator is not None else []


def _in_region_text(sub: Match, text: str, region: dict[str, Scalar]) -> bool:
    stratum = sub.where.get(text)
    return stratum is None or all(f not in stratum or level_key(stratum[f]) == level_key(v) for f, v in region.items())


__all__ = [
    "combine_decisions",
    "evaluate_families",
    "evaluate_family",
    "family_keep",
    "held_out_families",
    "regions_of",
]
