"""Plan checks of what a gate's method may rest on: a bounded method's range, a small first look.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import Any

from estimators.vocabulary import Rule
from prereg.schema import Plan

Problem = tuple[tuple[Any, ...], str]


def bounded_method_problems(plan: Plan) -> list[Problem]:
    """Gates (and a ranking) naming ``betting`` where it cannot be valid (module doc)."""
    problems: list[Problem] = []
    for i, gate in enumerate(plan.gates):
        metric = plan.metrics.get(gate.metric)
        if gate.method != "betting" or metric is None:
            continue
        path = ("gates", i, "method")
        if metric.range is None:
            problems.append(
                (
                    path,
                    f"gate {gate.id!r}: method betting needs the metric's 'range' ({gate.metric} "
                    "declares none): its interval is valid for any distribution inside a known range, and "
                    f"for no other; declare 'range: [min, max]' under metrics.{gate.metric}",
                )
            )
        elif gate.contrast.scale == "ratio" and metric.range[0] <= 0:
            problems.append(
                (
                    path,
                    f"gate {gate.id!r}: a ratio contrast with method betting needs a positive range "
                    f"(its log ratios are bounded by log(max / min)); {gate.metric}'s range starts at "
                    f"{metric.range[0]:g}",
                )
            )
        if metric.signal is not None:
            problems.append(
                (
                    path,
                    f"gate {gate.id!r}: method betting has no measurement-resolution bound (its bets "
                    f"depend on every earlier value), and {gate.metric} is backed by the telemetry signal "
                    f"{metric.signal!r}; use t, signflip or wilcoxon for a signal-backed metric",
                )
            )
    if not problems:
        problems += _betting_power_problems(plan)
    if plan.comparator is not None and plan.comparator.ranking.method == "betting":
        problems.append(
            (
                ("comparator", "ranking", "method"),
                "the comparator's ranking cannot use method betting "
                "(it needs a metric range per ranked pair); use t, signflip or wilcoxon",
            )
        )
    return problems


def _best_case_pvalue(gate: Any, bounds: tuple[float, float], n: int, horizon: int, confidence: float) -> float:
    """The rule's betting p-value if every one of ``n`` units showed the range's most favourable contrast
    (its low end for ``upper``, high end for ``lower``, the rule's centre for ``within``)."""
    import numpy as np  # lazy: numpy

    from estimators.betting import betting_one_sided  # lazy: numpy

    rule: Rule = gate.pass_if
    scale = gate.contrast.scale

    def at(x: float) -> float:
        return float(np.log(x)) if scale == "ratio" else float(x)

    def p(value: float, mu: float) -> tuple[float, float]:
        return betting_one_sided(np.full(n, value), mu, bounds=bounds, confidence=confidence, horizon=horizon)

    if rule.quantity == "within":
        assert rule.low is not None and rule.high is not None
        centre = (at(rule.low) + at(rule.high)) / 2
        return max(p(centre, at(rule.low))[0], p(centre, at(rule.high))[1])
    assert rule.threshold is not None
    if rule.quantity == "upper":
        return p(bounds[0], at(rule.threshold))[1]
    return p(bounds[1], at(rule.threshold))[0]


def _betting_power_problems(plan: Plan) -> list[Problem]:
    """Primary betting gates that could never pass at the planned n (or at a look), even if every unit showed
    the range's most favourable value: the bets a range allows grow the capital by a bounded factor per unit."""
    from estimators.betting import contrast_bounds  # lazy: numpy

    per = plan.strata.replicates if plan.strata.analysis_unit == "replicate" else 1
    total = len(plan.pairing_strata()) * per
    looks = list(plan.monitoring.looks) if plan.monitoring is not None else [total]
    k = sum(g.role == "primary" for g in plan.gates)
    share = k if plan.decision.multiplicity in ("holm", "bonferroni") and k > 1 else 1
    problems: list[Problem] = []
    for i, gate in enumerate(plan.gates):
        metric = plan.metrics.get(gate.metric)
        if gate.method != "betting" or gate.role != "primary" or metric is None or metric.range is None:
            continue
        coefs = [gate.contrast.coefficients[a] for a in gate.contrast.arms]
        bounds = contrast_bounds((metric.range[0], metric.range[1]), coefs, gate.contrast.scale)
        alpha = (1 - gate.confidence) / 2 / share
        for j, n in enumerate(looks):
            best = _best_case_pvalue(gate, bounds, n, looks[-1], 1 - 2 * alpha)
            if best > alpha * (1 + 1e-12):
                where = f"look {j + 1} ({n} units)" if plan.monitoring is not None else f"its {n} units"
                problems.append(
                    (
                        (("monitoring", "looks", j) if plan.monitoring is not None else ("gates", i, "method")),
                        f"gate {gate.id!r} (betting) could never pass at {where}: even if every unit showed "
                        f"the range's most favourable contrast its p-value would be {best:.3g}, above "
                        f"{alpha:.3g} (a bet on a range of [{bounds[0]:.4g}, {bounds[1]:.4g}] grows by a "
                        "bounded factor per unit); move the look later, plan more units, or declare a "
                        "narrower range",
                    )
                )
                break
    return problems


def first_look_problems(plan: Plan) -> list[Problem]:
    """A monitored plan's primary mean-targeting gates decided at a first look too small to check
    symmetry, with no ``first_look_reason`` (module doc)."""
    monitoring = plan.monitoring
    if monitoring is None or monitoring.first_look_reason is not None:
        return []
    from estimators.feasibility import MEAN_METHODS, SKEW_CHECK_MIN_N  # lazy: numpy

    first = monitoring.looks[0]
    if first >= SKEW_CHECK_MIN_N:
        return []
    problems: list[Problem] = []
    for gate in plan.gates:
        if gate.role != "primary" or gate.method not in MEAN_METHODS:
            continue
        metric = plan.metrics.get(gate.metric)
        offer = (
            "; its metric declares a range, so 'method: betting' (anytime-valid at every look, for any "
            "distribution in the range) needs no such reason"
            if metric is not None and metric.range is not None and metric.signal is None
            else "; or declare the metric's 'range' and use 'method: betting' (anytime-valid, for any distribution "
            "in the range)"
        )
        problems.append(
            (
                ("monitoring", "looks", 0),
                (
                    f"gate {gate.id!r} ({gate.method}, a mean-targeting method) would be decided at a first look of {first} "
                    f"units, fewer than the {SKEW_CHECK_MIN_N} the skew check needs: at such a look skewed or rare-event "
                    "contrasts pass far above the nominal level (lognormal contrasts with the mean on the margin pass a t gate "
                    "at 90% about 0.2 of the time, not 0.05: docs/estimators.md); move the first look to "
                    f"{SKEW_CHECK_MIN_N} or more, state why it is safe in 'monitoring.first_look_reason'{offer}"
                ),
            )
        )
    return problems


__all__ = ["bounded_method_problems", "first_look_problems"]
