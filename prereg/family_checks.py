"""Cross-reference checks of held-out families, uncertainty regions and the comparator rule.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import re
from typing import Any

from estimators.expressions import Contrast, ExpressionError, parse_contrast
from prereg.schema import Plan, Scalar, Strata, level_key

Problem = tuple[tuple[Any, ...], str]


def family_of(plan: Plan, stratum: dict[str, Scalar]) -> Scalar | None:
    """The stratum's family level (None when the plan declares no ``family_factor``)."""
    factor = plan.strata.family_factor
    return None if factor is None else stratum[factor]


def held_out_families(plan: Plan) -> list[Scalar]:
    """The families (levels of ``family_factor``) of the held-out strata, in the order the levels are written."""
    factor = plan.strata.family_factor
    if factor is None:
        return []
    held = {
        level_key(s[factor])
        for s in plan.strata.enumerate()
        if any(Strata.selects(sel, s) for sel in plan.strata.held_out)
    }
    return [level for level in plan.strata.factors[factor] if level_key(level) in held]


def family_units_planned(plan: Plan, family: Scalar) -> int:
    """Paired units one held-out family gives each gate (its held-out strata, times replicates when
    the analysis unit is the replicate)."""
    factor = plan.strata.family_factor
    assert factor is not None
    strata = [s for s in plan.pairing_strata() if level_key(s[factor]) == level_key(family)]
    return len(strata) * (plan.strata.replicates if plan.strata.analysis_unit == "replicate" else 1)


def _check_families(plan: Plan, problems: list[Problem]) -> None:
    strata = plan.strata
    factor = strata.family_factor
    if factor is None:
        if strata.region_factors:
            problems.append(
                (
                    ("strata", "region_factors"),
                    "region_factors need 'family_factor' (the ranking is given per family x region)",
                )
            )
        return
    if factor not in strata.factors:
        problems.append((("strata", "family_factor"), f"unknown factor {factor!r}; known: {', '.join(strata.factors)}"))
        return
    if not strata.held_out:
        problems.append(
            (
                ("strata", "held_out"),
                "family_factor needs held-out strata: 'held_out' selects the families judged per family",
            )
        )
        return
    cal_families: set[str] = set()
    held_families: set[str] = set()
    for stratum in strata.enumerate():
        in_cal = any(Strata.selects(sel, stratum) for sel in strata.calibration)
        in_held = any(Strata.selects(sel, stratum) for sel in strata.held_out)
        if not in_cal and not in_held:
            problems.append(
                (
                    ("strata", "held_out"),
                    f"stratum {stratum} is neither calibration nor held out: with "
                    "family_factor every stratum must be one of them",
                )
            )
            return
        (cal_families if in_cal else held_families).add(level_key(stratum[factor]))
    both = [lv for lv in strata.factors[factor] if level_key(lv) in cal_families & held_families]
    if both:
        problems.append(
            (
                ("strata", "held_out"),
                f"family {both[0]!r} has both calibration and held-out strata: a "
                "held-out family must never be seen by the calibration (choose whole families)",
            )
        )
    if plan.control_selectors() and not strata.pair_controls:
        problems.append(
            (
                ("strata", "controls"),
                "family plans judge every held-out stratum: declare no unpaired "
                "controls (make the no-stress family a calibration family instead)",
            )
        )
    for region, metric in (strata.region_factors or {}).items():
        if region not in strata.factors or region == factor:
            problems.append(
                (
                    ("strata", "region_factors", region),
                    f"{region!r} is not a factor other than the family factor; factors: {', '.join(strata.factors)}",
                )
            )
        if metric not in plan.metrics:
            problems.append(
                (
                    ("strata", "region_factors", region),
                    f"unknown metric {metric!r}; known: {', '.join(sorted(plan.metrics))}",
                )
            )


def _check_comparator(plan: Plan, problems: list[Problem]) -> None:
    rule = plan.comparator
    if rule is None:
        return
    path = ("comparator",)
    if rule.name in plan.arms:
        problems.append(((*path, "name"), f"{rule.name!r} is an arm; the comparator's placeholder must not be one"))
    for i, arm in enumerate(rule.candidates):
        if arm not in plan.arms:
            problems.append(((*path, "candidates", i), f"unknown arm {arm!r}; arms: {', '.join(plan.arms)}"))
    if len(set(rule.candidates)) != len(rule.candidates):
        problems.append(((*path, "candidates"), "a candidate is listed twice"))
    if rule.challenger not in plan.arms:
        problems.append(((*path, "challenger"), f"unknown arm {rule.challenger!r}; arms: {', '.join(plan.arms)}"))
    elif rule.challenger in rule.candidates:
        problems.append(((*path, "challenger"), "the challenger cannot also be a candidate comparator"))
    for key, metric in [("metric", rule.metric), ("ranking", rule.ranking.metric)] + [
        (("tie_break", i), m) for i, m in enumerate(rule.tie_break)
    ]:
        if metric is not None and metric not in plan.metrics:
            where = (*path, *(key if isinstance(key, tuple) else (key,)))
            problems.append((where, f"unknown metric {metric!r}; known: {', '.join(sorted(plan.metrics))}"))
    if not plan.strata.calibration:
        problems.append(((*path,), "a comparator is chosen on calibration strata: declare 'strata.calibration'"))
    for i, gate in enumerate(plan.gates):
        if rule.name not in gate.contrast.arms:
            continue
        for arm in rule.candidates:
            try:
                substitute_comparator(gate.contrast.text, rule.name, arm)
            except ExpressionError as err:
                problems.append(
                    (
                        ("gates", i, "contrast"),
                        f"with the comparator chosen as {arm!r} the contrast "
                        f"{gate.contrast.text!r} would compare nothing: {err}",
                    )
                )
                break
    if plan.strata.family_factor in plan.strata.factors and plan.strata.held_out and not problems:
        _check_ranking_cells(plan, problems)


def _check_ranking_cells(plan: Plan, problems: list[Problem]) -> None:
    """The ranking must be able to order every family x region cell with its planned units."""
    from estimators.feasibility import insufficient_blocks  # lazy: numpy

    rule, factor = plan.comparator, plan.strata.family_factor
    assert rule is not None and factor is not None
    regions = [r for r in (plan.strata.region_factors or {}) if r in plan.strata.factors]
    units = plan.strata.replicates if plan.strata.analysis_unit == "replicate" else 1  # per stratum
    cells: dict[tuple[str, ...], int] = {}
    for stratum in plan.pairing_strata():
        cell = tuple(level_key(stratum[f]) for f in [factor, *regions])
        cells[cell] = cells.get(cell, 0) + units
    # the least stringent level a cell's claim is ever judged at (gates.ranking_control): the whole alpha one
    # cell at a time; under Holm, its last step, alpha split over the cell's claims (its order and one flip per
    # region factor); under Bonferroni, alpha over every claim of every cell
    rr = rule.ranking
    alpha, claims = 1 - rr.confidence, 1 + len(regions)
    best = {"per_cell": alpha, "holm": alpha / claims, "bonferroni": alpha / (len(cells) * claims)}[rr.error_control]
    for n in cells.values():
        why = insufficient_blocks(rr.method, 1 - best, n, None, "pairs in each family x region cell")
        if why:
            problems.append((("comparator", "ranking", "method"), f"the ranking could never order a cell: {why}"))
            return


def power_problem(plan: Plan, gate: Any, n: int, unit: str) -> str | None:
    """Why ``gate`` could never decide with ``n`` units, or None. A primary gate under Holm or
    Bonferroni over k primary gates must reach p <= alpha / k (the smallest p of the family is
    multiplied by k), so its method is checked at that level."""
    from estimators.feasibility import insufficient_blocks  # lazy: numpy

    k = sum(g.role == "primary" for g in plan.gates)
    adjusted = gate.role == "primary" and plan.decision.multiplicity in ("holm", "bonferroni") and k > 1
    confidence = 1 - (1 - gate.confidence) / k if adjusted else gate.confidence
    why = insufficient_blocks(gate.method, confidence, n, gate.resamples, unit)
    if why and adjusted and insufficient_blocks(gate.method, gate.confidence, n, gate.resamples, unit) is None:
        return (
            f"under {plan.decision.multiplicity} over {k} primary gates it must reach p <= "
            f"{(1 - gate.confidence) / 2 / k:.4g} (alpha / {k}), which it cannot: {why} (the method is "
            f"checked at the equivalent confidence {confidence:.4g}); so the claim could never be supported"
        )
    return why


def _check_family_power(plan: Plan, problems: list[Problem]) -> None:
    """Each held-out family alone must give every gate enough units to decide."""
    factor = plan.strata.family_factor
    if factor is None or factor not in plan.strata.factors or not plan.strata.held_out:
        return
    for family in held_out_families(plan):
        n = family_units_planned(plan, family)
        unit = "replicate pairs" if plan.strata.analysis_unit == "replicate" else "held-out strata"
        for i, gate in enumerate(plan.gates):
            why = power_problem(plan, gate, n, f"{unit} of family {family}")
            if why:
                problems.append((("gates", i, "method"), f"gate {gate.id!r}, judged per family: {why}"))
                return


def check_families(plan: Plan, problems: list[Problem], *, power: bool = True) -> None:
    """Append the family, region and comparator problems of ``plan`` (with ``power``, and none found
    before, whether each held-out family alone lets every gate decide)."""
    _check_families(plan, problems)
    _check_comparator(plan, problems)
    if power and not problems:
        _check_family_power(plan, problems)


def rule_words(plan: Plan) -> str:
    """The frozen rule in one sentence."""
    rule = plan.comparator
    assert rule is not None
    better = "lowest" if plan.metrics[rule.metric].better == "lower" else "highest"
    ties = "".join(
        f", ties broken by the {'lower' if plan.metrics[m].better == 'lower' else 'higher'} {rule.statistic} {m}"
        for m in rule.tie_break
        if m in plan.metrics
    )
    return (
        f"the candidate ({', '.join(rule.candidates)}) with the {better} {rule.statistic} {rule.metric} over its "
        f"runs on the calibration strata{ties}, then by the order the candidates are listed"
    )


def substitute_comparator(text: str, name: str, arm: str) -> Contrast:
    """A gate contrast with the comparator's placeholder replaced by ``arm``, parsed (``ExpressionError``
    when it degenerates, e.g. ``comparator / fast`` with ``fast`` chosen)."""
    return parse_contrast(re.sub(rf"\b{re.escape(name)}\b", arm, text))


def gate_arms(plan: Plan) -> set[str]:
    """The names a gate contrast may use: the arms, and the comparator's placeholder when declared."""
    return set(plan.arms) | ({plan.comparator.name} if plan.comparator is not None else set())
