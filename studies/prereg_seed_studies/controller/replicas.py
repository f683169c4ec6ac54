"""torch.controller's worker: real per-site replicas of the tiny LM (imported only when a run starts).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.controller.replicas).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from prereg_seed_studies.controller.loop import LoopResult, Policy, run_cycles
from prereg_seed_studies.controller.params import loop_config, make_policy
from prereg_seed_studies.controller.stress import Stress
from prereg_seed_studies.torch.markov import SourceSpec, make_corpora
from prereg_seed_studies.torch.model import Batches, WindowMLP, evaluate_nll, heldout_windows, param_count, state_sha256
from prereg_seed_studies.torch.trainer import deterministic

TRAIN_CHAIN = 2048
HELDOUT_CHAIN = 256


class Replicas:
    """The :class:`prereg_seed_studies.controller.loop.Worker` of real training (module doc)."""

    def __init__(self, model: WindowMLP, batches: Batches, lr: float, hx: torch.Tensor, hy: torch.Tensor) -> None:
        self.model, self.batches, self.lr, self.hx, self.hy = model, batches, lr, hx, hy
        self.opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
        self.replicas: dict[int, tuple[WindowMLP, torch.optim.Adam]] = {}
        self.loss_fn = nn.CrossEntropyLoss()

    def _step(self, model: nn.Module, opt: torch.optim.Optimizer, w: np.ndarray) -> None:
        t = torch.from_numpy(w)
        opt.zero_grad(set_to_none=True)
        self.loss_fn(model(t[:, :-1]), t[:, -1]).backward()
        opt.step()

    def sync_step(self, units: Sequence[tuple[int, int]]) -> None:
        w = np.concatenate([self.batches.windows(k, site) for site, k in units])
        self._step(self.model, self.opt, w)

    def fork(self, site: int) -> None:
        model = copy.deepcopy(self.model)
        opt = torch.optim.Adam(model.parameters(), lr=self.lr, foreach=True)
        opt.load_state_dict(copy.deepcopy(self.opt.state_dict()))
        self.replicas[site] = (model, opt)

    def local_step(self, site: int, k: int) -> None:
        model, opt = self.replicas[site]
        self._step(model, opt, self.batches.windows(k, site))

    @torch.no_grad()
    def merge(self, sites: Sequence[int], include_consensus: bool) -> float:
        states = [self.replicas.pop(i) for i in sites]
        if include_consensus:
            states.append((self.model, self.opt))
        params = [list(m.parameters()) for m, _ in states]
        flat = torch.stack([torch.cat([p.reshape(-1) for p in ps]) for ps in params])
        mean = flat.mean(0)
        dis = float(((flat - mean).norm(dim=1) / mean.norm().clamp_min(1e-12)).mean()) if len(states) > 1 else 0.0
        for j, target in enumerate(self.model.parameters()):
            target.copy_(torch.stack([ps[j] for ps in params]).mean(0))
            moments = [opt.state[ps[j]] for (_, opt), ps in zip(states, params, strict=True) if opt.state.get(ps[j])]
            if moments:
                self.opt.state[target] = {
                    "step": torch.stack([s["step"] for s in moments]).max().clone(),
                    "exp_avg": torch.stack([s["exp_avg"] for s in moments]).mean(0),
                    "exp_avg_sq": torch.stack([s["exp_avg_sq"] for s in moments]).mean(0),
                }
        return dis

    def drop(self, site: int) -> None:
        self.replicas.pop(site, None)

    def nll(self) -> float:
        return evaluate_nll(self.model, self.hx, self.hy)


def train(
    p: Mapping[str, Any], seed: int, stress: Stress, policy_of: Any = make_policy
) -> tuple[LoopResult, dict[str, Any]]:
    """One run: data, model, the cycle loop; returns the loop's result and the run's identity."""
    spec = SourceSpec(vocab=p["vocab"], order=p["markov_order"], support=p["markov_support"], seed=p["source_seed"])
    corpora = make_corpora(
        spec,
        seed,
        max(1, p["train_tokens"] // TRAIN_CHAIN),
        TRAIN_CHAIN,
        max(1, p["heldout_tokens"] // HELDOUT_CHAIN),
        HELDOUT_CHAIN + p["context"],
    )
    with deterministic(seed, p["threads"]):
        model = WindowMLP(p["vocab"], p["context"], p["emb"], p["width"])
        hx, hy = heldout_windows(corpora.heldout, p["context"])
        worker = Replicas(model, Batches(corpora.train, p["context"], p["micro_batch"], seed), p["lr"], hx, hy)
        initial_state = state_sha256(model, worker.opt)
        cfg = loop_config(p, param_count(model))
        policy: Policy = policy_of(p, cfg)
        result = run_cycles(cfg, stress, worker, policy, "measured")
        final_state = state_sha256(model, worker.opt)
    identity = {
        "data": corpora.identity(),
        "nll_floor": corpora.source.entropy_rate,
        "net": {
            "kind": "window-mlp",
            "vocab": p["vocab"],
            "context": p["context"],
            "emb": p["emb"],
            "width": p["width"],
            "params": param_count(model),
            "optimizer": "adam",
            "lr": p["lr"],
            "outer": "parameter and Adam-moment averaging (outer lr 1)",
        },
        "initial_state_sha256": initial_state,
        "final_state_sha256": final_state,
        "torch": {"version": torch.__version__, "deterministic_algorithms": True, "threads": p["threads"]},
    }
    return result, identity
