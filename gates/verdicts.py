"""Evaluating a frozen plan on a ledger: each gate's interval and verdict, then the decision.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from estimators import adjust_p_values, clears, insufficient_blocks, paired_contrast, propagate_bounds, resolution_check
from estimators.betting import contrast_bounds
from estimators.feasibility import symmetry_note
from gates.blockdata import bounds_matrix, outcome_matrix, split_note
from gates.blockdata import evidence as gate_evidence
from gates.invalidators import InvalidatorCheck
from gates.matching import Block, Match
from gates.plausibility import plausibility
from gates.refusal import Refusal, as_refusals, invalidator_fired
from gates.unit_order import betting_order
from gates.unit_verdict import judge_contrasts
from prereg.schema import CONFIDENCE_FLOOR, Gate, Plan


@dataclass
class GateOutcome:
    """Everything computed for one gate (turned into the artifact's ``GateResult``)."""

    gate: Gate
    verdict: str
    scale: str
    evidence: str
    refused_by: list[Refusal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    result: Any = None  # estimators.IntervalResult
    pvalue: float | None = None
    pvalue_adjusted: float | None = None
    n_pairs: int = 0
    resolution: Any = None  # estimators.ResolutionCheck
    arm_medians: dict[str, float | None] = field(default_factory=dict)
    contrasts: list[float | None] = field(default_factory=list)  # per gate block, reported scale
    analysis_unit: str = "stratum"


def gate_blocks(match: Match) -> list[Block]:
    """The blocks that give pairs to gates: not calibration, not controls (unless paired), in plan order
    (listed once per match: every gate reads the same list, never changes it)."""
    if match.gate_blocks is None:
        match.gate_blocks = [b for b in match.blocks.values() if b.gives_pairs]
    return match.gate_blocks


def analysis_unit(plan: Plan) -> str:
    """``stratum`` (default) or ``replicate``: what one paired contrast is (module doc)."""
    return plan.strata.analysis_unit or "stratum"


def analysis_units(plan: Plan, blocks: list[Block]) -> list[list[int]]:
    """Indices into ``blocks`` forming each unit of analysis, in plan order."""
    if analysis_unit(plan) == "replicate":
        return [[i] for i in range(len(blocks))]
    cache = blocks[0].ledger.cache if blocks and blocks[0].ledger is not None else {}
    kept = cache.get(("units", id(blocks)))
    if kept is not None and kept[0] is blocks:  # the same list of blocks (gate_blocks): grouped once
        return list(kept[1])
    groups: dict[str, list[int]] = {}
    for i, block in enumerate(blocks):
        groups.setdefault(block.stratum_text, []).append(i)
    units = list(groups.values())
    cache[("units", id(blocks))] = (blocks, units)
    return list(units)


def unit_means(per_block: np.ndarray, units: list[list[int]]) -> np.ndarray:
    """Mean of each unit's block values (NaN when any of its blocks is NaN).

    Units of one size (every stratum has the plan's replicates) are averaged as one array: numpy
    reduces each row with the same summation as ``np.mean`` of that row alone, so the values are
    identical to the per-unit loop (tested)."""
    if not units:
        return np.zeros(0)
    if len({len(idx) for idx in units}) == 1:
        return np.asarray(per_block[np.array(units)].mean(axis=1), dtype=np.float64)
    return np.array([float(np.mean(per_block[idx])) for idx in units])


@dataclass(frozen=True)
class UnitContrasts:
    """A gate's contrasts on its blocks (analysis scale, log for ratios): per block (NaN where a block lacks
    a value, or a positive one for a ratio), and per unit of analysis (``units``: block indices)."""

    coefs: np.ndarray
    complete_rows: np.ndarray  # blocks with every arm's value
    per_block: np.ndarray
    units: list[list[int]]
    unit_d: np.ndarray
    complete: np.ndarray  # units with a contrast

    @property
    def n(self) -> int:
        return int(self.complete.sum())


def unit_contrasts(gate: Gate, plan: Plan, blocks: list[Block], values: np.ndarray) -> UnitContrasts:
    """``gate``'s contrasts per block and per unit from its outcome matrix ``values`` (blocks x arms)."""
    contrast = gate.contrast
    complete_rows = np.all(np.isfinite(values), axis=1)
    if contrast.scale == "ratio":
        complete_rows &= np.all(values > 0, axis=1)
    coefs = np.array([contrast.coefficients[a] for a in contrast.arms])
    per_block = np.full(len(blocks), np.nan)
    if complete_rows.any():
        per_block[complete_rows] = paired_contrast(values[complete_rows], coefs, contrast.scale)
    units = analysis_units(plan, blocks)
    unit_d = unit_means(per_block, units)
    return UnitContrasts(coefs, complete_rows, per_block, units, unit_d, np.isfinite(unit_d))


def tested_units(gate: Gate, plan: Plan, blocks: list[Block], uc: UnitContrasts) -> np.ndarray:
    """The complete units' contrasts in the order the method reads them: for betting the run order, never the
    plan's listing (``gates.unit_order``); for the others the units' order."""
    if gate.method == "betting":
        return uc.unit_d[[u for u in betting_order(plan, blocks, uc.units) if uc.complete[u]]]
    return uc.unit_d[uc.complete]


def _unit_bounds(
    gate: Gate,
    plan: Plan,
    blocks: list[Block],
    values: np.ndarray,
    coefs: np.ndarray,
    complete_rows: np.ndarray,
    units: list[list[int]],
    complete: np.ndarray,
    outcome: GateOutcome,
) -> np.ndarray | None:
    """Per-unit contrast bounds (analysis scale) for a signal-backed metric; None if no signal.
    Sets ``outcome`` unresolvable (and returns an empty array) when a run lacks its bound."""
    bounds, lacking, split, periods = bounds_matrix(gate, plan, blocks)  # gates.blockdata
    if bounds is None:
        return None
    if split:
        outcome.notes.append(split_note(plan.metrics[gate.metric].signal or "", split, bounds.size, periods))
    if lacking:
        outcome.verdict = "unresolvable"
        outcome.notes.append(
            f"no measurement bound of {plan.metrics[gate.metric].signal} in run(s) {', '.join(lacking[:3])}"
        )
        return np.zeros(0)
    per_block = np.full(len(blocks), np.nan)
    if complete_rows.any():
        per_block[complete_rows] = propagate_bounds(
            values[complete_rows], coefs, bounds[complete_rows], gate.contrast.scale
        )
    return unit_means(per_block, units)[complete]


def plan_notes(gate: Gate, plan: Plan, n: int) -> list[str]:
    """What the plan itself makes this gate's verdict rest on, in words: a descriptive rule, a
    confidence below the floor (with the plan's reason), a measured metric with no resolution
    check, a mean-targeting interval whose symmetry its ``n`` units cannot check."""
    notes = []
    rule = gate.pass_if
    if not rule.tested:
        notes.append(
            f"descriptive: '{rule}' compares the point estimate alone, which is no test; this gate has no "
            "p-value, never enters the multiplicity family and never decides the claim"
        )
    if gate.confidence < CONFIDENCE_FLOOR:
        alpha = (1 - gate.confidence) / 2
        notes.append(
            f"this gate's interval is only {100 * gate.confidence:.4g}% two-sided: each one-sided test is at level "
            f"{alpha:.3g} ({100 * alpha:.3g}% false passes at the margin, not 5%); the plan's reason: "
            f"{gate.confidence_reason}"
        )
    metric = plan.metrics[gate.metric]
    if metric.evidence == "measured" and metric.signal is None:
        notes.append(
            f"no resolution check applies: {gate.metric} is declared measured but names no telemetry signal, so "
            "no measurement bound is known and the verdict treats its values as exact"
        )
    symmetry = symmetry_note(gate.method, n) if rule.tested else None
    if symmetry:
        notes.append(symmetry)
    return notes


def decision_levels(gate: Gate, plan: Plan) -> tuple[float, ...]:
    """The p-value thresholds ``gate``'s verdict can depend on: ``alpha``, and ``alpha / K`` when its
    p-value is adjusted over a family of ``K`` primary gates (a p-value at most ``alpha / K`` passes at
    any rank and leaves the other gates' verdicts as they are). A sign-flip Monte Carlo draws until
    its rule is settled at these (``estimators.mc_stop``)."""
    alpha = (1 - gate.confidence) / 2
    family = sum(g.role == "primary" and g.pass_if.tested for g in plan.gates)
    if plan.decision.multiplicity == "none" or gate.role != "primary" or family <= 1:
        return (alpha,)
    return (alpha / family, alpha)


def evaluate_gate(gate: Gate, plan: Plan, match: Match, fired: list[Refusal]) -> GateOutcome:
    """Compute one gate (before multiplicity); see the module doc for the verdict order. The
    verdict's own notes come first, then what the plan makes it rest on (:func:`plan_notes`)."""
    outcome = _evaluate_gate(gate, plan, match, fired)
    outcome.notes += plan_notes(gate, plan, outcome.n_pairs)
    return outcome


def _evaluate_gate(gate: Gate, plan: Plan, match: Match, fired: list[Refusal]) -> GateOutcome:
    contrast = gate.contrast
    blocks = gate_blocks(match)
    outcome = GateOutcome(gate, "refused", contrast.scale, gate_evidence(gate, plan, blocks))
    outcome.analysis_unit = analysis_unit(plan)
    outcome.refused_by = list(fired) + as_refusals("run", match.arm_problems(set(contrast.arms)))
    values, data_problems = outcome_matrix(gate, blocks)  # gates.blockdata: by the blocks' rows
    outcome.refused_by += as_refusals("data", data_problems)
    out_of_range, implausible = plausibility(gate, plan, blocks, values)  # gates.plausibility
    outcome.refused_by += as_refusals("data", out_of_range)
    outcome.notes += implausible
    for j, arm in enumerate(contrast.arms):
        column = values[:, j][np.isfinite(values[:, j])]
        outcome.arm_medians[arm] = float(np.median(column)) if column.size else None
    uc = unit_contrasts(gate, plan, blocks, values)
    coefs, complete_rows, units, complete = uc.coefs, uc.complete_rows, uc.units, uc.complete
    outcome.contrasts = [
        None if not np.isfinite(x) else float(np.exp(x) if contrast.scale == "ratio" else x) for x in uc.per_block
    ]
    n_complete = uc.n
    outcome.n_pairs = n_complete
    resamples, seed = gate.resamples or 9999, gate.seed if gate.seed is not None else 0
    bounds = contrast_range(gate, plan)
    unit_words = "strata" if outcome.analysis_unit == "stratum" else "replicate pairs"
    too_few = insufficient_blocks(gate.method, gate.confidence, n_complete, resamples, f"complete {unit_words}")
    if n_complete < 2:
        outcome.refused_by.append(
            Refusal(
                kind="pairs",
                reason=f"only {n_complete} complete {outcome.analysis_unit}(s): a paired interval needs 2 or more",
            )
        )
        return outcome
    if too_few:
        outcome.refused_by.append(Refusal(kind="pairs", reason=too_few))
    d = tested_units(gate, plan, blocks, uc)
    rule = gate.pass_if
    if gate.method == "betting" and (bounds is None or not np.all((d >= bounds[0]) & (d <= bounds[1]))):
        if not outcome.refused_by:  # a value outside the metric's range is refused above (gates.plausibility)
            outcome.refused_by.append(
                Refusal(
                    kind="data",
                    reason=f"method betting needs {gate.metric}'s declared "
                    "range (positive for a ratio) and every contrast inside it",
                )
            )
        return outcome
    judged = judge_contrasts(
        d,
        rule,
        gate.confidence,
        gate.method,
        contrast.scale,
        resamples,
        seed,
        levels=decision_levels(gate, plan),
        bounds=bounds,
        horizon=planned_units(plan, len(units)),
        deterministic=plan.metrics[gate.metric].deterministic is True,
    )
    decision = judged.decision
    outcome.result = decision.result
    outcome.pvalue = decision.pvalue
    resamples = decision.result.resamples or resamples  # a sign-flip Monte Carlo stopped early drew fewer
    outcome.warnings = judged.warnings
    if gate.method == "betting" and decision.result.lower > decision.result.upper:
        outcome.refused_by.append(
            Refusal(
                kind="data",
                reason=(
                    "the betting test rejects every mean: the units, in the order they were run, are not consistent with "
                    "one mean inside the range (an effect that drifted over the run order?); the test assumes exchangeable "
                    "units"
                ),
            )
        )
    if outcome.refused_by:
        outcome.notes.append("refused: the interval above is a diagnostic, not evidence")
        return outcome
    b = _unit_bounds(gate, plan, blocks, values, coefs, complete_rows, units, complete, outcome)
    if b is not None:
        if outcome.verdict == "unresolvable":
            return outcome
        outcome.resolution = resolution_check(
            rule, d, b, gate.confidence, gate.method, contrast.scale, resamples, seed, result=decision.result
        )
        if outcome.resolution.could_change:
            outcome.verdict = "unresolvable"
            outcome.notes.append(
                f"the {plan.metrics[gate.metric].signal} measurement bounds could move the interval by "
                f"{outcome.resolution.interval_bound:.3g} (analysis scale), enough to change the rule's outcome"
            )
            return outcome
    outcome.verdict = judged.verdict
    outcome.notes += judged.notes
    return outcome


def contrast_range(gate: Gate, plan: Plan) -> tuple[float, float] | None:
    """The range of ``gate``'s contrast (analysis scale) from its metric's declared ``range``, or None
    (none declared, or a ratio contrast of a range that reaches 0)."""
    metric = plan.metrics[gate.metric]
    if metric.range is None or (gate.contrast.scale == "ratio" and metric.range[0] <= 0):
        return None
    coefs = [gate.contrast.coefficients[a] for a in gate.contrast.arms]
    low, high = metric.range
    return contrast_bounds((low, high), coefs, gate.contrast.scale)


def planned_units(plan: Plan, units: int) -> int:
    """The units a gate gets when the plan is complete: the last look of a monitored plan, else ``units``
    (every planned unit of the evaluated blocks). A betting interval tunes its bets to it."""
    return plan.monitoring.looks[-1] if plan.monitoring is not None else units


def apply_multiplicity(outcomes: list[GateOutcome], method: str) -> None:
    """Adjust primary gates' rule p-values and demote passes that do not survive (module doc)."""
    # descriptive rules (no test) never enter; every primary gate is tested (refused at freeze otherwise)
    primary = [o for o in outcomes if o.gate.role == "primary" and o.gate.pass_if.tested]
    if not primary:
        return
    family = np.array([o.pvalue if o.pvalue is not None else 1.0 for o in primary])
    adjusted = adjust_p_values(family, method)
    for o, p_adj in zip(primary, adjusted, strict=True):
        if o.pvalue is None:
            continue
        o.pvalue_adjusted = float(p_adj)
        if method == "none" or o.verdict != "pass":
            continue
        alpha = (1 - o.gate.confidence) / 2
        if not clears(float(p_adj), alpha):
            o.verdict = "fail"
            o.notes.append(
                f"passes on its own (p = {o.pvalue:.3g}) but not after {method} (adjusted p = {p_adj:.3g} vs alpha {alpha:g})"
            )


def decide(outcomes: list[GateOutcome]) -> tuple[str, str]:
    """The decision over primary gates and a one-line reason."""
    primary = [o for o in outcomes if o.gate.role == "primary"]
    blocked = [o for o in primary if o.verdict in ("refused", "unresolvable")]
    if blocked:
        return "refused", "; ".join(f"gate {o.gate.id} is {o.verdict}" for o in blocked)
    failed = [o for o in primary if o.verdict == "fail"]
    if failed:
        return "not_supported", "; ".join(f"gate {o.gate.id} failed" for o in failed)
    vacuous = sum(o.verdict == "vacuous" for o in primary)
    extra = f" ({vacuous} vacuous: could not have failed)" if vacuous else ""
    return "supported", f"all {len(primary)} primary gates passed{extra}"


def evaluate_gates(
    plan: Plan, match: Match, checks: list[InvalidatorCheck], refusals: dict[str, list[Refusal]] | None = None
) -> list[GateOutcome]:
    """Every gate's outcome, multiplicity applied; ``refusals`` adds reasons that refuse a gate
    (e.g. its comparator could not be chosen)."""
    outcomes = []
    for gate in plan.gates:
        fired = [invalidator_fired(c.id) for c in checks if c.fired and gate.id in c.blocks]
        fired += (refusals or {}).get(gate.id, [])
        outcomes.append(evaluate_gate(gate, plan, match, fired))
    apply_multiplicity(outcomes, plan.decision.multiplicity)
    return outcomes
