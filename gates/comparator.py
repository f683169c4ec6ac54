"""The fixed comparator of a plan with ``comparator:``, chosen by its frozen rule from calibration runs only.

:func:`choose_comparator` reads only the calibration strata's blocks and refuses on a missing,
duplicated or failed candidate run, a non-finite value or a fired invalidator; :func:`resolve_gates`
puts the chosen arm into the gates' contrasts; gates naming the comparator are refused when none was chosen.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from estimators.expressions import ExpressionError
from gates.artifact_families import ComparatorChoice
from gates.invalidators import InvalidatorCheck, check_invalidators_on
from gates.matching import Match, stratum_label
from gates.numbers import encode_number
from gates.refusal import Refusal, as_refusals, invalidator_fired
from gates.traces import TraceAudit, check_traces
from prereg.family_checks import rule_words, substitute_comparator
from prereg.schema import ComparatorRule, Gate, Plan, Strata


def statistic(values: list[float], name: str) -> float:
    """``median`` or ``mean`` of finite values."""
    return float(np.median(values) if name == "median" else np.mean(values))


def calibration_match(plan: Plan, match: Match) -> Match:
    """The match restricted to calibration strata (and the problems that name them)."""
    selectors = plan.strata.calibration
    return match.subset(lambda st: any(Strata.selects(sel, st) for sel in selectors))


def _data_problems(rule: ComparatorRule, cal: Match) -> list[Refusal]:
    arms = set(rule.candidates)
    problems = [f"missing calibration run: {text}" for arm, text in cal.missing_calibration if arm in arms]
    problems += [f"duplicate calibration run: {text}" for arm, text in cal.duplicate if arm in arms]
    problems += [f"run {text}" for arm, text in cal.other_plan if arm in arms]
    return as_refusals("run", problems)


def _fired(plan: Plan, cal: Match, audit: TraceAudit | None, full: list[InvalidatorCheck]) -> list[Refusal]:
    checks: list[InvalidatorCheck] = check_invalidators_on(plan, cal, full)
    trace = check_traces(plan, cal.records(), audit) if audit is not None else None
    if trace is not None:
        checks.append(trace)
    # a changed event/trajectory trace refuses no gate (its check has no blocks), so it cannot move the choice
    return [invalidator_fired(c.id, f" on the calibration runs ({c.detail})") for c in checks if c.fired and c.blocks]


def choose_comparator(
    plan: Plan, match: Match, audit: TraceAudit | None = None, full_checks: list[InvalidatorCheck] | None = None
) -> ComparatorChoice:
    """The chosen comparator and how it was chosen: the best candidate by ``statistic`` of ``metric`` (by
    the metric's ``better``) on calibration runs, ties broken by each ``tie_break`` metric in turn, then
    by the candidates' order; refused when a candidate's calibration run is missing, duplicated or
    failed, a value is not finite, or an invalidator fired on calibration runs. ``audit``: the traces re-hashed
    (:func:`gates.traces.audit_traces`; None: not checked);
    ``full_checks`` are the invalidators on the whole match (for checks whose blocks lie elsewhere)."""
    rule = plan.comparator
    assert rule is not None
    cal = calibration_match(plan, match)
    blocks = list(cal.blocks.values())  # calibration blocks only
    metrics = [rule.metric, *[m for m in rule.tie_break if m != rule.metric]]
    refused = _data_problems(rule, cal) + _fired(plan, cal, audit, full_checks or [])
    values: dict[str, dict[str, Any]] = {}
    runs_used = 0
    for arm in rule.candidates:
        values[arm] = {}
        for metric in metrics:
            column = [b.records[arm].metric(metric) for b in blocks if arm in b.records]
            runs_used += sum(v is not None and math.isfinite(v) for v in column) if metric == rule.metric else 0
            bad = [v for v in column if v is None or not math.isfinite(v)]
            if bad or not column:
                refused.append(
                    Refusal(
                        kind="data",
                        reason=f"{metric} of arm {arm}: {len(bad)} calibration run(s) without a finite value",
                    )
                    if column
                    else Refusal(kind="run", reason=f"arm {arm} has no calibration run")
                )
                values[arm][metric] = None
                continue
            values[arm][metric] = statistic([float(v) for v in column if v is not None], rule.statistic)
    choice = ComparatorChoice(
        name=rule.name,
        arm=None,
        challenger=rule.challenger,
        rule=rule_words(plan),
        metric=rule.metric,
        statistic=rule.statistic,
        better=plan.metrics[rule.metric].better,
        tie_break=list(rule.tie_break),
        values={a: {m: encode_number(v) for m, v in mv.items()} for a, mv in values.items()},
        calibration_strata=list(dict.fromkeys(stratum_label(b.stratum) for b in blocks)),
        runs_used=runs_used,
        family_factor=plan.strata.family_factor,
        refused_by=refused,
    )
    if refused:
        return choice
    remaining = list(rule.candidates)
    settled: str | None = None
    for i, metric in enumerate(metrics):
        sign = 1.0 if plan.metrics[metric].better == "lower" else -1.0
        best = min(sign * values[a][metric] for a in remaining)
        tied = [a for a in remaining if sign * values[a][metric] == best]
        if len(tied) < len(remaining) and i > 0 and settled is None:
            settled = metric
        remaining = tied
        if len(remaining) == 1:
            break
    if len(remaining) > 1:
        settled = "candidate order"
    return choice.model_copy(update={"arm": remaining[0], "ties_broken_by": settled})


def uses_comparator(gate: Gate, plan: Plan) -> bool:
    """Whether the gate's contrast names the comparator's placeholder."""
    return plan.comparator is not None and plan.comparator.name in gate.contrast.arms


def resolve_gates(plan: Plan, choice: ComparatorChoice | None) -> tuple[Plan, dict[str, list[Refusal]]]:
    """The plan with the chosen arm in every contrast that names the placeholder, and the
    refusal reasons of gates that name it when no arm was chosen."""
    if plan.comparator is None or choice is None:
        return plan, {}
    name = plan.comparator.name
    refusals: dict[str, list[Refusal]] = {}
    gates = []
    for gate in plan.gates:
        if not uses_comparator(gate, plan):
            gates.append(gate)
        elif choice.arm is None:
            refusals[gate.id] = [
                Refusal(
                    kind="comparator",
                    reason="the comparator could not be chosen from the calibration "
                    "runs: " + "; ".join(r.reason for r in choice.refused_by[:3]),
                )
            ]
            gates.append(gate)
        else:
            try:
                contrast = substitute_comparator(gate.contrast.text, name, choice.arm)
            except ExpressionError as err:  # frozen plans are checked for this; an older lock may not be
                refusals[gate.id] = [
                    Refusal(
                        kind="comparator",
                        reason=f"with the comparator {choice.arm} the contrast compares nothing ({err})",
                    )
                ]
                gates.append(gate)
                continue
            gates.append(gate.model_copy(update={"contrast": contrast}))
    return plan.model_copy(update={"gates": gates}), refusals


__all__ = ["calibration_match", "choose_comparator", "resolve_gates", "rule_words", "statistic", "uses_comparator"]
