"""A monitored primary gate's repeated confidence intervals and, once the study stops, its
stage-wise ordering p-value, median-unbiased estimate and final interval (``estimators.after_stop``).

The repeated interval at a look is the gate's own interval at that look's level (the look ledger
keeps each look's, ``collect.ledger.looks``): for a t gate ``estimate -/+ t_{1 - a_k} se``, for the
exact and resampling methods their interval at the alpha increment (the union bound makes them
simultaneous), for betting its anytime-valid interval. The after-stop estimates need the joint
normal law of a boundary design, so they are computed for gates on the group-sequential boundary
(t) with a one-sided rule (``lower > X`` or ``upper < X``); the rule p-value enters as
``z = Phi^-1(1 - p)`` against the look levels' z bounds, as rpact converts a t test. The decision
is never touched: these are reported beside it.

More in ``docs/estimators.md`` ("After an early stop").
"""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Any

from gates.artifact_monitoring import AfterStopEstimate, RepeatedInterval
from gates.numbers import encode_number

if TYPE_CHECKING:
    from collect.ledger.looks import LookRecord
    from prereg.monitoring import LookLevel

#: the monitoring section's one-line statement of what the numbers mean
ESTIMATES_NOTE = (
    "repeated confidence intervals hold at every look at once (jointly at least 1 - 2 alpha), so any of them may "
    "be read whether or not the study stopped there; after a stop the stopping look's own estimate overstates the "
    "effect, and the stage-wise ordering p-value, the median-unbiased estimate and its final interval account for "
    "the stop (Jennison & Turnbull 2000, ch. 8-9); the decision is the boundaries' alone"
)
#: actions after which the after-stop estimates are reported
STOPS = ("stop_success", "final")


def _finite(values: list[float | None]) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def interval_of(outcome: Any) -> list[float] | None:
    """``[estimate, lower, upper]`` of a gate outcome (reported scale), None when not all finite."""
    r = outcome.result
    if r is None:
        return None
    values = [float(r.estimate), float(r.lower), float(r.upper)]
    return values if _finite(list(values)) else None


def repeated_intervals(
    history: list[LookRecord], levels: list[LookLevel], gate_id: str, look: int | None, outcome: Any
) -> list[RepeatedInterval]:
    """The gate's interval at every planned look taken: the look ledger's (the latest decision record
    of each earlier look), and this evaluation's when ``look`` is a planned look."""
    recorded: dict[int, list[float]] = {}
    for r in history:
        if r.status == "decision" and r.look is not None and r.interval and gate_id in r.interval:
            recorded[r.look] = r.interval[gate_id]
    if look is not None:
        recorded.pop(look, None)
        here = interval_of(outcome)
        if here is not None:
            recorded[look] = here
    out = []
    for k in sorted(recorded):
        if k > len(levels):
            continue
        est, lo, hi = recorded[k]
        out.append(
            RepeatedInterval(
                look=k,
                blocks=levels[k - 1].blocks,
                nominal_alpha=levels[k - 1].nominal_alpha,
                estimate=est,
                lower=lo,
                upper=hi,
                source="this evaluation" if k == look else "look ledger",
            )
        )
    return out


def _unsupported(gate: Any, levels: list[LookLevel], outcome: Any) -> str | None:
    """Why the after-stop estimates cannot be computed for this gate, or None."""
    kind = levels[0].kind if levels else "increment"
    if kind != "boundary":
        basis = "an anytime-valid p-value" if kind == "anytime" else "alpha increments (a union bound)"
        return (
            f"method {gate.method} spends its looks by {basis}, not a group-sequential boundary on a normal "
            "statistic, so there is no stage-wise ordering to compute; its repeated intervals hold"
        )
    rule = gate.pass_if
    if rule.quantity not in ("lower", "upper") or rule.threshold is None:
        return f"the rule {rule.quantity} tests two sides at once; the stage-wise ordering needs a one-sided rule"
    if outcome.refused_by or outcome.result is None or outcome.result.contrasts is None:
        return "the gate was refused at this look, so there is no estimate to correct"
    p = outcome.pvalue
    if p is None or not 0 < p < 1:
        return "the gate has no rule p-value strictly between 0 and 1 here (constant contrasts?)"
    return None


def after_stop_estimate(
    gate: Any, levels: list[LookLevel], look: int, outcome: Any
) -> tuple[AfterStopEstimate | None, str | None]:
    """The after-stop estimates of a primary gate that stopped at ``look`` (module doc), or None and
    the reason they cannot be computed."""
    from estimators.after_stop import after_stop, z_from_pvalue  # lazy: scipy

    why = _unsupported(gate, levels, outcome)
    if why is not None:
        return None, why
    d = [float(x) for x in outcome.result.contrasts]  # analysis scale (log for ratios)
    se = statistics.stdev(d) / math.sqrt(len(d))
    if not (math.isfinite(se) and se > 0):
        return None, "the contrasts have no spread, so there is no standard error to scale the estimates by"
    ratio = outcome.scale == "ratio"
    threshold = float(gate.pass_if.threshold)
    if ratio and not threshold > 0:
        return None, "a ratio rule needs a positive threshold"
    null = math.log(threshold) if ratio else threshold
    r = after_stop(
        fractions=[lv.fraction for lv in levels],
        z_bounds=[lv.z_bound if lv.z_bound is not None else math.inf for lv in levels],
        alpha=levels[-1].cumulative_alpha,
        stop_look=look,
        z_stop=z_from_pvalue(float(outcome.pvalue)),
        estimate=statistics.fmean(d),
        std_error=se,
        null=null,
        upper=gate.pass_if.quantity == "lower",
    )

    def out(x: float) -> float:
        return math.exp(x) if ratio else x

    where = f"look {look} of {len(levels)}" + (" (an early stop)" if r.stopped_early else " (the final look)")
    meaning = (
        f"at {where} the stage-wise ordering p-value against the rule's threshold {threshold:g} is "
        f"{r.ordering_pvalue:.3g}; the "
        f"median-unbiased estimate {out(r.median_unbiased):.4g} (the look's own {out(r.naive_estimate):.4g}) and "
        f"its {r.confidence:.0%} final interval [{out(r.final_lower):.4g}, {out(r.final_upper):.4g}] account for "
        "where the study stopped" + (" (a ratio: back-transformed from the log scale)" if ratio else "")
    )
    return (
        AfterStopEstimate(
            stop_look=r.stop_look,
            stopped_early=r.stopped_early,
            confidence=r.confidence,
            null=threshold,
            ordering_pvalue=r.ordering_pvalue,
            median_unbiased=_number(out(r.median_unbiased)),
            final_lower=_number(out(r.final_lower)),
            final_upper=_number(out(r.final_upper)),
            naive_estimate=_number(out(r.naive_estimate)),
            meaning=meaning,
        ),
        None,
    )


def _number(x: float) -> Any:
    value = encode_number(x)
    assert value is not None
    return value


def record_intervals(gate_ids: set[str], gate_results: list[Any]) -> dict[str, list[float]] | None:
    """The look record's ``interval``: gate id -> ``[estimate, lower, upper]`` (reported scale, finite only)."""
    out: dict[str, list[float]] = {}
    for g in gate_results:
        values = [g.estimate, g.lower, g.upper]
        if g.id in gate_ids and all(isinstance(v, (int, float)) for v in values):
            floats = [float(v) for v in values]
            if _finite(list(floats)):
                out[g.id] = floats
    return out or None


__all__ = ["ESTIMATES_NOTE", "STOPS", "after_stop_estimate", "interval_of", "record_intervals", "repeated_intervals"]
