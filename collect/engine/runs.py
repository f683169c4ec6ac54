"""One run of a plan: the plan expanded into cells, each cell's seed and id, and a cell executed.

The plan is expanded into runs: every stratum x replicate x arm. A run's parameters are the plan's
``experiment.params``, overridden by the stratum's factor levels, overridden by the arm's settings;
the blocking factors ``seed`` and ``block`` label strata and are not passed to the collector. The
collector (found by :mod:`collect.plugins`) checks them (``Collector.check_run``) before any run
starts, and every plan metric must be one the collector produces (a ``PLAN_METRICS`` collector, such
as ``command``, produces the plan's own list, passed to it as the parameter ``metrics``). Each run's seed derives from its stratum and replicate only,
never from the arm (common random numbers); run ids derive from the plan hash, stratum, arm and
replicate. The executors that schedule these runs live in :mod:`collect.engine.runner`.
"""

from __future__ import annotations

import hashlib
import time
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collect.collectors.base import Collector, ParamError, RunContext, Shipped
from collect.collectors.failures import PARAM as FAILURES_PARAM
from collect.collectors.failures import failure_spec
from collect.ledger.store import TRACES_DIR, run_id
from collect.plugins import COLLECTORS, PluginError, load_target
from estimators.vocabulary import stronger, weakest
from prereg._version import __version__
from prereg.arm_checks import arm_params
from prereg.errors import InputError, ToolkitError
from prereg.jsoncodec import canonical_bytes, oversized_number
from prereg.lock import utc_now
from prereg.schema import Plan
from prereg.schema_resources import DEFAULT_DEMAND, run_demand

__all__ = [
    "BLOCKING_FACTORS",
    "COLLECTORS",
    "EngineError",
    "Job",
    "PlannedRun",
    "RunSummary",
    "evidence_problems",
    "execute_run",
    "expand_plan",
    "import_collector",
    "load_collector",
    "merged_params",
    "metrics_problem",
    "run_batch",
    "signal_problems",
    "stratum_seed",
]

BLOCKING_FACTORS = ("seed", "block")


class EngineError(InputError, ValueError):
    """A plan the engine cannot run (unknown collector, bad parameters, metrics it cannot produce)."""


def load_collector(name: str) -> type[Collector]:
    """The collector class the plan names: an installed entry point or a ``module:Class`` (``collect.plugins``)."""
    try:
        cls: type[Collector] = COLLECTORS.load(name)
    except PluginError as err:
        raise EngineError(str(err)) from None
    if not cls.name:
        raise EngineError(
            f"collector {name!r}: {cls.__module__}.{cls.__qualname__} sets no 'name' (the name its records carry)"
        )
    return cls


def stratum_seed(stratum: dict[str, Any], replicate: int) -> int:
    """The run seed of a stratum and replicate (never the arm): 63 bits of SHA-256."""
    digest = hashlib.sha256(canonical_bytes({"stratum": stratum, "replicate": replicate})).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class PlannedRun:
    """One cell of the plan, with its merged and checked parameters."""

    run_id: str
    stratum: dict[str, Any]
    arm: str
    replicate: int
    seed: int
    params: dict[str, Any]
    #: what the run holds while it executes: {num_cpus, num_gpus, custom} (``prereg.schema_resources``)
    resources: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_DEMAND))


def merged_params(plan: Plan, collector: type[Collector], stratum: Mapping[str, Any], arm: str) -> dict[str, Any]:
    """One run's parameters before the collector's checks: the experiment's, overridden by the stratum's
    non-blocking factor levels, overridden by the arm's settings (and, for a ``PLAN_METRICS`` collector,
    the plan's metric names as ``metrics``; ``ParamError`` if the plan sets that parameter itself)."""
    assert plan.experiment is not None
    merged = {**plan.experiment.params}
    merged.update({k: v for k, v in stratum.items() if k not in BLOCKING_FACTORS})
    merged.update(arm_params(plan.arms[arm]))  # without control_of: an A/A copy runs its original's parameters
    if collector.PLAN_METRICS:
        if "metrics" in merged:
            raise ParamError(
                "parameter 'metrics' is set from the plan's metrics section "
                f"(collector {collector.name} writes the metrics the plan declares)"
            )
        merged["metrics"] = list(plan.metrics)
    failures = plan.experiment.failures
    takes = getattr(collector, "FAILURES", False)
    if takes and FAILURES_PARAM in merged:
        raise ParamError(
            f"parameter '{FAILURES_PARAM}' is set from the plan's experiment.failures; give the "
            "program parameter another name"
        )
    if failures is not None:
        if not takes:
            raise ParamError(
                f"collector {collector.name} does not inject the plan's failures "
                "(experiment.failures): the command collector does"
            )
        merged[FAILURES_PARAM] = failure_spec(failures, stratum)  # None: this stratum meets no fault
    return merged


def run_params(plan: Plan, collector: type[Collector], stratum: Mapping[str, Any], arm: str) -> dict[str, Any]:
    """One run's parameters (:func:`merged_params`), checked and completed by the collector
    (``EngineError`` otherwise)."""
    try:
        return collector.check_run(merged_params(plan, collector, stratum, arm), stratum)
    except ParamError as err:
        raise EngineError(f"arm {arm}, stratum {stratum}: {err}") from None


def metrics_problem(plan: Plan, collector: type[Collector]) -> str | None:
    """The plan metrics the collector does not produce, in words (None when it produces them all)."""
    missing = [] if collector.PLAN_METRICS else [m for m in plan.metrics if m not in collector.METRICS]
    if not missing:
        return None
    return (
        f"collector {collector.name} does not produce metric(s) {', '.join(missing)}; "
        f"it produces {', '.join(sorted(collector.METRICS))}"
    )


def expand_plan(plan: Plan, plan_sha256: str) -> tuple[type[Collector], list[PlannedRun]]:
    """Every run of the plan, parameters checked; raises ``EngineError`` before anything runs."""
    if plan.experiment is None:
        raise EngineError("the plan has no 'experiment' section: its runs are imported ('collect import'), not run")
    collector = load_collector(plan.experiment.collector)
    missing = metrics_problem(plan, collector)
    if missing:
        raise EngineError(missing)
    runs = []
    for stratum in plan.strata.enumerate():
        for replicate in range(plan.strata.replicates):
            for arm in plan.arms:
                params = run_params(plan, collector, stratum, arm)
                runs.append(
                    PlannedRun(
                        run_id(plan_sha256, stratum, arm, replicate),
                        dict(stratum),
                        arm,
                        replicate,
                        stratum_seed(stratum, replicate),
                        params,
                        run_demand(plan.experiment.resources, stratum, arm),
                    )
                )
    check_evidence(plan, collector, runs)
    check_signals(plan, collector, runs)
    return collector, runs


def named_signals(plan: Plan) -> dict[str, list[str]]:
    """Signal -> what in the plan names it (``metric energy``, ``invalidator counter_period``)."""
    named: dict[str, list[str]] = {}
    for name, metric in plan.metrics.items():
        if metric.signal:
            named.setdefault(metric.signal, []).append(f"metric {name}")
    for inv in plan.invalidators:
        signal = getattr(inv, "signal", None)
        if signal:
            named.setdefault(signal, []).append(f"invalidator {inv.id}")
    return named


def signal_problems(
    plan: Plan, collector: type[Collector], cells: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]
) -> tuple[list[str], list[str]]:
    """``(problems, unopened)`` of the telemetry signals the plan names, over ``cells`` (each ``(arm,
    stratum, checked params)``): a signal the collector will not record with a cell's params (e.g.
    ``power_average`` while the energy comes from the counter), and, each once, the collector's
    ``signals`` refusing a cell's params (e.g. a sensor that cannot be opened on this machine)."""
    named = named_signals(plan)
    problems: list[str] = []
    unopened: list[str] = []
    if not named:
        return problems, unopened
    seen: dict[str, set[str] | None] = {}
    for arm, stratum, params in cells:
        key = repr(sorted(params.items(), key=lambda kv: kv[0]))
        if key in seen:
            continue
        try:
            seen[key] = offered = collector.signals(params)
        except ParamError as err:
            seen[key] = None
            unopened.append(f"arm {arm}, stratum {dict(stratum)}: {err}")
            continue
        for signal in sorted(set(named) - offered):
            have = ", ".join(sorted(offered)) or "no telemetry signal"
            problems.append(
                f"{' and '.join(named[signal])} name(s) signal {signal}, but collector "
                f"{collector.name} records {have} for arm {arm} with these parameters"
            )
    return list(dict.fromkeys(problems)), unopened


def check_signals(plan: Plan, collector: type[Collector], runs: list[PlannedRun]) -> None:
    """Refuse, before any run, a plan naming a telemetry signal the collector will not record with
    the runs' params (:func:`signal_problems`), or whose params its ``signals`` refuses here."""
    problems, unopened = signal_problems(plan, collector, [(p.arm, p.stratum, p.params) for p in runs])
    if unopened:
        raise EngineError(unopened[0])
    if problems:
        raise EngineError(
            "the plan names telemetry its runs will not record (nothing was run):\n" + "\n".join(problems)
        )


def evidence_problems(plan: Plan, collector: type[Collector], params: list[Mapping[str, Any]]) -> list[str]:
    """Each metric the plan declares stronger than the collector gives with the runs' ``params``, in words."""
    problems = []
    for name, metric in plan.metrics.items():
        given = weakest(collector.metric_evidence(p).get(name, "unavailable") for p in params) if params else None
        if given is not None and stronger(metric.evidence, given):
            problems.append(
                f"metric {name} is declared '{metric.evidence}', but collector {collector.name} gives "
                f"'{given}' evidence for it with these parameters; declare 'evidence: {given}'"
            )
    return problems


def check_evidence(plan: Plan, collector: type[Collector], runs: list[PlannedRun]) -> None:
    """Refuse a plan that declares a metric stronger than the collector gives with the runs' params."""
    problems = evidence_problems(plan, collector, [p.params for p in runs])
    if problems:
        raise EngineError(
            "the plan claims stronger evidence than its collector can give (nothing was run):\n" + "\n".join(problems)
        )


def execute_run(
    collector_name: str,
    planned: PlannedRun,
    plan_sha256: str,
    runs_dir: str,
    identity: dict[str, Any],
    spec: str | None = None,
    shipped: Shipped | None = None,
) -> dict[str, Any]:
    """Run one cell and return its ledger record as a dict (complete, or failed with the error).

    Executed in worker processes too, so it takes and returns plain data. ``spec`` (``module:attr``,
    resolved by the parent) spares a worker the registry lookup, so a worker needs no state of the
    parent's: a Ray worker is a fresh process, not a fork. ``shipped``: where the driver's shared
    inputs were placed, on a worker away from the driver's disk (``runs_dir`` is then private).
    """
    started = utc_now()
    t0 = time.perf_counter()
    trace_dir = Path(runs_dir) / TRACES_DIR
    trace_dir.mkdir(parents=True, exist_ok=True)
    collector = load_collector(collector_name) if spec is None else import_collector(collector_name, spec)
    ctx = RunContext(
        planned.run_id,
        planned.params,
        planned.seed,
        planned.stratum,
        planned.arm,
        planned.replicate,
        trace_dir,
        plan_sha256,
        shipped,
        planned.resources,
    )
    record: dict[str, Any] = {
        "run_id": planned.run_id,
        "prereg_sha256": plan_sha256,
        "stratum": planned.stratum,
        "arm": planned.arm,
        "replicate": planned.replicate,
        "seed": planned.seed,
        "started_at": started,
        "code": {"toolkit_version": __version__, "collector": collector_name, "git": identity.get("git")},
        "env": {"python": identity.get("python"), "platform": identity.get("platform")},
        "source": f"collect run ({collector_name})",
    }
    try:
        result = collector().run(ctx)
        metrics = {k: _metric_value(k, v) for k, v in result.metrics.items()}
        given = {**collector.metric_evidence(planned.params), **result.info.get("metric_evidence", {})}
        record.update(
            status="complete",
            metrics=metrics,
            telemetry=result.telemetry,
            evidence={k: given[k] for k in metrics if k in given},
            traces=[f"{TRACES_DIR}/{name}" for name in result.traces],
        )
        record["code"].update(result.info)
    except Exception as err:  # noqa: BLE001 - a failing run is data, recorded, not a crash
        record.update(status="failed", metrics={}, error=failure_reason(err))
    record["finished_at"] = utc_now()
    record["env"]["seconds"] = round(time.perf_counter() - t0, 6)
    return record


def _metric_value(name: str, value: Any) -> float:
    """A collector's metric as the float the ledger stores; an integer past a double (``10**400``) is
    the run's failure in words naming the metric and the value's size, never an ``OverflowError``."""
    too_large = oversized_number(value)
    if too_large is not None:
        raise EngineError(f"the collector returned metric {name} = {too_large}")
    return float(value)


def failure_reason(err: BaseException) -> str:
    """A failed run's ``error``: a toolkit refusal's message in words (no class or source line: the
    message names the file or value), else the exception of the collector's own code with its type and
    the line it came from, so its author can find it."""
    if isinstance(err, ToolkitError):
        return str(err)
    last = traceback.extract_tb(err.__traceback__)[-1:] if err.__traceback__ else []
    where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
    return f"{type(err).__name__}: {err}{where}"


def import_collector(name: str, spec: str) -> type[Collector]:
    """The collector class at ``spec`` (``module:Class``, resolved by the parent process)."""
    try:
        cls: type[Collector] = load_target(spec, "collect.collectors.base:Collector", f"collector {name!r}")
    except PluginError as err:
        raise EngineError(str(err)) from None
    return cls


@dataclass
class RunSummary:
    """What ``run_plan`` did."""

    planned: int
    skipped: int
    completed: int
    failed: int


@dataclass(frozen=True)
class Job:
    """What every run of one ``collect run`` shares (plain data: it travels to workers)."""

    collector: str  # the registered name, recorded in each record
    spec: str  # ``module:attr`` of its class, resolved by the parent
    plan_sha256: str
    runs_dir: str
    identity: dict[str, Any]  # the code identity (git, python, platform), computed once by the parent


def run_batch(job: Job, batch: list[PlannedRun]) -> Iterator[dict[str, Any]]:
    """The records of ``batch``'s runs, one by one as each finishes."""
    for planned in batch:
        yield execute_run(job.collector, planned, job.plan_sha256, job.runs_dir, job.identity, job.spec)
