"""A/A pairs: the pipeline's own false alarms, checked like a gate whose expected difference is zero.

An A/A pair is an arm and its control copy (``control_of``, :mod:`prereg.arm_checks`): the same
configuration run under two names. For each pair and each distinct primary gate (its metric, scale,
method, confidence, resamples and seed), the paired interval of ``control - original`` (``control /
original`` for a ratio gate) is computed over the gates' blocks, units of analysis and estimator, as
the gate computes its own (:mod:`gates.verdicts`). With ``K`` such checks in the plan, each interval is
at confidence ``1 - (1 - c) / K`` (Bonferroni; ``c`` the gate's confidence), so under a true A/A all of
them together refuse the decision at most at the gates' level ``1 - c`` (exactly ``1 - c`` at ``K = 1``,
up to the estimator's own coverage).

The plan-level rule (:func:`aa_refusals`): an interval that excludes the null (0, or 1 for a ratio)
refuses the decision (kind ``aa_difference``: the pipeline itself manufactures differences); a check
that cannot be computed (missing, duplicate or unusable runs of either arm, too few complete units for
the method at its confidence) refuses it too (kind ``aa_unchecked``): the plan made its claim rest on
the check, and an unmeasured false-alarm rate is not a measured one. A constant sample of unit
contrasts is judged on its one value (identical runs give exactly 0: no difference). Families
(``family_factor``) are checked pooled only.
"""

from __future__ import annotations

import warnings

import numpy as np

from estimators import insufficient_blocks, interval
from estimators.expressions import parse_contrast
from gates.artifact_aa import AAPairResult
from gates.blockdata import outcome_matrix
from gates.matching import Match
from gates.numbers import encode_number
from gates.refusal import Refusal
from gates.verdicts import analysis_unit, contrast_range, gate_blocks, planned_units, tested_units, unit_contrasts
from prereg.arm_checks import aa_checks
from prereg.schema import Gate, Plan


def evaluate_aa_pairs(plan: Plan, match: Match) -> list[AAPairResult]:
    """Every A/A check of ``plan`` on ``match`` (empty when the plan declares no A/A pair; module doc)."""
    checks = aa_checks(plan)
    return [_check(plan, match, control, original, gates, len(checks)) for control, original, gates in checks]


def _check(plan: Plan, match: Match, control: str, original: str, gates: list[Gate], k: int) -> AAPairResult:
    gate = gates[0]
    scale = gate.contrast.scale
    text = f"{control} / {original}" if scale == "ratio" else f"{control} - {original}"
    copy = gate.model_copy(update={"contrast": parse_contrast(text)})
    confidence = 1 - (1 - gate.confidence) / k
    null = 1.0 if scale == "ratio" else 0.0
    result = AAPairResult(
        control=control,
        original=original,
        contrast=text,
        metric=gate.metric,
        unit=plan.metrics[gate.metric].unit,
        scale=scale,
        method=gate.method,
        gates=[g.id for g in gates],
        gate_confidence=gate.confidence,
        confidence=confidence,
        checks=k,
        verdict="unchecked",
        null=null,
    )
    blocks = gate_blocks(match)
    values, data_problems = outcome_matrix(copy, blocks)  # gates.blockdata: the gates' rows and checks
    problems = match.arm_problems({control, original}) + data_problems
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return result.model_copy(update={"reason": problems[0] + more})
    uc = unit_contrasts(copy, plan, blocks, values)
    n = uc.n
    resamples, seed = gate.resamples or 9999, gate.seed if gate.seed is not None else 0
    words = "strata" if analysis_unit(plan) == "stratum" else "replicate pairs"
    too_few = insufficient_blocks(gate.method, confidence, n, resamples, f"complete {words}")
    if n < 2 or too_few:
        why = too_few or f"only {n} complete {words}: a paired interval needs 2 or more"
        return result.model_copy(update={"n_pairs": n, "reason": why})
    d = tested_units(copy, plan, blocks, uc)  # the betting gate's run order too
    bounds = contrast_range(copy, plan)
    if gate.method == "betting" and (bounds is None or not np.all((d >= bounds[0]) & (d <= bounds[1]))):
        reason = f"method betting needs {gate.metric}'s declared range and every A/A contrast inside it"
        return result.model_copy(update={"n_pairs": n, "reason": reason})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the gates' own intervals carry the estimator's warnings
        found = interval(
            gate.method,
            d,
            confidence,
            scale,
            resamples,
            seed,
            bounds=bounds,
            horizon=planned_units(plan, len(uc.units)),
        )
    differs = bool(found.lower > null or found.upper < null)
    return result.model_copy(
        update={
            "verdict": "differs" if differs else "same",
            "estimate": encode_number(found.estimate),
            "lower": encode_number(found.lower),
            "upper": encode_number(found.upper),
            "pvalue": found.pvalue,
            "n_pairs": n,
        }
    )


def interval_words(r: AAPairResult) -> str:
    """'restart_again / restart on time_to_target: 1.12 [1.03, 1.21] (95% t interval)'."""
    if r.lower is None or r.upper is None or r.estimate is None:
        return f"{r.contrast} on {r.metric}"
    return (
        f"{r.contrast} on {r.metric}: {float(r.estimate):.4g} [{float(r.lower):.4g}, {float(r.upper):.4g}] "
        f"({100 * r.confidence:.4g}% {r.method} interval, {r.n_pairs} units)"
    )


def aa_refusals(results: list[AAPairResult]) -> list[Refusal]:
    """The plan-level refusals of the A/A checks (module doc): one per check that differs or is unchecked."""
    out = []
    for r in results:
        null = "1" if r.scale == "ratio" else "0"
        if r.verdict == "differs":
            out.append(
                Refusal(
                    kind="aa_difference",
                    reason=f"A/A pair {r.control} (a control copy of {r.original}) differs from it: "
                    f"{interval_words(r)} excludes {null}; the pipeline itself manufactures differences between "
                    "identical configurations",
                )
            )
        elif r.verdict == "unchecked":
            out.append(
                Refusal(
                    kind="aa_unchecked",
                    reason=f"A/A pair {r.control} (a control copy of {r.original}) on {r.metric} could not be "
                    f"checked: {r.reason}",
                )
            )
    return out


__all__ = ["aa_refusals", "evaluate_aa_pairs", "interval_words"]
