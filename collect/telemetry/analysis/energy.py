"""The energy metrics of a recorded run, from its telemetry trace (J, with bounds).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from collect.telemetry.analysis.phases import (
    IDLE,
    RUN_PHASES,
    PhaseEnergy,
    interval_energy,
    intervals_of,
    net_of,
    phase_energy_total,
    support_summary,
)

if TYPE_CHECKING:
    from collect.telemetry.analysis.bounds import EnergyEstimate
    from collect.traces.telemetry import Trace

ENERGY_SIGNALS = ("energy_counter", "power_average", "power_instant")
PHASE_METRICS = tuple(f"energy_{p}" for p in RUN_PHASES)
NET_METRICS = ("energy_net", *(f"{m}_net" for m in PHASE_METRICS))
ENERGY_METRICS = ("energy", *PHASE_METRICS, "idle_power", *NET_METRICS)


@dataclass
class RunEnergy:
    """The energy metrics (J; ``idle_power`` W), their bounds and the ledger telemetry summary."""

    metrics: dict[str, float]
    bounds: dict[str, float]
    summary: dict[str, Any]
    phases: dict[str, PhaseEnergy] = field(default_factory=dict)
    total: EnergyEstimate | None = None  # the whole run's energy (``energy``) with its lower / upper bounds


def _bound(e: EnergyEstimate) -> float:
    return e.bound_j if math.isfinite(e.bound_j) else math.inf


def run_energy(
    trace: Trace, signal: str, p_min_w: float, p_max_w: float, phases: Sequence[str] = RUN_PHASES
) -> RunEnergy:
    """Energy metrics of one run's trace (see the module doc); ``phases``: the phase names to
    summarise (a collected run's :data:`RUN_PHASES` by default; ``collect.measure`` passes the ones
    its block marked). ``idle`` is always the baseline window, never one of them."""
    from collect.telemetry.analysis.bounds import ledger_summary  # lazy: numpy

    if trace.poll_ns.size == 0:
        raise ValueError("the telemetry trace has no polls")
    idle_spans = intervals_of(trace, IDLE)
    start = idle_spans[-1][1] if idle_spans else int(trace.poll_ns[0])
    end = int(max(trace.t_after_ns.max(initial=0), trace.poll_ns[-1]))
    total = interval_energy(trace, signal, start, end, p_min_w, p_max_w)
    names = [n for n in dict.fromkeys(phases) if n != IDLE]
    per_phase = {name: phase_energy_total(trace, signal, name, p_min_w, p_max_w) for name in (*names, IDLE)}
    metrics: dict[str, float] = {"energy": total.estimate_j}
    bounds: dict[str, float] = {"energy": _bound(total)}
    systematic: dict[str, float] = {"energy": total.systematic_bound_j}
    for name in names:
        metrics[f"energy_{name}"] = per_phase[name].energy.estimate_j
        bounds[f"energy_{name}"] = _bound(per_phase[name].energy)
        systematic[f"energy_{name}"] = per_phase[name].energy.systematic_bound_j
    idle = per_phase[IDLE]
    if idle.duration_ms > 0:
        idle_s = idle.duration_ms / 1e3
        metrics["idle_power"] = idle.energy.estimate_j / idle_s
        bounds["idle_power"] = _bound(idle.energy) / idle_s
        training = PhaseEnergy("training", total, (end - start) / 1e6, 1, total.updates)
        for name, pe in (("energy_net", training), *((f"energy_{n}_net", per_phase[n]) for n in names)):
            net = net_of(pe, idle)
            assert net is not None
            metrics[name], bounds[name] = net.estimate_j, _bound(net)
    summary = ledger_summary(trace, signal, start, end, p_min_w, p_max_w)
    # every energy metric's own bound, total included; a metric left out (an infinite bound: a phase
    # the meter cannot bound) has none, so its gate is unresolvable instead of borrowing the total's
    finite = {k: v for k, v in bounds.items() if math.isfinite(v)}
    summary["metric_bounds"] = finite
    # the arm-dependent part of each (docs/estimators.md, measurement error); capped by the bound
    summary["metric_systematic_bounds"] = {
        k: min(v, finite[k]) for k, v in systematic.items() if math.isfinite(v) and k in finite
    }
    summary["phases"] = support_summary(per_phase)
    return RunEnergy(metrics, bounds, summary, per_phase, total)
