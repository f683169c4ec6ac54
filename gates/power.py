"""Sample size from a pilot: the library path of ``prereg power PLAN.yaml --pilot RUNS``.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from collect.ledger.cells import standing
from collect.ledger.records import RunRecord
from collect.ledger.store import read_ledger
from estimators import paired_contrast
from estimators import power as P
from estimators.look_levels import gate_levels
from gates.api import check_runs_folder
from gates.matching import stratum_label
from gates.meter_plan import gate_meter_lines
from gates.verdicts import contrast_range
from prereg.api import load_lock
from prereg.checks import analysis_units_planned
from prereg.errors import InputError
from prereg.plan import load_plan
from prereg.schema import Gate, Plan, Strata

#: fewest paired contrasts a pilot must give a gate (an SD on 2 degrees of freedom)
MIN_PILOT_PAIRS = 3
SD_CONVENTION = (
    "SD of the paired differences: the standard deviation (n - 1 divisor) of the pilot's per-unit "
    "paired contrasts of the gate (log ratios for ratio contrasts), not of either arm"
)
EXPECTED_CONVENTION = (
    "the power averaged over sigma^2 ~ s^2 df / chi2(df), the variance's "
    "distribution given the pilot's s on df = pairs - 1 degrees of freedom"
)


@dataclass
class GatePower:
    """One gate's planning figures (analysis scale unless named ``*_reported``)."""

    gate: str
    method: str
    metric: str
    scale: str
    rule: str
    alpha: float
    pilot_pairs: int
    pilot_estimate: float
    sd: float
    sd_ucl: float
    sd_ucl_level: float
    delta: float | None
    delta_reported: float | None
    delta_source: str
    planned_blocks: int
    blocks_needed: int | None = None
    blocks_needed_ucl: int | None = None
    blocks_needed_expected: int | None = None
    power_planned: float | None = None
    power_planned_ucl: float | None = None
    expected_power_planned: float | None = None
    power_basis: str = "t"
    simulated_power_planned: float | None = None
    simulated_se: float | None = None
    detectable_margin_reported: Any = None
    sequential: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class PowerReport:
    """Every tested gate's :class:`GatePower`, the conventions in words, and what was skipped."""

    plan: str
    pilot: str
    target_power: float
    gates: list[GatePower]
    sd_convention: str = SD_CONVENTION
    expected_convention: str = EXPECTED_CONVENTION
    monitoring: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    #: the gates the pilot cannot plan: {"gate", "role", "reason"} each (the others are planned)
    not_planned: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Plain data for ``--json`` (non-finite numbers as None)."""

        def clean(x: Any) -> Any:
            if isinstance(x, float) and not math.isfinite(x):
                return None
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [clean(v) for v in x]
            return x

        return clean({"schema": "gates/power/v1", **asdict(self)})


class GateNotPlanned(InputError):
    """The pilot cannot plan this gate (its arms, its metric or enough pairs missing): ``plan_power``
    notes it and plans the others (exit 2 only when no gate can be planned)."""


def paired_blocks(plan: Plan, records: list[RunRecord]) -> tuple[list[RunRecord], int]:
    """(the records of the pilot strata that give the plan's gates pairs, how many pilot strata were left
    out): a stratum the plan marks calibration, or a no-failure control it does not pair
    (``Plan.pairing_strata``: ``strata.calibration``, ``strata.controls`` and ``controls_identical``'s
    ``where``, unless ``pair_controls``), gives no pair to a gate, so it gives none to its planning."""
    excluded = list(plan.strata.calibration) + ([] if plan.strata.pair_controls else plan.control_selectors())
    kept, dropped = [], set()
    for r in records:
        if any(Strata.selects(sel, r.stratum) for sel in excluded):
            dropped.add(stratum_label(r.stratum))
        else:
            kept.append(r)
    return kept, len(dropped)


def pilot_contrasts(plan: Plan, gate: Gate, records: list[RunRecord], label: str) -> np.ndarray:
    """The pilot's paired contrasts for ``gate`` (module doc), analysis scale, from the strata that give
    the plan's gates pairs (:func:`paired_blocks`). A cell recorded complete twice is refused
    (``DuplicateCell``, exit 2: the one rule of ``collect.ledger.cells``); a gate the pilot cannot plan
    raises :class:`GateNotPlanned`."""
    contrast = gate.contrast
    done, _ = paired_blocks(plan, [r for r in standing(records).values() if r.status == "complete"])
    arms_seen = {r.arm for r in done}
    missing_arms = [a for a in contrast.arms if a not in arms_seen]
    if missing_arms:
        raise GateNotPlanned(
            f"{label}: gate {gate.id!r} contrasts arm(s) {', '.join(missing_arms)}, which the "
            f"pilot has no complete runs of (it has {', '.join(sorted(arms_seen)) or 'none'})"
        )
    if not any(r.metric(gate.metric) is not None for r in done if r.arm in contrast.arms):
        raise GateNotPlanned(f"{label}: gate {gate.id!r} needs metric {gate.metric!r}, which no pilot run records")
    blocks: dict[tuple[str, int], dict[str, float]] = {}
    for r in done:
        if r.arm in contrast.arms:
            v = r.metric(gate.metric)
            if v is not None and math.isfinite(v) and (contrast.scale != "ratio" or v > 0):
                blocks.setdefault((stratum_label(r.stratum), r.replicate), {})[r.arm] = v
    rows = [
        (key, [vals[a] for a in contrast.arms]) for key, vals in blocks.items() if all(a in vals for a in contrast.arms)
    ]
    if not rows:
        raise GateNotPlanned(
            f"{label}: gate {gate.id!r}: no pilot stratum the gates pair has every arm of "
            f"'{contrast.text}' with a usable {gate.metric}"
        )
    coefs = np.array([contrast.coefficients[a] for a in contrast.arms])
    d = paired_contrast(np.array([v for _, v in rows]), coefs, contrast.scale)
    if (plan.strata.analysis_unit or "stratum") == "stratum":
        groups: dict[str, list[float]] = {}
        for (key, _), x in zip(rows, d, strict=True):
            groups.setdefault(key[0], []).append(float(x))
        d = np.array([float(np.mean(v)) for v in groups.values()])
    if d.size < MIN_PILOT_PAIRS:
        raise GateNotPlanned(
            f"{label}: gate {gate.id!r}: the pilot gives {d.size} paired contrast(s); planning "
            f"needs at least {MIN_PILOT_PAIRS} (an SD on {MIN_PILOT_PAIRS - 1} degrees of freedom)"
        )
    return np.asarray(d, dtype=np.float64)


def _reported(x: float, scale: str) -> float:
    return float(math.exp(x) if scale == "ratio" else x)


def _analysis(x: float, scale: str) -> float:
    if scale == "ratio":
        if x <= 0:
            raise InputError(f"an assumed ratio must be positive, got {x}")
        return math.log(x)
    return float(x)


def _words(n: int | None) -> str:
    return f"more than {P.MAX_BLOCKS}" if n is None else str(n)


def _assumed(gate: Gate, target: P.Target, d: np.ndarray, assume: dict[str, float]) -> tuple[float | None, str]:
    scale = gate.contrast.scale
    if gate.id in assume:
        return _analysis(assume[gate.id], scale), "given (--assume)"
    if target.holds(0.0):
        return 0.0, "no difference (default)"
    est = float(np.mean(d))
    if target.holds(est):
        return est, "the pilot's estimate (no difference would fail the rule)"
    return None, "none: neither no difference nor the pilot's estimate satisfies the rule; give --assume"


def _share(plan: Plan, gate: Gate) -> float:
    alpha = (1.0 - gate.confidence) / 2.0
    k = sum(g.role == "primary" for g in plan.gates)
    if gate.role == "primary" and plan.decision.multiplicity in ("holm", "bonferroni") and k > 1:
        return alpha / k
    return alpha


def _monitoring(plan: Plan) -> dict[str, Any] | None:
    mon = getattr(plan, "monitoring", None)
    if mon is None:
        return None
    return {
        "looks": [int(x) for x in mon.looks],
        "spending": str(mon.spending),
        "futility": str(getattr(mon, "futility", "none") or "none"),
    }


def gate_power(
    plan: Plan,
    gate: Gate,
    d: np.ndarray,
    n_planned: int,
    target_power: float,
    assume: dict[str, float],
    sims: int,
    seed: int,
    ucl_level: float = 0.80,
) -> GatePower:
    """The planning figures of one gate from its pilot contrasts ``d`` (module doc)."""
    scale = gate.contrast.scale
    target = P.Target.of_rule(gate.pass_if, lambda x: _analysis(x, scale))
    alpha = _share(plan, gate)
    sd, df = float(np.std(d, ddof=1)), d.size - 1
    delta, source = _assumed(gate, target, d, assume)
    out = GatePower(
        gate=gate.id,
        method=gate.method,
        metric=gate.metric,
        scale=scale,
        rule=str(gate.pass_if),
        alpha=alpha,
        pilot_pairs=int(d.size),
        pilot_estimate=_reported(float(np.mean(d)), scale),
        sd=sd,
        sd_ucl=P.sd_upper_limit(sd, df, ucl_level) if sd > 0 else 0.0,
        sd_ucl_level=ucl_level,
        delta=delta,
        delta_reported=None if delta is None else _reported(delta, scale),
        delta_source=source,
        planned_blocks=n_planned,
    )
    out.notes += gate_meter_lines(plan, gate)  # the meter a signal-backed gate's margin needs (gates.meter_plan)
    if sd <= 0:
        out.notes.append("the pilot's paired contrasts do not vary: no SD, so no power can be computed")
        return out
    if delta is None:
        out.notes.append(source)
        return out
    n_min = 2
    out.blocks_needed = P.blocks_needed(lambda n: P.t_power(n, delta, sd, target, alpha), target_power, n_min)
    out.blocks_needed_ucl = P.blocks_needed(
        lambda n: P.t_power(n, delta, out.sd_ucl, target, alpha), target_power, n_min
    )
    out.blocks_needed_expected = P.blocks_needed(
        lambda n: P.expected_t_power(n, delta, sd, df, target, alpha), target_power, n_min, n_max=20_000
    )
    if n_planned >= 2:
        out.power_planned = P.t_power(n_planned, delta, sd, target, alpha)
        out.power_planned_ucl = P.t_power(n_planned, delta, out.sd_ucl, target, alpha)
        out.expected_power_planned = P.expected_t_power(n_planned, delta, sd, df, target, alpha)
        margin = P.detectable_margin(n_planned, delta, sd, target, alpha, target_power)
        out.detectable_margin_reported = (
            [_reported(m, scale) for m in margin] if isinstance(margin, tuple) else _reported(margin, scale)
        )
    if out.blocks_needed is None or out.blocks_needed > n_planned:
        out.notes.append(
            f"the plan's {n_planned} blocks are fewer than the {_words(out.blocks_needed)} the t power "
            "needs at the pilot SD"
        )
    resamples = gate.resamples or 9999
    if gate.method != "t":
        out.power_basis = "t (a guide); simulated for the gate's method"
        if n_planned >= 2:
            sim = P.simulated_power(
                d,
                delta,
                [n_planned],
                [alpha],
                gate.pass_if,
                gate.method,
                scale,
                sims,
                seed,
                resamples,
                bounds=contrast_range(gate, plan),
            )
            out.simulated_power_planned, out.simulated_se = sim.power, sim.se
    mon = _monitoring(plan)
    if mon is not None and n_planned >= 2:
        levels = gate_levels(gate.method, gate.confidence, mon["looks"], mon["spending"], mon["futility"], alpha=alpha)
        nominal = [lv.nominal_alpha for lv in levels]
        fut = [lv.futility_p for lv in levels] if mon["futility"] != "none" else None
        if gate.method == "t":
            seq = P.sequential_t_power(
                mon["looks"], nominal, delta, sd, target, sims=max(sims, 20_000), seed=seed, futility=fut
            )
        else:
            seq = P.simulated_power(
                d,
                delta,
                mon["looks"],
                nominal,
                gate.pass_if,
                gate.method,
                scale,
                sims,
                seed,
                resamples,
                futility=fut,
                bounds=contrast_range(gate, plan),
            )
        units_saved = n_planned - (seq.expected_blocks or n_planned)
        out.sequential = {
            "looks": mon["looks"],
            "spending": mon["spending"],
            "futility": mon["futility"],
            "nominal_alpha": nominal,
            "basis": levels[0].basis,
            "power": seq.power,
            "se": seq.se,
            "sims": seq.sims,
            "expected_blocks": seq.expected_blocks,
            "stopped_at": seq.stopped_at,
            "expected_blocks_saved": units_saved,
        }
    return out


def plan_power(
    plan_path: str | os.PathLike[str],
    pilot: str | os.PathLike[str],
    *,
    target_power: float = 0.8,
    assume: dict[str, float] | None = None,
    sims: int = 1000,
    seed: int = 0,
) -> PowerReport:
    """Planning figures for every tested gate of the plan at ``plan_path`` (a YAML plan or a lock)
    from the pilot runs folder ``pilot`` (module doc)."""
    if not 0 < target_power < 1:
        raise InputError(f"--power must be between 0 and 1 (e.g. 0.8), got {target_power}")
    if sims < 100:
        raise InputError(f"--sims must be at least 100, got {sims}")
    path = Path(plan_path)
    plan = load_lock(path).plan if path.name.endswith(".json") else load_plan(path).plan
    label = str(pilot)
    if not Path(pilot).exists():
        raise InputError(f"{label}: no such pilot runs folder")
    folder = check_runs_folder(pilot, str(plan_path))
    ledger = read_ledger(folder)
    if ledger.problems:
        raise InputError(
            f"{label}: the pilot ledger has {len(ledger.problems)} invalid line(s) (first: line "
            f"{ledger.problems[0].line}: {ledger.problems[0].message}); repair it before planning from it"
        )
    assume = dict(assume or {})
    unknown = sorted(set(assume) - {g.id for g in plan.gates})
    if unknown:
        raise InputError(f"--assume names gate(s) {', '.join(unknown)}, which the plan does not have")
    n_planned = analysis_units_planned(plan)
    report = PowerReport(
        plan=str(plan_path), pilot=label, target_power=target_power, gates=[], monitoring=_monitoring(plan)
    )
    if report.monitoring is None:
        report.notes.append("the plan has no monitoring section: fixed-design power only")
    _, left_out = paired_blocks(plan, [r for r in standing(ledger.records).values() if r.status == "complete"])
    if left_out:
        report.notes.append(
            f"{left_out} pilot strat{'um' if left_out == 1 else 'a'} left out: the plan's calibration "
            "and no-failure control strata give its gates no pairs, so they plan none"
        )
    for gate in plan.gates:
        if not gate.pass_if.tested:
            report.notes.append(f"gate {gate.id!r}: '{gate.pass_if}' is descriptive (no test), so it has no power")
            continue
        try:
            d = pilot_contrasts(plan, gate, ledger.records, label)
        except GateNotPlanned as why:
            report.not_planned.append({"gate": gate.id, "role": gate.role, "reason": str(why)})
            continue
        report.gates.append(gate_power(plan, gate, d, n_planned, target_power, assume, sims, seed))
    if report.not_planned and not report.gates:
        raise GateNotPlanned(
            "no tested gate can be planned from this pilot: " + "; ".join(n["reason"] for n in report.not_planned)
        )
    return report
