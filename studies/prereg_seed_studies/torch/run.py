"""One torch.multisite run: data, model, harness, telemetry, evaluation (imported only when a run starts)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from collect.telemetry.analysis.energy import run_energy
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.base import Sensor
from prereg_seed_studies.multisite.accounting import SimConfig, SimResult
from prereg_seed_studies.multisite.harness import Harness
from prereg_seed_studies.multisite.outages import Outage
from prereg_seed_studies.torch.device import resolve_device
from prereg_seed_studies.torch.markov import SourceSpec, make_corpora
from prereg_seed_studies.torch.model import (
    Batches,
    WindowMLP,
    evaluate_nll,
    flop_per_token,
    heldout_windows,
    param_count,
    state_sha256,
)
from prereg_seed_studies.torch.trainer import Trainer, deterministic
from prereg_seed_studies.torch.warmstart import load_warm_start

TRAIN_CHAIN = 2048
HELDOUT_CHAIN = 256  # predictions per held-out chain


@dataclass
class Outcome:
    """Everything the collector turns into metrics, traces and identity."""

    result: SimResult
    initial_nll: float
    final_nll: float
    nll_floor: float
    state_sha256: str
    data_identity: dict[str, Any]
    net: dict[str, Any]
    flop: dict[str, int]
    torch_info: dict[str, Any]
    energy_j: float
    energy_evidence: str
    telemetry: dict[str, Any]
    trajectory: list[tuple[int, int, float, int]] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    initial_state_sha256: str = ""  # model + optimizer state the run started from
    warm_start: dict[str, Any] | None = None  # prereg_seed_studies.torch.warmstart identity, when used
    energy_metrics: dict[str, float] = field(default_factory=dict)  # prereg_seed_studies.torch.energy.ENERGY_METRICS
    trace: Any = None  # the run's telemetry Trace (kept beside the ledger by the collector)


class _Worker:
    """The trainer seen by the harness, plus the NLL trajectory every ``every`` ticks."""

    def __init__(
        self, trainer: Trainer, tel: Any, every: int, site_tokens: int, hx: torch.Tensor, hy: torch.Tensor
    ) -> None:
        self.t, self.tel, self.every, self.site_tokens = trainer, tel, every, site_tokens
        self.hx, self.hy = hx, hy
        self.step_id = self.tokens = 0
        self.next_eval = every
        self.rows: list[tuple[int, int, float, int]] = []
        self.eval_s = 0.0

    def record(self) -> None:
        t0 = time.perf_counter()
        self.rows.append((self.tel.tick, self.step_id, evaluate_nll(self.t.model, self.hx, self.hy), self.tokens))
        self.eval_s += time.perf_counter() - t0

    def advanced(self) -> None:
        if self.tel.tick >= self.next_eval:
            self.record()
            self.next_eval = (self.tel.tick // self.every + 1) * self.every

    def step(self, step_id: int, sites: Sequence[int]) -> None:
        self.t.step(step_id, sites)
        self.step_id, self.tokens = step_id, self.tokens + len(sites) * self.site_tokens
        self.tel.tick += 1
        self.advanced()

    def save(self, ckpt_id: int, step_id: int, tokens: int) -> int:
        return self.t.save(ckpt_id, step_id, tokens)

    def load(self, ckpt_id: int) -> None:
        self.t.load(ckpt_id)
        self.step_id, self.tokens = self.t.last_ckpt["step"], self.t.last_ckpt["tokens"]


def sim_config(p: Mapping[str, Any], state_bytes: int, ckpt_bytes: int) -> SimConfig:
    """The harness settings: the simulator's, with byte sizes taken from the real model."""
    return SimConfig(
        p["policy"],
        sites=p["sites"],
        target_steps=1,
        checkpoint_every_steps=p["checkpoint_every_steps"],
        checkpoint_ticks=p["checkpoint_ticks"],
        restore_ticks=p["restore_ticks"],
        rejoin_ticks=p["rejoin_ticks"],
        param_bytes=state_bytes,
        gradient_bytes=state_bytes,
        buffer_bytes=0,
        checkpoint_bytes=ckpt_bytes,
        rejoin_bytes=ckpt_bytes,
    )


def train_through_failures(
    p: Mapping[str, Any],
    seed: int,
    outages: Sequence[Outage],
    ckpt: Path,
    sensor: Sensor,
    telemetry_cls: Any,
    runs_dir: Path | None = None,
) -> Outcome:
    """Run one policy of one stratum (see :mod:`prereg_seed_studies.torch.collector`)."""
    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    spec = SourceSpec(vocab=p["vocab"], order=p["markov_order"], support=p["markov_support"], seed=p["source_seed"])

    # BLAS on one thread: the stationary distribution's solve (np.linalg.solve) differs in the last
    # bits with OpenBLAS's thread count, which follows the machine's cores, and Ray sets it to one in
    # its workers: the data and the NLL floor are now the same bits on every machine and executor
    with threadpool_limits(1, user_api="blas"):
        corpora = make_corpora(
            spec,
            seed,
            max(1, p["train_tokens"] // TRAIN_CHAIN),
            TRAIN_CHAIN,
            max(1, p["heldout_tokens"] // HELDOUT_CHAIN),
            HELDOUT_CHAIN + p["context"],
        )
        floor = corpora.source.entropy_rate
    timing["data"] = time.perf_counter() - t0
    device = resolve_device(p["device"])
    with deterministic(seed, p["threads"]):
        model = WindowMLP(p["vocab"], p["context"], p["emb"], p["width"])
        batches = Batches(corpora.train, p["context"], p["micro_batch"], seed)
        trainer = Trainer(model, batches, p["lr"], ckpt, device)
        warm = None
        if p.get("warm_start_steps"):
            if runs_dir is None:
                raise RuntimeError("a warm start needs the runs folder it was made in")
            warm = load_warm_start(trainer, runs_dir, p)
        start_state = state_sha256(trainer.model, trainer.opt)
        hx, hy = heldout_windows(corpora.heldout, p["context"])
        hx, hy = hx.to(trainer.device), hy.to(trainer.device)
        initial = evaluate_nll(trainer.model, hx, hy)
        init_bytes = trainer.save(0, 0, 0)  # checkpoint 0: the initial state, durable by definition
        state_bytes = 4 * param_count(model)
        rec = Recorder(sensor, [p["energy_signal"]], p["poll_ms"], spec=p["sensor"])
        tel = telemetry_cls(rec, p["tick_ms"])
        every = p["eval_every_ticks"] or max(1, -(-p["useful_tokens"] // (p["sites"] * p["micro_batch"])) // 32)
        worker = _Worker(trainer, tel, every, p["micro_batch"], hx, hy)
        worker.rows.append((0, 0, initial, 0))
        tel.on_advance = worker.advanced
        harness = Harness(
            sim_config(p, state_bytes, init_bytes),
            outages,
            worker,
            p["useful_tokens"],
            site_tokens=p["micro_batch"],
            count="tokens",
            phase=tel.phase,
        )
        t1 = time.perf_counter()
        with rec:
            if p["idle_baseline_ms"] > 0:  # the idle baseline, before any training load
                with rec.phase("idle"):
                    rec.advance(p["idle_baseline_ms"])
            result = harness.run()
            tel.switch(None)
        timing["harness"] = time.perf_counter() - t1
        final = evaluate_nll(trainer.model, hx, hy)
        if not worker.rows or worker.rows[-1][0] != result.end_tick:
            worker.rows.append((result.end_tick, result.final_step, final, result.retained_tokens))
        digest = state_sha256(trainer.model, trainer.opt)
    trace = rec.trace()
    p_min, p_max = sensor.power_range_w()
    energy = run_energy(trace, p["energy_signal"], p_min, p_max)
    sensor.close()
    timing.update(save=trainer.save_s, load=trainer.load_s, eval=worker.eval_s)
    timing = {k: round(v, 4) for k, v in timing.items()}
    return Outcome(
        result=result,
        initial_nll=initial,
        final_nll=final,
        nll_floor=floor,
        state_sha256=digest,
        data_identity=corpora.identity(),
        net={
            "kind": "window-mlp",
            "vocab": p["vocab"],
            "context": p["context"],
            "emb": p["emb"],
            "width": p["width"],
            "params": param_count(model),
            "optimizer": "adam",
            "lr": p["lr"],
            "device": device,
        },
        flop=flop_per_token(p["vocab"], p["context"], p["emb"], p["width"]),
        torch_info={
            "version": torch.__version__,
            "deterministic_algorithms": True,
            "threads": p["threads"],
            "cuda": torch.version.cuda if device == "cuda" else None,
        },
        energy_j=energy.metrics["energy"],
        energy_evidence=sensor.evidence,
        telemetry=energy.summary,
        trajectory=worker.rows,
        timing=timing,
        energy_metrics=energy.metrics,
        trace=trace,
        initial_state_sha256=start_state,
        warm_start=warm,
    )
