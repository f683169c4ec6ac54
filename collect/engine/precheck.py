"""The collector's own checks of a plan, every problem at once, before the plan is frozen.

``collect run`` checks every run's parameters before anything runs (``collect.engine.runs.expand_plan``)
and stops at the first problem. :func:`plan_problems` asks the same questions of a plan that is not
yet frozen and lists *every* answer: each (stratum, arm)'s parameters through the collector's
``param_problems`` (every problem of a run, e.g. an unknown ``{placeholder}`` in ``argv``, a
duration string where seconds are expected, a reserved name, ``code`` globs matching nothing),
the metrics it cannot produce, evidence declared stronger than it gives, and telemetry signals it
will not record. ``prereg validate`` and ``prereg freeze`` call it, so a plan ``collect run`` would
refuse is refused before a lock (and a permanent amendment to fix it) exists.

Evidence declared stronger than the collector gives is an error when the plan's own parameters make
it weaker (``sensor: sim:...`` under an energy metric declared ``measured``); when the collector's
defaults already give it (the plan sets nothing that bears on it, as a plan written for imported runs
may), it is a warning: ``collect run`` refuses such a plan, ``collect import`` takes runs measured
elsewhere.

What depends on the machine rather than the plan -- a telemetry sensor that cannot be opened here
(``sensor: nvml`` on a laptop without the NVIDIA driver; a simulated ``sim:`` sensor is the plan's
own, so its refusal is an error) -- is a *warning*: a plan may be frozen on
one machine and run on another; where the sensor cannot be opened, ``collect try`` refuses the plan
and ``collect run`` refuses it (when the plan names the sensor's signals) or records its runs as failed.

Each message is one line, said once however many runs share it, prefixed with the arm(s) and
stratum it concerns when it does not concern every run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from collect.collectors.base import Collector, ParamError
from collect.engine.runs import (
    EngineError,
    evidence_problems,
    load_collector,
    merged_params,
    metrics_problem,
    signal_problems,
)
from prereg.schema import Plan

#: the sentence a machine-dependent warning ends with
MACHINE_NOTE = (
    "this depends on the machine the runs execute on, not the plan: accepted here; where the sensor "
    "cannot be opened, collect try refuses the plan and collect run refuses it or records its runs as "
    "failed"
)
#: the sentence an evidence problem that comes from the collector's defaults ends with
DEFAULT_EVIDENCE_NOTE = (
    "the collector gives that evidence with its default parameters, which the plan leaves as they "
    "are: collect run refuses the plan as written; runs brought in with collect import carry the "
    "evidence they recorded"
)
MAX_SHOWN_STRATA = 1  # a message concerning several strata (not all) names this many of them


@dataclass(frozen=True)
class PlanCheck:
    """What :func:`plan_problems` found: ``errors`` refuse the plan, ``warnings`` are printed and accepted."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return {"errors": list(self.errors), "warnings": list(self.warnings)}


Cell = tuple[str, str]  # (arm, stratum key)


def _key(stratum: Mapping[str, Any]) -> str:
    return repr(sorted(stratum.items(), key=lambda kv: kv[0]))


class _Found:
    """Messages with the cells they arose in, in the order first found."""

    def __init__(self, arms: list[str], strata: list[dict[str, Any]]) -> None:
        self.arms = arms
        self.strata = {_key(s): s for s in strata}
        self.cells: dict[str, list[Cell]] = {}

    def add(self, message: str, arm: str, stratum: Mapping[str, Any]) -> None:
        self.cells.setdefault(message, []).append((arm, _key(stratum)))

    def lines(self) -> list[str]:
        """Each message once, prefixed with where it arose unless that is every run."""
        return [self._where(cells) + message for message, cells in self.cells.items()]

    def _where(self, cells: list[Cell]) -> str:
        arms = [a for a in self.arms if any(c[0] == a for c in cells)]
        strata = list(dict.fromkeys(c[1] for c in cells))
        every_arm = len(arms) == len(self.arms)
        parts = [] if every_arm else [f"arm{'s' if len(arms) > 1 else ''} {', '.join(arms)}"]
        if len(strata) == 1 and len(self.strata) > 1:
            parts.append(f"stratum {self.strata[strata[0]]}")
        elif len(strata) < len(self.strata):
            shown = ", ".join(str(self.strata[k]) for k in strata[:MAX_SHOWN_STRATA])
            parts.append(f"{len(strata)} of {len(self.strata)} strata (e.g. {shown})")
        return f"{', '.join(parts)}: " if parts else ""


def plan_problems(plan: Plan) -> PlanCheck:
    """Every problem the plan's collector would refuse at ``collect run``, found without running
    anything (see the module doc); no experiment section (imported runs): nothing to check."""
    if plan.experiment is None:
        return PlanCheck()
    try:
        collector = load_collector(plan.experiment.collector)
    except EngineError as err:  # e.g. a plugin whose imports this machine lacks: collect run is elsewhere
        return PlanCheck(
            warnings=[
                f"{err} (the collector's own checks of the plan were not run here; collect run "
                "and collect try run them where the collector loads)"
            ]
        )
    errors: list[str] = []
    missing = metrics_problem(plan, collector)
    if missing:
        errors.append(missing)
    strata = plan.strata.enumerate()
    found = _Found(list(plan.arms), strata)
    checked: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = []  # past the problems stepped over
    for stratum in strata:
        for arm in plan.arms:
            params, problems = _cell(plan, collector, stratum, arm)
            for message in problems:
                found.add(message, arm, stratum)
            if params is not None:
                checked.append((arm, stratum, params))
    errors += found.lines()
    evidence = evidence_problems(plan, collector, [p for _, _, p in checked])
    by_default = set(evidence_problems(plan, collector, [_defaults(plan, collector)]))
    errors += [line for line in evidence if line not in by_default]
    signals, _ = signal_problems(plan, collector, checked)  # a sensor not opened here: a warning, below
    errors += signals
    warnings = [f"{line} ({DEFAULT_EVIDENCE_NOTE})" for line in evidence if line in by_default]
    simulated = [c for c in checked if str(c[2].get("sensor", "")).startswith("sim")]
    errors += sensor_refusals(collector, simulated)  # a simulated sensor is the plan's, not the machine's
    warnings += [
        f"{line} ({MACHINE_NOTE})" for line in sensor_refusals(collector, [c for c in checked if c not in simulated])
    ]
    return PlanCheck(errors, warnings)


def _defaults(plan: Plan, collector: type[Collector]) -> dict[str, Any]:
    """The parameters a run would have if the plan set none (a ``PLAN_METRICS`` collector: the metric names)."""
    return {"metrics": list(plan.metrics)} if collector.PLAN_METRICS else {}


def _cell(
    plan: Plan, collector: type[Collector], stratum: dict[str, Any], arm: str
) -> tuple[Mapping[str, Any] | None, list[str]]:
    """``(checked params past the problems, or None; every problem)`` of one (stratum, arm)."""
    try:
        params = merged_params(plan, collector, stratum, arm)
    except ParamError as err:
        return None, [str(err)]
    return collector.param_problems(params, stratum)


def sensor_refusals(
    collector: type[Collector], cells: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]
) -> list[str]:
    """The collector's ``signals`` refusing the params of these cells (``(arm, stratum, checked params)``)
    here, e.g. a sensor it cannot open on this machine: each message once. ``collect try`` refuses
    them before running; ``collect run`` as the plan's signals are checked, or each run fails."""
    out: list[str] = []
    seen: set[str] = set()
    for _, _, params in cells:
        key = repr(sorted(params.items(), key=lambda kv: kv[0]))
        if key in seen:
            continue
        seen.add(key)
        try:
            collector.signals(params)
        except ParamError as err:
            out.append(str(err))
    return list(dict.fromkeys(out))


__all__ = ["DEFAULT_EVIDENCE_NOTE", "MACHINE_NOTE", "PlanCheck", "plan_problems", "sensor_refusals"]
