"""Step 3 of ``benchmarks/gpu_energy_check.py``: a tiny study metered by NVML, end to end.

The plan (:func:`plan_yaml`): ``torch.multisite`` on the GPU (``device: cuda``), 2 arms x 3 seeds, 2
sites, 32768 useful tokens (8192 on the CPU), a 1 s idle baseline, telemetry from ``sensor: nvml`` polled every 10 ms,
``energy`` declared ``measured`` from ``energy_counter`` (``modeled`` for a ``sim:`` sensor, the
plumbing check without a GPU), one ratio gate on it and a counter-support invalidator. It is frozen,
run and evaluated through the console commands (``python -m prereg_toolkit_cli.prereg`` etc., so an uninstalled
checkout works where its plugins are registered), each under a timeout; the step passes when all
six runs complete, every run's energy and its measurement bound are finite, and the gate's interval
is finite.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUNS = 6


def plan_yaml(sensor: str, device: str) -> str:
    """The plan's YAML text (module doc)."""
    evidence = "modeled" if sensor.startswith("sim") else "measured"
    tokens = 32768 if device == "cuda" else 8192  # a GPU steps fast: more steps, more counter updates
    return f"""schema: prereg/v1
study: gpu-energy-check
title: Does a run metered by NVML's energy counter reach a finite energy bound end to end?
hypothesis: >
  A tiny torch.multisite study metered by the GPU's energy counter completes, and its energy gate
  has a finite interval.
experiment:
  collector: torch.multisite
  params:
    sites: 2
    useful_tokens: {tokens}
    checkpoint_every_steps: 8
    outage_count: 1
    outage_horizon_ticks: 10
    outage_duration_ticks: 5
    outage_duration_dist: fixed
    sensor: "{sensor}"
    device: {device}
    poll_ms: 10
    idle_baseline_ms: 1000
arms:
  fixed:    {{policy: restart}}
  adaptive: {{policy: continue}}
strata:
  factors:
    seed: [1, 2, 3]
metrics:
  final_nll: {{unit: nats, better: lower, evidence: measured}}
  energy:    {{unit: J, better: lower, evidence: {evidence}, signal: energy_counter}}
invalidators:
  - id: counter_support
    kind: counter_support
    signal: energy_counter
    min_updates: 5
    blocks: [energy_ratio]
gates:
  - id: energy_ratio
    metric: energy
    contrast: adaptive / fixed
    method: t
    confidence: 0.90
    pass_if: upper < 2.0
decision:
  claim: The metered pipeline completes with a finite energy interval.
  require: all
  multiplicity: none
scope: A plumbing check of the GPU path, not a study.
"""


def missing_for_e2e() -> list[str]:
    """What the step needs and this Python lacks: the toolkit's dependencies and its registered plugins."""
    from importlib.metadata import entry_points

    missing = [
        f"{name} (pip install {pkg})"
        for name, pkg in (("pydantic", "pydantic"), ("yaml", "PyYAML"), ("scipy", "scipy"), ("rich", "rich"))
        if importlib.util.find_spec(name) is None
    ]
    collectors = {ep.name for ep in entry_points(group="prereg_toolkit.collectors")}
    sensors = {ep.name for ep in entry_points(group="prereg_toolkit.sensors")}
    if "torch.multisite" not in collectors or "nvml" not in sensors:
        missing.append(
            "the toolkit installed, so that its collectors and sensors are registered "
            "(pip install --no-deps --no-build-isolation -e .)"
        )
    return missing


def _cmd(tool: str, *args: str) -> list[str]:
    return [sys.executable, "-m", f"prereg_toolkit_cli.{tool}", *args]


def _run(argv: list[str], cwd: Path, timeout_s: float, ok: tuple[int, ...] = (0,)) -> tuple[str | None, str]:
    """(None, stdout) when the command exits with a code in ``ok`` in time, else (why, stdout)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    if timeout_s <= 1:
        return "no time left in the budget", ""
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"{' '.join(argv[2:4])} timed out after {timeout_s:.0f} s", ""
    if proc.returncode not in ok:
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no message"])[-1]
        return f"{' '.join(argv[2:4])} exited {proc.returncode}: {last}", proc.stdout
    return None, proc.stdout


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def summarise(runs_dir: Path, evaluation: dict[str, Any]) -> dict[str, Any]:
    """Per run its energy (J), bound (J), effective counter period and updates; the gate; whether all
    of them are finite and every run complete."""
    runs = []
    for line in (runs_dir / "ledger.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        tel = (r.get("telemetry") or {}).get("energy_counter") or {}
        runs.append(
            {
                "arm": r.get("arm"),
                "seed": r.get("seed"),
                "status": r.get("status"),
                "energy_j": (r.get("metrics") or {}).get("energy"),
                "bound_j": (tel.get("metric_bounds") or {}).get("energy", tel.get("bound")),
                "effective_period_ms": tel.get("effective_period_ms"),
                "updates": tel.get("updates"),
                "achieved_poll_ms": tel.get("achieved_poll_ms"),
                "evidence": (r.get("evidence") or {}).get("energy"),
            }
        )
    gate: dict[str, Any] = next((g for g in evaluation.get("gates", []) if g.get("id") == "energy_ratio"), {})
    finite = (
        len(runs) == RUNS
        and all(r["status"] == "complete" and _finite(r["energy_j"]) and _finite(r["bound_j"]) for r in runs)
        and _finite(gate.get("lower"))
        and _finite(gate.get("upper"))
    )
    return {
        "runs": runs,
        "decision": evaluation.get("decision"),
        "gate": {k: gate.get(k) for k in ("verdict", "estimate", "lower", "upper", "n_pairs", "refused_by")},
        "invalidators": {
            i["id"]: {"fired": i.get("fired"), "detail": i.get("detail")} for i in evaluation.get("invalidators", [])
        },
        "all_finite": finite,
    }


def end_to_end(tmp: Path, sensor: str, device: str, budget_s: float) -> dict[str, Any]:
    """Freeze, run and evaluate the plan in ``tmp`` within ``budget_s``; ``status`` ok or failed with ``detail``."""
    deadline = time.monotonic() + budget_s
    (tmp / "plan.yaml").write_text(plan_yaml(sensor, device), encoding="utf-8")
    seconds: dict[str, float] = {}
    out: dict[str, Any] = {"sensor": sensor, "device": device, "seconds": seconds}
    steps = [
        ("freeze", _cmd("prereg", "freeze", "plan.yaml", "-o", "plan.lock.json"), 60.0, (0,)),
        ("run", _cmd("collect", "run", "plan.lock.json", "--out", "runs", "--json"), budget_s, (0,)),
        (
            "evaluate",
            _cmd("gates", "evaluate", "plan.lock.json", "runs", "--json", "--out", "runs/evaluation.json"),
            60.0,
            (0, 1, 3),
        ),
    ]
    for name, argv, limit, ok in steps:
        t = time.monotonic()
        why, _ = _run(argv, tmp, min(limit, deadline - time.monotonic() - (20 if name == "run" else 0)), ok)
        seconds[name] = round(time.monotonic() - t, 2)
        if why:
            return {**out, "status": "failed", "detail": why}
    summary = summarise(tmp / "runs", json.loads((tmp / "runs" / "evaluation.json").read_text(encoding="utf-8")))
    gate = summary["gate"]
    detail = (
        f"{len(summary['runs'])} runs; energy gate {gate['verdict']} [{gate['lower']:.4g}, {gate['upper']:.4g}]"
        if summary["all_finite"]
        else "a run, its energy bound or the gate interval is missing or not finite"
    )
    return {**out, **summary, "status": "ok" if summary["all_finite"] else "failed", "detail": detail}


__all__ = ["RUNS", "end_to_end", "missing_for_e2e", "plan_yaml", "summarise"]
