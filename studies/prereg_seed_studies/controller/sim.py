"""Collector ``sim.controller``: the controller study's fast twin, learning from a declared prior (no torch).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.controller.sim).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from collect.collectors.base import Collector, Param, RunContext, RunResult, check_params
from prereg_seed_studies.controller.loop import run_cycles
from prereg_seed_studies.controller.params import (
    COMMON_PARAMS,
    METRICS,
    check_common,
    loop_config,
    make_policy,
    metric_evidence,
    run_result,
)
from prereg_seed_studies.controller.stress import draw_stress


def _gt0() -> tuple[Any, str]:
    return (lambda v: v > 0), "must be > 0"


PARAMS: dict[str, Param] = {
    **COMMON_PARAMS,
    "model_params": Param(
        int,
        12960,
        "parameters of the modeled model (payload bytes = 4 x this; the torch collector's default model has 12960)",
        *_gt0(),
    ),
    "prior_initial_nll": Param(float, math.log(32), "prior: held-out NLL of the initial state (nats/token)", *_gt0()),
    "prior_floor_nll": Param(
        float, 1.193, "prior: the NLL floor (nats/token; the torch default source's entropy rate)", *_gt0()
    ),
    "prior_tokens_scale": Param(
        float, 12288.0, "prior: effective tokens at which the excess NLL has fallen by 2^-exponent", *_gt0()
    ),
    "prior_exponent": Param(float, 0.47, "prior: power-law exponent of the excess NLL in effective tokens", *_gt0()),
    "prior_staleness_penalty": Param(
        float, 0.02, "prior: efficiency loss per extra local step", lambda v: v >= 0, "must be >= 0"
    ),
    "prior_disagreement_per_step": Param(
        float,
        0.01,
        "prior: replica disagreement after one local step (grows as sqrt of the steps)",
        lambda v: v >= 0,
        "must be >= 0",
    ),
}


class PriorWorker:
    """The :class:`prereg_seed_studies.controller.loop.Worker` of the prior learning model (module doc)."""

    def __init__(self, p: Mapping[str, Any]) -> None:
        self.p, self.mb = p, p["micro_batch"]
        self.n_eff = 0.0
        self.replica: dict[int, int] = {}

    def sync_step(self, units: Sequence[tuple[int, int]]) -> None:
        self.n_eff += len(units) * self.mb

    def fork(self, site: int) -> None:
        self.replica[site] = 0

    def local_step(self, site: int, k: int) -> None:
        self.replica[site] += 1

    def merge(self, sites: Sequence[int], include_consensus: bool) -> float:
        ages = [self.replica.pop(i) for i in sites]
        dilute = len(sites) / (len(sites) + 1) if include_consensus else 1.0
        pen = self.p["prior_staleness_penalty"]
        self.n_eff += dilute * sum(a * self.mb / (1 + pen * (a - 1)) for a in ages if a > 0)
        if len(sites) + include_consensus < 2:
            return 0.0
        return float(self.p["prior_disagreement_per_step"] * math.sqrt(sum(ages) / len(ages)))

    def drop(self, site: int) -> None:
        self.replica.pop(site, None)

    def nll(self) -> float:
        p = self.p
        excess = p["prior_initial_nll"] - p["prior_floor_nll"]
        return float(p["prior_floor_nll"] + excess * (1 + self.n_eff / p["prior_tokens_scale"]) ** -p["prior_exponent"])


def validate(params: Mapping[str, Any]) -> dict[str, Any]:
    p = check_params(SimControllerCollector, params)
    check_common(p)
    return p


class SimControllerCollector(Collector):
    """Consistency modes and the adaptive controller under WAN/site stress; learning from a prior."""

    name = "sim.controller"
    PARAMS = PARAMS
    METRICS = METRICS
    EVIDENCE = "prior"

    @classmethod
    def metric_evidence(cls, params: Mapping[str, Any]) -> dict[str, str]:
        return metric_evidence("prior", "modeled")

    def run(self, ctx: RunContext) -> RunResult:
        p = validate(ctx.params)
        stress = draw_stress(p, ctx.seed)
        cfg = loop_config(p, p["model_params"])
        result = run_cycles(cfg, stress, PriorWorker(p), make_policy(p, cfg), "prior")
        return run_result(ctx, p, result, stress, p["prior_floor_nll"], "sim.controller/v1", ("prior", "modeled"))
