"""Collector ``sim.multisite``: multi-site recovery policies under site outages (evidence: modeled).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.multisite.multisite).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collect.collectors.base import Collector, Param, ParamError, RunContext, RunResult, check_params
from collect.traces.events import write_events
from prereg_seed_studies.multisite.energy import ENERGY_METRICS, ENERGY_PARAM_SPECS, EnergyModel, energy_model_from
from prereg_seed_studies.multisite.outages import (
    DURATION_DISTS,
    OUTAGE_DEFAULTS,
    Outage,
    draw_outages,
    outage_settings,
    scripted_outages,
    valid_outage_site,
)
from prereg_seed_studies.multisite.recovery import BYTE_CLASSES, POLICIES, SimConfig, SimResult, simulate

EVIDENCE = "modeled"
ORACLE_NOTE = (
    "oracle: restart with perfect foresight (a checkpoint completes just before every failure); "
    "a yardstick for lost work, never a deployable policy"
)


def _int_at_least(lo: int) -> tuple[Any, str]:
    return (lambda v: v >= lo), f"must be >= {lo}"


def _p(kind: Any, default: Any, help: str, check: tuple[Any, str] | None = None) -> Param:
    return Param(kind, default, help, *(check or (None, "")))


_D = SimConfig("wait")
PARAMS: dict[str, Param] = {
    "policy": _p(
        str,
        None,
        f"recovery policy: {' | '.join(POLICIES)} (required; set by the arm)",
        ((lambda v: v in POLICIES), f"must be one of {', '.join(POLICIES)}"),
    ),
    "sites": _p(int, OUTAGE_DEFAULTS["sites"], "number of sites (replicas)", _int_at_least(1)),
    "target_steps": _p(
        int, OUTAGE_DEFAULTS["target_steps"], "useful steps every policy must make durable", _int_at_least(1)
    ),
    "checkpoint_every_steps": _p(
        int, _D.checkpoint_every_steps, "durable checkpoint cadence (steps)", _int_at_least(1)
    ),
    "checkpoint_ticks": _p(int, _D.checkpoint_ticks, "time to write a checkpoint (ticks)", _int_at_least(0)),
    "restore_ticks": _p(int, _D.restore_ticks, "time to restore a checkpoint (ticks)", _int_at_least(0)),
    "rejoin_ticks": _p(int, _D.rejoin_ticks, "time of a rejoin state transfer (ticks)", _int_at_least(0)),
    "tick_ms": _p(
        float,
        100.0,
        "duration of one tick = one synchronous step (ms)",
        ((lambda v: v >= 1e-6), "must be >= 1e-6 (1 ns)"),
    ),
    "mtbf_ticks": _p(
        float,
        OUTAGE_DEFAULTS["mtbf_ticks"],
        "mean ticks between outages of one site (Poisson)",
        ((lambda v: v > 0), "must be > 0"),
    ),
    "outage_count": _p(
        int,
        OUTAGE_DEFAULTS["outage_count"],
        "0: Poisson number of outages; n > 0: exactly n outages in the horizon",
        _int_at_least(0),
    ),
    "outage_duration_ticks": _p(
        float,
        OUTAGE_DEFAULTS["outage_duration_ticks"],
        "mean outage duration (ticks)",
        ((lambda v: v > 0), "must be > 0"),
    ),
    "outage_duration_dist": _p(
        str,
        OUTAGE_DEFAULTS["outage_duration_dist"],
        f"outage durations: {' | '.join(DURATION_DISTS)}",
        ((lambda v: v in DURATION_DISTS), f"must be one of {', '.join(DURATION_DISTS)}"),
    ),
    "outage_horizon_ticks": _p(
        int,
        OUTAGE_DEFAULTS["outage_horizon_ticks"],
        "outages are drawn on [0, horizon) ticks; 0: 2 x target_steps",
        _int_at_least(0),
    ),
    "outage_site": _p(
        (int, str),
        OUTAGE_DEFAULTS["outage_site"],
        "none (no outage: the control) | random (drawn sites) | a site index (all outages there)",
        (valid_outage_site, "must be none, random or a site index >= 0"),
    ),
    "outages": _p(
        (list, tuple),
        OUTAGE_DEFAULTS["outages"],
        "scripted schedule [{site, start, duration}, ...] in ticks; replaces the Poisson draw",
    ),
    "param_bytes": _p(int, _D.param_bytes, "parameters broadcast from site 0 at start (bytes)", _int_at_least(0)),
    "gradient_bytes": _p(
        int, _D.gradient_bytes, "gradient size; a step moves 2 (m-1) x this (bytes)", _int_at_least(0)
    ),
    "buffer_bytes": _p(
        int, _D.buffer_bytes, "buffers broadcast to each other member per step (bytes)", _int_at_least(0)
    ),
    "checkpoint_bytes": _p(
        int,
        _D.checkpoint_bytes,
        "checkpoint size: one upload, one download per restoring site (bytes)",
        _int_at_least(0),
    ),
    "rejoin_bytes": _p(int, _D.rejoin_bytes, "state sent to a rejoining site (bytes)", _int_at_least(0)),
    "control_bytes": _p(int, _D.control_bytes, "control messages per up site per tick (bytes)", _int_at_least(0)),
    **{k: _p(float, d, h, (chk, txt)) for k, (d, h, chk, txt) in ENERGY_PARAM_SPECS.items()},
}
METRICS: dict[str, str] = {
    "completion_time": "s",
    "completion_ticks": "tick",
    "attempted_work": "site-step",
    "retained_work": "site-step",
    "lost_work": "site-step",
    "replayed_work": "site-step",
    "attempted_steps": "step",
    "lost_steps": "step",
    "replayed_steps": "step",
    "stall_time": "s",
    "checkpoint_time": "s",
    "wan_bytes": "byte",
    **{f"wan_bytes_{c}": "byte" for c in BYTE_CLASSES},
    "checkpoints": "count",
    "checkpoints_aborted": "count",
    "state_losses": "count",
    "failures": "count",
    "restores": "count",
    "rejoins": "count",
    "goodput": "ratio",
    **ENERGY_METRICS,
}
METRIC_EVIDENCE: dict[str, str] = dict.fromkeys(METRICS, EVIDENCE)
_CONFIG_FIELDS = [f for f in SimConfig.__dataclass_fields__ if f != "policy"]


def validate(params: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`check_params` plus the checks that involve several params; raises ``ParamError``."""
    p = check_params(MultisiteCollector, params)
    outage_settings(p)  # outage_site < sites, shape of the outages list
    scripted_outages(p["outages"], p["sites"])
    if round(p["tick_ms"] * 1e6) < 1:
        raise ParamError("tick_ms must be at least 1 ns")
    return p


def config_from(p: Mapping[str, Any]) -> SimConfig:
    """The model settings of validated params."""
    return SimConfig(p["policy"], **{f: p[f] for f in _CONFIG_FIELDS})


def metrics_of(r: SimResult, tick_ms: float, energy: EnergyModel | None = None) -> dict[str, float]:
    """The run's metrics (floats) from a simulation result (energy with the default model unless given)."""
    s = tick_ms / 1000.0
    m: dict[str, float] = {
        "completion_time": r.end_tick * s,
        "completion_ticks": r.end_tick,
        "attempted_work": r.attempted,
        "retained_work": r.retained,
        "lost_work": r.lost,
        "replayed_work": r.replayed,
        "attempted_steps": r.attempted_steps,
        "lost_steps": r.lost_steps,
        "replayed_steps": r.replayed_steps,
        "stall_time": r.stall_ticks * s,
        "checkpoint_time": r.checkpoint_ticks * s,
        "wan_bytes": r.wan_bytes,
        **{f"wan_bytes_{c}": r.bytes[c] for c in BYTE_CLASSES},
        "checkpoints": len(r.lineage) - 1,
        "checkpoints_aborted": r.checkpoints_aborted,
        "state_losses": r.state_losses,
        "failures": r.failures,
        "restores": r.restores,
        "rejoins": r.rejoins,
        "goodput": r.retained / r.attempted if r.attempted else 1.0,
        **(energy or EnergyModel()).energy(r, tick_ms),
    }
    return {k: float(v) for k, v in m.items()}


def event_records(r: SimResult, tick_ms: float) -> list[dict[str, Any]]:
    """The trace as JSON-ready dicts, ids in start order, times in ns."""
    tick_ns = round(tick_ms * 1_000_000)
    return [
        {
            "id": i,
            "kind": e.kind,
            "site": e.site,
            "start_ns": e.start * tick_ns,
            "end_ns": e.end * tick_ns,
            "work": e.work,
            "steps": list(e.steps) if e.steps else None,
            "checkpoint": e.checkpoint,
            "parent": e.parent,
            "bytes": e.bytes,
            "aborted": e.aborted,
            "work_fate": e.work_fate(),
        }
        for i, e in enumerate(r.events)
    ]


def run_params(params: Mapping[str, Any], seed: int) -> tuple[SimResult, list[Outage]]:
    """Validate, draw the stratum's outages and simulate (no files written)."""
    p = validate(params)
    outages = draw_outages(p, seed)
    return simulate(config_from(p), outages), outages


class MultisiteCollector(Collector):
    """Multi-site recovery simulator; see the module docstring. Deterministic given params and seed."""

    name = "sim.multisite"
    PARAMS = PARAMS
    METRICS = METRICS

    def run(self, ctx: RunContext) -> RunResult:
        p = validate(ctx.params)
        r, outages = run_params(p, ctx.seed)
        path = ctx.trace_path("events.jsonl")
        write_events(path, event_records(r, p["tick_ms"]))
        info: dict[str, Any] = {
            "model": "sim.multisite/v1",
            "evidence": EVIDENCE,
            "policy": r.policy,
            "deployable": r.policy != "oracle",
            "frontier_sha256": r.frontier_sha256,
            "frontier_steps_sha256": r.frontier_steps_sha256,
            "energy_model": "sim.multisite/energy/v1",
            "outages": [o.as_dict() for o in outages],
            "work_unit": "site-step",
        }
        if r.policy == "oracle":
            info["note"] = ORACLE_NOTE
        return RunResult(metrics=metrics_of(r, p["tick_ms"], energy_model_from(p)), traces=[path.name], info=info)
