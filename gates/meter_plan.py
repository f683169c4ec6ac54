"""Planning an energy gate's meter: the per-run bound its margin needs, and which logs reach it.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math

from prereg.checks import analysis_units_planned
from prereg.schema import Gate, Plan

#: run lengths (s) shown when the plan's meter does not give one
DEFAULT_RUNS_S = (60.0, 600.0, 3600.0)
DEFAULT_POWER_W = 300.0


def _distance(gate: Gate, scale: str) -> float:
    """How far the rule's threshold lies from no effect, on the analysis scale (log for a ratio)."""
    rule = gate.pass_if
    ends = [rule.low, rule.high] if rule.quantity == "within" else [rule.threshold]
    values = [x for x in ends if x is not None]
    if scale == "ratio":
        return min((abs(math.log(x)) if x > 0 else math.inf) for x in values)
    return min(abs(x) for x in values)


def _pct(x: float) -> str:
    return f"{100 * x:.2g}%" if x < 1 else f"{100 * x:.0f}%"


def gate_meter_lines(plan: Plan, gate: Gate) -> list[str]:
    """The planning lines of one gate (empty when its metric has no signal or its rule no test)."""
    metric = plan.metrics[gate.metric]
    if metric.signal is None or not gate.pass_if.tested:
        return []
    from collect.telemetry.logs.meters import meter_bounds  # lazy: numpy
    from estimators import end_shift_per_bound  # lazy: numpy

    n = analysis_units_planned(plan)
    if n < 2 or gate.method == "betting":
        return [
            f"gate {gate.id}: no resolution check can pass it (betting has no measurement-bound analysis, or "
            "fewer than 2 planned units)"
        ]
    runs = sum(abs(c) for c in gate.contrast.coefficients.values())  # a unit's bound: sum |c_j| b_j
    k = end_shift_per_bound(gate.method, n, gate.confidence)
    scale = gate.contrast.scale
    distance = _distance(gate, scale)
    if scale == "difference":
        head = (
            f"gate {gate.id}: each run's arm-dependent {metric.signal} bound b moves the interval's end by up to "
            f"{runs * k:.3g} b at n = {n} ({gate.method}, {gate.confidence:g})"
        )
        if distance > 0:
            head += (
                f"; for the meter to use at most half the {distance:g} {metric.unit} between no effect and the "
                f"threshold, b must stay below {distance / (2 * runs * k):.3g} {metric.unit} per run"
            )
        return [head]
    need = distance / (2 * runs * k) if distance > 0 else None
    how = f"at n = {n} ({gate.method}, {gate.confidence:g}) the check moves the end by {runs * k:.3g}x that share"
    if need is None:
        lines = [
            f"gate {gate.id}: the threshold is no effect itself, so any arm-dependent {metric.signal} bound "
            f"must be cleared by the interval: {how}"
        ]
    else:
        lines = [
            f"gate {gate.id}: the meter must keep each run's arm-dependent {metric.signal} bound below "
            f"{_pct(need)} of its energy ({how}, which leaves it at most half the {_pct(distance)} between no "
            "effect and the threshold)"
        ]
    meter = metric.meter
    lengths = (meter.run_s,) if meter is not None and meter.run_s is not None else DEFAULT_RUNS_S
    power = meter.power_w if meter is not None and meter.power_w is not None else DEFAULT_POWER_W
    for run_s in lengths:
        parts = [
            f"{b.log} {_pct(b.share(power, run_s))}"
            + ("" if need is None else (" yes" if b.share(power, run_s) <= need else " no"))
            for b in meter_bounds(run_s, meter.counter_period_ms if meter is not None else None)
        ]
        lines.append(f"  runs of {run_s:g} s at {power:g} W: " + "; ".join(parts))
    return lines


def meter_lines(plan: Plan) -> list[str]:
    """The planning lines of every signal-backed tested gate of ``plan``."""
    return [line for gate in plan.gates for line in gate_meter_lines(plan, gate)]


__all__ = ["DEFAULT_POWER_W", "DEFAULT_RUNS_S", "gate_meter_lines", "meter_lines"]
