"""Steps 1-2 of ``benchmarks/gpu_energy_check.py``: a GPU load on a schedule, NVML polled meanwhile.

The load runs in a child process (``gpu_energy_check.py --load-worker``) so that this process only
polls: the child starts torch on the GPU, sizes a bf16 matrix-product burst of about 0.5 ms, says
``ready``, waits for ``go`` and runs the schedule from the ``t0`` it announces, recording each high
interval's start and end (``time.monotonic_ns``: the clock the sensor stamps its readings with).
Idle is a sleep; high is bursts, each synchronised, until the interval's end.

The poller reads the toolkit's ``nvml`` sensor: every power signal with the counter every 0.2 ms
(step 2) and, during the steady load, the counter again between those polls as fast as the call
returns (step 1); ``collect probe --sensor nvml`` runs in its own process during the steady load.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SQUARE_PERIODS_MS = (10.0, 25.0, 50.0, 100.0, 200.0, 1000.0)
POWER_SIGNALS = ("power_usage", "power_instant", "power_average")
BURST_MS = 0.5  # one synchronised burst of matrix products
SQUARE_POLL_NS = 200_000  # step 2's poll spacing
STARTUP_S = 120.0  # torch import and CUDA start in the child, at most
NVML_CLASS = "collect.telemetry.sensors.nvml:NvmlSensor"
MIN_R2 = 0.5  # a window fit explaining less of the readings' variance gives no coverage


def schedule(steady_s: float, square_s: float, periods_ms: tuple[float, ...]) -> list[dict[str, Any]]:
    """The load's segments: idle 2 s, steady ``steady_s``, idle 1 s, each square wave ``square_s``, idle 1 s."""
    segs: list[dict[str, Any]] = [
        {"name": "idle", "kind": "idle", "seconds": 2.0},
        {"name": "steady", "kind": "steady", "seconds": steady_s},
        {"name": "idle2", "kind": "idle", "seconds": 1.0},
    ]
    segs += [{"name": f"square{p:g}", "kind": "square", "seconds": square_s, "period_ms": p} for p in periods_ms]
    return segs + [{"name": "idle3", "kind": "idle", "seconds": 1.0}]


def _wait_until(t_ns: int) -> None:
    """Sleep, then spin the last half millisecond (sleep alone overshoots by up to ~0.1 ms)."""
    while (left := t_ns - time.monotonic_ns()) > 0:
        if left > 600_000:
            time.sleep((left - 500_000) / 1e9)


def load_worker(schedule_path: Path, result_path: Path, index: int, device: str = "cuda") -> int:
    """The child: the schedule's load on GPU ``index`` (CUDA_DEVICE_ORDER=PCI_BUS_ID, so NVML's index);
    ``device="cpu"`` runs the same schedule on the CPU (a plumbing check without a GPU)."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        print("error torch sees no CUDA device", flush=True)
        return 2
    dev = torch.device("cuda", index) if device == "cuda" else torch.device("cpu")
    n, dtype = (4096, torch.bfloat16) if device == "cuda" else (256, torch.float32)
    a, b = torch.randn(n, n, device=dev, dtype=dtype), torch.randn(n, n, device=dev, dtype=dtype)
    c = torch.empty_like(a)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize(dev)

    for _ in range(20):
        torch.mm(a, b, out=c)
    sync()
    t = time.perf_counter()
    for _ in range(50):
        torch.mm(a, b, out=c)
    sync()
    per_mm_ms = (time.perf_counter() - t) * 1000 / 50
    reps = max(1, round(BURST_MS / per_mm_ms))

    def burst() -> None:
        for _ in range(reps):
            torch.mm(a, b, out=c)
        sync()

    print(f"ready {per_mm_ms:.4f}", flush=True)
    if sys.stdin.readline().strip() != "go":
        return 2
    t0 = time.monotonic_ns() + 50_000_000
    print(f"t0 {t0}", flush=True)
    segs: list[list[Any]] = []
    on: list[int] = []
    off: list[int] = []
    start = t0
    for seg in json.loads(schedule_path.read_text(encoding="utf-8")):
        end = start + int(seg["seconds"] * 1e9)
        _wait_until(start)
        if seg["kind"] == "steady":
            on.append(time.monotonic_ns())
            while time.monotonic_ns() < end:
                burst()
            off.append(time.monotonic_ns())
        elif seg["kind"] == "square":
            period = int(seg["period_ms"] * 1e6)
            k = 0
            while (cycle := start + k * period) + period <= end:
                _wait_until(cycle)
                on.append(time.monotonic_ns())
                while time.monotonic_ns() < cycle + period // 2:
                    burst()
                off.append(time.monotonic_ns())
                k += 1
        _wait_until(end)
        segs.append([seg["name"], start, end])
        start = end
    result_path.write_text(
        json.dumps(
            {
                "segments": segs,
                "on_ns": on,
                "off_ns": off,
                "per_matmul_ms": per_mm_ms,
                "matmuls_per_burst": reps,
                "torch": torch.__version__,
                "cuda": torch.version.cuda,
                "device": torch.cuda.get_device_name(dev) if device == "cuda" else "cpu",
            }
        ),
        encoding="utf-8",
    )
    return 0


@dataclass
class Measured:
    """What steps 1-2 recorded: per signal its ok polls, the load's edges and segments, the probe's JSON."""

    polls: dict[str, tuple[list[int], list[int], list[float], list[float]]] = field(default_factory=dict)
    not_ok: dict[str, int] = field(default_factory=dict)
    load: dict[str, Any] = field(default_factory=dict)
    probe: dict[str, Any] | None = None
    probe_error: str | None = None


def _line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """The child's next stdout line, or ``TimeoutError``."""
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout=max(0.0, timeout_s)):
        raise TimeoutError(f"the load process said nothing in {timeout_s:.0f} s")
    return proc.stdout.readline().strip()


def _stop(proc: subprocess.Popen[Any]) -> None:
    """End a child this check started, if it still runs."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def _probe_cmd(spec: str, seconds: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "prereg_toolkit_cli.collect",
        "probe",
        "--sensor",
        spec,
        "--poll-ms",
        "1",
        "--seconds",
        f"{seconds:g}",
        "--signal",
        "energy_counter",
        "--json",
    ]


def measure(
    index: int, plan: list[dict[str, Any]], deadline: float, spec: str | None = None, load_device: str = "cuda"
) -> Measured:
    """Run the load child on ``plan`` and poll the sensor ``spec`` (default ``nvml:index=INDEX``) until
    it ends (``deadline``: ``time.monotonic()`` s); ``load_device="cpu"`` with a ``sim:`` sensor
    checks the plumbing without a GPU."""
    import tempfile

    from collect.telemetry.sensors.registry import open_sensor

    out = Measured()
    env = {
        **os.environ,
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    spec = spec or f"nvml:index={index}"
    kind, _, rest = spec.partition(":")
    if kind == "nvml":  # the class itself: steps 1-2 need no installed entry point
        spec = f"{NVML_CLASS}:{rest}" if rest else NVML_CLASS
    with tempfile.TemporaryDirectory(prefix="gpu-energy-load-") as tmp, open_sensor(spec) as sensor:
        m1, sensor_now, m2 = time.monotonic_ns(), sensor.now_ns(), time.monotonic_ns()
        offset = sensor_now - (m1 + m2) // 2  # sensor clock - monotonic (nvml: the same clock, ~0)
        sched, res = Path(tmp) / "schedule.json", Path(tmp) / "load.json"
        sched.write_text(json.dumps(plan), encoding="utf-8")
        proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "benchmarks" / "gpu_energy_check.py"),
                "--index",
                str(index),
                "--load-device",
                load_device,
                "--load-worker",
                str(sched),
                str(res),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        probe: subprocess.Popen[str] | None = None
        try:
            ready = _line(proc, min(STARTUP_S, deadline - time.monotonic()))
            if not ready.startswith("ready"):
                raise RuntimeError(f"the load process could not start: {ready or 'it exited'}")
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
            t0 = int(_line(proc, 10).split()[1])
            bounds, t = {}, t0
            for seg in plan:
                bounds[seg["name"]] = (t, t + int(seg["seconds"] * 1e9))
                t = bounds[seg["name"]][1]
            steady = bounds["steady"]
            offered = sensor.signals()
            everything = [s for s in ("energy_counter", *POWER_SIGNALS) if s in offered and s not in sensor.unavailable]
            stop_at = time.monotonic() + (t - time.monotonic_ns()) / 1e9 + 30
            last = 0
            while proc.poll() is None:
                now = time.monotonic_ns()
                if time.monotonic() > min(stop_at, deadline):
                    raise TimeoutError("the load schedule overran its time")
                if probe is None and now >= steady[0] + 500_000_000:
                    seconds = max(1.0, (steady[1] - now) / 1e9 - 1.5)
                    probe = subprocess.Popen(
                        _probe_cmd(spec, seconds),
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                        env=env,
                        cwd=ROOT,
                    )
                due = now - last >= SQUARE_POLL_NS  # every signal every 0.2 ms; the counter alone
                if not due and not steady[0] <= now < steady[1]:  # as fast as it returns in the steady load
                    continue
                if due:
                    last = now
                for r in sensor.read(everything if due else ["energy_counter"]):
                    if r.status != "ok" or r.value is None:
                        out.not_ok[r.signal] = out.not_ok.get(r.signal, 0) + 1
                        continue
                    cols = out.polls.setdefault(r.signal, ([], [], [], []))
                    cols[0].append(r.t_before_ns - offset)
                    cols[1].append(r.t_after_ns - offset)
                    cols[2].append(r.value)
                    cols[3].append(float("nan") if r.driver_ts_us is None else float(r.driver_ts_us))
            if proc.wait(timeout=10) != 0 or not res.exists():
                raise RuntimeError(f"the load process failed (exit {proc.returncode})")
            out.load = json.loads(res.read_text(encoding="utf-8"))
            if probe is not None:
                try:
                    stdout, stderr = probe.communicate(timeout=max(5.0, deadline - time.monotonic()))
                    if probe.returncode == 0:
                        out.probe = json.loads(stdout)
                    else:
                        out.probe_error = (stderr.strip().splitlines() or ["no message"])[-1]
                except subprocess.TimeoutExpired:
                    out.probe_error = "collect probe timed out"
        finally:
            _stop(proc)
            if probe is not None:
                _stop(probe)
    return out


def raw_updates(m: Measured) -> dict[str, Any]:
    """What the analysis needs, small enough for the JSON (re-analysable off the GPU): the load's edges
    and, per signal, its update windows (ns) with the value after each, its first reading and poll count."""
    import numpy as np

    from benchmarks.gpu_energy_analysis import one_signal_trace
    from collect.telemetry.analysis.resolution import value_changes

    out: dict[str, Any] = {"on_ns": m.load.get("on_ns"), "off_ns": m.load.get("off_ns"), "signals": {}}
    for name, (tb, ta, v, _) in m.polls.items():
        kind, unit = ("counter", "mJ") if name == "energy_counter" else ("gauge", "W")
        u = value_changes(one_signal_trace(name, unit, kind, np.array(tb), np.array(ta), np.array(v)), name)
        out["signals"][name] = {
            "polls": len(tb),
            "first": [tb[0], ta[0], v[0]] if tb else None,
            "lo_ns": u.lo_ns.tolist(),
            "hi_ns": u.hi_ns.tolist(),
            "value": u.value.tolist(),
        }
    return out


def analyse(m: Measured, info: dict[str, Any]) -> dict[str, Any]:
    """Steps 1-2's figures from the polls (:mod:`benchmarks.gpu_energy_analysis`)."""
    import numpy as np

    from benchmarks import gpu_energy_analysis as ga

    seg = {name: (float(a), float(b)) for name, a, b in m.load["segments"]}
    on, off = np.array(m.load["on_ns"], dtype=np.float64), np.array(m.load["off_ns"], dtype=np.float64)
    arrays = {
        s: tuple(np.array(c, dtype=np.int64 if i < 2 else np.float64) for i, c in enumerate(cols))
        for s, cols in m.polls.items()
    }
    if "energy_counter" not in arrays:
        raise RuntimeError(f"no ok energy counter reading (not ok: {m.not_ok})")
    tb, ta, v, _ = arrays["energy_counter"]
    a, b = seg["steady"]
    inside = (tb >= a) & (ta <= b)
    counter: dict[str, Any] = dict(ga.counter_period(tb[inside], ta[inside], v[inside]))
    probe = (m.probe or {}).get("signals", {}).get("energy_counter", {})
    counter.update(
        probe_period_ms=probe.get("effective_period_ms"),
        probe_achieved_poll_ms=probe.get("achieved_poll_ms"),
        probe_error=m.probe_error,
        steady_power_w=ga.counter_mean_power_w(tb, ta, v, a, b),
    )
    squares = [name for name in seg if name.startswith("square")]
    lo, hi = seg[squares[0]][0], seg[squares[-1]][1]
    power: dict[str, Any] = {}
    for name in POWER_SIGNALS:
        if name not in arrays:
            power[name] = {"status": info.get("unavailable", {}).get(name, "no ok reading")}
            continue
        ptb, pta, pv, pdrv = arrays[name]
        keep = (ptb >= lo) & (pta <= hi)
        mids, values = ga.update_mids(ptb[keep], pta[keep], pv[keep])
        fit = ga.fit_window(mids, values, on, off)
        period, driver = ga.gauge_period_ms(ptb[keep], pta[keep], pv[keep], pdrv[keep])
        ratios = {}
        for sq in ["steady", *squares]:
            s0, s1 = seg[sq][0] + (1.5e9 if sq != "steady" else 2e9), seg[sq][1]  # after a 1 s average fills
            ratios[sq.removeprefix("square")] = ga.mean_ratio(
                ptb, pv, s0, s1, ga.counter_mean_power_w(tb, ta, v, s0, s1)
            )
        conclusive = fit.r2 is not None and fit.r2 >= MIN_R2  # a window that explains the readings
        power[name] = {
            "status": "ok",
            "period_ms": period,
            "driver_period_ms": driver,
            "fit": ga.fit_dict(fit),
            "fit_conclusive": conclusive,
            "coverage": ga.coverage(fit.window_ms, period) if conclusive else None,
            "mean_ratio": ratios,
            "polls": int(keep.sum()),
            "updates": int(mids.size),
        }
    return {
        "counter": counter,
        "power": power,
        "not_ok_readings": m.not_ok,
        "load": {k: m.load[k] for k in ("per_matmul_ms", "matmuls_per_burst", "torch", "cuda", "device")},
        "segments": m.load["segments"],
    }


__all__ = [
    "POWER_SIGNALS",
    "SQUARE_PERIODS_MS",
    "Measured",
    "analyse",
    "load_worker",
    "measure",
    "raw_updates",
    "schedule",
]
