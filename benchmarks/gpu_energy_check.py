"""What a lent NVIDIA GPU's meters really resolve, in one prepared run of under 5 minutes.

Run (from the repository root, on a machine with an NVIDIA GPU, torch with CUDA, nvidia-ml-py and
numpy; step 3 also needs the toolkit installed with its dependencies, e.g. ``pip install --no-deps
--no-build-isolation -e .``, and ``--skip-e2e`` runs steps 1-2 from a bare checkout):

    python benchmarks/gpu_energy_check.py --out $OUT/gpu_energy_check.json

A load process (torch, bf16 matrix products on the GPU) runs a schedule -- idle, a steady load,
then 50%-duty square waves of periods 10, 25, 50, 100, 200 and 1000 ms -- and records each high
interval's start and end on the host's monotonic clock, while this process polls NVML through the
toolkit's ``nvml`` sensor (``collect/telemetry/sensors/nvml.py``):

1. **Energy counter period**: during the steady load, ``nvmlDeviceGetTotalEnergyConsumption``
   polled as fast as the call returns (between the 0.2 ms polls of every signal); the period from its value changes
   (:func:`benchmarks.gpu_energy_analysis.counter_period`: the toolkit's estimate and the
   conservative median of the outer bounds), and ``collect probe --sensor nvml`` run meanwhile as a
   cross-check; both set beside the toolkit's cited default for this GPU
   (``collect.telemetry.logs.periods``).
2. **Power readings under a square wave** (Yang, Adamek, Armour, SC24): ``nvmlDeviceGetPowerUsage``
   (nvidia-smi's ``power.draw``) and the field values ``POWER_INSTANT`` / ``POWER_AVERAGE`` where
   supported, polled every 0.2 ms: each reading's update period, the boxcar window that best
   explains it from the known load edges, the share of time it covers, and per segment its mean
   against the counter's mean power (off 1 where sampling is part-time).
3. **End to end**: a tiny ``torch.multisite`` plan with ``sensor: nvml`` and ``device: cuda``,
   energy declared ``measured`` from ``energy_counter``: ``prereg freeze``, ``collect run``,
   ``gates evaluate``; it must complete with finite energy bounds (``benchmarks/gpu_energy_e2e.py``).

Prints a table and writes JSON (``--out``; default ``$OUT/gpu_energy_check.json`` when ``$OUT`` is
set, else ``gpu_energy_check.json`` here). Every step has a timeout inside one budget (``--budget-s``,
280). Exit 0: every step completed; 1: a step failed or timed out (the table says which); 2: no
NVIDIA GPU, what the check needs is missing, or ``--out`` exists (one line, nothing written; an
earlier result is replaced only with ``--force``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the toolkit and benchmarks import from the checkout
    sys.path.insert(0, str(ROOT))

from benchmarks.gpu_energy_e2e import end_to_end, missing_for_e2e  # noqa: E402
from benchmarks.gpu_energy_load import SQUARE_PERIODS_MS, Measured, measure, schedule  # noqa: E402
from prereg.errors import InputError  # noqa: E402

PROG = "gpu_energy_check"


class NotReady(InputError):
    """What the check needs is missing here (no NVIDIA GPU, no torch with CUDA, ...): exit 2."""


def preflight(index: int, with_e2e: bool) -> dict[str, Any]:
    """The GPU's identity, or ``NotReady`` with one line; nothing heavier than NVML is imported."""
    import importlib.util

    if importlib.util.find_spec("pynvml") is None:
        raise NotReady("no NVIDIA GPU: nvidia-ml-py (module pynvml) is not installed")
    from collect.telemetry.sensors.base import SensorError
    from collect.telemetry.sensors.nvml import NvmlSensor

    try:
        sensor = NvmlSensor.from_spec(f"index={index}")
    except SensorError as err:
        raise NotReady(f"no NVIDIA GPU: {err}") from None
    try:
        info: dict[str, Any] = dict(sensor.device_info())
        unavailable = sensor.unavailable
        info["unavailable"] = unavailable
        info["power_range_w"] = list(sensor.power_range_w())
    finally:
        sensor.close()
    if "energy_counter" in unavailable:
        raise NotReady(f"GPU {index} ({info.get('name')}) has no energy counter: {unavailable['energy_counter']}")
    if importlib.util.find_spec("torch") is None:
        raise NotReady("torch is not installed (the load runs on the GPU through torch)")
    missing = missing_for_e2e() if with_e2e else []
    if missing:
        raise NotReady(f"the end-to-end step needs {'; '.join(missing)} (or give --skip-e2e)")
    return info


def _f(x: Any, digits: int = 4) -> str:
    return "n/a" if x is None else (f"{x:.{digits}g}" if isinstance(x, float) else str(x))


def default_verdict(default_ms: float, counter: dict[str, Any]) -> str:
    """Whether the cited default is at least the measured period: ``conservative`` (at least the
    upper bound), ``too short`` (below the lower bound: the counter certainly updates more slowly),
    ``within resolution`` (between them) or ``not compared`` (no period measured)."""
    upper, lower = counter.get("conservative_period_ms"), counter.get("inner_period_ms")
    if upper is None or lower is None:
        return "not compared"
    return "conservative" if default_ms >= upper else "too short" if default_ms < lower else "within resolution"


def table(result: dict[str, Any]) -> list[str]:
    """The printed table: one Markdown row per figure (paste-ready for docs/performance.md)."""
    rows = ["| step | figure | value |", "| --- | --- | --- |"]
    gpu = result.get("gpu", {})
    rows.append(
        f"| device | GPU / driver / power limit | {gpu.get('name')} / {gpu.get('driver_version')} / "
        f"{_f(gpu.get('power_limit_w'))} W |"
    )
    c = result.get("counter", {})
    if c:
        rows += [
            f"| 1 counter | updates seen / achieved poll | {_f(c.get('updates'))} / {_f(c.get('achieved_poll_ms'))} ms |",
            f"| 1 counter | period: toolkit estimate / median gap | {_f(c.get('toolkit_period_ms'))} / "
            f"{_f(c.get('median_gap_ms'))} ms |",
            f"| 1 counter | period: conservative (median outer bound) / longest | "
            f"{_f(c.get('conservative_period_ms'))} / {_f(c.get('longest_interval_ms'))} ms |",
            f"| 1 counter | collect probe --sensor nvml: effective period | {_f(c.get('probe_period_ms'))} ms |",
            f"| 1 counter | cited default for this GPU | {_f(c.get('default_period_ms'))} ms "
            f"({c.get('default_verdict')}) |",
        ]
    for name, s in result.get("power", {}).items():
        if s.get("status") != "ok":
            rows.append(f"| 2 {name} | unavailable | {s.get('status')} |")
            continue
        fit = s["fit"]
        rows += [
            f"| 2 {name} | update period (values / driver) | {_f(s['period_ms'])} / {_f(s['driver_period_ms'])} ms |",
            f"| 2 {name} | averaging window / delay (R^2) | {_f(fit['window_ms'])} / {_f(fit['delay_ms'])} ms "
            f"({_f(fit['r2'], 3)}{'' if s.get('fit_conclusive') else ': inconclusive'}) |",
            f"| 2 {name} | share of time covered | {_f(s['coverage'])} |",
            "| 2 "
            + name
            + " | mean / counter mean by square period (ms) | "
            + ", ".join(f"{k}: {_f(v, 3)}" for k, v in s["mean_ratio"].items())
            + " |",
        ]
    e = result.get("e2e", {})
    if e:
        rows.append(f"| 3 e2e | collect run + gates evaluate | {e.get('status')}: {e.get('detail', '')} |")
    for step, text in result.get("failures", {}).items():
        rows.append(f"| {step} | FAILED | {text} |")
    return rows


def docs_row(result: dict[str, Any]) -> str:
    """The run as one row of the table in docs/performance.md ("On a GPU")."""
    gpu, c, power = result.get("gpu", {}), result.get("counter", {}), result.get("power", {})

    def window(name: str) -> str:
        s = power.get(name, {})
        if s.get("status") != "ok":
            return "unavailable"
        return f"{_f(s['fit']['window_ms'])} ms / {_f(s['coverage'])} (R^2 {_f(s['fit']['r2'], 3)})"

    e = result.get("e2e", {})
    return (
        f"| {gpu.get('name')} ({gpu.get('driver_version')}) | {_f(c.get('toolkit_period_ms'))} / "
        f"{_f(c.get('conservative_period_ms'))} ms | {window('power_usage')} | {window('power_instant')} | "
        f"{e.get('status', 'not run')} |"
    )


def run_check(args: argparse.Namespace, info: dict[str, Any]) -> dict[str, Any]:
    """Steps 1-3 inside the budget; a step that fails is recorded in ``failures`` and the rest go on."""
    from benchmarks.gpu_energy_load import analyse, raw_updates
    from collect.telemetry.logs.periods import default_counter_period

    deadline = time.monotonic() + args.budget_s
    result: dict[str, Any] = {"gpu": info, "failures": {}, "budget_s": args.budget_s}
    if not args.e2e_only:
        plan = schedule(args.steady_s, args.square_s, SQUARE_PERIODS_MS)
        # a lent GPU's minutes are scarce: any error of a step is recorded and the next step still runs
        measured: Measured | None = None
        try:
            measured = measure(
                args.index, plan, deadline - (0 if args.skip_e2e else args.e2e_reserve_s), args.sensor, args.load_device
            )
        except Exception as err:
            result["failures"]["1-2 load and poll"] = f"{type(err).__name__}: {err}"
        if measured is not None:
            try:
                result["raw"] = raw_updates(measured)
                result.update(analyse(measured, info))
                default_ms, basis = default_counter_period(info.get("name"))
                result["counter"].update(
                    default_period_ms=default_ms,
                    default_basis=basis,
                    default_verdict=default_verdict(default_ms, result["counter"]),
                )
            except Exception as err:
                result["failures"]["1-2 analysis"] = f"{type(err).__name__}: {err} (raw update windows kept)"
    if not args.skip_e2e:
        sensor = args.e2e_sensor or f"nvml:index={args.index}"
        remaining = deadline - time.monotonic()
        try:
            with tempfile.TemporaryDirectory(prefix="gpu-energy-e2e-") as tmp:
                result["e2e"] = end_to_end(Path(tmp), sensor, args.e2e_device or "cuda", remaining)
        except Exception as err:
            result["e2e"] = {"status": "failed", "detail": f"{type(err).__name__}: {err}"}
        if result["e2e"]["status"] != "ok":
            result["failures"]["3 e2e"] = result["e2e"].get("detail", "")
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options (see the module doc)."""
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    default_out = (
        Path(os.environ["OUT"]) / "gpu_energy_check.json" if os.environ.get("OUT") else Path("gpu_energy_check.json")
    )
    p.add_argument("--out", type=Path, default=default_out, help=f"the JSON result (default {default_out})")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--index", type=int, default=0, help="NVML index of the GPU (default 0)")
    p.add_argument("--steady-s", type=float, default=12.0, help="steady load for the counter period (s, default 12)")
    p.add_argument("--square-s", type=float, default=4.0, help="seconds per square-wave period (default 4)")
    p.add_argument("--budget-s", type=float, default=280.0, help="all steps together (s, default 280)")
    p.add_argument("--e2e-reserve-s", type=float, default=150.0, help="budget kept for step 3 (s, default 150)")
    p.add_argument("--skip-e2e", action="store_true", help="steps 1-2 only")
    p.add_argument("--e2e-only", action="store_true", help="step 3 only")
    p.add_argument(
        "--e2e-sensor",
        help="step 3's sensor (default nvml:index=INDEX; sim:... checks the plumbing "
        "without a GPU, its energy then modeled)",
    )
    p.add_argument("--e2e-device", choices=["cuda", "cpu"], help="step 3's torch device (default cuda)")
    p.add_argument("--load-worker", nargs=2, metavar=("SCHEDULE", "RESULT"), help=argparse.SUPPRESS)
    # the plumbing check without a GPU: --sensor sim:clock=real --load-device cpu (nothing measured)
    p.add_argument("--sensor", help=argparse.SUPPRESS)
    p.add_argument("--load-device", choices=["cuda", "cpu"], default="cuda", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steady_s <= 0 or args.square_s <= 0 or args.budget_s <= 0:
        p.error("--steady-s, --square-s and --budget-s must be above 0")
    return args


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when every step completed, 1 when one failed, 2 when this machine cannot run the check."""
    args = parse_args(argv)
    if args.load_worker:
        from benchmarks.gpu_energy_load import load_worker

        return load_worker(Path(args.load_worker[0]), Path(args.load_worker[1]), args.index, args.load_device)
    plumbing_only = (args.e2e_only or (args.sensor or "").startswith("sim")) and (
        args.skip_e2e or (args.e2e_sensor or "").startswith("sim")
    )
    try:
        if args.out.exists() and not args.force:
            raise NotReady(f"{args.out} exists (an earlier result?): give another --out, or --force to replace it")
        info = (
            {"name": None, "note": "no GPU used: plumbing check"}
            if plumbing_only
            else preflight(args.index, not args.skip_e2e)
        )
    except NotReady as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    result = run_check(args, info)
    for line in table(result):
        print(line)
    print("\nthe row for docs/performance.md (On a GPU):\n" + docs_row(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"written: {args.out}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
