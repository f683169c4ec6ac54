"""Collector ``torch.controller``: the tiny LM trained for real across 3 simulated WAN sites, by consistency mode.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.controller.collector).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collect.collectors.base import Collector, Param, ParamError, RunContext, RunResult, check_params
from prereg_seed_studies.controller.params import COMMON_PARAMS, METRICS, check_common, metric_evidence, run_result
from prereg_seed_studies.controller.stress import draw_stress


def _p(kind: Any, default: Any, help: str, lo: int = 1) -> Param:
    return Param(kind, default, help, lambda v: v >= lo, f"must be >= {lo}")


PARAMS: dict[str, Param] = {
    **COMMON_PARAMS,
    "context": _p(int, 4, "model context: tokens in the input window"),
    "emb": _p(int, 16, "embedding width"),
    "width": _p(int, 128, "hidden layer width"),
    "lr": Param(
        float, 0.01, "Adam learning rate (inner optimizer of every replica)", lambda v: 0 < v < 10, "must be in (0, 10)"
    ),
    "vocab": Param(int, 32, "Markov source vocabulary", lambda v: 2 <= v <= 256, "must be in [2, 256]"),
    "markov_order": Param(
        int, 2, "Markov source order k (vocab ** k <= 65536)", lambda v: 1 <= v <= 4, "must be in [1, 4]"
    ),
    "markov_support": _p(int, 4, "likely successors per Markov context"),
    "source_seed": _p(int, 0, "seed of the Markov source itself (the same source in every run)", 0),
    "train_tokens": _p(int, 131072, "training corpus size (tokens; chains of 2048)", 4096),
    "heldout_tokens": _p(int, 8192, "held-out predictions, evaluated at every commit (chains of 256)", 256),
    "threads": _p(int, 1, "torch intra-op threads inside the run (the engine parallelises runs)"),
}


def validate(params: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`check_params` plus the checks across params; raises ``ParamError``."""
    p = check_params(TorchControllerCollector, params)
    check_common(p)
    if p["vocab"] ** p["markov_order"] > 1 << 16:
        raise ParamError("vocab ** markov_order must be <= 65536")
    if p["markov_support"] > p["vocab"]:
        raise ParamError("markov_support must be <= vocab")
    return p


class TorchControllerCollector(Collector):
    """Consistency modes and the adaptive controller, trained for real; see the module doc."""

    name = "torch.controller"
    PARAMS = PARAMS
    METRICS = METRICS
    EVIDENCE = "measured"

    @classmethod
    def metric_evidence(cls, params: Mapping[str, Any]) -> dict[str, str]:
        return metric_evidence("measured", "measured")

    def run(self, ctx: RunContext) -> RunResult:
        p = validate(ctx.params)
        from prereg_seed_studies.controller.replicas import train  # lazy: torch, imported only here

        stress = draw_stress(p, ctx.seed)
        result, identity = train(p, ctx.seed, stress)
        return run_result(
            ctx, p, result, stress, identity["nll_floor"], "torch.controller/v1", ("measured", "measured"), identity
        )


__all__ = ["PARAMS", "TorchControllerCollector", "validate"]
