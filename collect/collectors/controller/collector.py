"""Collector ``torch.controller``: the tiny LM trained for real across 3 simulated WAN sites, by consistency mode.

What a run does (params: :data:`PARAMS`, metrics: :data:`collect.collectors.controller.params.METRICS`):

1. Stress: :func:`collect.collectors.controller.stress.draw_stress` draws the stratum's timeline (family,
   base bandwidth / latency / outage rate from their uncertainty regions) from the run seed --
   the same for every arm of the stratum, and the same ``sim.controller`` draws.
2. Data and model as ``torch.multisite`` (:mod:`collect.collectors.torchrun`): a seeded order-k Markov
   source (its exact entropy rate is ``nll_floor``), a training and a held-out corpus from the run
   seed, a fixed-window MLP LM initialised from the run seed, Adam, deterministic algorithms.
3. The arm's ``policy`` -- ``sync``, ``local:H`` or ``adaptive`` (the controller of
   :mod:`collect.collectors.controller.policy`, which reads each finished cycle and queues the next mode or
   abstains to ``controller_safe_mode``) -- runs the cycle loop of :mod:`collect.collectors.controller.loop`
   on real per-site replicas (:mod:`collect.collectors.controller.replicas`). Every policy stops at the same
   committed useful tokens (``useful_tokens``); site ``i``'s k-th committed micro-batch is data
   unit ``(k, i)`` in every policy.
4. Evidence: learning (held-out NLL of the consensus at every commit, ``final_nll``) and work
   counts are ``measured``; the infrastructure -- wall time, WAN bytes and transfer time by
   traffic class, energy, and therefore ``time_to_target`` -- is ``modeled``.

Trace: ``<run_id>.commits.jsonl``, the optimizer-commit ledger (one row per commit: wall tick and
logical step, mode, action and reason -- abstentions included -- and the queued next mode,
membership, lineage, update age and disagreement, useful / attempted / replayed / computed tokens,
WAN bytes and time by traffic class, held-out NLL, evidence classes), written atomically; its
invariants (attempted = useful + replayed per row and in total, rows' bytes summing to the run's
WAN metrics, useful = the target) are checked before it is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collect.collectors.base import Collector, Param, ParamError, RunContext, RunResult, check_params
from collect.collectors.controller.params import COMMON_PARAMS, METRICS, check_common, metric_evidence, run_result
from collect.collectors.controller.stress import draw_stress


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
        from collect.collectors.controller.replicas import train  # lazy: torch, imported only here

        stress = draw_stress(p, ctx.seed)
        result, identity = train(p, ctx.seed, stress)
        return run_result(
            ctx, p, result, stress, identity["nll_floor"], "torch.controller/v1", ("measured", "measured"), identity
        )


__all__ = ["PARAMS", "TorchControllerCollector", "validate"]
