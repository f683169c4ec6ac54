"""Scale benchmark: ``collect import`` and ``gates evaluate`` at 1k / 10k / 100k runs, seeds as a factor.

Run from the repository root (inside the venv):  python benchmarks/bench_scale.py [--runs 1000 10000 100000]
[--import-only [--repeat N]]

The plan has two arms and two factors (``site``: 5 levels, ``seed``: runs / 10 levels, so the number
of factor levels grows with the runs, the case a per-level scan makes quadratic) and a five-gate set:
a t gate, a sign-flip gate (Monte Carlo beyond 20 blocks), a Wilcoxon/Hodges-Lehmann gate,
a BCa gate, and a resolution-checked t gate on a metric backed by a telemetry signal with a bound.
Each size runs end to end through the console scripts, as a user would: ``prereg freeze``, ``collect
import`` of a CSV, ``gates evaluate --json``. Printed per size: wall seconds of import and evaluate,
evaluate's peak resident memory (``getrusage`` of the child), and the baseline measured in the same
run: a pandas + scipy script on the same CSV computing the same five paired analyses' points and
intervals where scipy has them (t: ``ttest_1samp``; sign-flip: the mean with a t interval standing in,
since scipy has no sign-flip interval; Wilcoxon: ``scipy.stats.wilcoxon`` p only, no Hodges-Lehmann
interval; BCa: ``scipy.stats.bootstrap`` on at most 2000 blocks, above which it needs more memory
than the machine has). The baseline checks no plan, ledger, invalidator, resolution or multiplicity;
it is the floor a bare script pays, not the same work.

``--import-only`` times ``collect import`` alone, ``--repeat N`` times (each into a fresh runs
folder): the median and range of its wall seconds and of its CPU seconds (user + system, from
``getrusage`` of the child: on a shared machine the CPU time moves less than the wall time), and
whether every repeat wrote the same ledger bytes.

``--small N`` (default 9; 0 skips it) first times the small end: ``gates evaluate`` of the 18-run example
(``examples/continuation.yaml`` and its table) against ``python -c "import numpy, scipy.special"`` (the
floor of what the evaluation must import), ``N`` interleaved rounds, medians and their ratio, with the
toolkit's bytecode compiled first (``compileall``, as an installed package has it). The closing line
states each goal -- small ratio <= 1.5; 100k evaluate < 20 s and < 1 GB; 100k import < 5 s and < 300 MB
-- with the figure measured and the load average.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

PLAN = """schema: prereg/v1
study: scale-bench
title: Scale benchmark, {runs} runs
hypothesis: Arm b is noninferior to arm a on every metric.
arms:
  a: {{policy: a}}
  b: {{policy: b}}
strata:
  factors:
    site: [{sites}]
    seed: [{seeds}]
  replicates: 1
metrics:
  nll:    {{unit: nats, better: lower, evidence: measured}}
  flop:   {{unit: FLOP, better: lower, evidence: measured}}
  energy: {{unit: J,    better: lower, evidence: measured, signal: energy_counter}}
invalidators:
  - {{id: sane_nll, kind: metric_bounds, metric: nll, min: 0.0, max: 20.0, blocks: all}}
gates:
  - {{id: nll_t, metric: nll, contrast: b - a, method: t, confidence: 0.90, pass_if: upper < 0.05}}
  - {{id: flop_signflip, metric: flop, contrast: b / a, method: signflip, confidence: 0.90, pass_if: upper < 1.05}}
  - {{id: nll_wilcoxon, metric: nll, contrast: b - a, method: wilcoxon, confidence: 0.90, pass_if: upper < 0.05}}
  - {{id: energy_bca, metric: energy, contrast: b / a, method: bca, confidence: 0.90, pass_if: upper < 1.05}}
  - {{id: energy_t, metric: energy, contrast: b / a, method: t, confidence: 0.90, pass_if: upper < 1.05}}
decision:
  claim: b is noninferior to a.
  require: all
  multiplicity: holm
"""


def write_study(folder: Path, runs: int, seed: int = 0) -> tuple[Path, Path]:
    """The plan and a CSV of ``runs`` synthetic runs (``runs / 2`` blocks) in ``folder``."""
    sites = 5
    seeds = max(1, runs // (2 * sites))
    plan = folder / "plan.yaml"
    plan.write_text(
        PLAN.format(
            runs=runs, sites=", ".join(map(str, range(sites))), seeds=", ".join(str(1000 + s) for s in range(seeds))
        )
    )
    rng = np.random.default_rng(seed)
    table = folder / "runs.csv"
    with table.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "arm",
                "site",
                "seed",
                "nll",
                "flop",
                "energy",
                "energy_counter.bound",
                "energy_counter.updates",
                "energy_counter.effective_period_ms",
            ]
        )
        for site in range(sites):
            for s in range(seeds):
                base_nll, base_e = 3.0 + rng.normal(0, 0.05), 1000.0 * rng.uniform(0.8, 1.2)
                for arm, shift in (("a", 0.0), ("b", -0.01)):
                    w.writerow(
                        [
                            arm,
                            site,
                            1000 + s,
                            f"{base_nll + shift + rng.normal(0, 0.01):.6f}",
                            f"{1e15 * rng.uniform(0.9, 1.0):.6e}",
                            f"{base_e * rng.uniform(0.9, 1.0):.3f}",
                            "0.5",
                            "200",
                            "100.0",
                        ]
                    )
    return plan, table


def measured(args: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds and peak RSS (MiB) of ``args``, measured through a fresh wrapper process."""
    wall, rss, done, _ = measured_cpu(args, cwd)
    return wall, rss, done


def measured_cpu(args: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess[str], float]:
    """``measured`` and the child's CPU seconds (user + system)."""
    wrapper = (
        "import resource, subprocess, sys, time, json;"
        "t=time.perf_counter();p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
        "w=time.perf_counter()-t;"
        "u=resource.getrusage(resource.RUSAGE_CHILDREN);m=u.ru_maxrss/1024;c=u.ru_utime+u.ru_stime;"
        "print(json.dumps({'wall':w,'rss':m,'cpu':c,'rc':p.returncode,'out':p.stdout[-2000:],"
        "'err':p.stderr[-2000:]}))"
    )
    proc = subprocess.run([sys.executable, "-c", wrapper, *args], cwd=cwd, capture_output=True, text=True, timeout=3600)
    info = json.loads(proc.stdout)
    done = subprocess.CompletedProcess(args, info["rc"], info["out"], info["err"])
    return info["wall"], info["rss"], done, info["cpu"]


def baseline(table: Path) -> float:
    """Seconds a pandas + scipy script takes for the comparable analyses on the same CSV."""
    code = f"""
import time; t0 = time.perf_counter()
import numpy as np, pandas as pd
from scipy import stats
df = pd.read_csv({str(table)!r})
wide = df.pivot_table(index=["site", "seed"], columns="arm", values=["nll", "flop", "energy"])
d_nll = (wide["nll"]["b"] - wide["nll"]["a"]).to_numpy()
lr_flop = np.log(wide["flop"]["b"] / wide["flop"]["a"]).to_numpy()
lr_e = np.log(wide["energy"]["b"] / wide["energy"]["a"]).to_numpy()
stats.ttest_1samp(d_nll, 0.05, alternative="less").confidence_interval(0.90)
stats.ttest_1samp(lr_flop, np.log(1.05), alternative="less").confidence_interval(0.90)
stats.wilcoxon(d_nll - 0.05, alternative="less")
stats.bootstrap((lr_e[:2000],), np.mean, confidence_level=0.90, method="BCa", n_resamples=9999,
                random_state=np.random.default_rng(0))
stats.ttest_1samp(lr_e, np.log(1.05), alternative="less").confidence_interval(0.90)
print(time.perf_counter() - t0)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return float(proc.stdout.strip().splitlines()[-1])


def one_size(runs: int, folder: Path) -> dict[str, object]:
    plan, table = write_study(folder, runs)
    lock, out = folder / "plan.lock.json", folder / "runs"
    subprocess.run([str(BIN / "prereg"), "freeze", str(plan), "-o", str(lock)], check=True, capture_output=True)
    t_import, import_rss, proc = measured(
        [str(BIN / "collect"), "import", str(table), "--lock", str(lock), "--out", str(out)], folder
    )
    if proc.returncode != 0:
        raise SystemExit(f"collect import failed: {proc.stderr}")
    t_eval, rss, proc = measured([str(BIN / "gates"), "evaluate", str(lock), str(out)], folder)
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"gates evaluate failed ({proc.returncode}): {proc.stderr}")
    t_base = baseline(table)
    return {
        "runs": runs,
        "import_s": round(t_import, 2),
        "import_peak_mib": round(import_rss),
        "evaluate_s": round(t_eval, 2),
        "evaluate_peak_mib": round(rss),
        "baseline_pandas_scipy_s": round(t_base, 2),
        "evaluate_over_baseline": round(t_eval / t_base, 1),
        "exit": proc.returncode,
    }


def import_only(runs: int, folder: Path, repeat: int) -> dict[str, object]:
    """``collect import`` of the ``runs``-row table, ``repeat`` times into fresh folders."""
    import statistics

    plan, table = write_study(folder, runs)
    lock = folder / "plan.lock.json"
    subprocess.run([str(BIN / "prereg"), "freeze", str(plan), "-o", str(lock)], check=True, capture_output=True)
    walls, cpus, ledgers, rss = [], [], set(), 0.0
    for i in range(repeat):
        out = folder / f"runs{i}"
        wall, peak, proc, cpu = measured_cpu(
            [str(BIN / "collect"), "import", str(table), "--lock", str(lock), "--out", str(out)], folder
        )
        if proc.returncode != 0:
            raise SystemExit(f"collect import failed: {proc.stderr}")
        walls.append(wall)
        cpus.append(cpu)
        rss = max(rss, peak)
        ledgers.add((out / "ledger.jsonl").read_bytes())
        shutil.rmtree(out)
    return {
        "runs": runs,
        "repeat": repeat,
        "import_s_median": round(statistics.median(walls), 2),
        "import_s_range": [round(min(walls), 2), round(max(walls), 2)],
        "import_cpu_s_median": round(statistics.median(cpus), 2),
        "import_cpu_s_range": [round(min(cpus), 2), round(max(cpus), 2)],
        "import_peak_mib": round(rss),
        "same_ledger_every_repeat": len(ledgers) == 1,
    }


def small(rounds: int, folder: Path) -> dict[str, object]:
    """The 18-run example's ``gates evaluate`` against the ``import numpy, scipy.special`` floor,
    ``rounds`` interleaved rounds (module doc)."""
    import statistics
    import time

    for package in (
        "prereg",
        "collect",
        "gates",
        "estimators",
        "reports",
        "prereg_toolkit_cli",
    ):  # as installed: bytecode
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / package)], capture_output=True)
    lock, runs = folder / "c.lock.json", folder / "runs"
    subprocess.run(
        [str(BIN / "prereg"), "freeze", str(ROOT / "examples/continuation.yaml"), "-o", str(lock)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            str(BIN / "collect"),
            "import",
            str(ROOT / "examples/runs/continuation.csv"),
            "--lock",
            str(lock),
            "--out",
            str(runs),
        ],
        check=True,
        capture_output=True,
    )
    evaluate = [str(BIN / "gates"), "evaluate", str(lock), str(runs)]
    floor = [sys.executable, "-c", "import numpy, scipy.special"]
    times: dict[str, list[float]] = {"evaluate": [], "floor": []}
    subprocess.run(evaluate, capture_output=True)  # warm the file cache once
    loads = [os.getloadavg()[0]]
    for _ in range(rounds):
        for name, cmd in (("evaluate", evaluate), ("floor", floor)):
            start = time.perf_counter()
            subprocess.run(cmd, capture_output=True)
            times[name].append(time.perf_counter() - start)
        loads.append(os.getloadavg()[0])
    ev, fl = statistics.median(times["evaluate"]), statistics.median(times["floor"])
    return {
        "small": "18-run gates evaluate vs import numpy, scipy.special",
        "rounds": rounds,
        "evaluate_s_median": round(ev, 3),
        "floor_s_median": round(fl, 3),
        "ratio": round(ev / fl, 2),
        "load_1min_range": [round(min(loads), 2), round(max(loads), 2)],
    }


def closing(results: list[dict[str, object]]) -> str:
    """One line: each goal, the figure measured and whether it is met."""
    parts = []
    for r in results:
        if "ratio" in r:
            parts.append(
                f"small evaluation {r['ratio']}x the numpy+scipy.special import (goal <= 1.5: "
                f"{'met' if float(r['ratio']) <= 1.5 else 'MISSED'})"
            )  # type: ignore[arg-type]
        elif r.get("runs") == 100000 and "evaluate_s" in r:
            ok = float(r["evaluate_s"]) < 20 and float(r["evaluate_peak_mib"]) < 1024  # type: ignore[arg-type]
            parts.append(
                f"100k evaluate {r['evaluate_s']} s, {r['evaluate_peak_mib']} MiB (goal < 20 s, < 1 GB: "
                f"{'met' if ok else 'MISSED'})"
            )
            ok = float(r["import_s"]) < 5 and float(r["import_peak_mib"]) < 300  # type: ignore[arg-type]
            parts.append(
                f"100k import {r['import_s']} s, {r['import_peak_mib']} MiB (goal < 5 s, < 300 MB: "
                f"{'met' if ok else 'MISSED'})"
            )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return "; ".join(parts) + f"; load average at the end {load}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        type=int,
        nargs="*",
        default=[1000, 10000, 100000],
        help="sizes to time end to end (none: only --small)",
    )
    parser.add_argument("--import-only", action="store_true", help="time collect import alone")
    parser.add_argument("--repeat", type=int, default=1, help="with --import-only: imports per size")
    parser.add_argument(
        "--small",
        type=int,
        default=9,
        metavar="ROUNDS",
        help="interleaved rounds of the 18-run evaluation vs the numpy+scipy.special import (0: skip)",
    )
    args = parser.parse_args()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; console scripts from {BIN}; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    results: list[dict[str, object]] = []
    if args.small and not args.import_only:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(small(args.small, Path(tmp)))
            print(json.dumps(results[-1]), flush=True)
    for runs in args.runs:
        with tempfile.TemporaryDirectory() as tmp:
            result = import_only(runs, Path(tmp), args.repeat) if args.import_only else one_size(runs, Path(tmp))
            results.append(result)
            print(json.dumps(result), flush=True)
    print(closing(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
