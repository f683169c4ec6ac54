"""Collector ``torch.multisite``: a real tiny language model trained through the outages of ``sim.multisite``.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.torch.collector).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from collect.collectors.base import Collector, Param, ParamError, RunContext, RunResult, SharedInputs, check_params
from collect.telemetry.analysis.energy import ENERGY_METRICS, ENERGY_SIGNALS
from collect.telemetry.sensors.base import SensorError
from collect.telemetry.sensors.registry import open_sensor
from collect.traces.events import write_events
from collect.traces.trajectory import write_trajectory
from prereg_seed_studies.multisite.accounting import InvariantError
from prereg_seed_studies.multisite.multisite import ORACLE_NOTE, event_records
from prereg_seed_studies.multisite.multisite import PARAMS as SIM_PARAMS
from prereg_seed_studies.multisite.outages import OUTAGE_PARAMS, draw_outages, outage_settings, scripted_outages
from prereg_seed_studies.multisite.recovery import POLICIES
from prereg_seed_studies.torch.warmstart import SHARED_DIR, make_warm_start, warm_key, warm_path

CKPT_SUFFIX = "ckpt"


def _p(kind: Any, default: Any, help: str, check: Any = None, text: str = "") -> Param:
    return Param(kind, default, help, check, text)


def _ge(lo: float) -> tuple[Any, str]:
    return (lambda v: v >= lo), f"must be >= {lo}"


PARAMS: dict[str, Param] = {
    "policy": SIM_PARAMS["policy"],
    "sites": SIM_PARAMS["sites"],
    "useful_tokens": _p(
        int, 65536, "durable (retained) tokens every policy must reach; a multiple of micro_batch", *_ge(1)
    ),
    "micro_batch": _p(int, 128, "windows (= predicted tokens) per site per step", *_ge(1)),
    "context": _p(int, 4, "model context: tokens in the input window", *_ge(1)),
    "emb": _p(int, 16, "embedding width", *_ge(1)),
    "width": _p(int, 128, "hidden layer width", *_ge(1)),
    "lr": _p(float, 0.01, "Adam learning rate", lambda v: 0 < v < 10, "must be in (0, 10)"),
    "vocab": _p(int, 32, "Markov source vocabulary", lambda v: 2 <= v <= 256, "must be in [2, 256]"),
    "markov_order": _p(
        int, 2, "Markov source order k (vocab ** k <= 65536)", lambda v: 1 <= v <= 4, "must be in [1, 4]"
    ),
    "markov_support": _p(int, 4, "likely successors per Markov context", *_ge(1)),
    "source_seed": _p(int, 0, "seed of the Markov source itself (the same source in every run)", *_ge(0)),
    "train_tokens": _p(int, 262144, "training corpus size (tokens; chains of 2048)", *_ge(4096)),
    "heldout_tokens": _p(int, 16384, "held-out predictions (chains of 256 predictions)", *_ge(256)),
    "checkpoint_every_steps": _p(int, 64, "durable checkpoint cadence (steps)", *_ge(1)),
    "checkpoint_ticks": SIM_PARAMS["checkpoint_ticks"],
    "restore_ticks": SIM_PARAMS["restore_ticks"],
    "rejoin_ticks": SIM_PARAMS["rejoin_ticks"],
    "tick_ms": SIM_PARAMS["tick_ms"],
    **{k: SIM_PARAMS[k] for k in OUTAGE_PARAMS if k not in ("sites", "target_steps")},
    "eval_every_ticks": _p(
        int, 0, "held-out evaluation interval for the trajectory (ticks); 0: about 32 points", *_ge(0)
    ),
    "sensor": _p(str, "sim:clock=virtual", "telemetry sensor spec: sim:... (modeled) or nvml (measured)"),
    "energy_signal": _p(
        str,
        "energy_counter",
        "signal the energy metrics come from: energy_counter (cumulative "
        "counter) | power_average | power_instant (a power-only meter: energy by integration)",
        lambda v: v in ENERGY_SIGNALS,
        f"must be one of {', '.join(ENERGY_SIGNALS)}",
    ),
    "idle_baseline_ms": _p(
        float,
        2000.0,
        "idle window recorded before training: the baseline of the idle-subtracted "
        "energies (ms; 0: none, and no *_net metrics)",
        lambda v: 0 <= v <= 600_000,
        "must be in [0, 600000] ms",
    ),
    "poll_ms": _p(float, 50.0, "requested telemetry poll interval (ms)", lambda v: v > 0, "must be > 0"),
    "device": _p(
        str,
        "cpu",
        "cpu | cuda | auto (cuda when available)",
        lambda v: v in ("cpu", "cuda", "auto"),
        "must be cpu, cuda or auto",
    ),
    "threads": _p(int, 1, "torch intra-op threads inside the run (the engine parallelises runs)", *_ge(1)),
    "keep_checkpoint": _p(bool, False, "keep <run_id>.ckpt after the run"),
    "warm_start_steps": _p(
        int,
        0,
        "train one shared state for this many steps before the study and start every "
        "run from it (0: every run starts from its own fresh initialisation)",
        *_ge(0),
    ),
    "warm_start_seed": _p(
        int, 0, "seed of the warm start's corpus and initialisation (domain-separated from run seeds)", *_ge(0)
    ),
}
METRICS: dict[str, str] = {
    "final_nll": "nats/token",
    "initial_nll": "nats/token",
    "nll_floor": "nats/token",
    "excess_nll": "nats/token",
    "attempted_tokens": "token",
    "retained_tokens": "token",
    "lost_tokens": "token",
    "replayed_tokens": "token",
    "attempted_flop": "FLOP",
    "retained_flop": "FLOP",
    "progress_per_flop": "nats/FLOP",
    "completion_ticks": "tick",
    "ticks": "tick",
    "completion_time": "s",
    "compute_ticks": "tick",
    "checkpoint_ticks": "tick",
    "stall_ticks": "tick",
    "attempted_steps": "step",
    "lost_steps": "step",
    "replayed_steps": "step",
    "checkpoints": "count",
    "checkpoints_aborted": "count",
    "checkpoint_bytes": "byte",
    "restores": "count",
    "rejoins": "count",
    "failures": "count",
    "state_losses": "count",
    "energy": "J",
    "goodput": "ratio",
    **{m: "J" for m in ENERGY_METRICS if m != "energy"},
    "idle_power": "W",
}
_MODELED = {"completion_ticks", "ticks", "completion_time", "compute_ticks", "checkpoint_ticks", "stall_ticks"}
METRIC_EVIDENCE: dict[str, str] = {
    m: "modeled" if m in _MODELED or m in ENERGY_METRICS else "measured" for m in METRICS
}


def target_steps_of(p: Mapping[str, Any]) -> int:
    """Steps a failure-free run takes: what ``sim.multisite``'s ``target_steps`` means here."""
    return -(-p["useful_tokens"] // (p["sites"] * p["micro_batch"]))


def outage_params(p: Mapping[str, Any]) -> dict[str, Any]:
    """The params ``draw_outages`` reads, ``target_steps`` derived (equal to sim.multisite's schedule)."""
    return {**{k: p[k] for k in OUTAGE_PARAMS if k in p}, "target_steps": target_steps_of(p)}


def validate(params: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`check_params` plus the checks across params; raises ``ParamError``."""
    p = check_params(TorchMultisiteCollector, params)
    if p["useful_tokens"] % p["micro_batch"]:
        raise ParamError(f"useful_tokens = {p['useful_tokens']} must be a multiple of micro_batch = {p['micro_batch']}")
    if p["vocab"] ** p["markov_order"] > 1 << 16:
        raise ParamError("vocab ** markov_order must be <= 65536")
    if p["markov_support"] > p["vocab"]:
        raise ParamError("markov_support must be <= vocab")
    outage_settings(outage_params(p))
    scripted_outages(p["outages"], p["sites"])
    if not (p["sensor"].startswith("sim") or p["sensor"].startswith("nvml") or p["sensor"].startswith("replay")):
        raise ParamError(f"sensor = {p['sensor']!r} must be sim:..., nvml[:index=N] or replay:PATH")
    if p["sensor"].startswith("sim"):
        from collect.telemetry.sensors.sim import spec_signals  # lazy: numpy

        try:
            offered = spec_signals(p["sensor"].partition(":")[2])
        except SensorError as err:
            raise ParamError(f"sensor {p['sensor']!r}: {err}") from None
        if p["energy_signal"] not in offered:
            raise ParamError(
                f"energy_signal = {p['energy_signal']} is not offered by sensor {p['sensor']!r} "
                f"(it offers {', '.join(sorted(offered))})"
            )
    return p


def check_sensor_offers(spec: str, signal: str) -> None:
    """Open the sensor once and check that it can read ``signal``; ``ParamError`` otherwise."""
    try:
        with open_sensor(spec) as sensor:
            if signal not in sensor.signals() or signal in sensor.unavailable:
                why = sensor.unavailable.get(signal, "not one of its signals")
                readable = [s for s in sensor.signals() if s not in sensor.unavailable]
                raise ParamError(f"sensor {spec!r} cannot read {signal} ({why}); it reads {', '.join(readable)}")
    except SensorError as err:
        raise ParamError(f"sensor {spec!r}: {err}") from None


class _Telemetry:
    """Phase marks on the recorder; on a virtual clock, ``tick_ms`` of modeled time per tick."""

    def __init__(self, recorder: Any, tick_ms: float) -> None:
        self.rec, self.tick_ms = recorder, tick_ms
        self.name: str | None = None
        self.cm: Any = None
        self.tick = 0
        self.on_advance: Any = None

    def switch(self, name: str | None) -> None:
        if name == self.name:
            return
        if self.cm is not None:
            self.cm.__exit__(None, None, None)
            self.cm = None
        if name is not None:
            self.cm = self.rec.phase(name)
            self.cm.__enter__()
        self.name = name

    @contextmanager
    def phase(self, name: str, ticks: int) -> Iterator[None]:
        self.switch(name)
        yield
        if self.rec.virtual and ticks:
            self.rec.advance(ticks * self.tick_ms)
        if name not in ("compute", "replay"):  # compute ticks are counted step by step
            self.tick += ticks
            if self.on_advance is not None:
                self.on_advance()


def _frontier_state(ckpt: Any, final_state_sha256: str) -> str:
    """The model + optimizer state hash of the durable frontier: the last checkpoint, read back from its
    file. Every run ends on that checkpoint, so it must equal the final in-memory state's hash."""
    from prereg_seed_studies.torch.model import checkpoint_state_sha256  # lazy: torch

    digest = checkpoint_state_sha256(ckpt)
    if digest != final_state_sha256:
        raise InvariantError(f"durable frontier state {digest[:12]} != final state {final_state_sha256[:12]}")
    return digest


class TorchMultisiteCollector(Collector):
    """A tiny LM trained through injected site outages; see the module docstring."""

    name = "torch.multisite"
    PARAMS = PARAMS
    METRICS = METRICS

    @classmethod
    def metric_evidence(cls, params: Mapping[str, Any]) -> dict[str, str]:
        """Training metrics are measured, simulated-time ones modeled; energy as the sensor gives it."""
        sensor = str(params.get("sensor") or PARAMS["sensor"].default)
        energy = "modeled" if sensor.startswith("sim") else "measured"
        return {**METRIC_EVIDENCE, **dict.fromkeys(ENERGY_METRICS, energy)}

    @classmethod
    def prepare(cls, params: list[Mapping[str, Any]], runs_dir: Path) -> None:
        """The warm start(s) the runs need, made once (:mod:`prereg_seed_studies.torch.warmstart`)."""
        made: set[str] = set()
        for p in params:
            if p.get("warm_start_steps") and warm_key(p) not in made:
                make_warm_start(runs_dir, p)
                made.add(warm_key(p))

    @classmethod
    def shared_inputs(cls, params: list[Mapping[str, Any]], runs_dir: Path) -> SharedInputs:
        """The warm start(s) and their sidecars, for a worker without the driver's disk: placed at the
        same ``shared/`` names under its private runs folder, where each run checks them as here."""
        files: dict[str, Path] = {}
        for p in params:
            if p.get("warm_start_steps"):
                path = warm_path(runs_dir, p)
                for f in (path, path.with_suffix(".json")):
                    files[f"{SHARED_DIR}/{f.name}"] = f
        return SharedInputs(files)

    @classmethod
    def signals(cls, params: Mapping[str, Any]) -> set[str]:
        """The one energy signal the run records and summarises (``energy_signal``), once the
        sensor is known to offer it (``validate`` checks sim specs; nvml and replay are opened)."""
        p = validate(params)
        if not p["sensor"].startswith("sim"):
            check_sensor_offers(p["sensor"], p["energy_signal"])
        return {p["energy_signal"]}

    def run(self, ctx: RunContext) -> RunResult:
        p = validate(ctx.params)
        from prereg_seed_studies.torch.run import train_through_failures  # lazy: torch, imported only here

        try:
            sensor = open_sensor(p["sensor"])
        except SensorError as err:
            raise ParamError(f"sensor {p['sensor']!r}: {err}") from None
        with sensor:  # released (NVML shut down) even when training raises
            ctx.trace_dir.mkdir(parents=True, exist_ok=True)
            ckpt = ctx.trace_path(CKPT_SUFFIX)
            outages = draw_outages(outage_params(p), ctx.seed)
            t0 = time.perf_counter()
            out = train_through_failures(p, ctx.seed, outages, ckpt, sensor, _Telemetry, runs_dir=ctx.trace_dir.parent)
            wall = time.perf_counter() - t0
        frontier = _frontier_state(ckpt, out.state_sha256)
        if not p["keep_checkpoint"]:
            ckpt.unlink(missing_ok=True)
        r = out.result
        events = ctx.trace_path("events.jsonl")
        write_events(events, event_records(r, p["tick_ms"]))
        trajectory = ctx.trace_path("trajectory.csv")
        write_trajectory(trajectory, out.trajectory)  # durable as the ledger that points at it
        train = out.flop["train"]
        metrics: dict[str, float] = {
            "final_nll": out.final_nll,
            "initial_nll": out.initial_nll,
            "nll_floor": out.nll_floor,
            "excess_nll": out.final_nll - out.nll_floor,
            "attempted_tokens": r.attempted_tokens,
            "retained_tokens": r.retained_tokens,
            "lost_tokens": r.lost_tokens,
            "replayed_tokens": r.replayed_tokens,
            "attempted_flop": r.attempted_tokens * train,
            "retained_flop": r.retained_tokens * train,
            "progress_per_flop": (out.initial_nll - out.final_nll) / (r.attempted_tokens * train),
            "completion_ticks": r.end_tick,
            "ticks": r.end_tick,
            "completion_time": r.end_tick * p["tick_ms"] / 1e3,
            "compute_ticks": r.compute_ticks,
            "checkpoint_ticks": r.checkpoint_ticks,
            "stall_ticks": r.stall_ticks,
            "attempted_steps": r.attempted_steps,
            "lost_steps": r.lost_steps,
            "replayed_steps": r.replayed_steps,
            "checkpoints": len(r.lineage) - 1,
            "checkpoints_aborted": r.checkpoints_aborted,
            "checkpoint_bytes": r.checkpoint_bytes_written,
            "restores": r.restores,
            "rejoins": r.rejoins,
            "failures": r.failures,
            "state_losses": r.state_losses,
            "energy": out.energy_j,
            "goodput": r.retained_tokens / r.attempted_tokens,
            **out.energy_metrics,
        }
        metrics = {k: float(v) for k, v in metrics.items()}
        bad = [k for k, v in metrics.items() if not math.isfinite(v)]
        if bad:
            raise RuntimeError(f"non-finite metric(s) {', '.join(bad)} (training diverged?)")
        info: dict[str, Any] = {
            "model": "torch.multisite/v1",
            "policy": p["policy"],
            "deployable": p["policy"] != "oracle",
            "final_state_sha256": out.state_sha256,
            "initial_state_sha256": out.initial_state_sha256,
            "warm_start": out.warm_start,
            "frontier_sha256": frontier,
            "frontier_lineage_sha256": r.frontier_sha256,
            "frontier_steps_sha256": r.frontier_steps_sha256,
            "data": out.data_identity,
            "net": out.net,
            "flop_per_token": out.flop,
            "torch": out.torch_info,
            "outages": [o.as_dict() for o in outages],
            "target_steps": target_steps_of(p),
            "work_unit": "token",
            "energy_evidence": out.energy_evidence,
            "sensor": p["sensor"],
            "metric_evidence": {**METRIC_EVIDENCE, **dict.fromkeys(ENERGY_METRICS, out.energy_evidence)},
            "energy_signal": p["energy_signal"],
            "timing_s": {"wall": round(wall, 3), **out.timing},
            "checkpoint_file": ckpt.name if p["keep_checkpoint"] else None,
        }
        if p["policy"] == "oracle":
            info["note"] = ORACLE_NOTE
        from collect.traces.telemetry import write_trace  # lazy: numpy

        kept = [path.name for path in write_trace(out.trace, ctx.trace_path("telemetry"))]
        return RunResult(
            metrics=metrics,
            telemetry={p["energy_signal"]: out.telemetry},
            traces=[events.name, trajectory.name, *kept],
            info=info,
        )


__all__ = ["METRICS", "METRIC_EVIDENCE", "PARAMS", "POLICIES", "TorchMultisiteCollector", "validate"]
