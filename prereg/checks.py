"""Cross-reference checks of a parsed plan: the rules a single section cannot see on its own.

Each problem is returned as ``(path, message)`` where ``path`` is the field path into the YAML
document (``("gates", 1, "metric")``), so it can be reported with its line number.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from estimators.expressions import ExpressionError, check_arms
from prereg.arm_checks import aa_problems
from prereg.direction import direction_problem
from prereg.family_checks import check_families, gate_arms, power_problem
from prereg.method_checks import bounded_method_problems, first_look_problems
from prereg.monitoring import monitoring_problems
from prereg.schema import ControlsIdentical, FaultsLanded, MetricBounds, Plan, Strata, level_key
from prereg.schema_failures import FACTOR_REF, failure_problems
from prereg.schema_invalidators import FailureRate
from prereg.schema_resources import resource_problems

Problem = tuple[tuple[Any, ...], str]


def _known(kind: str, name: str, known: Any) -> str:
    return f"unknown {kind} {name!r}; known: {', '.join(sorted(known)) or '(none)'}"


def _check_selector(selector: dict[str, Any], strata: Strata, path: tuple[Any, ...], problems: list[Problem]) -> None:
    for factor, level in selector.items():
        if factor not in strata.factors:
            problems.append(((*path, factor), _known("factor", factor, strata.factors)))
        elif level_key(level) not in {level_key(v) for v in strata.factors[factor]}:
            problems.append(((*path, factor), f"{level!r} is not a level of factor {factor!r}"))


def _check_strata(plan: Plan, problems: list[Problem]) -> None:
    strata = plan.strata
    for factor, levels in strata.factors.items():
        seen: set[str] = set()
        for i, level in enumerate(levels):
            if level_key(level) in seen:
                problems.append((("strata", "factors", factor, i), f"level {level!r} of {factor!r} is listed twice"))
            seen.add(level_key(level))
    for section in ("calibration", "held_out", "controls"):
        for i, selector in enumerate(getattr(strata, section) or []):
            if not selector:
                problems.append((("strata", section, i), "an empty selector would select every stratum"))
            _check_selector(selector, strata, ("strata", section, i), problems)
    if strata.calibration and strata.held_out:
        everything = strata.enumerate()
        for stratum in everything:
            in_cal = any(Strata.selects(s, stratum) for s in strata.calibration)
            in_held = any(Strata.selects(s, stratum) for s in strata.held_out)
            if in_cal and in_held:
                problems.append((("strata", "held_out"), f"stratum {stratum} is both calibration and held out"))
                break
    for arm, settings in plan.arms.items():
        for key in settings:
            if key in strata.factors:
                problems.append(
                    (("arms", arm, key), f"{key!r} is set by both a stratum factor and arm {arm!r}; choose one")
                )


def _check_gates(plan: Plan, problems: list[Problem]) -> None:
    ids = Counter(g.id for g in plan.gates)
    for i, gate in enumerate(plan.gates):
        path = ("gates", i)
        if ids[gate.id] > 1:
            problems.append(((*path, "id"), f"duplicate gate id {gate.id!r}"))
        if gate.metric not in plan.metrics:
            problems.append(((*path, "metric"), _known("metric", gate.metric, plan.metrics)))
        contrast, rule = gate.contrast, gate.pass_if
        try:
            check_arms(contrast, gate_arms(plan))
        except ExpressionError as err:
            problems.append(((*path, "contrast"), str(err)))
            continue
        if contrast.scale == "ratio":
            values = [v for v in (rule.threshold, rule.low) if v is not None]
            if any(v <= 0 for v in values):
                problems.append(
                    ((*path, "pass_if"), "a ratio contrast is positive: its threshold must be a ratio above 0")
                )
        if gate.metric in plan.metrics:
            metric = plan.metrics[gate.metric]
            wrong = direction_problem(contrast, rule, metric.better, gate.direction, gate.metric)
            if wrong:
                problems.append(((*path, "direction" if gate.direction else "pass_if"), wrong))
    if not any(g.role == "primary" for g in plan.gates):
        problems.append((("gates",), "no primary gate: at least one gate must decide the claim"))


def _check_invalidators(plan: Plan, problems: list[Problem]) -> None:
    ids = Counter(inv.id for inv in plan.invalidators)
    gate_ids = {g.id for g in plan.gates}
    signals = {m.signal for m in plan.metrics.values() if m.signal is not None}
    for i, inv in enumerate(plan.invalidators):
        path = ("invalidators", i)
        if ids[inv.id] > 1:
            problems.append(((*path, "id"), f"duplicate invalidator id {inv.id!r}"))
        if inv.id == "trace_integrity":
            problems.append(
                (
                    (*path, "id"),
                    "invalidator id 'trace_integrity' is reserved for the built-in check "
                    "that every trace matches its recorded SHA-256; choose another id",
                )
            )
        if inv.blocks != "all":
            for j, gate_id in enumerate(inv.blocks):
                if gate_id not in gate_ids:
                    problems.append(((*path, "blocks", j), _known("gate", gate_id, gate_ids)))
            if len(set(inv.blocks)) != len(inv.blocks):
                problems.append(((*path, "blocks"), "a gate is listed twice"))
        if isinstance(inv, (MetricBounds, ControlsIdentical)):
            if inv.metric not in plan.metrics:
                problems.append(((*path, "metric"), _known("metric", inv.metric, plan.metrics)))
            if isinstance(inv, ControlsIdentical):
                _check_selector(inv.where, plan.strata, (*path, "where"), problems)
        elif isinstance(inv, FaultsLanded):
            continue  # reads the runs' fault records: no signal, no metric
        elif isinstance(inv, FailureRate):
            problems += failure_rate_problems(plan, inv, path)
        elif inv.signal not in signals:
            problems.append(
                ((*path, "signal"), f"signal {inv.signal!r} backs no metric (metrics name their signal with 'signal:')")
            )


#: a Poisson draw of the planned faults cut at max_restarts more often than this biases the count low
MAX_TRUNCATION = 1e-3


def _rate_levels(plan: Plan, rate: float | int | str, path: tuple[Any, ...], problems: list[Problem]) -> list[float]:
    """The planned rate's values over the strata (one, or the levels of the factor it names)."""
    if not isinstance(rate, str):
        return [float(rate)]
    factor = FACTOR_REF.match(rate).group(1)  # type: ignore[union-attr]  # the field's pattern
    levels = plan.strata.factors.get(factor)
    if levels is None:
        problems.append(((*path, "rate"), _known("factor", factor, plan.strata.factors)))
        return []
    numbers = [float(v) for v in levels if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != len(levels) or not all(math.isfinite(v) and v >= 0 for v in numbers):
        problems.append(((*path, "rate"), f"rate names factor {factor!r}, whose levels are not all numbers >= 0"))
        return []
    if not any(v > 0 for v in numbers):
        problems.append(((*path, "rate"), f"every level of {factor!r} is 0: no stratum plans a failure to test"))
    return numbers


def failure_rate_problems(plan: Plan, inv: FailureRate, path: tuple[Any, ...]) -> list[Problem]:
    """A ``failure_rate`` invalidator's references: its metrics exist, and what it leaves out the plan's
    ``experiment.failures`` gives (the faults the command collector records; a Poisson rate > 0 and
    its horizon); a planned draw that ``max_restarts`` would cut is refused (the count would be
    biased low)."""
    problems: list[Problem] = []
    failures = plan.experiment.failures if plan.experiment is not None else None
    for field in ("count", "exposure"):
        name = getattr(inv, field)
        if isinstance(name, str) and name not in plan.metrics:
            problems.append(((*path, field), _known("metric", name, plan.metrics)))
    if inv.count is not None:
        if inv.exposure is None:
            problems.append(((*path, "exposure"), "give each run's exposure: the metric that holds it, or a number"))
        if inv.rate is None:
            problems.append(((*path, "rate"), "give the planned rate: failures per unit of exposure"))
        if inv.landed_share_min is not None:
            problems.append(
                (
                    (*path, "landed_share_min"),
                    "the landed share is of the faults experiment.failures plans: drop 'count'",
                )
            )
        if inv.rate is not None:
            _rate_levels(plan, inv.rate, path, problems)
        return problems
    if failures is None:
        problems.append(
            (
                (*path, "count"),
                "name the metric that holds each run's failure count (without 'count' the faults the command "
                "collector records are counted, which needs experiment.failures)",
            )
        )
        return problems
    rate = inv.rate if inv.rate is not None else failures.poisson_rate
    if rate is None:
        problems.append(
            ((*path, "rate"), "give the planned rate: experiment.failures plans fixed points, not a 'poisson_rate'")
        )
        return problems
    rates = _rate_levels(plan, rate, path, problems)
    if inv.rate is None and rates and not any(r > 0 for r in rates):
        problems.append(((*path, "rate"), "experiment.failures.poisson_rate is 0: no failure is planned to test"))
    exposure = inv.exposure if inv.exposure is not None else failures.horizon
    if exposure is None:
        problems.append(((*path, "exposure"), "give each run's exposure: experiment.failures has no 'horizon'"))
    if isinstance(exposure, int | float) and rates:
        from estimators.poisson import poisson_sf  # lazy: numpy, scipy

        mean = max(rates) * float(exposure)
        cut = poisson_sf(failures.max_restarts, mean)
        if cut > MAX_TRUNCATION:
            problems.append(
                (
                    (*path, "rate"),
                    f"a run plans {mean:g} faults on average, and experiment.failures.max_restarts = "
                    f"{failures.max_restarts} cuts the draw in {cut:.2%} of runs (the count would be biased "
                    f"low); raise max_restarts",
                )
            )
    return problems


def analysis_units_planned(plan: Plan) -> int:
    """How many paired contrasts each gate will get: the strata that give pairs (not calibration,
    not unpaired controls), times the replicates when ``strata.analysis_unit: replicate``. Called
    only after :data:`MAX_PLANNED_RUNS` has bounded the expansion."""
    units = len(plan.pairing_strata())
    return units * (plan.strata.replicates if plan.strata.analysis_unit == "replicate" else 1)


def _check_gate_power(plan: Plan, problems: list[Problem]) -> None:
    """Refuse gates whose method cannot reach its confidence (or may not decide) with the blocks
    the plan gives (statistics from :mod:`estimators.feasibility`, imported lazily; multiplicity
    included: :func:`prereg.family_checks.power_problem`)."""
    n = analysis_units_planned(plan)
    unit = (
        "replicate pairs"
        if plan.strata.analysis_unit == "replicate"
        else "pairing strata (not calibration or control; replicates averaged)"
    )
    for i, gate in enumerate(plan.gates):
        why = power_problem(plan, gate, n, unit)
        if why:
            problems.append((("gates", i, "method"), f"gate {gate.id!r}: {why}"))


MAX_PLANNED_RUNS = 100_000  # strata x replicates x arms: more is refused before anything is enumerated


def planned_runs(plan: Plan) -> int:
    """How many runs the plan expands into (computed, never enumerated)."""
    count = plan.strata.replicates * len(plan.arms)
    for levels in plan.strata.factors.values():
        count *= len(levels)
    return count


def _check_meters(plan: Plan, problems: list[Problem]) -> None:
    """Metrics backed by one signal read one meter: their ``meter`` declarations must agree."""
    first: dict[str, tuple[str, object]] = {}
    for name, metric in plan.metrics.items():
        if metric.signal is None or metric.meter is None:
            continue
        seen = first.setdefault(metric.signal, (name, metric.meter))
        if seen[1] != metric.meter:
            problems.append(
                (
                    ("metrics", name, "meter"),
                    f"signal {metric.signal!r} is read by one meter, but "
                    f"metric {seen[0]!r} describes it differently; declare the same meter on both",
                )
            )


def check_plan(plan: Plan, *, references_only: bool = False) -> list[Problem]:
    """All cross-reference problems of ``plan`` (empty when the plan is consistent). ``references_only``:
    leave out the checks that judge the plan as a whole (whether each gate can decide with the blocks
    and looks planned, which depends on every gate): for a plan some of whose parts were set aside
    (:func:`prereg.plan.salvaged_problems`)."""
    problems: list[Problem] = []
    if planned_runs(plan) > MAX_PLANNED_RUNS:
        return [
            (
                ("strata", "factors"),
                f"the plan expands into {planned_runs(plan):,} runs (strata x replicates "
                f"x arms); at most {MAX_PLANNED_RUNS:,} are supported",
            )
        ]
    _check_strata(plan, problems)
    problems += aa_problems(plan)  # A/A pairs (prereg.arm_checks)
    _check_gates(plan, problems)
    _check_invalidators(plan, problems)
    _check_meters(plan, problems)
    check_families(plan, problems, power=not references_only)
    if plan.experiment is not None:
        problems += resource_problems(plan.experiment.resources, plan.strata.factors, list(plan.arms))
        problems += failure_problems(plan.experiment.failures, plan.strata.factors)
    problems += bounded_method_problems(plan)  # betting: a range (prereg.method_checks)
    if references_only:
        return problems
    if not problems:
        _check_gate_power(plan, problems)
    if not problems:
        problems += first_look_problems(plan) + monitoring_problems(plan)  # interim looks (prereg.monitoring)
    return problems
