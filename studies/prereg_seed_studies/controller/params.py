"""Parameters, metrics and the commit ledger shared by ``sim.controller`` and ``torch.controller`` (no torch).

Every run parameter has its unit in its name (``_ms``, ``_s``, ``_mbps``, ``_bytes``, ``_w``,
``_per_min``); see :data:`COMMON_PARAMS`. Metric evidence: infrastructure numbers (times, bytes,
energy, abstentions and switches) are ``modeled``; learning (NLL) and work counts are ``measured``
with the real trainer and ``prior`` / ``modeled`` with the simulator twin.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from collect.collectors.base import Param, ParamError, RunContext, RunResult
from prereg_seed_studies.controller.commits import write_commits
from prereg_seed_studies.controller.loop import TRAFFIC, FixedPolicy, LoopConfig, LoopResult, Policy
from prereg_seed_studies.controller.policy import Controller, ControllerConfig, parse_mode, parse_modes
from prereg_seed_studies.controller.stress import FAMILIES, REGIONS, Stress

POLICY_HELP = "sync | local:H (H >= 2 local steps per outer synchronisation) | adaptive (the controller)"


def _p(kind: Any, default: Any, help: str, check: Any = None, text: str = "") -> Param:
    return Param(kind, default, help, check, text)


def _ge(lo: float) -> tuple[Any, str]:
    return (lambda v: v >= lo), f"must be >= {lo}"


def _gt(lo: float) -> tuple[Any, str]:
    return (lambda v: v > lo), f"must be > {lo}"


def _in(*names: str) -> tuple[Any, str]:
    return (lambda v: v in names), f"must be one of {', '.join(names)}"


def _policy_ok(v: str) -> bool:
    try:
        return v == "adaptive" or parse_mode(v) >= 1
    except ValueError:
        return False


def _modes_ok(v: str) -> bool:
    try:
        return bool(parse_modes(v))
    except ValueError:
        return False


COMMON_PARAMS: dict[str, Param] = {
    "policy": _p(str, None, POLICY_HELP, _policy_ok, "must be sync, local:H (H >= 2) or adaptive"),
    "sites": _p(int, 3, "sites joined by the WAN link", lambda v: 2 <= v <= 16, "must be in [2, 16]"),
    "useful_tokens": _p(
        int, 98304, "committed (retained useful) tokens every policy stops at; a multiple of micro_batch", *_ge(1)
    ),
    "micro_batch": _p(int, 128, "windows (= predicted tokens) per site per step", *_ge(1)),
    "sync_cycle_steps": _p(int, 8, "synchronous steps one sync-mode cycle (one commit, one decision) groups", *_ge(1)),
    "step_ms": _p(float, 50.0, "modeled compute time of one local step of one site (ms)", *_gt(0)),
    "control_bytes": _p(int, 512, "control report each reachable site sends per cycle (bytes)", *_ge(0)),
    "max_update_age_steps": _p(
        int,
        64,
        "oldest pending update (local steps) a rejoining partitioned site may merge; older work is discarded",
        *_ge(1),
    ),
    "controller_modes": _p(
        str,
        "sync,local:4,local:16",
        "modes the adaptive controller chooses from (comma-separated)",
        _modes_ok,
        "must list sync / local:H modes, no repeats",
    ),
    "controller_safe_mode": _p(str, "local:4", "the declared safe mode the controller keeps when it abstains"),
    "controller_min_observations": _p(
        int, 2, "cycles with a WAN observation the controller needs before deciding", *_ge(1)
    ),
    "controller_window": _p(int, 3, "cycles of evidence the controller reads (since membership last changed)", *_ge(1)),
    "controller_max_bw_spread": _p(
        float,
        4.0,
        "max / min observed bandwidth in the window beyond which the evidence is unstable (abstain)",
        *_ge(1),
    ),
    "controller_staleness_cost": _p(float, 0.02, "score penalty per extra local step (fraction)", *_ge(0)),
    "controller_max_disagreement": _p(
        float,
        0.1,
        "observed replica disagreement (relative parameter distance) above which only smaller H may be chosen",
        *_gt(0),
    ),
    "family": _p(str, "calm", f"stress family: {', '.join(FAMILIES)}", *_in(*FAMILIES)),
    "stress_horizon_s": _p(float, 30.0, "modeled time over which a family's stress episodes fall (s)", *_gt(0)),
    "bandwidth_mbps_min": _p(float, 0.5, "low end of the base WAN bandwidth uncertainty range (Mbit/s)", *_gt(0)),
    "bandwidth_mbps_max": _p(float, 50.0, "high end of the base WAN bandwidth range (Mbit/s)", *_gt(0)),
    "bandwidth_region": _p(
        str, "all", "region of the bandwidth range: all | low | high (halves at the geometric mean)", *_in(*REGIONS)
    ),
    "latency_ms_min": _p(float, 10.0, "low end of the base one-way WAN latency range (ms)", *_ge(0)),
    "latency_ms_max": _p(float, 100.0, "high end of the base latency range (ms)", *_ge(0)),
    "latency_region": _p(str, "all", "region of the latency range: all | low | high", *_in(*REGIONS)),
    "outage_rate_per_min_min": _p(float, 1.0, "low end of the outage rate range (outages per minute)", *_ge(0)),
    "outage_rate_per_min_max": _p(float, 6.0, "high end of the outage rate range (outages per minute)", *_ge(0)),
    "outage_region": _p(str, "all", "region of the outage rate range: all | low | high", *_in(*REGIONS)),
    "target_excess_nll": _p(
        float, 1.0, "time_to_target: first commit whose held-out NLL is within this of the floor (nats/token)", *_gt(0)
    ),
    "site_idle_w": _p(float, 100.0, "modeled idle power of every up site over wall time (W)", *_ge(0)),
    "site_compute_w": _p(float, 300.0, "modeled power above idle of a computing site (W)", *_ge(0)),
    "transfer_j_per_byte": _p(float, 0.0, "modeled energy per WAN byte (J/byte)", *_ge(0)),
}

MODELED_METRICS: dict[str, str] = {
    "time_to_target": "s",
    "target_reached": "count",
    "completion_time": "s",
    "stall_time": "s",
    "wan_bytes": "byte",
    **{f"wan_bytes_{k}": "byte" for k in TRAFFIC},
    "wan_time": "s",
    **{f"wan_time_{k}": "s" for k in TRAFFIC},
    "abstentions": "count",
    "mode_switches": "count",
    "commits": "count",
    "energy": "J",
    # the stratum's drawn infrastructure (the same for every arm): where in its uncertainty region it fell
    "base_bandwidth_mbps": "Mbit/s",
    "base_latency_ms": "ms",
    "outage_rate_per_min": "1/min",
}
LEARNING_METRICS: dict[str, str] = {
    "final_nll": "nats/token",
    "initial_nll": "nats/token",
    "nll_floor": "nats/token",
    "excess_nll": "nats/token",
}
WORK_METRICS: dict[str, str] = {
    "attempted_tokens": "token",
    "useful_tokens": "token",
    "replayed_tokens": "token",
    "goodput": "ratio",
    "max_update_age": "step",
    "mean_disagreement": "ratio",
}
METRICS: dict[str, str] = {**LEARNING_METRICS, **WORK_METRICS, **MODELED_METRICS}


def metric_evidence(learning: str, work: str) -> dict[str, str]:
    return {
        **dict.fromkeys(LEARNING_METRICS, learning),
        **dict.fromkeys(WORK_METRICS, work),
        **dict.fromkeys(MODELED_METRICS, "modeled"),
    }


def check_common(p: Mapping[str, Any]) -> None:
    """Checks across the common params; raises ``ParamError``."""
    if p["useful_tokens"] % p["micro_batch"]:
        raise ParamError(f"useful_tokens = {p['useful_tokens']} must be a multiple of micro_batch = {p['micro_batch']}")
    modes = parse_modes(p["controller_modes"])
    if p["controller_safe_mode"] not in modes:
        raise ParamError(
            f"controller_safe_mode = {p['controller_safe_mode']} is not one of controller_modes "
            f"({p['controller_modes']})"
        )
    for lo, hi in (
        ("bandwidth_mbps_min", "bandwidth_mbps_max"),
        ("latency_ms_min", "latency_ms_max"),
        ("outage_rate_per_min_min", "outage_rate_per_min_max"),
    ):
        if p[lo] > p[hi]:
            raise ParamError(f"{lo} = {p[lo]} must be <= {hi} = {p[hi]}")


def loop_config(p: Mapping[str, Any], n_params: int) -> LoopConfig:
    """The loop settings; payloads from the model's parameter count (float32; Adam state = 3 x)."""
    return LoopConfig(
        sites=p["sites"],
        micro_batch=p["micro_batch"],
        target_units=p["useful_tokens"] // p["micro_batch"],
        step_ms=p["step_ms"],
        sync_cycle_steps=p["sync_cycle_steps"],
        grad_bytes=4 * n_params,
        param_bytes=4 * n_params,
        state_bytes=12 * n_params,
        control_bytes=p["control_bytes"],
        max_update_age_steps=p["max_update_age_steps"],
        site_idle_w=p["site_idle_w"],
        site_compute_w=p["site_compute_w"],
        transfer_j_per_byte=p["transfer_j_per_byte"],
    )


def make_policy(p: Mapping[str, Any], cfg: LoopConfig) -> Policy:
    """A fixed mode, or the adaptive controller with the run's controller params."""
    if p["policy"] != "adaptive":
        return FixedPolicy(p["policy"])
    return Controller(
        ControllerConfig(
            modes=parse_modes(p["controller_modes"]),
            safe_mode=p["controller_safe_mode"],
            sync_cycle_steps=p["sync_cycle_steps"],
            sync_bytes=cfg.grad_bytes,
            outer_bytes=cfg.param_bytes,
            min_observations=p["controller_min_observations"],
            window=p["controller_window"],
            max_bw_spread=p["controller_max_bw_spread"],
            staleness_cost=p["controller_staleness_cost"],
            max_disagreement=p["controller_max_disagreement"],
        )
    )


def run_metrics(r: LoopResult, mb: int, floor: float, target_excess: float, stress: Stress) -> dict[str, float]:
    """The run's metrics from the loop's result (the ledger rows included) and its drawn stress."""
    rows = r.rows
    first = rows[0]["heldout_nll"]
    final = rows[-1]["heldout_nll"]
    reached = [row for row in rows if row["heldout_nll"] <= floor + target_excess]
    merges = [row["disagreement"] for row in rows[1:] if row["update_age_steps"] > 0]
    m: dict[str, float] = {
        "final_nll": final,
        "initial_nll": first,
        "nll_floor": floor,
        "excess_nll": final - floor,
        "attempted_tokens": r.attempted_units * mb,
        "useful_tokens": r.useful_units * mb,
        "replayed_tokens": r.replayed_units * mb,
        "goodput": r.useful_units / max(1, r.attempted_units),
        "max_update_age": max((row["update_age_steps"] for row in rows), default=0),
        "mean_disagreement": sum(merges) / len(merges) if merges else 0.0,
        "time_to_target": (reached[0]["wall_tick_ms"] if reached else r.end_ms) / 1e3,
        "target_reached": float(bool(reached)),
        "completion_time": r.end_ms / 1e3,
        "stall_time": r.stall_ms / 1e3,
        "wan_bytes": sum(r.wan_bytes.values()),
        "wan_time": sum(r.wan_ms.values()) / 1e3,
        "abstentions": r.abstentions,
        "mode_switches": r.switches,
        "commits": len(rows) - 1,
        "energy": r.energy_j,
        "base_bandwidth_mbps": stress.base_bandwidth_mbps,
        "base_latency_ms": stress.base_latency_ms,
        "outage_rate_per_min": stress.outage_rate_per_min,
    }
    for k in TRAFFIC:
        m[f"wan_bytes_{k}"] = r.wan_bytes[k]
        m[f"wan_time_{k}"] = r.wan_ms[k] / 1e3
    out = {k: float(v) for k, v in m.items()}
    bad = [k for k, v in out.items() if not math.isfinite(v)]
    if bad:
        raise RuntimeError(f"non-finite metric(s) {', '.join(bad)} (training diverged?)")
    return out


def run_result(
    ctx: RunContext,
    p: Mapping[str, Any],
    result: LoopResult,
    stress: Stress,
    floor_nll: float,
    model: str,
    evidence: tuple[str, str],
    identity: Mapping[str, Any] | None = None,
) -> RunResult:
    """A controller run's record: its metrics, the commit ledger written beside it, and its identity
    (``evidence``: the classes of learning and of work counts; ``identity``: e.g. the data hashes)."""
    metrics = run_metrics(result, p["micro_batch"], floor_nll, p["target_excess_nll"], stress)
    ctx.trace_dir.mkdir(parents=True, exist_ok=True)
    commits = ctx.trace_path("commits.jsonl")
    write_commits(commits, result.rows)
    info = {
        "model": model,
        "policy": p["policy"],
        "stress": stress.as_dict(),
        "mode_cycles": result.mode_cycles,
        "metric_evidence": metric_evidence(*evidence),
        "work_unit": "token",
        **(identity or {}),
    }
    return RunResult(metrics=metrics, traces=[commits.name], info=info)
